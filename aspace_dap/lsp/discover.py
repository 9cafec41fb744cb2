"""Code objects found in the workspace for a source file, when the aspace.codeObjects setting names none.

A candidate is a file named like a code object (`.co`, `.hsaco`, `.cubin`, `.o`) or an executable
ELF file holding device code (`.hip_fatbin`, `.nv_fatbin`). The one used for a source is the first
whose line table names the source (the same file name, as the lens matches files), one with debug
info beyond line tables before one without (-lineinfo), in this order:
newest first (to the second), named after the source, nearest to it, by path. The search walks the
workspace folders without following symlinks and skips version-control, virtual-environment and
package folders; it stops after MAX_GLOB_ENTRIES directory entries or `budget` seconds (the walk,
once, and the reading of candidates for each source), and says so.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from .. import limits
from ..errors import AspaceError

SUFFIXES = (".co", ".hsaco", ".cubin", ".o")
FATBIN_SECTIONS = (b".hip_fatbin", b".nv_fatbin")
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                             ".mypy_cache", ".pytest_cache", ".cache"})
DEFAULT_BUDGET_S = 3.0


@dataclass
class Found:
    """What the search gives one source file: the code object used (None: none names it), its lenses,
    and a note when a bound cut the search short."""

    path: str | None
    lenses: list = field(default_factory=list)
    searched: int = 0  # candidates looked into
    note: str | None = None


def _named_like_code_object(name: str) -> bool:
    return name.endswith(SUFFIXES)


def _executable_with_device_code(path: str) -> bool:
    """An executable ELF file with a HIP or CUDA fat binary section (only its headers are read)."""
    from elftools.common.exceptions import ELFError
    from elftools.construct import ConstructError
    from elftools.elf.elffile import ELFFile
    try:
        if not os.access(path, os.X_OK):
            return False
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return False
            f.seek(0)
            return any(section.name.encode() in FATBIN_SECTIONS for section in ELFFile(f).iter_sections())
    except (OSError, ELFError, ConstructError, ValueError, UnicodeError):
        return False


def candidates(roots: list[str], max_entries: int = limits.MAX_GLOB_ENTRIES,
               deadline: float | None = None) -> tuple[list[str], str | None]:
    """Every candidate file under the roots, and a note when the walk stopped at its bound (entries,
    or the time.monotonic() deadline)."""
    found: list[str] = []
    visited = 0
    for root in roots:
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
            visited += len(dirs) + len(files)
            if visited > max_entries:
                return found, (f"looking for code objects: stopped after {max_entries} directory entries "
                               + limits.limit_hint("MAX_GLOB_ENTRIES"))
            if deadline is not None and time.monotonic() > deadline:
                return found, (f"looking for code objects: stopped after {visited} directory entries, out of "
                               "time; set aspace.codeObjects to name them")
            for name in sorted(files):
                path = os.path.join(folder, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                if _named_like_code_object(name) or _executable_with_device_code(path):
                    found.append(os.path.normpath(path))
    return found, None


def _rank(source: str, paths: list[str]) -> list[str]:
    """Newest first (whole seconds: a checkout writes its files within one), then those named after
    the source (`lds_tiles.*` for lds_tiles.hip), then nearest to the source's folder (fewest folders
    apart), then by path."""
    here = os.path.dirname(os.path.abspath(source)).split(os.sep)
    stem = os.path.splitext(os.path.basename(source))[0] + "."

    def key(path: str):
        try:
            mtime = int(os.stat(path).st_mtime)
        except OSError:
            mtime = 0
        there = os.path.dirname(os.path.abspath(path)).split(os.sep)
        common = 0
        while common < min(len(here), len(there)) and here[common] == there[common]:
            common += 1
        return (-mtime, not os.path.basename(path).startswith(stem), len(here) + len(there) - 2 * common, path)

    return sorted(paths, key=key)


class Discovery:
    """The search, with what it learnt kept until the workspace's files change (forget())."""

    def __init__(self, load_lenses, budget: float = DEFAULT_BUDGET_S):
        self._load_lenses = load_lenses  # program.load_lenses, imported once a code object is needed
        self.budget = budget
        self._candidates: tuple[list[str], str | None] | None = None
        self._lenses: dict[str, list] = {}  # path -> its lenses ([] when it holds none with DWARF)
        self._found: dict[str, Found] = {}  # source path -> what was found for it

    def forget(self) -> None:
        self._candidates = None
        self._lenses.clear()
        self._found.clear()

    def lenses_of(self, path: str) -> list:
        if path not in self._lenses:
            try:
                self._lenses[path] = self._load_lenses()(path)
            except AspaceError:
                self._lenses[path] = []
        return self._lenses[path]

    def find(self, source: str, roots: list[str]) -> Found:
        source = os.path.normpath(source)
        hit = self._found.get(source)
        if hit is not None:
            return hit
        deadline = time.monotonic() + self.budget
        if self._candidates is None:
            self._candidates = candidates(roots, deadline=deadline)
        paths, note = self._candidates
        name = os.path.basename(source)
        found = Found(None, note=note)
        for path in _rank(source, paths):
            if time.monotonic() > deadline:
                found.note = (f"looking for a code object that names {name}: stopped after {self.budget:g} s "
                              f"({found.searched} of {len(paths)} files); set aspace.codeObjects to name one")
                break
            found.searched += 1
            lenses = self.lenses_of(path)
            if not any(_names(lens, source, name) for lens in lenses):
                continue
            if any(_has_variables(lens) for lens in lenses):
                found.path, found.lenses = path, lenses
                break
            if found.path is None:  # line tables only (-lineinfo): used when no build has more
                found.path, found.lenses = path, lenses
        self._found[source] = found
        return found


def _has_variables(lens) -> bool:
    """Whether the code object has debug info beyond line tables (what the hints are made of)."""
    try:
        return bool(lens.index.has_units())
    except AspaceError:
        return False


def _names(lens, source: str, name: str) -> bool:
    try:
        matched = lens.match_file(source)
    except AspaceError:
        return False
    return matched is not None and matched.replace("\\", "/").rsplit("/", 1)[-1] == name
