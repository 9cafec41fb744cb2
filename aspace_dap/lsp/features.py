"""Inlay hints, hovers, code lenses and diagnostics for one source file, from its code-object lenses.

No protocol state here: the server passes the lenses that cover a document
(each with the DWARF file name that matched it), the document's lines, the
settings and the position codec pygls negotiated; these functions return
lsprotocol values. Columns are counted in code points here and sent in the
client's position encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from ..names import display_name

if TYPE_CHECKING:  # the lenses (and numpy and the DWARF modules under them) load with the first code object
    from .program import CodeObjectLens, VariableLens

ARROW = "\u27f6"
PRIVATE_SCOPES = frozenset({"lane", "wave"})
UTF16 = PositionCodec()  # the protocol's default position encoding


@dataclass(frozen=True)
class FileView:
    lens: CodeObjectLens
    file: str  # the DWARF name of the document's file in this code object


def _prefix(view: FileView, views: Sequence[FileView]) -> str:
    # with several code objects for one file, say which one a hint comes from
    return f"[{view.lens.label}] " if len(views) > 1 else ""


def _text(lines: Sequence[str], line: int) -> str:
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def _position(lines: Sequence[str], line: int, column: int, codec: PositionCodec) -> types.Position:
    """The LSP position of a 1-based line and a code-point column."""
    head = _text(lines, line)[:column]
    return types.Position(line=line - 1, character=len(head) if head.isascii() else codec.client_num_units(head))


def _end_of(lines: Sequence[str], line: int, codec: PositionCodec) -> types.Position:
    return _position(lines, line, len(_text(lines, line)), codec)


def inlay_hints(views: Sequence[FileView], lines: Sequence[str], first: int, last: int,
                codec: PositionCodec = UTF16) -> list[types.InlayHint]:
    """Hints for source lines first..last (1-based, inclusive)."""
    wanted = range(first, last + 1)
    hints: list[types.InlayHint] = []
    for view in views:
        variables = view.lens.variables(view.file, wanted)
        per_line: dict[int, list[tuple[str, str]]] = {}
        for var in variables:
            # every place the variable takes over these lines, in PC order: where it starts on its
            # declaration line, then each move on the line of the code where it happens
            if var.decl_line in wanted:
                per_line.setdefault(var.decl_line, []).append((var.name, var.first.text))
            for line, text in location_changes(view.lens, view.file, var):
                if line in wanted:
                    per_line.setdefault(line, []).append((var.name, text))
        prefix = _prefix(view, views)
        declared: dict[int, set[str]] = {}
        for var in variables:
            declared.setdefault(var.decl_line, set()).add(var.name)
        for line in sorted(per_line):
            entries = per_line[line]
            decl_only = declared.get(line, set())
            for name, text in entries:
                # a lone declaration needs no name; changes and shared lines do
                named = len(entries) > 1 or name not in decl_only
                label = f"{ARROW} {prefix}{name + ': ' if named else ''}{text}"
                hints.append(types.InlayHint(position=_end_of(lines, line, codec), label=label, padding_left=True))
    return hints


def location_changes(lens: CodeObjectLens, file: str, var: VariableLens) -> list[tuple[int, str]]:
    """(line, new location) where the variable moves, in PC order; a gap reads as optimized out. A move
    in code at line 0 shows on the nearest line before it; one in another file's code is not shown."""
    out: list[tuple[int, str]] = []
    if not var.ranges:
        return out
    shown = var.ranges[0].where.text
    prev_high = var.ranges[0].high
    for r in var.ranges[1:]:
        if r.low > prev_high and shown != "optimized out":
            gap_line = lens.change_line(file, prev_high)
            if gap_line:
                out.append((gap_line, "optimized out"))
                shown = "optimized out"
        if r.where.text != shown and r.line:
            out.append((r.line, r.where.text))
            shown = r.where.text
        prev_high = max(prev_high, r.high)
    return out


def word_at(lines: Sequence[str], line: int, column: int) -> str | None:
    """The identifier around a 0-based line and code-point column."""
    if line >= len(lines):
        return None
    text = lines[line]
    i = min(column, len(text))
    start, end = i, i
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    word = text[start:end]
    return word if word and not word[0].isdigit() else None


def hover(views: Sequence[FileView], lines: Sequence[str], line: int, column: int) -> types.Hover | None:
    """The hover at a 0-based line and code-point column."""
    name = word_at(lines, line, column)
    if name is None:
        return None
    line += 1
    sections = []
    for view in views:
        pcs = view.lens.line_pcs(view.file).get(line, [])
        # a variable whose scope holds the line's code is in scope at that code: reading the line's
        # variables is enough then; the whole file only for a line without code or without one
        meant = _covering(pcs, line, [v for v in view.lens.variables(view.file, range(line, line + 1))
                                      if v.name == name]) if pcs else []
        if not meant:
            meant = meant_at(pcs, line, [v for v in view.lens.variables(view.file) if v.name == name])
        for var in meant:
            sections.append(_hover_text(view, var, len(views) > 1))
    if not sections:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value="\n\n---\n\n".join(sections)))


def meant_at(pcs: Sequence[int], line: int, candidates: Sequence[VariableLens]) -> list[VariableLens]:
    """The variables a name on a line with code at `pcs` refers to: those whose lexical scope holds
    that code, less any whose scope encloses another's (an inner declaration shadows it). Inlined
    copies of one variable have disjoint scopes and all stay."""
    covering = _covering(pcs, line, candidates)
    if covering:
        return covering
    # no code on the line (a signature, a bare declaration): the nearest declaration above in a scope
    # whose lines hold the line
    around = [v for v in candidates if v.scope_lines and v.scope_lines[0] <= line <= v.scope_lines[1]]
    around = around or list(candidates)
    if not around:
        return []
    above = [v.decl_line for v in around if v.decl_line <= line]
    decl = max(above) if above else min(v.decl_line for v in around)
    return [v for v in around if v.decl_line == decl]


