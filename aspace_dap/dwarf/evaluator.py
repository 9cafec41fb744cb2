"""The DWARF expression evaluator: locations on the stack, address spaces, lanes.

Follows the AMDGPU heterogeneous-debugging semantics (llvm-dwarf-locations-on-
stack and the AMDGPU user guide): stack entries are values or location
descriptions, with the implicit conversions that keep DWARF 5 meaning.

Evaluation is lane-wide: one pass evaluates a group of lanes, values held as
numpy vectors. The group splits only where lanes take different branches
(DW_OP_bra) — every other divergence (addresses, offsets, register contents)
stays inside the vectors. A lane that fails (unavailable memory, division by
zero) leaves its group with its own error; the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import AspaceError, DecodeError, EvaluationError, LimitExceeded, UnavailableError
from . import ops as ops_mod
from .locations import (ATE_GENERIC, BaseTypeRef, CompositeLocation, Entry, ImplicitLocation,
                        ImplicitPointerLocation, Location, MemoryLocation, Piece, RegisterLocation,
                        UndefinedLocation, Value, add_piece, generic, single)
from .storage import OK, read_bits
from .target import Dialect, EvalTarget, FrameContext


@dataclass(frozen=True)
class Limits:
    max_steps: int = 20_000  # operations executed, over all lane groups and calls
    max_stack: int = 1_000
    max_call_depth: int = 16
    max_piece_bits: int = 1 << 23  # 1 MiB composites
    max_implicit_bytes: int = 1 << 20


@dataclass
class LaneResults:
    """Outcome of evaluating for a set of lanes: groups of lanes sharing a result, and failures."""

    lanes: np.ndarray
    groups: list[tuple[np.ndarray, Entry]] = field(default_factory=list)  # (lane ids, entry for those lanes)
    errors: dict[int, AspaceError] = field(default_factory=dict)

    def for_lane(self, lane: int) -> Entry:
        if lane in self.errors:
            raise self.errors[lane]
        for lanes, entry in self.groups:
            hit = np.nonzero(lanes == lane)[0]
            if len(hit):
                return entry.take(hit)
        raise EvaluationError(f"lane {lane} was not evaluated")


@dataclass
class TraceStep:
    op: str
    stack: list[str]


class _Group:
    """One lane group's machine state."""

    __slots__ = ("lanes", "stack", "pc")

    def __init__(self, lanes, stack, pc):
        self.lanes = lanes
        self.stack = stack
        self.pc = pc


class _LaneFailure(Exception):
    """Some lanes of a group failed; the rest continue."""

    def __init__(self, mask: np.ndarray, error: AspaceError):
        self.mask = mask
        self.error = error


def _u64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint64)


