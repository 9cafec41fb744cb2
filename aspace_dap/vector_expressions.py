"""A C expression over many lanes of many waves at once, in numpy arrays: what `find` evaluates.

expressions.py evaluates for the lanes of one wave with a Python number per lane; searching every
lane of 100,000 waves needs whole arrays instead. This module parses the same syntax (its tokens)
and computes with the same rules, row by row (a row is one lane of one wave): C's integer promotions
and usual arithmetic conversions, results wrapped to their type's width, floats in double and rounded
to float where the type is float, comparisons and `!` giving int, truncating division, gdb's literal
types. What a row cannot give is a reason for that row (its bytes unavailable, a division by zero, a
shift out of range), never a value. Names, registers and calls come from a `leaves` object (one place
of one kernel: session/stacked.py). Where this module does not follow expressions.py's semantics
(pointers, dereferences, strings), it raises NotVectorized and the caller evaluates wave by wave
with expressions.py.

    leaves.variable(name) -> Obj              leaves.register(name) -> Obj
    leaves.call(name, args: list[Num]) -> Obj  leaves.find_type(name) -> Type | None
    leaves.rows -> int                         (every Obj holds `rows` rows)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import builtins
from .deadline import check_time
from .dwarf.storage import OK
from .dwarf.types import (ATE_FLOAT, ArrayType, BaseType, EnumType, PointerType, StructType, Type, byte_size)
from .errors import AspaceError, EvaluationError
from .expressions import (BINARY_PRECEDENCE, BUILTIN_TYPES, CLASSIFY, DOUBLE, FLOAT, INT, LONG, UINT, ULONG, TokenCursor,
                          _literal, _member)
from .values.format import state_text
from .values.objects import Obj, _is_signed


class NotVectorized(Exception):
    """Something this module does not compute as expressions.py would: evaluate wave by wave instead."""


class Reasons:
    """Why rows have no value, numbered (0: the row has one): one list for a whole search."""

    def __init__(self):
        self.texts: list[str] = [""]
        self._codes: dict[str, int] = {"": 0}

    def code(self, text: str) -> int:
        found = self._codes.get(text)
        if found is None:
            found = self._codes[text] = len(self.texts)
            self.texts.append(text)
        return found


@dataclass
class Num:
    """A scalar per row: `values` float64 for floating types, else int64 (signed) or uint64, always
    within the type's range; `bad` the reason code of rows without a value (0 where they have one)."""

    type: Type
    values: np.ndarray
    bad: np.ndarray


# --------------------------------------------------------------------------- parsing

_PREC = BINARY_PRECEDENCE


def parse(text: str, is_type) -> tuple:
    """The expression's tree: ("num", text) ("reg", name) ("id", name) ("bool", 0|1) ("call", name, args)
    ("unary", op, x) ("cast", type, x) ("bin", op, a, b) ("cond", c, a, b) ("member", x, name)
    ("index", x, i), and ("other", what) for what only expressions.py evaluates. `is_type(words)` gives
    the Type a parenthesised name stands for, or None (a variable in parentheses)."""
    return _Parser(text, is_type).parse()


