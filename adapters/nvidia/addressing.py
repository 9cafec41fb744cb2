"""The address operands of SASS memory instructions, from nvdisasm's text.

nvdisasm prints an address in brackets as a sum: `[R2.64+0x10]`, `[R6+UR4]`, `[UR4+0xc]`,
`[R9.X4+0x100]`, `[0xc]`. `Rn.64` is the register pair Rn (low word) and Rn+1 (high word), a lane's
64-bit address; `URn` a uniform register, one value for the warp; `.X4` scales by 4; `.U32` is a
32-bit register zero-extended into a 64-bit address; `RZ` and `URZ` read zero. Before sm_75 a 64-bit
address is the opcode's `.E` ("extended") with a plain register, `LDG.E.SYS R0, [R2]`: R2 and R3.

`desc[URn]` in front of the brackets (sm_80 on: `LDG.E R0, desc[UR4][R2.64]`) names the memory
descriptor the kernel loads from the driver's constant bank (`ULDC.64 UR4, c[0x0][0x208]` on sm_90,
c[0x0][0x118] on sm_80); the address is what is in the brackets. The vLLM team's trace of
PyTorch's `index_elementwise_kernel` shows it: `IADD3 R2, P0, P1, R22, UR4, R2 ; IADD3.X R3, ...;
LDG.E.U8 R3, desc[UR36][R2.64]`, the whole address built in R2:R3.

The opcode names the memory: LD/ST/ATOM/RED generic addresses (the shared and local windows, else
global memory), LDG/STG/ATOMG/REDG global, LDS/STS/ATOMS/LDSM/STSM shared (an offset in the block's
shared memory), LDL/STL local (an offset in the thread's local memory); LDGSTS copies from a global
address to a shared one. `.U8`/`.S8`, `.U16`/`.S16`, `.64`, `.128` give the bytes a lane accesses
(4 otherwise).
"""

from __future__ import annotations

import re

from ..addressing import MemoryAccess, Operand, Term, immediate, register_span

SPACES = {
    "LD": "generic", "ST": "generic", "ATOM": "generic", "RED": "generic",
    "LDG": "global", "STG": "global", "ATOMG": "global", "REDG": "global",
    "LDS": "shared", "STS": "shared", "ATOMS": "shared", "LDSM": "shared", "STSM": "shared",
    "LDL": "local", "STL": "local",
}
SIZES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
SURFACE = "a surface access addresses texels by coordinates"
TENSOR = "a tensor-memory copy takes its addresses from a tensor map"
UNDECODED = {  # memory instructions whose addresses are not a bracketed sum of registers
    "SULD": SURFACE, "SUST": SURFACE, "SUATOM": SURFACE, "SURED": SURFACE, "UTMALDG": TENSOR, "UTMASTG": TENSOR,
    "UBLKCP": "a bulk copy's addresses are uniform registers",
}
# opcodes that change where a thread goes next: registers after them tell nothing about the fault
CONTROL = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BREAK", "KILL", "BPT", "RTT", "SYNC", "BRK", "CONT",
           "PBK", "PCNT", "SSY", "WARPSYNC", "BSSY", "BSYNC", "YIELD", "NANOSLEEP", "BMOV"}
# opcodes without a register destination
NO_DESTINATION = {"ST", "STG", "STS", "STL", "STSM", "RED", "REDG", "MEMBAR", "ERRBAR", "FENCE", "CCTL", "CCTLL",
                  "NOP", "DEPBAR", "BAR", "SUST", "SURED", "UTMASTG", "ARRIVES"}
WIDEST_WRITE = 8  # registers one destination may cover (HMMA's, LDSM.x4's, a .128 load's and more)

_PREDICATE = re.compile(r"^@(!?)(U?P\d+|U?PT)\s+")
_BRACKETS = re.compile(r"(?<![A-Za-z0-9_\]])(desc\[UR\d+\])?\[([^\[\]]*)\]")
_REGISTER = re.compile(r"^(U?R)(\d+|Z)((?:\.[A-Z0-9]+)*)$")
_OPERAND_REGISTER = re.compile(r"\b(U?R|U?P)(\d+)\b")


