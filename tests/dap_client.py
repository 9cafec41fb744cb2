"""A test-side DAP client built on debugpy's JsonIOStream, independent of the server's code.

Every message the client receives is checked against the DAP JSON schema and
for consecutive `seq` numbers; a violation fails the next call the test makes.
The end of the file holds a minimal handler set and a way to start it as a
server process, for end-to-end tests of the transport.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from debugpy.common.messaging import JsonIOStream, NoMoreMessages

from dap_schema import validate_message

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_DIR = os.path.join(REPO_ROOT, "tests")
WAIT_SECONDS = 30.0  # a safety net against hangs, not a measurement


class RequestFailed(AssertionError):
    def __init__(self, response: dict[str, Any]):
        self.response = response
        super().__init__(f"{response.get('command')} failed: {response.get('message')}")


class DapTestClient:
    def __init__(self, stream: JsonIOStream, write_raw, closer, process: subprocess.Popen | None = None):
        self._stream = stream
        self._write_raw = write_raw
        self._closer = closer
        self.process = process
        self.messages: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self._taken_events: set[int] = set()
        self._next_seq = 1
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self.eof = False
        self.secret: str | None = None  # a TCP server's: presented with initialize (see send)
        self._reader = threading.Thread(target=self._read_all, daemon=True)
        self._reader.start()

    # ---- receiving ----

    def _read_all(self) -> None:
        expected_seq = 1
        while True:
            try:
                message = self._stream.read_json()
            except (NoMoreMessages, OSError, ValueError):
                break
            problem = None
            try:
                validate_message(message)
            except AssertionError as exc:
                problem = str(exc)
            if message.get("seq") != expected_seq:
                problem = f"seq {message.get('seq')} where {expected_seq} was expected"
            expected_seq += 1
            with self._changed:
                if problem:
                    self.violations.append(problem)
                self.messages.append(message)
                self._changed.notify_all()
        with self._changed:
            self.eof = True
            self._changed.notify_all()

    def check(self) -> None:
        if self.violations:
            raise AssertionError("server sent invalid DAP: " + " | ".join(self.violations))

    def _wait_for(self, predicate, what: str, timeout: float | None = None):
        deadline = time.monotonic() + (WAIT_SECONDS if timeout is None else timeout)
        with self._changed:
            while True:
                self.check()
                found = predicate()
                if found is not None:
                    return found
                if self.eof:
                    raise AssertionError(f"server closed the stream while waiting for {what}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no {what} from the server")
                self._changed.wait(remaining)

    def wait_response(self, request_seq: int, timeout: float | None = None) -> dict[str, Any]:
        def find():
            for message in self.messages:
                if message.get("type") == "response" and message.get("request_seq") == request_seq:
                    return message
            return None

        return self._wait_for(find, f"response to request {request_seq}", timeout)

    def wait_event(self, name: str) -> dict[str, Any]:
        """The first `name` event not returned by an earlier call."""

        def find():
            for index, message in enumerate(self.messages):
                if message.get("type") == "event" and message.get("event") == name \
                        and index not in self._taken_events:
                    self._taken_events.add(index)
                    return message
            return None

        return self._wait_for(find, f"'{name}' event")

    def wait_closed(self) -> None:
        self._wait_for(lambda: True if self.eof else None, "end of stream")

    def events(self, name: str) -> list[dict[str, Any]]:
        with self._changed:
            return [m for m in self.messages if m.get("type") == "event" and m.get("event") == name]

    # ---- sending ----

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        with self._write_lock:
            seq = self._next_seq
            self._next_seq += 1
            message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
            if command == "initialize" and self.secret is not None and "secret" not in (arguments or {}):
                arguments = {**(arguments or {}), "secret": self.secret}
            if arguments is not None:
                message["arguments"] = arguments
            self._stream.write_json(message)
            return seq

    def send_raw(self, data: bytes) -> None:
        """Bytes as they are, for testing how the server copes with broken input."""
        with self._write_lock:
            self._write_raw(data)

    def request_raw(self, command: str, arguments: dict[str, Any] | None = None,
                    timeout: float | None = None) -> dict[str, Any]:
        return self.wait_response(self.send(command, arguments), timeout)

    def request(self, command: str, arguments: dict[str, Any] | None = None, timeout: float | None = None) -> Any:
        """Send a request and return its response body; raise RequestFailed if it failed."""
        response = self.request_raw(command, arguments, timeout)
        if not response["success"]:
            raise RequestFailed(response)
        return response.get("body")

    def close(self) -> None:
        self._closer()
        if self.process is not None:
            try:
                self.process.wait(WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(WAIT_SECONDS)
        stderr = getattr(self, "stderr", None)
        if stderr is not None:
            # the process has exited, but the collector may not have read its last lines yet
            stderr.finish()
        self.check()


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO_ROOT, TESTS_DIR, env.get("PYTHONPATH", "")])
    return env


class _StderrCollector:
    def __init__(self, pipe):
        self.lines: list[str] = []
        self._pipe = pipe
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        for raw in self._pipe:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace"))
                self._changed.notify_all()

    def wait_for_line(self, prefix: str) -> str:
        deadline = time.monotonic() + WAIT_SECONDS
        with self._changed:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    raise AssertionError(f"server never printed {prefix!r}; stderr: {''.join(self.lines)}")
                self._changed.wait(min(remaining, 0.5))

    def finish(self) -> None:
        """Wait until everything the process wrote to stderr is collected (call after it exited)."""
        self._thread.join(WAIT_SECONDS)

    @property
    def text(self) -> str:
        with self._changed:
            return "".join(self.lines)


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes `sock` within `timeout` (whatever it sent before is read and dropped)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 20):
            pass
        return True
    except (TimeoutError, socket.timeout):
        return False
    except OSError:
        return True


def machine_slowdown(sample_seconds: float = 0.25) -> float:
    """How much slower than a quiet machine this one runs now: wall-clock seconds per second of CPU this
    process gets while it computes (1.0 alone on a core; about 2 beside two busy processes on two cores).
    A test's timing bound is its quiet-machine bound times this, so it holds on a loaded machine and still
    fails a server that is slow by itself."""
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start_wall < sample_seconds:
        sum(range(1000))
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    return max(1.0, wall / max(cpu, 1e-3))


NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")  # a launcher: run as `nobody`


def python_for(launcher: list[str] | tuple, *imports: str, env: dict[str, str] | None = None) -> str:
    """A Python 3 of this one's version that the launcher's user can run and import `imports` with (in
    `env`): this checkout's own may sit in a folder only its owner can read (/root, a 0700 folder), and
    so may the interpreter it was made from. Skips the test, saying why, when there is none."""
    import pytest

    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [os.path.realpath(getattr(sys, "_base_executable", sys.executable)), shutil.which(version),
                  f"/usr/bin/{version}", f"/usr/local/bin/{version}"]
    check = f"import sys; assert sys.version_info[:2] == {tuple(sys.version_info[:2])}; " + \
        "".join(f"import {name}; " for name in imports)
    tried = []
    for python in dict.fromkeys(c for c in candidates if c):
        try:
            result = subprocess.run([*launcher, python, "-c", check], capture_output=True, text=True, cwd="/",
                                    env=env, timeout=WAIT_SECONDS)
        except OSError as exc:
            tried.append(f"{python}: {exc}")
            continue
        if result.returncode == 0:
            return python
        tried.append(f"{python}: {(result.stderr.strip().splitlines() or ['exit ' + str(result.returncode)])[-1]}")
    pytest.skip(f"no {version} that {' '.join(launcher)} can run with {', '.join(imports) or 'nothing'} "
                f"({'; '.join(tried)})")


def server_copy(launcher: list[str] | tuple, folder: str) -> tuple[str, dict[str, str]]:
    """(python, environment) that run `python -m aspace_dap` as the launcher's user from copies in `folder`
    (made readable by every user) of the package and the packages it needs: run as another user, a server
    cannot import this checkout where only its owner can read it. Files are hard links where the file
    system allows (no copying), else copies. Skips the test, saying why, when no Python can run it."""
    import sysconfig

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    ignore = shutil.ignore_patterns("__pycache__", "__editable__*", "*.pth")
    os.chmod(folder, 0o755)
    source = os.path.join(folder, "src")
    shutil.copytree(os.path.join(REPO_ROOT, "aspace_dap"), os.path.join(source, "aspace_dap"), ignore=ignore,
                    copy_function=link)
    shutil.copytree(os.path.join(REPO_ROOT, "adapters"), os.path.join(source, "aspace_dap", "adapters"),
                    ignore=ignore, copy_function=link)
    packages = os.path.join(folder, "site-packages")
    shutil.copytree(sysconfig.get_paths()["purelib"], packages, ignore=ignore, copy_function=link)
    for root, folders, files in os.walk(folder):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=os.pathsep.join([source, packages]), PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
    return python_for(launcher, "aspace_dap.dap.transport", "numpy", "elftools", "trio", env=env), env


def start_server_subprocess(args: list[str], launcher: list[str] | tuple = (), python: str = sys.executable,
                            env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None) -> DapTestClient:
    """Run `python *args` as a stdio DAP server and talk to it through its pipes (`launcher` goes before
    python, e.g. setpriv to run it as another user; `env` replaces this checkout's, see server_copy;
    `cwd`: the folder it runs in, by default this checkout)."""
    process = subprocess.Popen(
        [*launcher, python, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=cwd or ("/" if env is not None else REPO_ROOT), env=env or _server_env(),
    )
    stderr = _StderrCollector(process.stderr)
    stream = JsonIOStream.from_process(process, name="server")

    def write_raw(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    def closer() -> None:
        try:
            process.stdin.close()
        except OSError:
            pass

    client = DapTestClient(stream, write_raw, closer, process)
    client.stderr = stderr
    return client


def start_server() -> DapTestClient:
    """`python -m aspace_dap` as a stdio server, forked from this test process's warm server
    (forked_servers: the same code, its imports done once), or started anew where it cannot be."""
    from forked_servers import start_forked

    forked = start_forked(_server_env(), REPO_ROOT)
    if forked is None:
        return start_server_subprocess(["-m", "aspace_dap"])
    sock, stderr_pipe, process = forked
    # buffered reads: debugpy's from_socket reads its headers a byte at a time
    stream = JsonIOStream(sock.makefile("rb"), sock.makefile("wb", 0), "server")

    def closer() -> None:  # what closing a server's stdin is: it reads the end, still writes
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    client = DapTestClient(stream, sock.sendall, closer, process)
    client.stderr = _StderrCollector(stderr_pipe)
    return client


def initialized(**initialize_arguments) -> DapTestClient:
    """A server that answered `initialize` as VS Code sends it (its capabilities kept as
    `client.capabilities`) and said `initialized`: ready for a launch."""
    c = start_server()
    try:
        c.capabilities = c.request("initialize", {"adapterID": "aspace-gpu", "linesStartAt1": True,
                                                  "columnsStartAt1": True, **initialize_arguments})
        c.wait_event("initialized")
    except BaseException:
        c.close()
        raise
    return c


def launched(state_path, launch_arguments: dict | None = None,
             **initialize_arguments) -> tuple[DapTestClient, dict[str, Any]]:
    """`python -m aspace_dap` launched on a dump in VS Code's order; (client, stopped event body).

    The initialize response's capabilities are kept as `client.capabilities`; `launch_arguments` go with
    the state (a workspaceFolder, a sourceMap).
    """
    c = initialized(**initialize_arguments)
    seq = c.send("launch", {"state": str(state_path), **(launch_arguments or {})})
    c.request("configurationDone")
    launch = c.wait_response(seq)
    assert launch["success"], launch
    return c, c.wait_event("stopped")["body"]


def launch_answer(client: DapTestClient, timeout: float = WAIT_SECONDS, **arguments) -> dict[str, Any]:
    """The launch response, success or not, in VS Code's order (configurationDone first)."""
    seq = client.send("launch", arguments)
    client.request_raw("configurationDone", timeout=timeout)
    return client.wait_response(seq, timeout=timeout)


