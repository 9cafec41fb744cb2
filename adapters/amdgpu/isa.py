"""AMDGPU machine code: instruction sizes, operand fields, and the register effects a
caller-frame unwinder needs (the LDS address scan reads the same decode).

Decodes GFX9 (gfx90a, gfx940-942), GFX10 (gfx1030) and GFX11 (gfx1100) encodings from the
ISA manuals' field layouts; opcodes that move between generations (SOP1, SOPP, VOP3 lane
ops, MUBUF/FLAT loads and stores) are tabled per generation. The decoder never guesses: an
encoding it cannot size ends the decode, and register writes are over-approximated (a
register that may be written is reported written) so an unwinder built on it can only lose
a value, never keep a stale one.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

LITERAL = 0xFF  # source operand code: a 32-bit constant follows the instruction
VCC_LO = 106
EXEC_LO, EXEC_HI = 126, 127
SRC_SHARED_BASE = 0xEB  # source operand code: the shared (LDS) aperture's 64-bit base
HW_REG_SH_MEM_BASES = 15  # s_getreg register id: the shared and private aperture bases
# opcodes with the same number in every generation decoded here
S_MOVK_I32 = 0x00  # SOPK
S_ADD_U32, S_ADDC_U32 = 0x00, 0x04  # SOP2
V_MOV_B32, V_READFIRSTLANE_B32 = 0x01, 0x02  # VOP1
V_MOV_B64 = 0x38  # VOP1, gfx940+
V_LSHL_ADD_U64 = 0x208  # VOP3, gfx940+: (src0 << src1) + src2 on 64-bit pairs
ALL = "all"  # "every register of the file may have been written"


def isa_generation(processor: str) -> int | None:
    """9, 10 or 11 for the processors whose encodings this module knows, else None."""
    m = re.fullmatch(r"gfx(\d+)[0-9a-f]{2}", processor or "")
    if not m:
        return None
    major = int(m.group(1))
    return major if major in (9, 10, 11) else None


def stack_offsets_per_lane(processor: str) -> bool:
    """Whether SGPR32/SGPR33 hold per-lane byte offsets (flat-scratch stacks: gfx940-942,
    GFX11) rather than offsets scaled by the wave size (MUBUF stacks). The ISA shows it: a
    32-byte frame is `s_add_i32 s32, s32, 32` on gfx942 and gfx1100, `0x800` on gfx90a."""
    gen = isa_generation(processor)
    return gen is not None and (gen >= 11 or re.fullmatch(r"gfx94[0-9a-f]", processor) is not None)


@dataclass(frozen=True)
class Opcodes:
    """Opcode numbers of one generation (from the ISA manuals; checked against llvm-mc)."""

    s_mov_b32: int
    s_mov_b64: int
    or_saveexec: tuple[int, ...]  # b64 [, b32]
    xor_saveexec: tuple[int, ...]
    s_setpc: int
    s_swappc: int
    s_movreld: tuple[int, int]
    sopp_branch: int
    sopp_cbranch: tuple[int, ...]
    sopp_endpgm: int
    sopk_literal: int  # s_setreg_imm32_b32
    sopk_call: int  # s_call_b64
    vop2_literal: tuple[int, ...]  # madak/madmk/fmaak/fmamk: a 32-bit constant follows
    v_readlane: int
    v_writelane: int
    v_readfirstlane_vop3: int
    vop3_carry_out: tuple[int, ...]  # VOP3B: an SGPR (pair) destination in bits 14:8
    mubuf_stores: dict[int, int]  # opcode -> dwords stored
    mubuf_dword_load: int
    flat_stores: dict[int, int]
    flat_dword_load: int
    flat_offset_bits: int
    s_getpc: int
    s_getreg: int
    s_lshl_b32: int
    s_lshr_b64: int
    v_add_co_vop3: int  # v_add_co_u32_e64: carry out into an SGPR (pair)
    v_addc_co_vop3: int  # v_addc_co_u32_e64: carry in from src2
    v_add_co_vop2: int | None  # v_add_co_u32_e32 (carry into vcc); GFX10+ have no such e32 form
    v_addc_co_vop2: int
    # opcodes whose destination is a register pair or wider (from llvm-mc-19's disassembly of
    # every opcode); every other SOP/VALU destination is one 32-bit register
    sop1_wide: frozenset = frozenset()
    sop2_wide: frozenset = frozenset()
    vop1_wide: frozenset = frozenset()
    vop2_wide: frozenset = frozenset()
    vop3_wide: dict = None  # opcode -> registers written


GFX11_VOP3_WIDE = {**dict.fromkeys([0x214, 0x228, 0x238, 0x23A, 0x23B, 0x2FD, 0x2FE, 0x2FF, 0x327, 0x328, 0x329,
                                     0x32A, 0x32B, 0x32F, 0x33C, 0x33D, 0x33E], 2), 0x23D: 4}

GFX9 = Opcodes(
    s_mov_b32=0x00, s_mov_b64=0x01, or_saveexec=(0x21,), xor_saveexec=(0x22,), s_setpc=0x1D, s_swappc=0x1E,
    s_movreld=(0x2C, 0x2D), sopp_branch=0x02, sopp_cbranch=(4, 5, 6, 7, 8, 9, 0x17, 0x18, 0x19, 0x1A),
    sopp_endpgm=0x01, sopk_literal=0x14, sopk_call=0x15, vop2_literal=(0x17, 0x18, 0x24, 0x25),
    v_readlane=0x289, v_writelane=0x28A, v_readfirstlane_vop3=0x142,
    vop3_carry_out=(0x119, 0x11A, 0x11B, 0x11C, 0x11D, 0x11E, 0x1E0, 0x1E1, 0x1E8, 0x1E9),
    mubuf_stores={0x1C: 1, 0x1D: 2, 0x1E: 3, 0x1F: 4}, mubuf_dword_load=0x14,
    flat_stores={0x1C: 1, 0x1D: 2, 0x1E: 3, 0x1F: 4}, flat_dword_load=0x14, flat_offset_bits=13,
    s_getpc=0x1C, s_getreg=0x11, s_lshl_b32=0x1C, s_lshr_b64=0x1F, v_add_co_vop3=0x119, v_addc_co_vop3=0x11C,
    v_add_co_vop2=0x19, v_addc_co_vop2=0x1C,
    sop1_wide=frozenset([0x1, 0x3, 0x5, 0x7, 0x9, 0x19, 0x1B, 0x1C, 0x1E, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,
                         0x27, 0x29, 0x2B, 0x2D, 0x33, 0x34, 0x35, 0x36, 0x37]),
    sop2_wide=frozenset([0xB, 0xD, 0xF, 0x11, 0x13, 0x15, 0x17, 0x19, 0x1B, 0x1D, 0x1F, 0x21, 0x23, 0x27, 0x28, 0x70,
                         0x75]),
    vop1_wide=frozenset([0x4, 0x10, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x28, 0x31, 0x32, 0x38, 0x56, 0x57]),
    vop2_wide=frozenset([0x4]),
    vop3_wide={**dict.fromkeys([0x104, 0x1CC, 0x1DF, 0x1E1, 0x1E3, 0x1E5, 0x1E6, 0x1E8, 0x1E9, 0x208, 0x280, 0x281,
                                0x282, 0x283, 0x284, 0x28F, 0x290, 0x291, 0x292], 2), 0x1E7: 4})
GFX10 = Opcodes(
    s_mov_b32=0x03, s_mov_b64=0x04, or_saveexec=(0x25, 0x3D), xor_saveexec=(0x26, 0x3E), s_setpc=0x20,
    s_swappc=0x21, s_movreld=(0x30, 0x31), sopp_branch=0x02,
    sopp_cbranch=(4, 5, 6, 7, 8, 9, 0x17, 0x18, 0x19, 0x1A), sopp_endpgm=0x01, sopk_literal=0x15,
    sopk_call=0x16, vop2_literal=(0x20, 0x21, 0x2C, 0x2D, 0x37, 0x38),  # 0x20/0x21: gfx101x v_madmk/madak_f32
    v_readlane=0x360, v_writelane=0x361,
    v_readfirstlane_vop3=0x182,
    vop3_carry_out=(0x128, 0x129, 0x12A, 0x30F, 0x310, 0x319, 0x16D, 0x16E, 0x176, 0x177),
    mubuf_stores={0x1C: 1, 0x1D: 2, 0x1E: 4, 0x1F: 3}, mubuf_dword_load=0x0C,
    flat_stores={0x1C: 1, 0x1D: 2, 0x1E: 4, 0x1F: 3}, flat_dword_load=0x0C, flat_offset_bits=12,
    s_getpc=0x1F, s_getreg=0x12, s_lshl_b32=0x1E, s_lshr_b64=0x21, v_add_co_vop3=0x30F, v_addc_co_vop3=0x128,
    v_add_co_vop2=None, v_addc_co_vop2=0x28,
    sop1_wide=frozenset([0x4, 0x6, 0x8, 0xA, 0xC, 0x1C, 0x1E, 0x1F, 0x21, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A,
                         0x2B, 0x2D, 0x2F, 0x31, 0x37, 0x38, 0x39, 0x3A, 0x3B]),
    sop2_wide=frozenset([0xB, 0xF, 0x11, 0x13, 0x15, 0x17, 0x19, 0x1B, 0x1D, 0x1F, 0x21, 0x23, 0x25, 0x29, 0x2A, 0x76]),
    vop1_wide=frozenset([0x4, 0x10, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x2F, 0x31, 0x34, 0x3D, 0x3E]),
    vop3_wide={**dict.fromkeys([0x14C, 0x160, 0x164, 0x165, 0x166, 0x167, 0x168, 0x16E, 0x170, 0x172, 0x173, 0x174,
                                0x176, 0x177, 0x2FF, 0x300, 0x301], 2), 0x175: 4})
GFX11 = Opcodes(
    s_mov_b32=0x00, s_mov_b64=0x01, or_saveexec=(0x23, 0x22), xor_saveexec=(0x25, 0x24), s_setpc=0x48,
    s_swappc=0x49, s_movreld=(0x42, 0x43), sopp_branch=0x20,
    sopp_cbranch=(0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A), sopp_endpgm=0x30,
    sopk_literal=0x13, sopk_call=0x14, vop2_literal=(0x2C, 0x2D, 0x37, 0x38), v_readlane=0x360,
    v_writelane=0x361, v_readfirstlane_vop3=0x182,
    vop3_carry_out=(0x120, 0x121, 0x122, 0x300, 0x301, 0x302, 0x2FC, 0x2FD, 0x2FE, 0x2FF),
    mubuf_stores={0x1A: 1, 0x1B: 2, 0x1C: 3, 0x1D: 4}, mubuf_dword_load=0x14,
    flat_stores={0x1A: 1, 0x1B: 2, 0x1C: 3, 0x1D: 4}, flat_dword_load=0x14, flat_offset_bits=13,
    s_getpc=0x47, s_getreg=0x11, s_lshl_b32=0x08, s_lshr_b64=0x0B, v_add_co_vop3=0x300, v_addc_co_vop3=0x120,
    v_add_co_vop2=None, v_addc_co_vop2=0x20,
    sop1_wide=frozenset([0x1, 0x3, 0x5, 0x11, 0x13, 0x14, 0x1B, 0x1D, 0x1F, 0x21, 0x23, 0x25, 0x27, 0x29, 0x2B, 0x2D,
                         0x2F, 0x31, 0x33, 0x35, 0x37, 0x41, 0x43, 0x47, 0x49, 0x4D]),
    sop2_wide=frozenset([0x9, 0xB, 0xD, 0x17, 0x19, 0x1B, 0x1D, 0x1F, 0x21, 0x23, 0x25, 0x28, 0x29, 0x2B, 0x31, 0x74]),
    vop1_wide=frozenset([0x4, 0x10, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x2F, 0x31, 0x34, 0x3D, 0x3E]),
    vop3_wide=GFX11_VOP3_WIDE)
OPCODES = {9: GFX9, 10: GFX10, 11: GFX11}


class Instruction(NamedTuple):  # a tuple: one is built per instruction of every scanned function
    offset: int  # from the start of the decoded bytes
    size: int
    kind: str  # encoding family: sop1, sop2, sopk, sopc, sopp, smem, vop1, vop2, vopc, vop3, vop3p, vopd, ...
    w0: int
    w1: int  # second dword (0 for 32-bit encodings)
    w2: int = 0  # third dword (0 for encodings of 8 bytes or fewer)


def _encoding(w: int, gen: int) -> str | None:
    if w >> 31 == 0:
        top7 = w >> 25
        return "vopc" if top7 == 0x3E else "vop1" if top7 == 0x3F else "vop2"
    if w >> 30 == 0b10:
        top9 = w >> 23
        if top9 == 0x17F:
            return "sopp"
        if top9 == 0x17E:
            return "sopc"
        if top9 == 0x17D:
            return "sop1"
        if w >> 28 == 0xB:
            return "sopk"
        return "sop2"
    top6 = w >> 26
    if gen == 9:
        if w >> 23 == 0x1A7:
            return "vop3p"
        return {0x30: "smem", 0x31: "exp", 0x34: "vop3", 0x35: "vintrp", 0x36: "ds", 0x37: "flat", 0x38: "mubuf",
                0x3A: "mtbuf", 0x3C: "mimg"}.get(top6)
    table = {0x35: "vop3", 0x36: "ds", 0x37: "flat", 0x38: "mubuf", 0x3A: "mtbuf", 0x3C: "mimg", 0x3D: "smem",
             0x3E: "exp"}
    if top6 in table:
        return table[top6]
    if top6 == 0x33:
        top8 = w >> 24
        if top8 == 0xCC:
            return "vop3p"
        if gen == 11 and top8 == 0xCD:
            return "vinterp"
        if gen == 11 and top8 == 0xCE:
            return "ldsdir"
        return None
    if top6 == 0x32:
        return "vopd" if gen == 11 else "vintrp"
    return None


_BYTES = {"sopp": 4, "vintrp": 4, "ldsdir": 4, "smem": 8, "exp": 8, "ds": 8, "flat": 8, "mubuf": 8, "mtbuf": 8,
          "vinterp": 8}


def decode(code: bytes, pos: int, gen: int) -> Instruction | None:
    """The instruction at `pos`, None past the end or for an encoding this module cannot size."""
    if pos + 4 > len(code):
        return None
    w = struct.unpack_from("<I", code, pos)[0]
    kind = _encoding(w, gen)
    if kind is None:
        return None
    ops = OPCODES[gen]
    size = _BYTES.get(kind)
    if size is None:
        if kind in ("vop1", "vop2", "vopc"):
            src0 = w & 0x1FF
            size = 8 if src0 in (LITERAL, 0xF9, 0xFA) or (gen >= 10 and src0 in (0xE9, 0xEA)) else 4
            if kind == "vop2" and (w >> 25) & 0x3F in ops.vop2_literal:
                size = 8
        elif kind in ("sop1", "sop2", "sopc"):
            literal = (w & 0xFF) == LITERAL or (kind != "sop1" and (w >> 8) & 0xFF == LITERAL)
            size = 8 if literal else 4
        elif kind == "sopk":
            size = 8 if (w >> 23) & 0x1F == ops.sopk_literal else 4
        elif kind in ("vop3", "vop3p"):
            size = 8
            if gen >= 10 and pos + 8 <= len(code):
                hi = struct.unpack_from("<I", code, pos + 4)[0]
                srcs = (hi & 0x1FF, (hi >> 9) & 0x1FF, (hi >> 18) & 0x1FF)
                if LITERAL in srcs or (gen == 11 and srcs[0] in (0xE9, 0xEA, 0xFA)):
                    size = 12
        elif kind == "vopd":
            size = 8
            if pos + 8 <= len(code):
                hi = struct.unpack_from("<I", code, pos + 4)[0]
                opx, opy = (w >> 22) & 0xF, (w >> 17) & 0x1F  # FMAAK/FMAMK (1, 2) carry a literal
                if (w & 0x1FF) == LITERAL or (hi & 0x1FF) == LITERAL or opx in (1, 2) or opy in (1, 2):
                    size = 12
        elif kind == "mimg":
            # GFX10's NSA field counts the extra address dwords; GFX11's NSA form takes its
            # count from the opcode and dimension, not needed here, so not sized
            if gen == 11 and w & 1:
                return None
            size = 8 + 4 * ((w >> 1) & 0x3) if gen == 10 else 8
    if pos + size > len(code):
        return None
    if size == 4:
        return Instruction(pos, 4, kind, w, 0)
    w1 = struct.unpack_from("<I", code, pos + 4)[0]
    w2 = struct.unpack_from("<I", code, pos + 8)[0] if size >= 12 else 0
    return Instruction(pos, size, kind, w, w1, w2)


def decode_all(code: bytes, gen: int) -> list[Instruction] | None:
    """Every instruction of a function's bytes, None if one cannot be sized."""
    out, pos = [], 0
    while pos < len(code):
        ins = decode(code, pos, gen)
        if ins is None:
            return None
        out.append(ins)
        pos += ins.size
    return out


