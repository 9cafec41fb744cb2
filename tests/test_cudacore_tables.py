"""CUDA core tables beyond the basic ones: every driver's row sizes, constant banks, uniform registers
and predicates, backtraces cross-checked with the CFI, several devices, and corrupted files."""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from lane_views import cfi_return_addresses, every_lane
from test_cudacore import _sections

from aspace_dap.errors import AspaceError, StateError
from aspace_dap.inspect import frame_report
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.adapters.nvidia.core import load_core
from aspace_dap.adapters.nvidia.core_elf import (BACKTRACE_ROW, CONST_BANK_ROW, ROW_SIZES, SHT_BT, SHT_CB_TABLE,
                                                 SHT_CTA_TABLE, SHT_DEV_TABLE, SHT_GRID_TABLE, SHT_LN_TABLE,
                                                 SHT_SM_TABLE, SHT_UPRED, SHT_UREGS, SHT_WP_TABLE)
from aspace_dap.adapters.nvidia.core_writer import write_core

DUMPS = Path(__file__).resolve().parent.parent / "examples" / "cuda" / "dumps"
TABLE_TYPES = {SHT_DEV_TABLE: "devtbl", SHT_GRID_TABLE: "gridtbl", SHT_SM_TABLE: "smtbl", SHT_CTA_TABLE: "ctatbl",
               SHT_WP_TABLE: "wptbl", SHT_LN_TABLE: "lntbl"}


def _values(path) -> dict:
    """What every active lane of every wave shows, every frame (see lane_views). An inactive lane of a
    folder dump has no PC of its own; a core must give it one (the writer takes the warp's), so
    inactive lanes are not compared."""
    return every_lane(path, active_only=True)[0]


@pytest.fixture(scope="module")
def divergent_values():
    return _values(DUMPS / "divergent_call.sm_90.G")


@pytest.mark.parametrize("version", sorted(ROW_SIZES))
def test_every_driver_row_size_reads_back(version, tmp_path, divergent_values):
    folder = DUMPS / "divergent_call.sm_90.G"
    with load_state(folder) as state:
        if version < "r400":
            for wave in state.waves:  # r346 had no uniform registers
                wave.registers.layout[:] = [r for r in wave.registers.layout if not r[0].startswith("U")]
        core = write_core(state, tmp_path / f"{version}.cudbg", version=version)
    sections = _sections(core)
    for sec in sections:
        if sec["type"] in TABLE_TYPES:
            assert sec["entsize"] == ROW_SIZES[version][TABLE_TYPES[sec["type"]]], sec["name"]
            assert sec["size"] % sec["entsize"] == 0
    types = {sec["type"] for sec in sections}
    assert (SHT_CB_TABLE in types) == (version >= "r550")
    with load_core(core) as opened:
        expected = f"cuda core dump by aspace-dap write_core, driver {version[1:]}.0, CUDA 0.0" \
            if version >= "r565" else "cuda core dump"
        assert opened.producer == expected
    assert (SHT_UREGS in types) == (version >= "r400")
    assert _values(core) == divergent_values


def test_newer_rows_than_any_known_driver_still_read(tmp_path, divergent_values):
    # a later driver appends fields: rows longer than this reader knows keep their known prefix
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "r575.cudbg")
    data = bytearray(core.read_bytes())
    wide = bytearray()
    for sec in _sections(core):
        if sec["type"] == SHT_WP_TABLE:
            rows = [data[sec["offset"] + i:sec["offset"] + i + 64] for i in range(0, sec["size"], 64)]
            body = b"".join(bytes(r) + b"\xee" * 16 for r in rows)  # 80-byte rows (r590)
            at = len(data) + len(wide)
            wide += body
            struct.pack_into("<QQ", data, sec["at"] + 24, at, len(body))
            struct.pack_into("<Q", data, sec["at"] + 56, 80)
    path = tmp_path / "r590.cudbg"
    path.write_bytes(bytes(data + wide))
    assert _values(path) == divergent_values


def test_parameters_from_constant_bank_0_alone(tmp_path, divergent_values):
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "banks.cudbg", param_sections=False)
        params_offset = state.dispatches[0].memory["param"].regions[0].address
    banks = [s for s in _sections(core) if s["type"] == SHT_CB_TABLE]
    assert len(banks) == 1 and banks[0]["entsize"] == CONST_BANK_ROW.size == 16
    with load_core(core) as opened:
        assert "param" not in opened.dispatches[0].memory
        bank0 = opened.dispatches[0].const_bank(0)
        # the bank's bytes below the parameters were not dumped: unknown, never zero
        assert not bank0.read(0, 8)[1].any() and bank0.read(params_offset, 8)[1].all()
    assert _values(core) == divergent_values


