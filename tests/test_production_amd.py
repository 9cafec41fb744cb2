"""The AMD production example (examples/production_amd/): clang-19 -O3 -gline-tables-only for gfx942, gfx1100 and
gfx90a, a seven-level always_inline chain over two headers.

Every frame at every instruction of the kernel is compared with `llvm-symbolizer-19 --inlining` (innermost
first: function name, then the file:line:column where it stands or was called from), and the stack must end at
the kernel, whose DWARF has no linkage name (the subprogram that starts where the kernel's code starts). The two
dumps are opened as ROCm cores over DAP: the Call Stack, the exception (the assert trap names the s_trap, one
instruction before the PC), `bt` and `info frame` with the names llvm-cxxfilt prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dap_client import REPO_ROOT, launched
from names_tools import cxxfilt

from aspace_dap.adapters import adapter_for
from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.frame_context import is_kernel
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.names import demangle
from aspace_dap.state import load_state

EXAMPLE = Path(REPO_ROOT) / "examples" / "production_amd"
CODE_OBJECTS = [EXAMPLE / f"inline_chain.clang19.{arch}.O3.co" for arch in ("gfx942", "gfx1100", "gfx90a")]
KERNEL = "_ZN3app14scatter_kernelIfLi4EEEvPKiPKT_PS3_S6_i"
SYMBOLIZER = "llvm-symbolizer-19"
S_TRAP, AFTER_TRAP, STORE = 0x1ED8, 0x1EDC, 0x1EBC  # gfx942's listing (inline_chain.clang19.gfx942.O3.co.s.txt)


def symbolizer() -> str:
    tool = shutil.which(SYMBOLIZER) or shutil.which("llvm-symbolizer")
    if tool is None:
        pytest.skip("llvm-symbolizer not installed: apt-get install llvm-19")
    return tool


def kernel_pcs(co: Path) -> list[int]:
    """Every instruction address of the kernel, from llvm-objdump-19's listing committed beside it."""
    text = Path(str(co) + ".s.txt").read_text()
    text = text[text.index(f"<{KERNEL}>:"):]  # the .text padding before it belongs to no function
    return [int(m.group(1), 16) for m in re.finditer(r"// ([0-9A-F]{12}):", text)]


