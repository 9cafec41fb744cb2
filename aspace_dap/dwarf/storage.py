"""Reading and writing the bits a location description names, for a group of lanes.

Every byte read comes with a state, so values can show which bytes are real:
OK, OPTIMIZED_OUT (undefined storage), UNAVAILABLE (not in the dump) or
IMPLICIT_POINTER (a pointer that only exists in the debug info).
"""

from __future__ import annotations

import numpy as np

from ..errors import EvaluationError, LimitExceeded
from .locations import (CompositeLocation, ImplicitLocation, ImplicitPointerLocation, Location, MemoryLocation,
                        RegisterLocation, SingleLocation, UndefinedLocation)
from .target import EvalTarget

OK = 0
OPTIMIZED_OUT = 1
UNAVAILABLE = 2
IMPLICIT_POINTER = 3

MAX_READ_BITS = 64 * 1024 * 1024 * 8  # one read never exceeds 64 MiB per lane


def read_bytes(loc: Location, target: EvalTarget, nbytes: int, byte_offset: int = 0):
    """`nbytes` at `byte_offset` into the location for every lane: (data, state), both (G, nbytes) uint8."""
    data, state = read_bits(loc, target, nbytes * 8, byte_offset * 8)
    return data, state


def read_bits(loc: Location, target: EvalTarget, nbits: int, bit_offset: int = 0):
    """Bits of the location, packed little-endian into bytes, with a per-byte state.

    Multiple places hold the same value; the first place that is fully readable wins.
    """
    if nbits < 0 or nbits > MAX_READ_BITS:
        raise LimitExceeded(f"read of {nbits} bits is out of bounds")
    best = None
    for place in loc.places:
        start = place.bit_offset + np.int64(bit_offset)
        data, state = _read_single(place, target, start, nbits)
        if best is None or (state == OK).sum() > (best[1] == OK).sum():
            best = (data, state)
        if not state.any():
            break
    return best


def _read_single(place: SingleLocation, target: EvalTarget, start: np.ndarray, nbits: int):
    g = len(start)
    nbytes = (nbits + 7) // 8
    if isinstance(place, UndefinedLocation):
        return np.zeros((g, nbytes), np.uint8), np.full((g, nbytes), OPTIMIZED_OUT, np.uint8)
    if isinstance(place, ImplicitPointerLocation):
        return np.zeros((g, nbytes), np.uint8), np.full((g, nbytes), IMPLICIT_POINTER, np.uint8)
    if isinstance(place, CompositeLocation):
        return _read_composite(place, target, start, nbits)
    aligned = nbits % 8 == 0 and not (start & 7).any()
    span = nbytes if aligned else (nbits + 7 + 7) // 8
    if isinstance(place, MemoryLocation):
        # the place's bit offset is folded into `start`; the byte part moves the address
        addrs = place.address.astype(np.uint64) + (start >> 3).astype(np.uint64)
        if place.space.address_size < 8:
            addrs &= np.uint64((1 << (8 * place.space.address_size)) - 1)
        got = target.read_memory(place.space, place.lanes, addrs, span)
        raw, valid = got.data, got.valid
    elif isinstance(place, RegisterLocation):
        got = target.read_register(place.register.regno, place.lanes)
        raw, valid = _gather(got.data, got.valid, start >> 3, span)
    elif isinstance(place, ImplicitLocation):
        raw, valid = _gather(place.data, np.ones(place.data.shape, bool), start >> 3, span)
    else:  # pragma: no cover - every kind is handled above
        raise EvaluationError(f"cannot read {type(place).__name__}")
    state = np.where(valid, OK, UNAVAILABLE).astype(np.uint8)
    if aligned:
        return np.where(valid, raw, 0).astype(np.uint8), state
    return _shift(raw, state, start & 7, nbits)


def _gather(data: np.ndarray, valid: np.ndarray, byte_start: np.ndarray, n: int):
    """Rows of `n` bytes from each lane's row of `data`, starting at its own offset."""
    g, width = len(byte_start), data.shape[1]
    if width == n and data.shape[0] == g and not byte_start.any():  # each row whole, from its start
        return data.astype(np.uint8, copy=False), valid
    if data.shape[0] == 1 and g > 1:
        data = np.broadcast_to(data, (g, width))
        valid = np.broadcast_to(valid, (g, width))
    idx = byte_start[:, None] + np.arange(n, dtype=np.int64)[None, :]
    inside = (idx >= 0) & (idx < width)
    safe = np.clip(idx, 0, max(width - 1, 0))
    if width == 0:
        return np.zeros((g, n), np.uint8), np.zeros((g, n), bool)
    rows = np.arange(g)[:, None]
    return np.where(inside, data[rows, safe], 0).astype(np.uint8), inside & valid[rows, safe]


