"""Waves: the triage of every wave at once, for thousands of waves.

Owns lane counts from the wave table, each dispatch's slice of the waves, the waves grouped by call
stack (the odd ones out first), and the waves' names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AspaceError
from ..state.model import popcount
from .focus import Focus
from .frames import Frames
from .programs import Part, Programs


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


class Waves(Part):
    def __init__(self, programs: Programs, focus: Focus, frames: Frames):
        super().__init__(programs)
        self.focus = focus
        self.frames = frames
        self._has_active_lane_expr: dict[tuple[int, int], bool] = {}
        self._kernel_stacks: dict[tuple, list] = {}

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
        for i in self._waves_with_active_lane_expr(heads):
            active[i] = int(self.focus.active_lanes(waves[i]).sum())
        for wave_id, lanes in list(self.focus.active_by_wave.items()):
            i = self.state.wave_index(wave_id)
            if i is not None:
                active[i] = int(lanes.sum())
        return active, valid

    def dispatch_slices(self) -> list[tuple[object, int, int]]:
        """(dispatch, first, end): each dispatch's waves are state.waves[first:end]."""
        return self.state.wave_table().dispatch_ranges()

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
        table = self.state.wave_table()
        for i in sorted(one_by_one):
            frames, _ = self._stack_of(waves[i])
            add(int(table.dispatch[i]), frames, np.array([i]))
        ids = table.ids
        groups = []
        for key, parts in by_stack.items():
            rows = np.sort(np.concatenate(parts))
            d = int(table.dispatch[rows[0]])
            dispatch = table.dispatches[d] if d >= 0 else None
            groups.append(WaveGroup(dispatch, stacks[key], ids[rows], int(active[rows].sum()), int(valid[rows].sum())))
        groups.sort(key=lambda g: (len(g.wave_ids), g.dispatch.id if g.dispatch is not None else -1,
                                   int(g.wave_ids[0])))
        return groups

    def _stack_of(self, wave) -> tuple[list[dict], bool]:
        """The frames of the wave's first active lane (lane 0 if none), and whether unwinding was needed."""
        active = np.nonzero(self.focus.active_lanes(wave))[0]
        lane = int(active[0]) if len(active) else 0
        try:
            frames = self.frames.frames(wave.id, lane)
        except AspaceError as e:
            return [{"name": f"<no stack: {e}>", "file": None, "line": None, "column": None}], False
        return ([{"name": f.name, "file": f.file, "line": f.line, "column": f.column} for f in frames],
                any(f.caller_state is not None for f in frames))

    def thread_names(self) -> list[str]:
        """thread_name of every wave, from the wave table (without building the waves)."""
        active, valid = self.lane_counts()
        return self.adapter.thread_names(self.state.wave_table(), active.tolist(), valid.tolist())

    def thread_name(self, wave) -> str:
        return self.adapter.thread_name(wave, int(self.focus.active_lanes(wave).sum()), int(wave.valid_lanes.sum()))
