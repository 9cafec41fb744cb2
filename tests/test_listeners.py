"""Socket servers on a shared machine: the TCP server's secret, the owner-only Unix-domain socket,
connections that never complete their handshake, and places freed the moment a client leaves.

Every other user of a login node can connect to 127.0.0.1: a TCP server serves only clients that
present the secret it printed and wrote to a file only its user can read; `--socket` makes a socket
only its user can connect to. All against the real server processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dap_client import (NOBODY, REPO_ROOT, SECRETS, DapTestClient, _server_env, closed_by_server, connect_tcp, frame,
                        launch_answer, python_for, start_tcp_server_subprocess)
from debugpy.common.messaging import JsonIOStream

ROOT = Path(REPO_ROOT)
DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"
TIMEOUT = 30  # a safety net for one answer, not a measurement


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# ---- TCP: the secret -------------------------------------------------------------------------------

def test_a_tcp_server_serves_only_clients_that_present_its_secret():
    process, stderr, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"])
    try:
        secret = SECRETS[port]
        home = Path(json.loads(json.dumps(_home_of(process.pid))))
        secret_file = home / ".aspace-dap" / f"port-{port}.secret"
        assert secret_file.read_text().strip() == secret
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(secret_file.parent.stat().st_mode) == 0o700
        # no secret: initialize is answered, anything that reads is refused and the connection closed
        for command, arguments in (("launch", {"state": str(DUMP)}), ("threads", None),
                                   ("evaluate", {"expression": "help", "context": "repl"})):
            client = connect_tcp(port, secret=None)
            assert client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)["supportsCancelRequest"]
            answer = client.request_raw(command, arguments, timeout=TIMEOUT)
            assert not answer["success"] and "secret" in answer["message"] and secret not in json.dumps(answer)
            client.wait_closed()
            client.close()
        # a wrong secret, anywhere it may be presented, ends the connection
        for where in ("initialize", "launch"):
            client = connect_tcp(port, secret="0" * len(secret) if where == "initialize" else None)
            answer = client.request_raw("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
            if where == "launch":
                answer = client.request_raw("launch", {"state": str(DUMP), "secret": "not it"}, timeout=TIMEOUT)
            assert not answer["success"] and "wrong secret" in answer["message"], answer
            client.wait_closed()
            client.close()
        # requests that follow a refused one (nvim-dap sends its configuration right behind launch) are not
        # read: no internal error, whenever they come
        for attempt in range(20):
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
                sock.sendall(frame({"seq": 1, "type": "request", "command": "initialize", "arguments": {}})
                             + frame({"seq": 2, "type": "request", "command": "launch", "arguments": {}}))
                received = b""
                while b'"request_seq": 2' not in received and b'"request_seq":2' not in received:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        break
                    received += chunk
                try:
                    for seq in range(3, 3 + attempt):
                        sock.sendall(frame({"seq": seq, "type": "request", "command": "threads"}))
                except OSError:
                    pass
                assert closed_by_server(sock, TIMEOUT)
        # the secret as a launch argument (VS Code, nvim-dap, dape) or with initialize
        client = connect_tcp(port, secret=None)
        client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
        assert launch_answer(client, TIMEOUT, state=str(DUMP), secret=secret)["success"]
        assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"
        client.close()
        client = connect_tcp(port)
        client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
        assert launch_answer(client, TIMEOUT, state=str(DUMP))["success"]
        client.close()
    finally:
        stop(process)
    assert not secret_file.exists(), "the secret file outlived its server"
    stderr.finish()
    assert "internal error" not in stderr.text, stderr.text


def _home_of(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"HOME="))


def test_the_secret_file_stays_the_users(tmp_path):
    """A secret file in a folder others may change is refused, the server does not start."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = subprocess.run([sys.executable, "-m", "aspace_dap", "--port", "0", "--secret-file",
                             str(shared / "s.secret")], capture_output=True, text=True, cwd=ROOT,
                            env=_server_env(), timeout=TIMEOUT)
    assert result.returncode == 1 and "may be changed by other users" in result.stderr, result.stderr
    assert not list(shared.iterdir())


def test_plain_tcp_only_with_a_flag_that_says_so():
    process, stderr, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0", "--insecure-tcp"])
    try:
        stderr.wait_for_line("aspace-dap: warning: --insecure-tcp: every user of this machine can connect")
        client = connect_tcp(port, secret=None)
        client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
        assert launch_answer(client, TIMEOUT, state=str(DUMP))["success"]
        client.close()
    finally:
        stop(process)
    for wrong in (["--insecure-tcp"], ["--socket", "/tmp/x", "--port", "0"], ["--port", "0", "--insecure-tcp",
                                                                            "--secret-file", "/tmp/x"]):
        result = subprocess.run([sys.executable, "-m", "aspace_dap", *wrong], capture_output=True, text=True,
                                cwd=ROOT, env=_server_env(), timeout=TIMEOUT)
        assert result.returncode == 2 and "error:" in result.stderr, (wrong, result.stderr)


