"""Call frame information: from a PC to the rules that recover the caller's registers.

`CallFrameInfo` reads .debug_frame and .eh_frame (32- and 64-bit DWARF, CIE
versions 1, 3 and 4, "z" augmentations, the AMDGPU "[amd:vX.Y]" tag and the
DW_CFA_LLVM_def_aspace_cfa extensions). Opening reads nothing; the first query
indexes the FDE address ranges, and each query runs only one CIE's and one FDE's
instructions up to the PC. `unwind` applies a row's rules to one frame's
registers and memory and gives the caller's registers, the return address
column holding the caller's PC.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..errors import CodeObjectError, DecodeError, UnavailableError
from .ops import decode
from .reader import ByteReader, raw_e_machine, section_bytes
from .target import Dialect

__all__ = [
    "CallFrameInfo", "FrameRules", "CfaRule", "RegRule", "UnwoundFrame", "unwind", "unwind_frame",
    "UNDEFINED", "SAME_VALUE", "AMDGPU_ASPACE_NAMES",
]

EM_AMDGPU = 224

# AMDGPU DW_ASPACE_* numbers (heterogeneous-debugging numbering).
AMDGPU_ASPACE_NAMES = {0: "global", 1: "generic", 2: "region", 3: "local", 5: "private_lane", 6: "private_wave"}
AMDGPU_ASPACE_NAMES.update({0x20 + lane: f"private_lane{lane}" for lane in range(64)})

# DW_CFA_* primary opcodes (high two bits) and extended opcodes.
CFA_ADVANCE_LOC = 0x40
CFA_OFFSET = 0x80
CFA_RESTORE = 0xC0
CFA_NOP = 0x00
CFA_SET_LOC = 0x01
CFA_ADVANCE_LOC1 = 0x02
CFA_ADVANCE_LOC2 = 0x03
CFA_ADVANCE_LOC4 = 0x04
CFA_OFFSET_EXTENDED = 0x05
CFA_RESTORE_EXTENDED = 0x06
CFA_UNDEFINED = 0x07
CFA_SAME_VALUE = 0x08
CFA_REGISTER = 0x09
CFA_REMEMBER_STATE = 0x0A
CFA_RESTORE_STATE = 0x0B
CFA_DEF_CFA = 0x0C
CFA_DEF_CFA_REGISTER = 0x0D
CFA_DEF_CFA_OFFSET = 0x0E
CFA_DEF_CFA_EXPRESSION = 0x0F
CFA_EXPRESSION = 0x10
CFA_OFFSET_EXTENDED_SF = 0x11
CFA_DEF_CFA_SF = 0x12
CFA_DEF_CFA_OFFSET_SF = 0x13
CFA_VAL_OFFSET = 0x14
CFA_VAL_OFFSET_SF = 0x15
CFA_VAL_EXPRESSION = 0x16
CFA_GNU_ARGS_SIZE = 0x2E
CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2F
CFA_LLVM_DEF_ASPACE_CFA = 0x30
CFA_LLVM_DEF_ASPACE_CFA_SF = 0x31

# DW_EH_PE_* pointer encodings (.eh_frame and "z" augmentations).
EH_PE_OMIT = 0xFF
EH_PE_PCREL = 0x10
EH_PE_INDIRECT = 0x80

# Hostile input must not make us loop or nest for ever.
MAX_STATE_STACK = 1024


# --- rules -----------------------------------------------------------------------


@dataclass(frozen=True)
class CfaRule:
    """How to compute the CFA: register + offset (in `address_space` when a
    DW_CFA_LLVM_def_aspace_cfa gave one), or a DWARF expression; neither = no CFA."""

    register: int | None = None
    offset: int = 0
    address_space: int | None = None  # DW_ASPACE number; None = the target's default
    expression: bytes | None = None

    @property
    def defined(self) -> bool:
        return self.register is not None or self.expression is not None


@dataclass(frozen=True)
class RegRule:
    """One column's rule. kind: "undefined", "same_value", "offset" (saved at
    CFA+operand), "val_offset" (value is CFA+operand), "register" (in register
    operand), "expression", "val_expression" (`expression` holds the bytes)."""

    kind: str
    operand: int = 0
    expression: bytes = b""


UNDEFINED = RegRule("undefined")
SAME_VALUE = RegRule("same_value")


@dataclass
class FrameRules:
    """The CFI row in force at one PC."""

    cfa: CfaRule
    registers: dict[int, RegRule]
    return_address_register: int
    default_rule: RegRule = UNDEFINED  # rule of columns the CFI never mentions
    address_size: int = 8
    e_machine: int | None = None
    fde_range: tuple[int, int] = (0, 0)  # [start, end) of the FDE
    row_range: tuple[int, int] = (0, 0)  # [start, end) of the row's PCs

    def rule_for(self, regno: int) -> RegRule:
        rule = self.registers.get(regno)
        if rule is not None:
            return rule
        # A return address that is the "same value" makes the frame its own
        # caller; without an explicit rule the caller's PC is simply unknown.
        if regno == self.return_address_register:
            return UNDEFINED
        return self.default_rule


# --- parsing -----------------------------------------------------------------------


@dataclass
class _Section:
    name: str
    data: bytes
    address: int  # sh_addr, for pc-relative .eh_frame pointers
    is_eh: bool


@dataclass
class _Cie:
    version: int
    augmentation: bytes
    address_size: int
    segment_size: int
    code_align: int
    data_align: int
    return_address_register: int
    fde_encoding: int
    fde_has_augmentation_data: bool
    instructions: tuple[int, int]  # [start, end) in the section


@dataclass(order=True)
class _Fde:
    start: int
    end: int
    instructions: tuple[int, int] = field(compare=False)
    cie: _Cie = field(compare=False)
    section: _Section = field(compare=False)


class CallFrameInfo:
    def __init__(self, elf, dialect_address_size: int = 8, *, e_machine: int | None = None):
        self._elf = elf
        self.address_size = dialect_address_size  # for CIE versions 1 and 3, which do not record it
        self.e_machine = e_machine if e_machine is not None else raw_e_machine(elf)
        self._fdes: list[_Fde] | None = None
        self._starts: list[int] = []
        self._cies: dict[tuple[str, int], _Cie] = {}

    # -- queries --------------------------------------------------------------------

    def rules_at(self, pc: int) -> FrameRules | None:
        """The CFI row for an ELF address, or None when no FDE covers it."""
        fde = self._fde_for(pc)
        if fde is None:
            return None
        return self._run(fde, pc)

    def fde_ranges(self) -> list[tuple[int, int]]:
        """[start, end) of every FDE, sorted."""
        self._index()
        return [(f.start, f.end) for f in self._fdes]

    def _fde_for(self, pc: int) -> _Fde | None:
        self._index()
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and pc < self._fdes[i].end:
            return self._fdes[i]
        return None

    # -- indexing -------------------------------------------------------------------

    def _index(self) -> None:
        if self._fdes is not None:
            return
        fdes: list[_Fde] = []
        for name, is_eh in ((".debug_frame", False), (".eh_frame", True)):
            sec = self._section(name, is_eh)
            if sec is not None:
                fdes.extend(self._scan(sec))
        fdes.sort()
        self._fdes = fdes
        self._starts = [f.start for f in fdes]

    def _section(self, name: str, is_eh: bool) -> _Section | None:
        data = section_bytes(self._elf, name)
        if not data:
            return None
        sec = self._elf.get_section_by_name(name)
        return _Section(name, data, int(sec["sh_addr"]), is_eh)

    def _scan(self, sec: _Section) -> list[_Fde]:
        out = []
        data = sec.data
        pos = 0
        while pos < len(data):
            r = ByteReader(data, pos, sec.name)
            length, offset_size = r.initial_length()
            if length == 0:
                if sec.is_eh:  # the .eh_frame terminator
                    break
                pos = r.pos
                continue
            end = r.pos + length
            if end > len(data):
                raise CodeObjectError(f"{sec.name}: entry at {pos:#x} runs past the section end")
            id_pos = r.pos
            cie_id = r.offset(offset_size)
            if self._is_cie_id(cie_id, offset_size, sec.is_eh):
                self._cie(sec, pos)  # validate every CIE, even unused ones
            else:
                cie_offset = id_pos - cie_id if sec.is_eh else cie_id
                out.append(self._fde(sec, r, end, self._cie(sec, cie_offset)))
            pos = end
        return out

    @staticmethod
    def _is_cie_id(value: int, offset_size: int, is_eh: bool) -> bool:
        if is_eh:
            return value == 0
        return value == (0xFFFFFFFF if offset_size == 4 else 0xFFFFFFFFFFFFFFFF)

    def _cie(self, sec: _Section, offset: int) -> _Cie:
        key = (sec.name, offset)
        cie = self._cies.get(key)
        if cie is None:
            cie = self._cies[key] = self._parse_cie(sec, offset)
        return cie

    def _parse_cie(self, sec: _Section, offset: int) -> _Cie:
        if not 0 <= offset < len(sec.data):
            raise CodeObjectError(f"{sec.name}: CIE pointer {offset:#x} outside the section")
        r = ByteReader(sec.data, offset, sec.name)
        length, offset_size = r.initial_length()
        end = r.pos + length
        if length == 0 or end > len(sec.data):
            raise CodeObjectError(f"{sec.name}: truncated CIE at {offset:#x}")
        # Everything below reads inside the CIE's own bytes.
        r = ByteReader(sec.data[:end], r.pos, sec.name)
        if not self._is_cie_id(r.offset(offset_size), offset_size, sec.is_eh):
            raise CodeObjectError(f"{sec.name}: entry at {offset:#x} is not a CIE")
        version = r.u8()
        if version not in (1, 3, 4):
            raise CodeObjectError(f"{sec.name}: unsupported CIE version {version} at {offset:#x}")
        augmentation = r.cstr()
        address_size, segment_size = self.address_size, 0
        if version >= 4:
            address_size, segment_size = r.u8(), r.u8()
            if address_size not in (2, 4, 8):
                raise CodeObjectError(f"{sec.name}: CIE at {offset:#x} has address size {address_size}")
        code_align = r.uleb()
        data_align = r.sleb()
        ra = r.u8() if version == 1 else r.uleb()
        fde_encoding, has_aug_data = 0, False
        if augmentation.startswith(b"z"):
            has_aug_data = True
            aug_len = r.uleb()
            aug_end = r.pos + aug_len
            if aug_end > end:
                raise CodeObjectError(f"{sec.name}: CIE at {offset:#x} augmentation data runs past the entry")
            for letter in augmentation[1:].decode("latin-1"):
                if letter == "R":
                    fde_encoding = r.u8()
                elif letter == "P":
                    self._read_pointer(r, sec, r.u8(), address_size)
                elif letter == "L":
                    r.u8()
                elif letter in "SBG":  # signal frame, AArch64 BTI / MTE: no data
                    continue
                else:
                    break  # the length lets us skip what we do not know
            r.pos = aug_end
        elif augmentation and not (augmentation.startswith(b"[") and augmentation.endswith(b"]")):
            # Only "" and vendor version tags such as "[amd:v0.0]" carry no data we must skip.
            raise CodeObjectError(f"{sec.name}: unsupported CIE augmentation {augmentation!r} at {offset:#x}")
        return _Cie(version, augmentation, address_size, segment_size, code_align, data_align, ra,
                    fde_encoding, has_aug_data, (r.pos, end))

    def _fde(self, sec: _Section, r: ByteReader, end: int, cie: _Cie) -> _Fde:
        r = ByteReader(sec.data[:end], r.pos, sec.name)
        if sec.is_eh:
            start = self._read_pointer(r, sec, cie.fde_encoding, cie.address_size)
            size = self._read_pointer(r, sec, cie.fde_encoding & 0x0F, cie.address_size)
        else:
            r.uint(cie.segment_size)
            start = r.uint(cie.address_size)
            size = r.uint(cie.address_size)
        if cie.fde_has_augmentation_data:
            skip = r.uleb()
            r.bytes(skip)
        return _Fde(start, start + size, (r.pos, end), cie, sec)

    @staticmethod
    def _read_pointer(r: ByteReader, sec: _Section, encoding: int, address_size: int) -> int:
        if encoding == EH_PE_OMIT:
            return 0
        field_address = sec.address + r.pos
        fmt = encoding & 0x0F
        if fmt == 0x00:
            value = r.uint(address_size)
        elif fmt == 0x01:
            value = r.uleb()
        elif fmt in (0x02, 0x03, 0x04):
            value = r.uint(1 << (fmt - 1))
        elif fmt == 0x09:
            value = r.sleb()
        elif fmt in (0x0A, 0x0B, 0x0C):
            value = r.sint(1 << (fmt - 9))
        else:
            raise CodeObjectError(f"{sec.name}: unknown pointer encoding {encoding:#x}")
        application = encoding & 0x70
        if encoding & EH_PE_INDIRECT or application not in (0, EH_PE_PCREL):
            raise CodeObjectError(f"{sec.name}: unsupported pointer encoding {encoding:#x}")
        if application == EH_PE_PCREL:
            value += field_address
        return value & ((1 << (8 * address_size)) - 1) if address_size else value

    # -- running the instructions ---------------------------------------------------

    def _run(self, fde: _Fde, pc: int) -> FrameRules:
        cie = fde.cie
        machine = _Machine(fde, self)
        machine.execute(cie.instructions, stop_pc=None)
        machine.initial = dict(machine.registers)
        machine.execute(fde.instructions, stop_pc=pc)
        default = SAME_VALUE if self.e_machine == EM_AMDGPU else UNDEFINED
        return FrameRules(
            cfa=machine.cfa, registers=dict(machine.registers),
            return_address_register=cie.return_address_register, default_rule=default,
            address_size=cie.address_size, e_machine=self.e_machine,
            fde_range=(fde.start, fde.end), row_range=(machine.row_start, machine.row_end),
        )


class _Machine:
    """The state of one CFA program run: current location, CFA and register rules."""

    def __init__(self, fde: _Fde, info: CallFrameInfo):
        self.fde = fde
        self.info = info
        self.location = fde.start
        self.row_start = fde.start
        self.row_end = fde.end
        self.cfa = CfaRule()
        self.registers: dict[int, RegRule] = {}
        self.initial: dict[int, RegRule] = {}
        self.stack: list[tuple[CfaRule, dict[int, RegRule]]] = []
        self.done = False

    def _advance(self, new_location: int, stop_pc: int | None) -> None:
        if stop_pc is not None and new_location > stop_pc:
            self.row_end = min(new_location, self.fde.end)
            self.done = True
            return
        self.location = self.row_start = new_location

    def execute(self, span: tuple[int, int], stop_pc: int | None) -> None:
        sec = self.fde.section
        cie = self.fde.cie
        start, end = span
        r = ByteReader(sec.data[:end], start, sec.name)
        ca, da = cie.code_align, cie.data_align
        while r.pos < end and not self.done:
            at = r.pos
            op = r.u8()
            high, low = op & 0xC0, op & 0x3F
            if high == CFA_ADVANCE_LOC:
                self._advance(self.location + low * ca, stop_pc)
            elif high == CFA_OFFSET:
                self.registers[low] = RegRule("offset", r.uleb() * da)
            elif high == CFA_RESTORE:
                self._restore(low)
            elif op == CFA_NOP or op == CFA_GNU_ARGS_SIZE:
                if op == CFA_GNU_ARGS_SIZE:
                    r.uleb()
            elif op == CFA_SET_LOC:
                if sec.is_eh:
                    target = CallFrameInfo._read_pointer(r, sec, cie.fde_encoding, cie.address_size)
                else:
                    target = r.uint(cie.address_size)
                self._advance(target, stop_pc)
            elif op in (CFA_ADVANCE_LOC1, CFA_ADVANCE_LOC2, CFA_ADVANCE_LOC4):
                delta = r.uint({CFA_ADVANCE_LOC1: 1, CFA_ADVANCE_LOC2: 2, CFA_ADVANCE_LOC4: 4}[op])
                self._advance(self.location + delta * ca, stop_pc)
            elif op == CFA_OFFSET_EXTENDED:
                reg = r.uleb()
                self.registers[reg] = RegRule("offset", r.uleb() * da)
            elif op == CFA_OFFSET_EXTENDED_SF:
                reg = r.uleb()
                self.registers[reg] = RegRule("offset", r.sleb() * da)
            elif op == CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
                reg = r.uleb()
                self.registers[reg] = RegRule("offset", -r.uleb() * da)
            elif op == CFA_RESTORE_EXTENDED:
                self._restore(r.uleb())
            elif op == CFA_UNDEFINED:
                self.registers[r.uleb()] = UNDEFINED
            elif op == CFA_SAME_VALUE:
                self.registers[r.uleb()] = SAME_VALUE
            elif op == CFA_REGISTER:
                reg = r.uleb()
                self.registers[reg] = RegRule("register", r.uleb())
            elif op == CFA_REMEMBER_STATE:
                if len(self.stack) >= MAX_STATE_STACK:
                    raise CodeObjectError(f"{sec.name}: DW_CFA_remember_state nested too deeply at {at:#x}")
                self.stack.append((self.cfa, dict(self.registers)))
            elif op == CFA_RESTORE_STATE:
                if not self.stack:
                    raise CodeObjectError(f"{sec.name}: DW_CFA_restore_state without remember_state at {at:#x}")
                self.cfa, self.registers = self.stack.pop()
            elif op == CFA_DEF_CFA:
                reg = r.uleb()
                self.cfa = CfaRule(reg, r.uleb())
            elif op == CFA_DEF_CFA_SF:
                reg = r.uleb()
                self.cfa = CfaRule(reg, r.sleb() * da)
            elif op == CFA_LLVM_DEF_ASPACE_CFA:
                reg, offset = r.uleb(), r.uleb()
                self.cfa = CfaRule(reg, offset, r.uleb())
            elif op == CFA_LLVM_DEF_ASPACE_CFA_SF:
                reg, offset = r.uleb(), r.sleb() * da
                self.cfa = CfaRule(reg, offset, r.uleb())
            elif op == CFA_DEF_CFA_REGISTER:
                self._require_register_cfa(op, at)
                self.cfa = CfaRule(r.uleb(), self.cfa.offset, self.cfa.address_space)
            elif op in (CFA_DEF_CFA_OFFSET, CFA_DEF_CFA_OFFSET_SF):
                self._require_register_cfa(op, at)
                offset = r.uleb() if op == CFA_DEF_CFA_OFFSET else r.sleb() * da
                self.cfa = CfaRule(self.cfa.register, offset, self.cfa.address_space)
            elif op == CFA_DEF_CFA_EXPRESSION:
                self.cfa = CfaRule(expression=r.bytes(r.uleb()))
            elif op in (CFA_EXPRESSION, CFA_VAL_EXPRESSION):
                reg = r.uleb()
                kind = "expression" if op == CFA_EXPRESSION else "val_expression"
                self.registers[reg] = RegRule(kind, 0, r.bytes(r.uleb()))
            elif op == CFA_VAL_OFFSET:
                reg = r.uleb()
                self.registers[reg] = RegRule("val_offset", r.uleb() * da)
            elif op == CFA_VAL_OFFSET_SF:
                reg = r.uleb()
                self.registers[reg] = RegRule("val_offset", r.sleb() * da)
            else:
                raise CodeObjectError(f"{sec.name}: unknown call frame instruction {op:#x} at {at:#x}")

    def _restore(self, reg: int) -> None:
        rule = self.initial.get(reg)
        if rule is None:
            self.registers.pop(reg, None)
        else:
            self.registers[reg] = rule

    def _require_register_cfa(self, op: int, at: int) -> None:
        if self.cfa.expression is not None:
            raise CodeObjectError(
                f"{self.fde.section.name}: call frame instruction {op:#x} at {at:#x} "
                "changes a CFA defined by an expression")
        if self.cfa.register is None:
            raise CodeObjectError(
                f"{self.fde.section.name}: call frame instruction {op:#x} at {at:#x} before any CFA rule")


# --- unwinding ----------------------------------------------------------------------


@dataclass
class UnwoundFrame:
    cfa: int | None
    cfa_space: str | None  # address-space name of the CFA ("private_wave", "global", ...)
    registers: dict[int, int | None]  # the caller's values; None = unknown
    caller_pc: int | None


ReadRegister = Callable[[int], "int | None"]
ReadMemory = Callable[[str, int, int], "bytes | None"]
EvaluateExpr = Callable[[bytes, "int | None"], "int | None"]

_ADDRESS_MASK = (1 << 64) - 1


def unwind(rules: FrameRules, read_register: ReadRegister, read_memory: ReadMemory,
           evaluate_expr: EvaluateExpr | None = None, *, cfa_space_for_register=None,
           register_size: Callable[[int], int] | None = None, aspace_names=None,
           registers: Iterable[int] = ()) -> dict[int, int | None]:
    """The caller's register values; see `unwind_frame`."""
    return unwind_frame(rules, read_register, read_memory, evaluate_expr,
                        cfa_space_for_register=cfa_space_for_register, register_size=register_size,
                        aspace_names=aspace_names, registers=registers).registers


