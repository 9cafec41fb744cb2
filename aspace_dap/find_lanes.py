"""find EXPR: the lanes of a whole dump where an expression is true (DAP `findLanes`, the REPL's `find`).

Every active lane of every wave is evaluated where it stands: at its own pc, in its innermost frame
there, as the all-lanes view evaluates a lane (lane_values.py). Lanes are taken place by place (a pc
of a dispatch's code, session/find.py); at each place the expression is computed once for all its
lanes of all its waves (vector_expressions.py over session/stacked.py), or, where that cannot follow
expressions.py's rules, wave by wave with expressions.py itself. A lane where the expression has no
value (a name its function does not have, bytes the dump does not hold, a division by zero) is counted
apart with the reason, never matched. A lane matches where the value is true in C's sense.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import limits
from .deadline import TimeLimitExceeded, check_time, work_time
from .dwarf.storage import OK
from .errors import AspaceError, EvaluationError
from .expressions import BUILTIN_TYPES, _Divergent, _numbers, evaluate_expression
from .values.format import format_obj, state_text
from .vector_expressions import NotVectorized, Reasons, evaluate, names, parse, row_bytes

DEFAULT_LIMIT = 20


@dataclass
class FoundGroup:
    """The matching lanes of one wave group (session.wave_groups()), by where they stand."""

    index: int
    group: object
    wave_ids: np.ndarray  # the group's waves with a matching lane
    lanes: int            # matching lanes in them


@dataclass
class LanesFound:
    expression: str
    searched: int                           # active lanes evaluated
    waves: int                              # waves with an active lane
    matched: int
    unevaluated: int
    reasons: list[tuple[str, int]] = field(default_factory=list)  # why lanes have no value, most first
    lanes: list[tuple[int, int, str]] = field(default_factory=list)  # (wave id, lane, value), first `limit`
    groups: list[FoundGroup] = field(default_factory=list)
    matched_waves: int = 0


def check_syntax(text: str) -> None:
    """Refuse what is no expression at all (the request fails); a name or type a place lacks is that
    place's reason instead."""
    problem = None
    for is_type in (lambda name: BUILTIN_TYPES.get(name), lambda name: BUILTIN_TYPES["int"]):
        try:
            parse(text, is_type)
            return
        except AspaceError as e:
            problem = problem or e
    raise problem


def find_lanes(session, text: str, limit: int = DEFAULT_LIMIT,
               progress: Callable[[int, int], None] | None = None) -> LanesFound:
    check_syntax(text)
    with work_time("find", limits.MAX_FIND_SECONDS, "MAX_FIND_SECONDS"):
        return _find(session, text, max(0, limit), progress)


def _find(session, text, limit, progress) -> LanesFound:
    places, unplaced = session.lane_places()
    total = sum(len(p.waves) for p in places) + sum(len(u.waves) for u in unplaced)
    reasons = Reasons()
    hits, bads, formatters = [], [], []
    done = 0
    for k, place in enumerate(places):
        check_time()
        truth, bad, value_of = _at_place(session, place, text, reasons)
        rows = np.flatnonzero(truth & (bad == 0))
        hits.append((place.waves[rows], place.lanes[rows], np.full(len(rows), k, np.int64), rows))
        bads.append(bad)
        formatters.append(value_of)
        done += len(place.waves)
        if progress is not None:
            progress(done, total)
    for u in unplaced:
        bads.append(np.full(len(u.waves), reasons.code(u.reason), np.int32))
    every_bad = np.concatenate(bads) if bads else np.zeros(0, np.int32)
    counts = np.bincount(every_bad, minlength=len(reasons.texts))
    ids = session.wave_ids()
    seen = np.zeros(len(ids), bool)
    for rows in [p.waves for p in places] + [u.waves for u in unplaced]:
        seen[rows] = True
    found = LanesFound(text, total, int(seen.sum()), 0, int((every_bad != 0).sum()))
    found.reasons = sorted(((reasons.texts[c], int(n)) for c, n in enumerate(counts.tolist()) if c and n),
                           key=lambda r: (-r[1], r[0]))
    waves = np.concatenate([h[0] for h in hits]) if hits else np.zeros(0, np.int64)
    lanes = np.concatenate([h[1] for h in hits]) if hits else np.zeros(0, np.int64)
    found.matched = len(waves)
    order = np.lexsort((lanes, waves))[:limit]
    place_of = np.concatenate([h[2] for h in hits]) if hits else np.zeros(0, np.int64)
    row_of = np.concatenate([h[3] for h in hits]) if hits else np.zeros(0, np.int64)
    for i in order.tolist():
        value = formatters[int(place_of[i])](np.array([row_of[i]]))[0]
        found.lanes.append((int(ids[int(waves[i])]), int(lanes[i]), value))
    per_wave = np.bincount(waves, minlength=len(ids)) if len(waves) else np.zeros(len(ids), np.int64)
    found.matched_waves = int((per_wave > 0).sum())
    if found.matched:
        for n, group in enumerate(session.wave_groups()):
            rows = np.flatnonzero(np.isin(ids, group.wave_ids))
            mine = rows[per_wave[rows] > 0]
            if len(mine):
                found.groups.append(FoundGroup(n, group, ids[mine], int(per_wave[mine].sum())))
    return found