def symbolized(co: Path, pcs: list[int]) -> list[list[tuple[str, str, int, int]]]:
    """llvm-symbolizer --inlining's frames per pc: (function, file, line, column), innermost first. Run from
    the repository's root: the DWARF names its files examples/production_amd/..."""
    out = subprocess.run([symbolizer(), "--inlining", f"--obj={co}", *(hex(pc) for pc in pcs)], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout
    stacks = []
    for block in out.strip().split("\n\n"):
        lines = block.splitlines()
        frames = []
        for name, where in zip(lines[::2], lines[1::2]):
            file, line, column = where.rsplit(":", 2)
            frames.append((name, file, int(line), int(column)))
        stacks.append(frames)
    assert len(stacks) == len(pcs)
    return stacks


@pytest.mark.parametrize("co", CODE_OBJECTS, ids=lambda p: p.name.split(".")[2])
def test_every_pc_has_llvm_symbolizers_frames_and_ends_at_the_kernel(co):
    (code_object,) = load_code_objects(co)
    index = DwarfIndex(code_object.elf, e_machine=code_object.e_machine,
                       function_at=lambda pc: adapter_for(code_object.vendor).function_symbol(code_object, pc))
    assert not any("linkage_name" in line for line in Path(str(co) + ".dwarf.txt").read_text().splitlines()), \
        "a -gline-tables-only build has no linkage names"
    pcs = kernel_pcs(co)
    deepest = 0
    for pc, want in zip(pcs, symbolized(co, pcs)):
        frames = index.frames_at(pc)
        line = index.line_for_pc(pc)
        got = []
        for i, f in enumerate(frames):
            file, ln, col = (line.file, line.line, line.column) if i == 0 else (
                frames[i - 1].call_file, frames[i - 1].call_line, frames[i - 1].call_column)
            got.append((f.function, file, ln, col))
        # the kernel's frame: llvm-symbolizer names it by its symbol, the whole demangled signature
        kernel = frames[-1]
        assert kernel.linkage_name == KERNEL and demangle(KERNEL) == want[-1][0], hex(pc)
        got[-1] = (want[-1][0],) + got[-1][1:]
        assert [(n, os.path.relpath(f, REPO_ROOT) if os.path.isabs(f) else f, ln, col) for n, f, ln, col in got] \
            == want, hex(pc)
        assert is_kernel(code_object, kernel) and not kernel.is_inlined, hex(pc)
        assert all(f.no_variable_info for f in frames), hex(pc)  # the build declares no variable
        deepest = max(deepest, len(frames))
    assert deepest == 7  # store, scatter_one, Tile::write, apply, epilogue, run_row, the kernel


def test_the_kernel_name_is_the_demanglers():
    """llvm-cxxfilt's and c++filt's signature, and the qualified name without it, for the kernel's frame."""
    full = cxxfilt(KERNEL)[0]
    assert demangle(KERNEL) == full == "void app::scatter_kernel<float, 4>(int const*, float const*, float*, float*, int)"
    (code_object,) = load_code_objects(CODE_OBJECTS[0])
    index = DwarfIndex(code_object.elf, e_machine=code_object.e_machine,
                       function_at=lambda pc: adapter_for(code_object.vendor).function_symbol(code_object, pc))
    assert index.frames_at(STORE)[-1].function == full[len("void "):full.index("(")]


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("production")
    with load_state(EXAMPLE / "dumps/gfx942.O3.fault") as state:
        fault = write_rocm_core(state, tmp / "gpucore.fault", exception_wave=0,
                                exception_trapsts=(1 << 8) | (1 << 28))
    with load_state(EXAMPLE / "dumps/gfx942.O3.trap") as state:
        trap = write_rocm_core(state, tmp / "gpucore.trap", exception_wave=0, exception_trap_id=2)
    return {"fault": fault, "trap": trap}


def _session(core):
    c, stopped = launched(core)
    c.stack = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
    c.thread = stopped["threadId"]
    c.stopped = stopped
    return c


def repl(c, text, frame=0):
    return c.request("evaluate", {"expression": text, "context": "repl", "frameId": c.stack[frame]["id"]})["result"]


def test_memory_violation_core_call_stack_ends_at_the_kernel(cores):
    c = _session(cores["fault"])
    try:
        want = symbolized(CODE_OBJECTS[0], [STORE])[0]
        names = [f["name"] for f in c.stack]
        assert names[:-1] == [n for n, *_ in want[:-1]]
        full = cxxfilt(KERNEL)[0]
        assert names[-1] == full[len("void "):full.index("(")]  # short: 29 characters, whole
        assert [(f["line"], f["column"]) for f in c.stack] == [(ln, col) for _, _, ln, col in want]
        assert all(f["source"]["path"].endswith(w[1].split("/")[-1]) for f, w in zip(c.stack, want))
        scopes = {sc["name"]: sc for sc in c.request("scopes", {"frameId": c.stack[0]["id"]})["scopes"]}
        assert list(scopes) == ["Locals", "Registers"]  # the build has no variables: Locals say so
        (note,) = c.request("variables", {"variablesReference": scopes["Locals"]["variablesReference"]})["variables"]
        assert note["name"] == "(no variable information)" and "-gline-tables-only" in note["value"]
        info = c.request("exceptionInfo", {"threadId": c.thread})
        assert info["exceptionId"] == "SIGSEGV"
        assert info["description"].endswith(f"at PC {STORE:#x} in store<float> (inline_chain_store.h:12).")
        bt = repl(c, "bt").splitlines()
        assert len(bt) == 7 and bt[0].startswith(f"*#0  {STORE:#x} in store<float> [inlined] at ")
        assert bt[-1].startswith(f" #6  {STORE:#x} in {names[-1]} at ") and bt[-1].endswith("inline_chain.hip:26")
        frame = repl(c, "info frame", frame=6)
        assert f" function: {full}" in frame.splitlines() and f" linkage name: {KERNEL}" in frame.splitlines()
        inner = repl(c, "info frame", frame=0).splitlines()
        assert " inlined into frame 1 (scatter_one<float>)" in inner
        waves = repl(c, "info waves")
        assert f"0 {names[-1]}" in waves and "store<float> (inline_chain_store.h:12)" in waves
    finally:
        c.close()


def test_assert_trap_core_names_the_s_trap(cores):
    """The trap handler left the PC one s_trap past it (0x1edc): the exception, the stop's text and the
    details name the s_trap at 0x1ed8 and its line, the lanes' PC stays the frame's (gdb's $pc)."""
    listing = Path(str(CODE_OBJECTS[0]) + ".s.txt").read_text()
    assert re.search(rf"\ts_trap 2 +// 0000{S_TRAP:08X}:", listing)
    c = _session(cores["trap"])
    try:
        (where,) = symbolized(CODE_OBJECTS[0], [S_TRAP])
        info = c.request("exceptionInfo", {"threadId": c.thread})
        assert info["exceptionId"] == "SIGABRT"
        assert info["description"] == (f"Assert trap (ASSERT_TRAP). The exception was triggered at PC {S_TRAP:#x} "
                                       f"in {where[0][0]} (inline_chain_store.h:{where[0][2]}).")
        lines = info["details"]["stackTrace"].splitlines()
        assert lines[0].startswith(f"Faulting instruction: {S_TRAP:#x} <app::scatter_kernel<float, 4>+0xd8>")
        assert f"The lanes stand at {AFTER_TRAP:#x}, past the faulting instruction" in lines
        assert "Raised by 1 lane in 1 wave (wave 0)" in lines
        assert c.stopped["text"].startswith("wave 0: assert trap; queue 1: wave abort; ")
        assert f"wave abort: {where[0][0]} (inline_chain_store.h:20)" in c.stopped["text"]
        assert c.stack[0]["instructionPointerReference"] == f"{AFTER_TRAP:#x}"
        assert c.stack[0]["name"] == where[0][0] and c.stack[-1]["name"] == "app::scatter_kernel<float, 4>"
    finally:
        c.close()
