"""Dumps of the production example (examples/production_amd/): a -gline-tables-only -O3 gfx942 build, two crashes.

`app::scatter_kernel<float, 4>` stores `out[index[gid]]` seven inlined levels down. The dispatch has
n = 128 work-items in 64-wide work-groups; each dump holds work-group 0's one wave (wave64), with the
registers the ISA (inline_chain.clang19.gfx942.O3.co.s.txt) has set at the stop:

- `gfx942.O3.fault`: index[g] = g + 2**28 for lane 7 of every wave (1 GiB past `out`), the others g.
  The wave stands at the faulting `global_store_dword v[2:3], v5, off` (0x1ebc) with TRAPSTS = MEM_VIOL |
  XNACK_ERROR (a page fault: ROCdbgapi's memory violation). Before it: s[4:11] the kernel arguments
  (index, in, out, sums, from s_load_dwordx8 at 0x1e30), s[2:3] the exec saved at `gid < n` (all lanes),
  s[0:1] the lanes the `offset < 0` branch left for later (none), v6 = in[gid], v[2:3] = out + 4 *
  index[gid], v5 = the stored value ((in * 0.5 + 1) * 2 + 4), v4 = 4 * (in * 0.5) (sums' value),
  v[0:1] = sums + 4 * gid.
- `gfx942.O3.trap`: index[3] = -1, the others g. The lanes with an index >= 0 made their stores; lane 3
  alone ran the `__builtin_trap()` branch: `s_andn2_saveexec_b64 s[0:1], s[0:1]` left exec = lane 3 and
  s[0:1] the other lanes, and `s_trap 2` (0x1ed8) stopped the wave. The trap handler advanced the saved
  PC past it (ROCr's trap_handler.s), so the wave's pc is 0x1edc, its ttmp6 says stopped with trap id 2
  (the assert trap). Lane 3 skipped the store's block: its v0 is still gid, v1 gid's sign, v2 index[3].

The build has no variable information; the dumps hold the registers above, the kernel arguments, and
`index` and `in` (global memory); `out` and `sums` are not in them.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64

HERE = Path(__file__).resolve().parent.parent / "production_amd"
CODE_OBJECT = HERE / "inline_chain.clang19.gfx942.O3.co"
KERNEL = "_ZN3app14scatter_kernelIfLi4EEEvPKiPKT_PS3_S6_i"
N, GROUP, LANES = 128, 64, 64
KERNARG, INDEX, IN, OUT, SUMS = 0x7F0000000000, 0x7F0000100000, 0x7F0000101000, 0x7F0000200000, 0x7F0000201000
STORE = 0x1EBC    # global_store_dword v[2:3], v5, off (inline_chain_store.h:12)
S_TRAP = 0x1ED8   # s_trap 2 (inline_chain_store.h:20)
TRAPSTS_MEM_VIOL, TRAPSTS_XNACK_ERROR = 1 << 8, 1 << 28
TTMP6_STOPPED, TTMP6_TRAP_ID_SHIFT = 1 << 30, 25
BAD_LANE, TRAP_LANE = 7, 3


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def inputs(index: list[int]) -> list[tuple[int, bytes, int]]:
    ins = [f32(0.25 * g) for g in range(N)]
    kernargs = struct.pack("<QQQQi", INDEX, IN, OUT, SUMS, N) + bytes(4) + struct.pack("<3I3H", N // GROUP, 1, 1,
                                                                                      GROUP, 1, 1)
    return [(KERNARG, kernargs, len(kernargs)), (INDEX, struct.pack(f"<{N}i", *index), 4 * N),
            (IN, struct.pack(f"<{N}f", *ins), 4 * N)]


def _common(index: list[int]) -> dict[str, bytes]:
    regs = {"vcc": u64(0)}
    for lo, value in (("s4", INDEX), ("s6", IN), ("s8", OUT), ("s10", SUMS)):
        regs.update(sgpr_pair(lo, value))
    regs["v6"] = lane_u32(f32(0.25 * g) for g in range(GROUP))
    return regs


def _stored(g: int) -> float:
    return f32(f32(f32(f32(0.25 * g) * 0.5) + 1.0) * 2.0 + 4.0)


def fault() -> DumpSpec:
    index = [g + (1 << 28) if g % LANES == BAD_LANE else g for g in range(N)]
    addresses = [OUT + 4 * index[g] for g in range(GROUP)]
    sums = [SUMS + 4 * g for g in range(GROUP)]
    regs = {"pc": u64(STORE), "exec": u64(2**64 - 1), **_common(index),
            "v0": lane_u32(a & 0xFFFFFFFF for a in sums), "v1": lane_u32(a >> 32 for a in sums),
            "v2": lane_u32(a & 0xFFFFFFFF for a in addresses), "v3": lane_u32(a >> 32 for a in addresses),
            "v4": lane_u32(f32(4.0 * f32(0.25 * g * 0.5)) for g in range(GROUP)),
            "v5": lane_u32(_stored(g) for g in range(GROUP)),
            "trapsts": u32(TRAPSTS_MEM_VIOL | TRAPSTS_XNACK_ERROR)}
    regs.update(sgpr_pair("s0", 0))
    regs.update(sgpr_pair("s2", 2**64 - 1))
    return _spec("gfx942.O3.fault", index, regs, STORE, ("exception", "memory violation (TRAPSTS: MEM_VIOL, "
                                                                     "XNACK_ERROR)"), BAD_LANE)


def trap() -> DumpSpec:
    index = [-1 if g == TRAP_LANE else g for g in range(N)]
    others = (2**64 - 1) & ~(1 << TRAP_LANE)
    ran = [g != TRAP_LANE for g in range(GROUP)]
    addresses = [OUT + 4 * index[g] for g in range(GROUP)]
    sums = [SUMS + 4 * g for g in range(GROUP)]
    regs = {"pc": u64(S_TRAP + 4), "exec": u64(1 << TRAP_LANE), **_common(index),
            "v0": lane_u32(sums[g] & 0xFFFFFFFF if ran[g] else g for g in range(GROUP)),
            "v1": lane_u32(sums[g] >> 32 if ran[g] else 0 for g in range(GROUP)),
            "v2": lane_u32(addresses[g] & 0xFFFFFFFF if ran[g] else index[g] for g in range(GROUP)),
            "v3": lane_u32(addresses[g] >> 32 if ran[g] else 0 for g in range(GROUP)),
            "v4": lane_u32(f32(4.0 * f32(0.25 * g * 0.5)) if ran[g] else 0 for g in range(GROUP)),
            "v5": lane_u32(_stored(g) if ran[g] else 0 for g in range(GROUP)),
            "trapsts": u32(0), "ttmp6": u32(TTMP6_STOPPED | 2 << TTMP6_TRAP_ID_SHIFT)}
    regs.update(sgpr_pair("s0", others))
    regs.update(sgpr_pair("s2", 2**64 - 1))
    return _spec("gfx942.O3.trap", index, regs, S_TRAP + 4, ("exception", "assert trap", S_TRAP), TRAP_LANE)


def _spec(name, index, regs, pc, stop, focus_lane) -> DumpSpec:
    wave = WaveSpec(id=0, index_in_workgroup=0, registers=regs, frames=[FrameSpec(pc, {})])
    return DumpSpec(name=name, code_object=CODE_OBJECT, processor="gfx942", lanes=LANES, kernel=KERNEL,
                    grid_size=(N, 1, 1), workgroup_size=(GROUP, 1, 1), workgroup_id=(0, 0, 0), waves=[wave],
                    memory=inputs(index), focus=(0, focus_lane), stop=stop)


def specs() -> list[DumpSpec]:
    return [fault(), trap()]