# ---- a Unix-domain socket only its user can connect to -----------------------------------------

def start_socket_server(path: Path, env: dict | None = None) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "aspace_dap", "--socket", str(path)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=ROOT, env={**_server_env(), **(env or {})})
    line = process.stderr.readline().decode()
    assert line.startswith(f"aspace-dap: listening on {path} "), line + process.stderr.read().decode()
    return process


def connect_unix(path: Path) -> DapTestClient:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    sock.connect(str(path))
    stream = JsonIOStream.from_socket(sock, name="server")
    return DapTestClient(stream, sock.sendall, stream.close)


def test_a_unix_socket_is_served_to_its_user_only():
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="aspace-socket-test-"))
    folder.chmod(0o755)  # every user may reach the socket: only its own mode keeps them out
    path = folder / "aspace.sock"
    process = start_socket_server(path)
    try:
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        client = connect_unix(path)  # no secret: the socket's permissions say who may connect
        client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
        assert launch_answer(client, TIMEOUT, state=str(DUMP))["success"]
        assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"
        client.close()
        if os.geteuid() == 0 and shutil.which("setpriv"):  # another user is refused by the file's mode
            other = subprocess.run([*NOBODY, python_for(NOBODY), "-S", "-c",
                                    f"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r})"],
                                   capture_output=True, text=True, timeout=TIMEOUT)
            assert other.returncode != 0 and "PermissionError" in other.stderr, other.stderr
        # a second server does not take a live socket over
        second = subprocess.run([sys.executable, "-m", "aspace_dap", "--socket", str(path)], capture_output=True,
                                text=True, cwd=ROOT, env=_server_env(), timeout=TIMEOUT)
        assert second.returncode == 1 and "another server is listening there" in second.stderr, second.stderr
    finally:
        stop(process)
    assert not path.exists(), "the socket outlived its server"
    folder.rmdir()


def test_a_stale_socket_is_taken_over_and_anything_else_is_left_alone(tmp_path):
    stale = tmp_path / "stale.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(stale))
    dead.close()  # a socket file nobody listens on, as a killed server leaves it
    process = start_socket_server(stale)
    client = connect_unix(stale)
    client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
    client.close()
    process.kill()  # SIGKILL: the socket file stays
    process.wait()
    assert stale.exists()
    stop(start_socket_server(stale))  # ... and is taken over again
    plain = tmp_path / "notes.txt"
    plain.write_text("mine\n")
    link = tmp_path / "link.sock"
    link.symlink_to(plain)
    for path in (plain, link, tmp_path):
        result = subprocess.run([sys.executable, "-m", "aspace_dap", "--socket", str(path)], capture_output=True,
                                text=True, cwd=ROOT, env=_server_env(), timeout=TIMEOUT)
        assert result.returncode == 1 and "is not a socket of yours" in result.stderr, (path, result.stderr)
    assert plain.read_text() == "mine\n" and link.is_symlink()


# ---- handshakes and places ----------------------------------------------------------------------

