"""The documents the client has open, kept in step with its edits, and LSP positions.

An LSP position counts characters in the code units of the position encoding
agreed at `initialize` (UTF-16 unless the client offers UTF-8 or UTF-32 first);
Python strings count code points. `Documents` converts in both directions, so
an edit after an emoji lands where the user typed it and a hint at the end of
a line sits at its end.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
SUPPORTED_ENCODINGS = (UTF8, UTF16, UTF32)
_DRIVE_PATH = re.compile(r"^/[a-zA-Z]:")


def choose_encoding(offered) -> str:
    """The first encoding the client offers that the server supports; UTF-16, the protocol's default, else."""
    if isinstance(offered, list):
        for name in offered:
            if name in SUPPORTED_ENCODINGS:
                return name
    return UTF16


def to_fs_path(uri: str) -> str | None:
    """The file-system path of a `file:` URI (percent-decoded; UNC hosts and drive letters kept); None
    for other schemes."""
    try:
        parts = urlparse(uri)
    except (TypeError, ValueError):
        return None
    if unquote(parts.scheme) != "file":
        return None
    netloc, path = unquote(parts.netloc), unquote(parts.path)
    if netloc and path:
        value = f"//{netloc}{path}"
    elif _DRIVE_PATH.match(path):
        value = path[1].lower() + path[2:]
    else:
        value = path
    return value.replace("/", "\\") if os.name == "nt" else value


def _units(char: str, encoding: str) -> int:
    code = ord(char)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def column_to_units(text: str, column: int, encoding: str) -> int:
    """A code-point column of a line as the client counts it."""
    head = text[:column]
    if encoding == UTF32 or head.isascii():
        return len(head)
    return sum(_units(c, encoding) for c in head)


def column_from_units(text: str, units: int, encoding: str) -> int:
    """The code-point column of a client's column (one inside a character or past the end is clamped)."""
    if encoding == UTF32 or text.isascii():
        return min(units, len(text))
    seen = 0
    for i, char in enumerate(text):
        if seen >= units:
            return i
        seen += _units(char, encoding)
    return len(text)


def _line_text(line: str) -> str:
    return line.rstrip("\r\n")


class Documents:
    """Open documents by URI: their text as the client last sent it."""

    def __init__(self, encoding: str = UTF16) -> None:
        self.encoding = encoding
        self._text: dict[str, str] = {}

    def __contains__(self, uri: str) -> bool:
        return uri in self._text

    def uris(self) -> list[str]:
        return list(self._text)

    def open(self, uri: str, text: str) -> None:
        self._text[uri] = text

    def close(self, uri: str) -> None:
        self._text.pop(uri, None)

    def lines(self, uri: str) -> list[str]:
        return self._text.get(uri, "").splitlines(keepends=True)

    def change(self, uri: str, changes: list[tuple[tuple[int, int, int, int] | None, str]]) -> None:
        """Apply content changes in order: (start line, start column, end line, end column) in client
        units and the new text, or (None, text) for the whole document. Unknown documents are left alone."""
        if uri not in self._text:
            return
        for span, new in changes:
            if span is None:
                self._text[uri] = new
                continue
            lines = self.lines(uri)
            start = self._offset(lines, span[0], span[1])
            end = max(start, self._offset(lines, span[2], span[3]))
            text = self._text[uri]
            self._text[uri] = text[:start] + new + text[end:]

    def _offset(self, lines: list[str], line: int, units: int) -> int:
        """Index into the document of a client position; a position past the end is the end."""
        if line >= len(lines):
            return sum(len(ln) for ln in lines)
        column = column_from_units(_line_text(lines[line]), units, self.encoding)
        return sum(len(ln) for ln in lines[:line]) + column

    def position(self, lines: list[str], line: int, column: int) -> dict:
        """An LSP position for a 0-based line and code-point column."""
        text = _line_text(lines[line]) if 0 <= line < len(lines) else ""
        return {"line": line, "character": column_to_units(text, column, self.encoding)}

    def column(self, lines: list[str], line: int, units: int) -> int:
        """The code-point column of a client position on `lines`."""
        text = _line_text(lines[line]) if 0 <= line < len(lines) else ""
        return column_from_units(text, units, self.encoding)