def unwind_frame(rules: FrameRules, read_register: ReadRegister, read_memory: ReadMemory,
                 evaluate_expr: EvaluateExpr | None = None, *, cfa_space_for_register=None,
                 register_size: Callable[[int], int] | None = None, aspace_names=None,
                 registers: Iterable[int] = ()) -> UnwoundFrame:
    """Apply one CFI row to the current frame.

    read_register(regno) gives the frame's full register value (a vector
    register as its whole-wave value, lane 0 in the low 32 bits);
    read_memory(space, address, size) reads bytes. evaluate_expr(expr, cfa)
    evaluates a DWARF expression with the CFA (if not None) pushed first and
    returns the resulting value or memory address: the CFA for a CFA
    expression, the register's value for val_expression, and for expression
    rules the address its saved value is read from (rules that name only
    register pieces, as AMDGPU's saved SGPR pairs and VGPR lanes do, are read
    here without it). Any of them may return None or raise UnavailableError.

    cfa_space_for_register(regno) names the CFA's address space when the rule
    gives none (default: "private_wave" on AMDGPU, whose stack pointer SGPR32
    holds a wave-scaled scratch offset; "global" elsewhere); aspace_names maps
    DW_ASPACE numbers to names (default: AMDGPU's). The result covers every
    register with an explicit rule, the return-address column (the caller's
    PC) and the extra `registers` asked for (which follow the default rule,
    except in a row with no CFA rule, where they are unknown).
    """
    amdgpu = rules.e_machine == EM_AMDGPU
    size_of = register_size or (lambda regno: _default_register_size(rules, regno))
    names = aspace_names if aspace_names is not None else (AMDGPU_ASPACE_NAMES if amdgpu else {0: "global"})
    space_name = names.get if isinstance(names, dict) else names

    cfa, cfa_space = _compute_cfa(rules, read_register, evaluate_expr, cfa_space_for_register, space_name)

    out: dict[int, int | None] = {}
    wanted = list(rules.registers) + [rules.return_address_register] + list(registers)
    for regno in wanted:
        if regno in out:
            continue
        rule = rules.rule_for(regno)
        if regno not in rules.registers and not rules.cfa.defined:
            # A row without a CFA describes no frame (upstream LLVM's AMDGPU FDEs
            # are empty): the ABI default cannot be trusted for a body that may
            # have clobbered the register.
            rule = UNDEFINED
        out[regno] = _apply(rule, regno, cfa, cfa_space, size_of(regno), rules,
                            read_register, read_memory, evaluate_expr)
    return UnwoundFrame(cfa, cfa_space, out, out.get(rules.return_address_register))


