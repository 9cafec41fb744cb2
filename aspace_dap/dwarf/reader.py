"""Bounds-checked reading of DWARF sections and the ELF facts the decoders need.

Every overrun becomes a CodeObjectError naming the section, so hostile input
never lets an IndexError or struct.error escape.
"""

from __future__ import annotations

from ..errors import CodeObjectError


def section_bytes(elf, name: str) -> bytes:
    """The contents of a pyelftools section by name; b"" when absent or NOBITS."""
    sec = elf.get_section_by_name(name)
    if sec is None or sec["sh_type"] == "SHT_NOBITS":
        return b""
    try:
        return bytes(sec.data())
    except Exception as exc:  # pyelftools raises assorted errors on bad section headers
        raise CodeObjectError(f"cannot read section {name}: {exc}") from exc


def raw_e_machine(elf) -> int | None:
    """e_machine as a number; pyelftools turns known values into names."""
    try:
        stream = elf.stream
        stream.seek(18)
        raw = stream.read(2)
    except (AttributeError, OSError):
        return None
    if len(raw) != 2:
        return None
    return int.from_bytes(raw, "little" if elf.little_endian else "big")


class ByteReader:
    """Bounds-checked little-endian reads from a DWARF section.

    Shared by the section decoders (lists, lines, DIEs, call frames).
    """

    __slots__ = ("data", "pos", "section")

    def __init__(self, data: bytes, pos: int, section: str):
        self.data = data
        self.pos = pos
        self.section = section

    def _need(self, n: int) -> int:
        p = self.pos
        if p < 0 or p + n > len(self.data):
            raise CodeObjectError(f"{self.section}: truncated read of {n} bytes at {p:#x}")
        self.pos = p + n
        return p

    def u8(self) -> int:
        p = self._need(1)
        return self.data[p]

    def u16(self) -> int:
        p = self._need(2)
        return int.from_bytes(self.data[p : p + 2], "little")

    def u32(self) -> int:
        p = self._need(4)
        return int.from_bytes(self.data[p : p + 4], "little")

    def uint(self, size: int) -> int:
        p = self._need(size)
        return int.from_bytes(self.data[p : p + size], "little")

    def sint(self, size: int) -> int:
        p = self._need(size)
        return int.from_bytes(self.data[p : p + size], "little", signed=True)

    def offset(self, offset_size: int) -> int:
        return self.uint(offset_size)

    def bytes(self, n: int) -> bytes:
        p = self._need(n)
        return bytes(self.data[p : p + n])

    def uleb(self) -> int:
        return self._leb(signed=False)

    def sleb(self) -> int:
        return self._leb(signed=True)

    def _leb(self, signed: bool) -> int:
        data = self.data
        p = self.pos
        result = shift = 0
        n = len(data)
        while True:
            if p >= n:
                raise CodeObjectError(f"{self.section}: truncated LEB128 at {self.pos:#x}")
            b = data[p]
            p += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                if signed and b & 0x40:
                    result -= 1 << shift
                self.pos = p
                return result

    def cstr(self) -> bytes:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise CodeObjectError(f"{self.section}: unterminated string at {self.pos:#x}")
        s = bytes(self.data[self.pos : end])
        self.pos = end + 1
        return s

    def initial_length(self) -> tuple[int, int]:
        """(unit length, offset size) from a 32- or 64-bit DWARF initial length."""
        length = self.u32()
        if length == 0xFFFFFFFF:
            return self.uint(8), 8
        if length >= 0xFFFFFFF0:
            raise CodeObjectError(f"{self.section}: reserved unit length {length:#x} at {self.pos - 4:#x}")
        return length, 4
