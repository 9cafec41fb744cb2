"""One variable that cannot be read (malformed DWARF for it, a dump that contradicts it) shows
`<unavailable: why>` beside the frame's other variables, in the debugger and in `inspect`;
a request's evaluation budget still fails the whole answer."""

import json
import os

import pytest

from aspace_dap.dap import variables
from aspace_dap.errors import CodeObjectError, LimitExceeded
from aspace_dap.inspect import frame_report
from aspace_dap.session import Session

DUMP = os.path.join(os.path.dirname(__file__), "..", "examples", "scratch_struct", "dumps", "gfx90a.O0")


@pytest.fixture(scope="module")
def session():
    return Session.open(DUMP)


def _break_one(monkeypatch, session, name, error):
    real = Session.read_variable

    def read_variable(self, frame, var, *args, **kwargs):
        if var.name == name:
            raise error
        return real(self, frame, var, *args, **kwargs)
    monkeypatch.setattr(Session, "read_variable", read_variable)


def test_inspect_keeps_the_other_variables(monkeypatch, session):
    before = {v["name"]: v["value"] for v in frame_report(session, session.focus_wave, 5)["frames"][0]["variables"]}
    assert before["pick"] == "789"
    _break_one(monkeypatch, session, "pick", CodeObjectError("DW_AT_location of pick: truncated expression"))
    after = {v["name"]: v["value"] for v in frame_report(session, session.focus_wave, 5)["frames"][0]["variables"]}
    assert after["pick"] == "<unavailable: DW_AT_location of pick: truncated expression>"
    assert {k: v for k, v in after.items() if k != "pick"} == {k: v for k, v in before.items() if k != "pick"}


def test_a_budget_overrun_is_not_hidden_per_variable(monkeypatch, session):
    _break_one(monkeypatch, session, "pick", LimitExceeded("evaluation took over 10 s"))
    with pytest.raises(LimitExceeded):
        frame_report(session, session.focus_wave, 5)


def test_scope_variable_answers_for_the_one_that_fails(monkeypatch, session):
    frame = session.frames(session.focus_wave, 5)[0]
    pick = next(v for v in session.variables(frame) if v.name == "pick")
    _break_one(monkeypatch, session, "pick", CodeObjectError("bad location list"))
    row = variables._scope_variable(None, session, frame, pick, False)
    assert row == {"name": "pick", "value": "<unavailable: bad location list>", "type": "int", "variablesReference": 0}
    _break_one(monkeypatch, session, "pick", LimitExceeded("over budget"))
    with pytest.raises(LimitExceeded):
        variables._scope_variable(None, session, frame, pick, False)


# ---- a hostile type chain in a code object, over DAP ------------------------------------------

def _hostile_code_object(kind: str) -> bytes:
    """A generated gfx90a code object (benchmarks/gen_big_code_object.py) whose global `tile_00000` (made a
    plain global: DW_OP_addr, no xderef) is hostile: "chain", its type is 50,000 pointers each to the
    next; "loop", its type is a pointer to itself. "call4": two units, and the second one's `tile_00001`
    has as its location DW_OP_call4 of itself (an offset in its unit: in the section, the same offset is
    the first unit's `tile_00000`)."""
    import struct

    from test_codeobj_generated import load_generator

    generator = load_generator()
    build_dwarf = generator.build_dwarf

    def hostile_dwarf(*args, **kwargs):
        sections, dies = build_dwarf(*args, **kwargs)
        info = bytearray(sections[".debug_info"])
        units = [0]
        while units[-1] + 4 + struct.unpack_from("<I", info, units[-1])[0] < len(info):
            units.append(units[-1] + 4 + struct.unpack_from("<I", info, units[-1])[0])
        assert len(units) == (2 if kind == "call4" else 1)
        at = info.index(bytes([generator.DW_OP_LIT2, generator.DW_OP_SWAP, generator.DW_OP_XDEREF]), units[-1])
        info[at:at + 3] = b"\x96\x96\x96"  # DW_OP_nop: the address is a global one
        if kind == "call4":
            expression = at - 9  # DW_OP_addr and its 8 bytes come first, after the expression's length
            die = expression - 1 - len(generator.uleb(generator.AB_VAR_EXPR))  # the abbreviation code
            assert info[expression - 1] == 12 and info[expression] == generator.DW_OP_ADDR
            info[expression:expression + 12] = bytes([0x99]) + struct.pack("<I", die - units[-1]) + b"\x96" * 7
            return dict(sections, **{".debug_info": bytes(info)}), dies
        type_at = at + 3 + 4 + 1 + 2  # after its name (strp), decl_file and decl_line
        end = len(info) - 1  # the unit's closing null entry: the new types go before it
        pointer = generator.uleb(generator.AB_POINTER)
        size = len(pointer) + 5
        count = 50_000 if kind == "chain" else 1
        last = struct.unpack_from("<I", info, type_at)[0] if kind == "chain" else end  # the array, or itself
        chain = b"".join(pointer + struct.pack("<IB", end + (i + 1) * size if i + 1 < count else last, 8)
                         for i in range(count))
        struct.pack_into("<I", info, type_at, end)
        info[end:end] = chain
        struct.pack_into("<I", info, 0, len(info) - 4)
        return dict(sections, **{".debug_info": bytes(info)}), dies

    generator.build_dwarf = hostile_dwarf
    try:
        units = 2 if kind == "call4" else 1
        dies = units * (generator.DIES_PER_CU_FIXED + generator.DIES_PER_FUNCTION)
        image, _, _ = generator.write_code_object(dies, 1)
    finally:
        generator.build_dwarf = build_dwarf
    return image


