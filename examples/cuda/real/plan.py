"""What capture.sh builds and runs, and what cuda-gdb is asked about each core it reads.

`python3 plan.py sources FOLDER` writes the kernels that stop on their example's stop line into FOLDER:
each example of ../ (`<kernel>.cu`, same file name, so the DWARF names `./<kernel>.cu`) with a macro
of fault.cuh put in front of the stop line's statement (STOPS) and `#include "<kernel>.host.cuh"` (the
host program, committed here) after the kernel, so that every line keeps its number. capture.sh runs
it in its build folder. `python3 plan.py write` rewrites gdb/<program>.gdb, the command lists
capture.sh hands to cuda-gdb (one command a line; capture.sh adds `target cudacore CORE` after the
settings and echoes each command before it runs, so the transcript reads like an interactive
session). `python3 plan.py programs` prints one line per program: name, source, nvcc flags. Standard
library only: it runs on the GPU machine too, and tests/test_cuda_real_capture.py checks that the
committed command lists are current and the written sources differ from their examples only by the
macros and the include.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent  # the examples the kernels are written from: ../<kernel>.cu
ARCH = "sm_90"
BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")
REGISTERS = "R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc"
Thread = tuple[str, str, str]  # (label, block, thread)


@dataclass(frozen=True)
class Program:
    kernel: str  # the example: its source is <kernel>.cu
    build: str  # "G" (nvcc -G) or "lineinfo" (nvcc -lineinfo -O3)
    # (label, block, thread) of each thread asked about, besides the focus cuda-gdb opens the core on
    threads: tuple[Thread, ...]
    variables: tuple[str, ...]  # printed in frame 0, each with `print`
    hex: tuple[str, ...]  # printed with `print/x`
    memory: tuple[str, ...]  # examined with `x/8xw`
    # caller frames: (frame number, variables printed there)
    callers: tuple[tuple[int, tuple[str, ...]], ...] = field(default=())
    # how the core is written: "exception" (the kernel faults; capture.sh also writes a lightweight
    # core of it, LIGHTWEIGHT_FLAGS) or "user" (a hang: the core is triggered through CUDA_COREDUMP_PIPE)
    trigger: str = "exception"
    # headers of a kernel of its own, committed beside it (the line tables name them too)
    headers: tuple[str, ...] = field(default=())
    # asked once, at the focus cuda-gdb opens the core on, before the threads
    at_stop: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.kernel}.{ARCH}.{self.build}"

    @property
    def nvcc_flags(self) -> str:
        return "-G" if self.build == "G" else "-lineinfo -O3"


def asked(block: str, first: str, middle: str, last: str, stop: tuple[str, str], warp: str,
          other: tuple[str, str], notes: dict[str, str] | None = None) -> tuple[Thread, ...]:
    """The six threads asked about besides the focus: the first, middle and last lane of a warp of
    BLOCK, STOP = (label, thread) a lane that stopped, a thread of another warp of BLOCK and
    OTHER = (block, thread) a thread of another block; NOTES adds to a label, in parentheses."""
    rows = (("first lane", block, first), ("middle lane", block, middle), ("last lane", block, last),
            (stop[0], block, stop[1]), ("another warp of the block", block, warp),
            ("a thread of another block", *other))
    notes = notes or {}
    return tuple((f"{label} ({notes[label]})" if label in notes else label, b, t) for label, b, t in rows)


LDS_THREADS = asked("(1,0,0)", "(0,0,0)", "(0,1,0)", "(15,1,0)",
                    ("a lane that faulted (tx == 3), the others diverged from it", "(3,0,0)"), "(5,10,0)",
                    ("(0,1,0)", "(7,3,0)"),
                    notes={"another warp of the block": "warp 5, the example dump's second warp"})
LDS_VARIABLES = ("in", "out", "tile_sums", "rows", "cols", "tx", "ty", "col", "row", "value", "out_col",
                 "out_row", "tile", "row_sums", "tile[ty]", "row_sums[ty]", "&tile", "&row_sums")

SCRATCH_THREADS = asked("(2,0,0)", "(0,0,0)", "(16,0,0)", "(31,0,0)",
                        ("a lane that faulted (threadIdx.x & 7 == 2), the others diverged from it", "(2,0,0)"),
                        "(40,0,0)", ("(0,0,0)", "(5,0,0)"))
SCRATCH_VARIABLES = ("state", "probe", "out", "n", "dt", "gid", "p", "history", "damping", "pick", "step",
                     "axis", "neighbor", "cursor", "sample", "*cursor", "p.pos", "p.neighbors",
                     "history[step]", "&p")

DIVERGENT_THREADS = asked("(0,0,0)", "(0,0,0)", "(16,0,0)", "(31,0,0)",
                          ("a lane that faulted inside settle (lane % 4 == 1)", "(5,0,0)"), "(37,0,0)",
                          ("(1,0,0)", "(9,0,0)"),
                          notes={"first lane": "even: the other branch", "middle lane": "even",
                                 "last lane": "odd, inside settle, diverged from the faulting lanes"})
DIVERGENT_VARIABLES = ("x", "lane", "steps", "acc", "gid", "result", "in", "out", "n")
DIVERGENT_CALLER = ("gid", "lane", "x", "result", "steps", "in", "out", "n")

STORE_THREADS = asked("(0,0,0)", "(0,0,0)", "(16,0,0)", "(31,0,0)",
                      ("the lane whose store faulted (lane 7)", "(7,0,0)"), "(39,0,0)", ("(1,0,0)", "(7,0,0)"))

CHAIN_THREADS = asked("(0,0,0)", "(0,0,0)", "(16,0,0)", "(31,0,0)",
                      ("the lane whose store faulted (lane 7)", "(7,0,0)"), "(39,0,0)", ("(1,0,0)", "(7,0,0)"))

# one warp at each of the three places in two blocks: the spin (warps 0-1), the barrier (2-5), the loop (6-7)
HANG_THREADS = (("the spin on the flag (warp 0)", "(0,0,0)", "(0,0,0)"),
                ("the barrier (warp 3)", "(0,0,0)", "(100,0,0)"),
                ("the loop (warp 7)", "(0,0,0)", "(255,0,0)"),
                ("the spin, another block (warp 1)", "(7,0,0)", "(33,0,0)"),
                ("the barrier, another block (warp 4)", "(7,0,0)", "(150,0,0)"),
                ("the loop, another block (warp 6)", "(7,0,0)", "(200,0,0)"))

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
    # production builds: a fault seven __forceinline__ levels deep, and a hang caught by a user-triggered core
    Program("inline_chain", "lineinfo", CHAIN_THREADS, (), (), (), headers=("inline_chain_ops.cuh", "inline_chain_store.cuh"),
            at_stop=("info line *$errorpc", "info symbol $errorpc", "x/4i $errorpc")),
    Program("hang", "lineinfo", HANG_THREADS, (), (), (), trigger="user", at_stop=("info cuda warps",)),
)

# what the vLLM team's posts tell users to set: every memory and the unrelocated images left out
LIGHTWEIGHT_FLAGS = ("skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,"
                     "skip_constbank_memory")


@dataclass(frozen=True)
class Stop:
    line: int  # of the example (from 1)
    macro: str  # of fault.cuh, put in front of the line's statement: STOP_AT(condition) or WAIT_HERE()
    statement: str  # how the line's statement starts in the example (a moved line is refused)


# The examples' stop lines (those of their dumps, examples/dumpgen/cuda_examples.py), and where the
# lanes that take another branch wait. bad_store.cu is a kernel of its own, committed here.
STOPS = {
    "lds_tiles": (Stop(32, "STOP_AT(tx == 3)", "int out_col ="),),
    "scratch_struct": (Stop(54, "STOP_AT((threadIdx.x & 7u) == 2u)", "out[gid] ="),),
    "divergent_call": (Stop(9, "STOP_AT(lane % 4 == 1)", "return acc;"), Stop(29, "WAIT_HERE()", "if (gid < n)")),
}


def kernel_source(kernel: str) -> str:
    """The example ../<kernel>.cu with its stops put in and its host program included after it: every
    line of the example keeps its number."""
    path = EXAMPLES / f"{kernel}.cu"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for stop in STOPS[kernel]:
        line = lines[stop.line - 1] if 0 < stop.line <= len(lines) else ""
        statement = line.lstrip(" \t")
        if not statement.startswith(stop.statement):
            raise ValueError(f"{path}:{stop.line} does not start with `{stop.statement}` (it is `{line.rstrip()}`): "
                             f"update STOPS in plan.py")
        lines[stop.line - 1] = f"{line[:len(line) - len(statement)]}{stop.macro}; {statement}"
    text = "".join(lines)
    return text + ("" if text.endswith("\n") else "\n") + f'\n#include "{kernel}.host.cuh"\n'


def write_sources(folder: Path) -> list[Path]:
    """Writes <kernel>.cu of every example that is made to stop into FOLDER (beside fault.cuh and the
    <kernel>.host.cuh files, which capture.sh copies there)."""
    written = []
    for kernel in STOPS:
        path = Path(folder) / f"{kernel}.cu"
        path.write_text(kernel_source(kernel), encoding="utf-8")
        written.append(path)
    return written


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
    out = ["info cuda kernels", *program.at_stop] + thread_commands(program)
    for _label, block, thread in program.threads:
        out.append(f"cuda block {block} thread {thread}")
        out += thread_commands(program)
    return out


def command_file(program: Program) -> str:
    lines = [f"# {program.name}: written by plan.py; capture.sh runs the settings, then `target cudacore "
             f"CORE`, then the rest"]
    lines += [f"# threads: {label} = block {block} thread {thread}" for label, block, thread in program.threads]
    if program.trigger == "user":
        lines.append("# core: user-triggered (CUDA_ENABLE_USER_TRIGGERED_COREDUMP, CUDA_COREDUMP_PIPE)")
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
    if what == "sources" and len(argv) == 3:
        for path in write_sources(Path(argv[2])):
            print(f"wrote {path.name} from {EXAMPLES.name}/{path.name}")
        return 0
    if what == "programs":
        for program in PROGRAMS:
            print(f"{program.name} {program.kernel}.cu {program.nvcc_flags} {program.trigger}")
        return 0
    print("usage: plan.py write | programs | sources FOLDER", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
