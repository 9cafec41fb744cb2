"""The Debug Console's GDB-style commands: `wave N`, `lane N`, `info lanes`, `info waves`,
`x/NFU ADDRESS`, `save PATH`, `print/x EXPRESSION`, `p EXPRESSION` and the help text; `find EXPRESSION`
is find.py's, the machine-level ones (`x/Ni`, `disassemble`, `info registers`) are machine.py's.

The REPL speaks no DAP. The `evaluate` request hands it the session and two callbacks: `focus`, which
moves the focus (the caller announces the change to its client), and `frame`, the frame an
expression typed here is evaluated in. run() answers a command; anything else is an expression,
which the caller evaluates (print_format() first takes off a `print` or `print/x`).
"""

from __future__ import annotations

import os
import re
from typing import Callable

import numpy as np

from ..deadline import check_time
from ..dwarf.types import PointerType
from ..errors import AspaceError, LimitExceeded
from ..expressions import evaluate_expression
from ..memref import format_memref
from ..names import display_name
from ..session import Frame, Session
from . import machine
from .backtrace import backtrace, info_frame
from .exceptions import fault_text
from .inputs import parsed
from .memory import save_dump
from .waves import coalesce_ranges, lane_rows, plural, where_text

MAX_EXAMINE_BYTES = 64 << 10  # one `x/N` REPL command; its text grows ~4x the bytes

_REPL_LANE = re.compile(r"^\s*lane\s+(\d+)\s*$")
_REPL_WAVE = re.compile(r"^\s*(?:wave|warp)\s+(\d+)\s*$")  # (warp: CUDA's word)
# `x` only with its `/FMT`: `x * 2` and `x + 1` are expressions (kernels have variables named x)
_REPL_X = re.compile(r"^\s*x/(\d*)([xduotcfb]?)([bhwg]?)\s+(.+)$")
_REPL_SAVE = re.compile(r"^\s*save\s+(.+)$")
_REPL_FIND = re.compile(r"^\s*find\s+(.+)$")
_REPL_XI = re.compile(r"^\s*x/(\d*)i\s+(.+)$")
# `print EXPR`, `print/x EXPR`, `p EXPR`, `p/x EXPR` as GDB spells them
_REPL_PRINT = re.compile(r"^\s*(?:print(?:/([xd]))?|p/([xd]))\s+(.+)$")
_REPL_P = re.compile(r"^\s*p\s+(.+)$")
# what can follow an operand in C: after a variable named p, `p + 1`, `p[2]`, `p .x` are expressions
_CONTINUES_OPERAND = re.compile(r"^(?:->|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^<>\[.?=])")
_REPL_HELP = ("help", "?", "aspace help", "-help", "aspace")
HELP = """aspace-dap REPL commands:
  lane N              focus lane N of the current wave
  wave N              focus wave N (also warp N)
  info lanes          every lane of the focused wave: state, work-item, position
  info waves          the waves grouped by dispatch and where they stand (pc, inline chain, callers),
                      as ranges of wave ids
  info fault          the focused wave's exception: the faulting instruction, each lane's address at it
                      (grouped: 32 lanes: 0x7f1000000000 + 0x400000·lane) and which lanes fall outside
                      every region of memory the dump holds (the exception widget's text)
  bt                  the focused lane's frames with their whole names (also backtrace, where)
  info frame          the selected frame: its pc, whole name and signature, linkage name, caller
  x/NFU ADDRESS       examine memory: N units, format x/d/u/o/t/c/f, unit b/h/w/g; ADDRESS like
                      local#0x40, a pointer (x/4dw out) or an object's address (x/4dw &row_sums)
  x/Ni ADDRESS        N instructions from ADDRESS: $pc (the selected frame's), $pc+16, a function
                      name (settle), an address (0x3bfc); => marks the frame's pc
  disassemble         the selected frame's function, => at its pc (also disassemble FUNCTION,
                      disassemble ADDRESS, disassemble START,END or START,+LENGTH);
                      /s interleaves the source lines, /r adds the instruction bytes
  info registers [NAME...]
                      the focused lane's registers (all, or those named: v3 s4 pc exec); a vector
                      register shows this lane's element
  info registers /a NAME...
                      vector registers with every lane's element (inactive lanes named)
  save PATH           write the dump with your changes (setVariable, writeMemory) as a new dump folder
  find EXPRESSION     the lanes of every wave where EXPRESSION is true, each evaluated at its own pc:
                      find idx >= n, find isnan(acc), find $pc == 0x1a8c, find threadIdx.x == 0 && flag == 0
  EXPRESSION          evaluate a C expression: p.a, arr[3], *ptr, $v3, $exec, $lane, *(int *) private_lane#0x10
                      the lane's coordinates in any expression: threadIdx.x, blockIdx, blockDim, gridDim,
                      warpSize (CUDA, HIP); get_local_id(0), get_group_id(n), get_global_id(n) (OpenCL);
                      $_lane, $_dispatch_pos, $_workitem_global_id (ROCgdb's, gdb-oneapi's)
  print/x EXPRESSION  the same in hex, every element and member (also p/x; print EXPRESSION, p EXPRESSION;
                      where the frame has a variable p, `p + 1` is that expression: write print)
  aspace help         this list (also `-help`, for clients whose REPL keeps `help` for itself)
"""


