"""Sparse memories, registers and private memory: unavailable bytes, the swizzle, overlays, save(), mapping."""

import json
import os
import resource
import zipfile

import numpy as np
import pytest

from aspace_dap.errors import StateError, UnavailableError
from aspace_dap.state import (PrivateMemory, Region, SparseMemory, StateWriter, load_state, swizzle, unswizzle,
                              validate_state)
from aspace_dap.state.sample import GLOBAL_BASE, GLOBAL_SIZE, global_bytes, private_lanes, sample_writer


def _memory(regions_and_bytes):
    """SparseMemory over in-memory bytes (FileSpan stand-in built from a temp-free array)."""
    from aspace_dap.state.files import FileSpan

    regions = []
    for address, size, data in regions_and_bytes:
        span = FileSpan(lambda: (None, 0), len(data))
        span._array = np.frombuffer(data, dtype=np.uint8)
        regions.append(Region(address, size, "mem.bin", 0, span=span))
    return SparseMemory(regions, "global", "memory")


# ----- the swizzle ---------------------------------------------------------------------------

@pytest.mark.parametrize("lanes, expected_offset", [(64, 278), (32, 150)])
def test_swizzle_matches_hand_computed_offset(lanes, expected_offset):
    # lane 5, lane address 6: (6 // 4) * lanes * 4 + 5 * 4 + 6 % 4
    per_lane = np.zeros((lanes, 16), dtype=np.uint8)
    per_lane[5, 6] = 0xAB
    wave = np.frombuffer(swizzle(per_lane), dtype=np.uint8)
    assert np.flatnonzero(wave).tolist() == [expected_offset]
    assert np.array_equal(unswizzle(wave, lanes), per_lane)
    private = PrivateMemory("swizzled", len(wave), lanes, _memory([(0, len(wave), wave.tobytes())]))
    offsets, inside = private.wave_offsets(5, 6)
    assert int(offsets) == expected_offset and bool(inside)
    data, valid = private.read_lane(5, 6, 1)
    assert data.tolist() == [0xAB] and valid.all()
    # A 4-byte read across a dword boundary picks bytes from two rows of the interleave.
    data, _ = private.read_lane(5, 4, 4)
    assert data.tolist() == [0, 0, 0xAB, 0]


def test_swizzle_rejects_bad_shapes():
    with pytest.raises(StateError):
        swizzle(np.zeros((64, 6), dtype=np.uint8))
    with pytest.raises(StateError):
        unswizzle(b"\0" * 100, 64)


def test_private_reads_outside_the_lane_block_are_unavailable():
    lanes = 32
    wave = swizzle(private_lanes(0, lanes))
    private = PrivateMemory("swizzled", len(wave), lanes, _memory([(0, len(wave), wave)]))
    data, valid = private.read_lane(3, 62, 4)
    assert valid.tolist() == [True, True, False, False] and data[2:].tolist() == [0, 0]
    assert not private.read_lane(lanes, 0, 1)[1].any()   # no such lane
    assert not private.read_lane(0, 2 ** 64 - 1, 1)[1].any()
    with pytest.raises(StateError):
        private.write_lane(3, 62, b"abcd")


def test_private_vectorised_lanes_and_addresses():
    lanes = 64
    expected = private_lanes(2, lanes)
    wave = swizzle(expected)
    private = PrivateMemory("swizzled", len(wave), lanes, _memory([(0, len(wave), wave)]))
    lane = np.arange(lanes)
    addr = (lane * 4) % 60
    data, valid = private.read_lane(lane, addr, 4)
    assert data.shape == (lanes, 4) and valid.all()
    for L in range(lanes):
        assert data[L].tolist() == expected[L, addr[L]:addr[L] + 4].tolist()


# ----- sparse memory -------------------------------------------------------------------------

def test_bytes_outside_regions_are_unavailable_not_zero():
    memory = _memory([(0x1000, 16, bytes(range(1, 17))), (0x1010, 8, bytes(range(17, 25))),
                      (0x2000, 4, b"\xff" * 4)])
    data, valid = memory.read(0x100C, 20)  # crosses two adjacent regions, then a hole
    assert valid.tolist() == [True] * 12 + [False] * 8
    assert data[:12].tolist() == list(range(13, 25)) and data[12:].tolist() == [0] * 8
    assert memory.ranges() == [(0x1000, 24), (0x2000, 4)]
    many, many_valid = memory.read_many(np.array([0x1000, 0x1FFE, 0x2000, 2 ** 64 - 2], dtype=np.uint64), 4)
    assert many_valid.tolist() == [[True] * 4, [False, False, True, True], [True] * 4, [False] * 4]
    assert many[0].tolist() == [1, 2, 3, 4] and many[1].tolist() == [0, 0, 255, 255]


