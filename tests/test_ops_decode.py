"""DWARF expression decoding, disassembly and assembly, per dialect."""

from __future__ import annotations

import pytest

from aspace_dap.dwarf.asm import assemble, encode_sleb, encode_uleb
from aspace_dap.dwarf.opcodes import ALIASES, all_specs, canonical, specs_for
from aspace_dap.dwarf.ops import Op, decode, decode_cached, disassemble
from aspace_dap.dwarf.target import Dialect
from aspace_dap.errors import AspaceError, DecodeError

GNU = Dialect(vendor_ops="gnu")
NVIDIA = Dialect(vendor_ops="nvidia")
AMD = Dialect(vendor_ops="amd", heterogeneous=True)
AMD_LEGACY = Dialect(vendor_ops="amd-legacy", heterogeneous=True)
INTEL = Dialect(vendor_ops="intel")
ALL_DIALECTS = [GNU, NVIDIA, AMD, AMD_LEGACY, INTEL]


def names(ops):
    return [op.name for op in ops]


# Sample operands per kind: (text for the assembler, encoded bytes, decoded values).
# The bytes are written out by hand (LEB128 examples from the DWARF standard's
# appendix) so the decoder is checked against something other than the assembler.
def sample(kind: str, dialect: Dialect) -> tuple[str, bytes, tuple]:
    asize, osize = dialect.address_size, dialect.offset_size
    samples = {
        "u8": ("0xfe", b"\xfe", (0xFE,)),
        "s8": ("-2", b"\xfe", (-2,)),
        "u16": ("0xbeef", b"\xef\xbe", (0xBEEF,)),
        "s16": ("-300", b"\xd4\xfe", (-300,)),
        "u32": ("0x12345678", b"\x78\x56\x34\x12", (0x12345678,)),
        "s32": ("-2", b"\xfe\xff\xff\xff", (-2,)),
        "u64": ("0x0102030405060708", bytes(range(8, 0, -1)), (0x0102030405060708,)),
        "s64": ("-1", b"\xff" * 8, (-1,)),
        "uleb": ("12857", b"\xb9\x64", (12857,)),
        "sleb": ("-129", b"\xff\x7e", (-129,)),
        "addr": ("0x1000", (0x1000).to_bytes(asize, "little"), (0x1000,)),
        "ref": ("0x2c", (0x2C).to_bytes(osize, "little"), (0x2C,)),
        "block": ("4 0x3fc00000", b"\x04\x00\x00\xc0\x3f", (b"\x00\x00\xc0\x3f",)),
        "expr": ("(regx 65)", b"\x02\x90\x41", (b"\x90\x41",)),
        "typed_const": ("bytes:0000803f", b"\x04\x00\x00\x80\x3f", (b"\x00\x00\x80\x3f",)),
        "encoded_addr": ("0x1234 0x03", b"\x03\x34\x12\x00\x00", (0x1234, 3)),
    }
    return samples[kind]


def spec_cases():
    """(dialect, spec, legacy?) for every encoding in every dialect table."""
    for dialect in ALL_DIALECTS:
        single, user = specs_for(dialect.vendor_ops)
        for spec in single:
            legacy = spec.vendor == "amd"
            yield pytest.param(dialect, spec, legacy, id=f"{dialect.vendor_ops}-{spec.name}-{spec.code:#x}")
        for spec in user:
            yield pytest.param(dialect, spec, False, id=f"{dialect.vendor_ops}-{spec.name}-user")


@pytest.mark.parametrize("dialect, spec, legacy", list(spec_cases()))
def test_every_operation_decodes_and_round_trips(dialect, spec, legacy):
    texts, encoded, values = [spec.name], bytearray([spec.code]), []
    if spec.user_subop is not None:
        encoded += bytes([spec.user_subop])
    for kind in spec.operands:
        text, raw, decoded = sample(kind, dialect)
        texts.append(text)
        encoded += raw
        values += decoded
    encoded = bytes(encoded)
    # the decoder reads the hand-built bytes
    ops = decode(encoded + b"\x96", dialect)
    assert ops[0] == Op(0, spec.code, spec.name, tuple(values), len(encoded))
    assert ops[1] == Op(len(encoded), 0x96, "DW_OP_nop", (), 1)
    # the assembler produces exactly those bytes, and disassembly reads back
    assert assemble(" ".join(texts), dialect, legacy_amd=legacy) == encoded
    assert assemble(disassemble(ops, dialect), dialect, legacy_amd=legacy) == encoded + b"\x96"
    assert assemble(disassemble(ops), dialect, legacy_amd=legacy) == encoded + b"\x96"


