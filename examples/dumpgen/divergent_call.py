"""divergent_call: the odd lanes inside `settle`, called from `divergent` (two frames).

Inputs: n = 360, blocks of 256 work-items; the dump holds workgroup 1, wave 1 (threadIdx.x
64..127, gid 320..383, lane = threadIdx.x % 64 = wave lane). in[g] = ((g % 13) - 6) / 4, so every
float operation below is exact and fused (-O0 and -O2 both use v_fmac_f32) and unfused code agree.
Lanes 40..63 have gid >= n: their x is 0. Only the odd lanes take the branch that calls `settle`.

-O0 stops at line 12 (0x329c) in the loop's third iteration (i = 2): active are the odd lanes with
steps = lane % 5 + 1 > 2. The kernel ran its `else` branch (even lanes) before the call, so their
result, count and i are already in its frame. -O2 stops at 0x1704 (line 11, settle's first
statement: where a function breakpoint on `settle` lands), with x, lane and steps in v0..v2.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64

N, BLOCK, GROUP, WAVE, LANES = 360, 256, 1, 1, 64
KERNARG = 0x7F0000000000
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000
HERE = Path(__file__).resolve().parent.parent / "divergent_call"

STOP_PC = {"O0": 0x329C, "O2": 0x1704}
RETURN_PC = {"O0": 0x3DA4, "O2": 0x18E4}  # the instruction after the kernel's s_swappc_b64 s[30:31]
CALL_PC = {"O0": 0x3DA3, "O2": 0x18E3}  # inside the call instruction: the caller frame's lookup address
O0_ITERATION = 2
# -O0: the kernel keeps s32 = 0x1400 (80 bytes per lane) and s33 = 0; settle sets s33 = 0x1400 and
# s32 = 0x1c00, and parks the kernel's v15 at s32 + 24 (lane offset 80 + 24) before that
O0_KERNEL_SP, O0_SETTLE_SP = 0x1400, 0x1C00
O0_SAVED_V15 = O0_KERNEL_SP // LANES + 24
O0_FRAME_BYTES = O0_SETTLE_SP // LANES


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def input_value(g: int) -> float:
    return ((g % 13) - 6) * 0.25


def settle_acc(x: float, lane: int, iterations: int) -> float:
    acc = x
    for i in range(iterations):
        acc = f32(acc * 0.5 + float(lane + i))
    return acc


def work_item(lane: int, lanes: int = LANES, wave: int = WAVE) -> dict:
    """The kernel's and settle's variables for one lane at the -O0 stop (iteration O0_ITERATION).
    `lane = threadIdx.x % warpSize`: the wave lane, since a block starts at a wave boundary."""
    tid = wave * lanes + lane
    gid = GROUP * BLOCK + tid
    x = input_value(gid) if gid < N else 0.0
    item = {"gid": gid, "lane": tid % lanes, "x": x, "odd": bool(lane & 1)}
    if item["odd"]:
        steps = item["lane"] % 5 + 1
        done = min(O0_ITERATION, steps)  # iterations this lane has completed
        item.update(steps=steps, i=done, acc=settle_acc(x, item["lane"], done), active=steps > O0_ITERATION)
    else:
        count = item["lane"] % 7
        result = -x
        for i in range(count):
            result = f32(result + float(i) * x)
        item.update(count=count, i=count, result=result, active=False)
    return item


def mask(lanes) -> int:
    return sum(1 << lane for lane in lanes)


def o0_v15_spill_lanes(entry: list[int], steps: dict[int, int], iteration: int) -> dict[int, int]:
    """Lanes 0..13 of v15 at line 12 of `iteration`: the SGPR pairs settle's -O0 loop spills there.

    Follows the ISA from 0x31c8: lanes 0/1 hold the loop's break mask, 2/3 the lanes leaving at
    the last latch, 4/5 the break mask at the header, 6/7 and 8/9 the exit mask, 10/11 the exec
    saved at the header, 12/13 the break mask after the latch. The kernel's own v15 (read as
    lanes 2/3 in the first iteration) is taken as 0."""
    e = mask(entry)
    spill = {n: 0 for n in range(14)}
    brk = 0
    for i in range(iteration + 1):
        s45 = (spill[2] | spill[3] << 32)
        spill[4], spill[5] = brk & 0xFFFFFFFF, brk >> 32
        exit_mask = s45 | (e & ~brk)
        spill[6], spill[7] = exit_mask & 0xFFFFFFFF, exit_mask >> 32
        spill[8], spill[9] = spill[6], spill[7]
        header_exec = e & ~brk
        spill[10], spill[11] = header_exec & 0xFFFFFFFF, header_exec >> 32
        staying = mask(lane for lane in entry if header_exec >> lane & 1 and i < steps[lane])
        if i == iteration:
            return spill
        leaving = exit_mask & ~staying  # latch: s_andn2_b64 s[4:5], s[4:5], exec
        spill[8], spill[9] = leaving & 0xFFFFFFFF, leaving >> 32
        brk = (header_exec & leaving) | brk
        spill[2], spill[3] = leaving & 0xFFFFFFFF, leaving >> 32
        spill[0], spill[1] = brk & 0xFFFFFFFF, brk >> 32
        spill[12], spill[13] = spill[0], spill[1]
    raise AssertionError("unreachable")


def spec_o0() -> DumpSpec:
    items = [work_item(lane) for lane in range(LANES)]
    odd = [lane for lane in range(LANES) if items[lane]["odd"]]
    active = [lane for lane in odd if items[lane]["active"]]
    pc = STOP_PC["O0"]
    spill = o0_v15_spill_lanes(odd, {lane: items[lane]["steps"] for lane in odd}, O0_ITERATION)
    v15 = [spill.get(lane, 0) for lane in range(LANES)]
    v15[14] = 0  # v_writelane_b32 v15, s33, 14 at 0x30c4: the kernel's frame pointer
    regs = {"pc": u64(pc), "exec": u64(mask(active)), "s32": u32(O0_SETTLE_SP), "s33": u32(O0_KERNEL_SP),
            "v15": lane_u32(v15)}
    regs.update(sgpr_pair("s30", RETURN_PC["O0"]))

    def odd_only(key):
        return [items[lane][key] if items[lane]["odd"] else None for lane in range(LANES)]

    settle = FrameSpec(pc, {"x": odd_only("x"), "lane": odd_only("lane"), "steps": odd_only("steps"),
                            "acc": odd_only("acc"), "i": odd_only("i")})
    kernel = FrameSpec(CALL_PC["O0"], {
        "in": [IN_ADDR] * LANES, "out": [OUT_ADDR] * LANES, "n": [N] * LANES,
        "gid": [it["gid"] for it in items], "lane": [it["lane"] for it in items], "x": [it["x"] for it in items],
        "result": [None if it["odd"] else it["result"] for it in items],  # odd lanes: assigned after the call
        "steps": odd_only("steps")}, registers={"s33": u32(0)})
    # the kernel's other slots: the kernarg pointers it copies first (8, 16), and the `else`
    # branch's count and i (64, 68), written by the even lanes before the odd lanes' call
    scratch = {8: [IN_ADDR & 0xFFFFFFFF] * LANES, 12: [IN_ADDR >> 32] * LANES,
               16: [OUT_ADDR & 0xFFFFFFFF] * LANES, 20: [OUT_ADDR >> 32] * LANES,
               64: [0 if it["odd"] else it["count"] for it in items],
               68: [0 if it["odd"] else it["i"] for it in items],
               O0_SAVED_V15: [0] * LANES}
    wave = WaveSpec(id=0, index_in_workgroup=WAVE, registers=regs, frames=[settle, kernel], scratch=scratch)
    return _dump("O0", wave, O0_FRAME_BYTES, "line 12: acc = acc * 0.5f + (float)(lane + i), third iteration")


def spec_o2() -> DumpSpec:
    items = [work_item(lane) for lane in range(LANES)]
    odd = [lane for lane in range(LANES) if items[lane]["odd"]]
    in_range = [lane for lane in range(LANES) if items[lane]["gid"] < N]
    even = [lane for lane in range(LANES) if not items[lane]["odd"]]
    pc = STOP_PC["O2"]
    # vcc: the kernel's `lane & 1` test at 0x1894; s[4:5]: the call target from s_getpc at 0x18cc
    regs = {"pc": u64(pc), "exec": u64(mask(odd)), "vcc": u64(mask(odd)), "s32": u32(0)}
    regs.update(sgpr_pair("s4", 0x1700))
    regs.update(sgpr_pair("s8", mask(in_range)))  # the kernel's gid < n
    regs.update(sgpr_pair("s10", mask(even)))  # the kernel's else-lanes, waiting
    regs.update(sgpr_pair("s12", IN_ADDR))
    regs.update(sgpr_pair("s14", OUT_ADDR))
    regs.update(sgpr_pair("s30", RETURN_PC["O2"]))

    def v2(it):
        if it["odd"]:
            return it["lane"] % 5 + 1  # steps, the call's third argument
        # the address of in[gid] for lanes that loaded x; the rest never wrote v2 (taken as 0)
        return (IN_ADDR + 4 * it["gid"]) & 0xFFFFFFFF if it["gid"] < N else 0

    regs["v0"] = lane_u32(it["x"] if it["odd"] else 0 for it in items)  # even lanes: threadIdx.x & 1
    regs["v1"] = lane_u32(it["lane"] for it in items)
    regs["v2"] = lane_u32(v2(it) for it in items)
    regs["v3"] = lane_u32(it["x"] for it in items)
    regs["v4"] = lane_u32(it["gid"] for it in items)
    regs["v5"] = lane_u32(0 for _ in items)  # gid >> 31

    def odd_only(fn):
        return [fn(it) if it["odd"] else None for it in items]

    settle = FrameSpec(pc, {"x": odd_only(lambda it: it["x"]), "lane": odd_only(lambda it: it["lane"]),
                            "steps": odd_only(lambda it: it["lane"] % 5 + 1), "acc": odd_only(lambda it: it["x"]),
                            "i": odd_only(lambda it: 0)},
                       not_by_dwarf={"i": "DW_OP_consts 0, DW_OP_stack_value: the value is in the debug info"})
    # the kernel's frame is not placed: at the call its gid, x and steps sit in VGPRs the ABI lets
    # settle clobber (v4, v3, v2), and the values above are what the hardware holds there
    wave = WaveSpec(id=0, index_in_workgroup=WAVE, registers=regs, frames=[settle])
    return _dump("O2", wave, 0, "function breakpoint on settle: line 11, before the loop")


def _dump(opt: str, wave: WaveSpec, private_per_lane: int, stop: str, build: str = "gfx90a",
          processor: str = "gfx90a", lanes: int = LANES) -> DumpSpec:
    kernargs = u64(IN_ADDR) + u64(OUT_ADDR) + u32(N)
    data = b"".join(struct.pack("<f", input_value(g)) for g in range(N))
    total = (N + BLOCK - 1) // BLOCK * BLOCK
    return DumpSpec(
        name=f"{build}.{opt}", code_object=HERE / f"divergent_call.{build}.{opt}.co", processor=processor,
        lanes=lanes, kernel="_Z9divergentPKfPfi", grid_size=(total, 1, 1), workgroup_size=(BLOCK, 1, 1),
        workgroup_id=(GROUP, 0, 0), waves=[wave], private_per_lane=private_per_lane,
        memory=[(KERNARG, kernargs, len(kernargs)), (IN_ADDR, data, len(data)), (OUT_ADDR, b"", N * 4)],
        focus=(0, 7), stop=("breakpoint" if opt == "O0" else "function breakpoint", stop))


# clang-19 -O0, from each object's disassembly (divergent_call.clang19.<arch>.O0.co.s.txt):
# the kernel's `s_mov_b32 s33, 0; s_mov_b32 s32, K` (K = kernel_sp), the `s_swappc_b64 s[30:31]`
# at line 25 (return = the next instruction), settle's prologue `s_mov_b32 sC, s33` (copy),
# `s_mov_b32 s33, s32`, `s_add_i32 s32, s32, F` (frame), and line 12's first instruction (stop).
# gfx90a and gfx1030 keep MUBUF stacks (s32/s33 scaled by the wave size); gfx942 and gfx1100
# use flat scratch (`scratch_store ... s33 offset:N`): s32/s33 are per-lane byte offsets.
CLANG19_O0 = {
    "gfx90a": dict(lanes=64, wave=1, kernel_sp=0x1400, frame=0x800, copy="s11", ret=0x4A18, stop=0x3BFC,
                   per_lane=False),
    "gfx942": dict(lanes=64, wave=1, kernel_sp=0x50, frame=0x20, copy="s7", ret=0x2B34, stop=0x1DE4,
                   per_lane=True),
    "gfx1030": dict(lanes=32, wave=3, kernel_sp=0x1800, frame=0x880, copy="s16", ret=0x460C, stop=0x3888,
                    per_lane=False),
    "gfx1100": dict(lanes=32, wave=3, kernel_sp=0xB0, frame=0x44, copy="s12", ret=0x295C, stop=0x1D40,
                    per_lane=True),
}


# clang-15 -O0 (divergent_call.clang15.<arch>.O0.co.s.txt): the kernel's `s_mov_b32 s32, K;
# s_mov_b32 s33, 0`, the `s_swappc_b64 s[30:31]` at line 25, and settle's hipcc-like prologue:
# v15 stored (all lanes) at s32 + `save`, `v_writelane_b32 v15, s33, <fp_lane>`, s33 = s32,
# s32 += frame. Its loop then spills its exec masks to v15's lanes below fp_lane exactly as hipcc's
# gfx90a build does (wave32: one lane per mask, lane k for the wave64 build's pair 2k/2k+1).
CLANG15_O0 = {
    "gfx940": dict(lanes=64, wave=1, kernel_sp=0x50, frame=32, save=24, fp_lane=14, ret=0x23C0, stop=0x19E8,
                   per_lane=True),
    "gfx1030": dict(lanes=32, wave=3, kernel_sp=0x1800, frame=0x800, save=56, fp_lane=7, ret=0x2448, stop=0x19B8,
                    per_lane=False),
    "gfx1100": dict(lanes=32, wave=3, kernel_sp=0xB0, frame=64, save=56, fp_lane=7, ret=0x2224, stop=0x1970,
                    per_lane=True),
}


def _o0_frames(c: dict, items: list[dict]) -> tuple[FrameSpec, FrameSpec]:
    """settle's frame (the odd lanes that called it) and the kernel's, at -O0 with every variable in
    memory: what each lane holds at line 12's third iteration."""
    lanes = len(items)

    def odd_only(key):
        return [items[lane][key] if items[lane]["odd"] else None for lane in range(lanes)]

    settle = FrameSpec(c["stop"], {"x": odd_only("x"), "lane": odd_only("lane"), "steps": odd_only("steps"),
                                   "acc": odd_only("acc"), "i": odd_only("i")})
    kernel = FrameSpec(c["ret"] - 1, {
        "in": [IN_ADDR] * lanes, "out": [OUT_ADDR] * lanes, "n": [N] * lanes,
        "gid": [it["gid"] for it in items], "lane": [it["lane"] for it in items], "x": [it["x"] for it in items],
        "result": [None if it["odd"] else it["result"] for it in items],
        "steps": odd_only("steps")}, registers={"s33": u32(0)})
    return settle, kernel


