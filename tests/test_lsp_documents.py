"""The language server's documents over the wire: file URIs, position encodings and the client's edits.

LSP positions count characters in the code units of the encoding agreed at
`initialize` (UTF-16 unless the client offers UTF-8 or UTF-32 first). What the
server made of a document shows in where it puts a hint (the end of the line,
counted in those units) and in which word a hover at a column finds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_lsp_protocol import ARROW, SCRATCH_HIP, LspProcess

ROOT = Path(__file__).resolve().parents[1]
SCRATCH_O2 = {"codeObjects": ["examples/scratch_struct/scratch_struct.gfx90a.O2.co"]}
EMOJI = "\U0001F600"  # U+1F600: 4 UTF-8 bytes, 2 UTF-16 code units (a surrogate pair), 1 code point
GID_LINE = 24  # `int gid = ...`: the hint `⟶ v6[lane]` at its end, a hover on `gid` names it
ORIGINAL = SCRATCH_HIP.read_text().splitlines(keepends=True)


def units(text: str, encoding: str) -> int:
    """How many code units of `encoding` the client counts in `text`."""
    return len(text.encode({"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding])) // \
        {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]


def encodings(offered) -> dict:
    return {"general": {"positionEncodings": offered}}


def gid_hint(client: LspProcess, path: Path) -> dict:
    hints = [h for h in client.hints(path, GID_LINE - 1, GID_LINE - 1) if h["position"]["line"] == GID_LINE - 1]
    assert [h["label"] for h in hints] == [f"{ARROW} v6[lane]"]
    return hints[0]


def hover_word(client: LspProcess, path: Path, line: int, character: int) -> str | None:
    """The variable a hover at a 0-based line and client column names (None: no hover)."""
    answer = client.request("textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                                   "position": {"line": line, "character": character}})
    return None if answer is None else answer["contents"]["value"].split("**")[1]


def change(client: LspProcess, path: Path, version: int, *edits):
    """One didChange with `edits` in order: ((start line, start char), (end line, end char), text), or a bare
    text for the whole document."""
    client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": version},
                                             "contentChanges": [
        {"text": e} if isinstance(e, str) else
        {"range": {"start": {"line": e[0][0], "character": e[0][1]}, "end": {"line": e[1][0], "character": e[1][1]}},
         "text": e[2]} for e in edits]})


@pytest.fixture
def scratch_copy(tmp_path) -> Path:
    # a folder name with a space and a '#': the URI percent-encodes both
    path = tmp_path / "with space #1" / "scratch_struct.hip"
    path.parent.mkdir()
    shutil.copy(SCRATCH_HIP, path)
    return path


def test_file_uris_are_read_from_their_decoded_paths(scratch_copy):
    client = LspProcess(ROOT, SCRATCH_O2)
    try:
        assert "%20" in scratch_copy.as_uri() and "%23" in scratch_copy.as_uri()
        # the hint sits at the end of the line as the file on disk has it: the server read that file
        assert gid_hint(client, scratch_copy)["position"]["character"] == len(ORIGINAL[GID_LINE - 1].rstrip("\n"))
        for uri in ("untitled:Untitled-1", "https://example.com/scratch_struct.hip", "file://[broken/x.hip"):
            document = {"textDocument": {"uri": uri}}
            assert client.request("textDocument/inlayHint", {**document, "range": {
                "start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}}}) == []
            assert client.request("textDocument/hover", {**document, "position": {"line": 23, "character": 9}}) is None
    finally:
        client.close()


def test_file_uri_to_path():
    from aspace_dap.lsp.server import fs_path
    assert fs_path("file:///work/with%20space/%23hash.hip") == "/work/with space/#hash.hip"
    assert fs_path("file://server/share/k.hip") == "//server/share/k.hip"  # a UNC host
    assert fs_path("file:///C:/src/k.hip") == "c:/src/k.hip"  # a drive letter, lower-cased as VS Code does
    assert fs_path("untitled:Untitled-1") is None
    assert fs_path("file://[broken/x.hip") is None


@pytest.mark.parametrize("offered, agreed", [
    (None, "utf-16"),  # the protocol's default
    (["utf-8", "utf-16"], "utf-8"),
    (["x-unknown", "utf-32"], "utf-32"),
    (["x-unknown"], "utf-16"),
    ("utf-8", "utf-16"),  # not a list
])
def test_the_encoding_is_the_first_offered_that_the_server_knows(offered, agreed, tmp_path):
    client = LspProcess(tmp_path, {"codeObjects": []}, encodings(offered))
    try:
        assert client.initialized["capabilities"]["positionEncoding"] == agreed
    finally:
        client.close()


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_columns_in_code_units(encoding, scratch_copy):
    client = LspProcess(ROOT, SCRATCH_O2, encodings([encoding]))
    try:
        prefix = f"/*a{EMOJI * 5}\u00e9b*/"  # emoji (4, 2, 1 units each) and é (2, 1, 1 units)
        client.open(scratch_copy)
        change(client, scratch_copy, 2, ((GID_LINE - 1, 0), (GID_LINE - 1, 0), prefix))
        line = prefix + ORIGINAL[GID_LINE - 1].rstrip("\n")
        assert gid_hint(client, scratch_copy)["position"]["character"] == units(line, encoding)
        gid = line.index("gid")
        assert hover_word(client, scratch_copy, GID_LINE - 1, units(line[:gid], encoding)) == "gid"
        # read as a code-point index, the client's column of `gid` would be past the word and the space
        # after it (the line names no other variable after it)
        assert encoding == "utf-32" or units(line[:gid], encoding) > gid + len("gid ")
    finally:
        client.close()


@pytest.mark.parametrize("encoding, inside", [("utf-16", 1), ("utf-8", 3)])
def test_a_column_inside_a_character_stays_on_it(encoding, inside, scratch_copy):
    # the middle of the surrogate pair (UTF-16) or of the 4 bytes (UTF-8) is no character boundary:
    # the hover there is the word right after the emoji
    client = LspProcess(ROOT, SCRATCH_O2, encodings([encoding]))
    try:
        client.open(scratch_copy)
        change(client, scratch_copy, 2, ((GID_LINE - 1, 4), (GID_LINE - 1, 8), EMOJI))  # `    😀gid = ...`
        assert hover_word(client, scratch_copy, GID_LINE - 1, 4 + inside) == "gid"
    finally:
        client.close()


def test_edits_apply_in_order_with_ranges_in_client_units(scratch_copy):
    client = LspProcess(ROOT, SCRATCH_O2)  # UTF-16
    try:
        client.open(scratch_copy)
        end = len(ORIGINAL[GID_LINE - 1].rstrip("\n"))
        # the second change's range is in the text the first one made: a line is added, then taken out
        change(client, scratch_copy, 2, ((GID_LINE - 1, 0), (GID_LINE - 1, 0), f"{EMOJI}x\n"),
               ((GID_LINE - 1, 0), (GID_LINE, 0), ""))
        assert gid_hint(client, scratch_copy)["position"]["character"] == end
        # a range over two lines ending after an emoji (2 UTF-16 units): the next line joins line 24
        # without the emoji (read as code points, the range would take a space more)
        change(client, scratch_copy, 3, ((GID_LINE, 0), (GID_LINE, 0), EMOJI),
               ((GID_LINE - 1, end), (GID_LINE, 2), ""))
        joined = end + len(ORIGINAL[GID_LINE].rstrip("\n"))
        assert gid_hint(client, scratch_copy)["position"]["character"] == joined
        # a whole-document change replaces the text
        change(client, scratch_copy, 4, "".join(ORIGINAL))
        assert gid_hint(client, scratch_copy)["position"]["character"] == end
        # a change past the end appends
        assert hover_word(client, scratch_copy, len(ORIGINAL), 1) is None
        change(client, scratch_copy, 5, ((10_000, 0), (10_000, 0), "gid;\n"))
        assert hover_word(client, scratch_copy, len(ORIGINAL), 1) == "gid"
        # a change to a document the client has not opened changes nothing: the hints read the file
        other = scratch_copy.parent.with_name("unopened") / "scratch_struct.hip"
        other.parent.mkdir()
        shutil.copy(SCRATCH_HIP, other)
        change(client, other, 2, "int x;\n")
        assert gid_hint(client, other)["position"]["character"] == end
    finally:
        client.close()
