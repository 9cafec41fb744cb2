"""Build a CUDA example dump: machine state from the spec, source variables placed where the DWARF says.

A draft dump holds the warp's fixed state (pc, exec, the stack register R1,
kernel parameters in the param bank, global inputs, shared memory size), with
the registers the cubin says the code uses (EIATTR_REGCOUNT, and the uniform
registers its SASS names), zero where the model gives no value. The
draft is opened with the project's own session; every variable in scope at the
stop PC is located per lane through the NVIDIA adapter (register map, CFA,
storage kinds) and its model value written there. The result is saved as a
new dump, so the bytes sit exactly where a debugger reading the cubin looks.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.adapters.nvidia.cubin import (STACK_REGISTER, kernel_parameters, read_cubin_debug, register_counts,
                                              relocate_cubin)
from aspace_dap.dwarf.locations import Location
from aspace_dap.dwarf.storage import write_bytes
from aspace_dap.errors import AspaceError
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state

from .engine import encode

LANES = 32
SHARED_WINDOW = 0x7F00_0000_0000
LOCAL_WINDOW = 0x7F00_0100_0000
WINDOW_SIZE = 0x100_0000  # 16 MiB each
STACK_TOP = 0xFFFC00  # local address of the top of each thread's stack
LOCAL_PER_LANE = 0x400
PREDICATES = 7  # P0-P6 (P7 is PT, always true)


@dataclass
class WarpSpec:
    index_in_workgroup: int
    active: int  # exec mask
    valid: int = 0xFFFFFFFF


@dataclass
class Elsewhere:
    """Lanes standing at another line of the stopped function, each at its own PC (independent thread
    scheduling: a CUDA core's lane rows record every lane's virtual PC), with the values the source
    gives them there."""

    lanes: int  # mask of the lanes (of every warp) at `line`
    line: int
    values: object  # callable(thread (x,y,z)) -> {variable name: value}
    function: str | None = None  # the line's function (mangled) when another than the stop's


@dataclass
class CudaDumpSpec:
    name: str
    cubin: Path
    kernel: str  # mangled name
    file: str  # source file name for the stop line
    line: int
    grid: tuple[int, int, int]  # gridDim: blocks per dimension, as the launch gives them
    block: tuple[int, int, int]
    block_id: tuple[int, int, int]
    warps: list[WarpSpec]
    params: bytes  # the kernel parameters as the C ABI lays them out (placed where the cubin says)
    values: object  # callable(thread (x,y,z)) -> {variable name: value}; None values stay unwritten
    shared_size: int = 0
    shared: object = None  # callable() -> {variable name: value} for shared variables (one per CTA)
    memory: list[tuple[int, bytes]] = field(default_factory=list)  # global regions
    frame_size: int = 0x100  # bytes below STACK_TOP that R1 reserves
    pc_offset: int = 0  # stop at the line's n-th address
    caller: str | None = None  # stopped in a device function called from this function (mangled)
    caller_values: object = None  # callable(thread) -> the caller's {variable name: value}
    elsewhere: Elsewhere | None = None  # lanes at their own PC on another line (the dump gets lane_pcs)
    address: int | None = None  # stop here (the function's own offset, as nvdisasm lists it), not at the line
    stop: tuple | None = None  # the dump's stop (reason, description[, pc]); default a breakpoint at the line


def stop_pc(image: bytes, spec: CudaDumpSpec, line: int | None = None) -> int:
    """The stop's PC: the `pc_offset`-th address of the stop line (of `line` when given)."""
    import io

    from elftools.elf.elffile import ELFFile

    from aspace_dap.dwarf.index import DwarfIndex

    if line is None and spec.address is not None:
        return spec.address
    line = spec.line if line is None else line
    index = DwarfIndex(ELFFile(io.BytesIO(image)), load_bias=0, e_machine=190)
    files = [f for f in index.source_files() if f.endswith(spec.file)]
    pcs = sorted({pc for f in files for pc in index.pcs_for_line(f, line)})
    if not pcs:
        raise ValueError(f"{spec.name}: no code for {spec.file}:{line}")
    return pcs[min(spec.pc_offset, len(pcs) - 1)] if line == spec.line else pcs[0]


R_CUDA_ABS32_LO_32 = 56  # MOV Rlo, 32@lo(return address)
R_CUDA_ABS32_HI_32 = 57  # MOV Rhi, 32@hi(return address)


@dataclass(frozen=True)
class ReturnAddress:
    """What the caller's CALL sequence loads: the address after the CALL, into a register pair."""

    address: int
    low: str  # register names, as the SASS writes them
    high: str


