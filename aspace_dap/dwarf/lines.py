"""Line tables (.debug_line, versions 2-5): PC to source position and back.

One `LineTable` per line program (one per compile unit, or each program of a
`.debug_line` that no unit names: a line-tables-only build). Rows are kept per
sequence, sorted by address, so a PC lookup is a bisection.

NVIDIA's line programs (nvcc -lineinfo, Triton) also say which inlined call each
row's code belongs to, with two extended opcodes (elfutils' dwarf.h names them;
`nvdisasm -gi` and cuda-gdb read them): DW_LNE_NVIDIA_inlined_call (0x90: ULEB
context, ULEB function name) and DW_LNE_NVIDIA_set_function_name (0x91: ULEB
function name). Like the other registers they hold until set again or the end of
the sequence. The context is the 1-based number of a row of the same sequence, in
the order the program emits them: the row that stands at the call site; 0 is code
of the function itself. (elfutils numbers the rows of the whole program; nvdisasm
and cuda-gdb count within the sequence, which only differs in a cubin of several
functions, each its own sequence: nvdisasm is followed.) A function name is an offset
into .debug_str from a base the program header holds in 4 bytes after its file
table (what llvm-dwarfdump reports as unknown prologue data).
"""

from __future__ import annotations

import bisect
import posixpath
from dataclasses import dataclass
from typing import Callable

from ..errors import CodeObjectError
from .reader import ByteReader

LNCT_PATH = 0x1
LNCT_DIRECTORY_INDEX = 0x2
LNCT_TIMESTAMP = 0x3
LNCT_SIZE = 0x4
LNCT_MD5 = 0x5
LNCT_LLVM_SOURCE = 0x2001

# Hostile input must not make a table take for ever to read.
MAX_ROWS = 1 << 24
MAX_INLINE_DEPTH = 256  # a context chain longer than this is a loop in corrupt input

DW_LNE_NVIDIA_INLINED_CALL = 0x90
DW_LNE_NVIDIA_SET_FUNCTION_NAME = 0x91


@dataclass(frozen=True)
class LineInfo:
    file: str  # full path
    line: int
    column: int
    is_stmt: bool
    address: int = 0  # start address of the row that covers the PC


@dataclass(frozen=True)
class InlinedAt:
    """One level of a row's inline chain (NVIDIA's line-table extension), innermost first: the
    function whose code stands at `file`:`line` (raw, as .debug_str holds it: a mangled name; None
    for the outermost level, the function the code was compiled into, which the line table does not
    name)."""

    function: str | None
    file: str
    line: int
    column: int


@dataclass
class _Sequence:
    addresses: list[int]  # row start addresses, ascending; the last one is the end_sequence row
    rows: list[tuple[int, int, int, bool]]  # (file index, line, column, is_stmt), same indexes
    # (context row number, .debug_str offset of the function name) per row, where the program sets them
    inline: list[tuple[int, int]] | None = None


def _join(directory: str, path: str) -> str:
    if not directory or posixpath.isabs(path):
        return posixpath.normpath(path) if path else path
    return posixpath.normpath(posixpath.join(directory, path))


