"""nvim-dap's session, replayed in Python against the real server: what its handlers request, and what
its views (cursor, `.frames`, `.scopes`, the scopes sidebar) then show.

Written from reading lua/dap/session.lua, repl.lua, entity.lua and ui/widgets.lua of nvim-dap 0.6.0
and 0.10.0 (the latest release when this was written); nothing of it is copied. What they do with
the messages that matter here:

- initialize: no `supportsInvalidatedEvent` (nvim-dap has no `invalidated` handler and ignores the
  event); launch; on `initialized`, configurationDone.
- `stopped`: threads are (re)fetched first when a thread is unknown or the list is dirty.
  `should_jump = reason ~= 'pause' or allThreadsStopped`. When another thread is already the stopped
  one (`stopped_thread_id`) and should_jump holds, the new thread is answered with `continue`
  (auto_continue_if_many_stopped, on by default) and nothing else happens. Otherwise: when jumping,
  `stopped_thread_id` becomes the thread; allThreadsStopped marks every thread stopped, else this
  one; then `stackTrace {threadId}` (0.10.0 adds startFrame 0 and gives up when the thread was
  resumed meanwhile); the thread's frames are replaced; when jumping, the top frame (the first with a
  source) becomes `current_frame`, the cursor jumps to it unless `preserveFocusHint` (a frame with a
  sourceReference is fetched with `source` first; one without a source moves nothing), and its
  scopes are requested: `scopes {frameId}`, then `variables` for each inexpensive scope.
- `thread`: reason `exited` drops the thread; any other reason marks a known thread running and, if
  it was the stopped one, forgets `stopped_thread_id`.
- `continued`: marks the thread (or every thread) running. 0.10.0 also forgets `stopped_thread_id`
  when it names that thread or all threads (a missing allThreadsContinued meaning all); 0.6.0 never.
- REPL: text that is not a command is `evaluate {expression, context = 'repl', frameId =
  current_frame.id}`; `.frames` prints the frames of `threads[stopped_thread_id]`; `.scopes` prints
  `current_frame.scopes`, fetching a scope's variables with its variablesReference when not loaded;
  `.continue` forgets the stopped thread and sends `continue` for it.
- The scopes sidebar re-renders after every `scopes` response (before the variables the session
  asked for have come back), from `current_frame.scopes`, one scope after the other: a scope whose
  variables are not loaded yet asks for them itself and the next scope is rendered once they are
  in. In 0.10.0 an empty answer never calls back (its countdown starts at zero), so the rendering
  stops at the first scope without variables; 0.6.0 goes on. An error ends it in both.
- Variables the views fetch themselves (the sidebar, `.scopes`) are sorted by entity.lua's
  comparison: all-digit names (`[3]`) by number, others as strings (byte by byte in the C locale).
  Those the session fetched after a stop are drawn as answered in 0.10.0; 0.6.0 keeps them in a
  Lua table keyed by name (utils.to_dict), drawn in the table's own order, which no adapter sets:
  modelled here as an order of the names' digests. A sidebar opened after a stop draws those.

Messages are handled one at a time in the order they arrive, as nvim-dap schedules them on Neovim's
main loop; a handler's requests are answered later, through callbacks.
"""

from __future__ import annotations

import hashlib
import os
import re

from dap_client import start_server

VERSIONS = ("0.6.0", "0.10.0")


def sorted_like_nvim_dap(variables: list[dict]) -> list[dict]:
    """entity.lua's order for fetched variables: by number when both names are all digits, else by name."""
    import functools

    def number(name):
        m = re.fullmatch(r"\[?(\d+)\]?", name)
        return int(m.group(1)) if m else None

    def compare(a, b):
        na, nb = number(a["name"]), number(b["name"])
        if na is not None and nb is not None:
            return (na > nb) - (na < nb)
        ka, kb = a["name"].encode(), b["name"].encode()
        return (ka > kb) - (ka < kb)
    return sorted(variables, key=functools.cmp_to_key(compare))


def lua_table_order(variables: list[dict]) -> list[dict]:
    """A Lua table keyed by name, walked with pairs(): an order of the keys' hashes, not the answer's."""
    return sorted(variables, key=lambda v: hashlib.sha1(v["name"].encode()).digest())


