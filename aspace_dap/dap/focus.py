"""The focus (the one wave and lane every view follows) as the client is told about it: `stopped`
events for the focused wave, the stop's badge kept on the waves the dump stopped in, and
change_focus, the one place the focus moves and is announced."""

from __future__ import annotations

from ..session import Session
from .connection import DebugState
from .refs import thread_id

STOP_BADGES = {"exception": "Exception", "breakpoint": "Breakpoint", "function breakpoint": "Breakpoint",
               "data breakpoint": "Data breakpoint", "step": "Step", "entry": "Entry", "goto": "Goto"}
FOCUS_BADGE = "Paused"  # a focused wave the dump did not stop in: the focus shows elsewhere (status bar, GPU Waves)
BADGED_WAVES = 32  # waves of an exception's group that keep its badge; each costs VS Code a threads and a stackTrace


def _dump_reason(s: Session) -> str:
    stop = s.state.stop
    return stop.reason if stop and stop.reason else "pause"


def stopped(st: DebugState, s: Session, *, all_threads: bool = True, reason: str | None = None) -> tuple:
    """A `stopped` event for the focused wave, remembered as not yet looked at.

    `description` is the short badge clients print next to the thread (VS Code upper-cases it in the
    Call Stack, where a long one hides the wave's name): the dump's stop reason on a wave the dump
    stopped in (stop_badges keeps it there when the focus moves on), "Paused" on any other; the
    dump's full stop text goes in `text`. A focused wave the stop does not belong to is stopped with
    reason `pause`: it raised no exception, so no exception widget is asked for.
    """
    dump_reason = _dump_reason(s)
    wave = s.wave()
    lane = f"lane {s.focus_lane} ({s.lane_state(wave, s.focus_lane)})"
    owns = wave.id in s.stop_waves()
    full = s.stop_text() if owns else ""
    body = {"reason": (reason or dump_reason) if owns else "pause", "threadId": thread_id(wave.id),
            "description": STOP_BADGES.get(dump_reason, "Paused") if owns else FOCUS_BADGE,
            "text": f"{full} · {lane}" if full else lane}
    if all_threads:
        body["allThreadsStopped"] = True
    st.unseen_stop = body["threadId"]
    st.stopped_threads.add(body["threadId"])
    return ("stopped", body)


def stop_badges(ctx, st: DebugState, s: Session) -> list[tuple]:
    """`stopped` events that put the dump's stop reason back on the waves it belongs to, other than
    the focused one, for clients that draw a badge per thread (VS Code, told apart by
    `supportsInvalidatedEvent`): VS Code's `stopped` with allThreadsStopped keeps only the reason of
    the other threads, and a `continued` clears it. Each is one thread's stop with
    `preserveFocusHint`, so the focus stays where it is. Clients without it (nvim-dap) answer a stop
    of a second thread with `continue`, and draw no badge: they get none."""
    if not ctx.client_capabilities.get("supportsInvalidatedEvent"):
        return []
    dump_reason = _dump_reason(s)
    if dump_reason == "pause":
        return []
    badge, full = STOP_BADGES.get(dump_reason, "Paused"), s.stop_text()
    events = []
    for wave_id in s.stop_waves()[:BADGED_WAVES]:
        tid = thread_id(wave_id)
        if wave_id == s.focus_wave:
            continue
        st.stopped_threads.add(tid)
        events.append(("stopped", {"reason": dump_reason, "threadId": tid, "description": badge, "text": full,
                                   "preserveFocusHint": True, "allThreadsStopped": False}))
    return events


def _focus_body(s: Session) -> dict:
    w = s.wave()
    return {"threadId": thread_id(w.id), "lane": s.focus_lane, "active": bool(s.active_lanes(w)[s.focus_lane]),
            "lanes": w.lanes}


def change_focus(ctx, st: DebugState, s: Session, *, wave: int | None = None, lane: int | None = None,
                 client_follows: bool = False) -> dict:
    """The one place the focus changes (REPL `wave`/`lane`, setFocus, a frame selected in another wave).

    Every change is announced with a `focus` event (the extension's status bar, lanes view and panels
    follow it). A change the client made itself (it selected a frame of another wave) is left at
    that: the client already shows it. Any other change, even to the wave and lane already focused,
    makes the focused wave the one stopped thread, whose top frame the client selects:

    - clients with `supportsInvalidatedEvent` (VS Code) get a `continued` for every thread a stop
      named, then a `stopped` for the focused wave, then the stop's badge on the waves the dump
      stopped in (stop_badges). VS Code keeps a list of stops and, on
      `invalidated`, drops its threads and replays the first stop it holds (a replayed
      `preserveFocusHint` leaves it on a discarded thread, shown running): so no `invalidated` is
      sent, and the list is left holding just the focused wave's stop.
    - other clients (nvim-dap, dape) get a `thread` event (reason `started`) for each other thread a
      stop named, then a `stopped` for the focused wave with `allThreadsStopped`. nvim-dap jumps to a
      stop only when its reason is not `pause` or all threads stopped, and answers a stop of a second
      thread with `continue` while one is stopped; its `thread` handler is what forgets the stopped
      thread (0.6.0's `continued` does not), after which the stop is shown: the cursor, `.frames`,
      `.scopes` and the scopes sidebar follow.

    Returns the focus event's body.
    """
    before = (s.focus_wave, s.focus_lane)
    s.set_focus(wave=wave, lane=lane)
    body = _focus_body(s)
    if (s.focus_wave, s.focus_lane) == before and client_follows:
        return body
    st.reset_views()
    ctx.send_event("focus", body)
    if client_follows:
        return body
    st.focus_generation += 1
    focused = body["threadId"]
    if ctx.client_capabilities.get("supportsInvalidatedEvent"):
        for tid in sorted(st.stopped_threads):
            ctx.send_event("continued", {"threadId": tid, "allThreadsContinued": False})
        st.stopped_threads.clear()
    else:
        for tid in sorted(st.stopped_threads - {focused}):
            ctx.send_event("thread", {"reason": "started", "threadId": tid})
        st.stopped_threads &= {focused}
    event = stopped(st, s, reason="pause")
    event[1]["preserveFocusHint"] = False
    ctx.send_event(*event)
    for badge in stop_badges(ctx, st, s):
        ctx.send_event(*badge)
    return body
