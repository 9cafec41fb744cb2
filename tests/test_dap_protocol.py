"""Framing (bytes in, messages out), the outgoing side of DapConnection, and the dispatcher."""

import json
import threading

import pytest
from hypothesis import given, settings, strategies as st

from aspace_dap.dap.dispatch import Dispatcher, HandlerTable, Reply
from aspace_dap.dap.errors import ArgumentError, OutgoingMessageError, RequestCancelled
from aspace_dap.errors import StateError
from aspace_dap.dap.protocol import DapConnection, Event, ProtocolProblem, Request, Response, parse_message
from dap_client import FrameReader, frame
from dap_schema import validate_message

INIT = {"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}}
THREADS = {"seq": 2, "type": "request", "command": "threads"}
EVAL = {"seq": 3, "type": "request", "command": "evaluate",
        "arguments": {"expression": "λ → \"quoted\"\r\n\r\nContent-Length: 9"}}


def drain(connection):
    out = []
    while (message := connection.next_message()) is not None:
        out.append(message)
    return out


def parse_all(data: bytes, **options):
    connection = DapConnection(**options)
    connection.receive_data(data)
    return drain(connection)


def test_one_message():
    [message] = parse_all(frame(INIT))
    assert message == Request(1, "initialize", {"adapterID": "x"}, INIT)
    assert message.raw == INIT


def test_missing_arguments_become_empty_dict():
    [message] = parse_all(frame(THREADS))
    assert message.arguments == {}


def test_several_messages_in_one_chunk_and_extra_headers():
    data = frame(INIT) + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + frame(THREADS)
    data += frame(EVAL)
    messages = parse_all(data)
    assert [m.seq for m in messages] == [1, 2, 3]
    assert messages[2].arguments["expression"].startswith("λ")


def test_split_at_every_byte_boundary():
    data = frame(INIT) + frame(EVAL) + frame(THREADS)
    for cut in range(len(data) + 1):
        connection = DapConnection()
        if cut:
            connection.receive_data(data[:cut])
        got = drain(connection)
        if data[cut:]:
            connection.receive_data(data[cut:])
        got += drain(connection)
        assert [m.seq for m in got] == [1, 3, 2], cut
        assert all(isinstance(m, Request) for m in got)


def test_byte_by_byte():
    data = frame(EVAL) + frame(INIT)
    connection = DapConnection()
    got = []
    for i in range(len(data)):
        connection.receive_data(data[i:i + 1])
        got += drain(connection)
    assert [m.seq for m in got] == [3, 1]


@settings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3), min_size=1, max_size=4),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=6),
)
def test_any_chunking_yields_the_same_messages(bodies, cuts):
    messages = [{"seq": i + 1, "type": "event", "event": "e", "body": body} for i, body in enumerate(bodies)]
    data = b"".join(frame(m) for m in messages)
    points = sorted({c % (len(data) + 1) for c in cuts})
    connection = DapConnection()
    got = []
    for start, end in zip([0, *points], [*points, len(data)]):
        if end > start:
            connection.receive_data(data[start:end])
        got += drain(connection)
    assert [m.raw for m in got] == messages


def recovers(data: bytes, **options):
    """Parse `data` followed by a good message; return the problems, check the message got through."""
    *problems, last = parse_all(data + frame(THREADS), **options)
    assert isinstance(last, Request) and last.command == "threads", last
    assert problems and all(isinstance(p, ProtocolProblem) and p.recoverable for p in problems)
    return problems


@pytest.mark.parametrize("header, expected", [
    (b"Content-Length: abc\r\n\r\n{}", "bad Content-Length"),
    (b"Content-Length: -5\r\n\r\n{}", "bad Content-Length"),
    (b"Content-Length: 99999999999999999999999999\r\n\r\n", "bad Content-Length"),
    (b"Content-Type: x\r\n\r\n{\"seq\": 1}", "no Content-Length"),
    (b"garbage without colon\r\n\r\n", "malformed header"),
    (b"{\"seq\": 1, \"type\": \"request\"}\r\n\r\n", "no Content-Length"),
])
def test_bad_headers_resynchronise(header, expected):
    problems = recovers(header)
    assert expected in problems[0].description


def test_garbage_glued_to_the_next_header():
    assert len(recovers(b"xx")) == 1


def test_header_over_the_limit():
    problems = recovers(b"X-Padding: " + b"a" * (64 * 1024 + 10) + b"\r\n\r\n")
    assert "header longer" in problems[0].description


