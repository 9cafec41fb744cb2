"""Exceptions: the stop's exception in the vendor's words, the faulting instruction, and who shares it.

Owns the exceptions the dump records, put in words by the adapter (adapters/<vendor>/exceptions.py:
cuda-gdb's CUDA_EXCEPTION_14 "Warp Illegal Address", ROCdbgapi's memory violation that ROCgdb reports
as SIGSEGV, gdb-oneapi's SIGSEGV with the faulting address), worked out once, and for one wave: the
faulting instruction (the error PC where the format records it apart from the lanes' PCs, else the
wave's PC), where it is (function, symbol offset, source line), and how many lanes and waves raised an
exception of the same kind. A dump whose format records no exception detail, but whose stop is an
exception, gets one from the stop's own description.

The faulting instruction's text comes from `disassemble_at`, the one place this part asks for
disassembly; each lane's address at it from the lane addresses part (lane_addresses.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..adapters.base import RaisedException
from ..errors import AspaceError
from ..names import function_name
from .focus import Focus
from .frames import Frames
from .lane_addresses import AccessAddresses
from .programs import Part, Programs


def disassemble_at(disassembly, pc: int) -> str | None:
    """The instruction at runtime address `pc` of the focused wave's code, as the vendor's disassembler
    prints it; None where there is no code there or its decoder is missing (the details then show the
    instruction's address, symbol and source line alone)."""
    from .disassembly import Instruction
    try:
        rows = disassembly.instructions(pc, 1)
    except AspaceError:
        return None
    row = rows[0] if rows else None
    return row.text if isinstance(row, Instruction) and row.decoded and row.address == pc else None


@dataclass
class Sharing:
    """The lanes and waves that raised exceptions of one kind."""

    id: str
    description: str
    wave_ids: list[int]
    lanes: int


@dataclass
class ExceptionDetail:
    """One wave's exception, with what a triage needs around it."""

    raised: RaisedException
    instruction_pc: int              # the faulting instruction's runtime address (error PC, else the PC)
    instruction: str | None          # its text (disassemble_at), None when there is no disassembler
    symbol: str | None               # `function+0x40`
    source: str | None               # `fault.hip:12`
    function: str | None
    stopped_pc: int | None           # where the lanes stand when that is not the instruction (NVIDIA)
    same: Sharing                    # every lane and wave that raised this kind
    others: list[Sharing] = field(default_factory=list)  # the other kinds the dump records
    from_stop_only: bool = False     # the format records no detail: built from the stop's description
    # (function, `file:line`) of each level of the instruction's inline chain, innermost first, as `nvdisasm -gi`
    # and `llvm-symbolizer --inlining` list them; empty when it is in no inlined code
    chain: list[tuple[str, str | None]] = field(default_factory=list)
    addresses: AccessAddresses | None = None  # each lane's address at the instruction, when it accesses memory
    addresses_error: str | None = None        # why they could not be worked out


class Exceptions(Part):
    def __init__(self, programs: Programs, focus: Focus, frames: Frames, disassemble: Callable[[int], str | None],
                 addresses: Callable[[object, int, str], AccessAddresses | None]):
        super().__init__(programs)
        self.focus = focus
        self.frames = frames
        self._disassemble = disassemble
        self._addresses = addresses
        self._raised: list[RaisedException] | None = None

    def raised(self) -> list[RaisedException]:
        """Every exception the dump records, the stop's own first."""
        if self._raised is None:
            try:
                self._raised = list(self.adapter.exceptions(self.state, self.focus.active_lanes))
            except AspaceError as e:
                self.warnings.append(f"reading the waves' exceptions: {e}")
                self._raised = []
        return self._raised

    def stop_wave(self) -> int:
        """The wave the dump stopped in: the dump's own focus, else its first wave."""
        return self.state.focus.wave if self.state.focus is not None else self.state.waves[0].id

    def stop_waves(self) -> list[int]:
        """The waves the dump's stop belongs to: for an exception, every wave that raised the stop's
        own exception (the kind the format records first), else the wave the dump stopped in."""
        first = self.stop_wave()
        stop = self.state.stop
        if stop is None or stop.reason != "exception":
            return [first]
        raised = self.raised()
        if not raised:
            return [first]
        kind = raised[0].kind
        return sorted({r.wave for r in raised if r.kind == kind})

    def detail(self, wave_id: int | None = None) -> ExceptionDetail | None:
        """The exception wave `wave_id` (the focused wave by default) raised; None when it raised none."""
        wave = self.focus.wave(wave_id)
        raised = self.raised()
        own = [r for r in raised if r.wave == wave.id]
        mine = next((r for r in own if r.lanes[self.focus.focus_lane]), own[0] if own else None)
        from_stop = False
        if mine is None:
            stop = self.state.stop
            if stop is None or stop.reason != "exception" or raised or wave.id != self.stop_wave():
                return None
            mine = RaisedException("GPU exception", stop.description or "exception", wave.id,
                                   self.focus.active_lanes(wave).copy(), pc=stop.pc)
            raised, from_stop = [mine], True
        pc = mine.pc if mine.pc is not None else self._lane_pc(wave)
        groups: dict[tuple[str, str], tuple[list[int], int]] = {}
        for r in raised:
            ids, lanes = groups.get(r.kind, ([], 0))
            if r.wave not in ids:
                ids.append(r.wave)
            groups[r.kind] = (ids, lanes + int(np.count_nonzero(r.lanes)))
        sharing = {kind: Sharing(kind[0], kind[1], sorted(ids), lanes) for kind, (ids, lanes) in groups.items()}
        function, symbol, source = self._place(wave, pc)
        stopped = self._lane_pc(wave)
        text = self._disassemble(pc) if pc is not None else None
        detail = ExceptionDetail(mine, pc, text, symbol, source, function, stopped if stopped != pc else None,
                                 sharing[mine.kind], [s for kind, s in sharing.items() if kind != mine.kind], from_stop)
        detail.chain = self._chain(wave, pc, source)
        if text is not None:
            try:
                detail.addresses = self._addresses(wave, pc, text)
            except AspaceError as exc:  # the exception's own words stay whatever this says
                detail.addresses_error = str(exc)
        return detail

    def _lane_pc(self, wave) -> int | None:
        try:
            pc = self.frames.lane_pc(wave, self.focus.focus_lane)
        except AspaceError:
            pc = None
        return wave.pc if pc is None else pc

    def _chain(self, wave, pc: int | None, source: str | None) -> list[tuple[str, str | None]]:
        """The inline chain at a runtime address: each level's function where the level inside it was
        inlined (the innermost at the address's own line)."""
        if pc is None:
            return []
        try:
            program = self.programs.program_for(wave)
        except AspaceError:
            return []
        infos = program.index.frames_at(program.elf_pc(pc)) if program.index is not None else []
        if len(infos) < 2:
            return []
        chain, at = [], source
        for info in infos:
            chain.append((info.function, at))
            at = f"{Path(info.call_file).name}:{info.call_line}" if info.call_file and info.call_line else None
        return chain

    def _place(self, wave, pc: int | None) -> tuple[str | None, str | None, str | None]:
        """(function, `symbol+0xoffset`, `file:line`) of a runtime address in the wave's code."""
        if pc is None:
            return None, None, None
        try:
            program = self.programs.program_for(wave)
        except AspaceError:
            return None, None, None
        elf_pc = program.elf_pc(pc)
        symbol = program.code_object.function_symbol_at(elf_pc) if program.code_object is not None else None
        at = f"{function_name(symbol.name)}+{elf_pc - symbol.value:#x}" if symbol is not None else None
        index = program.index
        infos = index.frames_at(elf_pc) if index is not None else []
        line = index.line_for_pc(elf_pc) if index is not None else None
        source = f"{Path(line.file).name}:{line.line}" if line is not None and line.file and line.line else None
        return (infos[0].function if infos else function_name(symbol.name) if symbol is not None else None), at, source
