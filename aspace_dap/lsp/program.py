"""A code object seen from its source files: which variables a file declares and where they live.

Everything comes from the DWARF index by PC: the line table says which
addresses belong to a file's lines, `frames_at`/`variables` say which
variables are in scope there, and the shared location printer says where
each one lives for each PC range. Results are cached per variable DIE, so a
request for a few visible lines only probes those lines' addresses.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field

import numpy as np

from ..adapters import adapter_for
from ..codeobj import load_code_objects
from ..dwarf.describe import Described, describe_constant, describe_evaluated, summarize_location
from ..dwarf.frame_context import frame_context
from ..dwarf.locations import Location, MemoryLocation
from ..dwarf.index import ConstValue, DwarfIndex, Expr, FrameInfo, LocList, VariableInfo
from ..dwarf.ops import decode, disassemble
from ..dwarf.target import FrameContext
from ..dwarf.types import byte_size
from .. import limits
from ..errors import AspaceError
from ..paths import PathPolicy, PathRefused
from ..source_finder import SourceFinder


@dataclass(frozen=True)
class PlaceRange:
    """The variable's location over [low, high)."""

    low: int
    high: int
    where: Described
    expression: str  # decoded DWARF, for hovers
    line: int | None  # source line of `low` (line 0: the nearest line before it) when in the variable's file


@dataclass
class VariableLens:
    name: str
    kind: str
    function: str
    decl_file: str
    decl_line: int
    die_offset: int
    ranges: list[PlaceRange] = field(default_factory=list)
    scope: list[tuple[int, int]] = field(default_factory=list)  # PC ranges of its lexical scope
    scope_lines: tuple[int, int] | None = None  # first and last source line of its scope in this file

    @property
    def first(self) -> Described:
        return self.ranges[0].where if self.ranges else Described("optimized out", frozenset({"undefined"}))


@dataclass(frozen=True)
class KernelLens:
    name: str
    line: int
    info: object  # codeobj KernelInfo


