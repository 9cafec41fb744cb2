"""SASS as NVIDIA's nvdisasm prints it.

nvdisasm comes with the `nvidia-cuda-nvdisasm` wheel (a dependency of aspace-dap where NVIDIA
publishes it: Linux x86-64 and aarch64, Windows), the CUDA toolkit, or ASPACE_NVDISASM. It reads the
cubin as the session laid it out (code sections at their addresses: nvdisasm then prints those
addresses) from a file: `nvdisasm -c FILE`, the whole object in one run (a run costs about half a
second, mostly nvdisasm's start), or for a large object `-fun SYMBOL_INDEX`, one function per run.

An instruction line reads `/*0e10*/  CALL.ABS.NOINC `(_Z6settlefii) ;`: its address, the text
(predicate, opcode, operands; branch targets as nvdisasm's labels or symbols) and `;`. Every
instruction of the architectures nvdisasm still reads (sm_75 and later) is 16 bytes.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys

from aspace_dap.paths import make_temp_dir

from aspace_dap.errors import AspaceError

from ..base import DecodedInstruction, Disassembler, DisassemblerMissing, find_tool

PACKAGE = "the nvidia-cuda-nvdisasm wheel (pip install nvidia-cuda-nvdisasm; a dependency of aspace-dap on Linux " \
          "and Windows) or the CUDA toolkit"
ENV = "ASPACE_NVDISASM"
WHOLE_OBJECT_BYTES = 4 << 20  # code up to this size is decoded in one run; larger objects one function a run
INSTRUCTION_BYTES = 16

_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")

SHF_EXECINSTR = 0x4


@functools.cache
def _find(override: str | None) -> str | None:
    if override is not None:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    found = find_tool(["nvdisasm"])
    if found:
        return found
    for root in sys.path:  # the wheel: site-packages/nvidia/<cuXX or cuda_nvdisasm>/bin/nvdisasm
        for candidate in sorted(glob.glob(os.path.join(root or ".", "nvidia", "*", "bin", "nvdisasm"))):
            if os.access(candidate, os.X_OK):
                return candidate
    return find_tool(["nvdisasm"], ["/usr/local/cuda/bin"])


class Nvdisasm(Disassembler):
    tool = "nvdisasm"
    package = PACKAGE
    min_size = INSTRUCTION_BYTES

    def __init__(self):
        self._files: dict[int, tuple[object, str]] = {}  # id(code object) -> (it, its file for nvdisasm)
        self._folder: str | None = None

    def locate(self) -> str:
        override = os.environ.get(ENV)
        found = _find(override)
        if found is None:
            raise self.missing(f"{ENV}={override} is not an executable file" if override else "nvdisasm not found")
        return found

    def _file(self, code_object) -> str:
        """The laid-out cubin in a file of its own (nvdisasm reads no pipes), written once per object."""
        held = self._files.get(id(code_object))
        if held is not None and held[0] is code_object:
            return held[1]
        if self._folder is None:
            self._folder = make_temp_dir("aspace-nvdisasm-")
        path = os.path.join(self._folder, f"{len(self._files)}.cubin")
        with open(path, "wb") as f:
            f.write(code_object.data)
        self._files[id(code_object)] = (code_object, path)
        return path

    def decode(self, code_object, start: int, end: int) -> list[DecodedInstruction]:
        tool = self.locate()
        argv = [tool, "-c"]
        code_bytes = sum(s["sh_size"] for s in code_object.elf.iter_sections() if s["sh_flags"] & SHF_EXECINSTR)
        if code_bytes > WHOLE_OBJECT_BYTES:
            index = _function_symbol_index(code_object, start)
            if index is not None:
                argv += ["-fun", str(index)]
        try:
            out, _ = self.run(argv + [self._file(code_object)])
        except DisassemblerMissing:
            raise
        except AspaceError as exc:  # an nvdisasm older than the cubin's architecture refuses it
            raise self.missing(f"{exc} (is this nvdisasm older than {code_object.processor}?)") from None
        return parse(out)


def parse(text: str) -> list[DecodedInstruction]:
    """The instructions of an `nvdisasm -c` listing, in its order."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(2):
            out.append(DecodedInstruction(int(m.group(1), 16), INSTRUCTION_BYTES, m.group(2).rstrip(" ;")))
    return out


def _function_symbol_index(code_object, address: int) -> int | None:
    """The symbol table index of the function symbol starting at `address` (nvdisasm's -fun)."""
    symtab = code_object.elf.get_section_by_name(".symtab")
    if symtab is None:
        return None
    for i, sym in enumerate(symtab.iter_symbols()):
        if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"] == address:
            return i
    return None
