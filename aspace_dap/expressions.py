"""C-like expressions over a stopped lane: what watch, hover and the REPL evaluate.

    p.a   arr[3]   *ptr   &x   (int *) local#0x40   *(int *) private_lane#0x10
    $s5   $v3   $exec   $pc   $lane   a + b * 2   x == 3 && y < 4
    threadIdx.x   get_global_id(0)   $_lane_workgroup_pos   (the GPU builtins: builtins.py)
    isnan(acc)   isinf(x)   isfinite(x)

A variable is read for all requested lanes at once (one lane-wide DWARF
evaluation); member access, indexing and arithmetic then apply per lane.
"""

from __future__ import annotations

import math
import re
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from . import builtins
from .dwarf.locations import Location, MemoryLocation, RegisterLocation
from .dwarf.types import (ATE_FLOAT, ATE_SIGNED, ATE_UNSIGNED, ATE_UNSIGNED_CHAR, ArrayType, BaseType, PointerType,
                          StructType, Type, byte_size)
from .deadline import check_time, evaluation_time
from .errors import AspaceError, EvaluationError
from .memref import parse_memref
from .values.objects import Obj

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<addr>[A-Za-z_][A-Za-z0-9_]*(?:@[A-Za-z0-9_.(),]+)?\#(?:0[xX][0-9a-fA-F]+|\d+))
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+\.\d*(?:[eE][-+]?\d+)?f?|\.\d+(?:[eE][-+]?\d+)?f?|\d+[eE][-+]?\d+f?|\d+[uUlL]*)
  | (?P<reg>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op>->|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>()\[\].,?:])
