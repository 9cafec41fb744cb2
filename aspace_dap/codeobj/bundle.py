"""Clang offload bundles: the container hipcc puts device code objects in.

Uncompressed layout (little endian):
    "__CLANG_OFFLOAD_BUNDLE__"  u64 entry count
    per entry: u64 offset, u64 size, u64 id length, id bytes
    entry data at the given offsets (from the start of the bundle)

Compressed bundles ("CCOB") wrap a whole uncompressed bundle:
    "CCOB"  u16 version  u16 method (0 zlib, 1 zstd)
    v1: u32 uncompressed size, u64 hash
    v2: u32 total size, u32 uncompressed size, u64 hash
    v3: u64 total size, u64 uncompressed size, u64 hash
    compressed payload
The hash is a truncated MD5 of the payload used by the runtime as a cache key;
it is not checked here because the decompressor already validates the stream.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aspace_dap.errors import CodeObjectError
from aspace_dap.inflate import Budget, code_object_budget, inflate_zlib, inflate_zstd

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"

COMPRESSION_ZLIB = 0
COMPRESSION_ZSTD = 1

# Guards against headers that claim absurd counts (a fuzzed count would otherwise make us loop
# for a long time); what compressed bundles inflate to is bounded by aspace_dap.inflate's budget.
MAX_ENTRIES = 4096
MAX_ID_LENGTH = 4096

# Header fields after magic, version and method: (struct format, has total size).
_CCOB_LAYOUTS = {
    1: ("<IQ", False),  # uncompressed size, hash
    2: ("<IIQ", True),  # total size, uncompressed size, hash
    3: ("<QQQ", True),
}


@dataclass(frozen=True)
class BundleEntry:
    bundle_id: str  # "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", "host-x86_64-unknown-linux"
    data: bytes

    @property
    def kind(self) -> str:
        return self.bundle_id.split("-", 1)[0]

    @property
    def triple(self) -> str:
        """The target triple ("amdgcn-amd-amdhsa-" with its empty environment), without the target ID."""
        return self._split()[0]

    @property
    def target_id(self) -> str:
        """Processor plus features ("gfx90a:xnack-"); empty for host entries."""
        return self._split()[1]

    def _split(self) -> tuple[str, str]:
        # "<kind>-<triple>[-<target id>]": the triple has 3 or 4 dash-separated
        # parts (the environment may be empty, giving "--gfx90a"), and the
        # target ID's features may themselves end in "-", so split at the processor.
        rest = self.bundle_id.split("-", 1)[1] if "-" in self.bundle_id else ""
        for marker in ("-gfx", "-sm_"):
            index = rest.find(marker)
            if index >= 0:
                return rest[:index], rest[index + 1 :]
        return rest, ""

    @property
    def is_amdgcn(self) -> bool:
        return self.kind != "host" and self.triple.startswith("amdgcn")


def is_bundle(data: bytes) -> bool:
    return data.startswith(BUNDLE_MAGIC) or data.startswith(COMPRESSED_MAGIC)


def parse_bundles(data: bytes, where: str = "bundle", budget: Budget | None = None) -> list[BundleEntry]:
    """Every entry of every bundle in `data` (a .hip_fatbin may hold several back to back); compressed
    bundles inflate within one budget for them all (the code object file's)."""
    entries: list[BundleEntry] = []
    budget = budget or code_object_budget()
    pos = 0
    while True:
        if data.startswith(BUNDLE_MAGIC, pos):
            found, end = _parse_uncompressed(data, pos, where)
        elif data.startswith(COMPRESSED_MAGIC, pos):
            found, end = _parse_compressed(data, pos, where, budget)
        else:
            raise CodeObjectError(f"{where}: no offload bundle magic at offset {pos}")
        entries.extend(found)
        pos = _next_bundle_start(data, end)
        if pos is None:
            return entries


def _next_bundle_start(data: bytes, end: int) -> int | None:
    # Bundles in a fat binary are padded to an alignment; the gap is zeros.
    candidates = [i for i in (data.find(BUNDLE_MAGIC, end), data.find(COMPRESSED_MAGIC, end)) if i >= 0]
    if not candidates:
        return None
    nxt = min(candidates)
    return nxt if not any(data[end:nxt]) else None


def _u64(data: bytes, offset: int, what: str, where: str) -> int:
    if offset + 8 > len(data):
        raise CodeObjectError(f"{where}: truncated {what} at offset {offset}")
    return struct.unpack_from("<Q", data, offset)[0]


def _parse_uncompressed(data: bytes, base: int, where: str) -> tuple[list[BundleEntry], int]:
    cursor = base + len(BUNDLE_MAGIC)
    count = _u64(data, cursor, "entry count", where)
    cursor += 8
    if count == 0 or count > MAX_ENTRIES:
        raise CodeObjectError(f"{where}: implausible bundle entry count {count}")
    entries = []
    end = cursor
    for index in range(count):
        offset = _u64(data, cursor, f"entry {index} offset", where)
        size = _u64(data, cursor + 8, f"entry {index} size", where)
        id_length = _u64(data, cursor + 16, f"entry {index} id length", where)
        cursor += 24
        if id_length > MAX_ID_LENGTH or cursor + id_length > len(data):
            raise CodeObjectError(f"{where}: entry {index} id runs past the end of the bundle")
        try:
            bundle_id = data[cursor : cursor + id_length].decode("ascii")
        except UnicodeDecodeError as exc:
            raise CodeObjectError(f"{where}: entry {index} id is not ASCII") from exc
        cursor += id_length
        start = base + offset
        if size and (offset < cursor - base or start + size > len(data)):
            raise CodeObjectError(
                f"{where}: entry {index} ({bundle_id}) data [{offset}, {offset + size}) "
                f"lies outside the bundle"
            )
        entries.append(BundleEntry(bundle_id, bytes(data[start : start + size])))
        end = max(end, start + size)
    end = max(end, cursor)
    return entries, end


def _parse_compressed(data: bytes, base: int, where: str, budget: Budget) -> tuple[list[BundleEntry], int]:
    if base + 8 > len(data):
        raise CodeObjectError(f"{where}: truncated compressed bundle header")
    version, method = struct.unpack_from("<HH", data, base + 4)
    layout = _CCOB_LAYOUTS.get(version)
    if layout is None:
        raise CodeObjectError(f"{where}: unsupported compressed bundle version {version}")
    fmt, records_total_size = layout
    header = 8 + struct.calcsize(fmt)
    if base + header > len(data):
        raise CodeObjectError(f"{where}: truncated compressed bundle header (version {version})")
    fields = struct.unpack_from(fmt, data, base + 8)
    if records_total_size:
        total_size, uncompressed_size = fields[0], fields[1]
    else:
        total_size, uncompressed_size = None, fields[0]
    if total_size is not None:
        if total_size < header or base + total_size > len(data):
            raise CodeObjectError(
                f"{where}: compressed bundle size {total_size} does not fit the {len(data) - base} bytes available"
            )
        end = base + total_size
    else:
        # Version 1 records no size: the payload runs to the next bundle or the end.
        nxt = data.find(COMPRESSED_MAGIC, base + header)
        end = nxt if nxt >= 0 else len(data)
    payload = bytes(data[base + header : end])
    inner = _decompress(payload, method, uncompressed_size, where, budget)
    if len(inner) != uncompressed_size:
        raise CodeObjectError(
            f"{where}: compressed bundle decompressed to {len(inner)} bytes, header says {uncompressed_size}"
        )
    if not inner.startswith(BUNDLE_MAGIC):
        raise CodeObjectError(f"{where}: compressed bundle does not contain an offload bundle")
    entries, _ = _parse_uncompressed(inner, 0, f"{where} (decompressed)")
    return entries, end


def _decompress(payload: bytes, method: int, expected_size: int, where: str, budget: Budget) -> bytes:
    """Decompress within the budget and at most one byte more than the header promises (enough to catch a lie)."""
    if method == COMPRESSION_ZSTD:
        return inflate_zstd(payload, f"{where}: compressed bundle", budget, expected_size)
    if method == COMPRESSION_ZLIB:
        return inflate_zlib(payload, f"{where}: compressed bundle", budget, expected_size)
    raise CodeObjectError(f"{where}: unknown compression method {method}")