def _at_place(session, place, text, reasons: Reasons):
    """(matched, reason code per row, value texts of rows) for one place."""
    n = len(place.waves)
    try:
        leaves = session.place_leaves(place, reasons)
        tree = parse(text, leaves.find_type)
        leaves.prefetch(tree)
        num = evaluate(tree, leaves, reasons)
        truth = num.values != 0
        return truth, num.bad, lambda rows: _texts(num, rows)
    except TimeLimitExceeded:
        raise
    except NotVectorized:
        # a name the place's function does not have fails every lane here, as expressions.py fails it
        missing = next((name for name in names(tree) if not leaves.knows(name)), None)
        if missing is not None:
            return (np.zeros(n, bool), np.full(n, reasons.code(f'no symbol "{missing}" in current context'), np.int32),
                    lambda rows: [])
        return _wave_by_wave(session, place, text, reasons)
    except AspaceError as e:  # the same for every lane here: a name the function lacks, a type error
        return np.zeros(n, bool), np.full(n, reasons.code(str(e)), np.int32), lambda rows: []


def _texts(num, rows) -> list[str]:
    obj = row_bytes(num, rows)
    return [format_obj(obj, i) for i in range(len(rows))]


def _wave_by_wave(session, place, text, reasons: Reasons):
    """expressions.py in each wave's own frame, for the wave's lanes at the place."""
    n = len(place.waves)
    truth = np.zeros(n, bool)
    bad = np.zeros(n, np.int32)
    values: dict[int, str] = {}
    for w in np.unique(place.waves).tolist():
        check_time()
        rows = np.flatnonzero(place.waves == w)
        frame = session.place_frame(place, int(rows[0]))
        for row, value, reason in _lanes_of(session, text, frame, place.lanes[rows], rows):
            if reason is not None:
                bad[row] = reasons.code(reason)
            else:
                truth[row] = bool(value[0])
                values[row] = value[1]
    return truth, bad, lambda rows: [values.get(int(r), "") for r in rows]


def _lanes_of(session, text, frame, lanes: np.ndarray, rows: np.ndarray):
    """(row, (number, text) or None, reason or None) of each lane, as lane_values evaluates them:
    all lanes at once, else lane by lane."""
    try:
        obj = evaluate_expression(session, text, frame=frame, lanes=lanes)
        return list(_numbers_of(obj, rows))
    except TimeLimitExceeded:
        raise
    except (_Divergent, EvaluationError):
        out = []
        for lane, row in zip(lanes.tolist(), rows.tolist()):
            try:
                obj = evaluate_expression(session, text, frame=frame, lanes=[lane])
                out.extend(_numbers_of(obj, [row]))
            except TimeLimitExceeded:
                raise
            except (AspaceError, _Divergent) as e:
                out.append((row, None, str(e) if isinstance(e, AspaceError) else "the lanes' values differ in shape"))
        return out
    except AspaceError as e:
        return [(row, None, str(e)) for row in rows.tolist()]


def _numbers_of(obj, rows):
    numbers = _numbers(obj)
    _, states = obj.bytes()
    for i, row in enumerate(rows):
        row = int(row)
        if numbers[i] is None:
            worst = int(states[i].max()) if states.shape[1] else OK
            yield row, None, obj.error or state_text(worst)
        else:
            yield row, (numbers[i], format_obj(obj, i)), None


class Throttle:
    """Progress reports at most every `every` seconds (and the last), for a client's progress bar."""

    def __init__(self, report: Callable[[int, int], None], every: float = 0.25):
        self.report, self.every, self.last = report, every, 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self.last >= self.every:
            self.last = now
            self.report(done, total)