def _default_register_size(rules: FrameRules, regno: int) -> int:
    if regno == rules.return_address_register:
        return rules.address_size
    if rules.e_machine != EM_AMDGPU:
        return rules.address_size
    if regno == 17:  # EXEC, wave64
        return 8
    if 1536 <= regno < 1792 or 2048 <= regno < 2304:  # wave32 VGPR / AGPR
        return 4 * 32
    if 2560 <= regno < 2816 or 3072 <= regno < 3328:  # wave64 VGPR / AGPR
        return 4 * 64
    return 4


def _safe(fn, *args):
    try:
        return fn(*args)
    except UnavailableError:
        return None


def _compute_cfa(rules, read_register, evaluate_expr, cfa_space_for_register, space_name):
    rule = rules.cfa
    default_space = "private_wave" if rules.e_machine == EM_AMDGPU else "global"
    if rule.expression is not None:
        aspace = _trailing_aspace(rule.expression, rules)
        space = space_name(aspace) if aspace is not None else default_space
        value = _safe(evaluate_expr, rule.expression, None) if evaluate_expr else None
        return value, space
    if rule.register is None:
        return None, None
    if rule.address_space is not None:
        space = space_name(rule.address_space)
    elif cfa_space_for_register is not None:
        space = cfa_space_for_register(rule.register)
    else:
        space = default_space
    base = _safe(read_register, rule.register)
    if base is None:
        return None, space
    return (base + rule.offset) & _ADDRESS_MASK, space


