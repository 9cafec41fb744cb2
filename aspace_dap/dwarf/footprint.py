"""Which storage bytes each lane's value of a variable occupies, and where two claims collide.

A location says where a variable lives; taken over every lane of a wave and every variable of a
frame, the claims must fit together: a register byte that one variable's lane 3 owns cannot also
hold another lane's value, and two objects in memory cannot share bytes. Where the debug info
breaks that, at least one of the claims is wrong and the debugger cannot tell which, so both read
as unavailable with the collision named, instead of one variable showing another's value.

A footprint is taken from an evaluation: the final register or memory location, or for a value
pulled out of registers (IGC's `DW_OP_INTEL_push_bit_piece_stack; DW_OP_stack_value`) the
register bits it was pulled from. Registers read only to form an address are not storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .evaluator import Evaluator, LaneResults
from .locations import CompositeLocation, ImplicitLocation, Location, MemoryLocation, RegisterLocation


@dataclass(frozen=True)
class Slot:
    """Bytes [start, end) of one storage: a register (`where` its name) or an address space."""

    kind: str  # "register" | "memory"
    where: str
    start: int
    end: int

    def describe(self) -> str:
        if self.kind == "register":
            return f"{self.where} bytes {self.start}-{self.end - 1}"
        return f"{self.where}#0x{self.start:x}..0x{self.end - 1:x}"


@dataclass
class Footprint:
    """One variable's slots per lane (lanes whose location could not be evaluated are absent)."""

    name: str
    lanes: dict[int, tuple[Slot, ...]]
    # register pulls per lane: (register name, first bit, bits), for the adapter's layout checks
    pulls: dict[int, tuple[tuple[str, int, int], ...]]
    asked: tuple[int, ...] = ()  # every lane evaluated, those that failed included

    @cached_property
    def uniform(self) -> bool:
        """Every evaluated lane names the same storage (a scalar, or a work-group object)."""
        slots = list(self.lanes.values())
        return all(s == slots[0] for s in slots[1:])


def evaluate_footprint(name: str, expr, target, dialect, lanes, frame, size_bytes: int) -> Footprint:
    """Evaluate `expr` for `lanes` and record what storage each lane's value occupies."""
    ev = Evaluator(target, dialect, frame)
    ev.pulls = []
    res: LaneResults = ev.evaluate(expr, np.asarray(lanes, np.int64))
    pulled: dict[int, list] = {}
    reads_memory: set[int] = set()
    for glanes, loc, nbits in ev.pulls:
        for row, lane in enumerate(glanes):
            if nbits is None:
                reads_memory.add(int(lane))
                continue
            place = loc.places[0]
            if isinstance(place, RegisterLocation):
                pulled.setdefault(int(lane), []).append((place, row, nbits))
            else:
                reads_memory.add(int(lane))
    out = Footprint(name, {}, {}, tuple(int(lane) for lane in np.asarray(lanes).reshape(-1)))
    for glanes, entry in res.groups:
        if not isinstance(entry, Location):
            continue
        for row, lane in enumerate(glanes):
            lane = int(lane)
            if isinstance(entry.primary, ImplicitLocation):
                # a value computed on the stack: its storage is the register bits it was pulled from
                if lane in reads_memory or lane not in pulled:
                    continue
                slots = tuple(_register_slot(p, r, lane, n) for p, r, n in pulled[lane])
            else:
                slots = tuple(_slots(entry, row, lane, size_bytes * 8))
            slots = tuple(slot for slot in slots if slot.end > slot.start)  # 0-bit pieces hold nothing
            if slots:
                out.lanes[lane] = slots
            if lane in pulled:
                out.pulls[lane] = tuple((p.register.name, int(p.bit_offset[r]), n) for p, r, n in pulled[lane])
    return out


def _register_slot(place: RegisterLocation, row: int, lane: int, bits: int) -> Slot:
    start = int(place.bit_offset[row])
    where = place.register.name + (f"[lane {lane}]" if place.register.per_lane else "")
    return Slot("register", where, start // 8, (start + bits + 7) // 8)


def _slots(loc: Location, row: int, lane: int, bits: int):
    place = loc.places[0]
    if isinstance(place, RegisterLocation):
        room = place.register.size * 8 - int(place.bit_offset[row])
        yield _register_slot(place, row, lane, min(bits, room))
    elif isinstance(place, MemoryLocation):
        start = int(place.address[row]) * 8 + int(place.bit_offset[row])
        where = place.space.name + (f"[lane {lane}]" if place.space.scope == "lane" else "")
        yield Slot("memory", where, start // 8, (start + bits + 7) // 8)
    elif isinstance(place, CompositeLocation) and not int(place.bit_offset[row]):
        for piece in place.pieces:
            yield from _slots(piece.location, row, lane, piece.bits)


def collisions(footprints: dict[int, Footprint]) -> dict[int, dict[int, str]]:
    """{variable key: {lane: why}} for every lane whose storage another claim also names.

    Two lanes of one variable in the same bytes, or two variables in the same memory, cannot both
    be right. Two variables may share register bytes only lane for lane (one value described
    twice, `int b = a`); any other sharing is a collision.
    """
    by_storage: dict[tuple[str, str], list[tuple[int, int, int, int]]] = {}
    for key, fp in footprints.items():
        for lane, slots in fp.lanes.items():
            for slot in slots:
                if slot.end <= slot.start:
                    continue
                by_storage.setdefault((slot.kind, slot.where), []).append((slot.start, slot.end, key, lane))
    found: dict[int, dict[int, str]] = {}

    def flag(key, lane, other_key, other_lane, kind, where, lo, hi):
        if lane in found.get(key, {}):
            return
        other = footprints[other_key]
        who = f"lane {other_lane}" if other_key == key else f"{other.name} (lane {other_lane})"
        span = f"{where} bytes {lo}-{hi - 1}" if kind == "register" else f"{where}#0x{lo:x}..0x{hi - 1:x}"
        found.setdefault(key, {})[lane] = f"the debug info also puts {who} in these bytes ({span})"

    for (kind, where), claims in by_storage.items():
        claims.sort()
        active: list[tuple[int, int, int, int]] = []
        for start, end, key, lane in claims:
            active = [c for c in active if c[1] > start]
            for o_start, o_end, o_key, o_lane in active:
                if not _conflict(kind, footprints, key, lane, o_key, o_lane):
                    continue
                lo, hi = max(start, o_start), min(end, o_end)
                flag(key, lane, o_key, o_lane, kind, where, lo, hi)
                flag(o_key, o_lane, key, lane, kind, where, lo, hi)
            active.append((start, end, key, lane))
    return found


def _conflict(kind: str, footprints: dict[int, Footprint], key, lane, o_key, o_lane) -> bool:
    a, b = footprints[key], footprints[o_key]
    if key == o_key:
        # one object seen by several lanes is fine; one lane's value in another lane's bytes is not
        return lane != o_lane and not a.uniform
    if kind == "memory":
        return True
    if a.uniform and b.uniform:
        return False  # one scalar described twice
    return lane != o_lane or a.uniform != b.uniform
