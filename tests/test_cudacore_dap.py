"""CUDA core dumps through the real server: `launch {"state": "x.cudbg"}` shows what the folder dump shows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dap_client import REPO_ROOT, launched

from aspace_dap.state import load_state
from aspace_dap.state.cudacore import write_core

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen.cuda_examples import SPECS  # noqa: E402

DUMPS = Path(REPO_ROOT) / "examples" / "cuda" / "dumps"


def start(state_path):
    return launched(state_path)


def shown_values(c, tid, depth=2):
    """Every variable of the top frame as name path -> shown value, children to `depth` levels."""
    fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
    out = {}

    def walk(ref, prefix, level):
        for v in c.request("variables", {"variablesReference": ref})["variables"]:
            out[prefix + v["name"]] = v["value"]
            if v.get("variablesReference") and level < depth:
                walk(v["variablesReference"], prefix + v["name"] + ".", level + 1)

    for scope in c.request("scopes", {"frameId": fid})["scopes"]:
        walk(scope["variablesReference"], "", 0)
    return out


def same(shown: str, expected) -> bool:
    shown = shown.split(") ", 1)[1] if shown.startswith("(") else shown
    if isinstance(expected, float):
        return np.float32(float(shown.split()[0])) == np.float32(expected)
    return int(shown.split()[0], 0) == int(expected)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_core_shows_the_same_variables_as_the_folder_dump(name, tmp_path):
    spec = SPECS[name]()
    folder = DUMPS / spec.name
    with load_state(folder) as state:
        core = write_core(state, tmp_path / f"{name}.cudbg")
    warp = spec.warps[0]
    active = [lane for lane in range(32) if warp.active >> lane & 1]
    lanes = active[:: max(1, len(active) // 3)][:3]
    seen = {}
    for path in (folder, core):
        c, stopped = start(path)
        try:
            tid = stopped["threadId"]
            top = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
            assert top["line"] == spec.line and top["source"]["path"].endswith(spec.file)
            seen[path] = {}
            for lane in lanes:
                assert c.request("setFocus", {"threadId": tid, "lane": lane})["active"]
                seen[path][lane] = shown_values(c, tid)
            c.request("disconnect")
        finally:
            c.close()
    for lane in lanes:
        from_core, from_folder = seen[core][lane], seen[folder][lane]
        assert from_core == from_folder, lane
        # and they are the source model's values, not merely equal
        thread = ((warp.index_in_workgroup * 32 + lane) % spec.block[0],
                  (warp.index_in_workgroup * 32 + lane) // spec.block[0], 0)
        checked = 0
        for var, value in spec.values(thread).items():
            if var in from_core and not isinstance(value, (dict, list)):
                assert same(from_core[var], value), (lane, var, from_core[var], value)
                checked += 1
        assert checked >= 2, sorted(from_core)


def test_core_with_an_exception_stops_on_the_faulting_lane(tmp_path):
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "fault.cudbg", exception=(1, 5, 14))
    c, stopped = start(core)
    try:
        assert stopped["reason"] == "exception"
        threads = c.request("threads")["threads"]
        assert any(t["name"].startswith("CUDA warp 1") for t in threads)
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert [f["name"].split("(")[0] for f in frames[:2]] == ["settle", "divergent"]
        values = shown_values(c, stopped["threadId"], depth=0)
        assert same(values["lane"], 5)
        c.request("disconnect")
    finally:
        c.close()