def _covering(pcs: Sequence[int], line: int, candidates: Sequence[VariableLens]) -> list[VariableLens]:
    """meant_at's answer when some candidate's scope holds the line's code, else []."""
    covering = [v for v in candidates if any(lo <= pc < hi for pc in pcs for lo, hi in v.scope)]
    if not covering:
        return []
    # code before an inner declaration in its block still means the outer variable
    covering = [v for v in covering if v.decl_line <= line] or covering
    return [v for v in covering if not any(_encloses(v.scope, w.scope) for w in covering if w is not v)]


def _encloses(outer: Sequence[tuple[int, int]], inner: Sequence[tuple[int, int]]) -> bool:
    """Whether `outer` strictly contains every PC range of `inner`."""
    if not inner or set(outer) == set(inner):
        return False
    return all(any(lo <= i_lo and i_hi <= hi for lo, hi in outer) for i_lo, i_hi in inner)


def _hover_text(view: FileView, var: VariableLens, name_object: bool) -> str:
    where = f" ({view.lens.label})" if name_object else ""
    head = f"**{var.name}** \u2014 {var.kind} in `{var.function}`, declared at line {var.decl_line}{where}"
    rows = ["| PCs | line | location | DWARF |", "|---|---|---|---|"]
    for r in var.ranges:
        line = str(r.line) if r.line else ""
        rows.append(f"| `{r.low:#x}`\u2013`{r.high:#x}` | {line} | {r.where.text} | `{r.expression}` |")
    if not var.ranges:
        rows.append("| | | optimized out | |")
    return head + "\n\n" + "\n".join(rows)


def code_lenses(views: Sequence[FileView]) -> list[types.CodeLens]:
    out = []
    for view in views:
        prefix = _prefix(view, views)
        kernels = view.lens.kernels(view.file)
        for k in kernels:
            start = types.Position(line=k.line - 1, character=0)
            # a template's instantiations share its line: each lens names its own (short, as the Call Stack)
            named = f"{display_name(k.name)} \u00b7 " if sum(o.line == k.line for o in kernels) > 1 else ""
            out.append(types.CodeLens(range=types.Range(start=start, end=start),
                                      command=types.Command(title=prefix + named + kernel_summary(k.info),
                                                            command="")))
    return out


def kernel_summary(info) -> str:
    agpr = "" if info.agpr_count is None else f" \u00b7 {info.agpr_count} AGPR"
    return (f"wave{info.wavefront_size} \u00b7 {info.vgpr_count} VGPR \u00b7 {info.sgpr_count} SGPR{agpr}"
            f" \u00b7 LDS {info.group_segment_fixed_size} B \u00b7 scratch {info.private_segment_fixed_size} B"
            f" \u00b7 spills {info.sgpr_spill_count} SGPR / {info.vgpr_spill_count} VGPR")


def diagnostics(views: Sequence[FileView], lines: Sequence[str], lds_budget: int | None,
                scratch_budget: int | None, codec: PositionCodec = UTF16) -> list[types.Diagnostic]:
    out = []
    for view in views:
        prefix = _prefix(view, views)
        for var in view.lens.variables(view.file):
            spilled = [r for r in var.ranges if r.where.storage & PRIVATE_SCOPES]
            in_regs = [r for r in var.ranges if "register" in r.where.storage and not r.where.storage & PRIVATE_SCOPES]
            if spilled and in_regs:
                s, g = spilled[0], in_regs[0]
                out.append(_info(lines, codec, var.decl_line, var.name,
                                 f"{prefix}{var.name} is in memory at {s.low:#x}\u2013{s.high:#x} ({s.where.text}) "
                                 f"but in registers elsewhere ({g.where.text})"))
        for k in view.lens.kernels(view.file):
            lds, scratch = k.info.group_segment_fixed_size, k.info.private_segment_fixed_size
            if lds_budget is not None and lds > lds_budget:
                out.append(_info(lines, codec, k.line, k.name,
                                 f"{prefix}{k.name} uses {lds} bytes of LDS, over the budget of {lds_budget} "
                                 f"(aspace.ldsBudget)"))
            if scratch_budget is not None and scratch > scratch_budget:
                out.append(_info(lines, codec, k.line, k.name,
                                 f"{prefix}{k.name} uses {scratch} bytes of scratch per lane, over the budget of "
                                 f"{scratch_budget} (aspace.scratchBudget)"))
    return out


def _info(lines: Sequence[str], codec: PositionCodec, line: int, word: str, message: str) -> types.Diagnostic:
    text = _text(lines, line)
    col = _find_word(text, word)
    start, end = (col, col + len(word)) if col >= 0 else (0, len(text))
    return types.Diagnostic(range=types.Range(start=_position(lines, line, start, codec),
                                              end=_position(lines, line, end, codec)),
                            message=message, severity=types.DiagnosticSeverity.Information, source="aspace")


def _find_word(text: str, word: str) -> int:
    i = text.find(word)
    while i >= 0:
        before = text[i - 1] if i > 0 else " "
        after = text[i + len(word)] if i + len(word) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return i
        i = text.find(word, i + 1)
    return -1

