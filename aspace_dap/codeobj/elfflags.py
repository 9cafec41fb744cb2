"""What the ELF header says about the device: vendor, processor, target features.

AMDGPU keeps the processor in the low byte of e_flags (EF_AMDGPU_MACH) and, from
code object V4 on, a two-bit state for each of xnack and sramecc. V2 and V3 had
single on/off bits instead, so decoding depends on EI_ABIVERSION.
"""

from __future__ import annotations

from dataclasses import dataclass

EM_AMDGPU = 224
EM_CUDA = 190
EM_INTELGT = 205
EM_INTEL182 = 182  # ocloc's debug ELF for Intel GPUs (zebin device binaries say EM_INTELGT)

ELFOSABI_AMDGPU_HSA = 64
ELFOSABI_AMDGPU_PAL = 65
ELFOSABI_AMDGPU_MESA3D = 66

# EI_ABIVERSION under ELFOSABI_AMDGPU_HSA is the code object version minus 2.
HSA_ABI_VERSION_OFFSET = 2

EF_AMDGPU_MACH = 0x0FF
EF_AMDGPU_FEATURE_XNACK_V2 = 0x01
EF_AMDGPU_FEATURE_XNACK_V3 = 0x100
EF_AMDGPU_FEATURE_SRAMECC_V3 = 0x200
EF_AMDGPU_FEATURE_XNACK_V4 = 0x300
EF_AMDGPU_FEATURE_SRAMECC_V4 = 0xC00
EF_AMDGPU_GENERIC_VERSION_SHIFT = 24

EF_CUDA_SM_MASK = 0xFF
# From ELF ABI version 8 (CUDA 12.8+ cubins) the SM number moved to bits 8-15 and the
# low byte holds other flags; older cubins keep it in the low byte.
ELFABIVERSION_CUDA_V8 = 8
EF_CUDA_SM_SHIFT_V8 = 8

# EF_AMDGPU_MACH values (LLVM BinaryFormat/ELF.h). Holes are reserved values.
AMDGPU_MACH_NAMES: dict[int, str] = {
    0x001: "r600", 0x002: "r630", 0x003: "rs880", 0x004: "rv670", 0x005: "rv710",
    0x006: "rv730", 0x007: "rv770", 0x008: "cedar", 0x009: "cypress", 0x00A: "juniper",
    0x00B: "redwood", 0x00C: "sumo", 0x00D: "barts", 0x00E: "caicos", 0x00F: "cayman",
    0x010: "turks",
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803",
    0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x049: "gfx1250", 0x04A: "gfx1151", 0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201",
    0x04F: "gfx950", 0x050: "gfx1310", 0x051: "gfx9-generic", 0x052: "gfx10-1-generic",
    0x053: "gfx10-3-generic", 0x054: "gfx11-generic", 0x055: "gfx1152", 0x058: "gfx1153",
    0x059: "gfx12-generic", 0x05A: "gfx1251", 0x05B: "gfx12-5-generic", 0x05C: "gfx1172",
    0x05D: "gfx1170", 0x05E: "gfx1171", 0x05F: "gfx9-4-generic",
}

_V4_FEATURE_STATES = ("unsupported", "any", "off", "on")


@dataclass(frozen=True)
class DeviceTarget:
    vendor: str  # "amd" | "nvidia" | "intel" | "unknown"
    processor: str  # "gfx90a", "sm_80", ...; "" when the header does not say
    xnack: str  # "on" | "off" | "any" | "unsupported"
    sramecc: str
    generic_version: int = 0  # AMDGPU generic targets (V6) carry a version byte


def vendor_of(e_machine: int) -> str:
    return {EM_AMDGPU: "amd", EM_CUDA: "nvidia", EM_INTELGT: "intel", EM_INTEL182: "intel"}.get(e_machine, "unknown")


def amdgpu_processor_name(mach: int) -> str:
    name = AMDGPU_MACH_NAMES.get(mach)
    return name if name is not None else f"unknown-mach-0x{mach:03x}"


def decode_device_target(e_machine: int, e_flags: int, os_abi: int, abi_version: int) -> DeviceTarget:
    vendor = vendor_of(e_machine)
    if vendor == "nvidia":
        shift = EF_CUDA_SM_SHIFT_V8 if abi_version >= ELFABIVERSION_CUDA_V8 else 0
        sm = e_flags >> shift & EF_CUDA_SM_MASK
        return DeviceTarget(vendor, f"sm_{sm}" if sm else "", "unsupported", "unsupported")
    if vendor != "amd":
        return DeviceTarget(vendor, "", "unsupported", "unsupported")

    processor = amdgpu_processor_name(e_flags & EF_AMDGPU_MACH) if e_flags & EF_AMDGPU_MACH else ""
    if os_abi != ELFOSABI_AMDGPU_HSA:
        # PAL and Mesa objects do not encode target features in e_flags.
        return DeviceTarget(vendor, processor, "unsupported", "unsupported")

    code_object_version = abi_version + HSA_ABI_VERSION_OFFSET
    if code_object_version <= 2:
        xnack = "on" if e_flags & EF_AMDGPU_FEATURE_XNACK_V2 else "off"
        return DeviceTarget(vendor, processor, xnack, "unsupported")
    if code_object_version == 3:
        xnack = "on" if e_flags & EF_AMDGPU_FEATURE_XNACK_V3 else "off"
        sramecc = "on" if e_flags & EF_AMDGPU_FEATURE_SRAMECC_V3 else "off"
        return DeviceTarget(vendor, processor, xnack, sramecc)
    xnack = _V4_FEATURE_STATES[(e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8]
    sramecc = _V4_FEATURE_STATES[(e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10]
    generic_version = e_flags >> EF_AMDGPU_GENERIC_VERSION_SHIFT if code_object_version >= 6 else 0
    return DeviceTarget(vendor, processor, xnack, sramecc, generic_version)


def gfx_major(processor: str) -> int | None:
    """The GFX generation of an AMDGPU processor name ("gfx90a" -> 9, "gfx1030" -> 10)."""
    if not processor.startswith("gfx"):
        return None
    digits = processor[3:].split("-", 1)[0]
    if not digits[:1].isdigit():
        return None
    # Three characters after "gfx" are major+minor+stepping (gfx90a); four or more
    # mean a two-digit major (gfx1030). Generic names carry only the major.
    if "-" in processor[3:]:
        return int(digits)
    return int(digits[:-2]) if len(digits) >= 3 and digits[:-2].isdigit() else None
