"""find EXPR / findLanes: the lanes of every wave where an expression is true, each lane evaluated at
its own pc in its innermost frame, the lanes where it has no value counted apart with the reason.

Expected lanes come from the dumps' own files, read here with numpy (register files by their layout,
the swizzled private memory with ROCm's rule and the frame pointer the DWARF names), never from our
reader; the cores are written from those dumps, so the same expectations hold for them. The last
tests check that the whole-place (numpy) evaluation and expressions.py's wave-by-wave evaluation agree,
and that `cancel` stops a long search.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from dap_client import launched
from test_wave_groups import first_pc_of_line

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_hangs import site_pcs, write_hang_core, write_hang_dump  # noqa: E402
from gen_waves import write_waves_dump  # noqa: E402

from aspace_dap import find_lanes as finding  # noqa: E402
from aspace_dap.find_lanes import find_lanes  # noqa: E402
from aspace_dap.session import Session  # noqa: E402
from aspace_dap.vector_expressions import NotVectorized  # noqa: E402

BLOCKS, WAVES, DEVICES = 2, 4, 2


@pytest.fixture(scope="module")
def hangs(tmp_path_factory):
    """(folder dump, core) of the hang kernel, per vendor."""
    folder = tmp_path_factory.mktemp("find")
    out = {}
    for vendor in ("amd", "nvidia"):
        dump = write_hang_dump(folder / f"{vendor}-dump", vendor, devices=DEVICES, blocks=BLOCKS, waves=WAVES)
        core = write_hang_core(folder / f"{vendor}-core", vendor, devices=DEVICES, blocks=BLOCKS, waves=WAVES)
        out[vendor] = (dump, core)
    return out


def _registers(dump: Path, name: str, lanes: int) -> dict[int, np.ndarray]:
    """wave id -> the register's per-lane uint32 values, from the dump's manifest and register files."""
    manifest = json.loads((dump / "manifest.json").read_text())
    out = {}
    for dispatch in manifest["dispatches"]:
        for group in dispatch["workgroups"]:
            for wave in group["waves"]:
                at = 0
                for reg, size in manifest["register_layouts"][wave["registers"]["layout"]]:
                    if reg == name:
                        break
                    at += size
                data = (dump / wave["registers"]["file"]).read_bytes()[at:at + 4 * lanes]
                out[wave["id"]] = np.frombuffer(data, "<u4")
    return out


@pytest.mark.parametrize("vendor, register", [("amd", "v3"), ("nvidia", "R3")])
def test_a_register_in_every_lane_of_a_dump_and_its_core(hangs, vendor, register):
    lanes = 64 if vendor == "amd" else 32
    values = _registers(hangs[vendor][0], register, lanes)
    expected = sorted((w, lane) for w, v in values.items() for lane in np.flatnonzero(v % 7 == 0).tolist())
    big = sorted((w, int(lane), str(int(v[lane]))) for w, v in values.items()
                 for lane in np.flatnonzero(v > 3_000_000_000))
    for path in hangs[vendor]:
        session = Session.open(str(path))
        found = find_lanes(session, f"${register} % 7 == 0", limit=10_000)
        assert found.searched == DEVICES * BLOCKS * WAVES * lanes and found.unevaluated == 0
        assert found.matched == len(expected) and [(w, lane) for w, lane, _ in found.lanes] == expected
        assert {value for _, _, value in found.lanes} == {"1"}
        # the value of each matching lane: the register's, as unsigned int
        picked = find_lanes(session, f"${register} > 3000000000u ? ${register} : 0u", limit=10_000)
        assert [tuple(x) for x in picked.lanes] == big
        # every wave group holding a match, with the matching lanes in it
        assert sum(g.lanes for g in found.groups) == found.matched
        assert sorted(w for g in found.groups for w in g.wave_ids.tolist()) == sorted({w for w, _ in expected})


def test_builtins_and_sites_in_a_core(hangs):
    """threadIdx.x is the lane's flat index in its block here (blocks of 1-D waves), as v0 holds it."""
    session = Session.open(str(hangs["amd"][1]))
    found = find_lanes(session, "threadIdx.x == $v0 && $v0 == 5", limit=100)
    assert found.matched == DEVICES * BLOCKS and found.unevaluated == 0  # lane 5 of each block's wave 0
    assert [(w, lane) for w, lane, _ in found.lanes] == [(d * BLOCKS * WAVES + b * WAVES, 5)
                                                         for d in range(DEVICES) for b in range(BLOCKS)]
    spin = site_pcs("amd")[0]
    assert [g.group.frames[0]["pc"] for g in found.groups] == [spin] * DEVICES  # wave 0 of a block spins
    at_spin = find_lanes(session, f"$pc == {spin:#x}", limit=0)
    assert at_spin.matched == DEVICES * BLOCKS * 2 * 64  # waves 0 and 3 of each block


