"""Lane addresses: each lane's address at a memory instruction, and whether the dump holds it.

The adapter reads the instruction's address operands from the vendor's decoder text
(adapters/addressing.py: registers, pairs, uniform bases, immediates, Intel's payloads); this part
reads each lane's registers from the dump, adds the terms up, and asks the wave's target whether the
bytes each lane accesses are in memory the dump holds (global memory, the work-group's shared
memory, the lane's private memory, through the generic windows as the vendor maps them).

The registers read are those of the lanes where they stand. At the faulting instruction (AMD's and
Intel's wave PC) that is what it read. Where the lanes went on past it (a CUDA warp's error PC names
the instruction; its lanes stand after it), every instruction in between must leave the operands'
registers alone: the adapter says which registers each may write (a superset), a branch in between
makes them unknown, and the faulting instruction's own destination does not count (a faulting access
returns no data). Lanes whose registers are not known say why; nothing is filled in.

The lanes are those that executed the instruction: the wave's execution mask (every channel of an
Intel instruction without a mask), within the channels it covers, without those a predicate turned off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..adapters.addressing import MemoryAccess, Operand, Term
from ..dwarf.target import Dialect
from ..errors import AspaceError
from .frames import Frames
from .programs import Part, Programs

MAX_BETWEEN = 64  # instructions between the faulting one and where the lanes stand, at most


@dataclass
class OperandAddresses:
    """One address operand's addresses, lane by lane."""

    operand: Operand
    space: str                              # as users read it: "global", "generic", "LDS", or what `base` says
    addresses: dict[int, int]               # lane -> address, for lanes whose registers are known
    unknown: dict[str, list[int]] = field(default_factory=dict)  # why -> lanes without an address
    outside: list[int] = field(default_factory=list)  # checked lanes whose access is in no memory the dump holds
    not_checked: dict[str, list[int]] = field(default_factory=dict)  # why -> lanes not checked
    windows: dict[str, list[int]] = field(default_factory=dict)      # generic: window -> lanes in it


@dataclass
class AccessAddresses:
    """A memory instruction's addresses in one wave."""

    pc: int
    instruction: str
    access: MemoryAccess
    noun: str                                # "core" or "dump": what the user opened
    lanes: list[int]                         # the lanes that executed it
    operands: list[OperandAddresses]
    notes: list[str] = field(default_factory=list)


