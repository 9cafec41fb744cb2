"""The addresses of Intel GPU memory messages, from IGA's text of a `send`.

An Intel GPU thread reaches memory through a message: `send`/`sendc`/`sends`/`sendsc` with an
execution size and channel offset (`(8|M0)`, `(16|M16)`), a destination, the message payload's first
register (src0, then src1 for split sends) and the extended and message descriptors; IGA decodes the
descriptors into the comment: `// wr:2+1, rd:0; a64 dword scattering write` (the payload's registers:
src0 "+" src1, `h` where src0 starts with a header) or, for the load/store cache of Xe-HPG on,
`// wr:4+2, rd:0; store.ugm.d32.a64` (with -Xprint-ldst IGA prints that as the instruction itself,
`store.ugm.d32.a64 (32|M0) [r9:4] r5:2`). IGA's MessageDecoder tells what each means (facts only):

- Scattered and untyped messages carry one address per channel in src0, packed from its first
  byte (after the header GRF when there is one): a 64-bit address each for the A64 messages ("a64 ...",
  `.a64`), a 32-bit offset each otherwise. Channel c of the instruction is element c, and belongs to
  lane (channel offset + c).
- A 32-bit offset counts from the surface its binding table index names (the descriptor's low byte for
  the legacy data-port messages, `bti[N]` for LSC); index 0xFE (SLM) is shared local memory, 0xFF and
  0xFD (stateless) the general state base; LSC's `.slm` is shared local memory.
- Block messages (oword/hword block, LSC's transposed `x..t` forms) take one address for the whole
  message, from the header or src0's first element.

Typed, media-block, 2D-block and scratch-block messages address by coordinates or a header this
module does not decode: they are named, not guessed.
"""

from __future__ import annotations

import re

from ..addressing import MemoryAccess, Operand, Term

SLM_BTI, STATELESS_BTIS = 0xFE, (0xFF, 0xFD)

_SEND = re.compile(r"^(?:\((?P<pred>[^)]*)\)\s+)?(?P<op>sends?c?)(?:\.(?P<sfid>\w+))?\s+"
                   r"\((?P<exec>\d+)\|M(?P<chan>\d+)\)\s+(?P<operands>[^{/]*?)\s*(?:\{[^}]*\})?\s*"
                   r"(?://\s*(?P<note>.*))?$")
_LDST = re.compile(r"^(?:\((?P<pred>[^)]*)\)\s+)?(?P<op>(?:load|store|atomic)\w*\.(?:ugm|ugml|slm|tgm)\S*)\s+"
                   r"\((?P<exec>\d+)\|M(?P<chan>\d+)\)\s+(?P<operands>[^{/]*?)\s*(?:\{[^}]*\})?\s*(?://.*)?$")
_PAYLOAD = re.compile(r"wr:(\d+)(h?)\+")
_LSC = re.compile(r"\b((?:load|store|atomic)\w*)\.(ugm|ugml|slm|tgm)((?:\.[\w\[\]]+)*)")
_DATA = re.compile(r"^d(8|16|32|64)(?:u32)?(?:x(\d+))?(t?)$")


def memory_access(text: str, grf_bytes: int) -> MemoryAccess | None:
    """The per-lane addresses of one IGA instruction; None when it is not a memory message."""
    text = text.strip()
    m = _LDST.match(text)
    if m:
        inside = re.search(r"\[(r\d+)(?::\d+)?\]", m.group("operands"))
        bti = re.search(r"\b(bti|bss|ss)\[([^\]]*)\]\[", m.group("operands"))
        message = m.group("op") + (f".{bti.group(1)}[{bti.group(2)}]" if bti else "")
        return _lsc(m, m.group("op"), message, inside.group(1) if inside else None, 0, grf_bytes)
    m = _SEND.match(text)
    if m is None:
        return None
    operands = m.group("operands").split()
    note = m.group("note") or ""
    if len(operands) < 4:
        return None
    src0 = operands[1].split(":")[0]
    descriptor = int(operands[-1], 16) if re.fullmatch(r"0x[0-9A-Fa-f]+", operands[-1]) else None
    payload = _PAYLOAD.search(note)
    header = 1 if payload and payload.group(2) else 0
    opcode = m.group("op") + (f".{m.group('sfid')}" if m.group("sfid") else "")
    lsc = _LSC.search(note)
    if lsc:
        return _lsc(m, opcode, lsc.group(0), src0, header, grf_bytes)
    return _legacy(m, opcode, note, src0, header, descriptor, grf_bytes)


