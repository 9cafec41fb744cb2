"""The DWARF index against the committed example code objects, checked against
the llvm-dwarfdump-15 listings committed next to them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.dwarf.asm import encode_sleb as sleb, encode_uleb as uleb
from aspace_dap.dwarf.index import ConstValue, DwarfIndex, Expr, LocList
from aspace_dap.dwarf.types import ArrayType, BaseType, PointerType, QualifiedType, StructType, byte_size

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
O2_OBJECTS = sorted(EXAMPLES.glob("*/*.O2.co"))
# the debug builds whose variables dwarfdump lists beside them; examples/production_amd and examples/hang are
# -O3 production builds with their own tests (tests/test_production_amd.py, tests/test_hangs.py)
ALL_OBJECTS = sorted(p for p in EXAMPLES.glob("*/*.co") if p.parent.name not in ("production_amd", "hang"))


# --- a small reader for llvm-dwarfdump's text, used as the oracle -------------------------------


@dataclass
class DumpDie:
    offset: int
    depth: int
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    loclist: list[tuple[int, int, str]] = field(default_factory=list)
    children: list["DumpDie"] = field(default_factory=list)
    parent: "DumpDie | None" = None

    def ref(self, name: str) -> int | None:
        m = re.match(r"\(0x([0-9a-f]+)", self.attrs.get(name, ""))
        return int(m.group(1), 16) if m else None

    def string(self, name: str) -> str | None:
        m = re.match(r'\("(.*)"\)$', self.attrs.get(name, ""))
        return m.group(1) if m else None

    def number(self, name: str) -> int | None:
        m = re.match(r"\((0x[0-9a-f]+|\d+)\)$", self.attrs.get(name, ""))
        return int(m.group(1), 0) if m else None


_DIE_RE = re.compile(r"^0x([0-9a-f]{8}):( +)(DW_TAG_\w+|NULL)")
_ATTR_RE = re.compile(r"^\s+(DW_AT_\w+)\t(.*)$")
_RANGE_RE = re.compile(r"^\s+\[0x([0-9a-f]+), 0x([0-9a-f]+)\)(?:: (.*?))?\)*$")
_ROW_RE = re.compile(r"^0x([0-9a-f]{16})\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s*(.*)$")


@dataclass
class Dump:
    dies: dict[int, DumpDie]
    top: DumpDie
    rows: list[tuple[int, int, int, int, set[str]]]  # address, line, column, file, flags


_DUMPS: dict[Path, Dump] = {}


def load_dump(co: Path) -> Dump:
    if co in _DUMPS:
        return _DUMPS[co]
    dies: dict[int, DumpDie] = {}
    stack: list[DumpDie] = []
    rows = []
    current = None
    last_attr = None
    section = None
    for line in Path(str(co) + ".dwarf.txt").read_text().splitlines():
        if line.endswith(" contents:"):
            section = line.split()[0]
            continue
        if section == ".debug_line":
            m = _ROW_RE.match(line)
            if m:
                rows.append((int(m.group(1), 16), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                             set(m.group(5).split())))
            continue
        if section != ".debug_info":
            continue
        m = _DIE_RE.match(line)
        if m:
            depth = (len(m.group(2)) - 1) // 2
            del stack[depth:]
            if m.group(3) == "NULL":
                current = None
                continue
            current = DumpDie(int(m.group(1), 16), depth, m.group(3), parent=stack[-1] if stack else None)
            if stack:
                stack[-1].children.append(current)
            stack.append(current)
            dies[current.offset] = current
            continue
        if current is None:
            continue
        m = _ATTR_RE.match(line)
        if m:
            last_attr = m.group(1)
            current.attrs[last_attr] = m.group(2)
            continue
        m = _RANGE_RE.match(line)
        if m:
            low, high = int(m.group(1), 16), int(m.group(2), 16)
            if last_attr == "DW_AT_ranges":
                current.ranges.append((low, high))
            elif last_attr == "DW_AT_location":
                current.loclist.append((low, high, m.group(3) or ""))
    for die in dies.values():
        low, high = die.number("DW_AT_low_pc"), die.attrs.get("DW_AT_high_pc")
        if low is not None and high is not None and not die.ranges:
            die.ranges.append((low, int(high.strip("()"), 16)))
    top = next(d for d in dies.values() if d.tag == "DW_TAG_compile_unit")
    dump = Dump(dies, top, rows)
    _DUMPS[co] = dump
    return dump


def contains(die: DumpDie, pc: int) -> bool:
    return any(lo <= pc < hi for lo, hi in die.ranges)


def expected_chain(dump: Dump, pc: int) -> list[DumpDie]:
    """Subprogram then inlined subroutines containing pc, outermost first."""
    subs = [d for d in dump.top.children if d.tag == "DW_TAG_subprogram" and contains(d, pc)]
    if not subs:
        return []
    chain = [subs[0]]
    node = subs[0]
    while True:
        nxt = next((c for c in node.children
                    if c.tag in ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine") and contains(c, pc)), None)
        if nxt is None:
            return chain
        if nxt.tag == "DW_TAG_inlined_subroutine":
            chain.append(nxt)
        node = nxt


_SCOPES = {"DW_TAG_namespace": "(anonymous namespace)", "DW_TAG_class_type": None, "DW_TAG_structure_type": None,
           "DW_TAG_union_type": None}


def dump_name(dump: Dump, die: DumpDie) -> str | None:
    for _ in range(8):
        name = die.string("DW_AT_name")
        if name is not None:
            return name
        ref = die.ref("DW_AT_abstract_origin") or die.ref("DW_AT_specification")
        if ref is None:
            return None
        die = dump.dies[ref]
    return None


def qualified_dump_name(dump: Dump, die: DumpDie) -> str | None:
    """The function's name as gdb qualifies it: its DW_AT_name (through abstract_origin / specification),
    prefixed by the namespaces and classes llvm-dwarfdump lists around the last DIE of that chain."""
    name = None
    for _ in range(8):
        name = name or die.string("DW_AT_name")
        ref = die.ref("DW_AT_abstract_origin") or die.ref("DW_AT_specification")
        if ref is None:
            break
        die = dump.dies[ref]
    if name is None:
        return None
    scope = die.parent
    while scope is not None and scope.tag in _SCOPES:
        name = f"{scope.string('DW_AT_name') or _SCOPES[scope.tag]}::{name}"
        scope = scope.parent
    return name


def open_index(co: Path) -> tuple[DwarfIndex, object]:
    stream = open(co, "rb")
    return DwarfIndex(ELFFile(stream)), stream


@pytest.fixture
def index_of():
    streams = []

    def make(co: Path) -> DwarfIndex:
        idx, stream = open_index(co)
        streams.append(stream)
        return idx

    yield make
    for s in streams:
        s.close()




# --- frames -------------------------------------------------------------------------------


def test_examples_are_committed():
    assert len(O2_OBJECTS) >= 3
    assert all(Path(str(co) + ".dwarf.txt").exists() for co in ALL_OBJECTS)


@pytest.mark.parametrize("co", O2_OBJECTS, ids=lambda p: p.name)
def test_frame_chain_matches_dwarfdump_at_inlined_pcs(co, index_of):
    dump = load_dump(co)
    idx = index_of(co)
    pcs = set()
    for die in dump.dies.values():
        if die.tag == "DW_TAG_inlined_subroutine":
            for lo, hi in die.ranges:
                pcs.update({lo, (lo + hi) // 2 & ~3, hi - 4, hi})
    assert pcs, "the -O2 example has inlined code"
    inlined_seen = 0
    for pc in sorted(pcs):
        chain = expected_chain(dump, pc)
        frames = idx.frames_at(pc)
        assert [f.die_offset for f in frames] == [d.offset for d in reversed(chain)], hex(pc)
        for frame, die in zip(frames, reversed(chain)):
            assert frame.is_inlined == (die.tag == "DW_TAG_inlined_subroutine")
            assert frame.function == qualified_dump_name(dump, die)
            if frame.is_inlined:
                inlined_seen += 1
                assert frame.call_line == die.number("DW_AT_call_line")
                assert frame.call_file == die.string("DW_AT_call_file")
                # Every parameter of the inlined function shows, in declaration order,
                # even those the compiler dropped from the inlined instance.
                origin = dump.dies[die.ref("DW_AT_abstract_origin")]
                declared = [c.string("DW_AT_name") for c in origin.children if c.tag == "DW_TAG_formal_parameter"]
                params = [v for v in idx.variables(frame, pc) if v.kind == "parameter"]
                assert [v.name for v in params] == declared
            # Inlined frames share the concrete subprogram's frame base.
            assert frame.frame_base_expr == frames[-1].frame_base_expr
    assert inlined_seen > 0


def test_no_frame_outside_code(index_of):
    idx = index_of(EXAMPLES / "divergent_call/divergent_call.gfx90a.O2.co")
    assert idx.frames_at(0) == []
    assert idx.frames_at(0xFFFF_FFFF_0000) == []


def test_frame_base_of_o0_kernel_is_regx_sgpr33(index_of):
    co = EXAMPLES / "scratch_struct/scratch_struct.gfx90a.O0.co"
    dump = load_dump(co)
    kernel = next(d for d in dump.top.children if d.string("DW_AT_name") == "integrate")
    idx = index_of(co)
    frames = idx.frames_at(kernel.ranges[0][0] + 8)
    assert frames[0].function == "integrate" and not frames[0].is_inlined
    assert frames[0].frame_base_expr == b"\x90" + uleb(65)  # DW_OP_regx 65
    assert frames[0].linkage_name == kernel.string("DW_AT_linkage_name")
    assert frames[0].decl_line == kernel.number("DW_AT_decl_line")
    assert frames[0].decl_file == kernel.string("DW_AT_decl_file")
    assert frames[0].low_pc == kernel.ranges[0][0]


# --- variables ------------------------------------------------------------------------------


def expected_variables(dump: Dump, frame_die: DumpDie, pc: int) -> list[str]:
    params, locals_ = [], []
    node, depth = frame_die, 0
    while node is not None:
        nxt = None
        for c in node.children:
            if c.tag == "DW_TAG_formal_parameter" and depth == 0:
                params.append(dump_name(dump, c))
            elif c.tag == "DW_TAG_variable":
                locals_.append(dump_name(dump, c))
            elif c.tag == "DW_TAG_lexical_block" and nxt is None and (contains(c, pc) or not c.ranges):
                nxt = c
        node, depth = nxt, depth + 1
    return params + locals_


@pytest.mark.parametrize("co", ALL_OBJECTS, ids=lambda p: p.name)
def test_variables_of_kernels_match_dwarfdump(co, index_of):
    dump = load_dump(co)
    idx = index_of(co)
    kernels = [d for d in dump.top.children if d.tag == "DW_TAG_subprogram" and d.ranges
               and "examples/" in (d.string("DW_AT_decl_file") or "")]
    assert kernels
    for kernel in kernels:
        lo, hi = kernel.ranges[0]
        for pc in range(lo, hi, max(4, (hi - lo) // 16 & ~3)):
            frames = idx.frames_at(pc)
            outer = frames[-1]
            assert outer.die_offset == kernel.offset
            got = [v.name for v in idx.variables(outer, pc)]
            assert got == expected_variables(dump, kernel, pc), hex(pc)


def test_variable_records_at_o0(index_of):
    co = EXAMPLES / "scratch_struct/scratch_struct.gfx90a.O0.co"
    dump = load_dump(co)
    kernel = next(d for d in dump.top.children if d.string("DW_AT_name") == "integrate")
    idx = index_of(co)
    pc = kernel.ranges[0][0] + 0x40
    variables = idx.variables(idx.frames_at(pc)[0], pc)
    by_name = {v.name: v for v in variables}
    params = [v.name for v in variables if v.kind == "parameter"]
    assert params == ["state", "probe", "out", "n", "dt"]
    for v in variables:
        die = dump.dies[v.die_offset]
        assert v.decl_line == die.number("DW_AT_decl_line")
        assert v.decl_file == die.string("DW_AT_decl_file")
        m = re.match(r"\(DW_OP_fbreg \+(\d+)\)$", die.attrs.get("DW_AT_location", ""))
        if m:
            off = int(m.group(1))
            assert isinstance(v.location, Expr)
            assert v.location_at(pc) == b"\x91" + sleb(off)  # DW_OP_fbreg
    p = by_name["p"].type
    assert isinstance(p, StructType) and p.name == "Particle"
    assert byte_size(p) == 72
    assert [m.name for m in p.members] == ["pos", "vel", "force", "mass", "id", "flags", "neighbors"]
    assert [m.bit_offset // 8 for m in p.members] == [0, 12, 24, 36, 40, 44, 48]
    pos = p.members[0].type
    assert isinstance(pos, ArrayType) and pos.dims == [3] and pos.element.name == "float"
    history = by_name["history"].type
    assert isinstance(history, ArrayType) and history.dims == [24] and byte_size(history) == 96
    state = by_name["state"].type
    assert isinstance(state, PointerType) and state.size == 8
    assert isinstance(state.target, QualifiedType) and state.target.qualifier == "const"
    assert state.display_name() == "const float *"
    n = by_name["n"].type
    assert isinstance(n, BaseType) and n.size == 4 and n.encoding == 0x05


def test_loclist_selection_at_boundaries(index_of):
    co = EXAMPLES / "divergent_call/divergent_call.gfx90a.O2.co"
    dump = load_dump(co)
    idx = index_of(co)
    checked = 0
    for die in dump.dies.values():
        if die.tag not in ("DW_TAG_variable", "DW_TAG_formal_parameter") or not die.loclist:
            continue
        info = idx._variable(idx.die(die.offset), "local", [], idx.die(die.offset).unit)
        assert isinstance(info.location, LocList)
        assert [(lo, hi) for lo, hi, _ in info.location.entries] == [(lo, hi) for lo, hi, _ in die.loclist]
        for lo, hi, text in die.loclist:
            assert info.location_at(lo) is not None
            assert info.location_at(hi - 1) == info.location_at(lo)
            if not any(l2 <= hi < h2 for l2, h2, _ in die.loclist):
                assert info.location_at(hi) is None  # high is exclusive
            m = re.fullmatch(r"DW_OP_regx VGPR(\d+)_LO16", text)
            if m:
                assert info.location_at(lo) == b"\x90" + uleb(2560 + int(m.group(1)))
                checked += 1
    assert checked > 0


def test_function_scope_lds_variables_and_globals(index_of):
    co = EXAMPLES / "lds_tiles/lds_tiles.gfx90a.O0.co"
    dump = load_dump(co)
    idx = index_of(co)
    kernel = next(d for d in dump.top.children if d.string("DW_AT_name") == "transpose_tiles")
    pc = kernel.ranges[0][0] + 0x20
    frame = idx.frames_at(pc)[0]
    by_name = {v.name: v for v in idx.variables(frame, pc)}
    tile = by_name["tile"]
    assert tile.kind == "local"
    # DW_OP_addrx 0, DW_OP_lit2, DW_OP_swap, DW_OP_xderef
    assert tile.location_at(pc) == bytes([0xA1, 0x00, 0x32, 0x16, 0x18])
    t = tile.type
    assert isinstance(t, ArrayType) and t.dims == [16, 17] and byte_size(t) == 16 * 17 * 4
    assert by_name["row_sums"].type.dims == [16]
    assert by_name["row_sums"].location_at(pc) == bytes([0xA1, 0x01, 0x32, 0x16, 0x18])
    # File-scope variables are exactly the unit-level DW_TAG_variable entries with a name.
    expected = sorted(dump_name(dump, d) for d in dump.top.children if d.tag == "DW_TAG_variable"
                      and "DW_AT_declaration" not in d.attrs)
    got = idx.globals()
    assert sorted(g.name for g in got) == expected
    assert all(g.kind == "global" and g.scope_ranges is None for g in got)
    assert [g.name for g in idx.globals(0)] == [g.name for g in got]


def test_find_type_and_subprogram_by_name(index_of):
    idx = index_of(EXAMPLES / "scratch_struct/scratch_struct.gfx90a.O2.co")
    particle = idx.find_type("Particle")
    assert isinstance(particle, StructType) and particle.size == 72
    assert idx.find_type("int").size == 4
    assert idx.find_type("no_such_type_here") is None
    by_plain = idx.subprogram_by_name("integrate")
    by_linkage = idx.subprogram_by_name("_Z9integratePKfPKiPfif")
    assert by_plain is not None and by_plain == by_linkage
    assert idx.type_at(particle.die_offset) is particle  # cached


def test_base_type_and_expr_for_die(index_of):
    co = EXAMPLES / "lds_tiles/lds_tiles.gfx90a.O0.co"
    dump = load_dump(co)
    idx = index_of(co)
    int_die = next(d for d in dump.dies.values() if d.tag == "DW_TAG_base_type" and d.string("DW_AT_name") == "int")
    assert idx.base_type(int_die.offset) == (4, 0x05)
    tile = next(d for d in dump.dies.values() if d.string("DW_AT_name") == "tile")
    assert idx.expr_for_die(tile.offset) == bytes([0xA1, 0x00, 0x32, 0x16, 0x18])
    assert idx.expr_for_die(int_die.offset) is None
    assert idx.die_count() > 1000


# --- lines ----------------------------------------------------------------------------------


@pytest.mark.parametrize("co", [EXAMPLES / "divergent_call/divergent_call.gfx90a.O2.co",
                                EXAMPLES / "lds_tiles/lds_tiles.gfx1030.O0.co"], ids=lambda p: p.name)
def test_line_for_pc_matches_dwarfdump_rows(co, index_of):
    dump = load_dump(co)
    idx = index_of(co)
    rows = dump.rows
    assert rows
    for i, (addr, line, col, _file, flags) in enumerate(rows):
        if "end_sequence" in flags or (i + 1 < len(rows) and rows[i + 1][0] == addr):
            continue  # the last row at an address is the one that covers it
        info = idx.line_for_pc(addr)
        assert info is not None, hex(addr)
        assert (info.line, info.column, info.is_stmt) == (line, col, "is_stmt" in flags), hex(addr)


def test_pcs_for_line_round_trip(index_of):
    co = EXAMPLES / "divergent_call/divergent_call.gfx90a.O0.co"
    dump = load_dump(co)
    idx = index_of(co)
    src = "examples/divergent_call/divergent_call.hip"
    assert src in idx.source_files()
    stmt_lines = {line for addr, line, col, f, flags in dump.rows if f == 0 and "is_stmt" in flags and line}
    assert stmt_lines
    for line in sorted(stmt_lines):
        pcs = idx.pcs_for_line(src, line)
        assert pcs, line
        first = min(a for a, l, c, f, fl in dump.rows if f == 0 and l == line and "is_stmt" in fl)
        assert first in pcs
        for pc in pcs:
            info = idx.line_for_pc(pc)
            assert info.line == line and info.file == src
    # Relative and basename spellings find the same code.
    some = min(stmt_lines)
    assert idx.pcs_for_line("divergent_call.hip", some) == idx.pcs_for_line(src, some)
    # A line without code slides to the next line that has some.
    blank = next(line for line in range(1, max(stmt_lines)) if line not in stmt_lines and line > min(stmt_lines))
    nxt = min(line for line in stmt_lines if line > blank)
    assert idx.pcs_for_line(src, blank) == idx.pcs_for_line(src, nxt)
    assert idx.source_text(src) is None  # Debian clang does not embed sources


# --- dialect ----------------------------------------------------------------------------------


@pytest.mark.parametrize("co", ALL_OBJECTS, ids=lambda p: p.name)
def test_dialect_of_debian_clang(co, index_of):
    idx = index_of(co)
    d = idx.dialect_for_cu(0)
    assert d.vendor_ops == "amd"
    assert d.heterogeneous is False
    assert d.producer.startswith("Debian clang")
    assert (d.version, d.address_size, d.offset_size) == (5, 8, 4)


def test_constant_values_come_through(index_of):
    co = EXAMPLES / "divergent_call/divergent_call.gfx90a.O2.co"
    dump = load_dump(co)
    idx = index_of(co)
    consts = [d for d in dump.dies.values() if "DW_AT_const_value" in d.attrs and d.tag == "DW_TAG_formal_parameter"]
    for d in consts:
        info = idx._variable(idx.die(d.offset), "parameter", [], idx.die(d.offset).unit)
        assert isinstance(info.location, ConstValue)
        assert info.location.value == int(d.attrs["DW_AT_const_value"].strip("()"), 0)
