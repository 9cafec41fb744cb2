"""The Debug Console's machine-level commands, in GDB's forms and output: `x/Ni ADDRESS`,
`disassemble [/rs] [FUNCTION | ADDRESS | START,END | START,+LENGTH]` and `info registers [/a] [NAME…]`.

Instructions come from the session's disassembly part (the vendor's own decoder); `=>` marks the
selected frame's PC. Registers are the focused lane's: a vector register shows that lane's element,
`/a` every lane of it.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import AspaceError
from ..expressions import evaluate_expression
from ..session import Frame, Instruction, Session
from .inputs import parsed
from .waves import coalesce_ranges

MAX_EXAMINE_INSTRUCTIONS = 4096  # one `x/Ni`
_PC = re.compile(r"^\$pc\s*(?:([+-])\s*(0[xX][0-9a-fA-F]+|\d+))?$")
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w:]*$")
LANES_PER_ROW = 8


def code_address(s: Session, frame: Frame, text: str) -> int:
    """`$pc` (the selected frame's: a caller frame's return address), `$pc + 8`, a function's name, a
    number, or any expression whose value is an address."""
    text = text.strip()
    m = _PC.match(text)
    if m:
        delta = int(m.group(2), 0) if m.group(2) else 0
        return frame.runtime_pc + (-delta if m.group(1) == "-" else delta)
    if _NUMBER.match(text):
        return int(text, 0)
    if _IDENTIFIER.match(text):
        found = s.function_address(text)
        if found is not None:
            return found
    obj = parsed(evaluate_expression, s, text, frame=frame, lanes=[frame.lane])
    values, _ = obj.scalar_bits()
    if values[0] is None:
        raise AspaceError(f"the value of {text} is not known, so it names no address")
    return values[0] & ((1 << 64) - 1)


def _where(row: Instruction) -> str:
    """GDB's `<symbol+offset>` (decimal offset) of an instruction, '' without a symbol."""
    if row.symbol is None:
        return ""
    return f" <{row.symbol}+{row.offset}>" if row.offset else f" <{row.symbol}>"


def _holds_pc(row: Instruction, frame: Frame) -> bool:
    """The row is the instruction at the frame's PC: it starts there, or the PC lies inside its bytes."""
    return row.address <= frame.runtime_pc < row.address + row.size


def _inside_note(s: Session, frame: Frame) -> list[str]:
    """A line saying where a PC that is no instruction start lies, as the decoder cut the function."""
    pc = frame.runtime_pc
    row = s.instruction_holding(pc)
    if row is None or row.address == pc:
        return []
    return [f"(pc 0x{pc:x} is inside the {row.size}-byte instruction at 0x{row.address:x}{_where(row)}, as the "
            f"decoder cuts the function from its start: that instruction is marked =>)"]


def _refuse_undecoded(row) -> None:
    if isinstance(row, Instruction) and not row.decoded:
        raise AspaceError(row.text.strip("<>"))


def examine_instructions(s: Session, frame: Frame, count: int, where: str) -> str:
    """`x/Ni ADDRESS`: N instructions from ADDRESS, `=>` at the selected frame's PC."""
    if not 0 < count <= MAX_EXAMINE_INSTRUCTIONS:
        raise AspaceError(f"x/{count}i: give 1 to {MAX_EXAMINE_INSTRUCTIONS} instructions")
    start = code_address(s, frame, where)
    lines = []
    for row in s.instructions(start, count):
        if not isinstance(row, Instruction):
            lines.append(f"No code at 0x{row.address:x}." if row.address is not None else "No code there.")
            break
        _refuse_undecoded(row)
        mark = "=> " if _holds_pc(row, frame) else "   "
        lines.append(f"{mark}0x{row.address:x}{_where(row)}:\t{row.text}")
    return "\n".join(lines + _inside_note(s, frame))


_DISASSEMBLE = re.compile(r"^\s*disas(?:s(?:e(?:m(?:b(?:l(?:e)?)?)?)?)?)?(?P<mods>(?:\s*/[a-z]+)*)(?:\s+(?P<what>.*?))?\s*$")


def is_disassemble(text: str) -> re.Match | None:
    return _DISASSEMBLE.match(text)


