"""The worked examples of the seeds, each with the value or location it must produce.

Sources: llvm-dwarf-locations-on-stack.md (examples 1-10) and the AMDGPU user
guide's DWARF sections (lane PC procedures, form_aspace_address, aspace_bregx).
SGPR0 is DWARF register 32, VGPR0 is 2560 (wave64), EXEC 17, PC 16.
"""

import numpy as np

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.locations import CompositeLocation, MemoryLocation, RegisterLocation, UndefinedLocation, Value
from aspace_dap.dwarf.storage import OK, OPTIMIZED_OUT, read_bits, read_bytes
from aspace_dap.dwarf.target import Dialect, FrameContext

from fake_target import FakeTarget

AMD = Dialect(vendor_ops="amd", heterogeneous=True)


def run(text, target, lanes=(5,), kind="location", frame=None):
    res = evaluate(assemble(text, AMD), target, AMD, np.array(lanes), frame=frame, kind=kind)
    assert not res.errors, res.errors
    return res


def one(text, target, lane=5, **kw):
    return run(text, target, (lane,), **kw).for_lane(lane)


def test_dynamic_array_size_value():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x2000)
    t.poke(0, 0x2000, (17).to_bytes(8, "little"))
    v = one("DW_OP_regval_type 32 0; DW_OP_deref", t, kind="value")
    assert isinstance(v, Value) and int(v.bits[0]) == 17 and v.type.size == 8


def test_variable_in_register():
    t = FakeTarget()
    loc = one("DW_OP_regx 32", t)
    place = loc.primary
    assert isinstance(place, RegisterLocation) and place.register.name == "s0" and int(place.bit_offset[0]) == 0
    data, state = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == int(t.sgprs[0]) and not state.any()


def test_variable_in_memory():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x3000)
    loc = one("DW_OP_regval_type 32 0; DW_OP_plus_uconst 0x10", t)
    place = loc.primary
    assert isinstance(place, MemoryLocation) and place.space.name == "global" and int(place.address[0]) == 0x3010


def test_variable_spread_across_locations():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x4000)
    t.sgprs[3] = np.uint64(0x11223344)
    t.poke(0, 0x4010, b"\xaa\xbb")
    loc = one("DW_OP_regx 35; DW_OP_piece 4; DW_OP_piece 2; DW_OP_bregx 32 0x10; DW_OP_piece 2", t)
    comp = loc.primary
    assert isinstance(comp, CompositeLocation) and comp.complete
    assert [p.bits for p in comp.pieces] == [32, 16, 16]
    assert isinstance(comp.pieces[1].location.primary, UndefinedLocation)
    data, state = read_bytes(loc, t, 8)
    assert bytes(data[0][:4]) == (0x11223344).to_bytes(4, "little")
    assert list(state[0]) == [OK] * 4 + [OPTIMIZED_OUT] * 2 + [OK] * 2
    assert bytes(data[0][6:]) == b"\xaa\xbb"


def test_offsetting_a_composite_with_plus_fails():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x4000)
    res = evaluate(assemble("DW_OP_regx 35; DW_OP_piece 4; DW_OP_piece 2; DW_OP_bregx 32 0x10; DW_OP_piece 2; "
                            "DW_OP_plus_uconst 5", AMD), t, AMD, np.array([5]))
    assert 5 in res.errors and "expected a value" in str(res.errors[5])


def test_offsetting_a_composite_the_dwarf5_way():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x4000)
    loc = one("DW_OP_piece 1; DW_OP_bregx 32 0x10; DW_OP_piece 2", t)
    assert [p.bits for p in loc.primary.pieces] == [8, 16]


def test_register_offset_uconst():
    t = FakeTarget()
    loc = one("DW_OP_regx 2560; DW_OP_LLVM_offset_uconst 20", t)
    assert int(loc.primary.bit_offset[0]) == 160
    data, _ = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == int(t.vgprs[0][5])  # byte 20 = lane 5's dword


