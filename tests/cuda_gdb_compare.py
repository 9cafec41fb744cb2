"""Compares what aspace-dap shows over DAP with what cuda-gdb printed for the same CUDA core.

For every thread a transcript (cuda_gdb_transcript.py) asks about, the server is focused on the same
thread (block and thread index -> the warp's DAP thread and the lane whose work-item is that thread)
and asked the same things: the frames of `bt` and `frame N`, `info args` / `info locals` against the
frame's scopes, each `print` (and `print/x`) through `evaluate`, `x/8xw` through the REPL,
`info registers` against the Registers scope, and the stop cuda-gdb opened the core with against
the `stopped` event.

Each difference gets a severity:
  wrong       aspace-dap shows something else than cuda-gdb: a value, a frame, a register, a lane.
              These fail the test, unless the known-differences file of the cores lists them.
  missing     aspace-dap shows no value (unavailable, an error) where cuda-gdb shows one.
  unsupported a request aspace-dap does not answer (a server without supportsExceptionInfoRequest).
  format      the same value written differently: cuda-gdb's address-space qualifiers
              (`(@generic float * @parameter) 0x...`), `<optimized out>` for `<unavailable>`, a
              shared address as an offset for aspace-dap's `shared#0x440`, GDB's `float (*)[16]` type
              syntax.
  known       a wrong or missing item the known-differences file explains (who is right, and why).
Everything but `wrong` is printed, never silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from cuda_gdb_transcript import (Focus, Frame, Step, Transcript, assignments, examined, frames,
                                 printed_value, register_rows)
from dap_client import RequestFailed, launched

BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")
SEVERITIES = ("wrong", "missing", "unsupported", "format", "known")
_THREAD_NAME = re.compile(r"^CUDA kernel (?P<kernel>\d+) (?:cluster \((\d+),(\d+),(\d+)\) )?"
                          r"block \((?P<bx>\d+),(?P<by>\d+),(?P<bz>\d+)\) thread \((\d+),(\d+),(\d+)\)"
                          r"(?: device (?P<device>\d+))?(?: sm (?P<sm>\d+) warp (?P<warp>\d+))?")
_NO_VALUE = re.compile(r"^<(?:value )?(?:optimized out|unavailable|not saved|error:.*|synthetic pointer)>$|"
                       r"^<unavailable:.*>$")


class CudaGdbDifference(UserWarning):
    """A difference from cuda-gdb that does not fail the test, shown as a warning (a class in a module
    every pytest process imports: pytest-xdist's workers send warnings to the main process by class)."""


@dataclass(frozen=True)
class Difference:
    severity: str
    where: str
    item: str
    cuda_gdb: str
    ours: str
    why: str = ""

    def line(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return f"[{self.severity}] {self.where}: {self.item}: cuda-gdb {self.cuda_gdb!r}, aspace-dap {self.ours!r}{why}"


@dataclass
class Report:
    name: str
    compared: int = 0
    differences: list[Difference] = field(default_factory=list)

    def add(self, severity: str, where: str, item: str, cuda_gdb, ours, why: str = "") -> None:
        self.differences.append(Difference(severity, where, item, str(cuda_gdb), str(ours), why))

    def of(self, severity: str) -> list[Difference]:
        return [d for d in self.differences if d.severity == severity]

    def text(self) -> str:
        counts = ", ".join(f"{len(self.of(s))} {s}" for s in SEVERITIES)
        lines = [f"{self.name}: {self.compared} items the same; differences: {counts}"]
        lines += ["  " + d.line() for s in SEVERITIES for d in self.of(s)]
        return "\n".join(lines)


# ---- values ---------------------------------------------------------------------------------------

def _strip_type(text: str) -> tuple[str, str]:
    """(`(type)` prefix or "", the rest): `(@generic float * @parameter) 0x7f` -> ("(@generic ...)", "0x7f")."""
    text = text.strip()
    if not text.startswith("("):
        return "", text
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            rest = text[i + 1:]
            if rest.startswith(" ") and rest.strip():
                return text[:i + 1], rest.strip()
            return "", text
    return "", text


def _expand_repeats(text: str) -> str:
    """GDB's `X <repeats N times>` written out, so `{0, 0, 0}` and `{0 <repeats 3 times>}` compare."""
    def expand(m):
        return ", ".join([m.group(1)] * int(m.group(2)))
    return re.sub(r"([^{},]+?) <repeats (\d+) times>", expand, text)


def _normal(text: str) -> str:
    """A value without what only its rendering changes: cuda-gdb's `@space` qualifiers, aspace-dap's
    memory references (`shared@wg(1,0,0)#0x440` -> 0x440), GDB's older `<value optimized out>`."""
    text = text.strip().replace("<value optimized out>", "<optimized out>")
    text = re.sub(r"\s*@(?:generic|global|shared|local|parameter|param|register|constant|const|code|texture)\b",
                  "", text)
    text = re.sub(r"\b[a-z_]+(?:@[\w.(),]+)?#(0x[0-9a-fA-F]+)", r"\1", text)
    text = _expand_repeats(text)
    return re.sub(r"\s+", " ", text)


def _leaves(text: str) -> list[str]:
    """The values in a printed value, types left out: `{x = 1, y = (int *) 0x10}` -> [1, 0x10]."""
    text = _normal(text)
    text = re.sub(r"\((?:[^()]|\([^()]*\))*\)\s+(?=[-0-9<'\"{])", "", text)  # casts before a value
    text = re.sub(r"\b[A-Za-z_]\w*\s*=\s*", "", text)  # member names
    return re.findall(r"<[^>]*>|'(?:\\.|[^'])*'|\"(?:\\.|[^\"])*\"|-?[\w.+]+", text)


def _same_number(a: str, b: str) -> bool:
    try:
        return float(int(a, 0) if a.lower().startswith(("0x", "-0x")) else float(a)) == \
            float(int(b, 0) if b.lower().startswith(("0x", "-0x")) else float(b))
    except ValueError:
        return False


def no_value(text: str | None) -> bool:
    return text is None or bool(_NO_VALUE.match(text.strip()))


def compare_value(cuda_gdb: str | None, ours: str | None, plain_pointers: bool = False) -> tuple[str, str]:
    """("same" | "format" | "missing" | "wrong", why) for one value; None is a value not shown (an
    error). `plain_pointers`: cuda-gdb printed without the `(type)` prefix (frame lines, info
    args/locals), which aspace-dap's variables carry: not a difference."""
    if cuda_gdb == ours:
        return "same", ""
    if no_value(cuda_gdb) and no_value(ours):
        return "format", "neither shows a value"
    if no_value(ours):
        return "missing", "aspace-dap shows no value"
    if no_value(cuda_gdb):
        return "wrong", "aspace-dap shows a value where cuda-gdb has none"
    assert cuda_gdb is not None and ours is not None
    g, o = cuda_gdb, ours
    if plain_pointers:
        o = _strip_type(o)[1] if not _strip_type(g)[0] else o
    if g == o:
        return "same", ""
    if _normal(g) == _normal(o):
        return "format", "the same value, written differently"
    gl, ol = _leaves(g), _leaves(o)
    if len(gl) == len(ol) and all(a == b or _same_number(a, b) for a, b in zip(gl, ol)):
        return "format", "the same value, written differently"
    return "wrong", ""


# ---- the server side ----------------------------------------------------------------------------

class _Server:
    """One DAP session on the core, with the lookups the comparison needs."""

    def __init__(self, core: Path, sources: Path | None = None):
        # the sources' folder as the user's workspace: cuda-gdb ran there (a core of our own may lie elsewhere)
        self.client, self.stopped = launched(core, {"workspaceFolder": str(sources)} if sources else None)
        self.threads = self.client.request("threads")["threads"]
        self._lanes: dict[int, list[dict]] = {}
        # the focus the server opened the core with (setFocus without arguments changes nothing)
        first = self.client.request("setFocus", {})
        self.opened_on = (first["threadId"], first["lane"])

    def close(self) -> None:
        try:
            self.client.request("disconnect")
        finally:
            self.client.close()

    def lanes(self, tid: int) -> list[dict]:
        if tid not in self._lanes:
            self._lanes[tid] = self.client.request("lanes", {"threadId": tid})["lanes"]
        return self._lanes[tid]

    def locate(self, focus: Focus, block_dim: tuple[int, int, int] | None) -> tuple[int, int] | None:
        """(DAP thread id, lane) of cuda-gdb's block and thread index; a lane's work-item is its
        global index, blockIdx * blockDim + threadIdx."""
        if block_dim is None or focus.block is None or focus.thread is None:
            return None
        wanted = tuple(b * d + t for b, d, t in zip(focus.block, block_dim, focus.thread))
        for thread in self.threads:
            m = _THREAD_NAME.match(thread["name"])
            if not m:
                continue
            block = tuple(int(x) for x in m.group("bx", "by", "bz"))
            device = int(m["device"]) if m["device"] else None
            if block != focus.block or (device is not None and focus.device is not None and device != focus.device):
                continue
            for lane in self.lanes(thread["id"]):
                if tuple(lane.get("workItem", ())) == wanted:
                    return thread["id"], lane["lane"]
        return None

    def focus(self, tid: int, lane: int) -> list[dict]:
        self.client.request("setFocus", {"threadId": tid, "lane": lane})
        return self.client.request("stackTrace", {"threadId": tid})["stackFrames"]

    def scopes(self, frame_id: int) -> dict[str, dict[str, str]]:
        out = {}
        for scope in self.client.request("scopes", {"frameId": frame_id})["scopes"]:
            variables = self.client.request("variables", {"variablesReference": scope["variablesReference"]})
            out[scope["name"]] = {v["name"]: v["value"] for v in variables["variables"]}
        return out

    def evaluate(self, text: str, frame_id: int, hex_: bool = False) -> tuple[str | None, str | None]:
        """(value, error) of `text` in the REPL (`print/x` formats every element, as GDB does)."""
        expression = f"print/x {text}" if hex_ else text
        response = self.client.request_raw("evaluate", {"expression": expression, "frameId": frame_id,
                                                         "context": "repl"})
        if not response["success"]:
            return None, response.get("message") or "error"
        return response["body"]["result"], None


# ---- the comparison -----------------------------------------------------------------------------

def _base_name(function: str) -> str:
    """`divergent<<<(1,1,1),(64,1,1)>>>`, `transpose_tiles(float const*, float*)`, `ns::f`, and the
    Itanium linkage name `_Z15transpose_tilesPKfPfS1_ii` (a build with no DWARF functions) -> the name."""
    name = function.split("<<<", 1)[0].strip()
    if name.endswith(")") and "(" in name:
        name = name[:name.index("(")]
    m = re.match(r"^_Z(N?)((?:\d+\w+?)+?)(?:E|[A-Z]|$)", name) if name.startswith("_Z") else None
    if m:
        parts, rest = [], name[2 + len(m.group(1)):]
        while rest[:1].isdigit():
            digits = re.match(r"\d+", rest).group(0)
            parts.append(rest[len(digits):len(digits) + int(digits)])
            rest = rest[len(digits) + int(digits):]
            if not m.group(1):
                break
        if parts:
            return parts[-1]
    return name.rsplit("::", 1)[-1]


def _file(path: str | None) -> str | None:
    return path.replace("\\", "/").rsplit("/", 1)[-1] if path else None


def _is_builtin(expression: str) -> bool:
    return expression.split(".", 1)[0].split("[", 1)[0].strip() in BUILTINS


class _Comparison:
    def __init__(self, report: Report, server: _Server, known: list[dict], transcript: Transcript):
        self.report = report
        self.server = server
        self.known = known
        self.block_dims = {k.kernel: k.block_dim for k in transcript.kernels()}
        launch = transcript.stop.frame.launch if transcript.stop.frame is not None else None
        self.default_block_dim = launch[1] if launch else None
        for _focus, steps in transcript.by_focus():
            for f in (f for s in steps if s.verb in ("bt", "frame") for f in frames(s.lines)):
                if self.default_block_dim is None and f.launch:
                    self.default_block_dim = f.launch[1]

    def locate(self, focus: Focus) -> tuple[int, int] | None:
        block_dim = self.block_dims.get(focus.kernel) if focus.kernel is not None else None
        return self.server.locate(focus, block_dim or self.default_block_dim)

    def diff(self, severity: str, where: str, item: str, cuda_gdb, ours, why: str = "") -> None:
        if severity == "same":
            self.report.compared += 1
            return
        if severity in ("wrong", "missing"):
            for entry in self.known:
                if entry.get("where") in (where, "*") and entry.get("item") == item:
                    why = f"{entry.get('who_is_right', '?')} is right: {entry.get('evidence', '')}"
                    severity = "known"
                    break
        self.report.add(severity, where, item, cuda_gdb, ours, why)

    # -- the stop --
    def stop(self, t: Transcript) -> None:
        stopped = self.server.stopped
        text = stopped.get("text") or stopped.get("description") or ""
        if t.stop.exception:
            if stopped.get("reason") != "exception" or t.stop.exception not in text:
                self.diff("wrong", "stop", "exception", t.stop.exception, f"{stopped.get('reason')}: {text}")
            else:
                self.diff("same", "stop", "exception", t.stop.exception, text)
            if t.stop.error_pc is not None:
                found = re.search(r"at PC (0x[0-9a-fA-F]+)", text)
                ours = int(found.group(1), 16) if found else None
                self.diff("same" if ours == t.stop.error_pc else "wrong", "stop", "error pc",
                          hex(t.stop.error_pc), hex(ours) if ours is not None else text)
            caps = getattr(self.server.client, "capabilities", {}) or {}
            if not caps.get("supportsExceptionInfoRequest"):
                self.diff("unsupported", "stop", "exceptionInfo", t.stop.exception,
                          "no supportsExceptionInfoRequest")
            else:
                info = self.server.client.request("exceptionInfo", {"threadId": stopped["threadId"]})
                shown = f"{info.get('exceptionId', '')} {info.get('description', '')}"
                self.diff("same" if t.stop.exception in shown else "wrong", "stop", "exceptionInfo",
                          t.stop.exception, shown)
        elif t.stop.signal:
            self.diff("wrong" if t.stop.signal not in text else "same", "stop", "signal", t.stop.signal, text)
        if t.stop.focus is not None:
            located = self.locate(t.stop.focus)
            ours = self.server.opened_on
            self.diff("same" if located == ours else "wrong", "stop", "focus", t.stop.focus.where(),
                      f"thread {ours[0]} lane {ours[1]} (cuda-gdb's thread is {located})")

    # -- one thread --
    def thread(self, focus: Focus, steps: list[Step]) -> None:
        where = focus.where()
        located = self.locate(focus)
        if located is None:
            self.diff("missing", where, "thread", "cuda-gdb focuses this thread", "no lane has this thread index")
            return
        tid, lane = located
        if focus.lane is not None and lane != focus.lane:
            self.diff("wrong", where, "lane", focus.lane, lane)
        ours_frames = self.server.focus(tid, lane)
        for step in steps:
            self.step(where, step, ours_frames)

    def step(self, where: str, step: Step, ours_frames: list[dict]) -> None:
        verb = step.verb
        level = step.frame_level
        frame_where = f"{where} frame {level}"
        if verb in ("bt", "backtrace", "where"):
            self.frames(where, frames(step.lines), ours_frames, complete=True)
        elif verb in ("frame", "f", "up", "down"):
            self.frames(where, frames(step.lines)[:1], ours_frames, complete=False)
        elif step.command in ("info args", "info locals"):
            if level >= len(ours_frames):
                return
            scopes = self.server.scopes(ours_frames[level]["id"])
            if step.command == "info args":
                ours = scopes.get("Arguments", {})
            else:
                ours = {**scopes.get("Locals", {}), **scopes.get("Shared", {})}
            gdb = assignments(step.lines)
            for name, value in gdb.items():
                if name not in ours:
                    self.diff("missing", frame_where, f"{step.command} {name}", value, "(not listed)")
                    continue
                verdict, why = compare_value(value, ours[name], plain_pointers=True)
                self.diff(verdict, frame_where, f"{step.command} {name}", value, ours[name], why)
        elif verb in ("print", "p") or verb.startswith(("print/", "p/")):
            self.print(frame_where, step, ours_frames)
        elif verb.startswith("x/"):
            self.examine(frame_where, step, ours_frames)
        elif step.command.startswith(("info registers", "info all-registers")):
            self.registers(frame_where, step, ours_frames)

    def frames(self, where: str, gdb: list[Frame], ours: list[dict], complete: bool) -> None:
        for f in gdb:
            item = f"frame #{f.level}"
            if f.level >= len(ours):
                self.diff("missing", where, item, f"{f.name} at {_file(f.file)}:{f.line}",
                          f"aspace-dap shows {len(ours)} frames")
                continue
            o = ours[f.level]
            o_file = _file((o.get("source") or {}).get("path"))
            o_pc = int(o["instructionPointerReference"], 16) if o.get("instructionPointerReference") else None
            checks = [("function", _base_name(f.function), _base_name(o["name"]))]
            if f.line is not None:
                checks += [("file", _file(f.file), o_file), ("line", f.line, o.get("line"))]
            if f.pc is not None:
                checks.append(("pc", hex(f.pc), hex(o_pc) if o_pc is not None else None))
            for what, g_value, o_value in checks:
                self.diff("same" if g_value == o_value else "wrong", where, f"{item} {what}", g_value, o_value)
            if o["name"].startswith("_Z") and not f.function.startswith("_Z"):
                self.diff("format", where, f"{item} function", f.function, o["name"],
                          "aspace-dap shows the linkage name")
            if f.args:
                scopes = self.server.scopes(o["id"])
                ours_args = scopes.get("Arguments", {})
                for name, value in f.args:
                    if value == "...":
                        continue
                    if name not in ours_args:
                        self.diff("missing", where, f"{item} argument {name}", value, "(not listed)")
                        continue
                    verdict, why = compare_value(value, ours_args[name], plain_pointers=True)
                    self.diff(verdict, where, f"{item} argument {name}", value, ours_args[name], why)
        if complete and gdb and len(ours) > len(gdb):
            extra = ", ".join(o["name"] for o in ours[len(gdb):])
            self.diff("wrong", where, "frames", f"{len(gdb)} frames", f"{len(ours)} frames (also {extra})")

    def print(self, where: str, step: Step, ours_frames: list[dict]) -> None:
        verb, expression = step.verb, step.argument
        hex_ = "/x" in verb
        item = step.command
        if step.frame_level >= len(ours_frames):
            self.diff("missing", where, item, step.text, "no such frame")
            return
        value, error = printed_value(step.lines)
        ours, our_error = self.server.evaluate(expression, ours_frames[step.frame_level]["id"], hex_)
        if value is None and ours is None:
            self.diff("same", where, item, error, our_error)  # neither shows a value
            return
        verdict, why = compare_value(value, ours)
        self.diff(verdict, where, item, value if value is not None else error,
                  ours if ours is not None else our_error, why)

    def examine(self, where: str, step: Step, ours_frames: list[dict]) -> None:
        gdb_rows = examined(step.lines)
        if step.frame_level >= len(ours_frames):
            return
        ours_text, our_error = self.server.evaluate(step.command, ours_frames[step.frame_level]["id"])
        ours_rows = examined([re.sub(r"^\S*?#(0x[0-9a-fA-F]+)", r"\1", line)
                              for line in (ours_text or "").splitlines()])
        if all(no_value(w) for _, _, words in ours_rows for w in words):
            ours_rows = []  # rows of <unavailable>: no memory shown, as an error shows none
        if not gdb_rows:
            error = " ".join(step.lines).strip()
            self.diff("same" if not ours_rows else "wrong", where, step.command, error or "(nothing)",
                      ours_text if ours_rows else our_error)
            return
        if not ours_rows:
            self.diff("missing", where, step.command, step.text, our_error or ours_text)
            return
        gdb_words = [w for _, _, ws in gdb_rows for w in ws]
        our_words = [w for _, _, ws in ours_rows for w in ws]
        for i, word in enumerate(gdb_words):
            mine = our_words[i] if i < len(our_words) else None
            verdict = "same" if mine is not None and (mine == word or _same_number(mine, word)) else \
                ("missing" if mine in (None, "<unavailable>") else "wrong")
            self.diff(verdict, where, f"{step.command} word {i}", word, mine)
        if gdb_rows[0][0] != ours_rows[0][0]:
            self.diff("format", where, f"{step.command} address", hex(gdb_rows[0][0]), hex(ours_rows[0][0]),
                      "the words agree; the address is written in another form")

    def registers(self, where: str, step: Step, ours_frames: list[dict]) -> None:
        if step.frame_level >= len(ours_frames):
            return
        frame = ours_frames[step.frame_level]
        ours = self.server.scopes(frame["id"]).get("Registers", {})
        for name, (raw, _natural) in register_rows(step.lines).items():
            item = f"info registers {name}"
            if name.lower() == "pc":
                # the lane's pc: the frame's (the Registers scope's pc is the warp's)
                mine = frame.get("instructionPointerReference")
            else:
                mine = ours.get(name)
            if no_value(raw):
                self.diff("same" if no_value(mine) else "wrong", where, item, raw, mine)
            elif mine is None or no_value(mine):
                self.diff("missing", where, item, raw, mine)
            else:
                self.diff("same" if _same_number(raw, mine.split()[0]) else "wrong", where, item, raw, mine)


def load_known(path: Path) -> list[dict]:
    """The known differences of a folder of cores: a JSON list of {core, where, item, who_is_right,
    evidence} (`where` may be "*")."""
    if not path.exists():
        return []
    return json.loads(path.read_text())


def compare(core: Path, transcript: Transcript, known: list[dict] | None = None, name: str | None = None,
            sources: Path | None = None) -> Report:
    """Open `core` in aspace-dap (with `sources` as the workspace folder) and compare every thread the
    transcript asked about."""
    report = Report(name or (transcript.path.name if transcript.path else str(core)))
    mine = [k for k in (known or []) if k.get("core") in (None, report.name, core.name)]
    server = _Server(core, sources)
    try:
        comparison = _Comparison(report, server, mine, transcript)
        comparison.stop(transcript)
        for focus, steps in transcript.by_focus():
            try:
                comparison.thread(focus, steps)
            except RequestFailed as exc:
                report.add("wrong", focus.where(), "request", "", str(exc), "the server refused a request")
    finally:
        server.close()
    return report
