"""Just enough AMDGPU machine code to find where a kernel addresses LDS.

A linear sweep over a function decodes every instruction's length (GFX9:
gfx90a/gfx942, GFX10: gfx10xx, GFX11: gfx11xx encodings; checked against
llvm-objdump on every committed code object) and follows the few scalar and
vector moves that build LDS addresses from constants:

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
    name = processor.lower().removeprefix("gfx")
    if len(name) == 4 and name[:2] in ("10", "11", "12"):
        major = int(name[:2])
    elif name[:1].isdigit():
        major = int(name[:1])
    else:
        raise IsaError(f"unknown AMDGPU processor {processor!r}")
    if major not in (9, 10, 11):
        raise IsaError(f"no instruction decoder for {processor} (GFX{major})")
    return major


# Opcodes that differ between generations: (GFX9, GFX10, GFX11).
_OPS = {
    "s_mov_b32": (0x00, 0x03, 0x00),
    "s_mov_b64": (0x01, 0x04, 0x01),
    "s_getpc_b64": (0x1C, 0x1F, 0x47),
    "s_setpc_b64": (0x1D, 0x20, 0x48),
    "s_swappc_b64": (0x1E, 0x21, 0x49),
    "s_lshl_b32": (0x1C, 0x1E, 0x08),
    "s_lshr_b64": (0x1F, 0x21, 0x0B),
    "s_getreg_b32": (0x11, 0x12, 0x11),
    "s_movk_i32": (0x00, 0x00, 0x00),
    "s_branch": (0x02, 0x02, 0x20),
    "s_call_b64": (0x15, 0x16, 0x14),  # SOPK
}
_CBRANCH = {9: set(range(0x04, 0x0A)) | set(range(0x17, 0x1B)), 10: set(range(0x04, 0x0A)) | set(range(0x17, 0x1B)),
            11: set(range(0x21, 0x27)) | set(range(0x27, 0x2B))}
_ENDPGM = {9: 0x01, 10: 0x01, 11: 0x30}
# VOP2 opcodes that always carry a 32-bit literal (madmk/madak/fmamk/fmaak, f32 and f16)
_VOP2_LITERAL = {9: {0x17, 0x18, 0x24, 0x25}, 10: {0x20, 0x21, 0x2C, 0x2D, 0x37, 0x38}, 11: {0x2C, 0x2D, 0x37, 0x38}}
# DS reads and writes that address vaddr + a 16-bit byte offset (same numbers on GFX9-11)
_DS_PLAIN = {13: "ds_write_b32", 30: "ds_write_b8", 31: "ds_write_b16", 77: "ds_write_b64", 222: "ds_write_b96",
             223: "ds_write_b128", 54: "ds_read_b32", 57: "ds_read_i8", 58: "ds_read_u8", 59: "ds_read_i16",
             60: "ds_read_u16", 118: "ds_read_b64", 254: "ds_read_b96", 255: "ds_read_b128"}
_SRC_LITERAL = 0xFF
_SRC_SDWA, _SRC_DPP16, _SRC_DPP8, _SRC_DPP8_FI = 0xF9, 0xFA, 0xE9, 0xEA
_SRC_SHARED_BASE = 0xEB
_HW_REG_SH_MEM_BASES = 15

_APERTURE_HI_RAW = ("aperture>>16",)  # s_getreg result before the shift
APERTURE_HI = ("aperture",)  # the shared aperture's high dword
_SHARED_BASE_LO = ("shared_base.lo",)


def _inline_constant(code: int) -> int | None:
    """Integer value of an inline-constant source operand (128..208), else None."""
    if 128 <= code <= 192:
        return code - 128
    if 193 <= code <= 208:
        return (192 - code) & 0xFFFFFFFF
    return None


def _length(words: list[int], i: int, gen: int) -> int:
    """Bytes of the instruction whose first dword is words[i]."""
    w = words[i]
    top9 = w >> 23
    if top9 in (0x17D, 0x17E, 0x17F):  # SOP1, SOPC, SOPP
        if top9 == 0x17F:
            return 4
        return 8 if (w & 0xFF) == _SRC_LITERAL or (top9 == 0x17E and (w >> 8) & 0xFF == _SRC_LITERAL) else 4
    if w >> 28 == 0xB:  # SOPK
        op = (w >> 23) & 0x1F
        setreg_imm = {9: 0x14, 10: 0x15, 11: 0x13}[gen]
        return 8 if op == setreg_imm else 4
    if w >> 30 == 0x2:  # SOP2
        return 8 if (w & 0xFF) == _SRC_LITERAL or (w >> 8) & 0xFF == _SRC_LITERAL else 4
    if w >> 31 == 0:  # VOP1 / VOPC / VOP2
        src0 = w & 0x1FF
        extra = 4 if src0 in (_SRC_LITERAL, _SRC_SDWA, _SRC_DPP16) or (gen >= 10 and src0 in (_SRC_DPP8, _SRC_DPP8_FI)) else 0
        if w >> 25 not in (0x3E, 0x3F) and (w >> 25) & 0x3F in _VOP2_LITERAL[gen]:
            extra = max(extra, 4)
        return 4 + extra
    top6 = w >> 26
    if gen == 9:
        if top6 in (0x34,):  # VOP3 / VOP3B / VOP3P (MAI included): no literals on GFX9
            return 8
        if top6 == 0x35:  # VINTRP
            return 4
        if top6 in (0x30, 0x31, 0x36, 0x37, 0x38, 0x3A, 0x3C):  # SMEM EXP DS FLAT MUBUF MTBUF MIMG
            return 8
        raise IsaError(f"unknown GFX9 encoding {w:#010x}")
    # GFX10 / GFX11
    if top6 == 0x35 or w >> 24 == 0xCC:  # VOP3 (VOP3B), VOP3P: a literal or a DPP word may follow
        if i + 1 >= len(words):
            raise IsaError("instruction runs past the function")
        w2 = words[i + 1]
        srcs = (w2 & 0x1FF, (w2 >> 9) & 0x1FF, (w2 >> 18) & 0x1FF)
        extra = 4 if _SRC_LITERAL in srcs else 0
        if gen >= 11 and srcs[0] in (_SRC_DPP16, _SRC_DPP8, _SRC_DPP8_FI):
            extra = 4
        return 8 + extra
    if gen == 10 and top6 == 0x32:  # VINTRP
        return 4
    if gen == 11:
        if top6 == 0x32:  # VOPD: srcX0 / srcY0 literal, or FMAAK/FMAMK halves
            if i + 1 >= len(words):
                raise IsaError("instruction runs past the function")
            opx, opy = (w >> 22) & 0xF, (w >> 17) & 0x1F
            lit = (w & 0x1FF) == _SRC_LITERAL or (words[i + 1] & 0x1FF) == _SRC_LITERAL or opx in (1, 2) or opy in (1, 2)
            return 12 if lit else 8
        if w >> 24 in (0xCD,):  # VINTERP
            return 8
        if w >> 24 == 0xCE:  # LDSDIR
            return 4
    if top6 in (0x3D, 0x3E, 0x36, 0x37, 0x38, 0x3A):  # SMEM EXP DS FLAT MUBUF MTBUF
        return 8
    if top6 == 0x3C:  # MIMG; NSA adds address dwords
        nsa = (w >> 1) & 0x3
        return 8 + 4 * nsa
    raise IsaError(f"unknown GFX{gen} encoding {w:#010x}")


def instruction_lengths(code: bytes, start: int, gen: int) -> dict[int, int]:
    """{address: length} of every instruction of `code` (loaded at `start`)."""
    if len(code) % 4:
        code = code[: len(code) - len(code) % 4]
    words = [int.from_bytes(code[k:k + 4], "little") for k in range(0, len(code), 4)]
    out = {}
    i = 0
    while i < len(words):
        n = _length(words, i, gen)
        if i + n // 4 > len(words):
            raise IsaError(f"instruction at {start + 4 * i:#x} runs past the function")
        out[start + 4 * i] = n
        i += n // 4
    return out


# Add-with-carry pairs that add a 64-bit pointer in halves: (carry-out op, carry-in op)
_VOP3_ADD_CO = {9: 0x119, 10: 0x30F, 11: 0x300}
_VOP3_ADDC_CO = {9: 0x11C, 10: 0x128, 11: 0x120}
_VOP2_ADD_CO = {9: 0x19}  # GFX10+ have no carry-out-only e32 form
_VOP2_ADDC_CO = {9: 0x1C, 10: 0x28, 11: 0x20}
_VOP3_LSHL_ADD_U64 = 0x208  # gfx940+: (src0 << src1) + src2 on 64-bit pairs
_VOP1_MOV_B64 = 0x38  # gfx940+
_VCC = 106
_VOP3_SGPR_DST = {9: {0x289, 0x142}, 10: {0x360, 0x182}, 11: {0x360, 0x182}}


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
    lengths = instruction_lengths(code, start, gen)
    idx = {name: ops[{9: 0, 10: 1, 11: 2}[gen]] for name, ops in _OPS.items()}
    pcs = sorted(lengths)
    # straight-line regions start at branch targets and after branches
    leaders = {start}
    for pc in pcs:
        w = int.from_bytes(code[pc - start:pc - start + 4], "little")
        if w >> 23 == 0x17F:
            op = (w >> 16) & 0x7F
            if op == idx["s_branch"] or op in _CBRANCH[gen]:
                simm = w & 0xFFFF
                simm -= 0x10000 if simm & 0x8000 else 0
                leaders.add(pc + 4 + 4 * simm)
                leaders.add(pc + 4)
    out = FunctionScan(lengths=lengths)
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

    for pc in pcs:
        if pc in leaders:
            sgpr, vgpr, scc = {}, {}, None
        n = lengths[pc]
        words = [int.from_bytes(code[pc - start + k:pc - start + k + 4], "little") for k in range(0, n, 4)]
        w = words[0]
        literal = words[-1] if n >= 8 else None
        top9 = w >> 23

        def src(code_: int, lit=literal):
            """Value of a source operand (9-bit code: 256+ are VGPRs): int, symbol or None."""
            if code_ == _SRC_LITERAL:
                return lit
            inline = _inline_constant(code_)
            if inline is not None:
                return inline
            if code_ < 106:
                return sgpr.get(code_)
            if code_ == _VCC:
                return sgpr.get(_VCC)
            if 256 <= code_ < 512:
                return vgpr.get(code_ - 256)
            return None

        if top9 == 0x17D:  # SOP1
            op, dst, s0 = (w >> 8) & 0xFF, (w >> 16) & 0x7F, w & 0xFF
            if op == idx["s_mov_b32"]:
                value = src(s0)
                kill(sgpr, dst)
                if value is not None:
                    sgpr[dst] = value
            elif op == idx["s_mov_b64"]:
                if s0 == _SRC_SHARED_BASE:
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
                        wide = value | (0xFFFFFFFF00000000 if value & 0x80000000 and s0 != _SRC_LITERAL else 0)
                        sgpr[dst], sgpr[dst + 1] = wide & 0xFFFFFFFF, wide >> 32
            elif op == idx["s_getpc_b64"]:
                kill(sgpr, dst, 2)
                after = pc + 4
                sgpr[dst], sgpr[dst + 1] = after & 0xFFFFFFFF, after >> 32
            elif op == idx["s_swappc_b64"]:
                lo, hi = sgpr.get(s0), sgpr.get(s0 + 1)
                if isinstance(lo, int) and isinstance(hi, int):
                    out.calls.add((hi << 32) | lo)
                else:
                    out.unknown_calls += 1
                sgpr, vgpr, scc = {}, {}, None  # the callee may clobber anything
            elif op == idx["s_setpc_b64"]:
                sgpr, vgpr, scc = {}, {}, None
            else:
                kill(sgpr, dst, 2)
                scc = None
            continue
        if w >> 28 == 0xB:  # SOPK
            op, dst = (w >> 23) & 0x1F, (w >> 16) & 0x7F
            kill(sgpr, dst)
            if op == idx["s_getreg_b32"]:
                hwreg, offset, size = w & 0x3F, (w >> 6) & 0x1F, ((w >> 11) & 0x1F) + 1
                if hwreg == _HW_REG_SH_MEM_BASES and offset == 16 and size == 16:
                    sgpr[dst] = _APERTURE_HI_RAW
            elif op == idx["s_call_b64"]:
                simm = w & 0xFFFF
                out.calls.add(pc + 4 + 4 * (simm - 0x10000 if simm & 0x8000 else simm))
                sgpr, vgpr, scc = {}, {}, None  # the callee may clobber anything
            elif op == idx["s_movk_i32"]:
                imm = w & 0xFFFF
                sgpr[dst] = (imm - 0x10000 if imm & 0x8000 else imm) & 0xFFFFFFFF
            else:
                scc = None
            continue
        if top9 in (0x17E, 0x17F):  # SOPC, SOPP
            if top9 == 0x17E:
                scc = None
            continue
        if w >> 30 == 0x2:  # SOP2
            op, dst, s0, s1 = (w >> 23) & 0x7F, (w >> 16) & 0x7F, w & 0xFF, (w >> 8) & 0xFF
            a, b = src(s0), src(s1)
            result = None
            carry = None
            if op == idx["s_lshl_b32"] and a is _APERTURE_HI_RAW and b == 16:
                result = APERTURE_HI
            elif op == idx["s_lshr_b64"] and s0 < 106 and sgpr.get(s0 + 1) is APERTURE_HI and b == 32:
                kill(sgpr, dst, 2)
                sgpr[dst], sgpr[dst + 1] = APERTURE_HI, 0
                scc = None
                continue
            elif op == 0x00 and isinstance(a, int) and isinstance(b, int):  # s_add_u32
                total = a + b
                result, carry = total & 0xFFFFFFFF, total >> 32
            elif op == 0x04 and isinstance(a, int) and isinstance(b, int) and scc is not None:  # s_addc_u32
                total = a + b + scc
                result, carry = total & 0xFFFFFFFF, total >> 32
            # add/sub (ops 0-5) and s_lshl_b32 write one register; for the others forgetting a
            # second one is harmless
            kill(sgpr, dst, 1 if op <= 5 or op == idx["s_lshl_b32"] else 2)
            scc = carry
            if result is not None:
                sgpr[dst] = result
            continue
        if w >> 31 == 0:  # VOP1 / VOPC / VOP2
            plain = n == (8 if (w & 0x1FF) == _SRC_LITERAL else 4)  # no SDWA / DPP word
            if w >> 25 == 0x3F:  # VOP1
                op, vdst, s0 = (w >> 9) & 0xFF, (w >> 17) & 0xFF, w & 0x1FF
                value = src(s0)
                kill(vgpr, vdst, 2)
                if op == 0x01 and plain and value is not None:  # v_mov_b32_e32
                    vgpr[vdst] = value
                elif op == _VOP1_MOV_B64 and gen == 9 and plain:
                    regs, base = (sgpr, s0) if s0 < 106 else (vgpr, s0 - 256)
                    if s0 < 106 or s0 >= 256:
                        pointer_at(regs, base, pc)
                elif op == 0x02:  # v_readfirstlane_b32 writes an SGPR
                    kill(sgpr, vdst)
            elif w >> 25 == 0x3E:  # VOPC writes VCC
                kill(sgpr, _VCC, 2)
            else:  # VOP2
                op, vdst, s0, v1 = (w >> 25) & 0x3F, (w >> 17) & 0xFF, w & 0x1FF, (w >> 9) & 0xFF
                a, b = src(s0), vgpr.get(v1)
                cin = sgpr.get(_VCC)
                kill(vgpr, vdst, 2)
                kill(sgpr, _VCC, 2) if op in (_VOP2_ADD_CO.get(gen), _VOP2_ADDC_CO[gen]) else None
                if plain and op == _VOP2_ADD_CO.get(gen):
                    k = a if isinstance(a, int) else b if isinstance(b, int) else None
                    if k is not None:
                        sgpr[_VCC] = ("carry", k)
                elif plain and op == _VOP2_ADDC_CO[gen] and isinstance(cin, tuple) and cin[0] == "carry" \
                        and APERTURE_HI in (a, b):
                    out.accesses.append(LdsAccess(pc, cin[1], "generic pointer"))
            continue
        top6 = w >> 26
        if top6 == 0x36:  # DS
            w2 = words[1]
            op = (w >> 17) & 0xFF if gen == 9 else (w >> 18) & 0xFF
            base = vgpr.get(w2 & 0xFF)
            name = _DS_PLAIN.get(op)
            if name is not None and isinstance(base, int):
                out.accesses.append(LdsAccess(pc, (base + (w & 0xFFFF)) & 0xFFFFFFFF, name, "address"))
            elif name is not None and base is None and w & 0xFFFF:
                out.accesses.append(LdsAccess(pc, w & 0xFFFF, name, "at least"))
            kill(vgpr, (w2 >> 24) & 0xFF, 4)
            continue
        if top6 == 0x37:  # FLAT / GLOBAL / SCRATCH: vaddr is a 64-bit pair for flat and global
            w2 = words[1]
            pointer_at(vgpr, w2 & 0xFF, pc)
            kill(vgpr, (w2 >> 24) & 0xFF, 4)
            continue
        vop3 = (gen == 9 and top6 == 0x34 and (w >> 23) & 0x7 != 0x7) or (gen >= 10 and top6 == 0x35)
        if vop3:
            w2 = words[1]
            op, vdst, sdst = (w >> 16) & 0x3FF, w & 0xFF, (w >> 8) & 0x7F
            s0, s1, s2 = w2 & 0x1FF, (w2 >> 9) & 0x1FF, (w2 >> 18) & 0x1FF
            a, b, c = src(s0), src(s1), src(s2)
            kill(vgpr, vdst, 2)
            if op < 0x100 or op in _VOP3_SGPR_DST[gen]:  # v_cmp*_e64, v_readlane, v_readfirstlane
                kill(sgpr, vdst, 2)
            kill(sgpr, sdst, 2)  # VOP3B carry-out
            if op == _VOP3_ADD_CO[gen]:
                k = a if isinstance(a, int) else b if isinstance(b, int) else None
                if k is not None:
                    sgpr[sdst] = ("carry", k)
            elif op == _VOP3_ADDC_CO[gen] and isinstance(c, tuple) and c[0] == "carry" and APERTURE_HI in (a, b):
                out.accesses.append(LdsAccess(pc, c[1], "generic pointer"))
            elif gen == 9 and op == _VOP3_LSHL_ADD_U64:
                for code_, shift_ok in ((s0, b == 0), (s2, True)):
                    if shift_ok and (code_ < 106 or 256 <= code_ < 512):
                        pointer_at(sgpr, code_, pc) if code_ < 106 else pointer_at(vgpr, code_ - 256, pc)
            continue
        if (gen == 9 and top6 == 0x30) or (gen >= 10 and top6 == 0x3D):  # SMEM loads into sdata only
            kill(sgpr, (w >> 6) & 0x7F, 16)
            continue
        vgpr = {}  # VOP3P (MAI), MUBUF, MIMG, ... may write any VGPRs
        if (gen == 9 and top6 == 0x34) or (gen >= 10 and w >> 24 == 0xCC):
            kill(sgpr, w & 0xFF, 2)
    return out
