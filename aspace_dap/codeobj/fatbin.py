"""CUDA fat binaries (a host object's or executable's `.nv_fatbin` section): the cubins inside.

A section holds one or more containers, each a 16-byte header {u32 magic 0xBA55ED50, u16 version,
u16 header size, u64 size of the entries that follow} and then entries back to back. An entry is a
header {u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size (padded), u32
compressed size, u32, u16 code version minor, u16 major, u32 SM number, u32 name offset, u32 name
length, u64 flags, u64, u64 uncompressed size} (longer headers carry more, after these) and its
payload. Flag bit 15 marks a compressed payload: nvcc 12.4 and later compress with zstd (frame
magic 28 b5 2f fd), which needs the `zstandard` package here; older nvcc used its own LZ scheme,
which is not decoded (`nvcc --no-compress` writes plain entries). Compressed entries inflate under
the streaming cap of aspace_dap.inflate, whatever size their header declares.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aspace_dap.errors import CodeObjectError
from aspace_dap.inflate import Budget, code_object_budget, inflate_zstd

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_ELF = 2
FLAG_COMPRESSED = 1 << 15
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")  # the fields every entry header has (64 bytes)


@dataclass(frozen=True)
class FatbinEntry:
    kind: int
    sm: int  # 90 for sm_90
    code_version: tuple[int, int]
    flags: int
    name: str  # the source file nvcc compiled
    payload: bytes  # as stored: compressed when `compressed`
    uncompressed_size: int
    label: str

    @property
    def compressed(self) -> bool:
        return bool(self.flags & FLAG_COMPRESSED)

    @property
    def is_elf(self) -> bool:
        return self.kind == KIND_ELF

    def image(self, budget: Budget | None = None) -> bytes:
        """The entry's bytes, decompressed within `budget` (the code object file's; see aspace_dap.inflate):
        the header's uncompressed size is checked, never trusted."""
        if not self.compressed:
            return self.payload
        if not self.payload.startswith(ZSTD_MAGIC):
            raise CodeObjectError(f"{self.label}: compressed with nvcc's pre-zstd scheme, which is not "
                                  f"decoded here; rebuild with `nvcc --no-compress`")
        try:
            import zstandard  # noqa: F401
        except ImportError:
            raise CodeObjectError(f"{self.label}: the payload is zstd-compressed; install the 'zstandard' "
                                  f"package to read it, or rebuild with `nvcc --no-compress`") from None
        data = inflate_zstd(self.payload, self.label, budget or code_object_budget(), self.uncompressed_size)
        if len(data) != self.uncompressed_size:
            raise CodeObjectError(f"{self.label}: decompressed to {len(data)} bytes, the header says "
                                  f"{self.uncompressed_size}")
        return data


def is_fatbin(data: bytes) -> bool:
    return len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC


def parse_fatbin(data: bytes, label: str = ".nv_fatbin") -> list[FatbinEntry]:
    """Every entry of every container in `data`, bounds-checked."""
    entries: list[FatbinEntry] = []
    at = 0
    while at < len(data):
        if not any(data[at:at + 16]):
            at += 8  # containers are padded apart with zeros
            continue
        if at + _CONTAINER.size > len(data):
            raise CodeObjectError(f"{label}: container header at {at:#x} is cut short")
        magic, _, header_size, size = _CONTAINER.unpack_from(data, at)
        if magic != FATBIN_MAGIC:
            raise CodeObjectError(f"{label}: no fat binary magic at {at:#x} (found {magic:#010x})")
        start, end = at + header_size, at + header_size + size
        if header_size < _CONTAINER.size or end > len(data):
            raise CodeObjectError(f"{label}: container at {at:#x} claims {size} bytes past the section's end")
        entries.extend(_entries(data, start, end, label))
        at = end
    return entries


def _entries(data: bytes, at: int, end: int, label: str) -> list[FatbinEntry]:
    out = []
    while at < end:
        if at + _ENTRY.size > end:
            raise CodeObjectError(f"{label}: entry header at {at:#x} is cut short")
        (kind, _, header_size, payload_size, compressed_size, _, minor, major, sm, name_at, name_len, flags, _,
         uncompressed_size) = _ENTRY.unpack_from(data, at)
        where = f"{label}@{at:#x}"
        if header_size < _ENTRY.size or at + header_size + payload_size > end:
            raise CodeObjectError(f"{where}: entry of {header_size}+{payload_size} bytes runs past its container")
        body = at + header_size
        stored = compressed_size if flags & FLAG_COMPRESSED else payload_size
        if stored > payload_size:
            raise CodeObjectError(f"{where}: compressed size {stored} is larger than the payload ({payload_size})")
        name = b""
        if name_len and name_at + name_len <= header_size:
            name = data[at + name_at:at + name_at + name_len].split(b"\0", 1)[0]
        out.append(FatbinEntry(kind, sm, (major, minor), flags, name.decode("latin-1"), data[body:body + stored],
                               uncompressed_size if flags & FLAG_COMPRESSED else payload_size,
                               f"{label}#sm_{sm}" + ("" if kind == KIND_ELF else ".ptx")))
        at = body + payload_size
    return out


def cubins(data: bytes, label: str = ".nv_fatbin", budget: Budget | None = None) -> list[tuple[str, bytes]]:
    """(label, ELF image) of each cubin entry; PTX entries are source for the JIT, not debuggable code.
    Compressed entries inflate within one budget for them all (the code object file's)."""
    found = []
    budget = budget or code_object_budget()
    for entry in parse_fatbin(data, label):
        if not entry.is_elf:
            continue
        image = entry.image(budget)
        if not image.startswith(b"\x7fELF"):
            raise CodeObjectError(f"{entry.label}: the ELF entry does not hold an ELF image")
        found.append((entry.label, image))
    return found
