"""Lane-wide evaluation must equal evaluating lane by lane, on generated programs.

Programs mix lane-varying inputs (push_lane, per-lane VGPRs, per-lane private
memory), arithmetic, stack shuffles, forward and divergent branches, and end
as a value, a memory location, a register slice or a composite.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.locations import Value
from aspace_dap.dwarf.storage import read_bytes
from aspace_dap.dwarf.target import Dialect

from fake_target import FakeTarget

AMD = Dialect(vendor_ops="amd", heterogeneous=True)

PUSHERS = [
    "DW_OP_LLVM_push_lane", "DW_OP_lit3", "DW_OP_lit0", "DW_OP_constu 1000", "DW_OP_consts -7",
    "DW_OP_bregx 2560 0", "DW_OP_bregx 2561 4", "DW_OP_bregx 32 0", "DW_OP_regval_type 2562 0",
]
UNARY = ["DW_OP_neg", "DW_OP_not", "DW_OP_abs", "DW_OP_plus_uconst 12", "DW_OP_dup; DW_OP_drop",
         "DW_OP_lit3; DW_OP_and", "DW_OP_lit1; DW_OP_shl", "DW_OP_lit2; DW_OP_shr", "DW_OP_lit5; DW_OP_mod",
         "DW_OP_lit4; DW_OP_div", "DW_OP_constu 0x3c; DW_OP_and; DW_OP_constu 5; DW_OP_LLVM_form_aspace_address; "
         "DW_OP_deref_size 4"]
BINARY = ["DW_OP_plus", "DW_OP_minus", "DW_OP_mul", "DW_OP_xor", "DW_OP_or", "DW_OP_lt", "DW_OP_gt",
          "DW_OP_eq", "DW_OP_ne", "DW_OP_shra", "DW_OP_div", "DW_OP_mod", "DW_OP_swap; DW_OP_minus",
          "DW_OP_over; DW_OP_plus; DW_OP_plus"]
ENDINGS = [
    "",  # value, or memory location in global space at location kind
    "; DW_OP_stack_value",
    "; DW_OP_constu 0x3c; DW_OP_and; DW_OP_constu 5; DW_OP_LLVM_form_aspace_address",
    "; DW_OP_lit7; DW_OP_and; DW_OP_lit4; DW_OP_mul; DW_OP_regx 2563; DW_OP_swap; DW_OP_LLVM_offset",
    "; DW_OP_stack_value; DW_OP_piece 4; DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; "
    "DW_OP_LLVM_offset; DW_OP_piece 4",
]


@st.composite
def programs(draw):
    parts = [draw(st.sampled_from(PUSHERS))]
    depth = 1
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.integers(0, 3))
        if choice == 0 or depth < 2:
            parts.append(draw(st.sampled_from(PUSHERS)))
            depth += 1
        elif choice == 1:
            parts.append(draw(st.sampled_from(UNARY)))
        elif choice == 2:
            parts.append(draw(st.sampled_from(BINARY)))
            depth -= 1
        else:
            # divergent branch over an alternative computation: cond on lane bits
            bit = draw(st.integers(0, 5))
            alt = draw(st.sampled_from(UNARY[:6]))
            parts.append(f"DW_OP_LLVM_push_lane; DW_OP_lit{bit}; DW_OP_shr; DW_OP_lit1; DW_OP_and; "
                         f"DW_OP_bra @skip; {alt}; DW_OP_label @skip")
    return "; ".join(parts) + draw(st.sampled_from(ENDINGS))


def materialise(text: str) -> bytes:
    """Assemble, resolving `DW_OP_bra @skip ... DW_OP_label @skip` so the branch skips the alternative."""
    chunks = [c for c in text.split("; ") if c]
    result = bytearray()
    idx = 0
    while idx < len(chunks):
        if chunks[idx] == "DW_OP_bra @skip":
            end = chunks.index("DW_OP_label @skip", idx)
            body = assemble("; ".join(chunks[idx + 1:end]), AMD)
            result += assemble(f"DW_OP_bra {len(body)}", AMD) + body
            idx = end
        else:
            result += assemble(chunks[idx], AMD)
        idx += 1
    return bytes(result)


def fingerprint(entry, target):
    if isinstance(entry, Value):
        return ("value", entry.type, entry.bits.tolist())
    data, state = read_bytes(entry, target, 8)
    return ("location", entry.describe(), data.tolist(), state.tolist())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=programs(), seed=st.integers(0, 1000), kind=st.sampled_from(["value", "location"]),
       lanes=st.sampled_from([64, 32]))
def test_lane_wide_equals_per_lane(text, seed, kind, lanes):
    t = FakeTarget(lanes=lanes, seed=seed)
    for lane in range(lanes):
        t.poke(5, 0, np.arange(64, dtype=np.uint8).tobytes()[: 4 * (lane % 16 + 1)], lane=lane)
    expr = materialise(text)
    all_lanes = np.arange(lanes)
    wide = evaluate(expr, t, AMD, all_lanes, kind=kind)
    for lane in range(lanes):
        alone = evaluate(expr, t, AMD, np.array([lane]), kind=kind)
        if lane in alone.errors:
            assert lane in wide.errors
            assert type(wide.errors[lane]) is type(alone.errors[lane])
            continue
        assert lane not in wide.errors, (text, lane, wide.errors[lane])
        assert fingerprint(wide.for_lane(lane), t) == fingerprint(alone.for_lane(lane), t), text


def test_divergent_branch_splits_and_rejoins_per_lane():
    t = FakeTarget()
    # odd lanes compute lane*2, even lanes lane+100
    body_even = assemble("DW_OP_plus_uconst 100", AMD)
    tail = assemble("DW_OP_lit2; DW_OP_mul", AMD)
    skip_end = assemble(f"DW_OP_skip {len(tail)}", AMD)
    head = assemble("DW_OP_LLVM_push_lane; DW_OP_LLVM_push_lane; DW_OP_lit1; DW_OP_and", AMD)
    bra = assemble(f"DW_OP_bra {len(body_even) + len(skip_end)}", AMD)
    expr = head + bra + body_even + skip_end + tail
    res = evaluate(expr, t, AMD, np.arange(64), kind="value")
    assert len(res.groups) == 2 and not res.errors
    for lane in range(64):
        want = lane * 2 if lane % 2 else lane + 100
        assert int(res.for_lane(lane).bits[0]) == want
