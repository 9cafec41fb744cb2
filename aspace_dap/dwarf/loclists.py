"""Location lists and range lists: DWARF 5 .debug_loclists/.debug_rnglists and
DWARF 2-4 .debug_loc/.debug_ranges.

Everything here is pure decoding of bytes into (low, high) address pairs; the
caller supplies the unit's base address and a resolver for address indexes.
Ranges are half-open: `high` is the first address past the range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import CodeObjectError
from .reader import ByteReader

# DW_LLE_* (DWARF 5)
LLE_END_OF_LIST = 0x00
LLE_BASE_ADDRESSX = 0x01
LLE_STARTX_ENDX = 0x02
LLE_STARTX_LENGTH = 0x03
LLE_OFFSET_PAIR = 0x04
LLE_DEFAULT_LOCATION = 0x05
LLE_BASE_ADDRESS = 0x06
LLE_START_END = 0x07
LLE_START_LENGTH = 0x08
LLE_GNU_VIEW_PAIR = 0x09

# DW_RLE_* (DWARF 5)
RLE_END_OF_LIST = 0x00
RLE_BASE_ADDRESSX = 0x01
RLE_STARTX_ENDX = 0x02
RLE_STARTX_LENGTH = 0x03
RLE_OFFSET_PAIR = 0x04
RLE_BASE_ADDRESS = 0x05
RLE_START_END = 0x06
RLE_START_LENGTH = 0x07

# Hostile input must not make us loop for ever.
MAX_LIST_ENTRIES = 1 << 20


@dataclass
class LocList:
    """A variable's location list: half-open [low, high) ranges, each with its expression."""

    entries: list[tuple[int, int, bytes]]
    default: bytes | None = None

    def at(self, pc: int) -> bytes | None:
        for low, high, expr in self.entries:
            if low <= pc < high:
                return expr
        return self.default


def offset_from_index(data: bytes, base: int, index: int, offset_size: int) -> int:
    """DW_FORM_loclistx / rnglistx: the list's section offset via the unit's offset table."""
    r = ByteReader(data, base + index * offset_size, "list offset table")
    return base + r.offset(offset_size)


def read_loclist(
    data: bytes,
    offset: int,
    *,
    version: int,
    address_size: int,
    base_address: int,
    addrx: Callable[[int], int],
) -> LocList:
    if version < 5:
        entries = _read_v4_list(data, offset, ".debug_loc", address_size, base_address, with_expr=True)
        return LocList(entries)
    entries, default = _read_v5_list(data, offset, ".debug_loclists", _LLE_FORMS, address_size, base_address,
                                     addrx, with_expr=True)
    return LocList(entries, default)


def read_rnglist(
    data: bytes,
    offset: int,
    *,
    version: int,
    address_size: int,
    base_address: int,
    addrx: Callable[[int], int],
) -> list[tuple[int, int]]:
    if version < 5:
        return _read_v4_list(data, offset, ".debug_ranges", address_size, base_address, with_expr=False)
    ranges, _ = _read_v5_list(data, offset, ".debug_rnglists", _RLE_FORMS, address_size, base_address, addrx,
                              with_expr=False)
    return ranges


# DWARF 5 location and range lists share their entry forms under different codes.
_LLE_FORMS = {
    LLE_END_OF_LIST: "end", LLE_BASE_ADDRESSX: "base_addressx", LLE_STARTX_ENDX: "startx_endx",
    LLE_STARTX_LENGTH: "startx_length", LLE_OFFSET_PAIR: "offset_pair", LLE_DEFAULT_LOCATION: "default",
    LLE_BASE_ADDRESS: "base_address", LLE_START_END: "start_end", LLE_START_LENGTH: "start_length",
    LLE_GNU_VIEW_PAIR: "view_pair",
}
_RLE_FORMS = {
    RLE_END_OF_LIST: "end", RLE_BASE_ADDRESSX: "base_addressx", RLE_STARTX_ENDX: "startx_endx",
    RLE_STARTX_LENGTH: "startx_length", RLE_OFFSET_PAIR: "offset_pair", RLE_BASE_ADDRESS: "base_address",
    RLE_START_END: "start_end", RLE_START_LENGTH: "start_length",
}


def _read_v5_list(data, offset, section, forms, address_size, base, addrx, *, with_expr):
    """Entries of a DWARF 5 list: (low, high) or (low, high, expr), and a location list's default."""
    r = ByteReader(data, offset, section)
    entries: list = []
    default = None
    for _ in range(MAX_LIST_ENTRIES):
        kind = r.u8()
        form = forms.get(kind)
        if form == "end":
            return entries, default
        if form == "base_addressx":
            base = addrx(r.uleb())
            continue
        if form == "base_address":
            base = r.uint(address_size)
            continue
        if form == "view_pair":
            r.uleb()
            r.uleb()
            continue
        if form == "default":
            default = r.bytes(r.uleb())
            continue
        if form == "startx_endx":
            low = addrx(r.uleb())
            high = addrx(r.uleb())
        elif form == "startx_length":
            low = addrx(r.uleb())
            high = low + r.uleb()
        elif form == "offset_pair":
            low = base + r.uleb()
            high = base + r.uleb()
        elif form == "start_end":
            low = r.uint(address_size)
            high = r.uint(address_size)
        elif form == "start_length":
            low = r.uint(address_size)
            high = low + r.uleb()
        else:
            raise CodeObjectError(f"{section}: unknown entry kind {kind:#x} at {r.pos - 1:#x}")
        expr = r.bytes(r.uleb()) if with_expr else None
        if high > low:
            entries.append((low, high, expr) if with_expr else (low, high))
    raise CodeObjectError(f"{section}: list at {offset:#x} does not end")


def _read_v4_list(data, offset, section, address_size, base, *, with_expr):
    """Entries of a DWARF 2-4 .debug_loc / .debug_ranges list (a location entry carries an expression)."""
    r = ByteReader(data, offset, section)
    all_ones = (1 << (8 * address_size)) - 1
    entries: list = []
    for _ in range(MAX_LIST_ENTRIES):
        low = r.uint(address_size)
        high = r.uint(address_size)
        if low == 0 and high == 0:
            return entries
        if low == all_ones:
            base = high
            continue
        expr = r.bytes(r.u16()) if with_expr else None
        if high > low:
            entries.append((base + low, base + high, expr) if with_expr else (base + low, base + high))
    raise CodeObjectError(f"{section}: list at {offset:#x} does not end")
