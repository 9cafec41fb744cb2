#!/usr/bin/env python3
"""The language server (`aspace-dap lsp`) on big inputs: start-up to the first inlay hint, then
the other requests an editor sends.

    bench_lsp.py [--dies 200000] [--runs 5] [--objects 100] [--object-dies 2000] [--keep DIR]

1. Start-up: a code object with --dies DIEs (gen_big_code_object.py); the server is spawned,
   initialized with aspace.codeObjects naming it, and asked for the inlay hints of the first
   100 lines of one compile unit's source. Median of --runs starts.
2. Servers on that object, request after request: hints for a large visible range and the
   whole file; didOpen with the first hints right after it, then its diagnostics (which read
   the whole file); hovers, code lenses; a hover as the first request.
3. A workspace of --objects code objects (--object-dies DIEs each, each with its own sources),
   found by a glob: start-up to the first hint, hints and hover in one object's file, code
   lenses of a file no object names.

Each step shows wall time and the server's CPU time (user + system, from /proc): a busy
machine stretches the first, much less the second. Exits 1 when an answer that should hold
hints holds none, since its time would then mean nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from test_lsp_protocol import LspProcess  # noqa: E402

FIRST_LINES = 100
VISIBLE_LINES = 300


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hint_range(path: Path, first: int, last: int) -> dict:
    return {"textDocument": {"uri": path.as_uri()},
            "range": {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}}


class Timed:
    """Wall and server CPU seconds of each step of one server."""

    def __init__(self, client: LspProcess, start: float):
        self.client = client
        self.rows: list[tuple[str, float, float]] = []
        self._wall, self._cpu = start, 0.0

    def step(self, name: str, fn):
        result = fn()
        wall, cpu = time.perf_counter(), cpu_s(self.client.proc.pid)
        self.rows.append((name, wall - self._wall, cpu - self._cpu))
        self._wall, self._cpu = wall, cpu
        return result


def print_table(title: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'step':<58} {'wall s':>8} {'CPU s':>8}")
    for name, wall, cpu in rows:
        print(f"  {name:<58} {wall:8.3f} {cpu:8.3f}")


def generate(path: Path, dies: int, stem: str = "gen/unit") -> None:
    from gen_big_code_object import write_code_object
    path.write_bytes(write_code_object(dies, 100, stem)[0])


def source_in(co: Path, folder: Path) -> Path:
    """A file in `folder` standing for the source of the compile unit in the middle of a code object
    (the generator writes no sources: the DWARF's last two path parts name it). Its lines are
    filled in once the first hints tell which variables there are."""
    from aspace_dap.lsp.program import load_lenses
    files = load_lenses(str(co))[0].source_files()
    dwarf = Path(files[len(files) // 2])
    return folder / "src" / dwarf.parent.name / dwarf.name


HOVER_COLUMN = 5


def write_source(path: Path, name: str) -> None:
    """2,000 lines naming `name` at HOVER_COLUMN, so a hover on any line has a word to look up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"    {name};  // line {i + 1}\n" for i in range(2000)))


def startup(folder: Path, settings: dict, source: Path) -> tuple[list[tuple[str, float, float]], LspProcess, list]:
    start = time.perf_counter()
    client = LspProcess(folder, settings)
    timed = Timed(client, start)
    timed.step("spawn + initialize (loads the code objects)", lambda: None)
    hints = timed.step(f"first inlay hints ({FIRST_LINES} lines)",
                       lambda: client.request("textDocument/inlayHint", hint_range(source, 0, FIRST_LINES)))
    return timed.rows, client, hints


def median_rows(runs: list[list[tuple[str, float, float]]]) -> list[tuple[str, float, float]]:
    """Each step's median over the runs, then the median of the first two steps together
    (spawn to the first hints)."""
    rows = [(name, statistics.median(r[i][1] for r in runs), statistics.median(r[i][2] for r in runs))
            for i, (name, _, _) in enumerate(runs[0])]
    rows.insert(2, ("spawn to first inlay-hint answer", statistics.median(r[0][1] + r[1][1] for r in runs),
                    statistics.median(r[0][2] + r[1][2] for r in runs)))
    return rows


def first_variable(hints: list) -> tuple[int, str]:
    """(0-based line, name) of a variable named in a hint (`⟶ name: ...`) or the line's only one."""
    for hint in hints:
        word = hint["label"].split(" ")[1]
        if word.endswith(":"):
            return hint["position"]["line"], word[:-1]
    raise SystemExit("no named variable in the hints")


