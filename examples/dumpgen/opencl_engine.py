"""Build Intel GPU dumps for the OpenCL examples from ocloc's DWARF and a model of the kernel.

IGC describes most variables as values pulled out of GRFs (`DW_OP_INTEL_push_bit_piece_stack;
DW_OP_stack_value`), which cannot be written through. So the register file is found by
probing: a draft dump whose every GRF dword holds its own name (GRF << 8 | dword) is
evaluated per lane, and the value each lane reads says which GRF dwords hold its variable.
The model's values are then stored there. Variables in memory (SLM, global) or in plain
register locations are written through their evaluated locations, as the AMDGPU engine does.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.adapters.intel.adapter import IntelAdapter, debug_index, device_of_code_object, load_debug_elf
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.index import ConstValue
from aspace_dap.dwarf.locations import ImplicitLocation, Location
from aspace_dap.dwarf.storage import write_bytes
from aspace_dap.dwarf.target import FrameContext
from aspace_dap.errors import AspaceError
from aspace_dap.state import StateWriter, load_state

from .engine import byte_size, encode

GRFS = 128


@dataclass
class OpenclDump:
    name: str  # folder under examples/opencl/dumps/
    debug_elf: Path  # ocloc's debug file (.dbg: its header names the device, then the debug ELF)
    processor: str  # ocloc's -device
    kernel: str
    lanes: int  # the kernel's SIMD width
    pc: int
    active: int  # execution mask
    values: dict[str, list]  # variable -> one Python value per lane (None: no value in that lane)
    grid_size: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    workgroup_id: tuple[int, int, int]
    slm: bytes = b""
    memory: list[tuple[int, bytes, int]] = field(default_factory=list)  # (address, bytes, declared size)
    focus_lane: int = 0
    stop: str = ""
    # GRFs whose contents the kernel's ISA fixes, written as they are (the local-ID payload: 16-bit
    # ids packed, which IGC's DWARF misplaces); a variable's location may not write over them
    registers: dict[str, bytes] = field(default_factory=dict)


def first_pc_of_line(debug_file: Path, source: str, line: int) -> int:
    """The first address the line table gives `source:line` (where a breakpoint there stops)."""
    pcs = debug_index(load_debug_elf(debug_file)).pcs_for_line(source, line)
    if not pcs:
        raise AspaceError(f"{debug_file}: no code for {source}:{line}")
    return pcs[0]


def _u32(v: int) -> bytes:
    return struct.pack("<I", v & 0xFFFFFFFF)


# where the dumps put a thread's private memory (IGC's per-SIMD-lane slots in a global buffer)
PRIVATE_ADDR = 0x7F0000800000


def _writer(spec: OpenclDump, regs: dict[str, bytes], slm: bytes,
            memory: list[tuple[int, bytes, int]] | None = None) -> StateWriter:
    w = StateWriter("intel", spec.processor, spec.lanes, producer="examples/dumpgen/opencl_engine.py")
    co = w.add_code_object(spec.debug_elf.read_bytes(), name=spec.debug_elf.name)
    for address, data, size in spec.memory if memory is None else memory:
        w.add_memory("global", address, data, size)
    d = w.add_dispatch(spec.kernel, co, spec.grid_size, spec.workgroup_size)
    wg = d.add_workgroup(spec.workgroup_id, lds=slm or None)
    names = ["ip", "emask"] + sorted((n for n in regs if n.startswith("r")), key=lambda n: int(n[1:]))
    wg.add_wave(0, 0, {n: regs[n] for n in names}, layout=[(n, len(regs[n])) for n in names])
    w.set_focus(0, spec.focus_lane)
    w.set_stop("breakpoint", spec.stop)
    return w


def _variables(index, pc):
    frames = index.frames_at(pc)
    if not frames:
        raise AspaceError(f"no function covers pc {pc:#x}")
    frame = frames[0]
    out, seen = [], set()
    for var in index.variables(frame, pc):
        expr = var.location_at(pc)
        if var.name in seen or var.shadowed or expr is None or isinstance(expr, ConstValue):
            continue
        seen.add(var.name)
        out.append((var, expr))
    return frame, out


def build(spec: OpenclDump) -> StateWriter:
    co = load_debug_elf(spec.debug_elf)
    index = debug_index(co)
    frame, variables = _variables(index, spec.pc)
    device = device_of_code_object(co)
    if device is None:
        raise AspaceError(f"{spec.debug_elf}: the code object does not name its device")
    adapter = IntelAdapter(device)
    dwords = device.grf_bytes // 4
    lanes = np.arange(spec.lanes)
    fixed = {"ip": _u32(spec.pc), "emask": _u32(spec.active)}
    probe = dict(fixed, **{f"r{g}": b"".join(_u32(g << 8 | d) for d in range(dwords)) for g in range(GRFS)})
    final = {f"r{g}": bytearray(device.grf_bytes) for g in range(GRFS)}
    touched: set[str] = set()
    through_location = []
    writes = []  # (lane, variable order, variable name, GRF, dword, 4 value bytes)
    # GRF dwords holding a private-memory address (a base shared by many variables, or one lane's
    # pointer to one variable) -> how many bytes past it are used
    private_slots: dict[tuple[int, int], int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        _writer(spec, probe, spec.slm).write(tmp)
        state = load_state(tmp)
        try:
            target = adapter.wave_target(state, state.wave_by_id(0), frame.dialect)
            for order, (var, expr) in enumerate(variables):
                values = spec.values.get(var.name)
                if values is None:
                    raise AspaceError(f"{var.name} has a location at {spec.pc:#x} but the model gives it no value")
                if all(v is None for v in values):
                    continue  # nothing to place (an undescribed or not yet computed value)
                res = evaluate(expr, target, frame.dialect, lanes, frame=FrameContext(pc=spec.pc))
                if res.errors:
                    lane, err = next(iter(res.errors.items()))
                    raise AspaceError(f"{var.name}: lane {lane}: {err}")
                if not all(isinstance(e.primary, ImplicitLocation) for _, e in res.groups):
                    through_location.append((var, expr))
                    for _, entry in res.groups:
                        for place in getattr(entry, "places", ()):
                            for addr in getattr(place, "address", ()):
                                found = _private_base(int(addr), dwords, byte_size(var.type))
                                if found is not None:
                                    private_slots[found[0]] = max(private_slots.get(found[0], 0), found[1])
                    continue
                for glanes, entry in res.groups:
                    for row, lane in enumerate(glanes):
                        value = values[int(lane)]
                        if value is None:
                            continue
                        raw = encode(var.type, value)
                        names = bytes(entry.primary.data[row])
                        for k in range(0, len(raw), 4):
                            tag = int.from_bytes(names[k:k + 4], "little")
                            grf, dword = tag >> 8, tag & 0xFF
                            if grf >= GRFS or dword >= dwords:
                                raise AspaceError(f"{var.name}: lane {lane} does not read whole GRF dwords")
                            writes.append((int(lane), order, var.name, grf, dword, raw[k:k + 4]))
        finally:
            state.close()
    owner: dict[tuple[int, int], tuple[int, str, bytes]] = {}
    for reg, data in spec.registers.items():
        grf = int(reg[1:])
        final[reg][:] = data
        touched.add(reg)
        for dword in range(dwords):
            owner[(grf, dword)] = (-1, "the payload", data[dword * 4:dword * 4 + 4])
    for lane, _, name, grf, dword, raw in sorted(writes, key=lambda w: w[:2]):
        slot = (grf, dword)
        if slot in owner:
            first_lane, first_name, first_raw = owner[slot]
            if first_raw != raw:
                raise AspaceError(f"{name} lane {lane} and {first_name} lane {first_lane} share r{grf} dword {dword}")
            continue
        owner[slot] = (lane, name, raw)
        final[f"r{grf}"][dword * 4:dword * 4 + 4] = raw
        touched.add(f"r{grf}")
    memory = list(spec.memory)
    if private_slots:
        # variables in private memory: each address register points into a zeroed buffer of its own
        cursor = 0
        for (grf, dword), extent in sorted(private_slots.items()):
            final[f"r{grf}"][dword * 4:dword * 4 + 8] = struct.pack("<Q", PRIVATE_ADDR + cursor)
            touched.add(f"r{grf}")
            cursor += -(-extent // 0x10) * 0x10
        size = -(-cursor // 0x100) * 0x100
        memory.append((PRIVATE_ADDR, bytes(size), size))
    regs = dict(fixed, **{n: bytes(final[n]) for n in touched})
    if not through_location:
        return _writer(spec, regs, spec.slm, memory)
    # the rest are written through their locations into a dump that has every GRF
    with tempfile.TemporaryDirectory() as tmp:
        _writer(spec, dict(fixed, **{n: bytes(b) for n, b in final.items()}), spec.slm, memory).write(tmp)
        state = load_state(tmp)
        try:
            wave = state.wave_by_id(0)
            target = adapter.wave_target(state, wave, frame.dialect)
            for var, expr in through_location:
                values = spec.values[var.name]
                res = evaluate(expr, target, frame.dialect, lanes, frame=FrameContext(pc=spec.pc))
                for glanes, entry in res.groups:
                    if not isinstance(entry, Location):
                        continue
                    keep = np.array([values[int(lane)] is not None for lane in glanes])
                    if not keep.any():
                        continue
                    rows = [encode(var.type, values[int(lane)]) for lane in glanes[keep]]
                    data = np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), -1)
                    write_bytes(entry.take(np.nonzero(keep)[0]), target, data)
            for name in list(final):
                now = bytes(wave.registers.raw(name)[0])
                if now != bytes(final[name]):
                    touched.add(name)
                regs[name] = now
            regs = dict(fixed, **{n: regs[n] for n in touched})
            slm = bytes(wave.workgroup.lds.read(0, len(spec.slm))[0]) if spec.slm else b""
            glob = state.memory["global"]
            memory = [(address, bytes(glob.read(address, len(data))[0]), size) for address, data, size in memory]
        finally:
            state.close()
    return _writer(spec, regs, slm, memory)


def _private_base(addr: int, dwords: int, size: int) -> tuple[tuple[int, int], int] | None:
    """In the probe dump (GRF dwords hold `grf << 8 | dword`), an address computed from a 64-bit
    base read out of GRFs: the base's (GRF, dword) and how far past it the variable ends."""
    hi = addr >> 32
    grf, dword = hi >> 8, (hi & 0xFF) - 1
    if not (0 < grf < GRFS and 0 <= dword < dwords - 1):
        return None
    base = hi << 32 | grf << 8 | dword
    offset = addr - base
    if not 0 <= offset < 1 << 20:
        return None
    return (grf, dword), offset + size