def test_every_known_name_is_in_some_dialect():
    reachable = set()
    for dialect in ALL_DIALECTS:
        single, user = specs_for(dialect.vendor_ops)
        reachable |= {s.name for s in single + user}
    assert reachable == {s.name for s in all_specs()}


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"\x03\x00\x10\x00\x00\x00\x00\x00\x00", [("DW_OP_addr", (0x1000,))]),
        (b"\x28\xfe\xff", [("DW_OP_bra", (-2,))]),
        (b"\x2f\x05\x00", [("DW_OP_skip", (5,))]),
        (b"\x30\x4f", [("DW_OP_lit0", ()), ("DW_OP_lit31", ())]),
        (b"\x50\x6f", [("DW_OP_reg0", ()), ("DW_OP_reg31", ())]),
        (b"\x70\x7f\x8f\x00", [("DW_OP_breg0", (-1,)), ("DW_OP_breg31", (0,))]),
        (b"\x91\x80\x01", [("DW_OP_fbreg", (128,))]),
        (b"\x9d\x20\x08", [("DW_OP_bit_piece", (32, 8))]),
        (b"\x9e\x00", [("DW_OP_implicit_value", (b"",))]),
        (b"\xa0\x10\x00\x00\x00\x7c", [("DW_OP_implicit_pointer", (0x10, -4))]),
        (b"\xa3\x03\x90\x41\x06", [("DW_OP_entry_value", (b"\x90\x41\x06",))]),
        (b"\xa5\x05\x2a", [("DW_OP_regval_type", (5, 42))]),
        (b"\xa6\x04\x2a", [("DW_OP_deref_type", (4, 42))]),
        (b"\xa7\x08\x2a", [("DW_OP_xderef_type", (8, 42))]),
        (b"\xa8\x2a\xa9\x00", [("DW_OP_convert", (42,)), ("DW_OP_reinterpret", (0,))]),
        (b"\x9a\x44\x33\x22\x11", [("DW_OP_call_ref", (0x11223344,))]),
        (b"\xfa\x10\x00\x00\x00", [("DW_OP_GNU_parameter_ref", (0x10,))]),
        (b"\xf1\x00" + b"\x00" * 7 + b"\x01", [("DW_OP_GNU_encoded_addr", (1 << 56, 0))]),
        (b"\xf1\x09\x7f", [("DW_OP_GNU_encoded_addr", (-1, 9))]),
        (b"\xf1\x1b\xfc\xff\xff\xff", [("DW_OP_GNU_encoded_addr", (-4, 0x1B))]),
        # largest ULEB and most negative SLEB that fit 64 bits, 10 bytes each
        (b"\x10" + b"\xff" * 9 + b"\x01", [("DW_OP_constu", ((1 << 64) - 1,))]),
        (b"\x11" + b"\x80" * 9 + b"\x7f", [("DW_OP_consts", (-(1 << 63),))]),
        # redundant padding is legal LEB128
        (b"\x10\x85\x80\x00", [("DW_OP_constu", (5,))]),
    ],
)
def test_specific_encodings(raw, expected):
    ops = decode(raw, GNU)
    assert [(op.name, op.operands) for op in ops] == expected
    assert sum(op.size for op in ops) == len(raw)


def test_address_and_reference_sizes_follow_the_dialect():
    d32 = Dialect(address_size=4, offset_size=8)
    assert decode(b"\x03\x78\x56\x34\x12", d32)[0].operands == (0x12345678,)
    assert decode(b"\x9a" + (7).to_bytes(8, "little"), d32)[0].operands == (7,)
    with pytest.raises(DecodeError):
        decode(b"\x9a\x07\x00\x00\x00", d32)
    # DWARF 2 wrote DIE references with the address size
    d2 = Dialect(version=2, address_size=8, offset_size=4)
    assert decode(b"\x9a" + (7).to_bytes(8, "little"), d2)[0].size == 9
    assert assemble("call_ref 7; addr 0x10", d32) == b"\x9a" + (7).to_bytes(8, "little") + b"\x03\x10\x00\x00\x00"