""", re.VERBOSE)

INT = BaseType("int", 4, encoding=ATE_SIGNED)
LONG = BaseType("long", 8, encoding=ATE_SIGNED)
ULONG = BaseType("unsigned long", 8, encoding=ATE_UNSIGNED)
UINT = BaseType("unsigned int", 4, encoding=ATE_UNSIGNED)
DOUBLE = BaseType("double", 8, encoding=ATE_FLOAT)
FLOAT = BaseType("float", 4, encoding=ATE_FLOAT)
BUILTIN_TYPES = {"int": INT, "long": LONG, "unsigned": UINT, "unsigned int": UINT, "unsigned long": ULONG,
                 "double": DOUBLE, "float": FLOAT, "char": BaseType("char", 1, encoding=0x06),
                 "short": BaseType("short", 2, encoding=ATE_SIGNED), "uint64_t": ULONG, "int64_t": LONG,
                 "uint32_t": UINT, "int32_t": INT, "bool": BaseType("bool", 1, encoding=0x02)}


def tokenize(text: str) -> list[tuple[str, str]]:
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise AspaceError(f"cannot parse {text[pos:pos + 10]!r} in expression")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


@dataclass
class Scope:
    """What names mean: the session, a frame, and the lanes to evaluate for."""

    session: object
    frame: object
    lanes: np.ndarray


# precedence climbing over C's binary operators, loosest first
BINARY_PRECEDENCE = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
                     ("+", "-"), ("*", "/", "%")]


class TokenCursor(ABC):
    """A recursive-descent parser's place in an expression's tokens (this module's evaluator and
    vector_expressions.py's tree builder): `parse` reads one whole expression with the subclass's
    `ternary` and refuses anything left over."""

    def __init__(self, text: str):
        self.toks = tokenize(text)
        self.i = 0
        self.text = text

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "")

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise AspaceError(f"expected {value!r} in {self.text!r}, found {tok[1] or 'end'!r}")
        self.i += 1
        return tok

    def parse(self):
        node = self.ternary()
        if self.peek()[0] != "eof":
            raise AspaceError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return node

    @abstractmethod
    def ternary(self):
        """The whole expression's tree, from the cursor on (the grammar's top rule)."""


class _Parser(TokenCursor):
    def __init__(self, text: str, scope: Scope):
        super().__init__(text)
        self.scope = scope

    def take(self, value=None):
        check_time()
        return super().take(value)

    _PREC = BINARY_PRECEDENCE

    def ternary(self):
        cond = self.binary(0)
        if self.peek()[1] == "?":
            self.take("?")
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return _select(self.scope, cond, a, b)
        return cond

    def binary(self, level):
        if level == len(self._PREC):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self._PREC[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = _arith(self.scope, op, left, right)
        return left

    def unary(self):
        tok = self.peek()
        if tok == ("op", "("):
            t = self._try_type(1)
            if t is not None:
                self.i = t[1]
                return _cast(self.scope, t[0], self.unary())
        if tok[0] == "op" and tok[1] in ("-", "!", "~", "*", "&", "+"):
            self.take()
            operand = self.unary()
            if tok[1] == "*":
                return _deref(self.scope, operand)
            if tok[1] == "&":
                return _address_of(self.scope, operand)
            if tok[1] == "+":
                return operand
            return _unary(self.scope, tok[1], operand)
        return self.postfix(self.primary())

    def _try_type(self, k):
        """`(type name [*]*)` at offset k: returns (Type, index after ')') or None."""
        j = self.i + k
        words = []
        while j < len(self.toks) and self.toks[j][0] == "id":
            words.append(self.toks[j][1])
            j += 1
        if not words:
            return None
        name = " ".join(words)
        base = BUILTIN_TYPES.get(name)
        if base is None:
            base = _find_type(self.scope, name)
        if base is None:
            return None
        t: Type = base
        while j < len(self.toks) and self.toks[j] == ("op", "*"):
            t = PointerType(None, 8, target=t)
            j += 1
        if j < len(self.toks) and self.toks[j] == ("op", ")"):
            return t, j + 1
        return None

    def postfix(self, v):
        while True:
            tok = self.peek()
            if tok == ("op", "."):
                self.take()
                v = _member(v, self.take()[1])
            elif tok == ("op", "->"):
                self.take()
                v = _member(_deref(self.scope, v), self.take()[1])
            elif tok == ("op", "["):
                self.take()
                idx = self.ternary()
                self.take("]")
                v = _index(self.scope, v, idx)
            else:
                return v

    def _arguments(self) -> list:
        """`(a, b)` after a function's name: the arguments' values."""
        self.take("(")
        args = []
        while self.peek() != ("op", ")"):
            args.append(self.ternary())
            if self.peek() != ("op", ","):
                break
            self.take(",")
        self.take(")")
        return args

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            return _literal(self.scope, text)
        if kind == "reg":
            return _register(self.scope, text[1:])
        if kind == "addr":
            return _address_literal(self.scope, text)
        if kind == "id":
            if text in ("true", "false"):
                return _const(self.scope, int(text == "true"), BUILTIN_TYPES["bool"])
            if text in builtins.FUNCTIONS and self.peek() == ("op", "("):
                return builtins.call(self.scope, text, self._arguments())
            if text in CLASSIFY and self.peek() == ("op", "("):
                return _classify(self.scope, text, self._arguments())
            return _variable(self.scope, text)
        if (kind, text) == ("op", "("):
            v = self.ternary()
            self.take(")")
            return v
        raise AspaceError(f"unexpected {text or 'end'!r} in expression")


# --------------------------------------------------------------------------- operations


def _const(scope: Scope, value, t: Type) -> Obj:
    size = byte_size(t) or 8
    if isinstance(value, float):
        raw = struct.pack("<f" if size == 4 else "<d", value)
    else:
        raw = (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return Obj.from_bytes(t, raw, scope.lanes)


def _per_lane(scope: Scope, values: list, t: Type) -> Obj:
    size = byte_size(t) or 8
    g = len(scope.lanes)
    data = np.zeros((g, size), np.uint8)
    state = np.zeros((g, size), np.uint8)
    for i, v in enumerate(values):
        if v is None:
            state[i] = 2
            continue
        if isinstance(v, float):
            raw = struct.pack("<f" if size == 4 else "<d", v)
        else:
            raw = (int(v) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        data[i] = np.frombuffer(raw, np.uint8)
    return Obj(t, None, None, lanes=scope.lanes, data=data, state=state)


def _literal(scope, text):
    lower = text.lower()
    if not lower.startswith("0x") and ("." in lower or "e" in lower):
        return _const(scope, float(lower.rstrip("f")), FLOAT if lower.endswith("f") else DOUBLE)
    t = text.rstrip("uUlL")
    if len(t) > 24:  # longer than any 64-bit literal; also keeps int() off huge digit strings
        raise EvaluationError(f"integer literal {text[:24]}... does not fit in 64 bits")
    value = int(t, 0) if not re.fullmatch(r"0\d+", t) else int(t, 8)
    if value >= 1 << 64:
        raise EvaluationError(f"integer literal {text} does not fit in 64 bits")
    return _const(scope, value, _literal_type(value, text[len(t):].lower(), decimal=t[:1] != "0" or t == "0"))


def _literal_type(value: int, suffix: str, decimal: bool) -> Type:
    """C's type of an integer constant: the first of its candidate types that holds the value
    (a decimal constant without u is never unsigned, except past long's range, as GDB does)."""
    if "u" in suffix:
        candidates = [UINT, ULONG] if "l" not in suffix else [ULONG]
    elif "l" in suffix:
        candidates = [LONG, ULONG]
    else:
        candidates = [INT, LONG, ULONG] if decimal else [INT, UINT, LONG, ULONG]
    for t in candidates:
        bits = 8 * t.size - (0 if t in (UINT, ULONG) else 1)
        if value < 1 << bits:
            return t
    return ULONG


def _numbers(obj: Obj):
    """Per-lane Python numbers (int or float) of a scalar object; None where unreadable."""
    t = obj.stripped
    if isinstance(t, ArrayType):
        raise EvaluationError("arrays are not numbers")
    if isinstance(t, StructType):
        raise EvaluationError(f"a {obj.type.display_name()} is not a number")
    values, states = obj.scalar_bits()
    if isinstance(t, BaseType) and t.encoding == ATE_FLOAT:
        fmt = {4: "<f", 8: "<d"}.get(obj.size)
        return [None if v is None else struct.unpack(fmt, (v & ((1 << (8 * obj.size)) - 1)).to_bytes(obj.size, "little"))[0]
                for v in values]
    return values


def _is_float(t) -> bool:
    return isinstance(t, BaseType) and t.encoding == ATE_FLOAT


def _promoted(t) -> Type:
    """C's integer promotion: anything narrower than int computes as int; enums and bools too."""
    if _is_float(t):
        return t
    size = byte_size(t) or 4
    unsigned = isinstance(t, PointerType) or (isinstance(t, BaseType) and t.encoding in (ATE_UNSIGNED, ATE_UNSIGNED_CHAR))
    if size < 4:
        return INT
    if size == 4:
        return UINT if unsigned else INT
    return ULONG if unsigned else LONG


def _common_type(a: Obj, b: Obj) -> Type:
    """C's usual arithmetic conversions."""
    ta, tb = a.stripped, b.stripped
    if _is_float(ta) or _is_float(tb):
        return DOUBLE if any(_is_float(t) and byte_size(t) == 8 for t in (ta, tb)) else FLOAT
    pa, pb = _promoted(ta), _promoted(tb)
    if pa is pb:
        return pa
    unsigned_a, unsigned_b = pa in (UINT, ULONG), pb in (UINT, ULONG)
    if unsigned_a == unsigned_b:
        return pa if pa.size >= pb.size else pb
    unsigned, signed = (pa, pb) if unsigned_a else (pb, pa)
    # a wider signed type holds every value of the unsigned one; otherwise both compute unsigned
    return signed if signed.size > unsigned.size else unsigned


def _converted(values: list, t: Type) -> list:
    """Per-lane numbers as values of `t` (wrapped to its width and signedness, or made float)."""
    if _is_float(t):
        return [None if v is None else float(v) for v in values]
    bits = 8 * (byte_size(t) or 8)
    mask, signed = (1 << bits) - 1, t in (INT, LONG)
    out = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        v = int(v) & mask
        out.append(v - (1 << bits) if signed and v >> (bits - 1) else v)
    return out


def _arith(scope, op, a: Obj, b: Obj) -> Obj:
    ta = a.stripped
    if isinstance(ta, (PointerType, ArrayType)) and op in ("+", "-") and not isinstance(b.stripped, PointerType):
        elem = ta.target if isinstance(ta, PointerType) else ta.element
        step = byte_size(elem) or 1
        base = _numbers(a) if isinstance(ta, PointerType) else _numbers(_address_of(scope, a))
        offs = _numbers(b)
        sign = 1 if op == "+" else -1
        vals = [None if x is None or y is None else x + sign * y * step for x, y in zip(base, offs)]
        pt = ta if isinstance(ta, PointerType) else PointerType(None, 8, target=elem)
        return _per_lane(scope, vals, pt)
    tb = b.stripped
    if isinstance(ta, PointerType) and isinstance(tb, PointerType) and op == "-":
        # the distance in elements, as ptrdiff_t
        step = byte_size(ta.target) if ta.target is not None else 1
        diffs = _converted([None if x is None or y is None else x - y for x, y in zip(_numbers(a), _numbers(b))], LONG)
        return _per_lane(scope, [None if d is None else abs(d) // (step or 1) * (1 if d >= 0 else -1)
                                 for d in diffs], LONG)
    xs, ys = _numbers(a), _numbers(b)
    if op in ("&&", "||"):
        rt = INT
    elif op in ("<<", ">>"):  # the promoted left operand's type; the count is any integer
        rt = _promoted(a.stripped)
        xs = _converted(xs, rt)
    else:
        common = ULONG if isinstance(a.stripped, PointerType) or isinstance(b.stripped, PointerType) \
            else _common_type(a, b)
        xs, ys = _converted(xs, common), _converted(ys, common)
        rt = INT if op in ("==", "!=", "<", ">", "<=", ">=") else common
    try:
        return _per_lane(scope, _arith_values(op, xs, ys, rt), rt)
    except (OverflowError, ValueError) as exc:  # e.g. an infinite float turned into an integer
        raise EvaluationError(f"{op}: {exc}") from None


def _arith_values(op, xs, ys, rt) -> list:
    out = []
    for x, y in zip(xs, ys):
        if x is None or y is None:
            out.append(None)
            continue
        floats = isinstance(x, float) or isinstance(y, float)
        if op == "%" and floats:
            raise EvaluationError("% needs integer operands")
        if op in ("/", "%") and y == 0 and not floats:
            raise EvaluationError("division by zero")
        if op in ("<<", ">>") and not 0 <= int(y) < 8 * (byte_size(rt) or 8):
            raise EvaluationError(f"shift count {int(y)} is out of range for {rt.display_name()}")
        if op == "/" and floats:
            with np.errstate(divide="ignore", invalid="ignore"):  # IEEE: x/0.0 is an infinity or a NaN
                r = float(np.float64(x) / np.float64(y))
        elif op in ("/", "%"):
            # C truncates toward zero; integer arithmetic keeps all 64 bits exact
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            r = q if op == "/" else x - q * y
        else:
            r = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "<<": lambda: int(x) << int(y),
                 ">>": lambda: int(x) >> int(y), "&": lambda: int(x) & int(y), "|": lambda: int(x) | int(y),
                 "^": lambda: int(x) ^ int(y), "==": lambda: int(x == y), "!=": lambda: int(x != y),
                 "<": lambda: int(x < y), ">": lambda: int(x > y), "<=": lambda: int(x <= y),
                 ">=": lambda: int(x >= y), "&&": lambda: int(bool(x) and bool(y)),
                 "||": lambda: int(bool(x) or bool(y))}[op]()
        out.append(r)
    return out


