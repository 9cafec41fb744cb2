"""Both AMDGPU dialects give the same values on a real dump.

The lds_tiles dumps were built for Debian clang's upstream DWARF. Here each
variable's place is also written the way ROCm's heterogeneous compiler
writes it (whole-wave VGPR + push_lane offset, SGPR33 >> 6 in private_lane,
DW_ASPACE local/generic), and both must read the same bytes in every lane.
"""

import os

import numpy as np
import pytest

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.storage import read_bytes
from aspace_dap.dwarf.target import Dialect
from aspace_dap.session import Session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMPS = os.path.join(ROOT, "examples", "lds_tiles", "dumps")
ROCM = Dialect(vendor_ops="amd", heterogeneous=True, producer="AMD clang")
UPSTREAM = Dialect(vendor_ops="amd", heterogeneous=False, producer="Debian clang")


def read_all_lanes(session, frame, text, dialect, size, frame_ctx_dialect=None):
    wave = session.wave(frame.wave_id)
    target = session.target_for(wave, dialect)
    lanes = np.arange(wave.lanes)
    ctx = session.frame_context(frame.program, frame.info, frame.runtime_pc)
    res = evaluate(assemble(text, dialect), target, dialect, lanes, frame=ctx)
    assert not res.errors, res.errors
    (glanes, loc), = res.groups
    data, state = read_bytes(loc, target, size)
    return loc, data, state


def frame_of(dump):
    s = Session.open(os.path.join(DUMPS, dump))
    return s, s.frames()[0]


def test_private_variable_both_dialects():
    s, f = frame_of("gfx90a.O0")
    # upstream: DW_OP_fbreg +0x40 with frame base regx SGPR33 (tx)
    up_loc, up, up_state = read_all_lanes(s, f, "DW_OP_fbreg 0x40", UPSTREAM, 4)
    rocm_loc, rocm, rocm_state = read_all_lanes(
        s, f, "DW_OP_regx 65; DW_OP_deref_size 4; DW_OP_lit6; DW_OP_shr; DW_OP_constu 5; "
              "DW_OP_LLVM_form_aspace_address; DW_OP_constu 0x40; DW_OP_LLVM_offset", ROCM, 4)
    assert up_loc.primary.space.name == rocm_loc.primary.space.name == "private_lane"
    assert (up == rocm).all() and (up_state == rocm_state).all() and not up_state.any()
    tx = up.view("<i4")[:, 0]
    wave = s.wave(f.wave_id)
    assert [int(v) for v in tx[:4]] == [wave.local_id(lane)[0] for lane in range(4)]


def test_vgpr_variable_both_dialects():
    s, f = frame_of("gfx90a.O2")
    up_loc, up, _ = read_all_lanes(s, f, "DW_OP_regx 2561", UPSTREAM, 4)
    rocm_loc, rocm, _ = read_all_lanes(
        s, f, "DW_OP_regx 2561; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", ROCM, 4)
    assert (up == rocm).all()
    assert up_loc.describe(5) == "v1[lane 5]" and rocm_loc.describe(5) == "v1[lane 5]"


@pytest.mark.parametrize("dump", ["gfx90a.O0", "gfx1030.O0"])
def test_lds_through_local_and_generic_spaces(dump):
    s, f = frame_of(dump)
    lanes = s.wave(f.wave_id).lanes
    up_loc, up, _ = read_all_lanes(s, f, "DW_OP_constu 0x40; DW_OP_lit2; DW_OP_swap; DW_OP_xderef", UPSTREAM, 8)
    assert up_loc.primary.space.name == "local"
    _, local, _ = read_all_lanes(s, f, "DW_OP_constu 0x40; DW_OP_lit3; DW_OP_LLVM_form_aspace_address", ROCM, 8)
    aperture = s.state.target.apertures["local"].base
    _, generic, state = read_all_lanes(
        s, f, f"DW_OP_constu {aperture + 0x40}; DW_OP_lit1; DW_OP_LLVM_form_aspace_address", ROCM, 8)
    assert (up == local).all() and (up == generic).all() and not state.any()
    assert up.shape == (lanes, 8)


def test_private_lane_n_reads_another_lanes_scratch():
    s, f = frame_of("gfx90a.O0")
    _, mine, _ = read_all_lanes(s, f, "DW_OP_fbreg 0x40", UPSTREAM, 4)
    base = int(s.wave(f.wave_id).registers.value("s33")) >> 6
    # private_lane3 (DW_ASPACE 0x23): every lane reads lane 3's copy of tx
    _, theirs, _ = read_all_lanes(s, f, f"DW_OP_constu {base + 0x40}; DW_OP_constu 0x23; "
                                        "DW_OP_LLVM_form_aspace_address", ROCM, 4)
    assert (theirs == mine[3]).all()
    # private_wave: the unswizzled view holds lane 3's dword at (A / 4) * 64 * 4 + 3 * 4
    wave_addr = ((base + 0x40) // 4) * 256 + 3 * 4
    _, raw, _ = read_all_lanes(s, f, f"DW_OP_constu {wave_addr}; DW_OP_lit6; DW_OP_LLVM_form_aspace_address", ROCM, 4)
    assert (raw == mine[3]).all()
