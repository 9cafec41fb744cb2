"""One address space's dumped bytes: file-backed regions (mapped, never copied) plus an
in-memory overlay that holds writes. Bytes no region covers read as unavailable."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from ..errors import StateError
from .files import FileSpan
from .numbers import MAX_U64, as_addresses

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT


@dataclass
class Region:
    address: int
    size: int
    file: str
    file_offset: int = 0
    bank: int | None = None  # constant bank number for dispatch "const" regions
    span: FileSpan | None = field(default=None, repr=False, compare=False)

    @property
    def available(self) -> int:
        """How many leading bytes the file really holds (a short file leaves the tail unknown)."""
        if self.span is None:
            return 0
        return max(0, min(self.size, self.span.length - self.file_offset))

    @property
    def end(self) -> int:
        return self.address + self.size


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort and join touching/overlapping (start, end) intervals."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def _true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of True in a 1-D bool array."""
    padded = np.concatenate(([False], mask, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


class SparseMemory:
    """Regions of one address space. Reads return (data, valid); invalid bytes read as 0 in data."""

    def __init__(self, regions: list[Region], space: str = "", path: str = ""):
        self.space = space
        self.path = path  # JSON path used in errors
        self.regions: list[Region] = sorted(regions, key=lambda r: r.address)
        self._starts_list = [r.address for r in self.regions]
        self._starts = np.array(self._starts_list, dtype=np.uint64)
        self._available = np.array([r.available for r in self.regions], dtype=np.uint64)
        self._sizes = np.array([r.size for r in self.regions], dtype=np.uint64)
        self._overlay: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._banks: dict[int, SparseMemory] = {}

    # ----- reading -------------------------------------------------------------------------

    def flat_bytes(self) -> np.ndarray | None:
        """The known bytes from address 0 as one array, when the space is exactly that (one region at 0,
        no writes yet) — the common shape of private and LDS files; None otherwise."""
        if len(self.regions) != 1 or self._overlay or self.regions[0].address != 0:
            return None
        region = self.regions[0]
        if region.span is None:
            return None
        return region.span.array[region.file_offset:region.file_offset + region.available]

    def read(self, addr: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        addr, size = int(addr), int(size)
        if addr < 0 or size < 0:
            raise StateError(f"negative address or size ({addr:#x}, {size})", self.path)
        data = np.zeros(size, dtype=np.uint8)
        valid = np.zeros(size, dtype=bool)
        end = addr + size
        first = max(bisect.bisect_right(self._starts_list, addr) - 1, 0)
        for region in self.regions[first:]:
            if region.address >= end:
                break
            lo = max(addr, region.address)
            hi = min(end, region.address + region.available)
            if lo >= hi:
                continue
            src = region.file_offset + lo - region.address
            data[lo - addr : hi - addr] = region.span.array[src : src + hi - lo]
            valid[lo - addr : hi - addr] = True
        if self._overlay:
            self._apply_overlay_range(addr, data, valid)
        return data, valid

    def read_many(self, addrs: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Gather `size` bytes at each address: results are (n, size)."""
        try:
            base, real = as_addresses(addrs)
        except ValueError as exc:
            raise StateError(str(exc), self.path) from None
        base, real = base.reshape(-1), real.reshape(-1)
        if len(base) == 1 and real[0] and int(base[0]) + int(size) <= 1 << 64:
            # one contiguous range (a memory view, a big array): a slice, not a byte-by-byte gather
            data, valid = self.read(int(base[0]), int(size))
            return data.reshape(1, -1), valid.reshape(1, -1)
        offsets = np.arange(int(size), dtype=np.uint64)
        with np.errstate(over="ignore"):
            byte_addrs = base[:, None] + offsets[None, :]
        # An access that wraps past 2**64 has no bytes there.
        usable = (byte_addrs >= base[:, None]) & real[:, None]
        return self.gather(byte_addrs, usable)

    def gather(self, byte_addrs: np.ndarray, usable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Read one byte at each address of an array of any shape."""
        shape = byte_addrs.shape
        flat = np.asarray(byte_addrs, dtype=np.uint64).reshape(-1)
        data = np.zeros(flat.shape, dtype=np.uint8)
        valid = np.zeros(flat.shape, dtype=bool)
        if self.regions and flat.size:
            index, rel, inside = self._locate(flat, self._available)
            if usable is not None:
                inside &= np.asarray(usable, dtype=bool).reshape(-1)
            for r in np.unique(index[inside]):
                selected = inside & (index == r)
                region = self.regions[int(r)]
                data[selected] = region.span.array[rel[selected] + np.uint64(region.file_offset)]
                valid[selected] = True
        if self._overlay and flat.size:
            pages = flat >> np.uint64(PAGE_SHIFT)
            hit = np.isin(pages, np.fromiter(self._overlay, dtype=np.uint64, count=len(self._overlay)))
            if usable is not None:
                hit &= np.asarray(usable, dtype=bool).reshape(-1)
            for page in np.unique(pages[hit]):
                page_data, written = self._overlay[int(page)]
                on_page = hit & (pages == page)
                within = (flat[on_page] & np.uint64(PAGE_SIZE - 1)).astype(np.intp)
                mask = written[within]
                positions = np.flatnonzero(on_page)[mask]
                data[positions] = page_data[within[mask]]
                valid[positions] = True
        return data.reshape(shape), valid.reshape(shape)

    def _locate(self, flat: np.ndarray, limits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Region index, offset in region, and whether the offset is below that region's limit."""
        index = np.searchsorted(self._starts, flat, side="right").astype(np.intp) - 1
        inside = index >= 0
        index = np.where(inside, index, 0)
        with np.errstate(over="ignore"):
            rel = flat - self._starts[index]
        inside &= rel < limits[index]
        return index, rel, inside

    def _apply_overlay_range(self, addr: int, data: np.ndarray, valid: np.ndarray) -> None:
        end = addr + len(data)
        first_page, last_page = addr >> PAGE_SHIFT, (end - 1) >> PAGE_SHIFT if end > addr else -1
        if last_page - first_page + 1 <= len(self._overlay):
            pages = [p for p in range(first_page, last_page + 1) if p in self._overlay]
        else:
            pages = sorted(p for p in self._overlay if first_page <= p <= last_page)
        for page in pages:
            page_data, written = self._overlay[page]
            page_start = page << PAGE_SHIFT
            lo, hi = max(addr, page_start), min(end, page_start + PAGE_SIZE)
            sub = written[lo - page_start : hi - page_start]
            data[lo - addr : hi - addr][sub] = page_data[lo - page_start : hi - page_start][sub]
            valid[lo - addr : hi - addr] |= sub

    # ----- writing (overlay only; dump files are never modified) ----------------------------

    def write(self, addr: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        payload = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
            np.ascontiguousarray(data).view(np.uint8).reshape(-1))
        addr = int(addr)
        if addr < 0 or addr + len(payload) - 1 > MAX_U64:
            raise StateError(f"write at {addr:#x} is outside the address space", self.path)
        self._check_declared(addr, len(payload))
        offset = 0
        while offset < len(payload):
            position = addr + offset
            page = position >> PAGE_SHIFT
            within = position & (PAGE_SIZE - 1)
            count = min(PAGE_SIZE - within, len(payload) - offset)
            page_data, written = self._page(page)
            page_data[within : within + count] = payload[offset : offset + count]
            written[within : within + count] = True
            offset += count

    def write_scattered(self, byte_addrs: np.ndarray, values: np.ndarray) -> None:
        """Write one byte at each address (used by private memory, whose lanes interleave)."""
        flat = np.asarray(byte_addrs, dtype=np.uint64).reshape(-1)
        payload = np.asarray(values, dtype=np.uint8).reshape(-1)
        if flat.size == 0:
            return
        if not self.regions:
            raise StateError("write outside the dumped regions", self.path)
        _, _, inside = self._locate(flat, self._sizes)
        if not inside.all():
            bad = int(flat[np.flatnonzero(~inside)[0]])
            raise StateError(f"write at {bad:#x} is outside the dumped regions", self.path)
        pages = flat >> np.uint64(PAGE_SHIFT)
        for page in np.unique(pages):
            selected = pages == page
            page_data, written = self._page(int(page))
            within = (flat[selected] & np.uint64(PAGE_SIZE - 1)).astype(np.intp)
            page_data[within] = payload[selected]
            written[within] = True

    def _page(self, page: int) -> tuple[np.ndarray, np.ndarray]:
        entry = self._overlay.get(page)
        if entry is None:
            entry = (np.zeros(PAGE_SIZE, dtype=np.uint8), np.zeros(PAGE_SIZE, dtype=bool))
            self._overlay[page] = entry
        return entry

    def _check_declared(self, addr: int, size: int) -> None:
        cursor, end = addr, addr + size
        while cursor < end:
            i = bisect.bisect_right(self._starts_list, cursor) - 1
            if i < 0 or cursor >= self.regions[i].end:
                raise StateError(
                    f"write of {size} bytes at {addr:#x} is outside the dumped {self.space or 'memory'} regions",
                    self.path)
            cursor = self.regions[i].end

    # ----- describing ----------------------------------------------------------------------

    @property
    def modified(self) -> bool:
        return bool(self._overlay)

    def written_runs(self, start: int, end: int) -> list[tuple[int, int]]:
        """(start, end) address runs of overlay-written bytes inside [start, end)."""
        runs = []
        for page in sorted(self._overlay):
            page_start = page << PAGE_SHIFT
            if page_start + PAGE_SIZE <= start or page_start >= end:
                continue
            for a, b in _true_runs(self._overlay[page][1]):
                lo, hi = max(start, page_start + a), min(end, page_start + b)
                if lo < hi:
                    runs.append((lo, hi))
        return _merge(runs)

    def ranges(self) -> list[tuple[int, int]]:
        """Available bytes as (address, size), adjacent ranges joined."""
        intervals = [(r.address, r.address + r.available) for r in self.regions if r.available]
        for region in self.regions:
            intervals.extend(self.written_runs(region.address, region.end))
        return [(s, e - s) for s, e in _merge(intervals)]

    def declared_ranges(self) -> list[tuple[int, int]]:
        """What the dump declares (available or not) as (address, size), adjacent ranges joined."""
        return [(s, e - s) for s, e in _merge([(r.address, r.end) for r in self.regions])]

    def bank(self, number: int) -> "SparseMemory":
        """The regions of one constant bank (dispatch "const" memory keeps all banks together)."""
        found = self._banks.get(number)
        if found is None:
            found = SparseMemory([r for r in self.regions if r.bank == number], self.space, self.path)
            self._banks[number] = found
        return found

    def __repr__(self) -> str:
        return f"SparseMemory({self.space!r}, {len(self.regions)} regions)"