class Evaluator:
    def __init__(self, target: EvalTarget, dialect: Dialect, frame: FrameContext | None = None,
                 limits: Limits = Limits(), trace: list[TraceStep] | None = None):
        self.target = target
        self.dialect = dialect
        self.frame = frame or FrameContext()
        self.limits = limits
        self.steps = 0
        self.trace = trace
        self.generic = generic(target.address_size)
        self._final_op = None
        # the unit whose DIE offsets the running expression names: a DW_OP_call_ref procedure runs in its own
        # DIE's unit (its call2/call4, typed operations and addrx are relative to that unit)
        self._unit = self.frame.unit_offset
        # when a list: (lanes, location, bits) of every register slice pulled onto the stack as a
        # value, and (lanes, location, None) of every memory read (see dwarf/footprint.py)
        self.pulls: list | None = None

    # ------------------------------------------------------------------ public

    def evaluate(self, expr, lanes, *, kind: str = "location", initial: list[Entry] | None = None,
                 depth: int = 0) -> LaneResults:
        """Evaluate `expr` (bytes or decoded ops) for `lanes`; `kind` is "location" or "value"."""
        lanes = np.asarray(lanes, dtype=np.int64).reshape(-1)
        result = LaneResults(lanes)
        try:
            ops = self._decode(expr)
        except DecodeError as e:
            for lane in lanes:
                result.errors[int(lane)] = e
            return result
        if kind == "location" and depth == 0 and ops:
            self._final_op = ops[-1]
        for glanes, stack, errs in self._run(ops, lanes, list(initial or []), depth):
            for lane, err in errs.items():
                result.errors[lane] = err
            if stack is None or not len(glanes):
                continue
            try:
                entry = self._finish(stack, kind, len(glanes), glanes)
            except AspaceError as e:
                for lane in glanes:
                    result.errors[int(lane)] = e
                continue
            result.groups.append((glanes, entry))
        return result

    def _decode(self, expr):
        if isinstance(expr, (bytes, bytearray, memoryview)):
            return ops_mod.decode(bytes(expr), self.dialect)
        return list(expr)

    # ------------------------------------------------------------------ machine

    def _run(self, ops, lanes, stack, depth):
        """Yield (lanes, final stack or None, {lane: error}) for each group that finished."""
        if depth > self.limits.max_call_depth:
            raise LimitExceeded(f"DWARF procedure calls nested deeper than {self.limits.max_call_depth}")
        by_offset = {op.offset: i for i, op in enumerate(ops)}
        end_offset = ops[-1].offset + ops[-1].size if ops else 0
        work = [_Group(lanes, stack, 0)]
        while work:
            grp = work.pop()
            errors: dict[int, AspaceError] = {}
            finished = True
            while grp.pc < len(ops):
                if not len(grp.lanes):
                    break
                self.steps += 1
                if self.steps > self.limits.max_steps:
                    err = LimitExceeded(f"expression ran past {self.limits.max_steps} steps")
                    for lane in grp.lanes:
                        errors[int(lane)] = err
                    grp.lanes = grp.lanes[:0]
                    break
                op = ops[grp.pc]
                saved = list(grp.stack)
                try:
                    branch = self._step(op, grp, depth)
                except _SplitNeeded as s:
                    # lanes disagree on the shape of the result: run the masked lanes on their own
                    grp.stack = saved
                    work.append(_Group(grp.lanes[s.mask], [e.take(s.mask) for e in saved], grp.pc))
                    keep = ~s.mask
                    grp.lanes = grp.lanes[keep]
                    grp.stack = [e.take(keep) for e in saved]
                    continue
                except _LaneFailure as f:
                    grp.stack = saved
                    for lane in grp.lanes[f.mask]:
                        errors[int(lane)] = f.error
                    keep = ~f.mask
                    grp.lanes = grp.lanes[keep]
                    grp.stack = [e.take(keep) for e in grp.stack]
                    continue  # retry the same op for the surviving lanes
                except AspaceError as e:
                    for lane in grp.lanes:
                        errors[int(lane)] = e
                    grp.lanes = grp.lanes[:0]
                    break
                except (ArithmeticError, ValueError, OverflowError) as e:
                    err = EvaluationError(f"{op.name} at offset {op.offset}: {e}")
                    for lane in grp.lanes:
                        errors[int(lane)] = err
                    grp.lanes = grp.lanes[:0]
                    break
                if len(grp.stack) > self.limits.max_stack:
                    err = LimitExceeded(f"stack deeper than {self.limits.max_stack} entries")
                    for lane in grp.lanes:
                        errors[int(lane)] = err
                    grp.lanes = grp.lanes[:0]
                    break
                if self.trace is not None:
                    self.trace.append(TraceStep(ops_mod.disassemble([op]), [_describe(e) for e in grp.stack]))
                if branch is None:
                    grp.pc += 1
                    continue
                # branch: (taken mask or True, target offset)
                taken, target_off = branch
                if target_off == end_offset:
                    target_idx = len(ops)
                elif target_off in by_offset:
                    target_idx = by_offset[target_off]
                else:
                    err = EvaluationError(f"{op.name} at offset {op.offset} jumps to {target_off}, not an operation")
                    for lane in grp.lanes:
                        errors[int(lane)] = err
                    grp.lanes = grp.lanes[:0]
                    break
                if taken is True or taken.all():
                    grp.pc = target_idx
                elif not taken.any():
                    grp.pc += 1
                else:
                    other = _Group(grp.lanes[taken], [e.take(taken) for e in grp.stack], target_idx)
                    work.append(other)
                    keep = ~taken
                    grp.lanes = grp.lanes[keep]
                    grp.stack = [e.take(keep) for e in grp.stack]
                    grp.pc += 1
            yield grp.lanes, (grp.stack if finished else None), errors

    def _finish(self, stack, kind, g, lanes) -> Entry:
        if not stack:
            if kind == "value":
                raise EvaluationError("expression left no value on the stack")
            return single(UndefinedLocation(np.zeros(g, np.int64)))
        top = stack[-1]
        if kind == "value":
            return self._to_value(top)
        loc = self._to_location(top, lanes)
        if loc.is_incomplete_composite:
            c = loc.primary
            loc = single(CompositeLocation(c.pieces, c.bit_offset, complete=True))
        return loc

    # ------------------------------------------------------------------ conversions

    def _to_value(self, e: Entry) -> Value:
        if isinstance(e, Value):
            return e
        # DWARF 5 compatibility: a memory location in the default space stands for its address
        place = e.primary
        if len(e.places) == 1 and isinstance(place, MemoryLocation) and not place.bit_offset.any() \
                and place.space.number == self.target.default_address_space().number:
            return Value(place.address.astype(np.uint64), self.generic)
        # IGC writes DW_OP_stack_value in mid-expression and keeps computing (`...; stack_value;
        # const2u 0xffff; and; stack_value`); gdb-oneapi reads the implicit value back, and so do we,
        # for that dialect only: elsewhere it stays the ill-formed expression DWARF says it is
        if self.dialect.vendor_ops == "intel" and len(e.places) == 1 and isinstance(place, ImplicitLocation) \
                and not place.bit_offset.any() and place.data.shape[1] <= self.target.address_size:
            return Value(_bytes_to_u64(place.data), self.generic)
        raise EvaluationError(f"expected a value, found the location {e.describe()}")

    def _to_location(self, e: Entry, lanes) -> Location:
        if isinstance(e, Location):
            return e
        space = self.target.default_address_space()
        addr = e.bits & _mask(space.address_size)
        return single(MemoryLocation(space, addr, np.zeros(len(addr), np.int64), lanes))

    def _integral(self, e: Entry, what: str) -> Value:
        v = self._to_value(e)
        if v.type.is_float:
            raise EvaluationError(f"{what} must be integral, found {v.type.describe()}")
        return v

    # ------------------------------------------------------------------ operations

    def _pop(self, grp, n=1):
        if len(grp.stack) < n:
            raise EvaluationError(f"stack underflow: need {n} entries, have {len(grp.stack)}")
        if n == 1:
            return grp.stack.pop()
        items = grp.stack[-n:]
        del grp.stack[-n:]
        return items

    def _push_value(self, grp, bits, type_=None):
        t = type_ or self.generic
        bits = _u64(bits)
        if bits.ndim == 0:
            bits = np.full(len(grp.lanes), bits, np.uint64)
        grp.stack.append(Value(bits & t.mask, t))

    def _step(self, op, grp, depth):
        name = op.name
        handler = _HANDLERS.get(name)
        if handler is None:
            raise EvaluationError(f"unsupported operation {name} at offset {op.offset}")
        return handler(self, op, grp, depth)

    # literal and constant values -----------------------------------------

    def op_lit(self, op, grp, depth):
        self._push_value(grp, op.code - 0x30)

    def op_const(self, op, grp, depth):
        self._push_value(grp, op.operands[0] & 0xFFFFFFFFFFFFFFFF)

    def op_addr(self, op, grp, depth):
        self._push_value(grp, (op.operands[0] + self.frame.load_bias) & 0xFFFFFFFFFFFFFFFF)

    def op_addrx(self, op, grp, depth):
        if self.frame.addrx is None:
            raise UnavailableError(f"{op.name}: no .debug_addr for this expression")
        index = op.operands[0]
        unit = self._unit_relative(op)
        addr = self.frame.addrx(index) if unit == self.frame.unit_offset else self.frame.addrx(index, unit)
        if op.name in ("DW_OP_addrx", "DW_OP_GNU_addr_index"):
            addr += self.frame.load_bias
        self._push_value(grp, addr & 0xFFFFFFFFFFFFFFFF)

    def op_const_type(self, op, grp, depth):
        t = self._base_type(op.operands[0])
        data = op.operands[1]
        raw = int.from_bytes(bytes(data)[:8], "little")
        self._push_value(grp, raw, t)

    def op_push_lane(self, op, grp, depth):
        self._push_value(grp, grp.lanes.astype(np.uint64))

    # registers ------------------------------------------------------------

    def _reg_location(self, regno, grp) -> Location:
        info = self.target.register_info(regno)
        return single(RegisterLocation(info, np.zeros(len(grp.lanes), np.int64), grp.lanes))

    def op_reg(self, op, grp, depth):
        regno = op.operands[0] if op.name == "DW_OP_regx" else op.code - 0x50
        grp.stack.append(self._reg_location(regno, grp))

    def _read_register_value(self, regno, grp, t: BaseTypeRef) -> np.ndarray:
        loc = self._reg_location(regno, grp)
        size = min(t.size, loc.primary.register.size)
        data, state = read_bits(loc, self.target, size * 8)
        self._fail_unreadable(state, f"register {loc.primary.register.name} is not in the dump")
        return _bytes_to_u64(data)

    def op_breg(self, op, grp, depth):
        if op.name == "DW_OP_bregx":
            regno, off = op.operands
        else:
            regno, off = op.code - 0x70, op.operands[0]
        bits = self._read_register_value(regno, grp, self.generic)
        self._push_value(grp, bits + _u64(off & 0xFFFFFFFFFFFFFFFF))

    def op_regval_type(self, op, grp, depth):
        regno, die = op.operands
        t = self._base_type(die)
        self._push_value(grp, self._read_register_value(regno, grp, t), t)

    def op_fbreg(self, op, grp, depth):
        if self.frame.frame_base_expr is None:
            raise UnavailableError("DW_OP_fbreg: the function has no frame base")
        key = grp.lanes.tobytes()
        loc = self.frame.frame_base_cache.get(key)
        if loc is None:
            loc = self._frame_base(grp, depth)
            self.frame.frame_base_cache[key] = loc
        grp.stack.append(loc.shifted(np.full(len(grp.lanes), op.operands[0] * 8, np.int64)))

    def _frame_base(self, grp, depth) -> Location:
        sub = Evaluator(self.target, self.dialect, self.frame, self.limits)
        sub.steps = self.steps
        res = sub.evaluate(self.frame.frame_base_expr, grp.lanes, kind="location", depth=depth + 1)
        self.steps = sub.steps
        base = _merge_results(res, grp.lanes)
        if isinstance(base, _LaneFailure):
            raise base
        place = base.primary
        if isinstance(place, RegisterLocation):
            # DWARF 5: a register frame base holds the frame address; the target says in which space
            reg = place.register
            bits = self._read_register_value(reg.regno, grp, self.generic)
            space, addr = self.target.frame_base_address(reg.regno, bits)
            return single(MemoryLocation(space, addr, np.zeros(len(grp.lanes), np.int64), grp.lanes))
        if isinstance(place, MemoryLocation):
            return base
        raise EvaluationError(f"frame base is not a memory or register location: {base.describe()}")

    def op_call_frame_cfa(self, op, grp, depth):
        if self.frame.cfa is None:
            raise UnavailableError("DW_OP_call_frame_cfa: no call frame information for this frame")
        grp.stack.append(self.frame.cfa(grp.lanes))

    def op_call_frame_entry_reg(self, op, grp, depth):
        if self.frame.call_frame_entry_reg is None:
            raise UnavailableError(f"register {op.operands[0]} on entry: no call frame information")
        grp.stack.append(self.frame.call_frame_entry_reg(op.operands[0], grp.lanes))

    # stack manipulation ---------------------------------------------------

    def op_dup(self, op, grp, depth):
        if not grp.stack:
            raise EvaluationError("DW_OP_dup on an empty stack")
        grp.stack.append(grp.stack[-1])

    def op_drop(self, op, grp, depth):
        self._pop(grp)

    def op_over(self, op, grp, depth):
        self._pick(grp, 1)

    def op_pick(self, op, grp, depth):
        self._pick(grp, op.operands[0])

    def _pick(self, grp, index):
        if index >= len(grp.stack):
            raise EvaluationError(f"pick {index} beyond a stack of {len(grp.stack)}")
        grp.stack.append(grp.stack[-1 - index])

    def op_swap(self, op, grp, depth):
        a, b = self._pop(grp, 2)
        grp.stack += [b, a]

    def op_rot(self, op, grp, depth):
        a, b, c = self._pop(grp, 3)  # c is top
        grp.stack += [c, a, b]

    # arithmetic -------------------------------------------------------------

    def _binary_operands(self, grp, name):
        a, b = self._pop(grp, 2)
        va, vb = self._to_value(a), self._to_value(b)
        if va.type != vb.type and not (va.type.is_generic and vb.type.is_generic):
            if va.type.size == vb.type.size and va.type.is_float == vb.type.is_float:
                pass  # same representation; DWARF says ill-formed, producers do it — be lenient
            else:
                raise EvaluationError(f"{name}: operands of different types ({va.type.describe()}, {vb.type.describe()})")
        return va, vb

    def op_binary(self, op, grp, depth):
        name = op.name
        va, vb = self._binary_operands(grp, name)
        t = va.type
        if t.is_float:
            self._float_binary(name, va, vb, grp)
            return
        a, b = va.bits, vb.bits
        if name == "DW_OP_plus":
            r = a + b
        elif name == "DW_OP_minus":
            r = a - b
        elif name == "DW_OP_mul":
            r = a * b
        elif name == "DW_OP_and":
            r = a & b
        elif name == "DW_OP_or":
            r = a | b
        elif name == "DW_OP_xor":
            r = a ^ b
        elif name in ("DW_OP_div", "DW_OP_mod"):
            zero = b == 0
            if zero.any():
                raise _LaneFailure(zero, EvaluationError(f"{name}: division by zero"))
            if name == "DW_OP_div" and (t.is_signed or t.is_generic):
                sa, sb = va.signed(), vb.signed()
                q = np.abs(sa) // np.abs(sb)
                r = np.where((sa < 0) != (sb < 0), -q, q).view(np.uint64)
            elif name == "DW_OP_div":
                r = a // b
            elif t.is_signed:
                sa, sb = va.signed(), vb.signed()
                r = np.fmod(sa, sb).view(np.uint64)
            else:
                r = a % b
        elif name == "DW_OP_shl":
            r = np.where(b >= 64, _u64(0), a << np.minimum(b, _u64(63)))
        elif name == "DW_OP_shr":
            r = np.where(b >= 64, _u64(0), (a & t.mask) >> np.minimum(b, _u64(63)))
        elif name == "DW_OP_shra":
            s = va.signed()
            r = (s >> np.minimum(b, _u64(63)).astype(np.int64)).view(np.uint64)
        else:  # comparisons: generic and signed types compare signed
            if t.is_signed or t.is_generic:
                a, b = va.signed(), vb.signed()
            r = {"DW_OP_eq": a == b, "DW_OP_ne": a != b, "DW_OP_lt": a < b, "DW_OP_gt": a > b,
                 "DW_OP_le": a <= b, "DW_OP_ge": a >= b}[name].astype(np.uint64)
            self._push_value(grp, r)
            return
        self._push_value(grp, r, t)

    def _float_binary(self, name, va, vb, grp):
        a, b = _as_float(va), _as_float(vb)
        t = va.type
        with np.errstate(all="ignore"):
            if name in ("DW_OP_plus", "DW_OP_minus", "DW_OP_mul", "DW_OP_div"):
                r = {"DW_OP_plus": a + b, "DW_OP_minus": a - b, "DW_OP_mul": a * b, "DW_OP_div": a / b}[name]
                self._push_value(grp, _from_float(r, t.size), t)
                return
            cmp = {"DW_OP_eq": a == b, "DW_OP_ne": a != b, "DW_OP_lt": a < b, "DW_OP_gt": a > b,
                   "DW_OP_le": a <= b, "DW_OP_ge": a >= b}.get(name)
        if cmp is None:
            raise EvaluationError(f"{name} is not defined on floating-point values")
        self._push_value(grp, cmp.astype(np.uint64))

    def op_unary(self, op, grp, depth):
        v = self._to_value(self._pop(grp))
        t = v.type
        if t.is_float:
            f = _as_float(v)
            r = {"DW_OP_neg": -f, "DW_OP_abs": np.abs(f)}.get(op.name)
            if r is None:
                raise EvaluationError(f"{op.name} is not defined on floating-point values")
            self._push_value(grp, _from_float(r, t.size), t)
            return
        if op.name == "DW_OP_neg":
            r = (-v.signed()).view(np.uint64)
        elif op.name == "DW_OP_abs":
            r = np.abs(v.signed()).view(np.uint64) if (t.is_signed or t.is_generic) else v.bits
        else:  # DW_OP_not
            r = ~v.bits
        self._push_value(grp, r, t)

    def op_plus_uconst(self, op, grp, depth):
        v = self._integral(self._pop(grp), "DW_OP_plus_uconst operand")
        self._push_value(grp, v.bits + _u64(op.operands[0] & 0xFFFFFFFFFFFFFFFF), v.type)

    # control flow -----------------------------------------------------------

    def op_skip(self, op, grp, depth):
        return True, op.offset + op.size + op.operands[0]

    def op_bra(self, op, grp, depth):
        v = self._integral(self._pop(grp), "DW_OP_bra condition")
        return (v.bits & v.type.mask) != 0, op.offset + op.size + op.operands[0]

    def op_nop(self, op, grp, depth):
        return None

    # memory -----------------------------------------------------------------

    def _deref(self, grp, loc: Location, size: int, t: BaseTypeRef, what: str):
        if size <= 0 or size > 8:
            raise EvaluationError(f"{what}: cannot read {size} bytes onto the stack")
        if self.pulls is not None:
            self.pulls.append((grp.lanes, loc, None))
        data, state = read_bits(loc, self.target, size * 8)
        self._fail_unreadable(state, f"{what}: {loc.describe()} is not readable", loc)
        self._push_value(grp, _bytes_to_u64(data), t)

    def _fail_unreadable(self, state, message, loc=None):
        bad = (state != OK).any(axis=1)
        if bad.any():
            if loc is not None:
                idx = int(np.nonzero(bad)[0][0])
                message = message.replace(loc.describe(), loc.describe(idx))
            err = EvaluationError(message) if (state == 1).any() and not (state == 2).any() else UnavailableError(message)
            raise _LaneFailure(bad, err)

    def op_deref(self, op, grp, depth):
        loc = self._to_location(self._pop(grp), grp.lanes)
        if op.name == "DW_OP_deref":
            size, t = self.target.address_size, self.generic
        elif op.name == "DW_OP_deref_size":
            size, t = op.operands[0], self.generic
        else:  # deref_type / GNU_deref_type
            size, t = op.operands[0], self._base_type(op.operands[1])
        self._deref(grp, loc, size, t, op.name)

    def op_xderef(self, op, grp, depth):
        addr_e, space_e = self._pop(grp), self._pop(grp)  # top is the address, below it the address space
        addr = self._integral(addr_e, f"{op.name} address")
        aspace = self._integral(space_e, f"{op.name} address space")
        spaces = np.unique(aspace.bits)
        if len(spaces) != 1:
            raise EvaluationError(f"{op.name}: lanes name different address spaces")
        space = self.target.xderef_address_space(int(spaces[0]))
        loc = single(MemoryLocation(space, addr.bits & _mask(space.address_size),
                                    np.zeros(len(grp.lanes), np.int64), grp.lanes))
        if self._xderef_forms_location(op):
            grp.stack.append(loc)
            return
        if op.name == "DW_OP_xderef":
            size, t = self.target.address_size, self.generic
        elif op.name == "DW_OP_xderef_size":
            size, t = op.operands[0], self.generic
        else:
            size, t = op.operands[0], self._base_type(op.operands[1])
        self._deref(grp, loc, size, t, op.name)

    def _xderef_forms_location(self, op) -> bool:
        # Upstream LLVM's AMDGPU backend ends a variable's location with DW_OP_xderef to say
        # "this address is in that address space" (it does not mean "load from it").
        return (self.dialect.vendor_ops == "amd" and not self.dialect.heterogeneous
                and op.name == "DW_OP_xderef" and op is self._final_op)

    def op_form_aspace_address(self, op, grp, depth):
        space_e, addr_e = self._pop(grp), self._pop(grp)  # top is the address space
        aspace = self._integral(space_e, "address space")
        addr = self._integral(addr_e, "address")
        spaces = np.unique(aspace.bits)
        if len(spaces) != 1:
            raise EvaluationError("DW_OP_LLVM_form_aspace_address: lanes name different address spaces")
        space = self.target.address_space(int(spaces[0]))
        grp.stack.append(single(MemoryLocation(space, addr.bits & _mask(space.address_size),
                                               np.zeros(len(grp.lanes), np.int64), grp.lanes)))

    def op_aspace_bregx(self, op, grp, depth):
        regno, off = op.operands
        aspace = self._integral(self._pop(grp), "address space")
        spaces = np.unique(aspace.bits)
        if len(spaces) != 1:
            raise EvaluationError("DW_OP_LLVM_aspace_bregx: lanes name different address spaces")
        space = self.target.address_space(int(spaces[0]))
        t = BaseTypeRef(space.address_size, ATE_GENERIC)
        bits = self._read_register_value(regno, grp, t) + _u64(off & 0xFFFFFFFFFFFFFFFF)
        grp.stack.append(single(MemoryLocation(space, bits & _mask(space.address_size),
                                               np.zeros(len(grp.lanes), np.int64), grp.lanes)))

    def op_form_tls_address(self, op, grp, depth):
        v = self._integral(self._pop(grp), "TLS offset")
        if self.frame.tls_base is None:
            raise UnavailableError("thread-local storage is not available on this target")
        self._push_value(grp, self.frame.tls_base(v.bits))

    def op_push_object_address(self, op, grp, depth):
        if self.frame.object_address is None:
            raise EvaluationError("DW_OP_push_object_address outside an object evaluation")
        obj = self.frame.object_address
        grp.stack.append(obj if obj.width == len(grp.lanes) else obj.take(np.zeros(len(grp.lanes), np.int64)))

    # locations --------------------------------------------------------------

    def op_offset(self, op, grp, depth):
        if op.name == "DW_OP_LLVM_offset":
            delta = self._integral(self._pop(grp), "DW_OP_LLVM_offset displacement").signed() * 8
        elif op.name == "DW_OP_LLVM_offset_uconst":
            delta = np.full(len(grp.lanes), op.operands[0] * 8, np.int64)
        else:  # bit_offset
            delta = self._integral(self._pop(grp), "DW_OP_LLVM_bit_offset displacement").signed()
        loc = self._to_location(self._pop(grp), grp.lanes)
        grp.stack.append(loc.shifted(delta.astype(np.int64)))

    def op_undefined(self, op, grp, depth):
        grp.stack.append(single(UndefinedLocation(np.zeros(len(grp.lanes), np.int64))))

    def op_stack_value(self, op, grp, depth):
        v = self._to_value(self._pop(grp))
        grp.stack.append(single(ImplicitLocation(v.as_bytes(), np.zeros(len(grp.lanes), np.int64))))

    def op_implicit_value(self, op, grp, depth):
        data = op.operands[-1]
        if len(data) > self.limits.max_implicit_bytes:
            raise LimitExceeded(f"implicit value of {len(data)} bytes")
        row = np.frombuffer(bytes(data), np.uint8)
        grp.stack.append(single(ImplicitLocation(np.broadcast_to(row, (len(grp.lanes), len(row))).copy(),
                                                 np.zeros(len(grp.lanes), np.int64))))

    def op_implicit_pointer(self, op, grp, depth):
        die, off = op.operands[0], op.operands[1]
        space = None
        if op.name == "DW_OP_LLVM_aspace_implicit_pointer":
            aspace = self._integral(self._pop(grp), "address space")
            space = self.target.address_space(int(aspace.bits[0]))
        grp.stack.append(single(ImplicitPointerLocation(die, off, np.zeros(len(grp.lanes), np.int64), space)))

    def op_piece(self, op, grp, depth):
        if op.name == "DW_OP_piece":
            nbits, offset = op.operands[0] * 8, 0
        else:
            nbits, offset = op.operands
        if nbits <= 0 or nbits > self.limits.max_piece_bits:
            raise LimitExceeded(f"{op.name} of {nbits} bits")
        g = len(grp.lanes)
        if not grp.stack or (isinstance(grp.stack[-1], Location) and grp.stack[-1].is_incomplete_composite):
            part = single(UndefinedLocation(np.zeros(g, np.int64)))
        else:
            part = self._to_location(self._pop(grp), grp.lanes)
            if offset:
                part = part.shifted(np.full(g, offset, np.int64))
        piece = Piece(part, nbits)
        below = grp.stack[-1] if grp.stack else None
        if isinstance(below, Location) and below.is_incomplete_composite:
            grp.stack[-1] = single(add_piece(below.primary, piece, self.limits.max_piece_bits))
        else:
            grp.stack.append(single(CompositeLocation((piece,), np.zeros(g, np.int64), complete=False)))

    def op_piece_end(self, op, grp, depth):
        top = grp.stack[-1] if grp.stack else None
        if not (isinstance(top, Location) and top.is_incomplete_composite):
            raise EvaluationError("DW_OP_LLVM_piece_end without an incomplete composite on the stack")
        c = top.primary
        grp.stack[-1] = single(CompositeLocation(c.pieces, c.bit_offset, complete=True))

    def op_extend(self, op, grp, depth):
        nbits, count = op.operands
        if nbits <= 0 or count <= 0 or nbits * count > self.limits.max_piece_bits:
            raise LimitExceeded(f"DW_OP_LLVM_extend {nbits}, {count} is out of bounds")
        part = self._to_location(self._pop(grp), grp.lanes)
        pieces = tuple(Piece(part, nbits) for _ in range(count))
        grp.stack.append(single(CompositeLocation(pieces, np.zeros(len(grp.lanes), np.int64))))

    def op_select_bit_piece(self, op, grp, depth):
        nbits, count = op.operands
        if nbits <= 0 or count <= 0 or nbits * count > self.limits.max_piece_bits or count > 64:
            raise LimitExceeded(f"DW_OP_LLVM_select_bit_piece {nbits}, {count} is out of bounds")
        mask = self._integral(self._pop(grp), "select mask")
        one = self._to_location(self._pop(grp), grp.lanes)
        zero = self._to_location(self._pop(grp), grp.lanes)
        masks = np.unique(mask.bits)
        if len(masks) != 1:
            # lanes disagree on the mask: split so each group has one composite shape
            raise _SplitNeeded(mask.bits == masks[0])
        m = int(masks[0])
        pieces = []
        for n in range(count):
            src = one if (m >> n) & 1 else zero
            pieces.append(Piece(src.shifted(np.full(len(grp.lanes), n * nbits, np.int64)), nbits))
        grp.stack.append(single(CompositeLocation(tuple(pieces), np.zeros(len(grp.lanes), np.int64))))

    # Intel IGC ------------------------------------------------------------------
    # IGC computes register numbers and bit positions at run time (a lane's slice of a GRF
    # depends on its SIMD lane), so these operations take from the stack what DW_OP_regx and
    # DW_OP_bit_piece take as operands. A register stays a location until bits are pulled out.

    def op_leaked_llvm(self, op, grp, depth):
        # the value numbered by DW_OP_LLVM_arg was never described: nothing says where it lives
        raise UnavailableError(f"{op.name} {' '.join(map(str, op.operands[1:]))}: IGC left an LLVM-internal "
                               "operation in the expression; the value it refers to is not described")

    def _uniform_or_split(self, bits: np.ndarray) -> int:
        """The one value every lane of the group agrees on; otherwise split the group by it."""
        first = bits[0]
        same = bits == first
        if not same.all():
            raise _SplitNeeded(same)
        return int(first)

    def op_intel_regs(self, op, grp, depth):
        regno = self._uniform_or_split(self._integral(self._pop(grp), "DW_OP_INTEL_regs register").bits)
        grp.stack.append(self._reg_location(regno, grp))

    def _intel_bits(self, grp, loc_entry, bit_offset: np.ndarray, nbits: int, what: str):
        if nbits <= 0 or nbits > 64:
            raise EvaluationError(f"{what}: {nbits} bits do not fit a stack value")
        loc = self._to_location(loc_entry, grp.lanes).shifted(bit_offset.astype(np.int64))
        if self.pulls is not None:
            self.pulls.append((grp.lanes, loc, nbits))
        data, state = read_bits(loc, self.target, nbits)
        self._fail_unreadable(state, f"{what}: {loc.describe()} is not readable", loc)
        self._push_value(grp, _bytes_to_u64(data) & _u64((1 << nbits) - 1 if nbits < 64 else 0xFFFFFFFFFFFFFFFF))

    def op_intel_push_bit_piece_stack(self, op, grp, depth):
        # pops the bit size, then the bit offset, then the register; pushes those bits as a value
        nbits = self._uniform_or_split(self._integral(self._pop(grp), "bit size").bits)
        offset = self._integral(self._pop(grp), "bit offset").bits
        self._intel_bits(grp, self._pop(grp), offset, nbits, op.name)

    def op_intel_regval_bits(self, op, grp, depth):
        # the bit size is the operand; pops the bit offset, then the register
        offset = self._integral(self._pop(grp), "bit offset").bits
        self._intel_bits(grp, self._pop(grp), offset, op.operands[0], op.name)

    def op_intel_piece_stack(self, op, grp, depth):
        nbytes = self._uniform_or_split(self._integral(self._pop(grp), "piece size").bits)
        self.op_piece(ops_mod.Op(op.offset, op.code, "DW_OP_piece", (nbytes,), op.size), grp, depth)

    def op_intel_bit_piece_stack(self, op, grp, depth):
        # same stack order as push_bit_piece_stack: the size on top, the offset below it
        nbits = self._uniform_or_split(self._integral(self._pop(grp), "bit piece size").bits)
        offset = self._uniform_or_split(self._integral(self._pop(grp), "bit piece offset").bits)
        self.op_piece(ops_mod.Op(op.offset, op.code, "DW_OP_bit_piece", (nbits, offset), op.size), grp, depth)

    # typed values -------------------------------------------------------------

    def _unit_relative(self, op) -> int:
        """The offset of the unit whose DIEs the running expression names by unit offset."""
        if self._unit is None:
            what = op.name if op is not None else "a typed operation"
            raise UnavailableError(f"{what} inside a DW_OP_call_ref procedure: the called DIE's unit is not known here")
        return self._unit

    def _base_type(self, die_offset) -> BaseTypeRef:
        if die_offset == 0:
            return self.generic
        if self.frame.base_type is None:
            raise EvaluationError(f"base type <0x{die_offset:x}> is unknown here")
        size, encoding = self.frame.base_type(self._unit_relative(None) + die_offset)
        if size <= 0 or size > 16:
            raise EvaluationError(f"base type <0x{die_offset:x}> of {size} bytes cannot live on the stack")
        return BaseTypeRef(size, encoding, die_offset)

    def op_convert(self, op, grp, depth):
        v = self._to_value(self._pop(grp))
        t = self._base_type(op.operands[0])
        if op.name in ("DW_OP_reinterpret", "DW_OP_GNU_reinterpret"):
            if t.size != v.type.size:
                raise EvaluationError("DW_OP_reinterpret between types of different sizes")
            self._push_value(grp, v.bits, t)
            return
        if v.type.is_float and not t.is_float:
            f = _as_float(v)
            if not np.isfinite(f).all():
                raise EvaluationError("DW_OP_convert of a non-finite float to an integer")
            r = f.astype(np.int64).view(np.uint64)
        elif t.is_float and not v.type.is_float:
            src = v.signed() if (v.type.is_signed or v.type.is_generic) else v.bits
            r = _from_float(src.astype(np.float64), t.size)
        elif t.is_float:
            r = _from_float(_as_float(v), t.size)
        else:
            r = v.signed().view(np.uint64) if v.type.is_signed else v.bits
        self._push_value(grp, r, t)

    # calls and the caller's state ----------------------------------------------

    def op_call(self, op, grp, depth):
        if self.frame.procedure is None:
            raise UnavailableError(f"{op.name}: DWARF procedures are not available here")
        die = op.operands[0] if op.name == "DW_OP_call_ref" else self._unit_relative(op) + op.operands[0]
        expr = self.frame.procedure(die)
        if not expr:
            return None  # a DIE without DW_AT_location: no effect
        sub_ops = ops_mod.decode(bytes(expr), self.dialect)
        caller_unit = self._unit
        if op.name == "DW_OP_call_ref":  # another unit's procedure names DIEs of its own unit
            unit_of = self.frame.unit_of
            self._unit = unit_of(die) if unit_of is not None else None  # None: it may name none
        try:
            results = list(self._run(sub_ops, grp.lanes, grp.stack, depth + 1))
        finally:
            self._unit = caller_unit
        if len(results) != 1 or any(errs for _, _, errs in results):
            failed = {}
            for lanes, stack, errs in results:
                failed.update(errs)
            if failed:
                lanes_failed = np.isin(grp.lanes, np.array(list(failed), np.int64))
                raise _LaneFailure(lanes_failed, next(iter(failed.values())))
            raise EvaluationError(f"{op.name}: lanes diverged inside a DWARF procedure")
        lanes, stack, _ = results[0]
        grp.stack = stack

    def op_entry_value(self, op, grp, depth):
        if self.frame.entry_value is None:
            raise UnavailableError("entry value: the caller's state is not known")
        entry = self.frame.entry_value(op.operands[0], grp.lanes)
        if entry is None:
            raise UnavailableError("entry value: the caller's state is not known")
        grp.stack.append(entry)

    def op_parameter_ref(self, op, grp, depth):
        fn = self.frame.extra.get("parameter_ref")
        value = fn(op.operands[0], grp.lanes) if fn else None
        if value is None:
            raise UnavailableError("DW_OP_GNU_parameter_ref: the call site's argument is not known")
        grp.stack.append(value)

    def op_variable_value(self, op, grp, depth):
        fn = self.frame.extra.get("variable_value")
        value = fn(op.operands[0], grp.lanes) if fn else None
        if value is None:
            raise UnavailableError("DW_OP_GNU_variable_value: the variable is not available")
        grp.stack.append(value)


