"""The language server reads a relocatable device object (`.o`) as the code object the linker makes of it:
the same inlay hints, code lenses and hovers, whose PC ranges are the linked ones less where the linker
put `.text` (the object's code starts at 0)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dwarfdump_listing import read_dies
from test_codeobj_relocatable import IDS, OBJECT, PAIRS, _patched, paths, text_address
from test_lsp_protocol import ARROW, LspProcess

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(0x[0-9a-f]+)`\u2013`(0x[0-9a-f]+)` \| (\d*) \| (.*) \| `(.*)` \|$")
HEAD = re.compile(r"^\*\*(\w+)\*\* \u2014 (.*) \(([^()]+)\)$")


def declarations(listing: str, source: str) -> set[tuple[str, int]]:
    """(name, line) of every variable and parameter llvm-dwarfdump shows declared in `source`."""
    out = set()
    for die in read_dies(listing).values():
        if die.tag in ("DW_TAG_variable", "DW_TAG_formal_parameter") and "DW_AT_name" in die.attrs:
            file = die.attrs.get("DW_AT_decl_file", "")
            if file.strip('")').endswith(source) and "DW_AT_decl_line" in die.attrs:
                out.add((die.attrs["DW_AT_name"].strip('")'), int(die.attrs["DW_AT_decl_line"].rstrip(")"))))
    return out


def split_hover(value: str) -> dict[str, list]:
    """{object label: [(head, rows)]} of a hover over several code objects; rows as (lo, hi, line, text, dwarf)."""
    out: dict[str, list] = {}
    for section in value.split("\n\n---\n\n"):
        lines = section.splitlines()
        m = HEAD.match(lines[0])
        assert m, lines[0]
        rows = [ROW.match(line).groups() for line in lines[2:] if ROW.match(line)]
        out.setdefault(m.group(3), []).append((m.group(1), m.group(2), rows))
    return out


def moved(rows, shift: int):
    return [(int(lo, 16) + shift, int(hi, 16) + shift, line, text, dwarf) for lo, hi, line, text, dwarf in rows]


@pytest.mark.parametrize("example, build", PAIRS, ids=IDS)
def test_object_and_linked_object_show_the_same(example, build):
    obj, linked = paths(example, build)
    shift = text_address(linked)
    source = ROOT / "examples" / example / f"{example}.hip"
    client = LspProcess(ROOT, {"codeObjects": [str(p.relative_to(ROOT)) for p in (linked, obj)]})
    try:
        hints: dict[str, dict[int, list[str]]] = {}
        for h in client.hints(source):
            m = re.fullmatch(rf"{ARROW} \[([^\]]+)\] (.*)", h["label"])
            hints.setdefault(m.group(1), {}).setdefault(h["position"]["line"], []).append(m.group(2))
        assert set(hints) == {linked.name, obj.name}
        assert hints[obj.name] == hints[linked.name]
        assert sum(map(len, hints[obj.name].values())) >= 5

        lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": source.as_uri()}})
        titles = {}
        for lens in lenses:
            m = re.fullmatch(r"\[([^\]]+)\] (.*)", lens["command"]["title"])
            titles.setdefault(m.group(1), []).append((lens["range"]["start"]["line"], m.group(2)))
        assert titles[obj.name] == titles[linked.name] and titles[obj.name]

        hovered = 0
        listing = linked.with_name(linked.name + ".dwarf.txt").read_text()
        for name, line in sorted(declarations(listing, f"{example}/{example}.hip")):
            hover = client.hover(source, line, name)
            assert hover is not None, (name, line)
            sections = split_hover(hover["contents"]["value"])
            mine, theirs = sections[obj.name], sections[linked.name]
            assert [(n, what, moved(rows, shift)) for n, what, rows in mine] == \
                   [(n, what, moved(rows, 0)) for n, what, rows in theirs], (name, line)
            hovered += 1
        assert hovered >= 4
    finally:
        client.close()


def test_an_object_with_a_relocation_dwarf_does_not_take_is_named_and_the_server_keeps_serving(tmp_path):
    bad = tmp_path / "bad.o"
    bad.write_bytes(_patched(OBJECT.read_bytes(), ".rela.debug_line", 1, rtype=4))  # R_AMDGPU_REL32
    good = paths("divergent_call", "clang19.gfx1100.O2")[0]
    client = LspProcess(ROOT, {"codeObjects": [str(bad), str(good.relative_to(ROOT))]})
    try:
        source = ROOT / "examples" / "divergent_call" / "divergent_call.hip"
        hints = client.hints(source)
        client.drain()
        logged = [n["params"]["message"] for n in client.notifications if n["method"] == "window/logMessage"]
        assert any("bad.o" in m and "R_AMDGPU_REL32 (4)" in m and ".rela.debug_line" in m for m in logged), logged
        assert hints and all(h["label"].startswith(ARROW) for h in hints)  # the good object still answers
    finally:
        client.close()
