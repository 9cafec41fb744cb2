"""How fast the DWARF index answers its first question on a big code object.

    python benchmarks/bench_index.py BIG.co [--pc 0x1234] [--repeat 3]

Prints a table: opening the file, the first frames_at + variables for one PC
(cold: unit headers, compile-unit table and the top-level walk included), the
same query again (warm), llvm-dwarfdump-15 --debug-info on the same file for
scale, and the peak RSS of this process. Without --pc the PC is the middle of
the function with the highest address, the worst case for the top-level walk.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from elftools.elf.elffile import ELFFile  # noqa: E402

from aspace_dap.dwarf.index import DwarfIndex  # noqa: E402


def last_function_pc(elf: ELFFile) -> int:
    symtab = elf.get_section_by_name(".symtab")
    best = None
    for sym in symtab.iter_symbols() if symtab is not None else []:
        if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] > 0:
            if best is None or sym["st_value"] > best["st_value"]:
                best = sym
    if best is None:
        raise SystemExit("no function symbols: pass --pc")
    return best["st_value"] + (best["st_size"] // 2 & ~3)


def dwarfdump_seconds(path: Path) -> float | None:
    tool = shutil.which("llvm-dwarfdump-15") or shutil.which("llvm-dwarfdump")
    if tool is None:
        return None
    start = time.perf_counter()
    subprocess.run([tool, "--debug-info", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code_object", type=Path, nargs="?",
                        help="default: a generated gfx90a code object with --dies DIEs (gen_big_code_object.py)")
    parser.add_argument("--dies", type=int, default=200_000)
    parser.add_argument("--pc", type=lambda s: int(s, 0))
    parser.add_argument("--repeat", type=int, default=3, help="warm queries to average")
    args = parser.parse_args()
    exact = None
    if args.code_object is None:
        import tempfile
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from gen_big_code_object import write_code_object
        data, exact, _ = write_code_object(args.dies, 100)
        args.code_object = Path(tempfile.mkdtemp()) / f"generated-{args.dies}.co"
        args.code_object.write_bytes(data)

    with open(args.code_object, "rb") as stream:
        t0 = time.perf_counter()
        elf = ELFFile(stream)
        index = DwarfIndex(elf)
        t_open = time.perf_counter() - t0
        pc = args.pc if args.pc is not None else last_function_pc(elf)

        t0 = time.perf_counter()
        frames = index.frames_at(pc)
        variables = index.variables(frames[0], pc) if frames else []
        t_cold = time.perf_counter() - t0

        t0 = time.perf_counter()
        for _ in range(args.repeat):
            frames = index.frames_at(pc)
            if frames:
                index.variables(frames[0], pc)
        t_warm = (time.perf_counter() - t0) / max(args.repeat, 1)
        estimate = index.die_count()

    t_session, shown = session_seconds(args.code_object, pc)
    t_dump = dwarfdump_seconds(args.code_object)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    rows = [
        ("file", f"{args.code_object} ({os.path.getsize(args.code_object) / 2**20:.1f} MiB, "
                 + (f"{exact} DIEs)" if exact else f"~{estimate} DIEs)")),
        ("pc", f"{pc:#x}: {' <- '.join(f.function for f in frames) or 'no frame'}, {len(variables)} variables"),
        ("open", f"{t_open * 1000:.1f} ms"),
        ("frames_at+variables (cold)", f"{t_cold * 1000:.1f} ms"),
        ("frames_at+variables (warm)", f"{t_warm * 1000:.2f} ms"),
        ("open + cold query", f"{(t_open + t_cold) * 1000:.1f} ms"),
        ("dump + code object -> frame shown", f"{t_session * 1000:.1f} ms ({shown} variables formatted)"),
        ("llvm-dwarfdump --debug-info", f"{t_dump * 1000:.1f} ms" if t_dump is not None else "n/a"),
        ("ratio (open+cold / dwarfdump)", f"{(t_open + t_cold) / t_dump:.2f}" if t_dump else "n/a"),
        ("peak RSS", f"{rss_mib:.1f} MiB"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def session_seconds(code_object: Path, pc: int) -> tuple[float, int]:
    """What a user waits for: open a one-wave dump on the code object and format the frame's variables."""
    import tempfile

    import numpy as np

    from aspace_dap.session import Session
    from aspace_dap.state import StateWriter
    from aspace_dap.values.format import format_obj

    w = StateWriter("amd", "gfx90a", 64)
    co = w.add_code_object(str(code_object))
    wg = w.add_dispatch("kernel", co, (64, 1, 1), (64, 1, 1)).add_workgroup((0, 0, 0), lds=bytes(4096))
    wg.add_wave(0, 0, {"pc": np.uint64(pc), "exec": np.uint64(2**64 - 1), "s33": np.uint32(0),
                       "v0": np.arange(64, dtype=np.uint32).tobytes()}, private=np.zeros((64, 256), np.uint8))
    path = w.write(Path(tempfile.mkdtemp()) / "dump")
    t0 = time.perf_counter()
    session = Session.open(str(path))
    frame = session.frames()[0]
    shown = 0
    for var in session.variables(frame):
        obj = session.read_variable(frame, var).obj_for(frame.lane)
        if obj is not None:
            format_obj(obj)
            shown += 1
    return time.perf_counter() - t0, shown


if __name__ == "__main__":
    main()
