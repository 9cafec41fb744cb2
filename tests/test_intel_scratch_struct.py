"""OpenCL scratch_struct on Intel: every variable in scope per lane, against a model of the kernel written here.

Work-group 2 of 16 (gid 32..47), n = 44, dt = 0.05, stopped at line 49. What IGC cannot describe
shows so: `p` has no location, `history`'s pieces are 0 bits wide, `step` ends in leaked LLVM
operations, and `sample` is not computed yet (its register is not in the dump).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.session import Session
from aspace_dap.state import load_state
from session_views import shown

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "examples" / "opencl" / "dumps" / "scratch_struct.tgllp"
sys.path.insert(0, str(ROOT / "examples"))

N, GROUP, SIMD = 44, 2, 16


def expected(lane: int) -> dict:
    gid = GROUP * SIMD + lane
    # the host's probe[]: step selector in bits 0-7, neighbor in 8-15, axis in 16-23
    pick = (gid * 7 % 97) + ((gid % 11) << 8) + ((gid * 5 % 13) << 16)
    return {"gid": gid, "n": N, "dt": float(np.float32(0.05)), "pick": pick if gid < N else None}


@pytest.fixture(scope="module")
def session():
    return Session(load_state(str(DUMP)))


def _shown(s: Session, lane: int) -> dict[str, str]:
    frame, values = shown(s, lane)
    assert frame.name == "integrate" and frame.line == 49
    return values


def test_committed_dump_is_current():
    from dumpgen import opencl_examples, opencl_scratch_struct
    assert opencl_examples.stale_files(opencl_scratch_struct.spec()) == []


def test_lanes_past_n_are_inactive(session):
    wave = session.wave()
    assert wave.lanes == SIMD
    assert list(np.nonzero(wave.active_lanes)[0]) == [lane for lane in range(SIMD) if expected(lane)["gid"] < N]
    assert session.lane_state(wave, 13) == "inactive"


@pytest.mark.parametrize("lane", [0, 3, 7, 8, 11, 12, 15])
def test_every_variable_per_lane(session, lane):
    shown = _shown(session, lane)
    want = expected(lane)
    assert set(shown) == {"state", "probe", "out", "n", "dt", "gid", "p", "damping", "history", "pick",
                          "step", "axis", "neighbor", "sample"}
    for name in ("state", "probe", "out", "p", "damping", "axis", "neighbor"):
        assert shown[name] == "<optimized out>", name
    assert int(shown["n"]) == N and int(shown["gid"]) == want["gid"]
    assert float(np.float32(float(shown["dt"]))) == want["dt"]
    if want["pick"] is not None:
        assert int(shown["pick"]) == want["pick"]
    assert "0 bits" in shown["history"]
    assert shown["step"].startswith("<error") or "unavailable" in shown["step"]
    assert "not readable" in shown["sample"]


def test_dap_server_shows_the_variables():
    from test_dap_session import scope_vars, start
    c, stopped = start(str(DUMP))
    try:
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert frames[0]["line"] == 49
        names = {}
        for scope in c.request("scopes", {"frameId": frames[0]["id"]})["scopes"]:  # arguments and locals
            names.update(scope_vars(c, frames[0]["id"], scope["name"]))
        want = expected(3)  # the focus lane
        assert int(names["gid"]["value"]) == want["gid"]
        assert int(names["pick"]["value"]) == want["pick"]
        assert int(names["n"]["value"]) == N
    finally:
        c.close()
