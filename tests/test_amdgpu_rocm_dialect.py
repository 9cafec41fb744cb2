"""ROCm's own DWARF, hand-assembled the way AMD's compiler writes it, read over a real dump.

Every ROCm release's compiler (AMD clang 12-17) writes the augmentation `[llvm:v0.0]`, whole-wave
vector registers selected with `push_lane`, DW_ASPACE numbers for `xderef`, the kernel CFA as
`lit0; lit6; form_aspace_address` (legacy 0xe1 byte), `DW_OP_constu 0` for `__shared__` arrays it
optimized out (ROCm 4.x) and, from ROCm 6.1, the memory space at attribute 0x3e0d. The unit
below follows those shapes; the dump is the lds_tiles gfx90a -O2 one (a real kernel's waves, LDS
and registers), and expectations come from the dump's raw registers and LDS bytes.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np

from aspace_dap.adapters.amdgpu.adapter import AmdgpuAdapter
from aspace_dap.dwarf.asm import assemble, encode_uleb as uleb
from aspace_dap.dwarf.cfi import CallFrameInfo, unwind_frame
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.dwarf.storage import read_bytes
from aspace_dap.dwarf.target import Dialect, FrameContext
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.values.format import format_obj
from aspace_dap.values.objects import Obj
from test_dwarf_index_synthetic import FakeElf, FakeSection, abbrev_table, cstr, exprloc

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O2"
PRODUCER = "AMD clang version 17.0.0 (https://github.com/RadeonOpenCompute/llvm-project roc-6.2.0 24292 26466ce804ac523b398608f17388eb6d605a3f09)"
AUGMENTATION = "[llvm:v0.0]"
AMD_OPS = Dialect(vendor_ops="amd", heterogeneous=True)
EM_AMDGPU = 224
LOW, HIGH = 0x1900, 0x1C00
VGPR3 = 2560 + 3

# DWARF codes
TAG_CU, TAG_BASE, TAG_ARRAY, TAG_SUBRANGE, TAG_SUB, TAG_VAR = 0x11, 0x24, 0x01, 0x21, 0x2E, 0x34
AT_NAME, AT_PRODUCER, AT_LOW, AT_HIGH, AT_TYPE, AT_LOC, AT_FB = 0x03, 0x25, 0x11, 0x12, 0x49, 0x02, 0x40
AT_BYTE_SIZE, AT_ENCODING, AT_COUNT = 0x0B, 0x3E, 0x37
AT_AUGMENTATION, AT_MEMORY_SPACE_61 = 0x3E09, 0x3E0D
F_ADDR, F_DATA1, F_DATA4, F_STRING, F_REF4, F_EXPRLOC = 0x01, 0x0B, 0x06, 0x08, 0x13, 0x18


def rocm_unit(variables: list[tuple[str, str, bytes, int | None]]) -> DwarfIndex:
    """One ROCm-style unit: a kernel with `variables` (name, type "int" | "int[64]", expression,
    DW_AT_LLVM_memory_space at 0x3e0d or None)."""
    abbrevs = [
        (1, TAG_CU, True, [(AT_PRODUCER, F_STRING), (AT_AUGMENTATION, F_STRING), (AT_NAME, F_STRING),
                           (AT_LOW, F_ADDR), (AT_HIGH, F_DATA4)]),
        (2, TAG_BASE, False, [(AT_NAME, F_STRING), (AT_BYTE_SIZE, F_DATA1), (AT_ENCODING, F_DATA1)]),
        (3, TAG_ARRAY, True, [(AT_TYPE, F_REF4)]),
        (4, TAG_SUBRANGE, False, [(AT_COUNT, F_DATA1)]),
        (5, TAG_SUB, True, [(AT_NAME, F_STRING), (AT_LOW, F_ADDR), (AT_HIGH, F_DATA4), (AT_FB, F_EXPRLOC)]),
        (6, TAG_VAR, False, [(AT_NAME, F_STRING), (AT_TYPE, F_REF4), (AT_LOC, F_EXPRLOC)]),
        (7, TAG_VAR, False, [(AT_NAME, F_STRING), (AT_TYPE, F_REF4), (AT_LOC, F_EXPRLOC),
                             (AT_MEMORY_SPACE_61, F_DATA1)]),
    ]
    abbrev = abbrev_table(abbrevs)
    header = 12
    body = uleb(1) + cstr(PRODUCER) + cstr(AUGMENTATION) + cstr("k.hip") + struct.pack("<QI", LOW, HIGH - LOW)
    int_off = header + len(body)
    body += uleb(2) + cstr("int") + bytes([4, 0x05])
    array_off = header + len(body)
    body += uleb(3) + struct.pack("<I", int_off) + uleb(4) + bytes([64]) + b"\0"
    frame_base = assemble("DW_OP_regx 65; DW_OP_deref_size 4; DW_OP_lit6; DW_OP_shr; DW_OP_constu 5; "
                          "DW_OP_LLVM_form_aspace_address", AMD_OPS)
    body += uleb(5) + cstr("kern") + struct.pack("<QI", LOW, HIGH - LOW) + exprloc(frame_base)
    for name, type_name, expr, mspace in variables:
        ref = struct.pack("<I", int_off if type_name == "int" else array_off)
        if mspace is None:
            body += uleb(6) + cstr(name) + ref + exprloc(expr)
        else:
            body += uleb(7) + cstr(name) + ref + exprloc(expr) + bytes([mspace])
    body += b"\0\0"
    info = struct.pack("<IHBBI", len(body) + 8, 5, 1, 8, 0) + body
    return DwarfIndex(FakeElf({".debug_info": info, ".debug_abbrev": abbrev}), e_machine=EM_AMDGPU)


def _dump_wave():
    state = load_state(DUMP)
    return state, state.waves[0]


def test_llvm_augmentation_is_the_heterogeneous_dialect():
    index = rocm_unit([("x", "int", assemble("DW_OP_regx 2563; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; "
                                               "DW_OP_LLVM_offset", AMD_OPS), None)])
    dialect = index.dialect_for_cu(0)
    assert dialect.heterogeneous and dialect.vendor_ops == "amd" and "roc-6.2.0" in dialect.producer


def test_push_lane_offset_shows_lane_5s_dword_of_v3():
    expr = assemble("DW_OP_regx 2563; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", AMD_OPS)
    index = rocm_unit([("x", "int", expr, None)])
    (frame,) = index.frames_at(LOW + 4)
    (x,) = index.variables(frame, LOW + 4)
    state, wave = _dump_wave()
    target = AmdgpuAdapter().wave_target(state, wave, x.dialect)
    lanes = np.arange(wave.lanes)
    res = evaluate(x.location_at(LOW + 4), target, x.dialect, lanes, frame=FrameContext(pc=LOW + 4))
    assert not res.errors
    raw, valid = wave.registers.raw("v3")
    assert valid[:4 * wave.lanes].all()
    for glanes, loc in res.groups:
        for i, lane in enumerate(glanes):
            obj = Obj.from_location(x.type, loc.take(np.array([i])), target, glanes[i:i + 1])
            want = int.from_bytes(bytes(raw[4 * lane:4 * lane + 4]), "little", signed=True)
            assert format_obj(obj, 0) == str(want), lane
    lane5 = next(loc.take(np.array([list(g).index(5)])) for g, loc in res.groups if 5 in g)
    assert lane5.describe(0) == "v3[lane 5]"


def test_xderef_with_dw_aspace_3_reads_lds():
    state, wave = _dump_wave()
    lds = state.dispatches[0].workgroups[0].lds
    want, valid = lds.read(0x440, 4)  # row_sums[0] in the dump
    assert valid.all()
    expr = assemble("DW_OP_constu 0x440; DW_OP_lit3; DW_OP_swap; DW_OP_xderef_size 4", AMD_OPS)
    index = rocm_unit([("first_sum", "int", expr, None)])
    (frame,) = index.frames_at(LOW)
    (var,) = index.variables(frame, LOW)
    target = AmdgpuAdapter().wave_target(state, wave, var.dialect)
    res = evaluate(var.location_at(LOW), target, var.dialect, np.arange(4), frame=FrameContext(pc=LOW),
                   kind="value")
    assert not res.errors, res.errors
    for lane in range(4):
        assert int(res.for_lane(lane).bits[0]) & 0xFFFFFFFF == int.from_bytes(bytes(want), "little")


def test_form_aspace_address_3_is_lds_too():
    state, wave = _dump_wave()
    lds = state.dispatches[0].workgroups[0].lds
    want, _ = lds.read(0x440, 8)
    target = AmdgpuAdapter().wave_target(state, wave, AMD_OPS)
    res = evaluate(assemble("DW_OP_constu 0x440; DW_OP_lit3; DW_OP_LLVM_form_aspace_address", AMD_OPS),
                   target, AMD_OPS, np.arange(2), frame=FrameContext(pc=LOW))
    (glanes, loc), = res.groups
    data, state_bytes = read_bytes(loc, target, 8)
    assert loc.primary.space.name == "local" and not state_bytes.any()
    assert bytes(data[0]) == bytes(want)


def test_memory_space_at_0x3e0d_and_constu_0_placeholder():
    index = rocm_unit([("gone", "int[64]", assemble("DW_OP_constu 0", AMD_OPS), 3)])
    (frame,) = index.frames_at(LOW)
    (gone,) = index.variables(frame, LOW)
    assert gone.memory_space == 3  # DW_MSPACE_LLVM_group, at ROCm 6.1's attribute code
    adapter = AmdgpuAdapter()
    assert adapter.workgroup_variable(gone)
    placement = adapter.static_placement(None, gone)
    assert placement is not None and placement.offset is None and "DW_OP_constu 0" in placement.why


def test_dw_op_llvm_use_alone_makes_a_unit_heterogeneous():
    # no augmentation at all, but push_lane in a location: still ROCm's dialect
    index = rocm_unit([("x", "int", assemble("DW_OP_regx 2563; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; "
                                               "DW_OP_LLVM_offset", AMD_OPS), None)])
    info = index._sec(".debug_info")
    stripped = info.replace(cstr(AUGMENTATION), cstr("[nope:none]"))  # same length, no augmentation
    bare = DwarfIndex(FakeElf({".debug_info": stripped, ".debug_abbrev": index._sec(".debug_abbrev")}),
                      e_machine=EM_AMDGPU)
    (frame,) = bare.frames_at(LOW)
    (x,) = bare.variables(frame, LOW)
    assert x.dialect.heterogeneous and frame.dialect.heterogeneous
    assert AmdgpuAdapter().register_info(VGPR3, 64, x.dialect).size == 256  # the whole wave's v3


def test_kernel_cfa_lit0_lit6_legacy_form_aspace_address():
    # ROCm's kernel CIE: DW_CFA_def_cfa_expression (lit0; lit6; 0xe1) and DW_CFA_undefined PC
    instructions = b"\x0f" + uleb(3) + bytes([0x30, 0x36, 0xE1]) + b"\x07" + uleb(16)
    cie_body = struct.pack("<I", 0xFFFFFFFF) + bytes([4]) + b"\0" + bytes([8, 0]) + uleb(4) + b"\x7c" + uleb(16) \
        + instructions
    cie_body += b"\0" * (-len(cie_body) % 4)
    cie = struct.pack("<I", len(cie_body)) + cie_body
    fde_body = struct.pack("<I", 0) + struct.pack("<QQ", LOW, HIGH - LOW)
    fde = struct.pack("<I", len(fde_body)) + fde_body

    class Elf:
        def get_section_by_name(self, name):
            return FakeSection(cie + fde) if name == ".debug_frame" else None

    rules = CallFrameInfo(Elf(), e_machine=EM_AMDGPU).rules_at(LOW + 0x10)
    state, wave = _dump_wave()
    target = AmdgpuAdapter().wave_target(state, wave, AMD_OPS)
    places = []

    def evaluate_expr(expr, cfa):
        (_, loc), = evaluate(expr, target, AMD_OPS, np.array([0]), frame=FrameContext(pc=LOW)).groups
        places.append(loc.primary.space.name)
        return int(loc.primary.address[0])

    frame = unwind_frame(rules, {16: LOW + 0x10}.get, lambda space, address, size: None, evaluate_expr)
    assert frame.cfa == 0 and frame.cfa_space == "private_wave" and places == ["private_wave"]
    assert frame.caller_pc is None  # a kernel has no caller


def test_lds_placeholders_in_the_heterogeneous_dialect():
    from aspace_dap.adapters.amdgpu.lds import is_bare_zero, static_lds_address

    index = rocm_unit([
        ("local_addr", "int[64]", assemble("DW_OP_addr 0x0; DW_OP_lit3; DW_OP_LLVM_form_aspace_address", AMD_OPS), None),
        ("by_space", "int[64]", assemble("DW_OP_addr 0x40", AMD_OPS), 3),
        ("rocm4", "int[64]", assemble("DW_OP_constu 0", AMD_OPS), None),
        ("private", "int", assemble("DW_OP_addr 0x40; DW_OP_lit5; DW_OP_LLVM_form_aspace_address", AMD_OPS), None)])
    (frame,) = index.frames_at(LOW)
    got = {v.name: v for v in index.variables(frame, LOW)}
    assert static_lds_address(got["local_addr"], index) == (0, True)
    assert static_lds_address(got["by_space"], index) == (0x40, True)
    assert static_lds_address(got["private"], index) == (None, False)
    assert is_bare_zero(got["rocm4"]) and not is_bare_zero(got["by_space"])
    # ROCm 4.x's bare constu 0 is never an address: unavailable, not global#0x0
    placement = AmdgpuAdapter().static_placement(None, got["rocm4"])
    assert placement.offset is None and "DW_OP_constu 0" in placement.why


def with_sections(elf: bytes, replaced: dict[str, bytes]) -> bytes:
    """An ELF64 whose named sections hold new bytes (appended at the end; headers moved after them)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [bytearray(elf[shoff + i * shentsize:shoff + (i + 1) * shentsize]) for i in range(shnum)]
    names_at = struct.unpack_from("<Q", headers[shstrndx], 0x18)[0]
    out = bytearray(elf[:shoff])
    for header in headers:
        name_off = struct.unpack_from("<I", header, 0)[0]
        name = elf[names_at + name_off:elf.index(b"\0", names_at + name_off)].decode()
        if name in replaced:
            struct.pack_into("<QQ", header, 0x18, len(out), len(replaced[name]))
            out += replaced[name]
    out += b"\0" * (-len(out) % 8)
    struct.pack_into("<Q", out, 0x28, len(out))
    return bytes(out) + b"".join(headers)


