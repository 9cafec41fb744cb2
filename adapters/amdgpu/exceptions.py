"""AMD GPU wave exceptions as ROCdbgapi decodes them and ROCgdb reports them.

A wave's exceptions are in its trap status register (TRAPSTS, saved in the context-save area with the
hardware registers), qualified by MODE's exception enables, and the trap handler leaves the id of an
`s_trap` in ttmp6 when it halts the wave. ROCdbgapi turns them into stop reasons
(`amdgcn_architecture_t::wave_get_state`, `signaled_exceptions`): XNACK_ERROR is a memory
violation (a page that does not exist or lacks the permission), MEM_VIOL alone an address error (the
aperture violation of older releases: an address outside the virtual address range),
ILLEGAL_INST an illegal instruction, an enabled EXCP bit a floating-point or integer exception, a
saved trap id 1/2/3 a breakpoint, assert trap, debug trap. ROCgdb reports each as a signal
(`amd-dbgapi-target.c`: ADDRESS_ERROR SIGBUS, MEMORY_VIOLATION SIGSEGV, ILLEGAL_INSTRUCTION SIGILL, the
arithmetic ones SIGFPE, traps SIGTRAP, an assert trap SIGABRT) and on a core file says "Thread N (...)
stopped because of SIGSEGV". TRAPSTS and the trap id are the same bits on gfx9, gfx10 and gfx11.

A wave stopped by an `s_trap` (a saved trap id: `__builtin_trap()` and failed asserts are trap 2, the
assert trap) is past it: the first-level trap handler (ROCr's trap_handler.s, "if caused by s_trap then
advance PC") adds 4 to the saved PC before it halts the wave, and ROCdbgapi reports that PC as the
wave's. The `s_trap` (SOPP, 4 bytes on every GFX9-GFX12 target) is the instruction before it: that
is the exception's instruction, the wave's PC where it stands.

ROCdbgapi reads TRAPSTS only of a wave whose ttmp6 says the trap handler stopped it; here its
exception bits count whatever ttmp6 says (they are the hardware's own record, and cores written
before the handler marked the wave keep them), the saved trap id only when ttmp6 says stopped.
"""

from __future__ import annotations

from . import cwsr
from ..base import RaisedException

TRAPSTS_XNACK_ERROR = 1 << 28
TRAPSTS_ADDR_WATCH = (1 << 7) | (1 << 12) | (1 << 13) | (1 << 14)
MODE_EXCP_EN_ADDR_WATCH = 1 << 19
# TRAPSTS.EXCP bit -> (stop reason, MODE.EXCP_EN bit that must be set)
ARITHMETIC = [(0, "FP_INVALID_OPERATION", 12), (1, "FP_INPUT_DENORMAL", 13), (2, "FP_DIVIDE_BY_0", 14),
              (3, "FP_OVERFLOW", 15), (4, "FP_UNDERFLOW", 16), (5, "FP_INEXACT", 17), (6, "INT_DIVIDE_BY_0", 18)]
TRAPS = {1: "BREAKPOINT", 2: "ASSERT_TRAP", 3: "DEBUG_TRAP"}
# stop reason -> (ROCgdb's signal, what it is, what it means); in ROCgdb's order of precedence for the signal
REASONS = {
    "ADDRESS_ERROR": ("SIGBUS", "address error (aperture violation)",
                      "an address outside the virtual address range"),
    "MEMORY_VIOLATION": ("SIGSEGV", "memory violation",
                         "a page that does not exist was accessed, or one without the permission"),
    "ILLEGAL_INSTRUCTION": ("SIGILL", "illegal instruction", ""),
    "FP_INPUT_DENORMAL": ("SIGFPE", "floating-point input denormal", ""),
    "FP_DIVIDE_BY_0": ("SIGFPE", "floating-point divide by zero", ""),
    "FP_OVERFLOW": ("SIGFPE", "floating-point overflow", ""),
    "FP_UNDERFLOW": ("SIGFPE", "floating-point underflow", ""),
    "FP_INEXACT": ("SIGFPE", "floating-point inexact result", ""),
    "FP_INVALID_OPERATION": ("SIGFPE", "floating-point invalid operation", ""),
    "INT_DIVIDE_BY_0": ("SIGFPE", "integer divide by zero", ""),
    "BREAKPOINT": ("SIGTRAP", "breakpoint", ""),
    "WATCHPOINT": ("SIGTRAP", "watchpoint", ""),
    "DEBUG_TRAP": ("SIGTRAP", "debug trap", ""),
    "TRAP": ("SIGTRAP", "trap instruction", ""),
    "ASSERT_TRAP": ("SIGABRT", "assert trap", ""),
}
IMPRECISE = {"MEMORY_VIOLATION", "ADDRESS_ERROR", "WATCHPOINT"}
S_TRAP_SIZE = 4
TRAP_PC_NOTE = ("the trap handler moved the wave's PC past the s_trap that stopped it (ROCdbgapi reports "
                "that PC): the s_trap is the instruction before it")
