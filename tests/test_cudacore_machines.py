"""CUDA cores of a whole GPU: more sections than e_shnum holds (ELF's extended numbering, as libcudacore's
elf.c reads it), several CTAs per SM with each warp's warpId its SM slot, read back warp by warp. The core
is made here from the divergent_call sm_90 example's warp (benchmarks/gen_machines.py), never committed."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

from aspace_dap.state import load_state
from aspace_dap.adapters.nvidia.core import load_core
from aspace_dap.adapters.nvidia.core_elf import (SHT_CTA_TABLE, SHT_WP_TABLE)
from aspace_dap.adapters.nvidia.core_writer import write_core

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from gen_machines import cuda_node_state  # noqa: E402

SHN_LORESERVE, SHN_XINDEX = 0xFF00, 0xFFFF


def test_a_gpu_with_more_sections_than_e_shnum_holds(tmp_path):
    # 11 SMs x 64 warps = 704 warps of 32 lanes, each lane with its regs, pred and local sections: > 0xff00
    state = cuda_node_state(sms=11, warps_per_sm=64)
    path = write_core(state, tmp_path / "gpu.cudbg", sms=11, warps_per_sm=64)
    data = path.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, shstrndx = struct.unpack_from("<HH", data, 60)
    count, = struct.unpack_from("<Q", data, shoff + 32)       # section 0's sh_size
    strtab, = struct.unpack_from("<I", data, shoff + 40)      # section 0's sh_link
    assert shnum == 0 and count > SHN_LORESERVE and shstrndx == SHN_XINDEX and SHN_LORESERVE <= strtab < count
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(count)]
    assert headers[strtab][1] == 3  # SHT_STRTAB: the section names
    # one CTA table per SM, CTAs handed out in turn; every warp's warpId is its slot on its SM
    cta_tables = [h for h in headers if h[1] == SHT_CTA_TABLE]
    assert len(cta_tables) == 11 and all(h[5] // h[9] == 32 for h in cta_tables)  # 352 blocks of 2 warps
    slots = {}
    for h in (h for h in headers if h[1] == SHT_WP_TABLE):
        sm = next(i for i, c in enumerate(cta_tables) if headers.index(c) == h[6])
        for at in range(h[4], h[4] + h[5], h[9]):
            slots.setdefault(sm, []).append(struct.unpack_from("<I", data, at + 8)[0])  # warpId
    assert all(sorted(ids) == list(range(64)) for ids in slots.values()) and len(slots) == 11
    with load_core(path) as core:
        assert len(core.waves) == 704 and core.target.processor == "sm_90"
        source = state.waves[0]
        blocks = sorted(wg.id for wg in core.dispatches[0].workgroups)
        assert blocks == [(b, 0, 0) for b in range(352)]
        for wave in (core.waves[0], core.waves[-1]):
            assert wave.index_in_workgroup in (0, 1)
            for name, _ in source.registers.layout:
                want, _ = source.registers.raw(name)
                got, held = wave.registers.raw(name)
                assert held.all() and np.array_equal(got, want), name
            assert np.array_equal(wave.lane_pcs, source.lane_pcs if source.lane_pcs is not None else
                                  np.full(32, source.pc, np.uint64))
            n = source.private.size
            a, b = source.private.wave_view.read(0, n), wave.private.wave_view.read(0, n)
            assert b[1].all() and np.array_equal(a[0], b[0])
    with load_state(path) as again:  # and through the format table
        assert again.summary().endswith("1 dispatches, 352 workgroups, 704 waves")
