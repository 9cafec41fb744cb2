"""NVIDIA production builds: -lineinfo cubins (line tables only), NVIDIA's line-table inlining opcodes,
Triton cubins, lightweight CUDA cores, and binaries other tools write oddly.

Expectations come from NVIDIA's tools: every frame of every inline chain is compared with what
`nvdisasm -ndf -c -gi` prints for the same address (each level's file and line, innermost first), the
inlined functions' raw names with c++filt's demangling of them, the cores' contents with the
CUDBGCoredumpGenerationFlags of cudadebugger.h.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from disassembly_tools import nvdisasm_inline_chains

from aspace_dap.adapters.nvidia import disassembler as nvdisasm_finder
from aspace_dap.adapters.nvidia.core_elf import (LIGHTWEIGHT_FLAGS, SHT_CB_TABLE, SHT_ELF_IMG, SHT_GLOBAL, SHT_LOCAL,
                                                 SHT_META, SHT_RELF_IMG, SHT_SHARED, CoreElf)
from aspace_dap.adapters.nvidia.core_writer import write_core
from aspace_dap.codeobj import load_code_objects
from aspace_dap.errors import AspaceError
from aspace_dap.expressions import evaluate_expression
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state
from aspace_dap.values.format import format_obj

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
PRODUCTION = EXAMPLES / "production"
CUBINS = {sm: PRODUCTION / f"scatter_rows.{sm}.lineinfo.cubin" for sm in ("sm_90", "sm_80")}
CORE = PRODUCTION / "cores" / "scatter_rows.sm_90.cudacore"
LIGHT_CORE = PRODUCTION / "cores" / "scatter_rows.sm_90.light.cudacore"
TRITON_CUBIN = EXAMPLES / "triton" / "scatter_rows_kernel.sm_90.cubin"
TRITON_CORE = EXAMPLES / "triton" / "cores" / "scatter_rows_kernel.sm_90.light.cudacore"
FAULT_LIGHT_CORE = EXAMPLES / "fault" / "cores" / "sm_90.G.light.cudacore"
SKIPPED_GLOBAL = "<unavailable: the core skipped global memory (skip_global_memory)>"


def nvdisasm() -> str:
    tool = nvdisasm_finder._find(os.environ.get(nvdisasm_finder.ENV), "sm_90")
    if tool is None:
        pytest.skip("nvdisasm not installed: pip install nvidia-cuda-nvdisasm (or a CUDA toolkit)")
    return tool


def nvcc() -> str:
    tool = os.environ.get("NVCC") or shutil.which("nvcc")
    if tool is None:
        pytest.skip("nvcc not installed: a CUDA toolkit (or the nvidia-cuda-nvcc wheel) provides it")
    return tool


def laid_out_chains(co, tmp: Path) -> dict[int, list[tuple[str, int]]]:
    """nvdisasm's chains over the code object as it is laid out (addresses as the session sees them)."""
    path = tmp / f"{abs(hash(co.name))}.laid-out.cubin"
    path.write_bytes(co.data)
    return nvdisasm_inline_chains(nvdisasm(), path)


def our_chain(index, pc: int) -> list[tuple[str, int]]:
    """Each frame's file and line at `pc`, innermost first, as the Call Stack shows them: the innermost
    frame at the PC's row, every outer one at the call site of the frame inside it."""
    frames = index.frames_at(pc)
    line = index.line_for_pc(pc)
    out = [(posixpath.normpath(line.file), line.line)]
    for inner in frames[:-1]:
        out.append((posixpath.normpath(inner.call_file), inner.call_line))
    assert len(out) == len(frames)
    return out


def index_of(co):
    from aspace_dap.adapters import adapter_for
    from aspace_dap.dwarf.index import DwarfIndex

    adapter = adapter_for("nvidia")
    return DwarfIndex(co.elf, e_machine=co.e_machine, function_at=lambda pc: adapter.function_symbol(co, pc))


def demangle(names: list[str]) -> list[str]:
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt-19")
    if tool is None:
        pytest.skip("c++filt not installed: apt-get install binutils")
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, check=True).stdout
    return out.splitlines()


# ------------------------------------------------------------------------------- the committed example


