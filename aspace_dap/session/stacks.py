"""Stacks: where thousands of waves stand, each distinct call stack worked out once.

A wave's place is its first active lane's call stack: the pc, the functions inlined there, and for a
wave in a called function its callers' return addresses. Waves of a dispatch at one pc in a kernel
share one stack (a kernel has no caller). In a called function the callers come from unwinding, which
reads the wave's registers (and sometimes its memory): one wave of the group is unwound while the
registers it reads are noted; then those registers of all the others are read in bulk, and only each
distinct combination of their bytes is unwound again. Unwinding is a function of what it reads, so
waves with the same bytes have the same stack. Where unwinding read memory, or the dump records a
wave's call stack itself (a CUDA core's backtraces), every wave is unwound on its own.
"""

from __future__ import annotations

import numpy as np

from ..errors import AspaceError
from .frames import Frame, Frames
from .programs import Programs


def frame_dicts(frames: list[Frame]) -> list[dict]:
    """Frames for display, innermost first: name, file, line, column, the runtime pc (None for a frame
    that stands for an unknown position) and whether the frame is inlined into the next one."""
    return [{"name": f.name, "file": f.file, "line": f.line, "column": f.column,
             "pc": None if f.note is not None else f.runtime_pc,
             "inlined": bool(f.info is not None and f.info.is_inlined)} for f in frames]


def stack_key(frames: list[dict]) -> tuple:
    """What tells two places apart: every frame's pc and function (inlined frames share their pc)."""
    return tuple((f["pc"], f["name"]) for f in frames)


class _Reads:
    """What unwinding one wave read of it: the registers it named, and whether it read anything else."""

    def __init__(self):
        self.registers: set[str] = set()
        self.other = False


class _Noting:
    """A wave target that notes the reads made through it (everything else goes to the target itself)."""

    def __init__(self, base, reads: _Reads):
        self._base, self._reads = base, reads

    def __getattr__(self, name):
        return getattr(self._base, name)

    def read_register(self, regno, lanes):
        self._reads.registers.add(self._base.register_info(regno).name)
        return self._base.read_register(regno, lanes)

    def read_memory(self, *args, **kwargs):
        self._reads.other = True
        return self._base.read_memory(*args, **kwargs)

    def read_generic(self, *args, **kwargs):
        self._reads.other = True
        return self._base.read_generic(*args, **kwargs)


class Stacks:
    def __init__(self, programs: Programs, frames: Frames):
        self.programs = programs
        self.state = programs.state
        self.frames = frames
        self._kernel: dict[tuple, list[dict]] = {}  # (program, pc, lane) -> the stack there, in a kernel

    def of_wave(self, wave, lane: int) -> list[dict]:
        """One wave's stack from `lane` (its first active lane)."""
        try:
            return frame_dicts(self.frames.frames(wave.id, lane))
        except AspaceError as e:
            return [{"name": f"<no stack: {e}>", "file": None, "line": None, "column": None, "pc": None,
                     "inlined": False}]

    def at(self, pc: int, lane: int, rows: np.ndarray) -> list[tuple[list[dict], np.ndarray]]:
        """The stacks of the waves at `rows` (indices into state.waves, of one dispatch), whose lane `lane`
        is their first active one and stands at runtime pc `pc`: [(stack, rows standing there)]."""
        waves = self.state.waves
        first = waves[int(rows[0])]
        try:
            program = self.programs.program_for(first)
        except AspaceError:
            program = None
        key = (id(program), pc, lane)
        known = self._kernel.get(key)
        if known is not None:
            return [(known, rows)]
        reads = _Reads()
        frames = self._noted(first, lane, reads)
        stack = frame_dicts(frames) if frames is not None else self.of_wave(first, lane)
        if frames is None or not any(f.caller_state is not None for f in frames):
            self._kernel[key] = stack  # no caller was unwound: the place is the pc
            return [(stack, rows)]
        # in a called function: a wave whose dump records its call stack (CUDA backtraces) is unwound
        # with it, on its own; the others share what the same register bytes unwind to
        recorded = np.array([waves[int(i)].records_stack for i in rows.tolist()], bool)
        out = [(stack, rows[:1])]
        for i in rows[1:][recorded[1:]].tolist():
            out.append((self.of_wave(waves[int(i)], lane), np.array([i])))
        shared = rows[1:][~recorded[1:]]
        if not len(shared):
            return out
        if recorded[0] or reads.other:  # what the first wave read does not tell the others' stacks
            return out + self._shared(shared, lane)
        groups = list(self._by_registers(np.concatenate((rows[:1], shared)), lane, reads.registers, stack))
        return groups + out[1:]

    def _shared(self, rows: np.ndarray, lane: int) -> list[tuple[list[dict], np.ndarray]]:
        """The stacks of waves that record none: one is unwound noting its reads; where they were only
        registers, the others are grouped by those registers' bytes, else each is unwound."""
        waves = self.state.waves
        reads = _Reads()
        frames = self._noted(waves[int(rows[0])], lane, reads)
        stack = frame_dicts(frames) if frames is not None else self.of_wave(waves[int(rows[0])], lane)
        if frames is None or reads.other:
            return [(stack, rows[:1])] + [(self.of_wave(waves[int(i)], lane), np.array([i]))
                                          for i in rows[1:].tolist()]
        return list(self._by_registers(rows, lane, reads.registers, stack))

    def _noted(self, wave, lane: int, reads: _Reads) -> list[Frame] | None:
        """The wave's frames, unwound through targets that note what is read; None when it has no stack."""
        programs = self.programs
        plain = programs.target_for

        def noting(w, dialect):
            target = plain(w, dialect)
            return _Noting(target, reads) if w is wave else target
        programs.target_for = noting  # (frames() reaches the wave's registers only through its targets)
        try:
            return self.frames.frames(wave.id, lane)
        except AspaceError:
            return None
        finally:
            del programs.target_for

    def _by_registers(self, rows: np.ndarray, lane: int, names, first_stack: list[dict]):
        """Waves whose unwinding reads the same register bytes share a stack; `first_stack` is rows[0]'s."""
        columns = []
        for data, valid in self.state.register_bytes(rows, sorted(names)):
            columns += [np.where(valid, data, 0), valid.view(np.uint8)]
        if not columns:
            yield first_stack, rows
            return
        joined = np.ascontiguousarray(np.concatenate(columns, axis=1))
        as_rows = joined.view(np.dtype((np.void, joined.shape[1]))).ravel()
        _, first, inverse = np.unique(as_rows, return_index=True, return_inverse=True)
        waves = self.state.waves
        for k, at in enumerate(first.tolist()):
            members = rows[inverse.ravel() == k]
            stack = first_stack if at == 0 else self.of_wave(waves[int(rows[at])], lane)
            yield stack, members
