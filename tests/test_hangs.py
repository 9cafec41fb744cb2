"""Hangs: where every wave of a hung kernel stands, and names that tell the GPUs apart.

The inputs are cores of examples/hang (benchmarks/gen_hangs.py): a ROCm gpucore and a user-triggered
CUDA core (no exception) whose waves stand at the kernel's three hang sites by their index in the block,
as the kernel sends them. The sites' addresses come from llvm-objdump's and nvdisasm's listings, the
inline chains from llvm-symbolizer --inlining, agents and queues from the core's own note (read here
with struct), never from our reader.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dap_client import launched
from test_rocmcore_machines import _note

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_hangs import code_object, site_pcs, write_hang_core, write_hang_dump  # noqa: E402

from aspace_dap.names import missing_demangler  # noqa: E402
from aspace_dap.session import Session  # noqa: E402
from aspace_dap.state import load_state  # noqa: E402

BLOCKS, WAVES = 8, 8


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hangs")
    out = {}
    for vendor in ("amd", "nvidia"):
        for lines in (False, True):
            name = f"{vendor}-{'lines' if lines else 'bare'}"
            out[(vendor, lines)] = write_hang_core(folder / name, vendor, lines=lines, blocks=BLOCKS, waves=WAVES)
    out["agents"] = write_hang_core(folder / "agents", "amd", devices=3, blocks=2, waves=4)
    out["devices"] = write_hang_core(folder / "devices", "nvidia", devices=2, blocks=2, waves=4)
    return out


def _expected_members(devices: int = 1, blocks: int = BLOCKS, waves: int = WAVES) -> dict[tuple[int, int], list[int]]:
    """(dispatch, site) -> wave ids: the generator numbers waves block by block, wave i of a block at
    site i % 3 (the path the kernel sends it down)."""
    out: dict[tuple[int, int], list[int]] = {}
    for n in range(devices * blocks * waves):
        out.setdefault((n // (blocks * waves), n % waves % 3), []).append(n)
    return out


@pytest.mark.parametrize("vendor", ["amd", "nvidia"])
def test_three_hang_sites_without_line_information_are_three_groups(cores, vendor):
    """No DWARF at all: every frame is the kernel's symbol, yet each site is a group of its own."""
    session = Session(load_state(cores[(vendor, False)]))
    groups = session.wave_groups()
    pcs = site_pcs(vendor, lines=False)
    assert len(groups) == 3
    expected = _expected_members()
    seen = set()
    for g in groups:
        [frame] = g.frames
        # the kernel's symbol as c++filt demangles it, without its parameters (mangled with no demangler)
        assert frame["name"] == ("_Z4hangPViPiii" if missing_demangler() else "hang") and frame["line"] is None
        site = pcs.index(frame["pc"])  # one of the listing's three sites
        seen.add(site)
        assert g.wave_ids.tolist() == expected[(0, site)]
        assert g.active_lanes == g.valid_lanes == len(g.wave_ids) * (64 if vendor == "amd" else 32)
    assert seen == {0, 1, 2}
    # smallest first: the loop's 2 waves a block before the other sites' 3
    assert [len(g.wave_ids) for g in groups] == [2 * BLOCKS, 3 * BLOCKS, 3 * BLOCKS]


