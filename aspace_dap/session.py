"""A debugging session over one dump: focus, frames, variables, memory. No I/O, no DAP.

The DAP handlers, `inspect` and the language server all ask the session; the
session asks the DWARF index where things are, the evaluator what they are,
and the adapter how to reach them in the dump.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import adapters as _adapters_pkg  # noqa: F401  (aspace_dap.adapters, installed from adapters/)
from .adapters import adapter_for
from .codeobj import load_code_objects
from .dwarf.describe import describe_constant, describe_evaluated
from .dwarf.evaluator import LaneResults, evaluate
from .dwarf.footprint import collisions, evaluate_footprint
from .dwarf.frame_context import frame_context, is_kernel
from .dwarf.index import ConstValue, DwarfIndex, FrameInfo, VariableInfo
from .dwarf.locations import Location, MemoryLocation
from .dwarf.target import Dialect, FrameContext
from .dwarf.types import PointerType, Type, byte_size
from .errors import AspaceError, StateError
from .memref import MemRef, format_memref, parse_memref
from .paths import PathPolicy, PathRefused
from .state import GpuState, load_state
from .state.model import popcount
from .values.objects import Obj


MAX_FRAMES = 64


@dataclass
class Program:
    """One loaded code object and its DWARF index."""

    id: int
    path: str
    code_object: object
    index: DwarfIndex | None
    load_address: int = 0

    def elf_pc(self, runtime_pc: int) -> int:
        return runtime_pc - self.load_address


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
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # reads of this frame: see Session.remembered
    note: str | None = None  # a frame that stands for "position unknown": shown as its name, no variables

    @property
    def name(self) -> str:
        if self.note is not None:
            return self.note
        if self.info is None:
            sym = self.program.code_object.symbol_at(self.pc) if self.program.code_object else None
            return sym.name if sym else f"0x{self.runtime_pc:x}"
        return self.info.function

    @property
    def dialect(self) -> Dialect:
        return self.info.dialect if self.info else Dialect()


@dataclass
class VariableRead:
    """A variable read for some lanes: objects per lane group, errors per lane."""

    var: VariableInfo
    lanes: np.ndarray
    groups: list[tuple[np.ndarray, Obj]] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)

    def obj_for(self, lane: int) -> Obj | None:
        for lanes, obj in self.groups:
            hit = np.nonzero(lanes == lane)[0]
            if len(hit):
                return obj if len(lanes) == 1 else _take_obj(obj, hit)
        return None


def _take_obj(obj: Obj, rows: np.ndarray) -> Obj:
    loc = obj.location.take(rows) if obj.location is not None else None
    return Obj(obj.type, loc, obj.target, lanes=obj.lanes[rows])


def _distinct(values: np.ndarray) -> list[int]:
    """Sorted distinct values (np.unique would import numpy.ma, 0.1 s of start-up)."""
    ordered = np.sort(values)
    if len(ordered) == 0:
        return []
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))].tolist()


@dataclass
class WaveGroup:
    """Waves of one dispatch stopped with the same call stack."""

    dispatch: object
    frames: list[dict]  # innermost first: {"name", "file", "line", "column"}
    wave_ids: np.ndarray
    active_lanes: int
    valid_lanes: int


class Session:
    def __init__(self, state: GpuState, *, code_object: str | None = None, wave: int | None = None,
                 lane: int | None = None, source_map: dict[str, str] | None = None):
        self.state = state
        self.adapter = adapter_for(state.target.vendor)
        state.use_register_names(self.adapter.pc_register, self.adapter.exec_register)
        self.source_map = dict(source_map or {})
        self.warnings: list[str] = list(getattr(state, "warnings", []))
        self.notes: list[str] = []  # things the user should know (a source file found elsewhere), said once
        # what `source` may read from disk: the dump's folder and the code objects' folders (more below)
        self.paths = PathPolicy()
        anchor = state.root if state.root is not None else (state.source.parent if state.source else None)
        for folder in [anchor] + [ref.path.parent for ref in state.code_objects] + \
                [Path(code_object).parent if code_object else None]:
            if folder is not None:
                self.paths.allow_read_root(folder)
        self._programs: dict[tuple[int, str | None], Program] = {}
        self._extra: Program | None = None
        self._placed: dict[int, Program] = {}  # the launch's codeObject at other load addresses
        if code_object:
            self._extra = self._load_program(-1, code_object, 0)
        self._targets: dict[tuple[int, Dialect], object] = {}
        self._layouts: dict[int, object] = {}
        self._unresolved_places: dict[str, str] = {}
        self._found_sources: dict[str, str] = {}
        self._active: dict[int, np.ndarray] = {}
        self._first_wave_of: dict | None = None
        self._has_active_lane_expr: dict[tuple[int, int], bool] = {}
        self._kernel_stacks: dict[tuple, list] = {}
        self._collisions: dict[tuple, tuple[int, dict]] = {}  # (wave, frame, pc) -> (write epoch, findings)
        self._wave_ids: np.ndarray | None = None
        self.write_epoch = 0  # bumped by every write to the dump's overlay; frame memos older than it are stale
        if not state.waves:
            raise StateError("the dump has no waves", "dispatches")
        focus = state.focus
        self.focus_wave = wave if wave is not None else (focus.wave if focus else state.waves[0].id)
        self.state.wave_by_id(self.focus_wave)
        self.focus_lane = lane if lane is not None else (focus.lane if focus else self._first_active(self.focus_wave))
        lanes = self.state.wave_by_id(self.focus_wave).lanes
        if not 0 <= self.focus_lane < lanes:
            raise AspaceError(f"lane {self.focus_lane} is outside wave {self.focus_wave}'s {lanes} lanes")
        self.focus_frame = 0

    @classmethod
    def open(cls, state_path: str, **kw) -> "Session":
        return cls(load_state(state_path), **kw)

    # ------------------------------------------------------------------ programs

    def _load_program(self, co_id: int, path: str, load_address: int, processor: str | None = None) -> Program:
        objs = load_code_objects(path)
        wanted = processor or self.state.target.processor  # the dispatch's device may differ from the target
        co = next((o for o in objs if getattr(o, "processor", None) == wanted), None)
        if co is None:
            builds = sorted({str(getattr(o, "processor", None) or "?") for o in objs})
            if len(objs) > 1:  # another device's build would decode registers and code wrongly
                raise AspaceError(f"{path} holds builds for {', '.join(builds)}, none for {wanted}")
            co = objs[0]
            if wanted and builds != ["?"]:
                self.warnings.append(f"{path} was built for {builds[0]}, the dump's device is {wanted}")
        self.adapter.use_code_object(co)
        index = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine) if co.has_dwarf() else None
        if index is None:
            self.warnings.append(f"{path}: no DWARF; frames show addresses only")
        return Program(co_id, str(path), co, index, load_address)

    def program_for(self, wave) -> Program:
        dispatch = wave.dispatch
        co_id = dispatch.code_object if dispatch is not None else None
        processor = getattr(dispatch, "processor", None)
        key = (co_id, processor)  # one file may hold a build per device (a fat binary)
        if co_id is not None and key not in self._programs:
            ref = self.state.code_object_by_id(co_id)
            if ref is not None:
                try:
                    self._programs[key] = self._load_program(co_id, str(ref.path), ref.load_address, processor)
                except (AspaceError, OSError) as e:
                    self.warnings.append(f"code object {co_id} ({ref.path}): {e}")
                    self._programs[key] = None  # type: ignore[assignment]
        program = self._programs.get(key) if co_id is not None else None
        if program is None:
            ref = self.state.code_object_by_id(co_id) if co_id is not None else None
            if self._extra is None:
                if ref is not None:
                    raise AspaceError(f"wave {wave.id}: code object {ref.path} cannot be read; supply it "
                                      f"with codeObject (--code-object on the command line)")
                raise AspaceError(f"wave {wave.id}: no readable code object (name one with codeObject, or "
                                  f"--code-object on the command line)")
            return self._placed_extra(ref, getattr(dispatch, "kernel_descriptor", None))
        return program

    def _placed_extra(self, ref, descriptor: int | None) -> Program:
        """The launch's codeObject, loaded where the unreadable code object was, or where the dispatch's
        kernel descriptor says it was when the state names no code object."""
        bias = self._extra.load_address
        if ref is not None:
            bias = ref.load_address
        elif descriptor:
            found = self.adapter.load_address_for_descriptor(self._extra.code_object, descriptor)
            bias = bias if found is None else found
        if bias == self._extra.load_address:
            return self._extra
        placed = self._placed.get(bias)
        if placed is None:
            placed = self._placed[bias] = replace(self._extra, load_address=bias)
        return placed

    def programs(self) -> list[Program]:
        for dispatch in self.state.dispatches:  # the program depends on the dispatch only
            waves = next((wg.waves for wg in dispatch.workgroups if wg.waves), None)
            if waves:
                try:
                    self.program_for(waves[0])
                except AspaceError:
                    pass
        out = [p for p in self._programs.values() if p is not None]
        if self._extra is not None:
            out.append(self._extra)
        return out

    # ------------------------------------------------------------------ waves and lanes

    def wave(self, wave_id: int | None = None):
        return self.state.wave_by_id(self.focus_wave if wave_id is None else wave_id)

    def _first_active(self, wave_id: int) -> int:
        active = np.nonzero(self.active_lanes(self.wave(wave_id)))[0]
        return int(active[0]) if len(active) else 0

    def active_lanes(self, wave) -> np.ndarray:
        """The lanes that are conceptually active: DW_AT_LLVM_active_lane of the stopped function when the
        compiler gives it (EXEC may be widened for whole-wave operations), else EXEC & valid lanes."""
        cached = self._active.get(wave.id)
        if cached is not None:
            return cached
        mask = wave.active_lanes
        try:
            program = self.program_for(wave)
            pc = wave.pc
            frames = program.index.frames_at(program.elf_pc(pc)) if program.index is not None and pc is not None else []
            info = next((f for f in frames if f.active_lane_expr), None)
            if info is not None:
                res = evaluate(info.active_lane_expr, self.target_for(wave, info.dialect), info.dialect,
                               np.array([0]), frame=self.frame_context(program, info, pc), kind="value")
                if not res.errors:
                    bits = int(res.for_lane(0).bits[0])
                    mask = np.array([(bits >> lane) & 1 for lane in range(wave.lanes)], bool) & wave.valid_lanes
        except AspaceError as e:
            self.warnings.append(f"wave {wave.id}: DW_AT_LLVM_active_lane: {e}")
        self._active[wave.id] = mask
        return mask

    def lane_state(self, wave, lane: int) -> str:
        if not wave.valid_lanes[lane]:
            return "invalid"
        return "active" if self.active_lanes(wave)[lane] else "inactive"

    def set_focus(self, wave: int | None = None, lane: int | None = None) -> None:
        if wave is not None:
            w = self.state.wave_by_id(wave)
            if lane is None and self.focus_lane >= w.lanes:
                lane = self._first_active(wave)
            self.focus_wave = wave
        if lane is not None:
            w = self.wave()
            if not 0 <= lane < w.lanes:
                raise AspaceError(f"lane {lane} is outside wave {w.id}'s {w.lanes} lanes")
            self.focus_lane = lane
        self.focus_frame = 0

    def lane_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Active and valid lanes of every wave (in state.waves order), counted from the wave table:
        the same numbers as active_lanes() without building 40,000 waves."""
        waves = self.state.waves
        heads = self.state.wave_heads()
        if heads is None:
            active = np.array([int(self.active_lanes(w).sum()) for w in waves], dtype=np.int64)
            return active, np.array([int(w.valid_lanes.sum()) for w in waves], dtype=np.int64)
        active, valid = popcount(heads.active), popcount(heads.valid)
        # waves whose compiler says which lanes are active (DW_AT_LLVM_active_lane) are asked one by one
        for i in self._waves_with_active_lane_expr(heads):
            active[i] = int(self.active_lanes(waves[i]).sum())
        for i, wave in enumerate(waves):
            if wave.id in self._active:
                active[i] = int(self._active[wave.id].sum())
        return active, valid

    def dispatch_slices(self) -> list[tuple[object, int, int]]:
        """(dispatch, first, end): each dispatch's waves are state.waves[first:end]."""
        out, at = [], 0
        for dispatch in self.state.dispatches:
            count = sum(len(wg.waves) for wg in dispatch.workgroups)
            out.append((dispatch, at, at + count))
            at += count
        return out

    def _waves_with_active_lane_expr(self, heads) -> list[int]:
        waves, out = self.state.waves, []
        for dispatch, first, end in self.dispatch_slices():
            if first == end:
                continue
            known = heads.pc_known[first:end]
            pcs = heads.pc[first:end]
            for pc in _distinct(pcs[known]):
                key = (id(dispatch), pc)
                has = self._has_active_lane_expr.get(key)
                if has is None:
                    has = False
                    try:
                        program = self.program_for(waves[first])
                        if program.index is not None:
                            has = any(f.active_lane_expr for f in program.index.frames_at(program.elf_pc(pc)))
                    except AspaceError:
                        pass
                    self._has_active_lane_expr[key] = has
                if has:
                    out.extend((first + np.nonzero(known & (pcs == pc))[0]).tolist())
        return out

    def wave_ids(self) -> np.ndarray:
        if self._wave_ids is None:
            self._wave_ids = np.array([w.id for w in self.state.waves], dtype=np.int64)
        return self._wave_ids

    def wave_groups(self) -> list[WaveGroup]:
        """Waves grouped by dispatch, then by call stack (function, file and line of every frame);
        the smallest groups, the odd ones out, first.

        Waves of a dispatch at the same pc, stopped in the kernel itself, share one stack: it is
        worked out once for the first of them. Waves in a called function are unwound one by one
        (their caller depends on their registers)."""
        waves = self.state.waves
        heads = self.state.wave_heads()
        active, valid = self.lane_counts()
        by_stack: dict[tuple, list[int]] = {}
        stacks: dict[tuple, list[dict]] = {}

        def add(d: int, frames: list[dict], rows) -> None:
            key = (d, tuple((f["name"], f["file"], f["line"]) for f in frames))
            stacks.setdefault(key, frames)
            by_stack.setdefault(key, []).append(rows)

        one_by_one: list[int] = []
        expr_waves = set(self._waves_with_active_lane_expr(heads)) if heads is not None else set()
        for d, (dispatch, first, end) in enumerate(self.dispatch_slices()):
            if first == end:
                continue
            if heads is None:
                one_by_one.extend(range(first, end))
                continue
            rows = np.arange(first, end)
            shared = heads.pc_known[first:end] & (heads.active[first:end] != 0) & ~heads.lane_pcs[first:end]
            if expr_waves:
                shared[[i - first for i in expr_waves if first <= i < end]] = False
            one_by_one.extend(rows[~shared].tolist())
            pcs = heads.pc[first:end]
            for pc in _distinct(pcs[shared]):
                members = rows[shared & (pcs == pc)]
                frames = self._kernel_stacks.get((d, pc))
                if frames is None:
                    rep = int(members[0])
                    frames, unwound = self._stack_of(waves[rep])
                    if unwound:  # a device function: its callers differ per wave
                        one_by_one.extend(members.tolist())
                        continue
                    self._kernel_stacks[(d, pc)] = frames
                add(d, frames, members)
        dispatch_index = {id(dispatch): d for d, (dispatch, _, _) in enumerate(self.dispatch_slices())}
        for i in sorted(one_by_one):
            frames, _ = self._stack_of(waves[i])
            add(dispatch_index.get(id(waves[i].dispatch), -1), frames, np.array([i]))
        ids = self.wave_ids()
        groups = []
        for key, parts in by_stack.items():
            rows = np.sort(np.concatenate(parts))
            dispatch = waves[int(rows[0])].dispatch
            groups.append(WaveGroup(dispatch, stacks[key], ids[rows], int(active[rows].sum()), int(valid[rows].sum())))
        groups.sort(key=lambda g: (len(g.wave_ids), g.dispatch.id if g.dispatch is not None else -1,
                                   int(g.wave_ids[0])))
        return groups

    def _stack_of(self, wave) -> tuple[list[dict], bool]:
        """The frames of the wave's first active lane (lane 0 if none), and whether unwinding was needed."""
        active = np.nonzero(self.active_lanes(wave))[0]
        lane = int(active[0]) if len(active) else 0
        try:
            frames = self.frames(wave.id, lane)
        except AspaceError as e:
            return [{"name": f"<no stack: {e}>", "file": None, "line": None, "column": None}], False
        return ([{"name": f.name, "file": f.file, "line": f.line, "column": f.column} for f in frames],
                any(f.caller_state is not None for f in frames))

    def thread_names(self) -> list[str]:
        """thread_name of every wave, from the wave table."""
        active, valid = self.lane_counts()
        name = self.adapter.thread_name
        return [name(w, a, v) for w, a, v in zip(self.state.waves, active.tolist(), valid.tolist())]

    def thread_name(self, wave) -> str:
        return self.adapter.thread_name(wave, int(self.active_lanes(wave).sum()), int(wave.valid_lanes.sum()))

    def target_for(self, wave, dialect: Dialect):
        key = (wave.id, dialect)
        t = self._targets.get(key)
        if t is None:
            t = self._targets[key] = self.adapter.wave_target(self.state, wave, dialect)
        return t

    # ------------------------------------------------------------------ frames

    def lane_pc(self, wave, lane: int) -> int | None:
        """Where a lane is: its own PC from the dump, else the wave's; inactive lanes per DW_AT_LLVM_lane_pc.
        None: an inactive lane of a target whose lanes have their own PCs, and the dump lacks this one's."""
        if wave.lane_pcs is not None:
            return int(wave.lane_pcs[lane])
        pc = wave.pc
        if pc is None:
            raise StateError(f"wave {wave.id} has no {wave.pc_register} register (its PC) in the dump")
        if not self.active_lanes(wave)[lane]:
            lane_pc = self._lane_pc_from_dwarf(wave, lane, pc)
            if lane_pc is not None:
                return lane_pc
            if self.adapter.lanes_have_own_pc:
                return None
        return pc

    def _lane_pc_from_dwarf(self, wave, lane, pc) -> int | None:
        program = self.program_for(wave)
        if program.index is None:
            return None
        frames = program.index.frames_at(program.elf_pc(pc))
        fi = next((f for f in frames if f.lane_pc_expr), None)
        if fi is None:
            return None
        target = self.target_for(wave, fi.dialect)
        res = evaluate(fi.lane_pc_expr, target, fi.dialect, np.array([lane]), frame=self.frame_context(program, fi, pc))
        if res.errors:
            return None
        from .dwarf.storage import read_bytes
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
            program = self.program_for(self.wave())
        except AspaceError:
            return text
        elf_pc = program.elf_pc(stop.pc)
        infos = program.index.frames_at(elf_pc) if program.index is not None else []
        line = program.index.line_for_pc(elf_pc) if program.index is not None else None
        file, ln, _ = self._line(line)
        where = " ".join(p for p in (infos[0].function if infos else None,
                                     f"({Path(file).name}:{ln})" if file and ln else None) if p)
        return f"{text}: {where}" if where else text

    def frames(self, wave_id: int | None = None, lane: int | None = None) -> list[Frame]:
        wave = self.wave(wave_id)
        lane = self.focus_lane if lane is None else lane
        program = self.program_for(wave)
        runtime_pc = self.lane_pc(wave, lane)
        if runtime_pc is None:
            # never the active lanes' frames: this lane took another path and may be anywhere
            return [Frame(0, wave.id, lane, program, None, 0, wave.pc or 0,
                          note=f"<lane {lane} inactive elsewhere: the dump has no pc for it; "
                               f"its registers hold values it last wrote>")]
        pc = program.elf_pc(runtime_pc)
        out: list[Frame] = []
        infos = program.index.frames_at(pc) if program.index is not None else []
        if not infos:
            line = program.index.line_for_pc(pc) if program.index is not None else None
            return [Frame(0, wave.id, lane, program, None, pc, runtime_pc, *(self._line(line)))]
        caller_state = None
        lookup_pc = pc
        while True:
            line = program.index.line_for_pc(lookup_pc)
            file, ln, col = self._line(line)
            for info in infos:
                out.append(Frame(len(out), wave.id, lane, program, info, lookup_pc, runtime_pc, file, ln, col,
                                 caller_state))
                # the next (outer) frame stands where this inlined one was called from
                file, ln, col = self.map_source(info.call_file), info.call_line, info.call_column or 0
            concrete = infos[-1]
            if len(out) >= MAX_FRAMES or is_kernel(program.code_object, concrete):
                return out
            target = self.frame_target(out[-1], concrete.dialect)
            try:
                state = self.adapter.unwind(program.code_object, target, concrete.low_pc, lookup_pc, lane)
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
            infos = program.index.frames_at(lookup_pc)
            if not infos:
                out.append(Frame(len(out), wave.id, lane, program, None, lookup_pc, runtime_pc, None, None, None,
                                 caller_state))
                return out

    def frame_target(self, frame: Frame, dialect: Dialect):
        """The wave as seen from a frame: a caller frame sees its unwound registers."""
        base = self.target_for(self.wave(frame.wave_id), dialect)
        if frame.caller_state is None:
            return base
        from .adapters.base import CallerFrameTarget
        return CallerFrameTarget(base, frame.caller_state)

    def _line(self, line):
        if line is None:
            return None, None, None
        return self.map_source(line.file), line.line, line.column

    def map_source(self, path: str | None) -> str | None:
        """The path a client can open: the launch's sourceMap first; else the DWARF path when it exists;
        else the same file found by its trailing path components (see find_source)."""
        if path is None:
            return None
        for src, dst in self.source_map.items():
            if path.startswith(src):
                return dst + path[len(src):]
        found = self._found_sources.get(path)
        if found is None:
            found = self.find_source(path)
            self._found_sources[path] = found
        return found

    def source_roots(self) -> list[Path]:
        """Where the sources of this dump may be: the folders of the code objects and of the dump and two
        levels above them (an example's folder, the checkout), then the working directory (the editor's
        workspace)."""
        roots: list[Path] = []
        anchors = [ref.path for ref in self.state.code_objects] + [self.state.source]
        anchors += [p.path for p in self._programs.values() if p is not None]
        if self._extra is not None:
            anchors.append(self._extra.path)
        for anchor in anchors:
            if anchor is None:
                continue
            here = Path(anchor).resolve()
            for root in [here.parent, *list(here.parents)[1:3]]:
                if root not in roots and root != Path(root.anchor):
                    roots.append(root)
        cwd = Path.cwd()
        if cwd not in roots:
            roots.append(cwd)
        return roots

    def find_source(self, path: str) -> str:
        """A DWARF source path as a file to open here, only ever one with the same trailing path
        components as the recorded one.

        A recorded absolute path is used when it exists near the code objects or the dump; a build
        elsewhere (another checkout, a temporary folder) records that machine's paths, so the copy
        beside the code object is preferred, and the substitution is noted once for the user with the
        sourceMap that would pin it. `-ffile-prefix-map` builds record relative paths."""
        recorded = Path(path)
        roots = self.source_roots()
        if recorded.is_absolute() and recorded.is_file() and \
                any(recorded.is_relative_to(root) for root in roots[:-1]):
            self.paths.allow_read_file(recorded)  # the debug info names it
            return path
        parts = [p for p in recorded.parts if p not in (recorded.anchor, "", ".")]
        if ".." in parts:
            parts = parts[len(parts) - parts[::-1].index(".."):]
        for root in roots:  # the nearest folder first, then the longest matching tail
            for keep in range(len(parts), 0, -1):
                tail = Path(*parts[-keep:])
                candidate = root / tail
                if candidate != recorded and candidate.is_file():
                    self.paths.allow_read_file(candidate)  # the debug info names it
                    found = str(candidate)
                    if recorded.is_absolute():
                        src = str(Path(*recorded.parts[:-keep]))
                        dst = str(root)
                        self.notes.append(
                            f"source {path} is not beside this dump's code objects; showing {found} (same "
                            f"trailing path {tail}). To use another copy, set \"sourceMap\": {{\"{src}\": ...}} "
                            f"in the launch configuration (this one is {{\"{src}\": \"{dst}\"}}).")
                    return found
        return path

    def read_source_file(self, dwarf_name: str, max_bytes: int, limit_name: str) -> str:
        """A source file the debug info names, read from where the sourceMap puts it. Allowed: files under the
        dump's and the code objects' folders, found relative names, and files under the folder the debug info
        names for the file, mapped by the same sourceMap (so a map entry for one file cannot point elsewhere)."""
        mapped = self.map_source(dwarf_name)
        if mapped is None:
            raise PathRefused("no source path")
        if not self.paths.allows(mapped):
            folder = self._mapped_folder(dwarf_name)
            named = PathPolicy()
            if folder is not None:
                named.allow_read_root(folder)
            named.check_read(mapped, "source")
            return named.read_text(mapped, "source", max_bytes, limit_name)
        return self.paths.read_text(mapped, "source", max_bytes, limit_name)

    def _mapped_folder(self, dwarf_name: str) -> str | None:
        folder = os.path.dirname(dwarf_name)
        if not folder:
            return None
        for src, dst in self.source_map.items():
            if folder.startswith(src):
                mapped = dst + folder[len(src):]
                return mapped if os.path.isabs(mapped) else None
        return folder if os.path.isabs(folder) else None

    # ------------------------------------------------------------------ variables

    def note_write(self) -> None:
        """Something in the overlay changed: every remembered read is stale."""
        self.write_epoch += 1

    def remembered(self, frame: Frame, key, compute):
        """compute() once per frame and key until the next write (a client asks for the same
        scopes and variables again and again: after each focus change, hover or step of the UI)."""
        hit = frame.memo.get(key)
        if hit is not None and hit[0] == self.write_epoch:
            return hit[1]
        value = compute()
        frame.memo[key] = (self.write_epoch, value)
        return value

    def variables(self, frame: Frame) -> list[VariableInfo]:
        if frame.info is None or frame.program.index is None:
            return []
        return self.remembered(frame, "variables", lambda: frame.program.index.variables(frame.info, frame.pc))

    def globals(self, frame: Frame) -> list[VariableInfo]:
        if frame.info is None or frame.program.index is None:
            return []
        return frame.program.index.globals(frame.info.cu_offset)

    def frame_context(self, program: Program, info: FrameInfo | None, runtime_pc: int,
                      target=None) -> FrameContext:
        pc = program.elf_pc(runtime_pc) if info is not None else runtime_pc
        cfa = self.adapter.call_frame_cfa(program.code_object, target, pc) if target is not None else None
        return frame_context(program.index, program.code_object, self.adapter, info, pc,
                             load_bias=program.load_address, cfa=cfa)

    def read_variable(self, frame: Frame, var: VariableInfo, lanes=None) -> VariableRead:
        lanes = np.array([frame.lane] if lanes is None else lanes, dtype=np.int64)
        out = VariableRead(var, lanes)
        vtype = var.type
        if vtype is None:
            for lane in lanes:
                out.errors[int(lane)] = "<unknown type>"
            return out
        self._annotate_pointer(vtype, var.dialect)
        spec = var.location_at(frame.pc)
        if spec is None:
            out.groups.append((lanes, Obj.failed(vtype, "<optimized out>", lanes)))
            return out
        placement = self._static_placement(frame, var)
        if placement is not None:
            space = self.adapter.space_by_name(placement.space)
            if placement.offset is None:
                error = f"<unavailable: {placement.why}>"
                label = self.adapter.space_label(space)
                self._unresolved_places[error] = f"{space.name}#? ({label + ', ' if label else ''}offset unresolved)"
                out.groups.append((lanes, Obj.failed(vtype, error, lanes)))
                return out
            n = len(lanes)
            loc = Location((MemoryLocation(space, np.full(n, placement.offset, np.uint64), np.zeros(n, np.int64),
                                           lanes),))
            out.groups.append((lanes, Obj.from_location(vtype, loc, self.frame_target(frame, var.dialect), lanes)))
            return out
        if isinstance(spec, ConstValue):
            raw = spec.value if isinstance(spec.value, bytes) else (spec.value & ((1 << 64) - 1)).to_bytes(8, "little")
            out.groups.append((lanes, Obj.from_bytes(vtype, raw, lanes)))
            return out
        target, context = self._evaluation_context(frame, var)
        res: LaneResults = evaluate(spec, target, var.dialect, lanes, frame=context)
        clashes = self.storage_collisions(frame).get(var.die_offset, {})
        for lane, err in res.errors.items():
            out.errors[lane] = f"<unavailable: {clashes[lane]}>" if lane in clashes else f"<error: {err}>"
        for glanes, entry in res.groups:
            if not isinstance(entry, Location):
                continue
            entry = self.adapter.place_variable(var, entry, target)
            bad = np.array([int(lane) in clashes for lane in glanes], bool)
            for i in np.nonzero(bad)[0]:
                # the debug info gives these bytes to another claim too: not this variable's value
                out.groups.append((glanes[i:i + 1], Obj.failed(vtype, f"<unavailable: {clashes[int(glanes[i])]}>",
                                                               glanes[i:i + 1])))
            if bad.any():
                glanes, entry = glanes[~bad], entry.take(~bad)
                if not len(glanes):
                    continue
            out.groups.append((glanes, Obj.from_location(vtype, entry, target, glanes)))
        return out

    def _evaluation_context(self, frame: Frame, var: VariableInfo):
        target = self.frame_target(frame, var.dialect)
        context = frame.contexts.get(var.dialect)
        if context is None:
            context = frame.contexts[var.dialect] = self.frame_context(frame.program, frame.info, frame.runtime_pc,
                                                                       target)
        return target, context

    def storage_collisions(self, frame: Frame) -> dict[int, dict[int, str]]:
        """{variable DIE: {lane: why}} where the frame's variables claim the same storage (see
        dwarf/footprint.py), plus the adapter's own layout checks; for adapters whose lanes share
        registers (Intel GRFs), where such claims can collide."""
        if not self.adapter.checks_storage_collisions or frame.info is None or frame.program.index is None:
            return {}
        # the same for every lane's view of the frame: kept across focus changes until a write
        key = (frame.wave_id, frame.index, frame.runtime_pc)
        hit = self._collisions.get(key)
        if hit is None or hit[0] != self.write_epoch:
            hit = self._collisions[key] = (self.write_epoch, self._storage_collisions(frame))
        return hit[1]

    def _storage_collisions(self, frame: Frame) -> dict[int, dict[int, str]]:
        lanes = np.arange(self.wave(frame.wave_id).lanes)
        footprints = {}
        for var in self.variables(frame):
            spec = var.location_at(frame.pc)
            if var.shadowed or var.type is None or spec is None or isinstance(spec, ConstValue) \
                    or self._static_placement(frame, var) is not None:
                continue
            try:
                target, context = self._evaluation_context(frame, var)
                footprints[var.die_offset] = evaluate_footprint(var.name, spec, target, var.dialect, lanes, context,
                                                                byte_size(var.type) or 0)
            except AspaceError:  # a variable that cannot be evaluated claims nothing; its read says why
                continue
        found = self.adapter.layout_findings(footprints)
        for key, lanes_why in collisions(footprints).items():
            for lane, why in lanes_why.items():
                found.setdefault(key, {}).setdefault(lane, why)
        return found

    def _static_placement(self, frame: Frame, var: VariableInfo):
        """Where the adapter proves a variable with a placeholder address really is (the LDS
        offset an AMD kernel's ISA uses), or why it cannot; None for ordinary variables."""
        program = frame.program
        if program.id not in self._layouts:
            try:
                self._layouts[program.id] = self.adapter.static_layout(program.code_object, program.index,
                                                                       self.read_source)
            except AspaceError as e:
                self.warnings.append(f"{program.path}: placing static variables: {e}")
                self._layouts[program.id] = None
        return self.adapter.static_placement(self._layouts[program.id], var)

    def read_source(self, dwarf_path: str) -> str | None:
        """A source file's text as the debug info names it: embedded in the line table, else read
        from where map_source finds it."""
        for program in self.programs():
            if program.index is not None:
                text = program.index.source_text(dwarf_path)
                if text is not None:
                    return text
        path = self.map_source(dwarf_path)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    def _annotate_pointer(self, t: Type | None, dialect: Dialect, depth: int = 0) -> None:
        """Name the address space a pointer type points into (once per type object)."""
        if t is None or depth > 8:
            return
        s = t.strip()
        if isinstance(s, PointerType) and s.address_space_name is None:
            s.address_space_name = self.adapter.pointer_space(s.address_space, dialect).name

    def pointer_target(self, obj: Obj, lane_index: int, dialect: Dialect) -> Obj | None:
        """Dereference a pointer object for one lane: the pointee in the pointer's address space."""
        t = obj.stripped
        if not isinstance(t, PointerType) or t.target is None:
            return None
        values, states = obj.scalar_bits()
        addr = values[lane_index]
        if addr is None:
            return None
        space = self.adapter.pointer_space(t.address_space, dialect)
        resolve = getattr(obj.target, "resolve_generic", None)
        if space.name == "generic" and resolve is not None:
            # show where a generic pointer really points (LDS, scratch, global), as ROCgdb does
            space, addr = resolve(addr)
        lanes = obj.lanes[lane_index:lane_index + 1]
        loc = Location((MemoryLocation(space, np.array([addr], np.uint64), np.zeros(1, np.int64), lanes),))
        return Obj.from_location(t.target, loc, obj.target, lanes)

    # ------------------------------------------------------------------ locations in words

    def location_text(self, obj: Obj, lane_index: int = 0) -> str:
        """Where the object is for one lane, printed as the language server prints it (`v3[lane 5]`,
        `local#0x40 (LDS)`)."""
        if obj.error is not None:
            if obj.error in self._unresolved_places:
                return self._unresolved_places[obj.error]
            return "optimized out" if obj.error == "<optimized out>" else "unknown"
        if obj.location is None:
            data, _ = obj.bytes()
            return describe_constant(bytes(data[lane_index]))
        return describe_evaluated(obj.location, self.adapter, lane_index)

    def memory_reference(self, obj: Obj, wave_id: int, lane_index: int = 0) -> str | None:
        place = obj.memory_place()
        if place is None:
            return None
        lane = int(place.lanes[lane_index])
        addr = int(place.address[lane_index])
        return format_memref(self.memref_for_space(place.space.name, addr, wave_id, lane))

    def memref_for_space(self, space: str, addr: int, wave_id: int, lane: int) -> MemRef:
        """A self-contained reference: the space's scope says which context it needs."""
        wave = self.wave(wave_id)
        scope = self.adapter.space_by_name(space).scope
        if scope == "workgroup":
            wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
            d = wave.dispatch.id if wave.dispatch is not None else 0
            return MemRef(space, addr, workgroup=tuple(wg), dispatch=d)
        if scope == "lane":
            return MemRef(space, addr, wave=wave.id, lane=lane)
        if scope == "wave":
            return MemRef(space, addr, wave=wave.id)
        return MemRef(space, addr)

    # ------------------------------------------------------------------ memory

    def resolve_memref(self, text: str) -> tuple[MemRef, object, object, int]:
        """A memory reference → (ref, address space, wave target, lane) using the focus for missing context."""
        ref = parse_memref(text)
        space = self.adapter.space_by_name(ref.space)
        wave = self.wave()
        lane = self.focus_lane
        if ref.workgroup is not None:
            wave = self._wave_in_workgroup(ref.dispatch, ref.workgroup)
        elif ref.wave is not None:
            wave = self.state.wave_by_id(ref.wave)
            if ref.lane is not None:
                lane = ref.lane
        if not 0 <= lane < wave.lanes:
            raise AspaceError(f"lane {lane} is outside wave {wave.id}")
        ref = self.memref_for_space(ref.space, ref.address, wave.id, lane)
        return ref, space, self.target_for(wave, Dialect(vendor_ops=self.adapter.vendor)), lane

    def _wave_in_workgroup(self, dispatch: int, wg: tuple[int, int, int]):
        if self._first_wave_of is None:
            self._first_wave_of = {}
            for w in self.state.waves:
                if w.workgroup is not None:
                    key = (w.dispatch.id if w.dispatch is not None else 0, tuple(w.workgroup.id))
                    self._first_wave_of.setdefault(key, w)
        w = self._first_wave_of.get((dispatch, tuple(wg)))
        if w is None:
            raise AspaceError(f"no workgroup ({wg[0]},{wg[1]},{wg[2]}) in dispatch {dispatch}")
        return w

    def read_memory(self, text: str, offset: int, count: int) -> tuple[int, memoryview, np.ndarray]:
        """(start address, bytes, valid mask) for `count` bytes at the reference + offset; the bytes
        are a read-only view, not a copy (a memory view may read megabytes)."""
        ref, space, target, lane = self.resolve_memref(text)
        start = ref.address + offset
        if start < 0 or start >= 1 << (8 * space.address_size):
            return start, memoryview(b""), np.zeros(0, bool)
        count = min(count, (1 << (8 * space.address_size)) - start)
        got = target.read_memory(space, np.array([lane]), np.array([start], np.uint64), count)
        return start, memoryview(got.data[0]).toreadonly(), got.valid[0]

    def memory_layout(self, frame: Frame, text: str, offset: int, count: int) -> list[dict]:
        """The variables of a frame (and its file scope) that occupy bytes of [reference + offset,
        + count) in the same memory and context: [{name, type, address, size, memoryReference}],
        from each variable's evaluated location for the frame's lane. Variables whose place is not
        known (optimized out, registers, unresolved LDS offsets) are not listed."""
        ref, _, _, _ = self.resolve_memref(text)
        start, end = ref.address + offset, ref.address + offset + count
        same = (ref.space, ref.wave, ref.lane, ref.workgroup, ref.dispatch)
        out = []
        for var in self.variables(frame) + self.globals(frame):
            try:
                obj = self.read_variable(frame, var).obj_for(frame.lane)
            except AspaceError:
                continue
            if obj is None or obj.error is not None or obj.location is None:
                continue
            places = obj.location.places
            place = obj.memory_place()
            if place is None or len(places) != 1 or obj.size is None:
                continue  # in pieces or not in memory: no single byte range to mark
            addr = int(place.address[0])
            at = self.memref_for_space(place.space.name, addr, frame.wave_id, int(place.lanes[0]))
            if (at.space, at.wave, at.lane, at.workgroup, at.dispatch) != same:
                continue
            if addr < end and addr + obj.size > start:
                out.append({"name": var.name or "?", "type": obj.type.display_name(), "address": addr,
                            "size": int(obj.size), "memoryReference": format_memref(at)})
        out.sort(key=lambda v: (v["address"], -v["size"]))
        return out

    def write_memory(self, text: str, offset: int, data: bytes) -> int:
        self.note_write()
        ref, space, target, lane = self.resolve_memref(text)
        start = ref.address + offset
        if start < 0 or start + len(data) > 1 << (8 * space.address_size):
            raise AspaceError(f"writeMemory at {text} offset {offset} is outside the {space.name} address space")
        target.write_memory(space, np.array([lane]), np.array([start], np.uint64),
                            np.frombuffer(data, np.uint8)[None, :])
        return len(data)

    def memory_spaces(self, wave_id: int | None = None, lane: int | None = None) -> list[dict]:
        """Memory a user can open for this wave and lane: its workgroup's shared memory, the lane's
        private memory, the wave's raw private memory, and the device regions of the dump.

        `kind` is the scope ("workgroup", "lane", "wave", "device"), so clients need not know each
        vendor's names (AMD local/private_lane, NVIDIA shared/local, Intel local/private).
        """
        wave = self.wave(wave_id)
        lane = self.focus_lane if lane is None else lane
        out = []

        def add(space, addr, size, kind):
            out.append({"name": space, "kind": kind, "size": size,
                        "memoryReference": format_memref(self.memref_for_space(space, addr, wave.id, lane))})

        wg = wave.workgroup
        by_scope: dict[str, list[str]] = {}
        for name, space in self.adapter.spaces().items():
            by_scope.setdefault(space.scope, []).append(name)
        if wg is not None and wg.lds is not None:
            size = max((a + n for a, n in wg.lds.declared_ranges()), default=0)
            for name in by_scope.get("workgroup", []):
                add(name, 0, size, "workgroup")
        if wave.private is not None:
            for name in by_scope.get("lane", []):
                add(name, wave.private.base, wave.private.lane_size, "lane")
            if wave.private.layout == "swizzled":
                for name in by_scope.get("wave", []):
                    if name == "private_wave":
                        add(name, 0, wave.private.size, "wave")
        for name, mem in self.state.memory.items():
            for addr, size in mem.declared_ranges():
                out.append({"name": name, "kind": "device", "memoryReference": format_memref(MemRef(name, addr)),
                            "size": size})
        return out

