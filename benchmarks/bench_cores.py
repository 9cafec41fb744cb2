"""GPU core benchmarks: opening a ROCm GPU core with many saved waves, and reading from it.

A gfx90a core with 2,048 waves (32 workgroups of 64 KiB LDS, 42 VGPRs, 36 AccVGPRs and scratch each) is
written once from a generated state; the table shows how long opening it takes and what touching one
wave costs. Register files, LDS and scratch are mapped from the core, so opening stays cheap and memory
does not grow with the number of waves.

Run: .venv/bin/python benchmarks/bench_cores.py   (prints a table; no assertions)
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aspace_dap.state import StateWriter, load_state  # noqa: E402
from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core  # noqa: E402

WORKGROUPS = 32
WAVES_PER_GROUP = 64
LANES = 64


def build(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    w = StateWriter("amd", "gfx90a", LANES, apertures={"local": (1 << 48, 1 << 32), "private": (2 << 48, 1 << 32)})
    layout = ([("pc", 8), ("exec", 8), ("s33", 4)] + [(f"v{i}", 4 * LANES) for i in range(42)]
              + [(f"a{i}", 4 * LANES) for i in range(36)])
    registers = rng.integers(0, 256, sum(size for _, size in layout), dtype=np.uint8).tobytes()
    scratch = rng.integers(0, 256, 4 * LANES * 64, dtype=np.uint8).tobytes()
    lds = rng.integers(0, 256, 64 << 10, dtype=np.uint8).tobytes()
    d = w.add_dispatch("k", None, grid_size=(WORKGROUPS * 1024, 1, 1), workgroup_size=(1024, 1, 1))
    wave_id = 0
    for g in range(WORKGROUPS):
        wg = d.add_workgroup((g, 0, 0), lds=lds)
        for i in range(WAVES_PER_GROUP):
            wg.add_wave(wave_id, i, registers, layout=layout, private=scratch)
            wave_id += 1
    dump = w.write(folder / "dump")
    with load_state(dump) as state:
        return write_rocm_core(state, folder / "gpucore.bench")


def timed(fn, repeat: int) -> float:
    """Best per-call time in milliseconds over a few rounds."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e3


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        core = build(Path(tmp))
        size = core.stat().st_size
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rows.append((f"open a {WORKGROUPS * WAVES_PER_GROUP}-wave gfx90a core ({size >> 20} MiB)",
                     timed(lambda: load_state(core).close(), 3), "ms"))
        state = load_state(core)
        wave = state.waves[-1]
        rows.append(("one wave: v41 of 64 lanes", timed(lambda: wave.registers.lane_view("v41", LANES), 200), "ms"))
        lanes = np.arange(LANES)
        rows.append(("one wave: scratch read_lane 64 lanes x 4 B",
                     timed(lambda: wave.private.read_lane(lanes, 16, 4), 200), "ms"))
        rows.append(("one workgroup: 64 KiB of LDS", timed(lambda: wave.workgroup.lds.read(0, 64 << 10), 200), "ms"))
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        state.close()
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'time':>9}")
    for name, ms, unit in rows:
        print(f"{name:<{width}}  {ms:>9.3f} {unit}")
    print(f"max RSS growth while opening and reading: {(rss_after - rss_before) / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
