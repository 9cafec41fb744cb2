"""OpenCL lds_tiles on Intel: every variable in scope per lane, against a model of the kernel written here.

The model follows the source (lds_tiles.cl) for work-group (1, 1), SIMD thread 1, stopped at line 36
with rows = 20, cols = 36, in[i] = 0.25 i; the dump's generator has its own.
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
DUMP = ROOT / "examples" / "opencl" / "dumps" / "lds_tiles.tgllp"
sys.path.insert(0, str(ROOT / "examples"))

ROWS, COLS, TILE, GX, GY, THREAD, SIMD = 20, 36, 16, 1, 1, 1, 32


def source_value(row: int, col: int) -> float:
    return float(np.float32(0.25) * np.float32(row * COLS + col)) if row < ROWS and col < COLS else 0.0


def expected(lane: int) -> dict:
    tx, ty = (THREAD * SIMD + lane) % TILE, (THREAD * SIMD + lane) // TILE
    row, col = GY * TILE + ty, GX * TILE + tx
    return {"rows": ROWS, "cols": COLS, "tx": tx, "ty": ty, "col": col, "row": row,
            "value": source_value(row, col), "out_col": GY * TILE + tx, "out_row": GX * TILE + ty}


# IGC's DWARF places the 16-bit tx/ty one lane per 32 bits; the registers hold them packed
UNPACKED = "<unavailable: IGC places this 16-bit SIMD value one lane per 32 bits of r{}"


def tile() -> list[list[float]]:
    return [[source_value(GY * TILE + ty, GX * TILE + tx) for tx in range(TILE)] + [0.0] for ty in range(TILE)]


def row_sums() -> list[float]:
    out = []
    for r in tile():
        acc = np.float32(0)
        for k in range(TILE):
            acc = np.float32(acc + np.float32(r[k]))
        out.append(float(acc))
    return out


def _floats(s: Session, lane: int, name: str) -> list[float]:
    """A float array variable's elements as lane `lane` reads them (all bytes must be known)."""
    s.set_focus(lane=lane)
    frame = s.frames()[0]
    var = next(v for v in s.variables(frame) if v.name == name)
    data, _state = s.read_variable(frame, var).obj_for(lane).bytes()
    return np.frombuffer(bytes(data[0]), "<f4").tolist()


@pytest.fixture(scope="module")
def session():
    return Session(load_state(str(DUMP)))


def _shown(s: Session, lane: int) -> dict[str, str]:
    frame, values = shown(s, lane)
    assert frame.name == "transpose_tiles" and frame.line == 36
    return values


def test_committed_dump_is_current():
    from dumpgen import opencl_examples, opencl_lds_tiles
    assert opencl_examples.stale_files(opencl_lds_tiles.spec()) == []


def test_only_the_store_branch_lanes_are_active(session):
    wave = session.wave()
    assert wave.lanes == SIMD
    active = [lane for lane in range(SIMD) if expected(lane)["out_col"] < ROWS and expected(lane)["out_row"] < COLS]
    assert list(np.nonzero(wave.active_lanes)[0]) == active == [0, 1, 2, 3, 16, 17, 18, 19]


@pytest.mark.parametrize("lane", [0, 3, 5, 12, 17, 19, 26, 31])
def test_every_variable_per_lane(session, lane):
    shown = _shown(session, lane)
    want = expected(lane)
    assert set(shown) == {"in", "out", "tile_sums", *want, "tile", "row_sums"}
    for name in ("in", "out", "tile_sums"):  # IGC gives the pointers no location at this pc
        assert shown[name] == "<optimized out>"
    for name in ("rows", "cols", "col", "row", "out_col", "out_row"):
        assert int(shown[name]) == want[name], name
    assert float(shown["value"]) == want["value"]
    assert shown["tx"].startswith(UNPACKED.format(1)) and shown["ty"].startswith(UNPACKED.format(3))
    assert shown["tile"].startswith("{{148, 148.25,") and shown["row_sums"].startswith("{2398, 2542,")
    assert _floats(session, lane, "tile") == [v for r in tile() for v in r]
    assert _floats(session, lane, "row_sums") == row_sums()


def test_the_payload_holds_the_local_ids_packed_where_igcs_dwarf_reads_other_lanes(session):
    # the thread payload as the ISA reads it (`mov (16|M0) r91.0<1>:d r1.0<16;16,1>:uw`, M16 from r2):
    # local id X of lanes 0-31 as 16-bit words in r1-r2, local id Y in r3-r4
    regs = session.wave().registers
    words = np.concatenate([np.frombuffer(bytes(regs.raw(f"r{g}")[0]), "<u2") for g in (1, 2, 3, 4)])
    assert words[:32].tolist() == [expected(lane)["tx"] for lane in range(SIMD)]
    assert words[32:].tolist() == [expected(lane)["ty"] for lane in range(SIMD)]
    # IGC's location gives lane 1 the 16 bits at r1 byte 4: lane 2's id, so tx is not shown
    assert words[2] == expected(2)["tx"] != expected(1)["tx"]


def test_slm_arrays_read_from_the_work_group_memory(session):
    from aspace_dap.adapters.intel.adapter import LOCAL
    target = session.target_for(session.wave(), session.frames()[0].dialect)
    raw = target.read_memory(LOCAL, np.array([0]), np.array([0x440], np.uint64), 4 * TILE)
    assert raw.valid.all()
    assert np.frombuffer(bytes(raw.data[0]), "<f4").tolist() == row_sums()


def test_dap_server_shows_the_variables():
    from test_dap_session import scope_vars, start
    c, stopped = start(str(DUMP))
    try:
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert frames[0]["line"] == 36
        scopes = [sc["name"] for sc in c.request("scopes", {"frameId": frames[0]["id"]})["scopes"]]
        names = {}
        for scope in scopes:  # the SLM arrays may sit in their own scope
            names.update(scope_vars(c, frames[0]["id"], scope))
        want = expected(2)  # the focus lane
        for name in ("col", "row", "out_col", "out_row"):
            assert int(names[name]["value"]) == want[name], name
        assert names["tx"]["value"].startswith(UNPACKED.format(1))
        assert float(names["value"]["value"]) == want["value"]
        sums = c.request("variables", {"variablesReference": names["row_sums"]["variablesReference"]})["variables"]
        assert [float(v["value"]) for v in sums] == row_sums()
    finally:
        c.close()
