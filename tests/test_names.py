"""Names as people read them (aspace_dap/names.py): every mangled name of the examples demangled as
llvm-cxxfilt and c++filt print it (nvcc's internal-linkage `_INTERNAL_<hash>` names too, as cuda-gdb's
demangler reads them), DWARF names qualified as the demangler qualifies the same function, and the Call
Stack's short form of a long templated name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dap_client import REPO_ROOT
from names_tools import cxxfilt

from aspace_dap import names
from aspace_dap.adapters import adapter_for
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.index import DwarfIndex

EXAMPLES = Path(REPO_ROOT) / "examples"
CODE_OBJECTS = sorted(p for pattern in ("*/*.co", "cuda/*.cubin", "fault/*.cubin") for p in EXAMPLES.glob(pattern))


@pytest.fixture(scope="module")
def example_symbols() -> list[str]:
    found = set()
    for path in CODE_OBJECTS:
        for co in load_code_objects(path):
            found.update(name for name in co.symbols if names.is_mangled(name))
    return sorted(found)


@pytest.mark.parametrize("tool", ["llvm-cxxfilt-19", "c++filt"])
def test_every_example_symbol_demangles_as_the_vendors_tools(example_symbols, tool):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed: apt-get install {'llvm-19' if 'llvm' in tool else 'binutils'}")
    if tool == "c++filt":  # binutils prints a `.kd` suffix `[clone .kd]`, LLVM `(.kd)`: the functions alone
        example_symbols = [n for n in example_symbols if "." not in n]
    assert len(example_symbols) > 20
    assert [names.demangle(n) for n in example_symbols] == cxxfilt(*example_symbols, tool=tool)


def test_nvcc_internal_linkage_names_as_cuda_gdb_reads_them(tmp_path):
    """nvcc gives a `static` function of a namespace the namespace `_INTERNAL_<hash>_<file>_<hash>` and an
    anonymous namespace `_GLOBAL__N__<hash>`; cuda-gdb demangles with libiberty, what c++filt prints."""
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or next(
        (str(p) for p in sorted(Path("/usr/local").glob("cuda*/bin/nvcc"), reverse=True)), None)
    if nvcc is None:
        pytest.skip("nvcc not installed: the CUDA toolkit, or pip install nvidia-cuda-nvcc")
    (tmp_path / "k.cu").write_text(
        "namespace ns { static __device__ __noinline__ int helper(int x) { return x * 3; }\n"
        "__global__ void k(int *p) { p[0] = helper(p[1]); } }\n"
        "namespace { __global__ void hidden(int *p) { p[threadIdx.x] = 2; } }\n"
        "void launch(int *p) { ns::k<<<1, 1>>>(p); hidden<<<1, 1>>>(p); }\n")
    subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-lineinfo", "-O3", "-o", "k.cubin", "k.cu"], cwd=tmp_path,
                   check=True, capture_output=True)
    # every mangled name the cubin's strings hold (a per-kernel copy of `helper` is the symbol
    # `$_ZN2ns1kEPi$_ZN34_INTERNAL_...`: the kernel's name, then the function's)
    strings = re.findall(rb"[\x21-\x7e]+", (tmp_path / "k.cubin").read_bytes())
    mangled = sorted({part for s in strings for part in s.decode().split("$") if re.fullmatch(r"_ZN\w+", part)})
    internal = [n for n in mangled if "_INTERNAL_" in n]
    anonymous = [n for n in mangled if "_GLOBAL__N_" in n]
    assert internal and anonymous, mangled
    assert [names.readable(n) for n in mangled] == cxxfilt(*mangled, tool="c++filt" if shutil.which("c++filt")
                                                           else None)
    assert names.function_name(internal[0]).endswith("::ns::helper")
    assert names.function_name(anonymous[0]) == "(anonymous namespace)::hidden"


@pytest.mark.parametrize("co", sorted(EXAMPLES.glob("divergent_call/divergent_call.clang19.*.co"))
                         + sorted(EXAMPLES.glob("lds_tiles/lds_tiles.clang19.*.co")), ids=lambda p: p.name)
def test_dwarf_names_are_the_demanglers_functions(co):
    """Where DWARF has a linkage name, the name qualified from its DIEs is the demangler's function name."""
    (code_object,) = load_code_objects(co)
    index = DwarfIndex(code_object.elf, e_machine=code_object.e_machine,
                       function_at=lambda pc: adapter_for(code_object.vendor).function_symbol(code_object, pc))
    functions = [s for s in code_object.symbols.values() if s.type == "FUNC" and names.is_mangled(s.name)]
    assert functions
    for sym, demangled in zip(functions, cxxfilt(*(s.name for s in functions))):
        frame = index.frames_at(sym.value)[-1]
        assert frame.linkage_name == sym.name and not frame.no_variable_info  # a -g build declares its functions
        # the demangler's signature holds the DWARF's qualified name right before its parameters
        assert frame.function == names.function_name(sym.name) and f"{frame.function}(" in demangled, demangled


def test_a_long_templated_name_is_short_in_the_call_stack(tmp_path):
    """Over 80 characters, the template arguments at the top of the name are elided; shorter names stay whole."""
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("clang++ not installed: apt-get install clang-19")
    (tmp_path / "t.cpp").write_text(
        "namespace cutlass { namespace gemm { template <int M, int N, int K> struct Shape {};\n"
        "template <class A, class B, class C> struct Mma {}; namespace kernel {\n"
        "template <class Mma, class Epilogue> struct GemmUniversal { void operator()(int) {} }; } } }\n"
        "using S = cutlass::gemm::Shape<128, 256, 64>;\n"
        "template struct cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::Mma<S, S, float>, "
        "cutlass::gemm::Mma<S, S, double>>;\n")
    subprocess.run([clang, "-c", "t.cpp", "-o", "t.o"], cwd=tmp_path, check=True)
    nm = shutil.which("llvm-nm-19") or shutil.which("nm")
    (symbol,) = [line.split()[-1] for line in subprocess.run([nm, "t.o"], cwd=tmp_path, capture_output=True,
                                                              text=True, check=True).stdout.splitlines()
                 if "GemmUniversal" in line]
    (full,) = cxxfilt(symbol)
    assert names.demangle(symbol) == full
    whole = full[:full.rindex("(int)")]  # a member function: no return type, then (int)
    assert names.function_name(symbol) == whole and len(whole) > names.SHORT_NAME_LIMIT
    assert names.display_name(symbol) == "cutlass::gemm::kernel::GemmUniversal<…>::operator()"
    assert names.short_name("app::scatter_kernel<float, 4>") == "app::scatter_kernel<float, 4>"


def test_without_the_demangler_names_stay_mangled_and_the_session_says_why(monkeypatch):
    monkeypatch.setattr(names, "_demangler", None)
    names.demangle.cache_clear()
    names.function_name.cache_clear()
    try:
        assert names.demangle("_Z7scatterPii") is None and names.function_name("_Z7scatterPii") == "_Z7scatterPii"
        assert "pip install pydemumble" in names.missing_demangler()
    finally:
        names.demangle.cache_clear()
        names.function_name.cache_clear()
