"""Writes Intel GPU cores from a state, laid out as gdb-oneapi writes and reads them (see core.py).

The register description is gdb-oneapi's (tdesc.py), in either NT_PRPSINFO form. It lists the registers
the dump holds, each in its register set's feature, plus the ones gdb-oneapi reads the thread's state
from, filled from the dump: cr0 (dword 2 = the wave's `ip`, an offset from isabase), sr0 (dword 2 =
the dispatch mask: the wave's valid lanes), ce (the execution mask), isabase, and r0 (dwords 1, 6, 7 =
the work-group's ids; with the implicit arguments, dword 0 = their offset from genstbase and dword 2 = the
thread's local ID table entry and the table's length). A register the dump lacks is left out of the description rather than written
as zeros; where the dump lacks cr0, sr0 or r0 their other dwords are written as 0 (a core stores
every byte of a register it lists), and where it holds them, the dwords written must agree.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.model import GpuState, Wave, lanes_to_mask
from .core import (CORE_NOTE, CR0_IP_AT, EHDR, ELF_MAGIC, EM_INTELGT, ET_CORE, LEGACY_PRPSINFO_HEAD, NHDR, NT_FILE,
                   NT_PRPSINFO, NT_PRSTATUS, NT_SIGINFO, PHDR, PRSTATUS_HEAD, PT_LOAD, PT_NOTE, R0_WORKGROUP_AT,
                   SIGINFO, SIGINFO_SIZE, SIGSEGV, SR0_DISPATCH_MASK_AT)
from .implicit_args import R0_THREAD_AT, SIMD_WIDTHS, encode, local_id_table
from .tdesc import INTEL_VENDOR_ID, describe, layout_of

# an instruction base as Level Zero's heaps have them: well above zero, so PC = isabase + CR0.2 is tested
DEFAULT_ISABASE = 0x7FFF_0000_0000
DEFAULT_GENSTBASE = 0x7FFE_0000_0000  # the general state base: the implicit arguments are above it
ARGS_START, ARGS_BYTES = 0x1000, 128  # the first structure's offset; each structure's room before its table
CONTROL_BYTES = 16   # cr0 and sr0: four dwords (IGA's Models.cpp)
# what gdb-oneapi writes as the file name before the XML (intelgt_make_corefile_notes)
PRPSINFO_NAME = b"GPU"


def _note(kind: int, desc: bytes) -> bytes:
    name = CORE_NOTE + b"\0"
    return (NHDR.pack(len(name), len(desc), kind) + name.ljust(len(name) + 3 & ~3, b"\0")
            + desc.ljust(len(desc) + 3 & ~3, b"\0"))


def prpsinfo(xml: str, form: str = "current", device_id: int = 0) -> bytes:
    """NT_PRPSINFO's descriptor in gdb-oneapi's form: "current" (2024.1 on) or "2023" (2023.1 to 2024.0.1)."""
    body = PRPSINFO_NAME + b"\0" + xml.encode() + b"\0"
    if form == "current":
        return body
    if form == "2023":
        return LEGACY_PRPSINFO_HEAD.pack(device_id, INTEL_VENDOR_ID) + body
    raise ValueError(f"unknown NT_PRPSINFO form {form!r}")


def _known(wave: Wave, name: str) -> bytes | None:
    if not wave.registers.has(name):
        return None
    data, valid = wave.registers.raw(name)
    if not valid.all():
        raise StateError(f"register {name} is not fully known; a core stores every byte", wave.path)
    return data.tobytes()


def _merged(wave: Wave, name: str, size: int, dwords: dict[int, int]) -> bytes:
    """Register `name`: the dump's bytes (else zeros) with `dwords` (byte offset -> u32) set; a dump
    whose register says otherwise is refused."""
    held = _known(wave, name)
    out = bytearray(held if held is not None else bytes(size))
    for at, value in dwords.items():
        if held is not None and int.from_bytes(held[at:at + 4], "little") != value:
            raise StateError(f"register {name} bytes {at}..{at + 3} hold "
                             f"{int.from_bytes(held[at:at + 4], 'little'):#x}, but the wave's state says {value:#x}",
                             wave.path)
        out[at:at + 4] = value.to_bytes(4, "little")
    return bytes(out)


def _grf_bytes(state: GpuState, names: dict[str, int]) -> int:
    sizes = {size for name, size in names.items() if name[:1] == "r" and name[1:].isdigit()}
    if len(sizes) > 1:
        raise StateError(f"general registers of different sizes {sorted(sizes)}", "register_layouts")
    if sizes:
        return sizes.pop()
    from .adapter import device_for_processor

    device = device_for_processor(state.target.processor)
    return device.grf_bytes if device is not None else 32


def _thread_registers(wave: Wave, layout: list[tuple[str, int]], isabase: int, args: "_Args | None") -> bytes:
    ip, emask = wave.registers.value("ip"), wave.registers.value("emask")
    if ip is None or emask is None:
        raise StateError("a core needs the wave's ip and emask in full", wave.path)
    dispatch_mask = lanes_to_mask(wave.valid_lanes)
    wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
    computed = {
        "cr0": {CR0_IP_AT: ip},
        "sr0": {SR0_DISPATCH_MASK_AT: dispatch_mask},
        "r0": dict(zip(R0_WORKGROUP_AT, wg)),
    }
    if args is not None:  # r0.0: the implicit arguments' offset from genstbase; r0.2: the local ID table entry
        computed["r0"][0] = args.offset
        computed["r0"][R0_THREAD_AT] = wave.index_in_workgroup | args.threads << 24
    out = []
    for name, size in layout:
        if name in computed:
            out.append(_merged(wave, name, size, computed[name]))
        elif name == "ce":
            held = _known(wave, "ce")
            ce = emask if held is None else int.from_bytes(held, "little")
            if ce & dispatch_mask != emask & dispatch_mask:
                raise StateError(f"register ce {ce:#x} and emask {emask:#x} disagree on the dispatched lanes",
                                 wave.path)
            out.append(ce.to_bytes(size, "little"))
        elif name == "isabase":
            out.append(isabase.to_bytes(size, "little"))
        elif name == "genstbase" and args is not None:
            out.append(_merged(wave, name, size, {0: args.genstbase & 0xFFFFFFFF, 4: args.genstbase >> 32}))
        else:
            out.append(_known(wave, name))
    return b"".join(out)


def _base(state: GpuState, name: str, requested: int | None, default: int) -> int:
    held = {wave.registers.value(name) for wave in state.waves if wave.registers.has(name)}
    if len(held) > 1:
        raise StateError(f"the waves hold different {name} values; the core writer writes one", "waves")
    if held:
        value = held.pop()
        if value is None:
            raise StateError(f"{name} is not fully known", "waves")
        if requested is not None and requested != value:
            raise StateError(f"the dump's {name} is {value:#x}, not {requested:#x}", "waves")
        return value
    return default if requested is None else requested


@dataclass
class _Args:
    genstbase: int
    offset: int    # from genstbase: r0.0
    threads: int   # entries of the local ID table: r0.2 bits 31:24
    data: bytes    # the structure, then the table


def _implicit_args(state: GpuState, genstbase: int) -> dict[int, _Args]:
    """Per dispatch id, its implicit arguments as gdb-oneapi reads them (implicit_args.py), each at its own
    64-byte aligned offset from genstbase with its local ID table after it."""
    out, offset = {}, ARGS_START
    for d in state.dispatches:
        lanes = d.waves[0].lanes if d.waves else state.target.lanes
        if lanes not in SIMD_WIDTHS:
            raise StateError(f"SIMD{lanes} has no local ID table layout (SIMD1, 8, 16 or 32)", d.path)
        if d.workgroup_size is None or d.grid_size is None:
            raise StateError(d.geometry_unknown or "the work-group size is unknown", d.path)
        threads = -(-int(np.prod(d.workgroup_size)) // lanes)
        if threads > 0xFF:
            raise StateError(f"{threads} threads per work-group do not fit r0.2 bits 31:24", d.path)
        address = genstbase + offset
        data = encode(lanes, d.workgroup_size, d.grid_size, address + ARGS_BYTES).ljust(ARGS_BYTES, b"\0")
        data += local_id_table(lanes, d.workgroup_size, threads)
        out[d.id] = _Args(genstbase, offset, threads, data)
        offset += -(-len(data) // 0x1000) * 0x1000
        if offset >= 1 << 32:
            raise StateError("the implicit arguments run past the 4 GiB r0.0 addresses", d.path)
    return out


def _args_loads(state: GpuState, args: dict[int, _Args]) -> list[tuple[int, bytes, int]]:
    """PT_LOADs of the implicit arguments the dump's memory does not hold already (a dump converted from a
    core does: then they must be the same bytes)."""
    memory = state.memory.get("global")
    loads = []
    for d_id, a in args.items():
        address = a.genstbase + a.offset
        if memory is not None:
            data, valid = memory.read(address, len(a.data))
            if valid.any():
                if not valid.all() or data.tobytes() != a.data:
                    raise StateError(f"global memory at {address:#x} holds other bytes than dispatch {d_id}'s "
                                     "implicit arguments", "memory")
                continue
        loads.append((address, a.data, len(a.data)))
    return loads


def write_core(state: GpuState, path: str | os.PathLike, *, fault_address: int | None = None,
               prpsinfo_form: str = "current", isabase: int | None = None, device_id: int = 0,
               implicit_args: bool = True, genstbase: int | None = None) -> Path:
    """An Intel GPU core of a dump's waves, memory and code objects, NT_PRPSINFO in `prpsinfo_form`
    ("current": gdb-oneapi 2024.1 on; "2023": 2023.1 to 2024.0.1). Each wave's `ip` becomes CR0.2 and
    each code object is loaded at isabase + its load address, so PC = isabase + CR0.2 points where the
    dump's PC does. SLM is not written (the format has none). With `fault_address`, the focus wave
    stopped on SIGSEGV at that address. With `implicit_args`, each dispatch's implicit arguments and
    local ID table are written at genstbase + r0.0 (the work-group and grid sizes); without, the core
    holds no sizes, as a core whose implicit arguments were not dumped."""
    if state.target.vendor != "intel":
        raise StateError(f"an Intel core holds Intel waves, not {state.target.vendor}", "target.vendor")
    waves = state.waves
    held = {}
    for wave in waves:
        names = {n: s for n, s in wave.registers.layout if n not in ("ip", "emask")}
        if held and names != held:
            raise StateError("the waves hold different registers; a core has one register description", wave.path)
        held = names
    grf = _grf_bytes(state, held)
    registers = dict(held)
    for name, size in (("r0", grf), ("ce", 4), ("sr0", CONTROL_BYTES), ("cr0", CONTROL_BYTES), ("isabase", 8)):
        registers.setdefault(name, size)
    args: dict[int, _Args] = {}
    if implicit_args:
        registers.setdefault("genstbase", 8)
        args = _implicit_args(state, _base(state, "genstbase", genstbase, DEFAULT_GENSTBASE))
    layout = layout_of(list(registers.items()))
    base = _base(state, "isabase", isabase, DEFAULT_ISABASE)
    xml = describe(layout, dialect=prpsinfo_form, device_id=device_id, device_name=f"Intel {state.target.processor}")
    notes = [_note(NT_PRPSINFO, prpsinfo(xml, prpsinfo_form, device_id))]
    focus = state.focus.wave if state.focus else waves[0].id
    for wave in waves:
        faulted = fault_address is not None and wave.id == focus
        signal = SIGSEGV if faulted else 0
        notes.append(_note(NT_PRSTATUS, PRSTATUS_HEAD.pack(wave.id, signal, 0)
                           + _thread_registers(wave, layout, base,
                                              args.get(wave.dispatch.id) if wave.dispatch is not None else None)))
        siginfo = SIGINFO.pack(signal, 0, 1 if faulted else 0, 0, fault_address or 0)
        notes.append(_note(NT_SIGINFO, siginfo.ljust(SIGINFO_SIZE, b"\0")))
    images = []
    for i, ref in enumerate(state.code_objects):
        data = Path(ref.path).read_bytes()
        start = data.find(ELF_MAGIC)
        if start < 0:
            raise StateError("not an ELF file", f"code_objects[{i}]")
        # gdb-oneapi stores kernel i's ELF at (i + 1) << 50 (intelgt_make_corefile_notes)
        images.append(((i + 1) << 50, data[start:], base + ref.load_address,
                       ref.manifest_path or Path(ref.path).name))
    entries = b"".join(struct.pack("<QQQ", addr, addr + len(data), bias) for addr, data, bias, _ in images)
    names = b"".join(name.encode() + b"\0" for *_, name in images)
    notes.append(_note(NT_FILE, struct.pack("<QQ", len(images), 1) + entries + names))
    notes = b"".join(notes)
    loads: list[tuple[int, bytes, int]] = [(addr, data, len(data)) for addr, data, _, _ in images]
    global_memory = state.memory.get("global")
    for region in (global_memory.regions if global_memory is not None else []):
        data, valid = global_memory.read(region.address, region.size)
        known = int(np.argmin(valid)) if not valid.all() else len(valid)  # the known prefix
        loads.append((region.address, data[:known].tobytes(), region.size))
    loads += _args_loads(state, args)
    phnum = 1 + len(loads)
    at = EHDR.size + phnum * PHDR.size
    headers = [PHDR.pack(PT_NOTE, 0, at, 0, 0, len(notes), 0, 4)]
    body = [notes]
    offset = at + len(notes)
    for vaddr, data, memsz in loads:
        headers.append(PHDR.pack(PT_LOAD, 6, offset, vaddr, 0, len(data), memsz, 1))
        body.append(data)
        offset += len(data)
    ident = ELF_MAGIC + bytes([2, 1, 1, 0]) + bytes(8)
    header = EHDR.pack(ident, ET_CORE, EM_INTELGT, 1, 0, EHDR.size, 0, 0, EHDR.size, PHDR.size, phnum, 64, 0, 0)
    out = Path(path)
    with open(out, "wb") as f:
        f.write(header + b"".join(headers))
        for part in body:
            f.write(part)
    return out
