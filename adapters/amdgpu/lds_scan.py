"""Where a kernel addresses LDS, from its machine code.

A linear sweep over a function (instructions and operand fields decoded by
isa.py; boundaries checked against llvm-objdump on every committed code
object) follows the few scalar and vector moves that build LDS addresses from
constants:

- a generic (flat) pointer into LDS: the shared aperture's high dword (from
  `s_getreg_b32 hwreg(HW_REG_SH_MEM_BASES, 16, 16)` shifted left by 16, or the
  high half of `src_shared_base`) with a constant low dword, the LDS offset, as
  -O0 code builds for every `__shared__` access. It counts only where the pair
  is used as one 64-bit value: the constant added with carry into the aperture
  half (`v_add_co_u32` / `v_addc_co_u32`), or the register pair read as a flat
  address, a 64-bit move or a 64-bit add;
- a `ds_*` read or write: constant address VGPR plus the 16-bit offset, or,
  over an index register, the offset field alone (-O2 folds a base into it).

It also follows `s_getpc_b64` + `s_add_u32`/`s_addc_u32` + `s_swappc_b64` (and
`s_call_b64`) to the functions a function calls. Values are only trusted inside
straight-line code: every branch target, call and unmodelled write forgets what
it clobbers, so a reported constant is one the instructions really produce.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aspace_dap.errors import AspaceError

from . import isa

MAX_FUNCTION_BYTES = 1 << 22


class IsaError(AspaceError):
    """Machine code this decoder cannot walk."""


@dataclass(frozen=True)
class LdsAccess:
    """A constant in an LDS address. `kind` says what it proves about the variable v accessed:
    "pointer": v.start <= offset <= v.end (a generic pointer into v, or one past its end);
    "address": v.start <= offset < v.end (a DS access at exactly this address);
    "at least": offset < v.end (a DS instruction's offset field over an address register
    holding an index, as compilers fold a variable's base into that field)."""

    pc: int  # address of the instruction that completes the LDS address
    offset: int
    how: str  # "generic pointer" | the ds_* mnemonic
    kind: str = "pointer"


@dataclass
class FunctionScan:
    accesses: list[LdsAccess] = field(default_factory=list)
    calls: set[int] = field(default_factory=set)  # entry addresses of called functions
    unknown_calls: int = 0  # calls whose target is not a constant
    lengths: dict[int, int] = field(default_factory=dict)  # pc -> instruction bytes


def generation(processor: str) -> int:
    """9, 10 or 11 from a processor name (gfx90a -> 9, gfx1030 -> 10, gfx1100 -> 11)."""
    gen = isa.isa_generation(processor.lower())
    if gen is None:
        raise IsaError(f"no instruction decoder for AMDGPU processor {processor!r}")
    return gen


# DS reads and writes that address vaddr + a 16-bit byte offset (same numbers on GFX9-11)
_DS_PLAIN = {13: "ds_write_b32", 30: "ds_write_b8", 31: "ds_write_b16", 77: "ds_write_b64", 222: "ds_write_b96",
             223: "ds_write_b128", 54: "ds_read_b32", 57: "ds_read_i8", 58: "ds_read_u8", 59: "ds_read_i16",
             60: "ds_read_u16", 118: "ds_read_b64", 254: "ds_read_b96", 255: "ds_read_b128"}
_APERTURE_HI_RAW = ("aperture>>16",)  # s_getreg result before the shift
APERTURE_HI = ("aperture",)  # the shared aperture's high dword
_SHARED_BASE_LO = ("shared_base.lo",)


def _decode(code: bytes, start: int, gen: int) -> list[isa.Instruction]:
    """Every instruction of a function's code, or IsaError (a trailing partial dword is ignored)."""
    code = code[: len(code) - len(code) % 4]
    out, pos = [], 0
    while pos < len(code):
        ins = isa.decode(code, pos, gen)
        if ins is None:
            raise IsaError(f"cannot decode the GFX{gen} instruction at {start + pos:#x}")
        out.append(ins)
        pos += ins.size
    return out


def instruction_lengths(code: bytes, start: int, gen: int) -> dict[int, int]:
    """{address: length} of every instruction of `code` (loaded at `start`)."""
    return {start + ins.offset: ins.size for ins in _decode(code, start, gen)}


def scan_function(code: bytes, start: int, processor: str) -> FunctionScan:
    """LDS addresses formed from constants, and call targets, in one function's code.

    A generic LDS pointer counts only where it is used as a 64-bit value: the constant low
    dword added with carry into a high dword holding the shared aperture (how -O0 code adds
    an index), or a register pair (constant, aperture) read as a flat address, a 64-bit copy
    or a 64-bit add. Two registers that merely happen to sit side by side prove nothing.
    """
    gen = generation(processor)
    if len(code) > MAX_FUNCTION_BYTES:
        raise IsaError(f"function at {start:#x} is too large to scan")
    instructions = _decode(code, start, gen)
    ops = isa.OPCODES[gen]
    # straight-line regions start at branch targets and after branches
    leaders = {start}
    for ins in instructions:
        how, target = isa.control(ins, gen) if ins.kind == "sopp" else ("next", None)
        if how in ("jump", "branch"):
            leaders.add(start + target)
            leaders.add(start + ins.offset + 4)
    out = FunctionScan(lengths={start + ins.offset: ins.size for ins in instructions})
    sgpr: dict[int, object] = {}
    vgpr: dict[int, object] = {}
    scc: int | None = None

    def kill(regs: dict, reg: int, count: int = 1):
        for r in range(reg, reg + count):
            regs.pop(r, None)

    def pointer_at(regs: dict, reg: int, pc: int) -> None:
        lo, hi = regs.get(reg), regs.get(reg + 1)
        if hi is APERTURE_HI and isinstance(lo, int):
            out.accesses.append(LdsAccess(pc, lo, "generic pointer"))

    for ins in instructions:
        pc = start + ins.offset
        if pc in leaders:
            sgpr, vgpr, scc = {}, {}, None
        kind = ins.kind
        op = isa.opcode(ins, gen)
        lit = isa.literal(ins)

        def src(code_: int, lit=lit):
            """Value of a source operand (9-bit code: 256+ are VGPRs): int, symbol or None."""
            if code_ == isa.LITERAL:
                return lit
            inline = isa.inline_constant(code_)
            if inline is not None:
                return inline
            if code_ < 106:
                return sgpr.get(code_)
            if code_ == isa.VCC_LO:
                return sgpr.get(isa.VCC_LO)
            if 256 <= code_ < 512:
                return vgpr.get(code_ - 256)
            return None

        if kind == "sop1":
            dst, (s0, _) = isa.sdst(ins), isa.ssrc(ins)
            if op == ops.s_mov_b32:
                value = src(s0)
                kill(sgpr, dst)
                if value is not None:
                    sgpr[dst] = value
            elif op == ops.s_mov_b64:
                if s0 == isa.SRC_SHARED_BASE:
                    kill(sgpr, dst, 2)
                    sgpr[dst], sgpr[dst + 1] = _SHARED_BASE_LO, APERTURE_HI
                elif s0 < 106 and s0 % 2 == 0:
                    pointer_at(sgpr, s0, pc)
                    lo, hi = sgpr.get(s0), sgpr.get(s0 + 1)
                    kill(sgpr, dst, 2)
                    for r, v in ((dst, lo), (dst + 1, hi)):
                        if v is not None:
                            sgpr[r] = v
                else:
                    value = src(s0)
                    kill(sgpr, dst, 2)
                    if isinstance(value, int):  # inline constants sign-extend to 64 bits
                        wide = value | (0xFFFFFFFF00000000 if value & 0x80000000 and s0 != isa.LITERAL else 0)
                        sgpr[dst], sgpr[dst + 1] = wide & 0xFFFFFFFF, wide >> 32
            elif op == ops.s_getpc:
                kill(sgpr, dst, 2)
                after = pc + 4
                sgpr[dst], sgpr[dst + 1] = after & 0xFFFFFFFF, after >> 32
            elif op == ops.s_swappc:
                lo, hi = sgpr.get(s0), sgpr.get(s0 + 1)
                if isinstance(lo, int) and isinstance(hi, int):
                    out.calls.add((hi << 32) | lo)
                else:
                    out.unknown_calls += 1
                sgpr, vgpr, scc = {}, {}, None  # the callee may clobber anything
            elif op == ops.s_setpc:
                sgpr, vgpr, scc = {}, {}, None
            else:
                kill(sgpr, dst, 2)
                scc = None
            continue
        if kind == "sopk":
            dst = isa.sdst(ins)
            kill(sgpr, dst)
            if op == ops.s_getreg:
                if isa.hwreg(ins) == (isa.HW_REG_SH_MEM_BASES, 16, 16):
                    sgpr[dst] = _APERTURE_HI_RAW
            elif op == ops.sopk_call:
                out.calls.add(start + isa.relative_target(ins))
                sgpr, vgpr, scc = {}, {}, None  # the callee may clobber anything
            elif op == isa.S_MOVK_I32:
                sgpr[dst] = isa.simm16(ins) & 0xFFFFFFFF
            else:
                scc = None
            continue
        if kind in ("sopc", "sopp"):
            if kind == "sopc":
                scc = None
            continue
        if kind == "sop2":
            dst, (s0, s1) = isa.sdst(ins), isa.ssrc(ins)
            a, b = src(s0), src(s1)
            result = None
            carry = None
            if op == ops.s_lshl_b32 and a is _APERTURE_HI_RAW and b == 16:
                result = APERTURE_HI
            elif op == ops.s_lshr_b64 and s0 < 106 and sgpr.get(s0 + 1) is APERTURE_HI and b == 32:
                kill(sgpr, dst, 2)
                sgpr[dst], sgpr[dst + 1] = APERTURE_HI, 0
                scc = None
                continue
            elif op == isa.S_ADD_U32 and isinstance(a, int) and isinstance(b, int):
                total = a + b
                result, carry = total & 0xFFFFFFFF, total >> 32
            elif op == isa.S_ADDC_U32 and isinstance(a, int) and isinstance(b, int) and scc is not None:
                total = a + b + scc
                result, carry = total & 0xFFFFFFFF, total >> 32
            # add/sub (ops 0-5) and s_lshl_b32 write one register; for the others forgetting a
            # second one is harmless
            kill(sgpr, dst, 1 if op <= 5 or op == ops.s_lshl_b32 else 2)
            scc = carry
            if result is not None:
                sgpr[dst] = result
            continue
        if kind == "vop1":
            vdst, (s0,) = isa.vdst(ins), isa.vsrc(ins)
            value = src(s0)
            kill(vgpr, vdst, 2)
            if op == isa.V_MOV_B32 and isa.plain(ins) and value is not None:
                vgpr[vdst] = value
            elif op == isa.V_MOV_B64 and gen == 9 and isa.plain(ins):
                regs, base = (sgpr, s0) if s0 < 106 else (vgpr, s0 - 256)
                if s0 < 106 or s0 >= 256:
                    pointer_at(regs, base, pc)
            elif op == isa.V_READFIRSTLANE_B32:
                kill(sgpr, vdst)
            continue
        if kind == "vopc":  # writes VCC
            kill(sgpr, isa.VCC_LO, 2)
            continue
        if kind == "vop2":
            vdst, (s0, s1) = isa.vdst(ins), isa.vsrc(ins)
            a, b = src(s0), src(s1)
            cin = sgpr.get(isa.VCC_LO)
            kill(vgpr, vdst, 2)
            if op in (ops.v_add_co_vop2, ops.v_addc_co_vop2):
                kill(sgpr, isa.VCC_LO, 2)
            if isa.plain(ins) and op == ops.v_add_co_vop2:
                k = a if isinstance(a, int) else b if isinstance(b, int) else None
                if k is not None:
                    sgpr[isa.VCC_LO] = ("carry", k)
            elif isa.plain(ins) and op == ops.v_addc_co_vop2 and isinstance(cin, tuple) and cin[0] == "carry" \
                    and APERTURE_HI in (a, b):
                out.accesses.append(LdsAccess(pc, cin[1], "generic pointer"))
            continue
        if kind == "ds":
            base = vgpr.get(isa.vaddr(ins))
            offset = isa.ds_offset(ins)
            name = _DS_PLAIN.get(op)
            if name is not None and isinstance(base, int):
                out.accesses.append(LdsAccess(pc, (base + offset) & 0xFFFFFFFF, name, "address"))
            elif name is not None and base is None and offset:
                out.accesses.append(LdsAccess(pc, offset, name, "at least"))
            kill(vgpr, isa.vdst(ins), 4)
            continue
        if kind == "flat":  # FLAT / GLOBAL / SCRATCH: vaddr is a 64-bit pair for flat and global
            pointer_at(vgpr, isa.vaddr(ins), pc)
            kill(vgpr, isa.vdst(ins), 4)
            continue
        if kind == "vop3":
            vdst, sdst = isa.vdst(ins), isa.sdst(ins)
            s0, s1, s2 = isa.vsrc(ins)
            a, b, c = src(s0), src(s1), src(s2)
            kill(vgpr, vdst, 2)
            if op < 0x100 or op in (ops.v_readlane, ops.v_readfirstlane_vop3):  # v_cmp*_e64 write SGPRs
                kill(sgpr, vdst, 2)
            kill(sgpr, sdst, 2)  # VOP3B carry-out
            if op == ops.v_add_co_vop3:
                k = a if isinstance(a, int) else b if isinstance(b, int) else None
                if k is not None:
                    sgpr[sdst] = ("carry", k)
            elif op == ops.v_addc_co_vop3 and isinstance(c, tuple) and c[0] == "carry" and APERTURE_HI in (a, b):
                out.accesses.append(LdsAccess(pc, c[1], "generic pointer"))
            elif gen == 9 and op == isa.V_LSHL_ADD_U64:
                for code_, shift_ok in ((s0, b == 0), (s2, True)):
                    if shift_ok and (code_ < 106 or 256 <= code_ < 512):
                        pointer_at(sgpr, code_, pc) if code_ < 106 else pointer_at(vgpr, code_ - 256, pc)
            continue
        if kind == "smem":  # loads into sdata only
            kill(sgpr, isa.sdst(ins), 16)
            continue
        vgpr = {}  # VOP3P (MAI), MUBUF, MIMG, ... may write any VGPRs
        if kind == "vop3p":
            kill(sgpr, isa.vdst(ins), 2)
    return out
