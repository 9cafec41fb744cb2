"""A lane's frames come from where that lane is, never from another branch.

CUDA divergent_call (examples/cuda/divergent_call.cu): the odd lanes are inside `settle` (called at
line 21); the even lanes took the `else` branch (lines 23-26) and never called it. On sm_90 every
thread has its own PC (independent thread scheduling), so a lane outside the active mask may be
anywhere; the bundled dump records no per-lane PCs.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.lane_values import lane_values
from aspace_dap.session import Session

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "examples" / "cuda" / "dumps" / "divergent_call.sm_90.G"
JOIN_LINE = 29  # `if (gid < n)`: where both branches meet again


def test_an_inactive_lane_without_a_pc_shows_no_call_it_did_not_make():
    s = Session.open(str(DUMP))
    wave = s.wave()
    assert not wave.active_lanes[0] and wave.active_lanes[1]
    lane0 = s.frames(wave.id, 0)
    assert len(lane0) == 1 and lane0[0].info is None
    assert "inactive" in lane0[0].name and "no pc" in lane0[0].name
    assert s.variables(lane0[0]) == []
    # the active lanes keep their own stack: settle called from the kernel at line 21
    lane1 = s.frames(wave.id, 1)
    assert [f.name for f in lane1] == ["settle", "divergent"] and lane1[1].line == 21
    # all-lanes values: lane 0 has none in settle's frame
    rows = {r["lane"]: r for r in lane_values(s, "x", wave_id=wave.id)}
    assert rows[0]["value"].startswith("<unavailable: lane 0 is not at this stop")
    assert rows[1]["value"] == "1.5"  # in[1] = 1 * 0.5 + 1


@pytest.fixture
def dump_with_lane_pcs(tmp_path):
    """The same dump with per-lane PCs, as a CUDA core dump has them: odd lanes at the warp's PC,
    even lanes at the first instruction of the join line."""
    dest = tmp_path / DUMP.name
    shutil.copytree(DUMP, dest)
    probe = Session.open(str(DUMP))
    program = probe.program_for(probe.wave())
    source = program.index.line_for_pc(program.elf_pc(probe.wave().pc)).file
    join = min(program.index.pcs_for_line(source, JOIN_LINE)) + program.load_address
    manifest = json.loads((dest / "manifest.json").read_text())
    for group in manifest["dispatches"][0]["workgroups"]:
        for wave in group["waves"]:
            pc = probe.state.wave_by_id(wave["id"]).pc
            wave["lane_pcs"] = [hex(pc if lane & 1 else join) for lane in range(32)]
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest, join


def test_a_lane_with_its_own_pc_shows_its_own_frame(dump_with_lane_pcs):
    dest, join = dump_with_lane_pcs
    s = Session.open(str(dest))
    wave = s.wave()
    lane0 = s.frames(wave.id, 0)
    assert [f.name for f in lane0] == ["divergent"]
    assert lane0[0].line == JOIN_LINE and lane0[0].runtime_pc == join
    assert {v.name for v in s.variables(lane0[0])} >= {"gid", "lane", "x"}
    assert [f.name for f in s.frames(wave.id, 1)] == ["settle", "divergent"]
    # the all-lanes view evaluates lane 0 at its own PC: settle's `acc` is no name there
    rows = {r["lane"]: r for r in lane_values(s, "acc", wave_id=wave.id)}
    assert rows[0]["value"].startswith('<error: no symbol "acc" in current context')
    assert f"lane 0 is in divergent line {JOIN_LINE}" in rows[0]["value"]


# --- lanes at two PCs with their own values ------------------------------------------------------------
#
# examples/cuda/dumps/divergent_call.sm_90.G.lane_pcs (examples/dumpgen/cuda_examples.py): the odd lanes
# stopped in settle at `return acc` (line 9), the even lanes each at their own PC on the join line 29
# after their `else` branch. The expected values follow divergent_call.cu with in[g] = g * 0.5 + 1, n = 100.

LANE_PCS = ROOT / "examples" / "cuda" / "dumps" / "divergent_call.sm_90.G.lane_pcs"
N = 100


def _f32(v: float) -> float:
    return float(np.float32(v))


def _model(gid: int) -> dict:
    lane = gid % 32
    x = _f32(gid * 0.5 + 1) if gid < N else 0.0
    if lane & 1:  # settle(x, lane, steps) ran all its iterations
        acc = x
        for i in range(lane % 5 + 1):
            acc = _f32(_f32(acc * 0.5) + float(lane + i))
        return {"gid": gid, "x": x, "acc": acc}
    result = _f32(-x)
    for i in range(lane % 7):
        result = _f32(result + _f32(i * x))
    return {"gid": gid, "x": x, "result": result}


def _check_two_pcs(s):
    for wave in s.state.waves:
        gids = [wave.global_id(lane)[0] for lane in range(32)]
        models = [_model(g) for g in gids]
        x = lane_values(s, "x", wave_id=wave.id)
        assert [float(r["value"]) for r in x] == [m["x"] for m in models]
        acc = lane_values(s, "acc", wave_id=wave.id)
        for lane, (row, m) in enumerate(zip(acc, models)):
            if lane & 1:
                assert float(row["value"]) == m["acc"], lane
            else:  # at its own PC in the kernel, where settle's acc is no name
                assert row["value"].startswith('<error: no symbol "acc"') and "divergent line 29" in row["value"]
        # the kernel's frame (frame 1 of the odd lanes, the even lanes' only frame)
        gid = lane_values(s, "gid", wave_id=wave.id, frame_index=1)
        assert [int(r["value"]) for r in gid] == gids
        result = lane_values(s, "result", wave_id=wave.id, frame_index=1)
        for lane, (row, m) in enumerate(zip(result, models)):
            if not lane & 1:
                assert float(row["value"]) == m["result"], lane
        assert not any("not at this stop" in r["value"] for r in x + acc + gid + result)


def test_lanes_at_their_own_pc_are_evaluated_there():
    s = Session.open(str(LANE_PCS))
    wave = s.wave()
    assert [f.line for f in s.frames(wave.id, 0)] == [JOIN_LINE]
    assert [f.name for f in s.frames(wave.id, 1)] == ["settle", "divergent"]
    _check_two_pcs(s)


def test_a_cuda_core_with_lane_rows_at_two_pcs(tmp_path):
    """The same warps as a CUDA core dump: every lane row carries its own virtual PC."""
    from aspace_dap.adapters.nvidia.core_writer import write_core
    from aspace_dap.state import load_state

    with load_state(str(LANE_PCS)) as state:
        core = write_core(state, tmp_path / "two_pcs.cudbg")
    s = Session.open(str(core))
    wave = s.state.waves[0]
    pcs = {int(pc) for pc in wave.lane_pcs}
    assert len(pcs) == 2  # the core's lane rows: settle's line 9 and the kernel's line 29
    _check_two_pcs(s)