def test_body_over_the_cap_is_skipped_without_buffering_it():
    connection = DapConnection(max_body_size=1000)
    connection.receive_data(b"Content-Length: 5000\r\n\r\n")
    [problem] = drain(connection)
    assert "over the limit of 1000" in problem.description
    for _ in range(50):
        connection.receive_data(b"z" * 1000)
        assert drain(connection) == []
        assert connection.buffered_bytes < 100
    connection.receive_data(frame(THREADS))
    [message] = drain(connection)
    assert message.command == "threads"


def test_garbage_flood_is_bounded():
    connection = DapConnection()
    connection.receive_data(b"\r\n\r\n")  # a header block without Content-Length
    assert len(drain(connection)) == 1
    for _ in range(100):
        connection.receive_data(b"Content-Lengt" + b"q" * 10_000)
        assert drain(connection) == []
        assert connection.buffered_bytes < 100
    connection.receive_data(b"Content-" + frame(INIT)[len(b"Content-"):])
    assert [m.command for m in drain(connection)] == ["initialize"]


def test_a_body_full_of_headers_costs_linear_time():
    """A lying Content-Length is detected by decoding what precedes a `Content-Length:` in the body;
    tried at every such place of a 16 MiB body, that was quadratic (~0.7 s for 256 KiB, most of an
    hour for 16 MiB, on the thread that reads every client)."""
    import time

    connection = DapConnection()
    body = b'{"seq": 1, "type": "request", "command": "threads"}' + b"}Content-Length:" * ((1 << 20) - 16)
    connection.receive_data(b"Content-Length: %d\r\n\r\n" % (len(body) + 100))
    start = time.process_time()
    for offset in range(0, len(body), 64 * 1024):
        connection.receive_data(body[offset:offset + 64 * 1024])
        assert drain(connection) == []
    assert time.process_time() - start < 2
    # the declared length stands: the rest of it, then the next message
    connection.receive_data(b" " * 100 + frame(THREADS))
    broken, threads = drain(connection)
    # the broken body still tells its seq and command, so it is answered with an error
    assert isinstance(broken, ProtocolProblem) and (broken.request_seq, broken.command) == (1, "threads")
    assert isinstance(threads, Request) and threads.command == "threads"


@pytest.mark.parametrize("body, expected", [
    (b"\xff\xfe{}", "not UTF-8"),
    (b"{\"seq\": 1,", "not JSON"),
    (b"{\"seq\": NaN, \"type\": \"event\", \"event\": \"x\"}", "not JSON"),
    (b"[1, 2]", "JSON list"),
    (b"\"text\"", "JSON str"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"{\"type\": \"request\", \"command\": \"threads\"}", "no 'seq'"),
    (b"{\"seq\": \"1\", \"type\": \"request\", \"command\": \"threads\"}", "'seq' must be an integer"),
    (b"{\"seq\": true, \"type\": \"request\", \"command\": \"threads\"}", "'seq' must be an integer"),
    (b"{\"seq\": 1, \"command\": \"threads\"}", "no string 'type'"),
    (b"{\"seq\": 1, \"type\": \"notice\"}", "unknown message type"),
    (b"{\"seq\": 1, \"type\": \"request\", \"command\": 7}", "no string 'command'"),
    (b"{\"seq\": 1, \"type\": \"response\", \"command\": \"x\", \"success\": true}", "request_seq"),
    (b"{\"seq\": 1, \"type\": \"event\", \"event\": null}", "no string 'event'"),
])
def test_bad_bodies_are_problems_and_framing_continues(body, expected):
    [problem] = recovers(frame(body))
    assert expected in problem.description
    assert problem.request_seq is None


def test_answerable_problem_keeps_seq_and_command():
    problem = parse_message(b'{"seq": 7, "type": "request", "command": "threads", "arguments": [1]}')
    assert problem == ProtocolProblem("'arguments' must be an object, not array", 7, "threads")


def test_client_responses_and_events_parse():
    response = parse_message(b'{"seq": 4, "type": "response", "request_seq": 9, "command": "runInTerminal",'
                             b' "success": false, "message": "no terminal"}')
    assert isinstance(response, Response) and response.request_seq == 9 and not response.success
    event = parse_message(b'{"seq": 5, "type": "event", "event": "custom", "body": [1]}')
    assert event == Event(5, "custom", [1], {})


