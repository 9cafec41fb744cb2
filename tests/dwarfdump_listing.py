"""What llvm-dwarfdump prints, read back: variables with their location lists, and line tables.

The listings are `llvm-dwarfdump --debug-info --debug-loclists --debug-line` output (the
`*.dwarf.txt` files next to the code objects, or the tool run at test time). Tests take their
expectations from here, never from our own DWARF reader.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass, field

_DIE = re.compile(r"^(0x[0-9a-f]+):\s+(DW_TAG_\w+|NULL)")
_ATTR = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)$")
_ENTRY = re.compile(r"^\s+\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)(?: \"[^\"]*\")?: (.*?)\)?$")
_ORIGIN = re.compile(r"^(0x[0-9a-f]+)")
_STRING = re.compile(r"^\"(.*)\"\)$")
# address, line, column, file, ISA, discriminator, (OpIndex: llvm-dwarfdump 17 and later), flags
_ROW = re.compile(r"^(0x[0-9a-f]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+(?:\s+\d+)?\s*(.*)$")


@dataclass
class Die:
    offset: int
    tag: str
    depth: int
    attrs: dict[str, str] = field(default_factory=dict)
    entries: list[tuple[int, int, str]] = field(default_factory=list)  # a location list: [lo, hi) expression
    parent: "Die | None" = None


@dataclass
class Variable:
    name: str
    decl_file: str | None
    decl_line: int | None
    entries: list[tuple[int, int, str]]
    die: Die


def read_dies(text: str) -> dict[int, Die]:
    """Every DIE of the .debug_info part, by offset, with its attributes as printed."""
    dies: dict[int, Die] = {}
    stack: list[Die] = []
    current = None
    in_location = False
    for line in text.splitlines():
        if line.startswith(".debug_line") or line.startswith(".debug_loclists"):
            break
        m = _DIE.match(line)
        if m:
            after = line[len(m.group(1)) + 1:]
            depth = len(after) - len(after.lstrip(" "))  # deeper DIEs are printed further in
            in_location = False
            if m.group(2) == "NULL":
                current = None
                continue
            while stack and stack[-1].depth >= depth:
                stack.pop()
            current = Die(int(m.group(1), 16), m.group(2), depth, parent=stack[-1] if stack else None)
            dies[current.offset] = current
            stack.append(current)
            continue
        if current is None:
            continue
        m = _ATTR.match(line)
        if m:
            name, value = m.groups()
            current.attrs[name] = value
            in_location = name == "DW_AT_location" and not value.rstrip().endswith(")")
            continue
        if in_location:
            e = _ENTRY.match(line)
            if e:
                current.entries.append((int(e.group(1), 16), int(e.group(2), 16), e.group(3)))
                in_location = not line.rstrip().endswith(")")
    return dies


def _origin(die: Die, dies: dict[int, Die]) -> Die:
    seen = 0
    while "DW_AT_abstract_origin" in die.attrs and seen < 8:
        die = dies[int(_ORIGIN.match(die.attrs["DW_AT_abstract_origin"]).group(1), 16)]
        seen += 1
    return die


def variables(text: str) -> list[Variable]:
    """Variables and parameters with a location list (concrete DIEs: inlined copies included)."""
    dies = read_dies(text)
    out = []
    for die in dies.values():
        if die.tag not in ("DW_TAG_variable", "DW_TAG_formal_parameter") or not die.entries:
            continue
        origin = _origin(die, dies)
        name = _STRING.match(origin.attrs.get("DW_AT_name", '"")'))
        line = origin.attrs.get("DW_AT_decl_line")
        file = _STRING.match(origin.attrs.get("DW_AT_decl_file", '"")'))
        out.append(Variable(name.group(1) if name else "", file.group(1) if file else None,
                            int(line.rstrip(")")) if line else None, die.entries, die))
    return out


@dataclass
class LineRows:
    """One line table: its files and its rows per sequence, (address, line, file number, end_sequence)."""

    files: dict[int, str]
    sequences: list[list[tuple[int, int, int, bool]]]

    def row_at(self, pc: int) -> tuple[int, int, int, bool] | None:
        for seq in self.sequences:
            if seq and seq[0][0] <= pc < seq[-1][0]:
                i = bisect.bisect_right([r[0] for r in seq], pc) - 1
                return seq[i]
        return None

    def stated_line(self, pc: int) -> tuple[str, int] | None:
        """(file, line) of the row covering `pc`; at line 0, of the nearest row before it with a line."""
        for seq in self.sequences:
            if seq and seq[0][0] <= pc < seq[-1][0]:
                i = bisect.bisect_right([r[0] for r in seq], pc) - 1
                while i >= 0 and seq[i][1] == 0:
                    i -= 1
                return (self.files[seq[i][2]], seq[i][1]) if i >= 0 else None
        return None


def line_tables(text: str) -> list[LineRows]:
    tables: list[LineRows] = []
    dirs: dict[int, str] = {}
    files: dict[int, str] = {}
    pending_file = None
    rows: list[list] = []
    in_table = False
    for line in text.splitlines():
        if line.startswith("debug_line["):
            dirs, files, rows, pending_file, in_table = {}, {}, [[]], None, False
            tables.append(LineRows(files, rows))
            continue
        m = re.match(r'^include_directories\[\s*(\d+)\] = "(.*)"$', line)
        if m:
            dirs[int(m.group(1))] = m.group(2)
            continue
        m = re.match(r"^file_names\[\s*(\d+)\]:$", line)
        if m:
            pending_file = [int(m.group(1)), None]
            continue
        m = re.match(r'^\s+name: "(.*)"$', line)
        if m and pending_file is not None:
            pending_file[1] = m.group(1)
            continue
        m = re.match(r"^\s+dir_index: (\d+)$", line)
        if m and pending_file is not None:
            index = int(m.group(1))
            directory = dirs.get(index, "")
            if index and not directory.startswith("/"):  # DWARF 5: relative to directory 0, the unit's
                directory = posixpath.join(dirs.get(0, ""), directory)
            name = pending_file[1]
            files[pending_file[0]] = name if name.startswith("/") or not directory else \
                posixpath.normpath(posixpath.join(directory, name))
            pending_file = None
            continue
        if line.startswith("Address ") and "Line" in line:
            in_table = True
            continue
        if in_table:
            m = _ROW.match(line)
            if m:
                flags = m.group(5)
                rows[-1].append((int(m.group(1), 16), int(m.group(2)), int(m.group(4)), "end_sequence" in flags))
                if "end_sequence" in flags:
                    rows.append([])
    for table in tables:
        table.sequences[:] = [s for s in table.sequences if s]
    return tables