def test_input_types_and_empty_expression():
    raw = b"\x90\x41\x06"
    for data in (raw, bytearray(raw), memoryview(raw)):
        assert names(decode(data, AMD)) == ["DW_OP_regx", "DW_OP_deref"]
    assert decode(b"", AMD) == []
    cached = decode_cached(raw, AMD)
    assert cached is decode_cached(raw, AMD) and isinstance(cached, tuple)
    assert decode_cached(memoryview(raw), AMD) is cached


# --- AMD: both encodings -------------------------------------------------------------


AMD_TEXT = """
    DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset
    LLVM_offset_uconst 16, LLVM_bit_offset, LLVM_call_frame_entry_reg 17
    LLVM_undefined; LLVM_aspace_bregx 2560 -8; LLVM_piece_end
    LLVM_extend 32 64; LLVM_select_bit_piece 32 64; lit1; LLVM_form_aspace_address
"""


def test_both_amd_encodings_decode_to_the_same_operations():
    user = assemble(AMD_TEXT, AMD)
    legacy = assemble(AMD_TEXT, AMD, legacy_amd=True)
    assert user != legacy
    user_ops, legacy_ops = decode(user, AMD), decode(legacy, AMD)
    assert [(o.name, o.operands) for o in user_ops] == [(o.name, o.operands) for o in legacy_ops]
    assert {o.code for o in user_ops if "LLVM" in o.name} == {0xE9}
    assert {o.code for o in legacy_ops if "LLVM" in o.name} == set(range(0xE1, 0xED)) - {0xE9}
    assert [o.size for o in user_ops if o.name == "DW_OP_LLVM_aspace_bregx"] == [5]  # e9 09 80 14 78
    assert [o.size for o in legacy_ops if o.name == "DW_OP_LLVM_aspace_bregx"] == [4]


@pytest.mark.parametrize(
    "user_bytes, legacy_byte, name",
    [
        (b"\xe9\x02", 0xE1, "DW_OP_LLVM_form_aspace_address"),
        (b"\xe9\x03", 0xE2, "DW_OP_LLVM_push_lane"),
        (b"\xe9\x04", 0xE3, "DW_OP_LLVM_offset"),
        (b"\xe9\x06", 0xE5, "DW_OP_LLVM_bit_offset"),
        (b"\xe9\x08", 0xE7, "DW_OP_LLVM_undefined"),
        (b"\xe9\x0a", 0xEA, "DW_OP_LLVM_piece_end"),
    ],
)
def test_amd_codes_match_the_published_tables(user_bytes, legacy_byte, name):
    # sub-ops from LLVM's llvm-dwarfdump tests, legacy bytes from AMDGPUUsage
    assert names(decode(user_bytes, AMD)) == [name]
    assert names(decode(bytes([legacy_byte]), AMD)) == [name]
    assert decode(b"\xe9\x01", AMD)[0].name == "DW_OP_LLVM_nop"


def test_amd_user_op_errors():
    with pytest.raises(DecodeError) as err:
        decode(b"\x30\xe9\x7f", AMD)
    assert err.value.offset == 1
    with pytest.raises(DecodeError) as err:
        decode(b"\x30\x30\xe9", AMD)  # sub-op missing
    assert err.value.offset == 2
    with pytest.raises(AspaceError):
        assemble("LLVM_aspace_implicit_pointer 16 0", AMD)  # no user encoding exists
    with pytest.raises(AspaceError):
        assemble("LLVM_nop", AMD, legacy_amd=True)  # no legacy byte exists


def test_legacy_aspace_implicit_pointer_only_in_the_legacy_table():
    raw = b"\xe9\x20\x00\x00\x00\x7f"
    ops = decode(raw, AMD_LEGACY)
    assert [(o.name, o.operands) for o in ops] == [("DW_OP_LLVM_aspace_implicit_pointer", (0x20, -1))]
    assert assemble("LLVM_aspace_implicit_pointer 0x20 -1", AMD_LEGACY) == raw
    with pytest.raises(DecodeError):
        decode(raw, AMD)  # 0x20 is no DW_OP_LLVM_user sub-op
    assert assemble("LLVM_push_lane", AMD_LEGACY) == b"\xe2"  # the legacy table implies legacy bytes
    with pytest.raises(AspaceError):
        assemble("LLVM_user LLVM_push_lane", AMD_LEGACY)