# --- operand fields -----------------------------------------------------------------------

_OPCODE_FIELD = {"sop1": (8, 0xFF), "sop2": (23, 0x7F), "sopk": (23, 0x1F), "sopc": (16, 0x7F), "sopp": (16, 0x7F),
                 "vop1": (9, 0xFF), "vop2": (25, 0x3F), "vopc": (17, 0xFF), "vop3": (16, 0x3FF), "vop3p": (16, 0x7F),
                 "flat": (18, 0x7F), "smem": (18, 0xFF)}


def opcode(ins: Instruction, gen: int) -> int | None:
    """The opcode field of an instruction, None for an encoding whose opcode is not read here."""
    if ins.kind == "ds":  # GFX9 keeps the GDS bit above the opcode, GFX10+ below it
        return (ins.w0 >> 17) & 0xFF if gen == 9 else (ins.w0 >> 18) & 0xFF
    if ins.kind in ("mubuf", "mtbuf"):
        return (ins.w0 >> 18) & (0xFF if gen == 11 else 0x7F)
    field = _OPCODE_FIELD.get(ins.kind)
    return None if field is None else (ins.w0 >> field[0]) & field[1]


def sdst(ins: Instruction) -> int:
    """The SGPR destination field: SOP1/SOP2/SOPK sdst, SMEM sdata, VOP3B's carry-out sdst."""
    if ins.kind == "smem":
        return (ins.w0 >> 6) & 0x7F
    if ins.kind == "vop3":
        return (ins.w0 >> 8) & 0x7F
    return (ins.w0 >> 16) & 0x7F


