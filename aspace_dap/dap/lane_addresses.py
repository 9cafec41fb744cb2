"""Each lane's address at a memory instruction, in words: the lines the exception widget, the REPL's
`info fault` and `inspect` show.

Lanes are grouped as the addresses run: an arithmetic progression over the lanes reads
`32 lanes: 0x7f1000000000 + 0x400000·lane` (one address for all: `the same address`), what fits no
progression is listed lane by lane, past a few lines as a count and a span. Then which lanes fall
outside every region of memory the dump holds, which the dump cannot check and why, and which
lanes have no address and why.
"""

from __future__ import annotations

from ..session import AccessAddresses
from ..session.lane_addresses import OperandAddresses
from .waves import coalesce_ranges

MAX_GROUP_LINES = 6  # progressions shown; what is left is listed lane by lane, or summed up in one line
MAX_LINES = 10
MIN_PROGRESSION = 3  # lanes a progression needs to be shown as one (any two lanes make one)


def progressions(lanes: list[int], addresses: list[int], bits: int = 64) -> list[tuple[list[int], int, int]]:
    """(lanes, first address, step per lane) runs, lanes ascending: each run's addresses are
    first + step * (lane - its first lane), modulo 2**bits. Runs of the same progression that other
    lanes interrupt are one run (`31 lanes (0-6, 8-31)` with lane 7 apart); a lane that starts no run of
    MIN_PROGRESSION lanes is a run of its own."""
    mask = (1 << bits) - 1
    runs: list[tuple[list[int], int, int]] = []
    i = 0
    while i < len(lanes):
        j, step = i + 1, 0
        if j < len(lanes):
            delta = (addresses[j] - addresses[i]) & mask
            delta = delta - (1 << bits) if delta >> (bits - 1) else delta
            if delta % (lanes[j] - lanes[i]) == 0:
                step = delta // (lanes[j] - lanes[i])
                while j < len(lanes) and (addresses[i] + step * (lanes[j] - lanes[i])) & mask == addresses[j]:
                    j += 1
        if j - i < MIN_PROGRESSION:
            j, step = i + 1, 0
        runs.append((lanes[i:j], addresses[i], step))
        i = j
    merged: dict[tuple[int, int], tuple[list[int], int, int]] = {}
    out: list[tuple[list[int], int, int]] = []
    for run, first, step in runs:
        key = ((first - step * run[0]) & mask, step)
        if len(run) >= MIN_PROGRESSION and key in merged:
            merged[key][0].extend(run)
            continue
        entry = (list(run), first, step)
        if len(run) >= MIN_PROGRESSION:
            merged[key] = entry
        out.append(entry)
    return out


def _step(step: int) -> str:
    size = abs(step)
    text = str(size) if size < 0x1000 else f"{size:#x}"
    return f"{'−' if step < 0 else '+'} {text}·"


def _lanes(lanes: list[int], every: bool) -> str:
    count = f"{len(lanes)} lane{'s' if len(lanes) != 1 else ''}"
    return count if every else f"{count} ({coalesce_ranges(lanes)})" if len(lanes) > 1 else f"lane {lanes[0]}"


def group_lines(lanes: list[int], addresses: list[int], bits: int, executing: list[int]) -> list[str]:
    """The addresses as progressions and the rest, `executing` being every lane that ran the instruction."""
    runs = progressions(lanes, addresses, bits)
    lines, rest = [], []
    for run, first, step in runs:
        if len(run) < MIN_PROGRESSION or len(lines) >= MAX_GROUP_LINES:
            rest.extend(zip(run, [(first + step * (lane - run[0])) & ((1 << bits) - 1) for lane in run]))
            continue
        every = run == executing
        if step == 0:
            lines.append(f"{_lanes(run, every)}: {first:#x}, the same address")
            continue
        # from lane 0, or from the run's first lane: each line reads as the address of the lanes it names
        formula = f"{first:#x} {_step(step)}lane" if run[0] == 0 else f"{first:#x} {_step(step)}(lane - {run[0]})"
        lines.append(f"{_lanes(run, every)}: {formula}")
    if len(lines) + len(rest) <= MAX_LINES:
        lines.extend(f"lane {lane}: {address:#x}" for lane, address in rest)
    elif rest:
        spread = sorted(a for _, a in rest)
        lines.append(f"{_lanes(sorted(lane for lane, _ in rest), False)}: {len(set(spread))} addresses from "
                     f"{spread[0]:#x} to {spread[-1]:#x}, no progression")
    return lines


def operand_lines(report: AccessAddresses, op: OperandAddresses) -> list[str]:
    operand, uniform = op.operand, report.access.uniform
    size = f", {operand.size} byte{'s' if operand.size != 1 else ''}{'' if uniform else ' a lane'}" \
        if operand.size else ""
    where = "an offset" if operand.base else op.space
    if not report.lanes:
        return [f"Addresses of {operand.text} ({where}{size}): no lane accessed memory"]
    who = "the wave" if uniform else _lanes(report.lanes, False)
    lines = [f"Addresses of {operand.text} ({where}{size}), {who}:"]
    known = sorted(op.addresses)
    if known:
        if report.access.uniform:
            lines.append(f"  {op.addresses[known[0]]:#x}")
        else:
            lines.extend("  " + line for line in group_lines(known, [op.addresses[lane] for lane in known],
                                                             operand.bits, report.lanes))
    for why, lanes in op.unknown.items():
        lines.append(f"  {'The wave' if report.access.uniform else _lanes(lanes, lanes == report.lanes)}: "
                     f"<unavailable: {why}>")
    for window, lanes in op.windows.items():
        lines.append(f"  In {window}: {_lanes(lanes, False)}")
    checked = [lane for lane in known if not any(lane in ls for ls in op.not_checked.values())]
    for why, lanes in op.not_checked.items():
        lines.append(f"  Not checked against memory{'' if lanes == known else ' for ' + _lanes(lanes, False)}: {why}")
    if checked:
        noun = report.noun
        if op.outside:
            who = "the wave's address" if report.access.uniform else _lanes(op.outside, False)
            lines.append(f"  Outside every region the {noun} holds: {who}")
        else:
            lines.append(f"  In memory the {noun} holds: {'the address' if report.access.uniform else 'every address'}"
                         + (" checked" if len(checked) < len(known) else ""))
    return lines


def address_lines(report: AccessAddresses | None, error: str | None = None) -> list[str]:
    """The lines for a memory instruction's lanes; none when it accesses no memory."""
    if error:
        return [f"Lane addresses: <unavailable: {error}>"]
    if report is None:
        return []
    lines = []
    for op in report.operands:
        lines.extend(operand_lines(report, op))
    lines.extend(report.notes)
    if not report.operands and not report.notes:
        lines.append(f"{report.access.opcode}: its address operands are not decoded")
    return lines