CLASSIFY = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}  # C's classification macros


def _classify(scope, name: str, args: list) -> Obj:
    """isnan(x), isinf(x), isfinite(x) as int per lane; an integer is a finite number."""
    if len(args) != 1:
        raise EvaluationError(f"{name} takes one argument, not {len(args)}")
    xs = _numbers(args[0])
    floats = _is_float(args[0].stripped)
    test = CLASSIFY[name]
    return _per_lane(scope, [None if x is None else int(test(x) if floats else name == "isfinite") for x in xs], INT)


def _unary(scope, op, v: Obj) -> Obj:
    xs = _numbers(v)
    rt = INT if op == "!" else v.type if _is_float(v.stripped) else _promoted(v.stripped)
    if op != "!":
        xs = _converted(xs, rt)
    try:
        out = [None if x is None else (-x if op == "-" else int(not x) if op == "!" else ~int(x)) for x in xs]
    except (ValueError, OverflowError):  # ~ of NaN or an infinity
        raise EvaluationError(f"{op}: {xs[0]} has no integer value") from None
    return _per_lane(scope, out, rt)


def _select(scope, cond, a, b):
    cs, xs, ys = _numbers(cond), _numbers(a), _numbers(b)
    return _per_lane(scope, [None if c is None else (x if c else y) for c, x, y in zip(cs, xs, ys)], a.type)


