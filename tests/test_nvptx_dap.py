"""The CUDA example dumps through the real server: every variable in scope, several lanes, against the model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dap_client import REPO_ROOT, launched

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen.cuda_engine import LOCAL_WINDOW  # noqa: E402
from dumpgen.cuda_examples import SPECS  # noqa: E402

STATES = Path(REPO_ROOT) / "examples" / "cuda" / "dumps"


def start(dump_dir):
    return launched(dump_dir)


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


def test_lds_tiles_out_col_out_row_not_computed_yet():
    # stopped at line 32: %r8/%r9 get their SASS registers only from line 34 on
    spec = SPECS["lds_tiles"]()
    c, stopped = start(STATES / spec.name)
    try:
        _, shown = frame_vars(c, stopped["threadId"])
        assert shown["out_col"]["value"] == shown["out_row"]["value"] == "<unavailable>"
        c.request("disconnect")
    finally:
        c.close()


def test_divergent_call_shows_settle_called_from_divergent_per_lane():
    spec = SPECS["divergent_call"]()
    c, stopped = start(STATES / spec.name)
    try:
        tid = stopped["threadId"]
        for lane in (1, 7, 13, 31):
            c.request("setFocus", {"threadId": tid, "lane": lane})
            frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
            assert [f["name"].split("(")[0] for f in frames[:2]] == ["settle", "divergent"], frames
            assert frames[1]["line"] == 21 and frames[1]["instructionPointerReference"] == "0xe20"
            shown = {}
            for scope in c.request("scopes", {"frameId": frames[1]["id"]})["scopes"]:
                for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    shown[v["name"]] = v
            model = spec.caller_values((lane, 0, 0))
            assert set(model) == {"gid", "lane", "x"}
            for name, value in model.items():
                check(c, shown[name], value, f"caller lane {lane} {name}")
            # the register map gives it no place at the call: never guessed
            assert shown["steps"]["value"] == "<optimized out>"
            callee = frame_vars(c, tid)[1]
            assert same(callee["lane"]["value"], lane) and same(callee["steps"]["value"], lane % 5 + 1)
        # an even lane never made the call: only its own frame
        c.request("setFocus", {"threadId": tid, "lane": 2})
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        assert len(frames) == 1
        c.request("disconnect")
    finally:
        c.close()
