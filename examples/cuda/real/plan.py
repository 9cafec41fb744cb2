"""What capture.sh builds and runs, and what cuda-gdb is asked about each core it reads.

`python3 plan.py write` rewrites gdb/<program>.gdb, the command lists capture.sh hands to cuda-gdb
(one command a line; capture.sh adds `target cudacore CORE` after the settings and echoes each command
before it runs, so the transcript reads like an interactive session). `python3 plan.py programs` prints
one line per program for capture.sh: name, source, nvcc flags. Standard library only: it runs on the
GPU machine too, and tests/test_cuda_real_capture.py checks that the committed command lists are current.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCH = "sm_90"
BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")
REGISTERS = "R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc"


@dataclass(frozen=True)
class Program:
    kernel: str  # the example: its source is <kernel>.cu
    build: str  # "G" (nvcc -G) or "lineinfo" (nvcc -lineinfo -O3)
    # (label, block, thread) of each thread asked about, besides the focus cuda-gdb opens the core on
    threads: tuple[tuple[str, str, str], ...]
    variables: tuple[str, ...]  # printed in frame 0, each with `print`
    hex: tuple[str, ...]  # printed with `print/x`
    memory: tuple[str, ...]  # examined with `x/8xw`
    # caller frames: (frame number, variables printed there)
    callers: tuple[tuple[int, tuple[str, ...]], ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.kernel}.{ARCH}.{self.build}"

    @property
    def nvcc_flags(self) -> str:
        return "-G" if self.build == "G" else "-lineinfo -O3"


LDS_THREADS = (
    ("first lane", "(1,0,0)", "(0,0,0)"),
    ("middle lane", "(1,0,0)", "(0,1,0)"),
    ("last lane", "(1,0,0)", "(15,1,0)"),
    ("a lane that faulted (tx == 3), the others diverged from it", "(1,0,0)", "(3,0,0)"),
    ("another warp of the block (warp 5, the example dump's second warp)", "(1,0,0)", "(5,10,0)"),
    ("a thread of another block", "(0,1,0)", "(7,3,0)"),
)
LDS_VARIABLES = ("in", "out", "tile_sums", "rows", "cols", "tx", "ty", "col", "row", "value", "out_col",
                 "out_row", "tile", "row_sums", "tile[ty]", "row_sums[ty]", "&tile", "&row_sums")

SCRATCH_THREADS = (
    ("first lane", "(2,0,0)", "(0,0,0)"),
    ("middle lane", "(2,0,0)", "(16,0,0)"),
    ("last lane", "(2,0,0)", "(31,0,0)"),
    ("a lane that faulted (threadIdx.x & 7 == 2), the others diverged from it", "(2,0,0)", "(2,0,0)"),
    ("another warp of the block", "(2,0,0)", "(40,0,0)"),
    ("a thread of another block", "(0,0,0)", "(5,0,0)"),
)
SCRATCH_VARIABLES = ("state", "probe", "out", "n", "dt", "gid", "p", "history", "damping", "pick", "step",
                     "axis", "neighbor", "cursor", "sample", "*cursor", "p.pos", "p.neighbors",
                     "history[step]", "&p")

DIVERGENT_THREADS = (
    ("first lane (even: the other branch)", "(0,0,0)", "(0,0,0)"),
    ("middle lane (even)", "(0,0,0)", "(16,0,0)"),
    ("last lane (odd, inside settle, diverged from the faulting lanes)", "(0,0,0)", "(31,0,0)"),
    ("a lane that faulted inside settle (lane % 4 == 1)", "(0,0,0)", "(5,0,0)"),
    ("another warp of the block", "(0,0,0)", "(37,0,0)"),
    ("a thread of another block", "(1,0,0)", "(9,0,0)"),
)
DIVERGENT_VARIABLES = ("x", "lane", "steps", "acc", "gid", "result", "in", "out", "n")
DIVERGENT_CALLER = ("gid", "lane", "x", "result", "steps", "in", "out", "n")

STORE_THREADS = (
    ("first lane", "(0,0,0)", "(0,0,0)"),
    ("middle lane", "(0,0,0)", "(16,0,0)"),
    ("last lane", "(0,0,0)", "(31,0,0)"),
    ("the lane whose store faulted (lane 7)", "(0,0,0)", "(7,0,0)"),
    ("another warp of the block", "(0,0,0)", "(39,0,0)"),
    ("a thread of another block", "(1,0,0)", "(7,0,0)"),
)

PROGRAMS = (
    Program("lds_tiles", "G", LDS_THREADS, LDS_VARIABLES, ("tx", "col"), ("&tile", "&row_sums")),
    Program("scratch_struct", "G", SCRATCH_THREADS, SCRATCH_VARIABLES, ("pick", "p.flags"),
            ("&history", "cursor", "probe")),
    Program("divergent_call", "G", DIVERGENT_THREADS, DIVERGENT_VARIABLES, ("lane",), ("in",),
            callers=((1, DIVERGENT_CALLER),)),
    Program("bad_store", "G", STORE_THREADS, ("index", "in", "out", "n", "gid", "slot", "value", "smooth", "k"),
            ("slot", "gid"), ("index", "in")),
    # the optimised builds have a line table only: frames, builtins and registers; variables are unknown
    Program("lds_tiles", "lineinfo", LDS_THREADS, ("tx", "tile"), (), ()),
    Program("divergent_call", "lineinfo", DIVERGENT_THREADS, ("lane", "acc"), (), (), callers=((1, ()),)),
)

SETTINGS = ("set pagination off", "set height 0", "set width 0", "set confirm off",
            "set print elements unlimited")
FOCUS_QUERY = "cuda kernel grid block thread device sm warp lane"


def thread_commands(program: Program) -> list[str]:
    """What is asked of the thread in focus."""
    out = [FOCUS_QUERY, "bt", "info args", "info locals"]
    out += [f"print {v}" for v in program.variables]
    out += [f"print/x {v}" for v in program.hex]
    out += [f"print {b}" for b in BUILTINS]
    out += [f"x/8xw {m}" for m in program.memory]
    out += [f"info registers {REGISTERS}"]
    for level, names in program.callers:
        out += [f"frame {level}", "info args", "info locals"] + [f"print {v}" for v in names] + ["frame 0"]
    return out


def commands(program: Program) -> list[str]:
    """Everything after `target cudacore`: the focus cuda-gdb chose (the stop), then each thread."""
    out = ["info cuda kernels"] + thread_commands(program)
    for _label, block, thread in program.threads:
        out.append(f"cuda block {block} thread {thread}")
        out += thread_commands(program)
    return out


def command_file(program: Program) -> str:
    lines = [f"# {program.name}: written by plan.py; capture.sh runs the settings, then `target cudacore "
             f"CORE`, then the rest"]
    lines += [f"# threads: {label} = block {block} thread {thread}" for label, block, thread in program.threads]
    lines += list(SETTINGS) + ["# target cudacore CORE"] + commands(program)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else ""
    if what == "write":
        folder = HERE / "gdb"
        folder.mkdir(exist_ok=True)
        for program in PROGRAMS:
            (folder / f"{program.name}.gdb").write_text(command_file(program))
        return 0
    if what == "programs":
        for program in PROGRAMS:
            print(f"{program.name} {program.kernel}.cu {program.nvcc_flags}")
        return 0
    print("usage: plan.py write | programs", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