def _symbolized(co: Path, pc: int) -> list[tuple[str, str, int]]:
    """(function, file name, line) of each frame llvm-symbolizer --inlining gives, innermost first."""
    tool = shutil.which("llvm-symbolizer-19") or shutil.which("llvm-symbolizer")
    if tool is None:
        pytest.skip("llvm-symbolizer not installed: apt-get install llvm-19")
    text = subprocess.run([tool, f"--obj={co}", "--inlining", "--functions=short", hex(pc)], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()
    out = []
    for name, where in zip(text[0::2], text[1::2]):
        path, line, _ = where.rsplit(":", 2)
        out.append((name, Path(path).name, int(line)))
    return out


def test_each_group_shows_its_inline_chain(cores):
    """-O3 -gline-tables-only: the spin-wait is inlined from wait_for, the barrier from __syncthreads;
    each group's frames are llvm-symbolizer's chain at its pc, and `info waves` says it."""
    c, _ = launched(str(cores[("amd", True)]))
    try:
        body = c.request("waveGroups")
        assert body["totalGroups"] == 3 and body["totalWaves"] == BLOCKS * WAVES
        chains = {}
        for g in body["groups"]:
            pc = int(g["frames"][0]["instructionPointerReference"], 16)
            chain = [(f["name"].split("(")[0], f["source"]["name"], f["line"]) for f in g["frames"]]
            assert chain == _symbolized(code_object("amd", True), pc)
            assert [f["inlined"] for f in g["frames"]] == [True] * (len(chain) - 1) + [False]
            chains[pc] = g["where"]
        spin, barrier, loop = site_pcs("amd")
        assert chains[spin] == f"{spin:#x} wait_for (hang.hip:11) inlined in hang (hang.hip:22)"
        assert chains[barrier] == f"{barrier:#x} __syncthreads (hip_runtime.h:60) inlined in hang (hang.hip:24)"
        assert chains[loop] == f"{loop:#x} hang (hang.hip:27)"
        text = c.request("evaluate", {"expression": "info waves", "context": "repl"})["result"]
        for where in chains.values():
            assert where in text
        assert text.startswith(f"{BLOCKS * WAVES} waves in 3 groups")
        c.request("disconnect")
    finally:
        c.close()


def test_a_cuda_core_speaks_of_warps(cores):
    c, _ = launched(str(cores[("nvidia", False)]))
    try:
        text = c.request("evaluate", {"expression": "info waves", "context": "repl"})["result"].splitlines()
        assert text[0].startswith(f"{BLOCKS * WAVES} warps in 3 groups") and "Warps" in text[1]
        assert any(t.strip().startswith("warps 2, 5, 10, 13") for t in text)
        assert c.request("evaluate", {"expression": "warp 5", "context": "repl"})["result"].startswith(
            "[Switching to CUDA kernel 0 block (0,0,0) thread (160,0,0)")
        assert "of warp 5" in c.request("evaluate", {"expression": "lane 3", "context": "repl"})["result"]
        c.request("disconnect")
    finally:
        c.close()


def test_a_multi_agent_gpucore_names_agent_queue_dispatch_and_wave(cores):
    """ROCgdb's `AMDGPU Wave agent:queue:dispatch:wave (x,y,z)/n`: the agent is its place in the core's
    note, the queue its KFD queue id there (one queue per agent, as the writer made it)."""
    path = cores["agents"]
    agents, queues = _note(path.read_bytes())
    assert len(agents) == 3
    session = Session(load_state(path))
    names = session.thread_names()
    for n, name in enumerate(names):
        dispatch = n // 8  # 2 blocks x 4 waves per device
        agent = next(i for i, a in enumerate(agents) if a["gpu_id"] == queues[dispatch]["gpu_id"])
        wave = session.state.waves[n]
        assert name.startswith(f"AMDGPU Wave {agent}:{queues[dispatch]['queue_id']}:{dispatch}:{wave.id} "
                               f"({n // 4 % 2},0,0)/{n % 4} ["), name
        assert name == session.thread_name(wave)
    assert len({name.split()[2].split(":")[0] for name in names}) == 3


def test_a_multi_device_cuda_core_names_device_sm_and_warp(cores):
    """cuda-gdb's words: each device's warps name it, with their SM and warp slot (the writer puts each
    block on an SM of its own, each warp in its block's slot)."""
    session = Session(load_state(cores["devices"]))
    names = session.thread_names()
    for n, name in enumerate(names):
        device, block, index = n // 8, n // 4 % 2, n % 4
        assert name.startswith(f"CUDA kernel {device} block ({block},0,0) thread ({32 * index},0,0) "
                               f"device {device} sm {block} warp {index} ["), name


def test_groups_are_kept_until_a_write(tmp_path):
    session = Session(load_state(write_hang_dump(tmp_path / "dump", "amd", blocks=2, waves=4)))
    first = session.wave_groups()
    assert session.wave_groups() is first  # worked out once
    spin, barrier, loop = site_pcs("amd")
    # a write moves wave 2 from the loop to the barrier: its group is worked out anew
    session.state.waves[2].registers.write("pc", 0, barrier.to_bytes(8, "little"))
    session.note_write()
    after = session.wave_groups()
    at = {g.frames[0]["pc"]: g.wave_ids.tolist() for g in after}
    assert at[barrier] == [1, 2, 5] and at[loop] == [6] and at[spin] == [0, 3, 4, 7]


def test_waves_in_a_called_function_are_grouped_by_their_callers(tmp_path):
    """Waves stopped in `settle` (divergent_call, gfx942 -O2) whose return addresses differ stand at
    different places; waves whose other registers differ do not. Each group's frames are every member's
    own, unwound one by one in a session of their own."""
    from gen_machines import amd_node_state

    from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
    from aspace_dap.state.corefiles import BytesSpan

    state = amd_node_state(gpus=1, waves=16, vgprs=40, acc_vgprs=0, lds=64)  # 4 register files of random VGPRs
    at, size = next((offset, s) for offset, (name, s) in _offsets(state.waves[3].registers.layout) if name == "s30")
    for n in (3, 7):
        registers = state.waves[n].registers
        data = bytearray(registers._span.array.tobytes())
        value = int.from_bytes(data[at:at + size], "little") + 0xC  # a return address further on in divergent
        data[at:at + size] = value.to_bytes(size, "little")
        state.waves[n].registers = registers.with_span(BytesSpan(bytes(data)), f"wave {n}")
    core = write_rocm_core(state, tmp_path / "gpucore")
    groups = Session(load_state(core)).wave_groups()
    assert [g.wave_ids.tolist() for g in groups] == [[3, 7], [w for w in range(16) if w not in (3, 7)]]  # smallest first
    check = Session(load_state(core))
    for g in groups:
        assert g.frames[0]["name"] == "settle" and g.frames[1]["name"] == "divergent"
        for wave_id in g.wave_ids.tolist():
            lane = int(np.nonzero(check.active_lanes(check.state.wave_by_id(wave_id)))[0][0])
            own = check.frames(wave_id, lane)
            assert [(f["name"], f["pc"], f["line"]) for f in g.frames] == [(f.name, f.runtime_pc, f.line) for f in own]
    callers = sorted(g.frames[1]["pc"] for g in groups)
    assert callers[1] - callers[0] == 0xC


def _offsets(layout):
    at = 0
    for name, size in layout:
        yield at, (name, size)
        at += size


def _nvdisasm_chains(listing: Path) -> dict[int, list[tuple[str, int]]]:
    """pc -> (file name, line) of each frame nvdisasm -gi puts above the instruction, innermost first: its
    `//## File "F", line L inlined at "G", line M` rows, the innermost and then the one it is inlined in."""
    out, block, fresh = {}, [], False
    for text in listing.read_text().splitlines():
        if text.strip().startswith("//## File"):
            if not fresh:
                block, fresh = [], True
            rows = [(Path(f).name, int(line)) for f, line in re.findall(r'"([^"]+)", line (\d+)', text)]
            block.append(rows[0])
            continue
        fresh = False
        m = re.search(r"/\*([0-9a-f]{4})\*/", text)
        if m:
            out[int(m[1], 16)] = list(block)
    return out


def test_each_group_of_a_cuda_lineinfo_core_shows_its_inline_chain(cores):
    """nvcc -lineinfo: the spin-wait's chain from NVIDIA's line table, as nvdisasm -gi shows it."""
    chains = _nvdisasm_chains(Path(f"{code_object('nvidia', True)}.s.txt"))
    session = Session(load_state(cores[("nvidia", True)]))
    groups = session.wave_groups()
    assert len(groups) == 3
    for g in groups:
        pc = g.frames[0]["pc"]
        assert [(Path(f["file"]).name, f["line"]) for f in g.frames] == chains[pc], hex(pc)
        assert [f["inlined"] for f in g.frames] == [True] * (len(g.frames) - 1) + [False]
    spin = site_pcs("nvidia")[0]
    assert chains[spin] == [("hang.cu", 11), ("hang.cu", 22)]