@pytest.fixture(scope="module")
def tiles(tmp_path_factory) -> Path:
    """400 lds_tiles gfx90a -O0 waves, the last 3 moved to the row-sum loop (line 30, where k lives)."""
    return write_waves_dump(tmp_path_factory.mktemp("tiles") / "dump", 100, odd=3, odd_pc=first_pc_of_line(30))


def _private_ints(dump: Path, wave_index: int, frame_offset: int) -> np.ndarray:
    """An int at frame base + `frame_offset` in each lane's scratch: the frame base is SGPR33, wave-scaled
    (its value / 64 is the lane address, upstream LLVM's gfx90a MUBUF stack), and the private file holds
    lane L's address A at (A / 4) * 64 * 4 + L * 4 + A % 4 (docs/STATE_FORMAT.md, swizzled)."""
    manifest = json.loads((dump / "manifest.json").read_text())
    waves = [w for g in manifest["dispatches"][0]["workgroups"] for w in g["waves"]]
    wave = waves[wave_index]
    at = 0
    for reg, size in manifest["register_layouts"][wave["registers"]["layout"]]:
        if reg == "s33":
            break
        at += size
    s33 = int.from_bytes((dump / wave["registers"]["file"]).read_bytes()[at:at + 4], "little")
    private = (dump / wave["private"]["file"]).read_bytes()
    address = s33 // 64 + frame_offset
    return np.array([int.from_bytes(private[(address // 4) * 256 + lane * 4:][:4], "little", signed=True)
                     for lane in range(64)])


def test_lanes_where_a_name_is_not_in_scope_are_counted_apart(tiles):
    """`k` (DW_OP_fbreg +88) is in scope only in the loop: the 3 waves there are searched, every other
    active lane is unevaluated with the reason; tx (fbreg +64) and k from the scratch files."""
    exec_mask = np.frombuffer((tiles / "regs" / "wave-0.bin").read_bytes()[8:16], "<u8")[0]
    active = [lane for lane in range(64) if exec_mask >> np.uint64(lane) & np.uint64(1)]
    expected = []
    for w in (397, 398, 399):
        tx, k = _private_ints(tiles, w, 64), _private_ints(tiles, w, 88)
        expected += [(w, lane) for lane in active if tx[lane] == 2 and k[lane] == 0]
    session = Session.open(str(tiles))
    found = find_lanes(session, "tx == 2 && k == 0", limit=1000)
    assert found.searched == 400 * len(active)
    assert found.unevaluated == 397 * len(active)
    assert found.reasons == [('no symbol "k" in current context', 397 * len(active))]
    assert [(w, lane) for w, lane, _ in found.lanes] == expected and len(expected) == 3 * 4
    [group] = found.groups
    assert group.group.frames[0]["line"] == 30 and group.wave_ids.tolist() == [397, 398, 399]
    zero = find_lanes(session, "1 / ($v40 - $v40)", limit=10)  # (v40 is in the dump: its layout)
    assert zero.matched == 0 and zero.reasons == [("division by zero", 400 * len(active))]


def test_the_repl_and_the_request_say_the_same(tiles):
    c, _ = launched(str(tiles))
    try:
        text = c.request("evaluate", {"expression": "find k == k", "context": "repl"})["result"].splitlines()
        assert text[0] == "find k == k: 48 lanes in 3 waves (of 6,400 active lanes in 400 waves)"
        assert text[1] == "6,352 lanes could not be evaluated:"
        assert text[2].split(None, 1) == ["6,352", 'no symbol "k" in current context']
        assert "transpose_tiles (lds_tiles.hip:30)" in text[4] and text[5].strip() == "waves 397-399"
        assert text[6] == "first 20 lanes:" and text[7] == "  wave 397 lane 0: 1"
        body = c.request("findLanes", {"expression": "k == k", "limit": 2})
        assert (body["matched"], body["unevaluated"], body["searched"], body["waves"], body["matchedWaves"]) == \
            (48, 6352, 6400, 400, 3)
        assert body["reasons"] == [{"reason": 'no symbol "k" in current context', "count": 6352}]
        assert body["lanes"] == [{"threadId": 398, "waveId": 397, "lane": 0, "value": "1"},
                                 {"threadId": 398, "waveId": 397, "lane": 1, "value": "1"}]
        [group] = body["groups"]
        assert (group["matchedLanes"], group["matchedWaveCount"], group["matchedWaveRanges"]) == (48, 3, "397-399")
        assert group["where"].endswith("transpose_tiles (lds_tiles.hip:30)")
        with pytest.raises(AssertionError, match="unexpected"):
            c.request("findLanes", {"expression": "k == == 1"})
        c.request("disconnect")
    finally:
        c.close()


def test_cancel_stops_a_long_search(tiles):
    """A dereference is evaluated wave by wave (expressions.py): long enough to cancel."""
    c, _ = launched(str(tiles), supportsProgressReporting=True)
    try:
        seq = c.send("findLanes", {"expression": "*&tx == 0"})
        start = c.wait_event("progressStart")["body"]
        while start["requestId"] != seq:  # (the launch's own progress first)
            start = c.wait_event("progressStart")["body"]
        assert start["cancellable"] is True and start["title"] == "Finding lanes where *&tx == 0"
        update = c.wait_event("progressUpdate")["body"]
        while update["progressId"] != start["progressId"]:
            update = c.wait_event("progressUpdate")["body"]
        c.send("cancel", {"requestId": seq})
        response = c.wait_response(seq, timeout=30)
        assert response["success"] is False and response["message"] == "cancelled"
        assert any(m["body"]["progressId"] == start["progressId"] for m in c.events("progressEnd"))
        updates = [m["body"] for m in c.events("progressUpdate") if m["body"]["progressId"] == start["progressId"]]
        assert updates[-1]["percentage"] < 100  # stopped before the end
        c.request("disconnect")
    finally:
        c.close()


EXPRESSIONS = ["tx", "tx == 1", "tx * 3 - ty > 4", "(float)tx / 3", "tx / 0", "tx << 33", "-tx", "!tx", "~tx",
               "tx % 3", "tx > 2 ? tx : ty", "threadIdx.x + blockIdx.x * blockDim.x", "get_global_id(0) % 5 == 0",
               "$pc", "$exec", "$lane * 2", "isnan(1.0 * tx)", "1u - 2 > tx", "tx != tx + 0.5f", "(short)(tx * 40000)",
               "(unsigned char)-tx", "x * 2", "(int)x", "isnan(x / 0.0)", "lane ^ 5 | 2", "steps >= 3 && x < 0",
               "p.mass > 1", "p.pos[1]", "p.id % 2", "warpSize", "$v1", "$s5", "$R2"]
SAME = {"<optimized out>": "<unavailable>"}  # expressions.py's result objects keep no cause: its lanes say unavailable


@pytest.mark.parametrize("dump", ["lds_tiles/dumps/gfx90a.O2", "lds_tiles/dumps/gfx90a.O0",
                                  "divergent_call/dumps/clang19.gfx942.O2", "scratch_struct/dumps/clang19.gfx90a.O2",
                                  "cuda/dumps/divergent_call.sm_90.G", "opencl/dumps/scratch_struct.tgllp.O0"])
def test_whole_places_and_wave_by_wave_agree(dump):
    session = Session.open(str(REPO / "examples" / dump))

    def search(text):
        try:
            found = find_lanes(session, text, limit=10_000)
        except Exception as e:  # noqa: BLE001 - the same error both ways
            return type(e).__name__, str(e)
        return found.matched, found.unevaluated, [(SAME.get(r, r), n) for r, n in found.reasons], found.lanes

    for text in EXPRESSIONS:
        fast = search(text)
        with mock.patch.object(finding, "evaluate", side_effect=NotVectorized("the test")):
            slow = search(text)
        assert fast == slow, text


def test_a_search_of_a_core_in_a_device_function_says_where_each_lane_stands(hangs, tmp_path):
    """Lanes stopped in `settle` (a called function) are evaluated in settle's frame, each at its pc."""
    from gen_machines import amd_node_state

    from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core

    state = amd_node_state(gpus=2, waves=8, vgprs=8, acc_vgprs=0, lds=64, pcs=[0x1904, 0x1B0C])
    core = write_rocm_core(state, tmp_path / "gpucore")
    session = Session.open(str(core))
    found = find_lanes(session, "steps >= 1", limit=0)
    # settle's lanes: the odd lanes of the waves at 0x1904 (the example's own stop); the others lack steps
    assert found.matched + found.unevaluated == found.searched
    assert {g.group.frames[0]["name"] for g in found.groups} == {"settle"}
    assert all(r[0] == 'no symbol "steps" in current context' for r in found.reasons)
    start = time.perf_counter()
    assert find_lanes(session, "steps >= 1", limit=0).matched == found.matched
    assert time.perf_counter() - start < 60  # (a sanity bound, not a benchmark)
