"""Loading nvcc cubins: the SM number from e_flags across ELF ABI versions, relocation before DWARF is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from aspace_dap.adapters.nvidia.cubin import relocate_cubin
from aspace_dap.codeobj import load_code_objects
from aspace_dap.codeobj.elfflags import decode_device_target
from aspace_dap.dwarf.index import DwarfIndex

CUDA = Path(__file__).resolve().parent.parent / "examples" / "cuda"
CUBINS = sorted(CUDA.glob("*.cubin"))


def test_sm_number_moves_to_bits_8_to_15_from_abi_version_8():
    # CUDA 13 sm_90 cubin header: ABI version 8, e_flags 0x0f005a04
    assert decode_device_target(190, 0x0F005A04, 0x41, 8).processor == "sm_90"
    # older cubins (ABI version 7) keep it in the low byte, the PTX virtual SM above it
    assert decode_device_target(190, 0x00460546, 0x33, 7).processor == "sm_70"
    assert decode_device_target(190, 0, 0x33, 8).processor == ""


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.name)
def test_committed_cubins_name_their_sm(path):
    (co,) = load_code_objects(path)
    assert (co.vendor, co.processor) == ("nvidia", path.name.split(".")[1])  # build.sh names them <kernel>.<sm>.*


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.name)
def test_loader_relocates_standalone_cubins(path):
    raw = path.read_bytes()
    (co,) = load_code_objects(path)
    assert co.data == relocate_cubin(raw, path.name)
    functions = sorted(s.value for s in co.symbols.values() if s.type == "FUNC" and s.size)
    assert len(set(functions)) == len(functions)  # no longer all at address 0


def test_relocated_dwarf_tells_device_functions_apart():
    (co,) = load_code_objects(CUDA / "divergent_call.sm_90.G.cubin")
    index = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine)
    settle = co.symbols["_Z6settlefii"]
    kernel = co.symbols["_Z9divergentPKfPfi"]
    assert index.frames_at(settle.value + 0x10)[0].function == "settle"
    assert index.frames_at(kernel.value + 0x10)[0].function == "divergent"


def test_a_loaded_image_is_not_moved_again():
    (co,) = load_code_objects(CUDA / "lds_tiles.sm_90.G.cubin")
    (again,) = load_code_objects(co.data, name="relocated")
    assert again.data == co.data
