"""Stacked: the lanes of many waves standing at one place, read as one wave of many rows.

Row r is lane rows_lane[r] of wave rows_wave[r] (indices into state.waves); every row stands at the
same pc of the same code object. A variable's location is worked out once, for one wave, while noting
what that reads of the wave (stacks.py): where it reads nothing of the wave (a register, a register
piece, a constant, a static address), the same location holds every other wave's value too, and is
restacked so that its `lanes` are rows; a StackedTarget then reads each row's bytes from its own wave
(registers in bulk, straight from the dump's files where the source can). The GPU builtins come from
the wave table. What cannot be read this way raises NotVectorized: the caller evaluates wave by wave.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .. import builtins
from ..adapters.base import WaveTarget
from ..dwarf.locations import (CompositeLocation, Location, MemoryLocation, Piece, RegisterLocation)
from ..dwarf.storage import UNAVAILABLE
from ..dwarf.target import Dialect, MemoryRead
from ..dwarf.types import byte_size
from ..errors import AspaceError, EvaluationError, StateError
from ..expressions import INT, UINT, ULONG
from ..values.objects import Obj
from ..vector_expressions import Num, NotVectorized, Reasons, names
from .stacks import _Noting, _Reads


@contextmanager
def noting(programs, wave, reads: _Reads):
    """While the body runs, the wave's targets note what is read through them."""
    plain = programs.target_for

    def target_for(w, dialect):
        target = plain(w, dialect)
        return _Noting(target, reads) if w is wave else target
    programs.target_for = target_for
    try:
        yield
    finally:
        del programs.target_for


MAX_MERGED_BYTES = 4096  # an object read for every row at once (a struct, a small array); bigger: wave by wave


