"""Entry point: turn a file or buffer into the device code objects it holds."""

from __future__ import annotations

import os

from aspace_dap import limits
from aspace_dap.errors import CodeObjectError
from aspace_dap.inflate import Budget, code_object_budget
from aspace_dap.paths import PathRefused, read_regular

from .bundle import BUNDLE_MAGIC, COMPRESSED_MAGIC, is_bundle, parse_bundles
from .codeobject import ELF_PARSE_ERRORS, CodeObject, open_elf, raw_machine
from .elfflags import EM_AMDGPU, EM_CUDA, EM_INTEL182, EM_INTELGT

DEVICE_MACHINES = frozenset({EM_AMDGPU, EM_CUDA, EM_INTELGT, EM_INTEL182})
# ocloc's `.dbg` file: a small header (kernel name, sizes) in front of IGC's debug ELF
OCLOC_DEBUG_MAGIC = b"CTNI"
# how every file load_code_objects accepts begins (ELF, offload bundles, ocloc's debug file)
CODE_OBJECT_MAGICS = (b"\x7fELF", BUNDLE_MAGIC, COMPRESSED_MAGIC, OCLOC_DEBUG_MAGIC)
# AMD's pre-ROCm OpenCL runtime (the APP SDK / Catalyst era) wrote its binaries with machines of its own
# (ROCclr's elf definitions): no GCN code object a debugger of today reads
LEGACY_AMD_MACHINES = {0xAF5A: "EM_HSAIL, HSAIL", 0xAF5B: "EM_HSAIL_64, 64-bit HSAIL", 0x4154: "EM_AMDIL, AMD IL",
                       0x4155: "EM_AMDIL_64, 64-bit AMD IL"}
HIP_FATBIN_SECTION = ".hip_fatbin"
CUDA_FATBIN_SECTION = ".nv_fatbin"


def load_code_objects(path_or_bytes: str | os.PathLike | bytes | bytearray | memoryview, *,
                      name: str | None = None) -> list[CodeObject]:
    """Device code objects in a standalone ELF, an offload bundle, a host ELF's .hip_fatbin or
    .nv_fatbin (its cubins, relocated), or ocloc's `.dbg` debug file. An AMDGPU relocatable object
    (`.o`), alone or in a bundle, is laid out and relocated (`adapters/amdgpu/relocations.py`).

    Bundle entries that are not amdgcn device code (the host entry, other
    targets) are skipped. Compressed entries inflate within one budget for the
    whole file (aspace_dap.inflate). Raises CodeObjectError when nothing usable is found.
    """
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        # regular files only (never a FIFO or /dev/zero), and never past the size limit
        try:
            data = read_regular(path, "code object", limits.MAX_CODE_OBJECT_BYTES, "MAX_CODE_OBJECT_BYTES")
        except PathRefused as exc:
            raise CodeObjectError(str(exc)) from None
        label = name or os.path.basename(path)
    elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
        label = name or "<memory>"
    else:
        raise CodeObjectError(f"cannot load a code object from {type(path_or_bytes).__name__}")

    budget = code_object_budget()
    if is_bundle(data):
        return _from_bundle(data, label, budget)
    container_header = b""
    if data.startswith(OCLOC_DEBUG_MAGIC):
        start = data.find(b"\x7fELF")
        if start < 0:
            raise CodeObjectError(f"{label}: ocloc debug file without an ELF image")
        container_header, data = data[:start], data[start:]
    if not data.startswith(b"\x7fELF"):
        raise CodeObjectError(f"{label}: neither an ELF file nor an offload bundle")
    machine = raw_machine(data, label)
    if machine == EM_CUDA:
        return [_cubin(data, label)]
    if machine in LEGACY_AMD_MACHINES:
        raise CodeObjectError(
            f"{label}: a legacy AMD OpenCL binary (e_machine {machine:#x}, {LEGACY_AMD_MACHINES[machine]}: AMD's "
            f"pre-ROCm OpenCL runtime), not a code object this debugger reads; rebuild for ROCm (an EM_AMDGPU "
            f"code object, code object v2 or later)")
    if machine in DEVICE_MACHINES:
        co = _device_object(data, label)
        co.container_header = container_header  # the adapter reads the device from it
        return [co]
    return _from_host_elf(data, label, budget)


def _device_object(data: bytes, label: str) -> CodeObject:
    """A device ELF as a code object; an AMDGPU relocatable object (`.o`) laid out and relocated first."""
    from aspace_dap.adapters.amdgpu.relocations import is_relocatable_amdgpu, relocate_object

    if is_relocatable_amdgpu(data):
        # the DWARF of a `.o` reaches code and strings only through relocations: apply them, with the
        # code laid out from 0, before anything reads the object
        return CodeObject(relocate_object(data, label), label, relocated=True)
    return CodeObject(data, label)


def _cubin(data: bytes, label: str) -> CodeObject:
    # nvcc leaves every function at address 0 and names them in DWARF only through
    # relocations: lay the code out as the driver does before anything reads DWARF
    from aspace_dap.adapters.nvidia.cubin import relocate_cubin

    warnings: list[str] = []
    co = CodeObject(relocate_cubin(data, label, warnings), label)
    co.load_warnings = warnings
    return co


def _from_bundle(data: bytes, label: str, budget: Budget) -> list[CodeObject]:
    objects = [
        _device_object(entry.data, f"{label}#{entry.bundle_id}")
        for entry in parse_bundles(data, label, budget)
        if entry.is_amdgcn and entry.data
    ]
    if not objects:
        raise CodeObjectError(f"{label}: offload bundle holds no amdgcn code object")
    return objects


def _from_host_elf(data: bytes, label: str, budget: Budget) -> list[CodeObject]:
    elf = open_elf(data, label)
    try:
        fatbin = elf.get_section_by_name(HIP_FATBIN_SECTION)
        payload = fatbin.data() if fatbin is not None and fatbin["sh_type"] != "SHT_NOBITS" else None
        cuda_fatbin = elf.get_section_by_name(CUDA_FATBIN_SECTION) if payload is None else None
        cuda_payload = cuda_fatbin.data() if cuda_fatbin is not None and cuda_fatbin["sh_type"] != "SHT_NOBITS" \
            else None
    except ELF_PARSE_ERRORS as exc:
        raise CodeObjectError(f"{label}: malformed ELF: {exc}") from exc
    if cuda_payload is not None:
        return _from_cuda_fatbin(cuda_payload, f"{label}:{CUDA_FATBIN_SECTION}", budget)
    if payload is None:
        raise CodeObjectError(f"{label}: host ELF without a {HIP_FATBIN_SECTION} or {CUDA_FATBIN_SECTION} section")
    return _from_bundle(payload, f"{label}:{HIP_FATBIN_SECTION}", budget)


def _from_cuda_fatbin(data: bytes, label: str, budget: Budget) -> list[CodeObject]:
    from .fatbin import cubins

    objects = [_cubin(image, name) for name, image in cubins(data, label, budget)]
    if not objects:
        raise CodeObjectError(f"{label}: the fat binary holds no cubin (PTX only)")
    return objects
