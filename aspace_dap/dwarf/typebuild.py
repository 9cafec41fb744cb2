"""Builds the type model (types.py) from type DIEs, on demand, cached by DIE offset.

A type object is put in the cache before its parts are filled in, so a struct
that points to itself resolves to the same object instead of recursing. A type
that reaches itself other than through a struct (a typedef of itself, a pointer
to itself) and a chain of distinct types (pointer to pointer to ..., typedefs,
nested structs) deeper than MAX_TYPE_DEPTH are CodeObjectErrors, and nothing of
the failed build stays in the cache: no compiler writes either, and following
them would never end or exhaust the stack. Each built type remembers its depth,
so no type in the cache is deeper than MAX_TYPE_DEPTH, however it was reached.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import AspaceError, CodeObjectError
from .reader import ByteReader
from .types import (
    ATE_SIGNED, ATE_SIGNED_CHAR, ArrayType, BaseType, EnumType, FunctionType, Member, PointerType,
    QualifiedType, StructType, Type, TypedefType, UnspecifiedType, VoidType,
)

if TYPE_CHECKING:
    from .index import Die, DwarfIndex

TAG_ARRAY = 0x01
TAG_CLASS = 0x02
TAG_ENUMERATION = 0x04
TAG_FORMAL_PARAMETER = 0x05
TAG_MEMBER = 0x0D
TAG_POINTER = 0x0F
TAG_REFERENCE = 0x10
TAG_STRUCTURE = 0x13
TAG_SUBROUTINE = 0x15
TAG_TYPEDEF = 0x16
TAG_UNION = 0x17
TAG_INHERITANCE = 0x1C
TAG_PTR_TO_MEMBER = 0x1F
TAG_SUBRANGE = 0x21
TAG_BASE = 0x24
TAG_CONST = 0x26
TAG_ENUMERATOR = 0x28
TAG_VOLATILE = 0x35
TAG_RESTRICT = 0x37
TAG_UNSPECIFIED = 0x3B
TAG_RVALUE_REFERENCE = 0x42
TAG_ATOMIC = 0x47

AT_NAME = 0x03
AT_BYTE_SIZE = 0x0B
AT_BIT_OFFSET = 0x0C
AT_BIT_SIZE = 0x0D
AT_CONST_VALUE = 0x1C
AT_LOWER_BOUND = 0x22
AT_BIT_STRIDE = 0x2E
AT_UPPER_BOUND = 0x2F
AT_ADDRESS_CLASS = 0x33
AT_ARTIFICIAL = 0x34
AT_COUNT = 0x37
AT_DATA_MEMBER_LOCATION = 0x38
AT_DECLARATION = 0x3C
AT_ENCODING = 0x3E
AT_EXTERNAL = 0x3F
AT_TYPE = 0x49
AT_BYTE_STRIDE = 0x51
AT_SIGNATURE = 0x69
AT_DATA_BIT_OFFSET = 0x6B
AT_GNU_VECTOR = 0x2107
AT_LLVM_VECTOR_SIZE = (0x3E0C, 0x3E13)
AT_LLVM_ADDRESS_SPACE = (0x3E10,)

_QUALIFIERS = {TAG_CONST: "const", TAG_VOLATILE: "volatile", TAG_RESTRICT: "restrict", TAG_ATOMIC: "atomic"}
_POINTERS = {TAG_POINTER: "pointer", TAG_REFERENCE: "reference", TAG_RVALUE_REFERENCE: "rvalue_reference",
             TAG_PTR_TO_MEMBER: "pointer"}
_STRUCTS = {TAG_STRUCTURE: "struct", TAG_CLASS: "class", TAG_UNION: "union"}

DW_OP_PLUS_UCONST = 0x23
DW_OP_CONSTU = 0x10

MAX_TYPE_DEPTH = 100  # distinct type DIEs one type reaches through its targets, members and elements


class TypeBuilder:
    def __init__(self, index: "DwarfIndex"):
        self.index = index
        self.cache: dict[int, Type] = {}
        self._height: dict[int, int] = {}  # a built type's depth: 1 + the deepest type it reaches
        self._local = threading.local()  # the types being built on this thread, outermost first

    def build(self, offset: int | None) -> Type:
        if offset is None:
            return VoidType()
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        cached = self.cache.get(offset)
        if cached is not None:
            height = self._height.get(offset)
            if height is None and self._check_cycle(stack, offset):
                return cached  # still being built: it refers to itself through a struct
            height = height or 1
            self._check_depth(stack, offset, height)
            if stack:
                stack[-1][2] = max(stack[-1][2], height)
            return cached
        self._check_depth(stack, offset, 1)
        die = self.index.die(offset)
        first_new = len(self.cache)
        stack.append([offset, die.tag in _STRUCTS, 0])  # offset, breaks a cycle, height of its parts
        try:
            built = self._build(die)
        except BaseException:
            if len(stack) == 1:  # the types this build began are half made: none of them stays
                for key in list(self.cache)[first_new:]:
                    del self.cache[key]
                    self._height.pop(key, None)
            raise
        finally:
            entry = stack.pop()
        height = entry[2] + 1
        self._height[offset] = height
        if stack:
            stack[-1][2] = max(stack[-1][2], height)
        return built

    @staticmethod
    def _check_depth(stack: list, offset: int, height: int) -> None:
        if len(stack) + height > MAX_TYPE_DEPTH:
            raise CodeObjectError(f"type at DIE {offset:#x} is nested more than {MAX_TYPE_DEPTH} types deep")

    @staticmethod
    def _check_cycle(stack: list, offset: int) -> bool:
        """Whether `offset` is being built on this thread (it refers to itself). A type may reach
        itself only through a struct, class or union (a list node's pointer to the next node); a
        typedef, qualifier, pointer, array or function type that contains itself has no end, and
        printing its name would never finish."""
        through_struct = False
        for at in range(len(stack) - 1, -1, -1):
            through_struct = through_struct or stack[at][1]
            if stack[at][0] == offset:
                if not through_struct:
                    raise CodeObjectError(f"type at DIE {offset:#x} contains itself without a struct in between")
                return True
        return False

    def _target(self, die: "Die") -> Type:
        target = die.get(AT_TYPE)
        return self.build(target) if isinstance(target, int) else VoidType()

    def _int(self, die: "Die", at: int) -> int | None:
        value = die.get(at)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _build(self, die: "Die") -> Type:
        tag = die.tag
        name = die.name
        size = self._int(die, AT_BYTE_SIZE)
        off = die.offset
        hetero = die.unit.dialect.heterogeneous

        if tag == TAG_BASE:
            base = BaseType(name=name, size=size, die_offset=off, encoding=self._int(die, AT_ENCODING) or 0,
                            bit_size=self._int(die, AT_BIT_SIZE),
                            data_bit_offset=self._int(die, AT_DATA_BIT_OFFSET) or 0)
            lanes = None
            if hetero:
                for at in AT_LLVM_VECTOR_SIZE:
                    lanes = lanes or self._int(die, at)
            if lanes:
                if lanes <= 0:
                    raise CodeObjectError(f"base type {off:#x}: vector size {lanes} is not positive")
                base.die_offset = None  # the element is the type without the vector attribute
                vector = ArrayType(name=None, size=size * lanes if size else None, die_offset=off,
                                   element=base, dims=[lanes], vector=True)
                self.cache[off] = vector
                return vector
            self.cache[off] = base
            return base

        if tag in _QUALIFIERS:
            t = QualifiedType(name=name, size=None, die_offset=off, qualifier=_QUALIFIERS[tag])
            self.cache[off] = t
            t.target = self._target(die)
            return t

        if tag == TAG_TYPEDEF:
            t = TypedefType(name=name, size=None, die_offset=off)
            self.cache[off] = t
            t.target = self._target(die)
            return t

        if tag in _POINTERS:
            aspace = self._int(die, AT_ADDRESS_CLASS)
            if hetero:
                for at in AT_LLVM_ADDRESS_SPACE:
                    value = self._int(die, at)
                    aspace = value if value is not None else aspace
            t = PointerType(name=name, size=size or die.unit.address_size, die_offset=off, kind=_POINTERS[tag],
                            address_space=aspace)
            self.cache[off] = t
            t.target = self._target(die) if die.has(AT_TYPE) else None
            return t

        if tag == TAG_ARRAY:
            return self._array(die)

        if tag in _STRUCTS:
            return self._struct(die, _STRUCTS[tag])

        if tag == TAG_ENUMERATION:
            return self._enum(die)

        if tag == TAG_SUBROUTINE:
            t = FunctionType(name=name, size=None, die_offset=off)
            self.cache[off] = t
            t.return_type = self._target(die) if die.has(AT_TYPE) else None
            t.params = [self._target(c) for c in self.index.children(die) if c.tag == TAG_FORMAL_PARAMETER]
            return t

        if tag == TAG_UNSPECIFIED:
            t = UnspecifiedType(name=name, size=size, die_offset=off)
            self.cache[off] = t
            return t

        # Anything else (string types, sets, ...) is shown by name and size only.
        t = UnspecifiedType(name=name or f"<type tag {tag:#x}>", size=size, die_offset=off)
        self.cache[off] = t
        return t

    def _bound(self, die: "Die", at: int) -> int | None:
        # Non-constant bounds (expressions, references to variables) are dynamic: unknown here.
        if die.form(at) in (0x18, 0x09, 0x0A, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15):
            return None
        value = self._int(die, at)
        if value is None:
            return None
        if die.form(at) in (0x0B, 0x05, 0x06, 0x07):  # fixed-size data: may be a negative bound
            bits = {0x0B: 8, 0x05: 16, 0x06: 32, 0x07: 64}[die.form(at)]
            if value >= 1 << (bits - 1) and at == AT_LOWER_BOUND:
                value -= 1 << bits
        return value

    def _array(self, die: "Die") -> ArrayType:
        t = ArrayType(name=die.name, size=self._int(die, AT_BYTE_SIZE), die_offset=die.offset)
        self.cache[die.offset] = t
        t.element = self._target(die)
        t.vector = die.flag(AT_GNU_VECTOR)
        # An array's stride is per element; a subrange's stride is per step of that dimension.
        element_stride = self._int(die, AT_BYTE_STRIDE)
        bit_stride = self._int(die, AT_BIT_STRIDE)
        if element_stride is None and bit_stride is not None and bit_stride % 8 == 0:
            element_stride = bit_stride // 8
        outer_stride = None
        dims: list[int | None] = []
        for child in self.index.children(die):
            if child.tag == TAG_SUBRANGE:
                count = self._bound(child, AT_COUNT)
                if count is None:
                    upper = self._bound(child, AT_UPPER_BOUND)
                    lower = self._bound(child, AT_LOWER_BOUND) or 0
                    count = max(upper - lower + 1, 0) if upper is not None else None
                if not dims:
                    outer_stride = self._int(child, AT_BYTE_STRIDE)
                    sub_bits = self._int(child, AT_BIT_STRIDE)
                    if outer_stride is None and sub_bits is not None and sub_bits % 8 == 0:
                        outer_stride = sub_bits // 8
                dims.append(count)
            elif child.tag == TAG_ENUMERATION:
                dims.append(len(self._enum(child).enumerators))
        if outer_stride is None and element_stride is not None:
            inner = 1
            for d in dims[1:]:
                inner = inner * d if d is not None and inner is not None else None
            outer_stride = element_stride * inner if inner is not None else None
        stride = outer_stride
        t.dims = dims or [None]
        t.byte_stride = stride
        return t

    def _complete(self, die: "Die") -> "Die":
        """The defining DIE for a declaration (type-unit signature, or same-named definition)."""
        if not die.flag(AT_DECLARATION):
            return die
        sig = die.get(AT_SIGNATURE)
        if isinstance(sig, int):
            return self.index.die(sig)
        name = die.name
        if name:
            for offset in self.index._names().get(name, []):
                other = self.index.die(offset)
                if other.tag == die.tag and not other.flag(AT_DECLARATION):
                    return other
        return die

    def _struct(self, die: "Die", kind: str) -> StructType:
        t = StructType(name=die.name, size=self._int(die, AT_BYTE_SIZE), die_offset=die.offset, kind=kind)
        self.cache[die.offset] = t
        source = self._complete(die)
        if source is not die:
            t.size = self._int(source, AT_BYTE_SIZE)
        t.declaration = source.flag(AT_DECLARATION)
        for child in self.index.children(source):
            if child.tag == TAG_MEMBER:
                # Static members are declarations (DWARF 4) or external; they have no place in the object.
                if child.flag(AT_DECLARATION) or child.flag(AT_EXTERNAL):
                    continue
                t.members.append(self._member(child, kind))
            elif child.tag == TAG_INHERITANCE:
                base = self._target(child)
                offset = self._member_byte_offset(child)
                t.members.append(Member(name=f"<{base.display_name()}>", type=base,
                                        bit_offset=8 * (offset or 0), artificial=True))
        return t

    def _member_byte_offset(self, die: "Die") -> int | None:
        value = die.get(AT_DATA_MEMBER_LOCATION)
        if value is None:
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, bytes):
            # DWARF 2 style: DW_OP_plus_uconst N (or constu N) as the whole expression.
            if value and value[0] in (DW_OP_PLUS_UCONST, DW_OP_CONSTU):
                r = ByteReader(value, 1, f"member {die.offset:#x} location")
                n = r.uleb()
                if r.pos == len(value):
                    return n
            raise CodeObjectError(f"member {die.offset:#x}: location expression is not a constant offset")
        return None

    def _member(self, die: "Die", kind: str) -> Member:
        member_type = self._target(die)
        bit_size = self._int(die, AT_BIT_SIZE)
        if die.has(AT_DATA_BIT_OFFSET):
            bit_offset = self._int(die, AT_DATA_BIT_OFFSET) or 0
        else:
            byte_offset = self._member_byte_offset(die)
            bit_offset = 8 * (byte_offset or 0)
            old_bit_offset = self._int(die, AT_BIT_OFFSET)
            if old_bit_offset is not None and bit_size is not None:
                # DWARF 2-4: bits counted from the most significant bit of a storage unit
                # of DW_AT_byte_size bytes; convert to a little-endian offset from the start.
                storage = self._int(die, AT_BYTE_SIZE)
                if storage is None:
                    try:
                        storage = member_type.strip().size
                    except AspaceError:
                        storage = None
                if storage is None:
                    raise CodeObjectError(f"bit field {die.offset:#x}: unknown storage size")
                bit_offset += storage * 8 - old_bit_offset - bit_size
        return Member(name=die.name, type=member_type, bit_offset=bit_offset, bit_size=bit_size,
                      artificial=die.flag(AT_ARTIFICIAL))

    def _enum(self, die: "Die") -> EnumType:
        cached = self.cache.get(die.offset)
        if isinstance(cached, EnumType):
            return cached
        t = EnumType(name=die.name, size=self._int(die, AT_BYTE_SIZE), die_offset=die.offset)
        self.cache[die.offset] = t
        t.underlying = self._target(die) if die.has(AT_TYPE) else None
        under = t.underlying.strip() if t.underlying is not None else None
        if isinstance(under, BaseType):
            t.signed = under.encoding in (ATE_SIGNED, ATE_SIGNED_CHAR)
            if t.size is None:
                t.size = under.size
        source = self._complete(die)
        for child in self.index.children(source):
            if child.tag != TAG_ENUMERATOR:
                continue
            value = child.get(AT_CONST_VALUE)
            form = child.form(AT_CONST_VALUE)
            if not isinstance(value, int):
                continue
            if form == 0x0D:  # sdata: signed whatever the type says
                t.signed = t.signed or value < 0
            elif t.signed and form in (0x0B, 0x05, 0x06, 0x07):
                bits = {0x0B: 8, 0x05: 16, 0x06: 32, 0x07: 64}[form]
                if value >= 1 << (bits - 1):
                    value -= 1 << bits
            t.enumerators.append((child.name or "?", value))
        return t
