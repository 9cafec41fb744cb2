"""The DWARF index: from a PC to frames, variables, types and lines, lazily.

Opening an index reads nothing. The first PC query reads unit headers and each
unit's top DIE to find the compile unit, then walks the unit's top-level DIEs
only until the subprogram holding the PC is found (skipping subtrees without
decoding them), and finally decodes that one subprogram's subtree. DIEs are
read by a small decoder of our own because pyelftools' DIE objects are too slow
for files with hundreds of thousands of entries.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from typing import Iterator

from ..errors import AspaceError, CodeObjectError
from ..names import function_name, is_mangled
from .dies import (AT_ABSTRACT_ORIGIN, AT_ADDRESS_CLASS, AT_ARTIFICIAL, AT_CALL_COLUMN, AT_CALL_FILE, AT_CALL_LINE,
                   AT_DECLARATION, AT_DECL_FILE, AT_DECL_LINE, AT_FRAME_BASE, AT_HIGH_PC, AT_LINKAGE_NAME,
                   AT_LLVM_ACTIVE_LANE, AT_LLVM_ADDRESS_SPACE, AT_LLVM_LANE_PC, AT_LLVM_LANES, AT_LLVM_MEMORY_SPACE,
                   AT_LOCATION, AT_LOW_PC, AT_MIPS_LINKAGE_NAME, AT_NAME, AT_RANGES, AT_SPECIFICATION, AT_TYPE, ConstValue, Die,
                   DieReader, Expr, LocationSpec, MAX_DEPTH, NAMED_TYPE_TAGS, TAG_BASE_TYPE, TAG_FORMAL_PARAMETER,
                   TAG_INLINED_SUBROUTINE, TAG_LEXICAL_BLOCK, TAG_MODULE, TAG_NAMESPACE, TAG_SUBPROGRAM, TAG_VARIABLE,
                   _Unit)
from .lines import LineInfo
from .linequeries import LineQueries
from .loclists import LocList
from .ops import decode_cached
from .reader import ByteReader
from .scopes import qualified_name
from .target import Dialect
from .types import Type

__all__ = [
    "DwarfIndex", "FrameInfo", "VariableInfo", "Expr", "ConstValue", "LocList", "LineInfo", "Die",
]

# --- public records -------------------------------------------------------------


@dataclass
class FrameInfo:
    """One frame at a PC: the concrete subprogram or an inlined instance in it."""

    function: str
    linkage_name: str | None
    die_offset: int
    cu_offset: int
    is_inlined: bool
    low_pc: int | None
    frame_base_expr: bytes | None
    call_file: str | None = None
    call_line: int | None = None
    call_column: int | None = None
    decl_file: str | None = None
    decl_line: int | None = None
    lane_pc_expr: bytes | None = None
    active_lane_expr: bytes | None = None
    # DW_AT_LLVM_lanes of the DIE giving lane_pc / active_lane: the static lane count their vectors have
    # (None: not given; any other value than a positive integer is ill-formed, and users say so)
    lanes: object = None
    dialect: Dialect = field(default_factory=Dialect)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    origin_offset: int | None = None  # the abstract subprogram DIE, for inlined/out-of-line instances
    # a frame known from the line table alone (a build with line tables only, or NVIDIA's inlining
    # opcodes): no DIE stands behind it, so it has no variables
    line_only: bool = False
    # the function's DIEs declare nothing (no decl_line, no variable, parameter or block): clang's
    # -gline-tables-only, whose subprograms carry a name and code ranges only
    no_variable_info: bool = False


@dataclass(eq=False)
class VariableInfo:
    name: str | None
    kind: str  # "parameter" | "local" | "global"
    die_offset: int
    location: LocationSpec
    type_offset: int | None = None
    decl_file: str | None = None
    decl_line: int | None = None
    scope_ranges: list[tuple[int, int]] | None = None  # None: the whole program (globals)
    artificial: bool = False
    address_space: int | None = None
    memory_space: int | None = None
    dialect: Dialect = field(default_factory=Dialect)
    shadowed: bool = False  # an inner scope declares the same name
    cu_offset: int = 0
    _index: "DwarfIndex | None" = field(default=None, repr=False)

    @property
    def type(self) -> Type | None:
        if self.type_offset is None or self._index is None:
            return None
        return self._index.type_at(self.type_offset)

    def type_name(self, none: str = "") -> str:
        """The type as C spells it; `none` without one or when its DWARF cannot be read (reading the
        variable says why)."""
        try:
            t = self.type
        except AspaceError:
            return none
        return t.display_name() if t is not None else none

    @property
    def scope_low(self) -> int | None:
        return min((lo for lo, _ in self.scope_ranges), default=None) if self.scope_ranges else None

    @property
    def scope_high(self) -> int | None:
        return max((hi for _, hi in self.scope_ranges), default=None) if self.scope_ranges else None

    def location_at(self, pc: int) -> bytes | ConstValue | None:
        loc = self.location
        if isinstance(loc, Expr):
            return loc.expr
        if isinstance(loc, LocList):
            return loc.at(pc)
        return loc


class DwarfIndex(LineQueries, DieReader):
    """Queries by PC, name and file over the DIE reader: frames, variables, types, lines."""

    def __init__(self, elf, *, load_bias: int = 0, e_machine: int | None = None, function_at=None):
        super().__init__(elf, load_bias=load_bias, e_machine=e_machine)
        # code address -> the function symbol there (name, value, size): for frames a line table makes, and
        # to name a function whose DWARF has no linkage name (-gline-tables-only) as llvm-symbolizer does
        self._function_at = function_at
        self._orphan_tables = None  # LineQueries._orphans
        self._cu_ranges: list[tuple[int, int, int]] | None = None
        self._scans: dict[int, _UnitScan] = {}
        self._types = None
        self._name_index: dict[str, list[int]] | None = None

    # -- compile-unit lookup ---------------------------------------------------------------

    def _cu_range_table(self) -> list[tuple[int, int, int]]:
        if self._cu_ranges is None:
            table: list[tuple[int, int, int]] = []
            covered: set[int] = set()
            for unit in self._all_units():
                if unit.unit_type not in (1, 3, 4):  # compile, partial, skeleton
                    continue
                self._prepare(unit)
                top = unit.top.raw
                if AT_LOW_PC in top and AT_HIGH_PC not in top and AT_RANGES not in top:
                    # nvcc gives a unit only a base address: it may cover any PC, its subprograms decide
                    table.append((0, 1 << 64, unit.offset))
                    covered.add(unit.offset)
                    continue
                for low, high in self._ranges(unit.top):
                    table.append((low, high, unit.offset))
                    covered.add(unit.offset)
            for low, high, cu in self._read_aranges():
                if cu not in covered:
                    table.append((low, high, cu))
            table.sort()
            self._cu_ranges = table
        return self._cu_ranges

    def _read_aranges(self) -> list[tuple[int, int, int]]:
        data = self._sec(".debug_aranges")
        out = []
        pos = 0
        while pos < len(data):
            r = ByteReader(data, pos, ".debug_aranges")
            length, offset_size = r.initial_length()
            end = r.pos + length
            r.u16()
            cu = r.offset(offset_size)
            address_size = r.u8()
            r.u8()
            if address_size not in (2, 4, 8):
                raise CodeObjectError(f".debug_aranges: bad address size at {pos:#x}")
            tuple_size = 2 * address_size
            r.pos += (-(r.pos - pos)) % tuple_size
            while r.pos + tuple_size <= end:
                start = r.uint(address_size)
                size = r.uint(address_size)
                if start == 0 and size == 0:
                    break
                out.append((start, start + size, cu))
            pos = end
        return out

    def _cus_for_pc(self, pc: int) -> list[_Unit]:
        table = self._cu_range_table()
        hits = [cu for low, high, cu in table if low <= pc < high] if len(table) < 64 else None
        if hits is None:
            i = bisect.bisect_right(table, (pc, float("inf"), 0))
            hits = [cu for low, high, cu in table[max(0, i - 64):i] if low <= pc < high]
        seen = []
        for cu in hits:
            if cu not in seen:
                seen.append(cu)
        return [self._unit_at(cu) for cu in seen]

    def _scan(self, unit: _Unit) -> "_UnitScan":
        scan = self._scans.get(unit.offset)
        if scan is None:
            scan = _UnitScan(self, unit)
            self._scans[unit.offset] = scan
        return scan

    # -- frames --------------------------------------------------------------------------------

    def _subprogram_at(self, pc: int) -> Die | None:
        for unit in self._cus_for_pc(pc):
            found = self._scan(unit).subprogram_at(pc)
            if found is not None:
                return found
        return None

    def frames_at(self, pc: int) -> list[FrameInfo]:
        """Frames at a PC, innermost (deepest inlined) first; [] when no function covers it."""
        sub = self._subprogram_at(pc)
        if sub is None:
            return self._line_frames(pc)
        frame_base = self._expr_at(sub, AT_FRAME_BASE, pc)
        chain = [sub]
        self._descend(sub, pc, chain, 0)
        frames = [self._frame_for(d, pc, frame_base, sub) for d in chain]
        frames[0] = self._named_by_symbol(frames[0])
        frames.reverse()
        return frames

    def _named_by_symbol(self, frame: FrameInfo) -> FrameInfo:
        """A concrete function without a linkage name (line tables only: no namespaces either) takes the
        mangled name of the function symbol that starts where it starts, as llvm-symbolizer names it."""
        if frame.linkage_name is not None or self._function_at is None or frame.low_pc is None:
            return frame
        found = self._function_at(frame.low_pc)
        if found is None:
            return frame
        name, start, _size = found
        if start != frame.low_pc or not is_mangled(name):
            return frame
        return replace(frame, function=function_name(name), linkage_name=name)

    def scopes_at(self, pc: int) -> tuple[int, ...]:
        """Offsets of the subprogram at `pc` and of every lexical block and inlined subroutine under it
        that contains `pc` (() outside any function). Two PCs with the same scopes have the same
        frames (but for PC-dependent location lists) and the same variables in scope: a caller
        sweeping many PCs reads them once per scope set."""
        sub = self._subprogram_at(pc)
        if sub is None:
            return ()
        out = [sub.offset]
        todo = [(sub, 0)]
        while todo:
            die, depth = todo.pop()
            if depth > MAX_DEPTH:
                raise CodeObjectError(f".debug_info: scopes nested too deep under {die.offset:#x}")
            for child in self.children(die):
                if child.tag in (TAG_LEXICAL_BLOCK, TAG_INLINED_SUBROUTINE) and self._contains(child, pc):
                    out.append(child.offset)
                    todo.append((child, depth + 1))
        return tuple(out)

    def _descend(self, die: Die, pc: int, chain: list[Die], depth: int) -> None:
        """Append the inlined subroutines (through lexical blocks) that contain `pc`."""
        if depth > MAX_DEPTH:
            raise CodeObjectError(f".debug_info: scopes nested too deep under {die.offset:#x}")
        for child in self.children(die):
            if child.tag in (TAG_LEXICAL_BLOCK, TAG_INLINED_SUBROUTINE) and self._contains(child, pc):
                if child.tag == TAG_INLINED_SUBROUTINE:
                    chain.append(child)
                self._descend(child, pc, chain, depth + 1)
                return

    def _contains(self, die: Die, pc: int) -> bool:
        if AT_LOW_PC not in die.raw and AT_RANGES not in die.raw:
            return die.tag == TAG_LEXICAL_BLOCK  # a block without ranges spans its parent
        return any(lo <= pc < hi for lo, hi in self._ranges(die))

    def _frame_for(self, die: Die, pc: int, frame_base: bytes | None, concrete: Die) -> FrameInfo:
        chain = self._origin_chain(die)
        unit = die.unit
        self._note_heterogeneous_ops(unit, frame_base)
        name = self._inherited(chain, AT_NAME)
        linkage = self._inherited(chain, AT_LINKAGE_NAME) or self._inherited(chain, AT_MIPS_LINKAGE_NAME)
        ranges = self._ranges(die)
        hetero = unit.dialect.heterogeneous
        lane_pc = active = lanes = None
        if hetero:
            for at in AT_LLVM_LANE_PC:
                if at in concrete.raw:
                    lane_pc = self._expr_at(concrete, at, pc)
            for at in AT_LLVM_ACTIVE_LANE:
                if at in concrete.raw:
                    active = self._expr_at(concrete, at, pc)
            concrete_chain = self._origin_chain(concrete)
            for at in AT_LLVM_LANES:
                found = self._inherited(concrete_chain, at)
                if found is not None:
                    lanes = found
        is_inlined = die.tag == TAG_INLINED_SUBROUTINE
        # gdb's name: qualified by the enclosing namespaces and classes, else from the linkage name
        qualified = qualified_name(self, chain) if name else None
        if qualified is None and isinstance(linkage, str):
            qualified = function_name(linkage)
        return FrameInfo(
            function=qualified or name or linkage or f"<function at {die.offset:#x}>",
            linkage_name=linkage,
            die_offset=die.offset,
            cu_offset=unit.offset,
            is_inlined=is_inlined,
            low_pc=min((lo for lo, _ in ranges), default=None),
            frame_base_expr=frame_base,
            call_file=self._file_name(unit, die.get(AT_CALL_FILE)) if is_inlined else None,
            call_line=die.get(AT_CALL_LINE) if is_inlined else None,
            call_column=die.get(AT_CALL_COLUMN) if is_inlined else None,
            decl_file=self._file_name(unit, self._inherited(chain, AT_DECL_FILE)),
            decl_line=self._inherited(chain, AT_DECL_LINE),
            lane_pc_expr=lane_pc,
            active_lane_expr=active,
            lanes=lanes,
            dialect=unit.dialect,
            ranges=ranges,
            origin_offset=chain[1].offset if len(chain) > 1 else None,
            no_variable_info=self._declares_nothing(chain),
        )

    def _declares_nothing(self, chain: list[Die]) -> bool:
        """No DIE of a function's chain has a declaration line, a variable, a parameter or a block."""
        for die in chain:
            if AT_DECL_LINE in die.raw:
                return False
            if any(child.tag in (TAG_VARIABLE, TAG_FORMAL_PARAMETER, TAG_LEXICAL_BLOCK) for child in self.children(die)):
                return False
        return True

    # -- variables ------------------------------------------------------------------------------

    def variables(self, frame: FrameInfo, pc: int) -> list[VariableInfo]:
        """Parameters in declaration order, then locals in scope at `pc`, outer blocks first.

        Inlined frames stop at the next inlined subroutine: its variables belong to
        the frame inside. An outer variable hidden by an inner one of the same name
        is kept and marked `shadowed`.
        """
        if frame.line_only:
            return []
        die = self.die(frame.die_offset)
        params: list[VariableInfo] = []
        locals_: list[VariableInfo] = []
        seen_origins: set[int] = set()
        scope = self._ranges(die)
        origin_offset = die.get(AT_ABSTRACT_ORIGIN)
        own_scopes: list[Die] = []
        self._collect(die, pc, scope, params, locals_, seen_origins, 0, origin_offset, own_scopes)
        for own in own_scopes:
            # the frame's own function again, without code: its variables complete the frame's
            # (IGC's kernel-scope __local arrays), never replacing one the frame already has
            for child in self.children(own):
                origin = child.get(AT_ABSTRACT_ORIGIN)
                if child.tag == TAG_VARIABLE and not (isinstance(origin, int) and origin in seen_origins):
                    locals_.append(self._variable(child, "local", scope, die.unit))
                    if isinstance(origin, int):
                        seen_origins.add(origin)
        # Abstract parameters/locals with no concrete entry were optimized away entirely.
        if isinstance(origin_offset, int):
            origin = self.die(origin_offset)
            order: dict[int, int] = {}
            for child in self.children(origin):
                order[child.offset] = len(order)
                if child.tag in (TAG_FORMAL_PARAMETER, TAG_VARIABLE) and child.offset not in seen_origins:
                    info = self._variable(child, "parameter" if child.tag == TAG_FORMAL_PARAMETER else "local",
                                          scope, die.unit)
                    info.location = None
                    (params if child.tag == TAG_FORMAL_PARAMETER else locals_).append(info)

            def declared_position(v: VariableInfo) -> int:
                own = self.die(v.die_offset)
                target = own.get(AT_ABSTRACT_ORIGIN)
                return order.get(target if isinstance(target, int) else v.die_offset, len(order))

            params.sort(key=declared_position)
        result = params + locals_
        for v in result:  # a later variable may have shown the unit speaks the heterogeneous dialect
            v.dialect = die.unit.dialect
        latest: dict[str, int] = {}
        for i, v in enumerate(result):
            if v.name:
                if v.name in latest:
                    result[latest[v.name]].shadowed = True
                latest[v.name] = i
        return result

    def _collect(self, die: Die, pc: int, scope, params, locals_, seen_origins, depth,
                 own_origin: int | None = None, own_scopes: list | None = None) -> None:
        if depth > MAX_DEPTH:
            raise CodeObjectError(f".debug_info: scopes nested too deep under {die.offset:#x}")
        inner_block = None
        for child in self.children(die):
            tag = child.tag
            if tag == TAG_FORMAL_PARAMETER and depth == 0:
                params.append(self._variable(child, "parameter", scope, die.unit))
            elif tag == TAG_VARIABLE:
                locals_.append(self._variable(child, "local", scope, die.unit))
            elif tag == TAG_LEXICAL_BLOCK and inner_block is None and self._contains(child, pc):
                inner_block = child
            elif tag == TAG_INLINED_SUBROUTINE and self._is_own_scope(child, own_origin):
                if own_scopes is not None:
                    own_scopes.append(child)
                continue
            else:
                continue
            origin = child.get(AT_ABSTRACT_ORIGIN)
            if isinstance(origin, int) and tag != TAG_LEXICAL_BLOCK:
                seen_origins.add(origin)
        if inner_block is not None:
            ranges = self._ranges(inner_block) or scope
            self._collect(inner_block, pc, ranges, params, locals_, seen_origins, depth + 1, own_origin, own_scopes)

    def _note_heterogeneous_ops(self, unit: _Unit, location) -> bool:
        """A unit that uses DW_OP_LLVM_* heterogeneous operations is heterogeneous whatever its
        attributes say (some producers write no augmentation). True when this upgraded it."""
        dialect = unit.dialect
        if dialect.heterogeneous or dialect.vendor_ops != "amd" or location is None:
            return False
        if isinstance(location, (bytes, bytearray)):
            exprs = [location]
        elif isinstance(location, Expr):
            exprs = [location.expr]
        elif isinstance(location, LocList):
            exprs = [expr for _, _, expr in location.entries]
        else:
            return False
        for expr in exprs:
            try:
                ops = decode_cached(bytes(expr), dialect)
            except AspaceError:
                continue
            if any(op.name.startswith("DW_OP_LLVM_") for op in ops):
                unit.dialect = replace(dialect, heterogeneous=True)
                return True
        return False

    def function_variables(self, frame: FrameInfo) -> list[VariableInfo]:
        """Every variable declared anywhere in a function (all its blocks and inlined callees),
        whatever the PC: what a whole-function analysis needs."""
        if frame.line_only:
            return []
        top = self.die(frame.die_offset)
        out: list[VariableInfo] = []
        stack = [top]
        while stack:
            die = stack.pop()
            for child in self.children(die):
                if child.tag == TAG_VARIABLE:
                    out.append(self._variable(child, "local", frame.ranges, die.unit))
                elif child.tag in (TAG_LEXICAL_BLOCK, TAG_INLINED_SUBROUTINE):
                    stack.append(child)
        return out

    @staticmethod
    def _is_own_scope(die: Die, own_origin: int | None) -> bool:
        """An inlined_subroutine of the frame's own function that has no code.

        IGC hangs a kernel's function-scope __local variables (single location
        expressions, valid for the work-group's lifetime) on such an entry, with call line
        0 in optimized builds and the kernel's declaration line under -cl-opt-disable. An
        instance without code is never executing, so its call site says nothing: what it
        holds can only complete the frame's own variables (the caller adds those the frame
        lacks, so a code-less recursive instance elsewhere never hides the frame's own)."""
        return (own_origin is not None and die.get(AT_ABSTRACT_ORIGIN) == own_origin
                and AT_LOW_PC not in die.raw and AT_RANGES not in die.raw)

    def _variable(self, die: Die, kind: str, scope, unit: _Unit) -> VariableInfo:
        chain = self._origin_chain(die)
        hetero = unit.dialect.heterogeneous
        aspace = mspace = None
        if hetero:
            for at in AT_LLVM_ADDRESS_SPACE:
                aspace = self._inherited(chain, at) if aspace is None else aspace
            for at in AT_LLVM_MEMORY_SPACE:
                mspace = self._inherited(chain, at) if mspace is None else mspace
        if aspace is None:
            aspace = self._inherited(chain, AT_ADDRESS_CLASS)
        location = self._location(die)
        if location is None and len(chain) > 1 and kind == "global":
            location = self._location(chain[-1])
        if not hetero and self._note_heterogeneous_ops(unit, location):
            return self._variable(die, kind, scope, unit)
        type_offset = self._inherited(chain, AT_TYPE)
        return VariableInfo(
            name=self._inherited(chain, AT_NAME),
            kind=kind,
            die_offset=die.offset,
            location=location,
            type_offset=type_offset if isinstance(type_offset, int) else None,
            decl_file=self._file_name(chain[-1].unit, self._inherited(chain, AT_DECL_FILE)),
            decl_line=self._inherited(chain, AT_DECL_LINE),
            scope_ranges=scope,
            artificial=bool(self._inherited(chain, AT_ARTIFICIAL)),
            address_space=aspace if isinstance(aspace, int) else None,
            memory_space=mspace if isinstance(mspace, int) else None,
            dialect=unit.dialect,
            cu_offset=unit.offset,
            _index=self,
        )

    def globals(self, cu_offset: int | None = None) -> list[VariableInfo]:
        """File-scope variables of one compile unit, or of all of them."""
        units = [self._unit_at(cu_offset)] if cu_offset is not None else [
            u for u in self._all_units() if u.unit_type in (1, 3, 4)]
        out: list[VariableInfo] = []
        for unit in units:
            self._prepare(unit)
            scan = self._scan(unit)
            scan.finish()
            defined = {d.get(AT_SPECIFICATION) for d in scan.variables}
            for die in scan.variables:
                if die.flag(AT_DECLARATION) and die.offset in defined:
                    continue  # its definition elsewhere in the unit stands for it
                out.append(self._variable(die, "global", None, unit))
        return out

    # -- types and names ---------------------------------------------------------------------------

    def type_at(self, die_offset: int) -> Type:
        if self._types is None:
            from .typebuild import TypeBuilder

            self._types = TypeBuilder(self)
        return self._types.build(die_offset)

    def _names(self) -> dict[str, list[int]]:
        if self._name_index is None:
            index: dict[str, list[int]] = {}
            for unit in self._all_units():
                if unit.unit_type not in (1, 2, 3, 4):
                    continue
                self._prepare(unit)
                scan = self._scan(unit)
                scan.finish()
                for name, offset in scan.names:
                    index.setdefault(name, []).append(offset)
            self._name_index = index
        return self._name_index

    def find_type(self, name: str) -> Type | None:
        """A named type (plain or namespace-qualified name); complete definitions win."""
        best = None
        for offset in self._names().get(name.strip(), []):
            die = self.die(offset)
            if die.tag not in NAMED_TYPE_TAGS:
                continue
            if not die.flag(AT_DECLARATION):
                return self.type_at(offset)
            best = best if best is not None else offset
        return self.type_at(best) if best is not None else None

    def subprogram_by_name(self, name: str) -> int | None:
        """DIE offset of the concrete subprogram called `name` (plain, qualified or linkage name)."""
        fallback = None
        for offset in self._names().get(name, []):
            die = self.die(offset)
            if die.tag != TAG_SUBPROGRAM:
                continue
            if AT_LOW_PC in die.raw or AT_RANGES in die.raw:
                return offset
            fallback = fallback if fallback is not None else offset
        return fallback

    def function_ranges(self, name: str) -> list[tuple[int, int]]:
        """The PC ranges of the concrete function called `name` (plain, qualified or linkage name); []
        when no function of that name has code."""
        offset = self.subprogram_by_name(name)
        return self._ranges(self.die(offset)) if offset is not None else []

    def expr_for_die(self, die_offset: int) -> bytes | None:
        """DW_AT_location of a DIE as one expression (DW_OP_call*, implicit pointers)."""
        loc = self._location(self.die(die_offset))
        if isinstance(loc, Expr):
            return loc.expr
        return None

    def location_for_die(self, die_offset: int, pc: int) -> bytes | None:
        """DW_AT_location of a DIE in effect at `pc` (location lists resolved)."""
        return self._expr_at(self.die(die_offset), AT_LOCATION, pc)

    def base_type(self, die_offset: int) -> tuple[int, int]:
        """(byte size, DW_ATE encoding) of a base type DIE, for typed stack operations."""
        die = self.die(die_offset)
        if die.tag != TAG_BASE_TYPE:
            raise CodeObjectError(f"DIE {die_offset:#x} is not a base type")
        size = die.get(0x0B)
        encoding = die.get(0x3E)
        if not isinstance(size, int) or not isinstance(encoding, int):
            raise CodeObjectError(f"base type {die_offset:#x} lacks a size or an encoding")
        return size, encoding


