"""Writer -> folder / zip -> reader gives back exactly what was written."""

import json
import zipfile

import numpy as np
import pytest

from aspace_dap.state import DispatchBuilder, load_state, unswizzle, validate_state
from aspace_dap.state.sample import (GLOBAL_BASE, GLOBAL_SIZE, LDS_SIZE, global_bytes, lds_bytes, private_lanes,
                                     sample_writer, vgpr_values)


@pytest.fixture(params=["folder", "zip-stored", "zip-deflated"])
def dump_path(request, tmp_path):
    writer = sample_writer()
    if request.param == "folder":
        return writer.write(tmp_path / "dump")
    compression = zipfile.ZIP_STORED if request.param == "zip-stored" else zipfile.ZIP_DEFLATED
    return writer.write_zip(tmp_path / "dump.zip", compression)


def test_sample_dump_has_no_problems(dump_path):
    assert validate_state(dump_path) == []


def test_target_code_objects_and_focus(dump_path):
    with load_state(dump_path) as state:
        assert (state.target.vendor, state.target.processor, state.target.lanes) == ("amd", "gfx90a", 64)
        assert state.target.apertures["private"].base == 0x2000000000000
        assert state.producer == "aspace-dap sample"
        [co] = state.code_objects
        assert co.path.is_absolute() and co.path.read_bytes()[:4] == b"\x7fELF"
        assert co.load_address == 0x1000
        assert (state.focus.wave, state.focus.lane) == (1, 5)
        assert (state.stop.reason, state.stop.description) == ("exception", "memory violation")
        assert [w.id for w in state.waves] == [0, 1, 2, 3]
        assert state.wave_by_id(2).workgroup.id == (1, 0, 0)
        assert state.wave_by_id(2).dispatch is state.dispatches[0]


def test_registers_per_lane(dump_path):
    with load_state(dump_path) as state:
        for wave in state.waves:
            regs = wave.registers
            assert regs.names == ["pc", "exec", "s0", "s1", "v0", "v1"]
            assert wave.pc == 0x1100 + 4 * wave.id
            assert regs.value("s0") == 0xABC0 + wave.id
            for v in (0, 1):
                data, valid = regs.lane_view(f"v{v}", 64)
                assert data.shape == (64, 4) and valid.all()
                assert np.array_equal(data.copy().view("<u4")[:, 0], vgpr_values(wave.id, v, 64))
            expected_exec = np.ones(64, dtype=bool)
            expected_exec[wave.id + 1] = False
            assert np.array_equal(wave.exec_mask, expected_exec)
            expected_valid = np.ones(64, dtype=bool) if wave.id != 3 else np.arange(64) < 32
            assert np.array_equal(wave.valid_lanes, expected_valid)
            assert np.array_equal(wave.active_lanes, expected_exec & expected_valid)


def test_lds_private_and_global(dump_path):
    with load_state(dump_path) as state:
        for g, workgroup in enumerate(state.dispatches[0].workgroups):
            data, valid = workgroup.lds.read(0, LDS_SIZE)
            assert valid.all() and data.tobytes() == lds_bytes(g)
        for wave in state.waves:
            expected = private_lanes(wave.id, 64)
            lanes = np.arange(64)
            data, valid = wave.private.read_lane(lanes, 0, 64)
            assert valid.all() and np.array_equal(data, expected)
            assert wave.private.lane_size == 64
            whole, _ = wave.private.wave_view.read(0, wave.private.size)
            assert np.array_equal(unswizzle(whole, 64), expected)
        data, valid = state.memory["global"].read(GLOBAL_BASE, GLOBAL_SIZE)
        assert valid.all() and data.tobytes() == global_bytes()


def test_work_item_ids(dump_path):
    with load_state(dump_path) as state:
        wave = state.wave_by_id(3)  # workgroup (1,0,0), second wave, workgroup size 128
        assert wave.local_id(5) == (69, 0, 0)
        assert wave.global_id(5) == (128 + 69, 0, 0)


def test_work_item_ids_in_2d_workgroups(tmp_path):
    writer = sample_writer()
    writer.dispatches[0]["workgroup_size"] = [16, 4, 2]
    writer.dispatches[0]["workgroups"][1]["id"] = [2, 3, 1]
    with load_state(writer.write(tmp_path / "d")) as state:
        wave = state.wave_by_id(3)  # index 1: flat work-item 64 + lane
        assert wave.local_id(0) == (0, 0, 1)
        assert wave.local_id(21) == (5, 1, 1)
        assert wave.global_id(21) == (2 * 16 + 5, 3 * 4 + 1, 1 * 2 + 1)


