"""The wave table of a dump folder: waves made only when asked for, their columns, ids looked up without
a dict of every wave (ids past int64 too), thread names from the columns, hard-linked register files
read once, paths checked in bulk, and LDS and private files checked when first read.

The dumps are written with StateWriter (and edited as JSON where the writer has no way to say it:
ids as hex strings); what each wave is is known from how it was written, and the one-by-one answers
(Wave objects, each adapter's thread_name) are what the bulk answers must equal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspace_dap.adapters import adapter_for
from aspace_dap.errors import StateError
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state
from aspace_dap.state.files import FolderFiles
from aspace_dap.state.manifest_paths import all_plain_paths, is_plain_path, path_problem
from aspace_dap.state.wavetable import WaveTable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from dap_client import launched  # noqa: E402
from gen_waves import write_waves_dump  # noqa: E402

LANES = 32
# (dispatch id, device, cluster size, workgroup size, [(workgroup id, cluster, [wave ids])])
DISPATCHES = [
    (7, 1, (2, 1, 1), (96, 2, 1), [((0, 0, 0), (0, 0, 0), [100, 5, 42, 6, 7, 8]),
                                   ((1, 0, 0), (0, 0, 0), [9, 10, 11, 12, 13, 14]),
                                   ((0, 1, 0), (1, 0, 0), [15, 16, 17, 18, 19, 20])]),
    (3, None, None, (64, 1, 1), [((2, 0, 0), None, [300, 301]), ((5, 3, 1), None, [302, 303])]),
]
HEX_WAVE = 301  # written as "0x12d"


def _pc(wave_id: int) -> int:
    return 0x7000_0000 + 16 * wave_id


def _exec(wave_id: int) -> int:
    return (1 << (wave_id % LANES)) - 1 or 1


def mixed_dump(tmp_path: Path) -> Path:
    writer = StateWriter("nvidia", "sm_90", LANES)
    layout = writer.add_register_layout("warp", [("pc", 8), ("exec", 4), ("R0", 4 * LANES)])
    for dispatch_id, device, cluster_size, size, groups in DISPATCHES:
        dispatch = writer.add_dispatch("kernel", None, (size[0] * 8, size[1] * 8, size[2]), size, dispatch_id,
                                       device=device, cluster_size=cluster_size)
        for group_id, cluster, wave_ids in groups:
            workgroup = dispatch.add_workgroup(group_id, lds=bytes(64), cluster=cluster)
            for index, wave_id in enumerate(wave_ids):
                workgroup.add_wave(wave_id, index, {"pc": np.uint64(_pc(wave_id)), "exec": np.uint32(_exec(wave_id)),
                                                    "R0": np.arange(LANES, dtype=np.uint32)}, layout=layout)
    writer.set_focus(42, 0)
    path = writer.write(tmp_path / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    for group in manifest["dispatches"][1]["workgroups"]:
        for wave in group["waves"]:
            if wave["id"] == HEX_WAVE:
                wave["id"] = hex(HEX_WAVE)
    manifest["dispatches"][1]["workgroups"][1]["id"][1] = "0x3"
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_waves_are_made_when_asked_for_and_found_by_id(tmp_path):
    state = load_state(mixed_dump(tmp_path))
    written = [w for *_, groups in DISPATCHES for _, _, ids in groups for w in ids]
    assert len(state.waves) == len(written) and state.made_waves() == []
    wave = state.wave_by_id(HEX_WAVE)
    assert [i for i, _ in state.made_waves()] == [written.index(HEX_WAVE)]
    assert wave.id == HEX_WAVE and wave.pc == _pc(HEX_WAVE) and wave.dispatch.id == 3
    assert wave.workgroup.id == (2, 0, 0) and wave.path == "dispatches[1].workgroups[0].waves[1]"
    assert state.wave_by_id(HEX_WAVE) is wave and state.waves[written.index(HEX_WAVE)] is wave
    for position, wave_id in enumerate(written):  # ids that are not counted up: looked up, not assumed
        assert state.wave_index(wave_id) == position and state.wave_by_id(wave_id).id == wave_id
    for absent in (0, 4, 43, 299, 304, 1 << 63, 1 << 64, -1):
        assert state.wave_index(absent) is None
        with pytest.raises(StateError):
            state.wave_by_id(absent)
    assert [w.id for w in state.waves] == written and [w.id for w in state.dispatches[1].waves] == written[-4:]
    assert [w.id for w in state.dispatches[0].workgroups[2].waves] == [15, 16, 17, 18, 19, 20]
    assert state.dispatches[1].workgroups[1].id == (5, 3, 1)


def test_the_table_holds_what_the_waves_say(tmp_path):
    state = load_state(mixed_dump(tmp_path))
    table = state.wave_table()
    built = WaveTable.of_waves(list(state.waves), state.dispatches)  # from the wave objects, one by one
    for column in ("ids", "index_in_workgroup", "lanes", "dispatch", "workgroup_ids", "has_workgroup"):
        assert (getattr(table, column) == getattr(built, column)).all(), column
    assert table.clusters == built.clusters == [(0, 0, 0)] * 12 + [(1, 0, 0)] * 6 + [None] * 4
    assert [(d.id, first, end) for d, first, end in table.dispatch_ranges()] == [(7, 0, 18), (3, 18, 22)]
    for dispatch_id, _, _, _, groups in DISPATCHES:
        for group_id, _, wave_ids in groups:
            assert state.waves[table.first_in_workgroup(dispatch_id, group_id)].id == wave_ids[0]
    assert table.first_in_workgroup(3, (0, 0, 0)) is None and table.first_in_workgroup(4, (2, 0, 0)) is None


@pytest.mark.parametrize("vendor", ["amd", "nvidia", "intel"])
def test_thread_names_from_the_table_are_the_waves_own(tmp_path, vendor):
    """Each adapter's names from the columns equal its thread_name of each wave (devices, clusters,
    workgroup sizes that spread a warp's first thread over y, dispatches of their own ids)."""
    state = load_state(mixed_dump(tmp_path))
    adapter = adapter_for(vendor)
    names = adapter.thread_names(state.wave_table())
    assert names == [adapter.thread_name(w) for w in state.waves]
    if vendor == "nvidia":
        # cuda-gdb's words in its focus order: kernel, cluster, block, (the warp's first) thread, device
        assert names[4] == "CUDA kernel 7 cluster (0,0,0) block (0,0,0) thread (32,1,0) device 1"
    if vendor == "amd":  # ROCgdb: agent:queue:dispatch:wave, "?" for what the dump does not say (the queue)
        assert names[4] == f"AMDGPU Wave 1:?:7:{state.waves[4].id} (0,0,0)/4"


