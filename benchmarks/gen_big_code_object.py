#!/usr/bin/env python3
"""Write a large gfx90a code object with synthetic DWARF 5, for load and index benchmarks.

    gen_big_code_object.py OUT.co [--dies 200000] [--functions-per-cu 100] [--source-stem gen/unit]

The ELF is written directly (CI has no HIP compiler), shaped like hipcc -g output:
an AMDHSA code object V4 with a MessagePack metadata note, one kernel per
compile unit (with its 64-byte kernel descriptor) and device functions after it.
Each compile unit carries base/pointer/struct/array types, an LDS variable
(DW_OP_xderef, as upstream LLVM emits), subprograms with VGPR parameters,
scratch variables (DW_OP_fbreg), loclist variables with VGPR and constant
ranges, lexical blocks, and a line table. `llvm-dwarfdump-15 --verify` accepts it.
"""

from __future__ import annotations

import argparse
import struct
import sys
from dataclasses import dataclass, field

import msgpack

from aspace_dap.dwarf.asm import encode_sleb as sleb, encode_uleb as uleb

# ELF
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ABI_VERSION_V4 = 2
EF_GFX90A_XNACK_ANY_SRAMECC_ANY = 0x03F | 0x100 | 0x400
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE = 1, 2, 3, 7
SHF_ALLOC, SHF_EXECINSTR, SHF_MERGE, SHF_STRINGS = 0x2, 0x4, 0x10, 0x20
PT_LOAD, PT_NOTE = 1, 4
STT_OBJECT, STT_FUNC, STB_GLOBAL = 1, 2, 1

# gfx9 encodings used for filler code
S_NOP = 0xBF800000
S_ENDPGM = 0xBF810000
S_SETPC_B64_S30 = 0xBE801D1E

# DWARF
TAG = dict(compile_unit=0x11, base_type=0x24, pointer_type=0x0F, structure_type=0x13, member=0x0D,
           array_type=0x01, subrange_type=0x21, subprogram=0x2E, formal_parameter=0x05, variable=0x34,
           lexical_block=0x0B)
AT = dict(name=0x03, producer=0x25, language=0x13, comp_dir=0x1B, stmt_list=0x10, low_pc=0x11,
          high_pc=0x12, encoding=0x3E, byte_size=0x0B, type=0x49, data_member_location=0x38, count=0x37,
          frame_base=0x40, decl_file=0x3A, decl_line=0x3B, external=0x3F, location=0x02, const_value=0x1C)
FORM = dict(addr=0x01, data1=0x0B, data2=0x05, data4=0x06, strp=0x0E, ref4=0x13, exprloc=0x18,
            sec_offset=0x17, flag_present=0x19, sdata=0x0D, line_strp=0x1F, udata=0x0F)
DW_LANG_C_PLUS_PLUS_11 = 0x1A
DW_ATE_FLOAT, DW_ATE_SIGNED, DW_ATE_UNSIGNED = 0x04, 0x05, 0x07
DW_OP_ADDR, DW_OP_SWAP, DW_OP_XDEREF, DW_OP_LIT2 = 0x03, 0x16, 0x18, 0x32
DW_OP_REGX, DW_OP_FBREG, DW_OP_CONSTS, DW_OP_STACK_VALUE = 0x90, 0x91, 0x11, 0x9F
DW_LLE_END_OF_LIST, DW_LLE_START_LENGTH = 0x00, 0x08
DW_UT_COMPILE = 0x01
DW_LNCT_PATH, DW_LNCT_DIRECTORY_INDEX = 0x1, 0x2
DW_LNS_COPY, DW_LNS_ADVANCE_PC, DW_LNS_ADVANCE_LINE = 0x01, 0x02, 0x03
DW_LNE_END_SEQUENCE, DW_LNE_SET_ADDRESS = 0x01, 0x02
DWARF_SGPR0, DWARF_VGPR0_WAVE64 = 32, 2560
DECL_FILE = 1  # line-table file entry of the unit's source (see line_program)