def test_uniform_registers_and_predicates_round_trip(tmp_path):
    with load_state(DUMPS / "scratch_struct.sm_120.G") as state:
        for wave in state.waves:
            for n in range(6):
                wave.registers.write(f"UR{n}", 0, struct.pack("<I", 0x1000 * (wave.id + 1) + n))
        written = [[w.registers.value(f"UR{n}") for n in range(6)] for w in state.waves]
        core = write_core(state, tmp_path / "uregs.cudbg")
    assert sum(s["type"] == SHT_UREGS for s in _sections(core)) == 2
    with load_core(core) as opened:
        assert [[w.registers.value(f"UR{n}") for n in range(6)] for w in opened.waves] == written
        assert written[1][5] == 0x2005


def test_uniform_predicates_are_read_per_warp(tmp_path):
    with load_state(DUMPS / "lds_tiles.sm_80.G") as state:
        core = write_core(state, tmp_path / "up.cudbg")
    data = bytearray(core.read_bytes())
    # append a .cudbg.upred section to warp row 1 by reusing the uregs header slot of that warp
    ureg = [s for s in _sections(core) if s["type"] == SHT_UREGS][1]
    struct.pack_into("<I", data, ureg["at"] + 4, SHT_UPRED)
    struct.pack_into("<Q", data, ureg["at"] + 32, 8)  # two predicates
    struct.pack_into("<II", data, ureg["offset"], 1, 0)
    path = tmp_path / "upred.cudbg"
    path.write_bytes(bytes(data))
    with load_core(path) as opened:
        regs = opened.waves[1].registers
        assert (regs.value("UP0"), regs.value("UP1")) == (1, 0) and not regs.has("UR0")
        assert opened.waves[0].registers.has("UR0") and not opened.waves[0].registers.has("UP0")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_backtraces_match_the_cfi(arch, tmp_path):
    folder = DUMPS / f"divergent_call.{arch}.G"
    backtraces = cfi_return_addresses(folder)
    assert len(backtraces) == 32  # the odd lanes of both warps are inside settle
    with load_state(folder) as state:
        core = write_core(state, tmp_path / "bt.cudbg", backtraces=backtraces)
    rows = [s for s in _sections(core) if s["type"] == SHT_BT]
    assert len(rows) == 32 and all(s["entsize"] == BACKTRACE_ROW.size for s in rows)
    data = core.read_bytes()
    ret, virtual, level, _ = struct.unpack_from("<QQII", data, rows[0]["offset"])
    assert level == 0 and virtual > ret  # returnAddress is the offset into the caller, virtual the address
    with load_core(core) as opened:
        got = {(w.id, ln): stack for w in opened.waves for ln, stack in (w.return_addresses or {}).items()}
        assert got == backtraces
        session = Session(opened)
        frames = session.frames(0, 1)
        assert [f.name for f in frames] == ["settle", "divergent"] and frames[1].caller_state.how.startswith("cfi")
        assert not session.warnings


def test_a_backtrace_that_disagrees_with_the_cfi_is_said_and_its_registers_unavailable(tmp_path):
    folder = DUMPS / "divergent_call.sm_90.G"
    backtraces = cfi_return_addresses(folder)
    wrong = backtraces[0, 3][0] + 0x40
    backtraces[0, 3] = [wrong]
    with load_state(folder) as state:
        core = write_core(state, tmp_path / "disagree.cudbg", backtraces=backtraces)
    with load_core(core) as opened:
        session = Session(opened)
        frames = session.frames(0, 3)
        assert frames[1].runtime_pc == wrong and frames[1].caller_state.how == "core backtrace"
        assert any(f"returns to {wrong:#x}" in w and "the CFI unwinds to" in w for w in session.warnings)
        report = frame_report(session, 0, 3)["frames"][1]
        shown = {v["name"]: v["value"] for v in report["variables"]}
        assert shown["gid"] == shown["lane"] == shown["x"] == "<unavailable>"
        # lane 5 agrees: its frame is the CFI's, with values
        assert frame_report(session, 0, 5)["frames"][1]["variables"]