def test_end_of_stream():
    connection = DapConnection()
    connection.receive_data(frame(INIT)[:-3])
    assert drain(connection) == []
    connection.receive_data(b"")
    assert connection.peer_closed
    [problem] = drain(connection)
    assert not problem.recoverable
    assert drain(connection) == []

    clean = DapConnection()
    clean.receive_data(frame(INIT))
    clean.receive_data(b"")
    assert [m.command for m in drain(clean)] == ["initialize"]


# ---- outgoing --------------------------------------------------------------


def test_outgoing_messages_are_numbered_and_framed():
    seen = []
    connection = DapConnection(outgoing_hook=seen.append)
    request = Request(3, "threads", {}, {})
    reader = FrameReader()
    out = reader.feed(connection.send_response(request, {"threads": []}))
    out += reader.feed(connection.send_event("initialized"))
    out += reader.feed(connection.send_error(5, "evaluate", "no symbol {name}", 1, {"name": "x"}))
    assert [m["seq"] for m in out] == [1, 2, 3]
    assert out[0] == {"seq": 1, "type": "response", "request_seq": 3, "success": True,
                      "command": "threads", "body": {"threads": []}}
    assert out[1] == {"seq": 2, "type": "event", "event": "initialized"}
    assert out[2]["message"] == "no symbol x"
    assert out[2]["body"]["error"] == {"id": 1, "format": "no symbol {name}", "variables": {"name": "x"}}
    assert seen == out


def test_non_ascii_and_lone_surrogates_stay_valid_on_the_wire():
    connection = DapConnection()
    data = connection.send_event("output", {"category": "console", "output": "λ \udcff"})
    header, body = data.split(b"\r\n\r\n", 1)
    assert int(header.split(b": ")[1]) == len(body)
    assert json.loads(body.decode("ascii"))["body"]["output"] == "λ \udcff"


@pytest.mark.parametrize("body", [{"x": object()}, {"x": float("nan")}])
def test_unencodable_body_raises_and_keeps_the_seq(body):
    connection = DapConnection()
    with pytest.raises(OutgoingMessageError):
        connection.send_event("output", body)
    [message] = FrameReader().feed(connection.send_event("initialized"))
    assert message["seq"] == 1


def test_answer_by_seq_needs_command():
    with pytest.raises(ValueError):
        DapConnection().send_response(3)


# ---- dispatcher (sans-io: feed bytes, read bytes) ----------------------------

class Client:
    """Drives a Dispatcher on this thread; every outgoing message is schema-checked."""

    def __init__(self, handlers=None, capabilities=None, **options):
        table = handlers or HandlerTable()
        if table.get("initialize") is None:
            caps = {"supportsConfigurationDoneRequest": True} if capabilities is None else capabilities
            table.request("initialize")(lambda ctx, args: dict(caps))
        self.dispatcher = Dispatcher(table, state={}, outgoing_hook=validate_message, **options)
        self.reader = FrameReader()
        self.seq = 0

    def message(self, command, arguments=None):
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        return frame(msg)

    def send(self, command, arguments=None):
        """Feed and run one request; return everything the dispatcher sent."""
        self.dispatcher.feed(self.message(command, arguments))
        return self.output()

    def output(self):
        return self.reader.feed(self.dispatcher.take_output())

    def initialize(self, **arguments):
        return self.send("initialize", {"adapterID": "test", **arguments})


def kinds(messages):
    return [(m["type"], m.get("command") or m.get("event")) for m in messages]


def test_initialize_then_initialized_event():
    client = Client()
    out = client.initialize()
    assert kinds(out) == [("response", "initialize"), ("event", "initialized")]
    assert out[0]["body"]["supportsCancelRequest"] is True
    assert client.dispatcher.client_capabilities == {"adapterID": "test"}
    again = client.initialize()
    assert not again[0]["success"] and "already" in again[0]["message"]


def test_requests_before_initialize_are_refused_then_work():
    table = HandlerTable()
    table.request("threads")(lambda ctx, args: {"threads": []})
    client = Client(table)
    [refused] = client.send("threads")
    assert not refused["success"] and "before initialize" in refused["message"]
    client.initialize()
    [ok] = client.send("threads")
    assert ok["success"] and ok["body"] == {"threads": []}


def launch_table(events_after=()):
    table = HandlerTable()

    @table.request("launch", optional={"program": str})
    def launch(ctx, args):
        ctx.state["launched"] = args.get("program", "")
        return Reply(events_after=list(events_after))

    return table


