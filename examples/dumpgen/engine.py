"""Turn a dump description (registers from the ISA, values from the source) into a format-1 dump.

The machine state the ISA fixes (pc, exec, frame/stack pointers, kernel-argument and
workgroup-id SGPRs, work-item-id VGPRs) comes from the example's spec. Source variables
are then placed where the DWARF says they live: each one's location is evaluated per lane
with the project's evaluator over a draft of the dump, and the value's bytes are written
there (scratch, LDS, VGPRs). The final dump holds only registers the spec or a variable
location names; everything else stays unavailable.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.adapters.amdgpu.adapter import AmdgpuAdapter
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.index import ConstValue, DwarfIndex
from aspace_dap.dwarf.locations import Location
from aspace_dap.dwarf.storage import write_bytes
from aspace_dap.dwarf.target import FrameContext
from aspace_dap.dwarf.types import (ATE_FLOAT, ArrayType, BaseType, PointerType, StructType, byte_size)
from aspace_dap.errors import AspaceError
from aspace_dap.state import StateWriter, load_state, swizzle

LDS_APERTURE = 0x1000000000000
PRIVATE_APERTURE = 0x2000000000000
APERTURE_SIZE = 0x100000000


@dataclass
class FrameSpec:
    """One frame of a wave's stack: the PC to look variables up at and the values the source gives them.

    `registers` override the wave's registers while this frame's locations are evaluated (the
    caller's frame pointer, restored from where the callee saved it)."""

    pc: int
    values: dict[str, list]  # variable name -> one Python value per lane (None: lane has none)
    registers: dict[str, bytes] = field(default_factory=dict)
    # variables whose DWARF location disagrees with the ISA: their bytes come from the spec's
    # memory images instead, and the reason is documented in the example's README
    not_by_dwarf: dict[str, str] = field(default_factory=dict)
    # kernels without a frame pointer get no DW_AT_frame_base; their ISA addresses the stack
    # from scratch offset 0 (`buffer_store_dword ..., s[0:3], 0 offset:N`)
    isa_frame_base_zero: bool = False


@dataclass
class WaveSpec:
    id: int
    index_in_workgroup: int
    registers: dict[str, bytes]  # ISA-derived machine state, in layout order
    frames: list[FrameSpec]
    valid_lanes: int | None = None
    scratch: dict[int, list[int]] = field(default_factory=dict)  # lane address -> a dword per lane (non-variables)


@dataclass
class DumpSpec:
    name: str  # folder name under dumps/, e.g. "gfx90a.O0"
    code_object: Path
    processor: str
    lanes: int
    kernel: str
    grid_size: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    workgroup_id: tuple[int, int, int]
    waves: list[WaveSpec]
    lds_size: int = 0
    lds_image: bytes | None = None  # LDS as the ISA lays it out, before DWARF-placed variables
    private_per_lane: int = 0
    memory: list[tuple[int, bytes, int]] = field(default_factory=list)  # (address, bytes, declared size)
    focus: tuple[int, int] = (0, 1)
    stop: tuple[str, str] = ("breakpoint", "")


# --- registers --------------------------------------------------------------------------


def u32(value: int) -> bytes:
    return struct.pack("<I", value & 0xFFFFFFFF)


def u64(value: int) -> bytes:
    return struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)


def lane_u32(values) -> bytes:
    """A VGPR from one 32-bit value per lane (ints, or floats stored as float32 bits)."""
    out = bytearray()
    for v in values:
        out += struct.pack("<f", v) if isinstance(v, float) else u32(int(v))
    return bytes(out)


def sgpr_pair(lo: str, value: int) -> dict[str, bytes]:
    """A 64-bit value in an aligned SGPR pair named by its low register."""
    n = int(lo[1:])
    return {f"s{n}": u32(value), f"s{n + 1}": u32(value >> 32)}


def _reg_order(name: str) -> tuple[int, int, str]:
    kinds = {"pc": 0, "exec": 1, "vcc": 2, "m0": 3, "s": 4, "v": 5, "a": 6}
    if name in kinds:
        return kinds[name], 0, ""
    if name[0] in kinds and name[1:].isdigit():
        return kinds[name[0]], int(name[1:]), ""
    return 7, 0, name  # hardware registers the save area keeps (trapsts, mode), after the rest