def _trailing_aspace(expr: bytes, rules: FrameRules) -> int | None:
    """The space of a CFA expression ending in `<constant>; DW_OP_LLVM_form_aspace_address`."""
    try:
        ops = decode(expr, _dialect(rules))
    except DecodeError:
        return None
    if len(ops) >= 2 and ops[-1].name == "DW_OP_LLVM_form_aspace_address":
        prev = ops[-2]
        if prev.name.startswith("DW_OP_lit"):
            return int(prev.name[len("DW_OP_lit"):])
        if prev.name in ("DW_OP_constu", "DW_OP_const1u", "DW_OP_const2u", "DW_OP_const4u"):
            return prev.operands[0]
    return None


def _dialect(rules: FrameRules) -> Dialect:
    vendor = "amd" if rules.e_machine == EM_AMDGPU else "gnu"
    return Dialect(vendor_ops=vendor, heterogeneous=rules.e_machine == EM_AMDGPU, address_size=rules.address_size)


def _apply(rule, regno, cfa, cfa_space, size, rules, read_register, read_memory, evaluate_expr):
    kind = rule.kind
    if kind == "undefined":
        return None
    if kind == "same_value":
        return _safe(read_register, regno)
    if kind == "register":
        return _safe(read_register, rule.operand)
    if kind == "val_offset":
        return None if cfa is None else (cfa + rule.operand) & _ADDRESS_MASK
    if kind == "offset":
        if cfa is None or cfa_space is None:
            return None
        return _read_value(read_memory, cfa_space, (cfa + rule.operand) & _ADDRESS_MASK, size)
    if kind == "val_expression":
        return _safe(evaluate_expr, rule.expression, cfa) if evaluate_expr else None
    if kind == "expression":
        pieces = _register_pieces(rule.expression, rules, size)
        if pieces is not None:
            return _read_pieces(pieces, read_register)
        if evaluate_expr is None or cfa_space is None:
            return None
        address = _safe(evaluate_expr, rule.expression, cfa)
        if address is None:
            return None
        return _read_value(read_memory, cfa_space, address & _ADDRESS_MASK, size)
    raise CodeObjectError(f"unknown register rule {kind!r}")


