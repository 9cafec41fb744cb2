"""AMDGPU machine code as LLVM's MC disassembler prints it, through llvm-objdump.

The decoder is LLVM's own, for the processor the code object names (`--mcpu=gfx90a`): the newest
llvm-objdump found is used (ROCm's, Debian's llvm-N packages, or ASPACE_LLVM_OBJDUMP), so that every
processor it knows decodes (gfx942 needs LLVM 17, gfx12 LLVM 18). One run decodes a whole function:
`llvm-objdump -d --mcpu=P --start-address=S --stop-address=E -`, the ELF on standard input.

Each instruction line reads `\\t<text>  // <ADDRESS>: <dwords>[ <branch target>]`; the dwords give
its size, and a branch's symbolized target (`<settle+0x40>`) stays in the text as objdump prints it.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess

from ..base import DecodedInstruction, Disassembler

PACKAGE = "Debian's llvm-19 package (apt-get install llvm-19; any LLVM 15+ with the AMDGPU target, or ROCm's)"
MIN_LLVM = 15
ENV = "ASPACE_LLVM_OBJDUMP"

_LINE = re.compile(r"^\t(?P<text>.*?)\s*// (?P<addr>[0-9A-Fa-f]+):(?P<words>(?: [0-9A-Fa-f]{8})+)"
                   r"(?:\s+(?P<target><[^>]*>))?\s*$")
_VERSION = re.compile(r"LLVM version (\d+)")
_DEBIAN_LLVM = re.compile(r"/usr/lib/llvm-(\d+)/bin/llvm-objdump")
_UNKNOWN_CPU = re.compile(r"'([^']+)' is not a recognized processor")


@functools.cache
def _version_of(path: str) -> int | None:
    """The LLVM major version of an llvm-objdump, None when it cannot run or has no AMDGPU target."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(out)
    return int(m.group(1)) if m and "amdgcn" in out else None


def _candidates():
    """(LLVM major, path) of every llvm-objdump on this machine that could decode AMDGPU code."""
    for major in range(MIN_LLVM, 64):  # Debian's llvm-N packages: llvm-objdump-N and /usr/lib/llvm-N/bin
        path = shutil.which(f"llvm-objdump-{major}")
        if path is None and os.access(f"/usr/lib/llvm-{major}/bin/llvm-objdump", os.X_OK):
            path = f"/usr/lib/llvm-{major}/bin/llvm-objdump"
        if path is not None:
            yield major, path
    for path in (shutil.which("llvm-objdump"), *sorted(glob.glob("/opt/rocm*/llvm/bin/llvm-objdump"))):
        # Debian's llvm-objdump is a link to one of its llvm-N packages, known by its place (as above)
        debian = _DEBIAN_LLVM.fullmatch(os.path.realpath(path)) if path else None
        version = int(debian.group(1)) if debian else _version_of(path) if path else None
        if version is not None:
            yield version, path


@functools.cache
def _find(override: str | None) -> tuple[str, int] | None:
    """(path, LLVM major version) of the llvm-objdump to use: ASPACE_LLVM_OBJDUMP, else the newest."""
    if override is not None:
        version = _version_of(override) if os.path.isfile(override) else None
        return (override, version) if version is not None else None
    found = [(v, p) for v, p in _candidates() if v >= MIN_LLVM]
    if not found:
        return None
    version, path = max(found)
    return path, version


class LlvmObjdump(Disassembler):
    tool = "llvm-objdump"
    package = PACKAGE
    min_size = 4
    max_size = 20  # LLVM's MaxInstLength for AMDGPU with the NSA image encodings (16 without)

    def locate(self) -> tuple[str, int]:
        override = os.environ.get(ENV)
        found = _find(override)
        if found is None:
            where = f"{ENV}={override} is not an llvm-objdump with the AMDGPU target" if override else \
                f"no llvm-objdump (LLVM {MIN_LLVM}+, AMDGPU target) found"
            raise self.missing(where)
        return found

    def decode(self, code_object, start: int, end: int) -> list[DecodedInstruction]:
        path, version = self.locate()
        processor = code_object.processor
        out, err = self.run([path, "-d", f"--mcpu={processor}",
                             f"--start-address=0x{start:x}", f"--stop-address=0x{end:x}",
                             self.code_file(code_object, ".co")])
        unknown = _UNKNOWN_CPU.search(err)
        if unknown:
            raise self.missing(f"llvm-objdump of LLVM {version} ({path}) does not know {unknown.group(1)}: "
                               f"a newer LLVM decodes it")
        return parse(out)


def parse(text: str) -> list[DecodedInstruction]:
    """The instructions of an llvm-objdump listing of AMDGPU code, in its order."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        insn = m.group("text").strip()
        if m.group("target"):
            insn = f"{insn} {m.group('target')}"
        out.append(DecodedInstruction(int(m.group("addr"), 16), 4 * len(m.group("words").split()), insn))
    return out