@pytest.mark.parametrize("sm", ["sm_90", "sm_80"])
def test_every_frame_of_every_inline_chain_equals_nvdisasm_gi(sm, tmp_path):
    co = load_code_objects(CUBINS[sm])[0]
    assert not co.has_dwarf() and co.has_line_tables()  # a -lineinfo build: line tables only
    expected = laid_out_chains(co, tmp_path)
    index = index_of(co)
    for pc, chain in expected.items():
        assert our_chain(index, pc) == chain, f"{sm} {pc:#x}"
    deep = [pc for pc, chain in expected.items() if len(chain) >= 3]
    assert len(deep) >= 7 and max(len(c) for c in expected.values()) == 6


def test_inlined_frames_carry_the_functions_names(tmp_path):
    co = load_code_objects(CUBINS["sm_90"])[0]
    store = next(pc for pc, chain in laid_out_chains(co, tmp_path).items() if chain[0] == ("store.cuh", 11))
    frames = index_of(co).frames_at(store)
    assert [f.is_inlined for f in frames] == [True] * 5 + [False]
    assert all(f.linkage_name.startswith("_Z") for f in frames)  # the line table's raw names
    shown = [name.split("(")[0] for name in demangle([f.linkage_name for f in frames])]
    assert shown == ["void prod::epilogue::store_value<float>", "void prod::epilogue::store_scaled<float>",
                     "void prod::scatter_one<float, 64>", "void prod::copy_row<float, 64>",
                     "void prod::copy_tile<float, 64>", "void prod::scatter_rows<float, 64>"]
    # each frame is named as gdb names a function: the demangler's, without return type and parameters
    assert [f.function for f in frames] == [name.split(" ", 1)[1] for name in shown]


# --------------------------------------------------------------------------------- a fresh nvcc build

FRESH = r"""
#include "layout.cuh"
#include "store.cuh"
__device__ int GlobalC2[1024];  // data at address 0, as every section of a cubin starts
namespace prod {
__device__ __noinline__ float twice(float *p, long i) { epilogue::store_value(p, i, 2.0f); return p[i + 1]; }
template <typename T, int W>
__global__ void k1(T *out, const int *rows, int n)
{
    for (int r = blockIdx.x; r < n; r += gridDim.x)
        epilogue::store_scaled(out, layout::slot_of<W>(rows[r], threadIdx.x), T(GlobalC2[r]), T(3));
}
__global__ void k2(float *out, const int *rows) { out[0] = twice(out, layout::slot_of<8>(rows[threadIdx.x], 1)); }
template __global__ void k1<float, 16>(float *, const int *, int);
template __global__ void k1<double, 32>(double *, const int *, int);
}
"""


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory):
    """Three kernels (each its own line sequence) and a device function ptxas places inside one of them,
    built -lineinfo -O3 for sm_90, and a __device__ array at address 0."""
    tool = nvcc()
    work = tmp_path_factory.mktemp("fresh")
    for header in ("layout.cuh", "store.cuh"):
        shutil.copy(PRODUCTION / header, work / header)
    (work / "multi.cu").write_text(FRESH)
    subprocess.run([tool, "-cubin", "-lineinfo", "-O3", "-arch=sm_90", "-o", "multi.cubin", "multi.cu"], cwd=work,
                   check=True, capture_output=True)
    return work / "multi.cubin"


def test_a_fresh_build_of_several_kernels_equals_nvdisasm_gi(fresh_build, tmp_path):
    co = load_code_objects(fresh_build)[0]
    expected = laid_out_chains(co, tmp_path)
    index = index_of(co)
    for pc, chain in expected.items():
        assert [(posixpath.basename(f), n) for f, n in our_chain(index, pc)] == \
            [(posixpath.basename(f), n) for f, n in chain], f"{pc:#x}"
    assert len({tuple(c) for c in expected.values() if len(c) > 1}) >= 3