def test_launch_response_waits_for_configuration_done():
    stopped = ("stopped", {"reason": "exception", "threadId": 1})
    client = Client(launch_table([stopped]))
    client.initialize()
    assert client.send("launch", {"program": "a.out"}) == []
    assert client.dispatcher.state["launched"] == "a.out"  # the work is done, only the answer waits
    unsupported = client.send("setBreakpoints", {"source": {}})
    assert kinds(unsupported) == [("response", "setBreakpoints")]
    assert unsupported[0]["message"] == "unsupported request: setBreakpoints"
    out = client.send("configurationDone")
    assert kinds(out) == [("response", "configurationDone"), ("response", "launch"), ("event", "stopped")]
    assert out[1]["request_seq"] == 2 and out[1]["success"]
    # once configured, nothing is held any more
    assert kinds(client.send("launch")) == [("response", "launch"), ("event", "stopped")]


def test_launch_is_not_held_when_the_client_will_not_send_configuration_done():
    client = Client(launch_table(), capabilities={})
    client.initialize()
    assert kinds(client.send("launch")) == [("response", "launch")]


def test_failed_launch_is_held_too():
    table = HandlerTable()
    table.request("launch")(lambda ctx, args: (_ for _ in ()).throw(StateError("bad wave", "$.waves[0]")))
    client = Client(table)
    client.initialize()
    assert client.send("launch") == []
    out = client.send("configurationDone")
    assert kinds(out) == [("response", "configurationDone"), ("response", "launch")]
    assert out[1]["message"] == "$.waves[0]: bad wave" and out[1]["body"]["error"]["id"] == 1


def test_cancel_of_a_held_launch():
    client = Client(launch_table([("stopped", {"reason": "entry"})]))
    client.initialize()
    client.send("launch")
    out = client.send("cancel", {"requestId": 2})
    assert kinds(out) == [("response", "launch"), ("response", "cancel")]
    assert out[0]["success"] is False and out[0]["message"] == "cancelled"
    assert out[1]["success"] is True
    assert kinds(client.send("configurationDone")) == [("response", "configurationDone")]


def test_cancel_of_a_queued_request_answers_it_in_turn():
    calls = []
    table = HandlerTable()
    table.request("threads")(lambda ctx, args: calls.append(1) or {"threads": []})
    client = Client(table)
    client.initialize()
    dispatcher = client.dispatcher
    items = dispatcher.receive_bytes(client.message("threads") + client.message("threads")
                                     + client.message("cancel", {"requestId": 2}))
    assert kinds(client.output()) == [("response", "cancel")]  # cancel is answered on arrival
    for item in items:
        dispatcher.run(item)
    out = client.output()
    assert [(m["request_seq"], m["success"], m.get("message")) for m in out] == [(2, False, "cancelled"), (3, True, None)]
    assert calls == [1]


def test_cancel_reaches_a_running_handler():
    started, finished = threading.Event(), threading.Event()
    table = HandlerTable()

    @table.request("evaluate", required={"expression": str})
    def evaluate(ctx, args):
        started.set()
        while not ctx.cancelled:
            finished.wait(0.001)
        ctx.check_cancelled()

    client = Client(table)
    client.initialize()
    [item] = client.dispatcher.receive_bytes(client.message("evaluate", {"expression": "x"}))
    worker = threading.Thread(target=client.dispatcher.run, args=(item,))
    worker.start()
    started.wait()
    client.dispatcher.feed(client.message("cancel", {"requestId": 2}))
    worker.join()
    out = client.output()
    assert sorted(kinds(out)) == [("response", "cancel"), ("response", "evaluate")]
    [answer] = [m for m in out if m["command"] == "evaluate"]
    assert answer["message"] == "cancelled"


def test_cancel_by_progress_id_and_progress_events():
    table = HandlerTable()
    progress_ids = []

    @table.request("evaluate")
    def evaluate(ctx, args):
        progress = ctx.progress_start("Indexing DWARF", cancellable=True)
        progress_ids.append(progress)
        ctx.progress_update(progress, "CU 1 of 2", 150)
        ctx.output("indexing\n")
        ctx.send_event("cancelProbe")  # where the client's cancel arrives, in this test
        ctx.check_cancelled()
        ctx.progress_end(progress)

    client = Client(table)
    dispatcher = client.dispatcher
    client.initialize(supportsProgressReporting=True)
    original = dispatcher.send_event

    def send_event(event, body=None):
        original(event, body)
        if event == "cancelProbe":
            dispatcher.feed(client.message("cancel", {"progressId": progress_ids[0]}))

    dispatcher.send_event = send_event
    out = client.send("evaluate")
    assert kinds(out) == [("event", "progressStart"), ("event", "progressUpdate"), ("event", "output"),
                          ("event", "cancelProbe"), ("response", "cancel"), ("response", "evaluate")]
    assert out[0]["body"]["requestId"] == 2 and out[0]["body"]["cancellable"] is True
    assert out[1]["body"]["percentage"] == 100.0
    assert out[-1]["message"] == "cancelled"