def test_a_backtrace_where_the_cfi_finds_no_caller_follows_the_core(tmp_path):
    # even lanes never made the call (no return address in R20/R21); a core that says otherwise wins, said so
    folder = DUMPS / "divergent_call.sm_80.G"
    backtraces = cfi_return_addresses(folder)
    assert (0, 2) not in backtraces
    backtraces[0, 2] = list(backtraces[0, 1])
    with load_state(folder) as state:
        core = write_core(state, tmp_path / "even.cudbg", backtraces=backtraces)
    with load_core(core) as opened:
        session = Session(opened)
        frames = session.frames(0, 2)
        assert [f.name for f in frames] == ["settle", "divergent"]  # inactive lanes share the warp PC
        assert frames[1].runtime_pc == backtraces[0, 2][0]
        assert any("lane 2 frame 1" in w and "the CFI finds no caller" in w for w in session.warnings)


def test_a_backtrace_shorter_than_the_cfi_ends_the_stack_and_says_so(tmp_path):
    folder = DUMPS / "divergent_call.sm_90.G"
    backtraces = cfi_return_addresses(folder)
    backtraces[0, 3] = []
    backtraces[0, 5] = [backtraces[0, 5][0]]
    with load_state(folder) as state:
        core = write_core(state, tmp_path / "short.cudbg", backtraces={k: v for k, v in backtraces.items() if v})
    with load_core(core) as opened:
        session = Session(opened)
        assert len(session.frames(0, 3)) == 1
        assert any("has no frame 1" in w for w in session.warnings)


def test_two_devices_show_waves_of_both_with_unique_ids(tmp_path):
    folder = DUMPS / "lds_tiles.sm_120.G"
    with load_state(folder) as state:
        core = write_core(state, tmp_path / "two.cudbg", devices=2)
    sections = _sections(core)
    assert sum(s["type"] == SHT_DEV_TABLE for s in sections) == 1
    grids = [s for s in sections if s["type"] == SHT_GRID_TABLE]
    assert [(g["name"], g["info"]) for g in grids] == [(".cudbg.gridtbl.dev0", 0), (".cudbg.gridtbl.dev1", 1)]
    with load_core(core) as opened:
        assert [w.id for w in opened.waves] == [0, 1]
        assert [w.index_in_workgroup for w in opened.waves] == [0, 5]
        assert [d.path for d in opened.dispatches] == ["device 0 grid 1", "device 1 grid 1"]
        assert len(opened.code_objects) == 2
        names = [Session(opened).thread_name(w) for w in opened.waves]
        # cuda-gdb's words: kernel (dispatch), block, the warp's first thread, device, and the SM and warp slot
        # the core's tables give (the writer puts each block on an SM of its own, a warp in its block's slot)
        assert names[0].startswith("CUDA kernel 0 block (1,0,0) thread (0,0,0) device 0 sm 0 warp 0 [")
        assert names[1].startswith("CUDA kernel 1 block (1,0,0) thread (0,10,0) device 1 sm 0 warp 5 [")
    assert _values(core) == _values(folder)


def test_an_sm_exception_stops_there_when_no_lane_reports_one(tmp_path):
    # r555 SM rows: {smId, pad, exception, errorPCValid, errorPC, ...}
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        core = write_core(state, tmp_path / "sm.cudbg", devices=2)
    data = bytearray(core.read_bytes())
    sm1 = next(s for s in _sections(core) if s["name"] == ".cudbg.smtbl.dev1")
    struct.pack_into("<IIQ", data, sm1["offset"] + 8, 14, 1, 0x4f0)
    path = tmp_path / "sm-exception.cudbg"
    path.write_bytes(bytes(data))
    with load_core(path) as opened:
        assert opened.stop.reason == "exception"
        assert opened.stop.description == "CUDA Exception: Warp Illegal Address (14) on SM 0 of device 1 at 0x4f0"
        assert opened.stop.pc == 0x4f0
        assert opened.focus.wave == 1  # the warp on device 1's SM
    with load_core(core) as untouched:
        assert untouched.stop.reason == "pause"


# ---------------------------------------------------------------------- corrupted cores

@pytest.fixture(scope="module")
def full_core(tmp_path_factory):
    folder = DUMPS / "divergent_call.sm_120.G"
    with load_state(folder) as state:
        _with_barriers(state, [[0xFFFFFFFF, 0x55555555], [0xFFFFFFFF, 0]])  # .cudbg.cbu_bar sections too
        return write_core(state, tmp_path_factory.mktemp("fuzz") / "full.cudbg", devices=2,
                          backtraces=cfi_return_addresses(folder), exception=(1, 3, 14))