class _SplitNeeded(_LaneFailure):
    """Internal: lanes disagree on structure; evaluate the masked lanes separately."""

    def __init__(self, mask):
        super().__init__(mask, EvaluationError("split"))


def _describe(e: Entry) -> str:
    if isinstance(e, Value):
        return e.describe()
    return e.describe()


def _mask(nbytes: int) -> np.uint64:
    return np.uint64(0xFFFFFFFFFFFFFFFF if nbytes >= 8 else (1 << (8 * nbytes)) - 1)


def _bytes_to_u64(data: np.ndarray) -> np.ndarray:
    g, n = data.shape
    buf = np.zeros((g, 8), np.uint8)
    buf[:, : min(n, 8)] = data[:, :8]
    return buf.view("<u8").reshape(g).astype(np.uint64)


def _as_float(v: Value) -> np.ndarray:
    if v.type.size == 4:
        return (v.bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32).astype(np.float64)
    if v.type.size == 8:
        return v.bits.view(np.float64)
    raise EvaluationError(f"{v.type.size}-byte floating-point values are not supported on the stack")


def _from_float(f: np.ndarray, size: int) -> np.ndarray:
    if size == 4:
        return f.astype(np.float32).view(np.uint32).astype(np.uint64)
    if size == 8:
        return np.asarray(f, np.float64).view(np.uint64)
    raise EvaluationError(f"{size}-byte floating-point values are not supported on the stack")


