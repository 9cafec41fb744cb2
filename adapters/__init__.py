"""Target adapters: one package per GPU family (`amdgpu`, `nvidia`, `intel`) on a shared base; `adapter_for(vendor)` picks one."""

from aspace_dap.errors import StateError
from aspace_dap.state.validate import use_register_rules

from .base import TargetAdapter, WaveTarget


def adapter_for(vendor: str) -> TargetAdapter:
    if vendor == "amd":
        from .amdgpu.adapter import AmdgpuAdapter
        return AmdgpuAdapter()
    if vendor == "nvidia":
        from .nvidia.adapter import NvptxAdapter
        return NvptxAdapter()
    if vendor == "intel":
        from .intel.adapter import IntelAdapter
        return IntelAdapter()
    raise StateError(f"no adapter for GPU vendor {vendor!r} (supported: amd, nvidia, intel)", "target.vendor")


def register_rules(vendor: str) -> TargetAdapter | None:
    """What a dump of `vendor` must hold in its register layouts (for `state validate`):
    the adapter's required_registers and register_size; None for an unknown vendor."""
    try:
        return adapter_for(vendor)
    except StateError:
        return None


# dumps are checked against the adapters' register rules wherever they are loaded or validated
use_register_rules(register_rules)

__all__ = ["TargetAdapter", "WaveTarget", "adapter_for", "register_rules"]
