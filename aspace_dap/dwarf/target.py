"""What the evaluator may ask of the world: registers, memory, address spaces.

The evaluator never opens a file. A target adapter (adapters/) bound to one
wave of a dump implements `EvalTarget`; tests implement it with small fakes.
Everything is lane-wide: `lanes` arguments are numpy arrays of lane ids, and
answers are arrays with one row per requested lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class Dialect:
    """How to read the DWARF of one compile unit.

    `vendor_ops` selects the table for the contested 0xe0-0xff opcode range:
    "gnu" (plain DWARF + GNU), "amd" (AMD legacy single bytes + DW_OP_LLVM_user),
    "intel" (DW_OP_INTEL_*), "nvidia". `heterogeneous` is True for ROCm's
    heterogeneous-debugging DWARF (locations on the stack, DW_ASPACE numbering,
    whole-wave vector registers), False for upstream LLVM (xderef numbering,
    per-lane register views).
    """

    vendor_ops: str = "gnu"
    heterogeneous: bool = False
    producer: str = ""
    address_size: int = 8
    offset_size: int = 4  # 4 for 32-bit DWARF, 8 for 64-bit DWARF
    version: int = 5


@dataclass(frozen=True)
class AddressSpace:
    number: int  # the adapter's DWARF address space number
    name: str  # "global", "generic", "local", "private_lane", "private_wave", ...
    address_size: int  # bytes in an address of this space
    scope: str = "device"  # "device" | "workgroup" | "wave" | "lane": context a location needs


@dataclass(frozen=True)
class RegisterInfo:
    regno: int
    name: str
    size: int  # bytes of the register as a location sees it (per lane, or whole wave)
    per_lane: bool  # True: each lane sees its own `size` bytes; False: every lane sees the same bytes


@dataclass
class MemoryRead:
    data: np.ndarray  # uint8, shape (len(lanes), size)
    valid: np.ndarray  # bool, same shape: False = unavailable


class EvalTarget(Protocol):
    lanes: int  # lanes per wave
    address_size: int  # size of DWARF's generic type

    def register_info(self, regno: int) -> RegisterInfo:
        """Raises UnavailableError for a register the target does not have."""

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        """Bytes of the register as each lane sees it: shape (len(lanes), info.size)."""

    def address_space(self, number: int) -> AddressSpace:
        """The address space for a DW_ASPACE number (already mapped for the dialect)."""

    def default_address_space(self) -> AddressSpace:
        """The space DWARF 5 memory operations (addr, deref, fbreg ...) use."""

    def xderef_address_space(self, number: int) -> AddressSpace:
        """The space a DW_OP_xderef* address-space id names in this dialect."""

    def read_memory(self, space: AddressSpace, lanes: np.ndarray, addrs: np.ndarray, size: int) -> MemoryRead:
        """`size` bytes at each lane's address (uint64 array, one per lane)."""

    def frame_base_address(self, regno: int, value: np.ndarray) -> tuple[AddressSpace, np.ndarray]:
        """Where a frame base held in register `regno` (values per lane) points.

        DWARF 5 reads a register frame base as an address in the default space;
        targets whose frame pointer holds something else (AMDGPU's wave-scaled
        scratch offset) say so here.
        """

    # Optional, for writes into the dump's in-memory overlay:
    # write_register(regno, lanes, byte_offsets, data) and write_memory(space, lanes, addrs, data)


@dataclass
class FrameContext:
    """What a frame adds to an evaluation; any of it may be missing.

    The callables return raw DWARF expression bytes or None; the evaluator
    evaluates what they return, with the same target and limits.
    """

    pc: int = 0
    load_bias: int = 0  # added to DW_OP_addr / DW_OP_addrx addresses (code object load address)
    frame_base_expr: bytes | None = None  # the subprogram's DW_AT_frame_base
    cfa: object | None = None  # callable(lanes) -> Location, from CFI
    entry_value: object | None = None  # callable(expr: bytes, lanes) -> StackEntry | None (caller's state)
    procedure: object | None = None  # callable(die_offset: int) -> bytes | None (DW_OP_call*)
    # .debug_info offset of the expression's unit: DW_OP_call2/call4 and the typed operations name DIEs
    # by their offset from it (DW_OP_call_ref by its offset in the section)
    unit_offset: int = 0
    unit_of: object | None = None  # callable(die_offset) -> .debug_info offset of the unit holding it (call_ref)
    die_location: object | None = None  # callable(die_offset) -> bytes|None for implicit pointers/parameter_ref
    object_address: object | None = None  # Location for DW_OP_push_object_address
    tls_base: object | None = None  # callable(value) -> address
    # callable(index[, unit offset]) -> address (DW_OP_addrx / constx / GNU_addr_index); the unit is passed
    # where it is not unit_offset's (inside another unit's DW_OP_call_ref procedure)
    addrx: object | None = None
    call_frame_entry_reg: object | None = None  # callable(regno, lanes) -> Location of the caller's register
    base_type: object | None = None  # callable(die_offset) -> (size, encoding) for typed ops
    extra: dict = field(default_factory=dict)
    # frame base per lane set: every fbreg variable of a frame shares it, so it is evaluated once
    frame_base_cache: dict = field(default_factory=dict)
