"""ROCm GPU cores of whole machines: several agents (GPUs of several XCCs), several queues each, every
queue's context-save area sized as libhsakmt sizes it (one per XCC); thousands of waves written and read
back wave by wave. The machines are made here from the divergent_call gfx942 -O2 example's wave
(benchmarks/gen_machines.py), never committed."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.errors import StateError
from aspace_dap.state import load_state
from aspace_dap.adapters.amdgpu.core_writer import SAVE_AREA_BASE, write_rocm_core
from aspace_dap.adapters.amdgpu.machine import GPUS, Gpu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from gen_machines import amd_node_state  # noqa: E402

PAGE = 4096


def _page(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


def _note(data: bytes):
    """(agents, queues) of the AMDGPU note as field dicts, read here by the note's layout (kfd_ioctl.h)."""
    note_at = struct.unpack_from("<Q", data, 64 + 8)[0]
    namesz, _ = struct.unpack_from("<II", data, note_at)
    desc = note_at + 12 + ((namesz + 3) & ~3)
    _, _, _, runtime_size, n_agents, agent_size, n_queues, queue_size = struct.unpack_from("<QIIQIIII", data, desc)
    agents_at = desc + 40 + runtime_size
    queues_at = agents_at + n_agents * agent_size
    agents = []
    for i in range(n_agents):
        values = struct.unpack_from("<7Q16I", data, agents_at + i * agent_size)
        agents.append(dict(gpu_id=values[7], location_id=values[8], gfx_target_version=values[15],
                           simd_count=values[16], max_waves_per_simd=values[17], array_count=values[18],
                           simd_arrays_per_engine=values[19], num_xcc=values[20]))
    queues = []
    for i in range(n_queues):
        values = struct.unpack_from("<5Q6I", data, queues_at + i * queue_size)
        queues.append(dict(ctx_save_restore_address=values[4], queue_id=values[5] & 0x3FFFFFFF, gpu_id=values[6],
                           area_size=values[9]))
    return agents, queues


def _segments(data: bytes) -> dict[int, tuple[int, int]]:
    phnum = struct.unpack_from("<H", data, 56)[0]
    out = {}
    for i in range(1, phnum):
        _, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, 64 + 56 * i)
        out[vaddr] = (offset, filesz)
    return out


def test_queue_sizes_follow_libhsakmt():
    # update_ctx_save_restore_size, by hand for an MI300X XCC: 38 CUs; wave_num = min(38 * 40, 32 banks * 512);
    # control stack PAGE_ALIGN(40 + 1520 * 8 + 8); per CU 512 KiB VGPRs + 16 KiB SGPRs + 64 KiB LDS + 4 KiB
    mi300x = GPUS["gfx942"]
    assert (mi300x.xccs, mi300x.cus_per_xcc) == (8, 38)
    assert mi300x.wave_slots == 1520 and mi300x.control_stack_size == _page(40 + 1520 * 8 + 8) == 0x3000
    assert mi300x.area_size == 0x3000 + _page(38 * (0x80000 + 0x4000 + 0x10000 + 0x1000)) == 0x1621000
    assert mi300x.debug_memory_size == 1520 * 32
    # MI250X die: 110 CUs, 8 banks: min(4400, 4096) waves; 8 bytes of control stack each
    mi250x = GPUS["gfx90a"]
    assert mi250x.wave_slots == 4096 and mi250x.control_stack_size == _page(40 + 4096 * 8 + 8)
    # gfx10: cu_num * 32 waves, 12 bytes each, the control stack capped at 0x7000
    rx6800 = GPUS["gfx1030"]
    assert rx6800.wave_slots == 60 * 32 and rx6800.control_stack_size == min(_page(40 + 1920 * 12 + 8), 0x7000)
    assert rx6800.area_size == 0x6000 + _page(60 * (0x40000 + 0x4000 + 0x10000 + 0x1000))
    # ROCr: COMPUTE_TMPRING_SIZE.WAVES is the XCC's CUs * 32 (per shader engine on gfx11)
    assert mi300x.scratch_waves == 38 * 32 and GPUS["gfx1100"].scratch_waves == 96 * 32 // 6


def _check_waves(original, read) -> None:
    by_id = {w.id: w for w in original.waves}
    assert sorted(by_id) == sorted(w.id for w in read.waves)
    for wave in read.waves:
        source = by_id[wave.id]
        assert wave.index_in_workgroup == source.index_in_workgroup
        assert wave.workgroup.id == source.workgroup.id
        for name, _ in source.registers.layout:
            want, _ = source.registers.raw(name)
            got, held = wave.registers.raw(name)
            assert held.all() and (got == want).all(), (wave.id, name)


