"""State dump benchmarks: opening a dump with a 4 GiB sparse region, and gather throughput.

Run: .venv/bin/python benchmarks/bench_state.py   (prints a table; no assertions)
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aspace_dap.state import load_state  # noqa: E402
from aspace_dap.state.sample import sample_writer  # noqa: E402

BIG = 4 << 30


def build(folder: Path) -> Path:
    writer = sample_writer()
    writer.add_memory("global", 0x100000000, b"")
    path = writer.write(folder / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    region = manifest["memory"][1]
    region["size"] = BIG
    with open(path / region["file"], "r+b") as f:
        f.truncate(BIG)  # sparse
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def timed(fn, repeat: int) -> float:
    """Best per-call time in microseconds over a few rounds."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rows.append(("load_state (4 GiB sparse region)", timed(lambda: load_state(path).close(), 20), "us/call"))
        state = load_state(path)
        memory = state.memory["global"]
        rng = np.random.default_rng(0)
        for size in (4, 8, 16):
            addrs = (0x100000000 + rng.integers(0, BIG - 16, 64)).astype(np.uint64)
            us = timed(lambda: memory.read_many(addrs, size), 200)
            rows.append((f"read_many 64 lanes x {size} B, random in 4 GiB", us, f"{64 * size / us:.1f} MB/s"))
        addrs = (0x100000000 + np.arange(64, dtype=np.uint64) * 4)
        rows.append(("read_many 64 lanes x 4 B, contiguous", timed(lambda: memory.read_many(addrs, 4), 500), "us/call"))
        rows.append(("read 64 KiB", timed(lambda: memory.read(0x100000000 + (1 << 31), 65536), 200), "us/call"))
        memory.write(0x100000000 + 16, b"overlay!")
        rows.append(("read_many 64 x 4 B with an overlay page",
                     timed(lambda: memory.read_many(addrs, 4), 500), "us/call"))
        private = state.wave_by_id(0).private
        lanes = np.arange(64)
        rows.append(("private read_lane 64 lanes x 4 B (swizzled)",
                     timed(lambda: private.read_lane(lanes, 8, 4), 500), "us/call"))
        regs = state.wave_by_id(0).registers
        rows.append(("registers lane_view v0", timed(lambda: regs.lane_view("v0", 64), 2000), "us/call"))
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        state.close()
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'time (us)':>10}  note")
    for name, us, note in rows:
        print(f"{name:<{width}}  {us:>10.1f}  {note}")
    print(f"max RSS growth during the run: {(rss_after - rss_before) / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
