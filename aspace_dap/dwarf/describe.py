"""Where a variable lives, in words, without a dump: `v3[lane]`, `private_lane fp+0x34 (scratch)`.

The evaluator runs first against a target that has no register or memory
contents: whatever it can place without reading the dump (registers, LDS
addresses from .debug_addr, constants, a kernel's fixed frame base) comes out
exactly as the DAP server would place it. Expressions that need a value from
the dump (a frame pointer, a base register) are described from their
operations instead. Vendor facts (register names, which space a frame pointer
addresses, what a space is called in the vendor's manuals: `space_label`)
come from the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AspaceError
from .evaluator import evaluate
from .locations import (
    CompositeLocation, ImplicitLocation, ImplicitPointerLocation, Location, MemoryLocation, RegisterLocation,
    SingleLocation, UndefinedLocation,
)
from .ops import Op, decode
from .target import AddressSpace, Dialect, FrameContext, MemoryRead

OPTIMIZED_OUT = "optimized out"

# Two lanes: a place that differs only in the lane number is "the lane's own".
_PROBE_LANES = np.array([0, 1], np.int64)


def _labelled(place: str, space: AddressSpace, adapter, top: bool) -> str:
    """`place (LDS)`: the vendor's word for the memory, unless the space's name already is that word.
    Pieces inside a composite stay short."""
    label = adapter.space_label(space) if top else None
    return f"{place} ({label})" if label and label != space.name else place


class StaticTarget:
    """An EvalTarget with the adapter's registers and spaces but no contents: every read is unavailable."""

    def __init__(self, adapter, dialect: Dialect, lanes: int = 64):
        self.adapter = adapter
        self.dialect = dialect
        self.lanes = lanes
        self.address_size = adapter.address_size
        # The adapter's wave target knows the dialect's address-space numbering and frame-base rules;
        # it is only asked about names and numbers here, never about a dump.
        self._vendor = adapter.wave_target(None, _NoWave(lanes), dialect)

    def register_info(self, regno: int):
        return self.adapter.register_info(regno, self.lanes, self.dialect)

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        info = self.register_info(regno)
        rows = 1 if not info.per_lane else len(lanes)
        return MemoryRead(np.zeros((rows, info.size), np.uint8), np.zeros((rows, info.size), bool))

    def read_memory(self, space, lanes, addrs, size) -> MemoryRead:
        g = len(lanes)
        return MemoryRead(np.zeros((g, size), np.uint8), np.zeros((g, size), bool))

    def address_space(self, number: int) -> AddressSpace:
        return self._vendor.address_space(number)

    def default_address_space(self) -> AddressSpace:
        return self._vendor.default_address_space()

    def xderef_address_space(self, number: int) -> AddressSpace:
        return self._vendor.xderef_address_space(number)

    def frame_base_address(self, regno: int, value: np.ndarray):
        return self._vendor.frame_base_address(regno, value)


class _NoWave:
    """Stands in for a dumped wave: only its width is known."""

    def __init__(self, lanes: int):
        self.lanes = lanes


@dataclass(frozen=True)
class Described:
    """A location in words and what holds it: "register", "implicit", "undefined", "unknown"
    or the scope of a memory space ("lane", "wave", "workgroup", "device")."""

    text: str
    storage: frozenset[str]


def describe_location(expr: bytes, dialect: Dialect, adapter, *, frame: FrameContext | None = None,
                      wave_lanes: int = 64) -> str:
    """One location expression in words, as far as it is known without a dump."""
    return summarize_location(expr, dialect, adapter, frame=frame, wave_lanes=wave_lanes).text


