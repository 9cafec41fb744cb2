"""scratch_struct: `integrate` stopped after `sample` is computed, before `out[gid]` is stored.

Inputs: n = 100, dt = 0 (positions stay put, so fused and unfused float code agree bit for bit),
blocks of 64 work-items; the dump holds workgroup 1 (gid 64..127), whose lanes 36..63 have
gid >= n and left through the early `return` (inactive). state[gid*6 + k] = gid % 5 + k for the
position, (k + 1) * 0.5 for the velocity; probe[gid] = gid % 24 | (gid % 6) << 8 | (gid % 3) << 16.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64

N, DT, BLOCK, GROUP = 100, 0.0, 64, 1
STEPS, NEIGHBORS = 24, 6
KERNARG = 0x7F0000000000
STATE_ADDR = 0x7F0000100000
PROBE_ADDR = 0x7F0000200000
OUT_ADDR = 0x7F0000300000
HERE = Path(__file__).resolve().parent.parent / "scratch_struct"
STOP_PC = {"O0": 0x4C68, "O2": 0x2480, "clang19.O0": 0x5AF4,  # clang-19 -O0: first instruction of line 55
           "clang19.O2": 0x23C4}  # clang-19 -O2: line 55's v_fmac_f32, right after sample = v0
FRAME_BYTES = {"O0": 320, "O2": 176}  # -O0: s32 = 0x5000 wave-scaled; -O2: history ends at 80 + 96


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def state_input(i: int) -> float:
    gid, k = divmod(i, 6)
    return float(gid % 5 + k) if k < 3 else (k - 2) * 0.5


def probe_input(gid: int) -> int:
    return gid % 24 | (gid % 6) << 8 | (gid % 3) << 16


def work_item(gid: int, tid: int) -> dict:
    """The kernel's variables at line 55 for one work-item (float32 arithmetic)."""
    v = {"state": STATE_ADDR, "probe": PROBE_ADDR, "out": OUT_ADDR, "n": N, "dt": DT, "gid": gid}
    if gid >= N:
        return v
    pos = [state_input(gid * 6 + k) for k in range(3)]
    vel = [state_input(gid * 6 + 3 + k) for k in range(3)]
    force = [f32(-0.1 * f32(x)) for x in pos]
    mass = f32(1.0 + (gid & 7))
    damping = f32(1.0 - f32(0.01 * (tid % 8)))
    history = []
    for _ in range(STEPS):
        for k in range(3):
            vel[k] = f32(f32(vel[k] * damping) + f32(f32(force[k] / mass) * DT))
            pos[k] = f32(pos[k] + f32(vel[k] * DT))
        history.append(f32(f32(pos[0] + pos[1]) + pos[2]))
    neighbors = [(gid + 7 * (j + 1)) % N for j in range(NEIGHBORS)]
    pick = probe_input(gid)
    step, axis = (pick & 0xFFFF) % STEPS, (pick >> 16) % 3
    neighbor = neighbors[(pick >> 8) % NEIGHBORS]
    v.update(p={"pos": pos, "vel": vel, "force": force, "mass": mass, "id": gid, "flags": tid & 3,
                "neighbors": neighbors}, history=history, damping=damping, pick=pick, step=step, axis=axis,
             neighbor=neighbor, sample=f32(history[step] + pos[axis]))
    return v


def spec(opt: str, build: str = "gfx90a") -> DumpSpec:
    """hipcc's gfx90a build, or (build "clang19.gfx90a") clang-19's, whose -O0 kernel also starts
    with `s_mov_b32 s33, 0; s_mov_b32 s32, 0x5000`."""
    lanes, pc = 64, STOP_PC[opt if build == "gfx90a" else f"clang19.{opt}"]
    items = [work_item(GROUP * BLOCK + t, t) for t in range(BLOCK)]
    names = sorted({k for item in items for k in item})
    values = {name: [item.get(name) for item in items] for name in names}
    active = sum(1 << t for t, item in enumerate(items) if item["gid"] < N)
    regs = {"pc": u64(pc), "exec": u64(active)}
    if opt == "O2" and build != "gfx90a":
        return _clang19_o2(items, values, regs, pc)
    if opt == "O0":
        regs.update({"s32": u32(0x5000), "s33": u32(0)})
    else:
        # kernel arguments still in SGPRs, gid in v6 for every lane, the line 55 operands in v1/v2/v4/v5
        regs.update(sgpr_pair("s8", STATE_ADDR))
        regs.update(sgpr_pair("s10", PROBE_ADDR))
        regs.update(sgpr_pair("s12", OUT_ADDR))
        regs.update({"s14": u32(N), "s15": struct.pack("<f", DT)})
        live = [item for item in items]
        regs["v1"] = lane_u32(float((i["p"]["flags"] + 1)) if "p" in i else 0 for i in live)
        regs["v2"] = lane_u32(float(i["p"]["id"] + i["neighbor"]) if "p" in i else 0 for i in live)
        regs["v4"] = lane_u32(i["history"][i["step"]] if "p" in i else 0 for i in live)
        regs["v5"] = lane_u32(i["p"]["pos"][i["axis"]] if "p" in i else 0 for i in live)
        regs["v30"] = lane_u32((i["gid"] * 4) for i in live)
        regs["v31"] = lane_u32(0 for _ in live)
    frame = FrameSpec(pc, values, isa_frame_base_zero=opt == "O2")
    return _dump(opt, build, regs, frame)


