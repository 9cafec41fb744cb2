"""What a DWARF frame gives the evaluator: frame base, .debug_addr, DW_OP_call targets, base types.

The debugger (a frame of a dump) and the language server (a function's code,
no dump) build it the same way here, so both evaluate a variable alike.
"""

from __future__ import annotations

from .index import DwarfIndex, FrameInfo
from .target import FrameContext


def is_kernel(code_object, function: FrameInfo) -> bool:
    """Whether the code object's metadata names this function as a kernel (by linkage or plain name), or
    one of its kernels starts where this concrete function starts (DWARF without linkage names:
    -gline-tables-only, whose subprograms carry plain names only)."""
    kernel = getattr(code_object, "kernel", None)
    if kernel and (kernel(function.linkage_name or "") or kernel(function.function)):
        return True
    kernel_at = getattr(code_object, "kernel_at", None)
    return bool(kernel_at and not function.is_inlined and function.low_pc is not None
                and kernel_at(function.low_pc))


def frame_context(index: DwarfIndex | None, code_object, adapter, info: FrameInfo | None, pc: int, *,
                  function: FrameInfo | None = None, load_bias: int = 0, cfa=None) -> FrameContext:
    """The context of frame `info` at ELF address `pc`.

    `function` is the concrete function holding an inlined `info` (default: `info`): a kernel without
    DW_AT_frame_base (optimized entry functions) gets the adapter's entry frame base.
    """
    frame_base = info.frame_base_expr if info is not None else None
    function = function or info
    if frame_base is None and function is not None and is_kernel(code_object, function):
        frame_base = adapter.entry_frame_base(function.dialect)
    cu = info.cu_offset if info is not None else 0
    return FrameContext(
        pc=pc,
        load_bias=load_bias,
        frame_base_expr=frame_base,
        addrx=(lambda i, unit=cu: index.addr_index(unit, i)) if index is not None else None,
        procedure=(lambda die: index.location_for_die(die, pc)) if index is not None else None,
        unit_offset=cu,
        unit_of=index.unit_offset_of if index is not None else None,
        base_type=index.base_type if index is not None else None,
        cfa=cfa,
    )