# --- the dialect decides 0xe0-0xff ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw, gnu, amd, intel",
    [
        (b"\xe0", ["DW_OP_GNU_push_tls_address"], ["DW_OP_GNU_push_tls_address"], ["DW_OP_GNU_push_tls_address"]),
        (b"\xe8\x05\x10", None, ["DW_OP_LLVM_aspace_bregx"], ["DW_OP_INTEL_bit_piece"]),
        (b"\xeb\x01\x02", None, ["DW_OP_LLVM_extend"], None),
        (b"\xeb", None, None, ["DW_OP_INTEL_regs"]),
        (b"\xec\x20\x40", None, ["DW_OP_LLVM_select_bit_piece"], ["DW_OP_INTEL_push_bit_piece_stack", "DW_OP_not", "DW_OP_lit16"]),
        (b"\xec", None, None, ["DW_OP_INTEL_push_bit_piece_stack"]),
        (b"\xed", None, None, ["DW_OP_INTEL_push_simd_lane"]),
        (b"\xee\xef", None, None, ["DW_OP_INTEL_piece_stack", "DW_OP_INTEL_bit_piece_stack"]),
        (b"\xfe\x40", None, None, ["DW_OP_INTEL_regval_bits"]),
        (b"\xe9\x03", None, ["DW_OP_LLVM_push_lane"], None),
        (b"\xe2", None, ["DW_OP_LLVM_push_lane"], None),
        (b"\xf3\x02\x90\x41", ["DW_OP_GNU_entry_value"], ["DW_OP_GNU_entry_value"], ["DW_OP_GNU_entry_value"]),
        (b"\xf0\xfd\x01\x00\x00\x00", *[["DW_OP_GNU_uninit", "DW_OP_GNU_variable_value"]] * 3),
    ],
)
def test_dialect_decides_the_vendor_range(raw, gnu, amd, intel):
    for dialect, expected in ((GNU, gnu), (NVIDIA, gnu), (AMD, amd), (INTEL, intel)):
        if expected is None:
            with pytest.raises(DecodeError) as err:
                decode(raw, dialect)
            assert err.value.offset is not None
        else:
            assert names(decode(raw, dialect)) == expected, dialect.vendor_ops


def test_same_bytes_different_operands_per_dialect():
    raw = b"\xe8\x05\x10"
    assert decode(raw, AMD)[0].operands == (5, 16)
    assert decode(raw, INTEL)[0].operands == (5, 16)
    assert decode(b"\xfe\x40", INTEL)[0].operands == (64,)


def test_operations_outside_the_dialect_are_refused_by_the_assembler():
    with pytest.raises(AspaceError):
        assemble("INTEL_push_simd_lane", AMD)
    with pytest.raises(AspaceError):
        assemble("LLVM_push_lane", GNU)
    with pytest.raises(AspaceError):
        assemble("LLVM_aspace_bregx 1 2", INTEL, legacy_amd=True)
    # without a dialect every name assembles to its own encoding
    assert assemble("INTEL_push_simd_lane; LLVM_push_lane; GNU_uninit") == b"\xed\xe9\x03\xf0"


def test_unknown_vendor_table():
    with pytest.raises(DecodeError):
        decode(b"\x30", Dialect(vendor_ops="arm"))


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, offset",
    [
        (b"\x01", 0),  # unknown opcode
        (b"\x30\x31\x02", 2),
        (b"\x30\xff", 1),
        (b"\x90", 0),  # regx without operand
        (b"\x30\x90\x80", 1),  # unterminated ULEB
        (b"\x30\x0c\x01\x02", 1),  # const4u short
        (b"\x03\x00\x00", 0),  # addr short
        (b"\x30\x28\x01", 1),  # bra short
        (b"\x92\x05", 0),  # bregx missing SLEB
        (b"\x10" + b"\x80" * 10 + b"\x01", 0),  # ULEB over 10 bytes
        (b"\x10" + b"\xff" * 9 + b"\x02", 0),  # ULEB over 64 bits
        (b"\x11" + b"\xff" * 9 + b"\x01", 0),  # SLEB over 64 bits
        (b"\x11" + b"\x80" * 9 + b"\x7e", 0),  # SLEB below -2**63
        (b"\x30\x9e\x05\x01\x02", 1),  # implicit_value length past the end
        (b"\x9e\x81\x80\x80\x80\x80\x01", 0),  # huge implicit_value length
        (b"\xa3\x04\x90\x41", 0),  # entry_value block past the end
        (b"\xa4\x2a\x08\x00", 0),  # const_type data past the end
        (b"\xa4\x2a", 0),  # const_type size missing
        (b"\xf1", 0),  # encoded_addr without encoding
        (b"\xf1\x05\x00", 0),  # unsupported DW_EH_PE format
        (b"\xf1\x50\x00", 0),  # aligned encoding
        (b"\xf1\x03\x00\x00", 0),  # value short
        (b"\xa0\x01\x00\x00\x00", 0),  # implicit_pointer missing SLEB
    ],
)
def test_malformed_expressions_raise_decode_error_at_the_op(raw, offset):
    for dialect in ALL_DIALECTS:
        with pytest.raises(DecodeError) as err:
            decode(raw, dialect)
        assert err.value.offset == offset, (raw, dialect.vendor_ops)


