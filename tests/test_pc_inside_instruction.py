"""A dump's PC inside an instruction: the Intel divergent_call example (tgllp -g) stops at 0x2a0, which
iga64's decoding of the whole function (16-byte instructions, 8-byte compacted ones, from the kernel's
start) puts inside an instruction that starts before it. Every view names that instruction:
`x/3i $pc` starts at it with `=>`, `disassemble` marks it, `info registers pc` gives the PC's own
`<symbol+offset>` and the instruction it lies in, and the stack frame's instructionPointerReference (what
the Disassembly View marks) is its address. The expectations come from iga64 and the ELF's symbol table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from dap_client import REPO_ROOT, launched
from disassembly_tools import iga64_listing, tool_or_skip

from aspace_dap.dap import machine
from aspace_dap.session import Session

DUMP = Path(REPO_ROOT) / "examples" / "opencl" / "dumps" / "divergent_call.tgllp"
PC = 0x2A0


@pytest.fixture(scope="module")
def decoded():
    """(session, frame, the iga64 listing of the kernel, the start and size of the instruction holding PC,
    the kernel symbol's value)."""
    s = Session.open(str(DUMP))
    disassembler = s.adapter.disassembler()
    tool = tool_or_skip(disassembler)
    program = s.program_for(s.wave())
    listing = iga64_listing(tool, program.path, disassembler.platform(program.code_object))
    starts = sorted(listing)
    assert PC not in listing  # the dump's PC starts no instruction
    start = max(a for a in starts if a < PC)
    size = starts[starts.index(start) + 1] - start
    assert start < PC < start + size and size == 16
    # ocloc's device ELF holds the one kernel in .text, from its first byte (no symbol names it: DWARF's
    # unit starts there, llvm-dwarfdump's DW_AT_low_pc 0 in examples/opencl/divergent_call.tgllp.elf.dwarf.txt)
    data = open(program.path, "rb").read()
    text = ELFFile(io.BytesIO(data[data.find(b"\x7fELF"):])).get_section_by_name(".text")
    base = text["sh_addr"]
    assert starts[0] == base
    frame = s.frames(s.focus_wave, s.focus_lane)[0]
    assert frame.runtime_pc == PC
    return s, frame, listing, start, size, base


def test_x_i_starts_at_the_instruction_holding_the_pc_and_marks_it(decoded):
    s, frame, listing, start, size, base = decoded
    lines = machine.examine_instructions(s, frame, 3, "$pc").splitlines()
    assert lines[0].startswith(f"=> 0x{start:x} <divergent+{start - base}>:")
    assert lines[0].split(":\t", 1)[1].split()[0] == listing[start].split()[0]  # `else`, as iga64 prints it
    assert not lines[1].startswith("=>") and not lines[2].startswith("=>")
    assert f"pc 0x{PC:x} is inside the {size}-byte instruction at 0x{start:x}" in lines[3]


def test_disassemble_marks_the_same_instruction(decoded):
    s, frame, _, start, _, _ = decoded
    out = machine.disassemble(s, frame, machine.is_disassemble("disassemble")).splitlines()
    marked = [line for line in out if line.startswith("=>")]
    assert len(marked) == 1 and marked[0].startswith(f"=> 0x{start:016x}")


def test_info_registers_pc_names_the_pc_and_its_instruction(decoded):
    s, frame, _, start, size, base = decoded
    line = machine.info_registers(s, frame, machine.is_info_registers("info registers pc"))
    # GDB's <symbol+offset> is the PC's own; the instruction it lies in is said beside it
    assert f"0x{PC:x} <divergent+{PC - base}>" in line
    assert f"inside the {size}-byte instruction at 0x{start:x} <divergent+{start - base}>" in line


def test_the_frame_references_that_instruction_for_the_disassembly_view(decoded):
    _, _, _, start, _, _ = decoded
    c, stopped = launched(DUMP)
    try:
        frame = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"][0]
        assert frame["instructionPointerReference"] == f"0x{start:x}"
        rows = c.request("disassemble", {"memoryReference": frame["instructionPointerReference"],
                                         "instructionOffset": -2, "instructionCount": 5})["instructions"]
        assert rows[2]["address"] == frame["instructionPointerReference"]
        assert frame["line"] == 28
    finally:
        c.request("disconnect")
        c.close()
