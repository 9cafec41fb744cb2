"""The server's views one by one, on the scratch_struct -O0 dump, through a real client.

Expressions, REPL commands, registers, paging, writes to the overlay, modules and sources.
Lane 5 of wave 0 is the focus; the values below follow examples/scratch_struct/README.md.
"""

import base64
import os

import pytest

from dap_client import REPO_ROOT, RequestFailed, launched

DUMP = os.path.join(REPO_ROOT, "examples", "scratch_struct", "dumps", "gfx90a.O0")


@pytest.fixture(scope="module")
def dap():
    c, stopped = launched(DUMP, supportsInvalidatedEvent=True)
    c.tid = stopped["threadId"]
    yield c
    c.request("disconnect")
    c.close()


def top_frame(c):
    return c.request("stackTrace", {"threadId": c.tid})["stackFrames"][0]["id"]


def ev(c, expression, context="watch", **extra):
    return c.request("evaluate", {"expression": expression, "frameId": top_frame(c), "context": context, **extra})


def test_expressions(dap):
    assert ev(dap, "p.id")["result"] == "69"
    assert ev(dap, "p.neighbors[2] * 2")["result"] == "180"
    assert ev(dap, "p.pos[1]")["result"] == "5"
    assert ev(dap, "gid == 69 && pick > 700")["result"] == "1"
    assert ev(dap, "$lane")["result"] == "5"
    addr = ev(dap, "&pick")
    assert addr["result"].endswith("private_lane#0x10c")
    assert ev(dap, "*(int *) private_lane#0x10c")["result"] == "789"
    assert ev(dap, "(float) pick")["result"] == "789"
    assert ev(dap, "p.id", format={"hex": True})["result"] == "0x45"
    with pytest.raises(RequestFailed, match="no symbol"):
        ev(dap, "no_such_variable")
    with pytest.raises(RequestFailed, match="division by zero"):
        ev(dap, "pick / 0")


def test_print_x_formats_every_element(dap):
    plain = ev(dap, "p.neighbors")["result"]
    hexed = "{" + ", ".join(f"0x{int(v):x}" for v in plain.strip("{}").split(", ")) + "}"
    assert ev(dap, "print/x p.neighbors", context="repl")["result"] == hexed
    assert ev(dap, "p/x p.neighbors", context="repl")["result"] == hexed
    assert ev(dap, "p.neighbors", format={"hex": True})["result"] == hexed
    assert ev(dap, "print p.neighbors", context="repl")["result"] == plain
    whole = ev(dap, "print/x p", context="repl")["result"]
    assert f"neighbors = {hexed}" in whole and "id = 0x45" in whole


def test_struct_children_and_paging(dap):
    p = ev(dap, "p")
    assert p["variablesReference"] and p["namedVariables"] == 7
    members = {v["name"]: v for v in dap.request("variables", {"variablesReference": p["variablesReference"]})["variables"]}
    assert members["id"]["value"] == "69" and members["neighbors"]["indexedVariables"] == 6
    assert members["pos"]["evaluateName"] == "p.pos"
    assert members["pos"]["memoryReference"] == "private_lane@wave0.lane5#0x48"
    page = dap.request("variables", {"variablesReference": members["neighbors"]["variablesReference"], "start": 2, "count": 2})
    assert [v["name"] for v in page["variables"]] == ["[2]", "[3]"]
    assert [v["value"] for v in page["variables"]] == ["90", "97"]


def test_registers_scope(dap):
    scopes = {s["name"]: s for s in dap.request("scopes", {"frameId": top_frame(dap)})["scopes"]}
    regs = {v["name"]: v for v in dap.request("variables", {"variablesReference": scopes["Registers"]["variablesReference"]})["variables"]}
    assert "36 lanes" in regs["exec"]["value"]
    # a register alone prints in hex, as the Registers scope shows it
    assert ev(dap, "$s33")["result"].startswith("0x") and int(regs["s33"]["value"], 16) == int(ev(dap, "$s33")["result"], 16)
    assert int(ev(dap, "$exec")["result"], 16) == int(regs["exec"]["value"].split()[0], 16)


