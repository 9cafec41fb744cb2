"""Target adapters: one module per GPU family. `adapter_for(vendor)` picks one."""

from aspace_dap.errors import StateError

from .base import TargetAdapter, WaveTarget


def adapter_for(vendor: str) -> TargetAdapter:
    if vendor == "amd":
        from .amdgpu import AmdgpuAdapter
        return AmdgpuAdapter()
    if vendor == "nvidia":
        from .nvptx import NvptxAdapter
        return NvptxAdapter()
    if vendor == "intel":
        from .intel import IntelAdapter
        return IntelAdapter()
    raise StateError(f"no adapter for GPU vendor {vendor!r} (supported: amd, nvidia, intel)", "target.vendor")


__all__ = ["TargetAdapter", "WaveTarget", "adapter_for"]
