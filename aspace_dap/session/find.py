"""Find: every active lane of every wave, sorted by where it stands, for an expression to be evaluated
in each (find_lanes.py, the DAP `findLanes` request, the REPL's `find`).

A place is a pc of a dispatch's code: every active lane standing there, wave by wave, shares the
innermost frame's debug information, so an expression is worked out once per place over all its
lanes (stacked.py). Lanes are found from the wave table in bulk; a wave whose lanes have their own
pcs, or whose compiler says which lanes are active (DW_AT_LLVM_active_lane), is looked at on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..deadline import check_time
from ..errors import AspaceError
from ..vector_expressions import Reasons
from .focus import Focus
from .frames import Frame, Frames
from .programs import Part, Programs
from .stacked import PlaceLeaves
from .variables import Variables
from .waves import Waves


@dataclass
class Place:
    """The active lanes standing at runtime pc `pc` of dispatch `dispatch` (an index into the wave
    table's dispatches): row r is lane `lanes[r]` of wave `waves[r]` (indices into state.waves)."""

    dispatch: int
    pc: int
    waves: np.ndarray
    lanes: np.ndarray


@dataclass
class Unplaced:
    """Active lanes with no pc to evaluate at, and why."""

    waves: np.ndarray
    lanes: np.ndarray
    reason: str


class Find(Part):
    def __init__(self, programs: Programs, focus: Focus, frames: Frames, variables: Variables, waves: Waves):
        super().__init__(programs)
        self.focus, self.frames, self.variables, self.waves = focus, frames, variables, waves

    def places(self) -> tuple[list[Place], list[Unplaced]]:
        """Every active lane of every wave, by the pc it stands at (places in dispatch and pc order)."""
        state = self.state
        heads = state.wave_heads()
        places: list[Place] = []
        unplaced: list[Unplaced] = []
        expr = set(self.waves.active_lane_expr_waves(heads)) if heads is not None else set()
        for d, (_, first, end) in enumerate(self.waves.dispatch_slices()):
            if first == end:
                continue
            rows = np.arange(first, end)
            if heads is None:
                lone = rows
            else:
                simple = heads.pc_known[first:end] & ~heads.lane_pcs[first:end]
                if expr:
                    simple[[i - first for i in expr if first <= i < end]] = False
                own = heads.pc_known[first:end] & heads.lane_pcs[first:end] & ~simple
                if expr:
                    own[[i - first for i in expr if first <= i < end]] = False
                self._own_pcs(places, d, rows[own], heads.active[first:end][own])
                lone = rows[~simple & ~own]
                # waves whose lanes are all at the wave's pc: by pc, then their active lanes
                waves_here, pcs = rows[simple], heads.pc[first:end][simple]
                order = np.argsort(pcs, kind="stable")
                waves_here, pcs = waves_here[order], pcs[order]
                starts = np.flatnonzero(np.concatenate(([True], pcs[1:] != pcs[:-1]))) if len(pcs) else []
                for a, b in zip(list(starts), list(starts[1:]) + [len(pcs)]):
                    wave_rows, lanes = _active_rows(waves_here[a:b], heads.active[waves_here[a:b]], state.target.lanes)
                    if len(wave_rows):
                        places.append(Place(d, int(pcs[a]), wave_rows, lanes))
            own_waves, own_lanes, own_pcs = [], [], []
            for i in lone.tolist():
                check_time()
                wave = state.waves[i]
                for lane in np.flatnonzero(self.focus.active_lanes(wave)).tolist():
                    try:
                        pc = self.frames.lane_pc(wave, lane)
                    except AspaceError as e:
                        unplaced.append(Unplaced(np.array([i]), np.array([lane]), str(e)))
                        continue
                    if pc is None:
                        unplaced.append(Unplaced(np.array([i]), np.array([lane]), "the dump has no pc for this lane"))
                        continue
                    own_waves.append(i)
                    own_lanes.append(lane)
                    own_pcs.append(pc)
            if own_waves:
                self._add(places, d, np.array(own_waves, np.int64), np.array(own_lanes, np.int64),
                          np.array(own_pcs, np.uint64))
        return places, unplaced

    def _own_pcs(self, places: list[Place], d: int, rows: np.ndarray, active: np.ndarray) -> None:
        """Waves whose lanes have pcs of their own (a CUDA core's warps): each active lane at its pc."""
        if not len(rows):
            return
        wave_rows, lanes = _active_rows(rows, active, self.state.target.lanes)
        table = self.state.lane_pc_table(rows)
        position = np.searchsorted(rows, wave_rows)
        self._add(places, d, wave_rows, lanes, table[position, lanes])

    @staticmethod
    def _add(places: list[Place], d: int, wave_rows: np.ndarray, lanes: np.ndarray, pcs: np.ndarray) -> None:
        if not len(wave_rows):
            return
        order = np.lexsort((lanes, wave_rows, pcs))
        wave_rows, lanes, pcs = wave_rows[order], lanes[order], pcs[order]
        starts = np.flatnonzero(np.concatenate(([True], pcs[1:] != pcs[:-1])))
        ends = np.concatenate((starts[1:], [len(pcs)]))
        for a, b in zip(starts.tolist(), ends.tolist()):
            places.append(Place(d, int(pcs[a]), wave_rows[a:b], lanes[a:b]))

    def frame_at(self, place: Place, row: int = 0) -> Frame | None:
        """The innermost frame of one row's wave at the place (its lane's), None when it has none."""
        wave = self.state.waves[int(place.waves[row])]
        frames = self.frames.frames(wave.id, int(place.lanes[row]))
        if not frames or frames[0].note is not None:
            return None
        return frames[0]

    def leaves(self, place: Place, reasons: Reasons) -> PlaceLeaves:
        """What an expression reads at the place, for all its rows at once."""
        rep = self.state.waves[int(place.waves[0])]
        return PlaceLeaves((self.programs, self.variables, self.frames), self.frame_at(place), rep,
                           place.waves, place.lanes, reasons, place.pc)


def _active_rows(rows: np.ndarray, active: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(wave row, lane) of every set bit of each wave's active mask, wave by wave, lanes rising."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    full = np.uint64((1 << lanes) - 1)
    if (np.asarray(active, np.uint64) == full).all():  # (every lane active: no bits to look at)
        return np.repeat(rows, lanes), np.tile(np.arange(lanes, dtype=np.int64), len(rows))
    bits = np.unpackbits(np.ascontiguousarray(active, np.uint64).view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")[:, :lanes].astype(bool)
    wave_index, lane = np.nonzero(bits)
    return rows[wave_index], lane.astype(np.int64)
