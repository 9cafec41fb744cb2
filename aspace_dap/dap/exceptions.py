"""exceptionInfo: a wave's exception for the client's exception widget (VS Code shows it under the
stopped line), in the vendor's words, with the faulting instruction, each lane's address at it when it
accesses memory (lane_addresses.py), the faulting address where the format records it, and the lanes
and waves that raised the same (as `info waves` lists wave ids). The REPL's `info fault` prints the same."""

from __future__ import annotations

from ..errors import AspaceError
from ..session import ExceptionDetail
from .connection import state_of
from .dispatch import HandlerTable
from .lane_addresses import address_lines
from .refs import wave_of_thread
from .waves import coalesce_ranges

requests = HandlerTable()


@requests.request("exceptionInfo", required={"threadId": int})
def exception_info(ctx, args):
    s = state_of(ctx).need()
    wave = wave_of_thread(s, args["threadId"])
    detail = s.exception_detail(wave.id)
    if detail is None:
        raise AspaceError(f"{s.thread_name(wave)} raised no exception")
    return exception_body(detail)


def _lanes_and_waves(lanes: int, waves: list[int]) -> str:
    return (f"{lanes} lane{'s' if lanes != 1 else ''} in {len(waves)} wave{'s' if len(waves) != 1 else ''} "
            f"(wave{'s' if len(waves) != 1 else ''} {coalesce_ranges(waves)})")


def instruction_text(d: ExceptionDetail) -> str:
    """`0x1a30 <kernel+0x30>: global_store_dword ... (fault.hip:14)`; without a disassembler the
    instruction's address, symbol and source line."""
    parts = [f"{d.instruction_pc:#x}" + (f" <{d.symbol}>" if d.symbol else "")]
    if d.instruction:
        parts[0] += f": {d.instruction}"
    if d.source:
        parts.append(f"({d.source})")
    return " ".join(parts)


def exception_lines(d: ExceptionDetail) -> tuple[str, list[str]]:
    """The description and the detail lines (the first names the instruction)."""
    r = d.raised
    recorded = r.pc is not None  # the format names the faulting instruction (CUDA's error PC)
    where = " ".join(p for p in (f"in {d.function}" if d.function else None,
                                 f"({d.source})" if d.source else None) if p)
    verb = "The exception was triggered at PC" if recorded else "The wave stopped at PC"
    description = f"{r.description}. {verb} {d.instruction_pc:#x}" + (f" {where}" if where else "") + "."
    # the format names the faulting instruction, or the wave's PC stands for it (AMD and Intel report
    # faults late: their notes say so)
    lines = [f"{'Faulting instruction' if recorded else 'Instruction at the stop'}: {instruction_text(d)}"]
    if d.chain:  # the whole inline chain, innermost first: what nvdisasm -gi prints above the instruction
        lines.append("Inlined there, innermost first:")
        lines.extend(f"  {function}" + (f" ({at})" if at else "") for function, at in d.chain)
    if d.stopped_pc is not None:
        lines.append(f"The lanes stand at {d.stopped_pc:#x}, past the faulting instruction")
    if r.address is not None:
        lines.append(f"Faulting address: {r.address:#x}")
    lines.extend(address_lines(d.addresses, d.addresses_error))
    lines.append(f"Raised by {_lanes_and_waves(d.same.lanes, d.same.wave_ids)}")
    for other in d.others:
        lines.append(f"Also {other.id} ({other.description}) in {_lanes_and_waves(other.lanes, other.wave_ids)}")
    lines.extend(r.notes)
    return description, lines


def exception_body(d: ExceptionDetail) -> dict:
    description, lines = exception_lines(d)
    r = d.raised
    return {"exceptionId": r.id, "description": description, "breakMode": "always",
            "details": {"message": lines[0], "typeName": r.id, "stackTrace": "\n".join(lines)}}


def fault_text(s, wave_id: int) -> str:
    """A wave's exception as the REPL's `info fault` and `inspect` print it: the exception widget's text."""
    detail = s.exception_detail(wave_id)
    if detail is None:
        return f"{s.thread_name(s.wave(wave_id))} raised no exception"
    description, lines = exception_lines(detail)
    return "\n".join([f"{detail.raised.id}: {description}"] + lines)
