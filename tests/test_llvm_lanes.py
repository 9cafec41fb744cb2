"""DW_AT_LLVM_lanes (AMDGPU's DWARF extensions, amdgpu-usage.rst "DW_AT_LLVM_lanes *New*"): a
subprogram's static lane count, the element count of its DW_AT_LLVM_lane_pc vector and the bits of its
DW_AT_LLVM_active_lane mask. Where a subprogram gives it, lanes past it are no lanes of the function (no
lane PC, never active, shown so in the lanes view); where it gives none, the wavefront's lanes are the
count (AMD's compilers describe whole waves); 0 is ill-formed and the session says so."""

from __future__ import annotations

import dataclasses
import os
import struct

import numpy as np
import pytest

from aspace_dap.dap.waves import lane_rows
from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.dwarf.target import Dialect
from aspace_dap.session import Session

from test_dwarf_index_synthetic import (DW_FORM_ADDR, DW_FORM_DATA1, DW_FORM_DATA4, DW_FORM_EXPRLOC, DW_FORM_STRING,
                                        FakeElf, abbrev_table, cstr, exprloc, uleb)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMP = os.path.join(ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0")  # a wave64 kernel
AMD = Dialect(vendor_ops="amd")


def _unit(lanes_attribute: int, lanes: int) -> dict[str, bytes]:
    """A heterogeneous DWARF 5 unit whose subprogram `kern` has DW_AT_LLVM_lanes (`lanes_attribute`)."""
    abbrevs = [(1, 0x11, True, [(0x25, DW_FORM_STRING), (0x3E09, DW_FORM_STRING), (0x03, DW_FORM_STRING),
                                (0x11, DW_FORM_ADDR), (0x12, DW_FORM_DATA4)]),
               (2, 0x2E, False, [(0x03, DW_FORM_STRING), (0x11, DW_FORM_ADDR), (0x12, DW_FORM_DATA4),
                                 (0x3E12, DW_FORM_EXPRLOC), (lanes_attribute, DW_FORM_DATA1)])]
    cu = uleb(1) + cstr("AMD clang version 17.0.0") + cstr("[llvm:v0.0]") + cstr("k.hip") + \
        struct.pack("<QI", 0x1000, 0x100)
    sub = uleb(2) + cstr("kern") + struct.pack("<QI", 0x1000, 0x80) + exprloc(bytes([0x90]) + uleb(2562)) + \
        bytes([lanes])
    body = cu + sub + b"\0"
    return {".debug_info": struct.pack("<IHBBI", len(body) + 8, 5, 1, 8, 0) + body,
            ".debug_abbrev": abbrev_table(abbrevs)}


@pytest.mark.parametrize("code", [0x3E0A, 0x3E11])  # the extension document's code, ROCm's Dwarf.def's
def test_the_index_reads_the_lane_count(code):
    idx = DwarfIndex(FakeElf(_unit(code, 32)), e_machine=224)
    [frame] = idx.frames_at(0x1010)
    assert frame.lanes == 32


def _session(lanes=None, lane_pc=None, active=None):
    """The lds_tiles dump with its kernel given DW_AT_LLVM_lanes / lane_pc / active_lane, as test_lane_pc does."""
    s = Session.open(DUMP)
    index = s.program_for(s.wave()).index
    real_frames_at = index.frames_at
    changes = {"lanes": lanes}
    if lane_pc is not None:
        changes["lane_pc_expr"] = lane_pc
    if active is not None:
        changes["active_lane_expr"] = active
    index.frames_at = lambda pc: [dataclasses.replace(f, **changes) for f in real_frames_at(pc)]
    return s


def _lane_pc_vector(waiting: int) -> bytes:
    """The AMDGPU guide's shape: the wave's PC for EXEC's lanes, `waiting` for the others, 64 elements."""
    return assemble(f"DW_OP_addr {waiting}; DW_OP_stack_value; DW_OP_LLVM_extend 64 64; DW_OP_regx 16; "
                    "DW_OP_LLVM_extend 64 64; DW_OP_regval_type 17 0; DW_OP_LLVM_select_bit_piece 64 64", AMD)


def test_lane_pc_and_active_lane_have_the_subprograms_lane_count():
    plain = Session.open(DUMP)
    wave = plain.wave()
    waiting = plain.frames()[0].info.low_pc + 0x10
    inactive = [int(n) for n in np.nonzero(~wave.active_lanes & wave.valid_lanes)[0]]
    low, high = [n for n in inactive if n < 32], [n for n in inactive if n >= 32]
    assert low and high
    # without DW_AT_LLVM_lanes the vectors have the wavefront's 64 elements
    s = _session(lane_pc=_lane_pc_vector(waiting))
    assert s.lane_pc(s.wave(), high[0]) == waiting and s.lane_pc(s.wave(), low[0]) == waiting
    # with 32, lanes 32-63 are no lanes of the kernel: no element of its lane_pc vector is theirs
    s = _session(lanes=32, lane_pc=_lane_pc_vector(waiting))
    assert s.lane_pc(s.wave(), low[0]) == waiting and s.lane_pc(s.wave(), high[0]) != waiting
    # the active-lane mask has 32 bits that count
    s = _session(lanes=32, active=assemble(f"DW_OP_constu {(1 << 64) - 1}", AMD))
    active = s.active_lanes(s.wave())
    assert active[:32].tolist() == s.wave().valid_lanes[:32].tolist() and not active[32:].any()
    assert "[32/64 active]" in s.thread_name(s.wave())


def test_the_lanes_view_shows_lanes_past_the_count_as_none_of_the_function():
    s = _session(lanes=16)
    rows = lane_rows(s, s.wave().id)
    assert len(rows) == 64
    assert {r["state"] for r in rows[16:]} == {"invalid"}
    assert {r["state"] for r in rows[:16]} <= {"active", "inactive"}
    assert not s.warnings or not any("DW_AT_LLVM_lanes" in w for w in s.warnings)


def test_zero_lanes_is_ill_formed_and_said():
    s = _session(lanes=0, active=assemble("DW_OP_constu 0xff", AMD))
    wave = s.wave()
    active = s.active_lanes(wave)
    assert active.tolist() == [bool(n < 8 and wave.valid_lanes[n]) for n in range(64)]  # the wavefront's count
    assert any("DW_AT_LLVM_lanes 0 is ill-formed" in w for w in s.warnings)
    assert {r["state"] for r in lane_rows(s, wave.id)[8:]} <= {"inactive", "invalid"}