def run(s: Session, text: str, *, focus: Callable[..., object], frame: Callable[[], Frame]) -> str | None:
    """The answer to a REPL command, or None when `text` is not one.

    `focus(wave=N)` / `focus(lane=N)` moves the focus; `frame()` is the frame `x/ EXPRESSION` is
    evaluated in (asked only when an expression needs it).
    """
    if text.strip() in _REPL_HELP:
        return HELP
    m = _REPL_LANE.match(text)
    if m:
        focus(lane=_whole_number(m[1]))
        w = s.wave()
        return f"[Switching to lane {s.focus_lane} of {s.adapter.wave_word} {w.id} ({s.lane_state(w, s.focus_lane)})]"
    m = _REPL_WAVE.match(text)
    if m:
        focus(wave=_whole_number(m[1]))
        return f"[Switching to {s.thread_name(s.wave())}, lane {s.focus_lane}]"
    if text.strip() == "info lanes":
        return "\n".join(_lane_line(s, row) for row in lane_rows(s, s.focus_wave))
    if text.strip() == "info waves":
        return _info_waves(s)
    if text.strip() == "info fault":
        return fault_text(s, s.focus_wave)
    if text.strip() in ("bt", "backtrace", "where"):
        selected = frame()
        return backtrace(s.frames(selected.wave_id, selected.lane), selected.index)
    if text.strip() == "info frame":
        selected = frame()
        return info_frame(s.frames(selected.wave_id, selected.lane), selected)
    m = _REPL_XI.match(text)
    if m:
        return machine.examine_instructions(s, frame(), _whole_number(m[1] or "1"), m[2])
    m = machine.is_disassemble(text)
    if m:
        return machine.disassemble(s, frame(), m)
    m = machine.is_info_registers(text)
    if m:
        return machine.info_registers(s, frame(), m)
    m = _REPL_X.match(text)
    if m:
        where = m[4].strip()
        if "#" not in where:
            where = _address_of_expression(s, frame(), where)
        return _examine(s, _whole_number(m[1] or "1"), m[2] or "x", m[3] or "w", where)
    m = _REPL_SAVE.match(text)
    if m:
        return f"saved to {save_dump(s, m[1].strip())}"
    m = _REPL_FIND.match(text)
    if m:
        from .find import find_text
        return find_text(s, m[1].strip())
    return None


def print_format(text: str, hex_: bool, is_variable: Callable[[str], bool] = lambda name: False) -> tuple[str, bool]:
    """GDB's `print EXPR`, `print/x EXPR`, `p EXPR`, `p/x EXPR` as the expression and whether to show it
    in hex (the format applies to every element and member); other text is returned as it is.

    GDB reads the first word as a command, always. Here a bare expression is also accepted, so
    `p + 1` stays the expression p + 1 where `p` is a variable of the frame (`is_variable`) and what
    follows it continues an expression; anywhere else `p EXPR` prints EXPR (`p tx`, `p -1`)."""
    m = _REPL_PRINT.match(text)
    if m:
        return m[3], hex_ or "x" in (m[1], m[2])
    m = _REPL_P.match(text)
    if m and not (_CONTINUES_OPERAND.match(m[1]) and is_variable("p")):
        return m[1], hex_
    return text, hex_


def _whole_number(digits: str) -> int:
    """A count or id typed in the REPL (Python refuses to convert thousands of digits)."""
    if len(digits) > 20:
        raise AspaceError(f"{digits[:20]}... is larger than any wave, lane or count")
    return int(digits)


def _lane_line(s, row) -> str:
    mark = "*" if row["lane"] == s.focus_lane else " "
    where = f"{os.path.basename(row['source']['path'])}:{row['line']}" if row.get("source") else row["pc"]
    wi = ",".join(str(x) for x in row["workItem"]) if "workItem" in row else "?"  # absent: the dump does not hold it
    return f"{mark} lane {row['lane']:>2}  {row['state']:<8} work-item ({wi})  {where}"