def _relocations(image: bytes, caller: str) -> dict[int, tuple[int, int]]:
    """ABS32 lo/hi relocations against the caller's own symbol: type -> (instruction offset, value)."""
    import io

    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(image))
    rela = elf.get_section_by_name(f".rela.text.{caller}")
    symtab = elf.get_section_by_name(".symtab")
    if rela is None or symtab is None:
        raise ValueError(f"{caller}: no relocations, so no call")
    found = {}
    for r in rela.iter_relocations():
        symbol = symtab.get_symbol(r["r_info_sym"])
        if r["r_info_type"] in (R_CUDA_ABS32_LO_32, R_CUDA_ABS32_HI_32) and symbol.name == caller:
            found[r["r_info_type"]] = (r["r_offset"], symbol.entry.st_value + r["r_addend"])
    if set(found) != {R_CUDA_ABS32_LO_32, R_CUDA_ABS32_HI_32} or \
            found[R_CUDA_ABS32_LO_32][1] != found[R_CUDA_ABS32_HI_32][1]:
        raise ValueError(f"{caller}: expected one return address pair, found {found}")
    return found


def call_return_address(image: bytes, caller: str) -> int:
    """Where the call in `caller` returns (function-relative in an unrelocated cubin), from its relocations."""
    return _relocations(image, caller)[R_CUDA_ABS32_LO_32][1]


def nvdisasm() -> str:
    """nvdisasm from PATH, else from the nvidia-cuda-nvdisasm wheel (`pip install nvidia-cuda-nvdisasm`)."""
    import glob
    import shutil
    import sys

    found = shutil.which("nvdisasm")
    if found:
        return found
    for root in sys.path:
        for candidate in sorted(glob.glob(os.path.join(root, "nvidia", "*", "bin", "nvdisasm"))):
            return candidate
    raise FileNotFoundError("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel or the CUDA toolkit")


def sass(image: bytes) -> dict[str, dict[int, str]]:
    """The cubin's SASS as nvdisasm prints it: function -> {offset in the function: instruction}."""
    import re
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "image.cubin"
        path.write_bytes(image)
        text = subprocess.run([nvdisasm(), "-c", str(path)], check=True, capture_output=True, text=True).stdout
    out: dict[str, dict[int, str]] = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"^\.text\.(\S+):", line)
        if header:
            current = out.setdefault(header.group(1), {})
            continue
        insn = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$", line)
        if insn and current is not None:
            current[int(insn.group(1), 16)] = insn.group(2).rstrip(" ;")
    # a laid-out image prints addresses; offsets count from each function's first instruction
    return {name: {at - min(code): insn for at, insn in code.items()} for name, code in out.items() if code}


def uniform_registers(image: bytes) -> tuple[int, int]:
    """(uniform registers, uniform predicates) the SASS names: UR0..URn and UP0..UPn up to the highest used."""
    import re

    text = " ".join(insn for code in sass(image).values() for insn in code.values())
    counts = []
    for prefix in ("UR", "UP"):
        used = [int(n) for n in re.findall(rf"\b{prefix}(\d+)\b", text)]
        counts.append(max(used) + 1 if used else 0)
    return counts[0], counts[1]


def return_address(image: bytes, caller: str) -> ReturnAddress:
    """Where a call in `caller` returns and the registers that carry it: nvcc loads the address
    into a register pair through two ABS32 relocations against the caller's own symbol (addend =
    offset after the CALL); the MOVs they patch, read from the SASS, name the registers."""
    import re

    found = _relocations(image, caller)
    code = sass(image).get(caller, {})
    registers = []
    for rtype, half in ((R_CUDA_ABS32_LO_32, "lo"), (R_CUDA_ABS32_HI_32, "hi")):
        offset = found[rtype][0]
        insn = code.get(offset, "")
        m = re.match(rf"MOV (R\d+), 32@{half}\(", insn)
        if not m:
            raise ValueError(f"{caller}+{offset:#x}: expected MOV Rn, 32@{half}(...), the SASS has {insn!r}")
        registers.append(m.group(1))
    return ReturnAddress(found[R_CUDA_ABS32_LO_32][1], *registers)


def processor(image: bytes) -> str:
    """sm_NN from the cubin header: the SM number in e_flags bits 8-15 (ELF ABI version 8)."""
    flags = struct.unpack_from("<I", image, 48)[0]
    return f"sm_{flags >> 8 & 0xFF}"


