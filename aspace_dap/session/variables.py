"""Variables: what a frame's variables are, per lane, and where they live.

Owns reading a variable for some lanes (constants, static placements the adapter proves, evaluated
locations), the storage two variables both claim, pointer targets, a location in words, and the
write epoch: a frame remembers its reads until the next write to the dump's overlay.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..dwarf.describe import describe_constant, describe_evaluated
from ..dwarf.evaluator import LaneResults, evaluate
from ..dwarf.footprint import collisions, evaluate_footprint
from ..dwarf.index import ConstValue, VariableInfo
from ..dwarf.locations import Location, MemoryLocation
from ..dwarf.target import Dialect
from ..dwarf.types import PointerType, Type, byte_size
from ..errors import AspaceError
from ..values.objects import Obj
from .focus import Focus
from .frames import Frame, Frames
from .programs import Part, Programs
from .sources import Sources


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


class Variables(Part):
    def __init__(self, programs: Programs, focus: Focus, frames: Frames, sources: Sources):
        super().__init__(programs)
        self.focus = focus
        self.frames = frames
        self.sources = sources
        self._layouts: dict[int, object] = {}
        self._unresolved_places: dict[str, str] = {}
        self._collisions: dict[tuple, tuple[int, dict]] = {}  # (wave, frame, pc) -> (write epoch, findings)
        self.write_epoch = 0  # bumped by every write to the dump's overlay; frame memos older than it are stale

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
        if frame.info is None or frame.info.line_only or frame.program.index is None:
            return []
        return frame.program.index.globals(frame.info.cu_offset)

    @staticmethod
    def no_variables_reason(frame: Frame) -> str | None:
        """Why a frame has no variables at all, when its build says so (a line-tables-only build)."""
        if frame.info is not None and (frame.info.line_only or frame.info.no_variable_info):
            return ("the build has line tables only (nvcc -lineinfo, clang -gline-tables-only, Triton): "
                    "no variable information; the registers hold the machine state")
        return None

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
            out.groups.append((lanes, Obj.from_location(vtype, loc, self.frames.frame_target(frame, var.dialect),
                                                        lanes)))
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
        target = self.frames.frame_target(frame, var.dialect)
        context = frame.contexts.get(var.dialect)
        if context is None:
            context = frame.contexts[var.dialect] = self.programs.frame_context(frame.program, frame.info,
                                                                                frame.runtime_pc, target)
        if context.unit_offset != var.cu_offset:  # a variable of another unit names DIEs by its own offsets
            context = replace(context, unit_offset=var.cu_offset)
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
        lanes = np.arange(self.focus.wave(frame.wave_id).lanes)
        footprints = {}
        for var in self.variables(frame):
            try:
                spec = var.location_at(frame.pc)
                if var.shadowed or var.type is None or spec is None or isinstance(spec, ConstValue) \
                        or self._static_placement(frame, var) is not None:
                    continue
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
                                                                       self.sources.read_source)
            except AspaceError as e:
                self.warnings.append(f"{program.path}: placing static variables: {e}")
                self._layouts[program.id] = None
        return self.adapter.static_placement(self._layouts[program.id], var)

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