def ssrc(ins: Instruction) -> tuple[int, int]:
    """(ssrc0, ssrc1) operand codes of SOP1 (ssrc1 unused), SOP2 and SOPC."""
    return ins.w0 & 0xFF, (ins.w0 >> 8) & 0xFF


def simm16(ins: Instruction) -> int:
    """The sign-extended 16-bit immediate of SOPK and SOPP."""
    k = ins.w0 & 0xFFFF
    return k - 0x10000 if k & 0x8000 else k


def hwreg(ins: Instruction) -> tuple[int, int, int]:
    """(register id, bit offset, bit count) named by s_getreg/s_setreg's immediate."""
    w = ins.w0
    return w & 0x3F, (w >> 6) & 0x1F, ((w >> 11) & 0x1F) + 1


def relative_target(ins: Instruction) -> int:
    """Where a SOPP branch or `s_call_b64` goes, as an offset like `ins.offset`."""
    return ins.offset + 4 + 4 * simm16(ins)


def vdst(ins: Instruction) -> int:
    """The VGPR destination field (for v_readfirstlane/v_readlane/v_cmp_e64 it names an SGPR)."""
    k, w = ins.kind, ins.w0
    if k in ("vop1", "vop2"):
        return (w >> 17) & 0xFF
    if k in ("ds", "flat"):
        return ins.w1 >> 24
    if k in ("mubuf", "mtbuf", "mimg"):
        return (ins.w1 >> 8) & 0xFF
    return w & 0xFF  # VOP3, VOP3P


