"""Where each `__shared__` variable really is in LDS, proven from the kernel's ISA.

Compilers often leave no usable LDS address in the DWARF: Debian's clang-15 and
clang-19 point `.debug_addr` at symbols the LDS lowering pass dropped (the
linked code object keeps them undefined, so every variable reads "0"), and ROCm
4.x writes a bare `DW_OP_constu 0`. The machine code still knows: every access
builds the address from a constant (lds_scan finds them).

The layout is solved per kernel over the variables of the kernel and of every
function it calls (they share the kernel's LDS):

- every variable lies inside [0, group_segment_fixed_size), at a multiple of
  its alignment, and no two overlap;
- every constant LDS address an instruction forms lies inside (or just past)
  one of the variables the source can name there: the variables in scope at
  that PC, narrowed to those whose names appear on the instruction's source
  line when the source file can be read.

A variable's offset is proven when every layout that satisfies all of this
puts it at the same place; otherwise it stays unresolved and is shown as
unavailable, never with a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from aspace_dap.dwarf.ops import decode
from aspace_dap.dwarf.types import ArrayType, BaseType, byte_size
from aspace_dap.errors import AspaceError

from .lds_scan import IsaError, LdsAccess, scan_function

SEARCH_BUDGET = 200_000  # layouts tried per kernel before giving up (then nothing is proven)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True)
class LdsPlacement:
    """A variable's LDS offset (None: not proven) and why."""

    offset: int | None
    why: str
    space: str = "local"


@dataclass
class _Var:
    info: object  # VariableInfo
    size: int
    align: int
    fixed: int | None  # a real address from the DWARF


@dataclass
class _Evidence:
    access: LdsAccess
    candidates: list[int]  # die offsets
    line: int | None


# --------------------------------------------------------------------------- DWARF side

_UPSTREAM_LDS_TAIL = ("DW_OP_lit2", "DW_OP_swap", "DW_OP_xderef")
_ADDRESS_OPS = ("DW_OP_addr", "DW_OP_addrx", "DW_OP_GNU_addr_index")


def static_lds_address(var, index) -> tuple[int | None, bool]:
    """(address, is_lds) of a variable whose DWARF location is a fixed LDS address.

    Recognised: upstream `addr(x) A; lit2; swap; xderef`; heterogeneous
    `addr(x) A; lit3 | constu 3; form_aspace_address` (DW_ASPACE local) and a plain
    address with DW_AT_LLVM_memory_space group (3); ROCm 4.x's bare `constu 0` on a
    group variable. (None, False) for anything else.
    """
    expr = getattr(var.location, "expr", None)
    if not expr:
        return None, False
    try:
        ops = decode(expr, var.dialect)
    except AspaceError:
        return None, False
    names = [op.name for op in ops]
    first = ops[0]
    if first.name in _ADDRESS_OPS:
        addr = first.operands[0] if first.name == "DW_OP_addr" else _addr_index(index, var, first.operands[0])
    elif first.name in ("DW_OP_constu", "DW_OP_lit0") and len(ops) == 1:
        addr = first.operands[0] if first.operands else 0
    else:
        return None, False
    rest = names[1:]
    if not var.dialect.heterogeneous and tuple(rest) == _UPSTREAM_LDS_TAIL:
        return addr, True
    if var.dialect.heterogeneous:
        local_space = len(ops) == 3 and ops[2].name == "DW_OP_LLVM_form_aspace_address" and (
            ops[1].name == "DW_OP_lit3" or (ops[1].name == "DW_OP_constu" and ops[1].operands[0] == 3))
        if local_space or (not rest and var.memory_space == 3):
            return addr, True
    return None, False


def is_bare_zero(var) -> bool:
    """ROCm 4.x's placeholder for an optimized-out `__shared__` array: the whole location is
    `DW_OP_constu 0` (or lit0 / addr 0), an address no variable can have."""
    expr = getattr(var.location, "expr", None)
    if not expr:
        return False
    try:
        ops = decode(expr, var.dialect)
    except AspaceError:
        return False
    return len(ops) == 1 and ops[0].name in ("DW_OP_constu", "DW_OP_lit0", "DW_OP_addr") and \
        (not ops[0].operands or ops[0].operands[0] == 0)


def _addr_index(index, var, slot: int) -> int:
    return index.addr_index(var.cu_offset, slot)


def _alignment(t) -> int:
    """The least alignment the compiler may give the variable: its element's natural one."""
    s = t.strip() if t is not None else None
    while isinstance(s, ArrayType):
        s = s.element.strip() if s.element is not None else None
    if isinstance(s, BaseType) and s.size in (1, 2, 4, 8, 16):
        return s.size
    return 1


# --------------------------------------------------------------------------- the layout


