"""A small assembler for DWARF expressions, for tests, examples and fixtures.

    assemble("DW_OP_regx 2560; DW_OP_LLVM_push_lane; lit4; mul; DW_OP_LLVM_offset")

Operations are separated by `;`, `,` or newlines; operands by spaces. The
`DW_OP_` prefix is optional, names are case-insensitive and DWARF 6 aliases
(DW_OP_mem, DW_OP_aspace_bregx, DW_OP_aspace_deref*) are accepted. Numbers are
decimal or 0x-hex, optionally signed. Special operands:

- implicit_value:       `4 0x3fc00000` (length, little-endian value) or `bytes:0000c03f`
- const_type:           `<die> 4 0x3fc00000` or `<die> bytes:0000c03f`
- entry_value:          `(regx 65)` (nested expression) or `bytes:9041`
- GNU_encoded_addr:     `<value> <DW_EH_PE encoding>` (operand order of the decoded Op)
- `DW_OP_LLVM_user DW_OP_LLVM_push_lane` (llvm-dwarfdump's spelling) is accepted too.

AMD operations use DW_OP_LLVM_user + sub-op unless `legacy_amd=True` (or the
dialect is "amd-legacy"). With a dialect, operations outside its table are
refused and addresses / DIE references take its sizes; without one,
addresses are 8 bytes and DIE references 4.
"""

from __future__ import annotations

import re

from ..errors import AspaceError
from .opcodes import (
    FIXED_KINDS,
    OpSpec,
    all_specs,
    canonical,
    ref_size,
    resolve_kind,
    specs_for,
)
from .target import Dialect

_U64_LIMIT = 1 << 64
_S64_MIN = -(1 << 63)


class _Group(str):
    """The text inside a pair of parentheses."""


