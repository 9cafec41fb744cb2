"""Disassembly of the example dumps, per vendor, against the vendor's own tool run at the command line.

Around every frame's PC the session's rows must be the instructions llvm-objdump, nvdisasm or iga64
list for the same code object file: the same addresses and texts, the file's bytes, addresses that
strictly increase; a negative instruction offset must land on the start of the instruction the tool
lists that many before; a caller frame's reference is the address after its call instruction. A
missing tool skips with the reason printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dap_client import REPO_ROOT, launched
from names_tools import cxxfilt, plain_function
from disassembly_tools import (file_bytes, iga64_listing, llvm_objdump_listing, nvdisasm_encodings, nvdisasm_listing,
                               tool_or_skip)

from aspace_dap.adapters import adapter_for
from aspace_dap.session import Instruction, Invalid, Session
from aspace_dap.state import load_state

EXAMPLES = Path(REPO_ROOT) / "examples"
AMD = ["divergent_call/dumps/clang19.gfx90a.O0", "divergent_call/dumps/clang19.gfx942.O0",
       "divergent_call/dumps/clang19.gfx1100.O2", "divergent_call/dumps/clang15.gfx1030.O0",
       "divergent_call/dumps/gfx90a.O2", "lds_tiles/dumps/gfx90a.O2"]
NVIDIA = ["cuda/dumps/divergent_call.sm_80.G", "cuda/dumps/divergent_call.sm_90.G", "cuda/dumps/divergent_call.sm_120.G",
          "cuda/dumps/lds_tiles.sm_90.G"]
INTEL = ["opencl/dumps/divergent_call.tgllp.O0", "opencl/dumps/lds_tiles.pvc", "opencl/dumps/scratch_struct.acm-g10"]
CALLS = {"amd": ("s_swappc_b64", "s_call_b64"), "nvidia": ("CALL",)}
WINDOW = 32  # instructions before and after the PC: 64 around it, as the benchmark asks


def listing(session: Session, program) -> dict[int, str]:
    """What the vendor's tool prints for this program's code object file, by ELF address."""
    vendor = session.state.target.vendor
    disassembler = session.adapter.disassembler()
    tool = tool_or_skip(disassembler)
    if vendor == "amd":
        return llvm_objdump_listing(tool, program.path, program.code_object.processor)
    if vendor == "nvidia":
        return nvdisasm_listing(tool, program.path)
    return iga64_listing(tool, program.path, disassembler.platform(program.code_object))


def check_window(session: Session, pc: int) -> tuple[list[Instruction], dict[int, str]]:
    program = session.program_for(session.wave())
    expected = listing(session, program)
    rows = session.instructions_around(pc, WINDOW, WINDOW)
    assert len(rows) == 2 * WINDOW + 1
    code = [r for r in rows if isinstance(r, Instruction)]
    assert any(r.address == pc for r in code), "the PC's own instruction is shown"
    assert rows[WINDOW].address == pc
    encodings = None
    if session.state.target.vendor == "nvidia":  # a cubin's sections are laid out by nvdisasm as by the driver
        encodings = nvdisasm_encodings(tool_or_skip(session.adapter.disassembler()), program.path)
    for row in code:
        elf = row.address - program.load_address
        assert elf in expected, f"0x{row.address:x} is not where the tool lists an instruction"
        assert row.text == expected[elf], (hex(row.address), row.text, expected[elf])
        assert row.data == (encodings[elf] if encodings is not None else file_bytes(program.path, elf, row.size))
    addresses = [r.address for r in rows if r.address is not None]
    assert addresses == sorted(set(addresses)), "addresses strictly increase"
    for a, b in zip(code, code[1:]):
        assert a.address + a.size == b.address, "each instruction ends where the next begins"
    return code, expected


def check_negative_offsets(session: Session, pc: int, expected: dict[int, str]) -> None:
    program = session.program_for(session.wave())
    starts = sorted(expected)
    at = starts.index(pc - program.load_address)
    for k in (1, 2, 3, 7, 20, 50):
        row = session.instructions(pc, 1, -k)[0]
        if at - k < 0:
            assert isinstance(row, Invalid)
            continue
        assert row.address - program.load_address == starts[at - k], f"{k} instructions before the PC"


def check_vendor(dump: str) -> None:
    session = Session.open(str(EXAMPLES / dump))
    frames = session.frames()
    for frame in frames:
        code, expected = check_window(session, frame.runtime_pc)
        check_negative_offsets(session, frame.runtime_pc, expected)
        if frame.index > 0:  # a caller's reference is its return address: right after the call
            before = session.instructions(frame.runtime_pc, 1, -1)[0]
            assert before.address + before.size == frame.runtime_pc
            assert before.text.startswith(CALLS[session.state.target.vendor]), before.text
    assert session.disassembly.decoder_runs <= len(frames) + 4  # a function is decoded once


@pytest.mark.parametrize("dump", AMD)
def test_amd_rows_are_llvm_objdumps(dump):
    check_vendor(dump)


@pytest.mark.parametrize("dump", NVIDIA)
def test_nvidia_rows_are_nvdisasms(dump):
    check_vendor(dump)


@pytest.mark.parametrize("dump", INTEL)
def test_intel_rows_are_igas(dump):
    check_vendor(dump)


def test_loaded_elsewhere_rows_at_runtime_addresses(tmp_path):
    """A ROCm core places the code object at a load address: rows are at runtime addresses, their text
    the tool's at the ELF addresses."""
    from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
    bias = 0x7F2A00000000
    with load_state(EXAMPLES / "lds_tiles/dumps/gfx90a.O0") as state:
        core = write_rocm_core(state, tmp_path / "gpucore", load_bias=bias)
    session = Session.open(str(core))
    pc = session.frames()[0].runtime_pc
    assert pc > bias
    code, _ = check_window(session, pc)
    assert all(r.address > bias for r in code)


