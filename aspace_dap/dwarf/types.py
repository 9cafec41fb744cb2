"""The type model: what a DWARF type DIE means for reading and printing a value.

Types are built on demand by the DWARF index and cached by DIE offset; a type
object may be referenced before its children are filled in (recursive structs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# DW_ATE_* encodings used by the value reader
ATE_ADDRESS = 0x01
ATE_BOOLEAN = 0x02
ATE_COMPLEX_FLOAT = 0x03
ATE_FLOAT = 0x04
ATE_SIGNED = 0x05
ATE_SIGNED_CHAR = 0x06
ATE_UNSIGNED = 0x07
ATE_UNSIGNED_CHAR = 0x08
ATE_UTF = 0x10


@dataclass(eq=False)
class Type:
    name: str | None = None
    size: int | None = None  # bytes; None when unknown (incomplete or void)
    die_offset: int | None = None

    def strip(self) -> "Type":
        """The type with typedefs and qualifiers removed."""
        return self

    def display_name(self) -> str:
        return self.name or "?"


@dataclass(eq=False)
class VoidType(Type):
    def display_name(self) -> str:
        return "void"


@dataclass(eq=False)
class BaseType(Type):
    encoding: int = ATE_SIGNED
    bit_size: int | None = None  # DW_AT_bit_size on a base type
    data_bit_offset: int = 0


@dataclass(eq=False)
class PointerType(Type):
    target: Type | None = None
    kind: str = "pointer"  # "pointer" | "reference" | "rvalue_reference"
    address_space: int | None = None  # adapter's DWARF address space / address class
    address_space_name: str | None = None  # filled by the adapter when known

    def display_name(self) -> str:
        return self.name or c_type_name(self)


@dataclass(eq=False)
class ArrayType(Type):
    element: Type | None = None
    dims: list[int | None] = field(default_factory=list)  # element counts, outermost first
    byte_stride: int | None = None  # stride of the outermost dimension, when given
    vector: bool = False  # DW_AT_GNU_vector or DW_AT_LLVM_vector_size

    def display_name(self) -> str:
        return self.name or c_type_name(self)


@dataclass(eq=False)
class Member:
    name: str | None
    type: Type | None
    bit_offset: int  # from the start of the containing object, in bits
    bit_size: int | None = None  # set only for bit fields
    artificial: bool = False


@dataclass(eq=False)
class StructType(Type):
    kind: str = "struct"  # "struct" | "class" | "union"
    members: list[Member] = field(default_factory=list)
    declaration: bool = False

    def display_name(self) -> str:
        return self.name or f"<anonymous {self.kind}>"


@dataclass(eq=False)
class EnumType(Type):
    underlying: Type | None = None
    enumerators: list[tuple[str, int]] = field(default_factory=list)
    signed: bool = False


@dataclass(eq=False)
class TypedefType(Type):
    target: Type | None = None

    def strip(self) -> Type:
        return self.target.strip() if self.target is not None else VoidType()


@dataclass(eq=False)
class QualifiedType(Type):
    qualifier: str = "const"  # "const" | "volatile" | "restrict" | "atomic"
    target: Type | None = None

    def strip(self) -> Type:
        return self.target.strip() if self.target is not None else VoidType()

    def display_name(self) -> str:
        return c_type_name(self)


@dataclass(eq=False)
class FunctionType(Type):
    return_type: Type | None = None
    params: list[Type] = field(default_factory=list)

    def display_name(self) -> str:
        return c_type_name(self)


@dataclass(eq=False)
class UnspecifiedType(Type):
    pass


_POINTER_SIGNS = {"pointer": "*", "reference": "&", "rvalue_reference": "&&"}
MAX_DECLARATOR_DEPTH = 32  # a longer chain of pointers and arrays is printed as "..."


def c_type_name(t: Type | None) -> str:
    """A type as C spells it and GDB prints it: `float *`, `float [16][17]`, `float (*)[16][17]`,
    `int (*)(int)`, `const char *`, `int * const`."""
    base, declarator = _declarator(t, "", 0)
    return f"{base} {declarator}" if declarator else base


def _declarator(t: Type | None, inner: str, depth: int) -> tuple[str, str]:
    """(base type name, declarator) for declaring `inner` as a `t`; the declarator grows outwards
    from the name as C's does: pointers to the left, arrays and parameter lists to the right."""
    if depth > MAX_DECLARATOR_DEPTH:
        return "...", inner
    if t is None:
        return "void", inner
    if t.name and not isinstance(t, QualifiedType):
        return t.name, inner
    if isinstance(t, PointerType):
        inner = _POINTER_SIGNS[t.kind] + inner
        if isinstance(t.target, (ArrayType, FunctionType)) and not t.target.name:
            inner = f"({inner})"
        return _declarator(t.target, inner, depth + 1)
    if isinstance(t, ArrayType):
        dims = "".join(f"[{d if d is not None else ''}]" for d in t.dims)
        return _declarator(t.element, inner + dims, depth + 1)
    if isinstance(t, FunctionType):
        params = ", ".join(c_type_name(p) for p in t.params) if t.params else "void"
        return _declarator(t.return_type, f"{inner}({params})", depth + 1)
    if isinstance(t, QualifiedType):
        if isinstance(t.target, PointerType) and not t.target.name:
            # a qualified pointer: the qualifier follows its star (`int * const`)
            return _declarator(t.target, f" {t.qualifier}" + (f" {inner}" if inner else ""), depth + 1)
        base, declarator = _declarator(t.target, inner, depth + 1)
        return f"{t.qualifier} {base}", declarator
    return t.display_name(), inner


def byte_size(t: Type | None) -> int | None:
    """Size in bytes of a type, looking through typedefs/qualifiers and computing arrays."""
    if t is None:
        return None
    s = t.strip()
    if s.size is not None:
        return s.size
    if isinstance(s, ArrayType) and s.element is not None:
        el = byte_size(s.element)
        if el is None or any(d is None for d in s.dims):
            return None
        n = 1
        for d in s.dims:
            n *= d
        if s.byte_stride is not None and s.dims:
            return s.byte_stride * s.dims[0]
        return el * n
    return None