def _shift(raw: np.ndarray, state: np.ndarray, shift: np.ndarray, nbits: int):
    """Drop `shift` low bits of each row and keep `nbits` bits."""
    bits = np.unpackbits(raw, axis=1, bitorder="little")
    bstate = np.repeat(state, 8, axis=1)
    cols = shift[:, None] + np.arange(nbits, dtype=np.int64)[None, :]
    picked = np.take_along_axis(bits, cols, axis=1)
    pstate = np.take_along_axis(bstate, cols, axis=1)
    return _pack(picked, pstate)


def _pack(bits: np.ndarray, bstate: np.ndarray):
    g, nbits = bits.shape
    pad = (-nbits) % 8
    if pad:
        bits = np.concatenate([bits, np.zeros((g, pad), np.uint8)], axis=1)
        bstate = np.concatenate([bstate, np.zeros((g, pad), np.uint8)], axis=1)
    data = np.packbits(bits, axis=1, bitorder="little")
    state = bstate.reshape(g, -1, 8).max(axis=2).astype(np.uint8)
    return np.where(state == OK, data, 0).astype(np.uint8), state


def _read_composite(place: CompositeLocation, target: EvalTarget, start: np.ndarray, nbits: int):
    g = len(start)
    out_bits = np.zeros((g, nbits), np.uint8)
    out_state = np.full((g, nbits), OPTIMIZED_OUT, np.uint8)
    # lanes that start at different offsets see different parts: handle each offset once
    for s in np.unique(start):
        rows = np.nonzero(start == s)[0]
        s = int(s)
        pos = 0
        for piece in place.pieces:
            lo, hi = max(s, pos), min(s + nbits, pos + piece.bits)
            if lo < hi:
                sub = piece.location.take(rows) if len(rows) != g else piece.location
                data, state = read_bits(sub, target, hi - lo, lo - pos)
                bits = np.unpackbits(data, axis=1, bitorder="little")[:, : hi - lo]
                bstate = np.repeat(state, 8, axis=1)[:, : hi - lo]
                out_bits[rows, lo - s: hi - s] = bits
                out_state[rows, lo - s: hi - s] = bstate
            pos += piece.bits
            if pos >= s + nbits:
                break
    return _pack(out_bits, out_state)


# --------------------------------------------------------------------------- writes


def write_bytes(loc: Location, target, data: np.ndarray, byte_offset: int = 0) -> None:
    """Write each lane's row of `data` (G, n) to every place of the location.

    Only byte-aligned memory and register storage can change; writing to an
    implicit or undefined place is an error the user sees.
    """
    for place in loc.places:
        _write_single(place, target, place.bit_offset + np.int64(byte_offset * 8), data)


def _write_single(place, target, start, data):
    n = data.shape[1]
    if (start & 7).any():
        raise EvaluationError("cannot write at a bit offset")
    if isinstance(place, MemoryLocation):
        addrs = place.address.astype(np.uint64) + (start >> 3).astype(np.uint64)
        target.write_memory(place.space, place.lanes, addrs, data)
    elif isinstance(place, RegisterLocation):
        if np.any(start < 0) or np.any((start >> 3) + n > place.register.size):
            raise EvaluationError(f"write past the end of register {place.register.name}")
        target.write_register(place.register.regno, place.lanes, start >> 3, data)
    elif isinstance(place, CompositeLocation):
        for s in np.unique(start):
            rows = np.nonzero(start == s)[0]
            s = int(s)
            pos = 0
            for piece in place.pieces:
                lo, hi = max(s, pos), min(s + n * 8, pos + piece.bits)
                if lo < hi:
                    if (lo - s) % 8 or (hi - lo) % 8 or (lo - pos) % 8:
                        raise EvaluationError("cannot write a piece that is not byte-aligned")
                    sub = piece.location.take(rows)
                    write_bytes(sub, target, data[rows, (lo - s) // 8:(hi - s) // 8], (lo - pos) // 8)
                pos += piece.bits
    elif isinstance(place, (ImplicitLocation, ImplicitPointerLocation)):
        raise EvaluationError("cannot change a value that exists only in the debug info (implicit location)")
    elif isinstance(place, UndefinedLocation):
        raise EvaluationError("cannot change a value that was optimized out")
