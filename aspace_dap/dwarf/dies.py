"""The DWARF DIE reader: unit headers, abbreviations, DIEs and their attributes, decoded lazily.

DIEs are read by a small decoder of our own because pyelftools' DIE objects are too slow for files
with hundreds of thousands of entries: subtrees are skipped without decoding them (fixed-size
abbreviations in one step), and each DIE is decoded once and kept. The queries by PC (frames,
variables, types, lines) live in `index`, on top of this reader.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterator

from ..errors import AspaceError, CodeObjectError
from .dialects import detect_dialect, find_augmentation
from .lines import LineTable, parse_line_table
from .loclists import LocList, offset_from_index, read_loclist, read_rnglist
from .reader import ByteReader, raw_e_machine, section_bytes
from .target import Dialect

# --- DWARF constants used here -------------------------------------------------

TAG_ARRAY_TYPE = 0x01
TAG_CLASS_TYPE = 0x02
TAG_ENUMERATION_TYPE = 0x04
TAG_FORMAL_PARAMETER = 0x05
TAG_LEXICAL_BLOCK = 0x0B
TAG_POINTER_TYPE = 0x0F
TAG_COMPILE_UNIT = 0x11
TAG_STRUCTURE_TYPE = 0x13
TAG_TYPEDEF = 0x16
TAG_UNION_TYPE = 0x17
TAG_INLINED_SUBROUTINE = 0x1D
TAG_MODULE = 0x1E
TAG_BASE_TYPE = 0x24
TAG_SUBPROGRAM = 0x2E
TAG_VARIABLE = 0x34
TAG_NAMESPACE = 0x39
TAG_PARTIAL_UNIT = 0x3C
TAG_TYPE_UNIT = 0x41
TAG_SKELETON_UNIT = 0x4A

NAMED_TYPE_TAGS = {
    TAG_ARRAY_TYPE, TAG_CLASS_TYPE, TAG_ENUMERATION_TYPE, TAG_STRUCTURE_TYPE, TAG_TYPEDEF,
    TAG_UNION_TYPE, TAG_BASE_TYPE, 0x3B,  # unspecified_type
}

AT_SIBLING = 0x01
AT_LOCATION = 0x02
AT_NAME = 0x03
AT_STMT_LIST = 0x10
AT_LOW_PC = 0x11
AT_HIGH_PC = 0x12
AT_COMP_DIR = 0x1B
AT_CONST_VALUE = 0x1C
AT_PRODUCER = 0x25
AT_ABSTRACT_ORIGIN = 0x31
AT_ADDRESS_CLASS = 0x33
AT_ARTIFICIAL = 0x34
AT_DECL_FILE = 0x3A
AT_DECL_LINE = 0x3B
AT_DECLARATION = 0x3C
AT_FRAME_BASE = 0x40
AT_SPECIFICATION = 0x47
AT_TYPE = 0x49
AT_RANGES = 0x55
AT_CALL_COLUMN = 0x57
AT_CALL_FILE = 0x58
AT_CALL_LINE = 0x59
AT_LINKAGE_NAME = 0x6E
AT_STR_OFFSETS_BASE = 0x72
AT_ADDR_BASE = 0x73
AT_RNGLISTS_BASE = 0x74
AT_LOCLISTS_BASE = 0x8C
AT_MIPS_LINKAGE_NAME = 0x2007
AT_GNU_ADDR_BASE = 0x2133
AT_GNU_RANGES_BASE = 0x2132
# AMD heterogeneous attributes: extension-document codes, then ROCm's. Only
# decoded for heterogeneous CUs because upstream LLVM reuses 0x3e08-0x3e0c.
AT_LLVM_ACTIVE_LANE = (0x3E08,)
AT_LLVM_LANE_PC = (0x3E0B, 0x3E12)
AT_LLVM_LANES = (0x3E0A, 0x3E11)
AT_LLVM_VECTOR_SIZE = (0x3E0C, 0x3E13)
AT_LLVM_MEMORY_SPACE = (0x3E0F, 0x3E0D)  # ROCm 6.1 writes 0x3e0d
AT_LLVM_ADDRESS_SPACE = (0x3E10,)

# Forms
FORM_ADDR, FORM_BLOCK2, FORM_BLOCK4, FORM_DATA2, FORM_DATA4, FORM_DATA8 = 0x01, 0x03, 0x04, 0x05, 0x06, 0x07
FORM_STRING, FORM_BLOCK, FORM_BLOCK1, FORM_DATA1, FORM_FLAG, FORM_SDATA = 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D
FORM_STRP, FORM_UDATA, FORM_REF_ADDR = 0x0E, 0x0F, 0x10
FORM_REF1, FORM_REF2, FORM_REF4, FORM_REF8, FORM_REF_UDATA, FORM_INDIRECT = 0x11, 0x12, 0x13, 0x14, 0x15, 0x16
FORM_SEC_OFFSET, FORM_EXPRLOC, FORM_FLAG_PRESENT, FORM_STRX, FORM_ADDRX = 0x17, 0x18, 0x19, 0x1A, 0x1B
FORM_REF_SUP4, FORM_STRP_SUP, FORM_DATA16, FORM_LINE_STRP, FORM_REF_SIG8 = 0x1C, 0x1D, 0x1E, 0x1F, 0x20
FORM_IMPLICIT_CONST, FORM_LOCLISTX, FORM_RNGLISTX, FORM_REF_SUP8 = 0x21, 0x22, 0x23, 0x24
FORM_STRX1, FORM_STRX2, FORM_STRX3, FORM_STRX4 = 0x25, 0x26, 0x27, 0x28
FORM_ADDRX1, FORM_ADDRX2, FORM_ADDRX3, FORM_ADDRX4 = 0x29, 0x2A, 0x2B, 0x2C
FORM_GNU_ADDR_INDEX, FORM_GNU_STR_INDEX, FORM_GNU_REF_ALT, FORM_GNU_STRP_ALT = 0x1F01, 0x1F02, 0x1F20, 0x1F21

_STRX_FORMS = {FORM_STRX, FORM_STRX1, FORM_STRX2, FORM_STRX3, FORM_STRX4, FORM_GNU_STR_INDEX}
_ADDRX_FORMS = {FORM_ADDRX, FORM_ADDRX1, FORM_ADDRX2, FORM_ADDRX3, FORM_ADDRX4, FORM_GNU_ADDR_INDEX}
_LOCAL_REF_FORMS = {FORM_REF1, FORM_REF2, FORM_REF4, FORM_REF8, FORM_REF_UDATA}
_CONST_FORMS = {FORM_DATA1, FORM_DATA2, FORM_DATA4, FORM_DATA8, FORM_SDATA, FORM_UDATA, FORM_IMPLICIT_CONST}
_LEB_FORMS = {FORM_UDATA, FORM_SDATA, FORM_REF_UDATA, FORM_STRX, FORM_ADDRX, FORM_LOCLISTX, FORM_RNGLISTX,
              FORM_GNU_ADDR_INDEX, FORM_GNU_STR_INDEX}
_BLOCK_FORMS = {FORM_BLOCK, FORM_BLOCK1, FORM_BLOCK2, FORM_BLOCK4, FORM_EXPRLOC}

MAX_DEPTH = 256  # nesting of DIEs, and hops through abstract_origin/specification
MAX_ORIGIN_HOPS = 16


# --- location specs -----------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """A single location expression valid wherever the variable is in scope."""

    expr: bytes


@dataclass(frozen=True)
class ConstValue:
    """DW_AT_const_value: the value itself (int, or the bytes of a block)."""

    value: int | bytes


LocationSpec = Expr | LocList | ConstValue | None


# --- units and abbreviations ----------------------------------------------------


class _Abbrev:
    __slots__ = ("code", "tag", "has_children", "specs", "skip_steps", "fixed_size")

    def __init__(self, code: int, tag: int, has_children: bool, specs: list[tuple[int, int, int]]):
        self.code = code
        self.tag = tag
        self.has_children = has_children
        self.specs = specs  # (attribute, form, implicit constant)
        self.skip_steps: list[int] = []  # >= 0: skip that many bytes; < 0: -form to decode
        self.fixed_size: int | None = None


def _fixed_form_size(form: int, unit: "_Unit") -> int | None:
    os_, as_ = unit.offset_size, unit.address_size
    table = {
        FORM_ADDR: as_, FORM_DATA2: 2, FORM_DATA4: 4, FORM_DATA8: 8, FORM_DATA1: 1, FORM_FLAG: 1,
        FORM_STRP: os_, FORM_REF_ADDR: as_ if unit.version == 2 else os_, FORM_REF1: 1, FORM_REF2: 2,
        FORM_REF4: 4, FORM_REF8: 8, FORM_SEC_OFFSET: os_, FORM_FLAG_PRESENT: 0, FORM_REF_SUP4: 4,
        FORM_STRP_SUP: os_, FORM_DATA16: 16, FORM_LINE_STRP: os_, FORM_REF_SIG8: 8, FORM_IMPLICIT_CONST: 0,
        FORM_REF_SUP8: 8, FORM_STRX1: 1, FORM_STRX2: 2, FORM_STRX3: 3, FORM_STRX4: 4, FORM_ADDRX1: 1,
        FORM_ADDRX2: 2, FORM_ADDRX3: 3, FORM_ADDRX4: 4, FORM_GNU_REF_ALT: os_, FORM_GNU_STRP_ALT: os_,
    }
    return table.get(form)


class _Unit:
    """One unit header plus the bases its top DIE sets."""

    def __init__(self, offset: int, end: int, version: int, unit_type: int, address_size: int,
                 offset_size: int, abbrev_offset: int, die_start: int, type_signature: int | None = None,
                 type_offset: int | None = None):
        self.offset = offset
        self.end = end
        self.version = version
        self.unit_type = unit_type
        self.address_size = address_size
        self.offset_size = offset_size
        self.abbrev_offset = abbrev_offset
        self.die_start = die_start
        self.type_signature = type_signature
        self.type_offset = type_offset
        self.abbrevs: dict[int, _Abbrev] | None = None
        self.top: Die | None = None
        self.str_offsets_base: int | None = None
        self.addr_base: int | None = None
        self.rnglists_base: int | None = None
        self.loclists_base: int | None = None
        self.base_address = 0
        self.dialect: Dialect | None = None


class Die:
    """One decoded DIE: raw attribute values, resolved on access."""

    __slots__ = ("offset", "unit", "tag", "has_children", "raw", "end", "index")

    def __init__(self, index: "DieReader", unit: _Unit, offset: int, tag: int, has_children: bool,
                 raw: dict[int, tuple[int, object]], end: int):
        self.index = index
        self.unit = unit
        self.offset = offset
        self.tag = tag
        self.has_children = has_children
        self.raw = raw
        self.end = end  # offset just past this DIE's attributes (its first child, if any)

    def has(self, at: int) -> bool:
        return at in self.raw

    def form(self, at: int) -> int | None:
        entry = self.raw.get(at)
        return entry[0] if entry else None

    def get(self, at: int, default=None):
        entry = self.raw.get(at)
        if entry is None:
            return default
        return self.index._resolve(self.unit, entry[0], entry[1])

    def flag(self, at: int) -> bool:
        return bool(self.get(at, False))

    @property
    def name(self) -> str | None:
        value = self.get(AT_NAME)
        return value if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"<Die {self.offset:#x} tag={self.tag:#x}>"


# --- the reader ----------------------------------------------------------------------


class DieReader:
    """Sections, units and DIEs of one ELF's DWARF; nothing is read until asked for."""

    def __init__(self, elf, *, load_bias: int = 0, e_machine: int | None = None):
        self._elf = elf
        self.load_bias = load_bias
        self.e_machine = e_machine if e_machine is not None else raw_e_machine(elf)
        self._sections: dict[str, bytes] = {}
        self._units: list[_Unit] | None = None
        self._unit_starts: list[int] = []
        self._abbrev_cache: dict[tuple, dict[int, _Abbrev]] = {}
        self._die_cache: dict[int, Die] = {}
        self._subtree_end: dict[int, int] = {}
        self._line_tables: dict[int, LineTable | None] = {}
        self._sig_index: dict[int, int] | None = None

    # -- sections ---------------------------------------------------------------

    def _sec(self, name: str) -> bytes:
        data = self._sections.get(name)
        if data is None:
            data = self._load_section(name)
            self._sections[name] = data
        return data

    def _load_section(self, name: str) -> bytes:
        if (self._elf.header["e_type"] == "ET_REL" and name.startswith(".debug")
                and not getattr(self._elf, "relocations_applied", False)):
            # Relocatable objects need their debug relocations applied; pyelftools does that (the
            # code-object loader applies AMDGPU's itself: pyelftools knows none of them).
            try:
                dwarf = self._elf.get_dwarf_info()
            except Exception as exc:
                raise CodeObjectError(f"cannot read DWARF: {exc}") from exc
            attr = {".debug_info": "debug_info_sec", ".debug_abbrev": "debug_abbrev_sec",
                    ".debug_str": "debug_str_sec", ".debug_line": "debug_line_sec",
                    ".debug_loclists": "debug_loclists_sec", ".debug_rnglists": "debug_rnglists_sec",
                    ".debug_addr": "debug_addr_sec", ".debug_str_offsets": "debug_str_offsets_sec",
                    ".debug_line_str": "debug_line_str_sec", ".debug_loc": "debug_loc_sec",
                    ".debug_ranges": "debug_ranges_sec", ".debug_aranges": "debug_aranges_sec"}.get(name)
            sec = getattr(dwarf, attr, None) if attr else None
            if sec is not None:
                return sec.stream.getvalue()
        return section_bytes(self._elf, name)

    # -- units --------------------------------------------------------------------

    def _all_units(self) -> list[_Unit]:
        if self._units is None:
            self._units = list(self._read_unit_headers())
            self._unit_starts = [u.offset for u in self._units]
        return self._units

    def _read_unit_headers(self) -> Iterator[_Unit]:
        data = self._sec(".debug_info")
        pos = 0
        while pos < len(data):
            r = ByteReader(data, pos, ".debug_info")
            length, offset_size = r.initial_length()
            end = r.pos + length
            if end > len(data) or length < 2:
                raise CodeObjectError(f".debug_info: unit at {pos:#x} runs past the section")
            version = r.u16()
            signature = type_offset = None
            if version >= 5:
                unit_type = r.u8()
                address_size = r.u8()
                abbrev_offset = r.offset(offset_size)
                if unit_type in (4, 5):  # skeleton, split_compile
                    r.uint(8)
                elif unit_type in (2, 6):  # type, split_type
                    signature = r.uint(8)
                    type_offset = pos + r.offset(offset_size)
            elif 2 <= version <= 4:
                unit_type = 1
                abbrev_offset = r.offset(offset_size)
                address_size = r.u8()
            else:
                raise CodeObjectError(f".debug_info: unsupported DWARF version {version} at {pos:#x}")
            if address_size not in (2, 4, 8):
                raise CodeObjectError(f".debug_info: bad address size {address_size} at {pos:#x}")
            yield _Unit(pos, end, version, unit_type, address_size, offset_size, abbrev_offset, r.pos,
                        signature, type_offset)
            pos = end

    def _unit_of(self, offset: int) -> _Unit:
        units = self._all_units()
        i = bisect.bisect_right(self._unit_starts, offset) - 1
        if i < 0 or offset >= units[i].end:
            raise CodeObjectError(f".debug_info: offset {offset:#x} is outside every unit")
        unit = units[i]
        self._prepare(unit)
        return unit

    def _unit_at(self, cu_offset: int) -> _Unit:
        unit = self._unit_of(cu_offset)
        if unit.offset != cu_offset:
            raise CodeObjectError(f"no unit starts at {cu_offset:#x}")
        return unit

    def _prepare(self, unit: _Unit) -> None:
        """Abbreviations, top DIE and bases of a unit, once."""
        if unit.top is not None:
            return
        key = (unit.abbrev_offset, unit.address_size, unit.offset_size, unit.version)
        abbrevs = self._abbrev_cache.get(key)
        if abbrevs is None:
            abbrevs = self._read_abbrevs(unit)
            self._abbrev_cache[key] = abbrevs
        unit.abbrevs = abbrevs
        top = self._read_die(unit, unit.die_start)
        if top is None:
            raise CodeObjectError(f".debug_info: unit at {unit.offset:#x} has no top DIE")
        unit.top = top
        raw = top.raw
        unit.str_offsets_base = raw[AT_STR_OFFSETS_BASE][1] if AT_STR_OFFSETS_BASE in raw else (
            8 if unit.offset_size == 4 else 16) if unit.version >= 5 else None
        base = raw.get(AT_ADDR_BASE) or raw.get(AT_GNU_ADDR_BASE)
        unit.addr_base = base[1] if base else (8 if unit.offset_size == 4 else 16)
        base = raw.get(AT_RNGLISTS_BASE) or raw.get(AT_GNU_RANGES_BASE)
        unit.rnglists_base = base[1] if base else None
        unit.loclists_base = raw[AT_LOCLISTS_BASE][1] if AT_LOCLISTS_BASE in raw else None
        low = top.get(AT_LOW_PC)
        unit.base_address = low if isinstance(low, int) else 0
        resolved = {}
        for at in raw:
            if 0x3E00 <= at < 0x3F00:
                try:
                    resolved[at] = top.get(at)
                except AspaceError:
                    pass
        producer = top.get(AT_PRODUCER)
        unit.dialect = detect_dialect(
            producer=producer if isinstance(producer, str) else None,
            augmentation=find_augmentation(resolved),
            e_machine=self.e_machine,
            address_size=unit.address_size,
            offset_size=unit.offset_size,
            version=unit.version,
        )

    def _read_abbrevs(self, unit: _Unit) -> dict[int, _Abbrev]:
        data = self._sec(".debug_abbrev")
        r = ByteReader(data, unit.abbrev_offset, ".debug_abbrev")
        table: dict[int, _Abbrev] = {}
        while True:
            code = r.uleb()
            if code == 0:
                break
            tag = r.uleb()
            has_children = r.u8() != 0
            specs = []
            while True:
                at = r.uleb()
                form = r.uleb()
                if at == 0 and form == 0:
                    break
                implicit = r.sleb() if form == FORM_IMPLICIT_CONST else 0
                specs.append((at, form, implicit))
            ab = _Abbrev(code, tag, has_children, specs)
            steps: list[int] = []
            for _at, form, _imp in specs:
                size = _fixed_form_size(form, unit)
                if size is None:
                    steps.append(-form)
                elif steps and steps[-1] >= 0:
                    steps[-1] += size
                else:
                    steps.append(size)
            ab.skip_steps = steps
            if all(s >= 0 for s in steps):
                ab.fixed_size = sum(steps)
            table[code] = ab
        return table

    def dialect_for_cu(self, cu_offset: int) -> Dialect:
        unit = self._unit_of(cu_offset)
        return unit.dialect

    # -- DIE decoding ---------------------------------------------------------------

    def _read_die(self, unit: _Unit, offset: int) -> Die | None:
        """The DIE at `offset`, or None for a null entry (end of a sibling list)."""
        cached = self._die_cache.get(offset)
        if cached is not None:
            return cached
        data = self._sec(".debug_info")
        r = ByteReader(data, offset, ".debug_info")
        if offset >= unit.end:
            raise CodeObjectError(f".debug_info: DIE offset {offset:#x} past the end of its unit")
        code = r.uleb()
        if code == 0:
            return None
        ab = unit.abbrevs.get(code)
        if ab is None:
            raise CodeObjectError(f".debug_info: unknown abbreviation code {code} at {offset:#x}")
        raw: dict[int, tuple[int, object]] = {}
        for at, form, implicit in ab.specs:
            raw[at] = self._decode_form(r, unit, form, implicit)
        if r.pos > unit.end:
            raise CodeObjectError(f".debug_info: DIE at {offset:#x} runs past its unit")
        die = Die(self, unit, offset, ab.tag, ab.has_children, raw, r.pos)
        self._die_cache[offset] = die
        return die

    def _decode_form(self, r: ByteReader, unit: _Unit, form: int, implicit: int) -> tuple[int, object]:
        while form == FORM_INDIRECT:
            form = r.uleb()
        if form in (FORM_DATA1, FORM_REF1, FORM_FLAG, FORM_STRX1, FORM_ADDRX1):
            return form, r.u8()
        if form in (FORM_DATA2, FORM_REF2, FORM_STRX2, FORM_ADDRX2):
            return form, r.u16()
        if form in (FORM_DATA4, FORM_REF4, FORM_STRX4, FORM_ADDRX4, FORM_REF_SUP4):
            return form, r.u32()
        if form in (FORM_DATA8, FORM_REF8, FORM_REF_SIG8, FORM_REF_SUP8):
            return form, r.uint(8)
        if form in (FORM_STRX3, FORM_ADDRX3):
            return form, r.uint(3)
        if form in (FORM_UDATA, FORM_REF_UDATA, FORM_STRX, FORM_ADDRX, FORM_LOCLISTX, FORM_RNGLISTX,
                    FORM_GNU_ADDR_INDEX, FORM_GNU_STR_INDEX):
            return form, r.uleb()
        if form == FORM_SDATA:
            return form, r.sleb()
        if form in (FORM_STRP, FORM_SEC_OFFSET, FORM_LINE_STRP, FORM_STRP_SUP, FORM_GNU_REF_ALT,
                    FORM_GNU_STRP_ALT):
            return form, r.offset(unit.offset_size)
        if form == FORM_REF_ADDR:
            return form, r.uint(unit.address_size if unit.version == 2 else unit.offset_size)
        if form == FORM_ADDR:
            return form, r.uint(unit.address_size)
        if form == FORM_FLAG_PRESENT:
            return form, True
        if form == FORM_IMPLICIT_CONST:
            return form, implicit
        if form in (FORM_EXPRLOC, FORM_BLOCK):
            return form, r.bytes(r.uleb())
        if form == FORM_BLOCK1:
            return form, r.bytes(r.u8())
        if form == FORM_BLOCK2:
            return form, r.bytes(r.u16())
        if form == FORM_BLOCK4:
            return form, r.bytes(r.u32())
        if form == FORM_STRING:
            return form, r.cstr().decode("utf-8", "replace")
        if form == FORM_DATA16:
            return form, r.bytes(16)
        raise CodeObjectError(f".debug_info: unknown attribute form {form:#x} at {r.pos:#x}")

    def _resolve(self, unit: _Unit, form: int, value):
        if form in _LOCAL_REF_FORMS:
            return unit.offset + value
        if form in _STRX_FORMS:
            return self._strx(unit, value)
        if form == FORM_STRP:
            return self._string(".debug_str", value)
        if form == FORM_LINE_STRP:
            return self._string(".debug_line_str", value)
        if form in _ADDRX_FORMS:
            return self._addrx(unit, value)
        if form == FORM_REF_SIG8:
            return self._type_unit_die(value)
        if form in (FORM_FLAG, FORM_FLAG_PRESENT):
            return bool(value)
        if form in (FORM_GNU_REF_ALT, FORM_GNU_STRP_ALT, FORM_STRP_SUP, FORM_REF_SUP4, FORM_REF_SUP8):
            return None  # lives in a supplementary file we do not have
        return value

    def _string(self, section: str, offset: int) -> str:
        data = self._sec(section)
        end = data.find(b"\0", offset)
        if offset >= len(data) or end < 0:
            raise CodeObjectError(f"{section}: bad string offset {offset:#x}")
        return data[offset:end].decode("utf-8", "replace")

    def _strx(self, unit: _Unit, index: int) -> str:
        if unit.str_offsets_base is None:
            raise CodeObjectError(f"unit at {unit.offset:#x}: string index without DW_AT_str_offsets_base")
        data = self._sec(".debug_str_offsets")
        r = ByteReader(data, unit.str_offsets_base + index * unit.offset_size, ".debug_str_offsets")
        return self._string(".debug_str", r.offset(unit.offset_size))

    def _addrx(self, unit: _Unit, index: int) -> int:
        data = self._sec(".debug_addr")
        r = ByteReader(data, unit.addr_base + index * unit.address_size, ".debug_addr")
        return r.uint(unit.address_size)

    def unit_offset_of(self, die_offset: int) -> int:
        """The .debug_info offset of the unit holding a DIE (CodeObjectError outside every unit)."""
        return self._unit_of(die_offset).offset

    def addr_index(self, cu_offset: int, index: int) -> int:
        """DW_OP_addrx / DW_OP_constx: entry `index` of the unit's .debug_addr table."""
        return self._addrx(self._unit_of(cu_offset), index)

    def _type_unit_die(self, signature: int) -> int | None:
        if self._sig_index is None:
            self._sig_index = {u.type_signature: u.type_offset for u in self._all_units()
                               if u.type_signature is not None}
        return self._sig_index.get(signature)

    def die(self, offset: int) -> Die:
        """The DIE at a .debug_info offset (CodeObjectError when there is none)."""
        unit = self._unit_of(offset)
        die = self._read_die(unit, offset)
        if die is None:
            raise CodeObjectError(f".debug_info: no DIE at {offset:#x}")
        return die

    def _skip_subtree(self, die: Die) -> int:
        """Offset just past `die` and all its descendants, without decoding them."""
        if not die.has_children:
            return die.end
        known = self._subtree_end.get(die.offset)
        if known is not None:
            return known
        sibling = die.raw.get(AT_SIBLING)
        if sibling is not None and sibling[0] in _LOCAL_REF_FORMS:
            target = die.unit.offset + sibling[1]
            if die.end <= target <= die.unit.end:
                self._subtree_end[die.offset] = target
                return target
        end = self._skip_children_fast(die.unit, die.end)
        self._subtree_end[die.offset] = end
        return end

    def _skip_children_fast(self, unit: _Unit, pos: int) -> int:
        data = self._sec(".debug_info")
        abbrevs = unit.abbrevs
        limit = unit.end
        depth = 1
        r = ByteReader(data, pos, ".debug_info")
        while True:
            if pos >= limit:
                raise CodeObjectError(f".debug_info: children run past the unit at {unit.offset:#x}")
            code = data[pos]
            if code < 0x80:
                pos += 1
            else:
                r.pos = pos
                code = r.uleb()
                pos = r.pos
            if code == 0:
                depth -= 1
                if depth == 0:
                    return pos
                continue
            ab = abbrevs.get(code)
            if ab is None:
                raise CodeObjectError(f".debug_info: unknown abbreviation code {code} at {pos:#x}")
            if ab.fixed_size is not None:
                pos += ab.fixed_size
            else:
                for step in ab.skip_steps:
                    if step >= 0:
                        pos += step
                        continue
                    form = -step
                    if form in _LEB_FORMS:
                        while pos < limit and data[pos] & 0x80:
                            pos += 1
                        pos += 1
                    elif form == FORM_EXPRLOC or form == FORM_BLOCK:
                        length = shift = 0
                        while pos < limit:
                            b = data[pos]
                            pos += 1
                            length |= (b & 0x7F) << shift
                            shift += 7
                            if b < 0x80:
                                break
                        pos += length
                    elif form == FORM_STRING:
                        end = data.find(b"\0", pos, limit)
                        if end < 0:
                            raise CodeObjectError(f".debug_info: unterminated string at {pos:#x}")
                        pos = end + 1
                    else:
                        r.pos = pos
                        self._decode_form(r, unit, form, 0)
                        pos = r.pos
            if ab.has_children:
                depth += 1
                if depth > MAX_DEPTH:
                    raise CodeObjectError(f".debug_info: DIEs nested too deep at {pos:#x}")

    def children(self, die: Die) -> Iterator[Die]:
        """Direct children of a DIE, decoded one by one; grandchildren are skipped unread."""
        if not die.has_children:
            return
        pos = die.end
        unit = die.unit
        while True:
            child = self._read_die(unit, pos)
            if child is None:
                return
            yield child
            pos = self._skip_subtree(child)

    # -- attribute helpers -------------------------------------------------------------

    def _ranges(self, die: Die) -> list[tuple[int, int]]:
        unit = die.unit
        if AT_RANGES in die.raw:
            form, value = die.raw[AT_RANGES]
            if form == FORM_RNGLISTX:
                base = unit.rnglists_base if unit.rnglists_base is not None else (
                    12 if unit.offset_size == 4 else 20)
                offset = offset_from_index(self._sec(".debug_rnglists"), base, value, unit.offset_size)
            else:
                offset = value
                if unit.version < 5 and unit.rnglists_base and die is not unit.top:
                    offset += unit.rnglists_base  # GNU split-DWARF ranges base
            section = ".debug_rnglists" if unit.version >= 5 else ".debug_ranges"
            return read_rnglist(self._sec(section), offset, version=unit.version,
                                address_size=unit.address_size, base_address=unit.base_address,
                                addrx=lambda i: self._addrx(unit, i))
        low = die.get(AT_LOW_PC)
        if not isinstance(low, int):
            return []
        high_form = die.form(AT_HIGH_PC)
        high = die.get(AT_HIGH_PC)
        if not isinstance(high, int):
            return [(low, low + 1)]
        if high_form in _CONST_FORMS:
            high = low + high
        return [(low, high)] if high > low else []

    def _location(self, die: Die, at: int = AT_LOCATION) -> LocationSpec:
        entry = die.raw.get(at)
        if entry is None:
            if at == AT_LOCATION and AT_CONST_VALUE in die.raw:
                return ConstValue(die.get(AT_CONST_VALUE))
            return None
        form, value = entry
        if form in _BLOCK_FORMS:
            return Expr(value)
        unit = die.unit
        if form == FORM_LOCLISTX:
            base = unit.loclists_base if unit.loclists_base is not None else (
                12 if unit.offset_size == 4 else 20)
            offset = offset_from_index(self._sec(".debug_loclists"), base, value, unit.offset_size)
        elif form in (FORM_SEC_OFFSET, FORM_DATA4, FORM_DATA8):
            offset = value
        else:
            raise CodeObjectError(f"DIE {die.offset:#x}: location in unexpected form {form:#x}")
        section = ".debug_loclists" if unit.version >= 5 else ".debug_loc"
        return read_loclist(self._sec(section), offset, version=unit.version,
                            address_size=unit.address_size, base_address=unit.base_address,
                            addrx=lambda i: self._addrx(unit, i))

    def _expr_at(self, die: Die, at: int, pc: int) -> bytes | None:
        loc = self._location(die, at)
        if isinstance(loc, Expr):
            return loc.expr
        if isinstance(loc, LocList):
            return loc.at(pc)
        return None

    def _origin_chain(self, die: Die) -> list[Die]:
        """The DIE followed by its abstract_origin / specification DIEs."""
        chain = [die]
        current = die
        for _ in range(MAX_ORIGIN_HOPS):
            target = current.get(AT_ABSTRACT_ORIGIN)
            if target is None:
                target = current.get(AT_SPECIFICATION)
            if not isinstance(target, int):
                break
            current = self.die(target)
            if current in chain:
                break
            chain.append(current)
        return chain

    def _inherited(self, chain: list[Die], at: int):
        for d in chain:
            if at in d.raw:
                return d.get(at)
        return None

    def _file_name(self, unit: _Unit, file_no) -> str | None:
        if not isinstance(file_no, int):
            return None
        table = self._line_table(unit)
        if table is None:
            return None
        return table.files.get(file_no)

    def _line_table(self, unit: _Unit) -> LineTable | None:
        if unit.offset in self._line_tables:
            return self._line_tables[unit.offset]
        self._prepare(unit)
        table = None
        stmt = unit.top.get(AT_STMT_LIST)
        if isinstance(stmt, int):
            comp_dir = unit.top.get(AT_COMP_DIR)
            table = parse_line_table(
                self._sec(".debug_line"), stmt,
                comp_dir=comp_dir if isinstance(comp_dir, str) else "",
                address_size=unit.address_size,
                line_str=self._sec(".debug_line_str"),
                debug_str=self._sec(".debug_str"),
                strx=lambda i: self._strx(unit, i),
            )
        self._line_tables[unit.offset] = table
        return table

    def die_count(self) -> int:
        """An estimate for progress reports: clang DIEs average about 9 bytes."""
        return len(self._sec(".debug_info")) // 9
