"""ROCm GPU cores through the real server: `launch {"state": "gpucore.N"}` shows what the folder dump shows,
in every frame of every wave and every lane, LDS memory views included."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from dap_client import REPO_ROOT, initialized, launched

from aspace_dap.state import load_state
from aspace_dap.adapters.amdgpu.core_writer import QUEUE_ID, write_rocm_core

EXAMPLES = Path(REPO_ROOT) / "examples"
CASES = [("lds_tiles", "gfx90a.O0"), ("lds_tiles", "gfx90a.O2"), ("lds_tiles", "gfx1030.O0"),
         ("lds_tiles", "gfx1030.O2"), ("scratch_struct", "gfx90a.O0"), ("scratch_struct", "gfx90a.O2"),
         ("divergent_call", "gfx90a.O0"), ("divergent_call", "gfx90a.O2"),
         # clang-19 builds: gfx942's MI save area, gfx1030 and gfx1100 in wave32, caller frames included
         ("divergent_call", "clang19.gfx942.O0"), ("divergent_call", "clang19.gfx1030.O0"),
         ("divergent_call", "clang19.gfx1100.O0"), ("lds_tiles", "clang19.gfx90a.O0")]


def everything_shown(c) -> dict:
    """Thread names, each frame's name and line, and every variable of every frame as all lanes show it."""
    out = {}
    for thread in c.request("threads")["threads"]:
        tid = thread["id"]
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        out[(tid, "name")] = thread["name"]
        out[(tid, "frames")] = [(f["name"], f.get("line")) for f in frames]
        for depth, frame in enumerate(frames):
            for scope in c.request("scopes", {"frameId": frame["id"]})["scopes"]:
                if scope["name"] == "Registers":  # a save record holds registers a dump leaves out
                    continue
                for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    lanes = c.request("laneValues", {"threadId": tid, "frameId": frame["id"],
                                                     "expression": v["name"]})["lanes"]
                    out[(tid, depth, scope["name"], v["name"])] = lanes
    return out


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rocm-cores")
    out = {}
    for example, dump in CASES:
        with load_state(EXAMPLES / example / "dumps" / dump) as state:
            out[(example, dump)] = write_rocm_core(state, folder / f"gpucore.{example}.{dump}")
    return out


@pytest.mark.parametrize("example, dump", CASES)
def test_core_shows_every_variable_of_every_lane_and_frame_as_the_dump(cores, example, dump):
    seen = {}
    for path in (EXAMPLES / example / "dumps" / dump, cores[(example, dump)]):
        c, _ = launched(path)
        try:
            seen[path] = everything_shown(c)
            c.request("disconnect")
        finally:
            c.close()
    from_dump, from_core = seen.values()
    assert from_core.keys() == from_dump.keys()
    from_dump = _queue_named(from_dump)
    for key in from_dump:
        assert from_core[key] == from_dump[key], key
    # the comparison saw real values, not only placeholders
    values = [lane.get("value", "") for key, lanes in from_dump.items() if len(key) == 4 for lane in lanes]
    assert sum(1 for v in values if v and not v.startswith("<")) > 100


@pytest.mark.parametrize("dump", ["gfx90a.O0", "gfx1030.O2"])
def test_lds_memory_views_read_the_workgroups_lds_from_the_core(cores, dump):
    reference = "local@wg(1,1,0)#0x0"
    got = {}
    for path in (EXAMPLES / "lds_tiles" / "dumps" / dump, cores[("lds_tiles", dump)]):
        c, _ = launched(path)
        try:
            got[path] = c.request("readMemory", {"memoryReference": reference, "count": 1152})
            c.request("disconnect")
        finally:
            c.close()
    from_dump, from_core = got.values()
    data = base64.b64decode(from_core["data"])
    assert len(data) == 1152 and not from_core.get("unreadableBytes")
    assert data == base64.b64decode(from_dump["data"]) and any(data)