class LineTable:
    def __init__(self, files: dict[int, str], sources: dict[str, str], run_program: Callable[[], "_Program"],
                 function_name: Callable[[int], str | None] | None = None):
        self.files = files  # file number -> full path
        self.sources = sources  # full path -> embedded source text
        # The row program runs on the first address query: file names alone are cheap.
        self._run_program = run_program
        self._function_name = function_name  # a function-name operand -> the name (NVIDIA's extension)
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        program = self._run_program()
        sequences = program.sequences
        self._inlined = program.inlined
        self._sequences = sorted((s for s in sequences if s.addresses), key=lambda s: s.addresses[0])
        self._starts = [s.addresses[0] for s in self._sequences]
        self._reach = []  # highest end address of sequences[0..i]
        reach = 0
        for seq in self._sequences:
            reach = max(reach, seq.addresses[-1])
            self._reach.append(reach)
        self._loaded = True

    def _covering(self, pc: int):
        """(sequence, row index) of the row covering `pc`, or None."""
        self._load()
        i = bisect.bisect_right(self._starts, pc) - 1
        # Sequences may overlap (e.g. discarded functions at address 0): walk back
        # while an earlier sequence could still reach the PC.
        while i >= 0 and self._reach[i] > pc:
            seq = self._sequences[i]
            if pc < seq.addresses[-1]:
                return seq, bisect.bisect_right(seq.addresses, pc) - 1
            i -= 1
        return None

    def _row(self, seq, j: int) -> LineInfo:
        file_no, line, column, is_stmt = seq.rows[j]
        return LineInfo(self.files.get(file_no, f"<file {file_no}>"), line, column, is_stmt, seq.addresses[j])

    def lookup(self, pc: int) -> LineInfo | None:
        found = self._covering(pc)
        return None if found is None else self._row(*found)

    def lookup_stated(self, pc: int) -> LineInfo | None:
        """The row covering `pc`, or where that row has line 0 (code the compiler attributes to no line)
        the nearest row before it in its sequence that has a line; None when there is none."""
        found = self._covering(pc)
        if found is None:
            return None
        seq, j = found
        while j >= 0 and not seq.rows[j][1]:
            j -= 1
        return None if j < 0 else self._row(seq, j)

    def has_inline_info(self) -> bool:
        """Whether the program says which inlined call each row belongs to (NVIDIA's extension)."""
        self._load()
        return self._inlined

    def inline_chain(self, pc: int) -> list[InlinedAt] | None:
        """The inline chain of the row covering `pc`, innermost first, each level where its code stands
        (the next level's is its call site); the last level is the function the code was compiled into.
        None where the program has no inline information or no row covers `pc`."""
        self._load()
        if not self._inlined:
            return None
        found = self._covering(pc)
        if found is None:
            return None
        seq, j = found
        file_no, line, column, _ = seq.rows[j]
        context, name = seq.inline[j] if seq.inline is not None else (0, 0)
        return self._chain(seq, file_no, line, column, context, name)

    def _chain(self, seq: "_Sequence", file_no: int, line: int, column: int, context: int,
               name: int) -> list[InlinedAt]:
        out: list[InlinedAt] = []
        seen: set[int] = set()
        while True:
            function = self._function_name(name) if context and self._function_name is not None else None
            out.append(InlinedAt(function, self.files.get(file_no, f"<file {file_no}>"), line, column))
            if not context:
                return out
            if context in seen or len(out) > MAX_INLINE_DEPTH or context > len(seq.rows):
                raise CodeObjectError(f".debug_line: inline context {context} names no row of its sequence "
                                      f"(or loops)")
            seen.add(context)
            file_no, line, column, _ = seq.rows[context - 1]
            context, name = seq.inline[context - 1] if seq.inline is not None else (0, 0)

    def matches_file(self, file_no: int, wanted: str) -> bool:
        path = self.files.get(file_no)
        if path is None:
            return False
        if path == wanted:
            return True
        return not posixpath.isabs(wanted) and path.endswith("/" + wanted.lstrip("./"))

    def pcs_for_line(self, file: str, line: int) -> list[int]:
        """Addresses where code for `line` begins (is_stmt rows that start a run of that line).

        When the line has no code, the next line of the same file that has code is
        used, as debuggers do for breakpoints on blank lines.
        """
        wanted = posixpath.normpath(file) if posixpath.isabs(file) else file
        file_numbers = {n for n in self.files if self.matches_file(n, wanted)}
        if not file_numbers:
            return []
        self._load()
        best_line = None
        hits: dict[int, list[int]] = {}
        for seq in self._sequences:
            prev = None
            for addr, row in zip(seq.addresses[:-1], seq.rows[:-1]):
                file_no, row_line, _col, is_stmt = row
                key = (file_no, row_line)
                if file_no in file_numbers and row_line >= line and is_stmt and key != prev:
                    hits.setdefault(row_line, []).append(addr)
                    if best_line is None or row_line < best_line:
                        best_line = row_line
                prev = key
        if best_line is None:
            return []
        return sorted(set(hits[best_line]))

    def line_rows(self, file: str) -> dict[int, list[int]]:
        """{line: start addresses of its rows} for every line of `file` that has code, in one pass."""
        wanted = posixpath.normpath(file) if posixpath.isabs(file) else file
        file_numbers = {n for n in self.files if self.matches_file(n, wanted)}
        out: dict[int, list[int]] = {}
        if not file_numbers:
            return out
        self._load()
        for seq in self._sequences:
            for addr, row in zip(seq.addresses[:-1], seq.rows[:-1]):
                if row[0] in file_numbers and row[1]:
                    out.setdefault(row[1], []).append(addr)
        return out

    def file_names(self) -> list[str]:
        return sorted(set(self.files.values()))


