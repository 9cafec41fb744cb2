"""`info registers` in a caller frame shows the caller's registers as unwound, as GDB does: the return
address as pc, a register the callee saved at its saved value, one it keeps at the dump's value, and
`<not saved>` where the callee may have changed it. Expectations come from the vendors' tools: the AMD
callee's prologue as llvm-objdump lists it (AMDGPU's calling convention: s30:31 hold the return address,
exec is the callee's branches'), the CUDA callee's CFI rows as llvm-dwarfdump --debug-frame prints them
(nvcc's register numbers: cudadebugger.h's class << 24 | index, class 5 = R, 2 = P)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dap_client import REPO_ROOT
from disassembly_tools import llvm_objdump_listing, tool_or_skip

from aspace_dap.dap import machine
from aspace_dap.expressions import evaluate_expression
from aspace_dap.session import Session

EXAMPLES = Path(REPO_ROOT) / "examples"
AMD = EXAMPLES / "divergent_call" / "dumps" / "gfx90a.O0"
NVIDIA = EXAMPLES / "cuda" / "dumps" / "divergent_call.sm_90.G"


def _registers(s, frame, names="") -> dict[str, str]:
    out = machine.info_registers(s, frame, machine.is_info_registers(f"info registers {names}"))
    rows = {}
    for line in out.splitlines():
        if line.startswith("("):
            continue
        name, rest = line.split(None, 1)
        rows[name] = rest
    return rows


def _value(row: str) -> int:
    return int(row.split()[0], 16)


def test_amd_caller_registers_follow_the_callees_prologue():
    s = Session.open(str(AMD))
    frames = s.frames(s.focus_wave, s.focus_lane)
    assert [f.name for f in frames] == ["settle", "divergent"]
    program = s.program_for(s.wave())
    listing = llvm_objdump_listing(tool_or_skip(s.adapter.disassembler()), program.path, program.code_object.processor)
    lo = frames[0].info.low_pc
    prologue = [listing[a] for a in sorted(listing) if lo <= a < frames[0].pc][:8]
    callee, caller = _registers(s, frames[0]), _registers(s, frames[1])
    # the return address: the instruction before it is the call
    before = max(a for a in listing if a < frames[1].pc)
    assert listing[before].startswith("s_swappc_b64 s[30:31]")
    assert _value(caller["pc"]) == frames[1].runtime_pc
    # `s_mov_b32 s33, s32`: the callee's frame pointer is the caller's stack pointer
    assert "s_mov_b32 s33, s32" in prologue
    assert _value(caller["s32"]) == _value(callee["s33"])
    # `v_writelane_b32 vN, s33, L`: the caller's s33 is lane L of vN
    [(vgpr, lane)] = [(int(m[1]), int(m[2])) for m in (re.match(r"v_writelane_b32 v(\d+), s33, (\d+)$", t)
                                                       for t in prologue) if m]
    data, valid = s.wave().registers.lane_view(f"v{vgpr}", s.wave().lanes)
    assert valid[lane].all() and _value(caller["s33"]) == int.from_bytes(bytes(data[lane]), "little")
    # `buffer_store_dword v15, off, s[0:3], s32 offset:N`: the caller's v15 of each lane is in its scratch at
    # the entry stack pointer (wave-scaled: / 64 per lane on gfx90a) + N
    [offset] = [int(m[1]) for m in (re.match(rf"buffer_store_dword v{vgpr}, off, s\[0:3\], s32 offset:(\d+)$", t)
                                    for t in prologue) if m]
    at = (_value(callee["s33"]) >> 6) + offset
    for focus in (frames[1].lane, 0, 63):
        want, ok = s.wave().private.read_lane(focus, at, 4)
        assert ok.all()
        got = _registers(s, s.frames(s.focus_wave, focus)[1], f"v{vgpr}")[f"v{vgpr}"]
        assert _value(got) == int.from_bytes(bytes(want), "little")
    # the return address is spent and exec is whatever the callee's branches left
    for name in ("exec", "s30", "s31"):
        assert caller[name] == "<not saved>", name
    assert callee["exec"] != "<not saved>"
    header = machine.info_registers(s, frames[1], machine.is_info_registers("info registers")).splitlines()[0]
    assert "frame #1" in header and "prologue analysis" in header
    # $registers in expressions read the same frame's values
    assert evaluate_expression(s, "$s32", frame=frames[1], lanes=[frames[1].lane]).scalar_bits()[0] == \
        [_value(caller["s32"])]
    assert evaluate_expression(s, "$pc", frame=frames[1], lanes=[frames[1].lane]).scalar_bits()[0] == \
        [frames[1].runtime_pc]
    assert evaluate_expression(s, "$s30", frame=frames[1], lanes=[frames[1].lane]).scalar_bits()[0] == [None]


def _cfi_row(cubin: Path, function_size: int, offset: int) -> dict[int, str]:
    """The register rules of the FDE covering a function of `function_size` bytes, at `offset` into it,
    from llvm-dwarfdump's unwind table."""
    tool = shutil.which("llvm-dwarfdump-19") or shutil.which("llvm-dwarfdump")
    if tool is None:
        pytest.skip("llvm-dwarfdump not installed: apt-get install llvm-19")
    text = subprocess.run([tool, "--debug-frame", str(cubin)], capture_output=True, text=True, check=True).stdout
    rows, inside = {}, False
    for line in text.splitlines():
        m = re.match(r"^\S+ \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", line)
        if m:
            inside = int(m[2], 16) - int(m[1], 16) == function_size
            continue
        m = re.match(r"^\s+0x([0-9a-f]+): CFA=\S+: (.*)$", line)
        if m and inside and int(m[1], 16) <= offset:
            rows = {int(r): rule for r, rule in re.findall(r"reg(\d+)=(\w+)", m[2])}
    assert rows, "no FDE row covers the stop"
    return rows


def test_cuda_caller_registers_follow_the_cfi():
    s = Session.open(str(NVIDIA))
    frames = s.frames(s.focus_wave, s.focus_lane)
    assert [f.name for f in frames] == ["settle", "divergent"]
    program = s.program_for(s.wave())
    size = frames[0].info.ranges[0][1] - frames[0].info.ranges[0][0]
    rules = _cfi_row(program.path, size, frames[0].pc - frames[0].info.low_pc)
    callee, caller = _registers(s, frames[0]), _registers(s, frames[1])
    assert _value(caller["pc"]) == frames[1].runtime_pc and caller["exec"] == "<not saved>"
    checked = {"undefined": 0, "same": 0}
    for name in callee:
        m = re.match(r"^(R|P)(\d+)$", name)
        if not m:
            continue
        rule = rules.get((5 if m[1] == "R" else 2) << 24 | int(m[2]))
        if rule == "undefined":
            assert caller[name] == "<not saved>", name
        elif rule == "same":
            assert caller[name] == callee[name], name
        else:
            continue
        checked[rule] += 1
    assert checked["undefined"] and checked["same"]  # both kinds are in this frame