def test_a_session_names_its_threads_without_making_the_waves(tmp_path):
    state = load_state(mixed_dump(tmp_path))
    session = Session(state)
    names = session.thread_names()
    made = [w.id for _, w in state.made_waves()]
    # the focus only: no code object is asked (CUDA compilers say no active lanes apart from the mask)
    assert made == [42]
    # exec and valid lanes as written
    assert [name.rsplit("[", 1)[1] for name in names] == \
        [f"{bin(_exec(w.id)).count('1')}/{LANES} active]" for w in state.waves]


def test_hard_linked_register_files_are_read_once_and_only_when_the_listing_is_confirmed(tmp_path):
    dump = write_waves_dump(tmp_path / "dump", 50, odd=2, odd_pc=0x1234)
    rels = [f"regs/wave-{i}.bin" for i in range(200)]
    expected = [(dump / rel).read_bytes()[:16] for rel in rels]
    files = FolderFiles(dump)
    assert files.missing(rels) == []
    assert files.read_ranges(rels, 0, 16) == expected
    linked = files._read_linked(rels, list(map(files._plain.get, rels)), 0, 16)
    assert len(linked) == 4  # the example's four register files, each named by 49 or 50 waves
    # A listing whose numbers are not the files' (a file system that makes them up): every name says
    # the same number; opening the first file shows that it is not that file, so each is read by name.
    files = FolderFiles(dump)
    files.missing(rels)
    made_up = (os.stat(dump / rels[0]).st_ino + 1) << 16 | files._plain[rels[0]] & 0xFFFF
    for rel in rels:
        files._plain[rel] = made_up
    assert files._read_linked(rels, list(map(files._plain.get, rels)), 0, 16) == {}
    assert files.read_ranges(rels, 0, 16) == expected
    # Names that say another file's number where that file has fewer links than names: not taken.
    files = FolderFiles(dump)
    files.missing(rels)
    odd = files._plain[rels[-1]]  # a file of its own (one link)
    files._plain[rels[0]] = odd
    assert files.read_ranges(rels, 0, 16) == expected