def test_decoded_once_per_function():
    session = Session.open(str(EXAMPLES / AMD[0]))
    tool_or_skip(session.adapter.disassembler())
    pc = session.frames()[0].runtime_pc
    session.instructions_around(pc, 20, 20)
    runs = session.disassembly.decoder_runs
    for _ in range(3):
        session.instructions_around(pc, 10, 30)
        session.function_instructions(pc)
    assert session.disassembly.decoder_runs == runs


def test_before_the_first_and_after_the_last_instruction_are_invalid_rows():
    session = Session.open(str(EXAMPLES / NVIDIA[1]))  # the cubin's code starts at address 0
    tool_or_skip(session.adapter.disassembler())
    rows = session.instructions(0x0, 4, -2)
    assert [type(r) for r in rows] == [Invalid, Invalid, Instruction, Instruction]
    assert rows[0].address is None and rows[2].address == 0 and rows[3].address == 0x10
    last = session.function_instructions(session.frames()[1].runtime_pc)[1][-1]
    after = session.instructions(last.address, 3)
    assert isinstance(after[0], Instruction) and [r.address for r in after[1:]] == [last.address + 16, last.address + 32]
    assert all(isinstance(r, Invalid) and r.text == "??" for r in after[1:])
    nowhere = session.instructions(0xDEAD0000, 2)
    assert [r.address for r in nowhere] == [0xDEAD0000, 0xDEAD0010] and all(isinstance(r, Invalid) for r in nowhere)


@pytest.mark.parametrize("vendor, dump, env, package", [
    ("amd", AMD[0], "ASPACE_LLVM_OBJDUMP", "llvm-19"),
    ("nvidia", NVIDIA[1], "ASPACE_NVDISASM", "nvidia-cuda-nvdisasm"),
    ("intel", INTEL[0], "ASPACE_IGA64", "libigc-tools")])
def test_missing_decoder_says_which_package_and_nothing_else_breaks(monkeypatch, vendor, dump, env, package):
    monkeypatch.setenv(env, "/nonexistent/tool")
    session = Session.open(str(EXAMPLES / dump))
    frame = session.frames()[0]
    rows = session.instructions_around(frame.runtime_pc, 2, 2)
    assert all(isinstance(r, Instruction) and not r.decoded for r in rows)
    assert all(package in r.text for r in rows)
    step = adapter_for(vendor).disassembler().min_size
    assert [r.address for r in rows] == sorted(r.address for r in rows)
    assert all(b.address - a.address == step for a, b in zip(rows, rows[1:]))
    assert session.variables(frame)  # the rest of the session works
    assert session.read_variable(frame, session.variables(frame)[0])


# ---------------------------------------------------------------------------------------- over DAP


def test_dap_disassemble_as_vs_code_asks():
    c, stopped = launched(EXAMPLES / AMD[0])
    try:
        assert c.capabilities["supportsDisassembleRequest"] is True
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert len(frames) == 2 and all("instructionPointerReference" in f for f in frames)
        session = Session.open(str(EXAMPLES / AMD[0]))
        tool_or_skip(session.adapter.disassembler())
        for frame, mine in zip(frames, session.frames()):
            ref = frame["instructionPointerReference"]
            assert int(ref, 16) == mine.runtime_pc
            # VS Code's first page: 50 before, 50 after
            body = c.request("disassemble", {"memoryReference": ref, "offset": 0, "instructionOffset": -50,
                                             "instructionCount": 100, "resolveSymbols": True})
            rows = body["instructions"]
            assert len(rows) == 100
            assert rows[50]["address"] == ref
            expected = session.instructions(mine.runtime_pc, 100, -50)
            for row, want in zip(rows, expected):
                assert row["address"] == f"0x{want.address:x}"
                assert row["instruction"] == want.text
                if isinstance(want, Instruction):
                    assert row["instructionBytes"] == " ".join(f"{b:02x}" for b in want.data)
                    assert row["symbol"] == want.display_where
                    assert want.display_where.startswith(plain_function(cxxfilt(want.symbol)[0]))
                    if want.line:
                        assert row["line"] == want.line and row["location"]["path"] == want.file
        # the PC's row names the stop's source line (divergent_call.hip:12)
        pc_row = c.request("disassemble", {"memoryReference": frames[0]["instructionPointerReference"],
                                           "instructionCount": 1})["instructions"][0]
        assert pc_row["line"] == frames[0]["line"] and pc_row["location"]["path"] == frames[0]["source"]["path"]
        # past the code: invalid rows, exactly as many as asked
        far = c.request("disassemble", {"memoryReference": "0x7fff00000000", "instructionCount": 3})["instructions"]
        assert [r["presentationHint"] for r in far] == ["invalid"] * 3
    finally:
        c.request("disconnect")
        c.close()