class StackedTarget:
    """The rows' waves as one evaluation target (see the module's docstring)."""

    def __init__(self, programs, rep_target, rows_wave: np.ndarray, rows_lane: np.ndarray, dialect: Dialect,
                 pc: int | None = None):
        self._programs = programs
        self._pc = pc  # where every row stands
        self._rep = rep_target
        self._state = programs.state
        self.rows_wave, self.rows_lane = rows_wave, rows_lane
        self.dialect = dialect
        self.lanes = rep_target.lanes
        self._waves, self.slots = _distinct_rows(rows_wave)  # each row's wave among _waves
        # a vendor target that reads registers its own way (NVIDIA's PTX registers) is asked wave by wave
        self._bulk = type(rep_target).read_register is WaveTarget.read_register
        self._columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __getattr__(self, name):
        return getattr(self._rep, name)

    def register_info(self, regno: int):
        return self._rep.register_info(regno)

    def columns(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The register's bytes in each of the rows' waves (in self._waves order), read once."""
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = self._state.register_bytes(self._waves, [name])[0]
        return found

    def dump_registers(self, names: set[str]) -> set[str]:
        """The dump's registers that reading these (the evaluator's names) reads."""
        if self._bulk:
            return set(names)
        pieces = getattr(self._rep, "stacked_pieces", None)
        if pieces is None or self._pc is None:
            return set()
        out = set()
        adapter = self._rep.adapter
        for name in names:
            regno = adapter.register_number(name, self.lanes)
            found = pieces(regno, self._pc) if regno is not None else None
            for _, sass in found or []:
                out.add(self.register_info(sass).name)
        return out

    def prefetch(self, names: set[str]) -> None:
        """Read these registers of every row's wave now, in one pass over the dump's files."""
        missing = sorted(n for n in names if n not in self._columns)
        if missing:
            self._columns.update(zip(missing, self._state.register_bytes(self._waves, missing)))

    def read_register(self, regno: int, rows) -> MemoryRead:
        rows = np.asarray(rows, np.int64)
        info = self.register_info(regno)
        if self._bulk:
            return self._whole(info, rows)
        # a vendor's own reading (NVIDIA's PTX registers): where it reads whole registers, in bulk too
        pieces = getattr(self._rep, "stacked_pieces", None)
        found = pieces(regno, self._pc) if pieces is not None and self._pc is not None else None
        if found is None:
            return self._each_wave(rows, lambda target, lanes: target.read_register(regno, lanes))
        data = np.zeros((len(rows), info.size), np.uint8)
        valid = np.zeros((len(rows), info.size), bool)
        for lo, sass in found:
            n = min(4, info.size - lo)
            if n > 0:
                got = self._whole(self.register_info(sass), rows)
                data[:, lo:lo + n], valid[:, lo:lo + n] = got.data[:, :n], got.valid[:, :n]
        return MemoryRead(data, valid)

    def _whole(self, info, rows: np.ndarray) -> MemoryRead:
        """WaveTarget.read_register of every row's wave: a lane's part of a vector register, or the whole
        register for every row."""
        data, valid = self.columns(info.name)
        slot, g = self.slots[rows], len(rows)
        full = data.shape[1]
        if info.per_lane:  # as WaveTarget.read_register: the lane's part of the register file
            if full == 0:
                return MemoryRead(np.zeros((g, info.size), np.uint8), np.zeros((g, info.size), bool))
            if full % self.lanes:
                raise StateError(f"register {info.name} has {full} bytes, not a multiple of {self.lanes} lanes",
                                 info.name)
            per = full // self.lanes
            lane = self.rows_lane[rows]
            if per in (1, 2, 4, 8):  # whole elements: one gather of (wave, lane) words
                flat = slot * self.lanes + lane
                words = np.ascontiguousarray(data).view(np.dtype(f"u{per}")).reshape(-1).take(flat)
                if valid.all():
                    known = np.ones((g, per), bool)
                else:
                    lane_known = valid.reshape(len(valid), self.lanes, per).all(axis=2).reshape(-1).take(flat)
                    known = np.repeat(lane_known[:, None], per, axis=1)
                return MemoryRead(words.view(np.uint8).reshape(g, per), known)
            at = lane[:, None] * per + np.arange(per)
            return MemoryRead(data[slot[:, None], at], valid[slot[:, None], at])
        width = max(full, info.size)
        if width > full:
            data = np.pad(data, ((0, 0), (0, width - full)))
            valid = np.pad(valid, ((0, 0), (0, width - full)))
        return MemoryRead(data[slot, :info.size], valid[slot, :info.size])

    def read_memory(self, space, rows, addrs, size) -> MemoryRead:
        addrs = np.asarray(addrs, np.uint64)
        return self._each_wave(np.asarray(rows, np.int64),
                               lambda target, lanes, at: target.read_memory(space, lanes, addrs[at], size), True)

    def read_generic(self, rows, addrs, size) -> MemoryRead:
        addrs = np.asarray(addrs, np.uint64)
        return self._each_wave(np.asarray(rows, np.int64),
                               lambda target, lanes, at: target.read_generic(lanes, addrs[at], size), True)

    def _each_wave(self, rows: np.ndarray, read, positional: bool = False) -> MemoryRead:
        """Each wave's own target reads its rows."""
        waves = self._state.waves
        parts = []
        for w in np.unique(self.rows_wave[rows]).tolist():
            at = np.flatnonzero(self.rows_wave[rows] == w)
            target = self._programs.target_for(waves[w], self.dialect)
            lanes = self.rows_lane[rows[at]]
            got = read(target, lanes, at) if positional else read(target, lanes)
            parts.append((at, got))
        width = max((got.data.shape[1] for _, got in parts), default=0)
        data = np.zeros((len(rows), width), np.uint8)
        valid = np.zeros((len(rows), width), bool)
        for at, got in parts:
            n = got.data.shape[1]
            data[at, :n] = np.broadcast_to(got.data, (len(at), n))
            valid[at, :n] = np.broadcast_to(got.valid, (len(at), n))
        return MemoryRead(data, valid)


