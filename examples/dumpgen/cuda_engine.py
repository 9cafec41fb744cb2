"""Build a CUDA example dump: machine state from the spec, source variables placed where the DWARF says.

A draft dump holds the warp's fixed state (pc, exec, the stack register R1,
kernel parameters in the param bank, global inputs, shared memory size). The
draft is opened with the project's own session; every variable in scope at the
stop PC is located per lane through the NVIDIA adapter (register map, CFA,
storage kinds) and its model value written there. The result is saved as a
new dump, so the bytes sit exactly where a debugger reading the cubin looks.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.adapters.nvptx_cubin import read_cubin_debug, relocate_cubin
from aspace_dap.dwarf.locations import Location
from aspace_dap.dwarf.storage import write_bytes
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state

from .engine import encode

LANES = 32
SHARED_WINDOW = 0x7F00_0000_0000
LOCAL_WINDOW = 0x7F00_0100_0000
WINDOW_SIZE = 0x100_0000  # 16 MiB each
STACK_TOP = 0xFFFC00  # local address of the top of each thread's stack
LOCAL_PER_LANE = 0x400
PARAM_BASE = 0x210  # sm_90: kernel parameters start at c[0x0][0x210]
REGISTERS = 40
PREDICATES = 7


@dataclass
class WarpSpec:
    index_in_workgroup: int
    active: int  # exec mask
    valid: int = 0xFFFFFFFF


@dataclass
class CudaDumpSpec:
    name: str
    cubin: Path
    kernel: str  # mangled name
    file: str  # source file name for the stop line
    line: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    block_id: tuple[int, int, int]
    warps: list[WarpSpec]
    params: bytes  # the param bank from PARAM_BASE
    values: object  # callable(thread (x,y,z)) -> {variable name: value}; None values stay unwritten
    shared_size: int = 0
    shared: object = None  # callable() -> {variable name: value} for shared variables (one per CTA)
    memory: list[tuple[int, bytes]] = field(default_factory=list)  # global regions
    frame_size: int = 0x100  # bytes below STACK_TOP that R1 reserves
    pc_offset: int = 0  # stop at the line's n-th address
    caller: str | None = None  # stopped in a device function called from this function (mangled)
    caller_values: object = None  # callable(thread) -> the caller's {variable name: value}


def stop_pc(image: bytes, spec: CudaDumpSpec) -> int:
    import io

    from elftools.elf.elffile import ELFFile

    from aspace_dap.dwarf.index import DwarfIndex

    index = DwarfIndex(ELFFile(io.BytesIO(image)), load_bias=0, e_machine=190)
    files = [f for f in index.source_files() if f.endswith(spec.file)]
    pcs = sorted({pc for f in files for pc in index.pcs_for_line(f, spec.line)})
    if not pcs:
        raise ValueError(f"{spec.name}: no code for {spec.file}:{spec.line}")
    return pcs[min(spec.pc_offset, len(pcs) - 1)]


R_CUDA_ABS32_LO_32 = 56  # MOV R20, 32@lo(return address)
R_CUDA_ABS32_HI_32 = 57  # MOV R21, 32@hi(return address)
RETURN_REGISTERS = ("R20", "R21")  # the .debug_frame return address column and its high half


def return_address(image: bytes, caller: str) -> int:
    """Where a call in `caller` returns: nvcc loads it into R20/R21 through a pair of
    ABS32 relocations against the caller's own symbol, addend = offset after the CALL."""
    import io

    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(image))
    rela = elf.get_section_by_name(f".rela.text.{caller}")
    symtab = elf.get_section_by_name(".symtab")
    if rela is None or symtab is None:
        raise ValueError(f"{caller}: no relocations, so no call")
    found = {r["r_info_type"]: symtab.get_symbol(r["r_info_sym"]).entry.st_value + r["r_addend"]
             for r in rela.iter_relocations()
             if r["r_info_type"] in (R_CUDA_ABS32_LO_32, R_CUDA_ABS32_HI_32)
             and symtab.get_symbol(r["r_info_sym"]).name == caller}
    if set(found) != {R_CUDA_ABS32_LO_32, R_CUDA_ABS32_HI_32} or len(set(found.values())) != 1:
        raise ValueError(f"{caller}: expected one return address pair, found {found}")
    return found[R_CUDA_ABS32_LO_32]


