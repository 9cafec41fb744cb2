"""Intel GPU machine code as IGA (Intel's Graphics Assembler) prints it, through `iga64`.

iga64 comes with Debian's libigc-tools (the same IGC as intel-opencl-icd's ocloc), or
ASPACE_IGA64. It decodes a raw kernel binary for a platform: the code section of the device ELF
is written to a file and decoded whole in one run (`iga64 -d -p=12p1 -Xprint-pc FILE`; a run
takes milliseconds), the platform from the device the code object or the dump names (IGA's names:
12p1 for Xe-LP/tgllp, 12p71 for Xe-HPG/acm, 12p72 for Xe-HPC/pvc).

An instruction line reads `/* [0A30]  */ <text>` with its offset in the section; labels (`L2608:`,
numbered by section offset) are lines of their own. An instruction is 16 bytes, or 8 when
compacted: its size is the distance to the next one.
"""

from __future__ import annotations

import functools
import os
import re

from aspace_dap.errors import AspaceError

from ..base import DecodedInstruction, Disassembler, find_tool

PACKAGE = "Debian's libigc-tools package (apt-get install libigc-tools)"
ENV = "ASPACE_IGA64"
# the register-file families of adapter.py -> IGA's platform names (iga64 -h=p)
PLATFORMS = {"gen8": "8", "gen9": "9", "gen11": "11", "gen12lp": "12p1", "xe_hp": "12p5", "xe_hpg": "12p71",
             "xe_hpc": "12p72", "xe2": "xe2"}
SHF_EXECINSTR = 0x4

_LINE = re.compile(r"^/\* \[([0-9A-Fa-f]+)\]\s*\*/ (.*?)\s*$")


@functools.cache
def _find(override: str | None) -> str | None:
    if override is not None:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    return find_tool(["iga64"])


class Iga(Disassembler):
    tool = "iga64"
    package = PACKAGE
    min_size = 8

    def __init__(self, adapter):
        super().__init__()
        self.adapter = adapter  # the device: the code object's (ocloc's header, a zebin note) or the dump's
        self._count = 0

    def locate(self) -> str:
        override = os.environ.get(ENV)
        found = _find(override)
        if found is None:
            raise self.missing(f"{ENV}={override} is not an executable file" if override else "iga64 not found")
        return found

    def platform(self, code_object) -> str:
        from .adapter import device_of_code_object
        device = device_of_code_object(code_object) or self.adapter.device
        if device is None:
            raise AspaceError("IGA needs the GPU's platform: neither the code object nor the dump names the device")
        platform = PLATFORMS.get(device.family)
        if platform is None:
            raise AspaceError(f"no IGA platform for the {device.family} family")
        return platform

    def decode(self, code_object, start: int, end: int) -> list[DecodedInstruction]:
        tool = self.locate()
        platform = self.platform(code_object)
        section = next((s for s in code_object.elf.iter_sections() if s["sh_flags"] & SHF_EXECINSTR
                        and s["sh_addr"] <= start < s["sh_addr"] + s["sh_size"]), None)
        if section is None:
            return []
        base, data = section["sh_addr"], section.data()
        path = os.path.join(self.temp_folder(), f"{self._count}.krn")
        self._count += 1
        with open(path, "wb") as f:
            f.write(data)
        try:
            out, _ = self.run([tool, "-d", f"-p={platform}", "-Xprint-pc", path])
        finally:
            os.unlink(path)
        return parse(out, base, len(data))


def parse(text: str, base: int, length: int) -> list[DecodedInstruction]:
    """The instructions of an `iga64 -d -Xprint-pc` listing of `length` bytes placed at `base`."""
    found = [(int(m.group(1), 16), m.group(2)) for m in map(_LINE.match, text.splitlines()) if m]
    out = []
    for i, (pc, insn) in enumerate(found):
        end = found[i + 1][0] if i + 1 < len(found) else min(length, pc + 16)
        out.append(DecodedInstruction(base + pc, end - pc, insn.strip()))
    return out