@pytest.fixture(scope="module")
def mi300x_core(tmp_path_factory):
    # 4,100 waves on one queue of one MI300X: more than a 12-bit WAVES field numbers, across its 8 XCCs
    state = amd_node_state(gpus=1, waves=4100, vgprs=8, acc_vgprs=8, lds=1024)
    path = write_rocm_core(state, tmp_path_factory.mktemp("mi300x") / "gpucore.mi300x")
    return state, path


def test_more_than_4095_waves_on_one_queue_spread_over_the_xccs(mi300x_core):
    state, path = mi300x_core
    data = path.read_bytes()
    [agent], [queue] = _note(data)
    mi300x = GPUS["gfx942"]
    assert (agent["num_xcc"], agent["simd_count"], agent["array_count"], agent["simd_arrays_per_engine"]) == \
        (8, 8 * 38 * 4, 8 * 4, 1)
    assert queue["area_size"] == mi300x.area_size and queue["ctx_save_restore_address"] == SAVE_AREA_BASE
    # each XCC's header at ctx_save_restore_address + xcc * area size; workgroups go to the XCCs in turn, so
    # XCC 0 holds 129 of the 1,025 workgroups and the others 128; its control stack: 2 PM4 words, then per
    # workgroup one state word and 4 wave words
    segments = _segments(data)
    for xcc in range(8):
        offset, _ = segments[SAVE_AREA_BASE + xcc * mi300x.area_size]
        cs_offset, cs_size, ws_offset, ws_size = struct.unpack_from("<4I", data, offset)
        groups = 129 if xcc == 0 else 128
        assert cs_size == 4 * (2 + groups * 5)
        assert cs_offset + cs_size == mi300x.control_stack_size == ws_offset - ws_size
        assert ws_offset <= mi300x.area_size
    with load_state(path) as read:
        assert len(read.waves) == 4100 and read.target.processor == "gfx942"
        _check_waves(state, read)
        lds = read.waves[-1].workgroup.lds.read(0, 1024)
        want = state.waves[-1].workgroup.lds.read(0, 1024)
        assert lds[1].all() and (lds[0] == want[0]).all()


def test_a_node_of_two_gpus_with_two_queues_each(tmp_path):
    state = amd_node_state(gpus=2, dispatches=2, waves=64, vgprs=8, acc_vgprs=8, lds=1024)
    path = write_rocm_core(state, tmp_path / "gpucore.node", queues_per_agent=2)
    agents, queues = _note(path.read_bytes())
    assert len(agents) == 2 and len({a["gpu_id"] for a in agents}) == 2
    assert [a["location_id"] for a in agents] == [0, 1]
    assert [q["gpu_id"] for q in queues] == [agents[0]["gpu_id"]] * 2 + [agents[1]["gpu_id"]] * 2
    addresses = [q["ctx_save_restore_address"] for q in queues]
    # each queue's allocation: (area + debugger memory) per XCC, one after the other
    mi300x = GPUS["gfx942"]
    assert all(b - a >= 8 * (mi300x.area_size + mi300x.debug_memory_size) for a, b in zip(addresses, addresses[1:]))
    with load_state(path) as read:
        assert [d.device for d in read.dispatches] == [0, 0, 1, 1]
        assert [len(d.waves) for d in read.dispatches] == [64] * 4
        assert read.summary().endswith("4 dispatches, 64 workgroups, 256 waves")
        _check_waves(state, read)


def test_waves_past_a_gpus_slots_are_refused(tmp_path):
    state = amd_node_state(gpus=1, waves=40, vgprs=8, acc_vgprs=8, lds=1024)
    tiny = Gpu("gfx942", xccs=1, cus_per_xcc=1, shader_engines_per_xcc=1, simds_per_cu=4, waves_per_simd=8)
    with pytest.raises(StateError, match=r"on agent 0 queue 0 XCC 0: more than its 32 wave slots \(1 CUs\)"):
        write_rocm_core(state, tmp_path / "gpucore.tiny", gpus={"gfx942": tiny})
    # the same waves over two queues fit
    state = amd_node_state(gpus=1, dispatches=2, waves=20, vgprs=8, acc_vgprs=8, lds=1024)
    path = write_rocm_core(state, tmp_path / "gpucore.two-queues", gpus={"gfx942": tiny}, queues_per_agent=2)
    with load_state(path) as read:
        assert len(read.waves) == 40
        np.testing.assert_array_equal(sorted(w.id for w in read.waves), range(40))