def test_wave32(tmp_path):
    path = sample_writer(lanes=32).write(tmp_path / "w32")
    assert validate_state(path) == []
    with load_state(path) as state:
        wave = state.wave_by_id(0)
        assert len(wave.registers.raw("exec")[0]) == 4
        assert wave.exec_mask.shape == (32,) and not wave.exec_mask[1]
        data, valid = wave.private.read_lane(7, 0, 64)
        assert valid.all() and np.array_equal(data, private_lanes(0, 32)[7])


def test_manifest_uses_hex_strings_for_addresses(tmp_path):
    manifest = json.loads((sample_writer().write(tmp_path / "d") / "manifest.json").read_text())
    assert manifest["memory"][0]["address"] == hex(GLOBAL_BASE)
    assert manifest["code_objects"][0]["load_address"] == "0x1000"
    assert manifest["dispatches"][0]["workgroups"][1]["waves"][1]["valid_lanes"] == "0xffffffff"


def test_numbers_may_be_decimal_strings_or_integers(tmp_path):
    path = sample_writer().write(tmp_path / "d")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["memory"][0]["address"] = str(GLOBAL_BASE)
    manifest["memory"][0]["size"] = hex(GLOBAL_SIZE)
    manifest["target"]["lanes"] = "64"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with load_state(path) as state:
        assert state.memory["global"].read(GLOBAL_BASE + 5, 1)[0][0] == 5


def test_unknown_fields_are_ignored(tmp_path):
    path = sample_writer().write(tmp_path / "d")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["x-capture"] = {"tool": "something"}
    manifest["dispatches"][0]["workgroups"][0]["waves"][0]["x-note"] = [1, 2]
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert validate_state(path) == []
    load_state(path).close()


def test_per_lane_private_and_lane_pcs(tmp_path):
    writer = sample_writer()
    lanes = np.arange(64)
    per_lane = np.stack([np.full(16, lane, dtype=np.uint8) for lane in lanes])
    dispatch = writer.add_dispatch("k2", 0, [32, 1, 1], [32, 1, 1])
    wg = dispatch.add_workgroup((0, 0, 0))
    pcs = [0x2000 + 8 * lane for lane in lanes]
    wg.add_wave(10, 0, {"pc": np.uint64(0x2000), "exec": np.uint64(2 ** 64 - 1), "s0": np.uint32(0),
                        "s1": np.uint32(0), "v0": np.zeros(64, np.uint32), "v1": np.zeros(64, np.uint32)},
                layout="wave64", private=per_lane, private_layout="per_lane", private_base=0xFFF000,
                lane_pcs=pcs)
    with load_state(writer.write(tmp_path / "d")) as state:
        wave = state.wave_by_id(10)
        assert wave.private.layout == "per_lane" and wave.private.base == 0xFFF000
        data, valid = wave.private.read_lane(9, 0xFFF000 + 3, 4)
        assert valid.all() and list(data) == [9, 9, 9, 9]
        raw, _ = wave.private.wave_view.read(9 * 16, 16)
        assert (raw == 9).all()
        below, below_valid = wave.private.read_lane(9, 0xFFF000 - 1, 2)
        assert list(below_valid) == [False, True]
        assert wave.lane_pcs.dtype == np.uint64 and list(wave.lane_pcs) == pcs


def test_dispatch_memory_and_constant_banks(tmp_path):
    writer = sample_writer()
    builder = DispatchBuilder(writer, writer.dispatches[0])
    builder.add_memory("param", 0x160, b"\x01\x02\x03\x04")
    builder.add_memory("const", 0, b"bank0...", bank=0)
    builder.add_memory("const", 0, b"bank3...", bank=3)
    path = writer.write(tmp_path / "d")
    assert validate_state(path) == []
    with load_state(path) as state:
        dispatch = state.dispatches[0]
        assert dispatch.memory["param"].read(0x161, 2)[0].tobytes() == b"\x02\x03"
        assert dispatch.const_bank(3).read(0, 5)[0].tobytes() == b"bank3"
        assert dispatch.const_bank(0).read(0, 5)[0].tobytes() == b"bank0"
        assert not dispatch.const_bank(1).read(0, 1)[1].any()
