"""Which DWARF dialect a compile unit speaks.

The producer string, the AMD augmentation string and the ELF machine decide
how the contested vendor opcode range and attribute codes are read.
"""

from __future__ import annotations

import re

from .target import Dialect

EM_AMDGPU = 224
EM_CUDA = 190
EM_INTEL_GEN = 205
EM_INTEL182 = 182  # ocloc writes IGC's DWARF into an ELF with this machine

# DW_AT_LLVM_augmentation: 0x3e09 in the extension document. Other ROCm
# releases moved AMD attributes around, so any string attribute in the LLVM
# vendor range that looks like an augmentation is accepted too.
AT_LLVM_AUGMENTATION = 0x3E09
LLVM_VENDOR_ATTRS = range(0x3E00, 0x3F00)

# AMDGPUUsage documents `[amdgpu:vX.Y]`; every ROCm release's compiler writes `[llvm:v0.0]`.
_AUGMENTATION_RE = re.compile(r"\[(?:amdgpu|llvm):v\d+\.\d+\]")


def find_augmentation(attrs: dict[int, object]) -> str | None:
    """The `[amdgpu:vX.Y]` / `[llvm:vX.Y]` augmentation among a CU's resolved attributes, if any."""
    value = attrs.get(AT_LLVM_AUGMENTATION)
    if isinstance(value, str) and value:
        return value
    for code, value in attrs.items():
        if code in LLVM_VENDOR_ATTRS and isinstance(value, str) and _AUGMENTATION_RE.search(value):
            return value
    return None


def vendor_for_machine(e_machine: int | None) -> str:
    if e_machine == EM_AMDGPU:
        return "amd"
    if e_machine == EM_CUDA:
        return "nvidia"
    if e_machine in (EM_INTEL_GEN, EM_INTEL182):
        return "intel"
    return "gnu"


def detect_dialect(
    *,
    producer: str | None,
    augmentation: str | None,
    e_machine: int | None,
    address_size: int,
    offset_size: int,
    version: int,
) -> Dialect:
    producer = producer or ""
    vendor = vendor_for_machine(e_machine)
    # Intel's IGC says "clang" in its producer; only the machine identifies it.
    heterogeneous = bool(augmentation and _AUGMENTATION_RE.search(augmentation))
    if vendor == "gnu" and heterogeneous:
        # An AMD augmentation on an unknown machine (e.g. a host-side test ELF)
        # still means the AMD operation table.
        vendor = "amd"
    return Dialect(
        vendor_ops=vendor,
        heterogeneous=heterogeneous,
        producer=producer,
        address_size=address_size,
        offset_size=offset_size,
        version=version,
    )
