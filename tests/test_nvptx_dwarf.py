"""The NVIDIA adapter on real nvcc cubins: relocation, register map, and every location expression decoding."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.adapters import adapter_for
from aspace_dap.adapters.nvidia.adapter import GENERIC, LOCAL, PARAM, SHARED, NvptxAdapter
from aspace_dap.adapters.nvidia.cubin import (LOC_PRED, LOC_REG, RegisterMap, kernel_parameters, ptx_register_name,
                                              ptx_register_number, ptx_register_size, read_cubin_debug,
                                              register_counts, relocate_cubin)
from aspace_dap.dwarf.cfi import CallFrameInfo
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.dwarf.ops import decode
from aspace_dap.dwarf.target import Dialect
from aspace_dap.errors import CodeObjectError

CUDA = Path(__file__).resolve().parent.parent / "examples" / "cuda"
CUBINS = sorted(CUDA.glob("*.cubin"))
DEBUG_CUBINS = sorted(CUDA.glob("*.G.cubin"))
NVIDIA = Dialect(vendor_ops="nvidia", version=2)
EXPR_FORMS = ("DW_FORM_exprloc", "DW_FORM_block1", "DW_FORM_block2", "DW_FORM_block4", "DW_FORM_block")
LOCATION_ATTRS = ("DW_AT_location", "DW_AT_frame_base", "DW_AT_data_member_location")


def relocated(path: Path) -> bytes:
    return relocate_cubin(path.read_bytes(), path.name)


def test_examples_are_built():
    assert len(DEBUG_CUBINS) == 9 and len(CUBINS) == 18


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.name)
def test_relocation_lays_functions_out_and_is_idempotent(path):
    image = relocated(path)
    assert relocate_cubin(image) == image
    layout, _ = read_cubin_debug(image)
    spans = [(f.start, f.end) for f in layout.functions]
    assert spans and all(a < b for a, b in spans)
    for (start_a, end_a), (start_b, end_b) in zip(spans, spans[1:]):
        # functions are disjoint, or (optimised internal helpers) nested in the kernel's section
        assert end_a <= start_b or end_b <= end_a
    if len(spans) > 1:
        assert spans[0][0] != spans[1][0]
    for start, end in spans:
        assert layout.function_at(end - 1).start >= start


def _walk_expressions(image: bytes):
    """(where, expression bytes) for every location expression in the image's DWARF, read with pyelftools."""
    dwarf = ELFFile(io.BytesIO(image)).get_dwarf_info(relocate_dwarf_sections=False)
    loclists = dwarf.location_lists()
    for cu in dwarf.iter_CUs():
        for die in cu.iter_DIEs():
            for name in LOCATION_ATTRS:
                attr = die.attributes.get(name)
                if attr is None:
                    continue
                where = f"DIE {die.offset:#x} {name}"
                if attr.form in EXPR_FORMS:
                    yield where, bytes(attr.value)
                elif name == "DW_AT_location" or name == "DW_AT_frame_base":
                    for entry in loclists.get_location_list_at_offset(attr.value, die=die):
                        if hasattr(entry, "loc_expr"):
                            yield f"{where} list {attr.value:#x}", bytes(entry.loc_expr)


@pytest.mark.parametrize("path", DEBUG_CUBINS, ids=lambda p: p.name)
def test_every_location_expression_decodes_with_known_operations(path):
    image = relocated(path)
    seen = set()
    count = 0
    adapter = NvptxAdapter()
    for where, expr in _walk_expressions(image):
        ops = decode(expr, NVIDIA)
        count += 1
        for op in ops:
            assert not op.name.startswith("DW_OP_unknown"), f"{path.name} {where}: {op.name}"
            seen.add(op.name)
            if op.name == "DW_OP_regx":
                # every register operand is a PTX name the adapter understands
                info = adapter.register_info(op.operands[0], 32, NVIDIA)
                assert info.name.startswith("%") and info.per_lane
    assert count > 10
    assert {"DW_OP_regx", "DW_OP_call_frame_cfa"} <= seen
    if path.name.startswith("scratch_struct"):
        assert "DW_OP_fbreg" in seen


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.name)
def test_call_frame_cfa_is_the_stack_register_plus_an_offset(path):
    image = relocated(path)
    elf = ELFFile(io.BytesIO(image))
    cfi = CallFrameInfo(elf, e_machine=190)
    layout, _ = read_cubin_debug(image)
    for function in layout.functions:
        rules = cfi.rules_at(function.start + 0x40)
        assert rules is not None and rules.cfa.register == LOC_REG << 24 | 1  # R1
        for rule in rules.registers.values():
            if rule.expression:
                decode(rule.expression, NVIDIA)


