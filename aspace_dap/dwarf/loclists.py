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
        return _read_loc_v4(data, offset, address_size, base_address)
    r = ByteReader(data, offset, ".debug_loclists")
    base = base_address
    entries: list[tuple[int, int, bytes]] = []
    default = None
    for _ in range(MAX_LIST_ENTRIES):
        kind = r.u8()
        if kind == LLE_END_OF_LIST:
            return LocList(entries, default)
        if kind == LLE_BASE_ADDRESSX:
            base = addrx(r.uleb())
            continue
        if kind == LLE_BASE_ADDRESS:
            base = r.uint(address_size)
            continue
        if kind == LLE_GNU_VIEW_PAIR:
            r.uleb()
            r.uleb()
            continue
        if kind == LLE_STARTX_ENDX:
            low = addrx(r.uleb())
            high = addrx(r.uleb())
        elif kind == LLE_STARTX_LENGTH:
            low = addrx(r.uleb())
            high = low + r.uleb()
        elif kind == LLE_OFFSET_PAIR:
            low = base + r.uleb()
            high = base + r.uleb()
        elif kind == LLE_DEFAULT_LOCATION:
            default = r.bytes(r.uleb())
            continue
        elif kind == LLE_START_END:
            low = r.uint(address_size)
            high = r.uint(address_size)
        elif kind == LLE_START_LENGTH:
            low = r.uint(address_size)
            high = low + r.uleb()
        else:
            raise CodeObjectError(f".debug_loclists: unknown entry kind {kind:#x} at {r.pos - 1:#x}")
        expr = r.bytes(r.uleb())
        if high > low:
            entries.append((low, high, expr))
    raise CodeObjectError(f".debug_loclists: list at {offset:#x} does not end")


def _read_loc_v4(data: bytes, offset: int, address_size: int, base: int) -> LocList:
    r = ByteReader(data, offset, ".debug_loc")
    all_ones = (1 << (8 * address_size)) - 1
    entries: list[tuple[int, int, bytes]] = []
    for _ in range(MAX_LIST_ENTRIES):
        low = r.uint(address_size)
        high = r.uint(address_size)
        if low == 0 and high == 0:
            return LocList(entries)
        if low == all_ones:
            base = high
            continue
        expr = r.bytes(r.u16())
        if high > low:
            entries.append((base + low, base + high, expr))
    raise CodeObjectError(f".debug_loc: list at {offset:#x} does not end")


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
        return _read_ranges_v4(data, offset, address_size, base_address)
    r = ByteReader(data, offset, ".debug_rnglists")
    base = base_address
    ranges: list[tuple[int, int]] = []
    for _ in range(MAX_LIST_ENTRIES):
        kind = r.u8()
        if kind == RLE_END_OF_LIST:
            return ranges
        if kind == RLE_BASE_ADDRESSX:
            base = addrx(r.uleb())
            continue
        if kind == RLE_BASE_ADDRESS:
            base = r.uint(address_size)
            continue
        if kind == RLE_STARTX_ENDX:
            low = addrx(r.uleb())
            high = addrx(r.uleb())
        elif kind == RLE_STARTX_LENGTH:
            low = addrx(r.uleb())
            high = low + r.uleb()
        elif kind == RLE_OFFSET_PAIR:
            low = base + r.uleb()
            high = base + r.uleb()
        elif kind == RLE_START_END:
            low = r.uint(address_size)
            high = r.uint(address_size)
        elif kind == RLE_START_LENGTH:
            low = r.uint(address_size)
            high = low + r.uleb()
        else:
            raise CodeObjectError(f".debug_rnglists: unknown entry kind {kind:#x} at {r.pos - 1:#x}")
        if high > low:
            ranges.append((low, high))
    raise CodeObjectError(f".debug_rnglists: list at {offset:#x} does not end")


def _read_ranges_v4(data: bytes, offset: int, address_size: int, base: int) -> list[tuple[int, int]]:
    r = ByteReader(data, offset, ".debug_ranges")
    all_ones = (1 << (8 * address_size)) - 1
    ranges: list[tuple[int, int]] = []
    for _ in range(MAX_LIST_ENTRIES):
        low = r.uint(address_size)
        high = r.uint(address_size)
        if low == 0 and high == 0:
            return ranges
        if low == all_ones:
            base = high
            continue
        if high > low:
            ranges.append((base + low, base + high))
    raise CodeObjectError(f".debug_ranges: list at {offset:#x} does not end")