class LdsLayout:
    """Placements of one code object's LDS variables, worked out per kernel on first need: a
    variable is looked at in the kernels whose call graph reaches a function of its unit."""

    def __init__(self, code_object, index, read_source: Callable[[str], str | None] | None = None):
        self.code_object = code_object
        self.index = index
        self.read_source = read_source
        self._function_table: dict[int, object] | None = None
        self._scans: dict[int, object] = {}
        self._kernels: list[tuple[object, list[int], set[int]]] | None = None
        self._solved: dict[str, dict[int, LdsPlacement]] = {}
        self._undefined: set[str] | None = None
        self._merged: dict[int, LdsPlacement | None] = {}

    @property
    def _functions(self) -> dict[int, object]:
        # built on the first LDS variable: a code object without one never walks its symbol table
        if self._function_table is None:
            self._function_table = {s.value: s for s in self.code_object.symbols.values()
                                    if s.type == "FUNC" and s.size > 0}
        return self._function_table

    def placement(self, var) -> LdsPlacement | None:
        """Where an LDS variable with a placeholder address is (None: its address is not one)."""
        if var.die_offset in self._merged:
            return self._merged[var.die_offset]
        try:
            merged = self._placement(var)
        except (AspaceError, ValueError, IndexError, KeyError) as exc:  # malformed input: say so, show nothing
            merged = LdsPlacement(None, f"its LDS offset could not be worked out ({exc})")
        self._merged[var.die_offset] = merged
        return merged

    def _placement(self, var) -> LdsPlacement | None:
        options = []
        for kernel, reach, units in self._kernel_reach():
            if var.cu_offset in units:
                found = self._solve(kernel, reach).get(var.die_offset)
                if found is not None:
                    options.append(found)
        merged = None
        if options:
            offsets = {p.offset for p in options}
            if len(offsets) == 1 and None not in offsets:
                merged = options[0]
            else:
                why = next((p.why for p in options if p.offset is None),
                           "the kernels calling its function place it differently")
                merged = LdsPlacement(None, why)
        return merged

    def _scan(self, low: int):
        if low not in self._scans:
            sym = self._functions.get(low)
            code = self.code_object.read_memory(low, sym.size) if sym is not None else None
            try:
                self._scans[low] = scan_function(code, low, self.code_object.processor) if code is not None else None
            except IsaError:
                self._scans[low] = None
        return self._scans[low]

    def _kernel_reach(self):
        """(kernel, functions it reaches, units of those functions) for every kernel with LDS."""
        if self._kernels is None:
            self._kernels = []
            for kernel in self.code_object.kernels:
                sym = self.code_object.symbols.get(kernel.name)
                if sym is None or not kernel.group_segment_fixed_size:
                    continue  # no static LDS: nothing of it to place
                reach = _reachable(sym.value, self._scan, self._functions)
                units = set()
                for low in reach:
                    try:
                        frames = self.index.frames_at(low)
                    except AspaceError:
                        continue
                    if frames:
                        units.add(frames[-1].cu_offset)
                self._kernels.append((kernel, reach, units))
        return self._kernels

    def _solve(self, kernel, reach) -> dict[int, LdsPlacement]:
        if kernel.name not in self._solved:
            if self._undefined is None:
                self._undefined = _undefined_symbols(self.code_object)
            try:
                self._solved[kernel.name] = _solve_kernel(self.index, kernel, reach, self._scan, self._undefined,
                                                          self.read_source, list(self._functions))
            except AspaceError:
                self._solved[kernel.name] = {}
        return self._solved[kernel.name]


def solve_layout(code_object, index, read_source: Callable[[str], str | None] | None = None) -> LdsLayout:
    """The LDS layout of a code object's kernels, solved as variables are asked for."""
    return LdsLayout(code_object, index, read_source)


def _reachable(entry: int, scan, functions) -> list[int]:
    """Entries of the functions a kernel calls, directly or not (calls through a register are not
    followed: their callees' variables then only lack a constraint, which proves less, never wrong)."""
    seen, todo = [], [entry]
    while todo:
        low = todo.pop()
        if low in seen:
            continue
        seen.append(low)
        result = scan(low)
        if result is not None:
            todo.extend(t for t in result.calls if t in functions)
    return seen


_SYM64 = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                   ("size", "<u8")])


