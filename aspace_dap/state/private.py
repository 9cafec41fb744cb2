"""A wave's private (scratch / local) memory, and the lane <-> wave address mapping.

swizzled (AMD): the file is the wave view; lane address A lives at wave offset
    (A // 4) * lanes * 4 + lane * 4 + A % 4
per_lane (NVIDIA local): `lanes` consecutive blocks of size // lanes bytes.
"""

from __future__ import annotations

import numpy as np

from ..errors import StateError
from .memory import SparseMemory
from .numbers import as_addresses

SWIZZLED = "swizzled"
PER_LANE = "per_lane"
LAYOUTS = (SWIZZLED, PER_LANE)


def swizzle(per_lane: np.ndarray) -> bytes:
    """Interleave lane blocks (lanes, n) of uint8 (n a multiple of 4) into the swizzled wave view."""
    blocks = np.ascontiguousarray(per_lane)
    if blocks.ndim != 2:
        raise StateError("swizzle expects a (lanes, bytes) array", "private")
    blocks = blocks.view(np.uint8).reshape(blocks.shape[0], -1)
    lanes, n = blocks.shape
    if n % 4:
        raise StateError(f"swizzled private memory needs a multiple of 4 bytes per lane, got {n}", "private")
    # (lanes, dwords, 4) -> (dwords, lanes, 4): each dword of every lane, lane 0 first.
    return blocks.reshape(lanes, n // 4, 4).transpose(1, 0, 2).tobytes()


def unswizzle(wave_view: bytes | np.ndarray, lanes: int) -> np.ndarray:
    """The inverse of swizzle: a (lanes, size // lanes) uint8 array, one row per lane."""
    data = np.frombuffer(bytes(wave_view), dtype=np.uint8) if not isinstance(wave_view, np.ndarray) \
        else np.ascontiguousarray(wave_view).view(np.uint8).reshape(-1)
    if lanes <= 0 or len(data) % (4 * lanes):
        raise StateError(f"swizzled private size {len(data)} is not a multiple of 4 * {lanes} lanes", "private")
    return data.reshape(-1, lanes, 4).transpose(1, 0, 2).reshape(lanes, -1).copy()


class PrivateMemory:
    def __init__(self, layout: str, size: int, lanes: int, wave_view: SparseMemory, base: int = 0,
                 path: str = ""):
        if layout not in LAYOUTS:
            raise StateError(f"unknown private layout {layout!r}", f"{path}.layout")
        self.layout = layout
        self.size = size
        self.lanes = lanes
        self.base = base
        self.wave_view = wave_view  # the file as is, at address 0 (the private_wave space for swizzled)
        self.path = path

    def _addresses(self, addr) -> tuple[np.ndarray, np.ndarray]:
        try:
            return as_addresses(addr)
        except ValueError as exc:
            raise StateError(str(exc), self.path) from None

    @property
    def lane_size(self) -> int:
        """Bytes addressable by one lane."""
        return self.size // self.lanes

    def wave_offsets(self, lane, addr) -> tuple[np.ndarray, np.ndarray]:
        """Wave-view offsets of each lane byte address, and whether the address is inside the lane's block.

        `lane` and `addr` broadcast against each other; addr is a lane (private) byte address.
        """
        lane_arr = np.asarray(lane, dtype=np.int64)
        addr_arr, non_negative = self._addresses(addr)
        lane_arr, addr_arr, non_negative = np.broadcast_arrays(lane_arr, addr_arr, non_negative)
        with np.errstate(over="ignore"):
            rel = addr_arr - np.uint64(self.base)
        inside = non_negative & (addr_arr >= np.uint64(self.base)) & (rel < np.uint64(self.lane_size))
        inside &= (lane_arr >= 0) & (lane_arr < self.lanes)
        rel = np.where(inside, rel, 0).astype(np.int64)
        lane_ok = np.where(inside, lane_arr, 0)
        if self.layout == SWIZZLED:
            offsets = (rel // 4) * (self.lanes * 4) + lane_ok * 4 + rel % 4
        else:
            offsets = lane_ok * self.lane_size + rel
        return offsets.astype(np.uint64), inside

    def read_lane(self, lane, addr, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Read `size` bytes at lane address `addr` for `lane` (scalars, or arrays that broadcast).

        Scalars give (size,) arrays; arrays give (n, size).
        """
        scalar = np.ndim(lane) == 0 and np.ndim(addr) == 0
        lane_arr = np.atleast_1d(np.asarray(lane, dtype=np.int64))
        addr_arr, non_negative = self._addresses(addr)
        lane_arr, addr_arr, non_negative = np.broadcast_arrays(
            lane_arr, np.atleast_1d(addr_arr), np.atleast_1d(non_negative))
        if non_negative.all():
            fast = self._read_lane_flat(lane_arr, addr_arr, int(size))
            if fast is not None:
                return (fast[0][0], fast[1][0]) if scalar else fast
        steps = np.arange(int(size), dtype=np.uint64)
        with np.errstate(over="ignore"):
            byte_addrs = addr_arr[:, None] + steps[None, :]
        no_wrap = (byte_addrs >= addr_arr[:, None]) & non_negative[:, None]
        offsets, inside = self.wave_offsets(lane_arr[:, None], byte_addrs)
        data, valid = self.wave_view.gather(offsets, inside & no_wrap)
        if scalar:
            return data[0], valid[0]
        return data, valid

    def _read_lane_flat(self, lanes: np.ndarray, addrs: np.ndarray, size: int):
        """Variables read a few bytes per lane, all inside the lanes' blocks of one unwritten file:
        plain index arithmetic then, without the general gather's region search."""
        flat = self.wave_view.flat_bytes()
        if flat is None or size <= 0 or not len(lanes):
            return None
        base = np.uint64(self.base)
        addrs = addrs.astype(np.uint64)
        if (addrs < base).any() or (lanes < 0).any() or (lanes >= self.lanes).any():
            return None
        rel = (addrs - base).astype(np.int64)
        if (rel < 0).any() or (rel + size > self.lane_size).any():
            return None
        a = rel[:, None] + np.arange(size, dtype=np.int64)[None, :]
        if self.layout == SWIZZLED:
            offsets = (a >> 2) * (self.lanes * 4) + lanes[:, None] * 4 + (a & 3)
        else:
            offsets = lanes[:, None] * self.lane_size + a
        valid = offsets < len(flat)
        if not len(flat):
            return np.zeros(offsets.shape, np.uint8), valid
        data = flat[np.minimum(offsets, len(flat) - 1)]
        return np.where(valid, data, 0).astype(np.uint8), valid

    def write_lane(self, lane: int, addr: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        payload = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
            np.ascontiguousarray(data).view(np.uint8).reshape(-1))
        if int(addr) < 0:
            raise StateError(f"negative private address {int(addr)}", self.path)
        steps = np.arange(len(payload), dtype=np.uint64)
        with np.errstate(over="ignore"):
            byte_addrs = np.uint64(int(addr)) + steps
        offsets, inside = self.wave_offsets(int(lane), byte_addrs)
        inside &= byte_addrs >= np.uint64(int(addr))
        if not inside.all():
            raise StateError(f"write of {len(payload)} bytes at {int(addr):#x} is outside lane {lane}'s "
                             f"private memory ({self.lane_size} bytes from {self.base:#x})", self.path)
        self.wave_view.write_scattered(offsets, payload)

    def __repr__(self) -> str:
        return f"PrivateMemory({self.layout}, {self.size} bytes, {self.lanes} lanes)"
