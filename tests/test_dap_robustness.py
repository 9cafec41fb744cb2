"""Hostile and careless clients, against server processes over stdio and over TCP.

The first part drives the minimal handler set (tests/dap_client.py) to pin the
transport and dispatcher; the second drives the product's server
(`python -m aspace_dap`) on the lds_tiles dump with requests a real session can
get wrong: stale handles, huge counts, bad references, out-of-range focus, garbage
expressions.

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
    start_server,
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


@pytest.mark.parametrize("depth", [1000, 5000, 200_000])
def test_requests_nested_too_deep_to_read_are_answered(client, depth):
    """Nested past the JSON reader's depth, a request is still answered (with an error), or its client
    would wait forever; so is a request whose body breaks off after its seq and command."""
    ready(client)
    deep = b"[" * depth + b"]" * depth
    client.send_raw(frame(b'{"seq": 901, "type": "request", "command": "evaluate", "arguments": {"x": ' + deep + b"}}"))
    answer = client.wait_response(901)
    assert not answer["success"] and "nested too deeply" in answer["message"], answer
    client.send_raw(frame(b'{"seq": 902, "type": "request", "command": "threads", "arguments": {"a": [1,}'))
    answer = client.wait_response(902)
    assert not answer["success"] and "not JSON" in answer["message"], answer
    still_works(client)


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
    """NaN is not JSON, and a request is read only as deep as the JSON reader goes: both are refused,
    each with an error response since their seq and command can be read."""
    ready(client)
    client.send_raw(frame(b'{"seq": 905, "type": "request", "command": "threads", "x": NaN}'))
    answer = client.wait_response(905)
    assert not answer["success"] and "not JSON" in answer["message"], answer
    deep = b'{"seq": 906, "type": "request", "command": "threads", "arguments": {"a": ' + b"[" * 50_000 \
        + b"]" * 50_000 + b"}}"
    client.send_raw(frame(deep))
    answer = client.wait_response(906)
    assert not answer["success"] and "nested too deeply" in answer["message"], answer
    skipped_with_output(client, frame(b'[' * 50_000 + b']' * 50_000), "nested too deeply")
    still_works(client)


# ---- the product's server (`python -m aspace_dap`) on a real dump ---------------------------

LDS_TILES = "examples/lds_tiles/dumps/gfx90a.O0"


def launched(client):
    client.request("initialize", {"adapterID": "aspace-gpu", "supportsInvalidatedEvent": True})
    seq = client.send("launch", {"state": LDS_TILES})
    client.request("configurationDone")
    assert client.wait_response(seq)["success"]
    return client.wait_event("stopped")["body"]["threadId"]


@pytest.fixture(scope="module")
def real():
    """One launched session shared by the tests below; each leaves it usable for the next."""
    client = start_server()
    client.thread_id = launched(client)
    yield client
    client.close()
    assert "Traceback" not in client.stderr.text


def top_frame(client) -> int:
    return client.request("stackTrace", {"threadId": client.thread_id})["stackFrames"][0]["id"]


def locals_ref(client, frame_id: int) -> int:
    scopes = {s["name"]: s for s in client.request("scopes", {"frameId": frame_id})["scopes"]}
    return scopes["Locals"]["variablesReference"]


def lds_reference(client) -> str:
    spaces = {s["name"]: s for s in client.request("memorySpaces", {"threadId": client.thread_id})["spaces"]}
    return spaces["local"]["memoryReference"]


def real_still_works(client):
    names = [v["name"] for v in client.request("variables", {"variablesReference": locals_ref(client, top_frame(client))})["variables"]]
    assert "tx" in names


def user_error(client, command, arguments, expected):
    """A request the server refuses with a message, never as an internal error."""
    response = error_for(client, command, arguments, expected)
    assert response["body"]["error"]["id"] != 99, response
    return response


def test_real_before_initialize_and_bad_launch():
    client = start_server()
    try:
        error_for(client, "threads", None, "before initialize")
        error_for(client, "stackTrace", {"threadId": 1}, "before initialize")
        client.request("initialize", {"adapterID": "aspace-gpu"})
        # launch answers wait for configurationDone, failures included
        wrong_type = client.send("launch", {"state": 5})
        client.request("configurationDone")
        answer = client.wait_response(wrong_type)
        assert not answer["success"] and "'state' must be a string, not number" in answer["message"]
        user_error(client, "threads", None, "no dump is open")
        user_error(client, "launch", {"state": "/nonexistent/dump"}, "cannot open the dump /nonexistent/dump")
        user_error(client, "launch", {}, "'state' is required")
        assert client.request("launch", {"state": LDS_TILES}) is None
        assert client.request("threads")["threads"][0]["name"].startswith("AMDGPU Wave ")
    finally:
        client.close()


def test_real_broken_framing_and_bodies(real):
    for raw, expected in [
        (b"Content-Length: abc\r\n\r\n{}", "bad Content-Length"),
        (b"Content-Length: 1000000000000000\r\n\r\n", "over the limit"),
        (frame(b"{not json"), "not JSON"),
        (frame(b"\xc3\x28{}"), "not UTF-8"),
        (frame(b'{"seq": 7, "type": "request", "command": null}'), "'command'"),
    ]:
        real.send_raw(raw)
        assert expected in real.wait_event("output")["body"]["output"]
        real_still_works(real)


def test_real_wrong_types_and_unknown_commands(real):
    user_error(real, "variables", {"variablesReference": "2"}, "'variablesReference' must be an integer, not string")
    user_error(real, "stackTrace", {"threadId": 1.5}, "'threadId' must be an integer")
    user_error(real, "evaluate", {"expression": ["$lane"]}, "'expression' must be a string, not array")
    user_error(real, "laneValues", {"threadId": real.thread_id, "expression": None}, "'expression' must be a string")
    user_error(real, "setFocus", {"lane": "3"}, "'lane' must be an integer")
    user_error(real, "readMemory", {"memoryReference": 64, "count": 4}, "'memoryReference' must be a string")
    user_error(real, "stepBack", {"threadId": 1}, "unsupported request: stepBack")
    user_error(real, "continue", {"threadId": 4242}, "unknown threadId 4242")
    # resuming a dump is answered, not refused: refusals make clients drop their stopped state
    assert real.request("continue", {"threadId": real.thread_id}) == {"allThreadsContinued": False}
    assert "post-mortem" in real.wait_event("output")["body"]["output"]
    real_still_works(real)


def test_real_stale_references(real):
    frame_id = top_frame(real)
    ref = locals_ref(real, frame_id)
    values = {v["name"]: v["value"] for v in real.request("variables", {"variablesReference": ref})["variables"]}
    lanes = real.request("laneValues", {"threadId": real.thread_id, "frameId": frame_id, "expression": "tx"})["lanes"]
    other = next(row["lane"] for row in lanes if row["active"] and row["value"] != values["tx"])
    real.request("setFocus", {"threadId": real.thread_id, "lane": other})
    real.wait_event("stopped")
    # variable handles handed out before the focus change are gone, not silently re-aimed
    user_error(real, "variables", {"variablesReference": ref}, f"stale variablesReference {ref}")
    user_error(real, "setVariable", {"variablesReference": ref, "name": "tx", "value": "1"}, "stale")
    user_error(real, "variables", {"variablesReference": 0}, "variablesReference 0")
    # a frame id names (wave, depth): VS Code keeps the selected frame across `invalidated`, and gets
    # that frame of the newly focused lane
    assert top_frame(real) == frame_id
    fresh = {v["name"]: v["value"] for v in real.request(
        "variables", {"variablesReference": locals_ref(real, frame_id)})["variables"]}
    assert fresh["tx"] == next(row["value"] for row in lanes if row["lane"] == other)
    user_error(real, "scopes", {"frameId": frame_id + 50}, f"unknown frameId {frame_id + 50}")
    user_error(real, "scopes", {"frameId": 10**9}, "unknown frameId")


def test_real_huge_counts_and_negative_offsets(real):
    lds = lds_reference(real)
    user_error(real, "readMemory", {"memoryReference": lds, "count": 2**40}, "over the limit")
    user_error(real, "readMemory", {"memoryReference": lds, "count": -1}, "over the limit")
    user_error(real, "readMemory", {"memoryReference": lds, "count": 4, "offset": -8}, "before address 0")
    user_error(real, "readMemory", {"memoryReference": lds, "count": 4, "offset": -2**70}, "'offset' is out of range")
    # far past the end is unreadable, not an error
    beyond = real.request("readMemory", {"memoryReference": lds, "count": 16, "offset": 2**40})
    assert beyond["unreadableBytes"] == 16 and "data" not in beyond
    frame_id = top_frame(real)
    ref = locals_ref(real, frame_id)
    every = real.request("variables", {"variablesReference": ref})["variables"]
    assert real.request("variables", {"variablesReference": ref, "count": 2**31})["variables"] == every
    assert real.request("variables", {"variablesReference": ref, "start": 2**31})["variables"] == []
    user_error(real, "variables", {"variablesReference": ref, "start": -1}, "start must not be negative")
    user_error(real, "variables", {"variablesReference": ref, "count": -5}, "count must not be negative")
    stack = real.request("stackTrace", {"threadId": real.thread_id, "levels": 2**31})
    assert len(stack["stackFrames"]) == stack["totalFrames"] >= 1
    assert real.request("stackTrace", {"threadId": real.thread_id, "startFrame": 2**31})["stackFrames"] == []
    user_error(real, "stackTrace", {"threadId": real.thread_id, "startFrame": -1}, "startFrame must not be negative")
    user_error(real, "stackTrace", {"threadId": real.thread_id, "levels": 2**70}, "'levels' is out of range")
    user_error(real, "modules", {"startModule": -1}, "startModule must not be negative")
    user_error(real, "evaluate", {"expression": "x/100000000xb " + lds, "context": "repl"}, "over the limit")
    real_still_works(real)


def test_real_memory_references_that_do_not_parse(real):
    for reference, expected in [
        ("garbage", "not a memory reference"),
        ("local#zz", "not a memory reference"),
        ("", "not a memory reference"),
        ("nosuch#0x10", "unknown address space 'nosuch'"),
        ("private_lane@wave99.lane0#0x0", "no wave with id 99"),
        ("private_lane@wave0.lane64#0x0", "lane 64 is outside wave 0"),
        ("private_lane@wave0.lane-1#0x0", "unknown memory context"),
        ("local@wg(9,9,9)#0x0", "no workgroup (9,9,9)"),
    ]:
        user_error(real, "readMemory", {"memoryReference": reference, "count": 4}, expected)
    user_error(real, "writeMemory", {"memoryReference": "garbage", "data": "AAAA"}, "not a memory reference")
    user_error(real, "writeMemory", {"memoryReference": lds_reference(real), "data": "!!"}, "not base64")
    real_still_works(real)


def test_real_focus_out_of_range(real):
    before = real.request("setFocus", {"threadId": real.thread_id})
    for arguments, expected in [
        ({"threadId": real.thread_id, "lane": 64}, "lane 64 is outside wave"),
        ({"threadId": real.thread_id, "lane": -1}, "lane -1 is outside"),
        ({"lane": 2**40}, "outside"),
        ({"threadId": 4242}, "unknown threadId 4242"),
        ({"threadId": 0}, "unknown threadId 0"),
    ]:
        user_error(real, "setFocus", arguments, expected)
    user_error(real, "evaluate", {"expression": "lane 99", "context": "repl"}, "lane 99 is outside")
    user_error(real, "evaluate", {"expression": "wave 77", "context": "repl"}, "no wave with id 77")
    # a refused focus change leaves the focus where it was
    assert real.request("evaluate", {"expression": "$lane"})["result"] == str(before["lane"])
    real_still_works(real)


@pytest.mark.parametrize("expression, expected", [
    ("*(", "unexpected"),
    ("", "unexpected"),
    ("$nosuchreg", "unknown register $nosuchreg"),
    ("$v9999", "unknown register $v9999"),
    ("1/0", "division by zero"),
    ("tx % 0", "division by zero"),
    ("nosuchvar", 'no symbol "nosuchvar"'),
    ("(" * 5000 + "1" + ")" * 5000, "nested too deeply"),
    ("x/4xw nowhere", 'no symbol "nowhere"'),
    ("x/4xw tx + 1", "tx + 1 is not in memory; give an address with its space"),
])
def test_real_garbage_expressions(real, expression, expected):
    repl_only = expression.startswith("x/")
    for context in ("repl",) if repl_only else ("repl", "watch", "hover"):
        user_error(real, "evaluate", {"expression": expression, "context": context}, expected)
    if not repl_only:
        # a lane-wide evaluation reports what fails per lane; what cannot be parsed fails the request
        response = real.request_raw("laneValues", {"threadId": real.thread_id, "expression": expression})
        if response["success"]:
            rows = response["body"]["lanes"]
            assert len(rows) == 64 and all(expected in row["value"] for row in rows), rows[0]
        else:
            assert expected in response["message"] and response["body"]["error"]["id"] != 99
    assert real.request("evaluate", {"expression": "tx + 1", "context": "watch"})["type"] == "int"


def test_real_lane_values_on_a_thread_that_does_not_exist(real):
    user_error(real, "laneValues", {"threadId": 999, "expression": "$lane"}, "unknown threadId 999")
    user_error(real, "laneValues", {"threadId": -1, "expression": "$lane"}, "unknown threadId -1")
    user_error(real, "laneValues", {"threadId": 2**40, "expression": "$lane"}, "unknown threadId")
    rows = real.request("laneValues", {"threadId": real.thread_id, "expression": "$lane"})["lanes"]
    assert [row["value"] for row in rows] == [str(lane) for lane in range(64)]
