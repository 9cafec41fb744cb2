"""One device code object: its ELF, target, metadata, kernels and symbols."""

from __future__ import annotations

from collections.abc import Mapping

import bisect
import io
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from elftools.common.exceptions import ELFError
from elftools.construct import ConstructError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from aspace_dap.errors import CodeObjectError

from .descriptor import KERNEL_DESCRIPTOR_SIZE, KernelDescriptor
from .elfflags import EM_AMDGPU, ELFOSABI_AMDGPU_HSA, HSA_ABI_VERSION_OFFSET, decode_device_target, gfx_major
from .metadata import (
    AMDGPU_NOTE_OWNER,
    NT_AMDGPU_METADATA,
    KernelInfo,
    decode_metadata,
    kernels_from_metadata,
    parse_notes,
)

# What pyelftools raises on malformed input, besides its own ELFError.
ELF_PARSE_ERRORS = (ELFError, ConstructError, struct.error, ValueError, IndexError, KeyError,
                    UnicodeDecodeError, OverflowError, TypeError)

STT_AMDGPU_HSA_KERNEL = 10  # code object v2's kernel symbols
AMD_KERNEL_CODE_T_SIZE = 256  # the v2 kernel header before the code
SHT_NOBITS = "SHT_NOBITS"
SHT_NOTE = "SHT_NOTE"
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: str  # "FUNC", "OBJECT", "NOTYPE", "SECTION", "FILE", ...
    binding: str = "GLOBAL"  # "LOCAL", "GLOBAL", "WEAK"
    section: int | None = None  # st_shndx: the section the symbol is defined in

    def contains(self, address: int) -> bool:
        return self.value <= address < self.value + max(self.size, 1)


@dataclass(frozen=True)
class _LoadedSection:
    start: int
    end: int
    file_offset: int
    nobits: bool


class _SectionCachingELFFile(ELFFile):
    """pyelftools parses a section's header and builds its object again on every lookup (by index,
    by name, while iterating); a code object's bytes never change, so each is built once.

    `relocations_applied`: the bytes of a relocatable object whose relocations were applied on load
    (the DWARF readers must not apply them again)."""

    relocations_applied = False

    def get_section(self, n, type=None):
        cache = self.__dict__.setdefault("_built_sections", {})
        section = cache.get(n)
        if section is None:
            section = cache[n] = super().get_section(n)
        if type and section.header.sh_type not in type:
            raise ELFError(f"Unexpected section type {section.header['sh_type']}, expected {type}")
        return section


def open_elf(data: bytes, where: str) -> ELFFile:
    """An ELFFile over `data` whose headers have been checked against the buffer size."""
    if not data.startswith(b"\x7fELF"):
        raise CodeObjectError(f"{where}: not an ELF file")
    header_size = 64 if data[4:5] == b"\x02" else 52  # EI_CLASS: ELFCLASS64 or ELFCLASS32
    if len(data) < header_size:
        raise CodeObjectError(f"{where}: ELF header is truncated ({len(data)} of {header_size} bytes)")
    try:
        elf = _SectionCachingELFFile(io.BytesIO(data))
        table_end = elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"]
        if table_end > len(data):
            raise CodeObjectError(
                f"{where}: section header table ends at {table_end}, past the end of the "
                f"{len(data)}-byte file (truncated?)"
            )
        for index in range(elf.num_sections()):
            header = elf.get_section(index).header
            if header["sh_type"] != SHT_NOBITS and header["sh_offset"] + header["sh_size"] > len(data):
                raise CodeObjectError(
                    f"{where}: section {index} [{header['sh_offset']}, +{header['sh_size']}) "
                    f"lies past the end of the {len(data)}-byte file (truncated?)"
                )
    except ELF_PARSE_ERRORS as exc:
        raise CodeObjectError(f"{where}: malformed ELF: {exc}") from exc
    return elf


