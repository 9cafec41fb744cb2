#!/usr/bin/env python3
"""Regenerate the example GPU state dumps from the committed code objects.

    .venv/bin/python examples/make_dumps.py            # rewrite examples/<name>/dumps/<arch>.<opt>/
    .venv/bin/python examples/make_dumps.py --check    # exit 1 if a committed dump differs from a fresh build
    .venv/bin/python examples/make_dumps.py lds_tiles  # only some examples

Everything is derived from the kernels' ISA and DWARF plus fixed inputs (see each example's
README, "The dump"); no HIP toolchain or GPU is needed, and the output is byte-for-byte stable.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
sys.path.insert(0, str(EXAMPLES.parent))
sys.path.insert(0, str(EXAMPLES))

from dumpgen import divergent_call, lds_tiles, production_amd, scratch_struct, shared_callee  # noqa: E402
from dumpgen.engine import build  # noqa: E402

BUILDERS = {"lds_tiles": lds_tiles, "scratch_struct": scratch_struct, "divergent_call": divergent_call,
            "shared_callee": shared_callee, "production_amd": production_amd}


def _tree(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def _same_tree(a: Path, b: Path) -> list[str]:
    left, right = _tree(a), _tree(b)
    differ = sorted(set(left) ^ set(right))
    differ += [rel for rel in sorted(set(left) & set(right)) if not filecmp.cmp(left[rel], right[rel], shallow=False)]
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed dumps, write nothing")
    parser.add_argument("examples", nargs="*", choices=[[], *BUILDERS], default=[],
                        help="examples to build (default: all)")
    args = parser.parse_args(argv)
    stale = []
    for name in args.examples or BUILDERS:
        for spec in BUILDERS[name].specs():
            dest = EXAMPLES / name / "dumps" / spec.name
            writer = build(spec)
            if args.check:
                with tempfile.TemporaryDirectory() as tmp:
                    writer.write(tmp)
                    differ = _same_tree(Path(tmp), dest) if dest.is_dir() else ["(missing)"]
                if differ:
                    stale.append(f"{dest.relative_to(EXAMPLES)}: {', '.join(differ)}")
            else:
                if dest.exists():
                    shutil.rmtree(dest)
                writer.write(dest)
                print(f"wrote {dest.relative_to(EXAMPLES)}")
    for line in stale:
        print(f"stale: {line}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
