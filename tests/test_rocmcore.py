"""ROCm GPU cores: the save-area layouts as ROCdbgapi computes them, the writer's cores read back into the
dump's state, the quirks of real cores, and malformed cores that end in clean errors naming the structure."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import random
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.amdgpu import cwsr as cwsr
from aspace_dap.cli import main as cli_main
from aspace_dap.errors import AspaceError, StateError
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state
from aspace_dap.state.formats import detect_format
from aspace_dap.state.save import save_state
from aspace_dap.adapters.amdgpu.core import (load_core, parse_uri)
from aspace_dap.adapters.amdgpu.core_elf import (AGENT_ENTRY, EM_AMDGPU, NOTE_HEADER, QUEUE_ENTRY, detect)
from aspace_dap.adapters.amdgpu.core_writer import SAVE_AREA_BASE, write_rocm_core

from amd_machines import SECOND_GPU_WAVE_IDS, two_gpu_state

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LDS_O0 = EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"


# ---------------------------------------------------------------- layouts, from ROCdbgapi's architecture code


def test_gfx90a_record_geometry_follows_the_mi_layout():
    # state word: VGPR blocks-1 = 9 (80 registers of 8), SGPR blocks-1 = 2, LDS 2 granules, accum_offset 10
    state = (1 << 31) | 9 | (2 << 6) | (2 << 9) | (10 << 24)
    wave = (1 << 17) | (1 << 15) | (5 << 9) | 7        # first wave, scratch on, SE 5, scoreboard 7
    end = 0x100000
    r = cwsr.WaveRecord(cwsr.GFX90A, wave, (state,), end)
    assert (r.vgpr_count, r.acc_vgpr_count, r.sgpr_count, r.lds_size, r.lanes) == (44, 36, 32, 1024, 64)
    assert (r.first_wave, r.scratch_enabled, r.shader_engine, r.scoreboard_id) == (True, True, 5, 7)
    assert r.lds_address == end - 1024
    assert r.hwregs_address == end - 1024 - 128 and r.ttmps_address == end - 1024 - 64
    assert r.sgprs_address == r.hwregs_address - 32 * 4
    assert r.begin == r.sgprs_address - 36 * 256 - 44 * 256
    at = {name: r.begin + r.slot_offset(name) for name in ("v0", "a0", "s0", "pc", "exec", "vcc", "flat_scratch",
                                                           "m0", "mode", "ttmp4", "ttmp11")}
    assert at["v0"] == r.begin and at["a0"] == r.begin + 44 * 256 and at["s0"] == r.sgprs_address
    # the last 6 of min(108, 32) slots are aliases: flat_scratch at 26, vcc at 30
    assert at["flat_scratch"] == r.sgprs_address + 26 * 4 and at["vcc"] == r.sgprs_address + 30 * 4
    assert (at["m0"], at["pc"], at["exec"], at["mode"]) == tuple(r.hwregs_address + 4 * i for i in (0, 1, 3, 9))
    assert at["ttmp4"] == r.ttmps_address + 16 and at["ttmp11"] == r.ttmps_address + 44
    later = cwsr.WaveRecord(cwsr.GFX90A, 0, (state,), end)   # not the first wave: no LDS in its record
    assert later.lds_address == end


def test_gfx1030_wave32_record_and_packing():
    state = (1 << 31) | 3 | (3 << 10) | (1 << 24)      # 4 blocks of 8 VGPRs, LDS 3 granules, wave32
    r = cwsr.WaveRecord(cwsr.GFX10, (1 << 12) | (2 << 24) | 9, (state, 0), 0x200000)
    assert (r.lanes, r.vgpr_count, r.sgpr_count, r.lds_size) == (32, 32, 128, 1536)
    assert (r.first_wave, r.shader_engine, r.scoreboard_id) == (True, 2, 9)
    assert r.begin == r.lds_address - 128 - 128 * 4 - 32 * 128
    # gfx10: vcc is s106 (wave32: 4 bytes), mode is hwreg 8, flat_scratch hwreg 9, exec one dword
    assert r.slot_offset("vcc") == 32 * 128 + 106 * 4
    hw = r.hwregs_address - r.begin
    assert (r.slot_offset("exec"), r.slot_offset("mode"), r.slot_offset("flat_scratch")) == (hw + 12, hw + 32, hw + 36)
    words = [0, 0, state, 0, (1 << 12) | (1 << 29), state, 0, (1 << 12), (1 << 29)]
    records = cwsr.iterate_control_stack(cwsr.GFX10, words, 0x300000)
    assert len(records) == 3 and records[0].end == 0x300000           # no gap on gfx10
    assert records[1].end == records[0].begin


def test_gfx9_records_leave_a_64_byte_gap_and_events_are_skipped():
    state = (1 << 31) | (1 << 6)
    words = [0, 0, state, 1 << 30, (1 << 17), (1 << 30) | 5, 0]
    records = cwsr.iterate_control_stack(cwsr.GFX942, words, 0x10000)
    assert [r.end for r in records] == [0x10000 - 64, records[0].begin - 64]
    with pytest.raises(ValueError, match="before any state"):
        cwsr.iterate_control_stack(cwsr.GFX90A, [0, 0, 1 << 17], 0x10000)


def test_shader_engine_bits_differ_per_generation():
    word = 0b111 << 24 | 0b111 << 9
    assert cwsr.WaveRecord(cwsr.GFX90A, word, (1 << 31,), 0).shader_engine == 7    # bits 11:9
    assert cwsr.WaveRecord(cwsr.GFX942, word, (1 << 31,), 0).shader_engine == 3    # bits 10:9
    assert cwsr.WaveRecord(cwsr.GFX10, word, (1 << 31, 0), 0).shader_engine == 3   # bits 25:24
    assert cwsr.WaveRecord(cwsr.GFX11, word, (1 << 31, 0), 0).shader_engine == 7   # bits 26:24


def test_scratch_slots():
    rec = cwsr.WaveRecord(cwsr.GFX90A, (1 << 9) | 3, ((1 << 31),), 0)  # SE 1, scoreboard 3
    tmpring = 8 | (4 << 12)                                           # 8 waves, 4 KiB each
    assert cwsr.scratch_slot(cwsr.GFX90A, tmpring, rec, shader_engines=2) == (((8 // 2) * 1 + 3) * 4096, 4096)
    assert cwsr.scratch_slot(cwsr.GFX90A, 7 | (4 << 12), rec, shader_engines=2) == (0, 0)  # not divisible
    rec11 = cwsr.WaveRecord(cwsr.GFX11, (1 << 24) | 3, ((1 << 31), 0), 0)
    assert cwsr.scratch_slot(cwsr.GFX11, 8 | (16 << 12), rec11, shader_engines=2) == ((8 * 1 + 3) * 4096, 4096)


def test_target_versions():
    assert [cwsr.processor_from_target_version(v) for v in (90010, 90402, 100300, 110000)] == \
        ["gfx90a", "gfx942", "gfx1030", "gfx1100"]
    assert [cwsr.target_version(p) for p in ("gfx90a", "gfx942", "gfx1030", "gfx1100")] == [90010, 90402, 100300, 110000]


def test_code_object_uris():
    assert parse_uri("file:///opt/app%20dir/a.out#offset=0x1000&size=8192") == ("file", "/opt/app dir/a.out", 4096, 8192)
    assert parse_uri("memory://4242#offset=0x7f0000001000&size=100") == ("memory", "4242", 0x7F0000001000, 100)
    assert parse_uri("FILE:///a/b.co?offset=16") == ("file", "/a/b.co", 16, None)
    with pytest.raises(StateError, match="only file:// and memory://"):
        parse_uri("http://x#offset=0")
    with pytest.raises(StateError, match="not positive"):
        parse_uri("file:///a#offset=0&size=0")


# ---------------------------------------------------------------- cores from the example dumps


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    with load_state(LDS_O0) as state:
        return write_rocm_core(state, tmp_path_factory.mktemp("core") / "gpucore.4242")


def _same_state(original, core_state):
    assert core_state.target.processor == original.target.processor
    assert core_state.target.lanes == original.target.lanes
    assert core_state.target.apertures == original.target.apertures
    assert [(d.grid_size, d.workgroup_size) for d in core_state.dispatches] == \
        [(d.grid_size, d.workgroup_size) for d in original.dispatches]
    if original.code_objects:  # the kernel is named by its descriptor's symbol in the code object
        assert [d.kernel for d in core_state.dispatches] == [d.kernel for d in original.dispatches]
    for w0, w1 in zip(original.waves, core_state.waves):
        assert (w1.id, w1.index_in_workgroup, w1.workgroup.id) == (w0.id, w0.index_in_workgroup, w0.workgroup.id)
        for reg, _ in w0.registers.layout:
            a, b = w0.registers.raw(reg), w1.registers.raw(reg)
            assert b[1].all() and (a[0][a[1]] == b[0][a[1]]).all(), reg
        if w0.private is not None:
            n = w0.private.size
            a, b = w0.private.wave_view.read(0, n), w1.private.wave_view.read(0, n)
            assert b[1].all() and (a[0][a[1]] == b[0][a[1]]).all()
    for d0, d1 in zip(original.dispatches, core_state.dispatches):
        for g0, g1 in zip(d0.workgroups, d1.workgroups):
            if g0.lds is not None:
                size = g0.lds.regions[-1].end
                assert (g1.lds.read(0, size)[0] == g0.lds.read(0, size)[0]).all()
    g0, g1 = original.memory.get("global"), core_state.memory["global"]
    for start, size in (g0.ranges() if g0 is not None else []):
        assert (g1.read(start, size)[0] == g0.read(start, size)[0]).all()


def test_header_note_and_detection(core):
    data = core.read_bytes()
    assert data[:4] == b"\x7fELF" and data[7] == 64 and struct.unpack_from("<HH", data, 16) == (4, EM_AMDGPU)
    assert detect(core) and detect_format(core).name == "ROCm GPU core"
    assert not detect(LDS_O0 / "code" / "lds_tiles.gfx90a.O0.co")
    with load_core(core) as state, load_state(LDS_O0) as original:
        _same_state(original, state)
        assert state.stop.reason == "breakpoint"
        assert state.focus.wave == original.focus.wave


@pytest.mark.parametrize("dump", ["lds_tiles/dumps/gfx1030.O2", "scratch_struct/dumps/gfx90a.O2",
                                  "divergent_call/dumps/gfx90a.O0"])
def test_round_trip_of_other_examples(dump, tmp_path):
    with load_state(EXAMPLES / dump) as original:
        path = write_rocm_core(original, tmp_path / "gpucore.1")
        with load_state(path) as state:
            _same_state(original, state)


def test_merged_host_core_with_an_offload_bundle_in_memory(tmp_path):
    # coremerge leaves an x86-64 core whose notes start with the host's own; the code object is a bundle
    with load_state(LDS_O0) as original:
        original.code_objects[0].path = EXAMPLES / "lds_tiles" / "lds_tiles.bundle.o"
        path = write_rocm_core(original, tmp_path / "core.merged", host_core=True)
        assert struct.unpack_from("<H", path.read_bytes(), 18)[0] == 62 and detect(path)
        with load_state(path) as state:
            _same_state(original, state)
            assert state.code_objects[0].manifest_path.startswith("memory://4242#offset=")
    assert _inspect(path, 1, 5) == _inspect(LDS_O0, 1, 5)


def _kd_value(code_object: str) -> int:
    from aspace_dap.codeobj import load_code_objects
    co = load_code_objects(code_object)[0]
    return next(sym.value for sym in co.symbols.values() if sym.name.endswith(".kd"))


def _inspect(path, wave, lane, code_object=None) -> dict:
    out = io.StringIO()
    extra = ["--code-object", code_object] if code_object else []
    with contextlib.redirect_stdout(out):
        assert cli_main(["inspect", str(path), "--wave", str(wave), "--lane", str(lane), "--json", *extra]) == 0
    shown = json.loads(out.getvalue())
    # a core names the wave's queue (its KFD queue id), a dump folder has no place for it: compared without
    shown["thread"] = re.sub(r"^(AMDGPU Wave [^:]+):[^:]+:", r"\1:?:", shown["thread"])
    return shown


def test_exception_marks_wave_and_queue(tmp_path):
    with load_state(EXAMPLES / "divergent_call" / "dumps" / "gfx90a.O0") as original:
        path = write_rocm_core(original, tmp_path / "gpucore.fault", exception_wave=original.waves[0].id)
    with load_state(path) as state:
        assert state.stop.reason == "exception"
        assert "memory violation" in state.stop.description and "queue 1: wave memory violation" in state.stop.description
        assert state.focus.wave == state.waves[0].id


def test_rocr_quirks_truncation_and_zeroed_headers(core, tmp_path):
    data = bytearray(core.read_bytes())
    phnum = struct.unpack_from("<H", data, 56)[0]
    headers = [struct.unpack_from("<IIQQQQQQ", data, 64 + 56 * i) for i in range(phnum)]
    # the writer uses ROCr's quirks: section flags in p_flags, a shift count in p_align
    assert all(h[1] == 3 and h[7] == 4 for h in headers[1:])
    scratch = max(range(1, phnum), key=lambda i: headers[i][2])  # the last segment in the file: scratch
    # a core cut at the size limit: the tail segment loses bytes (unknown), its header is zeroed (PT_NULL)
    cut = tmp_path / "cut"
    cut.write_bytes(bytes(data[:headers[scratch][2] + 100]))
    with load_state(cut) as state:
        private = state.waves[0].private
        _, valid = private.wave_view.read(0, private.size)
        assert valid[:100].all() and not valid[100:].any()
    zeroed = bytearray(data)
    zeroed[64 + 56 * scratch:64 + 56 * (scratch + 1)] = bytes(56)
    path = tmp_path / "zeroed"
    path.write_bytes(bytes(zeroed))
    with load_state(path) as state:
        assert state.waves[0].private.wave_view.regions == []    # no scratch bytes: unavailable, not zero
    # a data-less segment (a host core before coremerge): the memory is unknown
    empty = bytearray(data)
    struct.pack_into("<Q", empty, 64 + 56 * scratch + 32, 0)
    path.write_bytes(bytes(empty))
    with load_state(path) as state:
        _, valid = state.waves[0].private.wave_view.read(0, 64)
        assert not valid.any()


def test_pure_gpucore_loads_and_says_which_code_object_to_supply(tmp_path):
    # ROCr's own gpucore: GPU mappings only, so no r_debug and no link map
    with load_state(LDS_O0) as original:
        path = write_rocm_core(original, tmp_path / "gpucore.77", gpu_only=True, load_bias=0x7F5500000000)
    with load_state(path) as state:
        assert state.code_objects == [] and state.dispatches[0].code_object is None
        assert any("r_debug" in w and "codeObject" in w for w in state.warnings)
        with pytest.raises(AspaceError, match="codeObject"):
            Session(state).program_for(state.waves[0])
        # the dispatch packet's kernel descriptor places the supplied file at the runtime's load address
        code = str(LDS_O0 / "code" / "lds_tiles.gfx90a.O0.co")
        program = Session(state, code_object=code).program_for(state.waves[0])
        assert program.load_address == 0x7F5500000000
    # converted to a dump folder, the kernel descriptor's address goes along and still places the file
    folder = tmp_path / "converted"
    assert cli_main(["state", "convert", str(path), str(folder)]) == 0
    assert json.loads((folder / "manifest.json").read_text())["dispatches"][0]["kernel_descriptor"] == \
        hex(0x7F5500000000 + _kd_value(code))
    for wave in (0, 3):
        assert _inspect(folder, wave, 7, code) == _inspect(path, wave, 7, code)
    for wave in (0, 3):
        from_core, from_dump = _inspect(path, wave, 7, code), _inspect(LDS_O0, wave, 7)
        for frame in from_dump["frames"]:  # the runtime pc moved with the load address; nothing else did
            frame["pc"] = f"0x{int(frame['pc'], 16) + 0x7F5500000000:x}"
        assert from_core == from_dump


def test_state_convert_writes_a_dump_and_leaves_the_core_alone(core, tmp_path, capsys):
    before = hashlib.sha256(core.read_bytes()).hexdigest()
    out = tmp_path / "converted"
    assert cli_main(["state", "convert", str(core), str(out)]) == 0
    assert hashlib.sha256(core.read_bytes()).hexdigest() == before
    assert cli_main(["state", "validate", str(out)]) == 0
    with load_state(out) as converted, load_state(LDS_O0) as original:
        _same_state(original, converted)
    assert cli_main(["state", "convert", str(core), str(out)]) == 1
    assert "already exists" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.write_bytes(core.read_bytes()[:200])
    assert cli_main(["state", "convert", str(bad), str(tmp_path / "never")]) == 1
    assert not (tmp_path / "never").exists()


def test_unknown_elf_names_the_known_formats(tmp_path):
    with pytest.raises(StateError, match="not a GPU core dump.*ROCm GPU core.*CUDA core dump|CUDA core dump.*ROCm"):
        load_state(LDS_O0 / "code" / "lds_tiles.gfx90a.O0.co")


# ---------------------------------------------------------------- gfx942 and gfx1100: layout round trips

# No example is compiled for these yet, so these cores carry no code object: they check the save-area
# layout (registers, ttmps, LDS, scratch, ids) and nothing that needs DWARF.


def _synthetic(folder: Path, processor: str, lanes: int) -> Path:
    rng = np.random.default_rng(7)
    w = StateWriter("amd", processor, lanes, apertures={"local": (1 << 48, 1 << 32), "private": (2 << 48, 1 << 32)},
                    producer="layout test")
    layout = [("pc", 8), ("exec", lanes // 8), ("s0", 4), ("s5", 4), ("vcc", lanes // 8), ("m0", 4),
              ("v0", 4 * lanes), ("v7", 4 * lanes)]
    if processor == "gfx942":
        layout.append(("a3", 4 * lanes))
    d = w.add_dispatch("k", None, grid_size=(256, 2, 1), workgroup_size=(2 * lanes, 1, 1))
    wave_id = 10
    for group in ((0, 0, 0), (1, 1, 0)):
        lds = rng.integers(0, 256, 700, dtype=np.uint8).tobytes()
        wg = d.add_workgroup(group, lds=lds)
        for index in range(2):
            regs = {name: rng.integers(0, 256, size, dtype=np.uint8).tobytes() for name, size in layout}
            wg.add_wave(wave_id, index, regs, layout=layout,
                        private=rng.integers(0, 256, 4 * lanes * 40, dtype=np.uint8).tobytes())
            wave_id += 3
    return w.write(folder)


@pytest.mark.parametrize("processor, lanes", [("gfx942", 64), ("gfx1100", 32), ("gfx1100", 64), ("gfx1030", 64)])
def test_layout_round_trip(processor, lanes, tmp_path):
    folder = tmp_path / "dump"
    _synthetic(folder, processor, lanes)
    with load_state(folder) as original:
        path = write_rocm_core(original, tmp_path / "gpucore")
        with load_state(path) as state:
            assert state.target.processor == processor and state.target.lanes == lanes
            _same_state(original, state)
            assert state.dispatches[0].kernel.startswith("kernel descriptor")


# ---------------------------------------------------------------- a host with GPUs of two kinds

TWO_GPUS = "lds_tiles gfx90a.O0 + gfx1030.O0"


def _two_gpu_core(path: Path) -> Path:
    with load_state(LDS_O0) as first, load_state(EXAMPLES / "lds_tiles" / "dumps" / "gfx1030.O0") as second:
        return write_rocm_core(two_gpu_state(first, second), path)


def test_two_kinds_of_gpu_each_queue_in_its_own_layout(tmp_path):
    path = _two_gpu_core(tmp_path / "gpucore.two")
    m = CoreMap(path.read_bytes())
    # one agent per GPU (KFD gfx_target_version: 9.0.10 and 10.3.0), one queue each, on its own gpu_id
    versions = [struct.unpack_from("<I", m.data, at + 56 + 4 * 8)[0] for at in m.agents]
    gpu_ids = [struct.unpack_from("<I", m.data, at + 56)[0] for at in m.agents]
    assert versions == [90010, 100300] and len(set(gpu_ids)) == 2
    assert [struct.unpack_from("<I", m.data, at + 44)[0] for at in m.queues] == gpu_ids
    # gfx90a's state word (one) vs gfx1030's (two, bit 24 of the first: wave32); see the layout tests above
    (_, _, (cs0, n0)), (_, _, (cs1, n1)) = m.saves
    assert n0 == 4 * (2 + 1 + 4) and n1 == 4 * (2 + 2 + 8)
    assert (struct.unpack_from("<I", m.data, cs1 + 8)[0] >> 24) & 1 == 1
    with load_state(LDS_O0) as first, load_state(EXAMPLES / "lds_tiles" / "dumps" / "gfx1030.O0") as second:
        with load_state(path) as state:
            assert (state.target.processor, state.target.lanes) == ("gfx90a", 64)
            assert [d.processor for d in state.dispatches] == [None, "gfx1030"]
            assert [d.code_object for d in state.dispatches] == [0, 1]   # each GPU's own build
            assert [w.lanes for w in state.waves] == [64] * 4 + [32] * 8
            assert state.summary().startswith("amd gfx90a + gfx1030, ")
            for original, waves in ((first, state.waves[:4]), (second, state.waves[4:])):
                for w0, w1 in zip(original.waves, waves):
                    assert (w1.id % SECOND_GPU_WAVE_IDS, w1.index_in_workgroup) == (w0.id, w0.index_in_workgroup)
                    for reg, _ in w0.registers.layout:
                        a, b = w0.registers.raw(reg), w1.registers.raw(reg)
                        assert b[1].all() and (a[0][a[1]] == b[0][a[1]]).all(), reg
                    n = w0.private.size
                    a, b = w0.private.wave_view.read(0, n), w1.private.wave_view.read(0, n)
                    assert b[1].all() and (a[0] == b[0]).all()
                lds0, lds1 = original.waves[0].workgroup.lds, waves[0].workgroup.lds
                size = lds0.regions[-1].end
                assert (lds1.read(0, size)[0] == lds0.read(0, size)[0]).all()
            # the folder format holds one lane count: a wave64 + wave32 core is refused, not written wrong
            with pytest.raises(StateError, match="32 lanes .* one lane count"):
                save_state(state, tmp_path / "folder")
            assert not (tmp_path / "folder").exists()


# ---------------------------------------------------------------- malformed cores


class CoreMap:
    """Where each structure of a writer-made core sits in the file (parsed here, not by the reader)."""

    def __init__(self, data: bytes):
        self.data = data
        self.phnum = struct.unpack_from("<H", data, 56)[0]
        self.headers = [64 + 56 * i for i in range(self.phnum)]
        note_at = struct.unpack_from("<Q", data, 64 + 8)[0]
        while True:  # a host core's own notes come before the AMDGPU one
            namesz, descsz = struct.unpack_from("<II", data, note_at)
            name_at = note_at + 12
            if data[name_at:name_at + namesz] == b"AMDGPU\0":
                break
            note_at = name_at + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
        self.note = note_at
        self.desc = note_at + 12 + ((namesz + 3) & ~3)
        self.runtime = self.desc + NOTE_HEADER.size
        _, _, _, runtime_size, n_agents, agent_size, n_queues, queue_size = NOTE_HEADER.unpack_from(data, self.desc)
        self.agents = [self.runtime + runtime_size + i * agent_size for i in range(n_agents)]
        self.queues = [self.agents[0] + n_agents * agent_size + i * queue_size for i in range(n_queues)]
        self.agent, self.queue = self.agents[0], self.queues[0]
        self.segments = {}
        for at in self.headers[1:]:
            _, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, at)
            self.segments[vaddr] = (offset, filesz)
        # each queue's context-save area: (file offset, size), the control stack's (file offset, size)
        self.saves = []
        for q in self.queues:
            address = struct.unpack_from("<Q", data, q + 32)[0]
            save = self.segments[address][0]
            cs_offset, cs_size = struct.unpack_from("<II", data, save)
            self.saves.append((save, self.segments[address][1], (save + cs_offset, cs_size)))
        self.save, _, self.control_stack = self.saves[0]


def _mutations(data: bytes, rng: random.Random):
    m = CoreMap(data)
    u32 = lambda v: struct.pack("<I", v)  # noqa: E731
    u64 = lambda v: struct.pack("<Q", v)  # noqa: E731
    odd = lambda: rng.choice([0, 1, 3, 7, 8, 0x7F, 0xFFFF, 0xFFFFFFFF, rng.getrandbits(32)])  # noqa: E731
    huge = lambda: rng.choice([0, 1, 0x7FFD00000000, 1 << 63, (1 << 64) - 1, rng.getrandbits(64)])  # noqa: E731
    field = [
        ("e_phoff", lambda: (32, u64(huge()))),
        ("e_phnum", lambda: (56, struct.pack("<H", rng.choice([0, 1, 2, 0xFFFF, rng.getrandbits(16)])))),
        ("e_phentsize", lambda: (54, struct.pack("<H", rng.choice([0, 32, 64])))),
        ("p_type", lambda: (rng.choice(m.headers), u32(rng.choice([0, 1, 4, 7])))),
        ("p_offset", lambda: (rng.choice(m.headers) + 8, u64(huge()))),
        ("p_vaddr", lambda: (rng.choice(m.headers[1:]) + 16, u64(huge()))),
        ("p_filesz", lambda: (rng.choice(m.headers) + 32, u64(huge()))),
        ("note namesz/descsz", lambda: (m.note + rng.choice([0, 4]), u32(odd()))),
        ("note version", lambda: (m.desc, u64(rng.choice([0, 2, 1 << 40])))),
        ("note sizes", lambda: (m.desc + rng.choice([16, 24, 28, 32, 36]), u32(odd()))),
        ("runtime_info", lambda: (m.runtime + rng.choice([0, 8, 12]), u32(odd()) if rng.random() < .5 else u64(huge()))),
        ("agent field", lambda: (rng.choice(m.agents) + 4 * rng.randrange(AGENT_ENTRY.size // 4), u32(odd()))),
        ("queue field", lambda: (rng.choice(m.queues) + 8 * rng.randrange(QUEUE_ENTRY.size // 8), u64(huge()))),
        ("queue u32", lambda: (rng.choice(m.queues) + 40 + 4 * rng.randrange(6), u32(odd()))),
        ("save-area header", lambda: (rng.choice(m.saves)[0] + 4 * rng.randrange(10), u32(odd()))),
        ("control-stack word", lambda: control_stack_word(rng.choice(m.saves)[2])),
        ("host structure", lambda: (m.segments[0x7FFD00000000][0] + 8 * rng.randrange(64), u64(huge()))),
        ("queue memory", lambda: (m.segments[0x7FFB00000000][0] + 8 * rng.randrange(64), u64(huge()))),
        ("random save-area dword", lambda: random_save_dword(rng.choice(m.saves))),
    ]

    def control_stack_word(stack):
        return stack[0] + 4 * rng.randrange(stack[1] // 4), u32(odd())

    def random_save_dword(save):
        return save[0] + 4 * rng.randrange(save[1] // 4), u32(odd())

    while True:
        kind = rng.random()
        out = bytearray(data)
        if kind < 0.2:
            cut = rng.randrange(len(data))
            yield f"truncated at {cut}", bytes(out[:cut])
            continue
        name, make = rng.choice(field)
        for _ in range(rng.choice([1, 1, 2])):
            at, value = make()
            out[at:at + len(value)] = value
        yield name, bytes(out)


def _exercise(state) -> None:
    """Touch everything a debugger would of an opened core: any failure must be an AspaceError."""
    try:
        for wave in state.waves:
            wave.registers.value("pc")
            if wave.private is not None:
                wave.private.wave_view.read(0, min(wave.private.size, 4096))
            if wave.workgroup.lds is not None:
                wave.workgroup.lds.read(0, 256)
        session = Session(state)
        session.programs()
    except AspaceError as exc:
        assert str(exc), "an error without a message"


# Mutations 0-59 run everywhere; 60-199, more of the same fuzzing, run where CI is set (.ci/run sets it)
ROUNDS = [pytest.param(0, 60, id="0-59"), pytest.param(60, 200, id="60-199", marks=pytest.mark.ci)]


@pytest.mark.parametrize("first, end", ROUNDS)
@pytest.mark.parametrize("dump, host_core", [("lds_tiles/dumps/gfx90a.O0", False),
                                             ("lds_tiles/dumps/gfx1030.O0", True),
                                             (TWO_GPUS, False)])
def test_200_malformed_cores_give_clean_errors_quickly(dump, host_core, first, end, tmp_path):
    if dump == TWO_GPUS:  # two agents and two queues, each save area in its own layout: all are mutated
        source = _two_gpu_core(tmp_path / "gpucore.src")
    else:
        with load_state(EXAMPLES / dump) as state:
            source = write_rocm_core(state, tmp_path / "gpucore.src", host_core=host_core)
    data = source.read_bytes()
    rng = random.Random(1312)
    path = tmp_path / "gpucore.bad"
    errors = 0
    worst = 0.0
    for n, (what, mutated) in zip(range(end), _mutations(data, rng)):
        if n < first:
            continue  # (made all the same: the random sequence goes on as in one run of 200)
        path.write_bytes(mutated)
        # CPU time of this process: the machine's other work must not decide the outcome
        start, wall = time.process_time(), time.perf_counter()
        try:
            with load_state(path) as state:  # opened once: what it refuses, and everything it accepts touched
                state.summary()
                _exercise(state)
        except StateError as exc:
            errors += 1
            assert str(exc) and exc.path, (n, what)
        worst = max(worst, time.process_time() - start)
        assert time.process_time() - start < 1.0, (n, what)
        assert time.perf_counter() - wall < 10.0, (n, what)  # nothing waits on anything
    assert errors > 0.3 * (end - first), errors  # most mutations hit something the reader must refuse
    assert worst < 1.0


def test_state_validate_opens_a_core(core, tmp_path, capsys):
    assert cli_main(["state", "validate", str(core)]) == 0
    assert "ok: amd gfx90a, 64 lanes" in capsys.readouterr().out
    cut = tmp_path / "cut"
    cut.write_bytes(core.read_bytes()[:300])
    assert cli_main(["state", "validate", str(cut), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problems"][0]["path"] == "PT_NOTE" and "NT_AMDGPU_CORE_STATE" in report["problems"][0]["message"]


def test_file_code_object_that_is_a_fifo_is_refused_not_read(tmp_path):
    import os
    staged = tmp_path / "kernel.co"
    with load_state(LDS_O0) as state:
        staged.write_bytes(state.code_objects[0].path.read_bytes())
        state.code_objects[0].path = staged
        path = write_rocm_core(state, tmp_path / "gpucore.fifo", code_object_uri="file")
    staged.unlink()
    os.mkfifo(staged)
    with load_state(path) as core:   # returns at once: a FIFO is never opened
        assert any(str(staged) in w and "not a regular file" in w for w in core.warnings)


def test_wave_whose_ttmps_were_not_set_up_is_left_out_with_a_warning(core, tmp_path):
    data = bytearray(core.read_bytes())
    m = CoreMap(bytes(data))
    cs_at, cs_size = m.control_stack
    words = struct.unpack(f"<{cs_size // 4}I", data[cs_at:cs_at + cs_size])
    records = cwsr.iterate_control_stack(cwsr.GFX90A, list(words), SAVE_AREA_BASE + struct.unpack_from(
        "<I", data, m.save + 8)[0])
    last = records[-1]                       # the bottom record: wave 3 of the workgroup
    ttmp6_at = m.save + (last.ttmps_address + 24 - SAVE_AREA_BASE)
    value, = struct.unpack_from("<I", data, ttmp6_at)
    struct.pack_into("<I", data, ttmp6_at, value | cwsr.TTMP6_SPI_TTMPS_DISABLED)
    path = tmp_path / "gpucore.partial"
    path.write_bytes(bytes(data))
    with load_state(path) as state:
        assert [w.id for w in state.waves] == [0, 1, 2]
        assert any("wave record 3: left out" in w for w in state.warnings)


def test_writer_refuses_what_a_rocm_core_cannot_hold(tmp_path):
    with load_state(EXAMPLES / "cuda" / "dumps" / "lds_tiles.sm_90.G") as state:
        with pytest.raises(StateError, match="AMD state"):
            write_rocm_core(state, tmp_path / "x")
    with load_state(LDS_O0) as state:
        state.waves[0].registers.layout.append(("s104", 4))     # gfx9 names s0..s101 only
        with pytest.raises(StateError, match="s104 .*no place in a gfx90a save record"):
            write_rocm_core(state, tmp_path / "y")
