"""CUDA core dumps: the writer's files read back into the same state; malformed files name their section."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.errors import StateError
from aspace_dap.state import load_state
from aspace_dap.adapters.nvidia.core_writer import CONST_BANK_BASE, write_core
from aspace_dap.adapters.nvidia.core import (is_cuda_core, load_core)
from aspace_dap.adapters.nvidia.core_elf import (EM_CUDA, SHT_CTA_TABLE, SHT_LN_TABLE, SHT_REGS, SHT_WP_TABLE)

DUMPS = Path(__file__).resolve().parent.parent / "examples" / "cuda" / "dumps"
NAMES = ["divergent_call", "lds_tiles", "scratch_struct"]


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    out = {}
    folder = tmp_path_factory.mktemp("cores")
    for name in NAMES:
        with load_state(DUMPS / f"{name}.sm_90.G") as state:
            out[name] = write_core(state, folder / f"{name}.cudbg")
    return out


def _sections(path: Path) -> list[dict]:
    """The section headers, read here with struct (not through the reader under test)."""
    data = path.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, shstrndx = struct.unpack_from("<HH", data, 60)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
    names = data[headers[shstrndx][4]:headers[shstrndx][4] + headers[shstrndx][5]]
    out = []
    for i, h in enumerate(headers):
        out.append(dict(index=i, at=shoff + 64 * i, name=names[h[0]:names.index(b"\0", h[0])].decode(),
                        type=h[1], addr=h[3], offset=h[4], size=h[5], link=h[6], info=h[7], entsize=h[9]))
    return out


def _patch(src: Path, dst: Path, section_type: int, field: str, value: int) -> str:
    """Copy `src` with one header field of the first section of a type changed; returns its name."""
    data = bytearray(src.read_bytes())
    sec = next(s for s in _sections(src) if s["type"] == section_type)
    fmt_at = {"link": (40, "<I"), "info": (44, "<I"), "entsize": (56, "<Q"), "size": (32, "<Q"),
              "offset": (24, "<Q")}[field]
    struct.pack_into(fmt_at[1], data, sec["at"] + fmt_at[0], value)
    dst.write_bytes(bytes(data))
    return sec["name"]


def test_header_is_a_cuda_core(cores):
    data = cores["lds_tiles"].read_bytes()
    assert data[:4] == b"\x7fELF" and data[7] == 0x33
    assert struct.unpack_from("<HH", data, 16) == (4, EM_CUDA)
    assert is_cuda_core(cores["lds_tiles"])
    assert not is_cuda_core(DUMPS / "lds_tiles.sm_90.G" / "code" / "lds_tiles.sm_90.G.cubin")


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_keeps_registers_memory_and_layout(cores, name):
    original = load_state(DUMPS / f"{name}.sm_90.G")
    with load_state(cores[name]) as core:
        assert core.target.vendor == "nvidia" and core.target.processor == "sm_90" and core.target.lanes == 32
        assert core.target.apertures == original.target.apertures
        assert [d.kernel for d in core.dispatches] == [d.kernel for d in original.dispatches]
        for d0, d1 in zip(original.dispatches, core.dispatches):
            assert (d1.grid_size, d1.workgroup_size) == (d0.grid_size, d0.workgroup_size)
            assert [wg.id for wg in d1.workgroups] == [wg.id for wg in d0.workgroups]
            p0, p1 = d0.memory["param"], d1.memory["param"]
            assert p1.ranges() == p0.ranges()
            start, size = p0.ranges()[0]
            assert p1.read(start, size)[0].tobytes() == p0.read(start, size)[0].tobytes()
            for wg0, wg1 in zip(d0.workgroups, d1.workgroups):
                if wg0.lds is None:
                    assert wg1.lds is None
                else:
                    size = wg0.lds.regions[0].size
                    assert wg1.lds.read(0, size)[0].tobytes() == wg0.lds.read(0, size)[0].tobytes()
        for w0, w1 in zip(original.waves, core.waves):
            assert w1.index_in_workgroup == w0.index_in_workgroup
            assert (w1.valid_lanes == w0.valid_lanes).all() and (w1.active_lanes == w0.active_lanes).all()
            assert w1.registers.layout == w0.registers.layout
            for reg, _ in w0.registers.layout:
                a, b = w0.registers.raw(reg), w1.registers.raw(reg)
                assert (a[0] == b[0]).all() and b[1].all(), reg
            assert (w1.lane_pcs == w0.pc).all()  # the dumps stop every lane at the warp's pc
            lanes = np.arange(32)
            base = np.full(32, w0.private.base, np.uint64)
            a = w0.private.read_lane(lanes, base, w0.private.lane_size)
            b = w1.private.read_lane(lanes, base, w1.private.lane_size)
            assert (a[0] == b[0]).all() and b[1].all()
        g0, g1 = original.memory["global"], core.memory["global"]
        # the core's global memory also holds each grid's constant bank 0 (its parameter bytes)
        assert [r for r in g1.ranges() if r[0] < CONST_BANK_BASE] == g0.ranges()
        for start, size in g0.ranges():
            assert g1.read(start, size)[0].tobytes() == g0.read(start, size)[0].tobytes()
        # the embedded cubin is the relocated image of the dump's own
        from aspace_dap.adapters.nvidia.cubin import relocate_cubin
        assert core.code_objects[0].path.read_bytes() == relocate_cubin(original.code_objects[0].path.read_bytes())
        assert core.focus == original.focus and core.stop.reason == "pause"
    original.close()


def test_exception_lane_takes_the_focus(cores, tmp_path):
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        path = write_core(state, tmp_path / "fault.cudbg", exception=(1, 7, 14))
    with load_core(path) as core:
        assert core.focus.wave == 1 and core.focus.lane == 7
        assert core.stop.reason == "exception" and "Warp Illegal Address (14)" in core.stop.description


def test_local_sections_out_of_order_still_read_per_lane(cores, tmp_path):
    # a reader may not assume the writer's back-to-back layout: swap two lanes' local sections
    src = cores["scratch_struct"]
    data = bytearray(src.read_bytes())
    local = [s for s in _sections(src) if s["name"].startswith(".cudbg.local.") and ".wp0." in s["name"]]
    a, b = local[0], local[3]
    struct.pack_into("<Q", data, a["at"] + 24, b["offset"])
    struct.pack_into("<Q", data, b["at"] + 24, a["offset"])
    path = tmp_path / "swapped.cudbg"
    path.write_bytes(bytes(data))
    with load_state(src) as ordered, load_core(path) as swapped:
        p0, p1 = ordered.waves[0].private, swapped.waves[0].private
        assert len(p1.wave_view.regions) == 32
        lane_a, lane_b = int(a["name"].rsplit("ln", 1)[1]), int(b["name"].rsplit("ln", 1)[1])
        got = p1.read_lane(lane_a, p1.base, p1.lane_size)
        want = p0.read_lane(lane_b, p0.base, p0.lane_size)
        assert got[1].all() and (got[0] == want[0]).all()


def test_short_register_sections_leave_registers_out(cores, tmp_path):
    path = tmp_path / "short.cudbg"
    _patch(cores["lds_tiles"], path, SHT_REGS, "size", 8)
    with load_core(path) as core:
        names = core.waves[0].registers.names
        assert "R0" in names and "R1" in names and "R2" not in names  # never shown as zeros


@pytest.mark.parametrize("section_type, field, value, message", [
    (SHT_WP_TABLE, "entsize", 16, "smaller than a wptbl row"),
    (SHT_LN_TABLE, "size", 47, "not a whole number"),
    (SHT_CTA_TABLE, "link", 1, "does not name a smtbl section"),
    (SHT_WP_TABLE, "link", 999, "does not name a ctatbl section"),
    (SHT_REGS, "info", 40, "past the"),
    (SHT_REGS, "size", 1 << 40, "past the end"),
])
def test_malformed_core_names_the_section(cores, tmp_path, section_type, field, value, message):
    path = tmp_path / "bad.cudbg"
    name = _patch(cores["lds_tiles"], path, section_type, field, value)
    with pytest.raises(StateError) as err:
        load_state(path).close()
    assert message in str(err.value) and err.value.path == name


def test_truncated_file_and_wrong_kind_of_elf(cores, tmp_path):
    data = cores["lds_tiles"].read_bytes()
    cut = tmp_path / "cut.cudbg"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(StateError, match="section header table"):
        load_state(cut)
    cubin = DUMPS / "lds_tiles.sm_90.G" / "code" / "lds_tiles.sm_90.G.cubin"
    with pytest.raises(StateError, match="not a GPU core dump.*CUDA core dump"):
        load_state(cubin)


def test_writer_refuses_what_a_core_cannot_hold(tmp_path):
    amd = next((Path(__file__).resolve().parent.parent / "examples" / "lds_tiles" / "dumps").iterdir())
    with load_state(amd) as state:
        with pytest.raises(StateError, match="NVIDIA state"):
            write_core(state, tmp_path / "amd.cudbg")
    with load_state(DUMPS / "lds_tiles.sm_90.G") as state:
        state.waves[0].registers.layout.append(("SR_CLOCK", 4))
        with pytest.raises(StateError, match="SR_CLOCK has no place"):
            write_core(state, tmp_path / "extra.cudbg")


def test_a_local_section_far_outside_the_local_window_is_named(cores, tmp_path):
    # a lane's .cudbg.local sh_addr is its address in the local window; one lane's at 0xfffffffffffff000
    # puts the warp's local memory 2^64 bytes wide: an error naming that section, not an OverflowError
    src = cores["scratch_struct"]
    data = bytearray(src.read_bytes())
    local = next(s for s in _sections(src) if s["name"].startswith(".cudbg.local.") and s["name"].endswith(".ln5"))
    struct.pack_into("<Q", data, local["at"] + 16, 0xFFFFFFFFFFFFF000)  # sh_addr
    path = tmp_path / "far.cudbg"
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="local window") as err:
        load_state(path).close()
    assert err.value.path == local["name"]


def test_a_warp_without_valid_lanes_opens(cores, tmp_path):
    # validLanesMask 0 on a device whose numRegsPerLane (255, the device's most) exceeds what each lane's
    # register section holds: the warp has no valid lane, and the other warp reads as before
    src = cores["divergent_call"]
    data = bytearray(src.read_bytes())
    sections = _sections(src)
    dev = next(s for s in sections if s["name"] == ".cudbg.devtbl")
    struct.pack_into("<I", data, dev["offset"] + 48, 255)  # numRegsPerLane
    warp = next(s for s in sections if s["type"] == SHT_WP_TABLE)
    struct.pack_into("<I", data, warp["offset"] + 12, 0)  # validLanesMask of its first row
    path = tmp_path / "empty-warp.cudbg"
    path.write_bytes(bytes(data))
    with load_state(src) as before, load_core(path) as core:
        empty = next(w for w in core.waves if w.path.startswith(warp["name"]))
        assert not empty.valid_lanes.any() and not empty.active_lanes.any()
        other = next(w for w in core.waves if w is not empty)
        same = before.waves[core.waves.index(other)]
        assert other.valid_lanes.all()
        for name in ("R0", "R1", "R10"):
            assert np.array_equal(other.registers.raw(name)[0], same.registers.raw(name)[0])


def test_an_elf_ident_cuda_gdb_refuses_is_refused_with_the_reason(cores, tmp_path):
    # libcudacore's elfCheckHeader compares all nine ident bytes (EI_PAD) with its own: ABI version 7
    for at, value, name in ((8, 6, "EI_ABIVERSION"), (6, 2, "EI_VERSION")):
        data = bytearray(cores["lds_tiles"].read_bytes())
        data[at] = value
        path = tmp_path / f"ident{at}.cudbg"
        path.write_bytes(bytes(data))
        assert is_cuda_core(path)  # still recognised as a CUDA core: the error says why it is refused
        with pytest.raises(StateError, match=f"ident byte {at} \\({name}\\) is {value}, not") as err:
            load_state(path).close()
        assert "cuda-gdb" in str(err.value)
