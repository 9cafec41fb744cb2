"""The shared location printer on hand-written expressions."""

from __future__ import annotations

import numpy as np

from aspace_dap.adapters import adapter_for
from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.describe import describe_evaluated, describe_location, summarize_location
from aspace_dap.dwarf.locations import Location, MemoryLocation
from aspace_dap.dwarf.target import Dialect, FrameContext

AMD = adapter_for("amd")
UPSTREAM = Dialect(vendor_ops="amd")
ROCM = Dialect(vendor_ops="amd", heterogeneous=True)
VGPR3 = 2560 + 3
S33 = 32 + 33


def asm(text: str, dialect: Dialect = UPSTREAM) -> bytes:
    return assemble(text, dialect)


def test_per_lane_register_upstream_and_whole_wave_rocm():
    assert describe_location(asm(f"DW_OP_regx {VGPR3}"), UPSTREAM, AMD) == "v3[lane]"
    rocm = asm(f"DW_OP_regx {VGPR3}; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", ROCM)
    assert describe_location(rocm, ROCM, AMD) == "v3[lane]"


def test_lds_through_xderef_is_placed_exactly():
    text = describe_location(asm("DW_OP_constu 0x40; DW_OP_lit2; DW_OP_swap; DW_OP_xderef"), UPSTREAM, AMD)
    assert text == "local#0x40 (LDS)"


def test_frame_pointer_relative_scratch_in_words():
    frame = FrameContext(frame_base_expr=asm(f"DW_OP_regx {S33}"))
    got = summarize_location(asm("DW_OP_fbreg 0x34"), UPSTREAM, AMD, frame=frame)
    assert got.text == "private_lane fp+0x34 (scratch)"
    assert got.storage == {"lane"}


def test_fixed_frame_base_evaluates():
    frame = FrameContext(frame_base_expr=AMD.entry_frame_base(UPSTREAM))
    assert describe_location(asm("DW_OP_fbreg 8"), UPSTREAM, AMD, frame=frame) == "private_lane#0x8 (scratch)"


def test_composite_pieces():
    expr = asm(f"DW_OP_regx {VGPR3}; DW_OP_piece 4; DW_OP_lit7; DW_OP_stack_value; DW_OP_piece 4")
    got = summarize_location(expr, UPSTREAM, AMD)
    assert got.text == "{v3[lane]:4, implicit:4}"
    assert got.storage == {"register", "implicit"}


def test_values_computed_from_registers_and_empty_and_broken():
    expr = asm(f"DW_OP_bregx {VGPR3} 0; DW_OP_lit1; DW_OP_plus; DW_OP_stack_value")
    assert describe_location(expr, UPSTREAM, AMD) == "computed from v3[lane]"
    assert describe_location(b"", UPSTREAM, AMD) == "optimized out"
    assert describe_location(b"\x90", UPSTREAM, AMD).startswith("unreadable location")
    assert describe_location(asm("DW_OP_lit5; DW_OP_stack_value"), UPSTREAM, AMD) == "implicit 0x5"


def test_space_labels_are_the_vendors_words():
    amd, nvidia, intel = AMD, adapter_for("nvidia"), adapter_for("intel")
    assert [amd.space_label(amd.space_by_name(n)) for n in ("local", "private_lane", "private_wave", "private_lane3",
                                                            "region", "global", "generic")] == \
        ["LDS", "scratch", "scratch", "scratch", "GDS", None, None]
    assert [nvidia.space_label(nvidia.space_by_name(n)) for n in ("shared", "local", "global", "param")] == \
        ["shared", "local", None, None]
    assert [intel.space_label(intel.space_by_name(n)) for n in ("local", "private", "global", "generic")] == \
        ["SLM", "private", None, None]


def memory_at(space, address: int) -> Location:
    one = np.zeros(1, np.int64)
    return Location((MemoryLocation(space, np.array([address], np.uint64), one, one),))


def test_a_label_that_repeats_the_space_name_is_left_out():
    nvidia, intel = adapter_for("nvidia"), adapter_for("intel")
    assert describe_evaluated(memory_at(nvidia.space_by_name("shared"), 0x40), nvidia) == "shared#0x40"
    assert describe_evaluated(memory_at(intel.space_by_name("local"), 0x40), intel) == "local#0x40 (SLM)"
    assert describe_evaluated(memory_at(AMD.space_by_name("local"), 0x40), AMD) == "local#0x40 (LDS)"
    assert describe_evaluated(memory_at(AMD.space_by_name("global"), 0x40), AMD) == "global#0x40"


class _Kernels:
    """A code object's kernel lookup: only `kernel(name)` is asked."""

    def __init__(self, *names: str):
        self.names = names

    def kernel(self, name: str):
        return name if name in self.names else None


def test_frame_context_gives_a_kernel_without_frame_base_the_entry_one():
    from aspace_dap.dwarf.frame_context import frame_context
    from aspace_dap.dwarf.index import FrameInfo

    kernel = FrameInfo("k", "_Z1kv", 0x10, 0, False, 0x100, None, dialect=UPSTREAM)
    inlined = FrameInfo("helper", None, 0x40, 0, True, 0x120, None, dialect=UPSTREAM)
    device = FrameInfo("f", "_Z1fv", 0x80, 0, False, 0x200, None, dialect=UPSTREAM)
    code = _Kernels("_Z1kv")
    entry = AMD.entry_frame_base(UPSTREAM)
    assert entry
    assert frame_context(None, code, AMD, kernel, 0x104).frame_base_expr == entry
    # an inlined frame stands in its kernel's frame
    assert frame_context(None, code, AMD, inlined, 0x124, function=kernel).frame_base_expr == entry
    assert frame_context(None, code, AMD, device, 0x204).frame_base_expr is None
    own = asm(f"DW_OP_regx {S33}")
    with_base = FrameInfo("k", "_Z1kv", 0x10, 0, False, 0x100, own, dialect=UPSTREAM)
    got = frame_context(None, code, AMD, with_base, 0x104, load_bias=0x1000)
    assert (got.frame_base_expr, got.pc, got.load_bias, got.addrx) == (own, 0x104, 0x1000, None)
