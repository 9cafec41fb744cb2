"""Hostile DWARF: random bytes and adversarial programs stop with the project's errors, within limits."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import Limits, evaluate
from aspace_dap.dwarf.storage import read_bytes
from aspace_dap.dwarf.target import Dialect, FrameContext
from aspace_dap.errors import AspaceError, LimitExceeded

from fake_target import FakeTarget
from fuzz_rounds import rounds

DIALECTS = [Dialect(vendor_ops="amd", heterogeneous=True), Dialect(vendor_ops="amd"), Dialect(vendor_ops="gnu"),
            Dialect(vendor_ops="intel"), Dialect(vendor_ops="nvidia")]
LIMITS = Limits(max_steps=2000, max_stack=200, max_call_depth=8, max_piece_bits=1 << 16)


def frame_for(dialect):
    # every DIE is a procedure that calls itself: recursion must hit the call-depth limit
    return FrameContext(procedure=lambda die: bytes([0x99]) + die.to_bytes(4, "little"),
                        base_type=lambda die: (4, 0x07), frame_base_expr=b"\x91\x00",
                        addrx=lambda i: i * 8)


@settings(max_examples=rounds(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=48), d=st.sampled_from(DIALECTS), lanes=st.sampled_from([1, 64]),
       kind=st.sampled_from(["location", "value"]))
def test_random_bytes_only_raise_project_errors(data, d, lanes, kind):
    t = FakeTarget()
    res = evaluate(data, t, d, np.arange(lanes), frame=frame_for(d), kind=kind, limits=LIMITS)
    for err in res.errors.values():
        assert isinstance(err, AspaceError)
    for _, entry in res.groups:
        try:
            read_bytes(entry, t, 8) if not hasattr(entry, "bits") else None
        except AspaceError:
            pass


def hostile(text, d=DIALECTS[0], limits=LIMITS, lanes=64):
    t = FakeTarget()
    return evaluate(assemble(text, d), t, d, np.arange(lanes), frame=frame_for(d), limits=limits)


def test_infinite_loop_hits_step_limit():
    res = hostile("DW_OP_skip -3")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())


def test_divergent_infinite_loop_hits_step_limit():
    # lane 0 falls through; every other lane loops on `dup; bra` until the shared step budget runs out
    res = hostile("DW_OP_LLVM_push_lane; DW_OP_dup; DW_OP_bra -4")
    assert sorted(res.errors) == list(range(1, 64))
    assert all(isinstance(e, LimitExceeded) for e in res.errors.values())
    assert [list(g) for g, _ in res.groups] == [[0]]


def test_stack_growth_hits_stack_limit():
    res = hostile("DW_OP_lit1; DW_OP_dup; DW_OP_skip -3")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())


def test_recursive_procedures_hit_call_depth():
    res = hostile("DW_OP_call4 0x40")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())


def test_huge_pieces_are_refused():
    res = hostile("DW_OP_piece 0xffffffffffff")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())
    res = hostile("DW_OP_lit0; DW_OP_LLVM_extend 4096 4096")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())


def test_piece_count_grows_until_limit():
    res = hostile("DW_OP_piece 1; DW_OP_skip -5")
    assert len(res.errors) == 64 and all(isinstance(e, LimitExceeded) for e in res.errors.values())
