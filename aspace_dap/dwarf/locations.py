"""Stack entries of the DWARF evaluator: typed values and location descriptions.

Every entry is lane-wide: it describes the same stack slot for a group of
lanes at once, with per-lane numbers held in numpy arrays (one element per
lane of the group). A single-lane evaluation is a group of one. Structure
(which kind of location, which register, how many pieces) is uniform across
a group; when lanes disagree on structure the evaluator splits the group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import EvaluationError, LimitExceeded
from .target import AddressSpace, RegisterInfo

# DW_ATE encodings relevant to stack arithmetic
ATE_GENERIC = 0  # DWARF's generic type: address-sized, unspecified signedness
ATE_FLOAT = 0x04
ATE_SIGNED = 0x05
ATE_SIGNED_CHAR = 0x06
ATE_UNSIGNED = 0x07
ATE_UNSIGNED_CHAR = 0x08
ATE_BOOLEAN = 0x02
ATE_ADDRESS = 0x01
SIGNED_ENCODINGS = (ATE_SIGNED, ATE_SIGNED_CHAR)


@dataclass(frozen=True)
class BaseTypeRef:
    """Type of a stack value: byte size and DW_ATE encoding (0 = generic)."""

    size: int
    encoding: int = ATE_GENERIC
    die_offset: int | None = None

    @property
    def is_generic(self) -> bool:
        return self.encoding == ATE_GENERIC

    @property
    def is_float(self) -> bool:
        return self.encoding == ATE_FLOAT

    @property
    def is_signed(self) -> bool:
        return self.encoding in SIGNED_ENCODINGS

    @property
    def mask(self) -> np.uint64:
        if self.size >= 8:
            return np.uint64(0xFFFFFFFFFFFFFFFF)
        return np.uint64((1 << (8 * self.size)) - 1)

    def describe(self) -> str:
        if self.is_generic:
            return "generic"
        kind = {ATE_FLOAT: "float", ATE_SIGNED: "int", ATE_SIGNED_CHAR: "char", ATE_UNSIGNED: "uint",
                ATE_UNSIGNED_CHAR: "uchar", ATE_BOOLEAN: "bool", ATE_ADDRESS: "addr"}.get(self.encoding, "type")
        return f"{kind}{self.size * 8}"


def generic(address_size: int) -> BaseTypeRef:
    return BaseTypeRef(address_size, ATE_GENERIC)


class Entry(ABC):
    """A stack entry: a Value or a Location."""

    @abstractmethod
    def take(self, mask: np.ndarray) -> "Entry":
        """The entry for the lanes selected by `mask` (a boolean mask or index array)."""

    @property
    @abstractmethod
    def width(self) -> int:
        """Number of lanes the entry holds."""


@dataclass(frozen=True)
class Value(Entry):
    """A typed value per lane. Bits live in a uint64 array, masked to the type's size."""

    bits: np.ndarray  # uint64, shape (G,)
    type: BaseTypeRef

    def take(self, mask: np.ndarray) -> "Value":
        return Value(self.bits[mask], self.type)

    @property
    def width(self) -> int:
        return len(self.bits)

    def signed(self) -> np.ndarray:
        """The bits sign-extended from the type's size, as int64."""
        size = min(self.type.size, 8)
        if size >= 8:
            return self.bits.view(np.int64)
        shift = np.uint64(64 - 8 * size)
        return (self.bits << shift).view(np.int64) >> np.int64(64 - 8 * size)

    def as_bytes(self) -> np.ndarray:
        """Little-endian bytes of each lane's value, shape (G, size)."""
        size = self.type.size
        raw = self.bits.astype("<u8").view(np.uint8).reshape(-1, 8)
        if size <= 8:
            return raw[:, :size].copy()
        out = np.zeros((len(self.bits), size), np.uint8)
        out[:, :8] = raw
        return out

    def describe(self, i: int = 0) -> str:
        v = int(self.bits[i])
        if self.type.is_float and self.type.size in (4, 8):
            f = np.array([v], np.uint64).astype("<u8").view(np.float64 if self.type.size == 8 else np.float32)[0]
            return f"{float(f)!r} ({self.type.describe()})"
        return f"0x{v:x} ({self.type.describe()})"


# --------------------------------------------------------------------------- locations