def disassemble(s: Session, frame: Frame, m: re.Match) -> str:
    """GDB's `disassemble`: the selected frame's function by default, `=>` at its PC; /r adds the bytes,
    /s the source lines (each group of instructions under the lines it came from)."""
    mods = set("".join(x.strip().lstrip("/") for x in re.findall(r"/[a-z]+", m.group("mods") or "")))
    unknown = mods - set("rsmb")
    if unknown:
        raise AspaceError(f"disassemble: unknown modifier /{''.join(sorted(unknown))} (known: /r, /s)")
    what = (m.group("what") or "").strip()
    if "," in what:
        first, second = (p.strip() for p in what.split(",", 1))
        lo = code_address(s, frame, first)
        hi = lo + int(second[1:].strip(), 0) if second.startswith("+") else code_address(s, frame, second)
        rows = _range(s, lo, hi)
        title = f"Dump of assembler code from 0x{lo:x} to 0x{hi:x}:"
    else:
        address = code_address(s, frame, what) if what else frame.runtime_pc
        function, rows = s.function_instructions(address)
        title = f"Dump of assembler code for function {function.name}:"
    for row in rows[:1]:
        _refuse_undecoded(row)
    body = _source_centric(s, frame, rows, "r" in mods or "b" in mods) if "s" in mods or "m" in mods else \
        [_line(row, frame, "r" in mods or "b" in mods, relative="," not in what) for row in rows]
    return "\n".join([title, *body, "End of assembler dump.", *_inside_note(s, frame)])


def _range(s: Session, lo: int, hi: int) -> list[Instruction]:
    """The instructions from the one holding `lo` up to `hi` (GDB's `disassemble START,END`)."""
    if hi <= lo:
        raise AspaceError(f"disassemble: the range 0x{lo:x}-0x{hi:x} is empty")
    out: list[Instruction] = []
    rows = s.instructions(lo, 256)
    while len(out) < MAX_EXAMINE_INSTRUCTIONS:
        for row in rows:
            if not isinstance(row, Instruction) or row.address >= hi:
                return out
            out.append(row)
        rows = s.instructions(out[-1].address, 257)[1:]
    return out


def _line(row: Instruction, frame: Frame, raw: bool, relative: bool = True) -> str:
    mark = "=> " if _holds_pc(row, frame) else "   "
    where = (f" <+{row.offset}>" if row.symbol is not None else "") if relative else _where(row)
    data = ""
    if raw:
        data = (" ".join(f"{b:02x}" for b in row.data) if row.data is not None else "<unavailable>") + "\t"
    return f"{mark}0x{row.address:016x}{where}:\t{data}{row.text}"


def _source_centric(s: Session, frame: Frame, rows: list[Instruction], raw: bool) -> list[str]:
    """`/s`: runs of instructions under their source lines; going forward in a file, the lines skipped
    since the last shown are shown too (as GDB does)."""
    out: list[str] = []
    shown_file, last_line = None, 0
    texts: dict[str, list[str] | None] = {}
    group = None
    for row in rows:
        key = (row.file, row.line)
        if key != group:
            group = key
            if row.file and row.line:
                if out:
                    out.append("")
                if row.file != shown_file:
                    out.append(f"{row.file}:")
                    shown_file, last_line = row.file, 0
                first = last_line + 1 if last_line and last_line < row.line <= last_line + 10 else row.line
                for n in range(first, row.line + 1):
                    out.append(f"{n}\t{_source_line(s, texts, row.file, n)}")
                last_line = max(last_line, row.line)
        out.append(_line(row, frame, raw))
    return out


def _source_line(s: Session, texts: dict, path: str, n: int) -> str:
    if path not in texts:
        try:
            text = s.read_source(path)
        except AspaceError:
            text = None
        texts[path] = text.splitlines() if text is not None else None
    lines = texts[path]
    if lines is None or not 0 < n <= len(lines):
        return f"in {path}"
    return lines[n - 1]


# ---------------------------------------------------------------------------------------------- registers

_INFO_REGISTERS = re.compile(r"^\s*info\s+(?:registers|register|reg|r|all-registers)\b(?P<rest>.*)$")


def is_info_registers(text: str) -> re.Match | None:
    return _INFO_REGISTERS.match(text)