def _variants(core: Path, count: int, seed: int = 1234):
    """`count` corrupted copies: header fields of sections, table bytes, truncations."""
    rng = random.Random(seed)
    data = core.read_bytes()
    sections = _sections(core)
    tables = [s for s in sections if s["entsize"] and s["size"]]
    for n in range(count):
        out = bytearray(data)
        kind = n % 4
        if kind == 0:  # a section header field
            sec = rng.choice(sections[1:])
            field, fmt = rng.choice([(4, "<I"), (16, "<Q"), (24, "<Q"), (32, "<Q"), (40, "<I"), (44, "<I"),
                                     (56, "<Q")])
            value = rng.choice([0, 1, 7, 0xFFFF, 0xFFFFFFFF, rng.getrandbits(32), 1 << 40])
            struct.pack_into(fmt, out, sec["at"] + field, value & (0xFFFFFFFF if fmt == "<I" else (1 << 64) - 1))
        elif kind == 1:  # bytes of a table row
            sec = rng.choice(tables)
            for _ in range(rng.randint(1, 8)):
                out[sec["offset"] + rng.randrange(sec["size"])] = rng.getrandbits(8)
        elif kind == 2:  # the file cut short
            out = out[:rng.randrange(64, len(out))]
        else:  # random bytes anywhere
            for _ in range(rng.randint(1, 32)):
                out[rng.randrange(len(out))] = rng.getrandbits(8)
        yield n, bytes(out)


def test_corrupted_gzip_cores_give_clean_errors(full_core, tmp_path):
    import gzip

    packed = gzip.compress(full_core.read_bytes(), compresslevel=1)
    rng = random.Random(7)
    for n in range(20):
        out = bytearray(packed)
        if n % 2:
            out = out[:rng.randrange(2, len(out))]
        else:
            for _ in range(4):
                out[rng.randrange(10, len(out))] = rng.getrandbits(8)
        path = tmp_path / f"g{n}.gz"
        path.write_bytes(bytes(out))
        try:
            with load_state(path) as state:
                assert state.waves
        except StateError as exc:
            assert exc.path and str(exc)


def test_200_corrupted_cores_give_clean_errors_fast(full_core, tmp_path):
    opened = failed = 0
    slowest = 0.0
    for n, data in _variants(full_core, 200):
        path = tmp_path / f"v{n}.cudbg"
        path.write_bytes(data)
        start = time.process_time()  # CPU time: a busy machine does not fail the budget
        try:
            with load_state(path) as state:
                session = Session(state)
                for wave in state.waves:  # everything a client would ask first
                    frame_report(session, wave.id, int(np.flatnonzero(wave.valid_lanes)[0])
                                 if wave.valid_lanes.any() else 0)
            opened += 1
        except AspaceError as exc:
            failed += 1
            assert str(exc)
            if isinstance(exc, StateError):
                assert exc.path, f"variant {n}: {exc} names no structure"
        slowest = max(slowest, time.process_time() - start)
        path.unlink()
        assert slowest < 1.0, f"variant {n} took {slowest:.2f}s"
    assert failed > 50 and opened > 10, (failed, opened)


# ---------------------------------------------------------------------- state the core keeps beyond registers

SHT_CBU_BAR = 0x80000000 + 23  # cudacoredump.h: CUDBG_SHT_CBU_BAR (r575), u32 barrier masks per warp
META_FLAGS_AT = 24  # CudbgMetaDataEntry: u64 generatorName, u32 driver major/minor, CUDA major/minor, flags, timestamp
LIGHTWEIGHT = 0b101111  # CUDBG_COREDUMP_LIGHTWEIGHT_FLAGS: skip non-relocated images, global, shared, local, constbanks


def _with_barriers(state, masks: list[list[int]]) -> None:
    """Give each wave convergence barrier registers B0.. holding `masks` (one list per wave)."""
    from aspace_dap.state.corefiles import BytesSpan
    from aspace_dap.state.registers import RegisterFile

    for wave, values in zip(state.waves, masks):
        regs = wave.registers
        data = b"".join(regs.raw(name)[0].tobytes() for name, _ in regs.layout)
        layout = regs.layout + [(f"B{i}", 4) for i in range(len(values))]
        wave.registers = RegisterFile(layout, BytesSpan(data + struct.pack(f"<{len(values)}I", *values)), regs.path)


