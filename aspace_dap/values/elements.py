"""The scalar elements a value of a DWARF type is made of, as byte ranges with their kind: what a
memory view needs to show every element of a variable in its own type (a struct's `float` member as
a float, an `int` beside it as an integer).

A union, a bit field and a base type of a kind that has no plain number form (complex, decimal) give
no element: their bytes are shown as bytes.
"""

from __future__ import annotations

from ..dwarf.types import (ATE_ADDRESS, ATE_BOOLEAN, ATE_FLOAT, ATE_SIGNED, ATE_SIGNED_CHAR, ATE_UNSIGNED,
                           ATE_UNSIGNED_CHAR, ATE_UTF, ArrayType, BaseType, EnumType, PointerType, StructType,
                           Type, byte_size)

KIND_OF_ENCODING = {ATE_FLOAT: "float", ATE_SIGNED: "signed", ATE_SIGNED_CHAR: "signed", ATE_UNSIGNED: "unsigned",
                    ATE_UNSIGNED_CHAR: "unsigned", ATE_UTF: "unsigned", ATE_ADDRESS: "unsigned",
                    ATE_BOOLEAN: "bool"}


class TooMany(Exception):
    pass


def scalar_elements(t: Type | None, start: int, end: int, limit: int) -> list[tuple[int, int, str]] | None:
    """(offset, size, kind) of every scalar element of a `t` that overlaps bytes [start, end) of it,
    in address order; kind is float, signed, unsigned, bool or pointer. None when more than `limit`
    elements would be listed."""
    out: list[tuple[int, int, str]] = []
    try:
        _walk(t, 0, start, end, limit, out)
    except TooMany:
        return None
    out.sort()
    return out


def _walk(t: Type | None, base: int, start: int, end: int, limit: int, out: list) -> None:
    if t is None:
        return
    s = t.strip()
    size = byte_size(s)
    if size is None or size <= 0 or base >= end or base + size <= start:
        return
    if isinstance(s, BaseType):
        kind = KIND_OF_ENCODING.get(s.encoding)
        if kind is not None and s.bit_size in (None, 8 * size) and not s.data_bit_offset:
            _add(out, base, size, kind, limit)
    elif isinstance(s, PointerType):
        _add(out, base, size, "pointer", limit)
    elif isinstance(s, EnumType):
        _add(out, base, size, "signed" if s.signed else "unsigned", limit)
    elif isinstance(s, ArrayType):
        element = byte_size(s.element)
        if element is None or element <= 0 or not s.dims or any(d is None for d in s.dims):
            return
        count = 1
        for d in s.dims:
            count *= d
        stride = s.byte_stride if s.byte_stride and len(s.dims) == 1 else element
        first = max(0, (start - base) // stride)
        last = min(count, -(-(end - base) // stride))
        for i in range(first, last):
            _walk(s.element, base + i * stride, start, end, limit, out)
    elif isinstance(s, StructType) and s.kind != "union":
        for member in s.members:
            if member.bit_size is not None or member.bit_offset % 8:
                continue  # a bit field: no whole bytes of its own
            _walk(member.type, base + member.bit_offset // 8, start, end, limit, out)


def _add(out: list, offset: int, size: int, kind: str, limit: int) -> None:
    if len(out) >= limit:
        raise TooMany
    out.append((offset, size, kind))