def test_vgpr_lane_pieces_per_lane():
    """Two VGPR lane slices make an 8-byte variable; every lane sees its own dwords."""
    t = FakeTarget()
    expr = ("DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_constu 4; DW_OP_mul; DW_OP_LLVM_offset; DW_OP_piece 4; "
            "DW_OP_regx 2561; DW_OP_LLVM_push_lane; DW_OP_constu 4; DW_OP_mul; DW_OP_LLVM_offset; DW_OP_piece 4")
    res = run(expr, t, lanes=range(64))
    loc = res.groups[0][1]
    data, state = read_bytes(loc, t, 8)
    assert not state.any()
    got = data.view("<u4")
    assert (got[:, 0] == t.vgprs[0]).all() and (got[:, 1] == t.vgprs[1]).all()


def test_composite_with_piece_end_memory_and_implicit():
    t = FakeTarget()
    t.poke(0, 0xBEEF, b"\x12\x34")
    expr = ("DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_constu 4; DW_OP_mul; DW_OP_LLVM_offset; DW_OP_piece 4; "
            "DW_OP_addr 0xbeef; DW_OP_piece 2; DW_OP_constu 0xf00d; DW_OP_stack_value; DW_OP_piece 2; "
            "DW_OP_LLVM_piece_end")
    loc = one(expr, t, lane=7)
    assert loc.primary.complete
    data, state = read_bytes(loc, t, 8)
    assert bytes(data[0]) == int(t.vgprs[0][7]).to_bytes(4, "little") + b"\x12\x34" + b"\x0d\xf0"
    assert not state.any()
    # a complete composite can be offset like any location
    shifted = one(expr + "; DW_OP_LLVM_offset_uconst 4", t, lane=7)
    data, _ = read_bytes(shifted, t, 4)
    assert bytes(data[0]) == b"\x12\x34\x0d\xf0"


def test_address_spaces_form_aspace_address():
    t = FakeTarget()
    t.sgprs[0] = np.uint64(0x100)
    t.poke(5, 0x110, b"\x2a\x00\x00\x00", lane=5)
    # the seed writes "DW_OP_offset 0x10": the operand form is DW_OP_LLVM_offset_uconst
    loc = one("DW_OP_regval_type 32 0; DW_OP_constu 5; DW_OP_LLVM_form_aspace_address; DW_OP_LLVM_offset_uconst 0x10", t)
    place = loc.primary
    assert place.space.name == "private_lane" and int(place.address[0]) == 0x110 and int(place.lanes[0]) == 5
    data, state = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 42 and not state.any()


def test_bit_offset_on_register():
    t = FakeTarget()
    t.sgprs[3] = np.uint64(0xABC << 20)
    loc = one("DW_OP_regx 35; DW_OP_constu 20; DW_OP_LLVM_bit_offset", t)
    assert int(loc.primary.bit_offset[0]) == 20
    data, state = read_bits(loc, t, 12)
    assert int.from_bytes(bytes(data[0]), "little") == 0xABC and not state.any()
    # bits past the end of the 32-bit register are not invented
    _, state = read_bits(loc, t, 16)
    assert state[0][1] != OK


def test_rocm_private_variable():
    """ROCm: regx SGPR33; deref_size 4; lit6; shr; constu 5; form_aspace_address; lit8; offset."""
    t = FakeTarget()
    t.sgprs[33] = np.uint64(0x200 << 6)
    t.poke(5, 0x208, (1234).to_bytes(4, "little"), lane=11)
    loc = one("DW_OP_regx 65; DW_OP_deref_size 4; DW_OP_lit6; DW_OP_shr; DW_OP_constu 5; "
              "DW_OP_LLVM_form_aspace_address; DW_OP_lit8; DW_OP_LLVM_offset", t, lane=11)
    assert loc.primary.space.name == "private_lane" and int(loc.primary.address[0]) == 0x208
    data, _ = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 1234


def test_aspace_bregx():
    t = FakeTarget()
    t.sgprs[2] = np.uint64(0x80)
    loc = one("DW_OP_constu 3; DW_OP_LLVM_aspace_bregx 34 -16", t)
    assert loc.primary.space.name == "local" and int(loc.primary.address[0]) == 0x70