@pytest.mark.parametrize("kind, expected", [("chain", "nested more than"), ("loop", "contains itself"),
                                            ("call4", "DWARF procedure calls nested deeper than")])
def test_a_hostile_global_is_unavailable_beside_the_others(tmp_path, kind, expected):
    """A global whose type is 50,000 pointers deep, or a pointer to itself (a RecursionError on the
    Globals scope), or whose location calls itself (DW_OP_call4, whose offset counts from its unit: it
    read the first unit's variable instead): the scope is listed, the variable says why it cannot be
    shown, the frame's other variables read as before, and so does evaluating it."""
    import sys

    import numpy as np
    from elftools.elf.elffile import ELFFile

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    from bench_index import last_function_pc
    from dap_client import launched

    from aspace_dap.state import StateWriter

    code_object = tmp_path / "hostile.co"
    code_object.write_bytes(_hostile_code_object(kind))
    with open(code_object, "rb") as f:
        pc = last_function_pc(ELFFile(f))
    writer = StateWriter("amd", "gfx90a", 64)
    co = writer.add_code_object(str(code_object))
    wg = writer.add_dispatch("kernel", co, (64, 1, 1), (64, 1, 1)).add_workgroup((0, 0, 0), lds=bytes(4096))
    wg.add_wave(0, 0, {"pc": np.uint64(pc), "exec": np.uint64(2**64 - 1), "s33": np.uint32(0),
                       "v1": (np.arange(64, dtype=np.uint32) + 7).tobytes()}, private=np.zeros((64, 256), np.uint8))
    dump = writer.write(tmp_path / "dump")
    client, _ = launched(str(dump))
    try:
        thread = client.request("threads")["threads"][0]["id"]
        frame = client.request("stackTrace", {"threadId": thread})["stackFrames"][0]["id"]
        scopes = {s["name"]: s["variablesReference"] for s in client.request("scopes", {"frameId": frame})["scopes"]}
        (tile,) = client.request("variables", {"variablesReference": scopes["Globals"]})["variables"]
        name = "tile_00001" if kind == "call4" else "tile_00000"
        assert tile["name"] == name and tile["value"].startswith(("<unavailable: ", "<error: ")), tile
        assert expected in tile["value"] and "internal error" not in tile["value"], tile
        arguments = {v["name"]: v["value"] for v in
                     client.request("variables", {"variablesReference": scopes["Arguments"]})["variables"]}
        assert arguments["lane"] == "7", arguments  # v1 of lane 0
        answer = client.request_raw("evaluate", {"expression": name, "frameId": frame, "context": "watch"})
        assert "internal error" not in json.dumps(answer) and "Traceback" not in json.dumps(answer), answer
        assert not answer["success"] or answer["body"]["result"].startswith(("<unavailable", "<error")), answer
        assert client.request("evaluate", {"expression": "2+3", "frameId": frame})["result"] == "5"
    finally:
        client.close()
    assert "Traceback" not in client.stderr.text
