"""Call frame information: the committed examples against their llvm-dwarfdump
listing, hand-built CFI in every supported shape, unwinding with fake
registers and memory, and malformed input."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.dwarf.asm import encode_sleb as sleb, encode_uleb as uleb
from aspace_dap.dwarf.cfi import SAME_VALUE, UNDEFINED, CallFrameInfo, CfaRule, RegRule, unwind, unwind_frame
from aspace_dap.errors import AspaceError, CodeObjectError, UnavailableError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "divergent_call"
EM_AMDGPU = 224
PC_64, SGPR30, SGPR31, SGPR32, SGPR33 = 16, 62, 63, 64, 65
VGPR15_W64, VGPR40_W64 = 2560 + 15, 2560 + 40


# --- building CFI ------------------------------------------------------------------




def block(b: bytes) -> bytes:
    return uleb(len(b)) + b


def entry(body: bytes, fmt64: bool = False) -> bytes:
    """An initial length plus body, padded with DW_CFA_nop to the address size like producers do."""
    body += b"\0" * (-len(body) % 4)
    if fmt64:
        return b"\xff\xff\xff\xff" + struct.pack("<Q", len(body)) + body
    return struct.pack("<I", len(body)) + body


def cie(instructions: bytes = b"", *, version: int = 4, augmentation: bytes = b"", ra: int = PC_64,
        code_align: int = 4, data_align: int = 4, fmt64: bool = False, aug_data: bytes | None = None,
        eh: bool = False) -> bytes:
    cie_id = b"\0" * (8 if fmt64 else 4) if eh else (b"\xff" * (8 if fmt64 else 4))
    body = cie_id + bytes([version]) + augmentation + b"\0"
    if version >= 4:
        body += bytes([8, 0])
    body += uleb(code_align) + sleb(data_align) + (bytes([ra]) if version == 1 else uleb(ra))
    if aug_data is not None:
        body += block(aug_data)
    return entry(body + instructions, fmt64)


def fde(cie_offset: int, start: int, size: int, instructions: bytes = b"", *, fmt64: bool = False) -> bytes:
    ptr = struct.pack("<Q" if fmt64 else "<I", cie_offset)
    return entry(ptr + struct.pack("<QQ", start, size) + instructions, fmt64)


class FakeSection:
    def __init__(self, data: bytes, address: int = 0):
        self._data = data
        self._address = address

    def __getitem__(self, key):
        return {"sh_type": "SHT_PROGBITS", "sh_addr": self._address}[key]

    def data(self) -> bytes:
        return self._data


class FakeElf:
    def __init__(self, sections: dict[str, tuple[bytes, int]]):
        self.sections = sections

    def get_section_by_name(self, name: str):
        found = self.sections.get(name)
        return FakeSection(*found) if found is not None else None


def cfi_for(debug_frame: bytes = b"", eh_frame: bytes = b"", eh_address: int = 0, machine=EM_AMDGPU):
    sections = {}
    if debug_frame:
        sections[".debug_frame"] = (debug_frame, 0)
    if eh_frame:
        sections[".eh_frame"] = (eh_frame, eh_address)
    return CallFrameInfo(FakeElf(sections), e_machine=machine)


# DW_CFA_* bytes used below.
def advance(n: int) -> bytes:
    return bytes([0x40 | n])


def def_aspace_cfa(reg: int, offset: int, aspace: int) -> bytes:
    return b"\x30" + uleb(reg) + uleb(offset) + uleb(aspace)


def expression(reg: int, expr: bytes) -> bytes:
    return b"\x10" + uleb(reg) + block(expr)


REGX = 0x90
PIECE = 0x93
BIT_PIECE = 0x9D
SGPR_PAIR_30_31 = bytes([REGX]) + uleb(SGPR30) + bytes([PIECE, 4, REGX]) + uleb(SGPR31) + bytes([PIECE, 4])
# s33 in lane 14 of v15, as the -O0 prologue of `settle` keeps it.
S33_IN_V15_LANE14 = bytes([REGX]) + uleb(VGPR15_W64) + bytes([BIT_PIECE, 32]) + uleb(14 * 32)


# --- the committed examples ----------------------------------------------------------
# From `llvm-dwarfdump-15 --debug-frame`: one CIE (version 4, augmentation "",
# address size 8, code and data alignment 4, return address column 16, only
# DW_CFA_nop) and FDEs without a single instruction.


def example_cfi(opt: str) -> CallFrameInfo:
    with open(EXAMPLES / f"divergent_call.gfx90a.{opt}.co", "rb") as f:
        elf = ELFFile(f)
        info = CallFrameInfo(elf)
        info.fde_ranges()  # read now, while the file is open
    return info


O0_FDES = [
    (0x1900, 0x1910), (0x1910, 0x1920), (0x1920, 0x2FA4), (0x2FA4, 0x30B0), (0x30B0, 0x345C),
    (0x3500, 0x4240), (0x4240, 0x4334), (0x4334, 0x44D8), (0x44D8, 0x4D9C), (0x4D9C, 0x4DB0),
    (0x4DB0, 0x53D8), (0x53D8, 0x54C8), (0x54C8, 0x555C), (0x555C, 0x59B4), (0x59B4, 0x5E04),
    (0x5E04, 0x6060), (0x6060, 0x64BC), (0x64BC, 0x6C58), (0x6C58, 0x6E1C), (0x6E1C, 0xA2A4),
    (0xA2A4, 0xAC30), (0xAC30, 0xAF0C), (0xAF0C, 0xB1E4), (0xB600, 0xB6E8), (0xB6E8, 0xB7D0),
    (0xB7D0, 0xB8B8), (0xB8B8, 0xB9B4), (0xB9B4, 0xBAB0), (0xBAB0, 0xBBAC),
]


def test_example_fde_ranges_match_the_listing():
    assert example_cfi("O0").fde_ranges() == O0_FDES
    assert example_cfi("O2").fde_ranges() == [(0x1700, 0x1744), (0x1800, 0x1994)]


@pytest.mark.parametrize("opt, pc, fde_range", [
    ("O0", 0x30B0, (0x30B0, 0x345C)),  # settle: entry
    ("O0", 0x30CC, (0x30B0, 0x345C)),  # settle: s33 = s32, after s33 went to v15 lane 14
    ("O0", 0x3458, (0x30B0, 0x345C)),  # settle: s_setpc_b64 s[30:31]
    ("O0", 0x3500, (0x3500, 0x4240)),  # the kernel
    ("O2", 0x1700, (0x1700, 0x1744)),  # settle: entry
    ("O2", 0x1740, (0x1700, 0x1744)),  # settle: s_setpc_b64 s[30:31]
    ("O2", 0x18E0, (0x1800, 0x1994)),  # the kernel's s_swappc_b64 to settle
])
def test_example_rows_define_nothing(opt, pc, fde_range):
    rules = example_cfi(opt).rules_at(pc)
    assert rules.cfa == CfaRule() and not rules.cfa.defined
    assert rules.registers == {}
    assert rules.return_address_register == PC_64
    assert rules.address_size == 8 and rules.e_machine == EM_AMDGPU
    assert rules.fde_range == fde_range and rules.row_range == fde_range
    # The AMDGPU guide's default for unmentioned columns, but never for the return address.
    assert rules.rule_for(SGPR33) == SAME_VALUE
    assert rules.rule_for(PC_64) == UNDEFINED


@pytest.mark.parametrize("opt, pc", [("O0", 0x345C), ("O0", 0x34F0), ("O0", 0x18FF), ("O2", 0x1744), ("O2", 0x1994)])
def test_example_pcs_outside_every_fde(opt, pc):
    assert example_cfi(opt).rules_at(pc) is None


def test_example_rows_unwind_to_nothing_known():
    rules = example_cfi("O2").rules_at(0x1710)
    regs = {PC_64: 0x1710, SGPR30: 0x18E4, SGPR31: 0, SGPR32: 0x400, SGPR33: 0x400}
    frame = unwind_frame(rules, regs.get, lambda *a: pytest.fail("no memory read expected"),
                         registers=[SGPR32, SGPR33])
    assert frame.cfa is None and frame.caller_pc is None
    assert frame.registers == {PC_64: None, SGPR32: None, SGPR33: None}


# --- hand-built CFI in the shapes the AMDGPU guide and ROCm's compiler use -----------------


def rocm_function_cfi() -> CallFrameInfo:
    """Like ROCm's CFI for `settle` at -O0: CFA = SGPR32 in private_wave at entry,
    PC in s[30:31]; then s33 saved to v15 lane 14, CFA moved to SGPR33, v40
    spilled at CFA+8, and an epilogue that restores the entry state."""
    program = (
        def_aspace_cfa(SGPR32, 0, 6) + expression(PC_64, SGPR_PAIR_30_31)
        + advance(5)  # 0x1014
        + expression(SGPR33, S33_IN_V15_LANE14)
        + advance(2)  # 0x101c
        + b"\x0d" + uleb(SGPR33)  # def_cfa_register: keeps offset and address space
        + b"\x05" + uleb(VGPR40_W64) + uleb(2)  # offset_extended: CFA + 2*4
        + advance(8)  # 0x103c
        + b"\x0a"  # remember_state
        + def_aspace_cfa(SGPR32, 0, 6) + b"\x06" + uleb(SGPR33) + b"\x06" + uleb(VGPR40_W64)
        + advance(1)  # 0x1040
        + b"\x0b"  # restore_state
    )
    frame = cie() + fde(0, 0x1000, 0x60, program)
    return cfi_for(frame)


def test_rows_follow_the_program():
    info = rocm_function_cfi()
    entry_rules = info.rules_at(0x1000)
    assert entry_rules.cfa == CfaRule(SGPR32, 0, 6)
    assert entry_rules.registers == {PC_64: RegRule("expression", 0, SGPR_PAIR_30_31)}
    assert entry_rules.row_range == (0x1000, 0x1014)
    assert info.rules_at(0x1013).row_range == (0x1000, 0x1014)

    saved = info.rules_at(0x1014)
    assert saved.registers[SGPR33] == RegRule("expression", 0, S33_IN_V15_LANE14)
    assert saved.cfa == CfaRule(SGPR32, 0, 6)

    body = info.rules_at(0x1030)
    assert body.cfa == CfaRule(SGPR33, 0, 6)
    assert body.registers[VGPR40_W64] == RegRule("offset", 8)
    assert body.row_range == (0x101C, 0x103C)

    epilogue = info.rules_at(0x103C)
    assert epilogue.cfa == CfaRule(SGPR32, 0, 6)
    assert SGPR33 not in epilogue.registers and VGPR40_W64 not in epilogue.registers
    assert epilogue.registers[PC_64].kind == "expression"

    after = info.rules_at(0x1050)  # restore_state brought the body's rules back
    assert after.cfa == CfaRule(SGPR33, 0, 6)
    assert after.registers[SGPR33].kind == "expression"
    assert after.row_range == (0x1040, 0x1060)
    assert info.rules_at(0x1060) is None


def wave_registers(**extra) -> dict[int, int]:
    v15 = 0
    v15 |= 0x00000800 << (14 * 32)  # caller's s33 in lane 14
    v15 |= 0xDEADBEEF << (13 * 32)  # a neighbour that must not leak in
    regs = {PC_64: 0x1030, SGPR30: 0x1E70, SGPR31: 0x1, SGPR32: 0x1800, SGPR33: 0x1000, VGPR15_W64: v15}
    regs.update(extra)
    return regs


def test_unwind_a_body_row():
    rules = rocm_function_cfi().rules_at(0x1030)
    regs = wave_registers()
    v40 = bytes(range(256))
    reads = []

    def read_memory(space, address, size):
        reads.append((space, address, size))
        return v40 if (space, address, size) == ("private_wave", 0x1008, 256) else None

    frame = unwind_frame(rules, regs.get, read_memory, registers=[SGPR32])
    assert frame.cfa == 0x1000 and frame.cfa_space == "private_wave"
    assert frame.caller_pc == 0x1_0000_1E70
    assert frame.registers[SGPR33] == 0x800
    assert frame.registers[VGPR40_W64] == int.from_bytes(v40, "little")
    assert frame.registers[SGPR32] == 0x1800  # default same value: the CFA row is defined
    assert reads == [("private_wave", 0x1008, 256)]
    assert unwind(rules, regs.get, read_memory) == {k: v for k, v in frame.registers.items() if k != SGPR32}


def test_unwind_reports_unknown_parts_as_none():
    rules = rocm_function_cfi().rules_at(0x1030)
    regs = wave_registers()
    del regs[SGPR31]

    def unavailable(space, address, size):
        raise UnavailableError("not in the dump")

    frame = unwind_frame(rules, regs.get, unavailable)
    assert frame.caller_pc is None  # half of the pair is missing
    assert frame.registers[VGPR40_W64] is None
    assert frame.registers[SGPR33] == 0x800
    short = unwind_frame(rules, wave_registers().get, lambda s, a, n: b"\1\2")
    assert short.registers[VGPR40_W64] is None  # a short read is not a value


def test_unwind_without_the_cfa_register():
    rules = rocm_function_cfi().rules_at(0x1030)
    regs = wave_registers()
    del regs[SGPR33]
    frame = unwind_frame(rules, regs.get, lambda *a: pytest.fail("CFA unknown: no read"))
    assert frame.cfa is None and frame.registers[VGPR40_W64] is None
    assert frame.caller_pc == 0x1_0000_1E70


def test_plain_def_cfa_space_comes_from_the_caller():
    frame = cie(b"\x0c" + uleb(SGPR32) + uleb(16)) + fde(0, 0x2000, 0x10, bytes([0x80 | 5, 1]))
    rules = cfi_for(frame).rules_at(0x2000)
    assert rules.cfa == CfaRule(SGPR32, 16, None)
    assert rules.registers == {5: RegRule("offset", 4)}
    mem = {("private_lane", 0x114): b"\x2a\0\0\0"}
    got = unwind_frame(rules, {SGPR32: 0x100}.get, lambda s, a, n: mem.get((s, a)),
                       cfa_space_for_register=lambda reg: "private_lane")
    assert got.cfa == 0x110 and got.cfa_space == "private_lane" and got.registers[5] == 42
    default = unwind_frame(rules, {SGPR32: 0x100}.get, lambda s, a, n: None)
    assert default.cfa_space == "private_wave"


def test_expression_rules_go_through_the_callback():
    cfa_expr = bytes([0x30, 0x36, 0xE9, 0x02])  # lit0; lit6; DW_OP_LLVM_form_aspace_address
    program = (b"\x0f" + block(cfa_expr)
               + b"\x16" + uleb(7) + block(b"\x23\x10")  # val_expression r7: CFA + 16
               + expression(8, b"\x23\x20")  # r8 saved at CFA + 32
               + b"\x14" + uleb(9) + uleb(3)  # val_offset r9: CFA + 12
               + b"\x09" + uleb(10) + uleb(11)  # r10 is in r11
               + b"\x07" + uleb(12) + b"\x08" + uleb(13))
    rules = cfi_for(cie() + fde(0, 0x3000, 0x10, program)).rules_at(0x3000)
    assert rules.cfa == CfaRule(expression=cfa_expr)
    calls = []

    def evaluate(expr, cfa):
        calls.append((expr, cfa))
        if expr == cfa_expr:
            return 0x40
        return cfa + expr[1]

    mem = {("private_wave", 0x60, 4): b"\x07\0\0\0"}
    frame = unwind_frame(rules, {11: 99, 13: 5}.get, lambda s, a, n: mem.get((s, a, n)), evaluate)
    assert frame.cfa == 0x40 and frame.cfa_space == "private_wave"
    assert frame.registers == {7: 0x50, 8: 7, 9: 0x4C, 10: 99, 12: None, 13: 5, PC_64: None}
    assert calls[0] == (cfa_expr, None)
    no_callback = unwind_frame(rules, {11: 99}.get, lambda *a: None)
    assert no_callback.cfa is None and no_callback.registers[7] is None and no_callback.registers[8] is None


def test_every_advance_and_offset_form():
    program = (
        b"\x12" + uleb(1) + sleb(-2)  # def_cfa_sf r1, -2*-8 = 16
        + b"\x02\x01"  # advance_loc1: 0x4001
        + b"\x11" + uleb(3) + sleb(-1)  # offset_extended_sf r3: +8
        + b"\x03\x01\x00"  # advance_loc2: 0x4002
        + b"\x13" + sleb(-4)  # def_cfa_offset_sf: 32
        + b"\x04\x01\x00\x00\x00"  # advance_loc4: 0x4003
        + b"\x2e" + uleb(8)  # GNU_args_size: ignored
        + b"\x2f" + uleb(4) + uleb(1)  # GNU_negative_offset_extended r4: -(1 * -8) = +8
        + b"\x15" + uleb(5) + sleb(2)  # val_offset_sf r5: -16
        + b"\x01" + struct.pack("<Q", 0x4010)  # set_loc
        + b"\x0e" + uleb(48) + b"\xc3"  # def_cfa_offset 48; restore r3
        + b"\x31" + uleb(2) + sleb(-1) + uleb(5)  # LLVM_def_aspace_cfa_sf r2, +8, private_lane
    )
    frame = cie(version=3, code_align=1, data_align=-8) + fde(0, 0x4000, 0x20, program)
    info = cfi_for(frame, machine=62)
    assert info.rules_at(0x4000).cfa == CfaRule(1, 16)
    assert info.rules_at(0x4001).registers == {3: RegRule("offset", 8)}
    assert info.rules_at(0x4002).cfa == CfaRule(1, 32)
    r3 = info.rules_at(0x400F)
    assert r3.registers == {3: RegRule("offset", 8), 4: RegRule("offset", 8), 5: RegRule("val_offset", -16)}
    assert r3.row_range == (0x4003, 0x4010)
    last = info.rules_at(0x4010)
    assert last.cfa == CfaRule(2, 8, 5)
    assert 3 not in last.registers and last.default_rule == UNDEFINED
    frame = unwind_frame(last, {2: 0x100}.get, lambda s, a, n: None, aspace_names={5: "lane_stack"})
    assert frame.cfa == 0x108 and frame.cfa_space == "lane_stack"


def test_restore_goes_back_to_the_cie_rules():
    frame = cie(b"\x0c" + uleb(1) + uleb(0) + b"\x08" + uleb(3)) + fde(0, 0x10, 0x10, b"\x83\x01" + advance(1) + b"\x06\x03")
    info = cfi_for(frame, machine=62)
    assert info.rules_at(0x10).registers == {3: RegRule("offset", 4)}
    assert info.rules_at(0x14).registers == {3: SAME_VALUE}


@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize("fmt64", [False, True])
def test_cie_versions_and_64_bit_dwarf(version, fmt64):
    c = cie(b"\x0c" + uleb(SGPR32) + uleb(0), version=version, fmt64=fmt64, augmentation=b"[amd:v0.0]")
    f = fde(0, 0x800, 0x40, advance(4) + b"\x0e" + uleb(8), fmt64=fmt64)
    f2 = fde(0, 0x900, 0x10, fmt64=fmt64)
    info = cfi_for(c + f + f2)
    assert info.fde_ranges() == [(0x800, 0x840), (0x900, 0x910)]
    assert info.rules_at(0x80F).cfa == CfaRule(SGPR32, 0)
    assert info.rules_at(0x810).cfa == CfaRule(SGPR32, 8)
    assert info.rules_at(0x905).cfa == CfaRule(SGPR32, 0)
    assert info.rules_at(0x840) is None


def test_eh_frame_with_pc_relative_pointers():
    eh_address = 0x5000
    c = cie(b"\x0c" + uleb(7) + uleb(8), version=1, augmentation=b"zR", data_align=-8, code_align=1,
            aug_data=bytes([0x1B]), eh=True)  # pcrel | sdata4
    fde_pos = len(c)
    pointer_field = fde_pos + 4
    start_field = fde_pos + 8
    start = 0x1200
    body = (struct.pack("<I", pointer_field)  # distance back to the CIE
            + struct.pack("<i", start - (eh_address + start_field)) + struct.pack("<i", 0x30)
            + uleb(0) + bytes([0x80 | 16]) + uleb(1))
    eh = c + entry(body) + b"\0\0\0\0"
    info = cfi_for(eh_frame=eh, eh_address=eh_address, machine=62)
    assert info.fde_ranges() == [(0x1200, 0x1230)]
    rules = info.rules_at(0x1210)
    assert rules.cfa == CfaRule(7, 8) and rules.registers == {16: RegRule("offset", -8)}
    mem = {("global", 0x1000): struct.pack("<Q", 0x401234)}
    assert unwind(rules, {7: 0x1000}.get, lambda s, a, n: mem.get((s, a)))[16] == 0x401234


# --- malformed input -------------------------------------------------------------------


def good_frame() -> bytes:
    return cie(def_aspace_cfa(SGPR32, 0, 6)) + fde(0, 0x1000, 0x20, expression(PC_64, SGPR_PAIR_30_31) + advance(2))


@pytest.mark.parametrize("cut", [3, 8, 12, 18, 22, 30, 44])
def test_truncated_cfi_raises_code_object_error(cut):
    info = cfi_for(good_frame()[:cut])
    with pytest.raises(CodeObjectError):
        info.rules_at(0x1000)


def test_a_lone_cie_covers_nothing():
    lone = cie(def_aspace_cfa(SGPR32, 0, 6))
    assert good_frame().startswith(lone)
    assert cfi_for(lone).rules_at(0x1000) is None


def test_cie_too_short_for_its_fields():
    body = b"\xff\xff\xff\xff\x04\0"  # ends inside the header
    info = cfi_for(struct.pack("<I", len(body)) + body + fde(0, 0x1000, 0x20))
    with pytest.raises(CodeObjectError, match="truncated"):
        info.rules_at(0x1000)


@pytest.mark.parametrize("op", [b"\x2d", b"\x1d", b"\x3f", b"\x17"])
def test_unknown_cfa_instruction(op):
    info = cfi_for(cie() + fde(0, 0x1000, 0x20, op))
    with pytest.raises(CodeObjectError, match="unknown call frame instruction"):
        info.rules_at(0x1000)


@pytest.mark.parametrize("augmentation", [b"eh", b"amd", b"[amd:v0.0", b"S"])
def test_bad_augmentation(augmentation):
    info = cfi_for(cie(augmentation=augmentation) + fde(0, 0x1000, 0x20))
    with pytest.raises(CodeObjectError, match="augmentation"):
        info.rules_at(0x1000)


@pytest.mark.parametrize("frame, message", [
    (cie(version=2) + fde(0, 0x1000, 0x20), "version"),
    (cie() + fde(0x400, 0x1000, 0x20), "CIE pointer"),
    (cie() + fde(0, 0x1000, 0x20) + fde(16, 0x2000, 0x20), "not a CIE"),
    (cie() + fde(0, 0x1000, 0x20, b"\x0b"), "restore_state"),
    (cie() + fde(0, 0x1000, 0x20, b"\x0f\x01\x30" + b"\x0e\x04"), "expression"),
    (cie() + fde(0, 0x1000, 0x20, b"\x0d\x01"), "before any CFA"),
    (cie() + fde(0, 0x1000, 0x20, b"\x10\x01\x40\x30"), "truncated"),
])
def test_ill_formed_cfi(frame, message):
    with pytest.raises(CodeObjectError, match=message):
        cfi_for(frame).rules_at(0x1000)


def test_remember_state_depth_is_bounded():
    info = cfi_for(cie() + fde(0, 0x1000, 0x20, b"\x0a" * 2000))
    with pytest.raises(CodeObjectError, match="nested"):
        info.rules_at(0x1000)


def test_garbage_raises_only_our_errors():
    rng = random.Random(7)
    base = good_frame()
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        info = cfi_for(bytes(data))
        try:
            for pc in (0x1000, 0x1004, 0x1010):
                rules = info.rules_at(pc)
                if rules is not None:
                    unwind(rules, lambda r: 0x10, lambda s, a, n: bytes(n), lambda e, c: 0)
        except AspaceError:
            pass
