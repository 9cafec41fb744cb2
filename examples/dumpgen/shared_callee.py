"""shared_callee: `neighbour_sum` stopped at line 14, called from `stage` (two frames, two LDS arrays).

Inputs: one workgroup of 64 work-items (one wave64), in[i] = 7 * i - 50. At line 14 the barrier
has passed: kbuf[i] = in[i] + 100 for i < 32 (stage, line 23) and hbuf[lane] = 3 * kbuf[lane % 32]
+ 1 for every lane (neighbour_sum, line 12); `total` and the kernel's `sum` are not assigned yet.

Both compilers leave 0 in .debug_addr for kbuf and hbuf (the LDS lowering pass drops their
symbols); the offsets come from the objdump listing: hbuf's generic pointer on line 12 of
neighbour_sum, kbuf's on line 23 of stage, checked against .group_segment_fixed_size.
"""

from __future__ import annotations

import struct
from pathlib import Path

from aspace_dap.codeobj import load_code_objects

from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64
from .isa_text import generic_pointer_offsets, only

LANES, KBUF, HBUF = 64, 32, 64
KERNEL, CALLEE = "_Z5stagePKiPi", "_Z13neighbour_sumii"
KERNARG = 0x7F0000000000
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000
HERE = Path(__file__).resolve().parent.parent / "shared_callee"
NOTE = "the code object's .debug_addr holds 0 for both LDS arrays; the listing gives the real offsets"
KERNEL_SP = 0xC00  # stage: s_mov_b32 s32, 0xc00; s33 = 0

# per build: code object, stop pc (first instruction of line 14), the return address after
# stage's s_swappc_b64 to neighbour_sum, neighbour_sum's stack growth, and where its prologue
# parks s30, s31 and the caller's s33 in lanes of v40
BUILDS = {
    "gfx90a.O0": dict(code_object="shared_callee.gfx90a.O0.co", stop=0x3278, ret=0x3940, grow=0xC00,
                      v40={0: "ret_lo", 1: "ret_hi", 5: "caller_s33", 2: 2, 3: 0, 4: "aperture_hi"},
                      compiler="Debian clang 15 (hipcc)"),
    "clang19.gfx90a.O0": dict(code_object="shared_callee.clang19.gfx90a.O0.co", stop=0x3A9C, ret=0x4280,
                              grow=0x1000, v40={0: "ret_lo", 1: "ret_hi", 4: "caller_s33", 2: 0, 3: 0},
                              compiler="Debian clang 19"),
}
LDS_APERTURE_HI = 0x10000  # the dumps' local aperture 0x1000000000000, high dword


def input_value(i: int) -> int:
    return 7 * i - 50


def model():
    kbuf = [input_value(i) + 100 for i in range(KBUF)]
    hbuf = [3 * kbuf[lane % KBUF] + 1 for lane in range(HBUF)]
    return kbuf, hbuf


def lds_offsets(build: str) -> dict[str, int]:
    listing = HERE / (BUILDS[build]["code_object"] + ".s.txt")
    hbuf = only(generic_pointer_offsets(listing, CALLEE, 12), "hbuf, neighbour_sum line 12")
    kbuf = only(generic_pointer_offsets(listing, KERNEL, 23), "kbuf, stage line 23")
    (co,) = load_code_objects(HERE / BUILDS[build]["code_object"])
    group = co.kernel(KERNEL).group_segment_fixed_size
    spans = sorted([(hbuf, 4 * HBUF), (kbuf, 4 * KBUF)])
    if spans[0][0] + spans[0][1] > spans[1][0] or max(a + n for a, n in spans) != group:
        raise ValueError(f"{build}: offsets {spans} do not tile the {group} bytes of LDS")
    return {"hbuf": hbuf, "kbuf": kbuf, "size": group}


def spec(build: str) -> DumpSpec:
    b = BUILDS[build]
    kbuf, hbuf = model()
    callee_fp = KERNEL_SP  # neighbour_sum: s33 = s32 on entry
    callee_sp = KERNEL_SP + b["grow"]
    parked = {"ret_lo": b["ret"] & 0xFFFFFFFF, "ret_hi": b["ret"] >> 32, "caller_s33": 0,
              "aperture_hi": LDS_APERTURE_HI}
    v40 = [0] * LANES
    for lane, what in b["v40"].items():
        v40[lane] = parked[what] if isinstance(what, str) else what
    regs = {"pc": u64(b["stop"]), "exec": u64((1 << LANES) - 1), "s32": u32(callee_sp), "s33": u32(callee_fp),
            "v40": lane_u32(v40)}
    # s[30:31] were last set by the call to __syncthreads on line 13: its return address
    regs.update(sgpr_pair("s30", _after_barrier_call(build)))
    lanes = range(LANES)
    callee = FrameSpec(b["stop"], {"value": [kbuf[lane % KBUF] for lane in lanes], "lane": list(lanes),
                                   "total": [None] * LANES},
                       not_by_dwarf={"hbuf": NOTE})
    kernel = FrameSpec(b["ret"] - 1, {"in": [IN_ADDR] * LANES, "out": [OUT_ADDR] * LANES, "lane": list(lanes),
                                      "sum": [None] * LANES},
                       registers={"s33": u32(0)}, not_by_dwarf={"kbuf": NOTE})
    wave = WaveSpec(id=0, index_in_workgroup=0, registers=regs, frames=[callee, kernel])
    offsets = lds_offsets(build)
    lds = bytearray(offsets["size"])
    lds[offsets["hbuf"]:offsets["hbuf"] + 4 * HBUF] = b"".join(struct.pack("<i", v) for v in hbuf)
    lds[offsets["kbuf"]:offsets["kbuf"] + 4 * KBUF] = b"".join(struct.pack("<i", v) for v in kbuf)
    kernargs = u64(IN_ADDR) + u64(OUT_ADDR)
    data = b"".join(struct.pack("<i", input_value(i)) for i in range(LANES))
    return DumpSpec(
        name=build, code_object=HERE / b["code_object"], processor="gfx90a", lanes=LANES, kernel=KERNEL,
        grid_size=(LANES, 1, 1), workgroup_size=(LANES, 1, 1), workgroup_id=(0, 0, 0), waves=[wave],
        lds_size=len(lds), lds_image=bytes(lds), private_per_lane=callee_sp // LANES,
        memory=[(KERNARG, kernargs, len(kernargs)), (IN_ADDR, data, len(data)), (OUT_ADDR, b"", 4 * LANES)],
        focus=(0, 5), stop=("breakpoint", "line 14: int total = hbuf[lane] + hbuf[(lane + 1) % HBUF]"))


def _after_barrier_call(build: str) -> int:
    """neighbour_sum's own call to __syncthreads on line 13 left its return address in s[30:31]."""
    listing = (HERE / (BUILDS[build]["code_object"] + ".s.txt")).read_text().splitlines()
    inside, line, last_call = False, None, None
    for raw in listing:
        if raw.endswith(f"<{CALLEE}>:"):
            inside = True
            continue
        if inside and raw.endswith(">:"):
            break
        if inside and raw.startswith("; ") and ":" in raw:
            line = raw.rsplit(":", 1)[1]
        if inside and line == "13" and "s_swappc_b64" in raw:
            last_call = int(raw.split("// ")[1].split(":")[0], 16) + 4
    if last_call is None:
        raise ValueError(f"{build}: no call on line 13 of neighbour_sum")
    return last_call


def specs() -> list[DumpSpec]:
    return [spec(build) for build in BUILDS]
