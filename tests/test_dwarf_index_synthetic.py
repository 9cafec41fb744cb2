"""The DWARF index on hand-built DWARF (heterogeneous attributes) and on broken input."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.dwarf.asm import encode_uleb as uleb
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.dwarf.types import ArrayType, BaseType, PointerType, StructType
from aspace_dap.errors import AspaceError, CodeObjectError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class FakeSection:
    def __init__(self, data: bytes):
        self._data = data

    def __getitem__(self, key):
        return {"sh_type": "SHT_PROGBITS", "sh_addr": 0}[key]

    def data(self) -> bytes:
        return self._data


class FakeElf:
    """Just what the index asks of an ELF: a header and sections by name."""

    def __init__(self, sections: dict[str, bytes]):
        self.header = {"e_type": "ET_EXEC"}
        self.sections = sections

    def get_section_by_name(self, name: str):
        data = self.sections.get(name)
        return FakeSection(data) if data is not None else None



def cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def exprloc(b: bytes) -> bytes:
    return uleb(len(b)) + b


def abbrev_table(abbrevs: list[tuple[int, int, bool, list[tuple[int, int]]]]) -> bytes:
    """.debug_abbrev for (code, tag, has_children, [(attribute, form), ...]) entries."""
    out = b""
    for code, tag, children, attrs in abbrevs:
        out += uleb(code) + uleb(tag) + bytes([1 if children else 0])
        for at, form in attrs:
            out += uleb(at) + uleb(form)
        out += b"\0\0"
    return out + b"\0"


DW_FORM_ADDR, DW_FORM_DATA1, DW_FORM_DATA4, DW_FORM_STRING, DW_FORM_REF4, DW_FORM_EXPRLOC = 0x01, 0x0B, 0x06, 0x08, 0x13, 0x18

LANE_PC_EXPR = bytes([0x90]) + uleb(2562)  # regx VGPR2
ACTIVE_LANE_EXPR = bytes([0x90, 0x11])  # regx EXEC
FRAME_BASE = bytes([0x90, 0x41])
VAR_EXPR = bytes([0x91, 0x10])


def build_cu(augmentation: str | None) -> dict[str, bytes]:
    """A DWARF 5 unit: base type with a vector size, an address-space pointer,
    a kernel with lane_pc/active_lane, a variable with a memory space."""
    cu_attrs = [(0x25, DW_FORM_STRING)] + ([(0x3E09, DW_FORM_STRING)] if augmentation else []) + [
        (0x03, DW_FORM_STRING), (0x11, DW_FORM_ADDR), (0x12, DW_FORM_DATA4)]
    abbrevs = [
        (1, 0x11, True, cu_attrs),
        (2, 0x24, False, [(0x03, DW_FORM_STRING), (0x0B, DW_FORM_DATA1), (0x3E, DW_FORM_DATA1), (0x3E13, DW_FORM_DATA1)]),
        (3, 0x0F, False, [(0x49, DW_FORM_REF4), (0x3E10, DW_FORM_DATA1)]),
        (4, 0x2E, True, [(0x03, DW_FORM_STRING), (0x11, DW_FORM_ADDR), (0x12, DW_FORM_DATA4),
                         (0x40, DW_FORM_EXPRLOC), (0x3E12, DW_FORM_EXPRLOC), (0x3E08, DW_FORM_EXPRLOC)]),
        (5, 0x34, False, [(0x03, DW_FORM_STRING), (0x49, DW_FORM_REF4), (0x02, DW_FORM_EXPRLOC), (0x3E0F, DW_FORM_DATA1)]),
    ]
    abbrev = abbrev_table(abbrevs)

    header_size = 12
    cu = uleb(1) + cstr("AMD clang version 17.0.0") + (cstr(augmentation) if augmentation else b"") + \
        cstr("k.hip") + struct.pack("<QI", 0x1000, 0x100)
    float4_off = header_size + len(cu)
    base = uleb(2) + cstr("float") + bytes([4, 0x04, 4])
    ptr_off = float4_off + len(base)
    ptr = uleb(3) + struct.pack("<I", float4_off) + bytes([5])
    sub = uleb(4) + cstr("kern") + struct.pack("<QI", 0x1000, 0x80) + exprloc(FRAME_BASE) + \
        exprloc(LANE_PC_EXPR) + exprloc(ACTIVE_LANE_EXPR)
    var = uleb(5) + cstr("v") + struct.pack("<I", ptr_off) + exprloc(VAR_EXPR) + bytes([4])
    body = cu + base + ptr + sub + var + b"\0" + b"\0"
    info = struct.pack("<IHBBI", len(body) + 8, 5, 1, 8, 0) + body
    return {".debug_info": info, ".debug_abbrev": abbrev}


def test_heterogeneous_attributes_are_decoded():
    idx = DwarfIndex(FakeElf(build_cu("[amdgpu:v0.0]")), e_machine=224)
    dialect = idx.dialect_for_cu(0)
    assert dialect.heterogeneous and dialect.vendor_ops == "amd"
    frames = idx.frames_at(0x1010)
    assert [f.function for f in frames] == ["kern"]
    frame = frames[0]
    assert frame.lane_pc_expr == LANE_PC_EXPR
    assert frame.active_lane_expr == ACTIVE_LANE_EXPR
    assert frame.frame_base_expr == FRAME_BASE
    (v,) = idx.variables(frame, 0x1010)
    assert v.name == "v" and v.location_at(0x1010) == VAR_EXPR and v.memory_space == 4
    ptr = v.type
    assert isinstance(ptr, PointerType) and ptr.address_space == 5 and ptr.size == 8
    vec = ptr.target
    assert isinstance(vec, ArrayType) and vec.vector and vec.dims == [4] and vec.size == 16
    assert isinstance(vec.element, BaseType) and vec.element.size == 4
    assert idx.frames_at(0x1080) == []  # high_pc is exclusive


def test_same_codes_are_ignored_without_the_augmentation():
    # Upstream LLVM uses 0x3e08-0x3e13 for other things: no AMD meaning without the augmentation.
    idx = DwarfIndex(FakeElf(build_cu(None)), e_machine=224)
    assert idx.dialect_for_cu(0).heterogeneous is False
    assert idx.dialect_for_cu(0).vendor_ops == "amd"
    frame = idx.frames_at(0x1010)[0]
    assert frame.lane_pc_expr is None and frame.active_lane_expr is None
    (v,) = idx.variables(frame, 0x1010)
    assert v.memory_space is None
    assert v.type.address_space is None
    assert isinstance(v.type.target, BaseType)


@pytest.mark.parametrize("machine,vendor", [(224, "amd"), (190, "nvidia"), (205, "intel"), (62, "gnu")])
def test_vendor_follows_machine(machine, vendor):
    idx = DwarfIndex(FakeElf(build_cu(None)), e_machine=machine)
    assert idx.dialect_for_cu(0).vendor_ops == vendor


# --- malformed input --------------------------------------------------------------------------


def real_sections(co: Path) -> dict[str, bytes]:
    with open(co, "rb") as f:
        elf = ELFFile(f)
        return {s.name: s.data() for s in elf.iter_sections() if s.name.startswith(".debug")}


CO = EXAMPLES / "divergent_call/divergent_call.gfx90a.O2.co"
KERNEL_PC = 0x1850


def exercise(idx: DwarfIndex) -> None:
    frames = idx.frames_at(KERNEL_PC)
    for f in frames:
        for v in idx.variables(f, KERNEL_PC):
            v.type
    idx.globals()
    idx.line_for_pc(KERNEL_PC)


def test_real_sections_through_the_fake_elf_work():
    idx = DwarfIndex(FakeElf(real_sections(CO)), e_machine=224)
    assert idx.frames_at(KERNEL_PC)[-1].function == "divergent"


@pytest.mark.parametrize("cut", [5, 11, 40, 100, 1000, 5000, 9000, 12000, 14000, 14400])
def test_truncated_debug_info_raises_code_object_error(cut):
    sections = real_sections(CO)
    sections[".debug_info"] = sections[".debug_info"][:cut]
    idx = DwarfIndex(FakeElf(sections), e_machine=224)
    with pytest.raises(CodeObjectError):
        exercise(idx)


def test_unknown_abbreviation_code_raises():
    sections = real_sections(CO)
    info = bytearray(sections[".debug_info"])
    info[12] = 0x7F  # the first DIE's abbreviation code
    idx = DwarfIndex(FakeElf(dict(sections, **{".debug_info": bytes(info)})), e_machine=224)
    with pytest.raises(CodeObjectError, match="abbreviation"):
        exercise(idx)


@pytest.mark.parametrize("section", [".debug_abbrev", ".debug_line", ".debug_loclists", ".debug_rnglists",
                                     ".debug_str_offsets", ".debug_addr"])
def test_truncated_side_sections_raise_only_our_errors(section):
    sections = real_sections(CO)
    for cut in (0, 3, len(sections[section]) // 2):
        broken = dict(sections, **{section: sections[section][:cut]})
        idx = DwarfIndex(FakeElf(broken), e_machine=224)
        try:
            exercise(idx)
        except AspaceError:
            pass


def test_garbage_bytes_raise_only_our_errors():
    import random

    rng = random.Random(1234)
    sections = real_sections(CO)
    info = sections[".debug_info"]
    for _ in range(30):
        data = bytearray(info)
        for _ in range(8):
            data[rng.randrange(12, len(data))] = rng.randrange(256)
        idx = DwarfIndex(FakeElf(dict(sections, **{".debug_info": bytes(data)})), e_machine=224)
        try:
            exercise(idx)
        except AspaceError:
            pass


# --- type chains ------------------------------------------------------------------------------

TAG_POINTER, TAG_TYPEDEF, TAG_STRUCT, TAG_MEMBER, TAG_VARIABLE = 0x0F, 0x16, 0x13, 0x0D, 0x34


def types_unit(types: list[tuple[str, int | None]], global_types: list[int]) -> dict[str, bytes]:
    """A DWARF 5 unit holding `types`, each ("base" | "pointer" | "typedef" | "struct", index of the
    type it refers to or None), and one global variable per entry of `global_types` (type indexes).
    A struct gets one member of the type it refers to."""
    abbrevs = [
        (1, 0x11, True, [(0x25, DW_FORM_STRING), (0x03, DW_FORM_STRING)]),
        (2, 0x24, False, [(0x03, DW_FORM_STRING), (0x0B, DW_FORM_DATA1), (0x3E, DW_FORM_DATA1)]),
        (3, TAG_POINTER, False, [(0x49, DW_FORM_REF4)]),
        (4, TAG_TYPEDEF, False, [(0x03, DW_FORM_STRING), (0x49, DW_FORM_REF4)]),
        (5, TAG_STRUCT, True, [(0x03, DW_FORM_STRING), (0x0B, DW_FORM_DATA1)]),
        (6, TAG_MEMBER, False, [(0x03, DW_FORM_STRING), (0x49, DW_FORM_REF4), (0x38, DW_FORM_DATA1)]),
        (7, TAG_VARIABLE, False, [(0x03, DW_FORM_STRING), (0x49, DW_FORM_REF4), (0x02, DW_FORM_EXPRLOC),
                                  (0x3F, 0x19)]),
    ]
    cu = uleb(1) + cstr("clang") + cstr("chain.c")
    sizes = {"base": len(uleb(2) + cstr("float")) + 2, "pointer": len(uleb(3)) + 4,
             "typedef": len(uleb(4) + cstr("t")) + 4,
             "struct": len(uleb(5) + cstr("s")) + 1 + len(uleb(6) + cstr("m")) + 5 + 1}
    offsets, at = [], 12 + len(cu)
    for kind, _ in types:
        offsets.append(at)
        at += sizes[kind]
    body = cu
    for kind, target in types:
        ref = struct.pack("<I", offsets[target]) if target is not None else b""
        body += {"base": lambda: uleb(2) + cstr("float") + bytes([4, 0x04]),
                 "pointer": lambda: uleb(3) + ref,
                 "typedef": lambda: uleb(4) + cstr("t") + ref,
                 "struct": lambda: uleb(5) + cstr("s") + bytes([8]) + uleb(6) + cstr("m") + ref + bytes([0, 0])}[kind]()
    for i, index in enumerate(global_types):
        address = exprloc(bytes([0x03]) + struct.pack("<Q", 0x1000 + 8 * i))  # DW_OP_addr
        body += uleb(7) + cstr(f"g{i}") + struct.pack("<I", offsets[index]) + address
    body += b"\0"
    info = struct.pack("<IHBBI", len(body) + 8, 5, 1, 8, 0) + body
    return {".debug_info": info, ".debug_abbrev": abbrev_table(abbrevs)}


def pointer_chain(length: int) -> list[tuple[str, int | None]]:
    """float, then `length` pointers, each to the one before."""
    return [("base", None)] + [("pointer", i) for i in range(length)]


def pointer_depth(t) -> tuple[int, str]:
    """How many pointers lead to the type at the end of a chain, and that type's name."""
    depth = 0
    while isinstance(t, PointerType):
        depth, t = depth + 1, t.target
    return depth, t.display_name()


