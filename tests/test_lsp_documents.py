"""The language server's documents: file URIs, position encodings and the client's edits."""

from __future__ import annotations

import pytest

from aspace_dap.lsp.documents import (UTF8, UTF16, UTF32, Documents, choose_encoding, column_from_units,
                                      column_to_units, to_fs_path)

EMOJI = "\U0001F600"  # U+1F600: 4 UTF-8 bytes, 2 UTF-16 code units (a surrogate pair), 1 code point


@pytest.mark.parametrize("uri, path", [
    ("file:///work/a.hip", "/work/a.hip"),
    ("file:///work/with%20space/%23hash.hip", "/work/with space/#hash.hip"),  # RFC 3986 percent-encoding
    ("file://server/share/k.hip", "//server/share/k.hip"),  # a UNC host
    ("file:///C:/src/k.hip", "c:/src/k.hip"),  # a drive letter, lower-cased as VS Code does
    ("untitled:Untitled-1", None),
    ("https://example.com/k.hip", None),
])
def test_file_uris(uri, path):
    assert to_fs_path(uri) == path


def test_the_encoding_is_the_first_offered_that_the_server_knows():
    assert choose_encoding(None) == UTF16  # the protocol's default
    assert choose_encoding(["utf-8", "utf-16"]) == UTF8
    assert choose_encoding(["x-unknown", "utf-32"]) == UTF32
    assert choose_encoding(["x-unknown"]) == UTF16
    assert choose_encoding("utf-8") == UTF16  # not a list


@pytest.mark.parametrize("encoding, units", [(UTF8, [0, 1, 5, 7, 8]), (UTF16, [0, 1, 3, 4, 5]),
                                             (UTF32, [0, 1, 2, 3, 4])])
def test_columns_in_code_units(encoding, units):
    text = f"a{EMOJI}\u00e9b"  # a, the emoji, é (2 UTF-8 bytes, 1 UTF-16 unit), b
    assert [column_to_units(text, c, encoding) for c in range(5)] == units
    assert [column_from_units(text, u, encoding) for u in units] == list(range(5))
    assert column_from_units(text, 999, encoding) == len(text)  # past the end: the end


def test_a_column_inside_a_character_stays_on_it():
    # the middle of the surrogate pair (UTF-16) or of the 4 bytes (UTF-8) is not a character boundary
    assert column_from_units(f"a{EMOJI}b", 2, UTF16) == 2
    assert column_from_units(f"a{EMOJI}b", 3, UTF8) == 2


def test_edits_in_order_ranges_in_client_units():
    docs = Documents(UTF16)
    docs.open("file:///k.hip", f"int {EMOJI} x;\nint y;\n")
    docs.change("file:///k.hip", [((0, 7, 0, 8), "z")])  # UTF-16 column 7 is `x` (the emoji counts 2)
    assert docs.lines("file:///k.hip") == [f"int {EMOJI} z;\n", "int y;\n"]
    docs.change("file:///k.hip", [((0, 4, 1, 0), ""), ((9, 0, 9, 0), "// end\n")])  # spans lines; past the end
    assert docs.lines("file:///k.hip") == ["int int y;\n", "// end\n"]
    docs.change("file:///k.hip", [(None, "whole\n")])
    assert docs.lines("file:///k.hip") == ["whole\n"]
    docs.change("file:///other.hip", [(None, "x")])  # not open: nothing to change
    assert "file:///other.hip" not in docs
    lines = [f"{EMOJI}x\r\n"]
    assert docs.position(lines, 0, 2) == {"line": 0, "character": 3}
    assert docs.column(lines, 0, 3) == 2