def test_empty_memory_reads_nothing():
    memory = SparseMemory([], "global")
    assert not memory.read(0, 8)[1].any()
    assert not memory.read_many(np.array([0, 5], dtype=np.uint64), 2)[1].any()
    with pytest.raises(StateError):
        memory.write(0, b"x")
    with pytest.raises(StateError):
        memory.read(-1, 4)


def test_read_many_matches_read_for_random_addresses():
    rng = np.random.default_rng(1)
    memory = _memory([(0x4000, 4096, rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()),
                      (0x9000, 100, rng.integers(0, 256, 100, dtype=np.uint8).tobytes())])
    memory.write(0x4100, b"\x01\x02\x03")
    addrs = rng.integers(0x3F00, 0x9100, 64).astype(np.uint64)
    data, valid = memory.read_many(addrs, 8)
    for i, addr in enumerate(addrs):
        d, v = memory.read(int(addr), 8)
        assert np.array_equal(v, valid[i]) and np.array_equal(d, data[i])


# ----- truncated files -----------------------------------------------------------------------

def test_truncated_files_leave_an_unavailable_tail(tmp_path):
    path = sample_writer().write(tmp_path / "d")
    manifest = json.loads((path / "manifest.json").read_text())
    os.truncate(path / manifest["memory"][0]["file"], 1000)
    wave3 = manifest["dispatches"][0]["workgroups"][1]["waves"][1]
    os.truncate(path / wave3["registers"]["file"], 8 + 8 + 4 + 4 + 256 + 10)  # v1 is partly there
    os.truncate(path / wave3["private"]["file"], 256 * 2 + 7)
    lds = manifest["dispatches"][0]["workgroups"][0]["lds"]
    os.truncate(path / lds["file"], 0)
    assert {p.severity for p in validate_state(path)} == {"warning"}
    with load_state(path) as state:
        data, valid = state.memory["global"].read(GLOBAL_BASE + 990, 20)
        assert valid.tolist() == [True] * 10 + [False] * 10
        assert data[:10].tobytes() == global_bytes()[990:1000]
        assert state.memory["global"].ranges() == [(GLOBAL_BASE, 1000)]
        regs = state.wave_by_id(3).registers
        v1, v1_valid = regs.lane_view("v1", 64)
        assert v1_valid[:2].all() and v1_valid[2].tolist() == [True, True, False, False]
        assert not v1_valid[3:].any() and not v1[3:].any()
        assert regs.value("s0") == 0xABC3 and state.wave_by_id(3).pc == 0x110C
        private = state.wave_by_id(3).private
        # The file stops at wave offset 519: lane address 8..11 is at 512 + 4 * lane + 0..3.
        _, valid = private.read_lane(np.arange(64), 8, 4)
        assert valid[0].all() and valid[1].tolist() == [True, True, True, False]
        assert not valid[2:].any()
        assert not state.dispatches[0].workgroups[0].lds.read(0, 4)[1].any()


def test_missing_exec_or_pc_is_unknown_not_zero(tmp_path):
    writer = StateWriter("nvidia", "sm_90", 32)
    d = writer.add_dispatch("k", None, [32, 1, 1], [32, 1, 1])
    d.add_workgroup((0, 0, 0)).add_wave(0, 0, {"R0": np.arange(32, dtype=np.uint32)})
    with load_state(writer.write(tmp_path / "nv")) as state:
        wave = state.waves[0]
        assert wave.exec_mask is None and wave.pc is None
        assert wave.active_lanes.all()  # exec unknown: every valid lane counts as active
        assert state.dispatches[0].code_object is None
        with pytest.raises(UnavailableError):
            wave.registers.raw("R1")
        with pytest.raises(StateError):
            wave.registers.lane_view("R0", 5)
        with pytest.raises(StateError):
            wave.local_id(32)


# ----- overlays and save ---------------------------------------------------------------------

