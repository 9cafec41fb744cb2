"""Globs of the aspace.codeObjects setting, expanded within bounds.

Python's glob follows symlinked folders, so `/usr/lib/**/*.so*` never ends on
a tree with a symlink loop. Here folders are walked without following
symlinks, a glob stops after MAX_GLOB_ENTRIES directory entries or
MAX_GLOB_FILES matches, and the result names each file once by its identity
(device and inode), however many paths lead to it.
"""

from __future__ import annotations

import fnmatch
import os

from .. import limits

_MAGIC = set("*?[")


def has_magic(pattern: str) -> bool:
    return any(c in _MAGIC for c in pattern)


def _matches(pattern: list[str], parts: list[str]) -> bool:
    if not pattern:
        return not parts
    head = pattern[0]
    if head == "**":
        return any(_matches(pattern[1:], parts[k:]) for k in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _matches(pattern[1:], parts[1:])


def expand(pattern: str, *, max_files: int = limits.MAX_GLOB_FILES,
           max_entries: int = limits.MAX_GLOB_ENTRIES) -> tuple[list[str], str | None]:
    """(regular files matching `pattern`, a note when a bound cut the search short)."""
    parts = pattern.split("/")
    first = next((i for i, part in enumerate(parts) if has_magic(part)), None)
    if first is None:
        return ([pattern] if _is_file(pattern) else []), None
    base = "/".join(parts[:first]) or ("/" if pattern.startswith("/") else ".")
    rest = parts[first:]
    depth_limit = None if "**" in rest else len(rest)
    found: list[str] = []
    visited = 0
    for folder, dirs, files in os.walk(base, followlinks=False):
        relative = os.path.relpath(folder, base)
        depth = 0 if relative == "." else relative.count(os.sep) + 1
        if depth_limit is not None and depth + 1 >= depth_limit:
            dirs[:] = []  # deeper folders cannot match
        dirs.sort()
        visited += len(dirs) + len(files)
        if visited > max_entries:
            return found, f"{pattern}: stopped after {max_entries} directory entries " + \
                limits.limit_hint("MAX_GLOB_ENTRIES")
        prefix = [] if relative == "." else relative.split(os.sep)
        for name in sorted(files):
            if _matches(rest, prefix + [name]):
                path = os.path.join(folder, name)
                if _is_file(path):
                    found.append(os.path.normpath(path))
                    if len(found) >= max_files:
                        return found, f"{pattern}: stopped at {max_files} files " + limits.limit_hint("MAX_GLOB_FILES")
    return found, None


def _is_file(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def unique_files(paths: list[str]) -> list[str]:
    """`paths` without a second path to a file already listed (same device and inode)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        key = (info.st_dev, info.st_ino)
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out