def test_a_rocm_code_object_shows_lane_5_of_v3_in_the_debugger(tmp_path):
    """The whole path a user takes: a dump whose code object carries ROCm's DWARF for its kernel
    (the lds_tiles -O2 dump's stop PC 0x1a9c lies in the unit's [0x1900, 0x1c00))."""
    index = rocm_unit([
        ("x", "int", assemble("DW_OP_regx 2563; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset",
                              AMD_OPS), None),
        ("first_sum", "int", assemble("DW_OP_constu 0x440; DW_OP_lit3; DW_OP_LLVM_form_aspace_address", AMD_OPS),
         3)])
    dump = tmp_path / "rocm"
    shutil.copytree(DUMP, dump)
    code = dump / "code" / "lds_tiles.gfx90a.O2.co"
    code.write_bytes(with_sections(code.read_bytes(), {".debug_info": index._sec(".debug_info"),
                                                       ".debug_abbrev": index._sec(".debug_abbrev")}))
    session = Session.open(str(dump), lane=5)
    frame = session.frames()[0]
    # the unit's subprogram has no linkage name: it is named by the kernel symbol that starts where it
    # starts, as llvm-symbolizer names it (_Z15transpose_tilesPKfPfS1_ii)
    assert frame.name == "transpose_tiles" and frame.dialect.heterogeneous
    variables = {v.name: v for v in session.variables(frame)}
    raw, _ = session.wave().registers.raw("v3")
    x = session.read_variable(frame, variables["x"]).obj_for(5)
    assert format_obj(x, 0) == str(int.from_bytes(bytes(raw[20:24]), "little", signed=True))
    assert session.location_text(x) == "v3[lane 5]"
    lds = session.state.dispatches[0].workgroups[0].lds
    want, _ = lds.read(0x440, 4)
    first = session.read_variable(frame, variables["first_sum"]).obj_for(5)
    assert format_obj(first, 0) == str(int.from_bytes(bytes(want), "little", signed=True))
    assert session.location_text(first) == "local#0x440 (LDS)"