class SingleLocation(ABC):
    """One place: storage plus a per-lane bit offset into it."""

    bit_offset: np.ndarray  # int64 (G,) — for memory this is the bit within the byte address

    @abstractmethod
    def shifted(self, delta_bits: np.ndarray) -> "SingleLocation":
        """The same storage, `delta_bits` further on (per lane)."""

    @abstractmethod
    def take(self, mask: np.ndarray) -> "SingleLocation":
        """The place for the selected lanes."""

    def storage_bits(self) -> int | None:
        """Size of the storage in bits, None when unbounded."""
        return None

    @abstractmethod
    def describe(self, i: int = 0) -> str:
        """The place as the user reads it, for lane index `i`."""


@dataclass(frozen=True)
class MemoryLocation(SingleLocation):
    """Memory in an address space; `address` bytes plus `bit_offset` (0..7) bits.

    `lanes` records the lane each row was created for: private memory is per
    lane, so a memory location keeps the context it was formed in.
    """

    space: AddressSpace
    address: np.ndarray  # uint64 (G,)
    bit_offset: np.ndarray  # int64 (G,), 0..7
    lanes: np.ndarray  # int64 (G,)

    def shifted(self, delta_bits: np.ndarray) -> "MemoryLocation":
        total = self.bit_offset + delta_bits
        byte_delta = total >> 3  # floor division, negative deltas move the address down
        addr = (self.address.astype(np.uint64) + byte_delta.astype(np.uint64))
        if self.space.address_size < 8:
            addr = addr & np.uint64((1 << (8 * self.space.address_size)) - 1)
        return MemoryLocation(self.space, addr, total & 7, self.lanes)

    def take(self, mask):
        return MemoryLocation(self.space, self.address[mask], self.bit_offset[mask], self.lanes[mask])

    def describe(self, i: int = 0) -> str:
        s = f"{self.space.name}#0x{int(self.address[i]):x}"
        return s + (f"+{int(self.bit_offset[i])}b" if self.bit_offset[i] else "")


@dataclass(frozen=True)
class RegisterLocation(SingleLocation):
    register: RegisterInfo = field()  # explicit field: ABCMeta.register would otherwise read as a default
    bit_offset: np.ndarray
    lanes: np.ndarray

    def shifted(self, delta_bits):
        return replace(self, bit_offset=self.bit_offset + delta_bits)

    def take(self, mask):
        return RegisterLocation(self.register, self.bit_offset[mask], self.lanes[mask])

    def storage_bits(self):
        return self.register.size * 8

    def describe(self, i: int = 0) -> str:
        off = int(self.bit_offset[i])
        name = self.register.name
        if self.register.per_lane:
            # the lane's own slice of a vector register
            name = f"{name}[lane {int(self.lanes[i])}]"
        elif self.register.size > 8 and off % 32 == 0:
            # a whole-wave vector register addressed at one lane's dword
            return f"{name}[lane {off // 32}]"
        if off % 8 == 0:
            return f"{name}+{off // 8}" if off else name
        return f"{name}+{off}b"


@dataclass(frozen=True)
class ImplicitLocation(SingleLocation):
    """Bytes that exist only in the debugger (DW_OP_stack_value, implicit_value)."""

    data: np.ndarray  # uint8 (G, n)
    bit_offset: np.ndarray

    def shifted(self, delta_bits):
        return replace(self, bit_offset=self.bit_offset + delta_bits)

    def take(self, mask):
        return ImplicitLocation(self.data[mask], self.bit_offset[mask])

    def storage_bits(self):
        return self.data.shape[1] * 8

    def describe(self, i: int = 0) -> str:
        raw = bytes(self.data[i])
        return f"implicit[{raw.hex()}]" + (f"+{int(self.bit_offset[i])}b" if self.bit_offset[i] else "")


@dataclass(frozen=True)
class ImplicitPointerLocation(SingleLocation):
    """A pointer that was optimized away; it points at `die_offset`'s object + `pointee_offset`."""

    die_offset: int
    pointee_offset: int
    bit_offset: np.ndarray
    space: AddressSpace | None = None

    def shifted(self, delta_bits):
        return replace(self, bit_offset=self.bit_offset + delta_bits)

    def take(self, mask):
        return replace(self, bit_offset=self.bit_offset[mask])

    def describe(self, i: int = 0) -> str:
        return f"implicit-pointer(<0x{self.die_offset:x}>+{self.pointee_offset})"