def test_frames_are_named_by_the_function_symbols_of_the_pcs_own_section(fresh_build):
    """Every section of a cubin starts at 0 and data sections stay there once the code is laid out: a
    __device__ array covers the numbers of kernel code, and must never name a frame."""
    from elftools.elf.elffile import ELFFile

    co = load_code_objects(fresh_build)[0]
    elf = ELFFile(open(fresh_build, "rb"))
    data = next(s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "GlobalC2")
    assert data["st_value"] == 0 and data["st_size"] == 4096 and data["st_info"]["type"] == "STT_OBJECT"
    laid_out = ELFFile(__import__("io").BytesIO(co.data))
    sections = {i: s for i, s in enumerate(laid_out.iter_sections()) if s["sh_flags"] & 0x4}
    functions = [s for s in laid_out.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] in sections]
    index = index_of(co)
    named = 0
    for i, section in sections.items():
        for pc in range(section["sh_addr"], section["sh_addr"] + section["sh_size"], 16):
            holders = [f for f in functions if f["st_shndx"] == i and f["st_value"] <= pc < f["st_value"] + f["st_size"]]
            innermost = max(holders, key=lambda f: f["st_value"])
            want = innermost.name.rsplit("$", 1)[-1]  # ptxas's `$kernel$function` local symbol: the function
            frames = index.frames_at(pc)
            if frames:
                assert frames[-1].linkage_name == want, f"{pc:#x}"  # named by that symbol (demangled)
                named += 1
            if pc < 4096:
                assert co.symbol_at(pc) is not None
    assert named > 50


# ----------------------------------------------------------------------------------------- the cores


@pytest.fixture(scope="module")
def light():
    session = Session.open(str(LIGHT_CORE))
    yield session
    session.state.close()


def test_the_lightweight_core_holds_what_the_driver_keeps_and_records_its_flags():
    elf = CoreElf(LIGHT_CORE)
    try:
        assert [elf.rows(s)[0]["flags"] for s in elf.of_type(SHT_META)] == [LIGHTWEIGHT_FLAGS]
        assert LIGHTWEIGHT_FLAGS == 0b101111  # cudadebugger.h: SKIP_NONRELOCATED_ELF_IMAGES .. SKIP_CONSTBANK
        for kind in (SHT_ELF_IMG, SHT_GLOBAL, SHT_SHARED, SHT_LOCAL, SHT_CB_TABLE):
            assert not elf.of_type(kind), hex(kind)
        assert len(elf.of_type(SHT_RELF_IMG)) == 1
    finally:
        elf.close()
    full = CoreElf(CORE)
    try:
        assert [full.rows(s)[0]["flags"] for s in full.of_type(SHT_META)] == [0]
        assert full.of_type(SHT_ELF_IMG) and full.of_type(SHT_GLOBAL) and full.of_type(SHT_CB_TABLE)
    finally:
        full.close()


def test_a_lightweight_core_of_a_lineinfo_build_shows_the_chain_and_invents_nothing(light, tmp_path):
    co = load_code_objects(CUBINS["sm_90"])[0]
    expected = laid_out_chains(co, tmp_path)
    frames = light.frames()
    pc = frames[0].runtime_pc
    assert [(posixpath.basename(f.file), f.line) for f in frames] == \
        [(posixpath.basename(f), n) for f, n in expected[pc]]
    assert all(light.variables(f) == [] for f in frames)
    assert "line tables only" in light.no_variables_reason(frames[0])
    # the faulting instruction (the warp's error PC) and its whole chain out to the kernel
    fault = json.loads(json.dumps(light.state.stop.pc))
    chain = expected[fault]
    text = light.stop_text()
    assert f"({chain[0][0]}:{chain[0][1]})" in text
    assert "inlined from " + ", ".join(f"{f}:{n}" for f, n in chain[1:]) in text
    # registers are in the core; memory is not, and says why
    assert format_obj(evaluate_expression(light, "$R6", frame=frames[0])) != "<unavailable>"
    address = int(format_obj(evaluate_expression(light, "$R7", frame=frames[0]))) << 32 | \
        int(format_obj(evaluate_expression(light, "$R6", frame=frames[0])))
    shown = format_obj(evaluate_expression(light, f"*(float *){address:#x}", frame=frames[0]))
    assert shown == SKIPPED_GLOBAL
    assert any("skip_local_memory" in w.lower() or "SKIP_LOCAL_MEMORY" in w for w in light.warnings)