def test_connections_that_never_initialize_are_closed_and_a_new_client_is_served(monkeypatch):
    """64 connections that send nothing took every place for good; now each is closed
    MAX_INITIALIZE_SECONDS after it connected, and a 65th client is served by then."""
    monkeypatch.setenv("ASPACE_MAX_INITIALIZE_SECONDS", "3")
    process, stderr, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"])
    idle = []
    try:
        for _ in range(64):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))
        started = time.monotonic()
        client = connect_tcp(port)
        answer = client.request_raw("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
        waited = time.monotonic() - started
        assert answer["success"], answer
        assert launch_answer(client, TIMEOUT, state=str(DUMP))["success"]
        client.close()
        assert all(closed_by_server(sock, TIMEOUT) for sock in idle)
        stderr.wait_for_line("aspace-dap: disconnected a client that did not complete initialize (presenting "
                             "the server's secret) within 3 s")
        print(f"the 65th client was answered {waited:.1f} s after it connected (limit 3 s)")
        assert waited < 2 * 3 + 15  # a place is waited for up to twice the limit; a busy machine's allowance
    finally:
        for sock in idle:
            sock.close()
        stop(process)


def test_a_client_that_leaves_frees_its_place_at_once(tmp_path, monkeypatch):
    """A client that leaves while a long request runs (a save of 3 GiB) is gone at once: its request is
    cancelled and the only place goes to the next client, which is answered long before the save could end."""
    from test_limits import big_sparse_dump

    monkeypatch.setenv("ASPACE_MAX_SESSIONS", "1")
    monkeypatch.setenv("ASPACE_MAX_INITIALIZE_SECONDS", "60")
    dump = big_sparse_dump(tmp_path)
    process, stderr, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"])
    try:
        for round_ in range(2):
            leaving = connect_tcp(port)
            leaving.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)
            assert launch_answer(leaving, TIMEOUT, state=str(dump))["success"]
            leaving.send("saveDump", {"path": str(tmp_path / f"saved-{round_}")})
            deadline = time.monotonic() + TIMEOUT
            while not [p for p in tmp_path.iterdir() if p.name.startswith(f".saved-{round_}.")]:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            leaving.close()
            started = time.monotonic()
            client = connect_tcp(port)
            assert client.request("initialize", {"adapterID": "x"}, timeout=TIMEOUT)["supportsCancelRequest"]
            waited = time.monotonic() - started
            client.close()
            print(f"round {round_}: the next client was answered after {waited:.2f} s")
            assert waited < 8, waited  # the save alone takes ~15 s
            deadline = time.monotonic() + TIMEOUT  # the cancelled save removes what it wrote
            while [p for p in tmp_path.iterdir() if p.name.startswith(".saved")]:
                assert time.monotonic() < deadline, list(tmp_path.iterdir())
                time.sleep(0.05)
        assert not (tmp_path / "saved-0").exists() and not (tmp_path / "saved-1").exists()
    finally:
        stop(process)


def test_the_readme_configurations_read_the_secret_where_the_server_writes_it():
    """nvim-dap's enrich_config, dape's :secret and the extension read ~/.aspace-dap/port-4711.secret for a
    server on port 4711; the socket adapters start or reach `aspace-dap --socket`."""
    import re

    from aspace_dap.dap.secret import default_secret_file

    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r'"(~/\.aspace-dap/port-4711\.secret)"', readme))
    assert named == {"~/.aspace-dap/port-4711.secret"}
    assert default_secret_file(4711) == Path(os.path.expanduser("~/.aspace-dap/port-4711.secret"))
    assert 'args = { "--socket", "${pipe}" }' in readme and 'host "127.0.0.1" port 4711' in readme
    extension = (ROOT / "vscode-extension" / "src" / "serverSecret.ts").read_text()
    assert "'.aspace-dap', `port-${port}.secret`" in extension


def _start_refused(home: Path) -> str:
    result = subprocess.run([sys.executable, "-m", "aspace_dap", "--port", "0"], capture_output=True, text=True,
                            cwd=ROOT, env={**_server_env(), "HOME": str(home)}, timeout=TIMEOUT)
    assert result.returncode == 1, result.stderr
    return result.stderr


def test_the_secret_folder_is_no_symbolic_link_and_no_shared_sticky_folder(tmp_path):
    """~/.aspace-dap as a symbolic link (to a folder of the user's, even) or as a sticky folder others may
    write (where another user could make the secret file's name first) is refused: the server does not start."""
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (home / ".aspace-dap").symlink_to(elsewhere)
    assert "is a symbolic link" in _start_refused(home)
    (home / ".aspace-dap").unlink()
    (home / ".aspace-dap").mkdir()
    (home / ".aspace-dap").chmod(0o1777)
    assert "may be changed by other users (mode 1777)" in _start_refused(home)
    assert not list(elsewhere.iterdir()) and not list((home / ".aspace-dap").iterdir())


def test_a_killed_servers_secret_file_is_removed_by_the_next_server(tmp_path):
    """SIGKILL leaves the secret file behind; the next server to start removes it, and leaves a living
    server's."""
    home = tmp_path / "home"
    home.mkdir()
    servers = [start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"], env={"HOME": str(home)})
               for _ in range(2)]
    (killed, _, killed_port), (living, _, living_port) = servers
    folder = home / ".aspace-dap"
    try:
        killed.kill()
        killed.wait(TIMEOUT)
        assert (folder / f"port-{killed_port}.secret").exists()
        process, _, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"], env={"HOME": str(home)})
        try:
            assert sorted(p.name for p in folder.iterdir()) == sorted([f"port-{living_port}.secret",
                                                                      f"port-{port}.secret"])
        finally:
            stop(process)
    finally:
        stop(living)
    assert not list(folder.iterdir())
