"""Sources: where the files the debug info names are, and which of them may be read.

Owns the launch's sourceMap, the source finder (source_finder.py: gdb's order, the sourceMap to any
folder, beside the dump and up its parents, the workspace folder), the notes said to the user about a
file found elsewhere or not found, and the path policy: what `source` may read from disk.

A client that is the user (stdio, the owner-only socket, TCP with the secret) and `inspect` read every
file the user can, as gdb, rocgdb and cuda-gdb open the paths the debug info names. A client that is
not (`--insecure-tcp`) reads only what the user opened: the dump (its folder; the folder holding a core
or zip file), the code object named at launch or on the command line (its folder), and the working
directory; there a path the debug info names, a folder it names or a symlink inside the dump never
opens anything by itself, so a code object written into a dump (writeMemory, then saveDump) cannot
become a key to the disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from .. import limits
from ..paths import PathPolicy, PathRefused
from ..source_finder import Lookup, SourceFinder
from ..tempfiles import made_here
from .programs import Part, Programs

NOT_THE_USER = ("\n(This server serves clients without a secret (--insecure-tcp): it reads sources only below "
                "the dump's folder, the launch's code object's folder and the folder it was started in.)")


class Sources(Part):
    def __init__(self, programs: Programs, source_map: dict[str, str] | None, code_object: str | None,
                 workspace: str | None = None, client_is_user: bool = True):
        super().__init__(programs)
        state = self.state
        self.source_map = dict(source_map or {})
        self.notes: list[str] = []  # things the user should know (a source found elsewhere or not at all), said once
        self.note_sink: Callable[[str], None] | None = None  # set by a front end that says notes as they come
        self._told: set[str] = set()
        self.paths = PathPolicy(client_is_user=client_is_user)
        # What was opened, for a client that is not the user: every file below the dump's folder and the
        # launch's code object's folder may be read; below the working directory, only files the debug
        # info names.
        anchor = state.root if state.root is not None else (state.source.parent if state.source else None)
        for folder in (anchor, Path(code_object).parent if code_object else None):
            if folder is not None:
                self.paths.allow_read_root(folder)
        self.paths.allow_named_root(Path.cwd())
        self._code_object = code_object
        self.finder = SourceFinder(self.paths, self.source_map, self._anchors, workspace, Path.cwd())

    def _anchors(self) -> list[str]:
        """The files and folders whose folders (and the folders above them) may hold the sources: the code
        objects on disk (not the copies this server made of a core's), the launch's code object, the dump."""
        out = [str(ref.path) for ref in self.state.code_objects if ref.path is not None]
        out += [p.path for p in self.programs.loaded()]
        if self._code_object:
            out.append(self._code_object)
        if self.state.source is not None:
            out.append(str(self.state.source))
        return [p for p in out if not made_here(p)]

    # ---- where a file is ------------------------------------------------------------------------

    def lookup(self, path: str) -> Lookup:
        return self.finder.find(path)

    def map_source(self, path: str | None, tell: bool = False) -> str | None:
        """The file to show for a debug-info path: where the finder found it, else the path as recorded
        (see `openable`). With `tell`, a miss or a copy found elsewhere is noted once for the user."""
        if path is None:
            return None
        found = self.finder.find(path)
        if tell:
            self._tell(found)
        return found.path if found.path is not None else path

    def openable(self, path: str | None) -> bool:
        """Whether `path` (from map_source) is a file found here, which a client may be sent to open."""
        return self.finder.found(path)

    def missing_text(self, path: str) -> str:
        """Where the file the debug info names as `path` was looked for, and the sourceMap that would find it."""
        return self.finder.find(path).missing("" if self.paths.client_is_user else NOT_THE_USER)

    def _tell(self, found: Lookup) -> None:
        if found.recorded in self._told:
            return
        if found.path is None:
            note = self.missing_text(found.recorded)
        elif found.tail is not None and os.path.isabs(found.recorded):
            # another machine's (or checkout's) path: the copy found by its trailing components is shown
            src = str(Path(*Path(found.recorded).parts[:-len(Path(found.tail).parts)]))
            dst = found.path[:-len(found.tail)].rstrip("/")
            note = (f"source {found.recorded} is not where the debug info says; showing {found.path} (same trailing "
                    f"path {found.tail}). To use another copy, set \"sourceMap\": {{{json.dumps(src)}: ...}} in the "
                    f"launch configuration (this one is {json.dumps({src: dst})}).")
        else:
            self._told.add(found.recorded)
            return
        self._told.add(found.recorded)
        if self.note_sink is not None:
            self.note_sink(note)
        else:
            self.notes.append(note)

    # ---- reading ---------------------------------------------------------------------------------

    def read_source_file(self, dwarf_name: str, max_bytes: int, limit_name: str) -> str:
        """A source file the debug info names, read from where the finder found it; the refusal says where it
        looked. For a client that is not the user, only what the user opened is read (see the module doc)."""
        return self.finder.read(dwarf_name, max_bytes, limit_name)

    def read_source(self, dwarf_path: str) -> str | None:
        """A source file's text as the debug info names it: embedded in the line table, else read from where
        the finder finds it (a miss is noted for the user: an analysis such as the LDS proof needs it)."""
        for program in self.programs.programs():
            if program.index is not None:
                text = program.index.source_text(dwarf_path)
                if text is not None:
                    return text
        try:
            return self.read_source_file(dwarf_path, limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except PathRefused:
            self._tell(self.finder.find(dwarf_path))
            return None
