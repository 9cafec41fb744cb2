"""The focus (the one wave and lane every view follows) as the client is told about it: `stopped`
events for the focused wave, and change_focus, the one place the focus moves and is announced."""

from __future__ import annotations

from ..session import Session
from .connection import DebugState
from .refs import thread_id

STOP_BADGES = {"exception": "Exception", "breakpoint": "Breakpoint", "function breakpoint": "Breakpoint",
               "data breakpoint": "Data breakpoint", "step": "Step", "entry": "Entry", "goto": "Goto"}


def stopped(st: DebugState, s: Session, *, all_threads: bool = True, reason: str | None = None) -> tuple:
    """A `stopped` event for the focused wave, remembered as not yet looked at.

    `description` is the short badge clients print next to the thread (VS Code upper-cases it in the
    Call Stack, where a long one hides the wave's name); the dump's full stop text goes in `text`.
    """
    stop = s.state.stop
    dump_reason = stop.reason if stop and stop.reason else "pause"
    reason = reason or dump_reason
    wave = s.wave()
    lane = f"lane {s.focus_lane} ({s.lane_state(wave, s.focus_lane)})"
    full = s.stop_text()
    body = {"reason": reason, "threadId": thread_id(wave.id),
            "description": STOP_BADGES.get(dump_reason, "Paused"),
            "text": f"{full} · {lane}" if full else lane}
    if all_threads:
        body["allThreadsStopped"] = True
    st.unseen_stop = body["threadId"]
    st.stopped_threads.add(body["threadId"])
    return ("stopped", body)


def _focus_body(s: Session) -> dict:
    w = s.wave()
    return {"threadId": thread_id(w.id), "lane": s.focus_lane, "active": bool(s.active_lanes(w)[s.focus_lane]),
            "lanes": w.lanes}


def change_focus(ctx, st: DebugState, s: Session, *, wave: int | None = None, lane: int | None = None,
                 client_follows: bool = False) -> dict:
    """The one place the focus changes (REPL `wave`/`lane`, setFocus, a frame selected in another wave).

    Every change is announced with a `focus` event (the extension's status bar, lanes view and panels
    follow it). Unless the client made the change itself, it is also told to refresh: another wave
    becomes the stopped thread (`stopped` without allThreadsStopped, which nvim-dap does not answer
    with `continue`), another lane of the same wave is an `invalidated` (or a `stopped` of the same
    thread for clients without it). Returns the focus event's body.
    """
    before = (s.focus_wave, s.focus_lane)
    s.set_focus(wave=wave, lane=lane)
    body = _focus_body(s)
    if (s.focus_wave, s.focus_lane) == before and client_follows:
        return body
    st.reset_views()
    ctx.send_event("focus", body)
    invalidates = bool(ctx.client_capabilities.get("supportsInvalidatedEvent"))
    if invalidates and s.focus_wave != before[0]:
        # VS Code re-reads only the first stop it holds when `invalidated` arrives, and focuses its
        # thread: the old waves' stops are withdrawn (`continued` for each) and the focused wave's
        # announced, so later refreshes stay on it. A client that selected the frame keeps it.
        for tid in sorted(st.stopped_threads - {body["threadId"]}):
            ctx.send_event("continued", {"threadId": tid, "allThreadsContinued": False})
        event = stopped(st, s, reason="pause")
        event[1]["preserveFocusHint"] = client_follows
        ctx.send_event(*event)
        st.focus_generation += 1
        return body
    if client_follows:
        return body
    st.focus_generation += 1
    if s.focus_wave != before[0]:
        ctx.send_event(*stopped(st, s, all_threads=False, reason="pause"))
    elif invalidates:
        ctx.send_event("invalidated", {"areas": ["threads", "stacks", "variables"], "threadId": body["threadId"]})
    else:
        ctx.send_event(*stopped(st, s, all_threads=False, reason="pause"))
    return body
