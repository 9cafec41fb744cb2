"""OpenCL divergent_call on Intel tgllp (SIMD8): stopped at line 28, `result = settle(cell, lane, steps)`.

Inputs: n = 14, in[i] = 0.5 * i + 1; one SIMD8 thread of work-group 1 (gid 8..15). Only the
odd lanes are in the `lane & 1` branch (exec 0xaa). Lanes 3 and 7 (lane & 2) point `cell` at
their `cells` slot in SLM through a generic pointer tagged 010; lanes 1 and 5 point it at
`out[gid]` in global memory. Lanes 6 and 7 have gid >= n, so their x is 0.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .opencl_engine import OpenclDump

HERE = Path(__file__).resolve().parent.parent / "opencl"
SIMD, GROUP, N = 8, 1, 14
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000
CELLS_SLM = 0  # the kernel's `cells` array: DW_OP_const8u of the SLM class encoding, offset 0
STOP_PC = 0x2A0
GENERIC_LOCAL_TAG = 0b010 << 61


def in_value(i: int) -> float:
    return 0.5 * i + 1.0


def work_item(lane: int) -> dict:
    gid = GROUP * SIMD + lane
    x = in_value(gid) if gid < N else 0.0
    v = {"gid": gid, "lane": lane, "x": x}
    if lane & 1:
        v["steps"] = lane % 5 + 1
        v["cell"] = (GENERIC_LOCAL_TAG | CELLS_SLM + 4 * (lane % 32)) if lane & 2 else OUT_ADDR + 4 * gid
    return v


def spec() -> OpenclDump:
    items = [work_item(lane) for lane in range(SIMD)]
    names = sorted({k for item in items for k in item})
    values = {name: [item.get(name) for item in items] for name in names}
    active = sum(1 << lane for lane in range(SIMD) if lane & 1)
    # line 21 ran in every lane: cells[local id] = x; the work-group's other slots stay 0
    cells = [item["x"] for item in items] + [0.0] * (32 - SIMD)
    values["cells"] = [cells] * SIMD  # one work-group array, the same from every lane
    slm = b"".join(struct.pack("<f", c) for c in cells)
    total = 4 * SIMD
    out = bytearray(4 * total)
    for item in items:
        if item["lane"] & 1 and not item["lane"] & 2:  # `*cell = x` through the global pointer
            out[4 * item["gid"]:4 * item["gid"] + 4] = struct.pack("<f", item["x"])
    inputs = b"".join(struct.pack("<f", in_value(i)) for i in range(N))
    return OpenclDump(
        name="divergent_call.tgllp", debug_elf=HERE / "divergent_call.tgllp.elf", kernel="divergent", lanes=SIMD,
        pc=STOP_PC, active=active, values=values, grid_size=(total, 1, 1), workgroup_size=(SIMD, 1, 1),
        workgroup_id=(GROUP, 0, 0), slm=slm,
        memory=[(IN_ADDR, inputs, 4 * N), (OUT_ADDR, bytes(out), len(out))],
        focus_lane=3, stop="line 28: result = settle(cell, lane, steps)")


def specs() -> list[OpenclDump]:
    return [spec()]