def _distinct_rows(rows_wave: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(rows_wave, return_inverse=True), without a sort when the rows come wave by wave."""
    if len(rows_wave) and (np.diff(rows_wave) >= 0).all():
        starts = np.concatenate(([True], rows_wave[1:] != rows_wave[:-1]))
        return rows_wave[starts], np.cumsum(starts) - 1
    return np.unique(rows_wave, return_inverse=True)


def restack(loc: Location, index: np.ndarray, rows: np.ndarray) -> Location:
    """A location worked out for one wave's lanes, for rows: row k takes lane index[k]'s place, and
    registers and memory are read for row rows[k] (its own wave and lane)."""
    return _relane(loc.take(index), rows)


def _relane(loc: Location, rows: np.ndarray) -> Location:
    return Location(tuple(_relane_place(p, rows) for p in loc.places))


def _relane_place(place, rows):
    if isinstance(place, RegisterLocation):
        return RegisterLocation(place.register, place.bit_offset, rows)
    if isinstance(place, MemoryLocation):
        return MemoryLocation(place.space, place.address, place.bit_offset, rows)
    if isinstance(place, CompositeLocation):
        return CompositeLocation(tuple(Piece(_relane(p.location, rows), p.bits) for p in place.pieces),
                                 place.bit_offset, place.complete)
    return place  # implicit, implicit pointer, undefined: nothing of a wave's


class Reasoned(Obj):
    """An object whose rows may each carry why they have no value (a reason code of Reasons)."""

    __slots__ = ("row_reasons",)


class PlaceLeaves:
    """The names, registers and builtins an expression reads, for every row of one place
    (vector_expressions' `leaves`)."""

    def __init__(self, session_parts, frame, rep_wave, rows_wave: np.ndarray, rows_lane: np.ndarray,
                 reasons: Reasons, pc: int | None = None):
        self.programs, self.variables, self.frames = session_parts
        self.state = self.programs.state
        self.adapter = self.programs.adapter
        self.frame = frame
        self.rep = rep_wave
        self.rows_wave, self.rows_lane = rows_wave, rows_lane
        self.rows = len(rows_wave)
        self.reasons = reasons
        self.pc = pc  # the runtime pc every row stands at
        self._stacked: dict[Dialect, StackedTarget] = {}
        self._coordinates = None
        self._seen: dict[str, tuple] = {}  # name -> (object, error): each name worked out once
        self._where: dict[str, tuple] = {}  # name -> (what _locate found, error)

    def find_type(self, name: str):
        from ..expressions import BUILTIN_TYPES
        found = BUILTIN_TYPES.get(name)
        if found is None and self.frame is not None and self.frame.program.index is not None:
            found = self.frame.program.index.find_type(name)
        return found

    def target(self, dialect: Dialect) -> StackedTarget:
        found = self._stacked.get(dialect)
        if found is None:
            rep_target = self.programs.target_for(self.rep, dialect)
            found = self._stacked[dialect] = StackedTarget(self.programs, rep_target, self.rows_wave, self.rows_lane,
                                                           dialect, self.pc)
        return found

    # ---- names

    def knows(self, name: str) -> bool:
        """Whether the name means something here (a variable in scope, a global, a builtin)."""
        frame = self.frame
        if name in builtins.VARIABLES:
            return True
        if frame is None or frame.info is None:
            return False
        return any(v.name == name and not v.shadowed for v in self.variables.variables(frame)) or \
            any(v.name == name for v in self.variables.globals(frame))

    def prefetch(self, tree: tuple) -> None:
        """Work out where the names the expression reads are, and read every register they live in (and
        every register the expression names) at once: one pass over the dump's files."""
        from ..vector_expressions import registers_named
        wanted: dict[StackedTarget, set[str]] = {}
        for name in names(tree):
            try:
                found = self._located(name)
            except (AspaceError, NotVectorized):
                continue  # (evaluating says so again)
            if found[0] == "variable":
                _, var, read, reads = found
                target = self.target(var.dialect)
                wanted.setdefault(target, set()).update(reads.registers)
                for _, obj in read.groups:
                    if obj.location is not None:
                        wanted.setdefault(self.target(obj.target.dialect), set()).update(_registers_of(obj.location))
        default = self.target(Dialect(vendor_ops=self.adapter.vendor))
        for name in registers_named(tree):
            regno = self.adapter.register_number(name, self.rep.lanes)
            if regno is not None and name not in ("pc", "exec"):
                try:
                    wanted.setdefault(default, set()).add(default.register_info(regno).name)
                except AspaceError:
                    continue
        for target, registers in wanted.items():
            target.prefetch(target.dump_registers(registers))

    def variable(self, name: str):
        return _remembered(self._seen, name, self._variable)

    def _variable(self, name: str):
        found = self._located(name)
        if found[0] == "object":
            return found[1]
        _, var, read, reads = found
        if reads.other:
            raise NotVectorized(f"where {name} is depends on the wave's memory")
        if reads.registers:  # a place that depends on the wave's registers: worked out per set of waves
            return self._by_registers(var, reads.registers, var.dialect)
        return self._stack(var.type, read)

    def _located(self, name: str):
        """What the name is here: ("object", a builtin's rows), or ("variable", the variable, its read for
        the first row's wave (locations, not values), what working it out read of that wave)."""
        return _remembered(self._where, name, self._locate)

    def _locate(self, name: str):
        frame = self.frame
        if frame is None or frame.info is None:
            if name in builtins.VARIABLES:
                return ("object", self.builtin(name))
            raise AspaceError(f"no symbol \"{name}\" in current context")
        candidates = [v for v in self.variables.variables(frame) if v.name == name and not v.shadowed]
        if not candidates:
            candidates = [v for v in self.variables.globals(frame) if v.name == name
                          and (self.adapter.coordinate_global(v, frame.program.index) or (None, None))[1] is None]
        if not candidates:
            if name in builtins.VARIABLES:
                return ("object", self.builtin(name))
            raise AspaceError(f"no symbol \"{name}\" in current context")
        var = candidates[-1]
        coordinate = self.adapter.coordinate_global(var, frame.program.index)
        if coordinate is not None:  # HIP's threadIdx: the lane's coordinates
            return ("object", self.builtin(*coordinate))
        reads = _Reads()
        with noting(self.programs, self.rep, reads):
            read = self.variables.read_variable(frame, var, np.arange(self.rep.lanes))
        return ("variable", var, read, reads)

    def _stack(self, vtype, read, subset: np.ndarray | None = None, merged: bool = False):
        """The variable's objects (one per group of lanes with a location of one shape) for every row, or
        (with `merged`) for the rows of `subset`: (their parts [(rows, Obj)], a reason code per row)."""
        rows = np.arange(self.rows) if subset is None else subset
        codes = np.zeros(len(rows), np.int32)
        parts = []
        covered = np.zeros(len(rows), bool)
        lanes_of = self.rows_lane if subset is None else self.rows_lane[rows]
        for glanes, obj in read.groups:
            position = np.full(self.rep.lanes, -1, np.int64)
            position[np.asarray(glanes, np.int64)] = np.arange(len(glanes))
            index = position[lanes_of]
            if (index < 0).any():
                at = np.flatnonzero(index >= 0)
                if not len(at):
                    continue
                mine, index = rows[at], index[at]
            else:  # (the usual case: one place for every lane)
                at, mine = slice(None), rows
            covered[at] = True
            if obj.error is not None:
                codes[at] = self.reasons.code(obj.error)
                continue
            if obj.location is None:  # known from the debug info alone
                data, state = obj.bytes()
                part = Obj(obj.type, None, None, lanes=mine, data=np.ascontiguousarray(data[index]),
                           state=np.ascontiguousarray(state[index]))
            else:
                part = self._lane_slices(obj, glanes, mine)
                if part is None:
                    stacked = restack(obj.location, index, mine)
                    part = Obj.from_location(obj.type, stacked, self.target(obj.target.dialect), mine)
            parts.append((mine, part))
        if read.errors:
            errors = np.zeros(self.rep.lanes, np.int32)
            for lane, error in read.errors.items():
                errors[lane] = self.reasons.code(error)
            failed = errors[lanes_of]
            codes = np.where(failed != 0, failed, codes)
            covered |= failed != 0
        if (~covered).any():
            codes[~covered] = self.reasons.code("<unavailable>")
        if merged:
            return parts, codes
        if len(parts) == 1 and len(parts[0][0]) == self.rows:
            return parts[0][1]
        return self._merge(vtype, parts, codes)

    def _lane_slices(self, obj: Obj, glanes, mine: np.ndarray) -> Obj | None:
        """A variable that is each lane's own slice of one vector register, from its start (what most
        register variables are): its rows read straight from the register's bytes. None for others."""
        places = obj.location.places
        if len(places) != 1 or not isinstance(places[0], RegisterLocation):
            return None
        place = places[0]
        if not place.register.per_lane or place.bit_offset.any() or obj.size > place.register.size:
            return None
        if (place.lanes != np.asarray(glanes)).any():  # (a lane reading another lane's slice)
            return None
        got = self.target(obj.target.dialect).read_register(place.register.regno, mine)
        data = np.ascontiguousarray(got.data[:, :obj.size])
        state = (~got.valid[:, :obj.size]).view(np.uint8) * np.uint8(UNAVAILABLE)
        return Obj(obj.type, None, None, lanes=mine, data=data, state=state)

    def _merge(self, vtype, parts, codes) -> Obj:
        """Parts for some rows each, and a reason per row, as one object of all rows (read now)."""
        size = byte_size(vtype) or 0
        if size > MAX_MERGED_BYTES:
            raise NotVectorized(f"a {size}-byte object read row by row")
        data = np.zeros((self.rows, size), np.uint8)
        state = np.full((self.rows, size), UNAVAILABLE, np.uint8)
        for mine, part in parts:
            data[mine], state[mine] = part.bytes()
        out = Reasoned(vtype, None, None, lanes=np.arange(self.rows), data=data, state=state)
        out.row_reasons = codes
        return out

    def _by_registers(self, var, names: set[str], dialect: Dialect) -> Obj:
        """A variable whose place depends on registers (a frame pointer): waves whose bytes of those
        registers are the same share one place; it is worked out once for each such set of waves, in
        the first one's own frame (stacks.py says why that holds)."""
        target = self.target(dialect)
        target.prefetch(names)
        columns = []
        for name in sorted(names):
            data, valid = target.columns(name)
            columns += [np.where(valid, data, 0), valid.view(np.uint8)]
        joined = np.ascontiguousarray(np.concatenate(columns, axis=1))
        keys = joined.view(np.dtype((np.void, joined.shape[1]))).ravel()
        _, first, which = np.unique(keys, return_index=True, return_inverse=True)
        parts, codes = [], np.zeros(self.rows, np.int32)
        slot_of_row = target.slots
        for k, unique_wave in enumerate(first.tolist()):
            rows = np.flatnonzero(which.ravel()[slot_of_row] == k)
            wave = self.state.waves[int(self.rows_wave[rows[0]])]
            frame = self.frames.frames(wave.id, int(self.rows_lane[rows[0]]))[0]
            reads = _Reads()
            with noting(self.programs, wave, reads):
                read = self.variables.read_variable(frame, var, np.arange(self.rep.lanes))
            if reads.other or not reads.registers <= names:
                raise NotVectorized(f"where {var.name} is depends on more than registers")
            got, why = self._stack(var.type, read, rows, merged=True)
            parts += got
            codes[rows] = why
        return self._merge(var.type, parts, codes)

    # ---- registers

    def register(self, name: str) -> Obj:
        rows = np.arange(self.rows)
        if name == "lane" or name == "_lane":
            return _object(INT, self.rows_lane.astype("<i4"), np.ones(self.rows, bool))
        if name.startswith("_"):
            raise NotVectorized(f"${name}")
        rep = self.rep
        if name in ("pc", "exec", rep.pc_register, rep.exec_register):
            real = {"pc": rep.pc_register, "exec": rep.exec_register}.get(name, name)
            if real is None:
                raise AspaceError(f"${name} is not in the dump")
            target = self.target(Dialect(vendor_ops=self.adapter.vendor))
            data, valid = target.columns(real)
            data, valid = data[target.slots], valid[target.slots]
            known = valid.all(axis=1) & (data.shape[1] > 0)
            value = np.zeros((self.rows, 8), np.uint8)
            value[:, :min(8, data.shape[1])] = data[:, :8]
            out = Reasoned(ULONG, None, None, lanes=rows, data=value,
                           state=np.where(known[:, None], 0, UNAVAILABLE).astype(np.uint8).repeat(8, axis=1))
            out.row_reasons = np.where(known, 0, self.reasons.code(f"${real} is not in the dump")).astype(np.int32)
            return out
        regno = self.adapter.register_number(name, rep.lanes)
        if regno is None:
            raise AspaceError(f"unknown register ${name}")
        target = self.target(Dialect(vendor_ops=self.adapter.vendor))
        info = target.register_info(regno)
        loc = Location((RegisterLocation(info, np.zeros(self.rows, np.int64), rows),))
        return Obj.from_location(UINT, loc, target, rows)

    # ---- the GPU builtins, from the wave table (session/coordinates.py's numbering, for every row)

    def builtin(self, name: str, member: str | None = None) -> Obj:
        c = self.coordinates()
        if name == "warpSize":
            return _object(INT, np.full(self.rows, self.rep.lanes, "<i4"), np.ones(self.rows, bool))
        table, known = {"threadIdx": (c["local"], c["valid"]), "blockIdx": (c["group"], None),
                        "blockDim": (c["size"], None), "gridDim": (c["grid_groups"], None)}[name]
        obj = _object(builtins._STRUCTS[name], table.astype("<u4"), np.ones(self.rows, bool) if known is None else known)
        return obj if member is None else dict(obj.members())[member]

    def call(self, name: str, args: list[Num]) -> Obj:
        if len(args) != 1:
            raise EvaluationError(f"{name} takes one argument (the dimension), not {len(args)}")
        dim = args[0]
        if dim.bad.any() or len(np.unique(dim.values)) != 1:
            raise NotVectorized(f"{name} of a dimension that differs between lanes")
        d = dim.values[0]
        if isinstance(d, np.floating) or d < 0:
            raise EvaluationError(f"{name}: the dimension must be a non-negative integer")
        c = self.coordinates()
        if d > 2:
            return _object(builtins._SIZE_T, np.full(self.rows, builtins._PAST_LAST_DIMENSION[name], "<u8"),
                           np.ones(self.rows, bool))
        column = {"get_local_id": "local", "get_global_id": "global", "get_group_id": "group",
                  "get_local_size": "partial", "get_global_size": "grid_items", "get_num_groups": "grid_groups"}[name]
        known = c["valid"] if name in ("get_local_id", "get_global_id") else np.ones(self.rows, bool)
        return _object(builtins._SIZE_T, c[column][:, int(d)].astype("<u8"), known)

    def coordinates(self) -> dict[str, np.ndarray]:
        """Coordinates._work_out for every row: (rows, 3) tables and the rows that are work-items."""
        if self._coordinates is not None:
            return self._coordinates
        table = self.state.wave_table()
        w = self.rows_wave
        lanes = self.rep.lanes
        d = int(table.dispatch[w[0]])
        dispatch = table.dispatches[d] if d >= 0 else None
        if dispatch is not None and (dispatch.grid_size is None or dispatch.workgroup_size is None
                                     or dispatch.local_ids):
            raise NotVectorized("work-item ids the dispatch does not number from its sizes")
        size = np.array([max(int(n), 1) for n in dispatch.workgroup_size] if dispatch is not None else [lanes, 1, 1])
        grid = np.array([max(int(n), 1) for n in dispatch.grid_size] if dispatch is not None else size)
        group = np.where(table.has_workgroup[w][:, None], table.workgroup_ids[w].astype(np.int64), 0)
        n = self.rows
        # grid_size counts work-items for every vendor; the last group of a dimension may be cut
        grid_items, grid_groups = grid, -(-grid // size)
        partial = np.maximum(np.minimum(size, grid - group * size), 0)
        flat = table.index_in_workgroup[w].astype(np.int64) * lanes + self.rows_lane
        sx, sy, sz = (np.maximum(partial[:, k], 1) for k in range(3))
        local = np.stack([flat % sx, (flat // sx) % sy, flat // (sx * sy)], axis=1)
        heads = self.state.wave_heads()
        if heads is not None:
            valid_lane = (heads.valid[w] >> self.rows_lane.astype(np.uint64)) & np.uint64(1) == 1
        else:
            valid_lane = np.array([bool(self.state.waves[int(i)].valid_lanes[lane])
                                   for i, lane in zip(w.tolist(), self.rows_lane.tolist())], bool)
        valid = valid_lane & (flat < sx * sy * sz) & (partial.min(axis=1) > 0)
        self._coordinates = {"local": local, "valid": valid, "group": group, "size": np.tile(size, (n, 1)),
                             "partial": partial, "grid_groups": np.tile(grid_groups, (n, 1)),
                             "grid_items": np.tile(grid_items, (n, 1)), "global": local + group * size}
        return self._coordinates


def _registers_of(loc: Location) -> set[str]:
    out = set()
    for place in loc.places:
        if isinstance(place, RegisterLocation):
            out.add(place.register.name)
        elif isinstance(place, CompositeLocation):
            for piece in place.pieces:
                out |= _registers_of(piece.location)
    return out


def _object(t, values: np.ndarray, known: np.ndarray) -> Obj:
    """Rows of `values` (little-endian, one row per lane of the rows) as objects of type `t`."""
    n = len(known)
    data = np.ascontiguousarray(values).view(np.uint8).reshape(n, -1)
    state = np.broadcast_to(np.where(known[:, None], 0, UNAVAILABLE).astype(np.uint8), data.shape).copy()
    return Obj(t, None, None, lanes=np.arange(n), data=data.copy(), state=state)


def _remembered(cache: dict, name: str, work):
    """work(name), worked out once: its value, or the error it raised (raised again each time)."""
    found = cache.get(name)
    if found is None:
        try:
            found = cache[name] = (work(name), None)
        except (AspaceError, NotVectorized) as e:
            found = cache[name] = (None, e)
    if found[1] is not None:
        raise found[1]
    return found[0]
