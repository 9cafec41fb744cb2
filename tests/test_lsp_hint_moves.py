"""Inlay hints list every place a variable's location list gives over the hinted lines: the moves on
its declaration line and those in code of line 0 (shown on the nearest line before it) included.

The inputs are clang-19 -O2 builds of tests/lsp_inputs/moves.hip for gfx90a, gfx942 and gfx1100;
the expectations come from llvm-dwarfdump-19's listing of each (location lists and line table, in
`*.dwarf.txt` next to the objects), not from our DWARF reader.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from dwarfdump_listing import line_tables, variables
from test_lsp_protocol import ARROW, LspProcess

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ROOT / "tests" / "lsp_inputs"
SOURCE = INPUTS / "moves.hip"
ARCHS = ("gfx90a", "gfx942", "gfx1100")
WAVE32 = {"gfx1100"}
OPTIMIZED_OUT = "optimized out"
# AMDGPUUsage, "AMDGPU DWARF Register Mapping": VGPRs of a wave32 from 1536, of a wave64 from 2560
VGPR_BASE = {True: 1536, False: 2560}


def object_name(arch: str) -> str:
    return f"moves.clang19.{arch}.O2.co"


def place(expr: str, wave32: bool) -> str:
    """How the lens names the place an llvm-dwarfdump expression gives (one VGPR, or a constant)."""
    m = re.fullmatch(r"DW_OP_regx (?:VGPR(\d+)(?:_LO16)?|(0x[0-9a-f]+))", expr)
    if m:
        number = int(m.group(1)) if m.group(1) else int(m.group(2), 16) - VGPR_BASE[wave32]
        assert 0 <= number < 256, expr
        return f"v{number}[lane]"
    m = re.fullmatch(r"DW_OP_consts \+(\d+), DW_OP_stack_value", expr)
    if m:
        return f"implicit {int(m.group(1)):#x}"
    m = re.fullmatch(r"DW_OP_implicit_value 0x[0-9a-f]+((?: 0x[0-9a-f]{2})+)", expr)
    if m:
        raw = bytes(int(b, 16) for b in m.group(1).split())
        return f"implicit {int.from_bytes(raw, 'little'):#x}"
    raise AssertionError(f"the test has no expectation for {expr!r}")


def listing(arch: str) -> str:
    return (INPUTS / f"{object_name(arch)}.dwarf.txt").read_text()


def expected_places(arch: str) -> tuple[dict[int, list[tuple[str, str]]], set[str], list]:
    """{line: [(name, place)]} for the variables of moves.hip with a location list: where each one
    starts on its declaration line, then every change of place (a gap between entries is
    "optimized out") on the line of the code where it happens, line 0 counting as the nearest line
    before it; the names; the variables."""
    text = listing(arch)
    (table,) = line_tables(text)
    wave32 = arch in WAVE32
    found = [v for v in variables(text) if v.decl_file and v.decl_file.endswith("/moves.hip")]
    names = {v.name for v in found}
    out: dict[int, list[tuple[str, str]]] = {}

    def line_of(pc: int) -> int | None:
        stated = table.stated_line(pc)
        return stated[1] if stated and stated[0].endswith("/moves.hip") else None

    for var in found:
        entries = sorted(var.entries)
        shown = place(entries[0][2], wave32)
        out.setdefault(var.decl_line, []).append((var.name, shown))
        high = entries[0][1]
        for lo, hi, expr in entries[1:]:
            if lo > high and shown != OPTIMIZED_OUT and line_of(high):
                out.setdefault(line_of(high), []).append((var.name, OPTIMIZED_OUT))
                shown = OPTIMIZED_OUT
            where = place(expr, wave32)
            if where != shown and line_of(lo):
                out.setdefault(line_of(lo), []).append((var.name, where))
                shown = where
            high = max(high, hi)
    return out, names, found


def test_the_inputs_hold_both_kinds_of_move():
    """What the hints must show: `k` takes a register on its declaration line (gfx90a, gfx1100) or in
    code of line 0 (gfx942); `v` in `mix` moves in code of line 0 on gfx1100."""
    for arch in ARCHS:
        text = listing(arch)
        (table,) = line_tables(text)
        found = {(v.name, v.decl_line): v for v in variables(text)}
        k = found[("k", 10)]
        rows = [table.row_at(lo)[1] for lo, _, _ in k.entries[1:]]
        assert len(k.entries) >= 2
        if arch == "gfx942":
            assert 0 in rows, rows
        else:
            assert k.decl_line in rows, rows
        v = found[("v", 14)]
        rows = [table.row_at(lo)[1] for lo, _, _ in v.entries[1:]]
        assert (0 in rows) == (arch == "gfx1100"), (arch, rows)


@pytest.fixture(scope="module")
def hints():
    paths = [str((INPUTS / object_name(arch)).relative_to(ROOT)) for arch in ARCHS]
    client = LspProcess(ROOT, {"codeObjects": paths})
    try:
        yield {(first, last): client.hints(SOURCE, first, last) for first, last in ((0, 200), (9, 9), (13, 20))}
    finally:
        client.close()


def by_object(raw) -> dict[str, dict[int, list[str]]]:
    """{object: {line: [label without the arrow and the object's name]}}."""
    out: dict[str, dict[int, list[str]]] = {}
    for h in raw:
        m = re.fullmatch(rf"{ARROW} \[([^\]]+)\] (.*)", h["label"])
        assert m, h["label"]
        out.setdefault(m.group(1), {}).setdefault(h["position"]["line"] + 1, []).append(m.group(2))
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("window", [(0, 200), (9, 9), (13, 20)], ids=["file", "line-10", "mix"])
def test_hints_show_every_place_the_location_list_gives(hints, arch, window):
    expected, names, found = expected_places(arch)
    shown = by_object(hints[window]).get(object_name(arch), {})
    first, last = window[0] + 1, window[1] + 1
    checked = 0
    for line in range(first, last + 1):
        labels = shown.get(line, [])
        want = expected.get(line, [])
        declared_alone = len(labels) == 1 and len(want) == 1 and any(
            v.name == want[0][0] and v.decl_line == line for v in found)
        wanted_labels = [text if declared_alone else f"{name}: {text}" for name, text in want]
        missing = Counter(wanted_labels) - Counter(labels)
        assert not missing, (arch, line, labels, wanted_labels)
        named = [label for label in labels if label.split(": ", 1)[0] in names and ": " in label]
        extra = Counter(named) - Counter(wanted_labels)
        assert not extra, (arch, line, labels, wanted_labels)
        checked += len(want)
    assert checked, (arch, window)


@pytest.mark.parametrize("arch", ARCHS)
def test_k_and_v_show_their_moves(hints, arch):
    """The cases of the issue, spelled out: `k` shows both its constant start and its register on its
    declaration line (or the register on the line before its line-0 code), `v` its move in `mix`."""
    shown = by_object(hints[(0, 200)])[object_name(arch)]
    register = {"gfx90a": "v2[lane]", "gfx942": "v2[lane]", "gfx1100": "v1[lane]"}[arch]
    assert "k: implicit 0x0" in shown[10]
    assert f"k: {register}" in shown[31 if arch == "gfx942" else 10]
    moved = {"gfx90a": (17, "v1[lane]"), "gfx942": (17, "v1[lane]"), "gfx1100": (16, "v3[lane]")}[arch]
    assert f"v: {moved[1]}" in shown[moved[0]]