def test_no_progress_events_unless_the_client_asked():
    table = HandlerTable()

    @table.request("evaluate")
    def evaluate(ctx, args):
        progress = ctx.progress_start("Indexing")
        ctx.progress_update(progress, percentage=10)
        ctx.progress_end(progress)
        return {"result": "1", "variablesReference": 0}

    client = Client(table)
    client.initialize()
    assert kinds(client.send("evaluate")) == [("response", "evaluate")]


def argument_table():
    table = HandlerTable()
    table.request("readMemory", required={"memoryReference": str, "count": int},
                  optional={"offset": int, "resolveSymbols": bool})(
        lambda ctx, args: {"address": args["memoryReference"]})
    return table


@pytest.mark.parametrize("arguments, expected", [
    ({"count": 4}, "argument 'memoryReference' is required"),
    ({"memoryReference": 5, "count": 4}, "'memoryReference' must be a string, not number"),
    ({"memoryReference": "0x0", "count": True}, "'count' must be an integer, not boolean"),
    ({"memoryReference": "0x0", "count": 1.5}, "'count' must be an integer, not number"),
    ({"memoryReference": "0x0", "count": 2**64}, "'count' is out of range"),
    ({"memoryReference": "0x0", "count": -2**63 - 1}, "'count' is out of range"),
    ({"memoryReference": "0x0", "count": 4, "offset": None}, "'offset' must be an integer, not null"),
    ({"memoryReference": "0x0", "count": 4, "resolveSymbols": "yes"}, "'resolveSymbols' must be a boolean"),
])
def test_argument_checks(arguments, expected):
    client = Client(argument_table())
    client.initialize()
    [answer] = client.send("readMemory", arguments)
    assert not answer["success"] and expected in answer["message"]
    assert answer["body"]["error"]["id"] == 2
    [ok] = client.send("readMemory", {"memoryReference": "0x10", "count": 2**63 - 1, "extra": [1]})
    assert ok["success"] and ok["body"] == {"address": "0x10"}


def test_handler_errors_become_error_responses():
    table = HandlerTable()

    @table.request("evaluate", required={"expression": str})
    def evaluate(ctx, args):
        kind = args["expression"]
        if kind == "user":
            raise StateError("register v7 not in dump")
        if kind == "argument":
            raise ArgumentError("frameId 9 does not exist")
        if kind == "cancelled":
            raise RequestCancelled("stop")
        if kind == "bug":
            return {"result": {}["missing"]}
        if kind == "not-json":
            return {"result": object(), "variablesReference": 0}
        if kind == "wrong-type":
            return ["a", "list"]
        return {"result": kind, "variablesReference": 0}

    client = Client(table)
    client.initialize()
    user = client.send("evaluate", {"expression": "user"})
    assert kinds(user) == [("response", "evaluate")] and user[0]["message"] == "register v7 not in dump"
    assert client.send("evaluate", {"expression": "argument"})[0]["body"]["error"]["id"] == 2
    assert client.send("evaluate", {"expression": "cancelled"})[0]["message"] == "cancelled"
    for kind, text in [("bug", "KeyError"), ("not-json", "object"), ("wrong-type", "returned list")]:
        out = client.send("evaluate", {"expression": kind})
        assert kinds(out) == [("event", "output"), ("response", "evaluate")], kind
        assert out[0]["body"]["category"] == "important" and "Traceback" in out[0]["body"]["output"]
        assert out[1]["message"].startswith("internal error:") and text in out[1]["message"]
    [ok] = client.send("evaluate", {"expression": "fine"})
    assert ok["success"] and ok["body"]["result"] == "fine"


def test_events_before_and_after_the_response():
    table = HandlerTable()
    table.request("stepIn")(lambda ctx, args: Reply(
        events_before=[("continued", {"threadId": 1})],
        events_after=[("stopped", {"reason": "step", "threadId": 1})]))
    client = Client(table)
    client.initialize()
    assert kinds(client.send("stepIn", {"threadId": 1})) == [
        ("event", "continued"), ("response", "stepIn"), ("event", "stopped")]


