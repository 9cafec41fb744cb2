"""findLanes and the REPL's `find EXPR`: the lanes of every wave where an expression is true.

The request answers `{expression, matched, unevaluated, searched, waves, matchedWaves, reasons: [{reason,
count}], lanes: [{threadId, waveId, lane, value}], groups: [...]}`: the lanes where it could not be
evaluated are counted apart, with their reasons; `lanes` are the first `limit` matches in wave and
lane order; `groups` are the wave groups (as waveGroups has them, same ids) holding a match, each with
its matching lanes and waves. A long search reports DAP progress (when the client supports it) and
stops at a `cancel` of the request or of its progress.
"""

from __future__ import annotations

from ..find_lanes import DEFAULT_LIMIT, LanesFound, Throttle, find_lanes
from ..names import display_name
from ..session import Session
from .connection import state_of
from .dispatch import HandlerTable
from .errors import ArgumentError
from .inputs import parsed
from .refs import thread_id
from .waves import GROUP_WAVES_SHOWN, coalesce_ranges, group_body, plural, where_text

requests = HandlerTable()

MAX_LIMIT = 10_000  # lanes one answer lists


@requests.request("findLanes", required={"expression": str}, optional={"limit": int})
def find_lanes_request(ctx, args):
    s = state_of(ctx).need()
    limit = args.get("limit", DEFAULT_LIMIT)
    if not 0 <= limit <= MAX_LIMIT:
        raise ArgumentError(f"findLanes: limit must be between 0 and {MAX_LIMIT}, not {limit}")
    text = args["expression"]
    pid = ctx.progress_start(f"Finding lanes where {text}", cancellable=True)

    def report(done: int, total: int) -> None:
        ctx.progress_update(pid, f"{done:,} of {total:,} lanes", 100.0 * done / total if total else 100.0)
    try:
        found = parsed(find_lanes, s, text, limit, progress=Throttle(report))
    finally:
        ctx.progress_end(pid)
    return found_body(s, found)


def found_body(s: Session, found: LanesFound) -> dict:
    groups = []
    for g in found.groups:
        body = group_body(s, g.index, g.group, full=False)
        body.update({"matchedLanes": g.lanes, "matchedWaveCount": len(g.wave_ids),
                     "matchedWaveIds": g.wave_ids[:GROUP_WAVES_SHOWN].tolist(),
                     "matchedThreadIds": [thread_id(w) for w in g.wave_ids[:GROUP_WAVES_SHOWN].tolist()],
                     "matchedWaveRanges": coalesce_ranges(g.wave_ids)})
        groups.append(body)
    return {"expression": found.expression, "matched": found.matched, "unevaluated": found.unevaluated,
            "searched": found.searched, "waves": found.waves, "matchedWaves": found.matched_waves,
            "reasons": [{"reason": r, "count": n} for r, n in found.reasons],
            "lanes": [{"threadId": thread_id(w), "waveId": w, "lane": lane, "value": value}
                      for w, lane, value in found.lanes],
            "groups": groups, "waveWord": s.adapter.wave_word}


def find_text(s: Session, text: str, limit: int = DEFAULT_LIMIT) -> str:
    """`find EXPR` in the Debug Console: the counts, the reasons, the groups, the first lanes."""
    found = parsed(find_lanes, s, text, limit)
    word = s.adapter.wave_word
    lines = [f"find {text}: {found.matched:,} {plural('lane', found.matched)} in {found.matched_waves:,} "
             f"{plural(word, found.matched_waves)} (of {found.searched:,} active {plural('lane', found.searched)} "
             f"in {found.waves:,} {plural(word, found.waves)})"]
    if found.unevaluated:
        lines.append(f"{found.unevaluated:,} {plural('lane', found.unevaluated)} could not be evaluated:")
        lines += [f"  {n:>9,}  {reason}" for reason, n in found.reasons]
    if found.groups:
        lines.append(f"  {plural(word, 2).capitalize():>7}  {'Lanes':>9}  Dispatch  Where")
        for g in found.groups:
            dispatch = f"{g.group.dispatch.id} {display_name(g.group.dispatch.kernel)}" if g.group.dispatch is not None else "-"
            mark = "*" if (g.group.wave_ids == s.focus_wave).any() else " "
            lines.append(f"{mark} {len(g.wave_ids):>7}  {g.lanes:>9}  {dispatch}  {where_text(g.group.frames)}")
            lines.append(f"  {'':>7}  {plural(word, 2)} {coalesce_ranges(g.wave_ids)}")
    if found.lanes:
        lines.append(f"first {len(found.lanes)} {plural('lane', len(found.lanes))}:")
        lines += [f"  {word} {w} lane {lane}: {value}" for w, lane, value in found.lanes]
    return "\n".join(lines)