def spec_clang15_o0(arch: str) -> DumpSpec:
    """settle at line 12, third iteration, as clang-15 -O0 builds it for gfx940/gfx1030/gfx1100."""
    c = CLANG15_O0[arch]
    lanes, wave = c["lanes"], c["wave"]
    items = [work_item(lane, lanes, wave) for lane in range(lanes)]
    odd = [lane for lane in range(lanes) if items[lane]["odd"]]
    active = [lane for lane in odd if items[lane]["active"]]
    spill = o0_v15_spill_lanes(odd, {lane: items[lane]["steps"] for lane in odd}, O0_ITERATION)
    if lanes == 32:  # 32-bit masks: pair 2k/2k+1's low dword (the high one is 0) in lane k
        spill = {k: spill[2 * k] for k in range(7)}
    v15 = [spill.get(lane, 0) for lane in range(lanes)]
    v15[c["fp_lane"]] = 0  # the kernel's s33
    scale = 1 if c["per_lane"] else lanes
    settle_fp = c["kernel_sp"]
    regs = {"pc": u64(c["stop"]), "exec": (u64 if lanes == 64 else u32)(mask(active)),
            "s32": u32(settle_fp + c["frame"]), "s33": u32(settle_fp), "v15": lane_u32(v15)}
    regs.update(sgpr_pair("s30", c["ret"]))

    settle, kernel = _o0_frames(c, items)
    # the kernel's v15, stored by settle's prologue before the spills: never written by the kernel, taken as 0
    scratch = {settle_fp // scale + c["save"]: [0] * lanes}
    wave_spec = WaveSpec(id=0, index_in_workgroup=wave, registers=regs, frames=[settle, kernel], scratch=scratch)
    private = (settle_fp + c["frame"]) // scale
    return _dump("O0", wave_spec, private, "line 12: acc = acc * 0.5f + (float)(lane + i), third iteration",
                 build=f"clang15.{arch}", processor=arch, lanes=lanes)


def spec_clang19_o0(arch: str) -> DumpSpec:
    """settle at line 12, third iteration, as clang-19 -O0 builds it: the kernel's frame pointer
    (0) is in the SGPR settle's prologue copied it to; everything else lives in scratch."""
    c = CLANG19_O0[arch]
    lanes, wave = c["lanes"], c["wave"]
    items = [work_item(lane, lanes, wave) for lane in range(lanes)]
    active = [lane for lane in range(lanes) if items[lane]["odd"] and items[lane]["active"]]
    settle_fp = c["kernel_sp"]
    regs = {"pc": u64(c["stop"]), "exec": (u64 if lanes == 64 else u32)(mask(active)),
            "s32": u32(settle_fp + c["frame"]), "s33": u32(settle_fp), c["copy"]: u32(0)}
    regs.update(sgpr_pair("s30", c["ret"]))

    settle, kernel = _o0_frames(c, items)
    wave_spec = WaveSpec(id=0, index_in_workgroup=wave, registers=regs, frames=[settle, kernel])
    scale = 1 if c["per_lane"] else lanes
    private = (c["kernel_sp"] + c["frame"]) // scale
    return _dump("O0", wave_spec, private, "line 12: acc = acc * 0.5f + (float)(lane + i), third iteration",
                 build=f"clang19.{arch}", processor=arch, lanes=lanes)


# -O2 builds of the other compilers and targets, from each object's disassembly
# (divergent_call.<build>.O2.co.s.txt). All stop where a function breakpoint on settle lands (line
# 11's first instruction; no prologue, no frame) with the same kernel code before the call: x
# loaded into v3 (0 for gid >= n), gid in v4 (v5 its sign), lane = threadIdx.x & (wave - 1) in v1,
# the call's arguments x, lane, steps in v0..v2 for the odd lanes. They differ in registers:
#   target: the SGPR pair `s_getpc_b64` + `s_add_u32`/`s_addc_u32` set to settle's address;
#   in_range / even: the kernel's `gid < n` compare and the `s_xor` of exec with the saved exec
#   (the lanes waiting for the `else` branch); args: `in` and `out` from the kernarg segment;
#   even_v0: what the even lanes hold in v0 ("bit": the kernel's `v_and_b32 v0, 1, v0`; "tid": the
#   hardware's work-item id, since the kernel wrote `threadIdx.x & 1` to v2 instead);
#   even_v2: "address" (the low half of &in[gid] for lanes with gid < n, never written for the
#   others) or "bit" (`v_and_b32 v2, 1, v0`: 0);
#   settle_mask: wave32 settle saves exec in this SGPR (`s_mov_b32 sN, exec_lo`) before the stop,
#   and zeroes the SGPR after it (its loop's break mask).
OTHER_O2 = {
    "clang19.gfx90a": dict(lanes=64, wave=1, stop=0x1904, ret=0x1AD0, target="s4", in_range="s8", even="s10",
                           args="s12", even_v0="bit", even_v2="address"),
    "clang19.gfx942": dict(lanes=64, wave=1, stop=0x1904, ret=0x1AB4, target="s0", in_range="s4", even="s6",
                           args="s8", even_v0="bit", even_v2="address"),
    "clang19.gfx1030": dict(lanes=32, wave=3, stop=0x1908, ret=0x1AEC, target="s4", in_range="s6", even="s7",
                            args="s12", even_v0="tid", even_v2="bit"),
    "clang19.gfx1100": dict(lanes=32, wave=3, stop=0x1908, ret=0x1AF4, target="s0", in_range="s2", even="s3",
                            args="s4", even_v0="tid", even_v2="bit"),
    "clang15.gfx940": dict(lanes=64, wave=1, stop=0x1604, ret=0x17BC, target="s0", in_range="s4", even="s6",
                           args="s8", even_v0="bit", even_v2="address"),
    "clang15.gfx1030": dict(lanes=32, wave=3, stop=0x1610, ret=0x17F0, target="s4", in_range="s6", even="s7",
                            args="s12", even_v0="tid", even_v2="bit", settle_mask="s4"),
    "clang15.gfx1100": dict(lanes=32, wave=3, stop=0x1610, ret=0x17F8, target="s0", in_range="s2", even="s3",
                            args="s4", even_v0="tid", even_v2="bit", settle_mask="s0"),
}
SETTLE_ADDRESS = {"clang19": 0x1900, "clang15": 0x1600}


def spec_other_o2(build: str) -> DumpSpec:
    c = OTHER_O2[build]
    lanes, wave = c["lanes"], c["wave"]
    items = [work_item(lane, lanes, wave) for lane in range(lanes)]
    odd = mask(lane for lane in range(lanes) if items[lane]["odd"])
    in_range = mask(lane for lane in range(lanes) if items[lane]["gid"] < N)
    even = mask(lane for lane in range(lanes) if not items[lane]["odd"])
    word = u64 if lanes == 64 else u32

    def sgprs(first: str, value: int) -> dict[str, bytes]:
        return sgpr_pair(first, value) if lanes == 64 else {first: u32(value)}

    regs = {"pc": u64(c["stop"]), "exec": word(odd), "s32": u32(0)}
    regs.update(sgpr_pair(c["target"], SETTLE_ADDRESS[build.split(".")[0]]))
    if "settle_mask" in c:
        regs[c["settle_mask"]] = u32(odd)
    if lanes == 64:
        regs["vcc"] = u64(odd)  # the kernel's `v_cmp_eq_u32 vcc, 1, v0` (lane & 1)
    regs.update(sgprs(c["in_range"], in_range))
    regs.update(sgprs(c["even"], even))
    regs.update(sgpr_pair(c["args"], IN_ADDR))
    regs.update(sgpr_pair(f"s{int(c['args'][1:]) + 2}", OUT_ADDR))
    regs.update(sgpr_pair("s30", c["ret"]))

    def even_v0(it):
        return 0 if c["even_v0"] == "bit" else wave * lanes + it["lane"]

    def even_v2(it):
        if c["even_v2"] == "bit":
            return 0
        return (IN_ADDR + 4 * it["gid"]) & 0xFFFFFFFF if it["gid"] < N else 0

    regs["v0"] = lane_u32(it["x"] if it["odd"] else even_v0(it) for it in items)
    regs["v1"] = lane_u32(it["lane"] for it in items)
    regs["v2"] = lane_u32(it["lane"] % 5 + 1 if it["odd"] else even_v2(it) for it in items)
    regs["v3"] = lane_u32(it["x"] for it in items)
    regs["v4"] = lane_u32(it["gid"] for it in items)
    regs["v5"] = lane_u32(0 for _ in items)

    def odd_only(fn):
        return [fn(it) if it["odd"] else None for it in items]

    settle = FrameSpec(c["stop"], {"x": odd_only(lambda it: it["x"]), "lane": odd_only(lambda it: it["lane"]),
                                   "steps": odd_only(lambda it: it["lane"] % 5 + 1),
                                   "acc": odd_only(lambda it: it["x"]), "i": odd_only(lambda it: 0)},
                       not_by_dwarf={"i": "DW_OP_consts 0, DW_OP_stack_value: the value is in the debug info"})
    wave_spec = WaveSpec(id=0, index_in_workgroup=wave, registers=regs, frames=[settle])
    return _dump("O2", wave_spec, 0, "function breakpoint on settle: line 11, before the loop", build=build,
                 processor=build.split(".")[1], lanes=lanes)


def specs() -> list[DumpSpec]:
    return [spec_o0(), spec_o2(), *(spec_clang19_o0(arch) for arch in CLANG19_O0),
            *(spec_clang15_o0(arch) for arch in CLANG15_O0), *(spec_other_o2(build) for build in OTHER_O2)]