def test_dwarf_index_sees_relocated_functions_and_storage_kinds():
    image = relocated(CUDA / "scratch_struct.sm_90.G.cubin")
    index = DwarfIndex(ELFFile(io.BytesIO(image)), load_bias=0, e_machine=190)
    layout, _ = read_cubin_debug(image)
    kernel = next(f for f in layout.functions if f.name.startswith("_Z9integrate"))
    pc = kernel.start + 0x3000
    (frame,) = index.frames_at(pc)
    assert frame.function == "integrate" and frame.frame_base_expr == b"\x9c"
    variables = {v.name: v for v in index.variables(frame, pc)}
    assert variables["state"].address_space == 7  # param
    assert variables["p"].address_space == 6  # local
    assert variables["gid"].address_space == 2  # register
    adapter = NvptxAdapter()
    assert adapter.variable_space(7) is PARAM and adapter.variable_space(2) is None
    assert adapter.variable_space(8) is SHARED and adapter.variable_space(6) is LOCAL
    assert adapter.pointer_space(variables["cursor"].type.strip().address_space, NVIDIA) is GENERIC


def test_register_map_pieces_of_a_64_bit_register():
    image = relocated(CUDA / "scratch_struct.sm_90.G.cubin")
    _, regmap = read_cubin_debug(image)
    regs = regmap.functions["_Z9integratePKfPKiPfif"]
    rd = next(name for name in regs if name.startswith("%rd") and len({p.piece for p in regs[name]}) == 2)
    place = regs[rd][0]
    pieces = regmap.places("_Z9integratePKfPKiPfif", rd, place.start)
    assert [p.piece for p in pieces] == [0, 1] or [p.piece for p in pieces] == [0]
    assert all(p.kind in (LOC_REG, LOC_PRED) for p in pieces)
    assert regmap.places("_Z9integratePKfPKiPfif", rd, 0x7FFFFFFF) is None
    assert regmap.places("no_such_function", rd, place.start) is None


def test_register_map_parse_rejects_truncated_sections():
    good = b"f\0" + struct.pack("<I", 1) + struct.pack("<I", 0) + b"%r1\0" + struct.pack("<III", 5 << 24 | 3, 0, 16)
    regmap = RegisterMap.parse(good)
    (place,) = regmap.places("f", "%r1", 8)
    assert (place.kind, place.index) == (LOC_REG, 3)
    with pytest.raises(CodeObjectError):
        RegisterMap.parse(good[:-2])
    with pytest.raises(CodeObjectError):
        RegisterMap.parse(b"f")


def test_packed_register_names():
    assert ptx_register_name(0x257231) == "%r1"
    assert ptx_register_name(0x25723238) == "%r28"
    assert ptx_register_name(0x256631) == "%f1"
    assert ptx_register_name(5 << 24 | 1) is None
    assert ptx_register_name(7) is None
    assert ptx_register_number("%rd4") == int.from_bytes(b"%rd4", "big")
    assert [ptx_register_size(n) for n in ("%r1", "%rd4", "%fd2", "%rs3", "%p1", "%f9")] == [4, 8, 8, 2, 1, 4]


def test_adapter_registry_and_register_names():
    adapter = adapter_for("nvidia")
    assert adapter.vendor == "nvidia"
    info = adapter.register_info(LOC_REG << 24 | 7, 32, NVIDIA)
    assert (info.name, info.size, info.per_lane) == ("R7", 4, True)
    assert adapter.register_number("R7", 32) == LOC_REG << 24 | 7
    assert adapter.register_number("%r1", 32) == 0x257231
    assert adapter.register_number("bogus", 32) is None


