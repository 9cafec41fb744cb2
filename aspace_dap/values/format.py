"""Printing typed objects the way GDB users expect.

`{a = 1, b = 2}`, `{1, 2, 3}`, `65 'A'`, `0x1f` on request, `<repeats 16 times>`,
and the byte states: `<optimized out>` for undefined storage, `<unavailable>`
for bytes the dump does not hold, `<synthetic pointer>` for implicit pointers.
"""

from __future__ import annotations

import struct

from ..dwarf.storage import IMPLICIT_POINTER, OK, OPTIMIZED_OUT
from ..dwarf.types import (ATE_BOOLEAN, ATE_FLOAT, ATE_SIGNED_CHAR, ATE_UNSIGNED_CHAR, ATE_UTF, ArrayType, BaseType,
                           EnumType, FunctionType, PointerType, StructType, VoidType, byte_size)
from ..deadline import check_time
from .objects import Obj

MAX_ELEMENTS = 200  # like GDB's `print elements`
REPEAT_THRESHOLD = 10  # like GDB's `print repeats`: runs longer than this print as <repeats N times>
# Values (scalars, members, elements) one rendering shows in all: `print elements` holds per array,
# so a float[256][256][256] would otherwise print 200^3 numbers (over a minute); past this, `...`.
MAX_VALUES_SHOWN = 10_000


class _Shown:
    """How many values one rendering has left to show."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_VALUES_SHOWN

    def take(self) -> bool:
        check_time()
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def state_text(state: int) -> str:
    if state == OPTIMIZED_OUT:
        return "<optimized out>"
    if state == IMPLICIT_POINTER:
        return "<synthetic pointer>"
    return "<unavailable>"


def format_obj(obj: Obj, lane: int = 0, *, hex: bool = False, top: bool = True) -> str:
    """Render `obj` as seen by lane index `lane` (an index into obj.lanes, not a lane id)."""
    return _format(obj, lane, hex, top, _Shown())


def _format(obj: Obj, lane: int, hex: bool, top: bool, shown: _Shown) -> str:
    if obj.error is not None:
        return obj.error if obj.error.startswith("<") else f"<error: {obj.error}>"
    t = obj.stripped
    if isinstance(t, StructType):
        if t.declaration and not t.members:
            return "<incomplete type>"
        parts = []
        for name, m in obj.members():
            if not shown.take():
                parts.append("...")
                break
            parts.append(f"{name} = {_format(m, lane, hex, False, shown)}")
        return "{" + ", ".join(parts) + "}"
    if isinstance(t, ArrayType):
        return _format_array(obj, lane, hex, shown)
    if isinstance(t, (VoidType, FunctionType)) or obj.size == 0 and obj.bit_size is None:
        return "<incomplete type>" if not isinstance(t, FunctionType) else "{" + t.display_name() + "}"
    values, states = obj.scalar_bits()
    value, state = values[lane], states[lane]
    if state != OK:
        if state == IMPLICIT_POINTER and isinstance(t, PointerType):
            return "<synthetic pointer>"
        if state not in (OPTIMIZED_OUT, IMPLICIT_POINTER):
            why = obj.unavailable_reason(lane)
            if why is not None:
                return f"<unavailable: {why}>"
        return state_text(state)
    if isinstance(t, PointerType):
        text = f"0x{value:x}"
        if top:
            text = f"({t.display_name()}) {text}"
        if t.address_space_name and t.address_space_name not in ("generic", "global"):
            text = f"{t.address_space_name}#0x{value:x}" if not top else f"({t.display_name()}) {t.address_space_name}#0x{value:x}"
        return text
    if isinstance(t, EnumType):
        return _format_enum(t, value, hex)
    if isinstance(t, BaseType):
        return format_scalar(t, value, obj.size, hex=hex)
    return f"0x{value:x}" if hex else str(value)


def format_scalar(t: BaseType, value: int, size: int, *, hex: bool = False) -> str:
    enc = t.encoding
    if enc == ATE_FLOAT:
        if size == 4:
            f = struct.unpack("<f", (value & 0xFFFFFFFF).to_bytes(4, "little"))[0]
        elif size == 8:
            f = struct.unpack("<d", (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little"))[0]
        elif size == 2:
            f = struct.unpack("<e", (value & 0xFFFF).to_bytes(2, "little"))[0]
        else:
            return f"0x{value & ((1 << (8 * size)) - 1):x}"
        if hex:
            return f"0x{value & ((1 << (8 * size)) - 1):x}"
        return _float_text(f, size)
    if hex:
        return f"0x{value & ((1 << (8 * max(size, 1))) - 1):x}"
    if enc == ATE_BOOLEAN:
        return {0: "false", 1: "true"}.get(value, str(value))
    if enc in (ATE_SIGNED_CHAR, ATE_UNSIGNED_CHAR) or (enc == ATE_UTF and size == 1):
        return f"{value} {_char_literal(value)}"
    if enc == ATE_UTF:
        prefix = {2: "u", 4: "U"}.get(size, "")
        return f"{value} {prefix}{_char_literal(value)}"
    return str(value)


def _float_text(f: float, size: int) -> str:
    """GDB's float printing: %g with enough digits to round-trip the type (9 for float, 17 for double)."""
    if f != f:
        return "nan"
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    return f"{f:.{ {2: 5, 4: 9}.get(size, 17)}g}"