def _merge_results(res: LaneResults, lanes: np.ndarray):
    """A sub-evaluation's result as one entry for `lanes`, or a lane failure."""
    if res.errors:
        failed = np.isin(lanes, np.array(list(res.errors), np.int64))
        return _LaneFailure(failed, next(iter(res.errors.values())))
    if len(res.groups) == 1 and len(res.groups[0][0]) == len(lanes):
        return res.groups[0][1]
    # the sub-expression branched: rebuild per-lane order only when shapes agree
    raise EvaluationError("frame base differs in shape between lanes")


_HANDLERS = {}


def _register(names, method):
    for n in names:
        _HANDLERS[n] = getattr(Evaluator, method)


_register([f"DW_OP_lit{i}" for i in range(32)], "op_lit")
_register(["DW_OP_const1u", "DW_OP_const1s", "DW_OP_const2u", "DW_OP_const2s", "DW_OP_const4u", "DW_OP_const4s",
           "DW_OP_const8u", "DW_OP_const8s", "DW_OP_constu", "DW_OP_consts"], "op_const")
_register(["DW_OP_addr", "DW_OP_GNU_encoded_addr"], "op_addr")
_register(["DW_OP_addrx", "DW_OP_constx", "DW_OP_GNU_addr_index", "DW_OP_GNU_const_index"], "op_addrx")
_register(["DW_OP_const_type", "DW_OP_GNU_const_type"], "op_const_type")
_register(["DW_OP_LLVM_push_lane", "DW_OP_INTEL_push_simd_lane"], "op_push_lane")
_register(["DW_OP_INTEL_regs"], "op_intel_regs")
_register(["DW_OP_INTEL_push_bit_piece_stack"], "op_intel_push_bit_piece_stack")
_register(["DW_OP_INTEL_regval_bits"], "op_intel_regval_bits")
_register(["DW_OP_INTEL_piece_stack"], "op_intel_piece_stack")
_register(["DW_OP_INTEL_bit_piece_stack"], "op_intel_bit_piece_stack")
_register(["DW_OP_INTEL_bit_piece"], "op_piece")
_register(["DW_OP_LLVM_arg", "DW_OP_LLVM_convert"], "op_leaked_llvm")
_register([f"DW_OP_reg{i}" for i in range(32)] + ["DW_OP_regx"], "op_reg")
_register([f"DW_OP_breg{i}" for i in range(32)] + ["DW_OP_bregx"], "op_breg")
_register(["DW_OP_regval_type", "DW_OP_GNU_regval_type"], "op_regval_type")
_register(["DW_OP_fbreg"], "op_fbreg")
_register(["DW_OP_call_frame_cfa"], "op_call_frame_cfa")
_register(["DW_OP_LLVM_call_frame_entry_reg"], "op_call_frame_entry_reg")
_register(["DW_OP_dup"], "op_dup")
_register(["DW_OP_drop"], "op_drop")
_register(["DW_OP_over"], "op_over")
_register(["DW_OP_pick"], "op_pick")
_register(["DW_OP_swap"], "op_swap")
_register(["DW_OP_rot"], "op_rot")
_register(["DW_OP_plus", "DW_OP_minus", "DW_OP_mul", "DW_OP_div", "DW_OP_mod", "DW_OP_and", "DW_OP_or",
           "DW_OP_xor", "DW_OP_shl", "DW_OP_shr", "DW_OP_shra", "DW_OP_eq", "DW_OP_ne", "DW_OP_lt",
           "DW_OP_gt", "DW_OP_le", "DW_OP_ge"], "op_binary")