def _member(v: Obj, name: str) -> Obj:
    for n, m in v.members():
        if n == name:
            return m
    t = v.stripped
    if isinstance(t, StructType):
        # anonymous members (unions inside structs) are searched too
        for n, m in v.members():
            if n.startswith("<anonymous"):
                try:
                    return _member(m, name)
                except AspaceError:
                    pass
    raise AspaceError(f"there is no member named {name} in {v.type.display_name()}")


def _index(scope, v: Obj, idx: Obj) -> Obj:
    idxs = _numbers(idx)
    t = v.stripped
    if isinstance(t, ArrayType):
        uniq = {i for i in idxs if i is not None}
        if len(uniq) == 1:
            return v.element(int(uniq.pop()))
        raise EvaluationError("lanes index the array differently; evaluate per lane")
    if isinstance(t, PointerType):
        return _deref(scope, _arith(scope, "+", v, idx))
    raise AspaceError(f"cannot subscript a value of type {v.type.display_name()}")


def _deref(scope, v: Obj) -> Obj:
    t = v.stripped
    if isinstance(t, ArrayType):
        return v.element(0)
    if not isinstance(t, PointerType):
        raise AspaceError(f"attempt to take contents of a non-pointer value ({v.type.display_name()})")
    if t.target is None:
        raise AspaceError("attempt to take contents of a void pointer")
    session = scope.session
    addrs = _numbers(v)
    dialect = scope.frame.dialect if scope.frame is not None else None
    from .dwarf.target import Dialect
    space = session.adapter.pointer_space(t.address_space, dialect or Dialect(vendor_ops=session.adapter.vendor))
    if getattr(t, "address_space_name", None):
        space = session.adapter.space_by_name(t.address_space_name)
    if any(a is None for a in addrs):
        raise EvaluationError("the pointer's value is not available")
    if isinstance(t, ContextPointerType):
        # the address names its own wave and lane: read there, whatever the focus
        _, space, target, lane = session.resolve_memref(t.memref_text)
        loc = Location((MemoryLocation(space, np.array(addrs, np.uint64), np.zeros(len(addrs), np.int64),
                                       np.full(len(addrs), lane, np.int64)),))
        return Obj.from_location(t.target, loc, target, scope.lanes)
    wave = session.wave(scope.frame.wave_id if scope.frame is not None else None)
    target = session.target_for(wave, dialect or Dialect(vendor_ops=session.adapter.vendor))
    loc = Location((MemoryLocation(space, np.array(addrs, np.uint64), np.zeros(len(addrs), np.int64),
                                   scope.lanes),))
    return Obj.from_location(t.target, loc, target, scope.lanes)


