"""DW_AT_LLVM_lane_pc: where an inactive lane conceptually waits.

Debian's clang does not emit it, so the attribute is attached here to the real
lds_tiles frame; its expression is the AMDGPU guide's shape: a per-lane vector
of PCs selecting the wave's PC for active lanes (EXEC) and the region's
divergence point for the others.
"""

import dataclasses
import os

import numpy as np
import pytest

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.target import Dialect
from aspace_dap.session import Session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMP = os.path.join(ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0")
AMD = Dialect(vendor_ops="amd")


def session_with_lane_pc(waiting_pc):
    s = Session.open(DUMP)
    program = s.program_for(s.wave())
    index = program.index
    real_frames_at = index.frames_at
    expr = assemble(f"DW_OP_addr {waiting_pc}; DW_OP_stack_value; DW_OP_LLVM_extend 64 64; "
                    "DW_OP_regx 16; DW_OP_LLVM_extend 64 64; DW_OP_regval_type 17 0; "
                    "DW_OP_LLVM_select_bit_piece 64 64", AMD)

    def frames_at(pc):
        return [dataclasses.replace(f, lane_pc_expr=expr) for f in real_frames_at(pc)]

    index.frames_at = frames_at
    return s, index


def test_inactive_lanes_wait_where_the_lane_pc_says():
    s0 = Session.open(DUMP)
    wave = s0.wave()
    pc = wave.pc
    fn = s0.frames()[0]
    waiting = fn.info.low_pc + 0x10  # a point in the kernel before the divergent region
    s, index = session_with_lane_pc(waiting)
    wave = s.wave()
    active = np.nonzero(wave.active_lanes)[0]
    inactive = np.nonzero(~wave.active_lanes & wave.valid_lanes)[0]
    assert len(active) and len(inactive)
    assert s.lane_pc(wave, int(active[0])) == pc
    assert s.lane_pc(wave, int(inactive[0])) == waiting
    frames = s.frames(wave.id, int(inactive[0]))
    assert frames[0].runtime_pc == waiting
    assert frames[0].line == index.line_for_pc(waiting).line
    assert s.frames(wave.id, int(active[0]))[0].line == s0.frames()[0].line


def test_active_lane_attribute_overrides_exec():
    """DW_AT_LLVM_active_lane: during a whole-wave operation EXEC is widened; the attribute says who is active."""
    s = Session.open(DUMP)
    index = s.program_for(s.wave()).index
    real_frames_at = index.frames_at
    mask = 0b1010_0000_0000_0110
    expr = assemble(f"DW_OP_constu {mask}", AMD)
    index.frames_at = lambda pc: [dataclasses.replace(f, active_lane_expr=expr) for f in real_frames_at(pc)]
    wave = s.wave()
    active = s.active_lanes(wave)
    assert [int(x) for x in np.nonzero(active)[0]] == [1, 2, 13, 15]
    assert s.lane_state(wave, 13) == "active" and s.lane_state(wave, 0) == "inactive"
    assert "[4/64 active]" in s.thread_name(wave)


def _with_lane_pcs(tmp_path, dump: str, other_line_offset: int = 0x10):
    """A copy of `dump` whose manifest gives every wave lane PCs: the upper half of the lanes stand at
    another PC of the same function (its low_pc + other_line_offset), the rest at the wave's PC."""
    import json
    import shutil

    dest = tmp_path / os.path.basename(dump)
    shutil.copytree(dump, dest)
    probe = Session.open(dump)
    manifest = json.loads((dest / "manifest.json").read_text())
    for dispatch in manifest["dispatches"]:
        for group in dispatch["workgroups"]:
            for entry in group["waves"]:
                wave = probe.state.wave_by_id(entry["id"])
                frame = probe.frames(wave.id, int(np.nonzero(wave.active_lanes)[0][0]))[-1]
                other = frame.info.low_pc + frame.program.load_address + other_line_offset
                entry["lane_pcs"] = [hex(wave.pc if lane < wave.lanes // 2 else other) for lane in range(wave.lanes)]
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return str(dest)


@pytest.mark.parametrize("dump, expression", [
    (os.path.join(ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0"), "tx + ty * 100"),
    (os.path.join(ROOT, "examples", "opencl", "dumps", "lds_tiles.tgllp.O0"), "tx + ty * 100"),
])
def test_all_lanes_view_evaluates_each_lane_at_its_own_pc(tmp_path, dump, expression):
    """laneValues answers, for a lane at its own PC, what `evaluate` answers with the focus on that lane
    (AMD and Intel dumps with lane_pcs): never `<unavailable: ... not at this stop>`."""
    from aspace_dap.expressions import evaluate_expression
    from aspace_dap.lane_values import lane_values
    from aspace_dap.values.format import format_obj

    s = Session.open(_with_lane_pcs(tmp_path, dump))
    wave = s.wave()
    rows = lane_values(s, expression, wave_id=wave.id)
    pcs = {s.lane_pc(wave, lane) for lane in range(wave.lanes)}
    assert len(pcs) == 2
    for lane, row in enumerate(rows):
        own = s.frames(wave.id, lane)[0]
        assert own.runtime_pc == s.lane_pc(wave, lane)
        try:
            expected = format_obj(evaluate_expression(s, expression, frame=own, lanes=[lane]), 0)
        except Exception as exc:  # noqa: BLE001 - the row must say the same
            expected = f"<error: {exc}"
        assert row["value"].startswith(expected), (lane, row, expected)
        assert "not at this stop" not in row["value"]