def test_dap_cuda_frames_reference_their_instructions():
    c, stopped = launched(EXAMPLES / NVIDIA[1])
    try:
        session = Session.open(str(EXAMPLES / NVIDIA[1]))
        tool_or_skip(session.adapter.disassembler())
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        call = c.request("disassemble", {"memoryReference": frames[1]["instructionPointerReference"],
                                         "instructionOffset": -1, "instructionCount": 2})["instructions"]
        assert call[0]["instruction"].startswith("CALL") and call[1]["address"] == frames[1]["instructionPointerReference"]
        # VS Code's first page at a PC near address 0: rows before the code have address -1
        rows = c.request("disassemble", {"memoryReference": frames[0]["instructionPointerReference"],
                                         "instructionOffset": -50, "instructionCount": 100})["instructions"]
        pc = int(frames[0]["instructionPointerReference"], 16)
        assert rows[50]["address"] == f"0x{pc:x}"
        assert [r["address"] for r in rows[:50 - pc // 16]] == ["-1"] * (50 - pc // 16)
        assert rows[50 - pc // 16]["address"] == "0x0"
    finally:
        c.request("disconnect")
        c.close()


def test_bad_memory_reference_is_a_clear_error():
    c, _ = launched(EXAMPLES / AMD[0])
    try:
        answer = c.request_raw("disassemble", {"memoryReference": "local#0x40", "instructionCount": 2})
        assert not answer["success"] and "not a code address" in answer["message"]
        answer = c.request_raw("disassemble", {"memoryReference": "0x0", "instructionCount": 10**9})
        assert not answer["success"]
        assert c.request("threads")["threads"]  # still serving
    finally:
        c.request("disconnect")
        c.close()


def test_one_request_runs_the_tool_at_most_twice_per_section_it_reaches():
    """Rows across every function of a code object (lds_tiles -O0 has 35 units between its function
    symbols; each ran llvm-objdump once): the unit of the address, then the rest of the range in one
    run; none when asked again."""
    session = Session.open(str(EXAMPLES / "lds_tiles/dumps/gfx90a.O0"))
    tool_or_skip(session.adapter.disassembler())
    program = session.program_for(session.wave())
    code = session.disassembly._code(program.code_object)
    start = program.load_address + code.units[0][0]
    assert len(code.units) > 30 and len(code.sections) == 1
    rows = session.instructions(start, 20_000)
    assert session.disassembly.decoder_runs == 2
    expected = listing(session, program)
    shown = [r for r in rows if isinstance(r, Instruction)]
    assert [r.address - program.load_address for r in shown] == sorted(expected)
    assert all(r.text == expected[r.address - program.load_address] for r in shown)
    session.instructions(program.load_address + code.units[-1][0], 200, -100)
    session.function_instructions(start)
    assert session.disassembly.decoder_runs == 2


def test_the_disassembly_view_host_check_skips_what_needs_a_missing_tool(tmp_path):
    """vscode-extension/test/host/disassembly.mjs without the vendors' tools: each case says SKIPPED with what
    provides the tool, as the tests here skip, and nothing is started; with REQUIRE_HOST_TESTS it fails."""
    import os
    import shutil
    import subprocess
    import sys

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (apt-get install nodejs): the host checks cannot run")
    script = Path(REPO_ROOT) / "vscode-extension" / "test" / "host" / "disassembly.mjs"
    env = {**os.environ, "PYTHON": sys.executable, "ASPACE_LLVM_OBJDUMP": str(tmp_path / "no-llvm-objdump"),
           "ASPACE_NVDISASM": str(tmp_path / "no-nvdisasm"), "TMPDIR": str(tmp_path)}
    env.pop("REQUIRE_HOST_TESTS", None)
    done = subprocess.run([node, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED: ")]
    assert len(skipped) == 2, done.stdout
    assert "AMD divergent_call did not run: llvm-objdump missing" in skipped[0] and "llvm-19" in skipped[0]
    assert "CUDA divergent_call did not run: nvdisasm missing" in skipped[1] and "provides it" in skipped[1]
    required = subprocess.run([node, str(script)], capture_output=True, text=True,
                              env={**env, "REQUIRE_HOST_TESTS": "1"}, timeout=120)
    assert required.returncode == 1 and "FAILED: REQUIRE_HOST_TESTS is set but" in required.stderr, required.stderr
