"""Structure-aware fuzzing of dumps: manifests mutated field by field, files swapped for hostile ones,
CUDA core headers patched. Fixed seeds, so every run checks the same few hundred inputs.

The only acceptable outcomes are a loaded state or a StateError/AspaceError; never another
exception, never a hang, never a file written outside the dump.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import struct
import time
from pathlib import Path

import pytest

from aspace_dap.errors import AspaceError
from aspace_dap.state import load_state
from aspace_dap.adapters.nvidia.core_writer import write_core
from aspace_dap.state.validate import validate_state

ROOT = Path(__file__).resolve().parents[1]
AMD_DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"
CUDA_DUMP = ROOT / "examples" / "cuda" / "dumps" / "lds_tiles.sm_90.G"

HOSTILE_VALUES = [None, -1, 0, 1, 2**64, 2**63 - 1, -2**63, 1.5, True, "", "0x", "0x" + "f" * 40, "-0x10",
                  "../../x", "/dev/zero", "/proc/self/environ", "mem/../../x", "a" * 5000, "\0", "é/\u202e",
                  [], {}, [[[[[]]]]], {"a": {"b": {}}}, [0, 0], [2**64, 0, 0], "mem/global-1.bin"]


def _paths(node, here=()):
    """Every (path, value) in a JSON tree."""
    yield here, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, here + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, here + (index,))


def _mutate(manifest: dict, rng: random.Random) -> dict:
    out = copy.deepcopy(manifest)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p, _ in _paths(out) if p]
        path = rng.choice(paths)
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        action = rng.random()
        if action < 0.15 and isinstance(parent, dict):
            del parent[key]
        elif action < 0.25 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))  # a duplicate entry (same ids, same files)
        else:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return out


def _touch(state) -> None:
    """Read a little of everything: registers, LDS, private and device memory."""
    for wave in state.waves:
        wave.pc  # noqa: B018
        if wave.workgroup is not None and wave.workgroup.lds is not None:
            wave.workgroup.lds.read(0, 64)
        if wave.private is not None:
            wave.private.wave_view.read(0, 64)
    for memory in state.memory.values():
        for address, size in memory.declared_ranges():
            memory.read(address, min(size, 64))


def _load_and_validate(dump: Path) -> None:
    try:
        with load_state(dump) as state:
            _touch(state)
    except AspaceError:
        pass
    for problem in validate_state(dump):
        assert problem.message


def test_mutated_manifests_load_or_fail_cleanly(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(AMD_DUMP, dump)
    original = json.loads((dump / "manifest.json").read_text())
    rng = random.Random(14)
    before = set(tmp_path.parent.iterdir())
    start = time.monotonic()
    for round_ in range(150):
        mutated = _mutate(original, rng)
        (dump / "manifest.json").write_text(json.dumps(mutated))
        try:
            _load_and_validate(dump)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"round {round_}: {type(exc).__name__}: {exc}\n{json.dumps(mutated)[:2000]}")
    assert time.monotonic() - start < 60
    assert set(tmp_path.parent.iterdir()) == before


@pytest.mark.parametrize("seed", range(4))
def test_hostile_files_behind_manifest_names_fail_cleanly(tmp_path, seed):
    rng = random.Random(seed)
    dump = tmp_path / "dump"
    shutil.copytree(AMD_DUMP, dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    named = [value for path, value in _paths(manifest) if path and path[-1] in ("file", "path")]
    for rel in rng.sample(named, 4):
        target = dump / rel
        target.unlink()
        kind = rng.choice(["fifo", "zero", "loop", "dir", "outside", "empty"])
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "zero":
            target.symlink_to("/dev/zero")
        elif kind == "loop":
            target.symlink_to(target.name)
        elif kind == "dir":
            target.mkdir()
        elif kind == "outside":
            target.symlink_to("/etc/passwd")
        else:
            target.write_bytes(b"")
    start = time.monotonic()
    _load_and_validate(dump)
    assert time.monotonic() - start < 20


def test_patched_cuda_core_headers_fail_cleanly(tmp_path):
    with load_state(CUDA_DUMP) as state:
        core = write_core(state, tmp_path / "core.cudbg")
    data = core.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, = struct.unpack_from("<H", data, 60)
    # (offset within a section header, format) of sh_name, sh_type, sh_offset, sh_size, sh_link, sh_info, sh_entsize
    fields = [(0, "<I"), (4, "<I"), (24, "<Q"), (32, "<Q"), (40, "<I"), (44, "<I"), (56, "<Q")]
    elf_fields = [(40, "<Q"), (58, "<H"), (60, "<H"), (62, "<H")]  # e_shoff, e_shentsize, e_shnum, e_shstrndx
    values = [0, 1, 7, 0xFFFF, 0xFFFFFFFF, 2**63, 2**64 - 1, len(data), len(data) - 1, 64]
    rng = random.Random(1414)
    mutant = tmp_path / "mutant.cudbg"
    start = time.monotonic()
    for round_ in range(120):
        patched = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.2:
                at, fmt = rng.choice(elf_fields)
            else:
                offset, fmt = rng.choice(fields)
                at = shoff + 64 * rng.randrange(shnum) + offset
            value = rng.choice(values) & ((1 << (8 * struct.calcsize(fmt))) - 1)
            struct.pack_into(fmt, patched, at, value)
        if rng.random() < 0.1:
            patched = patched[:rng.randrange(len(patched))]
        mutant.write_bytes(bytes(patched))
        try:
            with load_state(mutant) as state:
                _touch(state)
        except AspaceError:
            pass
        except Exception as exc:  # pragma: no cover
            raise AssertionError(f"round {round_}: {type(exc).__name__}: {exc}")
    assert time.monotonic() - start < 60


def test_gzip_core_and_zip_bombs_stop_at_the_decompression_limit(tmp_path, monkeypatch):
    """Fixed seed: gzip-compressed cores and deflated zip members that inflate past MAX_DECOMPRESSED_BYTES
    are refused by name while they stream, and leave nothing in the temporary folder."""
    import gc
    import zipfile

    import bombs
    from aspace_dap import limits

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(limits, "MAX_DECOMPRESSED_BYTES", 8 << 20)
    with load_state(CUDA_DUMP) as state:
        core = write_core(state, tmp_path / "core.cudbg").read_bytes()
    rng = random.Random(22)
    bomb = tmp_path / "bomb.cudbg.gz"
    for round_ in range(6):
        inflated = rng.choice([len(core) + 4096, (8 << 20) - 1, (8 << 20) + 1, 64 << 20])
        bomb.write_bytes(bombs.gzip_core_bomb(core, inflated))
        try:
            with load_state(bomb) as state:
                _touch(state)
            assert inflated <= 8 << 20, (round_, inflated)
        except AspaceError as exc:
            assert inflated > 8 << 20 and "MAX_DECOMPRESSED_BYTES" in str(exc), (round_, inflated, exc)
        gc.collect()
        assert not list(scratch.iterdir()), round_
    # a dump zip whose deflated memory member holds far more than the limit
    dump = tmp_path / "dump.zip"
    with zipfile.ZipFile(dump, "w") as archive:
        for path in AMD_DUMP.rglob("*"):
            if path.is_file() and path.name != "global-2.bin":
                archive.write(path, str(path.relative_to(AMD_DUMP)))
        member = zipfile.ZipInfo("mem/global-2.bin")
        member.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(member, "w", force_zip64=True) as out:
            for piece in bombs.zeros_after(b"", 64 << 20):
                out.write(piece)
    manifest = json.loads(zipfile.ZipFile(dump).read("manifest.json"))
    region = next(r for r in manifest["memory"] if r["file"] == "mem/global-2.bin")
    with load_state(dump) as state:
        with pytest.raises(AspaceError, match="MAX_DECOMPRESSED_BYTES"):
            state.memory["global"].read(int(region["address"], 16), 16)
    gc.collect()
    assert not list(scratch.iterdir())