def vsrc(ins: Instruction) -> tuple[int, ...]:
    """Source operand codes (9 bits: 256+ are VGPRs) of VOP1/VOPC (src0), VOP2 (src0, vsrc1)
    and VOP3/VOP3P (src0, src1, src2)."""
    k, w = ins.kind, ins.w0
    if k == "vop2":
        return w & 0x1FF, 256 + ((w >> 9) & 0xFF)
    if k in ("vop1", "vopc"):
        return (w & 0x1FF,)
    hi = ins.w1
    return hi & 0x1FF, (hi >> 9) & 0x1FF, (hi >> 18) & 0x1FF


def vaddr(ins: Instruction) -> int:
    """The address VGPR of DS and FLAT/GLOBAL/SCRATCH (a 64-bit pair for flat and global)."""
    return ins.w1 & 0xFF


def ds_offset(ins: Instruction) -> int:
    """The 16-bit byte offset of a DS instruction (offset1:offset0 for the two-address forms)."""
    return ins.w0 & 0xFFFF


def inline_constant(code: int) -> int | None:
    """Integer value of an inline-constant source operand (128..208), else None."""
    if 128 <= code <= 192:
        return code - 128
    if 193 <= code <= 208:
        return (192 - code) & 0xFFFFFFFF
    return None


