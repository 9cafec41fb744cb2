"""One focus, owned by the server, seen by clients with and without `invalidated`.

`NvimDap060` replays what nvim-dap 0.6.0 does with the events (lua/dap/session.lua of that
release): it sends no `supportsInvalidatedEvent`; on `stopped` it computes
`should_jump = reason ~= 'pause' or allThreadsStopped`, and when a thread is already stopped and
should_jump holds it answers with `continue {threadId = <the new thread>}` instead of showing it
(auto_continue_if_many_stopped); otherwise it fetches the thread's stack and, when jumping, takes
its top frame as the frame every REPL evaluation names. Its `continue` first forgets the stopped
thread (clear_running). `strict=True` is the blunter client the reports describe: any `stopped`
for another thread while one is stopped is answered with `continue`.

Expected values come from the kernel: lds_tiles runs 16x16 blocks on wave64, so wave w holds
threadIdx.y = 4w .. 4w+3 and lane L has threadIdx.x = L % 16, threadIdx.y = 4w + L // 16.
"""

import os

import pytest

from dap_client import REPO_ROOT, launched

DUMP = os.path.join(REPO_ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0")  # focus: wave 1, lane 2


def ty_of(wave: int, lane: int) -> int:
    return 4 * wave + lane // 16


class NvimDap060:
    def __init__(self, strict: bool = False):
        self.strict = strict
        self.c, first = launched(DUMP)  # no supportsInvalidatedEvent
        self.handled = 0
        self.stopped_thread_id = None
        self.current_frame = None
        self.continues: list[int] = []
        self.on_stopped(first)
        self.handled = len(self.c.events("stopped"))

    # ---- what the client does with events ----

    def on_stopped(self, body):
        tid = body["threadId"]
        should_jump = body["reason"] != "pause" or bool(body.get("allThreadsStopped"))
        other_thread = self.stopped_thread_id is not None and self.stopped_thread_id != tid
        if self.stopped_thread_id is not None and (should_jump or (self.strict and other_thread)):
            self.continues.append(tid)
            self.c.request("continue", {"threadId": tid})
            return
        if should_jump:
            self.stopped_thread_id = tid
        frames = self.c.request("stackTrace", {"threadId": tid})["stackFrames"]
        if should_jump:
            self.current_frame = frames[0]["id"]
            self.c.request("scopes", {"frameId": self.current_frame})

    def pump(self):
        """Handle every `stopped` event that arrived (a `threads` request first: its answer follows them)."""
        self.c.request("threads")
        while self.handled < len(self.c.events("stopped")):
            body = self.c.events("stopped")[self.handled]["body"]
            self.handled += 1
            self.on_stopped(body)
            self.c.request("threads")

    # ---- what the user does ----

    def repl(self, text):
        out = self.c.request("evaluate", {"expression": text, "context": "repl", "frameId": self.current_frame})
        self.pump()
        return out["result"]

    def user_continue(self):
        tid, self.stopped_thread_id = self.stopped_thread_id, None  # clear_running
        response = self.c.request_raw("continue", {"threadId": tid})
        self.pump()
        return response


@pytest.mark.parametrize("strict", [False, True], ids=["nvim-dap-0.6.0", "continue-any-other-thread"])
def test_wave_switch_without_invalidated(strict):
    client = NvimDap060(strict)
    c = client.c
    try:
        assert client.repl("ty") == str(ty_of(1, 2))
        assert "lane 2" in client.repl("wave 3")
        # the next evaluation, still naming wave 1's frame, runs in the focused wave
        assert client.repl("ty") == str(ty_of(3, 2))
        assert client.repl("$lane") == "2"
        assert client.repl("info waves").splitlines()[-1].startswith("* focus: AMDGPU Wave 0:0:0:3 ")
        if strict:
            assert client.continues == [4]  # declined once, and not stopped again: no loop
        else:
            assert client.continues == []
        # lanes move within the focused wave
        client.repl("lane 17")
        assert client.repl("ty") == str(ty_of(3, 17))
        # continue: a success answer, a console line saying why, and the session stopped again
        # on the focused wave, which the client now shows
        response = client.user_continue()
        assert response["success"]
        assert any("cannot resume" in e["body"]["output"] for e in c.events("output"))
        assert client.stopped_thread_id == 4
        frames = c.request("stackTrace", {"threadId": 4})["stackFrames"]
        assert client.current_frame == frames[0]["id"]
        assert client.repl("ty") == str(ty_of(3, 17))
        # stepping too leaves it stopped
        assert c.request_raw("next", {"threadId": 4})["success"]
        client.pump()
        assert client.stopped_thread_id == 4 or client.continues
        c.request("disconnect")
    finally:
        c.close()


def test_every_focus_change_is_announced_and_followed():
    """VS Code's order: invalidated supported; a frame selected in another wave moves the focus."""
    c, stopped = launched(DUMP, supportsInvalidatedEvent=True)
    try:
        tid = stopped["threadId"]
        assert tid == 2
        # Call Stack: VS Code fetches wave 0's stack and the user selects its top frame
        frame = c.request("stackTrace", {"threadId": 1})["stackFrames"][0]["id"]
        c.request("scopes", {"frameId": frame})
        focus = c.wait_event("focus")["body"]
        assert focus["threadId"] == 1 and focus["lane"] == 2
        # the selection stays where the user put it; wave 1's stop is withdrawn, wave 0's announced
        assert c.events("continued")[-1]["body"]["threadId"] == 2
        assert c.events("stopped")[-1]["body"]["threadId"] == 1
        assert c.events("stopped")[-1]["body"]["preserveFocusHint"] is True
        waves = c.request("evaluate", {"expression": "info waves", "context": "repl"})["result"]
        assert waves.splitlines()[-1].startswith("* focus: AMDGPU Wave 0:0:0:0 ")
        # `lane 7` now stays in wave 0 and announces a refresh of the same thread
        c.request("evaluate", {"expression": "lane 7", "context": "repl", "frameId": frame})
        assert c.wait_event("focus")["body"]["lane"] == 7
        assert c.wait_event("invalidated")["body"]["threadId"] == 1
        assert c.request("evaluate", {"expression": "ty", "frameId": frame})["result"] == str(ty_of(0, 7))
        # `wave 2` from the REPL: the client is told to show wave 2: the older stops are withdrawn
        # (VS Code re-reads only its first stop on `invalidated`) and wave 2's stop, to focus, announced
        c.request("evaluate", {"expression": "wave 2", "context": "repl", "frameId": frame})
        assert c.wait_event("focus")["body"]["threadId"] == 3
        moved = c.events("stopped")[-1]["body"]
        assert moved["threadId"] == 3 and moved["reason"] == "pause" and moved["allThreadsStopped"]
        assert moved["preserveFocusHint"] is False
        withdrawn = {e["body"]["threadId"] for e in c.events("continued")}
        assert withdrawn >= {2} and 3 not in withdrawn
        assert all(e["body"]["allThreadsContinued"] is False for e in c.events("continued"))
        assert c.request("evaluate", {"expression": "ty", "frameId": frame})["result"] == str(ty_of(2, 7))
        # setFocus (status bar, GPU Lanes view) goes through the same place
        body = c.request("setFocus", {"threadId": 4, "lane": 33})
        assert body["threadId"] == 4 and body["lane"] == 33
        assert c.wait_event("focus")["body"]["threadId"] == 4
        assert c.request("evaluate", {"expression": "ty"})["result"] == str(ty_of(3, 33))
        c.request("disconnect")
    finally:
        c.close()


def test_stop_badge_is_short_and_the_full_stop_is_in_text():
    c, stopped = launched(DUMP, supportsInvalidatedEvent=True)
    try:
        assert len(stopped["description"]) <= 16
        assert "line 38" in stopped["text"] and "lane 2" in stopped["text"]
        c.request("disconnect")
    finally:
        c.close()
