"""Hostile and careless clients, against a real server process over stdio and over TCP.

Each abuse must get an error response (when the request can be identified) or
be skipped with an `output` event, and the next valid request must still work.
Every message the server sends is schema-checked by the client.
"""

import pytest

from dap_client import (
    RequestFailed,
    connect_tcp,
    frame,
    minimal_server_args,
    start_server_subprocess,
    start_tcp_server_subprocess,
)


@pytest.fixture(scope="module")
def tcp_server():
    process, stderr, port = start_tcp_server_subprocess(minimal_server_args(port=0))
    yield port, stderr
    process.terminate()
    process.wait(30)


@pytest.fixture(params=["stdio", "tcp"])
def client(request):
    if request.param == "stdio":
        client = start_server_subprocess(minimal_server_args())
        server_stderr = client.stderr
    else:
        port, server_stderr = request.getfixturevalue("tcp_server")
        client = connect_tcp(port)
    yield client
    client.close()
    # the connection must have survived everything the test threw at it
    assert "connection ended by an internal error" not in server_stderr.text


def ready(client):
    client.request("initialize", {"adapterID": "aspace"})
    client.request("configurationDone")
    client.request("launch")


def still_works(client):
    assert client.request("threads")["threads"][0]["id"] == 1


def skipped_with_output(client, raw: bytes, expected: str):
    client.send_raw(raw)
    event = client.wait_event("output")
    assert expected in event["body"]["output"], event
    still_works(client)


def error_for(client, command, arguments, expected):
    with pytest.raises(RequestFailed) as failure:
        client.request(command, arguments)
    assert expected in failure.value.response["message"]
    return failure.value.response


def test_requests_before_initialize(client):
    error_for(client, "threads", None, "'threads' was sent before initialize")
    error_for(client, "launch", {}, "before initialize")
    ready(client)
    still_works(client)
    error_for(client, "initialize", {"adapterID": "again"}, "already")
    still_works(client)


def test_broken_framing(client):
    ready(client)
    skipped_with_output(client, b"Content-Length: abc\r\n\r\n{}", "bad Content-Length")
    skipped_with_output(client, b"Content-Length: -3\r\n\r\n{}", "bad Content-Length")
    skipped_with_output(client, b"Content-Type: text/plain\r\n\r\nhello", "no Content-Length")
    skipped_with_output(client, b"Content-Length: 1000000000000000\r\n\r\n", "over the limit")
    skipped_with_output(client, b"X-Flood: " + b"a" * 100_000, "header longer")
    # a message trickled in byte by byte still arrives whole
    for byte in frame({"seq": 900, "type": "request", "command": "threads"}):
        client.send_raw(bytes([byte]))
    assert client.wait_response(900)["success"]


def test_bodies_that_are_not_messages(client):
    ready(client)
    skipped_with_output(client, frame(b"{not json"), "not JSON")
    skipped_with_output(client, frame(b"\xc3\x28{}"), "not UTF-8")
    skipped_with_output(client, frame(b"[1, 2, 3]"), "JSON list")
    skipped_with_output(client, frame(b'{"seq": "7", "type": "request", "command": "threads"}'), "'seq'")
    skipped_with_output(client, frame(b'{"seq": 7, "type": "request", "command": null}'), "'command'")
    skipped_with_output(client, frame(b'{"seq": 7, "type": "gossip"}'), "unknown message type")


def test_ill_typed_arguments_get_error_responses(client):
    ready(client)
    client.send_raw(frame({"seq": 901, "type": "request", "command": "threads", "arguments": [1]}))
    answer = client.wait_response(901)
    assert not answer["success"] and "'arguments' must be an object" in answer["message"]
    still_works(client)
    error_for(client, "evaluate", {"expression": 5}, "'expression' must be a string, not number")
    error_for(client, "readMemory", {"memoryReference": "0x0", "count": "ten"}, "'count' must be an integer")
    error_for(client, "readMemory", {"memoryReference": "0x0"}, "'count' is required")
    still_works(client)


def test_unknown_commands(client):
    ready(client)
    error_for(client, "fooBar", {}, "unsupported request: fooBar")
    error_for(client, "setFocus", {"lane": 3}, "unsupported request: setFocus")
    still_works(client)


def test_huge_counts(client):
    ready(client)
    error_for(client, "readMemory", {"memoryReference": "0x0", "count": 10**30}, "'count' is out of range")
    error_for(client, "readMemory", {"memoryReference": "0x0", "count": 2**40}, "over the limit")
    error_for(client, "readMemory", {"memoryReference": "0x0", "count": -1}, "over the limit")
    body = client.request("readMemory", {"memoryReference": "0xf0", "count": 32})
    assert body["unreadableBytes"] == 16
    still_works(client)


def test_handler_crash_keeps_the_session(client):
    ready(client)
    response = error_for(client, "evaluate", {"expression": "crash"}, "internal error: IndexError")
    assert response["body"]["error"]["id"] == 99
    important = [e for e in client.events("output") if e["body"]["category"] == "important"]
    assert important and "Traceback" in important[0]["body"]["output"]
    still_works(client)
    assert client.request("disconnect") is None
    client.wait_closed()


def test_json_values_that_python_would_accept(client):
    ready(client)
    skipped_with_output(client, frame(b'{"seq": 5, "type": "request", "command": "threads", "x": NaN}'),
                        "not JSON")
    deep = b'{"seq": 6, "type": "request", "command": "threads", "arguments": {"a": ' + b"[" * 50_000 \
        + b"]" * 50_000 + b"}}"
    skipped_with_output(client, frame(deep), "not JSON")
