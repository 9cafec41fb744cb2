"""NVIDIA frame bases: the CFA is the stack pointer's value, so locals on the stack read the same
whether or not the dump places the local window (`target.apertures` is optional in the format)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lane_views import every_lane

DUMPS = Path(__file__).resolve().parent.parent / "examples" / "cuda" / "dumps"
EXAMPLES = sorted(DUMPS.glob("*.G"))


def _without_apertures(dump: Path, tmp_path: Path) -> Path:
    copy = tmp_path / dump.name
    shutil.copytree(dump, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["target"]["apertures"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def _every_lane(path: Path) -> dict:
    """(lane, frame, variable) -> the value shown, for every valid lane of the first wave."""
    shown, _ = every_lane(path, first_wave_only=True)
    return {key[1:3] + key[4:]: value for key, value in shown.items()}


def test_every_example_is_covered():
    assert len(EXAMPLES) == 9


@pytest.mark.parametrize("dump", EXAMPLES, ids=lambda p: p.name)
def test_locals_read_the_same_with_and_without_apertures(dump, tmp_path):
    with_windows = _every_lane(dump)
    without = _every_lane(_without_apertures(dump, tmp_path))
    assert with_windows.keys() == without.keys()
    differ = {k: (with_windows[k], without[k]) for k in with_windows if with_windows[k] != without[k]}
    assert not differ
    assert not [k for k, v in without.items() if v.startswith("<error")]
    if dump.name.startswith("scratch_struct"):
        # `p` and `history` are DW_OP_fbreg locals (frame base DW_OP_call_frame_cfa, storage kind local)
        stack = {k: v for k, v in without.items() if k[2] in ("p", "history")}
        assert len(stack) == 2 * 32 and all(v.startswith("{") for v in stack.values())
