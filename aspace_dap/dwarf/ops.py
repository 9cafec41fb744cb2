"""Decoding DWARF expression bytes into operations, and printing them back.

`decode` runs for every variable shown, so it works from per-dialect dispatch
tables built once (opcodes.dispatch_table) and creates nothing per operation
but the `Op` itself. Every malformed input raises DecodeError carrying the
byte offset of the operation that could not be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..errors import DecodeError
from .opcodes import FIXED_KINDS, LLVM_USER, dispatch_table
from .target import Dialect


@dataclass(frozen=True, slots=True)
class Op:
    offset: int  # byte offset of the opcode within the expression
    code: int  # the raw first opcode byte (0xe9 for DW_OP_LLVM_user forms)
    name: str  # canonical name
    operands: tuple  # ints; bytes for implicit_value / const_type data / entry_value's expression
    size: int  # total encoded length in bytes


_MAX_LEB_BYTES = 10
_U64_LIMIT = 1 << 64
_S64_MIN = -(1 << 63)
_S64_LIMIT = 1 << 63


def read_uleb(data: bytes, pos: int, end: int, op_offset: int) -> tuple[int, int]:
    """(value, next position); values must fit in 64 bits."""
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1  # the common one-byte case
    return _read_leb(data, pos, end, op_offset, signed=False)


def read_sleb(data: bytes, pos: int, end: int, op_offset: int) -> tuple[int, int]:
    """(value, next position); values must fit in a signed 64-bit integer."""
    return _read_leb(data, pos, end, op_offset, signed=True)


def _read_leb(data, pos: int, end: int, op_offset: int, *, signed: bool) -> tuple[int, int]:
    kind = "SLEB128" if signed else "ULEB128"
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise DecodeError(f"truncated {kind} operand", op_offset)
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
        if pos - start >= _MAX_LEB_BYTES:
            raise DecodeError(f"{kind} operand longer than 10 bytes", op_offset)
    if signed and byte & 0x40:
        result -= 1 << shift
    if not (_S64_MIN <= result < _S64_LIMIT if signed else result < _U64_LIMIT):
        raise DecodeError(f"{kind} operand exceeds 64 bits", op_offset)
    return result, pos


# Readers append the operand value(s) to `out` and return the next position.


def _fixed_reader(size: int, signed: bool):
    def read(data, pos, end, op_offset, out):
        stop = pos + size
        if stop > end:
            raise DecodeError(f"truncated {size}-byte operand", op_offset)
        out.append(int.from_bytes(data[pos:stop], "little", signed=signed))
        return stop

    return read


def _read_uleb(data, pos, end, op_offset, out):
    value, pos = read_uleb(data, pos, end, op_offset)
    out.append(value)
    return pos


def _read_sleb(data, pos, end, op_offset, out):
    value, pos = read_sleb(data, pos, end, op_offset)
    out.append(value)
    return pos


def _read_sized_bytes(length: int, data, pos, end, op_offset, what: str):
    stop = pos + length
    if stop > end:
        raise DecodeError(f"{what} of {length} bytes runs past the end of the expression", op_offset)
    return data[pos:stop], stop


def _read_block(data, pos, end, op_offset, out):
    length, pos = read_uleb(data, pos, end, op_offset)
    block, pos = _read_sized_bytes(length, data, pos, end, op_offset, "block")
    out.append(block)
    return pos


def _read_typed_const(data, pos, end, op_offset, out):
    if pos >= end:
        raise DecodeError("truncated const_type size", op_offset)
    block, pos = _read_sized_bytes(data[pos], data, pos + 1, end, op_offset, "typed constant")
    out.append(block)
    return pos


# DW_EH_PE value formats GNU_encoded_addr may use: format -> (size, signed); 0 = LEB
_EH_PE_FORMATS = {0x01: (0, False), 0x02: (2, False), 0x03: (4, False), 0x04: (8, False),
                  0x09: (0, True), 0x0A: (2, True), 0x0B: (4, True), 0x0C: (8, True)}
_EH_PE_ALIGNED = 0x50


def _encoded_addr_reader(address_size: int):
    def read(data, pos, end, op_offset, out):
        if pos >= end:
            raise DecodeError("truncated GNU_encoded_addr encoding", op_offset)
        encoding = data[pos]
        pos += 1
        fmt = encoding & 0x0F
        if encoding == 0xFF or (encoding & 0x70) == _EH_PE_ALIGNED:
            raise DecodeError(f"unsupported GNU_encoded_addr encoding 0x{encoding:02x}", op_offset)
        if fmt == 0x00:
            size, signed = address_size, False
        elif fmt in _EH_PE_FORMATS:
            size, signed = _EH_PE_FORMATS[fmt]
        else:
            raise DecodeError(f"unsupported GNU_encoded_addr encoding 0x{encoding:02x}", op_offset)
        if size == 0:
            value, pos = (read_sleb if signed else read_uleb)(data, pos, end, op_offset)
        else:
            if pos + size > end:
                raise DecodeError("truncated GNU_encoded_addr value", op_offset)
            value = int.from_bytes(data[pos:pos + size], "little", signed=signed)
            pos += size
        out.append(value)
        out.append(encoding)
        return pos

    return read


READERS = {kind: _fixed_reader(size, signed) for kind, (size, signed) in FIXED_KINDS.items()}
READERS.update(
    uleb=_read_uleb,
    sleb=_read_sleb,
    block=_read_block,
    expr=_read_block,
    typed_const=_read_typed_const,
)
READERS.update({f"encoded_addr{n}": _encoded_addr_reader(n) for n in (1, 2, 4, 8)})


@lru_cache(maxsize=64)
def _tables(dialect: Dialect):
    single, user = dispatch_table(dialect.vendor_ops, dialect.address_size, dialect.offset_size, dialect.version)

    def bind(entry):
        if entry is None:
            return None
        name, kinds = entry
        return name, tuple(READERS[k] for k in kinds)

    return tuple(bind(e) for e in single), {sub: bind(e) for sub, e in user.items()}


def decode(expr: bytes | bytearray | memoryview, dialect: Dialect) -> list[Op]:
    """Decode a whole expression. Raises DecodeError(msg, offset of the failing op)."""
    data = expr if type(expr) is bytes else bytes(expr)
    table, user_table = _tables(dialect)
    end = len(data)
    pos = 0
    ops: list[Op] = []
    append = ops.append
    while pos < end:
        start = pos
        code = data[pos]
        pos += 1
        entry = table[code]
        if entry is None:
            raise DecodeError(f"unknown opcode 0x{code:02x} in the {dialect.vendor_ops} dialect", start)
        name, readers = entry
        if code == LLVM_USER and user_table:
            sub, pos = read_uleb(data, pos, end, start)
            entry = user_table.get(sub)
            if entry is None:
                raise DecodeError(f"unknown DW_OP_LLVM_user sub-op 0x{sub:x}", start)
            name, readers = entry
        if readers:
            values: list = []
            for read in readers:
                pos = read(data, pos, end, start, values)
            append(Op(start, code, name, tuple(values), pos - start))
        else:
            append(Op(start, code, name, (), pos - start))
    return ops


def decode_cached(expr: bytes | bytearray | memoryview, dialect: Dialect) -> tuple[Op, ...]:
    """`decode` memoised on (bytes, dialect); the result is shared, hence a tuple."""
    return _decode_cached(expr if type(expr) is bytes else bytes(expr), dialect)


@lru_cache(maxsize=4096)
def _decode_cached(expr: bytes, dialect: Dialect) -> tuple[Op, ...]:
    return tuple(decode(expr, dialect))


def _format_operand(value, name: str, dialect: Dialect | None) -> str:
    if isinstance(value, (bytes, bytearray)):
        if dialect is not None and name in ("DW_OP_entry_value", "DW_OP_GNU_entry_value"):
            try:
                nested = decode(value, dialect)
            except DecodeError:
                nested = None  # show the raw bytes of an undecodable nested expression
            # AMD operations have two encodings; text would lose which one, so such bytes stay bytes
            if nested is not None and not any(op.name.startswith("DW_OP_LLVM_") for op in nested):
                return "(" + disassemble(nested, dialect) + ")"
        return "bytes:" + bytes(value).hex()
    return str(value)


def disassemble(ops: list[Op] | tuple[Op, ...], dialect: Dialect | None = None) -> str:
    """"DW_OP_regx 2560, DW_OP_LLVM_push_lane, ..." — text `asm.assemble` reads back.

    With a dialect, nested entry_value expressions are shown decoded in parentheses.
    """
    parts = []
    for op in ops:
        if op.operands:
            parts.append(op.name + " " + " ".join(_format_operand(v, op.name, dialect) for v in op.operands))
        else:
            parts.append(op.name)
    return ", ".join(parts)
