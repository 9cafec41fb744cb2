"""The Debug Console's machine-level commands through the real server, in GDB's forms: x/Ni, disassemble
(/s, /r, a function, a range), info registers (the focused lane's element, /a every lane) and p.

Expected instructions come from the vendor's tool at the command line, register values from the dump's
own files (manifest layout + register file), source lines from the source file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from dap_client import REPO_ROOT, RequestFailed, launched
from disassembly_tools import iga64_listing, llvm_objdump_listing, nvdisasm_listing, tool_or_skip

from aspace_dap.adapters import adapter_for
from aspace_dap.dap import repl
from aspace_dap.session import Session

EXAMPLES = Path(REPO_ROOT) / "examples"
AMD_DUMP = EXAMPLES / "divergent_call/dumps/gfx90a.O0"  # lane 7 of wave 0, in settle (line 12), v15 dumped
AMD_CODE = AMD_DUMP / "code/divergent_call.gfx90a.O0.co"


@pytest.fixture(scope="module")
def amd():
    c, stopped = launched(AMD_DUMP)
    c.frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
    yield c
    c.request("disconnect")
    c.close()


def repl_in(c, text, frame=0):
    return c.request("evaluate", {"expression": text, "context": "repl", "frameId": c.frames[frame]["id"]})["result"]


def symbol(path, name) -> tuple[int, int]:
    elf = ELFFile(open(path, "rb"))
    sym = elf.get_section_by_name(".symtab").get_symbol_by_name(name)[0]
    return sym["st_value"], sym["st_size"]


@pytest.fixture(scope="module")
def amd_listing():
    tool = tool_or_skip(adapter_for("amd").disassembler())
    return llvm_objdump_listing(tool, AMD_CODE, "gfx90a")


def test_x_i_at_pc(amd, amd_listing):
    pc = int(amd.frames[0]["instructionPointerReference"], 16)
    start, _ = symbol(AMD_CODE, "_Z6settlefii")
    lines = repl_in(amd, "x/3i $pc").splitlines()
    addresses = [a for a in sorted(amd_listing) if a >= pc][:3]
    assert len(lines) == 3
    for i, (line, address) in enumerate(zip(lines, addresses)):
        mark = "=> " if i == 0 else "   "
        assert line == f"{mark}0x{address:x} <_Z6settlefii+{address - start}>:\t{amd_listing[address]}"


def test_x_i_of_a_function_and_an_address(amd, amd_listing):
    start, _ = symbol(AMD_CODE, "_Z6settlefii")
    first = repl_in(amd, "x/2i settle").splitlines()
    assert first[0] == f"   0x{start:x} <_Z6settlefii>:\t{amd_listing[start]}"
    assert repl_in(amd, f"x/1i 0x{start:x}") == first[0]
    assert repl_in(amd, "x/2i _Z6settlefii") == "\n".join(first)
    after = repl_in(amd, "x/1i $pc + 4")  # an address inside an instruction shows that instruction
    assert after.startswith("=> ") or after.startswith("   0x")


def test_x_i_in_the_caller_frame_marks_its_return_address(amd, amd_listing):
    ret = int(amd.frames[1]["instructionPointerReference"], 16)
    line = repl_in(amd, "x/1i $pc", frame=1)
    assert line.startswith(f"=> 0x{ret:x} <_Z9divergentPKfPfi+") and line.endswith(amd_listing[ret])
    before = [a for a in sorted(amd_listing) if a < ret][-1]
    assert amd_listing[before].startswith("s_swappc_b64")


def test_disassemble_the_current_function(amd, amd_listing):
    pc = int(amd.frames[0]["instructionPointerReference"], 16)
    start, size = symbol(AMD_CODE, "_Z6settlefii")
    lines = repl_in(amd, "disassemble").splitlines()
    assert lines[0] == "Dump of assembler code for function settle:"
    assert lines[-1] == "End of assembler dump."
    body = lines[1:-1]
    expected = [a for a in sorted(amd_listing) if start <= a < start + size]
    assert len(body) == len(expected)
    for line, address in zip(body, expected):
        mark = "=> " if address == pc else "   "
        assert line == f"{mark}0x{address:016x} <+{address - start}>:\t{amd_listing[address]}"
    assert sum(line.startswith("=> ") for line in body) == 1


def test_disassemble_with_source(amd, amd_listing):  # (the listing: skipped without llvm-objdump)
    text = repl_in(amd, "disassemble /s")
    source = (EXAMPLES / "divergent_call/divergent_call.hip").read_text().splitlines()
    assert f"12\t{source[11]}" in text.splitlines()
    lines = text.splitlines()
    at = lines.index(f"12\t{source[11]}")
    pc_line = next(i for i, line in enumerate(lines) if line.startswith("=> "))
    assert at < pc_line and all(not line[:1].isdigit() for line in lines[at + 1:pc_line])
    assert lines[1].endswith("divergent_call.hip:")


def test_disassemble_raw_bytes_and_ranges(amd, amd_listing):  # (skipped without llvm-objdump)
    pc = int(amd.frames[0]["instructionPointerReference"], 16)
    data = ELFFile(open(AMD_CODE, "rb"))
    text = data.get_section_by_name(".text")
    marked = next(line for line in repl_in(amd, "disassemble /r").splitlines() if line.startswith("=> "))
    raw = marked.split(":\t", 1)[1].split("\t")[0].split()
    offset = pc - text["sh_addr"]
    assert bytes(int(b, 16) for b in raw) == text.data()[offset:offset + len(raw)]
    ranged = repl_in(amd, f"disassemble 0x{pc:x},+16").splitlines()
    assert ranged[0] == f"Dump of assembler code from 0x{pc:x} to 0x{pc + 16:x}:"
    assert ranged[1].startswith(f"=> 0x{pc:016x} <_Z6settlefii+")
    with pytest.raises(RequestFailed, match="unknown modifier"):
        repl_in(amd, "disassemble /q")


def _dumped_register(dump: Path, wave_file: str, name: str, lanes: int) -> np.ndarray:
    """A vector register's 32-bit elements, read from the dump's files as the format describes them."""
    manifest = json.loads((dump / "manifest.json").read_text())
    layout = manifest["register_layouts"]["layout0"]
    offset = 0
    for reg, size in layout:
        if reg == name:
            raw = (dump / wave_file).read_bytes()[offset:offset + size]
            return np.frombuffer(raw, "<u4").reshape(lanes)
        offset += size
    raise AssertionError(f"{name} not in the layout")


def test_info_registers_of_the_focused_lane(amd):
    v15 = _dumped_register(AMD_DUMP, "regs/wave-0.bin", "v15", 64)
    line = repl_in(amd, "info registers v15")
    assert re.fullmatch(rf"v15 +0x{int(v15[7]):08x} +{int(v15[7])}\t\(lane 7\)", line), line
    pc = int(amd.frames[0]["instructionPointerReference"], 16)
    start, _ = symbol(AMD_CODE, "_Z6settlefii")
    assert repl_in(amd, "info registers $pc") == f"{'pc':<15}{f'0x{pc:x}':<19}0x{pc:x} <_Z6settlefii+{pc - start}>"
    every = repl_in(amd, "info registers")
    assert every.splitlines()[0].startswith("pc ") and "v15" in every and "s33" in every
    with pytest.raises(RequestFailed, match="no register q9"):
        repl_in(amd, "info registers q9")


def test_info_registers_all_lanes(amd):
    v15 = _dumped_register(AMD_DUMP, "regs/wave-0.bin", "v15", 64)
    lines = repl_in(amd, "info registers /a v15").splitlines()
    assert lines[0].startswith("v15 (every lane; inactive lanes: ")
    cells = [c for line in lines[1:] for c in line.split("]", 1)[1].split()]
    assert cells == [f"0x{int(v):08x}" for v in v15]


def test_p_as_gdb_spells_it(amd):
    assert repl_in(amd, "p lane") == repl_in(amd, "print lane") == "7"
    assert repl_in(amd, "p/x lane") == "0x7"
    assert repl_in(amd, "p lane * 2") == "14"


def test_p_stays_an_expression_where_p_is_a_variable():
    c, stopped = launched(EXAMPLES / "scratch_struct/dumps/gfx90a.O0")  # `Particle p` in the kernel
    try:
        c.frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert repl_in(c, "p p.id") == "69"
        assert repl_in(c, "p.id + 1") == "70"
        with pytest.raises(RequestFailed, match="Particle"):  # p + 1: the struct p plus 1, as C reads it
            repl_in(c, "p + 1")
        assert repl_in(c, "p/x p.id") == "0x45"
    finally:
        c.request("disconnect")
        c.close()


def test_help_lists_the_machine_commands(amd):
    text = repl_in(amd, "help")
    for command in ("x/Ni ADDRESS", "disassemble", "/s", "/r", "info registers [NAME...]", "info registers /a",
                    "p EXPRESSION"):
        assert command in text


def test_help_names_builtins_that_evaluate(amd):
    """Every coordinate name the help offers answers in the Debug Console of a HIP dump."""
    text = repl_in(amd, "help")
    for name in ("threadIdx.x", "blockIdx", "blockDim", "gridDim", "warpSize", "get_local_id(0)", "$_lane",
                 "$_dispatch_pos", "$_workitem_global_id"):
        assert name in text
        assert repl_in(amd, name.replace("(n)", "(0)")) != ""
    assert repl_in(amd, "threadIdx.x") == repl_in(amd, "get_local_id(0)")


@pytest.mark.parametrize("dump, vendor", [("cuda/dumps/divergent_call.sm_90.G", "nvidia"),
                                          ("opencl/dumps/lds_tiles.pvc", "intel")])
def test_x_i_for_nvidia_and_intel(dump, vendor):
    session = Session.open(str(EXAMPLES / dump))
    disassembler = session.adapter.disassembler()
    tool = tool_or_skip(disassembler)
    program = session.program_for(session.wave())
    listing = nvdisasm_listing(tool, program.path) if vendor == "nvidia" else \
        iga64_listing(tool, program.path, disassembler.platform(program.code_object))
    frame = session.frames()[0]
    out = repl.run(session, "x/2i $pc", focus=lambda **k: None, frame=lambda: frame).splitlines()
    addresses = [a for a in sorted(listing) if a >= frame.runtime_pc][:2]
    assert out[0].startswith(f"=> 0x{addresses[0]:x} <") and out[0].endswith(f">:\t{listing[addresses[0]]}")
    assert out[1].startswith(f"   0x{addresses[1]:x} <") and out[1].endswith(f">:\t{listing[addresses[1]]}")
    text = repl.run(session, "disassemble", focus=lambda **k: None, frame=lambda: frame)
    assert f"=> 0x{frame.runtime_pc:016x}" in text


def test_missing_decoder_is_said_in_the_console(monkeypatch):
    monkeypatch.setenv("ASPACE_LLVM_OBJDUMP", "/nonexistent/llvm-objdump")
    session = Session.open(str(AMD_DUMP))
    frame = session.frames()[0]
    with pytest.raises(Exception, match="llvm-19"):
        repl.run(session, "x/2i $pc", focus=lambda **k: None, frame=lambda: frame)
    with pytest.raises(Exception, match="llvm-19"):
        repl.run(session, "disassemble", focus=lambda **k: None, frame=lambda: frame)
    assert "v15" in repl.run(session, "info registers v15", focus=lambda **k: None, frame=lambda: frame)
