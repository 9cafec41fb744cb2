"""Focus: the one wave, lane and frame every view follows, and which lanes of a wave are active.

Owns the focus (set at launch from the dump's own focus or the first active lane, moved by set_focus)
and each wave's active lanes as the compiler defines them, worked out once per wave.
"""

from __future__ import annotations

import numpy as np

from ..dwarf.evaluator import evaluate
from ..errors import AspaceError, StateError
from .programs import Part, Programs


class Focus(Part):
    def __init__(self, programs: Programs, wave: int | None, lane: int | None):
        super().__init__(programs)
        self.active_by_wave: dict[int, np.ndarray] = {}  # active_lanes() worked out so far
        self.lanes_by_wave: dict[int, int] = {}  # lane_count() of each wave's stopped function
        if not self.state.waves:
            raise StateError("the dump has no waves", "dispatches")
        focus = self.state.focus
        self.focus_wave = wave if wave is not None else (focus.wave if focus else self.state.waves[0].id)
        self.state.wave_by_id(self.focus_wave)
        self.focus_lane = lane if lane is not None else (focus.lane if focus else self._first_active(self.focus_wave))
        lanes = self.state.wave_by_id(self.focus_wave).lanes
        if not 0 <= self.focus_lane < lanes:
            raise AspaceError(f"lane {self.focus_lane} is outside wave {self.focus_wave}'s {lanes} lanes")
        self.focus_frame = 0

    def wave(self, wave_id: int | None = None):
        return self.state.wave_by_id(self.focus_wave if wave_id is None else wave_id)

    def _first_active(self, wave_id: int) -> int:
        active = np.nonzero(self.active_lanes(self.wave(wave_id)))[0]
        return int(active[0]) if len(active) else 0

    def active_lanes(self, wave) -> np.ndarray:
        """The lanes that are conceptually active: DW_AT_LLVM_active_lane of the stopped function when the
        compiler gives it (EXEC may be widened for whole-wave operations), else EXEC & valid lanes."""
        cached = self.active_by_wave.get(wave.id)
        if cached is not None:
            return cached
        mask = wave.active_lanes & (np.arange(wave.lanes) < self.lane_count(wave))
        try:
            program = self.programs.program_for(wave)
            pc = wave.pc
            info = next((f for f in self._frames_at_pc(wave) if f.active_lane_expr), None)
            if info is not None:
                res = evaluate(info.active_lane_expr, self.programs.target_for(wave, info.dialect), info.dialect,
                               np.array([0]), frame=self.programs.frame_context(program, info, pc), kind="value")
                if not res.errors:
                    bits = int(res.for_lane(0).bits[0])
                    count = self.lane_count(wave, info)  # the mask's bits: one per lane of the function
                    mask = np.array([lane < count and (bits >> lane) & 1 for lane in range(wave.lanes)], bool) \
                        & wave.valid_lanes
        except AspaceError as e:
            self.warnings.append(f"wave {wave.id}: DW_AT_LLVM_active_lane: {e}")
        self.active_by_wave[wave.id] = mask
        return mask

    def _frames_at_pc(self, wave) -> list:
        program = self.programs.program_for(wave)
        pc = wave.pc
        return program.index.frames_at(program.elf_pc(pc)) if program.index is not None and pc is not None else []

    def lane_count(self, wave, info=None) -> int:
        """How many lanes the stopped function has (or `info`'s, the frame whose lane vectors are read): its
        DW_AT_LLVM_lanes, the static lane count of DW_AT_LLVM_lane_pc's and DW_AT_LLVM_active_lane's vectors;
        where it gives none, the wavefront's (AMD's compilers describe whole waves). An ill-formed count (0,
        not an integer) is said once and the wavefront's is used; lanes past the count are no lanes of the
        function."""
        if info is None:
            if wave.id not in self.lanes_by_wave:
                try:
                    info = next((f for f in self._frames_at_pc(wave) if f.lanes is not None), None)
                except AspaceError:
                    info = None
                self.lanes_by_wave[wave.id] = self.lane_count(wave, info) if info is not None else wave.lanes
            return self.lanes_by_wave[wave.id]
        value = info.lanes
        if value is None:
            return wave.lanes
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            self._say(f"{info.function}: DW_AT_LLVM_lanes {value!r} is ill-formed (a positive lane count is "
                      f"required); wave {wave.id}'s {wave.lanes} lanes are used")
            return wave.lanes
        if value > wave.lanes:
            self._say(f"{info.function}: DW_AT_LLVM_lanes {value} is more than wave {wave.id}'s {wave.lanes} lanes")
            return wave.lanes
        return value

    def _say(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def lane_state(self, wave, lane: int) -> str:
        if not wave.valid_lanes[lane] or lane >= self.lane_count(wave):  # no lane of the stopped function
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