def test_the_fault_examples_lightweight_core_names_what_was_skipped():
    session = Session.open(str(FAULT_LIGHT_CORE))
    try:
        frame = session.frames()[0]
        values = {v.name: format_obj(session.read_variable(frame, v).obj_for(session.focus_lane))
                  for v in session.variables(frame)}
        assert values["gid"] == "1"  # a register: kept
        assert values["stride"] == "1048576"  # the parameter section: kept
        for expression in ("*slot", "*out", "out[3]"):
            assert format_obj(evaluate_expression(session, expression, frame=frame)) == SKIPPED_GLOBAL
    finally:
        session.state.close()
    full = Session.open(str(EXAMPLES / "fault" / "dumps" / "sm_90.G"))
    try:  # the dump holds `out`'s 1 KiB and no bytes past it, and gives no reason it does not know
        frame = full.frames()[0]
        assert format_obj(evaluate_expression(full, "*slot", frame=frame, lanes=[0])) == "0"
        assert format_obj(evaluate_expression(full, "*slot", frame=frame, lanes=[1])) == "<unavailable>"
    finally:
        full.state.close()


def test_a_triton_cubins_frame_names_its_py_line():
    listing = nvdisasm_inline_chains_committed(TRITON_CUBIN.with_name(TRITON_CUBIN.name + ".gi.txt"))
    session = Session.open(str(TRITON_CORE))
    try:
        frame = session.frames()[0]
        assert len(session.frames()) == 1 and frame.name == "scatter_rows_kernel"
        assert (posixpath.basename(frame.file), frame.line) == listing[frame.runtime_pc][0]
        assert frame.file.endswith("examples/triton/scatter_rows_kernel.py")
        store = session.state.stop.pc
        assert f"(scatter_rows_kernel.py:{listing[store][0][1]})" in session.stop_text()
        source = Path(frame.file).read_text().splitlines()
        assert "tl.store(" in source[listing[store][0][1] - 1]
    finally:
        session.state.close()


def nvdisasm_inline_chains_committed(path: Path) -> dict[int, list[tuple[str, int]]]:
    """A committed `nvdisasm -ndf -c -gi` listing, read as nvdisasm_inline_chains reads the tool's output."""
    fake = path.parent / "never-run"
    import disassembly_tools

    real = disassembly_tools.subprocess.run
    try:
        disassembly_tools.subprocess.run = lambda *a, **k: subprocess.CompletedProcess(a, 0, path.read_text(), "")
        return nvdisasm_inline_chains(str(fake), path)
    finally:
        disassembly_tools.subprocess.run = real


def test_line_tables_only_scopes_say_there_is_no_variable_information():
    from dap_client import launched

    c, stopped = launched(LIGHT_CORE)
    try:
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert len(frames) >= 3 and frames[0]["line"] and frames[0]["source"]["path"].endswith("scatter_rows.cu")
        scopes = c.request("scopes", {"frameId": frames[0]["id"]})["scopes"]
        assert [s["name"] for s in scopes] == ["Locals", "Registers"]
        note = c.request("variables", {"variablesReference": scopes[0]["variablesReference"]})["variables"]
        assert len(note) == 1 and "line tables only" in note[0]["value"] and note[0]["variablesReference"] == 0
        registers = c.request("variables", {"variablesReference": scopes[1]["variablesReference"]})["variables"]
        assert any(r["name"] == "R6" for r in registers)
        c.request("disconnect")
    finally:
        c.close()


# ------------------------------------------------------------- callers whose return address was skipped

NESTED = r"""
__device__ __noinline__ int inner(int *p, int i) { p[i] = i; return i * 3; }
__device__ __noinline__ int outer(int *p, int i) { int r = inner(p, i + 1); return r + p[i]; }
__global__ void nest(int *p) { p[threadIdx.x] = outer(p, threadIdx.x); }
"""


