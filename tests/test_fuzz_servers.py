"""Random hostile traffic with fixed seeds, against the real servers over stdio.

Every DAP request gets a schema-valid answer and never an internal error; the LSP
server answers every request that has an id; both keep serving afterwards. The
seeds are fixed so a failure replays; the inputs mix what clients get wrong
(wrong types, missing arguments) with what attackers send (huge numbers, thousands
of digits, deep nesting, kernel files, NaN and infinities, bytes that are not JSON).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from dap_client import start_server_subprocess
from test_limits import RawLsp

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"
TIMEOUT = 30  # a safety net for one answer, not a measurement

TOKENS = ["tile", "row_sums", "tx", "ty", "row", "col", "value", "rows", "in", "out", "$lane", "$pc", "$exec",
          "$v0", "$s33", "local#0x40", "private_lane#0x10", "global#0", "local@wg(1,1,0)#0",
          "private_lane@wave3.lane5#0x10", "0", "1", "-1", "9223372036854775807", "18446744073709551615",
          "1.5", "3.0f", "1.5e999", "9" * 30, "9" * 5000, "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^",
          "~", "!", "&&", "||", "==", "<", "?", ":", "(", ")", "[", "]", "[-1]", "[16]", "[$lane]",
          "[9223372036854775807]", ".", "->", "(int)", "(float)", "(char *)", "(int *)", "(unsigned long)",
          "(double)", "x", "@", "#", "\\", "\u00e9", "\x00"]
REPL_PREFIXES = ["x/", "x/4xw ", "x/99999999999999999999xb ", "lane ", "wave ", "print/x ", "p/d ", "info ", "aspace "]
VALUES = [None, True, False, 0, -1, 1, 2**63 - 1, -2**63, 2**63, 2**64 + 5, 10**30, 1.5, 1e308, -0.0, "", "x",
          "0x10", "local#0x40", "global#0xffffffffffffffff", "\x00", "a" * 5000, "9" * 5000, [], [1], {}, {"a": 1},
          {"path": "/etc/passwd"}, "../../etc/passwd", "/dev/zero", "/proc/self/environ", [[[[[[[[]]]]]]]]]
COMMANDS = ["evaluate", "variables", "scopes", "stackTrace", "readMemory", "writeMemory", "setVariable", "source",
            "setFocus", "laneValues", "lanes", "memorySpaces", "waveGroups", "memoryLayout", "threads",
            "loadedSources", "modules", "disassemble", "setBreakpoints", "setExpression", "goto", "pause",
            "continue", "next", "stepIn", "stepOut", "completions", "exceptionInfo", "restart", "cancel"]
KEYS = ["expression", "frameId", "context", "format", "variablesReference", "start", "count", "threadId",
        "memoryReference", "offset", "data", "name", "value", "source", "lane", "group", "levels", "startFrame",
        "filter", "path", "sourceReference", "requestId", "instructionCount", "allowPartial"]


def random_request(rng: random.Random, handles: list[int]) -> tuple[str, dict]:
    if rng.random() < 0.45:
        expression = " ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 10)))
        if rng.random() < 0.3:
            expression = rng.choice(REPL_PREFIXES) + rng.choice([expression, "9" * 5000, "-1", "9" * 20])
        return "evaluate", {"expression": expression, "context": rng.choice(["repl", "watch", "hover"]),
                            "frameId": rng.choice(handles)}
    command = rng.choice(COMMANDS)
    arguments = {key: rng.choice(VALUES + handles) for key in rng.sample(KEYS, rng.randint(0, 5))}
    if command == "source" and rng.random() < 0.5:
        arguments["source"] = {"path": rng.choice(["/etc/passwd", "../x", "/dev/zero", "", 5, None]),
                               "sourceReference": rng.choice([0, 1, 2**40, -1])}
    return command, arguments


@pytest.mark.parametrize("seed", [20261123, 7])
def test_random_dap_requests_are_all_answered_without_internal_errors(seed):
    rng = random.Random(seed)
    client = start_server_subprocess(["-m", "aspace_dap"])
    try:
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
        seq = client.send("launch", {"state": str(DUMP)})
        client.request("configurationDone", timeout=TIMEOUT)
        assert client.wait_response(seq, timeout=TIMEOUT)["success"]
        thread = client.request("threads", timeout=TIMEOUT)["threads"][0]["id"]
        frame = client.request("stackTrace", {"threadId": thread}, timeout=TIMEOUT)["stackFrames"][0]["id"]
        scopes = client.request("scopes", {"frameId": frame}, timeout=TIMEOUT)["scopes"]
        handles = [thread, frame] + [scope["variablesReference"] for scope in scopes]
        sent = [client.send(*random_request(rng, handles)) for _ in range(400)]
        for request_seq in sent:
            answer = client.wait_response(request_seq, timeout=TIMEOUT)
            text = json.dumps(answer)
            assert "internal error" not in text and "Traceback" not in text, text[:500]
        client.check()  # every message the server sent was valid DAP, in seq order
        assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"
    finally:
        client.close()
    assert "connection ended by an internal error" not in "".join(client.stderr.lines)


LSP_METHODS = ["textDocument/hover", "textDocument/inlayHint", "textDocument/codeLens", "textDocument/didOpen",
               "textDocument/didSave", "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles",
               "workspace/didChangeWorkspaceFolders", "initialize", "shutdownx", "$/cancelRequest", "x"]
URIS = ["file:///nothing.hip", "file:///dev/zero", "file:///proc/self/status", "file:///etc/passwd",
        "file://host/share/x.hip", "http://example.com/x.hip", "untitled:1", "file:///" + "a/" * 3000, "", 5, None]


def random_lsp_params(rng: random.Random):
    document = {"uri": rng.choice(URIS), "languageId": "cpp", "version": rng.choice([1, -1, 2**70]),
                "text": rng.choice(["", "int x;\n" * 50, "\x00\udcff", None])}
    position = {"line": rng.choice([0, -1, 2**31, 2**70, "1"]), "character": rng.choice([0, -5, 2**70])}
    candidates = [
        {"textDocument": document, "position": position},
        {"textDocument": document, "range": {"start": position, "end": position}},
        {"settings": {"aspace": {"codeObjects": rng.choice([["/proc/self/*"], ["/dev/*"], ["**/*.co"], "x", 5]),
                                 "ldsBudget": rng.choice(VALUES)}}},
        {"changes": [{"uri": rng.choice(URIS), "type": rng.choice([1, 2, 3, 99])}]},
        {"event": {"added": [{"uri": rng.choice(URIS), "name": "w"}], "removed": []}},
        rng.choice(VALUES),
    ]
    return rng.choice(candidates)


@pytest.mark.parametrize("seed", [20261123])
def test_random_lsp_messages_leave_every_request_answered(seed, tmp_path):
    rng = random.Random(seed)
    server = RawLsp(tmp_path)
    try:
        server.request(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
        assert "result" in server.answer(1, timeout=TIMEOUT)
        server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        ids = []
        for n in range(300):
            kind = rng.random()
            if kind < 0.05:
                server.send_raw(b"Content-Length: %d\r\n\r\n" % 20 + bytes(rng.randrange(256) for _ in range(20)))
            elif kind < 0.08:
                depth = rng.choice([100, 5000, 100_000])
                body = b"[" * depth + b"]" * depth
                server.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            elif kind < 0.5:
                server.send({"jsonrpc": "2.0", "method": rng.choice(LSP_METHODS), "params": random_lsp_params(rng)})
            else:
                rid = f"fuzz-{n}"
                ids.append(rid)
                server.request(rid, rng.choice(LSP_METHODS), random_lsp_params(rng))
        for rid in ids:
            answer = server.answer(rid, timeout=TIMEOUT)
            assert "result" in answer or "error" in answer
        server.request("last", "textDocument/codeLens", {"textDocument": {"uri": "file:///nothing.hip"}})
        assert server.answer("last", timeout=TIMEOUT)["result"] == []
    finally:
        server.close()


@pytest.mark.parametrize("seed", [2211])
def test_random_decompression_bombs_are_refused_by_name_and_the_server_stays_small(seed, tmp_path, monkeypatch):
    """Fat binaries, compressed bundles and gzip cores that inflate past their limits, declaring any size:
    each launch is answered (a clear error naming the limit, or a load), memory stays bounded, and the
    server keeps serving."""
    import bombs
    from aspace_dap.adapters.nvidia.core_writer import write_core
    from aspace_dap.state import load_state
    from test_limits import peak_rss

    monkeypatch.setenv("ASPACE_MAX_CODE_OBJECT_BYTES", "8M")
    monkeypatch.setenv("ASPACE_MAX_DECOMPRESSED_BYTES", "16M")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    rng = random.Random(seed)
    with load_state(ROOT / "examples" / "cuda" / "dumps" / "lds_tiles.sm_90.G") as state:
        core = write_core(state, tmp_path / "core.cudbg").read_bytes()
    kinds = {"fatbin": lambda n, d: bombs.fatbin_bomb(n, d),
             "bundle-zstd": lambda n, d: bombs.bundle_bomb(n, d, 1, 3),
             "bundle-zlib": lambda n, d: bombs.bundle_bomb(min(n, 48 << 20), d, 0, 3),
             "gzip-core": lambda n, d: bombs.gzip_core_bomb(core, min(n, 48 << 20))}
    client = start_server_subprocess(["-m", "aspace_dap"])
    try:
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
        client.request("configurationDone", timeout=TIMEOUT)  # launches are answered at once from now on
        for round_ in range(10):
            kind = rng.choice(sorted(kinds))
            inflated = rng.choice([1 << 20, 32 << 20, 256 << 20])
            declared = rng.choice([None, 0, inflated - 1, 2**32 - 1, 2**64 - 1])
            path = tmp_path / f"bomb-{round_}.{kind}"
            path.write_bytes(kinds[kind](inflated, declared))
            arguments = {"state": str(path)} if kind == "gzip-core" else {"state": str(DUMP), "codeObject": str(path)}
            answer = client.request_raw("launch", arguments, timeout=TIMEOUT)
            said = json.dumps(answer) + json.dumps(client.events("output"))
            assert "internal error" not in said and "Traceback" not in said, (round_, kind, said[-800:])
            if inflated >= 32 << 20 and kind != "gzip-core":  # over the limit, or caught in a lie about its size
                assert "MAX_CODE_OBJECT_BYTES" in said or "header says" in said, (round_, kind, declared, said[-800:])
                if declared is None or declared >= 8 << 20:
                    assert "MAX_CODE_OBJECT_BYTES" in said, (round_, kind, inflated, declared, said[-800:])
            if inflated >= 32 << 20 and kind == "gzip-core":
                assert not answer["success"] and "MAX_DECOMPRESSED_BYTES" in answer["message"], (round_, answer)
        assert peak_rss(client.process.pid) < 400 << 20, peak_rss(client.process.pid)
        assert client.request_raw("launch", {"state": str(DUMP)}, timeout=TIMEOUT)["success"]
        assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"
    finally:
        client.close()