def test_problems_are_answered_or_reported():
    client = Client()
    client.initialize()
    client.dispatcher.feed(frame(b'{"seq": 9, "type": "request", "command": "threads", "arguments": 3}'))
    client.dispatcher.feed(frame(b"not json"))
    out = client.output()
    assert kinds(out) == [("response", "threads"), ("event", "output")]
    assert out[0]["request_seq"] == 9 and "invalid request" in out[0]["message"]
    assert "not JSON" in out[1]["body"]["output"]
    client.dispatcher.feed(b"Content-Length: 10\r\n\r\n{}")
    client.dispatcher.feed(b"")
    assert "middle of a message" in client.output()[0]["body"]["output"]
    assert client.dispatcher.closed


def test_terminate_sends_terminated_once():
    client = Client()
    client.initialize()
    assert kinds(client.send("terminate")) == [("response", "terminate"), ("event", "terminated")]
    table = HandlerTable()
    table.request("terminate")(lambda ctx, args: Reply(events_after=[("terminated", {"restart": False})]))
    custom = Client(table)
    custom.initialize()
    assert kinds(custom.send("terminate")) == [("response", "terminate"), ("event", "terminated")]


def test_disconnect_answers_held_requests_and_closes():
    client = Client(launch_table())
    client.initialize()
    client.send("launch")
    out = client.send("disconnect", {"terminateDebuggee": True})
    assert kinds(out) == [("response", "launch"), ("response", "disconnect")]
    assert out[0]["message"] == "cancelled" and out[1]["success"]
    assert client.dispatcher.closed
    [late] = client.send("threads")
    assert not late["success"] and "ended" in late["message"]


def test_failing_disconnect_still_closes():
    table = HandlerTable()
    table.request("disconnect")(lambda ctx, args: 1 / 0)
    client = Client(table)
    client.initialize()
    out = client.send("disconnect")
    assert kinds(out) == [("event", "output"), ("response", "disconnect")] and not out[1]["success"]
    assert client.dispatcher.closed


def test_client_responses_and_events_are_ignored_and_bad_cancel_is_refused():
    client = Client()
    client.initialize()
    client.dispatcher.feed(frame({"seq": 2, "type": "event", "event": "hello"}))
    client.dispatcher.feed(frame({"seq": 3, "type": "response", "request_seq": 1, "command": "runInTerminal",
                                  "success": True}))
    assert client.output() == []
    client.seq = 3
    [answer] = client.send("cancel", {"requestId": "2"})
    assert not answer["success"] and "requestId" in answer["message"]


def test_handlers_registered_on_a_dispatcher_do_not_leak_into_the_table():
    shared = HandlerTable()
    first = Dispatcher(shared)
    first.request("threads")(lambda ctx, args: {"threads": []})
    assert "threads" in first.handlers and "threads" not in shared


def test_joined_tables_answer_every_command_of_each_and_refuse_one_command_twice():
    memory, focus = HandlerTable(), HandlerTable()
    memory.request("readMemory", required={"count": int})(lambda ctx, args: {})
    focus.request("setFocus")(lambda ctx, args: {})
    joined = HandlerTable.joined(memory, focus)
    assert "readMemory" in joined and "setFocus" in joined
    assert joined.get("readMemory").required == {"count": int}
    with pytest.raises(ValueError, match="two handlers for 'setFocus'"):
        HandlerTable.joined(joined, focus)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_readmemory_base64_is_the_standard_encoding(raw):
    """The fast encoder readMemory uses must give what RFC 4648 (the standard library) gives,
    padding included, for every length and for a view as well as bytes."""
    import base64
    from aspace_dap.dap.protocol import Base64Bytes
    assert Base64Bytes.encode(raw).data == base64.b64encode(raw)
    assert Base64Bytes.encode(memoryview(raw)).data == base64.b64encode(raw)


def test_readmemory_message_carries_the_encoded_megabyte():
    import base64

    import numpy as np
    from aspace_dap.dap.protocol import Base64Bytes
    raw = np.random.default_rng(7).integers(0, 256, (1 << 20) + 1, dtype=np.uint8)
    framed = DapConnection().send_response(3, command="readMemory",
                                           body={"address": "0x10", "data": Base64Bytes.encode(memoryview(raw))})
    message = json.loads(framed[framed.index(b"\r\n\r\n") + 4:])
    assert base64.b64decode(message["body"]["data"], validate=True) == raw.tobytes()
    assert message["body"]["address"] == "0x10" and message["request_seq"] == 3
