"""Frames: a lane's call stack, inlined frames and unwound callers, from the PC of that lane.

Owns where each lane is (its own PC, or DW_AT_LLVM_lane_pc for an inactive one), the frames at that
PC (MAX_FRAMES at most), the registers a caller frame sees, and the dump's stop description.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..dwarf.evaluator import evaluate
from ..dwarf.frame_context import is_kernel
from ..dwarf.index import FrameInfo
from ..dwarf.target import Dialect
from ..errors import AspaceError, CallerUnavailable, StateError
from ..names import demangle, function_name, short_name
from .focus import Focus
from .programs import Part, Program, Programs
from .sources import Sources


MAX_FRAMES = 64


@dataclass
class Frame:
    index: int  # 0 = innermost
    wave_id: int
    lane: int
    program: Program
    info: FrameInfo | None  # None: no debug info for this PC
    pc: int  # ELF address used for lookups
    runtime_pc: int
    file: str | None = None
    line: int | None = None
    column: int | None = None
    caller_state: object | None = None  # unwound registers for frames above the innermost call
    contexts: dict = field(default_factory=dict, repr=False, compare=False)  # FrameContext per dialect, built once
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # reads of this frame: see Variables.remembered
    note: str | None = None  # a frame that stands for "position unknown": shown as its name, no variables

    @property
    def function(self) -> str:
        """The function's name as gdb prints it in `bt`: qualified, demangled, without its parameters."""
        if self.note is not None:
            return self.note
        if self.info is None:
            sym = self._symbol()
            return function_name(sym.name) if sym else f"0x{self.runtime_pc:x}"
        return self.info.function

    @property
    def name(self) -> str:
        """The Call Stack's name: the function's, its template arguments elided when it is long."""
        return self.function if self.note is not None else short_name(self.function)

    @property
    def full_name(self) -> str:
        """The whole signature where a mangled name gives one (`void ns::f<int>(int*)`), else the function."""
        linkage = self.info.linkage_name if self.info is not None else None
        if self.info is None and self.note is None:
            sym = self._symbol()
            linkage = sym.name if sym else None
        return (demangle(linkage) if linkage else None) or self.function

    def _symbol(self):
        co = self.program.code_object
        return co.function_symbol_at(self.pc) if co is not None else None

    @property
    def dialect(self) -> Dialect:
        return self.info.dialect if self.info else Dialect()


@dataclass
class CallerRegister:
    """A register in a caller frame: bytes per lane (`per_lane`) or one row, with which are known; or
    `why` it was not saved."""

    data: np.ndarray | None = None
    valid: np.ndarray | None = None
    per_lane: bool = False
    why: str | None = None


