"""Disassembly: the machine code of the loaded programs, decoded by the vendor's own tool.

Owns the decoded instructions. A code object's executable sections are cut into units at its function
symbols; the first time an instruction of a unit is asked for, the adapter's disassembler (LLVM's MC
for AMD, nvdisasm, IGA: adapters/<vendor>/disassembler.py) decodes it in one run, and may answer the
whole object at once; the text is kept for the session. Where the decoder is missing, the unit's bytes
are shown in rows of the family's shortest instruction, each saying which package provides it.

Addresses here are runtime addresses (a program's load address added). A row is an Instruction, or an
Invalid where there is no code (before the first or after the last instruction of a code object, or an
address no loaded program holds). The front ends (the DAP `disassemble` request, the REPL's `x/i` and
`disassemble`, exception details) all ask:

    instructions(address, count, offset=0)   `count` rows from the `offset`-th instruction (negative:
                                             before) around the one holding `address`
    around(address, before, after)           the same as before + 1 + after rows
    holding(address)                         the instruction whose bytes hold `address` (a PC inside one:
                                             every view marks that instruction and says so)
    function_at(address)                     the function holding `address`: name and runtime range
    function_instructions(address)           every instruction of that function
    address_of(name)                         a function's runtime start, by ELF symbol or DWARF name
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..adapters.base import DecodedInstruction, DisassemblerMissing
from ..errors import AspaceError
from ..names import display_name
from .focus import Focus
from .programs import Part, Program, Programs
from .sources import Sources

SHF_EXECINSTR = 0x4
MAX_INSTRUCTIONS = 100_000  # rows of one answer


@dataclass(frozen=True)
class Instruction:
    address: int  # runtime
    size: int
    data: bytes | None  # the code object's bytes; None where its file holds none
    text: str  # as the vendor's tool prints it; where it could not run, why
    symbol: str | None  # the function symbol (ELF; DWARF's name where the ELF has none)
    offset: int  # bytes from the symbol's start
    file: str | None = None  # the line table's row for this address (mapped like every source path)
    line: int | None = None
    column: int | None = None
    decoded: bool = True  # False: the decoder is missing and `text` says which package provides it

    @property
    def where(self) -> str | None:
        """`settle+0x10` (`settle` at offset 0), None without a symbol."""
        if self.symbol is None:
            return None
        return f"{self.symbol}+0x{self.offset:x}" if self.offset else self.symbol

    @property
    def display_where(self) -> str | None:
        """`where` with the symbol as people read it (`app::scatter_kernel<float, 4>+0x10`): the
        Disassembly View's label; gdb's `x/i` keeps the mangled symbol (`print asm-demangle` is off)."""
        if self.symbol is None:
            return None
        name = display_name(self.symbol)
        return f"{name}+0x{self.offset:x}" if self.offset else name


@dataclass(frozen=True)
class Invalid:
    """A row where there is no instruction: outside a program's code. `address` None below address 0."""

    address: int | None
    text: str = "??"


@dataclass
class Function:
    name: str  # DWARF's name where the debug info has one, else the symbol
    symbol: str  # what `<symbol+offset>` says
    start: int  # runtime
    end: int
    program: Program


@dataclass
class _Code:
    """One code object's executable bytes: its units and what was decoded of them."""

    code_object: object
    units: list[tuple[int, int]]  # ELF [start, end), ascending, not overlapping
    starts: list[int]
    sections: list[tuple[int, int, bytes]]  # the executable sections' [start, end) and bytes
    decoded: dict[int, list[DecodedInstruction]] = field(default_factory=dict)  # unit index -> instructions
    addresses: dict[int, list[int]] = field(default_factory=dict)
    rows: dict[tuple[int, int, int], "Instruction"] = field(default_factory=dict)  # (load address, unit, index)


