"""The section header table of a little-endian ELF64 file, read from bytes with every offset checked.

The relocating loaders of the vendors' relocatable objects (`adapters/amdgpu/relocations.py`,
`adapters/nvidia/cubin.py`) patch sections in place, so they need each header's own file offset,
which pyelftools does not keep.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aspace_dap.errors import CodeObjectError

SHT_NOBITS = 8


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int
    header_at: int  # where this section's header lies in the file

    @property
    def is_dwarf(self) -> bool:
        return self.name.startswith(".debug_")


def body(data: bytes, offset: int, size: int, label: str, what: str) -> bytes:
    """data[offset:offset+size], or a CodeObjectError naming `what` when it runs past the end."""
    if offset + size > len(data):
        raise CodeObjectError(f"{label}: {what} runs past the end of the {len(data)}-byte file")
    return data[offset:offset + size]


def section_table(data: bytes, label: str) -> list[Section]:
    """Every section of the file, named from its section name table; each body (but a NOBITS one's)
    lies inside the file."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CodeObjectError(f"{label}: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shnum and (shentsize != 64 or shoff + shnum * 64 > len(data)):
        raise CodeObjectError(f"{label}: section header table lies outside the file")
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]
    if not 0 <= shstrndx < shnum:
        raise CodeObjectError(f"{label}: bad section name table index {shstrndx}")
    names = body(data, raw[shstrndx][4], raw[shstrndx][5], label, "the section name table")
    out = []
    for i, (name, stype, flags, addr, off, size, link, info, align, entsize) in enumerate(raw):
        if stype != SHT_NOBITS:
            body(data, off, size, label, f"section {i}")
        end = names.find(b"\0", name)
        text = names[name:end if end >= 0 else len(names)].decode("latin-1") if name < len(names) else ""
        out.append(Section(i, text, stype, flags, addr, off, size, link, info, align, entsize, shoff + i * 64))
    return out
