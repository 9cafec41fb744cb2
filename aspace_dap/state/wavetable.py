"""The waves of a dump as columns, and sequences that build a wave or a workgroup only when asked for.

A dump folder of 100,000 waves opens without 100,000 objects: `GpuState.waves` is then a
LazyWaves, which makes each Wave (with its workgroup) the first time it is indexed, and a
dispatch's `workgroups` a LazyWorkgroups. Views of every wave at once (thread names, wave groups)
read a WaveTable: ids, places and workgroup ids in numpy arrays.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Callable

import numpy as np

from .model import DEFAULT_REGISTER_NAMES, LOAD_LOCK, Dispatch, Wave, Workgroup


def int_column(values: list) -> np.ndarray:
    """Plain non-negative ints as int64; an object array when one does not fit (ids up to 2**64 - 1)."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)


class WaveTable:
    """Per wave, in `GpuState.waves` order, what names it and places it, as arrays (no Wave objects
    needed): its id, index in the workgroup, lanes, dispatch (an index into `dispatches`, -1 for
    none) and workgroup id (x, y, z; 0s for none, where `has_workgroup` is False), and the cluster of
    its workgroup (None for none; `clusters` is None when no workgroup has one), and where the hardware ran
    it (Wave.slot; `slots` is None when the dump records none)."""

    def __init__(self, waves: Sequence[Wave], dispatches: list[Dispatch], ids: np.ndarray,
                 index_in_workgroup: np.ndarray, lanes: np.ndarray, dispatch: np.ndarray,
                 workgroup_ids: np.ndarray, clusters: list | None = None, has_workgroup: np.ndarray | None = None,
                 slots: list | None = None):
        self.waves = waves
        self.dispatches = dispatches
        self.ids = ids
        self.index_in_workgroup = index_in_workgroup
        self.lanes = lanes
        self.dispatch = dispatch
        self.workgroup_ids = workgroup_ids
        self.clusters = clusters
        self.has_workgroup = np.ones(len(ids), bool) if has_workgroup is None else has_workgroup
        self.slots = slots

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of_waves(cls, waves: Sequence[Wave], dispatches: list[Dispatch]) -> "WaveTable":
        """From wave objects (states a reader builds wave by wave, such as GPU core files)."""
        where = {id(d): i for i, d in enumerate(dispatches)}
        n = len(waves)
        groups = [w.workgroup for w in waves]
        clusters = [None if g is None else g.cluster for g in groups]
        slots = [w.slot for w in waves]
        return cls(waves, dispatches, int_column([w.id for w in waves]),
                   int_column([w.index_in_workgroup for w in waves]), np.array([w.lanes for w in waves], np.int64),
                   np.array([where.get(id(w.dispatch), -1) for w in waves], np.int64),
                   int_column([x for g in groups for x in ((0, 0, 0) if g is None else g.id)]).reshape(n, 3),
                   clusters if clusters.count(None) != n else None, np.array([g is not None for g in groups], bool),
                   slots if slots.count(None) != n else None)

    def first_in_workgroup(self, dispatch_id: int, workgroup: tuple[int, int, int]) -> int | None:
        """Where the first wave of that workgroup of the dispatch with that id is (dispatch 0 also
        stands for none), or None."""
        dispatches = [i for i, d in enumerate(self.dispatches) if d.id == dispatch_id]
        if dispatch_id == 0:
            dispatches.append(-1)
        if len(self.ids) == 0 or not dispatches:
            return None
        hit = np.isin(self.dispatch, dispatches) & self.has_workgroup
        for axis, value in enumerate(workgroup):
            hit &= self.workgroup_ids[:, axis] == value
        found = np.flatnonzero(hit)
        return int(found[0]) if len(found) else None

    def dispatch_ranges(self) -> list[tuple[Dispatch, int, int]]:
        """(dispatch, first, end) of each dispatch: its waves are waves[first:end]."""
        counts = np.bincount(self.dispatch[self.dispatch >= 0], minlength=len(self.dispatches)).tolist()
        out, at = [], 0
        for dispatch, count in zip(self.dispatches, counts):
            out.append((dispatch, at, at + count))
            at += count
        return out


