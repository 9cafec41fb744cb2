"""Static addresses that cannot be real: variables whose storage would overlap.

Debian's clang-15 leaves a kernel's `__shared__` variables as undefined symbols
in the linked code object, so each gets LDS address 0 in .debug_addr. Two live
objects cannot share storage, so overlapping static addresses in one address
space mark placeholders. The debugger and the language server both ask here,
so they agree on which locations are unknown.
"""

from __future__ import annotations

from ..errors import AspaceError
from .ops import decode
from .types import byte_size

_UPSTREAM_LDS_TAIL = bytes([0x32, 0x16, 0x18])  # DW_OP_lit2; DW_OP_swap; DW_OP_xderef (2 = local)


def overlapping_static_addresses(variables, index) -> dict[int, str]:
    """{die_offset: reason} for variables whose fixed LDS address overlaps another's."""
    spans = []
    for var in variables:
        expr = getattr(var.location, "expr", None)
        if not expr or var.dialect.heterogeneous or bytes(expr[-3:]) != _UPSTREAM_LDS_TAIL:
            continue
        try:
            first = decode(expr, var.dialect)[0]
            if first.name in ("DW_OP_addrx", "DW_OP_GNU_addr_index"):
                addr = index.addr_index(var.cu_offset, first.operands[0])
            elif first.name == "DW_OP_addr":
                addr = first.operands[0]
            else:
                continue
        except AspaceError:
            continue
        spans.append((addr, addr + (byte_size(var.type) or 1), var))
    reasons: dict[int, str] = {}
    for lo, hi, var in spans:
        others = sorted({o.name or "?" for o_lo, o_hi, o in spans if o is not var and o_lo < hi and lo < o_hi})
        if others:
            reasons[var.die_offset] = (f"the code object gives {var.name} LDS address 0x{lo:x}, overlapping "
                                       f"{', '.join(others)}; the compiler left the real offset unresolved")
    return reasons