class Disassembly(Part):
    def __init__(self, programs: Programs, focus: Focus, sources: Sources):
        super().__init__(programs)
        self.focus = focus
        self.sources = sources
        self._codes: dict[int, _Code] = {}  # id(code object) -> its units and decoded text
        self.decoder_runs = 0  # how many times the vendor's tool ran (benchmarks and tests read it)

    # ------------------------------------------------------------------ public

    def instructions(self, address: int, count: int, offset: int = 0) -> list[Instruction | Invalid]:
        """`count` rows starting `offset` instructions from the one holding `address` (negative: before
        it; AMD and Intel instructions have several sizes, so earlier ones are found by decoding from
        the start of the function)."""
        if not 0 <= count <= MAX_INSTRUCTIONS:
            raise AspaceError(f"{count} instructions: ask for 0 to {MAX_INSTRUCTIONS} at a time")
        program, elf = self._locate(address)
        step = self._min_size()
        if program is None:
            return [self._invalid(address + j * step) for j in range(offset, offset + count)]
        code = self._code(program.code_object)
        anchor = self._position(code, elf)
        before = self._walk(code, anchor, -1, max(0, -offset)) if offset < 0 else []
        after = [anchor] + self._walk(code, anchor, 1, max(0, offset + count - 1))
        rows: list[Instruction | Invalid] = []
        for j in range(offset, offset + count):
            if j < 0 and -j <= len(before):
                rows.append(self._instruction(program, code, before[-j - 1]))
            elif j < 0:
                first = self._insn(code, before[-1] if before else anchor)
                rows.append(self._invalid(program.load_address + first.address - (-j - len(before)) * step))
            elif j < len(after):
                rows.append(self._instruction(program, code, after[j]))
            else:
                last = self._insn(code, after[-1])
                rows.append(self._invalid(program.load_address + last.address + last.size + (j - len(after)) * step))
        return rows

    def holding(self, address: int) -> Instruction | None:
        """The instruction whose bytes hold `address`, as the decoder cut the whole unit from its start (a
        PC inside a 16-byte Intel instruction belongs to that instruction); None where there is no code."""
        row = self.instructions(address, 1)[0]
        if isinstance(row, Instruction) and row.address <= address < row.address + row.size:
            return row
        return None

    def around(self, address: int, before: int, after: int) -> list[Instruction | Invalid]:
        return self.instructions(address, before + 1 + after, -before)

    def function_at(self, address: int) -> Function | None:
        """The function holding a runtime address: its ELF symbol's range, else its DWARF ranges."""
        program, elf = self._locate(address)
        if program is None:
            return None
        co = program.code_object
        sym = co.function_symbol_at(elf)
        infos = program.index.frames_at(elf) if program.index is not None else []
        name = infos[-1].function if infos else None
        if sym is not None and sym.type == "FUNC" and sym.size:
            return Function(name or sym.name, sym.name, program.load_address + sym.value,
                            program.load_address + sym.value + sym.size, program)
        if infos and infos[-1].ranges:
            ranges = infos[-1].ranges
            lo, hi = next(((lo, hi) for lo, hi in ranges if lo <= elf < hi), (min(r[0] for r in ranges), 0))
            hi = hi or max(r[1] for r in ranges)
            return Function(name, name, program.load_address + lo, program.load_address + hi, program)
        return None

    def function_instructions(self, address: int) -> tuple[Function, list[Instruction]]:
        """Every instruction of the function holding `address`, in address order."""
        function = self.function_at(address)
        if function is None:
            raise AspaceError(f"no function contains 0x{address:x}")
        program = function.program
        code = self._code(program.code_object)
        lo, hi = function.start - program.load_address, function.end - program.load_address
        self._prefetch(code, lo, hi)
        out: list[Instruction] = []
        for ui, (start, end) in enumerate(code.units):
            if end <= lo or start >= hi:
                continue
            for i, insn in enumerate(self._decoded(code, ui)):
                if lo <= insn.address < hi:
                    out.append(self._instruction(program, code, (ui, i)))
            if len(out) > MAX_INSTRUCTIONS:
                raise AspaceError(f"{function.name} has more than {MAX_INSTRUCTIONS} instructions")
        return function, out

    def address_of(self, name: str) -> int | None:
        """The runtime start of the function `name`: an ELF symbol (also a mangled one, `_Z6settlefii`
        for `settle`), else a DWARF subprogram; the focused wave's program first."""
        mangled = f"_Z{len(name)}{name}"  # the Itanium ABI's name of a function outside namespaces
        for program in self._candidates():
            co = program.code_object
            sym = co.symbols.get(name)
            if sym is not None and sym.type == "FUNC":
                return program.load_address + sym.value
            for sym in co.symbols.values():
                if sym.type == "FUNC" and sym.name.startswith(mangled):
                    return program.load_address + sym.value
            if program.index is not None:
                ranges = program.index.function_ranges(name)
                if ranges:
                    return program.load_address + min(lo for lo, _ in ranges)
        return None

    # ------------------------------------------------------------------ where code is

    def _candidates(self) -> list[Program]:
        first = []
        try:
            first = [self.programs.program_for(self.focus.wave())]
        except AspaceError:
            pass
        return first + [p for p in self.programs.loaded() if all(p is not f for f in first)]

    def _locate(self, address: int) -> tuple[Program | None, int]:
        for program in self._candidates():
            elf = address - program.load_address
            code = self._code(program.code_object)
            if self._unit_index(code, elf) is not None:
                return program, elf
        return None, address

    def _code(self, co) -> _Code:
        code = self._codes.get(id(co))
        if code is None or code.code_object is not co:
            code = self._codes[id(co)] = _Code(co, *self._units(co))
        return code

    @staticmethod
    def _units(co) -> tuple[list[tuple[int, int]], list[int], list[tuple[int, int, bytes]]]:
        """The executable sections, cut at every function symbol's start and end (and the sections)."""
        units, sections = [], []
        functions = sorted({(value, value + size) for _, value, size, _ in co.symbols_of_types(("FUNC",))})
        for section in co.elf.iter_sections():
            if not section["sh_flags"] & SHF_EXECINSTR or section["sh_type"] == "SHT_NOBITS" \
                    or not section["sh_size"]:
                continue
            lo, hi = section["sh_addr"], section["sh_addr"] + section["sh_size"]
            sections.append((lo, hi, section.data()))
            cuts = {lo, hi} | {a for f in functions for a in f if lo < a < hi}
            cuts = sorted(cuts)
            units += [(a, b) for a, b in zip(cuts, cuts[1:])]
        units.sort()
        return units, [u[0] for u in units], sections

    @staticmethod
    def _unit_index(code: _Code, elf: int) -> int | None:
        i = bisect.bisect_right(code.starts, elf) - 1
        if i >= 0 and code.units[i][0] <= elf < code.units[i][1]:
            return i
        return None

    # ------------------------------------------------------------------ decoding, once per unit

    def _decoded(self, code: _Code, ui: int) -> list[DecodedInstruction]:
        found = code.decoded.get(ui)
        if found is None:
            self._decode(code, ui, ui)
            found = code.decoded[ui]
        return found

    def _prefetch(self, code: _Code, lo: int, hi: int) -> None:
        """Decode the units not decoded yet that hold any of the ELF addresses [lo, hi): one run for
        each stretch of them in one section."""
        first = max(0, bisect.bisect_right(code.starts, lo) - 1)
        group: list[int] = []  # adjacent units of one section, not decoded yet
        for ui in range(first, len(code.units)):
            start, end = code.units[ui]
            if start >= hi:
                break
            if end <= lo or ui in code.decoded:
                continue
            if group and (code.units[group[-1]][1] != start or
                          self._section(code, start) != self._section(code, code.units[group[0]][0])):
                self._decode(code, group[0], group[-1])
                group = []
            group.append(ui)
        if group:
            self._decode(code, group[0], group[-1])

    @staticmethod
    def _section(code: _Code, elf: int) -> int | None:
        return next((i for i, (lo, hi, _) in enumerate(code.sections) if lo <= elf < hi), None)

    def _decode(self, code: _Code, first: int, last: int) -> None:
        """Units first..last (adjacent, in one section) in one run of the vendor's tool."""
        start, end = code.units[first][0], code.units[last][1]
        disassembler = self.adapter.disassembler()
        try:
            if disassembler is None:
                raise DisassemblerMissing(f"no disassembler for {self.adapter.vendor} code")
            self.decoder_runs += 1
            answer = disassembler.decode(code.code_object, start, end)
        except AspaceError as exc:  # the tool is missing or refused: rows say why, nothing else breaks
            step = disassembler.min_size if disassembler is not None else 4
            why = f"<not decoded: {exc}>"
            answer = [DecodedInstruction(a, min(step, end - a), why) for a in range(start, end, step)]
            self._keep(code, range(first, last + 1), answer, decoded=False)
            return
        self._keep(code, range(first, last + 1), answer, decoded=True)

    def _keep(self, code: _Code, units: range, answer: list[DecodedInstruction], decoded: bool) -> None:
        """File every instruction of a decoder's answer under its unit (an answer may cover more units
        than those asked for, which get theirs even when empty)."""
        by_unit: dict[int, list[DecodedInstruction]] = {ui: [] for ui in units}
        for insn in answer:
            i = self._unit_index(code, insn.address)
            if i is not None:
                by_unit.setdefault(i, []).append(
                    insn if decoded else _Undecoded(insn.address, insn.size, insn.text))
        for i, insns in by_unit.items():
            if i not in code.decoded:
                insns.sort(key=lambda x: x.address)
                code.decoded[i] = insns
                code.addresses[i] = [x.address for x in insns]

    def _position(self, code: _Code, elf: int) -> tuple[int, int]:
        """(unit, index) of the instruction holding `elf`, else the next one (the unit's last at its end)."""
        ui = self._unit_index(code, elf)
        if not self._decoded(code, ui):  # nothing decodable here: the nearest unit after it that has code
            found = self._nonempty(code, ui, 1)
            if found is not None:
                return found, 0
            found = self._nonempty(code, ui, -1)
            if found is None:
                raise AspaceError(f"the code at 0x{elf:x} decodes to no instructions")
            return found, len(self._decoded(code, found)) - 1
        insns = self._decoded(code, ui)
        i = bisect.bisect_right(code.addresses[ui], elf) - 1
        if i < 0:
            return ui, 0
        if elf >= insns[i].address + insns[i].size and i + 1 < len(insns):
            return ui, i + 1
        return ui, i

    def _nonempty(self, code: _Code, ui: int, direction: int) -> int | None:
        """The nearest unit after (1) or before (-1) `ui` with instructions."""
        ui += direction
        while 0 <= ui < len(code.units) and not self._decoded(code, ui):
            ui += direction
        return ui if 0 <= ui < len(code.units) else None

    def _walk(self, code: _Code, position: tuple[int, int], direction: int, n: int) -> list[tuple[int, int]]:
        """Up to `n` positions after (direction 1) or before (-1) `position`, nearest first, across units."""
        out = []
        ui, i = position
        while len(out) < n:
            i += direction
            if 0 <= i < len(self._decoded(code, ui)):
                out.append((ui, i))
                continue
            # past this unit: the units the remaining rows can reach, in one run (not one per function)
            reach = (n - len(out)) * self._longest()
            start, end = code.units[ui]
            self._prefetch(code, *((end, end + reach) if direction > 0 else (start - reach, start)))
            ui = self._nonempty(code, ui, direction)
            if ui is None:
                break
            i = -1 if direction > 0 else len(self._decoded(code, ui))
        return out

    @staticmethod
    def _insn(code: _Code, position: tuple[int, int]) -> DecodedInstruction:
        return code.decoded[position[0]][position[1]]

    # ------------------------------------------------------------------ rows

    def _min_size(self) -> int:
        d = self.adapter.disassembler()
        return d.min_size if d is not None else 4

    def _longest(self) -> int:
        d = self.adapter.disassembler()
        return d.max_size if d is not None else 4

    @staticmethod
    def _invalid(address: int) -> Invalid:
        return Invalid(address if address >= 0 else None)

    def _instruction(self, program: Program, code: _Code, position: tuple[int, int]) -> Instruction:
        key = (program.load_address, *position)
        row = code.rows.get(key)
        if row is None:
            row = code.rows[key] = self._row(program, code, position)
        return row

    def _row(self, program: Program, code: _Code, position: tuple[int, int]) -> Instruction:
        insn = self._insn(code, position)
        symbol, start = self._symbol(program, insn.address)
        line = program.index.line_for_pc(insn.address) if program.index is not None else None
        file = self.sources.map_source(line.file) if line is not None and line.line else None
        return Instruction(program.load_address + insn.address, insn.size, self._bytes(code, insn.address, insn.size),
                           insn.text, symbol, insn.address - start if symbol is not None else 0, file,
                           line.line if file else None, (line.column or None) if file else None,
                           not isinstance(insn, _Undecoded))

    @staticmethod
    def _bytes(code: _Code, elf: int, size: int) -> bytes | None:
        """The code section's own bytes (a cubin's other sections may share its addresses)."""
        for lo, hi, data in code.sections:
            if lo <= elf and elf + size <= hi:
                return data[elf - lo:elf - lo + size]
        return None

    @staticmethod
    def _symbol(program: Program, elf: int) -> tuple[str | None, int]:
        sym = program.code_object.function_symbol_at(elf)
        if sym is not None and sym.type == "FUNC":
            return sym.name, sym.value
        infos = program.index.frames_at(elf) if program.index is not None else []
        if infos and infos[-1].low_pc is not None:
            ranges = infos[-1].ranges
            start = next((lo for lo, hi in ranges if lo <= elf < hi), infos[-1].low_pc)
            return infos[-1].function, start
        return None, 0


class _Undecoded(DecodedInstruction):
    """A row of bytes the decoder could not decode (missing, or refused): its text says why."""
