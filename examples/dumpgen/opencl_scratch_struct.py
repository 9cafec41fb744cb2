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


def particle_at_line_49(gid: int, lid: int) -> dict:
    """`p`, `damping` and `history` once lines 22-46 ran, every operation rounded to float32 in
    the source's order (the -cl-opt-disable builds keep them all in private memory)."""
    dt = F32(DT)
    pos = [F32(state_value(gid * 6 + k)) for k in range(3)]
    vel = [F32(state_value(gid * 6 + 3 + k)) for k in range(3)]
    force = [F32(F32(-0.1) * pos[k]) for k in range(3)]
    mass = F32(1.0 + (gid & 7))
    damping = F32(F32(1.0) - F32(F32(0.01) * F32(lid % 8)))
    history = []
    for _ in range(24):
        for k in range(3):
            vel[k] = F32(F32(vel[k] * damping) + F32(F32(force[k] / mass) * dt))
            pos[k] = F32(pos[k] + F32(vel[k] * dt))
        history.append(float(F32(F32(pos[0] + pos[1]) + pos[2])))
    p = {"pos": [float(v) for v in pos], "vel": [float(v) for v in vel], "force": [float(v) for v in force],
         "mass": float(mass), "id": gid, "flags": lid & 3,
         "neighbors": [(gid + 7 * (j + 1)) % N for j in range(6)]}
    return {"p": p, "damping": float(damping), "history": history}


def o0_work_item(lane: int, simd: int, group: int) -> dict:
    """Line 49's first instruction of a -cl-opt-disable build: everything before it has run;
    `neighbor` and `sample` are not assigned yet."""
    gid = group * simd + lane
    v = {"state": STATE_ADDR, "probe": PROBE_ADDR, "out": OUT_ADDR, "n": N, "dt": float(F32(DT)), "gid": gid,
         "p": None, "damping": None, "history": None, "pick": None, "step": None, "axis": None,
         "neighbor": None, "sample": None}
    if gid < N:  # lanes past n returned at line 22
        pick = probe_value(gid)
        v.update(particle_at_line_49(gid, lane), pick=pick, step=(pick & 0xFFFF) % 24, axis=(pick >> 16) % 3)
    return v


# build -> (SIMD width (DW_AT_INTEL_simd_width), work-group in the dump)
BUILDS = {"tgllp": (16, 2), "acm-g10": (16, 2), "tgllp.O0": (8, 5), "pvc.O0": (16, 2)}
STOP_LINE = 49


def spec(build: str = "tgllp") -> OpenclDump:
    simd, group = BUILDS[build]
    if build.endswith(".O0"):
        items = [o0_work_item(lane, simd, group) for lane in range(simd)]
    else:
        items = [work_item(lane) for lane in range(simd)]
    names = sorted({k for item in items for k in item})
    values = {name: [item.get(name) for item in items] for name in names}
    active = sum(1 << lane for lane in range(simd) if group * simd + lane < N)
    total = -(-N // simd) * simd  # the global size: n work-items, rounded up to whole work-groups
    debug_file = HERE / f"scratch_struct.{build}.dbg"
    if build == "tgllp":
        pc = STOP_PC
    else:
        from .opencl_engine import first_pc_of_line
        pc = first_pc_of_line(debug_file, "scratch_struct.cl", STOP_LINE)
    states = b"".join(struct.pack("<f", state_value(i)) for i in range(6 * N))
    probes = b"".join(struct.pack("<i", probe_value(i)) for i in range(N))
    return OpenclDump(
        name=f"scratch_struct.{build}", debug_elf=debug_file, processor=build.split(".")[0], kernel="integrate",
        lanes=simd, pc=pc, active=active, values=values, grid_size=(total, 1, 1), workgroup_size=(simd, 1, 1),
        workgroup_id=(group, 0, 0),
        memory=[(STATE_ADDR, states, len(states)), (PROBE_ADDR, probes, len(probes)),
                (OUT_ADDR, bytes(4 * N), 4 * N)],
        focus_lane=3, stop="line 49: int neighbor = p.neighbors[(pick >> 8) % NEIGHBORS]")


def specs() -> list[OpenclDump]:
    return [spec(build) for build in BUILDS]