def encode_uleb(value: int) -> bytes:
    if value < 0:
        raise AspaceError(f"ULEB128 operand must not be negative: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte if done else byte | 0x80)
        if done:
            return bytes(out)


def _build_encodings() -> tuple[dict[str, OpSpec], dict[str, OpSpec], dict[str, OpSpec]]:
    """(single-byte DWARF/GNU/Intel, AMD user, AMD legacy) encodings by name."""
    plain: dict[str, OpSpec] = {}
    user: dict[str, OpSpec] = {}
    legacy: dict[str, OpSpec] = {}
    for spec in all_specs():
        if spec.vendor != "amd":
            plain[spec.name] = spec
        elif spec.user_subop is not None:
            user[spec.name] = spec
        else:
            legacy[spec.name] = spec
    return plain, user, legacy


_PLAIN, _AMD_USER, _AMD_LEGACY = _build_encodings()


def _allowed(vendor_ops: str) -> set[OpSpec]:
    single, user = specs_for(vendor_ops)
    return set(single) | set(user)


def _split_ops(text: str) -> list[str]:
    """Split at top-level separators; parentheses nest."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise AspaceError("unbalanced ')' in DWARF expression text")
        if depth == 0 and ch in ";,\n":
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if depth:
        raise AspaceError("unbalanced '(' in DWARF expression text")
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "(":
            depth, j = 1, i + 1
            while depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            tokens.append(_Group(text[i + 1 : j - 1]))
            i = j
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "()":
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


_NUMBER = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)\Z")


def _number(token: str, op: str) -> int:
    if isinstance(token, _Group) or not _NUMBER.match(token):
        raise AspaceError(f"{op}: expected a number, got {token!r}")
    sign = -1 if token.startswith("-") else 1
    body = token.lstrip("+-")
    return sign * int(body, 16 if body[:2].lower() == "0x" else 10)


def _hex_bytes(token: str, op: str) -> bytes:
    try:
        return bytes.fromhex(token[len("bytes:") :])
    except ValueError:
        raise AspaceError(f"{op}: bad byte string {token!r}") from None


def _is_bytes(token: str) -> bool:
    return not isinstance(token, _Group) and token.lower().startswith("bytes:")


def _fixed(value: int, kind: str, op: str) -> bytes:
    size, signed = FIXED_KINDS[kind]
    try:
        return value.to_bytes(size, "little", signed=signed)
    except OverflowError:
        raise AspaceError(f"{op}: {value} does not fit a {kind} operand") from None


def _sized_value(tokens: list[str], op: str) -> bytes:
    """`bytes:..` or `<length> <little-endian value>`; consumes tokens."""
    first = tokens.pop(0)
    if _is_bytes(first):
        return _hex_bytes(first, op)
    length = _number(first, op)
    if not tokens:
        raise AspaceError(f"{op}: missing value after length {length}")
    value = _number(tokens.pop(0), op)
    if length < 0:
        raise AspaceError(f"{op}: negative length")
    try:
        return value.to_bytes(length, "little", signed=value < 0)
    except OverflowError:
        raise AspaceError(f"{op}: {value} does not fit in {length} bytes") from None


_EH_PE_SIZES = {0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}


class _Assembler:
    def __init__(self, dialect: Dialect | None, legacy_amd: bool):
        self.dialect = dialect
        if dialect is None:
            self.address_size, self.ref_size, self.allowed = 8, 4, None
        else:
            self.address_size = dialect.address_size
            self.ref_size = ref_size(dialect.version, dialect.address_size, dialect.offset_size)
            self.allowed = _allowed(dialect.vendor_ops)
            legacy_amd = legacy_amd or dialect.vendor_ops == "amd-legacy"
        self.legacy_amd = legacy_amd

    def assemble(self, text: str) -> bytes:
        out = bytearray()
        for op_text in _split_ops(text):
            out += self.assemble_op(_tokens(op_text))
        return bytes(out)

    def choose(self, word: str, force_user: bool) -> OpSpec:
        name = canonical(word)
        if name in _PLAIN:
            spec = _PLAIN[name]
        elif force_user or not self.legacy_amd:
            spec = _AMD_USER.get(name)
            if spec is None:
                raise AspaceError(f"{name} has no DW_OP_LLVM_user encoding; use legacy_amd=True")
        else:
            spec = _AMD_LEGACY.get(name)
            if spec is None:
                raise AspaceError(f"{name} has no legacy single-byte encoding")
        if self.allowed is not None and spec not in self.allowed:
            raise AspaceError(f"{name} is not an operation of the {self.dialect.vendor_ops} dialect")
        return spec

    def assemble_op(self, tokens: list[str]) -> bytes:
        word = tokens.pop(0)
        if isinstance(word, _Group):
            raise AspaceError(f"expected an operation name, got ({word})")
        force_user = word.lower() in ("dw_op_llvm_user", "llvm_user")
        if force_user:
            if not tokens:
                raise AspaceError("DW_OP_LLVM_user needs an operation name")
            word = tokens.pop(0)
        spec = self.choose(word, force_user)
        out = bytearray([spec.code])
        if spec.user_subop is not None:
            out += encode_uleb(spec.user_subop)
        for kind in spec.operands:
            kind = resolve_kind(kind, self.address_size, self.ref_size)
            if not tokens:
                raise AspaceError(f"{spec.name}: missing operand")
            out += self.operand(kind, tokens, spec.name)
        if tokens:
            raise AspaceError(f"{spec.name}: unexpected operand {tokens[0]!r}")
        return bytes(out)

    def operand(self, kind: str, tokens: list[str], op: str) -> bytes:
        if kind in FIXED_KINDS:
            return _fixed(_number(tokens.pop(0), op), kind, op)
        if kind == "uleb":
            value = _number(tokens.pop(0), op)
            if not 0 <= value < _U64_LIMIT:
                raise AspaceError(f"{op}: {value} does not fit a ULEB128 operand")
            return encode_uleb(value)
        if kind == "sleb":
            value = _number(tokens.pop(0), op)
            if not _S64_MIN <= value < -_S64_MIN:
                raise AspaceError(f"{op}: {value} does not fit an SLEB128 operand")
            return encode_sleb(value)
        if kind == "block":
            data = _sized_value(tokens, op)
            return encode_uleb(len(data)) + data
        if kind == "typed_const":
            data = _sized_value(tokens, op)
            if len(data) > 0xFF:
                raise AspaceError(f"{op}: typed constant longer than 255 bytes")
            return bytes([len(data)]) + data
        if kind == "expr":
            token = tokens.pop(0)
            if isinstance(token, _Group):
                nested = self.assemble(token)
            elif _is_bytes(token):
                nested = _hex_bytes(token, op)
            else:
                raise AspaceError(f"{op}: expected (expression) or bytes:..., got {token!r}")
            return encode_uleb(len(nested)) + nested
        if kind.startswith("encoded_addr"):
            return self.encoded_addr(tokens, op)
        raise AspaceError(f"{op}: operand kind {kind} cannot be assembled")

    def encoded_addr(self, tokens: list[str], op: str) -> bytes:
        value = _number(tokens.pop(0), op)
        if not tokens:
            raise AspaceError(f"{op}: missing DW_EH_PE encoding")
        encoding = _number(tokens.pop(0), op)
        if not 0 <= encoding <= 0xFE:
            raise AspaceError(f"{op}: bad encoding {encoding}")
        fmt = encoding & 0x0F
        signed = bool(fmt & 0x08)
        if fmt == 0x00:
            size = self.address_size
        elif fmt in (0x01, 0x09):
            return bytes([encoding]) + (encode_sleb(value) if signed else encode_uleb(value))
        elif fmt in _EH_PE_SIZES:
            size = _EH_PE_SIZES[fmt]
        else:
            raise AspaceError(f"{op}: unsupported encoding 0x{encoding:02x}")
        try:
            return bytes([encoding]) + value.to_bytes(size, "little", signed=signed)
        except OverflowError:
            raise AspaceError(f"{op}: {value} does not fit {size} bytes") from None


def assemble(text: str, dialect: Dialect | None = None, *, legacy_amd: bool = False) -> bytes:
    """DWARF expression bytes for `text`; raises AspaceError on bad text."""
    return _Assembler(dialect, legacy_amd).assemble(text)


__all__ = ["assemble", "encode_uleb", "encode_sleb"]
