"""On the -O2 example dumps, the language server places each variable where the DAP session finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aspace_dap.session import Session
from test_lsp_protocol import ARROW, LspProcess, hints_by_line

ROOT = Path(__file__).resolve().parents[1]
DUMPS = sorted(p for p in (ROOT / "examples").glob("*/dumps/*O2*") if p.is_dir())
ROW = re.compile(r"^\| `(0x[0-9a-f]+)`\u2013`(0x[0-9a-f]+)` \| \d* \| (.*?) \| `.*` \|$", re.M)


def lane_generic(text: str) -> str:
    """The session names the lane it read (`v3[lane 5]`); the source lens speaks of any lane."""
    return re.sub(r"\[lane \d+\]", "[lane]", text)


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: f"{p.parent.parent.name}-{p.name}")
def test_static_locations_match_the_session(dump):
    session = Session.open(str(dump))
    frame = session.frames()[0]
    program = frame.program
    source = ROOT / frame.file
    client = LspProcess(ROOT, {"codeObjects": [str(Path(program.path).relative_to(ROOT))]})
    try:
        hints = hints_by_line(client.hints(source))
        lines = source.read_text().splitlines()
        checked = placed = 0
        for var in session.variables(frame):
            if not var.name or not re.search(rf"\b{var.name}\b", lines[var.decl_line - 1]):
                continue
            obj = session.read_variable(frame, var).obj_for(frame.lane)
            runtime = lane_generic(session.location_text(obj, 0))
            hover = client.hover(source, var.decl_line, var.name)
            assert hover is not None, var.name
            rows = [(int(lo, 16), int(hi, 16), text) for lo, hi, text in ROW.findall(hover["contents"]["value"])]
            covering = [text for lo, hi, text in rows if lo <= frame.pc < hi]
            static = covering[0] if covering else "optimized out"
            assert static == runtime, (var.name, hex(frame.pc), rows, runtime)
            if rows and rows[0][0] <= frame.pc < rows[0][1]:
                # the declaration's hint shows the same place
                decl = [h for h in hints.get(var.decl_line, []) if h.endswith(covering[0])]
                assert decl, (var.name, hints.get(var.decl_line))
                assert decl[0].startswith(ARROW)
            checked += 1
            placed += static != "optimized out"
        # examples/fault's one-store kernel keeps only gid at -O2 (out, stride and slot are optimized out)
        assert checked >= 4 and placed >= (1 if dump.parent.parent.name == "fault" else 2), (checked, placed)
    finally:
        client.close()


def test_session_prints_places_with_the_shared_printer():
    session = Session.open(str(ROOT / "examples/scratch_struct/dumps/gfx90a.O2"))
    frame = session.frames()[0]
    where = {}
    for var in session.variables(frame):
        obj = session.read_variable(frame, var).obj_for(frame.lane)
        where[var.name] = session.location_text(obj, 0)
    assert where["gid"] == f"v6[lane {frame.lane}]"
    assert where["p"] == "private_lane#0x8 (scratch)"
    assert where["damping"] == "optimized out"
