"""Cost of evaluating realistic location expressions for one lane vs all 64 lanes.

Run: .venv/bin/python benchmarks/bench_eval.py
The target: all 64 lanes cost at most 4x one lane (lane-wide evaluation).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from aspace_dap.dwarf.asm import assemble  # noqa: E402
from aspace_dap.dwarf.evaluator import evaluate  # noqa: E402
from aspace_dap.dwarf.storage import read_bytes  # noqa: E402
from aspace_dap.dwarf.target import Dialect, FrameContext  # noqa: E402
from fake_target import FakeTarget  # noqa: E402

ROCM = Dialect(vendor_ops="amd", heterogeneous=True)
UPSTREAM = Dialect(vendor_ops="amd", heterogeneous=False)

CASES = [
    ("VGPR lane slice (ROCm)", ROCM, "DW_OP_regx 2563; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", 4),
    ("VGPR per lane (clang)", UPSTREAM, "DW_OP_regx 2563", 4),
    ("private_lane stack var (ROCm)", ROCM, "DW_OP_regx 65; DW_OP_deref_size 4; DW_OP_lit6; DW_OP_shr; DW_OP_constu 5; "
     "DW_OP_LLVM_form_aspace_address; DW_OP_lit16; DW_OP_LLVM_offset", 16),
    ("fbreg stack var (clang)", UPSTREAM, "DW_OP_fbreg 48", 32),
    ("LDS var (clang xderef)", UPSTREAM, "DW_OP_addr 0x40; DW_OP_lit2; DW_OP_swap; DW_OP_xderef", 64),
    ("composite VGPR+implicit", UPSTREAM, "DW_OP_regx 2560; DW_OP_piece 4; DW_OP_constu 0x3fc00000; DW_OP_stack_value; "
     "DW_OP_piece 4; DW_OP_constu 0x41; DW_OP_stack_value; DW_OP_piece 1", 9),
    ("composite 2 VGPR lanes (ROCm)", ROCM, "DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; "
     "DW_OP_LLVM_offset; DW_OP_piece 4; DW_OP_regx 2561; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; "
     "DW_OP_LLVM_offset; DW_OP_piece 4", 8),
]


class ArrayMemoryTarget(FakeTarget):
    """FakeTarget with numpy-backed private and LDS memory, as the real adapter reads them."""

    def __init__(self):
        super().__init__()
        self.private = np.arange(64 * 4096, dtype=np.uint32).view(np.uint8)  # swizzled wave view
        self.lds = np.arange(65536, dtype=np.uint8)
        self.sgprs[33] = np.uint64(0x100 << 6)

    def read_memory(self, space, lanes, addrs, size):
        from aspace_dap.dwarf.target import MemoryRead
        a = addrs.astype(np.int64)[:, None] + np.arange(size)[None, :]
        if space.name == "private_lane":
            off = (a // 4) * 256 + lanes[:, None] * 4 + a % 4
            return MemoryRead(self.private[off], np.ones(off.shape, bool))
        return MemoryRead(self.lds[a % 65536], np.ones(a.shape, bool))

    def frame_base_address(self, regno, value):
        return self.address_space(5), value >> np.uint64(6)


def timeit(fn, repeat=300):
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return samples[len(samples) // 2]


def main() -> int:
    t = ArrayMemoryTarget()
    print(f"{'expression':34} {'1 lane (us)':>12} {'64 lanes (us)':>14} {'ratio':>7}")
    worst = 0.0
    for name, dialect, text, size in CASES:
        expr = assemble(text, dialect)
        frame = FrameContext(frame_base_expr=assemble("DW_OP_regx 65", dialect))

        def run(lanes):
            res = evaluate(expr, t, dialect, lanes, frame=frame)
            for _, loc in res.groups:
                read_bytes(loc, t, size)

        one = timeit(lambda: run(np.array([5])))
        many = timeit(lambda: run(np.arange(64)))
        worst = max(worst, many / one)
        print(f"{name:34} {one * 1e6:12.1f} {many * 1e6:14.1f} {many / one:7.2f}")
    print(f"worst ratio 64 lanes / 1 lane: {worst:.2f} (target <= 4)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
