"""The DWARF index's queries by line: PC to source position and back over every line table of the object
(each unit's, and the programs no unit names: a build with line tables only), and the frames a line table
alone gives (NVIDIA's inline chain, or the one function of a line-tables-only build)."""

from __future__ import annotations

from ..names import function_name
from .dies import AT_STMT_LIST, _Unit
from .lines import InlinedAt, LineInfo, LineTable, line_program_offsets, parse_line_table


class LineQueries:
    """Mixed into DwarfIndex: needs its units (_all_units, _prepare, _line_table, _cus_for_pc), sections
    (_sec, _elf), `_function_at` and `_orphan_tables`."""

    # -- lines -----------------------------------------------------------------------------------------

    def _line_units(self) -> list[_Unit]:
        return [u for u in self._all_units() if u.unit_type in (1, 3, 4)]

    def has_units(self) -> bool:
        """Whether .debug_info has compile units (else the object has line tables at most)."""
        return bool(self._line_units())

    def _orphans(self) -> list[LineTable]:
        """The line programs no unit names (all of them in a build with line tables only: nvcc
        -lineinfo, Triton), in section order."""
        if self._orphan_tables is None:
            named = set()
            for unit in self._line_units():
                self._prepare(unit)
                stmt = unit.top.get(AT_STMT_LIST)
                if isinstance(stmt, int):
                    named.add(stmt)
            data = self._sec(".debug_line")
            address_size = 8 if self._elf.elfclass == 64 else 4
            self._orphan_tables = [
                parse_line_table(data, offset, address_size=address_size, line_str=self._sec(".debug_line_str"),
                                 debug_str=self._sec(".debug_str"))
                for offset in (line_program_offsets(data) if data else []) if offset not in named]
        return self._orphan_tables

    def _tables(self, units: list[_Unit] | None = None) -> list[LineTable]:
        """The line tables of these units, or every line table of the object."""
        out = [t for t in (self._line_table(u) for u in (self._line_units() if units is None else units))
               if t is not None]
        return out if units is not None else out + self._orphans()

    def _tables_for_pc(self, pc: int) -> list[LineTable]:
        return self._tables(self._cus_for_pc(pc) or None)

    def line_for_pc(self, pc: int) -> LineInfo | None:
        return self._first_row(pc, LineTable.lookup)

    def stated_line_for_pc(self, pc: int) -> LineInfo | None:
        """line_for_pc, except that code at line 0 belongs to the nearest line before it (in its sequence)."""
        return self._first_row(pc, LineTable.lookup_stated)

    def _first_row(self, pc: int, lookup) -> LineInfo | None:
        """lookup(table, pc) in the first of the tables for `pc` that has a row for it."""
        for table in self._tables_for_pc(pc):
            info = lookup(table, pc)
            if info is not None:
                return info
        return None

    def _line_frames(self, pc: int) -> list["FrameInfo"]:
        """Frames from the line table where no subprogram DIE covers the PC: the inline chain NVIDIA's
        line-table opcodes record, else (a build with line tables only) the one function the code is in.
        The outermost frame is the function symbol holding the PC; inlined ones carry the raw name the
        line table gives and their call site (the next level's row)."""
        table = next((t for t in self._tables_for_pc(pc) if t.lookup(pc) is not None), None)
        if table is None:
            return []
        chain = table.inline_chain(pc)
        if chain is None:
            if self.has_units():
                return []  # full DWARF elsewhere: code outside its subprograms stays as it was
            row = table.lookup(pc)
            chain = [InlinedAt(None, row.file, row.line, row.column)]
        symbol = self._function_at(pc) if self._function_at is not None else None
        from .index import FrameInfo

        frames = []
        for level, here in enumerate(chain[:-1]):
            at = chain[level + 1]
            frames.append(FrameInfo(
                function=function_name(here.function) if here.function else "<inlined function>",
                linkage_name=here.function, die_offset=-1,
                cu_offset=-1, is_inlined=True, low_pc=None, frame_base_expr=None, call_file=at.file,
                call_line=at.line, call_column=at.column or None, line_only=True))
        name, low, size = symbol if symbol is not None else (None, None, 0)
        frames.append(FrameInfo(
            function=function_name(name) if name else f"<no function symbol at {pc:#x}>", linkage_name=name, die_offset=-1, cu_offset=-1,
            is_inlined=False, low_pc=low, frame_base_expr=None, ranges=[(low, low + size)] if name and size else [],
            line_only=True))
        return frames

    def pcs_for_line(self, file: str, line: int) -> list[int]:
        out: set[int] = set()
        for table in self._tables():
            out.update(table.pcs_for_line(file, line))
        return sorted(out)

    def line_rows(self, file: str) -> dict[int, list[int]]:
        """{line: sorted row start addresses} for every line of `file` with code, over all line tables."""
        merged: dict[int, set[int]] = {}
        for table in self._tables():
            for line, pcs in table.line_rows(file).items():
                merged.setdefault(line, set()).update(pcs)
        return {line: sorted(pcs) for line, pcs in merged.items()}

    def source_files(self) -> list[str]:
        files: set[str] = set()
        for table in self._tables():
            files.update(table.file_names())
        return sorted(files)

    def source_text(self, file: str) -> str | None:
        """Source embedded in the line table (DW_LNCT_LLVM_source), when the producer put it there."""
        for table in self._tables():
            for number, path in table.files.items():
                if table.matches_file(number, file) and path in table.sources:
                    return table.sources[path]
        return None