def _draft(spec: CudaDumpSpec, image: bytes, pc: int, other_pc: int | None = None) -> StateWriter:
    params = kernel_parameters(image, spec.kernel, spec.cubin.name)
    if params is None:
        raise ValueError(f"{spec.name}: the cubin gives {spec.kernel} no parameter bank (.nv.info)")
    if len(spec.params) != params.size or \
            params.parameters and params.parameters[-1].offset + params.parameters[-1].size != params.size:
        raise ValueError(f"{spec.name}: {len(spec.params)} parameter bytes, the kernel takes {params.size} "
                         f"({params.parameters})")
    registers = max(register_counts(image, spec.cubin.name).values())
    writer = StateWriter("nvidia", processor(image), LANES,
                         apertures={"shared": (SHARED_WINDOW, WINDOW_SIZE), "local": (LOCAL_WINDOW, WINDOW_SIZE)},
                         producer="examples/dumpgen/cuda_engine.py")
    co = writer.add_code_object(image, 0, name=spec.cubin.name)
    for address, data in spec.memory:
        writer.add_memory("global", address, data)
    uregs, upreds = uniform_registers(image)
    layout = [("pc", 8), ("exec", 4)] + [(f"R{n}", 4 * LANES) for n in range(registers)] + \
        [(f"P{n}", LANES) for n in range(PREDICATES)] + [(f"UR{n}", 4) for n in range(uregs)] + \
        [(f"UP{n}", 1) for n in range(upreds)]
    # grid_size counts work-items for every vendor (docs/STATE_FORMAT.md): gridDim * blockDim
    grid_size = tuple(g * b for g, b in zip(spec.grid, spec.block))
    dispatch = writer.add_dispatch(spec.kernel, co, grid_size, spec.block)
    dispatch.add_memory("param", params.offset, spec.params)
    wg = dispatch.add_workgroup(spec.block_id, bytes(spec.shared_size) if spec.shared_size else None)
    base = STACK_TOP - LOCAL_PER_LANE
    sp = STACK_TOP - spec.frame_size
    for n, warp in enumerate(spec.warps):
        regs = {"pc": struct.pack("<Q", pc), "exec": struct.pack("<I", warp.active)}
        for r in range(registers):
            regs[f"R{r}"] = bytes(4 * LANES)
        regs[f"R{STACK_REGISTER}"] = np.full(LANES, sp, "<u4").tobytes()
        if spec.caller is not None:
            # only the lanes that took the call ran the MOVs before the CALL
            ret = return_address(image, spec.caller)
            took = np.array([warp.active >> lane & 1 for lane in range(LANES)], bool)
            for name, half in ((ret.low, ret.address & 0xFFFFFFFF), (ret.high, ret.address >> 32)):
                regs[name] = np.where(took, half, 0).astype("<u4").tobytes()
        for p in range(PREDICATES):
            regs[f"P{p}"] = bytes(LANES)
        for u in range(uregs):
            regs[f"UR{u}"] = bytes(4)
        for u in range(upreds):
            regs[f"UP{u}"] = bytes(1)
        lane_pcs = None
        if spec.elsewhere is not None:
            lane_pcs = [other_pc if spec.elsewhere.lanes >> lane & 1 else pc for lane in range(LANES)]
        wg.add_wave(n, warp.index_in_workgroup, regs, layout, valid_lanes=warp.valid,
                    private=np.zeros((LANES, LOCAL_PER_LANE), np.uint8), private_layout="per_lane",
                    private_base=base, lane_pcs=lane_pcs)
    writer.set_focus(0, next(i for i in range(LANES) if spec.warps[0].active >> i & 1))
    writer.set_stop(*(spec.stop or ("breakpoint", f"{spec.file}:{spec.line}")))
    return writer


def build(spec: CudaDumpSpec, dest: Path) -> Path:
    """Write the dump folder `dest` (which must not exist)."""
    image = relocate_cubin(spec.cubin.read_bytes(), spec.cubin.name)
    read_cubin_debug(image)  # fail early on a malformed register map
    pc = stop_pc(image, spec)
    other_pc = stop_pc(image, spec, spec.elsewhere.line) if spec.elsewhere is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft"
        _draft(spec, image, pc, other_pc).write(draft)
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
        _place_frame(session, spec, wave, lanes, frames[1], spec.caller_values, caller=True)
    if spec.elsewhere is not None:
        # the other lanes' own frames, at their own PC: their variables where the DWARF puts them there
        there = [lane for lane in range(LANES) if wave.valid_lanes[lane] and spec.elsewhere.lanes >> lane & 1]
        if there:
            own = session.frames(wave.id, there[0])
            _place_frame(session, spec, wave, there, own[0], spec.elsewhere.values)


def _place_frame(session: Session, spec: CudaDumpSpec, wave, lanes, frame, values_of, caller=False) -> None:
    """Write each variable's model value where the frame's DWARF puts it. In a caller frame a
    variable the register map gives no place at the call, or one in a register the callee
    clobbers (the CFI says so), has nowhere to go: it stays unwritten and reads as such."""
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
            try:
                write_bytes(obj.location, obj.target, raw)
            except AspaceError:
                if not caller:
                    raise
