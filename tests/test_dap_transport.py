"""The trio transport: in-process over memory streams, then real processes over stdio and TCP."""

import os
import select
import subprocess
import sys
import threading
import time

import pytest
import trio
import trio.testing

from aspace_dap.dap.dispatch import Dispatcher, HandlerTable
from aspace_dap.dap.listeners import _is_loopback, serve_tcp
from aspace_dap.dap.transport import run_server, serve_connection
from dap_client import (
    REPO_ROOT,
    FrameReader,
    RequestFailed,
    connect_tcp,
    frame,
    minimal_server_args,
    _server_env,
    start_server_subprocess,
    start_tcp_server_subprocess,
)
from dap_schema import validate_message


class MemoryClient:
    def __init__(self, stream):
        self.stream = stream
        self.reader = FrameReader()
        self.received = []
        self.seq = 0

    async def send(self, command, arguments=None):
        self.seq += 1
        message = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        await self.stream.send_all(frame(message))
        return self.seq

    async def response(self, request_seq):
        while True:
            for message in self.received:
                if message["type"] == "response" and message["request_seq"] == request_seq:
                    return message
            data = await self.stream.receive_some(65536)
            assert data, "server closed the stream"
            self.received += self.reader.feed(data)

    async def until_closed(self):
        while data := await self.stream.receive_some(65536):
            self.received += self.reader.feed(data)


def slow_table(started: threading.Event, release: threading.Event | None = None):
    table = HandlerTable()
    table.request("initialize")(lambda ctx, args: {"supportsConfigurationDoneRequest": True})
    table.request("threads")(lambda ctx, args: {"threads": [{"id": 1, "name": "wave 0"}]})

    @table.request("evaluate", required={"expression": str})
    def evaluate(ctx, args):
        started.set()
        # Only a cancel that arrives while this runs (or the test's release) can end it.
        while not ctx.cancelled and not (release and release.is_set()):
            threading.Event().wait(0.002)
        ctx.check_cancelled()
        return {"result": "released", "variablesReference": 0}

    return table


def serve_in_memory(dispatcher, script):
    async def main():
        server_stream, client_stream = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_connection, server_stream, dispatcher)
            await script(MemoryClient(client_stream))

    trio.run(main)


def test_cancel_is_read_while_a_handler_runs():
    started = threading.Event()
    dispatcher = Dispatcher(slow_table(started), outgoing_hook=validate_message)

    async def script(client):
        await client.response(await client.send("initialize", {"adapterID": "t"}))
        evaluate = await client.send("evaluate", {"expression": "forever"})
        await trio.to_thread.run_sync(started.wait)
        cancel = await client.send("cancel", {"requestId": evaluate})
        assert (await client.response(cancel))["success"]
        answer = await client.response(evaluate)
        assert answer["success"] is False and answer["message"] == "cancelled"
        threads = await client.response(await client.send("threads"))
        assert threads["body"]["threads"][0]["name"] == "wave 0"
        await client.response(await client.send("disconnect"))
        await client.until_closed()  # the server ends the connection after disconnect
        assert [m["seq"] for m in client.received] == list(range(1, len(client.received) + 1))

    serve_in_memory(dispatcher, script)


def test_responses_keep_request_order_and_eof_finishes_queued_work():
    dispatcher = Dispatcher(slow_table(threading.Event()), outgoing_hook=validate_message)

    async def script(client):
        await client.send("initialize", {"adapterID": "t"})
        for _ in range(20):
            await client.send("threads")
        await client.stream.send_stream.aclose()  # the client stops writing but still reads
        await client.until_closed()
        responses = [m for m in client.received if m["type"] == "response"]
        assert [m["request_seq"] for m in responses] == list(range(1, 22))
        assert all(m["success"] for m in responses)

    serve_in_memory(dispatcher, script)


def test_a_vanished_client_ends_the_connection_quietly():
    started, release = threading.Event(), threading.Event()
    dispatcher = Dispatcher(slow_table(started, release))

    async def script(client):
        await client.send("initialize", {"adapterID": "t"})
        await client.send("evaluate", {"expression": "forever"})
        await trio.to_thread.run_sync(started.wait)
        await client.stream.aclose()
        release.set()  # the answer now has nowhere to go

    serve_in_memory(dispatcher, script)  # returns: the writer found the stream broken


def test_tcp_on_all_interfaces_warns_and_reports_its_port(capsys):
    async def main():
        async with trio.open_nursery() as nursery:
            port = await nursery.start(serve_tcp, lambda: Dispatcher(slow_table(threading.Event())), 0, "0.0.0.0")
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = MemoryClient(stream)
            answer = await client.response(await client.send("initialize", {"adapterID": "t"}))
            assert answer["success"]
            await stream.aclose()
            nursery.cancel_scope.cancel()
        return port

    port = trio.run(main)
    err = capsys.readouterr().err
    assert "warning: listening on 0.0.0.0" in err
    assert f"aspace-dap: listening on 0.0.0.0:{port}\n" in err