class _Parser(TokenCursor):
    def __init__(self, text: str, is_type):
        super().__init__(text)
        self.is_type = is_type

    def ternary(self):
        cond = self.binary(0)
        if self.peek()[1] == "?":
            self.take("?")
            a = self.ternary()
            self.take(":")
            return ("cond", cond, a, self.ternary())
        return cond

    def binary(self, level):
        if level == len(_PREC):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _PREC[level]:
            op = self.take()[1]
            left = ("bin", op, left, self.binary(level + 1))
        return left

    def unary(self):
        tok = self.peek()
        if tok == ("op", "("):
            t = self._try_type()
            if t is not None:
                return ("cast", t, self.unary())
        if tok[0] == "op" and tok[1] in ("-", "!", "~", "*", "&", "+"):
            self.take()
            operand = self.unary()
            if tok[1] in ("*", "&"):
                return ("other", f"unary {tok[1]}")
            return operand if tok[1] == "+" else ("unary", tok[1], operand)
        return self.postfix(self.primary())

    def _try_type(self):
        j = self.i + 1
        words = []
        while j < len(self.toks) and self.toks[j][0] == "id":
            words.append(self.toks[j][1])
            j += 1
        if not words:
            return None
        t = self.is_type(" ".join(words))
        if t is None:
            return None
        pointer = j < len(self.toks) and self.toks[j] == ("op", "*")
        while j < len(self.toks) and self.toks[j] == ("op", "*"):
            j += 1
        if j < len(self.toks) and self.toks[j] == ("op", ")"):
            self.i = j + 1
            return PointerType(None, 8, target=t) if pointer else t
        return None

    def postfix(self, node):
        while True:
            tok = self.peek()
            if tok == ("op", "."):
                self.take()
                node = ("member", node, self.take()[1])
            elif tok == ("op", "->"):
                self.take()
                self.take()
                node = ("other", "->")
            elif tok == ("op", "["):
                self.take()
                index = self.ternary()
                self.take("]")
                node = ("index", node, index)
            else:
                return node

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            return ("num", text)
        if kind == "reg":
            return ("reg", text[1:])
        if kind == "addr":
            return ("other", "an address in a space")
        if kind == "id":
            if text in ("true", "false"):
                return ("bool", int(text == "true"))
            if (text in builtins.FUNCTIONS or text in CLASSIFY) and self.peek() == ("op", "("):
                self.take("(")
                args = []
                while self.peek() != ("op", ")"):
                    args.append(self.ternary())
                    if self.peek() != ("op", ","):
                        break
                    self.take(",")
                self.take(")")
                return ("call", text, args)
            return ("id", text)
        if (kind, text) == ("op", "("):
            node = self.ternary()
            self.take(")")
            return node
        raise AspaceError(f"unexpected {text or 'end'!r} in expression")


# --------------------------------------------------------------------------- evaluation


def names(tree: tuple) -> list[str]:
    """The program names the tree reads, in the order expressions.py meets them (left to right)."""
    if tree[0] == "id":
        return [tree[1]]
    out = []
    for part in tree[1:]:
        if isinstance(part, tuple):
            out += names(part)
        elif isinstance(part, list):
            for item in part:
                out += names(item)
    return out


def registers_named(tree: tuple) -> list[str]:
    """The registers the tree names ($v3, $s5)."""
    if tree[0] == "reg":
        return [tree[1]]
    out = []
    for part in tree[1:]:
        if isinstance(part, tuple):
            out += registers_named(part)
        elif isinstance(part, list):
            for item in part:
                out += registers_named(item)
    return out


def evaluate(tree: tuple, leaves, reasons: Reasons) -> Num:
    """The tree's scalar value in every row of `leaves` (a value that is no scalar is an error)."""
    return _Eval(leaves, reasons).number(tree)


