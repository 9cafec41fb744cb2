"""The `disassemble` request: rows of instructions around a code address, as the session's disassembly
part decodes them (the vendor's own tool), with bytes, symbol+offset and the line table's source.

Clients (VS Code's Disassembly View) ask with the `instructionPointerReference` of a stack frame and
page up and down with `instructionOffset`; every answer has exactly `instructionCount` rows, rows
without code are `??` rows with the `invalid` hint (address "-1" below address 0)."""

from __future__ import annotations

import os

from ..errors import AspaceError, LimitExceeded
from ..session import Instruction
from ..session.disassembly import MAX_INSTRUCTIONS
from .connection import state_of
from .dispatch import HandlerTable

requests = HandlerTable()


def parse_code_address(text: str) -> int:
    """A code address as clients send it: `0x4a18` (what instructionPointerReference says) or decimal."""
    t = text.strip()
    try:
        value = int(t, 16) if t[:2].lower() == "0x" else int(t, 10)
    except ValueError:
        raise AspaceError(f"memoryReference {text[:40]!r} is not a code address (like 0x4a18)") from None
    if value < 0:
        raise AspaceError(f"memoryReference {text[:40]!r} is below address 0")
    return value


def instruction_body(row, resolve_symbols: bool = True, openable=lambda path: True) -> dict:
    """One DisassembledInstruction; its location only where `openable` says the file is here."""
    if not isinstance(row, Instruction):
        return {"address": "-1" if row.address is None else f"0x{row.address:x}", "instruction": row.text,
                "presentationHint": "invalid"}
    body = {"address": f"0x{row.address:x}", "instruction": row.text}
    if row.data is not None:
        body["instructionBytes"] = " ".join(f"{b:02x}" for b in row.data)
    if resolve_symbols and row.where is not None:
        body["symbol"] = row.display_where
    if row.file and row.line and openable(row.file):
        body["location"] = {"name": os.path.basename(row.file), "path": row.file}
        body["line"] = row.line
        if row.column:
            body["column"] = row.column
    if not row.decoded:
        body["presentationHint"] = "invalid"
    return body


@requests.request("disassemble", required={"memoryReference": str, "instructionCount": int},
                  optional={"offset": int, "instructionOffset": int, "resolveSymbols": bool})
def disassemble(ctx, args):
    s = state_of(ctx).need()
    count = args["instructionCount"]
    if not 0 <= count <= MAX_INSTRUCTIONS:
        raise LimitExceeded(f"disassemble of {count} instructions: ask for 0 to {MAX_INSTRUCTIONS} at a time")
    address = parse_code_address(args["memoryReference"]) + (args.get("offset") or 0)
    rows = s.instructions(max(address, 0), count, args.get("instructionOffset") or 0)
    resolve = args.get("resolveSymbols", True)
    return {"instructions": [instruction_body(r, resolve, s.openable) for r in rows]}
