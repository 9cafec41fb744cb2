"""DW_OP_call_ref into another unit: the called DIE's DW_AT_location belongs to that DIE's unit, so its
DW_OP_call2 / DW_OP_call4 operands, its typed operations' base type offsets and its DW_OP_addrx indexes are
that unit's (DWARF 5, 2.5.1.5 and 2.5.1.6: offsets "from the beginning of the current compilation unit";
DW_OP_call_ref names "a debugging information entry in a possibly different compilation unit"), never the
calling unit's. Back in the caller, its own unit applies again."""

from __future__ import annotations

import numpy as np

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.frame_context import frame_context
from aspace_dap.dwarf.target import Dialect, FrameContext

from fake_target import FakeTarget

AMD = Dialect(vendor_ops="amd", heterogeneous=True)
CALLER, CALLEE = 0x0, 0x1000  # two units of .debug_info
# DIEs at the same unit offset in each unit: 0x40 (procedures) and 0x30 (base types)
PROCEDURES = {
    CALLEE + 0x80: "DW_OP_call4 0x40",                          # the callee unit's procedure, calling its 0x40
    CALLEE + 0x90: "DW_OP_const_type 0x30 2 0xffff",            # its base type 0x30
    CALLEE + 0xA0: "DW_OP_addrx 1",                             # its .debug_addr entry 1
    CALLEE + 0xB0: "DW_OP_call_ref 0xc0",                       # back into the caller's unit
    CALLEE + 0x40: "DW_OP_lit7",
    CALLER + 0x40: "DW_OP_lit1",
    CALLER + 0xC0: "DW_OP_call4 0x40",
}
BASE_TYPES = {CALLEE + 0x30: (2, 0x08), CALLER + 0x30: (8, 0x07)}  # unsigned char-sized vs 8-byte unsigned
ADDR = {(CALLEE, 1): 0x2000, (CALLER, 1): 0x1000}


def _unit_of(die: int) -> int:
    return CALLEE if die >= CALLEE else CALLER


def _value(text: str, frame: FrameContext):
    res = evaluate(assemble(text, AMD), FakeTarget(), AMD, np.array([5]), frame=frame, kind="value")
    assert not res.errors, res.errors
    return res.for_lane(5)


def _frame() -> FrameContext:
    return FrameContext(unit_offset=CALLER, unit_of=_unit_of,
                        procedure=lambda die: assemble(PROCEDURES[die], AMD) if die in PROCEDURES else None,
                        base_type=lambda die: BASE_TYPES[die],
                        addrx=lambda i, unit=CALLER: ADDR[unit, i])


def test_a_call_ref_procedure_names_dies_of_its_own_unit():
    frame = _frame()
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0x80:#x}", frame).bits[0]) == 7  # the callee unit's 0x40
    typed = _value(f"DW_OP_call_ref {CALLEE + 0x90:#x}", frame)
    assert typed.type.size == 2 and int(typed.bits[0]) == 0xFFFF  # the callee unit's 2-byte base type
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0xA0:#x}", frame).bits[0]) == 0x2000  # its .debug_addr
    # a call_ref from the callee's unit back into the caller's: the caller's offsets again
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0xB0:#x}", frame).bits[0]) == 1
    # after the call, the caller's own unit names its DIEs
    after = _value(f"DW_OP_call_ref {CALLEE + 0x80:#x}; DW_OP_drop; DW_OP_call4 0x40", frame)
    assert int(after.bits[0]) == 1
    typed = _value(f"DW_OP_call_ref {CALLEE + 0x90:#x}; DW_OP_drop; DW_OP_const_type 0x30 8 0x1", frame)
    assert typed.type.size == 8


class _Index:
    """What frame_context asks of a DWARF index, for two units."""

    def addr_index(self, unit, i):
        return ADDR[unit, i]

    def location_for_die(self, die, pc):
        return assemble(PROCEDURES[die], AMD) if die in PROCEDURES else None

    def base_type(self, die):
        return BASE_TYPES[die]

    def unit_offset_of(self, die):
        return _unit_of(die)


def test_a_frame_context_knows_each_dies_unit():
    class Info:
        frame_base_expr = None
        cu_offset = CALLER
        dialect = AMD

    frame = frame_context(_Index(), None, None, Info(), 0x100)
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0x80:#x}", frame).bits[0]) == 7
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0xA0:#x}", frame).bits[0]) == 0x2000
    assert int(_value("DW_OP_addrx 1", frame).bits[0]) == 0x1000


def test_without_the_called_dies_unit_its_unit_offsets_are_not_guessed():
    frame = _frame()
    frame.unit_of = None
    res = evaluate(assemble(f"DW_OP_call_ref {CALLEE + 0x80:#x}", AMD), FakeTarget(), AMD, np.array([5]),
                   frame=frame, kind="value")
    assert "the called DIE's unit is not known" in str(res.errors[5])
    # a procedure that names no DIE by unit offset runs all the same
    assert int(_value(f"DW_OP_call_ref {CALLEE + 0x40:#x}", frame).bits[0]) == 7
