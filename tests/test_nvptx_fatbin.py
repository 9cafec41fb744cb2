"""Device code in a host object's .nv_fatbin: the cubin nvcc embeds is the standalone build's, relocated alike."""

from __future__ import annotations

import io
import struct
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.codeobj.fatbin import FLAG_COMPRESSED, KIND_ELF, KIND_PTX, cubins, parse_fatbin
from aspace_dap.codeobj.loader import load_code_objects
from aspace_dap.errors import CodeObjectError

CUDA = Path(__file__).resolve().parent.parent / "examples" / "cuda"
PLAIN = CUDA / "divergent_call.sm_90.G.host.o"
ZSTD = CUDA / "divergent_call.sm_90.G.zstd.host.o"
STANDALONE = CUDA / "divergent_call.sm_90.G.cubin"
# nvcc's tool-info note records the command line, which differs between -cubin and -c
BUILD_NOTE = ".note.nv.tkinfo"


def fatbin_of(path: Path) -> bytes:
    return ELFFile(io.BytesIO(path.read_bytes())).get_section_by_name(".nv_fatbin").data()


def sections(image: bytes) -> dict[str, bytes]:
    elf = ELFFile(io.BytesIO(image))
    return {s.name: s.data() for s in elf.iter_sections() if s["sh_type"] != "SHT_NOBITS" and s.name != BUILD_NOTE}


def test_entries_of_a_plain_fatbin():
    entries = parse_fatbin(fatbin_of(PLAIN))
    assert sorted(e.kind for e in entries) == [KIND_PTX, KIND_ELF]
    elf = next(e for e in entries if e.kind == KIND_ELF)
    assert elf.sm == 90 and not elf.compressed and elf.name == "divergent_call.cu"
    assert elf.payload.startswith(b"\x7fELF")


def test_extracted_cubin_is_the_standalone_build():
    (label, image), = cubins(fatbin_of(PLAIN), "host")
    assert label == "host#sm_90"
    extracted, standalone = sections(image), sections(STANDALONE.read_bytes())
    assert set(extracted) == set(standalone)
    for name in standalone:
        assert extracted[name] == standalone[name], name


def test_loader_yields_the_relocated_cubin_from_a_host_object():
    objects = load_code_objects(PLAIN)
    assert len(objects) == 1
    co = objects[0]
    assert co.vendor == "nvidia" and co.name.endswith(".nv_fatbin#sm_90")
    reference = load_code_objects(STANDALONE)[0]
    got, want = sections(co.data), sections(reference.data)
    assert got == want
    # relocated: the two functions no longer share address 0
    addresses = {s["sh_addr"] for s in co.elf.iter_sections() if s.name.startswith(".text.")}
    assert len(addresses) == 2


def test_zstd_compressed_entry():
    entries = parse_fatbin(fatbin_of(ZSTD))
    elf = next(e for e in entries if e.kind == KIND_ELF)
    assert elf.compressed and elf.payload[:4] == b"\x28\xb5\x2f\xfd"
    pytest.importorskip("zstandard")
    (_, image), = cubins(fatbin_of(ZSTD))
    assert sections(image) == sections(STANDALONE.read_bytes())


def test_zstd_entry_without_the_package_says_what_it_needs(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as if not installed
    with pytest.raises(CodeObjectError, match="zstandard"):
        load_code_objects(ZSTD)


def _entry_at(data: bytes) -> int:
    return struct.unpack_from("<H", data, 6)[0]  # the container header's size: where entry 1 starts


def test_malformed_fatbins():
    good = fatbin_of(PLAIN)
    with pytest.raises(CodeObjectError, match="past the section's end"):
        parse_fatbin(good[: len(good) // 2])
    with pytest.raises(CodeObjectError, match="no fat binary magic"):
        parse_fatbin(b"\x01" * 32)
    bad = bytearray(good)
    struct.pack_into("<Q", bad, _entry_at(good) + 8, 1 << 40)  # payload size
    with pytest.raises(CodeObjectError, match="runs past its container"):
        parse_fatbin(bytes(bad))
    # a compressed flag over a payload that is not zstd: the old nvcc scheme
    bad = bytearray(good)
    at = _entry_at(good)
    flags, = struct.unpack_from("<Q", bad, at + 40)
    struct.pack_into("<Q", bad, at + 40, flags | FLAG_COMPRESSED)
    struct.pack_into("<I", bad, at + 16, 100)
    with pytest.raises(CodeObjectError, match="pre-zstd"):
        cubins(bytes(bad))


def test_host_object_without_any_fatbin(tmp_path):
    # the standalone cubin's host peer: drop the section name so nothing is found
    data = bytearray(PLAIN.read_bytes())
    at = data.find(b".nv_fatbin\0")
    data[at:at + 10] = b".xx_fatbin"
    path = tmp_path / "nofat.o"
    path.write_bytes(bytes(data))
    with pytest.raises(CodeObjectError, match="without a .hip_fatbin or .nv_fatbin"):
        load_code_objects(path)