def _access(m, opcode: str) -> MemoryAccess:
    access = MemoryAccess(opcode, channels=(int(m.group("chan")), int(m.group("exec"))))
    pred = (m.group("pred") or "").replace(" ", "")
    flags = pred.replace("W&", "").replace("W", "")
    access.every_channel = "W" in pred  # NoMask
    if flags:
        access.notes.append(f"predicated on {flags}: lanes whose flag bit is clear did not access memory "
                            "(the flag is not applied here)")
    return access


def _payload_term(src0: str, header: int, first_lane: int, lanes: int, element: int, grf_bytes: int) -> Term:
    start = int(src0[1:]) + header
    count = max(1, -(-lanes * element // grf_bytes))
    shown = f"r{start}" if count == 1 else f"r{start}-r{start + count - 1}"
    return Term(shown, tuple(f"r{start + i}" for i in range(count)), True, element, payload=True,
                first_lane=first_lane)


def _lsc(m, opcode: str, message: str, src0: str | None, header: int, grf_bytes: int) -> MemoryAccess:
    access = _access(m, opcode)
    op, memory, tail = _LSC.match(message).groups()
    fields = [f for f in tail.split(".") if f]
    if memory == "tgm" or "block2d" in op or src0 is None:
        access.notes.append(f"{message}: a typed or 2D-block message addresses by coordinates; not decoded")
        return access
    address_bits = next((int(f[1:]) for f in fields if f in ("a16", "a32", "a64")), 32)
    data = next((_DATA.match(f) for f in fields if _DATA.match(f)), None)
    size = int(data.group(1)) // 8 * int(data.group(2) or 1) if data else None
    transposed = bool(data and data.group(3))
    bti = next((f for f in fields if f.startswith(("bti[", "bss[", "ss["))), None)
    element = 8 if address_bits == 64 else 4
    first, lanes = (access.channels or (0, 1))
    if transposed:
        access.uniform = True
        lanes = 1
    term = _payload_term(src0, header, first, lanes, element, grf_bytes)
    if memory == "slm":
        space, base = "local", None
    elif address_bits == 64:
        space, base = "global", None
    else:
        space = "surface"
        base = (f"binding table entry {bti[4:-1]}'s surface" if bti and bti.startswith("bti[") else
                f"the surface state {bti}" if bti else "the A32 flat address base")
    access.operands.append(Operand(term.text, space, (term,), 0, address_bits, size, base))
    return access


def _legacy(m, opcode: str, note: str, src0: str, header: int, descriptor: int | None,
            grf_bytes: int) -> MemoryAccess | None:
    description = note.split(";")[-1].strip()
    words = description.split()
    if not any(w in words for w in ("read", "write", "atomic")) and "atomic" not in description:
        return None  # a fence, a barrier, the end of the thread, a sampler or render message
    access = _access(m, opcode)
    if re.search(r"block|scratch|media|transpose|(?<!un)typed", description):
        access.notes.append(f"{description}: the address is in the message header; not decoded")
        return access
    a64 = "a64" in words
    element = 8 if a64 else 4
    size = 1 if "byte" in words else 8 if "qword" in words else 4 if "dword" in words else None
    first, lanes = access.channels
    term = _payload_term(src0, header, first, lanes, element, grf_bytes)
    if a64:
        access.operands.append(Operand(term.text, "global", (term,), 0, 64, size))
        return access
    bti = descriptor & 0xFF if descriptor is not None else None
    if bti == SLM_BTI:
        space, base = "local", None
    elif bti in STATELESS_BTIS:
        space, base = "surface", "the general state base (a stateless A32 offset)"
    else:
        space, base = "surface", (f"binding table entry {bti}'s surface" if bti is not None else "its surface")
    access.operands.append(Operand(term.text, space, (term,), 0, 32, size, base))
    return access
