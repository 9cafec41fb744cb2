"""Sources found where gdb finds them, for the client that is the user, and a stop that reaches the
user when a source is nowhere.

The dump, its sources and the server each in a folder of their own, as users keep them: a build tree
(`/opt/prj`), a crash folder (`/tmp/crash-xyz`), the folder the server was started in. The LDS arrays of
clang-19's lds_tiles build need the source to be placed (adapters/amdgpu/lds.py: only the source line
tells which of two arrays an access is), so their values show whether the one finder was used. The
expected values come from the kernel's arithmetic (test_examples.lds_tiles_block), the recorded paths
from the code objects' line tables as llvm-dwarfdump prints them (`*.co.dwarf.txt`).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.session import Session
from dap_client import launch_answer, start_server_subprocess
from test_examples import lds_tiles_block, show_array, show_floats

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LDS = EXAMPLES / "lds_tiles"
# clang-19's line table: comp_dir "examples", file "lds_tiles/lds_tiles.hip" (lds_tiles.clang19.*.co.dwarf.txt)
RECORDED = "examples/lds_tiles/lds_tiles.hip"
TIMEOUT = 60


def true_lds() -> dict[str, str]:
    tile, sums = lds_tiles_block()
    return {"tile": show_array([show_floats(row) for row in tile]), "row_sums": show_floats(sums)}


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """Three folders: the dumps (a crash folder), the sources (a checkout), the server's working directory."""
    base = tmp_path_factory.mktemp("apart")
    for opt in ("O0", "O2"):
        shutil.copytree(LDS / "dumps" / f"clang19.gfx90a.{opt}", base / "crash" / f"clang19.gfx90a.{opt}")
    (base / "checkout" / "lds_tiles").mkdir(parents=True)
    shutil.copy(LDS / "lds_tiles.hip", base / "checkout" / "lds_tiles" / "lds_tiles.hip")
    (base / "run").mkdir()
    return base


def values_at_stop(client, **launch) -> tuple[dict, dict[str, str]]:
    """The top frame of the stop and its variables (name -> value; Locals, Arguments, Shared), after a
    launch with `launch`."""
    answer = launch_answer(client, TIMEOUT, **launch)
    assert answer["success"], answer
    thread = client.wait_event("stopped")["body"]["threadId"]
    frame = client.request("stackTrace", {"threadId": thread}, timeout=TIMEOUT)["stackFrames"][0]
    values = {}
    for scope in client.request("scopes", {"frameId": frame["id"]}, timeout=TIMEOUT)["scopes"]:
        if scope["name"] != "Registers":
            shown = client.request("variables", {"variablesReference": scope["variablesReference"]}, timeout=TIMEOUT)
            values.update((v["name"], v["value"]) for v in shown["variables"])
    return frame, values


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("how", ["workspaceFolder", "sourceMap"])
def test_lds_arrays_with_dump_sources_and_server_apart(apart, opt, how):
    """The server runs in run/, the dump is in crash/, the source in checkout/: the client names the
    workspace folder (as the VS Code extension does) or maps the DWARF's folder there, and the LDS proof
    reads the source through the same finder as the editor."""
    checkout = apart / "checkout"
    arguments = {"workspaceFolder": str(checkout)} if how == "workspaceFolder" else {"sourceMap": {"examples": str(checkout)}}
    client = start_server_subprocess(["-m", "aspace_dap"], cwd=apart / "run")
    try:
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
        frame, values = values_at_stop(client, state=str(apart / "crash" / f"clang19.gfx90a.{opt}"), **arguments)
        assert frame["source"] == {"name": "lds_tiles.hip", "path": str(checkout / "lds_tiles" / "lds_tiles.hip")}
        assert frame["line"] == 38
        want = true_lds()
        assert {name: values[name] for name in want} == want
        text = client.request("source", {"source": frame["source"]}, timeout=TIMEOUT)["content"]
        assert text == (LDS / "lds_tiles.hip").read_text()
    finally:
        client.close()