# --- real producer output ------------------------------------------------------------------


def test_clang15_upstream_amdgpu_expressions():
    upstream = Dialect(vendor_ops="amd", heterogeneous=False, address_size=8)
    lds = decode(bytes([0xA1, 0x03, 0x32, 0x16, 0x18]), upstream)
    assert disassemble(lds) == "DW_OP_addrx 3, DW_OP_lit2, DW_OP_swap, DW_OP_xderef"
    assert disassemble(decode(b"\x90\x41", upstream)) == "DW_OP_regx 65"
    assert disassemble(decode(b"\x91\x10", upstream)) == "DW_OP_fbreg 16"
    assert disassemble(decode(b"\x90\x82\x14", upstream)) == "DW_OP_regx 2562"


def test_rocm_private_and_vgpr_expressions():
    private = bytes([0x90, 0x41, 0x94, 0x04, 0x36, 0x25, 0x10, 0x05, 0xE9, 0x02, 0x38, 0xE9, 0x04])
    assert disassemble(decode(private, AMD)) == (
        "DW_OP_regx 65, DW_OP_deref_size 4, DW_OP_lit6, DW_OP_shr, DW_OP_constu 5, "
        "DW_OP_LLVM_form_aspace_address, DW_OP_lit8, DW_OP_LLVM_offset"
    )
    assert assemble("regx 65; deref_size 4; lit6; shr; constu 5; mem; lit8; LLVM_offset", AMD) == private
    vgpr = bytes([0x90, 0x80, 0x14, 0xE9, 0x03, 0x34, 0x1E, 0xE9, 0x04])
    assert assemble("DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", AMD) == vgpr
    # the CFI rule from LLVM's AMDGPU tests, in llvm-dwarfdump's spelling
    cfi = assemble(
        "DW_OP_regx 2600, DW_OP_swap, DW_OP_LLVM_user DW_OP_LLVM_offset_uconst 0x100, "
        "DW_OP_LLVM_user DW_OP_LLVM_call_frame_entry_reg 17, DW_OP_deref_size 0x8, "
        "DW_OP_LLVM_user DW_OP_LLVM_select_bit_piece 0x20 0x40",
        AMD,
    )
    ops = decode(cfi, AMD)
    assert [(o.name, o.operands) for o in ops][2:] == [
        ("DW_OP_LLVM_offset_uconst", (256,)),
        ("DW_OP_LLVM_call_frame_entry_reg", (17,)),
        ("DW_OP_deref_size", (8,)),
        ("DW_OP_LLVM_select_bit_piece", (32, 64)),
    ]


def test_igc_private_variable_expression():
    raw = bytes([0x08, 0x8F, 0x08, 0x80, 0xFE, 0x40, 0x23, 0x10, 0xED, 0x38, 0x1E, 0x22, 0x23, 0x00])
    assert disassemble(decode(raw, INTEL)) == (
        "DW_OP_const1u 143, DW_OP_const1u 128, DW_OP_INTEL_regval_bits 64, DW_OP_plus_uconst 16, "
        "DW_OP_INTEL_push_simd_lane, DW_OP_lit8, DW_OP_mul, DW_OP_plus, DW_OP_plus_uconst 0"
    )


# --- assembler and names -------------------------------------------------------------------