_register(["DW_OP_neg", "DW_OP_abs", "DW_OP_not"], "op_unary")
_register(["DW_OP_plus_uconst"], "op_plus_uconst")
_register(["DW_OP_skip"], "op_skip")
_register(["DW_OP_bra"], "op_bra")
_register(["DW_OP_nop", "DW_OP_LLVM_nop", "DW_OP_GNU_uninit"], "op_nop")
_register(["DW_OP_deref", "DW_OP_deref_size", "DW_OP_deref_type", "DW_OP_GNU_deref_type"], "op_deref")
_register(["DW_OP_xderef", "DW_OP_xderef_size", "DW_OP_xderef_type"], "op_xderef")
_register(["DW_OP_LLVM_form_aspace_address"], "op_form_aspace_address")
_register(["DW_OP_LLVM_aspace_bregx"], "op_aspace_bregx")
_register(["DW_OP_form_tls_address", "DW_OP_GNU_push_tls_address"], "op_form_tls_address")
_register(["DW_OP_push_object_address"], "op_push_object_address")
_register(["DW_OP_LLVM_offset", "DW_OP_LLVM_offset_uconst", "DW_OP_LLVM_bit_offset"], "op_offset")
_register(["DW_OP_LLVM_undefined"], "op_undefined")
_register(["DW_OP_stack_value"], "op_stack_value")
_register(["DW_OP_implicit_value"], "op_implicit_value")
_register(["DW_OP_implicit_pointer", "DW_OP_GNU_implicit_pointer", "DW_OP_LLVM_aspace_implicit_pointer"],
          "op_implicit_pointer")
_register(["DW_OP_piece", "DW_OP_bit_piece"], "op_piece")
_register(["DW_OP_LLVM_piece_end"], "op_piece_end")
_register(["DW_OP_LLVM_extend"], "op_extend")
_register(["DW_OP_LLVM_select_bit_piece"], "op_select_bit_piece")
_register(["DW_OP_convert", "DW_OP_GNU_convert", "DW_OP_reinterpret", "DW_OP_GNU_reinterpret"], "op_convert")
_register(["DW_OP_call2", "DW_OP_call4", "DW_OP_call_ref"], "op_call")
_register(["DW_OP_entry_value", "DW_OP_GNU_entry_value"], "op_entry_value")
_register(["DW_OP_GNU_parameter_ref"], "op_parameter_ref")
_register(["DW_OP_GNU_variable_value"], "op_variable_value")


def evaluate(expr, target: EvalTarget, dialect: Dialect, lanes, *, frame: FrameContext | None = None,
             kind: str = "location", limits: Limits = Limits(), trace: list | None = None) -> LaneResults:
    """Evaluate a DWARF expression for a set of lanes of one wave."""
    ev = Evaluator(target, dialect, frame, limits, trace)
    return ev.evaluate(expr, lanes, kind=kind)