# --- values ------------------------------------------------------------------------------


def encode(t, value) -> bytes:
    """The bytes of a Python value as the DWARF type lays it out."""
    t = t.strip()
    if isinstance(t, BaseType):
        if t.encoding == ATE_FLOAT:
            return struct.pack({4: "<f", 8: "<d"}[t.size], value)
        return (int(value) & ((1 << (8 * t.size)) - 1)).to_bytes(t.size, "little")
    if isinstance(t, PointerType):
        return u64(value)
    if isinstance(t, ArrayType):
        inner = ArrayType(name=None, size=None, element=t.element, dims=t.dims[1:]) if len(t.dims) > 1 else t.element
        if len(value) != t.dims[0]:
            raise ValueError(f"array of {t.dims[0]} elements given {len(value)} values")
        return b"".join(encode(inner, v) for v in value)
    if isinstance(t, StructType):
        out = bytearray(byte_size(t))
        for m in t.members:
            raw = encode(m.type, value[m.name])
            out[m.bit_offset // 8: m.bit_offset // 8 + len(raw)] = raw
        return bytes(out)
    raise TypeError(f"no encoding for {t.display_name()}")


class _RecordingTarget:
    """Passes everything to the wave target and remembers which registers a write touched."""

    def __init__(self, inner, touched: set[str]):
        self._inner = inner
        self._touched = touched

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def write_register(self, regno, lanes, byte_offsets, data):
        self._touched.add(self._inner.register_info(regno).name)
        self._inner.write_register(regno, lanes, byte_offsets, data)


def frame_context(index: DwarfIndex, frame, pc: int) -> FrameContext:
    return FrameContext(pc=pc, frame_base_expr=frame.frame_base_expr,
                        addrx=lambda i: index.addr_index(frame.cu_offset, i))


def fbreg_as_private_address(expr: bytes) -> bytes:
    """`DW_OP_fbreg N` with a frame base of private offset 0, in the upstream dialect's words:
    `DW_OP_constu N, DW_OP_lit1, DW_OP_swap, DW_OP_xderef` (1 = private)."""
    if not expr or expr[0] != 0x91:
        return expr
    value, shift, pos = 0, 0, 1
    while True:
        byte = expr[pos]
        value |= (byte & 0x7F) << shift
        shift += 7
        pos += 1
        if not byte & 0x80:
            break
    if byte & 0x40:
        value -= 1 << shift
    if pos != len(expr) or value < 0:
        return expr
    uleb = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        uleb.append(low | (0x80 if value else 0))
        if not value:
            break
    return bytes([0x10, *uleb, 0x31, 0x16, 0x18])


def innermost_frame(index: DwarfIndex, pc: int):
    frames = index.frames_at(pc)
    if not frames:
        raise AspaceError(f"no function covers pc {pc:#x}")
    return frames[0]


# --- building ---------------------------------------------------------------------------


def _writer(spec: DumpSpec, registers_of: dict[int, dict[str, bytes]], lds: bytes | None,
            private_of: dict[int, bytes]) -> StateWriter:
    w = StateWriter("amd", spec.processor, spec.lanes, producer="examples/make_dumps.py",
                    apertures={"local": (LDS_APERTURE, APERTURE_SIZE), "private": (PRIVATE_APERTURE, APERTURE_SIZE)})
    co = w.add_code_object(spec.code_object.read_bytes(), name=spec.code_object.name)
    for address, data, size in spec.memory:
        w.add_memory("global", address, data, size)
    d = w.add_dispatch(spec.kernel, co, spec.grid_size, spec.workgroup_size)
    wg = d.add_workgroup(spec.workgroup_id, lds=lds)
    for wave in spec.waves:
        regs = registers_of[wave.id]
        layout = w.add_register_layout(None, [(n, len(regs[n])) for n in sorted(regs, key=_reg_order)])
        wg.add_wave(wave.id, wave.index_in_workgroup, regs, layout=layout, valid_lanes=wave.valid_lanes,
                    private=private_of.get(wave.id))
    w.set_focus(*spec.focus)
    w.set_stop(*spec.stop)
    return w


def build(spec: DumpSpec) -> StateWriter:
    """Place every modelled variable and return the writer for the finished dump."""
    (code_object,) = load_code_objects(spec.code_object)
    index = DwarfIndex(code_object.elf, e_machine=code_object.e_machine)
    vgpr_size = 4 * spec.lanes
    # the draft: spec registers plus every VGPR (a variable may live in any), zeroed scratch and LDS
    draft_regs = {}
    for wave in spec.waves:
        regs = dict(wave.registers)
        for n in range(256):
            regs.setdefault(f"v{n}", bytes(vgpr_size))
        draft_regs[wave.id] = regs
    private_size = spec.private_per_lane * spec.lanes
    draft_private = {w.id: _scratch_image(w, spec) for w in spec.waves} if private_size else {}
    lds = (spec.lds_image or bytes(spec.lds_size)) if spec.lds_size else None
    adapter = AmdgpuAdapter()
    touched: dict[int, set[str]] = {w.id: set() for w in spec.waves}
    with tempfile.TemporaryDirectory() as tmp:
        _writer(spec, draft_regs, lds, draft_private).write(tmp)
        state = load_state(tmp)
        try:
            for wave_spec in spec.waves:
                wave = state.wave_by_id(wave_spec.id)
                for frame_spec in wave_spec.frames:
                    _place_frame(index, state, wave, wave_spec, frame_spec, adapter, touched[wave_spec.id])
            final_regs = {}
            for wave_spec in spec.waves:
                wave = state.wave_by_id(wave_spec.id)
                keep = set(wave_spec.registers) | touched[wave_spec.id]
                final_regs[wave_spec.id] = {n: bytes(wave.registers.raw(n)[0]) for n in keep}
            final_private = {w.id: bytes(state.wave_by_id(w.id).private.wave_view.read(0, private_size)[0])
                             for w in spec.waves} if private_size else {}
            final_lds = None
            if lds is not None:
                final_lds = bytes(state.dispatches[0].workgroups[0].lds.read(0, spec.lds_size)[0])
        finally:
            state.close()
    return _writer(spec, final_regs, final_lds, final_private)


def _scratch_image(wave: WaveSpec, spec: DumpSpec) -> bytes:
    per_lane = np.zeros((spec.lanes, spec.private_per_lane), np.uint8)
    for offset, words in wave.scratch.items():
        per_lane[:, offset:offset + 4] = np.array(words, "<u4").view(np.uint8).reshape(spec.lanes, 4)
    return swizzle(per_lane)


def _place_frame(index, state, wave, wave_spec: WaveSpec, frame_spec: FrameSpec, adapter, touched: set[str]) -> None:
    pc = frame_spec.pc
    frame = innermost_frame(index, pc)
    saved = {}
    for name, raw in frame_spec.registers.items():  # the caller's view of its own frame registers
        saved[name] = bytes(wave.registers.raw(name)[0])
        wave.registers.write(name, 0, raw)
    target = _RecordingTarget(adapter.wave_target(state, wave, frame.dialect), touched)
    lanes = np.nonzero(wave.valid_lanes)[0]
    seen = set()
    for var in index.variables(frame, pc):
        if var.name in seen or var.shadowed or var.name in frame_spec.not_by_dwarf:
            continue
        seen.add(var.name)
        expr = var.location_at(pc)
        if expr is None or isinstance(expr, ConstValue):
            continue  # optimized out here, or a constant the debug info already holds
        if frame_spec.isa_frame_base_zero and frame.frame_base_expr is None:
            expr = fbreg_as_private_address(expr)
        values = frame_spec.values.get(var.name)
        if values is None:
            raise AspaceError(f"{var.name} has a location at {pc:#x} but the model gives it no value")
        result = evaluate(expr, target, frame.dialect, lanes, frame=frame_context(index, frame, pc))
        if result.errors:
            lane, err = next(iter(result.errors.items()))
            raise AspaceError(f"{var.name}: lane {lane}: {err}")
        for glanes, entry in result.groups:
            if not isinstance(entry, Location):
                continue  # DW_OP_stack_value: the value is in the expression itself
            keep = np.array([values[int(lane)] is not None for lane in glanes])
            if not keep.any():
                continue
            rows = [encode(var.type, values[int(lane)]) for lane in glanes[keep]]
            data = np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), -1)
            write_bytes(entry.take(np.nonzero(keep)[0]) if not keep.all() else entry, target, data)
    for name, raw in saved.items():
        wave.registers.write(name, 0, raw)