def summarize_location(expr: bytes, dialect: Dialect, adapter, *, frame: FrameContext | None = None,
                       wave_lanes: int = 64, variable=None) -> Described:
    """The place `expr` names, statically; with `variable`, the adapter's placement rules apply too
    (NVIDIA's storage kinds put a generic address in shared or param memory, as the debugger does)."""
    storage: set[str] = set()
    if not expr:
        return Described(OPTIMIZED_OUT, frozenset({"undefined"}))
    target = StaticTarget(adapter, dialect, wave_lanes)
    try:
        result = evaluate(expr, target, dialect, _PROBE_LANES, frame=frame)
    except AspaceError:
        result = None
    if result is not None and not result.errors and len(result.groups) == 1:
        entry = result.groups[0][1]
        if variable is not None:
            entry = adapter.place_variable(variable, entry, target)
        if isinstance(entry, Location):
            text = " | ".join(_place(p, adapter, 0, True, True, storage) for p in entry.places)
            return Described(text, frozenset(storage))
    try:
        ops = decode(expr, dialect)
    except AspaceError as exc:
        return Described(f"unreadable location ({exc})", frozenset({"unknown"}))
    text = _describe_ops(ops, dialect, adapter, target, frame, storage)
    return Described(text, frozenset(storage))


def describe_evaluated(location: Location, adapter, i: int = 0, *, lane_generic: bool = False) -> str:
    """An evaluated location for row `i`; `lane_generic` writes per-lane places as `[lane]`.

    The debugger prints a variable's place with it, so a dump and the source lens read alike."""
    return " | ".join(_place(p, adapter, i, lane_generic, True, set()) for p in location.places)


def describe_constant(value: int | bytes, size: int = 8) -> str:
    """A DW_AT_const_value: `constant 0x5`; an int is taken as `size` little-endian bytes, like the value shown."""
    raw = value if isinstance(value, bytes) else (value & ((1 << 8 * size) - 1)).to_bytes(size, "little")
    return f"constant {int.from_bytes(raw, 'little'):#x}" if len(raw) <= 8 else f"constant[{raw.hex()}]"


def _lane(loc, i: int, lane_generic: bool) -> str:
    return "lane" if lane_generic else f"lane {int(loc.lanes[i])}"


def _place(p: SingleLocation, adapter, i: int, lane_generic: bool, top: bool, storage: set[str]) -> str:
    if isinstance(p, RegisterLocation):
        storage.add("register")
        off = int(p.bit_offset[i])
        name = p.register.name
        if p.register.per_lane:
            name = f"{name}[{_lane(p, i, lane_generic)}]"
        elif p.register.size > 8 and off % 32 == 0:
            # a whole-wave vector register addressed at one lane's dword
            return f"{name}[lane]" if lane_generic else f"{name}[lane {off // 32}]"
        if off % 8 == 0:
            return f"{name}+{off // 8}" if off else name
        return f"{name}+{off}b"
    if isinstance(p, MemoryLocation):
        storage.add(p.space.scope)
        text = f"{p.space.name}#0x{int(p.address[i]):x}"
        if p.bit_offset[i]:
            text += f"+{int(p.bit_offset[i])}b"
        return _labelled(text, p.space, adapter, top)
    if isinstance(p, ImplicitLocation):
        storage.add("implicit")
        if not top:
            return "implicit"
        raw = bytes(p.data[i])
        return f"implicit {int.from_bytes(raw[:8], 'little'):#x}" if len(raw) <= 8 else f"implicit[{raw.hex()}]"
    if isinstance(p, ImplicitPointerLocation):
        storage.add("implicit")
        return f"implicit pointer to <0x{p.die_offset:x}>+{p.pointee_offset}"
    if isinstance(p, UndefinedLocation):
        storage.add("undefined")
        return OPTIMIZED_OUT if top else "undefined"
    if isinstance(p, CompositeLocation):
        parts = []
        for piece in p.pieces:
            inner = " | ".join(_place(q, adapter, i, lane_generic, False, storage) for q in piece.location.places)
            parts.append(f"{inner}:{_bytes(piece.bits)}")
        if not p.complete:
            parts.append("...")
        off = int(p.bit_offset[i])
        return "{" + ", ".join(parts) + "}" + (f"+{_bytes(off)}" if off else "")
    storage.add("unknown")
    return type(p).__name__