@pytest.fixture(scope="module")
def nested_cores(tmp_path_factory):
    """A -G build whose `outer` saves its return address on the stack before it calls `inner`, stopped in
    `inner`; its core written regular, lightweight, and lightweight with the lanes' backtrace tables."""
    sys.path.insert(0, str(EXAMPLES))
    from dumpgen.cuda_engine import call_return_address, return_address

    from aspace_dap.adapters.nvidia.cubin import relocate_cubin
    from aspace_dap.dwarf.cfi import CallFrameInfo

    work = tmp_path_factory.mktemp("nested")
    (work / "nest.cu").write_text(NESTED)
    subprocess.run([nvcc(), "-cubin", "-G", "-arch=sm_90", "-o", "nest.cubin", "nest.cu"], cwd=work, check=True,
                   capture_output=True)
    raw = (work / "nest.cubin").read_bytes()
    image = relocate_cubin(raw)
    co = load_code_objects(image)[0]
    start = {name: co.symbols[name].value for name in ("_Z5innerPii", "_Z5outerPii", "_Z4nestPi")}
    into_outer = start["_Z5outerPii"] + call_return_address(raw, "_Z5outerPii")
    into_nest = start["_Z4nestPi"] + call_return_address(raw, "_Z4nestPi")
    ra = return_address(raw, "_Z5outerPii")  # the registers the CALL in outer loads
    cfi = CallFrameInfo(co.elf, e_machine=co.e_machine)
    rules = cfi.rules_at(into_outer - 1)
    saved = rules.rule_for(rules.return_address_register)
    assert saved.kind == "offset"  # outer keeps its own return address in local memory (the premise)
    sp, lanes, local = 0xFFF800, 32, 0x800
    cfa = sp + rules.cfa.offset
    private = bytearray(local * lanes)
    for lane in range(lanes):  # at CFA + offset, each lane's stack holds outer's return address into nest
        struct.pack_into("<Q", private, lane * local + (cfa + saved.operand) - (0x1000000 - local), into_nest)
    registers = max(__import__("aspace_dap.adapters.nvidia.cubin", fromlist=["register_counts"])
                    .register_counts(image).values())
    regs = {"pc": struct.pack("<Q", start["_Z5innerPii"] + 0x40), "exec": struct.pack("<I", 0xFFFFFFFF)}
    layout = [("pc", 8), ("exec", 4)] + [(f"R{n}", 4 * lanes) for n in range(registers)]
    for n in range(registers):
        regs[f"R{n}"] = bytes(4 * lanes)
    regs["R1"] = struct.pack("<I", sp) * lanes
    regs[ra.low] = struct.pack("<I", into_outer & 0xFFFFFFFF) * lanes
    regs[ra.high] = struct.pack("<I", into_outer >> 32) * lanes
    writer = StateWriter("nvidia", "sm_90", lanes, apertures={"local": (0x7F0001000000, 0x1000000)})
    code = writer.add_code_object(image, 0, name="nest.cubin")
    dispatch = writer.add_dispatch("_Z4nestPi", code, (32, 1, 1), (32, 1, 1))  # one block of 32 work-items
    wg = dispatch.add_workgroup((0, 0, 0))
    import numpy as np

    wg.add_wave(0, 0, regs, layout, private=np.frombuffer(bytes(private), np.uint8).reshape(lanes, local),
                private_layout="per_lane", private_base=0x1000000 - local)
    writer.set_focus(0, 0)
    writer.write(work / "dump")
    state = load_state(work / "dump")
    out = {"full": write_core(state, work / "full.cudacore"),
           "light": write_core(state, work / "light.cudacore", flags=LIGHTWEIGHT_FLAGS),
           "light+bt": write_core(state, work / "light-bt.cudacore", flags=LIGHTWEIGHT_FLAGS,
                                  backtraces={(0, lane): [into_outer, into_nest] for lane in range(lanes)})}
    state.close()
    return out, into_outer, into_nest


def test_a_caller_whose_return_address_the_core_skipped_is_a_note_never_a_guess(nested_cores):
    cores, into_outer, into_nest = nested_cores
    shown = {}
    for name, path in cores.items():
        session = Session.open(str(path))
        try:
            shown[name] = [(f.name, f.runtime_pc) for f in session.frames()]
        finally:
            session.state.close()
    assert [n for n, _ in shown["full"]] == ["inner", "outer", "nest"]
    assert [pc for _, pc in shown["full"][1:]] == [into_outer, into_nest]
    assert shown["light"][:2] == shown["full"][:2] and len(shown["light"]) == 3
    note = shown["light"][2][0]
    assert note.startswith("<caller of outer unavailable:") and "skip_local_memory" in note
    assert shown["light+bt"] == shown["full"]  # the backtrace table still names the caller


