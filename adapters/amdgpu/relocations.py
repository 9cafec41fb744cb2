"""AMDGPU relocatable objects (`.o`, ELF type ET_REL): laid out and relocated before anything reads them.

What `-fhip-emit-relocatable`, `-save-temps` and build systems leave behind is the code object
before the linker: every section at address 0, and the DWARF naming code, strings and other DWARF
sections only through `Elf64_Rela` records. `relocate_object` does the part of a link a debugger
needs, on a copy of the bytes:

- the allocated sections get addresses: the executable ones first, from 0, one after the other in
  section order, each at its own alignment (as a linker concatenates them into `.text`, so the
  code's addresses are the offsets `llvm-objdump` and `llvm-dwarfdump` print for a `.o` with one
  `.text`, and a linked code object's are these plus where its `.text` starts), then the data;
- every symbol defined in one of them moves by its section's address (a section symbol becomes
  the section's address; those of the DWARF sections stay 0, so DWARF offsets stay offsets);
- every relocation is applied by AMDGPU's rules (LLVM's ELFRelocs/AMDGPU.def and the
  "AMDGPU ELF Relocation Records" table of AMDGPUUsage): S is the symbol's value, A the addend, P
  the place's address. An undefined symbol counts as 0 in the DWARF, as the linker resolves it
  there (clang's `__shared__` variables are such symbols: a linked code object's DWARF holds 0
  for them too).

The DWARF sections only ever carry absolute values (ABS32 for offsets into other sections, ABS64
for addresses; ABS32_LO/HI are defined as the halves of S + A): any other type there, or a value
that does not fit, is an error naming it, never a silently wrong byte. In code and data, the
static types a link resolves without a GOT are applied too (REL32_LO/HI make calls reach their
callees); GOT-relative and dynamic ones, and references to undefined symbols, keep the
compiler's bytes, as a disassembler of the `.o` shows them.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

import numpy as np

from aspace_dap.codeobj.sections import Section, section_table
from aspace_dap.errors import CodeObjectError

EM_AMDGPU = 224
ET_REL = 1

SHT_SYMTAB = 2
SHT_RELA = 4
SHT_NOBITS = 8
SHT_REL = 9
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_ABS = 0xFFF1
SHN_XINDEX = 0xFFFF
STB_WEAK = 2

R_AMDGPU_NONE = 0
R_AMDGPU_ABS32_LO = 1
R_AMDGPU_ABS32_HI = 2
R_AMDGPU_ABS64 = 3
R_AMDGPU_REL32 = 4
R_AMDGPU_REL64 = 5
R_AMDGPU_ABS32 = 6
R_AMDGPU_GOTPCREL = 7
R_AMDGPU_GOTPCREL32_LO = 8
R_AMDGPU_GOTPCREL32_HI = 9
R_AMDGPU_REL32_LO = 10
R_AMDGPU_REL32_HI = 11
R_AMDGPU_RELATIVE64 = 13
R_AMDGPU_REL16 = 14

RELOCATION_NAMES = {
    R_AMDGPU_NONE: "R_AMDGPU_NONE", R_AMDGPU_ABS32_LO: "R_AMDGPU_ABS32_LO", R_AMDGPU_ABS32_HI: "R_AMDGPU_ABS32_HI",
    R_AMDGPU_ABS64: "R_AMDGPU_ABS64", R_AMDGPU_REL32: "R_AMDGPU_REL32", R_AMDGPU_REL64: "R_AMDGPU_REL64",
    R_AMDGPU_ABS32: "R_AMDGPU_ABS32", R_AMDGPU_GOTPCREL: "R_AMDGPU_GOTPCREL",
    R_AMDGPU_GOTPCREL32_LO: "R_AMDGPU_GOTPCREL32_LO", R_AMDGPU_GOTPCREL32_HI: "R_AMDGPU_GOTPCREL32_HI",
    R_AMDGPU_REL32_LO: "R_AMDGPU_REL32_LO", R_AMDGPU_REL32_HI: "R_AMDGPU_REL32_HI",
    R_AMDGPU_RELATIVE64: "R_AMDGPU_RELATIVE64", R_AMDGPU_REL16: "R_AMDGPU_REL16",
}

# bytes written by each type this module applies
_WIDTH = {R_AMDGPU_ABS32_LO: 4, R_AMDGPU_ABS32_HI: 4, R_AMDGPU_ABS64: 8, R_AMDGPU_REL32: 4, R_AMDGPU_REL64: 8,
          R_AMDGPU_ABS32: 4, R_AMDGPU_REL32_LO: 4, R_AMDGPU_REL32_HI: 4, R_AMDGPU_REL16: 2}
DWARF_TYPES = frozenset({R_AMDGPU_ABS32_LO, R_AMDGPU_ABS32_HI, R_AMDGPU_ABS64, R_AMDGPU_ABS32})
STATIC_TYPES = frozenset(_WIDTH)

_M64 = (1 << 64) - 1
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
_SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                 ("size", "<u8")])


def relocation_name(rtype: int) -> str:
    name = RELOCATION_NAMES.get(rtype)
    return f"{name} ({rtype})" if name else f"unknown AMDGPU relocation type {rtype}"


def is_relocatable_amdgpu(data: bytes) -> bool:
    """An ELF64 little-endian AMDGPU object of type ET_REL."""
    if len(data) < 20 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    return e_type == ET_REL and e_machine == EM_AMDGPU


def layout(sections: list[Section]) -> dict[int, int]:
    """Addresses of the allocated sections: code first from 0 in section order, then data, each aligned."""
    alloc = [s for s in sections if s.flags & SHF_ALLOC and s.size]
    order = ([s for s in alloc if s.flags & SHF_EXECINSTR]
             + [s for s in alloc if not s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS]
             + [s for s in alloc if not s.flags & SHF_EXECINSTR and s.type == SHT_NOBITS])
    addresses, cursor = {}, 0
    for sec in order:
        align = max(sec.align, 1)
        cursor = -(-cursor // align) * align
        addresses[sec.index] = cursor
        cursor += sec.size
    return addresses


def relocate_object(data: bytes, label: str = "object") -> bytes:
    """The object with its allocated sections laid out, its symbols moved and its relocations applied.

    Applying again to the result changes nothing: a section that already has an address keeps it,
    and RELA records carry their addends. Only the bytes that change are copied (the section headers,
    symbol tables and the sections relocated), and the records are read in place a slice at a time, so
    an object of millions of records costs about twice its size: itself and the result.
    """
    data = bytes(data)
    if not is_relocatable_amdgpu(data):
        raise CodeObjectError(f"{label}: not a relocatable AMDGPU ELF64 object")
    sections = section_table(data, label)
    laid_out = any(s.addr for s in sections if s.flags & SHF_ALLOC)
    targets = [sections[r.info] for r in sections
               if r.type == SHT_RELA and r.size and 0 < r.info < len(sections) and sections[r.info].type != SHT_NOBITS]
    headers = sections[0].header_at if sections else 0
    out = _Edits(data, [(headers, headers + 64 * len(sections))]
                 + [(s.offset, s.offset + s.size) for s in sections if s.type == SHT_SYMTAB]
                 + [(s.offset, s.offset + s.size) for s in targets])
    if laid_out:  # our own earlier result
        addresses = {s.index: s.addr for s in sections if s.flags & SHF_ALLOC}
    else:
        addresses = layout(sections)
        for index, address in addresses.items():
            out.view(sections[index].header_at + 16, 8)[:] = np.frombuffer(struct.pack("<Q", address), np.uint8)
    symbols = {s.index: _symbols(s, data, out, addresses, label, move=not laid_out)
               for s in sections if s.type == SHT_SYMTAB}
    for rela in sections:
        if rela.type == SHT_REL and 0 < rela.info < len(sections) and sections[rela.info].is_dwarf:
            raise CodeObjectError(f"{label}: {rela.name}: REL records without addends in a DWARF section; "
                                  f"AMDGPU objects carry Elf64_Rela")
        if rela.type != SHT_RELA or not rela.size:
            continue
        if not 0 < rela.info < len(sections):
            raise CodeObjectError(f"{label}: {rela.name} relocates section {rela.info}, which does not exist")
        table = symbols.get(rela.link)
        if table is None:
            raise CodeObjectError(f"{label}: {rela.name} names section {rela.link} as its symbol table")
        _apply(rela, sections[rela.info], data, out, table, addresses, label)
    return out.result()


class _Edits:
    """Writable copies of the byte ranges of `data` that relocating changes (overlapping ones merged);
    `result` is `data` with them in place, made in one join: the rest, the relocation records above all,
    is copied once, into the result."""

    def __init__(self, data: bytes, ranges: list[tuple[int, int]]):
        self._data = data
        merged: list[list[int]] = []
        for start, end in sorted((a, min(b, len(data))) for a, b in ranges if b > a):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self._starts = [start for start, _ in merged]
        self._copies = [bytearray(memoryview(data)[start:end]) for start, end in merged]

    def view(self, offset: int, size: int) -> np.ndarray:
        """data[offset:offset + size] as a writable uint8 array (a range given to __init__ holds it)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return np.frombuffer(self._copies[i], np.uint8, size, offset - self._starts[i])

    def result(self) -> bytes:
        whole, parts, at = memoryview(self._data), [], 0
        for start, copy in zip(self._starts, self._copies):
            parts += [whole[at:start], copy]
            at = start + len(copy)
        parts.append(whole[at:])
        return b"".join(parts)


