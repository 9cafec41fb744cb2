"""The paths a manifest names: relative, '/'-separated, inside the dump; checked one by one, or in bulk
for the 100,000 files of a big dump."""

from __future__ import annotations

import re
from pathlib import PurePosixPath


def path_problem(rel: object) -> str | None:
    """Why `rel` is not an acceptable manifest path (relative, '/'-separated, inside the dump)."""
    if not isinstance(rel, str):
        return "expected a path string"
    if not rel:
        return "empty path"
    if "\\" in rel:
        return "paths use '/', not '\\'"
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        return "path must be relative"
    if "\0" in rel:
        return "path contains a NUL byte"
    parts = PurePosixPath(rel).parts
    if ".." in parts:
        return "path must stay inside the dump ('..' not allowed)"
    return None


# Paths made only of these characters, without '..', pass path_problem; checked in bulk for big dumps.
PLAIN_PATH = re.compile(r"[A-Za-z0-9_.+\-]+(?:/[A-Za-z0-9_.+\-]+)*")


def is_plain_path(rel: object) -> bool:
    """A quick yes for the common path (`regs/wave-7.bin`); False means: ask path_problem."""
    return type(rel) is str and PLAIN_PATH.fullmatch(rel) is not None and ".." not in rel


_PLAIN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-/"


def all_plain_paths(rels) -> bool:
    """is_plain_path for every one, in a few passes over all of them at once (a big dump names 100,000
    files): only plain characters; no empty path or name (no leading, trailing or doubled '/'); no '..'."""
    rels = rels if isinstance(rels, list) else list(rels)
    if not rels:
        return True
    if set(map(type, rels)) != {str}:
        return False
    try:
        text = "\n".join(rels).encode("ascii")
    except UnicodeEncodeError:
        return False
    if text.translate(None, _PLAIN_BYTES) != b"\n" * (len(rels) - 1):  # (a newline inside a path leaves one too many)
        return False
    lines = b"\n" + text + b"\n"
    return not (b"\n\n" in lines or b"\n/" in lines or b"/\n" in lines or b"//" in text or b".." in text)
