"""Storage claims that cannot all be right: the rules of dwarf/footprint.py and the Intel adapter's
layout check, on small hand-made footprints (the Intel example dumps exercise them end to end)."""

from __future__ import annotations

from aspace_dap.adapters.intel.adapter import IntelAdapter
from aspace_dap.dwarf.footprint import Footprint, Slot, collisions

LANES = tuple(range(4))


def reg(name: str, start: int, size: int = 4) -> Slot:
    return Slot("register", name, start, start + size)


def vector(name: str, base: str, stride: int = 4, lanes=LANES) -> Footprint:
    """One 32-bit value per lane, lane L at `base` byte L * stride."""
    return Footprint(name, {lane: (reg(base, lane * stride),) for lane in lanes}, {}, LANES)


def scalar(name: str, where: Slot) -> Footprint:
    return Footprint(name, dict.fromkeys(LANES, (where,)), {}, LANES)


def test_one_value_described_twice_lane_for_lane_is_no_collision():
    # `int b = a;` may leave both variables in one register: each lane reads its own bytes twice
    assert collisions({1: vector("a", "r10"), 2: vector("b", "r10")}) == {}
    assert collisions({1: scalar("n", reg("r4", 8)), 2: scalar("m", reg("r4", 8))}) == {}


def test_another_lanes_bytes_collide_for_both_variables():
    # b's lane L sits where a's lane L + 2 does (lane 0 of b = lane 2 of a)
    b = Footprint("b", {lane: (reg("r10", (lane + 2) * 4),) for lane in LANES}, {}, LANES)
    found = collisions({1: vector("a", "r10"), 2: b})
    assert set(found[1]) == {2, 3} and set(found[2]) == {0, 1}
    assert found[2][0] == "the debug info also puts a (lane 2) in these bytes (r10 bytes 8-11)"
    assert found[1][3] == "the debug info also puts b (lane 1) in these bytes (r10 bytes 12-15)"


def test_a_scalar_in_a_vector_lanes_bytes_collides():
    found = collisions({1: vector("a", "r10"), 2: scalar("n", reg("r10", 4))})
    assert set(found[1]) == {1} and set(found[2]) == set(LANES)


def test_empty_pieces_claim_nothing():
    # IGC writes 0-bit pieces (DW_OP_lit0 as the size): no bytes, so no collision
    empty = Footprint("history", {lane: (reg("r10", 4 * lane, 0),) for lane in LANES}, {}, LANES)
    assert collisions({1: vector("a", "r10"), 2: empty}) == {}


def test_two_lanes_of_one_variable_in_the_same_bytes_collide():
    # lanes 0-1 and 2-3 pairwise in the same dwords (a half of a SIMD value aliasing the other)
    half = Footprint("h", {lane: (reg("r2", (lane % 2) * 4),) for lane in LANES}, {}, LANES)
    found = collisions({1: half})
    assert set(found[1]) == set(LANES)
    assert found[1][2] == "the debug info also puts lane 0 in these bytes (r2 bytes 0-3)"
    # one object every lane sees (a scalar, an SLM array) is fine
    assert collisions({1: scalar("n", reg("r4", 0))}) == {}


def test_two_variables_in_the_same_memory_collide_even_lane_for_lane():
    def private(name):
        return Footprint(name, {lane: (Slot("memory", "generic", 0x100 + 4 * lane, 0x104 + 4 * lane),)
                                for lane in LANES}, {}, LANES)
    found = collisions({1: private("axis"), 2: private("sample")})
    assert set(found[1]) == set(found[2]) == set(LANES)
    assert found[1][0] == "the debug info also puts sample (lane 0) in these bytes (generic#0x100..0x103)"
    # two work-group arrays side by side do not
    tile = scalar("tile", Slot("memory", "local", 0, 0x440))
    sums = scalar("row_sums", Slot("memory", "local", 0x440, 0x480))
    assert collisions({1: tile, 2: sums}) == {}


def pulls(bits: int, stride: int, reg_name: str = "r1") -> Footprint:
    """A value pulled out of one GRF: lane L's `bits` at bit L * stride (IGC's push_bit_piece_stack)."""
    return Footprint("tx", {}, {lane: ((reg_name, lane * stride, bits),) for lane in LANES}, LANES)


def test_igc_16bit_values_one_lane_per_32_bits_are_not_shown():
    found = IntelAdapter().layout_findings({7: pulls(16, 32)})
    assert set(found[7]) == set(LANES)
    assert found[7][0].startswith("IGC places this 16-bit SIMD value one lane per 32 bits of r1 (its unpacked form)")


def test_packed_and_full_width_values_are_left_alone():
    assert IntelAdapter().layout_findings({7: pulls(16, 16), 8: pulls(32, 32), 9: pulls(64, 64)}) == {}