def literal(ins: Instruction) -> int | None:
    """The dword a literal source operand (code 0xFF) reads: the instruction's last dword."""
    return ins.w2 if ins.size >= 12 else ins.w1 if ins.size == 8 else None


def plain(ins: Instruction) -> bool:
    """Whether a VOP1/VOP2/VOPC instruction has no SDWA or DPP word (a literal may follow)."""
    return ins.size == (8 if ins.w0 & 0x1FF == LITERAL else 4)


# --- what an instruction does to control flow and registers -----------------------------


def control(ins: Instruction, gen: int) -> tuple[str, int | None]:
    """("next", None), ("jump", target), ("branch", target) (may fall through), ("call", None)
    (returns to the next instruction) or ("exit", None)."""
    ops = OPCODES[gen]
    w = ins.w0
    if ins.kind == "sopp":
        op = (w >> 16) & 0x7F
        target = relative_target(ins)
        if op == ops.sopp_branch:
            return "jump", target
        if op in ops.sopp_cbranch:
            return "branch", target
        if op == ops.sopp_endpgm:
            return "exit", None
    if ins.kind == "sop1":
        op = (w >> 8) & 0xFF
        if op == ops.s_setpc:
            return "exit", None  # a return, or a tail call: this function's code ends here
        if op == ops.s_swappc:
            return "call", None
    if ins.kind == "sopk" and (w >> 23) & 0x1F == ops.sopk_call:
        return "call", None
    return "next", None


