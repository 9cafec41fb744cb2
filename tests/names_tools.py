"""Names as the vendors' demanglers print them, for tests: llvm-cxxfilt (LLVM's demangler, the one
aspace-dap uses) or binutils' c++filt (gdb's and cuda-gdb's), run on the names at hand."""

from __future__ import annotations

import shutil
import subprocess

import pytest

DEMANGLERS = ("llvm-cxxfilt-19", "llvm-cxxfilt", "c++filt")


def demangler() -> str:
    for tool in DEMANGLERS:
        if shutil.which(tool):
            return tool
    pytest.skip("no C++ demangler to compare with: apt-get install llvm-19 (llvm-cxxfilt-19) or binutils (c++filt)")


def cxxfilt(*names: str, tool: str | None = None) -> list[str]:
    """Each name as `tool` (default: the first demangler found) prints it."""
    tool = tool or demangler()
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def plain_function(demangled: str) -> str:
    """`scatter(int*)` -> `scatter`: a demangled non-template, non-operator function without its parameters."""
    assert demangled.count("(") == 1 and " " not in demangled.split("(")[0], demangled
    return demangled.split("(")[0]
