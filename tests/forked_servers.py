"""DAP and language servers for the tests, forked from one warm process per test process, not started anew.

Starting `python -m aspace_dap` costs about 0.45 CPU-seconds before it answers `initialize`
(interpreter, imports), and a session's first `launch` imports the adapters, numpy and pyelftools
on top; the tests start a few hundred servers. Here one process per test process imports all of it
once and forks a child per client: the child is that server (`aspace_dap.cli.main(argv)`: the DAP
server, or `lsp`), its stdin and stdout on one end of a socket pair, its stderr on a pipe of the
test's. What the tests talk to is the same code from the same modules, only not imported again.

Where a test needs what only its own process gives (a return code, signals, a launcher, another
environment or folder), it starts one with dap_client.start_server_subprocess; start_server falls
back to that too when the environment differs from the one the warm process was started with.

Run as a script, this file is the warm process: `python forked_servers.py SOCKET`.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

_WARM: dict = {}  # this test process's warm server: process, socket path, environment, folder
_LOCK = threading.Lock()


class ForkedServer:
    """The child's side of subprocess.Popen that the tests use: pid, poll, wait, kill, terminate.
    Its exit status goes to its parent (the warm process reaps it): returncode stays None, wait
    returns None, and poll says only whether it still runs (None) or not (0)."""

    returncode = None

    def __init__(self, pid: int):
        self.pid = pid

    def poll(self):
        return None if self._alive() else 0

    def _alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def wait(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._alive():
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"forked server {self.pid}", timeout)
            time.sleep(0.01)
        return None

    def send_signal(self, sig: int) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _warm_server(env: dict[str, str], cwd: str) -> str | None:
    """The socket of this process's warm server for `env` and `cwd`, started on first use; None when
    it was started for another environment (the caller then starts a process of its own)."""
    with _LOCK:
        if not _WARM:
            folder = tempfile.mkdtemp(prefix="aspace-forks-")
            path = os.path.join(folder, "s")
            process = subprocess.Popen([sys.executable, os.path.abspath(__file__), path], env=env, cwd=cwd,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
            ready = process.stdout.readline()
            if ready.strip() != b"ready":
                raise RuntimeError(f"the warm server did not start: {ready!r}")
            _WARM.update(process=process, path=path, env=_comparable(env), cwd=cwd)

            def stop():
                process.kill()
                process.wait()
                shutil.rmtree(folder, ignore_errors=True)
            atexit.register(stop)
        if _WARM["env"] != _comparable(env) or _WARM["cwd"] != cwd or _WARM["process"].poll() is not None:
            return None
        return _WARM["path"]


def _comparable(env: dict[str, str]) -> dict[str, str]:
    """What the server could act on: not pytest's name of the test running."""
    return {k: v for k, v in env.items() if k != "PYTEST_CURRENT_TEST"}


def start_forked(env: dict[str, str], cwd: str, argv: tuple[str, ...] = (), stderr: bool = True):
    """`aspace-dap *argv` forked: (socket to its stdin and stdout, its stderr pipe to read or None
    where `stderr` is False (then /dev/null), ForkedServer), or None (see _warm_server)."""
    path = _warm_server(env, cwd)
    if path is None:
        return None
    err_read, err_write = os.pipe() if stderr else (None, os.open(os.devnull, os.O_WRONLY))
    request = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        request.connect(path)
        ours, theirs = socket.socketpair()
        socket.send_fds(request, [json.dumps(list(argv)).encode()], [theirs.fileno(), err_write])
        theirs.close()
        os.close(err_write)
        pid = int(_read_line(request))
    finally:
        request.close()
    return ours, (os.fdopen(err_read, "rb") if stderr else None), ForkedServer(pid)


def _read_line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise RuntimeError("the warm server closed the connection")
        data += chunk
    return data


# ---- the warm process ----

def _import_everything() -> None:
    """Every module of the server and the adapters, as a session would import them."""
    import importlib
    import pkgutil

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as cli.main does before numpy loads
    import adapters
    import aspace_dap
    for package in (aspace_dap, adapters):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if module.name.endswith("__main__"):
                continue  # it would run
            try:
                importlib.import_module(module.name)
            except ImportError:
                pass


def _serve_forks(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they exit
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, 4096, 2)
        argv = json.loads(message)
        pid = os.fork()
        if pid == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server waits for its own tools
            conn.close()
            stdio, stderr = fds
            os.dup2(stdio, 0)
            os.dup2(stdio, 1)
            os.dup2(stderr, 2)
            os.close(stdio)
            os.close(stderr)
            from aspace_dap.cli import main
            code = 1
            try:
                code = main(argv) or 0
            finally:
                sys.stderr.flush()
                os._exit(code)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        conn.close()


if __name__ == "__main__":
    _import_everything()
    _serve_forks(sys.argv[1])
