"""`bt` and `info frame` in the Debug Console: the focused lane's frames with their whole names.

The Call Stack shows a long templated name short (aspace_dap/names.py); here every name is whole, as
gdb's `bt` prints it (the qualified function, no parameter types), and `info frame` adds the
signature the mangled name gives (`void app::scatter_kernel<float, 4>(int const*, ...)`), the
mangled name itself, and how the frame stands to its neighbours (`inlined into frame 1`).
"""

from __future__ import annotations

from ..session import Frame


def _where(frame: Frame) -> str:
    return f" at {frame.file}:{frame.line}" if frame.file and frame.line else ""


def backtrace(frames: list[Frame], selected: int | None = None) -> str:
    """gdb's `bt`: `#N  0xPC in FUNCTION at FILE:LINE`, an inlined frame marked, the selected one starred."""
    lines = []
    for f in frames:
        mark = "*" if selected == f.index else " "
        inlined = " [inlined]" if f.info is not None and f.info.is_inlined else ""
        pc = "" if f.note is not None else f"0x{f.runtime_pc:x} in "
        lines.append(f"{mark}#{f.index:<2} {pc}{f.function}{inlined}{_where(f)}")
    return "\n".join(lines) or "No stack."


def info_frame(frames: list[Frame], frame: Frame) -> str:
    """gdb's `info frame`, for what a dump knows of the frame."""
    lines = [f"Stack level {frame.index}, wave {frame.wave_id}, lane {frame.lane}:"]
    if frame.note is not None:
        return "\n".join(lines + [f" {frame.note}"])
    where = f" ({frame.file}:{frame.line})" if frame.file and frame.line else ""
    lines.append(f" pc = 0x{frame.runtime_pc:x} in {frame.function}{where}")
    if frame.full_name != frame.function:
        lines.append(f" function: {frame.full_name}")
    linkage = frame.info.linkage_name if frame.info is not None else None
    if linkage and linkage != frame.function:
        lines.append(f" linkage name: {linkage}")
    outer = next((f for f in frames if f.index == frame.index + 1), None)
    if outer is not None:
        how = "inlined into" if frame.info is not None and frame.info.is_inlined else "called by"
        lines.append(f" {how} frame {outer.index} ({outer.function})")
    if frame.index > 0:
        lines.append(f" caller of frame {frame.index - 1}")
    if frame.info is None:
        lines.append(" no debug information covers this pc")
    return "\n".join(lines)