PRECISION = ("the wave's PC may be past the faulting instruction: the GPU goes on after it issues a memory "
             "operation (ROCgdb warns so unless precise memory reporting was on)")


def trap_instruction_pc(pc: int | None, ttmp6: int | None) -> int | None:
    """Where the s_trap that stopped a wave is: one s_trap before its PC; None when no s_trap stopped it."""
    if pc is None or ttmp6 is None or not ttmp6 & cwsr.TTMP6_STOPPED:
        return None
    if not (ttmp6 >> cwsr.TTMP6_TRAP_ID_SHIFT) & 0xF:
        return None
    return pc - S_TRAP_SIZE


def stop_reasons(trapsts: int, mode: int | None, ttmp6: int | None) -> list[str]:
    """ROCdbgapi's stop reasons of a wave, from its TRAPSTS, MODE and ttmp6 (None: not in the dump)."""
    reasons = []
    for bit, reason, enable in ARITHMETIC:
        if trapsts >> bit & 1 and mode is not None and mode >> enable & 1:
            reasons.append(reason)
    if trapsts & TRAPSTS_XNACK_ERROR:
        reasons.append("MEMORY_VIOLATION")
    elif trapsts & cwsr.TRAPSTS_MEM_VIOL:
        reasons.append("ADDRESS_ERROR")
    if trapsts & cwsr.TRAPSTS_ILLEGAL_INST:
        reasons.append("ILLEGAL_INSTRUCTION")
    if trapsts & TRAPSTS_ADDR_WATCH and mode is not None and mode & MODE_EXCP_EN_ADDR_WATCH:
        reasons.append("WATCHPOINT")
    if ttmp6 is not None and ttmp6 & cwsr.TTMP6_STOPPED:
        trap_id = (ttmp6 >> cwsr.TTMP6_TRAP_ID_SHIFT) & 0xF
        if trap_id:
            reasons.append(TRAPS.get(trap_id, "TRAP"))
    return reasons


def _signal(reasons: list[str]) -> str:
    for reason in REASONS:  # ROCgdb's order: the first that applies names the signal
        if reason in reasons:
            return REASONS[reason][0]
    return "SIGTRAP"


def exceptions(state, active_lanes) -> list[RaisedException]:
    layouts = (state.manifest or {}).get("register_layouts") or {}
    if layouts and not any(any(entry[0] == "trapsts" for entry in layout) for layout in layouts.values()):
        return []  # no wave of the dump keeps its trap status
    out = []
    focus = state.focus.wave if state.focus is not None else None
    for wave in state.waves:
        regs = wave.registers
        trapsts = regs.value("trapsts")
        if trapsts is None:
            continue
        reasons = stop_reasons(trapsts, regs.value("mode"), regs.value("ttmp6"))
        if not reasons or reasons == ["BREAKPOINT"] and (state.stop is None or state.stop.reason != "exception"):
            continue
        words = "; ".join(f"{REASONS[r][1]} ({r})" for r in reasons)
        words = words[:1].upper() + words[1:]
        notes = [f"{r}: {REASONS[r][2]}" for r in reasons if REASONS[r][2]]
        notes += [f"TRAPSTS {trapsts:#010x}"] + ([PRECISION] if IMPRECISE & set(reasons) else [])
        trap_pc = trap_instruction_pc(wave.pc, regs.value("ttmp6"))
        if trap_pc is not None:
            notes.append(TRAP_PC_NOTE)
        out.append(RaisedException(_signal(reasons), words, wave.id, active_lanes(wave).copy(), pc=trap_pc,
                                   notes=notes))
    out.sort(key=lambda r: r.wave != focus)
    return out