def test_convergence_barrier_masks_are_the_warps_B_registers(tmp_path):
    # r575 writes each warp's convergence barrier masks (u32 each) in a .cudbg.cbu_bar section of the warp
    masks = [[0xFFFFFFFF, 0xAAAAAAAA], [0x0000FFFF, 0]]
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        _with_barriers(state, masks)
        core = write_core(state, tmp_path / "cbu.cudbg")
        with pytest.raises(StateError, match="no convergence barriers"):
            write_core(state, tmp_path / "old.cudbg", version="r570")
    sections = _sections(core)
    bars = [s for s in sections if s["type"] == SHT_CBU_BAR]
    assert [s["size"] for s in bars] == [8, 8]
    assert all(sections[s["link"]]["type"] == SHT_WP_TABLE for s in bars)
    devtbl = next(s for s in sections if s["type"] == SHT_DEV_TABLE)
    data = core.read_bytes()
    assert struct.unpack_from("<I", data, devtbl["offset"] + 80)[0] == 2  # numConvergenceBarriersPrWarp
    with load_core(core) as opened:
        assert [[w.registers.value(f"B{i}") for i in range(2)] for w in opened.waves] == masks
        assert not opened.waves[0].registers.has("B2")
    assert _values(core) == _values(DUMPS / "divergent_call.sm_90.G")


def _patched_meta(core: Path, path: Path, flags: int, timestamp: int) -> Path:
    data = bytearray(core.read_bytes())
    meta = next(s for s in _sections(core) if s["name"] == ".cudbg.meta")
    struct.pack_into("<II", data, meta["offset"] + META_FLAGS_AT, flags, timestamp)
    path.write_bytes(bytes(data))
    return path


def test_the_meta_flags_say_what_a_lightweight_core_left_out(tmp_path):
    with load_state(DUMPS / "scratch_struct.sm_90.G") as state:
        core = write_core(state, tmp_path / "full.cudbg")
    with load_core(core) as opened:
        assert opened.warnings == []
    light = _patched_meta(core, tmp_path / "light.cudbg", LIGHTWEIGHT, 1_700_000_000)
    with load_core(light) as opened:
        said = " | ".join(opened.warnings)
        for what in ("global memory", "shared memory", "local memory", "constant banks"):
            assert f"written without {what}" in said
        assert "did not fault" not in said
        assert opened.producer.endswith("written 2023-11-14 22:13:20 UTC")
    faulted_only = _patched_meta(core, tmp_path / "faulted.cudbg", 1 << 7, 0)
    with load_core(faulted_only) as opened:
        assert opened.warnings == ["the core was written without contexts that did not fault "
                                   "(CU_COREDUMP_FAULTED_CONTEXTS_ONLY): their kernels are not in the core"]


def test_a_core_without_metadata_or_memory_says_it_holds_no_memory(tmp_path):
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        state.memory.clear()
        for d in state.dispatches:
            for wg in d.workgroups:
                wg.lds = None
        for wave in state.waves:
            wave.private = None
        core = write_core(state, tmp_path / "bare.cudbg", version="r525")  # before constant banks and metadata
    with load_core(core) as opened:
        assert len(opened.warnings) == 1 and "holds no global, shared or local memory" in opened.warnings[0]


def test_lane_rows_give_physPC_as_the_offset_in_the_function(tmp_path):
    # cudacoredump.h: physPC is the offset of the lane's PC from the start of the function it runs; every
    # lane of lds_tiles is stopped in the kernel itself, which starts at the grid row's functionEntry
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        core = write_core(state, tmp_path / "pc.cudbg")
    sections = _sections(core)
    data = core.read_bytes()
    grid = next(s for s in sections if s["type"] == SHT_GRID_TABLE)
    entry, = struct.unpack_from("<Q", data, grid["offset"] + 24)  # functionEntry
    lanes = 0
    for ln in (s for s in sections if s["type"] == SHT_LN_TABLE):
        for at in range(ln["offset"], ln["offset"] + ln["size"], ln["entsize"]):
            virtual, phys = struct.unpack_from("<QQ", data, at)
            assert phys == virtual - entry and virtual > entry
            lanes += 1
    assert lanes == 64