def _bytes(bits: int) -> str:
    return f"{bits // 8}" if bits % 8 == 0 else f"{bits}b"


# --- words from operations, for expressions that need the dump ----------------------------------


def _reg_name(target: StaticTarget, regno: int) -> str:
    try:
        info = target.register_info(regno)
    except AspaceError:
        return f"reg{regno}"
    return f"{info.name}[lane]" if info.per_lane else info.name


def _regno(op: Op) -> int | None:
    name = op.name
    if name in ("DW_OP_regx", "DW_OP_bregx", "DW_OP_regval_type"):
        return op.operands[0]
    if name.startswith("DW_OP_reg") and name[9:].isdigit():
        return op.code - 0x50
    if name.startswith("DW_OP_breg") and name[10:].isdigit():
        return op.code - 0x70
    return None


def _offset(n: int) -> str:
    return f"+{n:#x}" if n >= 0 else f"-{-n:#x}"


def _frame_base_space(target: StaticTarget, frame: FrameContext | None, dialect: Dialect) -> tuple[AddressSpace, str]:
    """(space, base) of the frame base: `private_lane`, `fp` for AMDGPU's s33."""
    space = target.default_address_space()
    base = "fp"
    fb = frame.frame_base_expr if frame is not None else None
    if fb:
        try:
            ops = decode(fb, dialect)
        except AspaceError:
            ops = []
        if len(ops) == 1 and (regno := _regno(ops[0])) is not None and not ops[0].name.startswith("DW_OP_breg"):
            space = target.frame_base_address(regno, np.zeros(1, np.uint64))[0]
    return space, base


def _describe_ops(ops: list[Op], dialect: Dialect, adapter, target: StaticTarget,
                  frame: FrameContext | None, storage: set[str]) -> str:
    pieces: list[tuple[list[Op], int]] = []
    current: list[Op] = []
    for op in ops:
        if op.name in ("DW_OP_piece", "DW_OP_bit_piece"):
            bits = op.operands[0] * 8 if op.name == "DW_OP_piece" else op.operands[0]
            pieces.append((current, bits))
            current = []
        else:
            current.append(op)
    if not pieces:
        return _describe_simple(current, dialect, adapter, target, frame, True, storage)
    parts = [f"{_describe_simple(part, dialect, adapter, target, frame, False, storage)}:{_bytes(bits)}"
             for part, bits in pieces]
    return "{" + ", ".join(parts) + "}"


def _describe_simple(ops: list[Op], dialect: Dialect, adapter, target: StaticTarget,
                     frame: FrameContext | None, top: bool, storage: set[str]) -> str:
    if not ops:
        storage.add("undefined")
        return OPTIMIZED_OUT if top else "undefined"
    names = [op.name for op in ops]
    registers = [r for op in ops if (r := _regno(op)) is not None]
    if names[-1] in ("DW_OP_stack_value", "DW_OP_implicit_value"):
        storage.add("implicit")
        if not registers:
            return "implicit"
        used = ", ".join(dict.fromkeys(_reg_name(target, r) for r in registers))
        return f"computed from {used}" if top else "implicit"
    if names[0] == "DW_OP_fbreg" and len(ops) == 1:
        space, base = _frame_base_space(target, frame, dialect)
        storage.add(space.scope)
        return _labelled(f"{space.name} {base}{_offset(ops[0].operands[0])}", space, adapter, top)
    if len(ops) == 1 and registers and names[0].startswith("DW_OP_breg"):
        space = target.default_address_space()
        storage.add(space.scope)
        place = f"{space.name} {_reg_name(target, registers[0])}{_offset(ops[0].operands[-1])}"
        return _labelled(place, space, adapter, top)
    storage.add("unknown")
    if registers:
        used = ", ".join(dict.fromkeys(_reg_name(target, r) for r in registers))
        return f"memory addressed by {used}"
    return "computed location"