@dataclass
class _SymbolValues:
    value: np.ndarray  # uint64 S per symbol index
    defined: np.ndarray  # bool: a value a link would give (defined, absolute, or weak and undefined)
    unknown: np.ndarray  # bool: defined in a section this reader cannot name (extended section index)


def _symbols(symtab: Section, data: bytes, out: _Edits, addresses: dict[int, int], label: str,
             move: bool) -> _SymbolValues:
    if symtab.entsize != _SYM.itemsize or symtab.size % _SYM.itemsize:
        raise CodeObjectError(f"{label}: symbol table {symtab.name} has entries of {symtab.entsize} bytes")
    table = np.frombuffer(data, _SYM, symtab.size // _SYM.itemsize, symtab.offset).copy()
    shndx = table["shndx"].astype(np.int64)
    base = np.zeros(len(table), np.uint64)
    placed = np.zeros(len(table), bool)
    for index, address in addresses.items():
        hit = shndx == index
        base[hit] = address
        placed |= hit
    in_section = (shndx > SHN_UNDEF) & (shndx < SHN_LORESERVE)
    if move and placed.any():
        table["value"][placed] += base[placed]
        out.view(symtab.offset, symtab.size)[:] = table.view(np.uint8)
    value = np.where(in_section | (shndx == SHN_ABS), table["value"], 0).astype(np.uint64)
    weak = (table["info"] >> 4) == STB_WEAK
    defined = in_section | (shndx == SHN_ABS) | ((shndx == SHN_UNDEF) & weak)
    if len(defined):
        defined[0] = True  # the null symbol: no symbol, S = 0
    unknown = shndx == SHN_XINDEX
    defined &= ~unknown
    value[unknown] = 0
    return _SymbolValues(value, defined, unknown)


_SLICE = 1 << 16  # records read and applied at a time: bounded temporaries whatever their number


def _apply(rela: Section, target: Section, data: bytes, out: _Edits, symbols: _SymbolValues,
           addresses: dict[int, int], label: str) -> None:
    if rela.entsize not in (0, _RELA.itemsize) or rela.size % _RELA.itemsize:
        raise CodeObjectError(f"{label}: {rela.name} has entries of {rela.entsize} bytes")
    if target.type == SHT_NOBITS:
        raise CodeObjectError(f"{label}: {rela.name} relocates {target.name}, which has no bytes")
    count = rela.size // _RELA.itemsize
    bytes_ = out.view(target.offset, target.size)  # the relocated section's bytes, patched in place
    for first in range(0, count, _SLICE):
        records = np.frombuffer(data, _RELA, min(_SLICE, count - first), rela.offset + first * _RELA.itemsize)
        _apply_records(records, first, rela, target, bytes_, symbols, addresses, label)


def _apply_records(records: np.ndarray, first: int, rela: Section, target: Section, bytes_: np.ndarray,
                   symbols: _SymbolValues, addresses: dict[int, int], label: str) -> None:
    """Records first.. of `rela` (entry numbers in errors count from the section's first)."""
    offsets = records["offset"]
    sym = (records["info"] >> np.uint64(32)).astype(np.int64)
    rtype = (records["info"] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    bad_symbol = np.flatnonzero(sym >= len(symbols.value))
    if bad_symbol.size:
        n = int(bad_symbol[0])
        raise CodeObjectError(f"{label}: {rela.name} entry {first + n} names symbol {int(sym[n])}, past the end of "
                              f"its symbol table ({len(symbols.value)} symbols)")
    dwarf = target.is_dwarf
    allowed = DWARF_TYPES if dwarf else STATIC_TYPES
    known = np.isin(rtype, list(allowed))
    if dwarf:
        wrong = np.flatnonzero(~known & (rtype != R_AMDGPU_NONE))
        if wrong.size:
            n = int(wrong[0])
            raise CodeObjectError(
                f"{label}: {rela.name} entry {first + n}: {relocation_name(int(rtype[n]))} at {target.name}+"
                f"{int(offsets[n]):#x} is not applied to DWARF (only R_AMDGPU_ABS32, R_AMDGPU_ABS64, "
                f"R_AMDGPU_ABS32_LO and R_AMDGPU_ABS32_HI are)")
        apply = known
    else:
        # code and data: what a static link resolves; GOT-relative, dynamic and unresolved ones keep their bytes
        apply = known & symbols.defined[sym]
    widths = np.zeros(len(records), np.uint64)
    for t, w in _WIDTH.items():
        widths[rtype == t] = w
    size = np.uint64(target.size)
    beyond = np.flatnonzero(apply & ((offsets > size) | (size - np.minimum(offsets, size) < widths)))
    if beyond.size:
        n = int(beyond[0])
        raise CodeObjectError(f"{label}: {rela.name} entry {first + n} patches {target.name}+{int(offsets[n]):#x}, "
                              f"past its {target.size} bytes")
    if dwarf:
        unknown = np.flatnonzero(apply & symbols.unknown[sym])
        if unknown.size:
            n = int(unknown[0])
            raise CodeObjectError(f"{label}: {rela.name} entry {first + n} names symbol {int(sym[n])}, defined in a "
                                  f"section given by an extended index, which is not read")
        _write_absolute(records["addend"], symbols.value[sym], rtype, offsets, apply, target, bytes_, rela, label,
                        first)
        return
    place = addresses.get(target.index, 0)  # P: the place's address
    for n in np.flatnonzero(apply).tolist():
        t = int(rtype[n])
        value = field_value(t, int(symbols.value[sym[n]]), int(records["addend"][n]), place + int(offsets[n]))
        if value is None:
            continue  # a branch out of reach: the linker would refuse it; the compiler's bytes stay
        width = _WIDTH[t]
        at = int(offsets[n])
        bytes_[at:at + width] = np.frombuffer((value & ((1 << (8 * width)) - 1)).to_bytes(width, "little"), np.uint8)


def _write_absolute(addend: np.ndarray, s: np.ndarray, rtype: np.ndarray, offsets: np.ndarray, apply: np.ndarray,
                    target: Section, buf: np.ndarray, rela: Section, label: str, first: int) -> None:
    """The DWARF's records, all at once (a big object has hundreds of thousands): S + A, its halves, or
    S + A checked to fit 32 bits."""
    total = s + addend.view(np.uint64)  # S + A modulo 2**64
    # S + A as a signed number: in int64 while S and A stay within 2**62 (offsets and addresses do),
    # else in Python's integers
    small = (s < 1 << 62) & (np.abs(addend) < 1 << 62)
    exact = np.where(small, s.astype(np.int64) + np.where(small, addend, 0), 0)
    abs32 = apply & (rtype == R_AMDGPU_ABS32)
    misfit = abs32 & small & ((exact < 0) | (exact >= 1 << 32))
    for n in np.flatnonzero(abs32 & ~small).tolist():
        misfit[n] = not 0 <= int(s[n]) + int(addend[n]) < 1 << 32
    misfit = np.flatnonzero(misfit)
    if misfit.size:
        n = int(misfit[0])
        value = int(s[n]) + int(addend[n])
        raise CodeObjectError(
            f"{label}: {rela.name} entry {first + n}: {relocation_name(R_AMDGPU_ABS32)} value {value:#x} does not fit "
            f"the 32-bit field at {target.name}+{int(offsets[n]):#x}")
    at = offsets.astype(np.int64)
    for kinds, width, field in (((R_AMDGPU_ABS64,), 8, total),
                                ((R_AMDGPU_ABS32, R_AMDGPU_ABS32_LO), 4, total & np.uint64(0xFFFFFFFF)),
                                ((R_AMDGPU_ABS32_HI,), 4, total >> np.uint64(32))):
        chosen = np.flatnonzero(apply & np.isin(rtype, kinds))
        if chosen.size:
            raw = field[chosen].astype(f"<u{width}").view(np.uint8).reshape(-1, width)
            buf[at[chosen][:, None] + np.arange(width)] = raw


def field_value(rtype: int, s: int, a: int, p: int) -> int | None:
    """The value a record of type `rtype` writes (AMDGPUUsage, "AMDGPU ELF Relocation Records"): S the
    symbol's value, A the addend, P the place's address; None when it cannot be encoded."""
    if rtype == R_AMDGPU_ABS32_LO:
        return (s + a) & 0xFFFFFFFF
    if rtype == R_AMDGPU_ABS32_HI:
        return ((s + a) & _M64) >> 32
    if rtype in (R_AMDGPU_ABS64, R_AMDGPU_ABS32):
        return s + a if rtype == R_AMDGPU_ABS32 else (s + a) & _M64
    if rtype in (R_AMDGPU_REL32, R_AMDGPU_REL32_LO):
        return (s + a - p) & 0xFFFFFFFF
    if rtype == R_AMDGPU_REL64:
        return (s + a - p) & _M64
    if rtype == R_AMDGPU_REL32_HI:
        return ((s + a - p) & _M64) >> 32
    if rtype == R_AMDGPU_REL16:
        # a SOPP branch: words from the next instruction, a signed 16-bit field (C's division)
        delta = s + a - p - 4
        words = delta // 4 if delta >= 0 else -(-delta // 4)
        return words & 0xFFFF if -(1 << 15) <= words < 1 << 15 else None
    return None