def raw_machine(data: bytes, where: str) -> int:
    """e_machine as a number (pyelftools turns known values into names, unknown ones stay ints)."""
    if len(data) < 20:
        raise CodeObjectError(f"{where}: ELF header is truncated")
    order = ">" if data[5] == 2 else "<"  # EI_DATA: 2 is big endian
    return struct.unpack_from(f"{order}H", data, 18)[0]


_SYM64 = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                   ("size", "<u8")])
_STT = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS"}
_STB = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK"}


_TYPES = [_STT.get(i) or str(i) for i in range(16)]
_BINDS = [_STB.get(i) or str(i) for i in range(16)]


class _SymbolTable(Mapping):
    """Symbols by name, from raw (value, size, st_info) rows; each Symbol is built on first access."""

    def __init__(self, rows: dict[str, tuple[int, int, int, int]]):
        self._rows = rows
        self._made: dict[str, Symbol] = {}

    def __getitem__(self, name: str) -> Symbol:
        symbol = self._made.get(name)
        if symbol is None:
            value, size, info, shndx = self._rows[name]
            symbol = self._made[name] = Symbol(name, value, size, _TYPES[info & 0xF], _BINDS[info >> 4], shndx)
        return symbol

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, name) -> bool:
        return name in self._rows

    def of_types(self, types) -> list[tuple[str, int, int, int | None]]:
        """(name, value, size, section) of the symbols of these types, without building a Symbol for
        each (a code object of 20,000 functions)."""
        made = self._made
        out = []
        for name, (value, size, info, shndx) in self._rows.items():
            if name in made:
                sym = made[name]
                if sym.type in types:
                    out.append((name, sym.value, sym.size, sym.section))
            elif _TYPES[info & 0xF] in types:
                out.append((name, value, size, shndx))
        return out