def memory_access(text: str) -> MemoryAccess | None:
    """The address operands of one SASS instruction; None when it accesses no memory."""
    text = text.strip().rstrip(";").strip()
    predicate = None
    m = _PREDICATE.match(text)
    if m:
        name = m.group(2)
        if not name.endswith("PT"):
            predicate = (name, m.group(1) == "!", not name.startswith("U"))
        elif m.group(1) == "!":
            return None  # @!PT: never executes
        text = text[m.end():]
    opcode, _, rest = text.partition(" ")
    base, *modifiers = opcode.split(".")
    if base in UNDECODED:
        return MemoryAccess(opcode, predicate=predicate, notes=[f"{opcode}: {UNDECODED[base]}; not decoded"])
    if base == "LDGSTS":
        spaces = ["shared", "global"]
    elif base in SPACES:
        spaces = [SPACES[base]]
    else:
        return None
    size = next((SIZES[mod] for mod in modifiers if mod in SIZES), 4)
    extended = "E" in modifiers
    found = list(_BRACKETS.finditer(rest))
    access = MemoryAccess(opcode, predicate=predicate)
    if len(found) != len(spaces):
        access.notes.append(f"{opcode}: {len(found)} bracketed addresses where {len(spaces)} were expected; "
                            "not decoded")
        return access
    for space, match in zip(spaces, found):
        operand = _operand(match.group(0), match.group(2), space, size, extended and space in ("global", "generic"))
        if isinstance(operand, str):
            access.notes.append(operand)
        else:
            access.operands.append(operand)
    return access


def _operand(text: str, inside: str, space: str, size: int, extended: bool) -> Operand | str:
    wide = space in ("global", "generic")
    parts, offset = [], 0  # (text, R or UR, number, registers, scale)
    for part in re.findall(r"[+-]?[^+-]+", inside.replace(" ", "")):
        sign, word = (part[0], part[1:]) if part[0] in "+-" else ("+", part)
        value = immediate(word)
        if value is not None:
            offset += -value if sign == "-" else value
            continue
        m = _REGISTER.match(word)
        if m is None or sign == "-":
            return f"{text}: cannot read the term {part!r}; not decoded"
        kind, number, suffixes = m.group(1), m.group(2), m.group(3).split(".")[1:]
        if number == "Z":
            continue  # RZ, URZ
        scale = next((int(s[1:]) for s in suffixes if re.fullmatch(r"X\d+", s)), 1)
        parts.append([word, kind, int(number), 2 if "64" in suffixes else 1, scale, "U32" in suffixes])
    if extended and parts and not any(p[3] == 2 or p[5] for p in parts):
        parts[0][3] = 2  # pre-sm_75 text: `.E` makes the first register a 64-bit pair
    terms = tuple(Term(word, register_span(kind, number, count), kind == "R", 4 * count, scale=scale)
                  for word, kind, number, count, scale, _ in parts)
    return Operand(text, space, terms, offset, 64 if wide else 32, size)


def registers_written(text: str) -> set[str] | None:
    """The registers an instruction may write (a superset: a destination Rn counts with the registers
    after it that a wide result could fill); None for an instruction that changes where the thread goes."""
    text = text.strip().rstrip(";").strip()
    m = _PREDICATE.match(text)
    if m:
        text = text[m.end():]
    opcode, _, rest = text.partition(" ")
    base = opcode.split(".")[0]
    if base in CONTROL:
        return None
    if base in NO_DESTINATION or not rest.strip():
        return set()
    written: set[str] = set()
    # the destinations lead: `IADD3 R2, P0, P1, ...`, `SHFL.IDX PT, R3, ...`; sources may follow, which
    # makes this a superset
    for operand in rest.split(",")[:3]:
        for kind, number in _OPERAND_REGISTER.findall(operand):
            first = int(number)
            span = WIDEST_WRITE if kind in ("R", "UR") else 1
            written.update(f"{kind}{first + i}" for i in range(span))
    return written