def parse_line_table(
    data: bytes,
    offset: int,
    *,
    comp_dir: str = "",
    address_size: int = 8,
    line_str: bytes = b"",
    debug_str: bytes = b"",
    strx: Callable[[int], str] | None = None,
) -> LineTable:
    r = ByteReader(data, offset, ".debug_line")
    unit_length, offset_size = r.initial_length()
    end = r.pos + unit_length
    if end > len(data):
        raise CodeObjectError(f".debug_line: unit at {offset:#x} runs past the section")
    version = r.u16()
    if version < 2 or version > 5:
        raise CodeObjectError(f".debug_line: unsupported version {version} at {offset:#x}")
    if version >= 5:
        address_size = r.u8()
        r.u8()  # segment selector size
    header_length = r.offset(offset_size)
    program_start = r.pos + header_length
    min_inst = r.u8()
    max_ops = r.u8() if version >= 4 else 1
    default_is_stmt = bool(r.u8())
    line_base = r.sint(1)
    line_range = r.u8()
    opcode_base = r.u8()
    if line_range == 0:
        raise CodeObjectError(f".debug_line: line_range 0 at {offset:#x}")
    std_lengths = [r.u8() for _ in range(max(opcode_base - 1, 0))]

    def string_at(section: bytes, name: str, off: int) -> str:
        end_s = section.find(b"\0", off)
        if off >= len(section) or end_s < 0:
            raise CodeObjectError(f"{name}: bad string offset {off:#x}")
        return section[off:end_s].decode("utf-8", "replace")

    def read_form(form: int):
        if form == 0x08:  # string
            return r.cstr().decode("utf-8", "replace")
        if form == 0x1F:  # line_strp
            return string_at(line_str, ".debug_line_str", r.offset(offset_size))
        if form == 0x0E:  # strp
            return string_at(debug_str, ".debug_str", r.offset(offset_size))
        if form in (0x1A, 0x25, 0x26, 0x27, 0x28):  # strx*
            index = r.uleb() if form == 0x1A else r.uint({0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4}[form])
            if strx is None:
                raise CodeObjectError(".debug_line: strx form without string offsets")
            return strx(index)
        if form == 0x0F:
            return r.uleb()
        if form == 0x0B:
            return r.u8()
        if form == 0x05:
            return r.u16()
        if form == 0x06:
            return r.u32()
        if form == 0x07:
            return r.uint(8)
        if form == 0x1E:
            return r.bytes(16)
        if form == 0x09:
            return r.bytes(r.uleb())
        raise CodeObjectError(f".debug_line: unsupported form {form:#x} in header at {offset:#x}")

    def read_entries() -> list[dict[int, object]]:
        fmt_count = r.u8()
        fmt = [(r.uleb(), r.uleb()) for _ in range(fmt_count)]
        count = r.uleb()
        if count > len(data):
            raise CodeObjectError(f".debug_line: absurd entry count {count} at {offset:#x}")
        return [{ct: read_form(form) for ct, form in fmt} for _ in range(count)]

    files: dict[int, str] = {}
    sources: dict[str, str] = {}
    if version >= 5:
        # Directory 0 is the compilation directory; the others are relative to it.
        dirs = [str(d.get(LNCT_PATH, "")) for d in read_entries()]
        if not dirs:
            dirs = [comp_dir]
        dirs = [dirs[0]] + [_join(dirs[0], d) for d in dirs[1:]]
        for i, entry in enumerate(read_entries()):
            dir_index = entry.get(LNCT_DIRECTORY_INDEX, 0)
            directory = dirs[dir_index] if isinstance(dir_index, int) and dir_index < len(dirs) else ""
            path = _join(directory, str(entry.get(LNCT_PATH, "")))
            files[i] = path
            source = entry.get(LNCT_LLVM_SOURCE)
            if isinstance(source, str) and source:
                sources.setdefault(path, source)
    else:
        dirs = [comp_dir]
        while True:
            d = r.cstr()
            if not d:
                break
            dirs.append(_join(comp_dir, d.decode("utf-8", "replace")))
        n = 1
        while True:
            name = r.cstr()
            if not name:
                break
            dir_index = r.uleb()
            r.uleb()
            r.uleb()
            directory = dirs[dir_index] if dir_index < len(dirs) else ""
            files[n] = _join(directory, name.decode("utf-8", "replace"))
            n += 1

    # cubins: a 4-byte .debug_str base for the function names of NVIDIA's inlining opcodes
    names_base = r.u32() if r.pos == program_start - 4 else 0

    def function_name(operand: int) -> str | None:
        at = names_base + operand
        stop = debug_str.find(b"\0", at)
        return debug_str[at:stop].decode("utf-8", "replace") if 0 <= at < len(debug_str) and stop >= 0 else None

    def run() -> _Program:
        program = ByteReader(data, program_start, ".debug_line")
        return _run_program(program, end, version, address_size, min_inst, max_ops, default_is_stmt,
                            line_base, line_range, opcode_base, std_lengths, files, dirs)

    return LineTable(files, sources, run, function_name)


