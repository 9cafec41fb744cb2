"""Where a GFX9 device function put its caller's registers: prologue analysis.

Debian's clang-15 emits `.debug_frame` entries without rules for AMDGPU, so a
caller frame cannot come from CFI. The calling convention plus the callee's
own prologue can: on entry the return address is in s[30:31] and the caller's
stack pointer in s32; a prologue that needs a frame stores the CSR VGPR it
spills into (`buffer_store_dword vN, off, s[0:3], s32 offset:K`), parks s33
(and s30/s31 when it makes calls) in lanes of that VGPR (`v_writelane_b32`),
and sets `s33 = s32`. The epilogue undoes it with `v_readlane_b32`. Scanning
the instructions between the function start and the stopped PC tells which of
these have happened.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

V_READLANE, V_WRITELANE = 0x289, 0x28A  # GFX9 VOP3 opcodes
BUFFER_LOAD_DWORD, BUFFER_STORE_DWORD = 0x14, 0x1C  # GFX9 MUBUF opcodes
S_MOV_B32 = 0x00  # SOP1
LITERAL = 0xFF


@dataclass
class SavedRegisters:
    """What the callee has done by the stopped PC."""

    sgpr_in_lane: dict[int, tuple[int, int]] = field(default_factory=dict)  # sN -> (vgpr, lane)
    vgpr_in_scratch: dict[int, tuple[int, int]] = field(default_factory=dict)  # vN -> (soffset sgpr, offset)
    frame_pointer_set: bool = False  # `s_mov_b32 s33, s32` ran: s33 holds the entry stack pointer
    decoded: bool = True  # False when an instruction could not be sized (the scan stopped early)


def instruction_size(code: bytes, pos: int) -> int | None:
    """Bytes of the GFX9 instruction at `pos` (4, 8 or 12), None past the end or if unknown."""
    if pos + 4 > len(code):
        return None
    w = struct.unpack_from("<I", code, pos)[0]
    if w >> 31 == 0:  # VOP2, VOP1, VOPC: 32 bits, plus a literal / SDWA / DPP dword
        src0 = w & 0x1FF
        return 8 if src0 in (LITERAL, 0xF9, 0xFA) else 4
    top6 = w >> 26
    if w >> 30 == 0b10:  # scalar ALU
        if w >> 23 == 0x17F:  # SOPP
            return 4
        if w >> 23 == 0x17E:  # SOPC
            return 8 if (w & 0xFF) == LITERAL or (w >> 8) & 0xFF == LITERAL else 4
        if w >> 23 == 0x17D:  # SOP1
            return 8 if (w & 0xFF) == LITERAL else 4
        if w >> 28 == 0xB:  # SOPK; s_setreg_imm32_b32 carries a literal
            return 8 if (w >> 23) & 0x1F == 0x14 else 4
        return 8 if (w & 0xFF) == LITERAL or (w >> 8) & 0xFF == LITERAL else 4  # SOP2
    if top6 == 0x35:  # VINTRP
        return 4
    if top6 in (0x30, 0x31, 0x34, 0x36, 0x37, 0x38, 0x3A, 0x3C):  # SMEM EXP VOP3 DS FLAT MUBUF MTBUF MIMG
        return 8 if pos + 8 <= len(code) else None
    return None


def scan(code: bytes, start: int, stop: int) -> SavedRegisters:
    """Scan the callee's code from its first byte (`start`) up to, not including, `stop`."""
    saved = SavedRegisters()
    pos = start
    while pos < stop:
        size = instruction_size(code, pos)
        if size is None:
            saved.decoded = False
            break
        w = struct.unpack_from("<I", code, pos)[0]
        if w >> 31 == 1 and w >> 23 == 0x17D and (w >> 8) & 0xFF == S_MOV_B32:
            if (w >> 16) & 0x7F == 33 and w & 0xFF == 32:
                saved.frame_pointer_set = True
        elif w >> 26 == 0x34 and size == 8:
            op, hi = (w >> 16) & 0x3FF, struct.unpack_from("<I", code, pos + 4)[0]
            src0, src1 = hi & 0x1FF, (hi >> 9) & 0x1FF
            if op == V_WRITELANE and src0 < 102 and 128 <= src1 <= 192:
                saved.sgpr_in_lane[src0] = (w & 0xFF, src1 - 128)
            elif op == V_READLANE and 128 <= src1 <= 192:
                vgpr = (src0 - 256) if src0 >= 256 else None
                sdst = w & 0xFF
                if sdst in saved.sgpr_in_lane and vgpr == saved.sgpr_in_lane[sdst][0]:
                    del saved.sgpr_in_lane[sdst]  # the epilogue restored it
                    if sdst == 33:
                        saved.frame_pointer_set = False  # s33 is the caller's again (s32 too, by then)
        elif w >> 26 == 0x38 and size == 8:
            op = (w >> 18) & 0x7F
            hi = struct.unpack_from("<I", code, pos + 4)[0]
            offen_idxen = (w >> 12) & 0x3
            vdata, soffset, offset = (hi >> 8) & 0xFF, hi >> 24, w & 0xFFF
            if offen_idxen == 0 and soffset in (32, 33):
                if op == BUFFER_STORE_DWORD and vdata not in saved.vgpr_in_scratch:
                    saved.vgpr_in_scratch[vdata] = (soffset, offset)
                elif op == BUFFER_LOAD_DWORD and vdata in saved.vgpr_in_scratch:
                    del saved.vgpr_in_scratch[vdata]
        pos += size
    return saved
