"""The CUDA example dumps through the real server: every variable in scope, several lanes, against the model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dap_client import REPO_ROOT, start_server_subprocess

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen.cuda_engine import LOCAL_WINDOW  # noqa: E402
from dumpgen.cuda_examples import SPECS  # noqa: E402

STATES = Path(REPO_ROOT) / "examples" / "cuda" / "states"


def start(dump_dir):
    c = start_server_subprocess(["-m", "aspace_dap"])
    c.request("initialize", {"adapterID": "aspace-gpu", "linesStartAt1": True, "columnsStartAt1": True})
    c.wait_event("initialized")
    seq = c.send("launch", {"state": str(dump_dir)})
    c.request("configurationDone")
    assert c.wait_response(seq)["success"]
    return c, c.wait_event("stopped")["body"]


def frame_vars(c, tid):
    fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
    out = {}
    for scope in c.request("scopes", {"frameId": fid})["scopes"]:
        for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
            out[v["name"]] = v
    return fid, out


def children(c, var):
    return {v["name"]: v for v in c.request("variables", {"variablesReference": var["variablesReference"]})["variables"]}


def same(shown: str, expected) -> bool:
    shown = shown.split(") ", 1)[1] if shown.startswith("(") else shown  # "(T *) 0x..." pointers
    if isinstance(expected, float):
        return np.float32(float(shown.split()[0])) == np.float32(expected)
    return int(shown.split()[0], 0) == int(expected)


def check(c, var, expected, where):
    if isinstance(expected, dict):
        kids = children(c, var)
        for name, value in expected.items():
            check(c, kids[name], value, f"{where}.{name}")
    elif isinstance(expected, list):
        kids = list(children(c, var).values())
        assert len(kids) >= len(expected), where
        for i, value in enumerate(expected):
            check(c, kids[i], value, f"{where}[{i}]")
    else:
        assert same(var["value"], expected), f"{where}: shows {var['value']}, model {expected}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_variable_for_several_lanes(name):
    spec = SPECS[name]()
    dump = STATES / spec.name
    c, stopped = start(dump)
    try:
        tid = stopped["threadId"]
        threads = c.request("threads")["threads"]
        assert any(t["name"].startswith("CUDA warp ") for t in threads)
        top = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
        assert top["line"] == spec.line and top["source"]["path"].endswith(spec.file)
        shared = spec.shared() if spec.shared else {}
        warp = spec.warps[0]
        active = [lane for lane in range(32) if warp.active >> lane & 1]
        for lane in active[:: max(1, len(active) // 4)][:4]:
            focus = c.request("setFocus", {"threadId": tid, "lane": lane})
            assert focus["lane"] == lane and focus["active"]
            _, shown = frame_vars(c, tid)
            thread = (warp.index_in_workgroup * 32 + lane) % spec.block[0], \
                (warp.index_in_workgroup * 32 + lane) // spec.block[0], 0
            model = dict(spec.values(thread))
            model.update(shared)
            checked = 0
            for var, value in model.items():
                if var not in shown:
                    continue
                check(c, shown[var], value, f"{name} lane {lane} {var}")
                checked += 1
            assert checked >= min(4, len(model)), (sorted(shown), sorted(model))
        c.request("disconnect")
    finally:
        c.close()


def test_generic_pointer_shows_its_resolved_space():
    spec = SPECS["scratch_struct"]()
    c, stopped = start(STATES / spec.name)
    try:
        tid = stopped["threadId"]
        _, shown = frame_vars(c, tid)
        cursor = shown["cursor"]
        assert int(cursor["value"].split()[-1], 0) >= LOCAL_WINDOW
        kids = children(c, cursor)
        # the pointee is `p` itself, reached through the local window
        pointee = next(iter(kids.values()))
        p = children(c, shown["p"])
        assert children(c, pointee)["id"]["value"] == p["id"]["value"]
        c.request("disconnect")
    finally:
        c.close()
