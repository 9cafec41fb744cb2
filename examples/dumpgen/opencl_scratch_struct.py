"""OpenCL scratch_struct on Intel tgllp (SIMD16): stopped at line 49, `int neighbor = p.neighbors[...]`.

Inputs: n = 44, dt = 0.05, state[i] = 0.125 * (i % 17) - 1, probe[i] packs step, neighbor and axis
selectors. Work-group 2 of 16 work-items is one SIMD16 thread (gid 32..47); lanes 12-15 have
gid >= n and returned at line 22, so they are out of the execution mask.

IGC promoted `p` to registers and describes no location for it here. `history` is 24 floats per
lane in GRFs, but each of IGC's 24 pieces reads 0 bits (`DW_OP_lit0` as the bit size), so it reads
as an error and the dump holds no value for it. `step` is computed from two values (an LLVM DIArgList) and IGC's expression for it
leaks LLVM's own operations, so it reads as unavailable; `sample` is not computed yet.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from .opencl_engine import OpenclDump

HERE = Path(__file__).resolve().parent.parent / "opencl"
SIMD, GROUP, N = 16, 2, 44
DT = 0.05
STATE_ADDR = 0x7F0000100000
PROBE_ADDR = 0x7F0000200000
OUT_ADDR = 0x7F0000300000
STOP_PC = 0xD50
F32 = np.float32


def state_value(i: int) -> float:
    return 0.125 * (i % 17) - 1.0


def probe_value(gid: int) -> int:
    return (gid * 7 % 97) | (gid % 11) << 8 | (gid * 5 % 13) << 16


def work_item(lane: int) -> dict:
    """The source's values at line 49, in float32 as the kernel computes them."""
    gid = GROUP * SIMD + lane
    v = {"gid": gid, "n": N, "dt": float(F32(DT)), "step": None, "sample": None, "history": None}
    if gid < N:
        v["pick"] = probe_value(gid)
    return v


BUILDS = ("tgllp", "acm-g10")  # both SIMD16 (DW_AT_INTEL_simd_width)
STOP_LINE = 49


def spec(build: str = "tgllp") -> OpenclDump:
    items = [work_item(lane) for lane in range(SIMD)]
    names = sorted({k for item in items for k in item})
    values = {name: [item.get(name) for item in items] for name in names}
    active = sum(1 << lane for lane in range(SIMD) if GROUP * SIMD + lane < N)
    total = 4 * SIMD
    debug_file = HERE / f"scratch_struct.{build}.dbg"
    if build == "tgllp":
        pc = STOP_PC
    else:
        from .opencl_engine import first_pc_of_line
        pc = first_pc_of_line(debug_file, "scratch_struct.cl", STOP_LINE)
    states = b"".join(struct.pack("<f", state_value(i)) for i in range(6 * N))
    probes = b"".join(struct.pack("<i", probe_value(i)) for i in range(N))
    return OpenclDump(
        name=f"scratch_struct.{build}", debug_elf=debug_file, processor=build, kernel="integrate", lanes=SIMD,
        pc=pc, active=active, values=values, grid_size=(total, 1, 1), workgroup_size=(SIMD, 1, 1),
        workgroup_id=(GROUP, 0, 0),
        memory=[(STATE_ADDR, states, len(states)), (PROBE_ADDR, probes, len(probes)),
                (OUT_ADDR, bytes(4 * N), 4 * N)],
        focus_lane=3, stop="line 49: int neighbor = p.neighbors[(pick >> 8) % NEIGHBORS]")


def specs() -> list[OpenclDump]:
    return [spec(build) for build in BUILDS]