def sgpr_writes(ins: Instruction, gen: int, wave64: bool):
    """Scalar registers (operand numbers: s0-s105, vcc 106-107, exec 126-127) the instruction
    may write, or ALL."""
    ops = OPCODES[gen]
    w, k = ins.w0, ins.kind
    if k in ("sop1", "sop2", "sopk"):
        if k == "sop1" and (w >> 8) & 0xFF in ops.s_movreld:
            return ALL  # writes s[sdst + M0]
        if k == "sopk" and (w >> 23) & 0x1F == ops.sopk_call:
            dst = (w >> 16) & 0x7F
            return {dst, dst + 1}
        dst = (w >> 16) & 0x7F
        op = (w >> 8) & 0xFF if k == "sop1" else (w >> 23) & 0x7F if k == "sop2" else None
        wide = (ops.sop1_wide if k == "sop1" else ops.sop2_wide if k == "sop2" else ())
        return {dst, dst + 1} if op in wide else {dst}
    if k == "smem":
        dst = (ins.w0 >> 6) & 0x7F
        op = (w >> 18) & 0xFF
        dwords = 1 << (op & 7) if op in (0, 1, 2, 3, 4, 8, 9, 10, 11, 12) else 16
        return set(range(dst, dst + dwords))
    if k == "vopc":
        out = {106, 107, EXEC_LO, EXEC_HI}  # vcc, or exec for v_cmpx
        if w & 0x1FF == 0xF9 and ins.w1 >> 15 & 1:  # SDWA with an explicit SGPR destination
            sdst = (ins.w1 >> 8) & 0x7F
            out |= {sdst, sdst + 1}
        return out
    if k == "vop1" and (w >> 9) & 0xFF == V_READFIRSTLANE_B32:
        return {(w >> 17) & 0xFF}
    if k == "vop2":
        return {106, 107}  # carry-in/out forms use vcc
    if k == "vop3":
        op = (w >> 16) & 0x3FF
        vdst = w & 0xFF
        out = set()
        if op < 0x100:  # compares: the destination field names an SGPR (pair)
            out |= {vdst, vdst + 1, EXEC_LO, EXEC_HI}
        if op in (ops.v_readlane, ops.v_readfirstlane_vop3):
            out.add(vdst)
        if op in ops.vop3_carry_out:
            sdst = (w >> 8) & 0x7F
            out |= {sdst, sdst + 1}
        return out
    if k == "vopd":
        return set()
    return set()


