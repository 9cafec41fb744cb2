"""CUDA exceptions in cuda-gdb's words.

A CUDA core's lane rows hold each lane's CUDBGException_t and the warp row the error PC of the
faulting instruction (the core reader keeps them as the stop's faults). cuda-gdb reports the
exception as a signal named CUDA_EXCEPTION_<n> (gdb/signals.def: CUDA_EXCEPTION_14 is "Warp Illegal
Address") and prints "CUDA Exception: <name>" and "The exception was triggered at PC <errorPC>"
(gdb/cuda/cuda-exceptions.c). A code cuda-gdb does not know is its "Device Unknown Exception",
CUDA_EXCEPTION_0, with the code in a warning.
"""

from __future__ import annotations

from aspace_dap.state.model import mask_to_lanes

from ..base import RaisedException
from .core_elf import EXCEPTIONS

# CUDBGException_t -> cuda-gdb's signal: CUDBG_EXCEPTION_LANE_ILLEGAL_ADDRESS (1) ... _WARP_ILLEGAL_ADDRESS (14)
# are GDB_SIGNAL_CUDA_* "CUDA_EXCEPTION_1" ... "CUDA_EXCEPTION_14", in the same order
SIGNALS = {code: f"CUDA_EXCEPTION_{code}" for code in EXCEPTIONS}
UNKNOWN = ("CUDA_EXCEPTION_0", "Device Unknown Exception")


def exceptions(state, active_lanes) -> list[RaisedException]:
    stop = state.stop
    out = []
    for fault in stop.faults if stop is not None else []:
        wave = state.wave_by_id(fault.wave)
        lanes = mask_to_lanes(fault.lanes, wave.lanes) if fault.lanes is not None else active_lanes(wave).copy()
        ident, name = (SIGNALS[fault.code], EXCEPTIONS[fault.code]) if fault.code in EXCEPTIONS else UNKNOWN
        notes = [] if fault.code in EXCEPTIONS else [f"cuda-gdb: Encountered unhandled device exception ({fault.code})"]
        out.append(RaisedException(ident, f"CUDA Exception: {name}", wave.id, lanes, pc=fault.pc, notes=notes))
    return out
