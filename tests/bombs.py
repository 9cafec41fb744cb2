"""Decompression bombs: small inputs that inflate to far more than they weigh, in every compressed
form the server reads (zstd fat binary entries, zstd and zlib compressed offload bundles, gzip cores,
deflated zip members). Built here from the real examples; the sizes a header declares are chosen by
the caller, so a bomb may tell the truth, understate or overstate what it holds."""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from pathlib import Path

import zstandard

from test_amdgpu_rocm_dialect import with_sections

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CUDA_HOST_OBJECT = EXAMPLES / "cuda" / "divergent_call.sm_90.G.host.o"
MiB = 1 << 20

FATBIN_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
KIND_ELF, FLAG_COMPRESSED = 2, 1 << 15
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def zeros_after(head: bytes, total: int) -> "iter[bytes]":
    """`head` and then zeros, `total` bytes in all, in megabyte pieces."""
    yield head
    left = total - len(head)
    while left > 0:
        piece = min(left, MiB)
        yield bytes(piece)
        left -= piece


def zstd_of(pieces) -> bytes:
    out = io.BytesIO()
    writer = zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False)
    for piece in pieces:
        writer.write(piece)
    writer.flush(zstandard.FLUSH_FRAME)
    return out.getvalue()


def zlib_of(pieces) -> bytes:
    compressor = zlib.compressobj(1)
    return b"".join(compressor.compress(piece) for piece in pieces) + compressor.flush()


def fatbin_bomb(inflated: int, declared: int | None = None) -> bytes:
    """A host object whose .nv_fatbin holds one zstd-compressed ELF entry of `inflated` bytes (an ELF
    magic, then zeros) that declares `declared` bytes (default: the truth)."""
    payload = zstd_of(zeros_after(b"\x7fELF", inflated))
    padded = payload + b"\0" * (-len(payload) % 8)
    entry = _ENTRY.pack(KIND_ELF, 0x101, _ENTRY.size, len(padded), len(payload), 0, 0, 8, 90, 0, 0,
                        FLAG_COMPRESSED, 0, inflated if declared is None else declared)
    body = entry + padded
    section = _CONTAINER.pack(FATBIN_MAGIC, 1, _CONTAINER.size, len(body)) + body
    return with_sections(CUDA_HOST_OBJECT.read_bytes(), {".nv_fatbin": section})


def bundle_bomb(inflated: int, declared: int | None = None, method: int = 1, version: int = 3) -> bytes:
    """A compressed offload bundle (CCOB, zstd = 1 or zlib = 0) whose inner bundle (a valid header with
    one amdgcn entry, then zeros) is `inflated` bytes and declares `declared` (default: the truth)."""
    bundle_id = b"hipv4-amdgcn-amd-amdhsa--gfx90a"
    header = BUNDLE_MAGIC + struct.pack("<Q", 1)
    offset = len(header) + 24 + len(bundle_id)
    header += struct.pack("<QQQ", offset, inflated - offset, len(bundle_id)) + bundle_id + b"\x7fELF"
    pieces = zeros_after(header, inflated)
    payload = zstd_of(pieces) if method == 1 else zlib_of(pieces)
    size = inflated if declared is None else declared
    if version == 2:
        return b"CCOB" + struct.pack("<HHIIQ", 2, method, 24 + len(payload), min(size, 2**32 - 1), 0) + payload
    return b"CCOB" + struct.pack("<HHQQQ", 3, method, 32 + len(payload), size, 0) + payload


def gzip_core_bomb(core: bytes, inflated: int) -> bytes:
    """A GPU core gzip-compressed, with zeros after it up to `inflated` bytes."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as archive:
        for piece in zeros_after(core, inflated):
            archive.write(piece)
    return out.getvalue()
