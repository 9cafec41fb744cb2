"""DW_AT_LLVM_lane_pc: where an inactive lane conceptually waits.

Debian's clang does not emit it, so the attribute is attached here to the real
lds_tiles frame; its expression is the AMDGPU guide's shape: a per-lane vector
of PCs selecting the wave's PC for active lanes (EXEC) and the region's
divergence point for the others.
"""

import dataclasses
import os

import numpy as np

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
