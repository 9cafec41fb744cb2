"""Sources that open from a copy of the examples somewhere else.

The CUDA and Intel example code objects record the absolute source paths of the machine that
built them (nvcc: the checkout's path; ocloc: a temporary build folder). From a clone in another
folder, the session shows the copy beside the dump instead, says so once, and names the sourceMap
that would pin it; a file is only ever substituted by one with the same trailing path components.
"""

import os
import shutil
from pathlib import Path

import pytest

from aspace_dap.session import Session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [("cuda", "divergent_call.sm_90.G", "divergent_call.cu"),
            ("opencl", "divergent_call.tgllp", "divergent_call.cl")]


def copy_example(tmp_path: Path, family: str, dump: str, source: str) -> Path:
    dest = tmp_path / "clone" / "examples" / family
    shutil.copytree(ROOT / "examples" / family / "dumps" / dump, dest / "dumps" / dump)
    shutil.copy(ROOT / "examples" / family / source, dest / source)
    return dest


@pytest.mark.parametrize("family, dump, source", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_sources_open_from_a_clone_elsewhere(tmp_path, monkeypatch, family, dump, source):
    dest = copy_example(tmp_path, family, dump, source)
    monkeypatch.chdir(tmp_path)  # the editor's workspace holds no other copy
    s = Session.open(str(dest / "dumps" / dump))
    frames = s.frames()
    assert frames[0].file == str(dest / source)
    recorded = s.program_for(s.wave()).index.line_for_pc(frames[0].pc).file
    if os.path.isabs(recorded) and recorded != str(dest / source):
        # another clone's build folder: said once, with the mapping that would choose the file explicitly
        # (a relative DWARF path, as the CUDA examples record, found beside the dump needs no word)
        assert len(s.notes) == 1
        assert recorded in s.notes[0] and str(dest / source) in s.notes[0] and '"sourceMap"' in s.notes[0]
    s.frames()
    assert len(s.notes) <= 1


def test_the_recorded_path_wins_when_it_is_beside_the_dump(tmp_path):
    s = Session.open(str(ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"))
    assert s.frames()[0].file == str(ROOT / "examples" / "lds_tiles" / "lds_tiles.hip")
    assert s.notes == []


def test_only_a_file_with_the_same_name_is_substituted(tmp_path, monkeypatch):
    dest = copy_example(tmp_path, "cuda", "divergent_call.sm_90.G", "divergent_call.cu")
    os.rename(dest / "divergent_call.cu", dest / "other.cu")
    monkeypatch.chdir(tmp_path)
    s = Session.open(str(dest / "dumps" / "divergent_call.sm_90.G"))
    recorded = s.program_for(s.wave()).index.line_for_pc(s.frames()[0].pc).file
    assert s.frames()[0].file == recorded and not s.openable(recorded)  # not found: shown as recorded
    assert all(not p.endswith("other.cu") for p in s.lookup_source(recorded).tried)


def test_source_map_comes_first(tmp_path, monkeypatch):
    dest = copy_example(tmp_path, "opencl", "divergent_call.tgllp", "divergent_call.cl")
    monkeypatch.chdir(tmp_path)
    probe = Session.open(str(dest / "dumps" / "divergent_call.tgllp"))
    recorded = probe.program_for(probe.wave()).index.line_for_pc(probe.frames()[0].pc).file
    elsewhere = tmp_path / "elsewhere" / "kernel.cl"
    elsewhere.parent.mkdir()
    shutil.copy(dest / "divergent_call.cl", elsewhere)
    s = Session.open(str(dest / "dumps" / "divergent_call.tgllp"), source_map={recorded: str(elsewhere)})
    assert s.frames()[0].file == str(elsewhere) and s.notes == []
    # a map to a file that is not there is passed over: the copy beside the dump is shown, and said
    s = Session.open(str(dest / "dumps" / "divergent_call.tgllp"), source_map={recorded: "/elsewhere/divergent_call.cl"})
    assert s.frames()[0].file == str(dest / "divergent_call.cl")
    assert s.lookup_source(recorded).tried[0] == "/elsewhere/divergent_call.cl"