def info_registers(s: Session, frame: Frame, m: re.Match) -> str:
    """GDB's `info registers [NAME…]` for the focused lane; `/a` shows every lane of vector registers."""
    words = m.group("rest").split()
    all_lanes = "/a" in words
    names = [w.lstrip("$") for w in words if w != "/a"]
    bad = [w for w in names if w.startswith("/")]
    if bad:
        raise AspaceError(f"info registers: unknown form {bad[0]} (/a shows every lane of vector registers)")
    wave = s.wave(frame.wave_id)
    regs = wave.registers
    known = [n for n in regs.names if not n.startswith("_")]
    aliases = {"pc": wave.pc_register, "exec": wave.exec_register}
    if names:
        missing = [n for n in names if aliases.get(n, n) not in known]
        if missing:
            raise AspaceError(f"info registers: wave {wave.id} has no register {missing[0]} in the dump")
        chosen = [aliases.get(n, n) for n in names]
    else:
        chosen = known
    active = s.active_lanes(wave)
    lines = []
    if frame.caller_state is not None:  # a caller frame: its registers as unwound, GDB's <not saved> elsewhere
        how = getattr(frame.caller_state, "how", "unwinding")
        lines.append(f"(frame #{frame.index}'s registers, unwound by {how}; <not saved>: the callee may have "
                     f"changed them)")
        for name in chosen:
            lines += _caller_register_lines(s, frame, wave, name, all_lanes, active)
        return "\n".join(lines)
    for name in chosen:
        size = regs.size(name) or 0
        if size == 4 * wave.lanes and size > 8:  # a vector register: 32 bits per lane
            data, valid = regs.lane_view(name, wave.lanes)
            if all_lanes:
                lines += _all_lanes(name, data, valid, active, wave.lanes)
                continue
            lane = frame.lane
            value = int.from_bytes(bytes(data[lane]), "little") if valid[lane].all() else None
            lines.append(_register_line(name, value, 8, f"lane {lane}"))
            continue
        value = frame.runtime_pc if name == wave.pc_register else regs.value(name)
        natural = None
        if name == wave.pc_register and value is not None:
            row = s.instruction_holding(value)
            if row is not None and row.address != value:  # GDB's <symbol+offset> of the PC itself
                natural = f"0x{value:x}" + (f" <{row.symbol}+{row.offset + value - row.address}>" if row.symbol else "")
                natural += f" (inside the {row.size}-byte instruction at 0x{row.address:x}{_where(row)})"
            else:
                natural = f"0x{value:x}{_where(row) if row is not None else ''}"
        elif name == wave.exec_register and value is not None:
            natural = f"{bin(value).count('1')} lanes"
        lines.append(_register_line(name, value, 0, None, natural))
    return "\n".join(lines)


def _caller_register_lines(s: Session, frame: Frame, wave, name: str, all_lanes: bool, active) -> list[str]:
    got = s.caller_register(frame, name)
    if got.why is not None:
        return [f"{name:<15}<not saved>"]
    if got.per_lane:
        if all_lanes:
            return _all_lanes(name, got.data, got.valid, active, wave.lanes)
        lane = frame.lane
        value = int.from_bytes(bytes(got.data[lane]), "little") if got.valid[lane].all() else None
        return [_register_line(name, value, 8, f"lane {lane}")]
    value = int.from_bytes(bytes(got.data[0]), "little") if got.valid[0].all() else None
    natural = None
    if name == wave.pc_register and value is not None:
        row = s.instruction_holding(value)
        natural = f"0x{value:x}{_where(row) if row is not None and row.address == value else ''}"
    return [_register_line(name, value, 0, None, natural)]


def _register_line(name: str, value: int | None, digits: int, note: str | None, natural: str | None = None) -> str:
    if value is None:
        return f"{name:<15}<unavailable>"
    hexed = f"0x{value:0{digits}x}"
    natural = natural if natural is not None else str(value)
    return f"{name:<15}{hexed:<19}{natural}" + (f"\t({note})" if note else "")


def _all_lanes(name: str, data, valid, active: np.ndarray, lanes: int) -> list[str]:
    out = [f"{name} (every lane; inactive lanes: {coalesce_ranges(np.nonzero(~active)[0]) or 'none'}):"]
    for first in range(0, lanes, LANES_PER_ROW):
        cells = []
        for lane in range(first, min(lanes, first + LANES_PER_ROW)):
            v = int.from_bytes(bytes(data[lane]), "little") if valid[lane].all() else None
            cells.append("<unavailable>" if v is None else f"0x{v:08x}")
        out.append(f"  [{first:>2}]  " + "  ".join(cells))
    return out
