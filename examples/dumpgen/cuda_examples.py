"""The three CUDA example dumps: each kernel's inputs and a float32 model of its source up to the stop line."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from .cuda_engine import LOCAL_WINDOW, STACK_TOP, CudaDumpSpec, Elsewhere, WarpSpec

CUDA = Path(__file__).resolve().parent.parent / "cuda"
F32 = np.float32
TILE = 16
IN_ADDR, OUT_ADDR, SUMS_ADDR, PROBE_ADDR = 0x7F10_0000_0000, 0x7F10_0001_0000, 0x7F10_0002_0000, 0x7F10_0003_0000


def _f32s(values) -> bytes:
    return np.asarray(values, F32).tobytes()


# --- lds_tiles: stopped after the second __syncthreads (line 32) ---------------------------------

def lds_tiles(arch: str = "sm_90") -> CudaDumpSpec:
    rows = cols = 32
    data = np.arange(rows * cols, dtype=F32) * F32(0.25)
    bx, by = 1, 0

    def thread_values(t):
        tx, ty, _ = t
        col, row = bx * TILE + tx, by * TILE + ty
        value = data[row * cols + col] if row < rows and col < cols else F32(0)
        return {"tx": tx, "ty": ty, "col": col, "row": row, "value": float(value)}

    def shared():
        tile = [[0.0] * (TILE + 1) for _ in range(TILE)]
        for ty in range(TILE):
            for tx in range(TILE):
                tile[ty][tx] = thread_values((tx, ty, 0))["value"]
        sums = []
        for ty in range(TILE):
            acc = F32(0)
            for k in range(TILE):
                acc = F32(acc + F32(tile[ty][k]))
            sums.append(float(acc))
        return {"tile": tile, "row_sums": sums}

    params = struct.pack("<QQQii", IN_ADDR, OUT_ADDR, SUMS_ADDR, rows, cols)
    return CudaDumpSpec(
        name=f"lds_tiles.{arch}.G", cubin=CUDA / f"lds_tiles.{arch}.G.cubin", kernel="_Z15transpose_tilesPKfPfS1_ii",
        file="lds_tiles.cu", line=32, grid=(2, 2, 1), block=(TILE, TILE, 1), block_id=(bx, by, 0),
        warps=[WarpSpec(0, 0xFFFFFFFF), WarpSpec(5, 0xFFFFFFFF)], params=params, values=thread_values,
        shared_size=0x880, shared=shared, memory=[(IN_ADDR, data.tobytes())])


# --- scratch_struct: stopped at the final store (line 54), `cursor` a generic pointer to `p` ----------

STEPS, NEIGHBORS = 24, 6


def scratch_struct(arch: str = "sm_90") -> CudaDumpSpec:
    n, dt = 200, F32(0.01)
    block = (64, 1, 1)
    bid = 2
    state = (np.arange(n * 6, dtype=F32) % F32(13)) * F32(0.5) - F32(2)
    probe = [(g * 2654435761) & 0x7FFFFFFF for g in range(n)]
    frame = 0x100  # R1 = STACK_TOP - frame; `p` is at R1 + 0 (fbreg -176 from CFA = R1 + 176)

    def thread_values(t):
        tid = t[0]
        gid = bid * block[0] + tid
        pos = [state[gid * 6 + k] for k in range(3)]
        vel = [state[gid * 6 + 3 + k] for k in range(3)]
        force = [F32(F32(-0.1) * pos[k]) for k in range(3)]
        mass = F32(1.0) + F32(gid & 7)
        neighbors = [(gid + 7 * (j + 1)) % n for j in range(NEIGHBORS)]
        damping = F32(F32(1.0) - F32(0.01) * F32(tid % 8))
        history = []
        for _ in range(STEPS):
            for k in range(3):
                vel[k] = F32(vel[k] * damping + force[k] / mass * dt)
                pos[k] = F32(pos[k] + vel[k] * dt)
            history.append(float(F32(pos[0] + pos[1] + pos[2])))
        pick = probe[gid]
        step = (pick & 0xFFFF) % STEPS
        axis = (pick >> 16) % 3
        neighbor = neighbors[(pick >> 8) % NEIGHBORS]
        p = {"pos": [float(v) for v in pos], "vel": [float(v) for v in vel], "force": [float(v) for v in force],
             "mass": float(mass), "id": gid, "flags": tid & 3, "neighbors": neighbors}
        sample = float(F32(F32(history[step]) + pos[axis]))
        return {"gid": gid, "p": p, "history": history, "damping": float(damping), "pick": pick, "step": step,
                "axis": axis, "neighbor": neighbor, "cursor": LOCAL_WINDOW + STACK_TOP - frame, "sample": sample,
                "dt": float(dt)}

    params = struct.pack("<QQQif", IN_ADDR, PROBE_ADDR, OUT_ADDR, n, dt)
    return CudaDumpSpec(
        name=f"scratch_struct.{arch}.G", cubin=CUDA / f"scratch_struct.{arch}.G.cubin",
        kernel="_Z9integratePKfPKiPfif", file="scratch_struct.cu", line=54, grid=(4, 1, 1), block=block,
        block_id=(bid, 0, 0), warps=[WarpSpec(0, 0xFFFFFFFF), WarpSpec(1, 0xFFFFFFFF)], params=params,
        values=thread_values, frame_size=frame,
        memory=[(IN_ADDR, state.tobytes()), (PROBE_ADDR, np.asarray(probe, "<i4").tobytes())])


# --- divergent_call: odd lanes inside settle() at `return acc` (line 9), even lanes inactive --------------

def divergent_call(arch: str = "sm_90") -> CudaDumpSpec:
    n = 100
    data = np.arange(n, dtype=F32) * F32(0.5) + F32(1)

    def thread_values(t):
        gid = t[0]
        lane = gid % 32
        x = data[gid] if gid < n else F32(0)
        if not lane & 1:
            return {}
        steps = lane % 5 + 1
        acc = F32(x)
        for i in range(steps):
            acc = F32(acc * F32(0.5) + F32(lane + i))
        return {"x": float(x), "lane": lane, "steps": steps, "acc": float(acc)}

    def caller_values(t):
        # the kernel at line 21, inside `result = settle(x, lane, steps)`: result is not assigned yet;
        # `steps` reads as its value only where the register map keeps it at the call in a register
        # settle preserves (sm_120: R2), else it is optimized out there (sm_80, sm_90)
        gid = t[0]
        lane = gid % 32
        if not lane & 1:
            return {}
        x = data[gid] if gid < n else F32(0)
        return {"gid": gid, "lane": lane, "x": float(x), "steps": lane % 5 + 1}

    params = struct.pack("<QQi", IN_ADDR, OUT_ADDR, n)
    return CudaDumpSpec(
        name=f"divergent_call.{arch}.G", cubin=CUDA / f"divergent_call.{arch}.G.cubin", kernel="_Z9divergentPKfPfi",
        file="divergent_call.cu", line=9, grid=(1, 1, 1), block=(64, 1, 1), block_id=(0, 0, 0),
        warps=[WarpSpec(0, 0xAAAAAAAA), WarpSpec(1, 0xAAAAAAAA)], params=params, values=thread_values,
        memory=[(IN_ADDR, data.tobytes())], caller="_Z9divergentPKfPfi", caller_values=caller_values)


# --- divergent_call with the even lanes at their own PC: the join line (29), the else branch done ------

JOIN_LINE = 29  # `if (gid < n)`: where both branches meet again


def even_lane_values(t, n: int = 100) -> dict:
    """An even lane at line 29: its `else` branch ran to the end (count = lane % 7 iterations)."""
    gid = t[0]
    lane = gid % 32
    if lane & 1:
        return {}
    data = np.arange(n, dtype=F32) * F32(0.5) + F32(1)
    x = data[gid] if gid < n else F32(0)
    result = F32(-x)
    for i in range(lane % 7):
        result = F32(result + F32(F32(i) * x))
    return {"gid": gid, "lane": lane, "x": float(x), "result": float(result)}


def divergent_call_lane_pcs(arch: str = "sm_90") -> CudaDumpSpec:
    """The odd lanes in settle as in divergent_call; the even lanes, inactive, each at its own PC on the
    join line, as a CUDA core's lane rows record lanes that are not in the active mask."""
    spec = divergent_call(arch)
    spec.name = f"divergent_call.{arch}.G.lane_pcs"
    spec.elsewhere = Elsewhere(0x55555555, JOIN_LINE, even_lane_values)
    return spec


SPECS = {"lds_tiles": lds_tiles, "scratch_struct": scratch_struct, "divergent_call": divergent_call}
ARCHES = ("sm_80", "sm_90", "sm_120")  # examples/cuda/build.sh builds each kernel for these


def specs() -> list[CudaDumpSpec]:
    return [make(arch) for arch in ARCHES for make in SPECS.values()] + [divergent_call_lane_pcs("sm_90")]


def main() -> int:
    """Rewrite examples/cuda/dumps/<kernel>.<build>/ from the committed cubins."""
    import shutil
    import sys
    import tempfile

    from .cuda_engine import build, nvdisasm

    try:
        nvdisasm()  # before any committed dump is touched
    except FileNotFoundError as exc:
        print(f"dumpgen.cuda_examples: {exc}", file=sys.stderr)
        return 1
    for spec in specs():
        dest = CUDA / "dumps" / spec.name
        # built beside the committed dump and swapped in only when complete: a failure keeps the old one
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{spec.name}.") as tmp:
            build(spec, Path(tmp) / "dump")
            if dest.exists():
                shutil.rmtree(dest)
            (Path(tmp) / "dump").rename(dest)
        print(f"wrote {dest.relative_to(CUDA.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