# Abbreviation codes, in the order ABBREVS defines them.
ABBREVS = [
    ("compile_unit", True, [("producer", "strp"), ("language", "data2"), ("name", "strp"), ("comp_dir", "strp"),
                            ("stmt_list", "sec_offset"), ("low_pc", "addr"), ("high_pc", "data4")]),
    ("base_type", False, [("name", "strp"), ("encoding", "data1"), ("byte_size", "data1")]),
    ("pointer_type", False, [("type", "ref4"), ("byte_size", "data1")]),
    ("structure_type", True, [("name", "strp"), ("byte_size", "data1"), ("decl_file", "data1"),
                              ("decl_line", "data2")]),
    ("member", False, [("name", "strp"), ("type", "ref4"), ("data_member_location", "data1")]),
    ("array_type", True, [("type", "ref4")]),
    ("subrange_type", False, [("type", "ref4"), ("count", "data1")]),
    ("subprogram", True, [("low_pc", "addr"), ("high_pc", "data4"), ("frame_base", "exprloc"), ("name", "strp"),
                          ("decl_file", "data1"), ("decl_line", "data2"), ("external", "flag_present")]),
    ("formal_parameter", False, [("location", "exprloc"), ("name", "strp"), ("decl_file", "data1"),
                                 ("decl_line", "data2"), ("type", "ref4")]),
    ("variable", False, [("location", "exprloc"), ("name", "strp"), ("decl_file", "data1"),
                         ("decl_line", "data2"), ("type", "ref4")]),
    ("variable", False, [("location", "sec_offset"), ("name", "strp"), ("decl_file", "data1"),
                         ("decl_line", "data2"), ("type", "ref4")]),
    ("variable", False, [("const_value", "sdata"), ("name", "strp"), ("decl_file", "data1"),
                         ("decl_line", "data2"), ("type", "ref4")]),
    ("lexical_block", True, [("low_pc", "addr"), ("high_pc", "data4")]),
]
(AB_CU, AB_BASE, AB_POINTER, AB_STRUCT, AB_MEMBER, AB_ARRAY, AB_SUBRANGE, AB_SUBPROGRAM, AB_PARAM,
 AB_VAR_EXPR, AB_VAR_LOCLIST, AB_VAR_CONST, AB_BLOCK) = range(1, len(ABBREVS) + 1)

DIES_PER_CU_FIXED = 13  # CU, 3 base types, pointer, struct + 4 members, array + subrange, LDS variable
DIES_PER_FUNCTION = 9  # subprogram, 2 params, 3 variables, lexical block, 2 block variables
FUNCTION_BYTES = 64  # 16 instructions
CODE_ALIGN = 256  # kernel entry points must be 256-byte aligned




class StringPool:
    def __init__(self):
        self.data = bytearray()
        self.offsets: dict[str, int] = {}

    def add(self, text: str) -> int:
        offset = self.offsets.get(text)
        if offset is None:
            offset = self.offsets[text] = len(self.data)
            self.data += text.encode() + b"\0"
        return offset


def abbrev_table() -> bytes:
    out = bytearray()
    for code, (tag, children, attrs) in enumerate(ABBREVS, start=1):
        out += uleb(code) + uleb(TAG[tag]) + bytes([1 if children else 0])
        for attr, form in attrs:
            out += uleb(AT[attr]) + uleb(FORM[form])
        out += b"\0\0"
    return bytes(out + b"\0")


def regx(dwarf_reg: int) -> bytes:
    return bytes([DW_OP_REGX]) + uleb(dwarf_reg)


def exprloc(expr: bytes) -> bytes:
    return uleb(len(expr)) + expr


@dataclass
class Layout:
    """Addresses decided before any DWARF is written."""

    cu_count: int
    functions_per_cu: list[int]
    text_addr: int
    cu_code_addr: list[int] = field(default_factory=list)
    cu_code_size: list[int] = field(default_factory=list)