class CodeObject:
    """A device ELF. Everything except DWARF is parsed eagerly so bad input fails at load."""

    def __init__(self, data: bytes, name: str, *, relocated: bool = False):
        self.name = name
        self.data = bytes(data)
        self.container_header = b""  # what wrapped the ELF in its file (ocloc's debug-file header)
        self.load_warnings: list[str] = []  # what loading had to read leniently (the user is told)
        # a relocatable object (`.o`) laid out and relocated by the loader: its addresses are its own
        # layout's (code from 0), not a linked code object's
        self.relocated = relocated
        self.elf = open_elf(self.data, name)
        self.elf.relocations_applied = relocated
        try:
            header = self.elf.header
            self.e_machine: int = raw_machine(self.data, name)
            self.e_flags: int = header["e_flags"]
            self.e_type: str = header["e_type"]
            self.os_abi: int = self.data[7]  # EI_OSABI, raw: pyelftools names only some values
            self.abi_version: int = header["e_ident"]["EI_ABIVERSION"]
            target = decode_device_target(self.e_machine, self.e_flags, self.os_abi, self.abi_version)
            self.vendor: str = target.vendor
            self.processor: str = target.processor
            self.xnack: str = target.xnack
            self.sramecc: str = target.sramecc
            self.generic_version: int = target.generic_version
            self._sections = {s.name: s for s in self.elf.iter_sections() if s.name}
            self._loaded = self._loaded_sections()
            self.symbols: dict[str, Symbol] = self._read_symbols()
            if self.e_machine == EM_AMDGPU:
                self._v2_kernel_symbols()
            self.metadata: dict[str, Any] = self._read_metadata()
        except ELF_PARSE_ERRORS as exc:
            raise CodeObjectError(f"{name}: malformed ELF: {exc}") from exc
        self._by_address: list[Symbol] | None = None  # sorted on the first symbol_at
        self._functions: tuple[list, list[int], list[int]] | None = None  # sorted on the first function_symbol_at
        self.kernels: list[KernelInfo] = self._read_kernels()
        self._dwarf = None

    def __repr__(self) -> str:
        return f"CodeObject({self.name!r}, {self.vendor} {self.processor}, {len(self.kernels)} kernels)"

    # Target facts
    @property
    def code_object_version(self) -> int | None:
        """AMDHSA code object version (2..6), None for other OS ABIs and vendors."""
        if self.e_machine != EM_AMDGPU or self.os_abi != ELFOSABI_AMDGPU_HSA:
            return None
        return self.abi_version + HSA_ABI_VERSION_OFFSET

    @property
    def target_id(self) -> str:
        """"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" from metadata, else built from e_flags."""
        target = self.metadata.get("amdhsa.target")
        if isinstance(target, str):
            return target
        features = "".join(
            f":{name}{'+' if state == 'on' else '-'}"
            for name, state in (("sramecc", self.sramecc), ("xnack", self.xnack))
            if state in ("on", "off")
        )
        return f"{self.processor}{features}"

    @property
    def wavefront_size(self) -> int:
        """Wave width the kernels run at; GFX10+ defaults to 32, older GPUs only have 64."""
        sizes = {k.wavefront_size for k in self.kernels}
        if len(sizes) == 1:
            return sizes.pop()
        if self.vendor == "nvidia":
            return 32
        major = gfx_major(self.processor)
        return 32 if major is not None and major >= 10 else 64

    # Bytes
    def section_data(self, name: str) -> bytes | None:
        section = self._sections.get(name)
        if section is None or section["sh_type"] == SHT_NOBITS:
            return None
        start = section["sh_offset"]
        return self.data[start : start + section["sh_size"]]

    def read_memory(self, address: int, size: int) -> bytes | None:
        """Bytes of the loaded image at a virtual address; None if not backed by file data."""
        for loaded in self._loaded:
            if loaded.start <= address and address + size <= loaded.end:
                if loaded.nobits:
                    return None
                offset = loaded.file_offset + (address - loaded.start)
                return self.data[offset : offset + size]
        return None

    def text_range(self) -> tuple[int, int] | None:
        text = self._sections.get(".text")
        if text is None:
            return None
        return text["sh_addr"], text["sh_addr"] + text["sh_size"]

    # Symbols
    def _sort_symbols(self) -> None:
        self._by_address = sorted(
            (s for s in self.symbols.values() if s.type in ("FUNC", "OBJECT")),
            key=lambda s: (s.value, s.type != "FUNC"),
        )
        self._starts = [s.value for s in self._by_address]
        self._max_end = []
        running = 0
        for sym in self._by_address:
            running = max(running, sym.value + max(sym.size, 1))
            self._max_end.append(running)

    def symbol_at(self, address: int) -> Symbol | None:
        """The function or object symbol covering `address` (functions win ties)."""
        if self._by_address is None:
            self._sort_symbols()
        index = bisect.bisect_right(self._starts, address) - 1
        while index >= 0 and self._max_end[index] > address:
            candidate = self._by_address[index]
            if candidate.contains(address):
                # Walk back to the first symbol at this start so FUNC wins over OBJECT aliases.
                while index > 0 and self._by_address[index - 1].value == candidate.value:
                    index -= 1
                    if self._by_address[index].contains(address):
                        candidate = self._by_address[index]
                return candidate
            index -= 1
        return None

    FUNCTION_TYPES = ("FUNC",)  # symbol types that name code

    def symbols_of_types(self, types) -> list[tuple[str, int, int, int | None]]:
        """(name, value, size, section) of the symbols of these types (Symbol.type's words), without
        making a Symbol of each."""
        if isinstance(self.symbols, _SymbolTable):
            return self.symbols.of_types(types)
        return [(name, sym.value, sym.size, sym.section) for name, sym in self.symbols.items() if sym.type in types]

    def function_symbol_at(self, address: int) -> Symbol | None:
        """The function symbol covering a code address, from the function symbols defined in the
        executable section that holds the address (the innermost where one function's range holds
        another's). A cubin's sections all start at 0 until laid out, and its data sections stay
        there: a data object may cover the same number as code, and never names it."""
        if self._functions is None:
            executable = {}
            for index, section in enumerate(self.elf.iter_sections()):
                if section["sh_flags"] & SHF_EXECINSTR and section["sh_size"]:
                    executable[index] = (section["sh_addr"], section["sh_addr"] + section["sh_size"])
            functions = []  # (value, size, name, (section start, end))
            for name, value, size, section in self.symbols_of_types(self.FUNCTION_TYPES):
                held = executable.get(section) if section is not None else None
                if held is not None and held[0] <= value < held[1]:
                    functions.append((value, size, name, held))
            functions.sort(key=lambda f: (f[0], -f[1]))
            reach, running = [], 0  # the highest end of functions[0..i]: where walking back may stop
            for value, size, _, _ in functions:
                running = max(running, value + max(size, 1))
                reach.append(running)
            self._functions = (functions, [f[0] for f in functions], reach)
        functions, starts, reach = self._functions
        i = bisect.bisect_right(starts, address) - 1
        while i >= 0 and reach[i] > address:
            value, size, name, (low, high) = functions[i]
            if low <= address < high and (value <= address < value + size if size else address == value):
                return self.symbols[name]
            i -= 1
        return None

    def kernel(self, name: str) -> KernelInfo | None:
        for kernel in self.kernels:
            if name in (kernel.name, kernel.symbol):
                return kernel
        return None

    def kernel_at(self, address: int) -> KernelInfo | None:
        """The kernel whose code starts at `address`: its descriptor's entry, or its code symbol."""
        for kernel in self.kernels:
            symbol = self.symbols.get(kernel.name)
            if kernel.entry_address == address or (symbol is not None and symbol.type == "FUNC"
                                                   and symbol.value == address):
                return kernel
        return None

    # DWARF
    def has_dwarf(self) -> bool:
        return ".debug_info" in self._sections

    def has_line_tables(self) -> bool:
        """A .debug_line with something in it: all a line-tables-only build (nvcc -lineinfo) has."""
        return bool(self.section_data(".debug_line"))

    def dwarf_info(self):
        """pyelftools DWARFInfo, parsed on first use (relocations are already applied in linked objects
        and in relocatable ones the loader relocated)."""
        if self._dwarf is None:
            if not self.has_dwarf():
                raise CodeObjectError(f"{self.name}: has no DWARF (.debug_info missing)")
            try:
                relocate = self.e_type == "ET_REL" and not self.relocated
                self._dwarf = self.elf.get_dwarf_info(relocate_dwarf_sections=relocate)
            except ELF_PARSE_ERRORS as exc:
                raise CodeObjectError(f"{self.name}: malformed DWARF sections: {exc}") from exc
        return self._dwarf

    # Parsing helpers
    def _loaded_sections(self) -> list[_LoadedSection]:
        loaded = []
        for section in self.elf.iter_sections():
            if section["sh_flags"] & SHF_ALLOC and section["sh_size"]:
                loaded.append(
                    _LoadedSection(
                        section["sh_addr"],
                        section["sh_addr"] + section["sh_size"],
                        section["sh_offset"],
                        section["sh_type"] == SHT_NOBITS,
                    )
                )
        return loaded

    def _read_symbols(self) -> dict[str, Symbol]:
        if self.elf.elfclass == 64 and self.elf.little_endian:
            return self._read_symbols_fast()
        symbols: dict[str, Symbol] = {}
        for section in self.elf.iter_sections():
            if not isinstance(section, SymbolTableSection):
                continue
            for sym in section.iter_symbols():
                if not sym.name or sym.name in symbols:
                    continue  # .dynsym repeats .symtab entries
                kind = sym["st_info"]["type"]
                bind = sym["st_info"]["bind"]
                symbols[sym.name] = Symbol(
                    sym.name,
                    sym["st_value"],
                    sym["st_size"],
                    kind[4:] if isinstance(kind, str) and kind.startswith("STT_") else str(kind),
                    bind[4:] if isinstance(bind, str) and bind.startswith("STB_") else str(bind),
                    sym["st_shndx"] if isinstance(sym["st_shndx"], int) else None,
                )
        return symbols

    def _read_symbols_fast(self) -> Mapping[str, Symbol]:
        """ELF64 little-endian symbol tables read as one numpy record array each.

        Big code objects carry tens of thousands of symbols; pyelftools parses
        them one object at a time, which costs a second on 20,000 entries.
        The Symbol objects are made when asked for.
        """
        rows: dict[str, tuple[int, int, int, int]] = {}
        for section in self.elf.iter_sections():
            if not isinstance(section, SymbolTableSection):
                continue
            offset, size = section["sh_offset"], section["sh_size"]
            if section["sh_entsize"] != _SYM64.itemsize or offset + size > len(self.data):
                raise CodeObjectError(f"{self.name}: symbol table {section.name} is malformed")
            table = np.frombuffer(self.data, _SYM64, size // _SYM64.itemsize, offset)
            strtab = self.elf.get_section(section["sh_link"])
            str_off, str_size = strtab["sh_offset"], strtab["sh_size"]
            if str_off + str_size > len(self.data):
                raise CodeObjectError(f"{self.name}: string table of {section.name} is truncated")
            strings = self.data[str_off:str_off + str_size]
            # names end at the next NUL: found for all symbols at once
            nuls = np.flatnonzero(np.frombuffer(strings, np.uint8) == 0)
            starts = table["name"].astype(np.int64)
            keep = (starts != 0) & (starts < len(strings))
            starts = starts[keep]
            at = np.searchsorted(nuls, starts)
            ends = np.where(at < len(nuls), nuls[np.minimum(at, len(nuls) - 1)] if len(nuls) else 0, len(strings))
            names = [strings[a:b].decode("utf-8", "replace") for a, b in zip(starts.tolist(), ends.tolist())]
            for name, row in zip(names, zip(table["value"][keep].tolist(), table["size"][keep].tolist(),
                                            table["info"][keep].tolist(), table["shndx"][keep].tolist())):
                if name and name not in rows:  # .dynsym repeats .symtab entries
                    rows[name] = row
        return _SymbolTable(rows)

    def _v2_kernel_symbols(self) -> None:
        """Code object v2 kernels are STT_AMDGPU_HSA_KERNEL (10) symbols at their 256-byte amd_kernel_code_t,
        whose kernel_code_entry_byte_offset (an i64 at byte 16) says where the code starts: each becomes a
        function symbol over its code, so frames and disassembly name it."""
        for name, *_ in self.symbols_of_types((str(STT_AMDGPU_HSA_KERNEL), "LOOS")):
            sym = self.symbols[name]
            header = self.read_memory(sym.value, AMD_KERNEL_CODE_T_SIZE)
            entry = struct.unpack_from("<q", header, 16)[0] if header is not None else AMD_KERNEL_CODE_T_SIZE
            if not 0 < entry < (sym.size or entry + 1):
                entry = AMD_KERNEL_CODE_T_SIZE
            fixed = Symbol(name, sym.value + entry, max(sym.size - entry, 0), "FUNC", sym.binding, sym.section)
            if isinstance(self.symbols, _SymbolTable):
                self.symbols._made[name] = fixed
            else:
                self.symbols[name] = fixed

    def _read_metadata(self) -> dict[str, Any]:
        if self.e_machine != EM_AMDGPU:
            return {}
        for section in self.elf.iter_sections():
            if section["sh_type"] != SHT_NOTE:
                continue
            where = f"{self.name}: note section {section.name}"
            for note in parse_notes(self.section_data(section.name) or b"", where):
                if note.owner == AMDGPU_NOTE_OWNER and note.note_type == NT_AMDGPU_METADATA:
                    return decode_metadata(note.desc, where)
        return {}

    def _read_kernels(self) -> list[KernelInfo]:
        kernels = []
        for kernel, descriptor_symbol in kernels_from_metadata(self.metadata, self.name):
            symbol = self.symbols.get(descriptor_symbol)
            if symbol is not None:
                raw = self.read_memory(symbol.value, KERNEL_DESCRIPTOR_SIZE)
                if raw is None:
                    raise CodeObjectError(
                        f"{self.name}: kernel descriptor {descriptor_symbol} at 0x{symbol.value:x} "
                        f"is not inside a loaded section"
                    )
                kernel.descriptor = KernelDescriptor.parse(raw, symbol.value)
            kernels.append(kernel)
        return kernels