def _address_of(scope, v: Obj) -> Obj:
    place = v.memory_place()
    if place is None or v.bit_size is not None:
        where = v.location.describe() if v.location is not None else "no location"
        raise AspaceError(f"attempt to take the address of a value not located in memory ({where})")
    pt = PointerType(None, 8, target=v.type, address_space_name=place.space.name)
    return _per_lane(scope, [int(a) for a in place.address], pt)


def _cast(scope, t: Type, v: Obj) -> Obj:
    st = t.strip()
    if isinstance(st, (PointerType, BaseType)):
        xs = _numbers(v) if not isinstance(v.stripped, ArrayType) else _numbers(_address_of(scope, v))
        if isinstance(st, BaseType) and st.encoding == ATE_FLOAT:
            xs = [None if x is None else float(x) for x in xs]
        elif isinstance(st, PointerType) and isinstance(v.stripped, ContextPointerType):
            t = ContextPointerType(st.target, v.stripped.address_space_name, v.stripped.memref_text)
        elif isinstance(st, PointerType) and isinstance(v.stripped, PointerType) and st.address_space_name is None:
            st.address_space_name = v.stripped.address_space_name
        else:
            try:
                xs = [None if x is None else int(x) for x in xs]
            except (ValueError, OverflowError):  # NaN and infinities have no integer value
                raise EvaluationError(f"cannot convert {_numbers(v)[0]} to {t.display_name()}") from None
        return _per_lane(scope, xs, t)
    if v.location is not None:
        return Obj.from_location(t, v.location, v.target, v.lanes)
    raise AspaceError(f"cannot cast to {t.display_name()}")


def _find_type(scope: Scope, name: str):
    frame = scope.frame
    if frame is None or frame.program.index is None:
        return None
    return frame.program.index.find_type(name)