def line_program_offsets(data: bytes) -> list[int]:
    """The offset of every line program in a .debug_line section, in order (what a build with line
    tables only has: no unit names them)."""
    out = []
    pos = 0
    while pos < len(data):
        r = ByteReader(data, pos, ".debug_line")
        length, _ = r.initial_length()
        end = r.pos + length
        if length == 0 or end > len(data):
            break  # padding, or a unit cut short: what came before stands
        out.append(pos)
        pos = end
    return out


@dataclass
class _Program:
    sequences: list[_Sequence]
    inlined: bool  # some row has a context or a function name


def _run_program(r, end, version, address_size, min_inst, max_ops, default_is_stmt,
                 line_base, line_range, opcode_base, std_lengths, files, dirs) -> _Program:
    first_file = 1
    sequences: list[_Sequence] = []
    address = op_index = 0
    file_no, line, column, is_stmt = first_file, 1, 0, default_is_stmt
    context = fname = 0
    addresses: list[int] = []
    rows: list[tuple[int, int, int, bool]] = []
    inline: list[tuple[int, int]] | None = None
    inlined = False
    max_ops = max_ops or 1

    def add_row() -> None:
        nonlocal inline
        addresses.append(address)
        rows.append((file_no, line, column, is_stmt))
        if inline is None and (context or fname):
            inline = [(0, 0)] * (len(rows) - 1)
        if inline is not None:
            inline.append((context, fname))

    def advance(operation_advance: int) -> None:
        nonlocal address, op_index
        if max_ops == 1:
            address += min_inst * operation_advance
        else:
            total = op_index + operation_advance
            address += min_inst * (total // max_ops)
            op_index = total % max_ops

    count = 0
    while r.pos < end:
        count += 1
        if count > MAX_ROWS:
            raise CodeObjectError(".debug_line: line program too long")
        opcode = r.u8()
        if opcode >= opcode_base:
            adjusted = opcode - opcode_base
            advance(adjusted // line_range)
            line += line_base + adjusted % line_range
            add_row()
        elif opcode == 0:
            length = r.uleb()
            sub_start = r.pos
            if length == 0:
                continue
            sub = r.u8()
            if sub == 1:  # end_sequence
                add_row()
                sequences.append(_Sequence(addresses, rows, inline))
                inlined = inlined or inline is not None
                addresses, rows, inline = [], [], None
                address = op_index = 0
                file_no, line, column, is_stmt = first_file, 1, 0, default_is_stmt
                context = fname = 0
            elif sub == 2:
                address = r.uint(length - 1)
                op_index = 0
            elif sub == 3:  # define_file (DWARF <= 4)
                name = r.cstr().decode("utf-8", "replace")
                dir_index = r.uleb()
                directory = dirs[dir_index] if dir_index < len(dirs) else ""
                files[max(files, default=0) + 1] = _join(directory, name)
            elif sub == DW_LNE_NVIDIA_INLINED_CALL:
                context, fname = r.uleb(), r.uleb()
            elif sub == DW_LNE_NVIDIA_SET_FUNCTION_NAME:
                fname = r.uleb()
            r.pos = sub_start + length
        elif opcode == 1:
            add_row()
        elif opcode == 2:
            advance(r.uleb())
        elif opcode == 3:
            line += r.sleb()
        elif opcode == 4:
            file_no = r.uleb()
        elif opcode == 5:
            column = r.uleb()
        elif opcode == 6:
            is_stmt = not is_stmt
        elif opcode == 8:
            advance((255 - opcode_base) // line_range)
        elif opcode == 9:
            address += r.u16()
            op_index = 0
        elif opcode in (7, 10, 11):
            pass
        else:
            # Unknown standard opcode (or set_isa): skip its ULEB operands.
            for _ in range(std_lengths[opcode - 1]):
                r.uleb()
    if addresses:
        # A sequence without end_sequence: keep what is there, ending at its last row.
        sequences.append(_Sequence(addresses, rows, inline))
        inlined = inlined or inline is not None
    return _Program(sequences, inlined)
