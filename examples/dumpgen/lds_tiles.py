"""lds_tiles: `transpose_tiles` stopped at line 38 (`out[...] = tile[tx][ty]`), inside the `if`.

Inputs: rows = 20, cols = 32, in[i] = 0.5 * i; a 2 x 2 grid of 16 x 16 blocks; the dump holds
workgroup (1, 1), every wave of it. In that block out_row = 16 + ty < 32 always holds and
out_col = 16 + tx < 20 only for tx < 4, so each wave stops with 16 of its lanes active.
"""

from __future__ import annotations

import struct
from pathlib import Path

from aspace_dap.codeobj import load_code_objects

from .isa_text import ds_offsets, generic_pointer_offsets, only
from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64

TILE = 16
ROWS, COLS = 20, 32
BLOCK = (1, 1)  # blockIdx of the dumped workgroup
KERNARG = 0x7F0000000000
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000200000
SUMS_ADDR = 0x7F0000300000
DISPATCH_PTR = 0x7F0000400000
QUEUE_PTR = 0x7F0000500000
PRIVATE_APERTURE_HI = 0x20000  # the dump's private aperture 0x2000000000000, high dword
HERE = Path(__file__).resolve().parent.parent / "lds_tiles"

STOP_PC = {("gfx90a", "O0"): 0x4530, ("gfx90a", "O2"): 0x1A9C,
           ("gfx1030", "O0"): 0x4224, ("gfx1030", "O2"): 0x1AAC,
           ("clang19.gfx90a", "O0"): 0x52A8, ("clang19.gfx90a", "O2"): 0x1B8C}  # clang-19: line 38's first instruction
KERNEL = "_Z15transpose_tilesPKfPfS1_ii"
LDS_NOTE = "the code object's .debug_addr holds 0 for both LDS variables; the listing gives the real offsets"
FRAME_BYTES = {"gfx90a": 144, "gfx1030": 288}  # s32 = 0x2400 wave-scaled bytes at entry


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def input_value(i: int) -> float:
    return 0.5 * i


def kernel_model(lanes: int):
    """Per wave, per lane: the source variables at line 38, and the LDS the block has built."""
    bx, by = BLOCK
    tile = [[0.0] * (TILE + 1) for _ in range(TILE)]  # the padding column is never written
    threads = []
    for flat in range(TILE * TILE):
        tx, ty = flat % TILE, flat // TILE
        col, row = bx * TILE + tx, by * TILE + ty
        value = input_value(row * COLS + col) if row < ROWS and col < COLS else 0.0
        tile[ty][tx] = value
        threads.append({"tx": tx, "ty": ty, "col": col, "row": row, "value": value,
                        "out_col": by * TILE + tx, "out_row": bx * TILE + ty,
                        "in": IN_ADDR, "out": OUT_ADDR, "tile_sums": SUMS_ADDR, "rows": ROWS, "cols": COLS})
    row_sums = []
    for ty in range(TILE):
        acc = 0.0
        for k in range(TILE):
            acc = f32(acc + tile[ty][k])
        row_sums.append(acc)
    for t in threads:
        t["tile"] = tile
        t["row_sums"] = row_sums
    waves = [threads[i:i + lanes] for i in range(0, len(threads), lanes)]
    return waves


def _mask(bits) -> int:
    return sum(1 << i for i, b in enumerate(bits) if b)


def _values(wave_threads) -> dict[str, list]:
    return {name: [t[name] for t in wave_threads] for name in wave_threads[0]}


def lds_offsets(build: str, opt: str) -> dict[str, int]:
    """tile's and row_sums' LDS offsets from the objdump listing, checked against the kernel's
    .group_segment_fixed_size: line 23 stores tile[ty][tx], line 31 stores row_sums[ty]."""
    listing = HERE / f"lds_tiles.{build}.{opt}.co.s.txt"
    if opt == "O0":  # generic pointers: the constant low dword is the variable's offset
        tile = only(generic_pointer_offsets(listing, KERNEL, 23), "tile, line 23")
        row_sums = only(generic_pointer_offsets(listing, KERNEL, 31), "row_sums, line 31")
    else:  # ds_write_b32 whose address VGPR holds only the index (ty * 0x44 + tx * 4, ty * 4)
        tile = only(ds_offsets(listing, KERNEL, 23, "ds_write_b32"), "tile, line 23")
        row_sums = only(ds_offsets(listing, KERNEL, 31, "ds_write_b32"), "row_sums, line 31")
    (co,) = load_code_objects(HERE / f"lds_tiles.{build}.{opt}.co")
    group = co.kernel(KERNEL).group_segment_fixed_size
    spans = sorted([(tile, TILE * (TILE + 1) * 4), (row_sums, TILE * 4)])
    if spans[0][0] + spans[0][1] > spans[1][0] or max(a + n for a, n in spans) != group:
        raise ValueError(f"{build}.{opt}: offsets {spans} do not tile the {group} bytes of LDS")
    return {"tile": tile, "row_sums": row_sums, "size": group}