class _Eval:
    def __init__(self, leaves, reasons: Reasons):
        self.leaves = leaves
        self.reasons = reasons
        self.rows = leaves.rows

    def value(self, node):
        """An Obj for names and their members and elements, else a Num."""
        check_time()
        kind = node[0]
        if kind == "id":
            return self.leaves.variable(node[1])
        if kind == "reg":
            return self.leaves.register(node[1])
        if kind == "member":
            base = self.value(node[1])
            if not isinstance(base, Obj):
                raise AspaceError(f"there is no member named {node[2]} in {base.type.display_name()}")
            return _carry(base, _member(base, node[2]))
        if kind == "index":
            base = self.value(node[1])
            index = self.number(node[2])
            if not isinstance(base, Obj) or not isinstance(base.stripped, ArrayType) or index.bad.any():
                raise NotVectorized("indexing")
            distinct = np.unique(index.values)
            if len(distinct) != 1:
                raise NotVectorized("rows index differently")
            return _carry(base, base.element(int(distinct[0])))
        return self.number(node)

    def number(self, node) -> Num:
        kind = node[0]
        if kind in ("id", "reg", "member", "index"):
            return self.of_obj(self.value(node))
        if kind == "num":
            obj = _literal(_OneRow, node[1])
            return self._constant(obj)
        if kind == "bool":
            return Num(BUILTIN_TYPES["bool"], np.full(self.rows, node[1], np.int64), self._ok())
        if kind == "call":
            return self._call(node[1], node[2])
        if kind == "unary":
            return self._unary(node[1], self.number(node[2]))
        if kind == "cast":
            return self._cast(node[1], self.number(node[2]))
        if kind == "bin":
            return self._binary(node[1], self.number(node[2]), self.number(node[3]))
        if kind == "cond":
            return self._select(self.number(node[1]), self.number(node[2]), self.number(node[3]))
        raise NotVectorized(node[1] if len(node) > 1 else kind)

    def _ok(self) -> np.ndarray:
        return np.zeros(self.rows, np.int32)

    def _constant(self, obj: Obj) -> Num:
        one = self.of_obj(obj, rows=1)
        return Num(one.type, np.repeat(one.values, self.rows), self._ok())

    # ---- objects to numbers (expressions._numbers)

    def of_obj(self, obj, rows: int | None = None) -> Num:
        if isinstance(obj, Num):
            return obj
        t = obj.stripped
        if isinstance(t, ArrayType):
            raise EvaluationError("arrays are not numbers")
        if isinstance(t, StructType):
            raise EvaluationError(f"a {obj.type.display_name()} is not a number")
        size = obj.size
        if obj.bit_size is not None or size not in (1, 2, 4, 8) or \
                (isinstance(t, BaseType) and t.encoding == ATE_FLOAT and size not in (4, 8)):
            raise NotVectorized(f"a {size}-byte {obj.type.display_name()}")
        n = self.rows if rows is None else rows
        data, state = obj.bytes(0, size)
        data = np.ascontiguousarray(np.broadcast_to(data, (n, size)))
        state = np.broadcast_to(state, (n, size))
        worst = state.max(axis=1) if size and state.any() else np.zeros(n, np.uint8)
        if isinstance(t, BaseType) and t.encoding == ATE_FLOAT:
            values = data.view("<f4" if size == 4 else "<f8").reshape(n).astype(np.float64)
        else:
            signed = _is_signed(t)
            values = data.view(f"<{'i' if signed else 'u'}{size}").reshape(n).astype(np.int64 if signed else np.uint64)
        bad = np.zeros(n, np.int32)
        own = getattr(obj, "row_reasons", None)  # rows that carry why they have no value
        if own is not None:
            bad = np.broadcast_to(own, (n,)).astype(np.int32)
        if worst.any():
            reason = obj.error if obj.error is not None else None
            for code in np.unique(worst[worst != OK]).tolist():
                bad[(worst == code) & (bad == 0)] = self.reasons.code(reason or state_text(int(code)))
        return Num(obj.type, values, bad)

    # ---- calls

    def _call(self, name: str, args: list) -> Num:
        values = [self.number(a) for a in args]
        if name in CLASSIFY:
            if len(values) != 1:
                raise EvaluationError(f"{name} takes one argument, not {len(values)}")
            x = values[0]
            if not _is_float(x.type.strip()):
                result = np.zeros(self.rows, np.int64) if name != "isfinite" else np.ones(self.rows, np.int64)
            else:
                test = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}[name]
                result = test(x.values).astype(np.int64)
            return Num(INT, result, x.bad.copy())
        return self.of_obj(self.leaves.call(name, values))

    # ---- conversions

    def _convert(self, x: Num, t: Type) -> Num:
        """expressions._converted: the values as `t` (a promoted type: int, unsigned, long, unsigned
        long, float, double)."""
        if _is_float(t):  # ints become doubles, as Python's float() makes them; a float result is rounded later
            return Num(t, x.values.astype(np.float64), x.bad)
        if _is_float(x.type.strip()):
            raise NotVectorized("a float converted to an integer type")
        if x.type.strip() == t:  # (already a value of the type)
            return Num(t, x.values, x.bad)
        return Num(t, _wrap(x.values, t), x.bad)

    def _cast(self, t: Type, x: Num) -> Num:
        st = t.strip()
        if not isinstance(st, BaseType):
            raise NotVectorized(f"a cast to {t.display_name()}")
        if _is_float(st):
            if byte_size(st) not in (4, 8):
                raise NotVectorized(f"a cast to {t.display_name()}")
            return Num(t, _round(x.values.astype(np.float64), st), x.bad)
        bad = x.bad.copy()
        if _is_float(x.type.strip()):
            values = x.values
            finite = np.isfinite(values)
            for v in np.unique(values[~finite & (bad == 0)]).tolist():
                bad[(values == v) | (np.isnan(values) & np.isnan(v))] = self.reasons.code(
                    f"cannot convert {v} to {t.display_name()}")
            if (np.abs(values[finite]) >= 2.0 ** 63).any():
                raise NotVectorized("a float too large for a 64-bit integer")
            values = np.where(finite, np.trunc(np.where(finite, values, 0)), 0).astype(np.int64)
            return Num(t, _wrap(values, st), bad)
        return Num(t, _wrap(x.values, st), bad)

    # ---- operators (expressions._arith, _unary, _select)

    def _binary(self, op: str, a: Num, b: Num) -> Num:
        ta, tb = a.type.strip(), b.type.strip()
        if isinstance(ta, PointerType) or isinstance(tb, PointerType):
            if op in ("+", "-"):
                raise NotVectorized("pointer arithmetic")
        bad = np.maximum(a.bad, b.bad)
        if op in ("&&", "||"):
            x, y = a.values != 0, b.values != 0
            return Num(INT, ((x & y) if op == "&&" else (x | y)).astype(np.int64), bad)
        if op in ("<<", ">>"):
            rt = _promoted(ta)
            if _is_float(rt) or _is_float(tb):
                raise NotVectorized("a shift of a float")
            x = self._convert(a, rt).values
            count = b.values.astype(np.int64) if b.values.dtype != np.uint64 else b.values
            bits = 8 * (byte_size(rt) or 8)
            wrong = ((count < 0) | (count >= bits)) & (bad == 0)
            for c in np.unique(count[wrong]).tolist():
                bad[wrong & (count == c)] = self.reasons.code(f"shift count {int(c)} is out of range for "
                                                              f"{rt.display_name()}")
            safe = np.where(wrong, 0, count).astype(x.dtype)
            out = np.left_shift(x, safe) if op == "<<" else np.right_shift(x, safe)
            return Num(rt, _wrap(out, rt), bad)
        common = ULONG if isinstance(ta, PointerType) or isinstance(tb, PointerType) else _common_type(ta, tb)
        x, y = self._convert(a, common).values, self._convert(b, common).values
        if op in ("==", "!=", "<", ">", "<=", ">="):
            test = {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal,
                    ">=": np.greater_equal}[op]
            return Num(INT, test(x, y).astype(np.int64), bad)
        floats = _is_float(common)
        with np.errstate(all="ignore"):
            if op in ("+", "-", "*"):
                out = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](x, y)
            elif op in ("&", "|", "^"):
                if floats:
                    raise NotVectorized("a bitwise operation on floats")
                out = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op](x, y)
            elif op == "%" and floats:
                raise EvaluationError("% needs integer operands")
            elif op == "/" and floats:
                out = x / y
            else:  # integer / and %: C truncates toward zero
                zero = (y == 0) & (bad == 0)
                bad[zero] = self.reasons.code("division by zero")
                safe = np.where(y == 0, 1, y).astype(y.dtype)
                q = np.floor_divide(x, safe)
                if x.dtype == np.int64:
                    q = q + ((np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0))).astype(np.int64)
                out = q if op == "/" else x - q * safe
        if floats:
            return Num(common, _round(out, common), bad)
        return Num(common, _wrap(out, common), bad)

    def _unary(self, op: str, x: Num) -> Num:
        t = x.type.strip()
        if op == "!":
            return Num(INT, (x.values == 0).astype(np.int64), x.bad)
        if _is_float(t):
            if op == "~":
                raise NotVectorized("~ of a float")
            return Num(x.type, -x.values, x.bad)
        rt = _promoted(t)
        values = self._convert(x, rt).values
        with np.errstate(all="ignore"):
            out = np.negative(values) if op == "-" else np.invert(values)
        return Num(rt, _wrap(out, rt), x.bad)

    def _select(self, c: Num, a: Num, b: Num) -> Num:
        if a.type.strip() != b.type.strip():
            raise NotVectorized("a ?: of two types")
        pick = c.values != 0
        bad = np.where(c.bad != 0, c.bad, np.where(pick, a.bad, b.bad)).astype(np.int32)
        return Num(a.type, np.where(pick, a.values, b.values), bad)