class _MadeOnDemand(Sequence):
    """`count` items, each made by `make(index)` the first time it is asked for (then kept); the
    lock makes two readers of one index get one object. `make_passing(index)` makes one that is not
    kept (see `passing`)."""

    _what = "item"

    def __init__(self, count: int, make: Callable[[int], object],
                 make_passing: Callable[[int], object] | None = None):
        self._count = count
        self._make = make
        self._make_passing = make_passing or make
        self._made: dict[int, object] = {}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        i = operator.index(index)
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(f"{self._what} index {index} out of range ({self._count} {self._what}s)")
        item = self._made.get(i)
        if item is None:
            with LOAD_LOCK:
                item = self._made.get(i)
                if item is None:
                    item = self._made[i] = self._make(i)
        return item

    def __iter__(self):
        return map(self.__getitem__, range(self._count))

    def passing(self, start: int = 0, end: int | None = None):
        """Items start..end: those made before as they are (with what was written to them), the others
        made for this one look and not kept. One pass over a whole dump (a save) then holds one
        item at a time, not every wave of it."""
        made, make = self._made, self._make_passing
        for i in range(start, self._count if end is None else end):
            item = made.get(i)
            yield item if item is not None else make(i)


def passing(items: Sequence):
    """Every item of a sequence, made on demand and not kept where it is a LazyWaves, LazyWorkgroups
    or WaveSlice (their `passing`); a list's items as they are."""
    walk = getattr(items, "passing", None)
    return walk() if walk is not None else iter(items)


class LazyWaves(_MadeOnDemand):
    """`count` waves, each made by `make(index)` the first time it is asked for (then kept)."""

    _what = "wave"

    def __init__(self, count: int, make: Callable[[int], Wave], ids: np.ndarray,
                 make_passing: Callable[[int], Wave] | None = None):
        super().__init__(count, make, make_passing)
        self.ids = ids
        self._lookup: Callable[[int], int | None] | None = None
        # the registers holding each wave's pc and execution mask (GpuState.use_register_names)
        self.register_names: tuple[str, str | None] = DEFAULT_REGISTER_NAMES

    def set_ids(self, ids: np.ndarray) -> None:
        """The ids of all the waves (their count too), once the reader has them."""
        self.ids, self._count, self._lookup = ids, len(ids), None

    def __repr__(self) -> str:
        return f"LazyWaves({self._count} waves, {len(self._made)} made)"

    def made(self) -> list[tuple[int, Wave]]:
        """(index, wave) of the waves made so far."""
        return sorted(self._made.items(), key=operator.itemgetter(0))

    def index_of(self, wave_id: int) -> int | None:
        """Where the wave with this id is, or None."""
        if self._lookup is None:
            self._lookup = _id_lookup(self.ids)
        return self._lookup(wave_id)


def _id_lookup(ids: np.ndarray) -> Callable[[int], int | None]:
    n = len(ids)
    if ids.dtype == object:  # ids past int64: a dict
        where = {int(v): i for i, v in enumerate(ids.tolist())}
        return where.get
    if n and int(ids[-1]) - int(ids[0]) == n - 1 and (n == 1 or bool((np.diff(ids) == 1).all())):
        first = int(ids[0])  # ids counted up from the first (what writers do)

        def consecutive(wave_id: int) -> int | None:
            i = wave_id - first
            return i if 0 <= i < n else None
        return consecutive
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]

    def searched(wave_id: int) -> int | None:
        if not -(1 << 63) <= wave_id < 1 << 63:
            return None
        at = int(np.searchsorted(ordered, wave_id))
        return int(order[at]) if at < n and int(ordered[at]) == wave_id else None
    return searched


class WaveSlice(Sequence):
    """waves[start:end] of a LazyWaves without making them (a workgroup's or a dispatch's waves)."""

    def __init__(self, waves: LazyWaves, start: int, end: int):
        self._waves, self._start, self._end = waves, start, end

    def __len__(self) -> int:
        return self._end - self._start

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"wave index {index} out of range ({len(self)} waves)")
        return self._waves[self._start + i]

    def __iter__(self):
        return map(self._waves.__getitem__, range(self._start, self._end))

    def passing(self):
        """These waves, those not made yet made and not kept (LazyWaves.passing)."""
        return self._waves.passing(self._start, self._end)

    def __repr__(self) -> str:
        return f"WaveSlice({self._start}:{self._end} of {self._waves!r})"


class LazyWorkgroups(_MadeOnDemand):
    """A dispatch's `count` workgroups, each made by `make(index)` when first asked for; `waves` are
    all of the dispatch's waves."""

    _what = "workgroup"

    def __init__(self, count: int, make: Callable[[int], Workgroup], waves: WaveSlice,
                 make_passing: Callable[[int], Workgroup] | None = None):
        super().__init__(count, make, make_passing)
        self.waves = waves

    def made(self) -> list[Workgroup]:
        return [self._made[i] for i in sorted(self._made)]
