"""Device-scale dumps: the wave table, bulk validation, waveGroups and `info waves`.

The big dump is the lds_tiles gfx90a -O0 workgroup repeated 1,000 times (benchmarks/gen_waves.py,
hard links, built in a fraction of a second). Three of its 4,000 waves are moved to the first
instruction llvm-objdump attributes to line 30 (the row-sum loop), read from the committed
disassembly, so the expected lines come from LLVM's tools, not from our reader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from dap_client import launched

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_waves import EXAMPLE, write_waves_dump  # noqa: E402

from aspace_dap.session import Session  # noqa: E402
from aspace_dap.state import load_state  # noqa: E402
from aspace_dap.state.files import open_dump_files  # noqa: E402
from aspace_dap.state.model import WaveHeads  # noqa: E402
from aspace_dap.state.validate import ManifestChecker, check_manifest, read_manifest  # noqa: E402

DISASSEMBLY = REPO / "examples" / "lds_tiles" / "lds_tiles.gfx90a.O0.co.s.txt"
WORKGROUPS = 1000
ODD = 3


def objdump_lines() -> list[tuple[int, int]]:
    """(address, source line of lds_tiles.hip) of every instruction in llvm-objdump -l's listing."""
    out, line = [], None
    for text in DISASSEMBLY.read_text().splitlines():
        m = re.match(r"; .*lds_tiles\.hip:(\d+)$", text)
        if m:
            line = int(m[1])
            continue
        if text.startswith("; "):
            line = None  # another file (a HIP header)
            continue
        m = re.search(r"// ([0-9A-F]{12}):", text)
        if m and line is not None:
            out.append((int(m[1], 16), line))
    return out


def first_pc_of_line(line: int) -> int:
    return next(pc for pc, at in objdump_lines() if at == line)


def line_of_pc(pc: int) -> int:
    return dict(objdump_lines())[pc]


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory) -> Path:
    return write_waves_dump(tmp_path_factory.mktemp("waves") / "dump", WORKGROUPS, odd=ODD,
                            odd_pc=first_pc_of_line(30))


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory) -> Path:
    return write_waves_dump(tmp_path_factory.mktemp("waves") / "dump", 100)


def test_wave_heads_and_thread_names_match_the_waves_built_one_by_one():
    dumps = [EXAMPLE, REPO / "examples/lds_tiles/dumps/gfx1030.O0",
             REPO / "examples/cuda/dumps/divergent_call.sm_90.G"]
    dumps += sorted((REPO / "examples/opencl/dumps").iterdir())[:1]
    for dump in dumps:
        bulk = Session(load_state(dump))
        names = bulk.thread_names()
        heads = bulk.state.wave_heads()
        one_by_one = Session(load_state(dump))
        waves = one_by_one.state.waves
        assert names == [one_by_one.thread_name(w) for w in waves], dump
        built = WaveHeads.of_waves(waves, range(len(waves)))
        for field in ("pc", "pc_known", "exec", "exec_known", "valid", "lane_pcs"):
            assert (getattr(heads, field) == getattr(built, field)).all(), (dump, field)


def test_waves_are_built_only_when_used(big_dump):
    state = load_state(big_dump)
    assert len(state.waves) == WORKGROUPS * 4 and state.made_waves() == []
    session = Session(state)
    session.thread_names()
    session.wave_groups()
    made = [w.id for _, w in state.made_waves()]
    assert len(made) <= 4, made  # the focus wave and one per distinct stack: no object for the others
    built = [w.id for w in state.waves if w.loaded]  # (makes every wave object, reads no file)
    assert len(built) <= 4 and len(state.made_waves()) == WORKGROUPS * 4, built
    last = state.waves[-1]
    assert last.pc == first_pc_of_line(30) and last.loaded


def _problems(manifest, files, bulk: bool, sizes: bool = True, memories: bool = True):
    checker = ManifestChecker(manifest, files, sizes=sizes, memories=memories)
    if not bulk:
        checker.plain_workgroups = lambda *a: False
    return [(p.path, p.message, p.severity) for p in checker.check()]


@pytest.mark.parametrize("breakage", ["none", "missing file", "duplicate id", "hex id", "short file", "bad layout",
                                      "missing private file", "private path", "wave a list", "registers a string",
                                      "private a list", "lds a number"])