def _carry(base: Obj, part: Obj) -> Obj:
    """A member or element of an object whose rows carry reasons carries them too."""
    codes = getattr(base, "row_reasons", None)
    if codes is None:
        return part
    out = object.__new__(type(base))
    for slot in Obj.__slots__:
        setattr(out, slot, getattr(part, slot))
    out.row_reasons = codes
    return out


class _OneRow:
    """A scope of one row for expressions._literal (a literal's value and type)."""

    lanes = np.zeros(1, np.int64)


def _is_float(t) -> bool:
    return isinstance(t, BaseType) and t.encoding == ATE_FLOAT


def _promoted(t) -> Type:
    from .expressions import _promoted as promoted
    if isinstance(t, (BaseType, PointerType, EnumType)):
        return promoted(t)
    raise NotVectorized(f"arithmetic on {t.display_name()}")


def _common_type(ta, tb) -> Type:
    if _is_float(ta) or _is_float(tb):
        return DOUBLE if any(_is_float(t) and byte_size(t) == 8 for t in (ta, tb)) else FLOAT
    pa, pb = _promoted(ta), _promoted(tb)
    if pa is pb:
        return pa
    unsigned_a, unsigned_b = pa in (UINT, ULONG), pb in (UINT, ULONG)
    if unsigned_a == unsigned_b:
        return pa if pa.size >= pb.size else pb
    unsigned, signed = (pa, pb) if unsigned_a else (pb, pa)
    return signed if signed.size > unsigned.size else unsigned