class Frames(Part):
    def __init__(self, programs: Programs, focus: Focus, sources: Sources):
        super().__init__(programs)
        self.focus = focus
        self.sources = sources
        self._at: dict[tuple[int, int], tuple[Program, list[FrameInfo]]] = {}  # (program, pc) -> its frames
        self._lines: dict[tuple[int, int], tuple[Program, object]] = {}

    def lane_pc(self, wave, lane: int) -> int | None:
        """Where a lane is: its own PC from the dump, else the wave's; inactive lanes per DW_AT_LLVM_lane_pc.
        None: an inactive lane of a target whose lanes have their own PCs, and the dump lacks this one's."""
        if wave.lane_pcs is not None:
            return int(wave.lane_pcs[lane])
        pc = wave.pc
        if pc is None:
            raise StateError(f"wave {wave.id} has no {wave.pc_register} register (its PC) in the dump")
        if not self.focus.active_lanes(wave)[lane]:
            lane_pc = self._lane_pc_from_dwarf(wave, lane, pc)
            if lane_pc is not None:
                return lane_pc
            if self.adapter.lanes_have_own_pc:
                return None
        return pc

    def _lane_pc_from_dwarf(self, wave, lane, pc) -> int | None:
        program = self.programs.program_for(wave)
        if program.index is None:
            return None
        frames = program.index.frames_at(program.elf_pc(pc))
        fi = next((f for f in frames if f.lane_pc_expr), None)
        if fi is None:
            return None
        if lane >= self.focus.lane_count(wave, fi):  # the vector has DW_AT_LLVM_lanes elements
            return None
        target = self.programs.target_for(wave, fi.dialect)
        res = evaluate(fi.lane_pc_expr, target, fi.dialect, np.array([lane]),
                       frame=self.programs.frame_context(program, fi, pc))
        if res.errors:
            return None
        from ..dwarf.storage import read_bytes
        loc = res.for_lane(lane)
        data, state = read_bytes(loc, target, 8, 8 * lane)
        if state.any():
            return None
        return int.from_bytes(bytes(data[0]), "little") + program.load_address

    def stop_text(self) -> str:
        """The dump's stop description, with the source of the faulting instruction when the dump names it
        apart from the lanes' PCs (stop.pc: an NVIDIA warp's error PC) and the focused wave's code has it."""
        stop = self.state.stop
        text = stop.description if stop is not None else ""
        if stop is None or stop.pc is None:
            return text
        try:
            program = self.programs.program_for(self.focus.wave())
        except AspaceError:
            return text
        elf_pc = program.elf_pc(stop.pc)
        infos = program.index.frames_at(elf_pc) if program.index is not None else []
        line = program.index.line_for_pc(elf_pc) if program.index is not None else None
        file, ln, _ = self._line(line)
        where = " ".join(p for p in (infos[0].function if infos else None,
                                     f"({Path(file).name}:{ln})" if file and ln else None) if p)
        sites = [f"{Path(i.call_file).name}:{i.call_line}" for i in infos[:-1] if i.call_file and i.call_line]
        if where and sites:  # an inlined function: the call sites out to the function the code is in
            where += f", inlined from {', '.join(sites)} in {infos[-1].function}"
        return f"{text}: {where}" if where else text

    def frames(self, wave_id: int | None = None, lane: int | None = None) -> list[Frame]:
        wave = self.focus.wave(wave_id)
        lane = self.focus.focus_lane if lane is None else lane
        program = self.programs.program_for(wave)
        runtime_pc = self.lane_pc(wave, lane)
        if runtime_pc is None:
            # never the active lanes' frames: this lane took another path and may be anywhere
            return [Frame(0, wave.id, lane, program, None, 0, wave.pc or 0,
                          note=f"<lane {lane} inactive elsewhere: the dump has no pc for it; "
                               f"its registers hold values it last wrote>")]
        pc = program.elf_pc(runtime_pc)
        out: list[Frame] = []
        infos = self._frames_at(program, pc) if program.index is not None else []
        if not infos:
            line = self._line_at(program, pc) if program.index is not None else None
            return [Frame(0, wave.id, lane, program, None, pc, runtime_pc, *(self._line(line)))]
        caller_state = None
        lookup_pc = pc
        while True:
            line = self._line_at(program, lookup_pc)
            file, ln, col = self._line(line)
            for info in infos:
                out.append(Frame(len(out), wave.id, lane, program, info, lookup_pc, runtime_pc, file, ln, col,
                                 caller_state))
                # the next (outer) frame stands where this inlined one was called from
                file, ln, col = self.sources.map_source(info.call_file, tell=True), info.call_line, info.call_column or 0
            concrete = infos[-1]
            if len(out) >= MAX_FRAMES or is_kernel(program.code_object, concrete):
                return out
            target = self.frame_target(out[-1], concrete.dialect)
            try:
                state = self.adapter.unwind(program.code_object, target, concrete.low_pc, lookup_pc, lane)
            except CallerUnavailable as e:
                # what would name the caller is not in the dump: say so where the caller would stand
                out.append(Frame(len(out), wave.id, lane, program, None, lookup_pc, runtime_pc,
                                 note=f"<caller of {concrete.function} unavailable: {e}>"))
                return out
            except AspaceError as e:
                self.warnings.append(f"unwinding from {concrete.function}: {e}")
                state = None
            if state is None:
                return out
            if state.note and state.note not in self.warnings:
                self.warnings.append(state.note)
            caller_state = state
            runtime_pc = state.pc
            # a return address follows the call; the call's own line is one byte back
            lookup_pc = program.elf_pc(runtime_pc) - 1
            infos = self._frames_at(program, lookup_pc)
            if not infos:
                out.append(Frame(len(out), wave.id, lane, program, None, lookup_pc, runtime_pc, None, None, None,
                                 caller_state))
                return out

    def _frames_at(self, program: Program, pc: int) -> list[FrameInfo]:
        """The DWARF's frames at an ELF pc, looked up once per program and pc (thousands of waves stand at
        a few pcs)."""
        return _per_program(self._at, program, pc, program.index.frames_at)

    def _line_at(self, program: Program, pc: int):
        return _per_program(self._lines, program, pc, program.index.line_for_pc)

    def frame_target(self, frame: Frame, dialect: Dialect):
        """The wave as seen from a frame: a caller frame sees its unwound registers."""
        base = self.programs.target_for(self.focus.wave(frame.wave_id), dialect)
        if frame.caller_state is None:
            return base
        from ..adapters.base import CallerFrameTarget
        return CallerFrameTarget(base, frame.caller_state)

    def caller_register(self, frame: Frame, name: str) -> CallerRegister:
        """Register `name` (the dump's name) as caller frame `frame` sees it, as GDB unwinds it: the PC is
        the return address; a register the unwinder recovered (CFI, the AMD prologue analysis) reads its
        saved value; one the callee may have changed (the convention's to clobber, overwritten, the
        execution mask its branches set, a register no unwind rule can name) is not saved; one the callee
        keeps (the unwinder's same value) is the dump's."""
        wave = self.focus.wave(frame.wave_id)
        state = frame.caller_state
        if name == wave.pc_register:
            return CallerRegister(np.frombuffer(frame.runtime_pc.to_bytes(8, "little"), np.uint8)[None, :],
                                  np.ones((1, 8), bool), False)
        regno = self.adapter.register_number(name, wave.lanes)
        values = getattr(state, "values", {})
        if regno is None:
            return CallerRegister(why="no unwind rule names it")
        if name == wave.exec_register and regno not in values:
            return CallerRegister(why="the callee's branches set it; the call does not save it")
        if regno in getattr(state, "clobbered", ()):
            return CallerRegister(why="the callee may have changed it")
        target = self.frame_target(frame, Dialect(vendor_ops=self.adapter.vendor))  # vector registers per lane
        info = target.register_info(regno)
        lanes = np.arange(wave.lanes) if info.per_lane else np.zeros(1, np.int64)
        got = target.read_register(regno, lanes)
        return CallerRegister(np.asarray(got.data), np.asarray(got.valid), bool(info.per_lane))

    def _line(self, line):
        if line is None:
            return None, None, None
        return self.sources.map_source(line.file, tell=True), line.line, line.column


def _per_program(cache: dict, program: Program, pc: int, work):
    """work(pc) for `program`, worked out once per program and pc (the program is kept beside the answer:
    the id of a program that is gone may be another's)."""
    key = (id(program), pc)
    found = cache.get(key)
    if found is None or found[0] is not program:
        found = cache[key] = (program, work(pc))
    return found[1]