def vgpr_writes(ins: Instruction, gen: int):
    """VGPRs the instruction may write: a set of register numbers, ("lane", vgpr, lane) for
    v_writelane, or ALL."""
    ops = OPCODES[gen]
    w, k = ins.w0, ins.kind
    if k in ("vop1", "vop2"):
        op = (w >> 9) & 0xFF if k == "vop1" else (w >> 25) & 0x3F
        if k == "vop1" and op == V_READFIRSTLANE_B32:  # writes an SGPR
            return set()
        dst = (w >> 17) & 0xFF
        return {dst, dst + 1} if op in (ops.vop1_wide if k == "vop1" else ops.vop2_wide) else {dst}
    if k == "vop3":
        op = (w >> 16) & 0x3FF
        if op < 0x100 or op in (ops.v_readlane, ops.v_readfirstlane_vop3):
            return set()
        if op == ops.v_writelane:
            lane = (ins.w1 >> 9) & 0x1FF
            if 128 <= lane <= 192:  # an inline constant lane number
                return ("lane", w & 0xFF, lane - 128)
            return {w & 0xFF}
        dst = w & 0xFF
        return set(range(dst, dst + ops.vop3_wide.get(op, 1)))
    if k == "vop3p":
        op = (w >> 16) & 0x7F
        if gen == 9 and op == 0x59:  # v_accvgpr_write_b32: an AGPR
            return set()
        if gen == 9 and op >= 0x40 and op != 0x58:
            return ALL  # matrix ops write long register tuples
        dst = w & 0xFF
        return {dst, dst + 1}  # packed ops may write a pair
    if k == "vopd":
        x = ins.w1 >> 24
        y = ((ins.w1 >> 17) & 0x7F) << 1
        return {x, y, y + 1}
    if k in ("vintrp", "vinterp", "ldsdir"):
        return ALL
    if k == "ds":
        dst = ins.w1 >> 24
        return set(range(dst, dst + 4))
    if k == "flat":
        op = (w >> 18) & 0x7F
        if op in ops.flat_stores:
            return set()
        dst = ins.w1 >> 24
        return set(range(dst, dst + 4))
    if k in ("mubuf", "mtbuf"):
        op = (w >> 18) & (0xFF if gen == 11 else 0x7F)
        if k == "mubuf" and op in ops.mubuf_stores:
            return set()
        dst = (ins.w1 >> 8) & 0xFF
        return set(range(dst, dst + 4))
    if k == "mimg":
        dst = (ins.w1 >> 8) & 0xFF
        return set(range(dst, dst + 5))
    return set()


# --- the instructions a prologue is made of -----------------------------------------------


def scalar_move(ins: Instruction, gen: int) -> tuple[int, int] | None:
    """(dst, src) of `s_mov_b32 sdst, ssrc`."""
    if ins.kind == "sop1" and (ins.w0 >> 8) & 0xFF == OPCODES[gen].s_mov_b32:
        return (ins.w0 >> 16) & 0x7F, ins.w0 & 0xFF
    return None


def exec_change(ins: Instruction, gen: int) -> str | None:
    """How an instruction sets exec: "all" (`s_or_saveexec -1`, `s_mov exec, -1`), "inactive"
    (`s_xor_saveexec -1`: the lanes inactive on entry), ("restore", sN) (`s_mov exec, sN`),
    "other" for any other exec write, None if exec is untouched."""
    ops = OPCODES[gen]
    if ins.kind == "sop1":
        op, dst, src = (ins.w0 >> 8) & 0xFF, (ins.w0 >> 16) & 0x7F, ins.w0 & 0xFF
        if op in ops.or_saveexec and src == 0xC1:
            return "all"
        if op in ops.xor_saveexec and src == 0xC1:
            return "inactive"
        if dst in (EXEC_LO, EXEC_HI) and op in (ops.s_mov_b32, ops.s_mov_b64):
            return "all" if src == 0xC1 else ("restore", src)
    writes = sgpr_writes(ins, gen, True)
    if writes is ALL or EXEC_LO in writes or EXEC_HI in writes:
        return "other"
    return None


def saveexec_destination(ins: Instruction, gen: int) -> int | None:
    """The SGPR an `s_{or,xor}_saveexec sN, -1` copies the entry exec into."""
    ops = OPCODES[gen]
    if ins.kind == "sop1" and (ins.w0 >> 8) & 0xFF in ops.or_saveexec + ops.xor_saveexec:
        return (ins.w0 >> 16) & 0x7F
    return None