def _wrap(values: np.ndarray, t: Type) -> np.ndarray:
    """Integers as a value of `t`: its width, its signedness (int64 or uint64 holding them); a cast to
    the narrower integer keeps the low bits, as C's conversions and expressions.py's masks do."""
    size = byte_size(t) or 8
    signed = t in (INT, LONG) or (t not in (UINT, ULONG) and _is_signed(t))
    if size not in (1, 2, 4, 8):
        raise NotVectorized(f"a {size}-byte integer")
    narrow = np.dtype(f"{'i' if signed else 'u'}{size}")
    with np.errstate(all="ignore"):
        if values.dtype != narrow:
            values = values.astype(narrow)
        return values.astype(np.int64 if signed else np.uint64)


def _round(values: np.ndarray, t: Type) -> np.ndarray:
    """Float results: double, or rounded to float where the type is (as storing them does)."""
    with np.errstate(all="ignore"):
        return values.astype(np.float32).astype(np.float64) if byte_size(t) == 4 else values.astype(np.float64)


def truth(x: Num) -> np.ndarray:
    """C's truth of each row's value (a NaN is true)."""
    return x.values != 0


def row_bytes(x: Num, rows: np.ndarray) -> Obj:
    """The rows' values as an object of the value's type (to format them as every value is formatted)."""
    t = x.type.strip()
    size = byte_size(t) or 8
    values = x.values[rows]
    if _is_float(t):
        raw = values.astype("<f4" if size == 4 else "<f8")
    else:
        raw = values.astype(f"<{'i' if values.dtype == np.int64 else 'u'}8").view(np.uint8).reshape(len(rows), 8)[:, :size]
    data = np.ascontiguousarray(raw).view(np.uint8).reshape(len(rows), size)
    return Obj(x.type, None, None, lanes=np.arange(len(rows)), data=data, state=np.zeros(data.shape, np.uint8))