class LaneAddresses(Part):
    def __init__(self, programs: Programs, frames: Frames, instructions: Callable[[int, int], list]):
        super().__init__(programs)
        self.frames = frames
        self._instructions = instructions  # (address, count) -> disassembly rows from `address`

    def at(self, wave, pc: int, text: str) -> AccessAddresses | None:
        """Each lane's address at the instruction `text` at `pc`; None when it accesses no memory."""
        access = self.adapter.memory_access(text)
        if access is None:
            return None
        noun = "core" if self.state.is_core else "dump"
        notes = list(access.notes)
        lanes = self._executing(wave, access)
        written = self._written_since(wave, pc, lanes)
        lanes = self._predicated(wave, access, lanes, written, noun, notes)
        target = self.programs.target_for(wave, Dialect())
        operands = [self._operand(wave, target, op, lanes, written, noun, access.uniform) for op in access.operands]
        return AccessAddresses(pc, text, access, noun, lanes, operands, notes)

    # ------------------------------------------------------------------ which lanes, and their registers

    def _executing(self, wave, access: MemoryAccess) -> list[int]:
        mask = wave.valid_lanes.copy() if access.every_channel else wave.active_lanes.copy()
        if access.channels is not None:
            first, count = access.channels
            inside = np.zeros(wave.lanes, bool)
            inside[first:first + count] = True
            mask &= inside
        return [int(lane) for lane in np.flatnonzero(mask)]

    def _written_since(self, wave, pc: int, lanes: list[int]) -> dict[int, tuple[int | None, set[str] | None]]:
        """lane -> (its PC, the registers the instructions after `pc` may have written before it); the
        set is None where that is not known (a branch in between, or the lane stands elsewhere)."""
        out: dict[int, tuple[int | None, set[str] | None]] = {}
        by_stop: dict[int | None, set[str] | None] = {}
        for lane in lanes:
            try:
                stop = self.frames.lane_pc(wave, lane)
            except AspaceError:
                stop = None
            if stop not in by_stop:
                by_stop[stop] = set() if stop == pc else self._writes_between(pc, stop)
            out[lane] = (stop, by_stop[stop])
        return out

    def _writes_between(self, pc: int, stop: int | None) -> set[str] | None:
        if stop is None or not pc < stop:
            return None
        try:
            rows = self._instructions(pc, MAX_BETWEEN + 1)
        except AspaceError:
            return None
        written: set[str] = set()
        for row in rows[1:]:  # the faulting instruction's own results never arrive
            address, text = getattr(row, "address", None), getattr(row, "text", None)
            if address is None or address > stop or not getattr(row, "decoded", False):
                return None
            if address == stop:
                return written
            more = self.adapter.registers_written(text)
            if more is None:
                return None
            written |= more
        return None

    def _predicated(self, wave, access: MemoryAccess, lanes: list[int], written, noun: str,
                    notes: list[str]) -> list[int]:
        if access.predicate is None:
            return lanes
        name, negated, per_lane = access.predicate
        shown = ("!" if negated else "") + name
        regs = wave.registers
        if not regs.has(name):
            notes.append(f"predicated on {shown}, which the {noun} does not hold: every executing lane is shown")
            return lanes
        data, valid = regs.lane_view(name, wave.lanes) if per_lane else regs.raw(name)
        kept, off, unsure = [], [], []
        for lane in lanes:
            row, ok = (data[lane], valid[lane]) if per_lane else (data, valid)
            since = written[lane][1]
            if not ok[:1].all() or since is None or name in since:
                unsure.append(lane)
                kept.append(lane)
            elif bool(row[0] & 1) != negated:
                kept.append(lane)
            else:
                off.append(lane)
        if off:
            notes.append(f"predicated on {shown}: {len(off)} lane{'s' if len(off) != 1 else ''} did not access memory")
        if unsure:
            notes.append(f"predicated on {shown}, not known for {len(unsure)} lane{'s' if len(unsure) != 1 else ''}:"
                         " they are shown")
        return kept

    def _term(self, wave, term: Term, lanes: list[int], noun: str) -> tuple[dict[int, int], str | None]:
        """lane -> the term's value (scaled, sign-extended), for lanes whose bytes are known; else why not."""
        regs = wave.registers
        absent = [r for r in term.registers if not regs.has(r)]
        if absent:
            return {}, f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not in the {noun}"
        if term.payload:
            parts = [regs.raw(r) for r in term.registers]
            data, valid = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            rows = {}
            for lane in lanes:
                at = (lane - term.first_lane) * term.size
                if 0 <= at and at + term.size <= len(data) and valid[at:at + term.size].all():
                    rows[lane] = data[at:at + term.size]
        elif term.per_lane:
            parts = [regs.lane_view(r, wave.lanes) for r in term.registers]
            data, valid = np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts], axis=1)
            rows = {lane: data[lane] for lane in lanes if valid[lane].all()}
        else:
            parts = [regs.raw(r) for r in term.registers]
            data, valid = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            rows = {lane: data for lane in lanes} if valid.all() else {}
        values = {}
        for lane, row in rows.items():
            value = int.from_bytes(row.tobytes(), "little")
            if term.signed and value >> (8 * len(row) - 1):
                value -= 1 << (8 * len(row))
            values[lane] = value * term.scale
        return values, None if values or not lanes else f"{term.text} is not fully in the {noun}"

    # ------------------------------------------------------------------ addresses, and the memory behind them

    def _operand(self, wave, target, op: Operand, lanes: list[int], written, noun: str,
                 uniform: bool) -> OperandAddresses:
        space = self.adapter.spaces().get(op.space) if op.base is None else None
        shown = op.space if space is None else (self.adapter.space_label(space) or space.name)
        out = OperandAddresses(op, shown, {})
        wanted = lanes[:1] if uniform else lanes
        totals = {lane: op.offset for lane in wanted}
        for term in op.terms:
            values, why = self._term(wave, term, wanted, noun)
            for lane in list(totals):
                stop, since = written[lane]
                if since is None:
                    reason = (f"the lanes stand at {stop:#x}, not straight after the instruction: {term.text} may "
                              "not hold what it read" if stop is not None else "where the lanes stand is not known")
                elif set(term.registers) & since:
                    reason = f"{term.text} may have been written after the instruction, before the lanes' PC {stop:#x}"
                elif lane in values:
                    totals[lane] += values[lane]
                    continue
                else:
                    reason = why or f"{term.text} is not fully in the {noun}"
                out.unknown.setdefault(reason, []).append(lane)
                del totals[lane]
        mask = (1 << op.bits) - 1
        out.addresses = {lane: total & mask for lane, total in totals.items()}
        if op.base is not None:
            if out.addresses:
                out.not_checked[f"an offset from {op.base}, which the {noun} does not place"] = sorted(out.addresses)
            return out
        if space is not None:
            self._check(wave, target, space, op, out, noun)
        return out

    def _check(self, wave, target, space, op: Operand, out: OperandAddresses, noun: str) -> None:
        size = op.size or 1
        outside = []
        for lane, address in out.addresses.items():
            where, at = space, address
            if space.name == "generic":
                where, at = target.resolve_generic(address)
                if where is not None and where.name != "global":
                    window = f"the {self.adapter.space_label(where) or where.name} window"
                    out.windows.setdefault(window, []).append(lane)
            why = self._unheld(wave, target, where, lane, noun)
            if why is not None:
                out.not_checked.setdefault(why, []).append(lane)
                continue
            got = target.read_memory(where, np.array([lane]), np.array([at], np.uint64), size)
            if not got.valid.all():
                outside.append(lane)
        out.outside = outside

    def _unheld(self, wave, target, space, lane: int, noun: str) -> str | None:
        """Why the dump cannot tell whether an address of `space` is held; None when it can."""
        if space is None:
            return f"the {noun} does not say what this address names"
        if space.name == "global":
            # a lightweight CUDA core says which memory its driver skipped (its generation flags)
            skipped = (getattr(self.state, "missing_memory", None) or {}).get("global")
            if skipped:
                return skipped
            memory = self.state.memory.get("global")
            if memory is None or not memory.regions:
                return f"the {noun} holds no global memory"
            return None
        label = self.adapter.space_label(space) or space.name
        if target.private_owners(space, np.array([lane])) is not None:
            return None if wave.private is not None else f"the {noun} holds no {label} memory of this wave"
        try:
            held = target.storage(space)
        except AspaceError as exc:
            return str(exc)
        whose = {"workgroup": " of this work-group", "wave": " of this wave", "lane": " of this lane"}
        return None if held is not None else f"the {noun} holds no {label} memory{whose.get(space.scope, '')}"