@dataclass(frozen=True)
class UndefinedLocation(SingleLocation):
    bit_offset: np.ndarray

    def shifted(self, delta_bits):
        return replace(self, bit_offset=self.bit_offset + delta_bits)

    def take(self, mask):
        return UndefinedLocation(self.bit_offset[mask])

    def describe(self, i: int = 0) -> str:
        return "undefined"


@dataclass(frozen=True)
class Piece:
    location: "Location"
    bits: int


@dataclass(frozen=True)
class CompositeLocation(SingleLocation):
    """Storage made of parts, each `bits` long, taken from another location."""

    pieces: tuple[Piece, ...]
    bit_offset: np.ndarray
    complete: bool = True

    def shifted(self, delta_bits):
        return replace(self, bit_offset=self.bit_offset + delta_bits)

    def take(self, mask):
        return CompositeLocation(tuple(Piece(p.location.take(mask), p.bits) for p in self.pieces),
                                 self.bit_offset[mask], self.complete)

    def storage_bits(self):
        return sum(p.bits for p in self.pieces)

    def describe(self, i: int = 0) -> str:
        inner = ", ".join(f"{p.location.describe(i)}:{_bits(p.bits)}" for p in self.pieces)
        tail = "" if self.complete else ", ..."
        off = int(self.bit_offset[i])
        return "{" + inner + tail + "}" + (f"+{_bits(off)}" if off else "")


def _bits(n: int) -> str:
    return f"{n // 8}" if n % 8 == 0 else f"{n}b"


@dataclass(frozen=True)
class Location(Entry):
    """A location description: one or more places that all hold the object."""

    places: tuple[SingleLocation, ...]

    def take(self, mask: np.ndarray) -> "Location":
        return Location(tuple(p.take(mask) for p in self.places))

    @property
    def width(self) -> int:
        return len(self.places[0].bit_offset)

    @property
    def primary(self) -> SingleLocation:
        return self.places[0]

    def shifted(self, delta_bits: np.ndarray) -> "Location":
        out = []
        for p in self.places:
            moved = p.shifted(delta_bits)
            size = moved.storage_bits()
            if size is not None and not isinstance(moved, MemoryLocation):
                off = moved.bit_offset
                if np.any(off < 0) or np.any(off > size):
                    raise EvaluationError(f"offset moves {p.describe()} outside its {size // 8}-byte storage")
            out.append(moved)
        return Location(tuple(out))

    def covering(self, nbits: int) -> "Location":
        """The same places, each composite padded with an undefined piece up to `nbits` past its
        offset: pieces that describe only the front of an object (clang's `DW_OP_piece 40,
        DW_OP_regx VGPR6, DW_OP_piece 4` for a 72-byte struct) leave the rest undefined, so
        its members there read as optimized out instead of failing the whole object."""
        if not any(isinstance(p, CompositeLocation) for p in self.places):
            return self
        out = []
        for p in self.places:
            if isinstance(p, CompositeLocation) and len(p.bit_offset):
                missing = int(p.bit_offset.max()) + nbits - p.storage_bits()
                if missing > 0:
                    filler = Piece(Location((UndefinedLocation(np.zeros(len(p.bit_offset), np.int64)),)), missing)
                    p = CompositeLocation(p.pieces + (filler,), p.bit_offset, p.complete)
            out.append(p)
        return Location(tuple(out))

    @property
    def is_incomplete_composite(self) -> bool:
        p = self.places[0]
        return len(self.places) == 1 and isinstance(p, CompositeLocation) and not p.complete

    def describe(self, i: int = 0) -> str:
        return " | ".join(p.describe(i) for p in self.places)


def single(loc: SingleLocation) -> Location:
    return Location((loc,))


def zeros(g: int) -> np.ndarray:
    return np.zeros(g, np.int64)


MAX_PIECES = 4096


def add_piece(composite: CompositeLocation, piece: Piece, max_bits: int) -> CompositeLocation:
    if len(composite.pieces) >= MAX_PIECES:
        raise LimitExceeded(f"composite has more than {MAX_PIECES} pieces")
    total = composite.storage_bits() + piece.bits
    if total > max_bits:
        raise LimitExceeded(f"composite larger than {max_bits // 8} bytes")
    return CompositeLocation(composite.pieces + (piece,), composite.bit_offset, complete=False)
