"""Waves: the triage of every wave at once, for thousands of waves.

Owns lane counts from the wave table, each dispatch's slice of the waves, the waves grouped by where
they stand (dispatch, pc, inline chain and callers: the odd ones out first) and the waves' names. The
groups and the names are worked out once per dump and kept until a write (setVariable, writeMemory)
could move a wave; where each group stands comes from stacks.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import AspaceError
from ..state.model import popcount
from .focus import Focus
from .frames import Frames
from .programs import Part, Programs
from .stacks import Stacks, stack_key


def _distinct(values: np.ndarray) -> list[int]:
    """Sorted distinct values (np.unique would import numpy.ma, 0.1 s of start-up)."""
    ordered = np.sort(values)
    if len(ordered) == 0:
        return []
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))].tolist()


def lowest_lane(masks: np.ndarray) -> np.ndarray:
    """The lowest set bit of each uint64 mask, -1 for none."""
    masks = np.asarray(masks, np.uint64)
    low = masks & (~masks + np.uint64(1))  # the lowest set bit alone
    out = np.full(len(masks), -1, np.int64)
    some = low != 0
    out[some] = np.log2(low[some].astype(np.float64)).astype(np.int64)  # a power of two: exact
    return out


@dataclass
class WaveGroup:
    """Waves of one dispatch standing at the same place: the same pc, inline chain and callers."""

    dispatch: object
    # innermost first: {"name", "file", "line", "column", "pc", "inlined"}; frames sharing a pc are one
    # inline chain, the innermost inlined into the next ("inlined" True) up to the function it is in
    frames: list[dict]
    wave_ids: np.ndarray
    active_lanes: int
    valid_lanes: int


class Waves(Part):
    def __init__(self, programs: Programs, focus: Focus, frames: Frames, epoch: Callable[[], int]):
        super().__init__(programs)
        self.focus = focus
        self.frames = frames
        self.stacks = Stacks(programs, frames)
        self._epoch = epoch  # the write epoch: a write may move waves, so what is kept is worked out again
        self._has_active_lane_expr: dict[tuple[int, int], bool] = {}
        self._groups: tuple[int, list[WaveGroup]] | None = None
        self._names: tuple[tuple, list[str]] | None = None

    def lane_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Active and valid lanes of every wave (in state.waves order), counted from the wave table:
        the same numbers as active_lanes() without building 40,000 waves."""
        waves = self.state.waves
        heads = self.state.wave_heads()
        if heads is None:
            active = np.array([int(self.focus.active_lanes(w).sum()) for w in waves], dtype=np.int64)
            return active, np.array([int(w.valid_lanes.sum()) for w in waves], dtype=np.int64)
        active, valid = popcount(heads.active), popcount(heads.valid)
        # waves whose compiler says which lanes are active (DW_AT_LLVM_active_lane, DW_AT_LLVM_lanes) are asked
        # one by one
        for i in self.active_lane_expr_waves(heads):
            active[i] = int(self.focus.active_lanes(waves[i]).sum())
        for wave_id, lanes in list(self.focus.active_by_wave.items()):
            i = self.state.wave_index(wave_id)
            if i is not None:
                active[i] = int(lanes.sum())
        return active, valid

    def dispatch_slices(self) -> list[tuple[object, int, int]]:
        """(dispatch, first, end): each dispatch's waves are state.waves[first:end]."""
        return self.state.wave_table().dispatch_ranges()

    def active_lane_expr_waves(self, heads) -> list[int]:
        if not self.adapter.compiler_active_lanes:
            return []
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
                        program = self.programs.program_for(waves[first])
                        if program.index is not None:
                            # DW_AT_LLVM_active_lane, or DW_AT_LLVM_lanes (lanes past it are no lanes)
                            has = any(f.active_lane_expr or f.lanes is not None
                                      for f in program.index.frames_at(program.elf_pc(pc)))
                    except AspaceError:
                        pass
                    self._has_active_lane_expr[key] = has
                if has:
                    out.extend((first + np.nonzero(known & (pcs == pc))[0]).tolist())
        return out

    def wave_ids(self) -> np.ndarray:
        """The id of every wave, in state.waves order."""
        return self.state.wave_table().ids

    def wave_groups(self) -> list[WaveGroup]:
        """Waves grouped by dispatch, then by where their first active lane stands: pc, the functions
        inlined there and the callers' return addresses, so that every distinct place is a group of
        its own even without line information; the smallest groups, the odd ones out, first. Worked
        out once and kept until a write."""
        epoch = self._epoch()
        if self._groups is None or self._groups[0] != epoch:
            self._groups = (epoch, self._group())
        return self._groups[1]

    def _group(self) -> list[WaveGroup]:
        waves = self.state.waves
        heads = self.state.wave_heads()
        active, valid = self.lane_counts()
        members: dict[tuple, list[np.ndarray]] = {}
        stacks: dict[tuple, list[dict]] = {}

        def add(d: int, frames: list[dict], rows) -> None:
            key = (d, stack_key(frames))
            stacks.setdefault(key, frames)
            members.setdefault(key, []).append(np.asarray(rows, np.int64))

        one_by_one: list[int] = []
        expr_waves = set(self.active_lane_expr_waves(heads)) if heads is not None else set()
        for d, (_, first, end) in enumerate(self.dispatch_slices()):
            if first == end:
                continue
            if heads is None:
                one_by_one.extend(range(first, end))
                continue
            rows = np.arange(first, end)
            lead = lowest_lane(heads.active[first:end])
            # the pc is the first active lane's: every lane is at it, or the dump says it is that lane's
            at_pc = ~heads.lane_pcs[first:end]
            if heads.lead is not None:
                at_pc |= heads.lead[first:end]
            shared = heads.pc_known[first:end] & (lead >= 0) & at_pc
            if expr_waves:
                shared[[i - first for i in expr_waves if first <= i < end]] = False
            one_by_one.extend(rows[~shared].tolist())
            pcs = heads.pc[first:end]
            for pc in _distinct(pcs[shared]):
                here = shared & (pcs == pc)
                for lane in _distinct(lead[here]):
                    for frames, part in self.stacks.at(pc, lane, rows[here & (lead == lane)]):
                        add(d, frames, part)
        table = self.state.wave_table()
        for i in one_by_one:
            wave = waves[i]
            lanes = np.nonzero(self.focus.active_lanes(wave))[0]
            add(int(table.dispatch[i]), self.stacks.of_wave(wave, int(lanes[0]) if len(lanes) else 0), [i])
        ids = table.ids
        groups = []
        for key, parts in members.items():
            rows = np.sort(np.concatenate(parts))
            d = int(table.dispatch[rows[0]])
            dispatch = table.dispatches[d] if d >= 0 else None
            groups.append(WaveGroup(dispatch, stacks[key], ids[rows], int(active[rows].sum()), int(valid[rows].sum())))
        groups.sort(key=lambda g: (len(g.wave_ids), g.dispatch.id if g.dispatch is not None else -1,
                                   int(g.wave_ids[0])))
        return groups

    def thread_names(self) -> list[str]:
        """thread_name of every wave, from the wave table (without building the waves); kept until a
        write or a wave's active lanes are worked out anew."""
        key = (self._epoch(), len(self.focus.active_by_wave))
        if self._names is None or self._names[0] != key:
            names = self.adapter.thread_names(self.state.wave_table())
            if counts_lanes_in_names(len(names)):
                active, valid = self.lane_counts()
                names = [f"{name} [{n}/{t} active]" for name, n, t in zip(names, active.tolist(), valid.tolist())]
            self._names = (key, names)
        return self._names[1]

    def thread_name(self, wave) -> str:
        """The vendor's name of the wave, with its active lanes of valid lanes (`[4/64 active]`) in a
        dump of up to COUNTED_NAMES_UP_TO waves."""
        name = self.adapter.thread_name(wave)
        if not counts_lanes_in_names(len(self.state.waves)):
            return name
        return f"{name} [{int(self.focus.active_lanes(wave).sum())}/{int(wave.valid_lanes.sum())} active]"


# Thread names count each wave's active lanes in a dump of up to a GPU's worth of waves. A bigger dump
# (a node's GPUs, 100,000 waves) names its threads as ROCgdb, cuda-gdb and gdb-oneapi do, without
# the count: counting reads every wave's execution mask, about 0.4 s per 100,000 register files,
# before the first thread could be listed. waveGroups, `info waves` and the GPU Waves view count
# lanes at every size.
COUNTED_NAMES_UP_TO = 16_384


def counts_lanes_in_names(waves: int) -> bool:
    return waves <= COUNTED_NAMES_UP_TO
