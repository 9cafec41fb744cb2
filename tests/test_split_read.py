"""Reading one range of many files with a helper process (state/split_read.py, run as a script for the helper), and
a big dump's every pc and exec read ahead while its manifest is checked (FolderFiles.prefetch_ranges).

What each file holds is written here and read back with plain file reads; the answers must not depend on
the helper: started or not, killed half way, or writing nonsense, every file is read once and right, and
what the helper leaves alone (symlinks, folders, FIFOs, missing names) is read, or refused, the way the
dump's other files are. The thresholds are lowered so that a few hundred files take both paths.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import pytest

from aspace_dap.errors import StateError
from aspace_dap.session import Session, waves as session_waves
from aspace_dap.state import load_state, split_read
from aspace_dap.state.split_read import SplitRead

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from gen_waves import write_waves_dump  # noqa: E402


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    monkeypatch.setattr(split_read, "HELPER_FILES", 64)
    monkeypatch.setattr(split_read, "CHUNK", 16)


def files_of(folder: Path, count: int, seed: int = 1) -> dict[str, bytes]:
    """`count` files of 0 to 40 random bytes each."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for i in range(count):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(41)))
        (folder / f"f{i}.bin").write_bytes(data)
        made[f"f{i}.bin"] = data
    return made


def expected(made: dict[str, bytes], names: list[str], offset: int, length: int) -> list[bytes | None]:
    return [made[name][offset:offset + length] if name in made else None for name in names]


def wait_until_done(split: SplitRead, chunks: int) -> None:
    deadline = time.monotonic() + 30
    while split._progress() < chunks + 1 and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("listed", [False, True])
def test_the_two_processes_read_every_file_between_them(tmp_path, listed):
    made = files_of(tmp_path / "regs", 300)
    names = list(made)
    random.Random(2).shuffle(names)
    split = SplitRead(str(tmp_path / "regs"), names, 5, 12, names_listed=listed)
    assert split._proc is not None
    helper = split._proc
    assert split.result() == expected(made, names, 5, 12)
    assert helper.returncode is not None  # stopped and waited for: no process left behind