def plan(dies: int, functions_per_cu: int, text_addr: int) -> Layout:
    counts = []
    total = 0
    while total < dies:
        remaining = dies - total - DIES_PER_CU_FIXED
        functions = max(1, min(functions_per_cu, -(-remaining // DIES_PER_FUNCTION)))
        counts.append(functions)
        total += DIES_PER_CU_FIXED + functions * DIES_PER_FUNCTION
    layout = Layout(len(counts), counts, text_addr)
    address = text_addr
    for functions in counts:
        layout.cu_code_addr.append(address)
        size = functions * FUNCTION_BYTES
        layout.cu_code_size.append(size)
        address += -(-size // CODE_ALIGN) * CODE_ALIGN
    return layout


def function_name(cu: int, index: int) -> str:
    return f"_Z15tile_kernel_{cu:05d}Pf" if index == 0 else f"_Z9step_{cu:05d}_{index:03d}Pfi"


def build_text(layout: Layout) -> bytes:
    text = bytearray()
    for cu, functions in enumerate(layout.functions_per_cu):
        text += b"\0" * (layout.cu_code_addr[cu] - layout.text_addr - len(text))
        for index in range(functions):
            last = S_ENDPGM if index == 0 else S_SETPC_B64_S30
            words = [S_NOP] * (FUNCTION_BYTES // 4 - 1) + [last]
            text += struct.pack(f"<{len(words)}I", *words)
    return bytes(text)


def build_dwarf(layout: Layout, lds_addr: int, source_stem: str = "gen/unit"):
    info = bytearray()
    line = bytearray()
    loclists = bytearray()
    strs = StringPool()
    line_strs = StringPool()
    producer = strs.add("aspace-dap synthetic DWARF (gen_big_code_object.py)")
    comp_dir = "/work/generated"
    names = [strs.add(n) for n in ("int", "float", "unsigned int", "Particle", "pos", "vel", "id", "flags",
                                   "p", "history", "scale", "steps", "x", "lane", "acc", "t", "k")]
    (n_int, n_float, n_uint, n_particle, n_pos, n_vel, n_id, n_flags, n_p, n_history, n_scale, n_steps,
     n_x, n_lane, n_acc, n_t, n_k) = names
    die_count = 0

    for cu, functions in enumerate(layout.functions_per_cu):
        source = f"{source_stem}_{cu:05d}.hip"
        low = layout.cu_code_addr[cu]
        size = layout.cu_code_size[cu]
        stmt_list = len(line)
        line += line_program(line_strs, comp_dir, source, low, functions)

        # Loclist entries live in one loclists unit per CU; DW_FORM_sec_offset points at each list.
        list_unit_start = len(loclists)
        loclists += struct.pack("<IHBBI", 0, 5, 8, 0, 0)

        unit = bytearray()
        header_size = 12  # unit_length(4) version(2) unit_type(1) address_size(1) abbrev_offset(4)
        base = len(info)

        def offset_here() -> int:
            return header_size + len(unit)

        unit += uleb(AB_CU) + struct.pack("<IHIII", producer, DW_LANG_C_PLUS_PLUS_11, strs.add(source),
                                          strs.add(comp_dir), stmt_list)
        unit += struct.pack("<QI", low, size)
        t_int = offset_here()
        unit += uleb(AB_BASE) + struct.pack("<IBB", n_int, DW_ATE_SIGNED, 4)
        t_float = offset_here()
        unit += uleb(AB_BASE) + struct.pack("<IBB", n_float, DW_ATE_FLOAT, 4)
        t_uint = offset_here()
        unit += uleb(AB_BASE) + struct.pack("<IBB", n_uint, DW_ATE_UNSIGNED, 4)
        t_ptr = offset_here()
        unit += uleb(AB_POINTER) + struct.pack("<IB", t_float, 8)
        t_struct = offset_here()
        unit += uleb(AB_STRUCT) + struct.pack("<IBBH", n_particle, 16, DECL_FILE, 3)
        for member_name, member_type, member_offset in ((n_pos, t_float, 0), (n_vel, t_float, 4),
                                                        (n_id, t_int, 8), (n_flags, t_uint, 12)):
            unit += uleb(AB_MEMBER) + struct.pack("<IIB", member_name, member_type, member_offset)
        unit += b"\0"
        t_vec = offset_here()
        unit += uleb(AB_ARRAY) + struct.pack("<I", t_float)
        unit += uleb(AB_SUBRANGE) + struct.pack("<IB", t_int, 16)
        unit += b"\0"
        # An LDS array: address in the local address space, as upstream LLVM describes __shared__.
        lds_expr = bytes([DW_OP_ADDR]) + struct.pack("<Q", lds_addr) + bytes([DW_OP_LIT2, DW_OP_SWAP, DW_OP_XDEREF])
        unit += uleb(AB_VAR_EXPR) + exprloc(lds_expr) + struct.pack("<IBHI", strs.add(f"tile_{cu:05d}"), DECL_FILE, 2, t_vec)
        die_count += DIES_PER_CU_FIXED

        for index in range(functions):
            start = low + index * FUNCTION_BYTES
            decl_line = 10 + index * 8
            frame_base = regx(DWARF_SGPR0 + 32)
            unit += uleb(AB_SUBPROGRAM) + struct.pack("<QI", start, FUNCTION_BYTES) + exprloc(frame_base)
            unit += struct.pack("<IBH", strs.add(function_name(cu, index)), DECL_FILE, decl_line)
            unit += uleb(AB_PARAM) + exprloc(regx(DWARF_VGPR0_WAVE64 + 0)) + struct.pack("<IBHI", n_x, DECL_FILE, decl_line, t_ptr)
            unit += uleb(AB_PARAM) + exprloc(regx(DWARF_VGPR0_WAVE64 + 1)) + struct.pack("<IBHI", n_lane, DECL_FILE, decl_line, t_int)
            fbreg = bytes([DW_OP_FBREG]) + sleb(16 * (index % 4))
            unit += uleb(AB_VAR_EXPR) + exprloc(fbreg) + struct.pack("<IBHI", n_p, DECL_FILE, decl_line + 1, t_struct)

            # acc: in v2 for the first half of the function, a known constant for the rest.
            acc_list = len(loclists)
            loclists += loclist_entry(start, FUNCTION_BYTES // 2, regx(DWARF_VGPR0_WAVE64 + 2))
            loclists += loclist_entry(start + FUNCTION_BYTES // 2, FUNCTION_BYTES // 2,
                                      bytes([DW_OP_CONSTS]) + sleb(index - 50) + bytes([DW_OP_STACK_VALUE]))
            loclists += bytes([DW_LLE_END_OF_LIST])
            unit += uleb(AB_VAR_LOCLIST) + struct.pack("<IIBHI", acc_list, n_acc, DECL_FILE, decl_line + 2, t_float)
            unit += uleb(AB_VAR_CONST) + sleb(index * 3 - 7) + struct.pack("<IBHI", n_steps, DECL_FILE, decl_line + 2, t_int)

            unit += uleb(AB_BLOCK) + struct.pack("<QI", start + 16, FUNCTION_BYTES - 32)
            history = bytes([DW_OP_FBREG]) + sleb(64)
            unit += uleb(AB_VAR_EXPR) + exprloc(history) + struct.pack("<IBHI", n_history, DECL_FILE, decl_line + 3, t_vec)
            k_list = len(loclists)
            loclists += loclist_entry(start + 16, 16, regx(DWARF_VGPR0_WAVE64 + 3))
            loclists += loclist_entry(start + 32, 8, bytes([DW_OP_CONSTS]) + sleb(index % 16) + bytes([DW_OP_STACK_VALUE]))
            loclists += bytes([DW_LLE_END_OF_LIST])
            unit += uleb(AB_VAR_LOCLIST) + struct.pack("<IIBHI", k_list, n_k, DECL_FILE, decl_line + 4, t_int)
            unit += b"\0"  # end of lexical block
            unit += b"\0"  # end of subprogram
            die_count += DIES_PER_FUNCTION
        unit += b"\0"  # end of compile unit

        info += struct.pack("<IHBBI", header_size - 4 + len(unit), 5, DW_UT_COMPILE, 8, 0) + unit
        assert len(info) - base == header_size + len(unit)
        struct.pack_into("<I", loclists, list_unit_start, len(loclists) - list_unit_start - 4)

    return {
        ".debug_abbrev": abbrev_table(),
        ".debug_info": bytes(info),
        ".debug_str": bytes(strs.data),
        ".debug_line": bytes(line),
        ".debug_line_str": bytes(line_strs.data),
        ".debug_loclists": bytes(loclists),
    }, die_count


def loclist_entry(start: int, length: int, expr: bytes) -> bytes:
    return bytes([DW_LLE_START_LENGTH]) + struct.pack("<Q", start) + uleb(length) + uleb(len(expr)) + expr


def line_program(line_strs: StringPool, comp_dir: str, source: str, low: int, functions: int) -> bytes:
    min_inst_length = 4
    header = bytearray()
    header += struct.pack("<BBBbBB", min_inst_length, 1, 1, -5, 14, 13)
    header += bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])  # standard_opcode_lengths
    header += bytes([1]) + uleb(DW_LNCT_PATH) + uleb(FORM["line_strp"])
    header += uleb(1) + struct.pack("<I", line_strs.add(comp_dir))
    header += bytes([2]) + uleb(DW_LNCT_PATH) + uleb(FORM["line_strp"])
    header += uleb(DW_LNCT_DIRECTORY_INDEX) + uleb(FORM["udata"])
    # Entry 0 is the unit's primary file and entry 1 the same file again, as clang writes DWARF 5:
    # rows start with file register 1 and the DIEs' decl_file says 1.
    header += uleb(2) + (struct.pack("<I", line_strs.add(source)) + uleb(0)) * 2

    program = bytearray()
    program += b"\0" + uleb(9) + bytes([DW_LNE_SET_ADDRESS]) + struct.pack("<Q", low)
    current_line = 1
    for index in range(functions):
        # Four rows per function, one per 16 bytes, on consecutive source lines.
        for row in range(4):
            target = 10 + index * 8 + row
            program += bytes([DW_LNS_ADVANCE_LINE]) + sleb(target - current_line) + bytes([DW_LNS_COPY])
            current_line = target
            program += bytes([DW_LNS_ADVANCE_PC]) + uleb(16 // min_inst_length)
    program += b"\0" + uleb(1) + bytes([DW_LNE_END_SEQUENCE])

    after_length = struct.pack("<HBB", 5, 8, 0) + struct.pack("<I", len(header)) + header + program
    return struct.pack("<I", len(after_length)) + after_length


def kernel_metadata(layout: Layout) -> bytes:
    kernels = []
    for cu in range(layout.cu_count):
        name = function_name(cu, 0)
        kernels.append({
            ".name": name, ".symbol": f"{name}.kd", ".wavefront_size": 64, ".sgpr_count": 16,
            ".vgpr_count": 8, ".agpr_count": 0, ".sgpr_spill_count": 0, ".vgpr_spill_count": 0,
            ".group_segment_fixed_size": 64, ".private_segment_fixed_size": 128,
            ".kernarg_segment_size": 8, ".kernarg_segment_align": 8, ".max_flat_workgroup_size": 256,
            ".language": "OpenCL C", ".language_version": [2, 0], ".uses_dynamic_stack": False,
            ".args": [{".offset": 0, ".size": 8, ".value_kind": "global_buffer", ".address_space": "global"}],
        })
    return msgpack.packb({"amdhsa.version": [1, 1], "amdhsa.target": "amdgcn-amd-amdhsa--gfx90a",
                          "amdhsa.kernels": kernels})


def note(owner: bytes, note_type: int, desc: bytes) -> bytes:
    name = owner + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)  # noqa: E731
    return struct.pack("<III", len(name), len(desc), note_type) + pad(name) + pad(desc)


def kernel_descriptor(kd_addr: int, entry_addr: int) -> bytes:
    rsrc1 = 1 | (2 << 6) | (3 << 16) | (1 << 21) | (1 << 23)  # 16 VGPRs, 48 SGPRs, denormals, dx10 clamp, IEEE
    rsrc2 = 1 | (6 << 1) | (1 << 7)  # scratch, 6 user SGPRs, workgroup id x
    properties = 0b1011  # private segment buffer, dispatch ptr, kernarg segment ptr
    return struct.pack("<IIII q 20x IIIHH 4x", 64, 128, 8, 0, entry_addr - kd_addr, 0, rsrc1, rsrc2, properties, 0)


def align(value: int, to: int) -> int:
    return -(-value // to) * to


def write_code_object(dies: int, functions_per_cu: int, source_stem: str = "gen/unit") -> tuple[bytes, int, int]:
    ehdr_size, phdr_size, shdr_size, phnum = 64, 56, 64, 3
    # Pass 1 fixes the allocated layout: note, kernel descriptors, then code (vaddr == file offset).
    layout_probe = plan(dies, functions_per_cu, 0)
    note_offset = align(ehdr_size + phnum * phdr_size, 4)
    note_data = note(b"AMDGPU", 32, kernel_metadata(layout_probe))
    rodata_offset = align(note_offset + len(note_data), 64)
    rodata_size = 64 * layout_probe.cu_count
    text_offset = align(rodata_offset + rodata_size, 0x1000)
    layout = plan(dies, functions_per_cu, text_offset)
    text = build_text(layout)
    lds_addr = 0
    rodata = b"".join(
        kernel_descriptor(rodata_offset + 64 * cu, layout.cu_code_addr[cu]) for cu in range(layout.cu_count)
    )
    debug, die_count = build_dwarf(layout, lds_addr, source_stem)

    symbols = bytearray(b"\0" * 24)
    strtab = StringPool()
    strtab.add("")
    for cu, functions in enumerate(layout.functions_per_cu):
        for index in range(functions):
            address = layout.cu_code_addr[cu] + index * FUNCTION_BYTES
            symbols += struct.pack("<IBBHQQ", strtab.add(function_name(cu, index)), (STB_GLOBAL << 4) | STT_FUNC,
                                   3, 3, address, FUNCTION_BYTES)
        symbols += struct.pack("<IBBHQQ", strtab.add(f"{function_name(cu, 0)}.kd"), (STB_GLOBAL << 4) | STT_OBJECT,
                               3, 2, rodata_offset + 64 * cu, 64)

    sections = [
        (".note", SHT_NOTE, SHF_ALLOC, note_data, 4, 0, 0, 0),
        (".rodata", SHT_PROGBITS, SHF_ALLOC, rodata, 64, 0, 0, 0),
        (".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text, CODE_ALIGN, 0, 0, 0),
    ]
    for name, data in debug.items():
        flags = SHF_MERGE | SHF_STRINGS if name.endswith("str") else 0
        sections.append((name, SHT_PROGBITS, flags, data, 1, 0, 0, 1 if flags else 0))
    symtab_index = len(sections) + 1
    sections.append((".symtab", SHT_SYMTAB, 0, bytes(symbols), 8, symtab_index + 1, 1, 24))
    sections.append((".strtab", SHT_STRTAB, 0, bytes(strtab.data), 1, 0, 0, 0))
    shstrtab = StringPool()
    shstrtab.add("")
    for section in sections:
        shstrtab.add(section[0])
    shstrtab.add(".shstrtab")
    sections.append((".shstrtab", SHT_STRTAB, 0, bytes(shstrtab.data), 1, 0, 0, 0))

    image = bytearray(b"\0" * note_offset)
    headers = [b"\0" * shdr_size]
    fixed_offsets = {".note": note_offset, ".rodata": rodata_offset, ".text": text_offset}
    for name, sh_type, flags, data, alignment, link, info, entsize in sections:
        offset = fixed_offsets.get(name, align(len(image), alignment))
        image += b"\0" * (offset - len(image)) + data
        address = offset if flags & SHF_ALLOC else 0
        headers.append(struct.pack("<IIQQQQIIQQ", shstrtab.add(name), sh_type, flags, address, offset, len(data),
                                   link, info, alignment, entsize))
    shoff = align(len(image), 8)
    image += b"\0" * (shoff - len(image)) + b"".join(headers)

    text_end = text_offset + len(text)
    program_headers = [
        struct.pack("<IIQQQQQQ", PT_LOAD, 4, 0, 0, 0, rodata_offset + rodata_size, rodata_offset + rodata_size, 0x1000),
        struct.pack("<IIQQQQQQ", PT_LOAD, 5, text_offset, text_offset, text_offset, len(text), len(text), 0x1000),
        struct.pack("<IIQQQQQQ", PT_NOTE, 4, note_offset, note_offset, note_offset, len(note_data), len(note_data), 4),
    ]
    assert text_end <= shoff
    image[ehdr_size : ehdr_size + phnum * phdr_size] = b"".join(program_headers)
    ident = b"\x7fELF" + bytes([2, 1, 1, ELFOSABI_AMDGPU_HSA, ABI_VERSION_V4]) + b"\0" * 7
    image[:ehdr_size] = ident + struct.pack("<HHIQQQIHHHHHH", 3, EM_AMDGPU, 1, 0, ehdr_size, shoff,
                                            EF_GFX90A_XNACK_ANY_SRAMECC_ANY, ehdr_size, phdr_size, phnum,
                                            shdr_size, len(headers), len(headers) - 1)
    return bytes(image), die_count, layout.cu_count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="path of the code object to write")
    parser.add_argument("--dies", type=int, default=200_000, help="minimum number of DIEs (default 200000)")
    parser.add_argument("--functions-per-cu", type=int, default=100)
    parser.add_argument("--source-stem", default="gen/unit",
                        help="compile unit N's source is STEM_N.hip, relative to /work/generated (default gen/unit)")
    args = parser.parse_args(argv)
    if args.dies < 1 or args.functions_per_cu < 1:
        parser.error("--dies and --functions-per-cu must be positive")
    image, die_count, cu_count = write_code_object(args.dies, args.functions_per_cu, args.source_stem)
    with open(args.out, "wb") as handle:
        handle.write(image)
    print(f"wrote {args.out}: {len(image)} bytes, {cu_count} compile units, {die_count} DIEs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
