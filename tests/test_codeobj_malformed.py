"""Containers built around the real examples, and broken inputs that must give CodeObjectError."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import msgpack
import pytest
import zstandard
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspace_dap.codeobj import KernelDescriptor, load_code_objects, parse_bundles
from aspace_dap.codeobj.elfflags import decode_device_target
from aspace_dap.codeobj.metadata import decode_metadata, kernels_from_metadata, parse_notes
from aspace_dap.errors import CodeObjectError

import bombs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SMALL_CO = (EXAMPLES / "lds_tiles/lds_tiles.gfx1030.O2.co").read_bytes()
PLAIN_O0 = (EXAMPLES / "lds_tiles/lds_tiles.gfx90a.O0.co").read_bytes()
REAL_BUNDLE = (EXAMPLES / "lds_tiles/lds_tiles.bundle.o").read_bytes()
HOST_OBJECT = (EXAMPLES / "divergent_call/divergent_call.host.o").read_bytes()

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def make_bundle(entries: list[tuple[str, bytes]]) -> bytes:
    header_size = len(MAGIC) + 8 + sum(24 + len(bundle_id) for bundle_id, _ in entries)
    header = bytearray(MAGIC + struct.pack("<Q", len(entries)))
    body = bytearray()
    for bundle_id, data in entries:
        header += struct.pack("<QQQ", header_size + len(body), len(data), len(bundle_id)) + bundle_id.encode()
        body += data
    return bytes(header + body)


def compress_bundle(bundle: bytes, version: int, method: int) -> bytes:
    payload = zstandard.ZstdCompressor().compress(bundle) if method == 1 else zlib.compress(bundle)
    fake_hash = 0x0123456789ABCDEF
    if version == 1:
        return b"CCOB" + struct.pack("<HHIQ", 1, method, len(bundle), fake_hash) + payload
    if version == 2:
        total = 24 + len(payload)
        return b"CCOB" + struct.pack("<HHIIQ", 2, method, total, len(bundle), fake_hash) + payload
    total = 32 + len(payload)
    return b"CCOB" + struct.pack("<HHQQQ", 3, method, total, len(bundle), fake_hash) + payload


def section_offset(data: bytes, name: str) -> tuple[int, int]:
    import io

    elf = ELFFile(io.BytesIO(data))
    # LLVM may merge section names into .strtab, so the name table is found by index.
    section = elf.get_section(elf["e_shstrndx"]) if name == "names" else elf.get_section_by_name(name)
    return section["sh_offset"], section["sh_size"]


# Containers


@pytest.mark.parametrize("version, method", [(1, 1), (2, 1), (3, 1), (2, 0), (3, 0)])
def test_compressed_bundle_yields_the_plain_code_object(version, method):
    (co,) = load_code_objects(compress_bundle(REAL_BUNDLE, version, method), name="k.hipfb")
    assert co.data == PLAIN_O0
    assert co.name == "k.hipfb#hipv4-amdgcn-amd-amdhsa--gfx90a"


def test_fatbin_with_several_bundles_and_padding():
    first = make_bundle([("host-x86_64-unknown-linux-gnu", b""), ("hipv4-amdgcn-amd-amdhsa--gfx1030", SMALL_CO)])
    second = compress_bundle(make_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", PLAIN_O0)]), 3, 1)
    padding = b"\0" * (-len(first) % 4096)
    objects = load_code_objects(first + padding + second)
    assert [co.processor for co in objects] == ["gfx1030", "gfx90a"]


def test_bundle_entry_ids_are_split():
    (entry,) = [e for e in parse_bundles(REAL_BUNDLE) if e.is_amdgcn]
    assert (entry.kind, entry.triple, entry.target_id) == ("hipv4", "amdgcn-amd-amdhsa-", "gfx90a")
    custom = make_bundle([("hip-amdgcn-amd-amdhsa-gfx906:sramecc+:xnack-", SMALL_CO)])
    (entry,) = parse_bundles(custom)
    assert entry.target_id == "gfx906:sramecc+:xnack-" and entry.is_amdgcn


def test_bundle_without_device_code():
    with pytest.raises(CodeObjectError, match="no amdgcn code object"):
        load_code_objects(make_bundle([("host-x86_64-unknown-linux-gnu", b"")]))
    with pytest.raises(CodeObjectError, match="no amdgcn code object"):
        load_code_objects(make_bundle([("openmp-nvptx64-nvidia-cuda-sm_80", b"\x7fELF...")]))


def test_host_object_without_fatbin():
    offset, size = section_offset(HOST_OBJECT, "names")
    names = HOST_OBJECT[offset : offset + size].replace(b".hip_fatbin\0", b".xip_fatbin\0")
    patched = HOST_OBJECT[:offset] + names + HOST_OBJECT[offset + size :]
    with pytest.raises(CodeObjectError, match="without a .hip_fatbin"):
        load_code_objects(patched, name="host.o")


# Broken containers


@pytest.mark.parametrize(
    "data, message",
    [
        (MAGIC, "truncated entry count"),
        (MAGIC + struct.pack("<Q", 0), "entry count 0"),
        (MAGIC + struct.pack("<Q", 1 << 40), "implausible"),
        (MAGIC + struct.pack("<QQQQ", 1, 0, 10, 500) + b"x" * 8, "id runs past"),
        (MAGIC + struct.pack("<QQQQ", 1, 56, 1 << 20, 0), "outside the bundle"),
        (MAGIC + struct.pack("<QQQQ", 1, 0, 8, 4) + b"hipv4", "outside the bundle"),
        (MAGIC + struct.pack("<QQQQ", 1, 60, 0, 4) + b"hi\xffv", "not ASCII"),
        (b"CCOB\x01", "truncated compressed bundle header"),
        (b"CCOB" + struct.pack("<HH", 9, 1) + b"\0" * 40, "unsupported compressed bundle version 9"),
        (b"CCOB" + struct.pack("<HHIIQ", 2, 7, 36, 10, 0) + b"\0" * 12, "unknown compression method 7"),
        (b"CCOB" + struct.pack("<HHIIQ", 2, 1, 4000, 10, 0) + b"\0" * 12, "does not fit"),
        (b"CCOB" + struct.pack("<HHIIQ", 2, 1, 36, 10, 0) + b"\x28\xb5\x2f\xfd" + b"\x55" * 8, "zstd payload"),
        (b"CCOB" + struct.pack("<HHIIQ", 2, 0, 36, 10, 0) + b"\x78\x9c" + b"\x55" * 10, "zlib payload"),
        (b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + 11, 99, 0) + zlib.compress(b"hello world")[:11], "decompressed"),
    ],
)
def test_broken_bundles(data, message):
    with pytest.raises(CodeObjectError, match=message):
        load_code_objects(data)


def test_compressed_bundle_size_mismatch_and_non_bundle_payload():
    good = compress_bundle(REAL_BUNDLE, 3, 1)
    lying = good[:16] + struct.pack("<Q", len(REAL_BUNDLE) + 5) + good[24:]
    with pytest.raises(CodeObjectError, match="header says"):
        load_code_objects(lying)
    with pytest.raises(CodeObjectError, match="does not contain an offload bundle"):
        load_code_objects(compress_bundle(b"just some bytes", 2, 1))


# Broken ELF files


@pytest.mark.parametrize("cut", [4, 20, 63, 64, 1000, len(SMALL_CO) // 2, len(SMALL_CO) - 1])
def test_truncated_elf(cut):
    with pytest.raises(CodeObjectError, match=r"^cut\.co: .*truncated"):
        load_code_objects(SMALL_CO[:cut], name="cut.co")


def test_not_a_code_object(tmp_path):
    with pytest.raises(CodeObjectError, match="neither an ELF file nor an offload bundle"):
        load_code_objects(b"#!/bin/sh\necho hi\n")
    with pytest.raises(CodeObjectError, match="cannot open code object"):
        load_code_objects(tmp_path / "missing.co")
    with pytest.raises(CodeObjectError, match="cannot load"):
        load_code_objects(12345)


def test_bad_metadata_msgpack():
    offset, _ = section_offset(SMALL_CO, ".note")
    namesz = struct.unpack_from("<I", SMALL_CO, offset)[0]
    desc = offset + 12 + ((namesz + 3) & ~3)
    broken = SMALL_CO[:desc] + b"\xc1" + SMALL_CO[desc + 1 :]  # 0xc1 is never valid MessagePack
    with pytest.raises(CodeObjectError, match="not valid MessagePack"):
        load_code_objects(broken)


def test_bad_note_header():
    offset, _ = section_offset(SMALL_CO, ".note")
    broken = SMALL_CO[:offset + 4] + struct.pack("<I", 0x7FFFFFF0) + SMALL_CO[offset + 8 :]
    with pytest.raises(CodeObjectError, match="note at offset 0 claims"):
        load_code_objects(broken)
    with pytest.raises(CodeObjectError, match="truncated note header"):
        parse_notes(b"\x07\0\0\0", "n")


def test_metadata_shape_errors():
    with pytest.raises(CodeObjectError, match="expected a map"):
        decode_metadata(msgpack.packb([1, 2]), "m")
    with pytest.raises(CodeObjectError, match="not a list"):
        kernels_from_metadata({"amdhsa.kernels": {}}, "m")
    with pytest.raises(CodeObjectError, match="is not a map"):
        kernels_from_metadata({"amdhsa.kernels": [3]}, "m")
    with pytest.raises(CodeObjectError, match=r"\.name is 5, expected str"):
        kernels_from_metadata({"amdhsa.kernels": [{".name": 5}]}, "m")
    with pytest.raises(CodeObjectError, match=r"missing \.wavefront_size"):
        kernels_from_metadata({"amdhsa.kernels": [{".name": "k"}]}, "m")
    # Bytes keys (old raw-string encoders) are decoded rather than rejected.
    assert decode_metadata(msgpack.packb({b"amdhsa.version": [1, 2]}, use_bin_type=False), "m") == {
        "amdhsa.version": [1, 2]
    }


def test_descriptor_needs_64_bytes():
    with pytest.raises(CodeObjectError, match="needs 64"):
        KernelDescriptor.parse(b"\0" * 10, 0x800)


def test_e_flags_decoding_across_versions():
    v4 = decode_device_target(224, 0x3F | 0x300 | 0x800, 64, 2)
    assert (v4.processor, v4.xnack, v4.sramecc) == ("gfx90a", "on", "off")
    v3 = decode_device_target(224, 0x2F | 0x100, 64, 1)
    assert (v3.processor, v3.xnack, v3.sramecc) == ("gfx906", "on", "off")
    v6 = decode_device_target(224, 0x51 | 0x100 | (1 << 24), 64, 4)
    assert (v6.processor, v6.generic_version) == ("gfx9-generic", 1)
    assert decode_device_target(224, 0xFE, 64, 2).processor == "unknown-mach-0x0fe"
    cuda = decode_device_target(190, 80, 0, 0)
    assert (cuda.vendor, cuda.processor) == ("nvidia", "sm_80")


# Fuzzing: any mutation either loads or raises CodeObjectError, nothing else.

_mutations = st.lists(st.tuples(st.integers(0, len(SMALL_CO) - 1), st.integers(0, 255)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=_mutations, cut=st.one_of(st.none(), st.integers(0, len(SMALL_CO))))
def test_fuzz_code_object(mutations, cut):
    data = bytearray(SMALL_CO)
    for position, value in mutations:
        data[position] = value
    if cut is not None:
        data = data[:cut]
    try:
        for co in load_code_objects(bytes(data)):
            co.symbol_at(0x1900)
            if co.has_dwarf():
                co.dwarf_info()
    except CodeObjectError:
        pass


_header_mutations = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(mutations=_header_mutations, compressed=st.booleans())
def test_fuzz_bundle_headers(mutations, compressed):
    data = bytearray(compress_bundle(REAL_BUNDLE, 3, 1) if compressed else REAL_BUNDLE)
    for position, value in mutations:
        data[position] = value
    try:
        load_code_objects(bytes(data))
    except CodeObjectError:
        pass


# Decompression bombs: whatever a header declares, what comes out is counted as it streams and stops
# at the code object's budget (aspace_dap.inflate), with a refusal that names the limit.

BOMBS = {
    "fatbin-zstd": lambda inflated, declared=None: bombs.fatbin_bomb(inflated, declared),
    "bundle-zstd-v3": lambda inflated, declared=None: bombs.bundle_bomb(inflated, declared, 1, 3),
    "bundle-zlib-v3": lambda inflated, declared=None: bombs.bundle_bomb(inflated, declared, 0, 3),
    "bundle-zstd-v2": lambda inflated, declared=None: bombs.bundle_bomb(inflated, declared, 1, 2),
}


def _peak_while(action) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("kind", BOMBS)
def test_decompression_bombs_stop_at_the_code_object_limit(monkeypatch, kind):
    from aspace_dap import limits

    monkeypatch.setattr(limits, "MAX_CODE_OBJECT_BYTES", 8 << 20)
    data = BOMBS[kind](256 << 20)
    assert len(data) < 2 << 20  # a quarter gigabyte in at most a megabyte or so

    def load() -> None:
        with pytest.raises(CodeObjectError, match="MAX_CODE_OBJECT_BYTES") as raised:
            load_code_objects(data)
        assert "inflates to more than 8388608 bytes" in str(raised.value)

    assert _peak_while(load) < 24 << 20  # the budget and one chunk, not the quarter gigabyte


def test_decompression_bombs_with_any_declared_size_load_or_fail_cleanly(monkeypatch):
    """Fixed seed: bombs of every kind that tell the truth, understate or overstate their size."""
    import random

    from aspace_dap import limits

    monkeypatch.setattr(limits, "MAX_CODE_OBJECT_BYTES", 4 << 20)
    rng = random.Random(2211)
    for round_ in range(24):
        kind = rng.choice(sorted(BOMBS))
        inflated = rng.choice([200, 4096, 1 << 20, (4 << 20) - 1, 4 << 20, (4 << 20) + 1, 48 << 20])
        declared = rng.choice([None, 0, 1, inflated - 1, inflated + 1, 2**32 - 1, 2**63, 2**64 - 1])
        if kind.endswith("v2") and declared is not None:
            declared = min(declared, 2**32 - 1)
        data = BOMBS[kind](inflated, declared)

        def load() -> None:
            try:
                load_code_objects(data)
            except CodeObjectError:
                pass
            except Exception as exc:  # pragma: no cover - the message is the point
                raise AssertionError(f"round {round_} ({kind}, {inflated} declared {declared}): "
                                     f"{type(exc).__name__}: {exc}") from exc

        peak = _peak_while(load)
        assert peak < 16 << 20, (round_, kind, inflated, declared, peak)