def test_bulk_validation_reports_what_the_full_walk_reports(small_dump, tmp_path, breakage):
    dump = tmp_path / "dump"
    shutil.copytree(small_dump, dump, copy_function=os.link)
    manifest = json.loads((dump / "manifest.json").read_text())
    waves = [w for wg in manifest["dispatches"][0]["workgroups"] for w in wg["waves"]]
    if breakage == "missing file":
        os.unlink(dump / waves[250]["registers"]["file"])
    elif breakage == "duplicate id":
        waves[300]["id"] = 17
    elif breakage == "hex id":
        waves[10]["id"] = "0xa"
    elif breakage == "short file":
        target = dump / waves[123]["private"]["file"]
        data = target.read_bytes()
        target.unlink()
        target.write_bytes(data[:100])
    elif breakage == "bad layout":
        waves[5]["registers"]["layout"] = "nope"
    elif breakage == "missing private file":
        os.unlink(dump / waves[77]["private"]["file"])
    elif breakage == "private path":
        waves[78]["private"]["file"] = "../private-78.bin"
    elif breakage == "wave a list":
        manifest["dispatches"][0]["workgroups"][10]["waves"][2] = [1, 2]
    elif breakage == "registers a string":
        waves[41]["registers"] = "regs/wave-41.bin"
    elif breakage == "private a list":
        waves[42]["private"] = [waves[42]["private"]]
    elif breakage == "lds a number":
        manifest["dispatches"][0]["workgroups"][12]["lds"] = 7
    (dump / "manifest.json").unlink()  # a hard link to the shared dump's: write a new file
    (dump / "manifest.json").write_text(json.dumps(manifest))
    files = open_dump_files(dump)
    manifest, _ = read_manifest(files)
    for sizes in (True, False):
        for memories in (True, False):  # (False: as opening checks)
            assert _problems(manifest, files, True, sizes, memories) == \
                _problems(manifest, open_dump_files(dump), False, sizes, memories)
    found = _problems(manifest, files, True)
    base = [p for p in found if p[0].startswith("memory[")]  # the example's own empty global files
    assert all(p[2] == "warning" for p in base)
    assert found == [(p.path, p.message, p.severity) for p in check_manifest(manifest, files)]
    if breakage in ("none", "hex id"):
        assert found == base
    else:
        assert len(found) > len(base)


def test_wave_groups_put_the_odd_waves_first_and_setfocus_follows(big_dump):
    c, _ = launched(str(big_dump))
    try:
        threads = c.request("threads")["threads"]
        assert len(threads) == WORKGROUPS * 4
        body = c.request("waveGroups")
        assert body["totalWaves"] == WORKGROUPS * 4 and body["totalGroups"] == 2
        odd, rest = body["groups"]
        last = WORKGROUPS * 4 - 1
        assert odd["waveCount"] == ODD and odd["waveIds"] == [last - 2, last - 1, last]
        assert odd["waveRanges"] == f"{last - 2}-{last}"
        assert [(f["source"]["name"], f["line"]) for f in odd["frames"]] == [("lds_tiles.hip", 30)]
        focus_pc = int.from_bytes((EXAMPLE / "regs" / "wave-0.bin").read_bytes()[:8], "little")
        assert [(f["source"]["name"], f["line"]) for f in rest["frames"]] == [("lds_tiles.hip", line_of_pc(focus_pc))]
        assert rest["waveCount"] == last + 1 - ODD and len(rest["waveIds"]) < rest["waveCount"]
        assert rest["hasFocus"] and not odd["hasFocus"]
        full = c.request("waveGroups", {"group": 1})["groups"][0]
        assert full["waveIds"] == list(range(last + 1 - ODD)) and full["threadIds"][:2] == [1, 2]
        # lanes: exec of the example's waves, counted independently of the server
        assert odd["lanes"] == ODD * 64

        text = c.request("evaluate", {"expression": "info waves", "context": "repl"})["result"].splitlines()
        group_lines = [t for t in text if "lds_tiles.hip:" in t]
        assert "lds_tiles.hip:30" in group_lines[0] and group_lines[0].split()[0] == str(ODD)
        assert group_lines[1].startswith("*") and f"waves 0-{last - ODD}" in text[text.index(group_lines[1]) + 1]
        assert f"waves {last - 2}-{last}" in text[text.index(group_lines[0]) + 1]

        chosen = odd["threadIds"][1]
        focus = c.request("setFocus", {"threadId": chosen})
        assert focus["threadId"] == chosen
        frames = c.request("stackTrace", {"threadId": chosen})["stackFrames"]
        assert frames[0]["line"] == 30
        text = c.request("evaluate", {"expression": "info waves", "context": "repl"})["result"].splitlines()
        assert [t for t in text if "lds_tiles.hip:30" in t][0].startswith("*")
        with pytest.raises(AssertionError):
            c.request("waveGroups", {"group": 2})
        c.request("disconnect")
    finally:
        c.close()


@pytest.mark.parametrize("dump", ["divergent_call/dumps/gfx90a.O0", "cuda/dumps/divergent_call.sm_90.G",
                                  "opencl/dumps/lds_tiles.tgllp"])
def test_every_wave_is_in_the_group_of_its_own_stack(dump):
    """Waves stopped in a called function are grouped by their unwound callers too."""
    session = Session(load_state(REPO / "examples" / dump))
    groups = session.wave_groups()
    assert sorted(w for g in groups for w in g.wave_ids.tolist()) == sorted(w.id for w in session.state.waves)
    assert [len(g.wave_ids) for g in groups] == sorted(len(g.wave_ids) for g in groups)
    check = Session(load_state(REPO / "examples" / dump))
    for group in groups:
        for wave_id in group.wave_ids.tolist():
            wave = check.state.wave_by_id(wave_id)
            active = [int(i) for i, on in enumerate(check.active_lanes(wave)) if on]
            frames = check.frames(wave_id, active[0] if active else 0)
            assert [(f["name"], f["file"], f["line"]) for f in group.frames] == \
                [(f.name, f.file, f.line) for f in frames]
        assert group.active_lanes == sum(int(check.active_lanes(check.state.wave_by_id(w)).sum())
                                         for w in group.wave_ids.tolist())