def test_missing_memory_files_are_said_when_read_and_the_rest_of_the_wave_is_shown(tmp_path):
    dump = write_waves_dump(tmp_path / "dump", 100)  # (hard links to the example's files: unlinked here)
    os.unlink(dump / "mem" / "private-7.bin")  # wave 7: workgroup 1's fourth wave
    os.unlink(dump / "mem" / "lds-1.bin")
    session = Session(load_state(dump))
    assert len(session.thread_names()) == 400
    wave = session.state.wave_by_id(7)
    with pytest.raises(StateError) as raised:
        wave.private
    private_missing = "dispatches[0].workgroups[1].waves[3].private.file: missing"
    assert str(raised.value) == private_missing
    assert wave.registers.value("pc") == int.from_bytes((dump / "regs" / "wave-7.bin").read_bytes()[:8], "little")
    assert session.state.wave_by_id(6).private is not None and session.state.wave_by_id(3).workgroup.lds is not None
    assert not session.state.modified

    c, _ = launched(str(dump))
    try:
        assert len(c.request("threads")["threads"]) == 400
        frames = c.request("stackTrace", {"threadId": 8})["stackFrames"]  # (thread ids are wave ids + 1)
        assert frames[0]["source"]["name"] == "lds_tiles.hip"
        shown = {}
        for scope in c.request("scopes", {"frameId": frames[0]["id"]})["scopes"]:
            for var in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                shown.setdefault(scope["name"], {})[var["name"]] = var["value"]
        assert shown["Locals"]["row"] == f"<unavailable: {private_missing}>"  # (at -O0 locals live in scratch)
        assert shown["Shared"]["tile"] == "<unavailable: dispatches[0].workgroups[1].lds.file: missing>"
        assert shown["Registers"]["pc"].startswith("0x")
        c.request("disconnect")
    finally:
        c.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab./-_\n\\é 0", max_size=8), max_size=6))
def test_paths_checked_in_bulk_are_the_paths_checked_one_by_one(rels):
    assert all_plain_paths(rels) == all(is_plain_path(rel) for rel in rels)
    if all_plain_paths(rels):  # (a plain path is an acceptable one)
        assert all(path_problem(rel) is None for rel in rels)


def test_ids_past_int64_are_kept_whole(tmp_path):
    """Wave ids may be any 64-bit number: the table keeps them as Python ints."""
    from aspace_dap.state.sample import sample_writer

    path = sample_writer().write(tmp_path / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    big = (1 << 64) - 1
    manifest["dispatches"][0]["workgroups"][1]["waves"][1]["id"] = hex(big)
    (path / "manifest.json").write_text(json.dumps(manifest))
    session = Session(load_state(path))
    state = session.state
    assert state.wave_table().ids.tolist() == [0, 1, 2, big] and state.wave_by_id(big).id == big
    assert state.wave_index(3) is None and state.wave_index(big) == 3
    names = session.thread_names()
    assert names[3] == session.thread_name(state.wave_by_id(big)) and f":{big} " in names[3]
