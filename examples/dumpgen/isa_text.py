"""LDS offsets read from the llvm-objdump listing committed next to each code object (`*.co.s.txt`).

The dumps must hold each `__shared__` variable's bytes where the compiler really put them;
the DWARF of these builds says 0 for all of them. This reads the offsets the way a person
reads the listing, independently of the debugger's own ISA decoder: under the
`; file:line` comment of a source line that touches the variable,

- -O0 builds a generic pointer: once the shared aperture is in place (`s_getreg_b32 ...
  SH_MEM_BASES, 16, 16` then `s_lshl_b32 ..., 16`, or `src_shared_base` then `s_lshr_b64`), it is
  copied into the odd register of a pair (SGPRs, or VGPRs on gfx942) whose even register was set
  since to the constant `<offset>`;
- -O2 addresses LDS directly: `ds_<op> vA, ... offset:<offset>` with an index-only vA.
"""

from __future__ import annotations

import re
from pathlib import Path

_LINE = re.compile(r"^; (?P<file>\S+):(?P<line>\d+)$")
_FUNC = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_INSN = re.compile(r"^\t(?P<text>.*?)\s*// (?P<addr>[0-9A-F]+):")
_MOV_CONST = re.compile(r"^[sv]_mov_b32(?:_e32)? (?P<reg>[sv]\d+), (?P<value>0x[0-9a-f]+|\d+)$")
_SHIFT = re.compile(r"^(?:s_lshl_b32 s(?P<reg>\d+), s\d+, 16|s_lshr_b64 s\[(?P<reg64>\d+):\d+\], .*)$")
_MOV_REG = re.compile(r"^[sv]_mov_b32(?:_e32)? (?P<reg>[sv]\d+), (?P<src>[sv]\d+)$")
_DS = re.compile(r"^(?P<op>ds_\w+) [^:]*?(?:offset:(?P<offset>\d+))?$")
_GETREG = re.compile(r"^s_getreg_b32 s(?P<reg>\d+), hwreg\(HW_REG_SH_MEM_BASES, 16, 16\)$")
_SHARED_BASE = re.compile(r"^s_mov_b64 s\[(?P<reg>\d+):\d+\], src_shared_base$")


def blocks(listing: Path, function: str) -> list[tuple[int, list[str]]]:
    """(source line, instruction texts) runs of one function, in listing order."""
    out: list[tuple[int, list[str]]] = []
    inside = False
    for raw in listing.read_text().splitlines():
        m = _FUNC.match(raw)
        if m:
            inside = m.group("name") == function
            continue
        if not inside:
            continue
        m = _LINE.match(raw)
        if m:
            out.append((int(m.group("line")), []))
            continue
        m = _INSN.match(raw)
        if m and out:
            out[-1][1].append(m.group("text").strip())
    return out


def generic_pointer_offsets(listing: Path, function: str, line: int) -> set[int]:
    """Constants that become the low dword of a generic LDS pointer on a source line."""
    found = set()
    for number, texts in blocks(listing, function):
        if number != line:
            continue
        pending: set[str] = set()  # aperture read, not yet shifted into place
        aperture: set[str] = set()  # registers holding the aperture's high dword ("s4", "v6")
        last_const: dict[str, tuple[int, int]] = {}  # register -> (value, position)
        ready = -1  # position where the aperture became usable
        for position, text in enumerate(texts):
            m = _GETREG.match(text) or _SHARED_BASE.match(text)
            if m:
                pending.add(f"s{m.group('reg')}")
                continue
            m = _SHIFT.match(text)
            shifted = f"s{m.group('reg') or m.group('reg64')}" if m else None
            if shifted in pending:
                aperture.add(shifted)
                ready = position
                continue
            m = _MOV_CONST.match(text)
            if m:
                last_const[m.group("reg")] = (int(m.group("value"), 0), position)
                aperture.discard(m.group("reg"))
                continue
            m = _MOV_REG.match(text)
            if m:
                dst, src = m.group("reg"), m.group("src")
                kind, n = dst[0], int(dst[1:])
                const = last_const.get(f"{kind}{n - 1}")
                if src in aperture and n % 2 == 1 and const is not None and const[1] > ready:
                    found.add(const[0])
                aperture.discard(dst)
                last_const.pop(dst, None)
                if src in aperture:
                    aperture.add(dst)
                if src in last_const:  # a constant copied on keeps its age
                    last_const[dst] = last_const[src]
    return found


def ds_offsets(listing: Path, function: str, line: int, op: str) -> set[int]:
    """The offset fields of one DS instruction kind on a source line."""
    found = set()
    for number, texts in blocks(listing, function):
        if number != line:
            continue
        for text in texts:
            m = _DS.match(text)
            if m and m.group("op") == op:
                found.add(int(m.group("offset") or 0))
    return found


def only(values: set[int], what: str) -> int:
    if len(values) != 1:
        raise ValueError(f"{what}: the listing gives {sorted(values) or 'nothing'}, not one offset")
    return next(iter(values))
