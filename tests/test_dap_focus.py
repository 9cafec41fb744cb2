"""One focus, owned by the server, followed by VS Code's and nvim-dap's own session code.

Each client is replayed in Python against the real server, from reading its source:

- `VSCodeDebugSession`: what VS Code 1.100's debugSession.ts does with `stopped`, `continued` and
  `invalidated` (its list of stops; on `invalidated` of threads or stacks it drops every Thread
  object and replays only the first stop it holds; a stop with `preserveFocusHint` does not move
  the focus, so the focus can be left on a discarded thread, which reads as running) and what its
  Call Stack click does (the frame is focused, its scopes and variables requested).
- `NvimDapReplay` (nvim_dap_replay.py): nvim-dap 0.6.0's and 0.10.0's session handlers and views.

Expected values come from the kernel: lds_tiles runs 16x16 blocks on wave64, so wave w holds
threadIdx.y = 4w .. 4w+3 and lane L has threadIdx.x = L % 16, threadIdx.y = 4w + L // 16. Lines
come from the source: the lds_tiles dump stops every wave at line 38 (the transposed store), and
gen_waves' odd waves stand at the first instruction llvm-objdump gives line 30.
"""

import os
import sys

import pytest

from dap_client import REPO_ROOT, launched
from nvim_dap_replay import VERSIONS, NvimDapReplay

sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

from gen_waves import write_waves_dump  # noqa: E402

