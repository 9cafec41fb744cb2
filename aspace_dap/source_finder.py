"""Where a source file the debug info names is on this machine, looked for as gdb looks for it.

The path comes from a line table, its compile unit's comp_dir already joined (lines.py). The first
regular file found in this order is the source:

1. the launch's `sourceMap`: the entry with the longest key that is a leading part of the path
   (whole components; the key "." stands for every relative path), its folder put in place of that
   part; a relative folder is taken from the workspace folder;
2. the path itself when it is absolute; a relative one (a relative comp_dir, `-ffile-prefix-map`)
   in the workspace folder the client named and in the working directory, as gdb resolves it;
3. the same trailing path components, the longest first, in the folders of the code objects and of
   the dump and in every folder above them (a dump copied with its sources, a build tree);
4. the same in the workspace folder and the working directory.

Which places may be looked at and read is the path policy's answer (paths.py): every file the user
can read for a client that is the user, only what the user opened for one that is not
(`--insecure-tcp`). Every place looked at is kept, so a miss can say where it looked and which
`sourceMap` entry would find the file.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .paths import PathPolicy, PathRefused

NOT_FOUND_FOLDER = "<the folder that holds {name}>"


@dataclass(frozen=True)
class Lookup:
    """Where one debug-info path was looked for, and what was found."""

    recorded: str  # as the debug info names it
    path: str | None  # the file here (absolute), None when none was found
    tried: tuple[str, ...]  # every place looked at, in order
    tail: str | None = None  # the trailing components a copy elsewhere was found by (step 3 or 4)

    @property
    def name(self) -> str:
        return posixpath.basename(self.recorded) or self.recorded

    def map_entry(self) -> tuple[str, str]:
        """The sourceMap entry that finds the file: its folder as recorded, to the folder holding it."""
        folder = posixpath.dirname(posixpath.normpath(self.recorded)) or "."
        return folder, NOT_FOUND_FOLDER.format(name=self.name)

    def missing(self, outside_note: str = "") -> str:
        """What the user reads when the file was not found: where it was looked for, and the fix."""
        key, value = self.map_entry()
        places = "".join(f"\n  {p}" for p in self.tried) or "\n  (nowhere: no place may be read)"
        return (f"source {self.recorded} not found; looked for it at:{places}\n"
                f"To show it, add to the launch configuration: \"sourceMap\": {json.dumps({key: value})} "
                f"(aspace-dap inspect: --source-map {key}=FOLDER){outside_note}")


def _components(path: str) -> list[str]:
    return [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]


def _key_matches(key: str, path: str) -> int | None:
    """How many leading components of `path` the sourceMap key stands for; None if it does not match."""
    if key.rstrip("/") in (".", ""):
        return 0 if not posixpath.isabs(path) else None
    if posixpath.isabs(key) != posixpath.isabs(path):
        return None
    wanted, have = _components(key), _components(path)
    return len(wanted) if have[:len(wanted)] == wanted else None


class SourceFinder:
    """Finds the files the debug info names; one per session (or per language-server code object).

    `anchors` gives the files whose folders, and the folders above them, hold copies (the dump, its
    code objects); it is asked again on each lookup, since code objects are loaded as waves need them.
    """

    def __init__(self, policy: PathPolicy, source_map: dict[str, str] | None = None,
                 anchors: Callable[[], Iterable[str | os.PathLike]] = lambda: (),
                 workspace: str | os.PathLike | None = None, cwd: str | os.PathLike | None = None):
        self.policy = policy
        self.source_map = dict(source_map or {})
        self._anchors = anchors
        self.workspace = Path(os.path.abspath(workspace)) if workspace else None
        self.cwd = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
        self._cache: dict[str, tuple[tuple[Path, ...], Lookup]] = {}
        self._anchor_memo: tuple[tuple[str, ...], tuple[Path, ...]] = ((), ())
        self._found: set[str] = set()
        self._lock = threading.Lock()

    # ---- lookups ------------------------------------------------------------------------------

    def find(self, recorded: str) -> Lookup:
        with self._lock:
            cached = self._cache.get(recorded)
        if cached is not None and cached[1].path is not None:
            return cached[1]
        folders = self._anchor_folders()
        if cached is not None and cached[0] == folders:  # a miss stands until another code object is loaded
            return cached[1]
        found = self._look(recorded, folders)
        with self._lock:
            self._cache[recorded] = (folders, found)
            if found.path is not None:
                self._found.add(found.path)
        return found

    def found(self, path: str | None) -> bool:
        """Whether `path` is a file a lookup found (absolute, readable under the policy)."""
        with self._lock:
            return path is not None and path in self._found

    def read(self, recorded: str, max_bytes: int, limit_name: str) -> str:
        found = self.find(recorded)
        if found.path is None:
            raise PathRefused(found.missing())
        return self.policy.read_text(found.path, "source", max_bytes, limit_name, named=True)

    # ---- the places, in order -----------------------------------------------------------------

    def _look(self, recorded: str, folders: tuple[Path, ...]) -> Lookup:
        tried: list[str] = []
        seen: set[str] = set()
        if "\0" in recorded or not recorded:
            return Lookup(recorded, None, ())

        def attempt(candidate: str | Path) -> str | None:
            text = os.path.normpath(str(candidate))
            if text in seen or not self.policy.may_look(text, named=True):
                return None
            seen.add(text)
            tried.append(text)
            return text if self._readable(text) else None

        for candidate in self._mapped(recorded):
            if (hit := attempt(candidate)) is not None:
                return Lookup(recorded, hit, tuple(tried))
        places = [p for p in (self.workspace, self.cwd) if p is not None]
        if posixpath.isabs(recorded):
            hit = attempt(recorded)
        else:
            hit = next((h for p in places if (h := attempt(p / recorded)) is not None), None)
        if hit is not None:
            return Lookup(recorded, hit, tuple(tried))
        parts = _components(recorded)
        if ".." in parts:  # only what follows the last "..": the rest names the build machine's folders
            parts = parts[len(parts) - parts[::-1].index(".."):]
        for folder in [*folders, *places]:  # the nearest folder first, then the longest matching tail
            for keep in range(len(parts), 0, -1):
                tail = "/".join(parts[-keep:])
                if (hit := attempt(folder / tail)) is not None:
                    return Lookup(recorded, hit, tuple(tried), tail)
        return Lookup(recorded, None, tuple(tried))

    def _mapped(self, recorded: str) -> list[Path]:
        out = []
        matches = [(n, key) for key in self.source_map if (n := _key_matches(key, recorded)) is not None]
        for n, key in sorted(matches, key=lambda m: -m[0]):
            target = Path(self.source_map[key])
            if not target.is_absolute():
                target = (self.workspace or self.cwd) / target
            rest = _components(recorded)[n:]
            out.append(target.joinpath(*rest) if rest else target)
        return out

    def _anchor_folders(self) -> tuple[Path, ...]:
        """The anchors' folders (a folder anchor is its own) and every folder above them, nearest first,
        `/` aside."""
        anchors = tuple(os.fspath(a) for a in self._anchors() if a is not None)
        if anchors == self._anchor_memo[0]:
            return self._anchor_memo[1]
        out: list[Path] = []
        for anchor in anchors:
            try:
                here = Path(os.path.realpath(anchor))
                start = here if here.is_dir() else here.parent  # a dump folder, or a file's folder
            except (OSError, ValueError):
                continue
            for folder in [start, *start.parents]:
                if folder != Path(folder.anchor) and folder not in out:
                    out.append(folder)
        self._anchor_memo = (anchors, tuple(out))
        return self._anchor_memo[1]

    def _readable(self, candidate: str) -> bool:
        """A regular file the policy lets this session read, once symlinks are resolved (a link in a dump
        to /etc/passwd is not a source for a client that may read only the dump)."""
        try:
            return os.path.isfile(candidate) and self.policy.allows(candidate, named=True)
        except (OSError, ValueError):
            return False