def spec(processor: str, opt: str, build: str | None = None) -> DumpSpec:
    """hipcc's build for `processor`, or another (`build` "clang19.gfx90a"): clang-19's -O0 kernel
    also sets `s33 = 0; s32 = 0x2400` and keeps every scalar variable in scratch; it reaches LDS
    through flat addresses built from `src_shared_base` (offsets from its listing, as hipcc's)."""
    build = build or processor
    lanes = 64 if processor == "gfx90a" else 32
    pc = STOP_PC[build, opt]
    waves = []
    for index, threads in enumerate(kernel_model(lanes)):
        active = _mask(t["out_row"] < COLS and t["out_col"] < ROWS for t in threads)
        full = (1 << lanes) - 1
        exec_bytes = lanes // 8
        regs = {"pc": u64(pc), "exec": active.to_bytes(exec_bytes, "little")}
        if opt == "O0" and build != processor:
            regs.update({"s32": u32(0x2400), "s33": u32(0)})
        elif opt == "O0":
            regs.update(_o0_registers(processor, lanes, threads))
        elif build != processor:
            regs.update(_clang19_o2_registers(threads, active))
        else:
            regs.update(_o2_registers(processor, lanes, threads, active, full))
        waves.append(WaveSpec(id=index, index_in_workgroup=index, registers=regs,
                              frames=[FrameSpec(pc, _values(threads),
                                                not_by_dwarf={"tile": LDS_NOTE, "row_sums": LDS_NOTE})],
                              scratch=_o0_scratch(processor, threads) if opt == "O0" and build == processor
                              else {}))
    first = kernel_model(lanes)[0][0]
    offsets = lds_offsets(build, opt)
    lds = bytearray(offsets["size"])
    tile_bytes = b"".join(struct.pack("<f", v) for row in first["tile"] for v in row)
    lds[offsets["tile"]:offsets["tile"] + len(tile_bytes)] = tile_bytes
    sums_bytes = b"".join(struct.pack("<f", v) for v in first["row_sums"])
    lds[offsets["row_sums"]:offsets["row_sums"] + len(sums_bytes)] = sums_bytes
    kernargs = u64(IN_ADDR) + u64(OUT_ADDR) + u64(SUMS_ADDR) + u32(ROWS) + u32(COLS)
    inputs = b"".join(struct.pack("<f", input_value(i)) for i in range(ROWS * COLS))
    return DumpSpec(
        name=f"{build}.{opt}", code_object=HERE / f"lds_tiles.{build}.{opt}.co", processor=processor,
        lanes=lanes, kernel=KERNEL,
        grid_size=(COLS // TILE * TILE, (ROWS + TILE - 1) // TILE * TILE, 1), workgroup_size=(TILE, TILE, 1),
        workgroup_id=(*BLOCK, 0), waves=waves, lds_size=len(lds), lds_image=bytes(lds),
        private_per_lane=FRAME_BYTES[processor] if opt == "O0" else 0,
        memory=[(KERNARG, kernargs, len(kernargs)), (IN_ADDR, inputs, len(inputs)),
                # what other workgroups have stored so far is unknown: declared, not dumped
                (OUT_ADDR, b"", ROWS * COLS * 4), (SUMS_ADDR, b"", 4 * 4)],
        focus=(1, 2), stop=("breakpoint", "line 38: out[out_row * rows + out_col] = tile[tx][ty]"))


def _o0_registers(processor, lanes, threads) -> dict[str, bytes]:
    bx, by = BLOCK
    # the prologue parks kernel inputs in lanes of v40: z, y, x group ids, dispatch id,
    # kernarg pointer, queue pointer, dispatch pointer, private aperture high dword
    spill = [0, by, bx, 0, 0, KERNARG & 0xFFFFFFFF, KERNARG >> 32, QUEUE_PTR & 0xFFFFFFFF, QUEUE_PTR >> 32,
             DISPATCH_PTR & 0xFFFFFFFF, DISPATCH_PTR >> 32, PRIVATE_APERTURE_HI]
    regs = {"s32": u32(0x2400), "s33": u32(0), "v40": lane_u32(spill + [0] * (lanes - len(spill)))}
    if processor == "gfx90a":
        packed = [t["tx"] | t["ty"] << 10 for t in threads]  # gfx90a packs the work-item ids into v0
        regs["v31"] = lane_u32(packed)
        regs["a32"] = lane_u32(packed)
    return regs


def _o0_scratch(processor, threads) -> dict[int, list[int]]:
    if processor != "gfx1030":
        return {}
    # gfx1030 gets x, y, z work-item ids in v0..v2 and the -O0 prologue stores them at 240..248
    return {240: [t["tx"] for t in threads], 244: [t["ty"] for t in threads], 248: [0] * len(threads)}


def _o2_registers(processor, lanes, threads, active, full) -> dict[str, bytes]:
    bx, by = BLOCK
    nbytes = lanes // 8
    regs = {"s8": u32(bx), "s9": u32(by), "s10": u32(ROWS), "s11": u32(COLS)}
    regs.update(sgpr_pair("s12", IN_ADDR))
    regs.update(sgpr_pair("s14", OUT_ADDR))
    regs.update(sgpr_pair("s2", SUMS_ADDR))
    out_row_ok = _mask(t["out_row"] < COLS for t in threads)
    if processor == "gfx90a":
        # s[0:1]: exec saved by s_and_saveexec; s6 = 0x44 (row pitch of tile); s7: high half of the condition
        regs.update(sgpr_pair("s0", full))
        regs["s6"] = u32(0x44)
        regs["s7"] = u32(active >> 32)
        regs["vcc"] = out_row_ok.to_bytes(nbytes, "little")
        regs["v4"] = lane_u32(t["tx"] * 0x44 + t["ty"] * 4 for t in threads)  # LDS address of tile[tx][ty]
    else:
        # wave32 ids arrive unpacked: v0 = x, v1 = y; s0 = saved exec, s1 = the if condition, s6 = 16 * blockIdx.x
        regs["v0"] = lane_u32(t["tx"] for t in threads)
        regs["v1"] = lane_u32(t["ty"] for t in threads)
        regs["s0"] = u32(full)
        regs["s1"] = u32(active)
        regs["s6"] = u32(bx * TILE)
        regs["vcc"] = out_row_ok.to_bytes(nbytes, "little")
        regs["v4"] = lane_u32(t["ty"] << 2 for t in threads)
    return regs


def _clang19_o2_registers(threads, active) -> dict[str, bytes]:
    """clang-19 -O2 (lds_tiles.clang19.gfx90a.O2.co.s.txt) at 0x1b8c, line 38's first instruction:
    `s_load_dwordx8 s[8:15]` took the five arguments, s6/s7 are the workgroup ids, v0 packed the
    work-item ids (split into v1 = tx, v2 = ty at 0x1a08); line 27 left `ty << 2` in v3, lines
    35/36 put out_col in v0 and out_row in v4; line 37 compared (vcc: out_row < cols), saved the
    whole wave's exec in s[0:1] and set s2 = 0x44 (tile's row pitch) over the condition's low half."""
    bx, by = BLOCK
    regs = {"s6": u32(bx), "s7": u32(by), "s14": u32(ROWS), "s15": u32(COLS), "s2": u32(0x44),
            "s3": u32(active >> 32), "vcc": u64(_mask(t["out_row"] < COLS for t in threads))}
    regs.update(sgpr_pair("s0", (1 << 64) - 1))
    regs.update(sgpr_pair("s4", KERNARG))
    regs.update(sgpr_pair("s8", IN_ADDR))
    regs.update(sgpr_pair("s10", OUT_ADDR))
    regs.update(sgpr_pair("s12", SUMS_ADDR))
    regs["v0"] = lane_u32(t["out_col"] for t in threads)
    regs["v1"] = lane_u32(t["tx"] for t in threads)
    regs["v2"] = lane_u32(t["ty"] for t in threads)
    regs["v3"] = lane_u32(t["ty"] << 2 for t in threads)
    regs["v4"] = lane_u32(t["out_row"] for t in threads)
    return regs


def specs() -> list[DumpSpec]:
    return [*(spec(p, o) for p in ("gfx90a", "gfx1030") for o in ("O0", "O2")), spec("gfx90a", "O0", "clang19.gfx90a"),
            spec("gfx90a", "O2", "clang19.gfx90a")]