SECRETS: dict[int, str] = {}  # port -> the secret its TCP server printed


def start_tcp_server_subprocess(args: list[str], env: dict[str, str] | None = None
                                ) -> tuple[subprocess.Popen, _StderrCollector, int]:
    """Run `python *args` as a TCP server; returns (process, its stderr, the port it printed). The secret
    it printed is kept in SECRETS (connect_tcp presents it); its HOME is a fresh folder, so its secret
    file never lands in the user's."""
    import tempfile

    home = tempfile.mkdtemp(prefix="aspace-test-home-")
    atexit.register(shutil.rmtree, home, True)
    process = subprocess.Popen(
        [sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, cwd=REPO_ROOT, env={**_server_env(), "HOME": home, **(env or {})},
    )
    stderr = _StderrCollector(process.stderr)
    line = stderr.wait_for_line("aspace-dap: listening on ")
    port = int(line.strip().rsplit(":", 1)[1])
    if "--insecure-tcp" not in args:
        said = stderr.wait_for_line("aspace-dap: clients present the secret ")
        SECRETS[port] = said.split("the secret ", 1)[1].split()[0]
    return process, stderr, port


def tcp_secret(port: int) -> str | None:
    return SECRETS.get(port)


def connect_tcp(port: int, host: str = "127.0.0.1", secret: str | None = "server's") -> DapTestClient:
    """A client of the TCP server on `port`; it presents the server's secret with initialize (or `secret`;
    None: none)."""
    sock = socket.create_connection((host, port), timeout=WAIT_SECONDS)
    stream = JsonIOStream.from_socket(sock, name="server")
    client = DapTestClient(stream, sock.sendall, stream.close)
    client.secret = SECRETS.get(port) if secret == "server's" else secret
    return client


# ---- a minimal server for end-to-end tests --------------------------------
# Just enough handlers to exercise ordering, cancel, progress and failures;
# the product's handlers live in aspace_dap/dap/ (handlers.py gathers them).

from aspace_dap.dap.dispatch import Dispatcher, HandlerTable, Reply  # noqa: E402
from aspace_dap.errors import AspaceError, LimitExceeded  # noqa: E402

MINIMAL_HANDLERS = HandlerTable()
MEMORY = bytes(range(256))
MAX_READ = 1 << 20


@MINIMAL_HANDLERS.request("initialize", required={"adapterID": str})
def _initialize(ctx, arguments):
    return {"supportsConfigurationDoneRequest": True, "supportsReadMemoryRequest": True,
            "supportsTerminateRequest": True}


@MINIMAL_HANDLERS.request("launch", optional={"program": str})
def _launch(ctx, arguments):
    progress = ctx.progress_start("Loading state", percentage=0)
    ctx.progress_update(progress, "indexing", 50)
    ctx.progress_end(progress)
    ctx.state["launched"] = True
    return Reply(events_after=[("stopped", {"reason": "exception", "threadId": 1, "allThreadsStopped": True})])


@MINIMAL_HANDLERS.request("threads")
def _threads(ctx, arguments):
    if not ctx.state.get("launched"):
        raise AspaceError("no GPU state is loaded")
    return {"threads": [{"id": 1, "name": "wave 0"}, {"id": 2, "name": "wave 1"}]}


@MINIMAL_HANDLERS.request("readMemory", required={"memoryReference": str, "count": int},
                          optional={"offset": int})
def _read_memory(ctx, arguments):
    count = arguments["count"]
    if count < 0 or count > MAX_READ:
        raise LimitExceeded(f"readMemory of {count} bytes is over the limit of {MAX_READ}")
    start = int(arguments["memoryReference"], 0) + arguments.get("offset", 0)
    readable = MEMORY[max(start, 0):max(start + count, 0)] if start >= 0 else b""
    return {"address": hex(start), "data": base64.b64encode(readable).decode("ascii"),
            "unreadableBytes": count - len(readable)}


@MINIMAL_HANDLERS.request("evaluate", required={"expression": str})
def _evaluate(ctx, arguments):
    expression = arguments["expression"]
    if expression == "wait-for-cancel":
        deadline = time.monotonic() + WAIT_SECONDS
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        ctx.check_cancelled()
    elif expression == "crash":
        return {"result": str([][1]), "variablesReference": 0}
    elif expression == "print":
        print("a stray line on stdout")
        os.write(1, b"and one written to fd 1\n")
    return {"result": expression, "variablesReference": 0}


def minimal_dispatcher() -> Dispatcher:
    return Dispatcher(MINIMAL_HANDLERS, state={})


def minimal_server_args(port: int | None = None) -> list[str]:
    """`python` arguments that run the minimal server over stdio, or TCP when `port` is given."""
    if port is None:  # as the command line serves stdio
        code = ("import sys; from dap_client import minimal_dispatcher; "
                "from aspace_dap.dap.transport import run_server; sys.exit(run_server(minimal_dispatcher))")
        return ["-c", code]
    code = ("import sys; from dap_client import minimal_dispatcher; "
            "from aspace_dap.dap.transport import run_server; "
            f"sys.exit(run_server(minimal_dispatcher, port={port!r}))")
    return ["-c", code]


# ---- framing for in-process tests -------------------------------------------


class FrameReader:
    """Splits `Content-Length` framed bytes into dicts; written apart from the server's parser."""

    def __init__(self):
        self._buffer = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        import json

        self._buffer += data
        messages = []
        while True:
            head, sep, rest = self._buffer.partition(b"\r\n\r\n")
            if not sep:
                return messages
            fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
            length = int(fields[b"Content-Length"])
            if len(rest) < length:
                return messages
            message = json.loads(rest[:length].decode("utf-8"))
            validate_message(message)
            messages.append(message)
            self._buffer = rest[length:]


def frame(message: dict[str, Any] | bytes) -> bytes:
    """A client message (or a raw body) with its Content-Length header."""
    import json

    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