def test_link_map_files_that_give_no_code_object_all_read_the_same(tmp_path):
    """A core's link map names files outside what the user opened: a missing one, one shorter than the
    link map says (/etc/shadow was "shorter than offset + size"), one that is not a code object, a
    folder, a FIFO all get one warning, so that a core cannot tell which files exist or what they hold."""
    import os
    import urllib.parse

    dump = EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"
    staged = tmp_path / ("staged-" + "x" * 80) / "lds_tiles.co"
    staged.parent.mkdir()
    with load_state(dump) as state:
        shutil.copy(state.code_objects[0].path, staged)
        state.code_objects[0].path = staged
        core = write_rocm_core(state, tmp_path / "gpucore.4242", code_object_uri="file")
    size = staged.stat().st_size
    staged.unlink()
    original = f"file://{urllib.parse.quote(str(staged.resolve()))}#offset=0&size={size}".encode()
    image = core.read_bytes()
    assert image.count(original + b"\0") == 1
    places = tmp_path / "p"
    places.mkdir()
    (places / "short").write_bytes(b"\x7fELF" + bytes(60))
    (places / "text").write_text("root:x:0:0:root:/root:/bin/bash\n" * (size // 32 + 1))
    (places / "folder").mkdir()
    os.mkfifo(places / "fifo")
    said = {}
    for name in ("missing", "short", "text", "folder", "fifo"):
        uri = f"file://{places / name}#offset=0&size={size}".encode()
        assert len(uri) <= len(original)
        hostile = tmp_path / f"gpucore-{name}"
        hostile.write_bytes(image.replace(original + b"\0", uri + b"\0" * (len(original) - len(uri) + 1)))
        c, _ = launched(hostile)
        try:
            output = "".join(e["body"].get("output", "") for e in c.events("output"))
            c.request("disconnect")
        finally:
            c.close()
        line = next((line for line in output.splitlines() if str(places / name) in line), "(nothing said)")
        said[name] = line.replace(str(places / name), "PATH")
    assert len(set(said.values())) == 1, said
    assert "supply it with codeObject" in said["missing"]


def test_missing_file_code_object_is_named_and_codeobject_supplies_it(tmp_path):
    dump = EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"
    staged = tmp_path / "staged" / "lds_tiles.gfx90a.O0.co"
    staged.parent.mkdir()
    with load_state(dump) as state:
        shutil.copy(state.code_objects[0].path, staged)
        original = state.code_objects[0].path
        state.code_objects[0].path = staged
        # loaded at a bias, as the runtime does: pcs and the link map move, the variables must not
        core = write_rocm_core(state, tmp_path / "gpucore.4242", code_object_uri="file", load_bias=0x7F3A00000000)
    staged.unlink()

    c, stopped = launched(core)
    try:
        said = "".join(e["body"].get("output", "") for e in c.events("output"))
        assert str(staged) in said
        answer = c.send("stackTrace", {"threadId": stopped["threadId"]})
        response = c.wait_response(answer)
        assert not response["success"] and str(staged) in response["message"] and "codeObject" in response["message"]
        c.request("disconnect")
    finally:
        c.close()

    c = initialized()
    try:
        seq = c.send("launch", {"state": str(core), "codeObject": str(original)})
        c.request("configurationDone")
        assert c.wait_response(seq)["success"]
        c.wait_event("stopped")
        from_core = everything_shown(c)
        c.request("disconnect")
    finally:
        c.close()
    c, _ = launched(dump)
    try:
        from_dump = everything_shown(c)
        c.request("disconnect")
    finally:
        c.close()
    assert from_core == _queue_named(from_dump)


def _queue_named(shown: dict) -> dict:
    """What a folder dump shows, with the queue its waves' names cannot give (a core gives the KFD queue id)."""
    return {key: value.replace(":?:", f":{QUEUE_ID}:", 1) if key[1] == "name" else value for key, value in shown.items()}


def test_core_of_a_host_with_two_kinds_of_gpu_shows_each_wave_as_its_own_dump(tmp_path):
    # an MI200 (gfx90a, wave64) and an RDNA2 (gfx1030, wave32) in one process: each queue's save area
    # in its own GPU's layout, each dispatch read with its own GPU's build of the program
    from amd_machines import SECOND_GPU_WAVE_IDS, two_gpu_state

    dumps = [EXAMPLES / "divergent_call" / "dumps" / name for name in ("clang19.gfx90a.O0", "clang19.gfx1030.O0")]
    with load_state(dumps[0]) as first, load_state(dumps[1]) as second:
        core = write_rocm_core(two_gpu_state(first, second), tmp_path / "gpucore.two-gpus")
    seen = []
    for path in (*dumps, core):
        c, _ = launched(path)
        try:
            seen.append(everything_shown(c))
            c.request("disconnect")
        finally:
            c.close()
    from_first, from_second, from_core = seen

    def renumbered(shown: dict, by: int) -> dict:
        out = {}
        for key, value in shown.items():
            if key[1] == "name":  # "AMDGPU Wave agent:queue:dispatch:wave (x,y,z)/index [a/b active]": ids differ
                value = value.split(" ", 3)[3]
            out[(key[0] + by, *key[1:])] = value
        return out

    expected = {**renumbered(from_first, 0), **renumbered(from_second, SECOND_GPU_WAVE_IDS)}
    assert renumbered(from_core, 0) == expected
    lanes = {key[0]: len(value) for key, value in from_core.items() if len(key) == 4}
    assert sorted(set(lanes.values())) == [32, 64]  # wave32 and wave64 in one core
    frames = [value for key, value in from_core.items() if key[1] == "frames"]
    assert all(len(f) >= 2 for f in frames)          # caller frames unwound on both GPUs
    values = [lane.get("value", "") for key, lanes in from_second.items() if len(key) == 4 for lane in lanes]
    assert sum(1 for v in values if v and not v.startswith("<")) > 100