def test_a_source_map_to_any_folder_comes_first(apart, tmp_path, monkeypatch):
    """A sourceMap to a folder outside everything opened is used before the recorded path and any copy; one
    to a folder without the file is passed over (and named among the places looked at)."""
    monkeypatch.chdir(ROOT)  # the recorded relative path exists here: the map still wins
    elsewhere = tmp_path / "mine" / "lds_tiles"
    elsewhere.mkdir(parents=True)
    mine = (LDS / "lds_tiles.hip").read_text() + "// the user's copy\n"
    (elsewhere / "lds_tiles.hip").write_text(mine)
    dump = str(apart / "crash" / "clang19.gfx90a.O0")
    s = Session.open(dump, source_map={"examples/lds_tiles": str(elsewhere)})
    assert s.frames()[0].file == str(elsewhere / "lds_tiles.hip")
    assert s.read_source(RECORDED) == mine
    empty = tmp_path / "empty"
    empty.mkdir()
    s = Session.open(dump, source_map={"examples": str(empty)})
    assert s.frames()[0].file == str(ROOT / RECORDED)
    assert s.lookup_source(RECORDED).tried[0] == str(empty / "lds_tiles" / "lds_tiles.hip")


@pytest.fixture(scope="module")
def out_of_tree(apart):
    """A code object whose DWARF names its source by an absolute path outside the dump, the working
    directory and any workspace, as a kernel built in /opt/prj records it: clang-19's lds_tiles with its
    file name (23 bytes in .debug_str and .debug_line_str) replaced by a shorter absolute path."""
    folder = Path(tempfile.mkdtemp(prefix="as", dir="/tmp"))
    source = folder / "k.hip"
    old = b"lds_tiles/lds_tiles.hip\0"
    assert len(str(source)) < len(old)
    shutil.copy(LDS / "lds_tiles.hip", source)
    dump = apart / "crash-xyz" / "dump"
    shutil.copytree(LDS / "dumps" / "clang19.gfx90a.O0", dump)
    co = dump / "code" / "lds_tiles.clang19.gfx90a.O0.co"
    data = co.read_bytes()
    assert data.count(old) == 2  # the unit's DW_AT_name and the line table's file 0
    co.write_bytes(data.replace(old, str(source).encode().ljust(len(old), b"\0")))
    yield dump, source
    shutil.rmtree(folder, ignore_errors=True)


