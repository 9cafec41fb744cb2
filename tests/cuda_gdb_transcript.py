"""Reads a cuda-gdb transcript: what cuda-gdb printed for a GPU core, command by command.

examples/cuda/real/capture.sh runs cuda-gdb in batch mode with each command preceded by
`echo (cuda-gdb) COMMAND`, so a transcript reads like an interactive session: a line
`(cuda-gdb) COMMAND`, then what cuda-gdb printed for it. Lines starting with `##` are a header
(a hand-written transcript says so there) and are not part of the session.

What is understood, in cuda-gdb's formats (its source, gdb/cuda/*.c, and GDB's printers):
  - the focus: `[Current focus set to CUDA kernel 0, grid 1, block (1,0,0), thread (3,0,0),
    device 0, sm 0, warp 0, lane 3]`, `[Switching focus to CUDA ...]`, the query answer
    `kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 0, warp 0, lane 3`;
  - the stop: `CUDA Exception: Warp Illegal Address`, `The exception was triggered at PC 0x270
    settle  (divergent_call.cu:9)`, `Program terminated with signal SIGTRAP, ...`;
  - frames: `#1  0x0000000000000e20 in divergent<<<(1,1,1),(64,1,1)>>> (in=0x7f10..., n=100) at
    divergent_call.cu:21` (the address only where the pc is not at the start of a line);
  - `info args` / `info locals` rows `name = value`; `$N = value` for print; `x` rows
    `0x440 <tile>:\t0x40800000\t...`; `info registers` rows `R1  0xfffb00  16776960`;
  - the `info cuda kernels` table.
Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PROMPT = "(cuda-gdb) "
HEADER = "##"

_DIM3 = r"\((\d+),(\d+),(\d+)\)"
_FOCUS_LINE = re.compile(r"^\[(Current focus set to|Switching focus to) CUDA (.*)\]$")
_COORD = re.compile(r"(kernel|grid|device|sm|warp|lane) (\d+)|(cluster|block|thread) " + _DIM3)
_EXCEPTION = re.compile(r"^CUDA Exception: (.+)$")
_TRIGGERED = re.compile(r"^The exception was triggered at PC (0x[0-9a-fA-F]+)(?:\s+(.*?))?"
                        r"(?:\s+\(([^():]+):(\d+)(?: in .*)?\))?$")
_SIGNAL = re.compile(r"^Program terminated with signal (\S+), (.*)\.$")
_FRAME = re.compile(r"^#(\d+)\s+(.*)$")
_AT = re.compile(r"\s+at\s+(\S+):(\d+)$")
_FROM = re.compile(r"\s+from\s+(\S+)$")
_ASSIGN = re.compile(r"^([A-Za-z_][\w.]*) = (.*)$")
_PRINT = re.compile(r"^\$(\d+) = (.*)$")
_EXAMINE = re.compile(r"^(0x[0-9a-fA-F]+)(?:\s+<([^>]*)>)?:\s*(.*)$")
_REGISTER = re.compile(r"^([A-Za-z_]\w*)\s+(0x[0-9a-fA-F]+|<unavailable>|<not saved>|<optimized out>)(?:\s+(.*))?$")
_KERNEL_ROW = re.compile(r"^(\*)?\s*(\d+)\s+(\S+)\s+(\d+)\s+(-?\d+)\s+(\S+(?: \(preempted\))?)\s+(0x[0-9a-fA-F]+)\s+"
                         + r"\((\d+),(\d+),(\d+)\)\s+\((\d+),(\d+),(\d+)\)\s+(.*)$")
_SOURCE_LINE = re.compile(r"^(\d+)\t(.*)$")


@dataclass(frozen=True)
class Focus:
    """cuda-gdb's coordinates of one thread: logical (kernel, grid, block, thread) and physical
    (device, sm, warp, lane); a query may name only some of them."""
    kernel: int | None = None
    grid: int | None = None
    cluster: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    device: int | None = None
    sm: int | None = None
    warp: int | None = None
    lane: int | None = None

    def where(self) -> str:
        return f"block {_dim(self.block)} thread {_dim(self.thread)}"


@dataclass(frozen=True)
class Frame:
    level: int
    pc: int | None  # printed only for caller frames and a pc inside a line
    function: str  # as printed, `<<<grid,block>>>` included for kernels
    args: tuple[tuple[str, str], ...] | None  # None: no argument list printed
    file: str | None
    line: int | None

    @property
    def name(self) -> str:
        """The function without the launch configuration (`divergent<<<(1,1,1),(64,1,1)>>>` -> divergent)."""
        return self.function.split("<<<", 1)[0]

    @property
    def launch(self) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        m = re.search(r"<<<" + _DIM3 + "," + _DIM3 + ">>>", self.function)
        if not m:
            return None
        g = [int(x) for x in m.groups()]
        return (g[0], g[1], g[2]), (g[3], g[4], g[5])


@dataclass(frozen=True)
class Kernel:
    current: bool
    kernel: int
    device: int
    grid: int
    status: str
    grid_dim: tuple[int, int, int]
    block_dim: tuple[int, int, int]
    invocation: str


@dataclass
class Step:
    """One command, what cuda-gdb printed for it, and where it ran: the focus and frame level
    in effect (for a focus switch, the focus it switched to)."""
    command: str
    lines: list[str]
    focus: Focus | None = None
    frame_level: int = 0

    @property
    def verb(self) -> str:
        return self.command.split(None, 1)[0] if self.command else ""

    @property
    def argument(self) -> str:
        parts = self.command.split(None, 1)
        return parts[1].strip() if len(parts) > 1 else ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Stop:
    """What cuda-gdb said when it opened the core."""
    exception: str | None = None
    error_pc: int | None = None
    error_function: str | None = None
    error_file: str | None = None
    error_line: int | None = None
    signal: str | None = None
    focus: Focus | None = None
    frame: Frame | None = None


@dataclass
class Transcript:
    path: Path | None
    header: list[str]
    steps: list[Step]
    stop: Stop = field(default_factory=Stop)

    @property
    def handwritten(self) -> bool:
        return any("HAND-WRITTEN" in line for line in self.header)

    def kernels(self) -> list[Kernel]:
        for step in self.steps:
            if step.command == "info cuda kernels":
                return kernel_rows(step.lines)
        return []

    def by_focus(self) -> list[tuple[Focus, list[Step]]]:
        """The steps grouped by the thread they ran on, in order (a thread asked about twice gives
        two groups)."""
        groups: list[tuple[Focus, list[Step]]] = []
        for step in self.steps:
            if step.focus is None:
                continue
            if not groups or groups[-1][0] != step.focus:
                groups.append((step.focus, []))
            groups[-1][1].append(step)
        return groups


def _dim(d) -> str:
    return "(" + ",".join(str(x) for x in d) + ")" if d is not None else "?"


# ---- single lines ------------------------------------------------------------------------------

def parse_coordinates(text: str) -> Focus | None:
    """`kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 0, warp 0, lane 3`, or any part."""
    values: dict[str, object] = {}
    rest = text
    for m in _COORD.finditer(text):
        if m.group(1):
            values[m.group(1)] = int(m.group(2))
        else:
            values[m.group(3)] = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
        rest = rest.replace(m.group(0), "", 1)
    if not values or rest.replace(",", "").strip():
        return None
    return Focus(**values)  # type: ignore[arg-type]


def parse_focus_line(line: str) -> tuple[bool, Focus] | None:
    """(switching, focus) of a `[Current focus set to ...]` / `[Switching focus to ...]` line."""
    m = _FOCUS_LINE.match(line.strip())
    if not m:
        return None
    focus = parse_coordinates(m.group(2))
    return (m.group(1).startswith("Switching"), focus) if focus else None


def _split_args(text: str) -> tuple[tuple[str, str], ...]:
    """`in=0x7f10, n=100, p=...` -> ((in, 0x7f10), (n, 100), (p, ...)); commas inside {}, (), "" stay."""
    out, depth, quote, start = [], 0, None, 0
    pieces = []
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{([<":
            depth += 1
        elif ch in "})]>":
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    if text.strip():
        pieces.append(text[start:])
    for piece in pieces:
        name, sep, value = piece.strip().partition("=")
        out.append((name.strip(), value.strip()) if sep else (piece.strip(), ""))
    return tuple(out)


def parse_frame(line: str) -> Frame | None:
    """A frame line of `bt`, `frame N` or a stop: `#1  0x... in f<<<...>>> (a=1) at f.cu:21`."""
    m = _FRAME.match(line.rstrip())
    if not m:
        return None
    level, rest = int(m.group(1)), m.group(2)
    pc = None
    pm = re.match(r"^(0x[0-9a-fA-F]+) in (.*)$", rest)
    if pm:
        pc, rest = int(pm.group(1), 16), pm.group(2)
    file = line_no = None
    at = _AT.search(rest)
    if at:
        file, line_no = at.group(1), int(at.group(2))
        rest = rest[:at.start()]
    else:
        fr = _FROM.search(rest)
        if fr:
            rest = rest[:fr.start()]
    rest = rest.rstrip()
    args = None
    function = rest
    if rest.endswith(")"):
        # the argument list is the last balanced (...) group, after a space
        depth = 0
        for i in range(len(rest) - 1, -1, -1):
            if rest[i] == ")":
                depth += 1
            elif rest[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0 and rest[i - 1] == " ":
                        function, args = rest[:i - 1], _split_args(rest[i + 1:-1])
                    break
    return Frame(level, pc, function.strip(), args, file, line_no)


def assignments(lines: list[str]) -> dict[str, str]:
    """`info args` / `info locals`: name -> value as printed (the first time a name appears: GDB
    lists the innermost block first, and an outer variable of the same name is hidden there)."""
    out: dict[str, str] = {}
    for line in lines:
        m = _ASSIGN.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def printed_value(lines: list[str]) -> tuple[str | None, str | None]:
    """(value, error) of a `print`: `$3 = 14.75` -> ("14.75", None); an error -> (None, its text)."""
    for i, line in enumerate(lines):
        m = _PRINT.match(line)
        if m:
            # a value GDB wrapped over several lines continues on the next ones
            return " ".join([m.group(2)] + [rest.strip() for rest in lines[i + 1:]]).strip(), None
    text = " ".join(line.strip() for line in lines if line.strip())
    return None, text or None


def examined(lines: list[str]) -> list[tuple[int, str | None, list[str]]]:
    """`x` rows: (address, symbol or None, the words as printed)."""
    rows = []
    for line in lines:
        m = _EXAMINE.match(line.strip())
        if m:
            rows.append((int(m.group(1), 16), m.group(2), m.group(3).split()))
    return rows


def register_rows(lines: list[str]) -> dict[str, tuple[str, str]]:
    """`info registers`: name -> (raw as printed, natural as printed)."""
    out = {}
    for line in lines:
        m = _REGISTER.match(line.strip())
        if m:
            out[m.group(1)] = (m.group(2), (m.group(3) or "").strip())
    return out


def kernel_rows(lines: list[str]) -> list[Kernel]:
    out = []
    for line in lines:
        m = _KERNEL_ROW.match(line.rstrip())
        if m:
            g = m.groups()
            out.append(Kernel(bool(g[0]), int(g[1]), int(g[3]), int(g[4]), g[5],
                              (int(g[7]), int(g[8]), int(g[9])), (int(g[10]), int(g[11]), int(g[12])),
                              g[13].strip()))
    return out


def frames(lines: list[str]) -> list[Frame]:
    out = []
    for line in lines:
        f = parse_frame(line)
        if f is not None:
            out.append(f)
    return out


# ---- a whole transcript -------------------------------------------------------------------------

def parse(text: str, path: Path | None = None) -> Transcript:
    header: list[str] = []
    steps: list[Step] = []
    current: Step | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(HEADER) and current is None:
            header.append(line)
            continue
        if line.startswith(PROMPT):
            current = Step(line[len(PROMPT):].strip(), [])
            steps.append(current)
            continue
        if current is not None:
            current.lines.append(line)
    transcript = Transcript(path, header, steps)
    _follow(transcript)
    return transcript


def read(path: str | Path) -> Transcript:
    path = Path(path)
    return parse(path.read_text(errors="replace"), path)


def _follow(t: Transcript) -> None:
    """Give each step the focus and frame level it ran with, and read the stop."""
    focus: Focus | None = None
    level = 0
    for step in t.steps:
        verb = step.verb
        if verb == "target" and step.argument.startswith("cudacore"):
            _read_stop(t.stop, step.lines)
            focus = t.stop.focus
            level = 0
        elif verb == "cuda":
            for line in step.lines:
                found = parse_focus_line(line)
                if found:
                    focus, level = found[1], 0
                    continue
                query = parse_coordinates(line.strip())
                if query is not None and focus is not None and query.thread is not None:
                    # the query answers with more coordinates than a switch line may carry
                    focus = _merge(focus, query)
        elif verb in ("frame", "f", "up", "down"):
            shown = frames(step.lines)
            if shown:
                level = shown[0].level
        step.focus = focus
        step.frame_level = 0 if verb == "cuda" else level


def _merge(focus: Focus, query: Focus) -> Focus:
    """The focus with what a query printed (the query wins where both say)."""
    if (query.block, query.thread) != (focus.block, focus.thread):
        return query
    values = {k: getattr(query, k) if getattr(query, k) is not None else getattr(focus, k)
              for k in Focus.__dataclass_fields__}
    return Focus(**values)


def _read_stop(stop: Stop, lines: list[str]) -> None:
    for line in lines:
        s = line.strip()
        m = _EXCEPTION.match(s)
        if m:
            stop.exception = m.group(1).strip()
            continue
        m = _TRIGGERED.match(s)
        if m:
            stop.error_pc = int(m.group(1), 16)
            stop.error_function = (m.group(2) or "").strip() or None
            stop.error_file = m.group(3)
            stop.error_line = int(m.group(4)) if m.group(4) else None
            continue
        m = _SIGNAL.match(s)
        if m:
            stop.signal = m.group(1)
            continue
        found = parse_focus_line(s)
        if found:
            stop.focus = found[1]
            continue
        f = parse_frame(line)
        if f is not None and stop.frame is None:
            stop.frame = f


def source_lines(lines: list[str]) -> list[tuple[int, str]]:
    """The `LINE<TAB>text` rows GDB prints under a frame."""
    out = []
    for line in lines:
        m = _SOURCE_LINE.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out