DUMP = os.path.join(REPO_ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0")  # focus: wave 1, lane 2


def tx_of(lane: int) -> int:
    return lane % 16


def ty_of(wave: int, lane: int) -> int:
    return 4 * wave + lane // 16


def thread_of_wave(wave: int) -> int:
    return wave + 1  # thread ids are wave ids + 1


# ---------------------------------------------------------------- VS Code


class VSCodeDebugSession:
    """VS Code's model of the session, as far as the stop and the focus go."""

    def __init__(self, dump=DUMP):
        self.c, first = launched(dump, supportsInvalidatedEvent=True, clientID="vscode")
        self.seen = 0
        self.stops: list[dict] = []  # DebugSession.stoppedDetails
        self.generation = 0  # Thread objects are replaced when invalidated drops them
        self.stopped: dict[int, bool] = {}
        self.details: dict[int, dict | None] = {}  # Thread.stoppedDetails, what the Call Stack's badge reads
        self.focus: tuple[int, int, int] | None = None  # (threadId, frameId, generation of its Thread)
        self.variables: dict[str, str] = {}  # Locals
        self.scopes: list[str] = []
        self.pump()
        assert self.focus is not None and self.focus[0] == first["threadId"]

    # -- the adapter's messages, in order
    def pump(self):
        self.c.request("threads")  # a barrier: events sent before its answer are in
        while self.seen < len(self.c.messages):
            message = self.c.messages[self.seen]
            self.seen += 1
            if message.get("type") != "event":
                continue
            body = message.get("body") or {}
            if message["event"] == "stopped":
                self.handle_stop(body)
            elif message["event"] == "continued":
                every = body.get("allThreadsContinued") is not False
                self.stops = [] if every else [d for d in self.stops if d["threadId"] != body["threadId"]]
                for tid in (list(self.stopped) if every else [body["threadId"]]):
                    self.stopped[tid] = False
                    self.details[tid] = None
            elif message["event"] == "invalidated":
                areas = body.get("areas") or ["all"]
                if {"threads", "stacks", "all"} & set(areas):
                    self.generation += 1  # clearThreads(removeThreads): every Thread object discarded
                    self.stopped, self.details = {}, {}
                    del self.stops[1:]
                    for details in list(self.stops):
                        self.handle_stop(details)
                self.refresh_variables()

    def handle_stop(self, details):
        self.stops.append(details)
        threads = [t["id"] for t in self.c.request("threads")["threads"]]
        for tid in threads:
            if tid == details["threadId"]:
                self.details[tid] = details
            elif details.get("allThreadsStopped"):
                # DebugSession.rawUpdate: the other threads keep only the reason they stopped for
                self.details[tid] = {"reason": (self.details.get(tid) or {}).get("reason")}
            if details.get("allThreadsStopped") or tid == details["threadId"]:
                self.stopped[tid] = True
        focused_gone = self.focus is not None and self.focus[0] not in threads
        if focused_gone or not details.get("preserveFocusHint"):
            # Thread.getTopStackFrame: the first frame with a source that is not deemphasized
            frames = self.c.request("stackTrace", {"threadId": details["threadId"]})["stackFrames"]
            top = next((f for f in frames if f.get("source") and f.get("presentationHint") not in ("subtle", "deemphasize")), None)
            if top is None:
                self.focus = None  # nothing selected: Variables empty
                self.scopes, self.variables = [], {}
                return
            if top["source"].get("sourceReference"):
                self.c.request("source", {"source": top["source"], "sourceReference": top["source"]["sourceReference"]})
            self.select(details["threadId"], top["id"])

    def select(self, tid, frame_id):
        """focusStackFrame: the Variables view asks for the frame's scopes and the locals."""
        self.focus = (tid, frame_id, self.generation)
        self.refresh_variables()

    def refresh_variables(self):
        if self.focus is None:
            return
        scopes = self.c.request("scopes", {"frameId": self.focus[1]})["scopes"]
        self.scopes = [s["name"] for s in scopes]
        local = next((s for s in scopes if s["name"] == "Locals"), None)
        self.variables = {} if local is None else {v["name"]: v["value"] for v in self.c.request(
            "variables", {"variablesReference": local["variablesReference"]})["variables"]}

    # -- what the user sees
    @property
    def state(self) -> str:
        """DebugSession.state: the focused Thread object's flag (a discarded one was cleared)."""
        tid, _, generation = self.focus
        if generation != self.generation:
            return "running"
        return "stopped" if self.stopped.get(tid) else "running"

    def badge(self, tid: int) -> str:
        """Thread.stateLabel, the Call Stack's badge beside the wave (upper-cased by its CSS)."""
        details = self.details.get(tid)
        if details is None:
            return "Running"
        if details.get("description"):
            return details["description"]
        return f"Paused on {details['reason']}" if details.get("reason") else "Paused"

    def watch(self, expression: str) -> str:
        if self.state != "stopped":
            return "not available"
        return self.c.request("evaluate", {"expression": expression, "frameId": self.focus[1],
                                           "context": "watch"})["result"]

    # -- what the user does
    def click_top_frame(self, tid):
        frame = self.c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        self.select(tid, frame)
        self.pump()

    def repl(self, text):
        out = self.c.request("evaluate", {"expression": text, "context": "repl", "frameId": self.focus[1]})
        self.pump()
        return out["result"]

    def set_focus(self, **arguments):
        """The extension's GPU Lanes view, status bar and Next Active Lane."""
        body = self.c.request("setFocus", arguments)
        self.pump()
        return body

    def assert_shows(self, wave, lane):
        assert self.state == "stopped", "the Call Stack shows the session running, the toolbar Pause"
        assert self.focus[0] == thread_of_wave(wave)
        assert self.variables["tx"] == str(tx_of(lane)) and self.variables["ty"] == str(ty_of(wave, lane))
        assert self.watch("ty") == str(ty_of(wave, lane))


def vscode_lane_via_repl(s, lane):
    s.repl(f"lane {lane}")


def vscode_lane_via_lanes_view(s, lane):
    s.set_focus(threadId=s.focus[0], lane=lane)


CHANGES = {"REPL lane": vscode_lane_via_repl, "GPU Lanes": vscode_lane_via_lanes_view}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_vscode_keeps_the_stop_after_a_frame_click_and_a_lane_change(change):
    s = VSCodeDebugSession()
    try:
        s.assert_shows(1, 2)
        # Call Stack: wave 2 expanded, its transpose_tiles frame clicked
        s.click_top_frame(thread_of_wave(2))
        s.assert_shows(2, 2)
        assert s.repl("info waves").splitlines()[-1].startswith("* focus: AMDGPU Wave 0:0:0:2 ")
        CHANGES[change](s, 5)
        s.assert_shows(2, 5)
        assert s.repl("ty") == str(ty_of(2, 5))
        # `wave 2`, the wave already focused, after another frame click
        s.click_top_frame(thread_of_wave(0))
        s.repl("wave 2")
        s.assert_shows(2, 5)
        CHANGES[change](s, 33)
        s.assert_shows(2, 33)
        s.repl("wave 3")
        s.assert_shows(3, 33)
        # nothing the server sent asks VS Code to replay a stop
        assert not s.c.events("invalidated")
        s.c.request("disconnect")
    finally:
        s.c.close()


def test_vscode_frame_click_is_the_clients_own_change():
    """Selecting a frame moves the server's focus and is announced to the extension only: VS Code
    already shows it, and a stop would make it select the wave's top frame instead."""
    s = VSCodeDebugSession()
    try:
        stops, continued = len(s.c.events("stopped")), len(s.c.events("continued"))
        s.click_top_frame(thread_of_wave(0))
        assert s.c.events("focus")[-1]["body"]["threadId"] == thread_of_wave(0)
        assert (len(s.c.events("stopped")), len(s.c.events("continued"))) == (stops, continued)
        # the next change withdraws every stop VS Code holds, stops the focused wave, and puts the
        # dump's stop back on wave 1 (where it stopped) without moving the focus
        s.repl("lane 7")
        tail = [m for m in s.c.messages if m.get("type") == "event"][-4:]
        assert [m["event"] for m in tail] == ["focus", "continued", "stopped", "stopped"]
        assert tail[1]["body"] == {"threadId": thread_of_wave(1), "allThreadsContinued": False}
        assert tail[2]["body"]["threadId"] == thread_of_wave(0) and tail[2]["body"]["allThreadsStopped"]
        assert tail[2]["body"]["preserveFocusHint"] is False
        assert tail[3]["body"]["threadId"] == thread_of_wave(1) and tail[3]["body"]["preserveFocusHint"] is True
        assert tail[3]["body"]["allThreadsStopped"] is False
        assert s.stops == [tail[2]["body"], tail[3]["body"]]
        s.assert_shows(0, 7)
        s.c.request("disconnect")
    finally:
        s.c.close()


def test_vscode_keeps_the_stop_badge_on_the_wave_that_stopped():
    """The dump stopped in wave 1 at a breakpoint: whichever wave the focus moves to, by `wave N`,
    `lane N`, GPU Lanes or a frame click, the Call Stack keeps "Breakpoint" on wave 1 and shows the
    focused wave as paused; the focus is shown where it moved (its frame selected)."""
    s = VSCodeDebugSession()
    try:
        stopped_in = thread_of_wave(1)
        assert s.badge(stopped_in) == "Breakpoint"
        assert s.badge(thread_of_wave(0)) == "Paused"
        s.repl("wave 3")
        s.assert_shows(3, 2)
        assert (s.badge(stopped_in), s.badge(thread_of_wave(3))) == ("Breakpoint", "Paused")
        s.set_focus(threadId=thread_of_wave(3), lane=5)
        s.assert_shows(3, 5)
        assert (s.badge(stopped_in), s.badge(thread_of_wave(3))) == ("Breakpoint", "Paused")
        s.click_top_frame(thread_of_wave(0))
        s.repl("lane 7")
        s.assert_shows(0, 7)
        assert (s.badge(stopped_in), s.badge(thread_of_wave(0))) == ("Breakpoint", "Paused")
        # back in the wave that stopped: its badge, with the focus
        s.repl("wave 1")
        s.assert_shows(1, 7)
        assert [s.badge(thread_of_wave(w)) for w in range(4)] == ["Paused", "Breakpoint", "Paused", "Paused"]
        # Continue is declined, the stop stays where it was
        s.c.request("continue", {"threadId": thread_of_wave(1)})
        s.repl("wave 2")
        assert (s.badge(stopped_in), s.badge(thread_of_wave(2))) == ("Breakpoint", "Paused")
        s.c.request("disconnect")
    finally:
        s.c.close()


ROCM_FAULT = os.path.join(REPO_ROOT, "examples", "fault", "dumps", "clang19.gfx90a.O2")


def test_vscode_keeps_the_exception_badge_on_the_waves_that_raised_it(tmp_path):
    """A ROCm core whose two waves both raised the memory violation (the ROCm fault example,
    written as ROCgdb's gpucore with both waves' TRAPSTS): both keep "Exception" when the focus
    moves, and the focus moves no further than where it was put."""
    from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
    from aspace_dap.state import load_state
    with load_state(ROCM_FAULT) as state:
        core = write_rocm_core(state, tmp_path / "gpucore.4242", exception_wave=0,
                               exception_trapsts=(1 << 8) | (1 << 28))
    s = VSCodeDebugSession(str(core))
    try:
        assert s.stops[0]["reason"] == "exception"
        raised = [0, 1]
        assert [s.badge(thread_of_wave(w)) for w in raised] == ["Exception", "Exception"]
        s.repl("lane 3")
        assert [s.badge(thread_of_wave(w)) for w in raised] == ["Exception", "Exception"]
        assert s.focus[0] == thread_of_wave(0) and s.state == "stopped"
        s.c.request("disconnect")
    finally:
        s.c.close()


CUDA_DIVERGENT = os.path.join(REPO_ROOT, "examples", "cuda", "dumps", "divergent_call.sm_90.G")


def test_vscode_selects_the_labelled_frame_of_an_inactive_lane():
    """Lane 0 of CUDA divergent_call took the other branch and the dump has no pc for it: its one
    frame says so, and carries a source (a short document with that text), so VS Code selects it
    on the stop and shows its scopes at once."""
    s = VSCodeDebugSession(CUDA_DIVERGENT)
    try:
        assert "Locals" in s.scopes
        s.repl("lane 0")
        assert s.state == "stopped" and s.focus is not None
        frame = s.c.request("stackTrace", {"threadId": s.focus[0]})["stackFrames"][0]
        assert frame["id"] == s.focus[1] and frame["presentationHint"] == "label"
        assert "lane 0 inactive elsewhere" in frame["name"]
        assert s.scopes[-1] == "Registers"
        registers = next(x for x in s.c.request("scopes", {"frameId": s.focus[1]})["scopes"] if x["name"] == "Registers")
        assert s.c.request("variables", {"variablesReference": registers["variablesReference"]})["variables"]
        text = s.c.request("source", {"sourceReference": frame["source"]["sourceReference"]})["content"]
        assert "the dump has no pc for it" in text
        # back to an active lane: its own frames again
        s.repl("lane 1")
        assert s.c.request("stackTrace", {"threadId": s.focus[0]})["stackFrames"][0]["name"] == "settle"
        s.c.request("disconnect")
    finally:
        s.c.close()


def test_stop_badge_is_short_and_the_full_stop_is_in_text():
    c, stopped = launched(DUMP, supportsInvalidatedEvent=True)
    try:
        assert len(stopped["description"]) <= 16
        assert "line 38" in stopped["text"] and "lane 2" in stopped["text"]
        c.request("disconnect")
    finally:
        c.close()


# ---------------------------------------------------------------- nvim-dap


def locals_of(view: dict[str, dict[str, str]]) -> dict[str, str]:
    return view["Locals"]


@pytest.mark.parametrize("version", VERSIONS)
def test_nvim_dap_views_follow_wave_and_lane(version):
    n = NvimDapReplay(version, DUMP)
    try:
        assert n.stopped_thread_id == thread_of_wave(1)
        assert (n.cursor_file(), n.cursor[1]) == ("lds_tiles.hip", 38)
        assert locals_of(n.sidebar())["tx"] == str(tx_of(2))
        # lane N: the same thread stopped again; the sidebar and `.scopes` show the new lane
        assert n.repl("lane 5").startswith("[Switching to lane 5 of wave 1")
        assert n.stopped_thread_id == thread_of_wave(1)
        assert locals_of(n.sidebar())["tx"] == str(tx_of(5))
        assert locals_of(n.scopes_command())["tx"] == str(tx_of(5))
        assert n.repl("tx") == str(tx_of(5))
        # wave N: the new wave is the stopped thread; its frames, scopes and cursor are shown
        assert n.repl("wave 3").startswith("[Switching to AMDGPU Wave 0:0:0:3")
        assert n.stopped_thread_id == thread_of_wave(3)
        frames = n.frames_command()
        assert frames and frames[0]["id"] == n.current_frame["id"]
        assert frames[0]["id"] == n.c.request("stackTrace", {"threadId": thread_of_wave(3)})["stackFrames"][0]["id"]
        assert locals_of(n.sidebar())["ty"] == str(ty_of(3, 5))
        assert locals_of(n.scopes_command())["ty"] == str(ty_of(3, 5))
        assert n.repl("ty") == str(ty_of(3, 5))
        assert (n.cursor_file(), n.cursor[1]) == ("lds_tiles.hip", 38)
        # no stop was declined with `continue`, no stale variablesReference was used, and nothing
        # relied on `invalidated` (neither release handles it)
        assert not [args for command, args in n.sent if command == "continue"]
        assert not n.notifications, n.notifications
        assert not n.c.events("invalidated")
        # `.continue`: still stopped in wave 3, shown again
        n.continue_command()
        assert n.stopped_thread_id == thread_of_wave(3)
        assert locals_of(n.scopes_command())["ty"] == str(ty_of(3, 5))
        # lanes of the new wave
        n.repl("lane 17")
        assert locals_of(n.sidebar())["ty"] == str(ty_of(3, 17))
        assert n.repl("info waves").splitlines()[-1].startswith("* focus: AMDGPU Wave 0:0:0:3 ")
        assert not n.notifications, n.notifications
    finally:
        n.close()


DECLARED = ["tx", "ty", "col", "row", "value", "out_col", "out_row"]  # lds_tiles.hip's locals, in its order


def names(view: dict) -> dict[str, list[str]]:
    return {scope: list(values) for scope, values in view.items() if values is not None}


@pytest.mark.parametrize("version", VERSIONS)
def test_nvim_dap_sidebar_keeps_one_variable_order(version):
    """The sidebar draws the variables it fetches itself sorted by name, and those the session fetched
    after the stop as answered (0.10.0; 0.6.0 in its table's order, which no adapter sets): answered
    in nvim-dap's order, the variables stay in one order whichever way, across lane and wave changes."""
    n = NvimDapReplay(version, DUMP)
    try:
        seen = [names(n.sidebar())]
        for change in ("lane 5", "wave 3", "lane 17", "wave 1"):
            n.repl(change)
            seen.append(names(n.sidebar()))
            if version != "0.6.0":
                # closed during the next change, opened after it: drawn from the session's fetch
                n.close_sidebar()
                n.repl("lane 2")
                seen.append(names(n.open_sidebar()))
        assert seen[0]["Locals"] == sorted(DECLARED) and list(seen[0]) == ["Locals", "Arguments", "Shared", "Globals",
                                                                            "Registers"]
        if version != "0.6.0":  # (0.6.0 draws the later scopes from its table of the session's fetch)
            assert all(listed == sorted(listed) for listed in seen[0].values()), seen[0]
        assert all(view == seen[0] for view in seen), seen
        assert locals_of(n.scopes_command()) and list(locals_of(n.scopes_command())) == sorted(DECLARED)
        assert not n.notifications, n.notifications
    finally:
        n.close()


def test_other_clients_get_declaration_order():
    """VS Code (and any client other than nvim-dap) gets the locals in the order the kernel declares
    them, the parameters in theirs, the same on every answer."""
    s = VSCodeDebugSession()
    try:
        assert list(s.variables) == DECLARED
        s.repl("wave 3")
        s.repl("lane 5")
        assert list(s.variables) == DECLARED
        s.c.request("disconnect")
    finally:
        s.c.close()


@pytest.fixture(scope="module")
def odd_waves_dump(tmp_path_factory):
    """lds_tiles' workgroup 10 times (40 waves), the last 3 waves at the first instruction of line 30."""
    from test_wave_groups import first_pc_of_line
    return write_waves_dump(tmp_path_factory.mktemp("waves") / "dump", 10, odd=3, odd_pc=first_pc_of_line(30))


@pytest.mark.parametrize("version", VERSIONS)
def test_nvim_dap_cursor_follows_a_wave_on_another_line(version, odd_waves_dump):
    n = NvimDapReplay(version, str(odd_waves_dump))
    try:
        assert n.cursor[1] == 38
        n.repl("wave 38")
        assert n.stopped_thread_id == thread_of_wave(38)
        assert (n.cursor_file(), n.cursor[1]) == ("lds_tiles.hip", 30)
        assert [f["line"] for f in n.frames_command()][:1] == [30]
        assert "row_sum" in locals_of(n.sidebar()) and "k" in locals_of(n.sidebar())
        n.repl("wave 2")
        assert n.cursor[1] == 38 and n.stopped_thread_id == thread_of_wave(2)
        assert not n.notifications, n.notifications
    finally:
        n.close()


def test_a_client_ignoring_thread_events_does_not_loop():
    """A client that answers any stop of a second thread with `continue` (it ignores `thread`
    events): the declined stop is not repeated, and the focus stays where the user put it."""
    n = NvimDapReplay("0.6.0", DUMP)
    n.event_thread = lambda body: None
    try:
        n.repl("wave 3")
        assert [args["threadId"] for command, args in n.sent if command == "continue"] == [thread_of_wave(3)]
        assert n.repl("ty") == str(ty_of(3, 2))
        assert n.repl("info waves").splitlines()[-1].startswith("* focus: AMDGPU Wave 0:0:0:3 ")
    finally:
        n.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_nvim_dap_shows_the_labelled_frame_of_an_inactive_lane(version):
    n = NvimDapReplay(version, CUDA_DIVERGENT)
    try:
        assert n.cursor_file() == "divergent_call.cu"
        n.repl("lane 0")
        assert n.cursor[0].startswith("sourceReference:") and n.cursor[1] == 1
        assert "lane 0 inactive elsewhere" in n.source_text
        # the sidebar draws every scope: registers, and no empty Locals (its place is unknown) at
        # which 0.10.0's sidebar would stop drawing
        view = n.sidebar()
        assert list(view) == ["Registers"] and "pc" in view["Registers"], view
        assert [f["name"] for f in n.frames_command()] == [n.current_frame["name"]]
        assert not n.notifications, n.notifications
    finally:
        n.close()
