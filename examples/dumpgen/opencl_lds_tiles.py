"""OpenCL lds_tiles on Intel: stopped at line 36, `out[out_row * rows + out_col] = tile[tx][ty]`.

Inputs: rows = 20, cols = 36, in[i] = 0.25 * i. Work-group (1, 1) of 16x16 work-items is split
into SIMD threads of the width IGC chose (DW_AT_INTEL_simd_width). tgllp -g is SIMD32 and the dump
holds thread 1 (local ids 32..63: ty 2 and 3, tx 0..15); the -cl-opt-disable builds (SIMD8 on
tgllp, SIMD16 on pvc) hold thread 2 (local ids 16..23 / 32..47). Both barriers have passed, so
the SLM holds the whole tile (input rows 16..19, zero where row >= rows) and every row sum. The
stop is the first instruction of line 36 (the `if` body, 0x660 on tgllp -g), so only the lanes
with out_col < rows (tx < 4) are in the execution mask.

The -g builds (SIMD32) keep tx and ty as the 16-bit local ids of the thread payload, packed as the
ISA reads them (`mov (16|M0) r91.0<1>:d r1.0<16;16,1>:uw` on tgllp): local id X of lanes 0-31 in
the first GRFs from r1 (two on tgllp and acm-g10, one 64-byte GRF on pvc), local id Y after them.
The dumps hold that payload (`registers`). IGC's DWARF reads each lane's 16 bits one lane per
32 bits instead, so tx and ty are not written through it (the debugger shows them unavailable).
On acm-g10, `col`'s location (r5-r6, r10-r11 for the whole function) names registers that the
ISA reuses before line 36 (r10-r11 and r6-r7 hold out_col there): col is in no register at the
stop, and the dump does not hold it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from .opencl_engine import OpenclDump

HERE = Path(__file__).resolve().parent.parent / "opencl"
SIMD, TILE = 32, 16
ROWS, COLS = 20, 36
GROUP = (1, 1)
GROUPS = (3, 2)  # ceil(cols / 16) x ceil(rows / 16)
THREAD = 1  # SIMD thread within the work-group
# build -> (SIMD width, SIMD thread in the dump); the code object's DW_AT_INTEL_simd_width agrees
BUILDS = {"tgllp": (32, 1), "tgllp.O0": (8, 2), "pvc.O0": (16, 2), "pvc": (32, 1), "acm-g10": (32, 1)}
# GRF bytes per device (ocloc -device)
GRF_BYTES = {"tgllp": 32, "pvc": 64, "acm-g10": 32}
# variables of each -g build whose DWARF location does not hold them at the stop (see above)
NOT_IN_DWARF_SLOT = {"tgllp": ("tx", "ty"), "pvc": ("tx", "ty"), "acm-g10": ("tx", "ty", "col")}
STOP_LINE = 36
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000  # the kernel's `out` and `tile_sums` buffers (their bytes are not in the dump)
SUMS_ADDR = 0x7F0000300000
ROW_SUMS_SLM = 0x440  # `row_sums`: DW_OP_const8u of the SLM class encoding, after tile[16][17]
STOP_PC = 0x660
F32 = np.float32


def in_value(i: int) -> float:
    return float(F32(0.25) * F32(i))


def element(tx: int, ty: int) -> float:
    col, row = GROUP[0] * TILE + tx, GROUP[1] * TILE + ty
    return in_value(row * COLS + col) if row < ROWS and col < COLS else 0.0


def tile() -> list[list[float]]:
    """The SLM tile after the first barrier: tile[ty][tx], the padding column never written (0)."""
    return [[element(tx, ty) for tx in range(TILE)] + [0.0] for ty in range(TILE)]


def row_sums() -> list[float]:
    """Line 28 in float32: each tile row summed left to right."""
    sums = []
    for row in tile():
        acc = F32(0)
        for k in range(TILE):
            acc = F32(acc + F32(row[k]))
        sums.append(float(acc))
    return sums


def work_item(lane: int, simd: int = SIMD, thread: int = THREAD) -> dict:
    local = thread * simd + lane
    tx, ty = local % TILE, local // TILE
    return {
        "in": IN_ADDR, "out": OUT_ADDR, "tile_sums": SUMS_ADDR, "rows": ROWS, "cols": COLS, "tx": tx, "ty": ty,
        "col": GROUP[0] * TILE + tx, "row": GROUP[1] * TILE + ty, "value": element(tx, ty),
        "out_col": GROUP[1] * TILE + tx, "out_row": GROUP[0] * TILE + ty,
    }


def in_store_branch(lane: int, simd: int = SIMD, thread: int = THREAD) -> bool:
    item = work_item(lane, simd, thread)
    return item["out_row"] < COLS and item["out_col"] < ROWS


def local_id_payload(build: str, simd: int, thread: int) -> dict[str, bytes]:
    """The thread payload's local ids X then Y from r1, 16 bits per lane, each id padded to whole GRFs."""
    grf = GRF_BYTES[build]
    out, reg = {}, 1
    for axis in (0, 1):
        ids = b"".join(struct.pack("<H", (thread * simd + lane) // TILE ** axis % TILE) for lane in range(simd))
        ids += bytes(-len(ids) % grf)
        for at in range(0, len(ids), grf):
            out[f"r{reg}"] = ids[at:at + grf]
            reg += 1
    return out


def stop_pc(debug_file: Path) -> int:
    from .opencl_engine import first_pc_of_line
    return first_pc_of_line(debug_file, "lds_tiles.cl", STOP_LINE)


def spec(build: str = "tgllp") -> OpenclDump:
    simd, thread = BUILDS[build]
    items = [work_item(lane, simd, thread) for lane in range(simd)]
    values = {name: [item[name] for item in items] for name in items[0]}
    for name in NOT_IN_DWARF_SLOT.get(build, ()):
        values[name] = [None] * simd
    values["tile"] = [tile()] * simd  # work-group arrays, the same from every lane
    values["row_sums"] = [row_sums()] * simd
    slm = b"".join(struct.pack("<f", v) for row in tile() for v in row)
    slm += b"".join(struct.pack("<f", v) for v in row_sums())
    assert len(slm) == ROW_SUMS_SLM + 4 * TILE
    inputs = b"".join(struct.pack("<f", in_value(i)) for i in range(ROWS * COLS))
    active = sum(1 << lane for lane in range(simd) if in_store_branch(lane, simd, thread))
    debug_file = HERE / f"lds_tiles.{build}.dbg"
    return OpenclDump(
        name=f"lds_tiles.{build}", debug_elf=debug_file, processor=build.split(".")[0], kernel="transpose_tiles",
        lanes=simd, pc=stop_pc(debug_file), active=active, values=values,
        grid_size=(GROUPS[0] * TILE, GROUPS[1] * TILE, 1), workgroup_size=(TILE, TILE, 1),
        workgroup_id=(GROUP[0], GROUP[1], 0), slm=slm, memory=[(IN_ADDR, inputs, len(inputs))],
        focus_lane=2, stop="line 36: out[out_row * rows + out_col] = tile[tx][ty]",
        registers=local_id_payload(build, simd, thread) if build in NOT_IN_DWARF_SLOT else {})


def specs() -> list[OpenclDump]:
    return [spec(build) for build in BUILDS]
