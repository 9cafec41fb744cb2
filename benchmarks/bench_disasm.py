"""Disassembly benchmarks: 64 instructions around the stopped PC, per vendor where its tool is installed.

cold: the first request of a session (the vendor's tool runs once for the function, or for the whole
object: nvdisasm, iga64); warm: the same request again (the decoded text is kept). Also the DAP
`disassemble` request as VS Code's Disassembly View first sends it (100 rows) over stdio, warm.

Run: .venv/bin/python benchmarks/bench_disasm.py   (prints a table; no assertions)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from aspace_dap.adapters.base import DisassemblerMissing  # noqa: E402
from aspace_dap.session import Instruction, Session  # noqa: E402

CASES = [("AMD gfx90a -O0 (llvm-objdump)", "examples/divergent_call/dumps/clang19.gfx90a.O0"),
         ("AMD gfx1100 -O2 (llvm-objdump)", "examples/divergent_call/dumps/clang19.gfx1100.O2"),
         ("NVIDIA sm_90 -G (nvdisasm)", "examples/cuda/dumps/divergent_call.sm_90.G"),
         ("Intel tgllp -O0 (iga64)", "examples/opencl/dumps/divergent_call.tgllp.O0")]
COLD_ROUNDS = 7
WARM_ROUNDS = 300


def around(session: Session, pc: int) -> list:
    return session.instructions_around(pc, 32, 31)


def bench(dump: str) -> tuple[float, float, str] | str:
    cold = []
    for _ in range(COLD_ROUNDS):
        session = Session.open(str(ROOT / dump))
        pc = session.frames()[0].runtime_pc
        disassembler = session.adapter.disassembler()
        try:
            disassembler.locate()
        except DisassemblerMissing as exc:
            return f"skipped: {exc}"
        start = time.perf_counter()
        rows = around(session, pc)
        cold.append(time.perf_counter() - start)
        assert len(rows) == 64 and any(isinstance(r, Instruction) and r.decoded for r in rows)
    warm = []
    for _ in range(WARM_ROUNDS):
        start = time.perf_counter()
        around(session, pc)
        warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm), disassembler.tool


def bench_dap() -> str:
    """The request as VS Code's first page of the Disassembly View sends it, over stdio (bench_dap's client)."""
    from bench_dap import StdioClient
    c = StdioClient()
    try:
        c.request("initialize", {"adapterID": "aspace-gpu"})
        launch = c.send("launch", {"state": str(ROOT / CASES[0][1])})
        c.request("configurationDone")  # VS Code's order: the launch is answered after it
        c.response(launch)
        tid = c.request("threads")["threads"][0]["id"]
        ref = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["instructionPointerReference"]
        args = {"memoryReference": ref, "offset": 0, "instructionOffset": -50, "instructionCount": 100,
                "resolveSymbols": True}
        start = time.perf_counter()
        rows = c.request("disassemble", args)["instructions"]
        first = time.perf_counter() - start
        assert len(rows) == 100
        times = []
        for _ in range(200):
            start = time.perf_counter()
            c.request("disassemble", args)
            times.append(time.perf_counter() - start)
        return f"first {first * 1e3:.0f} ms, then p50 {statistics.median(times) * 1e3:.2f} ms"
    finally:
        c.close()


def main() -> None:
    print("64 instructions around the PC (Session.instructions_around), median:")
    print(f"  {'case':<34} {'cold':>10} {'warm':>10}")
    for name, dump in CASES:
        got = bench(dump)
        if isinstance(got, str):
            print(f"  {name:<34} {got}")
            continue
        cold, warm, _ = got
        print(f"  {name:<34} {cold * 1e3:>8.1f}ms {warm * 1e3:>8.2f}ms")
    print(f"DAP disassemble, 100 rows as VS Code asks (AMD gfx90a, over stdio): {bench_dap()}")


if __name__ == "__main__":
    main()