class CodeObjectLens:
    """One device code object with DWARF, and per-file caches."""

    def __init__(self, code_object, label: str, path: str | None = None):
        self.code_object = code_object
        self.label = label
        self.path = path
        self._layout = None
        self._layout_done = False
        self.adapter = adapter_for(code_object.vendor)
        self.index = DwarfIndex(code_object.elf, load_bias=0, e_machine=code_object.e_machine,
                                function_at=lambda pc: self.adapter.function_symbol(code_object, pc))
        self.adapter.use_code_object(code_object)
        self.wave_lanes = _wave_lanes(code_object)
        self._rows: dict[str, dict[int, list[int]]] = {}
        self._probed: dict[str, set[int]] = {}
        self._vars: dict[str, dict[int, VariableLens]] = {}
        self._files: list[str] | None = None
        self._line_at: dict[int, object] = {}
        self._stated_at: dict[int, object] = {}
        self._swept: dict[str, set[tuple[int, ...]]] = {}  # scope sets whose variables were read, per file
        self._kernel_decls: list | None = None
        self._matches: dict[str, str | None] = {}
        self._finder: SourceFinder | None = None

    # --- files -------------------------------------------------------------------------------

    def source_files(self) -> list[str]:
        if self._files is None:
            self._files = self.index.source_files()
        return self._files

    def match_file(self, local_path: str) -> str | None:
        """The DWARF file name that stands for a file on disk: same path, else the longest common tail."""
        if local_path not in self._matches:  # every request asks every code object of the workspace
            self._matches[local_path] = self._match_file(local_path)
        return self._matches[local_path]

    def _match_file(self, local_path: str) -> str | None:
        local = posixpath.normpath(local_path.replace(os.sep, "/"))
        best, best_len = None, 0
        for name in self.source_files():
            if name == local:
                return name
            common = _common_tail(name.split("/"), local.split("/"))
            if common > best_len:
                best, best_len = name, common
        return best

    def line_pcs(self, file: str) -> dict[int, list[int]]:
        """Row addresses of every line of `file` that has code."""
        rows = self._rows.get(file)
        if rows is None:
            rows = self.index.line_rows(file)
            self._rows[file] = rows
        return rows

    # --- variables ------------------------------------------------------------------------------

    def variables(self, file: str, lines: range | None = None) -> list[VariableLens]:
        """Variables declared in `file` that are in scope at the code of `lines` (all lines: None)."""
        rows = self.line_pcs(file)
        probed = self._probed.setdefault(file, set())
        found = self._vars.setdefault(file, {})
        wanted = rows if lines is None else {ln: pcs for ln, pcs in rows.items() if ln in lines}
        for pcs in wanted.values():
            for pc in pcs:
                if pc in probed:
                    continue
                probed.add(pc)
                self._probe(file, pc, found)
        out = list(found.values())
        out.sort(key=lambda v: (v.decl_line, v.name, v.die_offset))
        return out

    def _probe(self, file: str, pc: int, found: dict[int, VariableLens]) -> None:
        # the rows of a line (and of neighbouring lines) mostly share their scopes: once the variables
        # of one PC of a scope set are read, another PC of the same set has none to add
        try:
            scopes = self.index.scopes_at(pc)
        except AspaceError:
            scopes = None
        swept = self._swept.setdefault(file, set())
        if scopes is not None and scopes in swept:
            return
        try:
            frames = self.index.frames_at(pc)
        except AspaceError:
            return
        if scopes is not None:
            swept.add(scopes)
        if not frames:
            return
        concrete = frames[-1]
        for frame in frames:
            try:
                variables = self.index.variables(frame, pc)
            except AspaceError:
                continue
            for var in variables:
                if var.die_offset in found or not var.name or var.artificial or var.decl_line is None:
                    continue
                if var.decl_file != file:
                    continue
                found[var.die_offset] = self._lens(file, frame, concrete, var, self._placement(var))

    def _placement(self, var: VariableInfo):
        """The adapter's placement of a variable whose debug info holds a placeholder address."""
        if not self._layout_done:
            self._layout_done = True
            try:
                self._layout = self.adapter.static_layout(self.code_object, self.index, self.read_source)
            except AspaceError:
                self._layout = None
        return self.adapter.static_placement(self._layout, var)

    def read_source(self, dwarf_path: str) -> str | None:
        """Source text as the debug info names it: embedded in the line table, else the file the debug
        adapter's finder finds (source_finder.py: the path, beside the code object and up its folders,
        the working directory); the language server runs as the user and reads what the user can."""
        text = self.index.source_text(dwarf_path)
        if text is not None:
            return text
        if self._finder is None:
            self._finder = SourceFinder(PathPolicy(client_is_user=True), anchors=lambda: [self.path] if self.path else [])
        try:
            return self._finder.read(dwarf_path, limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except PathRefused:
            return None

    def _placed(self, placement) -> Described:
        space = self.adapter.space_by_name(placement.space)
        if placement.offset is None:
            label = self.adapter.space_label(space)
            return Described(f"{space.name}#? ({label + ', ' if label else ''}offset unresolved)",
                             frozenset({space.scope}))
        lanes = np.zeros(1, np.int64)
        loc = Location((MemoryLocation(space, np.array([placement.offset], np.uint64), np.zeros(1, np.int64), lanes),))
        return Described(describe_evaluated(loc, self.adapter, 0), frozenset({space.scope}))

    def _lens(self, file: str, frame: FrameInfo, concrete: FrameInfo, var: VariableInfo,
              placement=None) -> VariableLens:
        lens = VariableLens(var.name, var.kind, frame.function, file, var.decl_line, var.die_offset)
        # no dump, no PC of a stop: the function's entry stands for it
        context = frame_context(self.index, self.code_object, self.adapter, frame, concrete.low_pc or 0,
                                function=concrete)
        loc = var.location
        scope = var.scope_ranges or frame.ranges
        lens.scope = list(scope)
        if isinstance(loc, LocList):
            pieces = [(lo, hi, expr) for lo, hi, expr in loc.entries]
        elif isinstance(loc, Expr):
            pieces = [(lo, hi, loc.expr) for lo, hi in scope]
        elif isinstance(loc, ConstValue):
            pieces = [(lo, hi, loc) for lo, hi in scope]
        else:
            pieces = [(lo, hi, None) for lo, hi in scope]
        for lo, hi, expr in sorted(pieces, key=lambda p: p[0]):
            where, listing = self._describe(expr, var, context)
            if placement is not None and expr is not None:
                # a placeholder address: the adapter proves the real place from the code, or says why not
                where = self._placed(placement)
                listing = f"{listing} ({placement.why})"
            lens.ranges.append(PlaceRange(lo, hi, where, listing, self.change_line(file, lo)))
        lines = [ln for ln in (self.line_in(file, lo) for lo, _ in scope) if ln]
        lines += [ln for ln in (self.line_in(file, max(lo, hi - 1)) for lo, hi in scope) if ln]
        lens.scope_lines = (min(lines), max(lines)) if lines else None
        return lens

    def _describe(self, expr, var: VariableInfo, context: FrameContext) -> tuple[Described, str]:
        if expr is None:
            return Described("optimized out", frozenset({"undefined"})), "(no location)"
        if isinstance(expr, ConstValue):
            value = expr.value if isinstance(expr.value, int) else bytes(expr.value)
            text = describe_constant(value, byte_size(var.type) or 8)
            return Described(text, frozenset({"implicit"})), "DW_AT_const_value"
        where = summarize_location(expr, var.dialect, self.adapter, frame=context, wave_lanes=self.wave_lanes,
                                   variable=var)
        try:
            listing = disassemble(decode(expr, var.dialect), var.dialect)
        except AspaceError as exc:
            listing = f"<{exc}>"
        return where, listing

    def line_in(self, file: str, pc: int) -> int | None:
        info = self._line_at.get(pc, False)
        if info is False:  # variables of one function share their scopes' bounds: look each PC up once
            try:
                info = self.index.line_for_pc(pc)
            except AspaceError:
                info = None
            self._line_at[pc] = info
        if info is None or info.file != file or not info.line:
            return None
        return info.line

    def change_line(self, file: str, pc: int) -> int | None:
        """The line a change of place at `pc` shows on: the line of its code, or for code the compiler
        attributes to line 0 the nearest line before it; None when that line is not in `file`."""
        info = self._stated_at.get(pc, False)
        if info is False:
            try:
                info = self.index.stated_line_for_pc(pc)
            except AspaceError:
                info = None
            self._stated_at[pc] = info
        if info is None or info.file != file or not info.line:
            return None
        return info.line

    # --- kernels ----------------------------------------------------------------------------------

    def kernels(self, file: str) -> list[KernelLens]:
        return [KernelLens(name, line, kernel) for kernel, name, decl_file, line in self._kernel_declarations()
                if decl_file == file and line]

    def _kernel_declarations(self) -> list[tuple[object, str, str | None, int | None]]:
        """(kernel, function name, declaration file and line) of every kernel with a function at its
        entry, looked up once: code lenses and diagnostics of every file ask."""
        if self._kernel_decls is None:
            self._kernel_decls = []
            for kernel in self.code_object.kernels:
                symbol = self.code_object.symbols.get(kernel.name)
                if symbol is None:
                    continue
                try:
                    frames = self.index.frames_at(symbol.value)
                except AspaceError:
                    continue
                if frames:
                    top = frames[-1]
                    self._kernel_decls.append((kernel, top.function, top.decl_file, top.decl_line))
        return self._kernel_decls


def load_lenses(path: str) -> list[CodeObjectLens]:
    """Every device code object with DWARF (or line tables only) in a file (a bundle may hold several)."""
    objs = load_code_objects(path)
    base = os.path.basename(path)
    with_dwarf = [co for co in objs if co.has_dwarf() or co.has_line_tables()]
    return [CodeObjectLens(co, base if len(with_dwarf) == 1 else f"{base}:{co.processor}", path)
            for co in with_dwarf]


def _wave_lanes(code_object) -> int:
    try:
        size = code_object.wavefront_size
    except (AspaceError, AttributeError):
        return 64
    return size if size in (32, 64) else 64


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