def test_a_type_chain_longer_than_any_compiler_writes_is_a_clear_error():
    from aspace_dap.dwarf.typebuild import MAX_TYPE_DEPTH

    fits = pointer_chain(MAX_TYPE_DEPTH - 1)
    idx = DwarfIndex(FakeElf(types_unit(fits, [len(fits) - 1])), e_machine=224)
    (g,) = idx.globals()
    assert pointer_depth(g.type) == (MAX_TYPE_DEPTH - 1, "float")
    for length in (MAX_TYPE_DEPTH, 5000, 50_000):
        chain = pointer_chain(length)
        idx = DwarfIndex(FakeElf(types_unit(chain, [len(chain) - 1, 0])), e_machine=224)
        deep, shallow = idx.globals()
        with pytest.raises(CodeObjectError, match=f"nested more than {MAX_TYPE_DEPTH} types deep"):
            deep.type
        with pytest.raises(CodeObjectError, match="nested more than"):
            deep.type  # nothing of the failed build was kept
        assert shallow.type.display_name() == "float"


def test_a_long_chain_cannot_be_built_a_piece_at_a_time():
    """Globals typed by every 50th link of a 5,000-pointer chain, shallowest first: each build stops
    at the cached link below it, yet no type deeper than the limit is ever made (stripping or naming
    it would recurse through every link)."""
    chain = pointer_chain(5000)
    idx = DwarfIndex(FakeElf(types_unit(chain, list(range(50, len(chain), 50)))), e_machine=224)
    built = failed = 0
    for g in idx.globals():
        try:
            depth, name = pointer_depth(g.type)
        except CodeObjectError as exc:
            assert "nested more than" in str(exc)
            failed += 1
        else:
            built += 1
            assert depth == 50 and name == "float"
    assert built == 1 and failed == 99


@pytest.mark.parametrize("kind", ["pointer", "typedef"])
def test_a_type_that_contains_itself_without_a_struct_is_a_clear_error(kind):
    types = [("base", None), (kind, 2), (kind, 1)]  # two that refer to each other
    idx = DwarfIndex(FakeElf(types_unit(types, [1, 2, 0])), e_machine=224)
    first, second, plain = idx.globals()
    for g in (first, second, first):
        with pytest.raises(CodeObjectError, match="contains itself"):
            g.type
    assert plain.type.display_name() == "float"


def test_a_struct_may_point_to_itself():
    types = [("struct", 1), ("pointer", 0), ("typedef", 0)]  # struct s { s *m; }; typedef s t;
    idx = DwarfIndex(FakeElf(types_unit(types, [2, 1])), e_machine=224)
    node, pointer = idx.globals()
    s = node.type.strip()
    assert isinstance(s, StructType) and s.members[0].type.target is s
    assert pointer.type.display_name() == "s *"
