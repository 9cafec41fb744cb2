"""Intel GPU faults in gdb-oneapi's words.

An Intel GPU core holds a Linux siginfo per hardware thread (NT_SIGINFO): the signal, si_code and,
for SIGSEGV and SIGBUS, si_addr, the address that faulted (a page fault's address, as the driver's
error capture names it). gdb-oneapi reports "Program terminated with signal SIGSEGV, Segmentation
fault.", warns "The location reported for the signal may be inaccurate." and `print $_siginfo` shows si_addr (intel/gdb testsuite gdb.sycl/coregen-pagefault-*.exp).
Names and descriptions are GDB's (gdb/signals.def); si_code's meanings are Linux's (asm-generic/siginfo.h).
"""

from __future__ import annotations

from ..base import RaisedException

SIGNALS = {4: ("SIGILL", "Illegal instruction"), 5: ("SIGTRAP", "Trace/breakpoint trap"),
           6: ("SIGABRT", "Aborted"), 7: ("SIGBUS", "Bus error"), 8: ("SIGFPE", "Arithmetic exception"),
           11: ("SIGSEGV", "Segmentation fault")}
SI_CODES = {
    11: {1: "SEGV_MAPERR: address not mapped to object", 2: "SEGV_ACCERR: invalid permissions for mapped object"},
    7: {1: "BUS_ADRALN: invalid address alignment", 2: "BUS_ADRERR: nonexistent physical address",
        3: "BUS_OBJERR: object-specific hardware error"},
}

# what gdb-oneapi says when it opens a core stopped by a GPU page fault
LOCATION = "gdb-oneapi: the location reported for the signal may be inaccurate"


def exceptions(state, active_lanes) -> list[RaisedException]:
    stop = state.stop
    out = []
    for fault in stop.faults if stop is not None else []:
        wave = state.wave_by_id(fault.wave)
        name, words = SIGNALS.get(fault.code, (f"SIG{fault.code}", f"Unknown signal {fault.code}"))
        notes = [LOCATION] if fault.code in (7, 11) else []
        meaning = SI_CODES.get(fault.code, {}).get(fault.detail)
        if meaning:
            notes.append(f"si_code {fault.detail} ({meaning})")
        out.append(RaisedException(name, words, wave.id, active_lanes(wave).copy(), address=fault.address,
                                   notes=notes))
    return out