def inspect(dump: Path, cwd: Path, *options: str) -> tuple[dict, str]:
    result = subprocess.run([sys.executable, "-m", "aspace_dap", "inspect", str(dump), "--json", *options], cwd=cwd,
                            capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    (frame,) = json.loads(result.stdout)["frames"]
    return frame, result.stderr


def test_inspect_finds_an_out_of_tree_source(apart, out_of_tree):
    dump, source = out_of_tree
    frame, said = inspect(dump, apart / "run")
    assert frame["file"] == str(source) and frame["line"] == 38
    values = {v["name"]: v["value"] for v in frame["variables"]}
    want = true_lds()
    assert {name: values[name] for name in want} == want
    assert "not found" not in said
    # a relative path, and the source in a folder of its own: --source-map says where, as the sourceMap does
    frame, said = inspect(apart / "crash" / "clang19.gfx90a.O0", apart / "run",
                          "--source-map", f"examples={apart / 'checkout'}")
    assert frame["file"] == str(apart / "checkout" / "lds_tiles" / "lds_tiles.hip")
    assert {v["name"]: v["value"] for v in frame["variables"] if v["name"] in want} == want


def example_dumps() -> list[str]:
    """Every dump folder and core file under examples/, relative to it."""
    found = [os.path.dirname(m) for m in glob.glob("**/manifest.json", root_dir=EXAMPLES, recursive=True)]
    found += [c for c in glob.glob("*/cores/*", root_dir=EXAMPLES) if os.path.isfile(EXAMPLES / c)]
    return sorted(found)


@pytest.fixture(scope="module")
def copied_examples(tmp_path_factory):
    base = tmp_path_factory.mktemp("copied")
    shutil.copytree(EXAMPLES, base / "somewhere" / "examples")
    (base / "run").mkdir()
    return base


def test_a_dump_copied_with_its_sources_opens_every_frames_source(copied_examples, monkeypatch):
    """Every example dump and core, copied with the examples' sources to another folder and opened from a
    third: every frame of every wave (its first active lane's stack) opens a file of the copy."""
    copy = copied_examples / "somewhere" / "examples"
    monkeypatch.chdir(copied_examples / "run")
    missing, frames = [], 0
    for name in example_dumps():
        s = Session.open(str(copy / name))
        for wave_id in s.wave_ids():
            wave = s.wave(wave_id)
            active = np.nonzero(s.active_lanes(wave))[0]
            for frame in s.frames(wave_id, int(active[0]) if len(active) else 0):
                if frame.file is None:
                    continue
                frames += 1
                opens = os.path.isabs(frame.file) and os.path.isfile(frame.file) and s.read_source(frame.file)
                if not (opens and Path(frame.file).is_relative_to(copy)):
                    missing.append((name, wave_id, frame.name, frame.file))
    assert frames > 100 and missing == []


def test_a_relative_path_is_never_sent_and_a_missing_source_says_where_it_was_looked_for(apart):
    """Without the source anywhere, the frame's source is a document at the frame's line (VS Code shows
    the stop there), never a path: not the DWARF's relative one (a client takes it from its own folder,
    doubling the folder it starts with), not one that does not exist. The Debug Console names every place
    looked at and the sourceMap entry that would find the file."""
    client = start_server_subprocess(["-m", "aspace_dap"], cwd=apart / "run")
    try:
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
        dump = apart / "crash" / "clang19.gfx90a.O0"
        frame, values = values_at_stop(client, state=str(dump))
        assert "path" not in frame["source"] and frame["line"] == 38
        assert frame["source"]["name"] == "lds_tiles.hip (not found)"
        document = client.request("source", {"source": frame["source"]}, timeout=TIMEOUT)["content"].splitlines()
        assert document[37].startswith(f"{RECORDED}:38: the stop is here")
        said = "".join(e["body"]["output"] for e in client.events("output"))
        entry = '"sourceMap": {"examples/lds_tiles": "<the folder that holds lds_tiles.hip>"}'
        places = [str(apart / "run" / RECORDED), str(dump / "lds_tiles" / "lds_tiles.hip"),
                  str(apart / "crash" / "lds_tiles.hip"), str(apart / "run" / "lds_tiles.hip")]
        for text in (said, "\n".join(document)):
            assert f"source {RECORDED} not found" in text and entry in text
            assert all(f"\n  {place}\n" in text for place in places), text
        assert said.count(f"source {RECORDED} not found") == 1  # said once, however often it is needed
        # the values that need the source say so; the others are there
        assert "would tell which array each access is: not found" in values["tile"] and values["rows"] == "20"
        # no answer names a path that is not a file here
        thread = client.request("threads", timeout=TIMEOUT)["threads"][0]["id"]
        answers = [client.request("loadedSources", timeout=TIMEOUT),
                   client.request("lanes", {"threadId": thread}, timeout=TIMEOUT),
                   client.request("disassemble", {"memoryReference": frame["instructionPointerReference"],
                                                  "instructionCount": 20, "instructionOffset": -10}, timeout=TIMEOUT)]
        paths = [p for answer in answers for p in _paths(answer)]
        assert all(os.path.isabs(p) and os.path.isfile(p) for p in paths), paths
    finally:
        client.close()


def _paths(body) -> list[str]:
    if isinstance(body, dict):
        return [v for k, v in body.items() if k == "path" and isinstance(v, str)] + \
            [p for v in body.values() for p in _paths(v)]
    if isinstance(body, list):
        return [p for v in body for p in _paths(v)]
    return []
