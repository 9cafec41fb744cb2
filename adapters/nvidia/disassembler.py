"""SASS as NVIDIA's nvdisasm prints it.

nvdisasm comes with the `nvidia-cuda-nvdisasm` wheel (a dependency of aspace-dap where NVIDIA
publishes it: Linux x86-64 and aarch64, Windows), the CUDA toolkit, or ASPACE_NVDISASM. It reads the
cubin as the session laid it out (code sections at their addresses: nvdisasm then prints those
addresses) from a file: `nvdisasm -c FILE`, the whole object in one run (a run costs about half a
second, mostly nvdisasm's start), or for a large object `-fun SYMBOL_INDEX`, one function per run.

CUDA 13's nvdisasm no longer decodes sm_50 to sm_72 (Maxwell, Pascal, Volta: "CUDA architecture SM61 is
deprecated"), and the wheel ships only 13.x. For those cubins an nvdisasm of CUDA 12 or older is looked
for where users have one (ASPACE_NVDISASM, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda*/bin),
by the release its `--version` prints; without one, the error says which release is needed and which
were found.

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


from aspace_dap.errors import AspaceError

from ..base import DecodedInstruction, Disassembler, DisassemblerMissing, find_tool

PACKAGE = "the nvidia-cuda-nvdisasm wheel (pip install nvidia-cuda-nvdisasm; a dependency of aspace-dap on Linux " \
          "and Windows) or the CUDA toolkit"
ENV = "ASPACE_NVDISASM"
LAST_RELEASE_FOR_OLD_SMS = 12  # CUDA 13 dropped sm_50 - sm_72
FIRST_SM_OF_CUDA13 = 75
WHOLE_OBJECT_BYTES = 4 << 20  # code up to this size is decoded in one run; larger objects one function a run
INSTRUCTION_BYTES = 16

_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")

SHF_EXECINSTR = 0x4


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.cache
def _candidates(override: str | None, path: str, cuda_home: str, cuda_path: str) -> tuple[str, ...]:
    """Every nvdisasm the user has, in the order they are preferred (the arguments key the cache)."""
    if override is not None:
        return (override,) if _executable(override) else ()
    found: list[str] = []
    on_path = find_tool(["nvdisasm"])
    if on_path:
        found.append(on_path)
    for home in (cuda_home, cuda_path):
        if home:
            found.append(os.path.join(home, "bin", "nvdisasm"))
    for root in sys.path:  # the wheel: site-packages/nvidia/<cuXX or cuda_nvdisasm>/bin/nvdisasm
        found.extend(sorted(glob.glob(os.path.join(root or ".", "nvidia", "*", "bin", "nvdisasm"))))
    found.append("/usr/local/cuda/bin/nvdisasm")
    found.extend(sorted(glob.glob("/usr/local/cuda-*/bin/nvdisasm"), reverse=True))
    out: list[str] = []
    for candidate in found:
        real = os.path.realpath(candidate)
        if _executable(candidate) and real not in (os.path.realpath(c) for c in out):
            out.append(candidate)
    return tuple(out)


@functools.cache
def _release(tool: str) -> tuple[int, int] | None:
    """The CUDA release an nvdisasm belongs to (`--version`: "release 13.0, V13.0.88"), None if it says none."""
    import subprocess

    try:
        done = subprocess.run([tool, "--version"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+)\.(\d+)", done.stdout.decode("utf-8", "replace"))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _sm(processor: str | None) -> int | None:
    m = re.fullmatch(r"sm_(\d+)[a-z]?", processor or "")
    return int(m.group(1)) if m else None


def _find(override: str | None, processor: str | None = None) -> str | None:
    """The nvdisasm to decode `processor`'s code with: the first the user has, except that sm_50 - sm_72
    need one of CUDA 12 or older (None when there is none: `missing_for` says why)."""
    tools = _candidates(override, os.environ.get("PATH", ""), os.environ.get("CUDA_HOME", ""),
                        os.environ.get("CUDA_PATH", ""))
    sm = _sm(processor)
    if sm is None or sm >= FIRST_SM_OF_CUDA13 or override is not None:
        return tools[0] if tools else None
    for tool in tools:
        release = _release(tool)
        if release is not None and release[0] <= LAST_RELEASE_FOR_OLD_SMS:
            return tool
    return None


def missing_for(override: str | None, processor: str | None) -> str:
    """Why no nvdisasm decodes `processor`: what was found, and what is needed."""
    if override:
        return f"{ENV}={override} is not an executable file"
    tools = _candidates(override, os.environ.get("PATH", ""), os.environ.get("CUDA_HOME", ""),
                        os.environ.get("CUDA_PATH", ""))
    if not tools:
        return "nvdisasm not found"
    found = ", ".join(f"{t} (CUDA {'.'.join(map(str, r)) if (r := _release(t)) else 'release unknown'})"
                      for t in tools)
    return (f"{processor} code needs the nvdisasm of CUDA {LAST_RELEASE_FOR_OLD_SMS} or older (CUDA 13 dropped "
            f"sm_50 to sm_72), found only {found}; put a CUDA {LAST_RELEASE_FOR_OLD_SMS} toolkit's bin on PATH, "
            f"or set CUDA_HOME or {ENV}")


class Nvdisasm(Disassembler):
    tool = "nvdisasm"
    package = PACKAGE
    min_size = INSTRUCTION_BYTES

    def locate(self, processor: str | None = None) -> str:
        override = os.environ.get(ENV)
        found = _find(override, processor)
        if found is None:
            why = missing_for(override, processor)
            # an old SM's missing release: the wheel (13.x only) cannot provide it, so it is not offered
            raise DisassemblerMissing(why) if "needs the nvdisasm" in why else self.missing(why)
        return found

    def decode(self, code_object, start: int, end: int) -> list[DecodedInstruction]:
        tool = self.locate(code_object.processor)
        argv = [tool, "-c"]
        code_bytes = sum(s["sh_size"] for s in code_object.elf.iter_sections() if s["sh_flags"] & SHF_EXECINSTR)
        if code_bytes > WHOLE_OBJECT_BYTES:
            index = _function_symbol_index(code_object, start)
            if index is not None:
                argv += ["-fun", str(index)]
        try:
            out, _ = self.run(argv + [self.code_file(code_object, ".cubin")])  # (nvdisasm reads no pipe)
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