def _dump(opt: str, build: str, regs: dict[str, bytes], frame: FrameSpec,
          scratch: dict[int, list[int]] | None = None) -> DumpSpec:
    lanes = 64
    waves = [WaveSpec(id=0, index_in_workgroup=0, registers=regs, frames=[frame], scratch=scratch or {})]
    kernargs = u64(STATE_ADDR) + u64(PROBE_ADDR) + u64(OUT_ADDR) + u32(N) + struct.pack("<f", DT)
    total = (N + BLOCK - 1) // BLOCK * BLOCK
    state = b"".join(struct.pack("<f", state_input(i)) for i in range(N * 6))
    probe = b"".join(u32(probe_input(g)) for g in range(N))
    return DumpSpec(
        name=f"{build}.{opt}", code_object=HERE / f"scratch_struct.{build}.{opt}.co", processor="gfx90a",
        lanes=lanes, kernel="_Z9integratePKfPKiPfif", grid_size=(total, 1, 1), workgroup_size=(BLOCK, 1, 1),
        workgroup_id=(GROUP, 0, 0), waves=waves, private_per_lane=FRAME_BYTES[opt],
        memory=[(KERNARG, kernargs, len(kernargs)), (STATE_ADDR, state, len(state)),
                (PROBE_ADDR, probe, len(probe)), (OUT_ADDR, b"", N * 4)],
        focus=(0, 5), stop=("breakpoint", "line 55: out[gid] = sample * (p.flags + 1) + (float)(p.id + neighbor)"))


def _bits(value) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0] if isinstance(value, float) else int(value)


def _clang19_o2(items, values, regs, pc) -> DumpSpec:
    """clang-19 -O2 at 0x23c4 (scratch_struct.clang19.gfx90a.O2.co.s.txt), line 55 after
    `v_add_f32 v0, v3, v4` (sample). The kernel keeps p in scratch at 0 and history at 80 (no frame
    pointer: `buffer_store_dword ..., s[0:3], 0 offset:N`), but its DWARF places only history there;
    p is pieces: the first 40 bytes optimized out, id in v6, and nothing else at this pc."""
    live = [it for it in items if "p" in it]

    def per_lane(fn, default=0):
        return [fn(it) if "p" in it else default for it in items]

    regs.update(sgpr_pair("s6", OUT_ADDR))  # s_load_dwordx2 s[6:7], kernarg + 0x10
    regs.update(sgpr_pair("s8", STATE_ADDR))  # s_load_dwordx4 s[8:11], kernarg + 0
    regs.update(sgpr_pair("s10", PROBE_ADDR))
    regs.update({"s12": u32(N), "s13": struct.pack("<f", DT), "s4": u32(0x5556)})  # s_movk_i32 s4 (line 52)
    # v0 of the lanes that returned early still holds their work-item id (gfx90a packs x | y << 10,
    # here y = z = 0): every later write to v0 ran with exec = gid < n
    regs["v0"] = lane_u32(it["sample"] if "p" in it else tid for tid, it in enumerate(items))
    regs["v1"] = lane_u32(per_lane(lambda i: float(i["p"]["flags"] + 1)))  # v_cvt_f32_ubyte0 at 0x239c
    regs["v2"] = lane_u32(per_lane(lambda i: float(i["p"]["id"] + i["neighbor"])))  # v_cvt_f32_i32 at 0x23b8
    regs["v3"] = lane_u32(per_lane(lambda i: i["history"][i["step"]]))  # buffer_load at 0x2388
    regs["v4"] = lane_u32(per_lane(lambda i: i["p"]["pos"][i["axis"]]))  # buffer_load at 0x2390
    regs["v6"] = lane_u32(it["gid"] for it in items)  # v_add_u32 v6, s8, v0 at 0x1928, every lane
    regs["v7"] = lane_u32(per_lane(lambda i: i["pick"]))  # global_load_dword v7 at 0x1fa4
    regs["v19"] = lane_u32(per_lane(lambda i: i["neighbor"]))  # buffer_load_dword v19 at 0x2200
    # p's fields as the ISA stored them (offsets of `buffer_store_dword ... offset:N`): pos 0..8,
    # force 24..32, mass 36, id 40, flags 44, neighbors 48..68. vel (12..20) is never stored: dead
    # after the loop, it stays in registers, so those bytes hold whatever scratch held (0 here).
    scratch: dict[int, list[int]] = {}
    for name, offset, count in (("pos", 0, 3), ("force", 24, 3), ("neighbors", 48, 6)):
        for k in range(count):
            scratch[offset + 4 * k] = per_lane(lambda i: _bits(i["p"][name][k]))
    for name, offset in (("mass", 36), ("id", 40), ("flags", 44)):
        scratch[offset] = per_lane(lambda i: _bits(i["p"][name]))
    assert live, "no lane has gid < n"
    frame = FrameSpec(pc, values, isa_frame_base_zero=True,
                      not_by_dwarf={"p": "pieces: only id (v6, set above) has a location at this pc; the bytes "
                                         "the ISA stored are in the scratch image"})
    return _dump("O2", "clang19.gfx90a", regs, frame, scratch)


def specs() -> list[DumpSpec]:
    return [spec("O0"), spec("O2"), spec("O0", "clang19.gfx90a"), spec("O2", "clang19.gfx90a")]
