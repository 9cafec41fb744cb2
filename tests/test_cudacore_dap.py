"""CUDA core dumps through the real server: `launch {"state": "x.cudbg"}` shows what the folder dump shows."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from cuda_machines import device_key, two_gpus
from dap_client import REPO_ROOT, initialized, launch_answer, launched
from lane_views import cfi_return_addresses, every_lane, thread_key

from aspace_dap.dwarf.target import Dialect
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.adapters.nvidia.core_writer import write_core

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen.cuda_examples import SPECS  # noqa: E402

DUMPS = Path(REPO_ROOT) / "examples" / "cuda" / "dumps"


def start(state_path):
    return launched(state_path)


def shown_values(c, tid, depth=2):
    """Every variable of the top frame as name path -> shown value, children to `depth` levels."""
    fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
    out = {}

    def walk(ref, prefix, level):
        for v in c.request("variables", {"variablesReference": ref})["variables"]:
            out[prefix + v["name"]] = v["value"]
            if v.get("variablesReference") and level < depth:
                walk(v["variablesReference"], prefix + v["name"] + ".", level + 1)

    for scope in c.request("scopes", {"frameId": fid})["scopes"]:
        walk(scope["variablesReference"], "", 0)
    return out


def same(shown: str, expected) -> bool:
    shown = shown.split(") ", 1)[1] if shown.startswith("(") else shown
    if isinstance(expected, float):
        return np.float32(float(shown.split()[0])) == np.float32(expected)
    return int(shown.split()[0], 0) == int(expected)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_core_shows_the_same_variables_as_the_folder_dump(name, tmp_path):
    spec = SPECS[name]()
    folder = DUMPS / spec.name
    with load_state(folder) as state:
        core = write_core(state, tmp_path / f"{name}.cudbg")
    # the core beside its source, as the folder dump is (nvcc's line table names the file bare)
    shutil.copy(DUMPS.parent / spec.file, tmp_path / spec.file)
    warp = spec.warps[0]
    active = [lane for lane in range(32) if warp.active >> lane & 1]
    lanes = active[:: max(1, len(active) // 3)][:3]
    seen = {}
    for path in (folder, core):
        c, stopped = start(path)
        try:
            tid = stopped["threadId"]
            top = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
            assert top["line"] == spec.line and top["source"]["path"].endswith(spec.file)
            seen[path] = {}
            for lane in lanes:
                assert c.request("setFocus", {"threadId": tid, "lane": lane})["active"]
                seen[path][lane] = shown_values(c, tid)
            c.request("disconnect")
        finally:
            c.close()
    for lane in lanes:
        from_core, from_folder = seen[core][lane], seen[folder][lane]
        assert from_core == from_folder, lane
        # and they are the source model's values, not merely equal
        thread = ((warp.index_in_workgroup * 32 + lane) % spec.block[0],
                  (warp.index_in_workgroup * 32 + lane) // spec.block[0], 0)
        checked = 0
        for var, value in spec.values(thread).items():
            if var in from_core and not isinstance(value, (dict, list)):
                assert same(from_core[var], value), (lane, var, from_core[var], value)
                checked += 1
        assert checked >= 2, sorted(from_core)


def test_core_with_an_exception_stops_on_the_faulting_lane(tmp_path):
    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "fault.cudbg", exception=(1, 5, 14))
    c, stopped = start(core)
    try:
        assert stopped["reason"] == "exception"
        threads = c.request("threads")["threads"]
        assert any(t["name"].startswith("CUDA kernel 0 block (0,0,0) thread (32,0,0) device 0 sm 0 warp 1 ") for t in threads)
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        assert [f["name"].split("(")[0] for f in frames[:2]] == ["settle", "divergent"]
        values = shown_values(c, stopped["threadId"], depth=0)
        assert same(values["lane"], 5)
        c.request("disconnect")
    finally:
        c.close()


def test_a_gzip_compressed_core_launches_over_dap(tmp_path):
    # the driver's CU_COREDUMP_GZIP_COMPRESS writes cores gzip'd (and real cores are committed that way):
    # `launch` takes them as load_state does, and shows the plain core's frames and values
    import gzip

    with load_state(DUMPS / "divergent_call.sm_90.G") as state:
        core = write_core(state, tmp_path / "fault.cudbg", exception=(1, 5, 14))
    packed = tmp_path / "fault.cudacore.gz"
    packed.write_bytes(gzip.compress(core.read_bytes()))
    seen = []
    for path in (core, packed):
        c, stopped = start(path)
        try:
            assert stopped["reason"] == "exception" and "Warp Illegal Address" in stopped["text"]
            seen.append(shown_values(c, stopped["threadId"], depth=0))
            c.request("disconnect")
        finally:
            c.close()
    assert seen[0] == seen[1] and same(seen[1]["acc"], 14.75)  # lane 5 of warp 1: gid 37, x = 19.5


SAMPLED_LANES = (0, 1, 7, 16, 31)  # odd and even lanes: both sides of divergent_call's branch


def _all_lanes(c, wanted=SAMPLED_LANES, key=thread_key) -> dict:
    """(thread name, lane, frame index, function, variable) -> value shown, for the `wanted` active lanes of
    every thread and every frame, over DAP (every active lane is also compared in process); `key` names
    a thread from its full name."""
    out = {}
    for thread in c.request("threads")["threads"]:
        tid = thread["id"]
        lanes = c.request("lanes", {"threadId": tid})["lanes"]
        for lane in lanes:
            # an inactive lane of a folder dump has no PC of its own, a core's has the warp's: not compared
            if lane["state"] != "active" or lane["lane"] not in wanted:
                continue
            c.request("setFocus", {"threadId": tid, "lane": lane["lane"]})
            name = key(thread["name"])
            for depth, frame in enumerate(c.request("stackTrace", {"threadId": tid})["stackFrames"]):
                out[name, lane["lane"], depth, frame["name"], "pc"] = frame.get("instructionPointerReference")
                for scope in c.request("scopes", {"frameId": frame["id"]})["scopes"]:
                    for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                        out[name, lane["lane"], depth, frame["name"], v["name"]] = v["value"]
    return out


EXAMPLES = sorted(p for p in DUMPS.iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda p: p.name)
def test_every_lane_and_frame_reads_the_same_from_a_two_device_core(folder, tmp_path):
    # the core carries backtraces, uniform registers and the grid on two devices (one warp each)
    backtraces = cfi_return_addresses(folder)
    with load_state(folder) as state:
        assert state.waves[0].registers.has("UR4")
        core = write_core(state, tmp_path / "two.cudbg", devices=2, backtraces=backtraces)
    with load_state(core) as opened:
        assert len({w.id for w in opened.waves}) == len(opened.waves) == 2
        assert [d.path for d in opened.dispatches] == [f"device {n} grid 1" for n in (0, 1)]
        assert [d.device for d in opened.dispatches] == [0, 1]
        assert all(w.return_addresses is not None for w in opened.waves) == bool(backtraces)
    # every lane over DAP for the richest example (two frames, divergence), sampled ones elsewhere
    lanes = range(32) if folder.name == "divergent_call.sm_120.G" else SAMPLED_LANES
    seen = []
    for path in (folder, core):
        c, _ = start(path)
        try:
            seen.append(_all_lanes(c, lanes))
            c.request("disconnect")
        finally:
            c.close()
    from_folder, from_core = seen
    assert len(from_folder) > 50
    assert from_core == from_folder
    # every lane of every wave, every frame, through the same session the server runs
    assert _every_lane_in_process(core) == _every_lane_in_process(folder)


def _every_lane_in_process(path) -> dict:
    shown, warnings = every_lane(path, active_only=True)
    assert not [w for w in warnings if "backtrace" in w], warnings
    return shown


def _mixed_core(kernel: str, path: Path, backtraces: bool = True,
                sms=("sm_80", "sm_90")) -> tuple[Path, list[Path]]:
    """One core of a host with an sm_80 GPU (device 0) and an sm_90 GPU (device 1), or the `sms` given,
    each running the example's kernel from its own cubin; with the CFI's backtraces of both."""
    folders = [DUMPS / f"{kernel}.{sm}.G" for sm in sms]
    with load_state(folders[0]) as first, load_state(folders[1]) as second:
        shift = max(w.id for w in first.waves) + 1
        stacks = {}
        if backtraces:
            stacks = dict(cfi_return_addresses(folders[0]))
            stacks.update({(w + shift, ln): s for (w, ln), s in cfi_return_addresses(folders[1]).items()})
        write_core(two_gpus(first, second), path, backtraces=stacks)
    return path, folders


def test_a_core_of_an_sm_80_and_an_sm_90_gpu_shows_each_lane_as_its_own_dump(tmp_path):
    core, folders = _mixed_core("divergent_call", tmp_path / "mixed.cudbg")
    with load_state(core) as opened:
        assert opened.target.processor == "sm_80"
        assert [(d.device, d.processor) for d in opened.dispatches] == [(0, None), (1, "sm_90")]
        assert opened.summary().startswith("nvidia sm_80 + sm_90, 32 lanes, 2 code objects, 2 dispatches")
        # each device's grid runs its own cubin, whose parameters sit where that SM's ABI puts them
        # (c[0x0][0x160] on sm_80, c[0x0][0x210] on sm_90: examples/cuda/README.md)
        assert [d.memory["param"].regions[0].address for d in opened.dispatches] == [0x160, 0x210]
    seen = {}
    for device, path in [(None, core)] + list(enumerate(folders)):
        c, _ = start(path)
        try:
            seen[device] = _all_lanes(c, range(32), device_key(device))
            c.request("disconnect")
        finally:
            c.close()
    from_core = seen.pop(None)
    from_folders = {k: v for shown in seen.values() for k, v in shown.items()}
    assert len(from_folders) > 100 and {k[0][0] for k in from_folders} == {0, 1}
    assert sum(k[2] == 1 for k in from_folders) > 10  # caller frames (settle's callers) are compared too
    assert from_core == from_folders


# sm_120's lds_tiles uses 26 registers, sm_80's 28: each device's warps keep their own count
@pytest.mark.parametrize("kernel,sms", [("lds_tiles", ("sm_120", "sm_80")), ("scratch_struct", ("sm_80", "sm_90"))])
def test_every_lane_of_a_mixed_sm_core_reads_as_its_devices_dump(kernel, sms, tmp_path):
    core, folders = _mixed_core(kernel, tmp_path / "mixed.cudbg", backtraces=False, sms=sms)
    shown, warnings = every_lane(core, key=device_key())
    expected = {}
    for device, folder in enumerate(folders):
        expected.update(every_lane(folder, key=device_key(device))[0])
    assert {k[0][0] for k in expected} == {0, 1}
    assert shown == expected
    # and every register of every warp is its own dump's, in its own device's register layout
    with load_state(core) as opened:
        for wave, folder in zip(opened.waves, [f for f in folders for _ in range(2)]):
            with load_state(folder) as own:
                mine = next(w for w in own.waves if w.index_in_workgroup == wave.index_in_workgroup)
                assert wave.registers.layout == mine.registers.layout
                for reg, _ in mine.registers.layout:
                    assert (wave.registers.raw(reg)[0] == mine.registers.raw(reg)[0]).all(), reg


def test_state_convert_keeps_devices_processors_backtraces_and_the_error_pc(tmp_path, capsys):
    from aspace_dap.cli import main as cli_main

    core, folders = _mixed_core("divergent_call", tmp_path / "mixed.cudbg")
    with load_state(core) as opened:
        # lane 5 of device 1's warp 1 (wave 3) faulted; a warp error is reported one instruction late, so
        # the warp's errorPC is the instruction before the lane's PC (16-byte SASS instructions)
        faulting = int(opened.waves[3].lane_pcs[5]) - 16
    path = tmp_path / "fault.cudbg"
    with load_state(folders[0]) as first, load_state(folders[1]) as second:
        shift = max(w.id for w in first.waves) + 1
        stacks = dict(cfi_return_addresses(folders[0]))
        stacks.update({(w + shift, ln): s for (w, ln), s in cfi_return_addresses(folders[1]).items()})
        write_core(two_gpus(first, second), path, backtraces=stacks, exception=(3, 5, 14, faulting))
    out = tmp_path / "converted"
    assert cli_main(["state", "convert", str(path), str(out)]) == 0
    said = capsys.readouterr().out
    assert "sm_80 + sm_90" in said and "not kept" not in said  # everything above has a field
    assert cli_main(["state", "validate", str(out)]) == 0
    manifest = __import__("json").loads((out / "manifest.json").read_text())
    assert [(d.get("device"), d.get("processor")) for d in manifest["dispatches"]] == [(0, None), (1, "sm_90")]
    assert manifest["stop"]["pc"] == hex(faulting)
    with load_state(path) as from_core, load_state(out) as converted:
        assert [(d.device, d.processor) for d in converted.dispatches] == [(0, None), (1, "sm_90")]
        assert [w.return_addresses for w in converted.waves] == [w.return_addresses for w in from_core.waves]
        assert any(w.return_addresses for w in converted.waves)
        assert converted.stop == from_core.stop
        assert converted.stop.description == f"CUDA Exception: Warp Illegal Address (14) triggered at PC {faulting:#x}"
        assert (converted.focus.wave, converted.focus.lane) == (3, 5)
    # the same frames, lanes and values, caller frames cross-checked with the same backtraces
    shown_core, warned_core = every_lane(path, key=device_key())
    shown_folder, warned_folder = every_lane(out, key=device_key())
    assert shown_folder == shown_core
    assert sum(k[2] == 1 for k in shown_core) > 10
    # the stop names the faulting instruction's source, over DAP
    c, stopped = start(out)
    try:
        assert stopped["reason"] == "exception"
        assert stopped["text"].startswith(f"CUDA Exception: Warp Illegal Address (14) triggered at PC {faulting:#x}: "
                                          f"settle (divergent_call.cu:")
        c.request("disconnect")
    finally:
        c.close()


def test_each_device_s_context_keeps_its_own_shared_and_local_windows(tmp_path):
    from aspace_dap.cli import main as cli_main
    from aspace_dap.state.model import Aperture

    # cuda-gdb reads a generic address through the windows of the context the warp's grid runs in
    # (sharedWindowBase / localWindowBase of its CudbgContextTableEntry): device 1's are elsewhere here
    folders = [DUMPS / "lds_tiles.sm_80.G", DUMPS / "lds_tiles.sm_90.G"]
    moved = {"shared": Aperture(0x7E00_0000_0000, 1 << 24), "local": Aperture(0x7E00_0100_0000, 1 << 24)}
    with load_state(folders[0]) as first, load_state(folders[1]) as second:
        second.dispatches[0].apertures = moved
        core = write_core(two_gpus(first, second), tmp_path / "windows.cudbg")
    out = tmp_path / "converted"
    assert cli_main(["state", "convert", str(core), str(out)]) == 0
    assert cli_main(["state", "validate", str(out)]) == 0
    for path in (core, out):
        with load_state(path) as opened:
            assert opened.target.apertures["local"].base == 0x7F00_0100_0000
            assert [d.apertures for d in opened.dispatches] == [None, moved]
            session = Session(opened)
            for wave, local_base in zip(opened.waves, [0x7F00_0100_0000] * 2 + [0x7E00_0100_0000] * 2):
                target = session.target_for(wave, Dialect(vendor_ops="nvidia"))
                assert target.resolve_generic(local_base + 0x40)[0].name == "local"
                other = 0x7E00_0100_0000 if local_base == 0x7F00_0100_0000 else 0x7F00_0100_0000
                assert target.resolve_generic(other + 0x40)[0].name == "global"
    # the kernel's variables (shared tiles, the local stack) read the same on both devices
    shown = every_lane(core, key=device_key())[0]
    expected = {}
    for device, folder in enumerate(folders):
        expected.update(every_lane(folder, key=device_key(device))[0])
    assert shown == expected


def test_a_gzip_compressed_core_launches_as_it_inspects(tmp_path, capsys):
    # CU_COREDUMP_GZIP_COMPRESS cores: DAP launch, `inspect` and `state validate` take the same file
    import gzip

    from aspace_dap.cli import main

    folder = DUMPS / "divergent_call.sm_90.G"
    with load_state(folder) as state:
        plain = write_core(state, tmp_path / "plain.cudbg")
    packed = tmp_path / "core.cudbg.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=1))
    seen = []
    for path in (plain, packed):
        c, stopped = start(path)
        try:
            seen.append((stopped["reason"], shown_values(c, stopped["threadId"])))
            c.request("disconnect")
        finally:
            c.close()
    assert seen[0] == seen[1] and seen[1][1]
    assert main(["inspect", str(packed)]) == 0 and "divergent" in capsys.readouterr().out
    assert main(["state", "validate", str(packed)]) == 0
    # a gzip file holding no core: the same clear refusal from launch and inspect
    other = tmp_path / "notes.gz"
    other.write_bytes(gzip.compress(b"not a core"))
    c = initialized()
    try:
        answer = launch_answer(c, state=str(other))
        assert not answer["success"] and "not a GPU core file" in answer["message"]
    finally:
        c.close()
    assert main(["inspect", str(other)]) == 1
    assert "not a GPU core file" in capsys.readouterr().err