def test_a_gzip_compressed_core_opens_like_the_plain_one(tmp_path, divergent_values):
    import gzip

    from aspace_dap.state.formats import is_core_file

    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "plain.cudbg")
    packed = tmp_path / "core.cudbg.gz"
    packed.write_bytes(gzip.compress(core.read_bytes(), compresslevel=1))
    assert is_core_file(packed)
    assert _values(packed) == divergent_values
    before = packed.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(before[:len(before) // 2])
    with pytest.raises(StateError, match="compressed with gzip cannot be inflated"):
        load_state(cut)
    assert packed.read_bytes() == before


def test_a_cluster_launch_names_each_block_s_cluster_and_converts(tmp_path):
    from aspace_dap.cli import main as cli_main

    # lds_tiles' block (1,0,0) of a 2x2 grid, launched in clusters of 2x1x1 blocks: PTX's %clusterid is
    # %ctaid / %cluster_nctaid, so the block is in cluster (0,0,0)
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        state.dispatches[0].cluster_size = (2, 1, 1)
        state.dispatches[0].workgroups[0].cluster = (0, 0, 0)
        core = write_core(state, tmp_path / "cluster.cudbg")
    sections = _sections(core)
    data = core.read_bytes()
    grid = next(s for s in sections if s["type"] == SHT_GRID_TABLE)
    cta = next(s for s in sections if s["type"] == SHT_CTA_TABLE)
    assert struct.unpack_from("<III", data, grid["offset"] + 104) == (2, 1, 1)  # r525 grid clusterDim
    assert struct.unpack_from("<III", data, cta["offset"] + 40) == (2, 1, 1)  # r565 CTA clusterDim
    with load_core(core) as opened:
        assert opened.dispatches[0].cluster_size == (2, 1, 1)
        names = [Session(opened).thread_name(w) for w in opened.waves]
        assert names[0].startswith("CUDA kernel 0 cluster (0,0,0) block (1,0,0) thread (0,0,0) device 0 sm 0 warp 0 [")
    # a block of another cluster reads its own index from the CTA row
    patched = bytearray(data)
    struct.pack_into("<III", patched, cta["offset"] + 24, 1, 0, 0)
    other = tmp_path / "other.cudbg"
    other.write_bytes(bytes(patched))
    with load_core(other) as opened:
        assert opened.dispatches[0].workgroups[0].cluster == (1, 0, 0)
    # a launch without clusters (dimensions 1) keeps the plain names
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        plain_core = write_core(state, tmp_path / "plain.cudbg")
    with load_core(plain_core) as plain:
        assert plain.dispatches[0].cluster_size is None and plain.dispatches[0].workgroups[0].cluster is None
    folder = tmp_path / "converted"
    assert cli_main(["state", "convert", str(core), str(folder)]) == 0
    assert cli_main(["state", "validate", str(folder)]) == 0
    with load_state(folder) as converted:
        assert converted.dispatches[0].cluster_size == (2, 1, 1)
        # a dump folder has no place for the SM and warp slot
        assert Session(converted).thread_name(converted.waves[0]) == names[0].replace(" device 0 sm 0 warp 0", "")


def test_convert_says_what_the_dump_format_cannot_keep(tmp_path, capsys):
    from aspace_dap.cli import main as cli_main

    # CudbgThreadTableEntry: u64 virtualPC, physPC; u32 ln, threadIdx x y z, exception (at 32)
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "two.cudbg", exception=(1, 3, 14))
    data = bytearray(core.read_bytes())
    first = next(s for s in _sections(core) if s["type"] == SHT_LN_TABLE)
    struct.pack_into("<I", data, first["offset"] + 2 * first["entsize"] + 32, 1)  # wave 0 lane 2
    path = tmp_path / "more.cudbg"
    path.write_bytes(bytes(data))
    assert cli_main(["state", "convert", str(path), str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out.splitlines()
    with load_state(path) as opened:
        error_pc = int(opened.waves[1].lane_pcs[3])  # the writer's errorPC: the faulting lane's PC
    # the stop is the first faulting lane's (wave 0 lane 2); wave 1's exception and error PC have no field
    assert said[1:] == ["not kept (the dump format has no place for it): the exceptions of 1 more lane "
                        "(wave 1 lane 3: Warp Illegal Address)",
                        f"not kept (the dump format has no place for it): the error PCs of wave 1 ({error_pc:#x})"]
    with load_state(tmp_path / "out") as converted:
        assert (converted.focus.wave, converted.focus.lane) == (0, 2)
        assert converted.stop.description == "CUDA Exception: Lane Illegal Address (1)"