def _read_value(read_memory, space, address, size):
    data = _safe(read_memory, space, address, size)
    if data is None or len(data) < size:
        return None
    return int.from_bytes(bytes(data[:size]), "little")


def _register_pieces(expr: bytes, rules: FrameRules, size: int) -> list[tuple[int, int, int]] | None:
    """(register, bit offset, bit size) pieces, low first, when the expression
    only names register bits (DW_OP_reg*/regx, optional DW_OP_LLVM_offset_uconst,
    then piece/bit_piece); None when it needs the evaluator."""
    try:
        ops = decode(expr, _dialect(rules))
    except DecodeError:
        return None
    pieces: list[tuple[int, int, int]] = []
    reg: int | None = None
    byte_offset = 0
    for op in ops:
        name = op.name
        if reg is None:
            if name == "DW_OP_regx":
                reg = op.operands[0]
            elif name.startswith("DW_OP_reg") and name[len("DW_OP_reg"):].isdigit():
                reg = int(name[len("DW_OP_reg"):])
            else:
                return None
            byte_offset = 0
        elif name == "DW_OP_LLVM_offset_uconst":
            byte_offset += op.operands[0]
        elif name == "DW_OP_piece":
            pieces.append((reg, byte_offset * 8, op.operands[0] * 8))
            reg = None
        elif name == "DW_OP_bit_piece":
            pieces.append((reg, byte_offset * 8 + op.operands[1], op.operands[0]))
            reg = None
        else:
            return None
    if reg is not None:
        if pieces:
            return None  # a trailing register without a piece after pieces is malformed
        pieces.append((reg, byte_offset * 8, size * 8))
    return pieces or None


def _read_pieces(pieces, read_register) -> int | None:
    value = 0
    shift = 0
    for reg, bit_offset, bit_size in pieces:
        content = _safe(read_register, reg)
        if content is None:
            return None
        value |= ((content >> bit_offset) & ((1 << bit_size) - 1)) << shift
        shift += bit_size
    return value
