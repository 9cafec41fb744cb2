"""End to end: the real server (`python -m aspace_dap`) on every bundled example dump.

Driven by debugpy's JSON stream (tests/dap_client.py), every message schema-checked:
threads → stack → scopes → variables → setFocus → the same variable changes →
laneValues → readMemory of LDS and of a lane's scratch.
"""

import base64
import glob
import json
import os

import pytest

from dap_client import REPO_ROOT, RequestFailed, launched

DUMPS = sorted(glob.glob(os.path.join(REPO_ROOT, "examples", "*", "dumps", "*", "manifest.json")))


def start(dump_dir):
    c, stopped = launched(dump_dir, supportsInvalidatedEvent=True)
    assert c.capabilities["supportsReadMemoryRequest"]
    return c, stopped


def scope_vars(c, frame_id, name):
    scopes = {s["name"]: s for s in c.request("scopes", {"frameId": frame_id})["scopes"]}
    if name not in scopes:
        return {}
    return {v["name"]: v for v in c.request("variables", {"variablesReference": scopes[name]["variablesReference"]})["variables"]}


@pytest.mark.parametrize("manifest", DUMPS, ids=[os.path.relpath(os.path.dirname(d), REPO_ROOT) for d in DUMPS])
def test_session_walkthrough(manifest):
    dump = os.path.dirname(manifest)
    c, stopped = start(dump)
    try:
        tid = stopped["threadId"]
        threads = c.request("threads")["threads"]
        names = [t["name"] for t in threads]
        assert len(set(names)) == len(names) and all(names)
        vendor = json.load(open(manifest))["target"]["vendor"]
        if vendor == "amd":
            assert any(t["id"] == tid and t["name"].startswith("AMDGPU Wave ") for t in threads)
        frames = c.request("stackTrace", {"threadId": tid})
        assert frames["totalFrames"] >= 1
        top = frames["stackFrames"][0]
        # a source file, or the header an inlined function stands in (examples/production_amd)
        assert top["line"] > 0 and top["source"]["path"].endswith((".hip", ".cu", ".cl", ".h", ".cuh"))
        assert top["instructionPointerReference"].startswith("0x")
        focus = c.request("setFocus", {"threadId": tid})
        lane_a = focus["lane"]
        c.wait_event("stopped")

        def locals_now():
            fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
            merged = {}
            for scope in ("Arguments", "Locals", "Shared"):
                merged.update(scope_vars(c, fid, scope))
            return fid, merged

        fid, vars_a = locals_now()
        if "/production_amd/" in dump:  # -gline-tables-only: Locals say there is no variable information
            assert list(vars_a) == ["(no variable information)"]
            assert "line tables only" in vars_a["(no variable information)"]["value"]
            return
        assert vars_a, "no variables in the top frame"
        # a lane-varying scalar: the same variable must change with the lane
        lanes = c.request("laneValues", {"threadId": tid, "expression": "$lane"})["lanes"]
        assert [r["value"] for r in lanes] == [str(i) for i in range(len(lanes))]
        varying = None
        for name, v in vars_a.items():
            if v["variablesReference"] or "<" in v["value"]:
                continue
            rows = c.request("laneValues", {"threadId": tid, "frameId": fid, "expression": name})["lanes"]
            if len({r["value"] for r in rows if r["active"]}) > 1:
                varying = (name, rows)
                break
        assert varying is not None, f"no lane-varying variable among {sorted(vars_a)}"
        name, rows = varying
        assert rows[lane_a]["value"] == vars_a[name]["value"]
        other = next(r["lane"] for r in rows if r["active"] and r["value"] != rows[lane_a]["value"])
        focus = c.request("setFocus", {"threadId": tid, "lane": other})
        assert focus["lane"] == other and focus["active"]
        c.wait_event("stopped")
        _, vars_b = locals_now()
        assert vars_b[name]["value"] == rows[other]["value"] != vars_a[name]["value"]
        # memory views: LDS of the workgroup and this lane's scratch
        spaces = c.request("memorySpaces", {"threadId": tid})["spaces"]
        assert spaces and all(s["kind"] in ("workgroup", "lane", "wave", "device") for s in spaces)
        for space in spaces:
            if space["kind"] not in ("workgroup", "lane"):
                continue
            ref = space["memoryReference"]
            probe = c.request("readMemory", {"memoryReference": ref, "count": 0})
            assert "data" not in probe or probe["data"] == ""
            want = min(64, space["size"])
            got = c.request("readMemory", {"memoryReference": ref, "count": want})
            assert len(base64.b64decode(got.get("data", ""))) + got.get("unreadableBytes", 0) == want
        # a variable in memory carries a self-contained memoryReference that reads its bytes
        in_mem = next((v for v in vars_b.values() if v.get("memoryReference")), None)
        if in_mem is not None:
            got = c.request("readMemory", {"memoryReference": in_mem["memoryReference"], "count": 4})
            assert got["address"].startswith("0x")
        # stale references and bad requests are errors, not crashes
        with pytest.raises(RequestFailed):
            c.request("variables", {"variablesReference": 999999})
        assert c.request("evaluate", {"expression": "help", "context": "repl"})["result"].startswith("aspace-dap")
        c.request("disconnect")
    finally:
        c.close()
