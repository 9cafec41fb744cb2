"""A lane's frames come from where that lane is, never from another branch.

CUDA divergent_call (examples/cuda/divergent_call.cu): the odd lanes are inside `settle` (called at
line 21); the even lanes took the `else` branch (lines 23-26) and never called it. On sm_90 every
thread has its own PC (independent thread scheduling), so a lane outside the active mask may be
anywhere; the bundled dump records no per-lane PCs.
"""

import json
import shutil
from pathlib import Path

import pytest

from aspace_dap.expressions import lane_values
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
    rows = {r["lane"]: r for r in lane_values(s, "acc", wave_id=wave.id)}
    assert rows[0]["value"] == f"<unavailable: lane 0 is not at this stop; it is at 0x{join:x}>"