def stack_adjust(ins: Instruction, gen: int) -> tuple[int, int] | None:
    """(sgpr, delta) of `s_add_i32/s_add_u32 sN, sN, K`, `s_sub_* sN, sN, K` or `s_addk_i32 sN, K`."""
    w = ins.w0
    if ins.kind == "sop2":
        op, dst, src0, src1 = (w >> 23) & 0x7F, (w >> 16) & 0x7F, w & 0xFF, (w >> 8) & 0xFF
        if op in (0, 1, 2, 3) and dst == src0:
            k = ins.w1 if src1 == LITERAL else (src1 - 128 if 128 <= src1 <= 192 else
                                                 -(src1 - 192) if 193 <= src1 <= 208 else None)
            if k is None:
                return None
            k = k - (1 << 32) if k >= 1 << 31 else k
            return dst, (k if op in (0, 2) else -k)
    if ins.kind == "sopk" and (w >> 23) & 0x1F == (0x0E if gen == 9 else 0x0F):
        k = w & 0xFFFF
        return (w >> 16) & 0x7F, (k - 0x10000 if k & 0x8000 else k)
    return None


def lane_write(ins: Instruction, gen: int) -> tuple[int, int, int] | None:
    """(vgpr, lane, sgpr) of `v_writelane_b32 vN, sM, lane`."""
    if ins.kind == "vop3" and (ins.w0 >> 16) & 0x3FF == OPCODES[gen].v_writelane:
        src0, lane = ins.w1 & 0x1FF, (ins.w1 >> 9) & 0x1FF
        if src0 < 106 and 128 <= lane <= 192:
            return ins.w0 & 0xFF, lane - 128, src0
    return None


def lane_read(ins: Instruction, gen: int) -> tuple[int, int, int] | None:
    """(sgpr, vgpr, lane) of `v_readlane_b32 sN, vM, lane`."""
    if ins.kind == "vop3" and (ins.w0 >> 16) & 0x3FF == OPCODES[gen].v_readlane:
        src0, lane = ins.w1 & 0x1FF, (ins.w1 >> 9) & 0x1FF
        if src0 >= 256 and 128 <= lane <= 192:
            return ins.w0 & 0xFF, src0 - 256, lane - 128
    return None


def stack_access(ins: Instruction, gen: int) -> tuple[str, int, int, int, int] | None:
    """("store"|"load", vgpr, dwords, base sgpr, byte offset) for a stack slot access without a
    per-lane address: `buffer_store_dword vN, off, s[0:3], sB offset:K` (MUBUF) or
    `scratch_store_dword off, vN, sB offset:K` (flat scratch)."""
    ops = OPCODES[gen]
    w, hi = ins.w0, ins.w1
    if ins.kind == "mubuf":
        op = (w >> 18) & (0xFF if gen == 11 else 0x7F)
        offen_idxen = (w >> 12) & 0x3 if gen != 11 else (hi >> 22) & 0x3  # GFX11 moved OFFEN/IDXEN
        if offen_idxen or (hi >> 16) & 0x1F:  # a per-lane address, or not the s[0:3] scratch V#
            return None
        base, vdata, offset = hi >> 24, (hi >> 8) & 0xFF, w & 0xFFF
        if op in ops.mubuf_stores:
            return "store", vdata, ops.mubuf_stores[op], base, offset
        if op == ops.mubuf_dword_load:
            return "load", vdata, 1, base, offset
        return None
    if ins.kind == "flat":
        seg = (w >> 14) & 0x3 if gen != 11 else (w >> 16) & 0x3
        if seg != 1:  # not the scratch segment
            return None
        sve = (w >> 13) & 1 if gen == 9 else (hi >> 23) & 1 if gen == 11 else 0
        if sve:  # gfx940 and GFX11 scratch may add a VGPR address to the SGPR one
            return None
        op = (w >> 18) & 0x7F
        bits = ops.flat_offset_bits
        offset = w & ((1 << bits) - 1)
        if offset & (1 << (bits - 1)):
            offset -= 1 << bits
        base, data, vdst = (hi >> 16) & 0x7F, (hi >> 8) & 0xFF, hi >> 24
        if op in ops.flat_stores:
            return "store", data, ops.flat_stores[op], base, offset
        if op == ops.flat_dword_load:
            return "load", vdst, 1, base, offset
    return None
