"""The code-object loader on the committed HIP examples (examples/, built by examples/build.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aspace_dap.codeobj import CodeObject, load_code_objects

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

TRANSPOSE = "_Z15transpose_tilesPKfPfS1_ii"
INTEGRATE = "_Z9integratePKfPKiPfif"
DIVERGENT = "_Z9divergentPKfPfi"
SETTLE = "_Z6settlefii"

# (file, processor, wave size, kernel); one entry per committed plain code object.
PLAIN = [
    ("lds_tiles/lds_tiles.gfx90a.O0.co", "gfx90a", 64, TRANSPOSE),
    ("lds_tiles/lds_tiles.gfx90a.O2.co", "gfx90a", 64, TRANSPOSE),
    ("lds_tiles/lds_tiles.gfx1030.O0.co", "gfx1030", 32, TRANSPOSE),
    ("lds_tiles/lds_tiles.gfx1030.O2.co", "gfx1030", 32, TRANSPOSE),
    ("scratch_struct/scratch_struct.gfx90a.O0.co", "gfx90a", 64, INTEGRATE),
    ("scratch_struct/scratch_struct.gfx90a.O2.co", "gfx90a", 64, INTEGRATE),
    ("divergent_call/divergent_call.gfx90a.O0.co", "gfx90a", 64, DIVERGENT),
    ("divergent_call/divergent_call.gfx90a.O2.co", "gfx90a", 64, DIVERGENT),
]

_cache: dict[str, CodeObject] = {}


def load_one(relative: str) -> CodeObject:
    if relative not in _cache:
        objects = load_code_objects(EXAMPLES / relative)
        assert len(objects) == 1
        _cache[relative] = objects[0]
    return _cache[relative]


def disassembly_symbols(relative: str) -> dict[str, int]:
    """Symbol addresses as llvm-objdump printed them ("0000000000001900 <name>:")."""
    text = (EXAMPLES / f"{relative}.s.txt").read_text()
    return {m.group(2): int(m.group(1), 16) for m in re.finditer(r"^([0-9a-f]{16}) <([^>]+)>:$", text, re.M)}


@pytest.mark.parametrize("relative, processor, wave, kernel_name", PLAIN)
def test_target_from_e_flags_agrees_with_metadata(relative, processor, wave, kernel_name):
    co = load_one(relative)
    assert co.vendor == "amd" and co.e_machine == 224
    assert co.processor == processor
    assert co.abi_version == 2 and co.code_object_version == 4
    # gfx90a supports both features and hipcc leaves them unspecified; gfx1030 supports neither.
    expected_features = "any" if processor == "gfx90a" else "unsupported"
    assert co.xnack == expected_features and co.sramecc == expected_features
    # The MessagePack note names the same processor, independently of e_flags.
    assert co.metadata["amdhsa.target"] == f"amdgcn-amd-amdhsa--{processor}"
    assert co.target_id == co.metadata["amdhsa.target"]
    assert co.wavefront_size == wave


@pytest.mark.parametrize("relative, processor, wave, kernel_name", PLAIN)
def test_kernel_descriptor_agrees_with_metadata(relative, processor, wave, kernel_name):
    co = load_one(relative)
    assert [k.name for k in co.kernels] == [kernel_name]
    kernel = co.kernel(kernel_name)
    assert kernel is co.kernel(f"{kernel_name}.kd")
    assert kernel.symbol == f"{kernel_name}.kd"
    descriptor = kernel.descriptor
    assert descriptor is not None
    assert descriptor.address == co.symbols[kernel.symbol].value
    assert kernel.wavefront_size == wave == descriptor.wavefront_size
    assert descriptor.group_segment_fixed_size == kernel.group_segment_fixed_size
    assert descriptor.private_segment_fixed_size == kernel.private_segment_fixed_size
    assert descriptor.kernarg_size == kernel.kernarg_segment_size
    assert descriptor.enable_private_segment == (kernel.private_segment_fixed_size > 0)
    assert descriptor.enable_sgpr_kernarg_segment_ptr
    allocated = descriptor.allocated_vgprs(processor)
    assert allocated is not None and kernel.vgpr_count <= allocated
    if processor == "gfx90a":
        # Unified register file: AGPRs start at ACCUM_OFFSET, after the VGPRs.
        assert kernel.vgpr_count <= descriptor.accum_offset + (kernel.agpr_count or 0) <= allocated
        assert kernel.sgpr_count <= descriptor.allocated_sgprs(processor)


@pytest.mark.parametrize("relative, processor, wave, kernel_name", PLAIN)
def test_entry_address_lands_on_kernel_symbol(relative, processor, wave, kernel_name):
    co = load_one(relative)
    kernel = co.kernel(kernel_name)
    code = co.symbols[kernel_name]
    assert code.type == "FUNC"
    assert kernel.entry_address == code.value
    assert kernel.entry_address % 256 == 0
    # llvm-objdump put the kernel at the same address.
    assert disassembly_symbols(relative)[kernel_name] == kernel.entry_address
    start, end = co.text_range()
    assert start <= kernel.entry_address < end


def test_lds_and_scratch_sizes_follow_the_source():
    # lds_tiles: float tile[16][17] + float row_sums[16].
    for relative in ("lds_tiles/lds_tiles.gfx90a.O2.co", "lds_tiles/lds_tiles.gfx1030.O0.co"):
        assert load_one(relative).kernels[0].group_segment_fixed_size == 16 * 17 * 4 + 16 * 4
    # scratch_struct -O2: a 72-byte Particle and float history[24] stay in scratch, nothing in LDS.
    integrate = load_one("scratch_struct/scratch_struct.gfx90a.O2.co").kernels[0]
    assert integrate.group_segment_fixed_size == 0
    assert integrate.private_segment_fixed_size >= 72 + 24 * 4
    # divergent_call -O2 needs no LDS and no scratch; -O0 spills to a real stack.
    assert load_one("divergent_call/divergent_call.gfx90a.O2.co").kernels[0].private_segment_fixed_size == 0
    assert load_one("divergent_call/divergent_call.gfx90a.O0.co").kernels[0].private_segment_fixed_size > 0


def test_kernel_arguments_from_metadata():
    kernel = load_one("lds_tiles/lds_tiles.gfx90a.O2.co").kernels[0]
    explicit = kernel.args[:5]
    assert [a["value_kind"] for a in explicit] == ["global_buffer"] * 3 + ["by_value"] * 2
    assert [a["offset"] for a in explicit] == [0, 8, 16, 24, 28]
    assert [a.get("address_space") for a in explicit[:3]] == ["global"] * 3


def test_initial_sgpr_layout_matches_user_sgpr_count():
    for relative, *_ in PLAIN:
        descriptor = load_one(relative).kernels[0].descriptor
        layout = descriptor.initial_sgprs()
        assert layout["private_segment_buffer"] == 0  # HIP always asks for it first
        # System SGPRs start right after the user SGPRs the rsrc2 word counts.
        if "workgroup_id_x" in layout:
            assert layout["workgroup_id_x"] == descriptor.user_sgpr_count
    two_d = load_one("lds_tiles/lds_tiles.gfx90a.O2.co").kernels[0].descriptor
    assert two_d.enable_sgpr_workgroup_id == (True, True, False)  # blockIdx.x and .y are used
    assert two_d.enable_vgpr_workitem_id == 1  # threadIdx.x and .y


def test_symbol_at():
    co = load_one("divergent_call/divergent_call.gfx90a.O2.co")
    settle = co.symbols[SETTLE]
    kernel = co.symbols[DIVERGENT]
    assert co.symbol_at(settle.value) == settle
    assert co.symbol_at(settle.value + settle.size - 4) == settle
    assert co.symbol_at(kernel.value + 0x10) == kernel
    descriptor = co.symbols[f"{DIVERGENT}.kd"]
    assert co.symbol_at(descriptor.value + 63) == descriptor
    assert co.symbol_at(kernel.value + kernel.size + 0x100000) is None
    assert disassembly_symbols("divergent_call/divergent_call.gfx90a.O2.co")[SETTLE] == settle.value


def test_section_data_and_memory():
    co = load_one("lds_tiles/lds_tiles.gfx90a.O2.co")
    text = co.section_data(".text")
    start, end = co.text_range()
    assert len(text) == end - start
    assert co.read_memory(start, 16) == text[:16]
    assert co.read_memory(end - 4, 8) is None  # runs past the section
    assert co.section_data(".no_such_section") is None
    kd = co.kernels[0].descriptor
    assert co.read_memory(kd.address, 64)[16:24] == kd.kernel_code_entry_byte_offset.to_bytes(8, "little", signed=True)


def test_dwarf_info_is_cached_and_parses():
    co = load_one("scratch_struct/scratch_struct.gfx90a.O2.co")
    dwarf = co.dwarf_info()
    assert dwarf is co.dwarf_info()
    cu = next(dwarf.iter_CUs())
    assert cu.header["version"] == 5
    assert cu.get_top_DIE().attributes["DW_AT_comp_dir"].value == b"examples"


def test_bundle_yields_the_plain_code_object():
    plain = load_one("lds_tiles/lds_tiles.gfx90a.O0.co")
    (bundled,) = load_code_objects(EXAMPLES / "lds_tiles/lds_tiles.bundle.o")
    assert bundled.name == "lds_tiles.bundle.o#hipv4-amdgcn-amd-amdhsa--gfx90a"
    assert bundled.section_data(".text") == plain.section_data(".text")
    assert bundled.data == plain.data
    assert bundled.kernels[0].entry_address == plain.kernels[0].entry_address


def test_host_object_fatbin_yields_the_plain_code_object():
    plain = load_one("divergent_call/divergent_call.gfx90a.O2.co")
    (embedded,) = load_code_objects(EXAMPLES / "divergent_call/divergent_call.host.o")
    assert embedded.name.startswith("divergent_call.host.o:.hip_fatbin#hipv4-amdgcn")
    assert embedded.section_data(".text") == plain.section_data(".text")
    assert embedded.data == plain.data


def test_load_from_bytes_with_name():
    data = (EXAMPLES / "lds_tiles/lds_tiles.gfx1030.O2.co").read_bytes()
    (co,) = load_code_objects(data, name="k.co")
    assert co.name == "k.co" and co.processor == "gfx1030"
    (unnamed,) = load_code_objects(bytearray(data))
    assert unnamed.name == "<memory>"
