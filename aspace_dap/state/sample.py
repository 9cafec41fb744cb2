"""A small, fully known synthetic dump (AMD wave64 or wave32) for tests and demos of the state layer.

Every value is derived from the wave id, lane and register number, so readers can check
what they get back without storing the expected bytes.
"""

from __future__ import annotations

import numpy as np

from .writer import StateWriter

GLOBAL_BASE = 0x7F0000000000
GLOBAL_SIZE = 4096
PRIVATE_PER_LANE = 64
LDS_SIZE = 256


def vgpr_values(wave_id: int, vgpr: int, lanes: int) -> np.ndarray:
    return (np.arange(lanes, dtype=np.uint32) + 1000 * wave_id + 100000 * vgpr).astype(np.uint32)


def private_lanes(wave_id: int, lanes: int) -> np.ndarray:
    """(lanes, PRIVATE_PER_LANE) bytes: byte k of lane L is (wave_id * 7 + L * 3 + k) & 0xff."""
    lane = np.arange(lanes)[:, None]
    k = np.arange(PRIVATE_PER_LANE)[None, :]
    return ((wave_id * 7 + lane * 3 + k) & 0xFF).astype(np.uint8)


def lds_bytes(workgroup_index: int) -> bytes:
    return ((np.arange(LDS_SIZE) * 5 + workgroup_index) & 0xFF).astype(np.uint8).tobytes()


def global_bytes() -> bytes:
    return (np.arange(GLOBAL_SIZE) & 0xFF).astype(np.uint8).tobytes()


def sample_writer(lanes: int = 64, processor: str | None = None) -> StateWriter:
    """Two workgroups of two waves each, with LDS, swizzled private memory and global memory."""
    mask_bytes = lanes // 8
    writer = StateWriter("amd", processor or ("gfx90a" if lanes == 64 else "gfx1100"), lanes,
                         apertures={"local": (0x1000000000000, 0x100000000),
                                    "private": (0x2000000000000, 0x100000000)},
                         producer="aspace-dap sample")
    co = writer.add_code_object(b"\x7fELF" + bytes(60), load_address=0x1000, name="kernel.co")
    writer.add_memory("global", GLOBAL_BASE, global_bytes())
    layout = writer.add_register_layout(f"wave{lanes}", [
        ("pc", 8), ("exec", mask_bytes), ("s0", 4), ("s1", 4), ("v0", 4 * lanes), ("v1", 4 * lanes)])
    dispatch = writer.add_dispatch("_Z5saxpyfPKfPfi", co, [4 * lanes, 1, 1], [2 * lanes, 1, 1])
    wave_id = 0
    for g in range(2):
        workgroup = dispatch.add_workgroup((g, 0, 0), lds=lds_bytes(g))
        for index in range(2):
            exec_mask = ((1 << lanes) - 1) ^ (1 << (wave_id + 1))  # one inactive lane per wave
            workgroup.add_wave(
                wave_id, index,
                {"pc": np.uint64(0x1100 + 4 * wave_id),
                 "exec": exec_mask.to_bytes(mask_bytes, "little"),
                 "s0": np.uint32(0xABC0 + wave_id), "s1": np.uint32(wave_id),
                 "v0": vgpr_values(wave_id, 0, lanes), "v1": vgpr_values(wave_id, 1, lanes)},
                layout=layout,
                valid_lanes=None if wave_id != 3 else (1 << (lanes // 2)) - 1,
                private=private_lanes(wave_id, lanes))
            wave_id += 1
    writer.set_focus(1, 5)
    writer.set_stop("exception", "memory violation")
    return writer