def _draft(spec: CudaDumpSpec, image: bytes, pc: int) -> StateWriter:
    writer = StateWriter("nvidia", "sm_90", LANES,
                         apertures={"shared": (SHARED_WINDOW, WINDOW_SIZE), "local": (LOCAL_WINDOW, WINDOW_SIZE)},
                         producer="examples/dumpgen/cuda_engine.py")
    co = writer.add_code_object(image, 0, name=spec.cubin.name)
    for address, data in spec.memory:
        writer.add_memory("global", address, data)
    layout = [("pc", 8), ("exec", 4)] + [(f"R{n}", 4 * LANES) for n in range(REGISTERS)] + \
        [(f"P{n}", LANES) for n in range(PREDICATES)]
    dispatch = writer.add_dispatch(spec.kernel, co, spec.grid, spec.block)
    dispatch.add_memory("param", PARAM_BASE, spec.params)
    wg = dispatch.add_workgroup(spec.block_id, bytes(spec.shared_size) if spec.shared_size else None)
    base = STACK_TOP - LOCAL_PER_LANE
    sp = STACK_TOP - spec.frame_size
    for n, warp in enumerate(spec.warps):
        regs = {"pc": struct.pack("<Q", pc), "exec": struct.pack("<I", warp.active)}
        for r in range(REGISTERS):
            regs[f"R{r}"] = bytes(4 * LANES)
        regs["R1"] = np.full(LANES, sp, "<u4").tobytes()
        if spec.caller is not None:
            # only the lanes that took the call ran the MOVs before CALL.REL
            ret = return_address(image, spec.caller)
            took = np.array([warp.active >> lane & 1 for lane in range(LANES)], bool)
            for name, half in zip(RETURN_REGISTERS, (ret & 0xFFFFFFFF, ret >> 32)):
                regs[name] = np.where(took, half, 0).astype("<u4").tobytes()
        for p in range(PREDICATES):
            regs[f"P{p}"] = bytes(LANES)
        wg.add_wave(n, warp.index_in_workgroup, regs, layout, valid_lanes=warp.valid,
                    private=np.zeros((LANES, LOCAL_PER_LANE), np.uint8), private_layout="per_lane",
                    private_base=base)
    writer.set_focus(0, next(i for i in range(LANES) if spec.warps[0].active >> i & 1))
    writer.set_stop("breakpoint", f"{spec.file}:{spec.line}")
    return writer


def build(spec: CudaDumpSpec, dest: Path) -> Path:
    """Write the dump folder `dest` (which must not exist)."""
    image = relocate_cubin(spec.cubin.read_bytes(), spec.cubin.name)
    read_cubin_debug(image)  # fail early on a malformed register map
    pc = stop_pc(image, spec)
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft"
        _draft(spec, image, pc).write(draft)
        state = load_state(draft)
        session = Session(state)
        for wave in state.waves:
            _place(session, spec, wave)
        state.save(dest)
        state.close()
    return dest


def thread_of(spec: CudaDumpSpec, wave, lane: int) -> tuple[int, int, int]:
    return wave.local_id(lane)


def _place(session: Session, spec: CudaDumpSpec, wave) -> None:
    lanes = [lane for lane in range(LANES) if wave.valid_lanes[lane] and wave.active_lanes[lane]]
    session.set_focus(wave.id, lanes[0])
    frames = session.frames()
    _place_frame(session, spec, wave, lanes, frames[0], spec.values)
    if spec.caller is not None:
        if len(frames) < 2 or frames[1].info is None or frames[1].info.linkage_name != spec.caller:
            raise ValueError(f"{spec.name}: no {spec.caller} frame above the stop: {frames}")
        _place_frame(session, spec, wave, lanes, frames[1], spec.caller_values)


def _place_frame(session: Session, spec: CudaDumpSpec, wave, lanes, frame, values_of) -> None:
    shared = spec.shared() if spec.shared else {}
    for var in session.variables(frame):
        if var.kind == "parameter" and var.address_space == 7:
            continue  # the param bank already holds them
        per_lane = [values_of(thread_of(spec, wave, lane)) for lane in lanes]
        for lane, values in zip(lanes, per_lane):
            value = shared.get(var.name) if var.name in shared else values.get(var.name)
            if value is None:
                continue
            read = session.read_variable(frame, var, [lane])
            obj = read.obj_for(lane)
            if obj is None or not isinstance(obj.location, Location):
                raise ValueError(f"{spec.name}: {var.name} has no location for lane {lane}: {read.errors}")
            raw = np.frombuffer(encode(var.type, value), np.uint8)[None, :]
            write_bytes(obj.location, obj.target, raw)