def _undefined_symbols(code_object) -> set[str]:
    """Names of the ELF's undefined symbols (section index 0)."""
    out: set[str] = set()
    data = code_object.data
    for section in code_object.elf.iter_sections():
        if section["sh_type"] not in ("SHT_SYMTAB", "SHT_DYNSYM") or section["sh_entsize"] != _SYM64.itemsize:
            continue
        offset, size = section["sh_offset"], section["sh_size"]
        if offset + size > len(data):
            continue  # a malformed table only loses this evidence
        table = np.frombuffer(data, _SYM64, size // _SYM64.itemsize, offset)
        strtab = code_object.elf.get_section(section["sh_link"])
        strings = bytes(data[strtab["sh_offset"]:strtab["sh_offset"] + strtab["sh_size"]])
        for name_off in table["name"][(table["shndx"] == 0) & (table["name"] != 0)].tolist():
            end = strings.find(b"\0", name_off)
            if 0 <= name_off < len(strings):
                out.add(strings[name_off:end if end >= 0 else len(strings)].decode("utf-8", "replace"))
    return out


def _names_undefined_symbol(var, function_linkage: str | None, undefined: set[str]) -> bool:
    """Whether the variable's own symbol is among the code object's undefined ones: a
    function-scope static `f::v` is `_ZZ<f>E<len>v`, a namespace-scope one ends `<len>vE`,
    a plain global is its name."""
    name = var.name or ""
    if not name:
        return False
    if name in undefined:
        return True
    tail = f"{len(name)}{name}"
    if function_linkage and function_linkage.startswith("_Z"):
        prefix = "_ZZ" + function_linkage[2:] + "E" + tail
        if any(u == prefix or u.startswith(prefix + "_") for u in undefined):
            return True
    return any(u.startswith("_ZN") and u.endswith(tail + "E") for u in undefined)


def _lds_variables_of(index, functions, undefined, variables, placeholders) -> None:
    """The LDS variables of some functions (entry addresses) and of their units' file scope."""
    cus = set()
    for low in functions:
        frames = index.frames_at(low)
        if not frames:
            continue
        info = frames[-1]
        cus.add(info.cu_offset)
        for var in index.function_variables(info):
            _consider(var, info, index, variables, placeholders, undefined)
    for cu in cus:
        for var in index.globals(cu):
            _consider(var, None, index, variables, placeholders, undefined)


def _solve_kernel(index, kernel, reach, scan, undefined, read_source, everything):
    # the LDS variables of every function the kernel reaches, and the file-scope ones
    variables: dict[int, _Var] = {}
    placeholders: dict[int, str] = {}
    _lds_variables_of(index, reach, undefined, variables, placeholders)
    if not variables:
        return {}
    # fixed addresses that overlap another variable are placeholders too; when part of the call
    # graph is unknown (a call through a register, code the decoder cannot walk), any function of
    # the code object may share the kernel's LDS, so all of theirs are compared
    suspects = dict(variables)
    if any(scan(low) is None or scan(low).unknown_calls for low in reach):
        _lds_variables_of(index, everything, undefined, suspects, {})
    outside: dict[int, LdsPlacement] = {}
    for die, v in suspects.items():
        if v.fixed is None:
            continue
        for other_die, o in suspects.items():
            if other_die != die and o.fixed is not None and o.fixed < v.fixed + v.size and v.fixed < o.fixed + o.size:
                why = f"its recorded LDS address 0x{v.fixed:x} overlaps {o.info.name}"
                if die in variables:
                    placeholders.setdefault(die, why)
                else:  # a function this kernel may call through a register: not solved here
                    outside[die] = LdsPlacement(None, f"{why}; the kernel's calls are not all known")
                break
    for die in placeholders:
        variables[die].fixed = None
    if not placeholders:
        return outside
    # evidence from the ISA
    sources: dict[str, list[str] | None] = {}
    evidence: list[_Evidence] = []
    for low in reach:
        result = scan(low)
        if result is None:
            continue
        for access in result.accesses:
            evidence.append(_attribute(access, index, variables, read_source, sources))
    limit = kernel.group_segment_fixed_size
    solved = _search(variables, evidence, limit)
    out = {}
    for die in placeholders:
        v = variables[die]
        values = solved.get(die) if solved is not None else None
        if values is not None and len(values) == 1:
            (offset,) = values
            seen = sorted({e.line for e in evidence if die in e.candidates and e.line})
            if seen:
                why = f"the kernel's ISA addresses it at LDS 0x{offset:x} (line {', '.join(map(str, seen))})"
            else:
                why = f"the kernel's other LDS accesses and its {limit} bytes of LDS leave only 0x{offset:x}"
            out[die] = LdsPlacement(offset, why)
        else:
            why = "the kernel's ISA does not pin its LDS offset down"
            if solved is None:
                why = "the kernel's ISA and LDS size admit no consistent layout"
            unread = sorted(f for f, text in sources.items() if text is None)
            if unread and any(len(e.candidates) > 1 and die in e.candidates for e in evidence):
                # several arrays are in scope where it is accessed: the source line would say which
                why += f" (the source, {unread[0]}, would tell which array each access is: not found)"
            out[die] = LdsPlacement(None, f"{placeholders[die]}; {why}")
    return {**outside, **out}


def _consider(var, info, index, variables, placeholders, undefined):
    if var.die_offset in variables or var.type is None:
        return
    zero_placeholder = is_bare_zero(var)
    addr, is_lds = static_lds_address(var, index)
    if zero_placeholder and not (is_lds or var.memory_space == 3):
        return  # not known to be LDS: the session shows it unavailable on its own
    if not is_lds and not zero_placeholder:
        return
    size = byte_size(var.type) or 0
    if size <= 0:
        return  # dynamic (extern) LDS: sits past the fixed size
    linkage = info.linkage_name if info is not None else None
    variables[var.die_offset] = _Var(var, size, _alignment(var.type), addr)
    if zero_placeholder:
        placeholders[var.die_offset] = "the compiler gave it the placeholder location DW_OP_constu 0"
    elif addr == 0 and _names_undefined_symbol(var, linkage, undefined):
        placeholders[var.die_offset] = (f"the code object gives {var.name} LDS address 0 through an undefined "
                                        f"symbol (the LDS lowering pass dropped it)")


def _attribute(access: LdsAccess, index, variables, read_source, sources) -> _Evidence:
    line = None
    names_on_line: set[str] | None = None
    try:
        info = index.line_for_pc(access.pc)
    except AspaceError:
        info = None
    if info is not None and info.file and info.line:
        line = info.line
        if read_source is not None:
            if info.file not in sources:
                try:
                    text = read_source(info.file)
                except OSError:
                    text = None
                sources[info.file] = text.splitlines() if text else None
            lines = sources[info.file]
            if lines is not None and 0 < info.line <= len(lines):
                names_on_line = set(_IDENT.findall(lines[info.line - 1]))
    visible = set()
    try:
        for frame in index.frames_at(access.pc):
            visible.update(v.die_offset for v in index.variables(frame, access.pc))
            visible.update(v.die_offset for v in index.globals(frame.cu_offset))
    except AspaceError:
        pass
    candidates = [d for d in variables if d in visible]
    if names_on_line is not None:
        named = [d for d in candidates if variables[d].info.name in names_on_line]
        if named:
            candidates = named
    return _Evidence(access, candidates, line)


def _search(variables: dict[int, _Var], evidence: list[_Evidence], limit: int) -> dict[int, set[int]] | None:
    """{die: offsets it takes in some consistent layout}; None when no layout fits."""
    order = list(variables)
    domains: dict[int, list[int]] = {}
    for die, v in variables.items():
        if v.fixed is not None:
            domains[die] = [v.fixed]
            continue
        lo, hi = 0, limit - v.size
        for e in evidence:
            if e.candidates == [die]:  # only this variable can be meant
                lo, hi = _narrow(lo, hi, e.access, v.size)
        first = -(-lo // v.align) * v.align
        domains[die] = list(range(first, hi + 1, v.align)) if hi >= first else []
    order.sort(key=lambda d: len(domains[d]))
    seen: dict[int, set[int]] = {d: set() for d in order}
    chosen: dict[int, int] = {}
    budget = [SEARCH_BUDGET]
    shared = [e for e in evidence if len(e.candidates) > 1 or not e.candidates]

    def consistent_leaf() -> bool:
        for e in shared:
            if not e.candidates:
                continue  # an address the DWARF names no variable for tells nothing
            if not any(_fits(e.access, chosen[d], variables[d].size) for d in e.candidates):
                return False
        return True

    def place(k: int) -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            raise _OutOfBudget
        if k == len(order):
            if consistent_leaf():
                for d, off in chosen.items():
                    seen[d].add(off)
                return True
            return False
        die = order[k]
        size = variables[die].size
        found = False
        for off in domains[die]:
            if all(off + size <= chosen[o] or chosen[o] + variables[o].size <= off for o in chosen):
                chosen[die] = off
                found |= place(k + 1)
                del chosen[die]
        return found

    try:
        if not place(0):
            return None
    except _OutOfBudget:
        return {d: {-1, -2} for d in order}  # too many layouts to tell: nothing is proven
    return seen


def _fits(access: LdsAccess, start: int, size: int) -> bool:
    """Whether a variable at [start, start + size) agrees with one constant of its accesses."""
    if access.kind == "pointer":
        return start <= access.offset <= start + size
    if access.kind == "address":
        return start <= access.offset < start + size
    return access.offset < start + size  # "at least": the address register adds a non-negative index


def _narrow(lo: int, hi: int, access: LdsAccess, size: int) -> tuple[int, int]:
    """The start offsets in [lo, hi] a variable of `size` bytes may have, given one access."""
    if access.kind == "pointer":
        return max(lo, access.offset - size), min(hi, access.offset)
    if access.kind == "address":
        return max(lo, access.offset - size + 1), min(hi, access.offset)
    return max(lo, access.offset - size + 1), hi


class _OutOfBudget(Exception):
    pass
