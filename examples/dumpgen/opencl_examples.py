"""The OpenCL example dumps for Intel GPUs: write them, or check the committed ones are current.

    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.opencl_examples            # rewrite opencl/dumps/
    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.opencl_examples --check    # exit 1 if one is stale
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

from . import opencl_divergent_call, opencl_lds_tiles, opencl_scratch_struct
from .opencl_engine import OpenclDump, build

DUMPS = Path(__file__).resolve().parent.parent / "opencl" / "dumps"
MODULES = {"lds_tiles": opencl_lds_tiles, "scratch_struct": opencl_scratch_struct,
           "divergent_call": opencl_divergent_call}


def specs(names=None) -> list[OpenclDump]:
    return [s for name in (names or MODULES) for s in MODULES[name].specs()]


def stale_files(spec: OpenclDump, dumps: Path = DUMPS) -> list[str]:
    """Files of the committed dump that differ from a fresh build (missing or extra ones included)."""
    committed = dumps / spec.name
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        build(spec).write(fresh)
        left = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
        right = {p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file()}
        differ = sorted(left ^ right)
        differ += [rel for rel in sorted(left & right)
                   if not filecmp.cmp(fresh / rel, committed / rel, shallow=False)]
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed dumps, write nothing")
    parser.add_argument("kernels", nargs="*", choices=[[], *MODULES], default=[])
    args = parser.parse_args(argv)
    stale = []
    for spec in specs(args.kernels):
        if args.check:
            differ = stale_files(spec)
            if differ:
                stale.append(f"{spec.name}: {', '.join(differ)}")
            continue
        dest = DUMPS / spec.name
        if dest.exists():
            shutil.rmtree(dest)
        build(spec).write(dest)
        print(f"wrote {dest}")
    for line in stale:
        print(f"stale: {line}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
