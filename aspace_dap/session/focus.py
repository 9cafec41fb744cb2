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
        mask = wave.active_lanes
        try:
            program = self.programs.program_for(wave)
            pc = wave.pc
            frames = program.index.frames_at(program.elf_pc(pc)) if program.index is not None and pc is not None else []
            info = next((f for f in frames if f.active_lane_expr), None)
            if info is not None:
                res = evaluate(info.active_lane_expr, self.programs.target_for(wave, info.dialect), info.dialect,
                               np.array([0]), frame=self.programs.frame_context(program, info, pc), kind="value")
                if not res.errors:
                    bits = int(res.for_lane(0).bits[0])
                    mask = np.array([(bits >> lane) & 1 for lane in range(wave.lanes)], bool) & wave.valid_lanes
        except AspaceError as e:
            self.warnings.append(f"wave {wave.id}: DW_AT_LLVM_active_lane: {e}")
        self.active_by_wave[wave.id] = mask
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
