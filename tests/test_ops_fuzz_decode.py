"""Property tests: random bytes never crash the decoder; random programs round-trip."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.opcodes import FIXED_KINDS, specs_for
from aspace_dap.dwarf.ops import Op, decode, disassemble
from aspace_dap.dwarf.target import Dialect
from aspace_dap.errors import DecodeError
from fuzz_rounds import rounds

DIALECTS = [
    Dialect(vendor_ops="gnu"),
    Dialect(vendor_ops="nvidia", address_size=8, offset_size=8),
    Dialect(vendor_ops="amd", heterogeneous=True),
    Dialect(vendor_ops="amd-legacy", heterogeneous=True, address_size=4),
    Dialect(vendor_ops="intel"),
    Dialect(vendor_ops="gnu", version=2, address_size=4),
]

# Bytes biased towards the interesting parts: vendor range, LEB continuation bits.
_interesting = st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x90, 0x9E, 0xA3, 0xA4, 0xE9, 0xF1, 0xFE])
_byte = st.one_of(st.integers(0, 255), _interesting)
_expressions = st.one_of(st.binary(max_size=48), st.lists(_byte, max_size=48).map(bytes))


def _check_well_formed(ops: list[Op], raw: bytes) -> None:
    position = 0
    for op in ops:
        assert op.offset == position and op.size > 0 and op.code == raw[position]
        position += op.size
    assert position == len(raw)


@settings(max_examples=rounds(2000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_expressions, dialect=st.sampled_from(DIALECTS))
def test_random_bytes_only_raise_decode_error(raw, dialect):
    try:
        ops = decode(raw, dialect)
    except DecodeError as err:
        assert err.offset is not None and 0 <= err.offset < len(raw)
        return
    _check_well_formed(ops, raw)
    # whatever decodes also disassembles and reassembles to the same operations
    # (not always the same bytes: LEB padding and the AMD encoding are not kept)
    again = decode(assemble(disassemble(ops), dialect), dialect)
    assert [(op.name, op.operands) for op in again] == [(op.name, op.operands) for op in ops]


_I64 = st.integers(-(1 << 63), (1 << 63) - 1)
_U64 = st.integers(0, (1 << 64) - 1)


def _fixed_values(kind: str):
    size, signed = FIXED_KINDS[kind]
    bits = size * 8
    return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else st.integers(0, (1 << bits) - 1)


def _int_text(value: int, hexadecimal: bool) -> str:
    if hexadecimal:
        return ("-" if value < 0 else "") + hex(abs(value))
    return str(value)


@st.composite
def _operand(draw, kind: str, dialect: Dialect):
    """(assembler text, decoded operand values)."""
    hexadecimal = draw(st.booleans())
    if kind in FIXED_KINDS:
        value = draw(_fixed_values(kind))
    elif kind == "addr":
        value = draw(st.integers(0, (1 << (8 * dialect.address_size)) - 1))
    elif kind == "ref":
        size = dialect.address_size if dialect.version <= 2 else dialect.offset_size
        value = draw(st.integers(0, (1 << (8 * size)) - 1))
    elif kind == "uleb":
        value = draw(_U64)
    elif kind == "sleb":
        value = draw(_I64)
    elif kind in ("block", "expr", "typed_const"):
        data = draw(st.binary(max_size=20))
        return "bytes:" + data.hex(), (data,)
    elif kind == "encoded_addr":
        fmt, size, signed = draw(
            st.sampled_from([(0x00, dialect.address_size, False), (0x01, 0, False), (0x03, 4, False),
                             (0x09, 0, True), (0x0A, 2, True), (0x0C, 8, True)])
        )
        encoding = fmt | draw(st.sampled_from([0x00, 0x10, 0x30, 0x80]))
        if size == 0:
            value = draw(_I64 if signed else _U64)
        else:
            bits = 8 * size
            value = draw(st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else st.integers(0, (1 << bits) - 1))
        return f"{_int_text(value, hexadecimal)} {encoding}", (value, encoding)
    else:
        raise AssertionError(kind)
    return _int_text(value, hexadecimal), (value,)


@st.composite
def _program(draw, dialect: Dialect):
    single, user = specs_for(dialect.vendor_ops)
    legacy = dialect.vendor_ops == "amd-legacy" or draw(st.booleans())
    # one AMD encoding per program: the assembler picks by the legacy flag
    choices = [s for s in single if s.vendor != "amd" or legacy] + ([] if legacy else user)
    specs = draw(st.lists(st.sampled_from(choices), max_size=12))
    texts, expected = [], []
    for spec in specs:
        parts, values = [spec.name], []
        for kind in spec.operands:
            text, decoded = draw(_operand(kind, dialect))
            parts.append(text)
            values += decoded
        texts.append(" ".join(parts))
        expected.append((spec.name, tuple(values)))
    separator = draw(st.sampled_from(["; ", ", ", "\n"]))
    return separator.join(texts), expected, legacy


@settings(max_examples=rounds(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dialect=st.sampled_from(DIALECTS))
def test_random_programs_round_trip(data, dialect):
    text, expected, legacy = data.draw(_program(dialect))
    raw = assemble(text, dialect, legacy_amd=legacy)
    ops = decode(raw, dialect)
    _check_well_formed(ops, raw)
    assert [(op.name, op.operands) for op in ops] == expected
    assert assemble(disassemble(ops, dialect), dialect, legacy_amd=legacy) == raw


@settings(max_examples=rounds(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dialect=st.sampled_from(DIALECTS))
def test_truncated_programs_fail_cleanly(data, dialect):
    text, _expected, legacy = data.draw(_program(dialect))
    raw = assemble(text, dialect, legacy_amd=legacy)
    cut = data.draw(st.integers(0, len(raw)))
    try:
        ops = decode(raw[:cut], dialect)
    except DecodeError as err:
        assert 0 <= err.offset < cut
        return
    _check_well_formed(ops, raw[:cut])
