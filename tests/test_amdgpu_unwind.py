"""Caller frames on real clang-15 AMDGPU code, whose CFI is empty: ABI + prologue analysis."""

import os

import numpy as np
import pytest

from aspace_dap.adapters.amdgpu_prologue import instruction_size, scan
from aspace_dap.codeobj import load_code_objects
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
O0 = os.path.join(ROOT, "examples", "divergent_call", "divergent_call.gfx90a.O0.co")
SETTLE = 0x30B0  # _Z6settlefii at -O0 (see divergent_call.gfx90a.O0.co.s.txt)


def test_instruction_sizes_walk_every_function_exactly():
    for name in os.listdir(os.path.join(ROOT, "examples")):
        folder = os.path.join(ROOT, "examples", name)
        if not os.path.isdir(folder):
            continue
        for f in os.listdir(folder):
            if not f.endswith(".co") or "gfx90a" not in f:
                continue
            co = load_code_objects(os.path.join(folder, f))[0]
            for sym in co.symbols.values():
                if sym.type != "FUNC" or not sym.size:
                    continue
                code = co.read_memory(sym.value, sym.size)
                pos = 0
                while pos < sym.size:
                    size = instruction_size(code, pos)
                    assert size is not None, (f, sym.name, hex(sym.value + pos))
                    pos += size
                assert pos == sym.size, (f, sym.name)


@pytest.mark.parametrize("stop,expect", [
    (0x30C4, ({}, {15: (32, 24)}, False)),  # CSR v15 stored at s32+24, s33 not parked yet
    (0x30CC, ({33: (15, 14)}, {15: (32, 24)}, False)),  # s33 parked in v15 lane 14
    (0x30D0, ({33: (15, 14)}, {15: (32, 24)}, True)),  # s33 = s32: the frame exists
])
def test_prologue_scan_of_settle(stop, expect):
    co = load_code_objects(O0)[0]
    code = co.read_memory(SETTLE, 0x345C - SETTLE)
    saved = scan(code, 0, stop - SETTLE)
    lanes, scratch, fp = expect
    assert {k: v for k, v in saved.sgpr_in_lane.items() if k in (30, 31, 33)} == lanes
    assert saved.vgpr_in_scratch == scratch and saved.frame_pointer_set == fp


def test_epilogue_restores_the_callers_frame_pointer():
    co = load_code_objects(O0)[0]
    code = co.read_memory(SETTLE, 0x345C - SETTLE)
    saved = scan(code, 0, 0x3444 - SETTLE)  # after v_readlane_b32 s33, v15, 14 at 0x343c
    assert 33 not in saved.sgpr_in_lane and not saved.frame_pointer_set


def test_session_shows_the_caller_frame(tmp_path):
    """Stopped inside settle at -O0: the kernel's frame comes back with its own frame pointer."""
    ret = 0x37DC  # after an s_swappc_b64 s[30:31] in the kernel
    kernel_fp = 0x400 << 6  # wave-scaled
    callee_fp = 0x800 << 6
    w = StateWriter("amd", "gfx90a", 64)
    co = w.add_code_object(O0)
    d = w.add_dispatch("_Z9divergentPKfPfi", co, (64, 1, 1), (64, 1, 1))
    wg = d.add_workgroup((0, 0, 0))
    v15 = np.zeros(64, np.uint32)
    v15[14] = kernel_fp
    regs = {"pc": np.uint64(0x3200), "exec": np.uint64(0xAAAAAAAAAAAAAAAA), "s30": np.uint32(ret & 0xFFFFFFFF),
            "s31": np.uint32(ret >> 32), "s32": np.uint32(callee_fp + 0x800), "s33": np.uint32(callee_fp),
            "v15": v15.tobytes()}
    wg.add_wave(0, 0, regs)
    w.set_focus(0, 1)
    path = w.write(tmp_path / "dump")
    s = Session(load_state(path))
    frames = s.frames(0, 1)
    assert [f.name for f in frames][:2] == ["settle", "divergent"]
    caller = frames[1]
    assert caller.runtime_pc == ret and caller.caller_state.how == "prologue analysis"
    index = caller.program.index
    assert caller.line == index.line_for_pc(ret - 1).line
    target = s.frame_target(caller, caller.info.dialect)
    s33 = target.read_register(32 + 33, np.array([1]))
    assert int.from_bytes(bytes(s33.data[0]), "little") == kernel_fp
    # VGPR0-31 are the callee's to clobber: unavailable in the caller, never the callee's values
    v0 = target.read_register(2560, np.array([1]))
    assert not v0.valid.any()
