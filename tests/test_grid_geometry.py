"""grid_size counts work-items for every vendor (docs/STATE_FORMAT.md, "dispatch"): CUDA's gridDim is
ceil(grid_size / blockDim), a CUDA core's grid row (gridDim in blocks) converts both ways, and
`state validate` names a grid that a vendor launching whole work-groups could not have, and work-groups
outside the grid, with their JSON paths."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.nvidia.core_elf import SHT_GRID_TABLE
from aspace_dap.adapters.nvidia.core_writer import write_core
from aspace_dap.errors import StateError
from aspace_dap.lane_values import lane_values
from aspace_dap.session import Session
from aspace_dap.state import load_state, validate_state
from aspace_dap.state.writer import StateWriter

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# cudacoredump.h's CUDBGGridInfo rows: seven u64 (gridId64 ... paramsOffset), then kernelType, origin,
# gridStatus, numRegs (u32 each), then gridDimX/Y/Z and blockDimX/Y/Z (u32 each)
GRID_DIM_AT, BLOCK_DIM_AT = 7 * 8 + 4 * 4, 7 * 8 + 7 * 4


def _nvidia_dump(tmp_path: Path, grid_size, block, group_ids, name="nv") -> Path:
    writer = StateWriter("nvidia", "sm_90", 32)
    co = writer.add_code_object((EXAMPLES / "cuda/lds_tiles.sm_90.G.cubin").read_bytes(), 0)
    layout = writer.add_register_layout("warp", [("pc", 8), ("exec", 4), ("R0", 4 * 32)])
    d = writer.add_dispatch("_Z15transpose_tilesPKfPfS1_ii", co, grid_size, block)
    for i, gid in enumerate(group_ids):
        d.add_workgroup(gid).add_wave(i, 0, {"pc": np.uint64(0x100), "exec": np.uint32(0xFFFFFFFF),
                                             "R0": np.zeros(32, np.uint32)}, layout=layout)
    return writer.write(tmp_path / name)


def _values(s, expression):
    return {r["value"] for r in lane_values(s, expression, wave_id=0)}


def test_grid_dim_of_a_dump_in_work_items(tmp_path):
    # 8 blocks of 32 threads: grid_size 256 work-items, as every vendor's dump writes it
    s = Session.open(str(_nvidia_dump(tmp_path, (256, 1, 1), (32, 1, 1), [(3, 0, 0)])))
    assert _values(s, "gridDim.x") == {"8"} and _values(s, "blockDim.x") == {"32"}
    assert _values(s, "get_global_size(0)") == {"256"} and _values(s, "get_num_groups(0)") == {"8"}
    assert [r["value"] for r in lane_values(s, "get_global_id(0)", wave_id=0)] == [str(96 + n) for n in range(32)]


def test_the_cuda_examples_are_written_in_work_items():
    # lds_tiles.cu is launched on a 2x2 grid of 16x16 blocks (examples/cuda/README.md), scratch_struct.cu
    # on 4 blocks of 64 threads
    lds = json.loads((EXAMPLES / "cuda/dumps/lds_tiles.sm_90.G/manifest.json").read_text())["dispatches"][0]
    assert lds["grid_size"] == [32, 32, 1] and lds["workgroup_size"] == [16, 16, 1]
    s = Session.open(str(EXAMPLES / "cuda/dumps/lds_tiles.sm_90.G"))
    assert {r["value"] for r in lane_values(s, "gridDim", wave_id=s.state.waves[0].id)} == {"{x = 2, y = 2, z = 1}"}
    scratch = json.loads((EXAMPLES / "cuda/dumps/scratch_struct.sm_90.G/manifest.json").read_text())["dispatches"][0]
    assert scratch["grid_size"] == [256, 1, 1]
    fault = json.loads((EXAMPLES / "fault/dumps/sm_90.G/manifest.json").read_text())["dispatches"][0]
    assert fault["grid_size"] == [256, 1, 1] and fault["workgroup_size"] == [64, 1, 1]


def _grid_rows(core: Path) -> list[tuple]:
    """(gridDim, blockDim) of every grid row, read with struct by the ELF rules (not by our reader)."""
    data = core.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, = struct.unpack_from("<H", data, 60)
    rows = []
    for i in range(shnum):
        _, kind, _, _, offset, size, _, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i)
        if kind == SHT_GRID_TABLE:
            for at in range(offset, offset + size, entsize):
                rows.append((struct.unpack_from("<3I", data, at + GRID_DIM_AT),
                             struct.unpack_from("<3I", data, at + BLOCK_DIM_AT)))
    return rows


def test_a_cuda_core_records_grid_dim_in_blocks(tmp_path):
    with load_state(EXAMPLES / "cuda/dumps/lds_tiles.sm_90.G") as state:
        core = write_core(state, tmp_path / "lds.cudbg")
    assert _grid_rows(core) == [((2, 2, 1), (16, 16, 1))]
    with load_state(core) as back:
        assert back.dispatches[0].grid_size == (32, 32, 1) and back.dispatches[0].workgroup_size == (16, 16, 1)


def test_a_cuda_core_cannot_hold_a_partial_block(tmp_path):
    with load_state(_nvidia_dump(tmp_path, (100, 1, 1), (32, 1, 1), [(0, 0, 0)])) as state:
        with pytest.raises(StateError, match=r"grid_size .*not a whole number of blocks") as err:
            write_core(state, tmp_path / "x.cudbg")
    assert err.value.path == "dispatches[0].grid_size"


def _problems(path):
    return {(p.path, p.severity): p.message for p in validate_state(path)}


def test_validate_names_a_grid_counted_in_blocks(tmp_path):
    # a writer that put gridDim (8 blocks) where the format wants work-items: 8 is no whole number of
    # 32-thread blocks, and blocks 1..7 lie outside a grid of 8 work-items
    dump = _nvidia_dump(tmp_path, (8, 1, 1), (32, 1, 1), [(0, 0, 0), (5, 0, 0)])
    problems = _problems(dump)
    grid = problems[("dispatches[0].grid_size", "warning")]
    assert "8 work-items in x" in grid and "whole number of work-groups of 32" in grid
    outside = problems[("dispatches[0].workgroups[1].id", "warning")]
    assert "[5, 0, 0]" in outside and "outside the grid" in outside
    assert ("dispatches[0].workgroups[0].id", "warning") not in problems
    # the dump still opens, says so at launch, and its lanes have no coordinates
    s = Session.open(str(dump))
    assert any("dispatches[0].workgroups[1].id" in w for w in s.warnings)
    assert {r["value"] for r in lane_values(s, "threadIdx.x", wave_id=1)} == {"<unavailable>"}


def test_validate_allows_a_partial_work_group_where_the_vendor_does(tmp_path):
    # HSA (AMD) and OpenCL 2.0 (Intel) launch a partial work-group at the grid's edge
    for vendor, processor, lanes in (("amd", "gfx90a", 64), ("intel", "tgllp", 8)):
        writer = StateWriter(vendor, processor, lanes)
        registers = [("pc", 8), ("exec", 8)] if vendor == "amd" else [("ip", 4), ("emask", 4)]
        layout = writer.add_register_layout("w", registers)
        d = writer.add_dispatch("k", None, (100, 1, 1), (64, 1, 1))
        for i, gid in enumerate([(1, 0, 0), (2, 0, 0)]):
            d.add_workgroup(gid).add_wave(i, 0, {name: bytes(size) for name, size in registers}, layout=layout)
        problems = _problems(writer.write(tmp_path / vendor))
        assert not any(path.endswith("grid_size") for path, _ in problems), problems
        assert "outside the grid of [2, 1, 1] work-groups" in problems[("dispatches[0].workgroups[1].id", "warning")]
        assert ("dispatches[0].workgroups[0].id", "warning") not in problems


@pytest.mark.parametrize("dump", sorted(p.parent for p in EXAMPLES.glob("**/dumps/*/manifest.json")),
                         ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_grid_holds_its_work_groups(dump):
    assert not [p for p in validate_state(dump) if "grid" in p.message], dump