class NvimDapReplay:
    def __init__(self, version: str, state_path: str, **launch_arguments):
        assert version in VERSIONS
        self.version = version
        self.c = start_server()
        self.next_message = 0
        self.callbacks: dict[int, object] = {}
        self.threads: dict[int, dict] = {}
        self.dirty_threads = False
        self.stopped_thread_id: int | None = None
        self.current_frame: dict | None = None
        self.cursor: tuple[str, int] | None = None  # (file, line) the cursor jumped to
        self.notifications: list[str] = []
        self.sent: list[tuple[str, dict]] = []
        self.sidebar_rendered: list[list] = []  # [scope name, {variable: value} or None] as shown
        self.sidebar_open = True  # the scopes sidebar is open: it redraws after every `scopes` answer
        self.source_text: str | None = None
        self.capabilities = {}
        self.request("initialize", {"clientId": "neovim", "clientname": "neovim", "adapterID": "nvim-dap",
                                    "pathFormat": "path", "columnsStartAt1": True, "linesStartAt1": True,
                                    "supportsRunInTerminalRequest": True, "supportsVariableType": True,
                                    "supportsProgressReporting": True, "supportsStartDebuggingRequest": True,
                                    "locale": "en_US"}, self._initialized)
        self.launch = {"type": "aspace-gpu", "request": "launch", "name": "GPU dump", "state": str(state_path),
                       **launch_arguments}
        self.settle()

    # ---- the wire: one message at a time, in arrival order ----

    def request(self, command: str, arguments: dict | None = None, callback=None) -> int:
        seq = self.c.send(command, arguments)
        self.sent.append((command, arguments or {}))
        self.callbacks[seq] = callback
        return seq

    def _handle(self, message: dict) -> None:
        if message.get("type") == "response":
            callback = self.callbacks.pop(message["request_seq"], None)
            if callback is not None:
                error = None if message["success"] else message.get("message", "error")
                callback(error, message.get("body"))
        elif message.get("type") == "event":
            handler = getattr(self, "event_" + message["event"], None)
            if handler is not None:
                handler(message.get("body") or {})

    def settle(self) -> None:
        """Handle every message until nothing is pending: each round waits for a barrier (a `threads`
        request the plugin did not make, whose answer nobody handles) and for the answers handlers
        wait for, so that events the server sends after a response are in too; it ends when a round
        sent nothing new."""
        while True:
            before = len(self.sent)
            self.c.wait_response(self.c.send("threads"))
            for seq in list(self.callbacks):
                self.c.wait_response(seq)
            while self.next_message < len(self.c.messages):
                message = self.c.messages[self.next_message]
                self.next_message += 1
                self._handle(message)
            if len(self.sent) == before and not self.callbacks:
                return

    def _run(self, coroutine) -> None:
        """Lua's coroutine.wrap: the generator yields (command, arguments) and gets (err, body)."""
        def step(value=None):
            try:
                command, arguments = coroutine.send(value)
            except StopIteration:
                return
            self.request(command, arguments, lambda err, body: step((err, body)))
        step()

    # ---- session start ----

    def _initialized(self, err, body):
        assert err is None, err
        self.capabilities = body or {}
        self.request(self.launch["request"], self.launch, lambda err, _: err and self.notifications.append(err))

    def event_initialized(self, body):
        self.request("configurationDone", {})

    # ---- events (lua/dap/session.lua) ----

    def _update_threads(self, then):
        def done(err, body):
            if err is not None:
                self.notifications.append(f"Error retrieving threads: {err}")
                return
            threads = {}
            for t in body["threads"]:
                old = self.threads.get(t["id"])
                thread = dict(t)
                if old is not None:
                    thread["stopped"] = bool(old.get("stopped"))
                    if self.version != "0.6.0":
                        thread["frames"] = old.get("frames")
                threads[t["id"]] = thread
            self.threads = threads
            self.dirty_threads = False
            then()
        self.request("threads", None, done)

    def event_stopped(self, stopped):
        tid = stopped.get("threadId")
        if self.dirty_threads or (tid is not None and tid not in self.threads):
            if self.version == "0.6.0":
                self._update_threads(lambda: self.event_stopped(stopped))
                return
            placeholder = {"id": tid, "name": "Unknown", "stopped": True}
            if tid is not None:
                self.threads[tid] = placeholder

            def after():
                if placeholder.get("stopped") is False:
                    return  # resumed while the threads were fetched
                self._stopped_known(stopped)
            self._update_threads(after)
            return
        self._stopped_known(stopped)

    def _stopped_known(self, stopped):
        tid = stopped.get("threadId")
        should_jump = stopped.get("reason") != "pause" or bool(stopped.get("allThreadsStopped"))
        if self.stopped_thread_id is not None and self.stopped_thread_id != tid and should_jump:
            self.request("continue", {"threadId": tid})  # auto_continue_if_many_stopped
            return
        if should_jump:
            self.stopped_thread_id = tid
        if stopped.get("allThreadsStopped"):
            for thread in self.threads.values():
                thread["stopped"] = True
        elif tid is not None:
            self.threads[tid]["stopped"] = True
        if tid is None:
            return
        thread = self.threads[tid]
        self._run(self._stopped_stack(stopped, thread, should_jump))

    def _stopped_stack(self, stopped, thread, should_jump):
        arguments = {"threadId": stopped["threadId"]}
        if self.version != "0.6.0":
            arguments = {"startFrame": 0, **arguments}
        err, body = yield ("stackTrace", arguments)
        if self.version != "0.6.0" and thread.get("stopped") is False:
            return  # resumed while the stack was fetched
        if err is not None:
            self.notifications.append(f"Error retrieving stack traces: {err}")
            return
        frames = body["stackFrames"]
        thread["frames"] = frames
        top = next((f for f in frames if f.get("source")), frames[0] if frames else None)
        if top is None:
            return
        if should_jump:
            self.current_frame = top
            yield from self._jump_to_frame(top, bool(stopped.get("preserveFocusHint")))
            self._request_scopes(top)

    def _jump_to_frame(self, frame, preserve_focus_hint):
        source = frame.get("source")
        if not source:
            self.notifications.append("Source not available, cannot jump to frame")
            return
        if preserve_focus_hint or frame["line"] < 0:
            return
        if source.get("sourceReference"):
            err, body = yield ("source", {"source": source, "sourceReference": source["sourceReference"]})
            if err is not None:
                return
            self.cursor = (f"sourceReference:{source['sourceReference']}", frame["line"])
            self.source_text = body["content"]
            return
        self.cursor = (source["path"], frame["line"])

    def _request_scopes(self, frame):
        def got_scopes(err, body):
            if body is None or "scopes" not in body:
                return
            frame["scopes"] = []
            for scope in body["scopes"]:
                scope = dict(scope)
                frame["scopes"].append(scope)
                if not scope.get("expensive"):
                    def got_variables(err, vbody, scope=scope):
                        if vbody is not None:
                            listed = vbody["variables"]
                            if self.version == "0.6.0":
                                listed = lua_table_order(listed)
                            scope["variables"] = {v["name"]: v for v in listed}
                    self.request("variables", {"variablesReference": scope["variablesReference"]}, got_variables)
            if self.sidebar_open:
                self._render_sidebar()  # dap.listeners.after.scopes: the scopes widget refreshes
        self.request("scopes", {"frameId": frame["id"]}, got_scopes)

    def event_thread(self, body):
        tid = body["threadId"]
        if body.get("reason") == "exited":
            self.threads.pop(tid, None)
            return
        thread = self.threads.get(tid)
        if thread is not None:
            thread["stopped"] = False
            if self.stopped_thread_id == tid:
                self.stopped_thread_id = None
        else:
            self.dirty_threads = True
            self.threads[tid] = {"id": tid, "name": "Unknown"}

    def event_continued(self, body):
        every = body.get("allThreadsContinued")
        if self.version == "0.6.0":
            if every:
                for thread in self.threads.values():
                    thread["stopped"] = False
            elif self.threads.get(body.get("threadId"), {}).get("stopped"):
                self.threads[body["threadId"]]["stopped"] = False
            return
        if every is None or every is True:
            for thread in self.threads.values():
                thread["stopped"] = False
            self.stopped_thread_id = None
        else:
            if self.stopped_thread_id == body.get("threadId"):
                self.stopped_thread_id = None
            if self.threads.get(body.get("threadId"), {}).get("stopped"):
                self.threads[body["threadId"]]["stopped"] = False

    # ---- views ----

    def _render_sidebar(self):
        frame = self.current_frame or {}
        scopes = list(frame.get("scopes") or [])
        rendered: list[list] = []
        self.sidebar_rendered = rendered  # the buffer is redrawn from the top

        def render(i):
            if i >= len(scopes):
                return
            scope = scopes[i]
            rendered.append([scope["name"], None])

            def show(variables):
                rendered[-1][1] = {n: v["value"] for n, v in variables.items()}
                render(i + 1)
            if scope.get("variables") is not None:
                show(scope["variables"])
                return

            def got(err, body):
                if err is not None:
                    self.notifications.append(f"Error fetching variables: {err}")
                    return
                variables = {v["name"]: v for v in sorted_like_nvim_dap(body["variables"])}
                if self.version != "0.6.0" and not variables:
                    return  # entity.lua's countdown never reaches zero: no callback, nothing more drawn
                scope["variables"] = variables
                show(variables)
            self.request("variables", {"variablesReference": scope["variablesReference"]}, got)
        render(0)

    def close_sidebar(self) -> None:
        self.sidebar_open = False

    def open_sidebar(self) -> dict[str, dict[str, str] | None]:
        """The sidebar opened now (sidebar.open()): drawn from what the session holds."""
        self.settle()
        self.sidebar_open = True
        self._render_sidebar()
        return self.sidebar()

    def sidebar(self) -> dict[str, dict[str, str] | None]:
        """What the scopes sidebar shows once its rendering is done: each scope drawn, with its
        variables (None: the scope's line is drawn, its variables never are)."""
        self.settle()
        return {name: values for name, values in self.sidebar_rendered}

    def _scope_values(self, scopes) -> dict[str, dict[str, str]]:
        out = {}
        for scope in scopes:
            if scope.get("variables") is None:
                def got(err, body, scope=scope):
                    if err is not None:
                        self.notifications.append(f"Error fetching variables: {err}")
                    else:
                        scope["variables"] = {v["name"]: v for v in sorted_like_nvim_dap(body["variables"])}
                self.request("variables", {"variablesReference": scope["variablesReference"]}, got)
                self.settle()
            out[scope["name"]] = {n: v["value"] for n, v in (scope.get("variables") or {}).items()}
        return out

    def frames_command(self) -> list[dict]:
        """`.frames`: the frames of the stopped thread."""
        return list((self.threads.get(self.stopped_thread_id) or {}).get("frames") or [])

    def scopes_command(self) -> dict[str, dict[str, str]]:
        """`.scopes`: the current frame's scopes and their variables."""
        return self._scope_values((self.current_frame or {}).get("scopes") or [])

    def repl(self, text: str) -> str:
        """Text typed in the REPL that is not a command: evaluated in the current frame."""
        answer = {}
        arguments = {"expression": text, "context": "repl"}
        if self.current_frame is not None:
            arguments["frameId"] = self.current_frame["id"]
        self.request("evaluate", arguments, lambda err, body: answer.update(err=err, body=body))
        self.settle()
        if answer["err"] is not None:
            return f"error: {answer['err']}"
        return answer["body"]["result"]

    def continue_command(self) -> None:
        """`.continue`: clear_running, then `continue` for the stopped thread."""
        tid = self.stopped_thread_id
        self.stopped_thread_id = None
        if tid in self.threads:
            self.threads[tid]["stopped"] = False
        self.request("continue", {"threadId": tid})
        self.settle()

    def cursor_file(self) -> str | None:
        return os.path.basename(self.cursor[0]) if self.cursor else None

    def close(self) -> None:
        try:
            self.c.request("disconnect")
        finally:
            self.c.close()