def test_aliases_and_canonical_names():
    assert canonical("mem") == "DW_OP_LLVM_form_aspace_address"
    assert canonical("DW_OP_aspace_deref_size") == "DW_OP_xderef_size"
    assert canonical("dw_op_llvm_offset_constu") == "DW_OP_LLVM_offset_uconst"
    assert canonical("DW_OP_lit3") == "DW_OP_lit3"
    for alias, target in ALIASES.items():
        assert canonical(alias) == target
    with pytest.raises(AspaceError):
        canonical("DW_OP_bogus")
    assert assemble("lit0; constu 5; DW_OP_mem", AMD) == assemble("lit0; constu 5; LLVM_form_aspace_address", AMD)
    assert assemble("lit1; DW_OP_aspace_bregx 33 -4", AMD) == b"\x31\xe9\x09\x21\x7c"
    assert assemble("aspace_deref; aspace_deref_size 4; aspace_deref_type 4 42") == b"\x18\x95\x04\xa7\x04\x2a"


def test_assembler_operand_forms():
    assert assemble("implicit_value 4 0x3fc00000") == b"\x9e\x04\x00\x00\xc0\x3f"
    assert assemble("implicit_value bytes:0a0b0c") == b"\x9e\x03\x0a\x0b\x0c"
    assert assemble("implicit_value 2 -2") == b"\x9e\x02\xfe\xff"
    assert assemble("const_type 0x2a 4 0x3f800000") == b"\xa4\x2a\x04\x00\x00\x80\x3f"
    assert assemble("regval_type 5 42; deref_type 4 42; convert 42; reinterpret 7") == (
        b"\xa5\x05\x2a\xa6\x04\x2a\xa8\x2a\xa9\x07"
    )
    assert assemble("entry_value (regx 65)") == b"\xa3\x02\x90\x41"
    assert assemble("entry_value(bregx 1 0, deref); stack_value") == b"\xa3\x04\x92\x01\x00\x06\x9f"
    assert assemble("entry_value bytes:5a") == b"\xa3\x01\x5a"
    assert assemble("entry_value (entry_value (reg1))") == b"\xa3\x03\xa3\x01\x51"
    assert assemble("skip -3; bra 2; fbreg +16; breg5 -1") == b"\x2f\xfd\xff\x28\x02\x00\x91\x10\x75\x7f"
    assert assemble("consts -64; consts 64; constu 128") == b"\x11\x40\x11\xc0\x00\x10\x80\x01"
    assert assemble("LIT1\nlit2\n\n ;  Lit3 ,") == b"\x31\x32\x33"
    assert assemble("") == b""


@pytest.mark.parametrize(
    "text",
    [
        "DW_OP_bogus",
        "regx",  # missing operand
        "lit1 5",  # extra operand
        "const1u 256",
        "const1s -129",
        "constu -1",
        "regx abc",
        "consts 0x8000000000000000",
        "entry_value (regx 65",
        "lit1)",
        "entry_value 5",
        "implicit_value bytes:zz",
        "implicit_value 1 300",
        "implicit_value 4",
        "GNU_encoded_addr 1 0x05",
        "(lit1)",
        "LLVM_user",
    ],
)
def test_assembler_rejects_bad_text(text):
    with pytest.raises(AspaceError):
        assemble(text, AMD)


def test_uleb_sleb_encoders_against_the_standard_examples():
    assert encode_uleb(2) == b"\x02" and encode_uleb(127) == b"\x7f" and encode_uleb(128) == b"\x80\x01"
    assert encode_uleb(129) == b"\x81\x01" and encode_uleb(12857) == b"\xb9\x64"
    assert encode_sleb(2) == b"\x02" and encode_sleb(-2) == b"\x7e" and encode_sleb(127) == b"\xff\x00"
    assert encode_sleb(-127) == b"\x81\x7f" and encode_sleb(128) == b"\x80\x01" and encode_sleb(-128) == b"\x80\x7f"


def test_disassemble_format():
    ops = decode(assemble("regx 2560; LLVM_push_lane; implicit_value bytes:0102; entry_value (regx 65)", AMD), AMD)
    assert disassemble(ops) == (
        "DW_OP_regx 2560, DW_OP_LLVM_push_lane, DW_OP_implicit_value bytes:0102, DW_OP_entry_value bytes:9041"
    )
    assert disassemble(ops, AMD).endswith("DW_OP_entry_value (DW_OP_regx 65)")
    assert disassemble([]) == ""
    # an undecodable nested expression is shown as bytes
    assert disassemble(decode(b"\xa3\x01\x01", AMD), AMD) == "DW_OP_entry_value bytes:01"