class _UnitScan:
    """A resumable walk over one unit's top-level DIEs (and namespaces).

    PC lookups pull entries only until a subprogram covering the PC turns up;
    name and global lookups run it to the end. Subtrees of functions and types
    are skipped without decoding.
    """

    def __init__(self, index: DwarfIndex, unit: _Unit):
        self.index = index
        self.unit = unit
        self.subprograms: list[tuple[int, int, int]] = []  # (low, high, die offset), sorted
        self.variables: list[Die] = []
        self._named: list[tuple[str, Die]] = []  # (namespace prefix, DIE)
        self._names: list[tuple[str, int]] | None = None
        self._walker = self._walk(unit.top, "", 0)
        self.done = False

    def _walk(self, parent: Die, prefix: str, depth: int) -> Iterator[tuple[int, int, int]]:
        index = self.index
        if depth > MAX_DEPTH:
            raise CodeObjectError(f".debug_info: namespaces nested too deep at {parent.offset:#x}")
        for die in index.children(parent):
            tag = die.tag
            if tag == TAG_SUBPROGRAM:
                self._named.append((prefix, die))
                if AT_LOW_PC in die.raw or AT_RANGES in die.raw:
                    for low, high in index._ranges(die):
                        entry = (low, high, die.offset)
                        bisect.insort(self.subprograms, entry)
                        yield entry
            elif tag == TAG_VARIABLE:
                self.variables.append(die)
                self._named.append((prefix, die))
            elif tag in (TAG_NAMESPACE, TAG_MODULE):
                name = die.name
                yield from self._walk(die, f"{prefix}{name}::" if name else prefix, depth + 1)
            elif tag in NAMED_TYPE_TAGS:
                self._named.append((prefix, die))
        if depth == 0:
            self.done = True

    @property
    def names(self) -> list[tuple[str, int]]:
        """(name, DIE offset) for every named entry at unit or namespace level; after finish()."""
        if self._names is None:
            names: list[tuple[str, int]] = []
            for prefix, die in self._named:
                name = die.name
                linkage = None
                if die.tag == TAG_SUBPROGRAM:
                    linkage = die.get(AT_LINKAGE_NAME) or die.get(AT_MIPS_LINKAGE_NAME)
                    if not name and not isinstance(linkage, str):
                        # An out-of-line definition: its names live on the declaration it completes.
                        chain = self.index._origin_chain(die)
                        name = self.index._inherited(chain, AT_NAME)
                        linkage = self.index._inherited(chain, AT_LINKAGE_NAME)
                if isinstance(name, str):
                    names.append((name, die.offset))
                    if prefix:
                        names.append((prefix + name, die.offset))
                if isinstance(linkage, str):
                    names.append((linkage, die.offset))
            self._names = names
        return self._names

    def _lookup(self, pc: int) -> int | None:
        subs = self.subprograms
        i = bisect.bisect_right(subs, (pc, float("inf"), 0)) - 1
        # Functions do not nest; a few steps back covers zero-sized and overlapping leftovers.
        for j in range(i, max(-1, i - 8), -1):
            low, high, offset = subs[j]
            if low <= pc < high:
                return offset
        return None

    def subprogram_at(self, pc: int) -> Die | None:
        found = self._lookup(pc)
        while found is None and not self.done:
            entry = next(self._walker, None)
            if entry is None:
                self.done = True
                break
            if entry[0] <= pc < entry[1]:
                found = entry[2]
        return self.index.die(found) if found is not None else None

    def finish(self) -> None:
        while not self.done:
            if next(self._walker, None) is None:
                self.done = True