def test_a_helper_that_read_everything_answers_alone(tmp_path):
    made = files_of(tmp_path / "regs", 200)
    names = list(made)
    split = SplitRead(str(tmp_path / "regs"), names, 0, 16)
    wait_until_done(split, -(-len(names) // split_read.CHUNK))
    assert split._progress() == -(-len(names) // split_read.CHUNK) + 1  # its listing, then every chunk
    assert split.result() == expected(made, names, 0, 16)


def test_what_is_not_a_regular_file_of_the_folder_is_left_to_the_caller(tmp_path):
    made = files_of(tmp_path / "regs", 100)
    (tmp_path / "outside.bin").write_bytes(b"outside" * 4)
    os.symlink(tmp_path / "outside.bin", tmp_path / "regs" / "link.bin")
    os.symlink("f1.bin", tmp_path / "regs" / "inside-link.bin")
    (tmp_path / "regs" / "sub").mkdir()
    (tmp_path / "regs" / "sub" / "f1.bin").write_bytes(b"deeper")
    os.mkfifo(tmp_path / "regs" / "fifo")
    odd = ["link.bin", "inside-link.bin", "sub", "sub/f1.bin", "fifo", "missing.bin", "../outside.bin", ".", ""]
    names = list(made) + odd
    split = SplitRead(str(tmp_path / "regs"), names, 0, 16)
    assert split.regular() == bytes([1] * len(made) + [0] * len(odd))
    assert split.result() == expected(made, names, 0, 16)  # (None for each odd name)


def test_without_a_helper_this_process_reads_what_it_is_vouched_for(tmp_path, monkeypatch):
    made = files_of(tmp_path / "regs", 100)
    names = list(made)
    monkeypatch.setattr(split_read, "HELPER", tmp_path / "no-such-helper.py")  # starts, then fails at once
    assert SplitRead(str(tmp_path / "regs"), names, 3, 8, names_listed=True).result() == expected(made, names, 3, 8)
    # unvouched names are read only as the helper's listing shows them: without one, none here
    assert SplitRead(str(tmp_path / "regs"), names, 3, 8).result() == [None] * len(names)
    monkeypatch.setattr(sys, "executable", "")  # no interpreter to start
    assert SplitRead(str(tmp_path / "regs"), names, 3, 8, names_listed=True).result() == expected(made, names, 3, 8)


def test_a_helper_killed_half_way_leaves_the_rest_to_this_process(tmp_path):
    made = files_of(tmp_path / "regs", 400)
    names = list(made)
    split = SplitRead(str(tmp_path / "regs"), names, 0, 16)
    split.regular()
    split._proc.kill()
    assert split.result() == expected(made, names, 0, 16)


def test_a_helper_that_writes_nonsense_is_not_believed(tmp_path, monkeypatch):
    made = files_of(tmp_path / "regs", 200)
    names = list(made)
    liar = tmp_path / "liar.py"
    # a listing that is right, then chunks whose lengths say more than was asked for
    liar.write_text(
        "import os, sys\n"
        "names = os.pread(int(sys.argv[5]), 1 << 20, 0).decode().split('\\n')\n"
        "out = int(sys.argv[6])\n"
        "os.write(out, bytes(1 for _ in names)); os.write(1, b'L')\n"
        "for start in range(0, len(names), int(sys.argv[4])):\n"
        "    os.write(out, (1000).to_bytes(4, 'little') * min(int(sys.argv[4]), len(names) - start))\n"
        "    os.write(1, b'+')\n")
    monkeypatch.setattr(split_read, "HELPER", liar)
    split = SplitRead(str(tmp_path / "regs"), names, 0, 16, names_listed=True)
    wait_until_done(split, -(-len(names) // split_read.CHUNK))
    assert split.result() == expected(made, names, 0, 16)


def registers_dump(tmp_path: Path, workgroups: int = 40) -> tuple[Path, list[tuple[int, int]]]:
    """A dump of `workgroups` x 4 waves with register files of their own, each with a pc and exec of its own
    (written here, at the layout's offsets); and those (pc, exec) in the manifest's wave order."""
    dump = write_waves_dump(tmp_path / "dump", workgroups, distinct=True)
    manifest = json.loads((dump / "manifest.json").read_text())
    layout = manifest["register_layouts"]["layout0"]
    offsets, at = {}, 0
    for name, size in layout:
        offsets[name] = at
        at += int(size)
    heads = []
    rng = random.Random(3)
    for group in manifest["dispatches"][0]["workgroups"]:
        for wave in group["waves"]:
            path = dump / wave["registers"]["file"]
            data = bytearray(path.read_bytes())
            pc, mask = rng.randrange(1 << 40), rng.randrange(1 << 64)
            data[offsets["pc"]:offsets["pc"] + 8] = pc.to_bytes(8, "little")
            data[offsets["exec"]:offsets["exec"] + 8] = mask.to_bytes(8, "little")
            path.write_bytes(bytes(data))
            heads.append((pc, mask))
    return dump, heads


def test_a_big_dump_reads_every_pc_and_exec_ahead_and_gets_them_right(tmp_path):
    dump, heads = registers_dump(tmp_path)
    with load_state(dump) as state:  # (only a debugging session asks for it: not `state validate`)
        assert state._files._ahead is None
    state = load_state(dump, read_ahead=True)
    ahead = state._files._ahead
    assert ahead is not None and len(ahead[0]) == len(heads)  # started while the manifest was checked
    helper = ahead[3]._proc
    read = state.wave_heads()
    assert read.pc.tolist() == [pc for pc, _ in heads] and read.pc_known.all()
    assert read.exec.tolist() == [mask for _, mask in heads] and read.exec_known.all()
    assert state._files._ahead is None and (helper is None or helper.returncode is not None)


def test_the_helpers_listing_stands_for_the_existence_check_and_says_the_same(tmp_path, monkeypatch):
    dump, _ = registers_dump(tmp_path)
    os.unlink(dump / "regs" / "wave-77.bin")
    with pytest.raises(StateError) as ahead:
        load_state(dump, read_ahead=True)
    monkeypatch.setattr(split_read, "HELPER_FILES", 1 << 30)  # no read ahead: the folder is listed here
    with pytest.raises(StateError) as listed:
        load_state(dump, read_ahead=True)
    assert str(ahead.value) == str(listed.value) == "dispatches[0].workgroups[19].waves[1].registers.file: missing"


def test_register_files_that_are_symlinks_inside_the_dump_are_read_through_them(tmp_path):
    dump, heads = registers_dump(tmp_path)
    os.rename(dump / "regs" / "wave-5.bin", dump / "mem" / "moved.bin")
    os.symlink("../mem/moved.bin", dump / "regs" / "wave-5.bin")
    state = load_state(dump, read_ahead=True)
    assert state._files._ahead is not None
    assert state.wave_heads().pc.tolist() == [pc for pc, _ in heads]


def test_closing_the_dump_stops_the_read_ahead(tmp_path):
    dump, _ = registers_dump(tmp_path)
    state = load_state(dump, read_ahead=True)
    split = state._files._ahead[3]
    helper = split._proc
    state.close()
    assert state._files._ahead is None and split._proc is None
    assert helper is None or helper.returncode is not None


def test_threads_of_a_dump_past_a_gpus_worth_of_waves_are_named_without_reading_every_wave(tmp_path, monkeypatch):
    dump, heads = registers_dump(tmp_path, 20)
    monkeypatch.setattr(session_waves, "COUNTED_NAMES_UP_TO", 40)
    session = Session(load_state(dump, read_ahead=True))
    names = session.thread_names()
    assert session.state._file_heads is None  # no execution mask was read for them
    assert names[7] == "AMDGPU Wave 0:?:0:7 (1,0,0)/3"  # ROCgdb's name: agent:queue:dispatch:wave (x,y,z)/index
    assert all(name == session.thread_name(wave) for name, wave in zip(names, session.state.waves))
    monkeypatch.setattr(session_waves, "COUNTED_NAMES_UP_TO", 80)
    counted = Session(load_state(dump, read_ahead=True)).thread_names()
    lanes = 64
    assert counted[7] == f"{names[7]} [{bin(heads[7][1]).count('1')}/{lanes} active]"


def test_a_dump_of_several_dispatches_is_checked_from_one_listing(tmp_path):
    """A node's dump: its dispatches are checked in turn, each against its run of the listing the helper
    made of the register folder, which the server never lists itself."""
    dump, heads = registers_dump(tmp_path)
    manifest = json.loads((dump / "manifest.json").read_text())
    first = manifest["dispatches"][0]
    groups = first["workgroups"]
    second = dict(first, id=1, workgroups=groups[25:])
    manifest["dispatches"] = [dict(first, workgroups=groups[:25]), second]
    (dump / "manifest.json").write_text(json.dumps(manifest))
    state = load_state(dump, read_ahead=True)
    assert state._files._ahead_at == len(heads)  # both runs answered by the helper's listing
    assert not state._files._listed
    assert [w.dispatch.id for w in (state.waves[0], state.waves[-1])] == [0, 1]
    assert state.wave_heads().exec.tolist() == [mask for _, mask in heads]