def _register(scope: Scope, name: str) -> Obj:
    session = scope.session
    if name.startswith("_"):  # $_lane, $_dispatch_pos ...: the debuggers' convenience variables
        return builtins.convenience(scope, name)
    if name == "lane":
        return _per_lane(scope, [int(x) for x in scope.lanes], INT)
    wave = session.wave(scope.frame.wave_id if scope.frame is not None else None)
    caller = scope.frame is not None and scope.frame.caller_state is not None
    if caller and name in ("pc", "exec", wave.pc_register, wave.exec_register):  # as the frame was unwound
        got = session.caller_register(scope.frame, {"pc": wave.pc_register, "exec": wave.exec_register}.get(name, name))
        if got.why is not None:
            raise AspaceError(f"${name} is not saved in frame #{scope.frame.index}: {got.why}")
        return _const(scope, int.from_bytes(bytes(got.data[0]), "little"), ULONG)
    if name in ("pc", "exec", wave.pc_register, wave.exec_register):
        # $pc / $exec name the wave's PC and execution mask whatever the vendor calls them
        name = {"pc": wave.pc_register, "exec": wave.exec_register}.get(name, name)
        value = wave.registers.value(name) if name else None
        if value is None:
            raise AspaceError(f"${name} is not in the dump")
        return _const(scope, value, ULONG)
    regno = session.adapter.register_number(name, wave.lanes)
    if regno is None:
        raise AspaceError(f"unknown register ${name}")
    from .dwarf.target import Dialect
    dialect = Dialect(vendor_ops=session.adapter.vendor)  # per-lane view of vector registers
    # a caller frame reads its registers as unwound (unavailable where the callee may have changed them)
    target = session.frame_target(scope.frame, dialect) if caller else session.target_for(wave, dialect)
    info = target.register_info(regno)
    loc = Location((RegisterLocation(info, np.zeros(len(scope.lanes), np.int64), scope.lanes),))
    return Obj.from_location(UINT, loc, target, scope.lanes)


class ContextPointerType(PointerType):
    """A pointer from a qualified address (`private_lane@wave3.lane5#0x10`): it keeps its context."""

    def __init__(self, target, space_name: str, memref_text: str):
        super().__init__(None, 8, target=target, address_space_name=space_name)
        self.memref_text = memref_text


def _address_literal(scope: Scope, text: str) -> Obj:
    """`local#0x40` is an address in a space: a pointer-sized value that *(T *) can dereference.

    Without a context it means the focused lane's (ROCgdb's reading); with one it is that context's.
    """
    ref = parse_memref(text)
    session = scope.session
    space = session.adapter.space_by_name(ref.space)
    pt = ContextPointerType(None, space.name, text) if "@" in text else \
        PointerType(None, 8, target=None, address_space_name=space.name)
    return _per_lane(scope, [ref.address] * len(scope.lanes), pt)


def _variable(scope: Scope, name: str) -> Obj:
    session, frame = scope.session, scope.frame
    if frame is None:
        if name in builtins.VARIABLES:
            return builtins.variable(scope, name)
        raise AspaceError(f"no symbol \"{name}\" in current context")
    candidates = [v for v in session.variables(frame) if v.name == name and not v.shadowed]
    if not candidates:
        # a coordinate object's static member (HIP's `__HIP_Coordinates<...>::x`) is no name of its own
        candidates = [v for v in session.globals(frame) if v.name == name
                      and (session.coordinate_global(frame, v) or (None, None))[1] is None]
    if not candidates:
        if name in builtins.VARIABLES:
            return builtins.variable(scope, name)
        raise AspaceError(f"no symbol \"{name}\" in current context")
    coordinate = session.coordinate_global(frame, candidates[-1])
    if coordinate is not None:  # HIP's threadIdx: an empty object in the DWARF; the lane's coordinates
        return builtins.variable(scope, *coordinate)
    read = session.read_variable(frame, candidates[-1], scope.lanes)
    if len(read.groups) == 1 and not read.errors and len(read.groups[0][0]) == len(scope.lanes):
        return read.groups[0][1]
    if len(scope.lanes) == 1:
        lane = int(scope.lanes[0])
        obj = read.obj_for(lane)
        if obj is None:
            raise AspaceError(read.errors.get(lane, "<unavailable>").strip("<>"))
        return obj
    raise _Divergent(read)


class _Divergent(Exception):
    """A variable's location differs in shape between lanes: evaluate lane by lane."""

    def __init__(self, read):
        self.read = read


def convert(session, frame, t: Type, value: Obj) -> Obj:
    """`value` as type `t`, the way a C assignment converts it (what setVariable writes)."""
    return _cast(Scope(session, frame, value.lanes), t, value)


def evaluate_expression(session, text: str, *, frame=None, lanes=None) -> Obj:
    lanes = np.array([session.focus_lane] if lanes is None else lanes, dtype=np.int64)
    with evaluation_time():
        return _Parser(text, Scope(session, frame, lanes)).parse()