def _snapshot(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_overlay_writes_are_visible_and_files_untouched(tmp_path, kind):
    writer = sample_writer()
    path = writer.write(tmp_path / "d") if kind == "folder" else writer.write_zip(tmp_path / "d.zip")
    before = _snapshot(path) if kind == "folder" else path.read_bytes()
    with load_state(path) as state:
        memory = state.memory["global"]
        memory.write(GLOBAL_BASE + 4094, b"\xaa\xbb")
        assert memory.read(GLOBAL_BASE + 4093, 3)[0].tolist() == [253, 0xAA, 0xBB]
        assert memory.read_many(np.array([GLOBAL_BASE + 4094], dtype=np.uint64), 2)[0].tolist() == [[0xAA, 0xBB]]
        with pytest.raises(StateError):
            memory.write(GLOBAL_BASE + 4095, b"xy")  # second byte is past the region
        wave = state.wave_by_id(1)
        wave.registers.write("v0", 4 * 7, np.uint32(0xDEADBEEF).tobytes())
        assert wave.registers.lane_view("v0", 64)[0][7].view("<u4")[0] == 0xDEADBEEF
        with pytest.raises(StateError):
            wave.registers.write("s0", 2, b"abc")
        wave.private.write_lane(9, 5, b"\x11\x22\x33\x44")
        assert wave.private.read_lane(9, 5, 4)[0].tolist() == [0x11, 0x22, 0x33, 0x44]
        assert wave.private.read_lane(8, 5, 1)[0].tolist() == [private_lanes(1, 64)[8, 5]]
        state.dispatches[0].workgroups[1].lds.write(0, b"LDS!")
        assert state.modified
    after = _snapshot(path) if kind == "folder" else path.read_bytes()
    assert after == before


def test_save_round_trip_keeps_writes_and_unknown_bytes(tmp_path):
    path = sample_writer().write(tmp_path / "d")
    manifest = json.loads((path / "manifest.json").read_text())
    os.truncate(path / manifest["memory"][0]["file"], 1000)
    with load_state(path) as state:
        memory = state.memory["global"]
        memory.write(GLOBAL_BASE + 10, b"ten")
        memory.write(GLOBAL_BASE + 2000, b"past the tail")  # leaves unknown bytes 1000..2000
        state.wave_by_id(2).registers.write("s1", 0, b"\x07\0\0\0")
        state.wave_by_id(0).private.write_lane(63, 60, b"end!")
        state.dispatches[0].workgroups[0].lds.write(100, b"x")
        with pytest.raises(StateError):
            state.save(path)  # never over an existing dump
        saved = state.save(tmp_path / "saved")
        expected_global = memory.read(GLOBAL_BASE - 16, GLOBAL_SIZE + 32)
    assert [p for p in validate_state(saved) if p.is_error] == []
    with load_state(saved) as copy:
        got = copy.memory["global"].read(GLOBAL_BASE - 16, GLOBAL_SIZE + 32)
        assert np.array_equal(got[1], expected_global[1]) and np.array_equal(got[0], expected_global[0])
        assert copy.memory["global"].read(GLOBAL_BASE + 1500, 1)[1].tolist() == [False]
        copy.memory["global"].write(GLOBAL_BASE + 1500, b"z")  # still inside the declared region
        assert copy.wave_by_id(2).registers.value("s1") == 7
        assert copy.wave_by_id(0).private.read_lane(63, 60, 4)[0].tobytes() == b"end!"
        assert copy.dispatches[0].workgroups[0].lds.read(100, 1)[0].tobytes() == b"x"
        assert (copy.focus.wave, copy.stop.reason) == (1, "exception")
        assert copy.code_objects[0].load_address == 0x1000
        assert copy.wave_by_id(3).valid_lanes.sum() == 32


def test_save_refuses_to_invent_bytes(tmp_path):
    path = sample_writer().write(tmp_path / "d")
    manifest = json.loads((path / "manifest.json").read_text())
    lds = manifest["dispatches"][0]["workgroups"][0]["lds"]
    os.truncate(path / lds["file"], 10)
    with load_state(path) as state:
        state.dispatches[0].workgroups[0].lds.write(200, b"x")  # unknown bytes 10..200 before it
        with pytest.raises(StateError):
            state.save(tmp_path / "saved")


# ----- mapping large dumps -------------------------------------------------------------------

def _rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_four_gib_sparse_region_is_mapped_not_read(tmp_path):
    size = 4 << 30
    writer = sample_writer()
    writer.add_memory("region", 0, b"")
    path = writer.write(tmp_path / "big")
    manifest = json.loads((path / "manifest.json").read_text())
    region = manifest["memory"][1]
    region["size"] = size
    with open(path / region["file"], "r+b") as f:
        f.truncate(size)  # sparse: takes no disk
        f.seek(size - 4)
        f.write(b"tail")
    (path / "manifest.json").write_text(json.dumps(manifest))
    before = _rss_kib()
    with load_state(path) as state:
        memory = state.memory["region"]
        data, valid = memory.read(size - 6, 10)
        assert data[:6].tobytes() == b"\0\0tail" and valid.tolist() == [True] * 6 + [False] * 4
        many, _ = memory.read_many(np.array([0, size // 2, size - 4], dtype=np.uint64), 4)
        assert many[2].tobytes() == b"tail"
        assert isinstance(memory.regions[0].span.array, np.memmap)
    assert _rss_kib() - before < 256 << 10  # far below the 4 GiB a copy would need


def test_stored_zip_members_are_mapped_in_place(tmp_path):
    big = np.random.default_rng(2).integers(0, 256, 3 << 20, dtype=np.uint8)  # above the read-in limit
    writer = sample_writer()
    writer.add_memory("region", 0x100, big)
    stored = writer.write_zip(tmp_path / "stored.zip")
    deflated = writer.write_zip(tmp_path / "deflated.zip", zipfile.ZIP_DEFLATED)
    with load_state(stored) as state:
        span = state.memory["region"].regions[0].span
        data, valid = state.memory["region"].read(0x100 + len(big) - 8, 8)
        assert valid.all() and np.array_equal(data, big[-8:])
        where, offset = span.location()
        assert where == stored.resolve() and offset > 0 and isinstance(span.array, np.memmap)
    with load_state(deflated) as state:
        span = state.memory["region"].regions[0].span
        assert span._array is None  # nothing extracted until first use
        assert np.array_equal(state.memory["region"].read(0x100, 16)[0], big[:16])
        extracted, _ = span.location()
        assert extracted.exists() and extracted != deflated.resolve()
    assert not extracted.exists()  # temporary files go with the state


def test_negative_or_huge_addresses_reach_no_byte():
    lanes = 4
    wave = swizzle(np.arange(lanes * 8, dtype=np.uint8).reshape(lanes, 8))
    private = PrivateMemory("swizzled", len(wave), lanes, _memory([(0, len(wave), wave)]))
    data, valid = private.read_lane([0, 1, 2], [-1, 0, 2 ** 64 - 1], 2)
    assert valid.tolist() == [[False, False], [True, True], [False, False]]
    assert data[1].tolist() == [8, 9]
    assert not private.read_lane(0, 2 ** 70, 1)[1].any()
    with pytest.raises(StateError):
        private.write_lane(0, -1, b"x")
    with pytest.raises(StateError):
        private.read_lane(0, 1.5, 1)
    memory = _memory([(0, 16, bytes(range(16)))])
    data, valid = memory.read_many([-4, 4, 2 ** 64 - 1], 2)
    assert valid.tolist() == [[False, False], [True, True], [False, False]]


def test_save_from_a_zip_with_per_lane_private_and_dispatch_memory(tmp_path):
    writer = StateWriter("nvidia", "sm_90", 32, apertures={"local": (0x1000, 0x100)})
    co = writer.add_code_object(b"\x7fELF" + bytes(12), load_address=0x400)
    dispatch = writer.add_dispatch("k", co, [64, 1, 1], [32, 1, 1], id=5)
    dispatch.add_memory("param", 0, b"\x01\x02\x03\x04")
    per_lane = np.repeat(np.arange(32, dtype=np.uint8)[:, None], 8, axis=1)
    dispatch.add_workgroup((1, 0, 0)).add_wave(
        7, 0, {"pc": np.uint64(0x480), "R0": np.arange(32, dtype=np.uint32)}, private=per_lane,
        private_layout="per_lane", private_base=0xFFFF00, lane_pcs=range(0x480, 0x480 + 32), valid_lanes=0xFFFF)
    source = writer.write_zip(tmp_path / "nv.zip", zipfile.ZIP_DEFLATED)
    with load_state(source) as state:
        assert state.root is None and state.source == source.resolve()
        wave = state.wave_by_id(7)
        wave.private.write_lane(31, 0xFFFF04, b"\xee")
        state.dispatches[0].memory["param"].write(2, b"\xff")
        saved = state.save(tmp_path / "saved")
    assert validate_state(saved) == []
    with load_state(saved) as copy:
        assert copy.target.apertures["local"].base == 0x1000
        assert copy.dispatches[0].id == 5 and copy.dispatches[0].code_object == 0
        wave = copy.wave_by_id(7)
        assert wave.private.layout == "per_lane" and wave.private.base == 0xFFFF00
        assert wave.private.read_lane(31, 0xFFFF03, 2)[0].tolist() == [31, 0xEE]
        assert wave.lane_pcs[3] == 0x483 and wave.valid_lanes.sum() == 16
        assert copy.dispatches[0].memory["param"].read(0, 4)[0].tolist() == [1, 2, 0xFF, 4]
        assert wave.global_id(3) == (35, 0, 0)


def test_saving_a_memory_made_of_several_regions():
    """A CUDA core keeps each lane's local memory in its own section: saved as one file when they tile."""
    from aspace_dap.errors import StateError
    from aspace_dap.state.save import _single_file

    tiled = _memory([(0, 4, b"\x01\x02\x03\x04"), (4, 4, b"\x05\x06\x07\x08")])
    size, blob = _single_file(tiled, "private memory")
    assert size == 8 and b"".join(blob.chunks()) == bytes(range(1, 9))
    gap = _memory([(0, 2, b"\x01\x02"), (8, 2, b"\x03\x04")])
    with pytest.raises(StateError, match="unknown bytes between"):
        _, blob = _single_file(gap, "private memory")
        b"".join(blob.chunks())  # the save streams it: the gap is found as it is written