def test_upstream_xderef_names_lds():
    t = FakeTarget(whole_wave_vgprs=False)
    t.poke(3, 0x40, (99).to_bytes(4, "little"))
    dialect = Dialect(vendor_ops="amd", heterogeneous=False)
    frame = FrameContext(addrx=lambda i: 0x40)
    res = evaluate(assemble("DW_OP_addrx 0; DW_OP_lit2; DW_OP_swap; DW_OP_xderef", dialect), t, dialect,
                   np.array([3]), frame=frame)
    loc = res.for_lane(3)
    assert loc.primary.space.name == "local" and int(loc.primary.address[0]) == 0x40
    data, _ = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 99


def test_upstream_fbreg_private():
    t = FakeTarget(whole_wave_vgprs=False)
    dialect = Dialect(vendor_ops="amd", heterogeneous=False)
    # SGPR33 (DWARF 65) holds a wave-scaled offset: lane address = s33 >> 6
    frame = FrameContext(frame_base_expr=assemble("DW_OP_regx 65", dialect))
    t.sgprs[33] = np.uint64(0x40 << 6)
    t.poke(5, 0x40 + 16, (7).to_bytes(4, "little"), lane=9)
    res = evaluate(assemble("DW_OP_fbreg 16", dialect), t, dialect, np.array([9]), frame=frame)
    loc = res.for_lane(9)
    assert loc.primary.space.name == "private_lane" and int(loc.primary.address[0]) == 0x50
    data, _ = read_bytes(loc, t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 7


# --- AMDGPU user guide: lane PC of divergent lanes through DWARF procedures -------------------

UINT64_DIE = 0x40
ACTIVE_LANE_PC, DIVERGENT_LANE_PC, THEN_PC, SAVE_EXEC = 0x100, 0x140, 0x180, 0x1C0


def lane_pc_setup(exec_mask, saved_exec):
    t = FakeTarget()
    t.pc = 0x1234
    t.exec = exec_mask
    t.sgprs[10] = np.uint64(saved_exec & 0xFFFFFFFF)
    t.sgprs[11] = np.uint64(saved_exec >> 32)
    procs = {
        ACTIVE_LANE_PC: "DW_OP_regx 16; DW_OP_LLVM_extend 64 64; DW_OP_regval_type 17 0x40; "
                        "DW_OP_LLVM_select_bit_piece 64 64",
        DIVERGENT_LANE_PC: "DW_OP_LLVM_undefined; DW_OP_LLVM_extend 64 64",
        THEN_PC: f"DW_OP_call_ref {DIVERGENT_LANE_PC}; DW_OP_addr 0x1200; DW_OP_stack_value; DW_OP_LLVM_extend 64 64; "
                 f"DW_OP_call_ref {SAVE_EXEC}; DW_OP_deref_type 8 0x40; DW_OP_LLVM_select_bit_piece 64 64",
        # the saved EXEC lives in the SGPR pair s10:s11
        SAVE_EXEC: "DW_OP_regx 42; DW_OP_piece 4; DW_OP_regx 43; DW_OP_piece 4",
    }
    frame = FrameContext(procedure=lambda die: assemble(procs[die], AMD) if die in procs else None,
                         base_type=lambda die: (8, 0x07), unit_of=lambda die: 0)  # one unit, at 0
    return t, frame


def lane_pcs(loc, t):
    data, state = read_bytes(loc, t, 64 * 8)
    pcs = data[0].view("<u8")
    known = state[0].reshape(64, 8).max(axis=1) == OK
    return pcs, known


def test_lane_pc_of_inactive_lanes_is_undefined_at_top_level():
    exec_mask = 0x0000_FFFF_0000_FFFF
    t, frame = lane_pc_setup(exec_mask, exec_mask)
    loc = one(f"DW_OP_call_ref {DIVERGENT_LANE_PC}; DW_OP_call_ref {ACTIVE_LANE_PC}", t, frame=frame)
    pcs, known = lane_pcs(loc, t)
    for lane in range(64):
        active = bool(exec_mask >> lane & 1)
        assert known[lane] == active
        if active:
            assert pcs[lane] == 0x1234


def test_lane_pc_in_then_region():
    """Lanes active on entry to the region but not now wait at the region start (0x1200)."""
    saved = 0xFFFF_FFFF_0000_FFFF
    exec_mask = 0x0000_00FF_0000_00FF
    t, frame = lane_pc_setup(exec_mask, saved)
    loc = one(f"DW_OP_call_ref {THEN_PC}; DW_OP_call_ref {ACTIVE_LANE_PC}", t, frame=frame)
    pcs, known = lane_pcs(loc, t)
    for lane in range(64):
        if exec_mask >> lane & 1:
            assert known[lane] and pcs[lane] == 0x1234
        elif saved >> lane & 1:
            assert known[lane] and pcs[lane] == 0x1200
        else:
            assert not known[lane]


def test_xderef_family_is_deref_in_an_address_space():
    """DW_OP_xderef_size S == DW_OP_swap; DW_OP_LLVM_form_aspace_address; DW_OP_deref_size S."""
    t = FakeTarget()
    t.poke(3, 0x20, b"\x78\x56\x34\x12")
    via_xderef = one("DW_OP_lit3; DW_OP_constu 0x20; DW_OP_xderef_size 4", t, kind="value")
    via_form = one("DW_OP_constu 0x20; DW_OP_lit3; DW_OP_LLVM_form_aspace_address; DW_OP_deref_size 4", t,
                   kind="value")
    assert int(via_xderef.bits[0]) == int(via_form.bits[0]) == 0x12345678


def test_multiple_places_read_any():
    from aspace_dap.dwarf.locations import Location
    t = FakeTarget()
    t.poke(0, 0x500, b"\x01\x02\x03\x04")
    mem = one("DW_OP_addr 0x500", t)
    reg = one("DW_OP_regx 32", t)
    both = Location(mem.places + reg.places)
    data, state = read_bytes(both, t, 4)
    assert bytes(data[0]) == b"\x01\x02\x03\x04" and not state.any()
    shifted = both.shifted(np.array([8]))
    assert int(shifted.places[0].address[0]) == 0x501 and int(shifted.places[1].bit_offset[0]) == 8


def test_intel_mid_expression_stack_value_reads_back_only_in_that_dialect():
    """IGC: `...; stack_value; const2u 0xffff; and; stack_value` — gdb-oneapi's reading, Intel dialect only."""
    text = "DW_OP_constu 0x12345; DW_OP_stack_value; DW_OP_const2u 0xffff; DW_OP_and; DW_OP_stack_value"
    intel = Dialect(vendor_ops="intel")
    t = FakeTarget()
    res = evaluate(assemble(text, intel), t, intel, np.array([3]))
    data, _ = read_bytes(res.for_lane(3), t, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 0x2345
    res = evaluate(assemble(text, AMD), t, AMD, np.array([3]))
    assert 3 in res.errors and "expected a value" in str(res.errors[3])


def test_call2_call4_and_typed_operations_name_dies_in_their_unit():
    """DWARF 5 (2.5.1.5, 2.5.1.6): DW_OP_call2/call4 and the typed operations take a DIE's offset from the
    start of the current unit, DW_OP_call_ref its offset in .debug_info. In a second unit at 0x1000,
    `DW_OP_call4 0x40` is the DIE at 0x1040 (0x40 is a DIE of the first unit)."""
    unit = 0x1000
    procs = {unit + 0x40: "DW_OP_lit7", 0x40: "DW_OP_lit1"}
    types = {unit + 0x30: (8, 0x07), 0x30: (2, 0x05)}
    frame = FrameContext(unit_offset=unit, procedure=lambda die: assemble(procs[die], AMD) if die in procs else None,
                         base_type=lambda die: types[die])
    t = FakeTarget()
    for text, value in (("DW_OP_call4 0x40", 7), ("DW_OP_call2 0x40", 7), ("DW_OP_call_ref 0x40", 1),
                        ("DW_OP_const_type 0x30 8 0xffffffffffffffff", 2**64 - 1)):
        v = one(text, t, kind="value", frame=frame)
        assert int(v.bits[0]) == value, text
        if "type" in text:
            assert v.type.size == 8