def test_loopback_detection_and_bad_port():
    assert _is_loopback("127.0.0.1") and _is_loopback("::1") and _is_loopback("localhost")
    assert not _is_loopback("0.0.0.0") and not _is_loopback("192.168.1.4") and not _is_loopback("example.org")
    assert run_server(Dispatcher, port=70000) == 2


# ---- real processes ------------------------------------------------------------


def full_session(client):
    caps = client.request("initialize", {"adapterID": "aspace", "supportsProgressReporting": True})
    assert caps["supportsCancelRequest"] is True
    client.wait_event("initialized")
    launch = client.send("launch", {"program": "kernel.hsaco"})
    assert client.request("configurationDone") is None
    assert client.wait_response(launch)["success"]
    client.wait_event("stopped")
    kinds = [(m["type"], m.get("command") or m.get("event")) for m in client.messages]
    assert kinds.index(("response", "configurationDone")) < kinds.index(("response", "launch")) \
        < kinds.index(("event", "stopped"))
    assert [e["event"] for e in client.messages if e.get("event", "").startswith("progress")] == [
        "progressStart", "progressUpdate", "progressEnd"]
    assert client.request("threads")["threads"][1]["name"] == "wave 1"


def test_stdio_session():
    client = start_server_subprocess(minimal_server_args())
    try:
        full_session(client)
        # a handler printing to stdout must not corrupt the protocol stream
        assert client.request("evaluate", {"expression": "print"})["result"] == "print"
        assert client.request("threads")["threads"]
        assert client.request("disconnect") is None
        client.wait_closed()
    finally:
        client.close()
    assert client.process.returncode == 0
    assert "a stray line on stdout" in client.stderr.text


def test_stdio_server_exits_when_stdin_closes():
    client = start_server_subprocess(minimal_server_args())
    try:
        client.request("initialize", {"adapterID": "aspace"})
    finally:
        client.close()
    assert client.process.returncode == 0


def test_stdio_server_reads_requests_from_a_file_and_writes_answers_to_one(tmp_path):
    """A file cannot be waited on with epoll: stdin and stdout that are files are read and written blocking."""
    requests, answers = tmp_path / "requests", tmp_path / "answers"
    requests.write_bytes(frame({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "t"}})
                         + frame({"seq": 2, "type": "request", "command": "threads"}))
    with open(requests, "rb") as stdin, open(answers, "wb") as stdout:
        done = subprocess.run([sys.executable, *minimal_server_args()], stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, cwd=REPO_ROOT, env=_server_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    messages = FrameReader().feed(answers.read_bytes())
    assert [(m["type"], m.get("command") or m.get("event")) for m in messages] == [
        ("response", "initialize"), ("event", "initialized"), ("response", "threads")]
    assert messages[2]["success"] is False and "no GPU state" in messages[2]["message"]


def test_stdio_server_on_a_terminal_leaves_it_in_blocking_mode():
    """A terminal's open file is shared with the shell and with the server's own stderr: it stays blocking."""
    pty = pytest.importorskip("pty")
    import tty
    master, terminal = pty.openpty()
    tty.setraw(terminal)
    process = subprocess.Popen([sys.executable, *minimal_server_args()], stdin=terminal, stdout=terminal,
                               stderr=terminal, cwd=REPO_ROOT, env=_server_env())
    try:
        os.write(master, frame({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "t"}}))
        reader, messages, deadline = FrameReader(), [], time.monotonic() + 30
        while len(messages) < 2 and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                messages += reader.feed(os.read(master, 65536))
        assert [m.get("command") or m.get("event") for m in messages] == ["initialize", "initialized"]
        assert os.get_blocking(terminal), "the server put the terminal into non-blocking mode"
        os.write(master, frame({"seq": 2, "type": "request", "command": "disconnect"}))
        assert process.wait(30) == 0
    finally:
        process.kill()
        process.wait()
        os.close(master)
        os.close(terminal)


@pytest.fixture(scope="module")
def tcp_port():
    process, stderr, port = start_tcp_server_subprocess(minimal_server_args(port=0))
    assert "warning" not in stderr.text
    yield port
    process.terminate()
    process.wait(30)


def test_tcp_connections_have_their_own_session(tcp_port):
    first, second = connect_tcp(tcp_port), connect_tcp(tcp_port)
    try:
        full_session(first)
        second.request("initialize", {"adapterID": "aspace"})
        with pytest.raises(RequestFailed, match="no GPU state is loaded"):
            second.request("threads")
        assert first.request("disconnect") is None
        first.wait_closed()
        second.request("configurationDone")
        assert second.request("launch") is None  # after configurationDone, answered at once
        assert second.request("threads")["threads"]
    finally:
        first.close()
        second.close()
    third = connect_tcp(tcp_port)
    try:
        third.request("initialize", {"adapterID": "aspace"})
        third.request("disconnect")
        third.wait_closed()
    finally:
        third.close()


def test_servers_keep_their_megabyte_buffers_on_glibc():
    """Both servers tune glibc's allocator at start (dap/allocator.py); on glibc it must take."""
    import platform
    import sys

    from aspace_dap.dap.allocator import keep_freed_buffers
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's mallopt is what is tuned")
    assert keep_freed_buffers() is True