def test_relocation_rejects_other_machines_and_bad_files():
    with pytest.raises(CodeObjectError):
        relocate_cubin(b"not an elf")
    amd = next((CUDA.parent / "lds_tiles").glob("*.co")).read_bytes()
    with pytest.raises(CodeObjectError):
        relocate_cubin(amd)
    truncated = (CUDA / "lds_tiles.sm_90.G.cubin").read_bytes()[:2000]
    with pytest.raises(CodeObjectError):
        relocate_cubin(truncated)


def test_corrupt_relocation_entry_is_reported():
    data = bytearray((CUDA / "divergent_call.sm_90.G.cubin").read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    rela = elf.get_section_by_name(".rela.debug_info")
    at = rela["sh_offset"] + 8  # first entry's r_info
    info = int.from_bytes(data[at:at + 8], "little")
    data[at:at + 8] = ((info & ~0xFFFFFFFF) | 99).to_bytes(8, "little")
    with pytest.raises(CodeObjectError, match="relocation type 99"):
        relocate_cubin(bytes(data))


@pytest.mark.parametrize("path", DEBUG_CUBINS, ids=lambda p: p.name)
def test_parameter_bank_offset_from_nv_info_matches_the_dwarf(path):
    # ptxas's EIATTR_PARAM_CBANK and cicc's DW_OP_addr of each param-class variable agree
    # (0x160 on sm_80, 0x210 on sm_90, 0x380 on sm_120)
    image = relocated(path)
    index = DwarfIndex(ELFFile(io.BytesIO(image)), load_bias=0, e_machine=190)
    layout, _ = read_cubin_debug(image)
    checked = 0
    for function in layout.functions:
        params = kernel_parameters(image, function.name)
        if params is None:
            continue
        assert {"sm_80": 0x160, "sm_90": 0x210, "sm_120": 0x380}[path.name.split(".")[1]] == params.offset
        assert sum(p.size for p in params.parameters) <= params.size
        frame = index.frames_at(function.start + 0x10)[-1]
        addresses = []
        for var in index.variables(frame, function.start + 0x10):
            if var.kind == "parameter" and var.address_space == 7:
                (op,) = decode(var.location_at(function.start + 0x10), NVIDIA)
                addresses.append(op.operands[0])
        # (a parameter the DWARF keeps in a register, `dt`, has no address to compare)
        assert addresses and set(addresses) <= {params.offset + p.offset for p in params.parameters}
        checked += 1
    assert checked == 1


@pytest.mark.parametrize("path", DEBUG_CUBINS, ids=lambda p: p.name)
def test_register_counts_cover_the_register_map(path):
    image = relocated(path)
    counts = register_counts(image)
    _, regmap = read_cubin_debug(image)
    assert counts and set(regmap.functions) <= set(counts)
    for function, registers in regmap.functions.items():
        used = [p.index for places in registers.values() for p in places if p.kind == LOC_REG]
        assert max(used) < counts[function]
    if ".sm_80." in path.name:
        # sm_80 cubins also carry the count in each code section's sh_info bits 24-31
        elf = ELFFile(io.BytesIO(image))
        for function, count in counts.items():
            assert elf.get_section_by_name(f".text.{function}")["sh_info"] >> 24 == count


def test_nv_info_attributes_reject_a_truncated_section():
    data = bytearray((CUDA / "lds_tiles.sm_90.G.cubin").read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    sec = elf.get_section_by_name(".nv.info._Z15transpose_tilesPKfPfS1_ii")
    # grow the first record's SVAL size past the section's end
    struct.pack_into("<H", data, sec["sh_offset"] + 2, 0xFFFF)
    with pytest.raises(CodeObjectError, match="runs past the section"):
        kernel_parameters(bytes(data), "_Z15transpose_tilesPKfPfS1_ii")