# --------------------------------------------------------------------- binaries other tools write oddly


def _section_header(data: bytes, name: str) -> int:
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    names_at = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 24)[0]
    for i in range(shnum):
        at = shoff + i * shentsize
        start = names_at + struct.unpack_from("<I", data, at)[0]
        if data[start:data.index(b"\0", start)].decode() == name:
            return at
    raise KeyError(name)


@pytest.mark.parametrize("link", [0, 5])
def test_a_debug_relocation_section_whose_sh_link_names_no_symbol_table_is_read(link, tmp_path):
    """CUDA 12.1 wrote such cubins; llvm-dwarfdump and cuda-gdb read them with the file's one symbol table.
    Here the example's `.rela.debug_line` is pointed at section 0 or at .debug_line itself."""
    data = bytearray(CUBINS["sm_90"].read_bytes())
    struct.pack_into("<I", data, _section_header(bytes(data), ".rela.debug_line") + 40, link)
    odd = tmp_path / "odd.cubin"
    odd.write_bytes(bytes(data))
    co = load_code_objects(odd)[0]
    assert any(".rela.debug_line's sh_link" in w and "one symbol table" in w for w in co.load_warnings)
    good = load_code_objects(CUBINS["sm_90"])[0]
    chains = laid_out_chains(good, tmp_path)
    index = index_of(co)
    for pc, chain in chains.items():
        assert our_chain(index, pc) == chain


def test_inspect_without_a_code_object_names_why_the_dumps_cannot_be_read(tmp_path, capsys):
    from types import SimpleNamespace

    from aspace_dap.inspect import main

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "fault" / "dumps" / "sm_90.G", dump)
    cubin = dump / "code" / "fault.sm_90.G.cubin"
    os.chmod(cubin, stat.S_IWUSR | stat.S_IRUSR)
    cubin.write_bytes(cubin.read_bytes()[:200])  # cut short: the section table is past the end
    args = SimpleNamespace(state=str(dump), code_object=None, wave=None, lane=None, all_lanes=None, json=False)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "cannot be read (" in err and "supply it with codeObject" in err
    assert "section header table" in err or "truncated" in err


def _fake_nvdisasm(folder: Path, release: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "nvdisasm"
    tool.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release {release}, "
                    f"V{release}.0'; exit 0; fi\necho '        /*0000*/                   NOP ;'\n")
    tool.chmod(0o755)
    return tool


def test_sm_61_code_is_decoded_by_a_cuda_12_nvdisasm_and_says_which_is_missing(tmp_path, monkeypatch):
    """CUDA 13's nvdisasm refuses sm_50-sm_72; a CUDA 12 one on PATH decodes them. (The cubin is the sm_90
    example with e_flags saying sm_61: only the choice of tool is under test.)"""
    data = bytearray(CUBINS["sm_90"].read_bytes())
    flags, = struct.unpack_from("<I", data, 48)
    struct.pack_into("<I", data, 48, flags & ~0xFF00 | 61 << 8)
    co = load_code_objects(bytes(data), name="old.cubin")[0]
    assert co.processor == "sm_61"
    monkeypatch.delenv(nvdisasm_finder.ENV, raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "site-packages" not in p])
    thirteen = _fake_nvdisasm(tmp_path / "cuda-13" / "bin", "13.0")
    monkeypatch.setenv("PATH", f"{thirteen.parent}:/usr/bin:/bin")
    monkeypatch.setattr(nvdisasm_finder.glob, "glob", lambda pattern: [])
    decoder = nvdisasm_finder.Nvdisasm()
    with pytest.raises(AspaceError) as missing:
        decoder.decode(co, 0, 16)
    assert "sm_61" in str(missing.value) and "CUDA 12 or older" in str(missing.value)
    assert f"{thirteen} (CUDA 13.0)" in str(missing.value)
    assert decoder.locate("sm_90") == str(thirteen)  # newer code: the first nvdisasm found
    twelve = _fake_nvdisasm(tmp_path / "cuda-12.4" / "bin", "12.4")
    monkeypatch.setenv("CUDA_HOME", str(twelve.parent.parent))
    assert decoder.locate("sm_61") == str(twelve)
    assert [i.text for i in decoder.decode(co, 0, 16)] == ["NOP"]