def requests_on_one_server(folder: Path, settings: dict, source: Path, name_line: int, name: str):
    text = source.read_text()
    start = time.perf_counter()
    client = LspProcess(folder, settings)
    timed = Timed(client, start)
    timed.step("spawn + initialize", lambda: None)
    timed.step(f"inlay hints, first {FIRST_LINES} lines",
               lambda: client.request("textDocument/inlayHint", hint_range(source, 0, FIRST_LINES)))
    timed.step(f"inlay hints, next {VISIBLE_LINES} lines (a tall editor scrolled)",
               lambda: client.request("textDocument/inlayHint",
                                      hint_range(source, FIRST_LINES, FIRST_LINES + VISIBLE_LINES)))
    whole = timed.step("inlay hints, whole file",
                       lambda: client.request("textDocument/inlayHint", hint_range(source, 0, 100_000)))
    client.close()

    start = time.perf_counter()
    client = LspProcess(folder, settings)
    timed2 = Timed(client, start)
    timed2.step("spawn + initialize (a second server)", lambda: None)
    # what an editor does on opening the file: didOpen, then at once the hints of what it shows
    client.notify("textDocument/didOpen", {"textDocument": {"uri": source.as_uri(), "languageId": "hip",
                                                            "version": 1, "text": text}})
    timed2.step(f"didOpen + inlay hints ({FIRST_LINES} lines): until the hints",
                lambda: client.request("textDocument/inlayHint", hint_range(source, 0, FIRST_LINES)))
    timed2.step("... until the diagnostics (read the whole file)", lambda: client.diagnostics(source))
    position = {"textDocument": {"uri": source.as_uri()}, "position": {"line": name_line, "character": HOVER_COLUMN}}
    hover = timed2.step(f"hover on `{name}`", lambda: client.request("textDocument/hover", position))
    timed2.step("hover again", lambda: client.request("textDocument/hover", position))
    timed2.step("code lenses",
                lambda: client.request("textDocument/codeLens", {"textDocument": {"uri": source.as_uri()}}))
    client.close()

    start = time.perf_counter()
    client = LspProcess(folder, settings)
    timed3 = Timed(client, start)
    timed3.step("spawn + initialize (a third server)", lambda: None)
    timed3.step(f"hover on `{name}` as the first request",
                lambda: client.request("textDocument/hover", position))
    client.close()
    if hover is None:
        raise SystemExit(f"no hover for {name} at line {name_line + 1}")
    return timed.rows + timed2.rows + timed3.rows, len(whole)


def many_objects(folder: Path, count: int, dies: int, runs: int):
    objs = folder / "objs"
    made = []
    for k in range(count):
        co = objs / f"k{k:03d}" / "kernels.co"
        if not co.exists():
            co.parent.mkdir(parents=True, exist_ok=True)
            generate(co, dies, f"k{k:03d}/k{k:03d}")
        made.append(co)
    settings = {"codeObjects": ["objs/**/*.co"]}
    source = source_in(made[count // 2], folder)
    source.unlink(missing_ok=True)
    all_rows = []
    for _ in range(runs):
        rows, client, hints = startup(folder, settings, source)
        if not hints:
            raise SystemExit(f"no hints in {source} of the {count}-object workspace")
        line, name = first_variable(hints)
        write_source(source, name)
        timed = Timed(client, time.perf_counter())
        timed._cpu = cpu_s(client.proc.pid)
        hover = timed.step(f"hover on `{name}`", lambda: client.request(
            "textDocument/hover", {"textDocument": {"uri": source.as_uri()},
                                   "position": {"line": line, "character": HOVER_COLUMN}}))
        if hover is None:
            raise SystemExit(f"no hover for {name} in {source}")
        other = folder / "elsewhere" / "not_built.hip"
        timed.step("code lenses of a file no object names", lambda: client.request(
            "textDocument/codeLens", {"textDocument": {"uri": other.as_uri()}}))
        client.close()
        source.unlink()
        all_rows.append(rows + timed.rows)
    return median_rows(all_rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dies", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5, help="start-ups to take the median of (default 5)")
    ap.add_argument("--objects", type=int, default=100, help="code objects of the workspace part (0: skip it)")
    ap.add_argument("--object-dies", type=int, default=2000)
    ap.add_argument("--keep", help="write the inputs here (and reuse them) instead of a temporary folder")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_lsp_"))
    folder.mkdir(parents=True, exist_ok=True)
    co = folder / "big.co"
    if not co.exists():
        generate(co, args.dies)
    source = source_in(co, folder)
    source.unlink(missing_ok=True)  # the hints at start-up are those of a file the editor has not read
    settings = {"codeObjects": ["big.co"]}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    runs, hints = [], []
    for _ in range(args.runs):
        rows, client, hints = startup(folder, settings, source)
        client.close()
        runs.append(rows)
        if not hints:
            # an empty answer is fast for the wrong reason: the time above measures nothing
            print("no hints: the code object's line table or declarations do not name the file", file=sys.stderr)
            return 1
    print_table(f"start-up, {args.dies} DIEs, file {source.name}: {len(hints)} hints in the first answer "
                f"(median of {args.runs})", median_rows(runs))
    for hint in hints[:3]:
        print(f"    line {hint['position']['line'] + 1}: {hint['label']}")

    line, name = first_variable(hints)
    write_source(source, name)
    rows, whole = requests_on_one_server(folder, settings, source, line, name)
    print_table(f"requests on one server ({whole} hints in the whole file)", rows)

    if args.objects:
        rows = many_objects(folder, args.objects, args.object_dies, max(1, args.runs // 2))
        print_table(f"a workspace of {args.objects} code objects of {args.object_dies} DIEs (glob objs/**/*.co)",
                    rows)
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
