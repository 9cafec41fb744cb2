"""Sources: where the files the debug info names are, and which of them may be read.

Owns the launch's sourceMap, the source files found so far, the notes said to the user about a file
found elsewhere, and the path policy: what `source` may read from disk.

Only what the user opened is read: the dump (its folder; the folder holding a core or zip file), the
code object named at launch or on the command line (its folder), and the working directory (the
editor's workspace, where the server was started). The debug info only says which file to look for:
a path it names, a folder it names or a symlink inside the dump never opens anything by itself, so a
code object written into a dump (writeMemory, then saveDump) cannot become a key to the disk.
"""

from __future__ import annotations

from pathlib import Path

from .. import limits
from ..paths import PathPolicy, PathRefused
from .programs import Part, Programs


class Sources(Part):
    def __init__(self, programs: Programs, source_map: dict[str, str] | None, code_object: str | None):
        super().__init__(programs)
        state = self.state
        self.source_map = dict(source_map or {})
        self.notes: list[str] = []  # things the user should know (a source file found elsewhere), said once
        # What was opened: every file below the dump's folder and the launch's code object's folder may be
        # read; below the working directory, only files the debug info names (see find_source).
        self.paths = PathPolicy()
        anchor = state.root if state.root is not None else (state.source.parent if state.source else None)
        for folder in (anchor, Path(code_object).parent if code_object else None):
            if folder is not None:
                self.paths.allow_read_root(folder)
        self.paths.allow_named_root(Path.cwd())
        self._found_sources: dict[str, str] = {}

    def map_source(self, path: str | None) -> str | None:
        """The path a client can open: the launch's sourceMap first; else the DWARF path when it exists;
        else the same file found by its trailing path components (see find_source)."""
        if path is None:
            return None
        for src, dst in self.source_map.items():
            if path.startswith(src):
                return dst + path[len(src):]
        found = self._found_sources.get(path)
        if found is None:
            found = self.find_source(path)
            self._found_sources[path] = found
        return found

    def _may_look_in(self, folder: Path) -> bool:
        """A folder that lies inside what the user opened (the dump, the code object's folder, the
        working directory), once symlinks are resolved."""
        return self.paths.allows(folder, named=True)

    def source_roots(self) -> list[Path]:
        """Where the sources of this dump may be: the folders of the code objects and of the dump and two
        levels above them (an example's folder, the checkout) as far as they lie inside what the user
        opened, then the working directory (the editor's workspace)."""
        roots: list[Path] = []
        anchors = [ref.path for ref in self.state.code_objects] + [self.state.source]
        anchors += [p.path for p in self.programs.loaded()]
        for anchor in anchors:
            if anchor is None:
                continue
            here = Path(anchor).resolve()
            for root in [here.parent, *list(here.parents)[1:3]]:
                if root not in roots and root != Path(root.anchor) and self._may_look_in(root):
                    roots.append(root)
        cwd = Path.cwd()
        if cwd not in roots:
            roots.append(cwd)
        return roots

    def _readable(self, candidate: Path) -> bool:
        """A regular file the debug info names, inside what the user opened once symlinks are resolved
        (a link in the dump to /etc/passwd is not a source)."""
        try:
            return candidate.is_file() and self.paths.allows(candidate, named=True)
        except (OSError, ValueError):
            return False

    def find_source(self, path: str) -> str:
        """A DWARF source path as a file to open here, only ever one with the same trailing path
        components as the recorded one, and only inside what the user opened.

        A recorded absolute path is used when it exists near the code objects or the dump; a build
        elsewhere (another checkout, a temporary folder) records that machine's paths, so the copy
        beside the code object is preferred, and the substitution is noted once for the user with the
        sourceMap that would pin it. `-ffile-prefix-map` builds record relative paths."""
        recorded = Path(path)
        roots = self.source_roots()
        absolute = recorded.is_absolute() and "\0" not in path
        if absolute and any(recorded.is_relative_to(root) for root in roots[:-1]) and self._readable(recorded):
            self.paths.allow_read_file(recorded)  # the debug info names it, where the user opened
            return path
        parts = [p for p in recorded.parts if p not in (recorded.anchor, "", ".")]
        if ".." in parts:
            parts = parts[len(parts) - parts[::-1].index(".."):]
        for root in roots:  # the nearest folder first, then the longest matching tail
            for keep in range(len(parts), 0, -1):
                tail = Path(*parts[-keep:])
                candidate = root / tail
                if candidate != recorded and self._readable(candidate):
                    self.paths.allow_read_file(candidate)  # the debug info names it
                    found = str(candidate)
                    if recorded.is_absolute():
                        src = str(Path(*recorded.parts[:-keep]))
                        dst = str(root)
                        self.notes.append(
                            f"source {path} is not beside this dump's code objects; showing {found} (same "
                            f"trailing path {tail}). To use another copy, set \"sourceMap\": {{\"{src}\": ...}} "
                            f"in the launch configuration (this one is {{\"{src}\": \"{dst}\"}}).")
                    return found
        if absolute and self._readable(recorded):  # in the working directory, with no copy nearer the dump
            self.paths.allow_read_file(recorded)
        return path

    def read_source_file(self, dwarf_name: str, max_bytes: int, limit_name: str) -> str:
        """A source file the debug info names, read from where the sourceMap puts it, if that lies inside what
        the user opened: below the dump's folder, the launch's code object's folder or the working directory.
        Neither a folder the debug info names nor a sourceMap entry opens anything else."""
        mapped = self.map_source(dwarf_name)
        if mapped is None:
            raise PathRefused("no source path")
        return self.paths.read_text(mapped, "source", max_bytes, limit_name, named=True)

    def read_source(self, dwarf_path: str) -> str | None:
        """A source file's text as the debug info names it: embedded in the line table, else read
        from where map_source finds it, under the same policy as read_source_file."""
        for program in self.programs.programs():
            if program.index is not None:
                text = program.index.source_text(dwarf_path)
                if text is not None:
                    return text
        try:
            return self.read_source_file(dwarf_path, limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except PathRefused:
            return None
