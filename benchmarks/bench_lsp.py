#!/usr/bin/env python3
"""Time to the first inlay-hint answer of `aspace-dap lsp` on a big code object.

    bench_lsp.py [--dies 200000] [--keep DIR]

Writes a code object with gen_big_code_object.py, starts the language server
as a process, initializes it with aspace.codeObjects naming that file, and
times spawn -> initialize answer -> first textDocument/inlayHint answer for
the first 100 lines of one compile unit's source file. Exits 1 when that
answer holds no hints, since its time would then mean nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_lsp_protocol import LspProcess  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dies", type=int, default=200_000)
    ap.add_argument("--keep", help="write the code object here instead of a temporary folder")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_lsp_"))
    folder.mkdir(parents=True, exist_ok=True)
    co = folder / "big.co"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_big_code_object.py"), str(co),
                    "--dies", str(args.dies)], check=True, stdout=subprocess.DEVNULL)

    from aspace_dap.lsp.program import load_lenses
    files = load_lenses(str(co))[0].source_files()
    source = Path(files[len(files) // 2])

    start = time.perf_counter()
    client = LspProcess(folder, {"codeObjects": ["big.co"]})
    initialized = time.perf_counter()
    hints = client.request("textDocument/inlayHint", {"textDocument": {"uri": source.as_uri()}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}}})
    first = time.perf_counter()
    client.hints(source)
    whole = time.perf_counter()
    client.close()

    print(f"{'step':<40} {'seconds':>8}")
    print(f"{'spawn + initialize (loads the code object)':<40} {initialized - start:8.3f}")
    print(f"{'first inlay hints (100 lines)':<40} {first - initialized:8.3f}")
    print(f"{'spawn to first inlay-hint answer':<40} {first - start:8.3f}")
    print(f"{'inlay hints for the whole file':<40} {whole - first:8.3f}")
    print(f"{args.dies} DIEs, file {source.name}, {len(hints)} hints in the first answer")
    if not hints:
        # an empty answer is fast for the wrong reason: the time above measures nothing
        print("no hints: the code object's line table or declarations do not name the file", file=sys.stderr)
        return 1
    for hint in hints[:3]:
        print(f"  line {hint['position']['line'] + 1}: {hint['label']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