def test_vector_registers_expand_to_all_lanes():
    c, stopped = launched(os.path.join(REPO_ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O2"))
    try:
        tid = stopped["threadId"]
        lane = c.request("setFocus", {"threadId": tid})["lane"]  # handles from before a focus change are stale
        fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        scopes = {s["name"]: s for s in c.request("scopes", {"frameId": fid})["scopes"]}
        regs = {v["name"]: v for v in c.request("variables", {"variablesReference": scopes["Registers"]["variablesReference"]})["variables"]}
        v1 = regs["v1"]
        assert v1["indexedVariables"] == 64 and v1["type"] == "uint32[64]"
        row = c.request("variables", {"variablesReference": v1["variablesReference"], "start": lane, "count": 1})["variables"][0]
        assert row["name"] == f"[{lane}]" and int(row["value"]) == int(v1["value"], 16)
        # tx lives in v1 at -O2: the register and the variable agree
        tx = c.request("evaluate", {"expression": "tx", "frameId": fid})["result"]
        assert int(tx) == int(c.request("evaluate", {"expression": "$v1", "frameId": fid})["result"], 16)
        c.request("disconnect")
    finally:
        c.close()


def test_repl_commands_move_focus(dap):
    out = ev(dap, "lane 7", context="repl")["result"]
    assert "lane 7" in out
    focus = dap.wait_event("focus")["body"]
    assert focus["lane"] == 7 and focus["threadId"] == dap.tid
    assert ev(dap, "$lane")["result"] == "7"
    lanes = ev(dap, "info lanes", context="repl")["result"].splitlines()
    assert len(lanes) == 64 and lanes[7].startswith("* lane  7")
    waves = ev(dap, "info waves", context="repl")["result"]
    assert "AMDGPU Wave" in waves
    # the scratch_struct dump holds one wave (workgroup 1): one wave, one group, both singular
    assert waves.splitlines()[0].startswith("1 wave in 1 group (")
    dump = ev(dap, "x/2dw private_lane@wave0.lane5#0x10c", context="repl")["result"]
    assert dump.split() == ["private_lane@wave0.lane5#0x10c:", "789", str(int(ev(dap, "*(int *) private_lane@wave0.lane5#0x110")["result"]))]
    ev(dap, "lane 5", context="repl")
    dap.wait_event("focus")


def test_set_variable_and_write_memory_change_the_overlay(dap):
    scopes = {s["name"]: s for s in dap.request("scopes", {"frameId": top_frame(dap)})["scopes"]}
    ref = scopes["Locals"]["variablesReference"]
    out = dap.request("setVariable", {"variablesReference": ref, "name": "pick", "value": "pick + 1"})
    assert out["value"] == "790"
    assert ev(dap, "pick")["result"] == "790"
    mem = "private_lane@wave0.lane5#0x10c"
    dap.request("writeMemory", {"memoryReference": mem, "data": base64.b64encode((789).to_bytes(4, "little")).decode()})
    got = dap.request("readMemory", {"memoryReference": mem, "count": 4})
    assert base64.b64decode(got["data"]) == (789).to_bytes(4, "little")
    assert ev(dap, "pick")["result"] == "789"
    # the dump's files are never modified
    with open(os.path.join(DUMP, "manifest.json")) as f:
        assert "aspace-gpustate" in f.read()


def test_variables_asked_again_follow_every_write(dap):
    """A frame remembers its variables between requests; a write must not leave them stale."""
    def pick(ref):
        shown = dap.request("variables", {"variablesReference": ref})["variables"]
        return next(v["value"] for v in shown if v["name"] == "pick")

    def locals_ref():
        scopes = dap.request("scopes", {"frameId": top_frame(dap)})["scopes"]
        return next(s["variablesReference"] for s in scopes if s["name"] == "Locals")

    ref = locals_ref()
    assert pick(ref) == pick(ref) == "789"
    dap.request("setVariable", {"variablesReference": ref, "name": "pick", "value": "pick + 2"})
    assert pick(ref) == "791"  # the same scope, asked again after the write
    mem = "private_lane@wave0.lane5#0x10c"
    dap.request("writeMemory", {"memoryReference": mem, "data": base64.b64encode((789).to_bytes(4, "little")).decode()})
    assert pick(locals_ref()) == "789"


def test_read_memory_reports_unreadable_bytes(dap):
    spaces = {s["name"]: s for s in dap.request("memorySpaces", {"threadId": dap.tid})["spaces"]}
    lane = spaces["private_lane"]
    got = dap.request("readMemory", {"memoryReference": lane["memoryReference"], "offset": lane["size"] - 8, "count": 16})
    assert len(base64.b64decode(got["data"])) == 8 and got["unreadableBytes"] == 8


def test_modules_and_sources(dap):
    mods = dap.request("modules")["modules"]
    assert mods and mods[0]["name"].endswith(".co") and mods[0]["version"] == "gfx90a"
    sources = dap.request("loadedSources")["sources"]
    assert any(s["path"].endswith("scratch_struct.hip") for s in sources)
    path = next(s["path"] for s in sources if s["path"].endswith("scratch_struct.hip"))
    text = dap.request("source", {"source": {"path": path}})["content"]
    assert "integrate" in text


def test_save_writes_the_overlay_as_a_new_dump(dap, tmp_path):
    mem = "private_lane@wave0.lane5#0x10c"
    dap.request("writeMemory", {"memoryReference": mem, "data": base64.b64encode((1234).to_bytes(4, "little")).decode()})
    try:
        out = ev(dap, f"save {tmp_path / 'edited'}", context="repl")["result"]
        assert out.startswith("saved to ")
        from aspace_dap.session import Session
        edited = Session.open(str(tmp_path / "edited"))
        frame = edited.frames(0, 5)[0]
        pick = next(v for v in edited.variables(frame) if v.name == "pick")
        from aspace_dap.values.format import format_obj
        assert format_obj(edited.read_variable(frame, pick).obj_for(5)) == "1234"
        with pytest.raises(RequestFailed, match="never overwritten"):
            dap.request("saveDump", {"path": DUMP})
    finally:
        dap.request("writeMemory", {"memoryReference": mem, "data": base64.b64encode((789).to_bytes(4, "little")).decode()})


def test_launch_reports_progress_to_clients_that_ask():
    c, _ = launched(DUMP, supportsProgressReporting=True)
    try:
        start = c.wait_event("progressStart")["body"]
        end = c.wait_event("progressEnd")["body"]
        assert start["progressId"] == end["progressId"] and "Opening" in start["title"]
        c.request("disconnect")
    finally:
        c.close()


@pytest.mark.parametrize("dump,shared", [
    ("examples/lds_tiles/dumps/gfx90a.O0", {"tile", "row_sums"}),
    ("examples/cuda/dumps/lds_tiles.sm_90.G", {"tile", "row_sums"}),
    ("examples/opencl/dumps/divergent_call.tgllp", {"cells"}),
])
def test_shared_scope_holds_workgroup_memory_for_every_vendor(dump, shared):
    c, stopped = launched(os.path.join(REPO_ROOT, dump))
    try:
        tid = stopped["threadId"]
        fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        scopes = {s["name"]: s for s in c.request("scopes", {"frameId": fid})["scopes"]}
        names = {v["name"] for v in c.request("variables", {"variablesReference": scopes["Shared"]["variablesReference"]})["variables"]}
        assert names == shared
        local_names = {v["name"] for v in c.request("variables", {"variablesReference": scopes["Locals"]["variablesReference"]})["variables"]}
        assert not (local_names & shared)
        c.request("disconnect")
    finally:
        c.close()


def test_source_serves_only_files_the_debug_info_names(dap):
    with pytest.raises(RequestFailed, match="not a source file"):
        dap.request("source", {"source": {"path": "/etc/passwd"}})
