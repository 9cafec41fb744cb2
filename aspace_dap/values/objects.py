"""Typed objects: a DWARF type laid over a location, read lane-wide, piece by piece.

An `Obj` is a view: type + location (for a group of lanes) + the bytes read
from it, with a state per byte (ok / optimized out / unavailable / implicit
pointer). Members and elements are views into the same bytes, so a struct is
read once; their locations are the parent's shifted by the member offset, so
every sub-object still knows where it lives (for memoryReference and writes).
"""

from __future__ import annotations

import numpy as np

from ..dwarf.locations import CompositeLocation, ImplicitPointerLocation, Location, MemoryLocation
from ..dwarf.storage import IMPLICIT_POINTER, OK, OPTIMIZED_OUT, UNAVAILABLE, read_bits
from ..dwarf.types import ArrayType, BaseType, EnumType, StructType, Type, byte_size
from ..errors import EvaluationError

EAGER_LIMIT = 1 << 16  # objects up to 64 KiB are read in one go; bigger ones per element range
MAX_OFFSET = 1 << 60  # bytes from an object to a member or element; bit offsets must fit in 64 bits


class Obj:
    __slots__ = ("type", "location", "target", "_data", "_state", "_base", "size", "bit_offset", "bit_size", "error",
                 "lanes")

    def __init__(self, type_: Type, location: Location | None, target, *, lanes: np.ndarray,
                 data=None, state=None, base: int = 0, bit_offset: int = 0, bit_size: int | None = None,
                 error: str | None = None):
        self.type = type_
        self.location = location
        self.target = target
        self.lanes = lanes
        self._data = data
        self._state = state
        self._base = base  # byte offset of this object inside _data
        self.size = byte_size(type_) or 0
        self.bit_offset = bit_offset  # for bit fields: bits from the start of the containing bytes
        self.bit_size = bit_size
        self.error = error

    # ---------------------------------------------------------------- bytes

    @classmethod
    def from_location(cls, type_: Type, location: Location, target, lanes: np.ndarray) -> "Obj":
        return cls(type_, location, target, lanes=lanes)

    @classmethod
    def from_bytes(cls, type_: Type, raw: bytes, lanes: np.ndarray) -> "Obj":
        """A value known from the debug info alone (DW_AT_const_value)."""
        row = np.frombuffer(raw, np.uint8)
        size = byte_size(type_) or len(row)
        row = np.pad(row, (0, max(0, size - len(row))))[:size]
        data = np.broadcast_to(row, (len(lanes), size))
        return cls(type_, None, None, lanes=lanes, data=data, state=np.zeros(data.shape, np.uint8))

    @classmethod
    def failed(cls, type_: Type, message: str, lanes: np.ndarray) -> "Obj":
        return cls(type_, None, None, lanes=lanes, error=message)

    def bytes(self, start: int = 0, count: int | None = None):
        """(data, state) arrays (G, count) for bytes [start, start+count) of this object."""
        if count is None:
            count = self.size - start
        if self.error is not None:
            g = len(self.lanes)
            return np.zeros((g, count), np.uint8), np.full((g, count), UNAVAILABLE, np.uint8)
        if self._data is None and self.size <= EAGER_LIMIT:
            self._data, self._state = self._read(0, self.size)
            self._base = 0
        if self._data is not None:
            lo = self._base + start
            return self._data[:, lo:lo + count], self._state[:, lo:lo + count]
        return self._read(start, count)

    def _read(self, start, count):
        if self.location is None:
            g = len(self.lanes)
            return np.zeros((g, count), np.uint8), np.full((g, count), OPTIMIZED_OUT, np.uint8)
        return read_bits(self.location, self.target, count * 8, start * 8)

    def unavailable_reason(self, lane: int) -> str | None:
        """Why this object's bytes are not in the dump, where the dump says: the memory its place is in
        was left out of the core (a lightweight CUDA core's generation flags); None otherwise."""
        reasons = getattr(getattr(self.target, "state", None), "missing_memory", None)
        if not reasons or self.location is None:
            return None
        return _reason(self.location.primary, lane, self.target, reasons)

    # ---------------------------------------------------------------- structure

    @property
    def stripped(self) -> Type:
        return self.type.strip()

    def sub(self, type_: Type, byte_off: int, *, bit_offset: int = 0, bit_size: int | None = None) -> "Obj":
        if not -MAX_OFFSET < byte_off < MAX_OFFSET:
            raise EvaluationError(f"offset {byte_off} is outside any address space")
        # An element past either end (arr[-1], arr[n]) is read from its own place, as GDB does,
        # never from the bytes of this object.
        inside = 0 <= byte_off and byte_off + (byte_size(type_) or 0) <= self.size
        if self._data is None and self.location is not None and self.error is None and self.size <= EAGER_LIMIT \
                and inside:
            self.bytes(0, 0)  # one read of a small object serves every member and element made from it
        loc = None
        if self.location is not None:
            # pieces may stop before the object's end: a member past them is optimized out, not an error
            loc = self.location.covering(8 * self.size).shifted(np.full(len(self.lanes), byte_off * 8, np.int64))
        data = state = None
        base = 0
        if self._data is not None and inside:
            data, state, base = self._data, self._state, self._base + byte_off
        obj = Obj(type_, loc, self.target, lanes=self.lanes, data=data, state=state, base=base,
                  bit_offset=bit_offset, bit_size=bit_size, error=self.error)
        if data is None and self.location is None and self.error is None:
            obj.error = "<optimized out>" if inside else "<unavailable: outside the value>"
        return obj

    def members(self) -> list[tuple[str, "Obj"]]:
        t = self.stripped
        if not isinstance(t, StructType):
            return []
        out = []
        for i, m in enumerate(t.members):
            if m.type is None:
                continue
            name = m.name if m.name is not None else f"<anonymous {i}>"
            if m.bit_size is not None:
                byte_off = m.bit_offset // 8
                out.append((name, self.sub(m.type, byte_off, bit_offset=m.bit_offset % 8, bit_size=m.bit_size)))
            else:
                out.append((name, self.sub(m.type, m.bit_offset // 8)))
        return out

    def element_count(self) -> int:
        t = self.stripped
        if isinstance(t, ArrayType) and t.dims:
            return t.dims[0] or 0
        return 0

    def element_type(self) -> Type | None:
        t = self.stripped
        if not isinstance(t, ArrayType):
            return None
        if len(t.dims) > 1:
            return ArrayType(name=None, size=None, element=t.element, dims=t.dims[1:], vector=t.vector)
        return t.element

    def element_stride(self) -> int:
        t = self.stripped
        et = self.element_type()
        if t.byte_stride is not None:
            return t.byte_stride
        return byte_size(et) or 0

    def element(self, index: int) -> "Obj":
        et = self.element_type()
        if et is None:
            raise EvaluationError(f"{self.type.display_name()} is not an array")
        return self.sub(et, index * self.element_stride())

    def number_elements(self, lane: int, count: int):
        """The first `count` elements of an array of 1-, 2-, 4- or 8-byte numbers (base or enum types) as lane
        `lane` (an index into lanes) sees them, from one read of this object's bytes: (values, states) with
        each element's value as scalar_bits gives it (None where its bytes are not all there) and the worst
        state of its bytes. None where the elements are not such numbers laid end to end inside this object
        (format.py then makes an object per element)."""
        et = self.element_type()
        t = et.strip() if et is not None else None
        size = byte_size(et) if et is not None else None
        if not isinstance(t, (BaseType, EnumType)) or size not in (1, 2, 4, 8) or self.error is not None \
                or self.bit_size is not None or self.element_stride() != size or count * size > self.size \
                or self.size > EAGER_LIMIT or (self.location is None and self._data is None):
            return None
        data, state = self.bytes(0, count * size)
        # each element of the lane's row read as scalar_bits reads one value per lane
        return self._whole_scalar_bits(data[lane].reshape(count, size), state[lane].reshape(count, size), size,
                                       _is_signed(t))

    # ---------------------------------------------------------------- scalars

    def scalar_bits(self):
        """Integer bits (as Python ints per lane, None where not fully known) and the state per lane."""
        t = self.stripped
        if self.bit_size is not None:
            nbytes = (self.bit_offset + self.bit_size + 7) // 8
        else:
            nbytes = self.size
        data, state = self.bytes(0, nbytes)
        if self.bit_size is None and nbytes in (1, 2, 4, 8):
            return self._whole_scalar_bits(data, state, nbytes, _is_signed(t))
        values, states = [], []
        for i in range(len(self.lanes)):
            st = int(state[i].max()) if state.shape[1] else OK
            raw = int.from_bytes(bytes(data[i]), "little")
            if self.bit_size is not None:
                raw = (raw >> self.bit_offset) & ((1 << self.bit_size) - 1)
                if _is_signed(t) and raw >> (self.bit_size - 1):
                    raw -= 1 << self.bit_size
            elif _is_signed(t) and nbytes and raw >> (nbytes * 8 - 1):
                raw -= 1 << (nbytes * 8)
            values.append(raw if st == OK else None)
            states.append(st)
        return values, states

    @staticmethod
    def _whole_scalar_bits(data, state, nbytes: int, signed: bool):
        """scalar_bits of a 1-, 2-, 4- or 8-byte value for every lane at once."""
        kind = np.dtype(f"<{'i' if signed else 'u'}{nbytes}")
        raw = np.ascontiguousarray(data).view(kind).reshape(-1).tolist()
        states = state.max(axis=1).tolist() if state.shape[1] else [OK] * len(raw)
        return [v if st == OK else None for v, st in zip(raw, states)], states

    def is_implicit_pointer(self, i: int = 0) -> ImplicitPointerLocation | None:
        if self.location is None:
            return None
        place = self.location.primary
        return place if isinstance(place, ImplicitPointerLocation) else None

    def memory_place(self) -> MemoryLocation | None:
        if self.location is None:
            return None
        for place in self.location.places:
            if isinstance(place, MemoryLocation):
                return place
        return None


def _is_signed(t: Type) -> bool:
    from ..dwarf.types import ATE_SIGNED, ATE_SIGNED_CHAR
    if isinstance(t, BaseType):
        return t.encoding in (ATE_SIGNED, ATE_SIGNED_CHAR)
    if isinstance(t, EnumType):
        return t.signed
    return False


def _reason(place, lane: int, target, reasons: dict[str, str], depth: int = 0) -> str | None:
    if isinstance(place, MemoryLocation):
        space = place.space
        if space.name == "generic" and hasattr(target, "resolve_generic") and lane < len(place.address):
            space, _ = target.resolve_generic(int(place.address[lane]))
        return reasons.get(space.name)
    if isinstance(place, CompositeLocation) and depth < 16:
        for piece in place.pieces:
            found = _reason(piece.location.primary, lane, target, reasons, depth + 1)
            if found is not None:
                return found
    return None


__all__ = ["Obj", "OK", "OPTIMIZED_OUT", "UNAVAILABLE", "IMPLICIT_POINTER"]
