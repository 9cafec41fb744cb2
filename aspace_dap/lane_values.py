"""An expression in every lane of a wave (the all-lanes view: DAP `laneValues`, `inspect --all-lanes`).

Each lane is evaluated where it stands. Lanes at the stop's PC share the frame the client looks at;
a lane with its own PC (the dump's `lane_pcs`, a CUDA core's lane rows, DW_AT_LLVM_lane_pc) is
evaluated at that PC, in its own frames, as cuda-gdb evaluates a thread at its own virtual PC: its
innermost frame for the innermost frame, for a caller frame the frame of the same function at the
same depth of its stack. Only a lane whose position is unknown (no PC in the dump for an inactive
lane of a target whose lanes run apart) has no value for the frame's variables. Registers, addresses
and the GPU builtins do not depend on where a lane is: they are read for every lane at once.
"""

from __future__ import annotations

import numpy as np

from .builtins import CONVENIENCE, FUNCTIONS, VARIABLES
from .deadline import TimeLimitExceeded, evaluation_time
from .errors import AspaceError, EvaluationError
from .expressions import BUILTIN_TYPES, _Divergent, evaluate_expression, tokenize
from .values.format import format_obj

_NOT_VARIABLES = frozenset(BUILTIN_TYPES) | VARIABLES | FUNCTIONS | CONVENIENCE | {"true", "false"}


def lane_values(session, text: str, *, wave_id: int | None = None, frame_index: int = 0) -> list[dict]:
    """The expression in every lane of a wave: [{lane, active, value, type}]."""
    with evaluation_time():  # one budget for every lane, the lane-by-lane retry included
        return _lane_values(session, text, wave_id, frame_index)


def _lane_values(session, text: str, wave_id: int | None, frame_index: int) -> list[dict]:
    wave = session.wave(wave_id)
    frames = session.frames(wave.id, session.focus_lane)
    if frames and frames[0].note is not None:  # the focus lane is elsewhere: the wave's stop frames
        active = np.nonzero(session.active_lanes(wave))[0]
        frames = session.frames(wave.id, int(active[0])) if len(active) else frames
    frame = frames[min(frame_index, len(frames) - 1)] if frames else None
    here = frames[0].runtime_pc if frames and frames[0].note is None else None
    names_variable = _names_variable(text)
    if not names_variable or here is None:
        return _rows_at(session, wave, text, frame, np.arange(wave.lanes))
    by_place: dict[int | None, list[int]] = {}
    for lane in range(wave.lanes):
        by_place.setdefault(session.lane_pc(wave, lane), []).append(lane)
    rows: dict[int, dict] = {}
    for pc, lanes in by_place.items():
        if pc == here:  # the frame the client looks at; its errors are the request's
            rows.update((r["lane"], r) for r in _rows_at(session, wave, text, frame, np.array(lanes)))
            continue
        if pc is None:
            rows.update((lane, _row(session, wave, lane, f"<unavailable: lane {lane} is not at this stop; "
                                                         "the dump has no pc for it>")) for lane in lanes)
            continue
        own = session.frames(wave.id, lanes[0])
        where = f"{own[0].name} line {own[0].line}" if own and own[0].line else (own[0].name if own else "?")
        lane_frame = _same_frame(own, frames, frame)
        if lane_frame is None:
            rows.update((lane, _row(session, wave, lane, f"<unavailable: lane {lane} is at 0x{pc:x} ({where}), "
                                                         f"outside {frame.function}>")) for lane in lanes)
            continue
        try:
            rows.update((r["lane"], r) for r in _rows_at(session, wave, text, lane_frame, np.array(lanes)))
        except TimeLimitExceeded:
            raise
        except AspaceError as e:  # a name this lane's own frame does not know
            rows.update((lane, _row(session, wave, lane, f"<error: {e} (lane {lane} is in {where})>"))
                        for lane in lanes)
    return [rows[lane] for lane in range(wave.lanes)]


def _names_variable(text: str) -> bool:
    """Whether the expression names a program variable (a member after `.` or `->` is no name)."""
    tokens = tokenize(text)
    return any(kind == "id" and value not in _NOT_VARIABLES and (i == 0 or tokens[i - 1][1] not in (".", "->"))
               for i, (kind, value) in enumerate(tokens))


def _same_frame(own: list, frames: list, frame):
    """In a lane's own stack, the frame that stands for `frame` of the stop's stack: the innermost
    for the innermost; for a caller, the frame of the same function at the same depth from the
    outermost. None when the lane's stack has no such frame."""
    if not own or own[0].note is not None:
        return None
    if frame is frames[0]:
        return own[0]
    depth = len(frames) - 1 - frame.index
    if depth >= len(own):
        return None
    mine = own[len(own) - 1 - depth]
    return mine if mine.function == frame.function else None


def _row(session, wave, lane: int, value: str, tname: str = "") -> dict:
    return {"lane": lane, "active": bool(session.active_lanes(wave)[lane]), "value": value, "type": tname}


def _rows_at(session, wave, text, frame, lanes: np.ndarray) -> list[dict]:
    try:
        obj = evaluate_expression(session, text, frame=frame, lanes=lanes)
        tname = obj.type.display_name()
        return [_row(session, wave, int(lane), format_obj(obj, i), tname) for i, lane in enumerate(lanes)]
    except TimeLimitExceeded:
        raise
    except (_Divergent, EvaluationError):
        rows = []
        for lane in lanes:
            try:
                obj = evaluate_expression(session, text, frame=frame, lanes=[int(lane)])
                value, tname = format_obj(obj, 0), obj.type.display_name()
            except TimeLimitExceeded:
                raise  # the budget was for all lanes together
            except (AspaceError, _Divergent) as e:
                value, tname = f"<error: {e}>", ""
            rows.append(_row(session, wave, int(lane), value, tname))
        return rows
