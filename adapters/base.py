"""What every GPU family adapter provides, and the shared wave-bound target.

An adapter knows one vendor: DWARF register numbers and names, address
spaces and how to reach their storage in a dump, dialect quirks. The
evaluator and the session only talk to it through these methods.
"""

from __future__ import annotations

import numpy as np

from aspace_dap.dwarf.target import AddressSpace, Dialect, MemoryRead, RegisterInfo
from aspace_dap.errors import EvaluationError, UnavailableError


class TargetAdapter:
    vendor = "unknown"
    address_size = 8

    # --- address spaces -------------------------------------------------------------

    def spaces(self) -> dict[str, AddressSpace]:
        """Every address space by name, as users write them (`local#0x40`)."""
        raise NotImplementedError

    def space_by_name(self, name: str) -> AddressSpace:
        try:
            return self.spaces()[name]
        except KeyError:
            raise EvaluationError(f"unknown address space {name!r}; known: {', '.join(self.spaces())}") from None

    def default_space(self) -> AddressSpace:
        return self.spaces()["global"]

    def pointer_space(self, dwarf_class: int | None, dialect: Dialect) -> AddressSpace:
        """The space a pointer type with this DWARF address class points into."""
        return self.default_space()

    # --- registers ------------------------------------------------------------------

    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        raise NotImplementedError

    def register_number(self, name: str, lanes: int) -> int | None:
        """DWARF number of a register written by name (`s5`, `v3`, `exec`), None if unknown."""
        raise NotImplementedError

    # --- naming -----------------------------------------------------------------------

    def entry_frame_base(self, dialect: Dialect) -> bytes | None:
        """Frame base of a kernel whose DWARF gives none (optimized entry functions)."""
        return None

    def thread_name(self, wave, active: int, total: int) -> str:
        return f"Wave {wave.id} [{active}/{total} active]"

    def wave_target(self, state, wave, dialect: Dialect) -> "WaveTarget":
        return WaveTarget(self, state, wave, dialect)


class WaveTarget:
    """EvalTarget for one wave of a dump, through an adapter."""

    def __init__(self, adapter: TargetAdapter, state, wave, dialect: Dialect):
        self.adapter = adapter
        self.state = state
        self.wave = wave
        self.dialect = dialect
        self.lanes = wave.lanes
        self.address_size = adapter.address_size

    # registers
    def register_info(self, regno: int) -> RegisterInfo:
        return self.adapter.register_info(regno, self.lanes, self.dialect)

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        info = self.register_info(regno)
        regs = self.wave.registers
        if not regs.has(info.name):
            raise UnavailableError(f"register {info.name} is not in the dump")
        if info.per_lane:
            data, valid = regs.lane_view(info.name, self.lanes)
            return MemoryRead(data[lanes], valid[lanes])
        data, valid = regs.raw(info.name)
        return MemoryRead(data[None, : info.size], valid[None, : info.size])

    def write_register(self, regno: int, lanes: np.ndarray, byte_offsets: np.ndarray, data: np.ndarray) -> None:
        info = self.register_info(regno)
        full = self.wave.registers.size(info.name) or 0
        for lane, off, row in zip(lanes, byte_offsets, data):
            base = int(lane) * info.size if info.per_lane and full > info.size else 0
            self.wave.registers.write(info.name, base + int(off), bytes(row))

    # address spaces
    def address_space(self, number: int) -> AddressSpace:
        for s in self.adapter.spaces().values():
            if s.number == number:
                return s
        raise EvaluationError(f"unknown address space {number}")

    def default_address_space(self) -> AddressSpace:
        return self.adapter.default_space()

    def xderef_address_space(self, number: int) -> AddressSpace:
        return self.address_space(number)

    def frame_base_address(self, regno: int, value: np.ndarray):
        return self.default_address_space(), value

    def read_memory(self, space: AddressSpace, lanes, addrs, size) -> MemoryRead:
        raise NotImplementedError

    def write_memory(self, space: AddressSpace, lanes, addrs, data) -> None:
        raise NotImplementedError


def unavailable(g: int, size: int) -> MemoryRead:
    return MemoryRead(np.zeros((g, size), np.uint8), np.zeros((g, size), bool))