_ESCAPES = {0: "\\000", 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 39: "\\'",
            92: "\\\\"}


def _char_literal(value: int) -> str:
    code = value & 0xFF if value < 0 else value
    if code in _ESCAPES:
        return f"'{_ESCAPES[code]}'"
    if 32 <= code < 127:
        return f"'{chr(code)}'"
    if code < 256:
        return f"'\\{code:03o}'"
    try:
        return f"'{chr(code)}'"
    except ValueError:
        return f"'\\x{code:x}'"


def _format_enum(t: EnumType, value: int, hex: bool) -> str:
    for name, v in t.enumerators:
        if v == value:
            return name
    # flag enums: GDB prints (A | B | unknown: 0x8)
    flags = [(n, v) for n, v in t.enumerators if v > 0 and v & (v - 1) == 0]
    rest, names = value, []
    for n, v in flags:
        if rest & v:
            names.append(n)
            rest &= ~v
    if names and value > 0:
        if rest:
            names.append(f"unknown: 0x{rest:x}")
        return "(" + " | ".join(names) + ")"
    return f"0x{value:x}" if hex else str(value)


def _format_array(obj: Obj, lane: int, hex: bool, shown: _Shown) -> str:
    count = obj.element_count()
    et = obj.element_type()
    if et is None:
        return "{}"
    if _is_char(et.strip()) and count and not hex:  # /x formats each element, as GDB does
        text = _format_char_array(obj, lane, count)
        if text is not None:
            return text
    items = []
    shown_count = min(count, MAX_ELEMENTS)
    numbers = obj.number_elements(lane, shown_count)
    number_type = et.strip()
    for i in range(shown_count):
        if not shown.take():
            break
        if numbers is not None and numbers[1][i] == OK:  # an array of numbers: no object per element
            value = numbers[0][i]
            items.append(_format_enum(number_type, value, hex) if isinstance(number_type, EnumType)
                         else format_scalar(number_type, value, byte_size(et), hex=hex))
        else:
            items.append(_format(obj.element(i), lane, hex, False, shown))
    out, i = [], 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[i]:
            j += 1
        run = j - i + 1
        if run > REPEAT_THRESHOLD:
            out.append(f"{items[i]} <repeats {run} times>")
        else:
            out.extend(items[i:j + 1])
        i = j + 1
    text = ", ".join(out)
    if count > len(items):
        text += "..."
    return "{" + text + "}"


def _is_char(t) -> bool:
    return isinstance(t, BaseType) and t.encoding in (ATE_SIGNED_CHAR, ATE_UNSIGNED_CHAR) and t.size == 1


def _format_char_array(obj: Obj, lane: int, count: int) -> str | None:
    data, state = obj.bytes(0, min(count, MAX_ELEMENTS))
    if state[lane].any():
        return None
    raw = bytes(data[lane])
    end = raw.find(b"\0")
    body = raw if end < 0 else raw[:end]
    if any(b >= 127 or (b < 32 and b not in (9, 10)) for b in body):
        return None
    text = body.decode("ascii").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    tail = raw[len(body):]
    if end >= 0 and any(tail):
        return None
    if end >= 0 and len(tail) > 1:
        return f'"{text}", \'\\000\' <repeats {len(tail) - 1} times>' if len(tail) - 1 > REPEAT_THRESHOLD else f'"{text}"'
    return f'"{text}"'


def type_name(obj: Obj) -> str:
    return obj.type.display_name()
