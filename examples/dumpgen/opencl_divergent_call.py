"""OpenCL divergent_call on Intel: stopped at line 28, `*cell = x;`, just before the call to settle.

Inputs: n = 14, in[i] = 0.5 * i + 1; one SIMD thread of work-group 1 (tgllp -g and the tgllp and
acm-g10 -cl-opt-disable builds are SIMD8, work-group 1: gid 8..15; pvc -cl-opt-disable is SIMD16,
work-group 0: gid 0..15), the work-group one thread wide. (The -g builds for pvc and acm-g10 have
no line rows for the kernel itself, so they get no dump.)
Only the odd lanes are in the `lane & 1` branch (emask 0xaa / 0xaaaa). Lanes with lane & 2 point
`cell` at their `cells` slot in SLM through a generic pointer tagged 010; the other odd lanes point
it at `out[gid]` in global memory. Lanes with gid >= n have x = 0. tgllp -g stops at 0x2a0 (within
line 28); the -cl-opt-disable builds at the line's first instruction.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .opencl_engine import OpenclDump

HERE = Path(__file__).resolve().parent.parent / "opencl"
SIMD, GROUP, N = 8, 1, 14
# build -> (SIMD width (the code object's DW_AT_INTEL_simd_width), work-group in the dump)
BUILDS = {"tgllp": (8, 1), "tgllp.O0": (8, 1), "pvc.O0": (16, 0), "acm-g10.O0": (8, 1)}
STOP_LINE = 28
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000
CELLS_SLM = 0  # the kernel's `cells` array: DW_OP_const8u of the SLM class encoding, offset 0
STOP_PC = 0x2A0
GENERIC_LOCAL_TAG = 0b010 << 61


def in_value(i: int) -> float:
    return 0.5 * i + 1.0


def work_item(lane: int, simd: int = SIMD, group: int = GROUP) -> dict:
    gid = group * simd + lane
    x = in_value(gid) if gid < N else 0.0
    v = {"in": IN_ADDR, "out": OUT_ADDR, "n": N, "gid": gid, "lane": lane, "x": x, "result": None}
    if lane & 1:
        v["steps"] = lane % 5 + 1
        v["cell"] = (GENERIC_LOCAL_TAG | CELLS_SLM + 4 * (lane % 32)) if lane & 2 else OUT_ADDR + 4 * gid
    return v


def spec(build: str = "tgllp") -> OpenclDump:
    simd, group = BUILDS[build]
    items = [work_item(lane, simd, group) for lane in range(simd)]
    names = sorted({k for item in items for k in item})
    values = {name: [item.get(name) for item in items] for name in names}
    active = sum(1 << lane for lane in range(simd) if lane & 1)
    # line 21 ran in every lane: cells[local id] = x; the work-group's other slots stay 0
    cells = [item["x"] for item in items] + [0.0] * (32 - simd)
    values["cells"] = [cells] * simd  # one work-group array, the same from every lane
    slm = b"".join(struct.pack("<f", c) for c in cells)
    total = 4 * simd
    out = bytearray(4 * total)  # out[] of the whole grid
    for item in items:
        if item["lane"] & 1 and not item["lane"] & 2:  # `*cell = x` through the global pointer
            out[4 * item["gid"]:4 * item["gid"] + 4] = struct.pack("<f", item["x"])
    inputs = b"".join(struct.pack("<f", in_value(i)) for i in range(N))
    debug_file = HERE / f"divergent_call.{build}.dbg"
    if build == "tgllp":
        pc = STOP_PC
    else:
        from .opencl_engine import first_pc_of_line
        pc = first_pc_of_line(debug_file, "divergent_call.cl", STOP_LINE)
    return OpenclDump(
        name=f"divergent_call.{build}", debug_elf=debug_file, processor=build.split(".")[0], kernel="divergent",
        lanes=simd, pc=pc, active=active, values=values, grid_size=(total, 1, 1), workgroup_size=(simd, 1, 1),
        workgroup_id=(group, 0, 0), slm=slm,
        memory=[(IN_ADDR, inputs, 4 * N), (OUT_ADDR, bytes(out), len(out))],
        focus_lane=3, stop="line 28: *cell = x")


def specs() -> list[OpenclDump]:
    return [spec(build) for build in BUILDS]