def group_lines(s: Session, groups, word: str, counts=None) -> list[str]:
    """The groups as `info waves` lists them: count, lanes, dispatch, where, then the ids as ranges;
    `counts` (a list of (count, lanes) per group) replaces the groups' own (`find` counts matches)."""
    lines = [f"  {plural(word, 2).capitalize():>7}  {'Active lanes':>15}  Dispatch  Where"]
    for n, g in enumerate(groups):
        mark = "*" if (g.wave_ids == s.focus_wave).any() else " "
        dispatch = f"{g.dispatch.id} {display_name(g.dispatch.kernel)}" if g.dispatch is not None else "-"
        count, lanes = counts[n] if counts is not None else (len(g.wave_ids), f"{g.active_lanes}/{g.valid_lanes}")
        lines.append(f"{mark} {count:>7}  {lanes:>15}  {dispatch}  {where_text(g.frames)}")
        lines.append(f"  {'':>7}  {plural(word, 2)} {coalesce_ranges(g.wave_ids)}")
    return lines


def _info_waves(s: Session) -> str:
    groups = s.wave_groups()
    total = len(s.state.waves)
    word = s.adapter.wave_word
    lines = [f"{total} {plural(word, total)} in {len(groups)} {plural('group', len(groups))} (by dispatch and where "
             f"they stand: pc, inline chain and callers; smallest first):"]
    lines += group_lines(s, groups, word)
    lines.append(f"* focus: {s.thread_name(s.wave())}")
    return "\n".join(lines)


def _address_of_expression(s: Session, frame: Frame, text: str) -> str:
    """`x/4dw &row_sums`, `x/4dw out`: a pointer's value in its address space (generic pointers
    resolved as ROCgdb does), or the place of an object in memory."""
    obj = parsed(evaluate_expression, s, text, frame=frame, lanes=[frame.lane])
    if isinstance(obj.stripped, PointerType):
        obj = parsed(evaluate_expression, s, f"*({text})", frame=frame, lanes=[frame.lane])
    place = obj.memory_place()
    if place is None:
        raise AspaceError(f"x: {text} is not in memory; give an address with its space, like local#0x40")
    ref = s.memref_for_space(place.space.name, int(place.address[0]), frame.wave_id, int(place.lanes[0]))
    return format_memref(ref)


def _examine(s: Session, n: int, fmt: str, unit: str, where: str) -> str:
    size = {"b": 1, "h": 2, "w": 4, "g": 8}[unit]
    if fmt == "c":
        size = 1
    if n * size > MAX_EXAMINE_BYTES:
        raise LimitExceeded(f"x/{n}: {n * size} bytes is over the limit of {MAX_EXAMINE_BYTES}; use readMemory")
    start, data, valid = s.read_memory(where, 0, n * size)
    space = where.split("#")[0]
    whole = min(n, len(data) // size, len(valid) // size)  # units read in full (the rest: past the end)
    known = np.asarray(valid[:whole * size], bool).reshape(whole, size).all(axis=1).tolist()
    texts = _unit_texts(bytes(data[:whole * size]), size, fmt)
    lines, per_line = [], max(1, 16 // size)
    for i in range(n):
        if i % 1024 == 0:
            check_time()
        if i % per_line == 0:
            lines.append(f"{space}#0x{start + i * size:x}:")
        lines[-1] += "\t" + (texts[i] if i < whole and known[i] else "<unavailable>")
    return "\n".join(lines)


def _unit_texts(data: bytes, size: int, fmt: str) -> list[str]:
    """Each `size`-byte little-endian unit of `data` as `x/FMT` shows it (one numpy pass, not a loop
    per unit: an x/16384xw answers in milliseconds)."""
    if fmt == "f":
        if size in (4, 8):
            return [str(v) for v in np.frombuffer(data, f"<f{size}")]
        return [str(v) for v in np.frombuffer(data, "<u1")[::size]]  # no float of this size: its first byte
    if fmt == "d":
        return list(map(str, np.frombuffer(data, f"<i{size}").tolist()))
    values = np.frombuffer(data, f"<u{size}").tolist()
    if fmt == "x":
        return [f"0x{v:0{size * 2}x}" for v in values]
    if fmt == "u":
        return list(map(str, values))
    if fmt == "o":
        return [f"0{v:o}" for v in values]
    if fmt == "t":
        return [f"{v:b}" for v in values]
    if fmt == "c":
        return [f"{v} {chr(v)!r}" if 32 <= v < 127 else str(v) for v in values]
    return [f"0x{v:x}" for v in values]
