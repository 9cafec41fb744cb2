"""DWARF expression operation tables: codes, canonical names, operand layouts.

The 0xe0-0xff range is shared by vendors, so the table that applies depends on
the dialect (`Dialect.vendor_ops`):

- "gnu" / "nvidia": DWARF 5 plus the GNU extensions.
- "amd": DWARF 5, GNU (0xe0 and 0xf0-0xfd), AMD's heterogeneous-debugging
  operations in both encodings: DW_OP_LLVM_user (0xe9) + ULEB sub-op, and the
  older single bytes 0xe1-0xec. 0xe9 is DW_OP_LLVM_user here, so the legacy
  DW_OP_LLVM_aspace_implicit_pointer (also 0xe9) is not recognised.
- "amd-legacy": as "amd" but 0xe9 is the legacy aspace_implicit_pointer and
  there is no DW_OP_LLVM_user; for producers that predate DW_OP_LLVM_user.
- "intel": DWARF 5, the GNU codes Intel does not reuse, and DW_OP_INTEL_*.

Operand kinds (strings in `OpSpec.operands`):
  u8 s8 u16 s16 u32 s32 u64 s64  fixed little-endian integers
  uleb sleb                      LEB128 integers (at most 10 bytes, 64-bit values)
  addr                           target address, Dialect.address_size bytes
  ref                            .debug_info offset: Dialect.offset_size bytes
                                 (address_size for DWARF 2, where DW_FORM_ref_addr was)
  block                          ULEB length + bytes (DW_OP_implicit_value) -> bytes
  expr                           ULEB length + nested expression (entry_value) -> bytes
  typed_const                    1-byte length + bytes (const_type data) -> bytes
  encoded_addr                   DW_EH_PE encoding byte + value (GNU_encoded_addr) ->
                                 (value, encoding): the address first, as for DW_OP_addr
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..errors import AspaceError, DecodeError

PREFIX = "DW_OP_"
LLVM_USER = 0xE9

VENDOR_TABLES = ("gnu", "nvidia", "amd", "amd-legacy", "intel")


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str  # canonical, with the DW_OP_ prefix
    code: int  # opcode byte (LLVM_USER for user sub-ops)
    operands: tuple[str, ...] = ()
    user_subop: int | None = None  # DW_OP_LLVM_user sub-op, if this encoding is one
    vendor: str = "dwarf"  # "dwarf", "gnu", "amd", "intel"


def _spec(code: int, name: str, *operands: str, vendor: str = "dwarf", user_subop: int | None = None) -> OpSpec:
    return OpSpec(PREFIX + name, code, tuple(operands), user_subop, vendor)


def _dwarf5() -> list[OpSpec]:
    specs = [
        _spec(0x03, "addr", "addr"),
        _spec(0x06, "deref"),
        _spec(0x08, "const1u", "u8"),
        _spec(0x09, "const1s", "s8"),
        _spec(0x0A, "const2u", "u16"),
        _spec(0x0B, "const2s", "s16"),
        _spec(0x0C, "const4u", "u32"),
        _spec(0x0D, "const4s", "s32"),
        _spec(0x0E, "const8u", "u64"),
        _spec(0x0F, "const8s", "s64"),
        _spec(0x10, "constu", "uleb"),
        _spec(0x11, "consts", "sleb"),
        _spec(0x12, "dup"),
        _spec(0x13, "drop"),
        _spec(0x14, "over"),
        _spec(0x15, "pick", "u8"),
        _spec(0x16, "swap"),
        _spec(0x17, "rot"),
        _spec(0x18, "xderef"),
        _spec(0x19, "abs"),
        _spec(0x1A, "and"),
        _spec(0x1B, "div"),
        _spec(0x1C, "minus"),
        _spec(0x1D, "mod"),
        _spec(0x1E, "mul"),
        _spec(0x1F, "neg"),
        _spec(0x20, "not"),
        _spec(0x21, "or"),
        _spec(0x22, "plus"),
        _spec(0x23, "plus_uconst", "uleb"),
        _spec(0x24, "shl"),
        _spec(0x25, "shr"),
        _spec(0x26, "shra"),
        _spec(0x27, "xor"),
        _spec(0x28, "bra", "s16"),
        _spec(0x29, "eq"),
        _spec(0x2A, "ge"),
        _spec(0x2B, "gt"),
        _spec(0x2C, "le"),
        _spec(0x2D, "lt"),
        _spec(0x2E, "ne"),
        _spec(0x2F, "skip", "s16"),
    ]
    specs += [_spec(0x30 + n, f"lit{n}") for n in range(32)]
    specs += [_spec(0x50 + n, f"reg{n}") for n in range(32)]
    specs += [_spec(0x70 + n, f"breg{n}", "sleb") for n in range(32)]
    specs += [
        _spec(0x90, "regx", "uleb"),
        _spec(0x91, "fbreg", "sleb"),
        _spec(0x92, "bregx", "uleb", "sleb"),
        _spec(0x93, "piece", "uleb"),
        _spec(0x94, "deref_size", "u8"),
        _spec(0x95, "xderef_size", "u8"),
        _spec(0x96, "nop"),
        _spec(0x97, "push_object_address"),
        _spec(0x98, "call2", "u16"),
        _spec(0x99, "call4", "u32"),
        _spec(0x9A, "call_ref", "ref"),
        _spec(0x9B, "form_tls_address"),
        _spec(0x9C, "call_frame_cfa"),
        _spec(0x9D, "bit_piece", "uleb", "uleb"),
        _spec(0x9E, "implicit_value", "block"),
        _spec(0x9F, "stack_value"),
        _spec(0xA0, "implicit_pointer", "ref", "sleb"),
        _spec(0xA1, "addrx", "uleb"),
        _spec(0xA2, "constx", "uleb"),
        _spec(0xA3, "entry_value", "expr"),
        _spec(0xA4, "const_type", "uleb", "typed_const"),
        _spec(0xA5, "regval_type", "uleb", "uleb"),
        _spec(0xA6, "deref_type", "u8", "uleb"),
        _spec(0xA7, "xderef_type", "u8", "uleb"),
        _spec(0xA8, "convert", "uleb"),
        _spec(0xA9, "reinterpret", "uleb"),
    ]
    return specs


def _gnu() -> list[OpSpec]:
    return [
        _spec(0xE0, "GNU_push_tls_address", vendor="gnu"),
        _spec(0xF0, "GNU_uninit", vendor="gnu"),
        _spec(0xF1, "GNU_encoded_addr", "encoded_addr", vendor="gnu"),
        _spec(0xF2, "GNU_implicit_pointer", "ref", "sleb", vendor="gnu"),
        _spec(0xF3, "GNU_entry_value", "expr", vendor="gnu"),
        _spec(0xF4, "GNU_const_type", "uleb", "typed_const", vendor="gnu"),
        _spec(0xF5, "GNU_regval_type", "uleb", "uleb", vendor="gnu"),
        _spec(0xF6, "GNU_deref_type", "u8", "uleb", vendor="gnu"),
        _spec(0xF7, "GNU_convert", "uleb", vendor="gnu"),
        _spec(0xF9, "GNU_reinterpret", "uleb", vendor="gnu"),
        _spec(0xFA, "GNU_parameter_ref", "u32", vendor="gnu"),  # CU-relative DIE offset
        _spec(0xFB, "GNU_addr_index", "uleb", vendor="gnu"),
        _spec(0xFC, "GNU_const_index", "uleb", vendor="gnu"),
        _spec(0xFD, "GNU_variable_value", "ref", vendor="gnu"),
    ]


# name, DW_OP_LLVM_user sub-op (None: no user encoding yet), legacy byte, operands
_AMD_OPS: tuple[tuple[str, int | None, int | None, tuple[str, ...]], ...] = (
    ("LLVM_nop", 0x01, None, ()),
    ("LLVM_form_aspace_address", 0x02, 0xE1, ()),
    ("LLVM_push_lane", 0x03, 0xE2, ()),
    ("LLVM_offset", 0x04, 0xE3, ()),
    ("LLVM_offset_uconst", 0x05, 0xE4, ("uleb",)),
    ("LLVM_bit_offset", 0x06, 0xE5, ()),
    ("LLVM_call_frame_entry_reg", 0x07, 0xE6, ("uleb",)),
    ("LLVM_undefined", 0x08, 0xE7, ()),
    # The extension document says SLEB; LLVM's own dumper reads ULEB. They agree
    # for every displacement below 2**63 that a producer wrote as SLEB.
    ("LLVM_aspace_bregx", 0x09, 0xE8, ("uleb", "sleb")),
    ("LLVM_aspace_implicit_pointer", None, 0xE9, ("ref", "sleb")),
    ("LLVM_piece_end", 0x0A, 0xEA, ()),
    ("LLVM_extend", 0x0B, 0xEB, ("uleb", "uleb")),
    ("LLVM_select_bit_piece", 0x0C, 0xEC, ("uleb", "uleb")),
)


def amd_user_specs() -> list[OpSpec]:
    """The DW_OP_LLVM_user encodings (0xe9 + ULEB sub-op)."""
    return [
        _spec(LLVM_USER, name, *operands, vendor="amd", user_subop=sub)
        for name, sub, _legacy, operands in _AMD_OPS
        if sub is not None
    ]


def amd_legacy_specs() -> list[OpSpec]:
    """The pre-DW_OP_LLVM_user single-byte encodings 0xe1-0xec."""
    return [
        _spec(legacy, name, *operands, vendor="amd")
        for name, _sub, legacy, operands in _AMD_OPS
        if legacy is not None
    ]


def _intel() -> list[OpSpec]:
    # IGC emits these without inline operands: register numbers, bit sizes and
    # offsets come from the stack. DW_OP_INTEL_regval_bits carries the bit size.
    # DW_OP_INTEL_bit_piece is the pre-DWARF 3 bit piece of Intel's CPU compilers;
    # it is read with DW_OP_bit_piece's layout (ULEB size, ULEB offset).
    return [
        _spec(0xE8, "INTEL_bit_piece", "uleb", "uleb", vendor="intel"),
        _spec(0xEB, "INTEL_regs", vendor="intel"),
        _spec(0xEC, "INTEL_push_bit_piece_stack", vendor="intel"),
        _spec(0xED, "INTEL_push_simd_lane", vendor="intel"),
        _spec(0xEE, "INTEL_piece_stack", vendor="intel"),
        _spec(0xEF, "INTEL_bit_piece_stack", vendor="intel"),
        _spec(0xFE, "INTEL_regval_bits", "u8", vendor="intel"),
        # IGC 1.0.12504 copies LLVM-internal DIExpression operations of multi-value
        # (DIArgList) locations into its output, each element in its smallest fixed size:
        # DW_OP_LLVM_arg (0x1005) and DW_OP_LLVM_convert (0x1001) become the 16-bit codes
        # "05 10" and "01 10" with 1-byte operands. 0x01 and 0x05 are unused in DWARF, so
        # they are read as the low byte, with the high byte (0x10) as the first operand.
        _spec(0x01, "LLVM_convert", "u8", "u8", "u8", vendor="intel"),
        _spec(0x05, "LLVM_arg", "u8", "u8", vendor="intel"),
    ]


def specs_for(vendor_ops: str) -> tuple[list[OpSpec], list[OpSpec]]:
    """(single-byte specs, DW_OP_LLVM_user specs) of one vendor table."""
    if vendor_ops not in VENDOR_TABLES:
        raise DecodeError(f"unknown vendor_ops {vendor_ops!r}")
    single = _dwarf5() + _gnu()
    user: list[OpSpec] = []
    if vendor_ops == "amd":
        single += [s for s in amd_legacy_specs() if s.code != LLVM_USER]
        user = amd_user_specs()
    elif vendor_ops == "amd-legacy":
        single += amd_legacy_specs()
    elif vendor_ops == "intel":
        single += _intel()
    return single, user


# DWARF 6 proposal names and older spellings of the same operations.
ALIASES: dict[str, str] = {
    "DW_OP_mem": "DW_OP_LLVM_form_aspace_address",
    "DW_OP_aspace_bregx": "DW_OP_LLVM_aspace_bregx",
    "DW_OP_aspace_deref": "DW_OP_xderef",
    "DW_OP_aspace_deref_size": "DW_OP_xderef_size",
    "DW_OP_aspace_deref_type": "DW_OP_xderef_type",
    "DW_OP_LLVM_offset_constu": "DW_OP_LLVM_offset_uconst",
    "DW_OP_APPLE_uninit": "DW_OP_GNU_uninit",
}


def all_specs() -> list[OpSpec]:
    return _dwarf5() + _gnu() + amd_user_specs() + amd_legacy_specs() + _intel()


ALL_NAMES: frozenset[str] = frozenset(s.name for s in all_specs())
_BY_LOWER: dict[str, str] = {n.lower(): n for n in ALL_NAMES}
_BY_LOWER.update({alias.lower(): target for alias, target in ALIASES.items()})


def canonical(name: str) -> str:
    """The canonical name of an operation, alias or not; `DW_OP_` optional, any case."""
    key = name.strip().lower()
    if not key.startswith("dw_op_"):
        key = "dw_op_" + key
    try:
        return _BY_LOWER[key]
    except KeyError:
        raise AspaceError(f"unknown DWARF operation {name!r}") from None


# Fixed-width kinds: (size, signed)
FIXED_KINDS: dict[str, tuple[int, bool]] = {
    "u8": (1, False),
    "s8": (1, True),
    "u16": (2, False),
    "s16": (2, True),
    "u32": (4, False),
    "s32": (4, True),
    "u64": (8, False),
    "s64": (8, True),
}

_UNSIGNED_BY_SIZE = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


def resolve_kind(kind: str, address_size: int, ref_size: int) -> str:
    """Turn the dialect-dependent kinds (addr, ref) into fixed ones."""
    if kind == "encoded_addr":
        if address_size not in _UNSIGNED_BY_SIZE:
            raise DecodeError(f"unsupported address size {address_size}")
        return f"encoded_addr{address_size}"
    if kind == "addr":
        size = address_size
    elif kind == "ref":
        size = ref_size
    else:
        return kind
    resolved = _UNSIGNED_BY_SIZE.get(size)
    if resolved is None:
        raise DecodeError(f"unsupported {kind} size {size}")
    return resolved


def ref_size(version: int, address_size: int, offset_size: int) -> int:
    """Bytes of a DW_FORM_ref_addr-style DIE reference in an expression."""
    return address_size if version <= 2 else offset_size


# One dispatch entry: (name, resolved operand kinds). USER stands for 0xe9 in
# tables with DW_OP_LLVM_user: its ULEB sub-op selects the entry of the user table.
USER = ("DW_OP_LLVM_user", ())


@lru_cache(maxsize=64)
def dispatch_table(
    vendor_ops: str, address_size: int, offset_size: int, version: int
) -> tuple[tuple, dict[int, tuple]]:
    """Per-dialect decode tables: 256 entries by opcode byte, and user sub-ops."""
    single, user = specs_for(vendor_ops)
    rsize = ref_size(version, address_size, offset_size)
    table: list = [None] * 256
    for spec in single:
        table[spec.code] = (spec.name, tuple(resolve_kind(k, address_size, rsize) for k in spec.operands))
    user_table: dict[int, tuple] = {}
    if user:
        table[LLVM_USER] = USER
        for spec in user:
            user_table[spec.user_subop] = (
                spec.name,
                tuple(resolve_kind(k, address_size, rsize) for k in spec.operands),
            )
    return tuple(table), user_table
