"""The OpenCL example dumps on Intel: every variable in scope, per lane, and a tagged generic pointer.

The dumps are rebuilt here from the committed debug ELF and the kernel model, so the test also
checks that the committed dump is current.
"""

from __future__ import annotations

import filecmp
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.intel.adapter import GLOBAL, LOCAL
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.values.format import format_obj

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from dumpgen import opencl_divergent_call  # noqa: E402
from dumpgen.opencl_engine import build  # noqa: E402
from session_views import shown

DUMPS = ROOT / "examples" / "opencl" / "dumps"


def _session(dump: Path) -> Session:
    return Session(load_state(str(dump)))


def _shown(s: Session, lane: int) -> dict[str, str]:
    frame, values = shown(s, lane)
    return values


def test_committed_dump_is_current(tmp_path):
    build(opencl_divergent_call.spec()).write(tmp_path / "fresh")
    committed = DUMPS / "divergent_call.tgllp"
    fresh = {p.relative_to(tmp_path / "fresh") for p in (tmp_path / "fresh").rglob("*") if p.is_file()}
    assert fresh == {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()}
    for rel in fresh:
        assert filecmp.cmp(tmp_path / "fresh" / rel, committed / rel, shallow=False), rel


def _float(text: str) -> float:
    return float(text)


def _floats(text: str) -> list[float]:
    """A GDB-style array, `{1, 2, 0 <repeats 30 times>}`, as a list."""
    out = []
    for item in text.strip("{}").split(", "):
        value, _, repeat = item.partition(" <repeats ")
        out += [float(value)] * (int(repeat.split()[0]) if repeat else 1)
    return out


@pytest.mark.parametrize("lane", [0, 1, 3, 5, 6, 7])
def test_divergent_call_every_variable_per_lane(lane):
    s = _session(DUMPS / "divergent_call.tgllp")
    wave = s.wave()
    assert wave.lanes == 8 and list(np.nonzero(wave.active_lanes)[0]) == [1, 3, 5, 7]
    frame = s.frames(lane=lane)[0]
    assert frame.name == "divergent" and frame.line == 28
    model = opencl_divergent_call.work_item(lane)
    shown = _shown(s, lane)
    assert int(shown["gid"]) == model["gid"]
    assert int(shown["lane"]) == model["lane"]
    assert _float(shown["x"]) == model["x"]
    # the work-group's __local array, hung on IGC's range-less inlined instance of the kernel
    cells = opencl_divergent_call.spec().values["cells"][lane]
    assert _floats(shown["cells"]) == cells
    if lane & 1:
        assert int(shown["steps"]) == model["steps"]
        assert shown["cell"] == f"0x{model['cell']:x}"


@pytest.mark.parametrize("lane,space", [(3, LOCAL), (7, LOCAL), (1, GLOBAL), (5, GLOBAL)])
def test_generic_pointer_resolves_to_its_space_and_target(lane, space):
    s = _session(DUMPS / "divergent_call.tgllp")
    s.set_focus(lane=lane)
    frame = s.frames()[0]
    var = next(v for v in s.variables(frame) if v.name == "cell")
    obj = s.read_variable(frame, var).obj_for(lane)
    pointer = obj.scalar_bits()[0][0]
    target = s.target_for(s.wave(), frame.dialect)
    resolved, offset = target.resolve_generic(pointer)
    assert resolved == space
    model = opencl_divergent_call.work_item(lane)
    if space is LOCAL:
        assert pointer >> 61 == 0b010 and offset == 4 * lane
    else:
        assert offset == opencl_divergent_call.OUT_ADDR + 4 * model["gid"]
    pointee = s.pointer_target(obj, 0, frame.dialect)
    assert float(format_obj(pointee, 0)) == model["x"]  # `*cell = x` ran before the stop
    raw = target.read_memory(resolved, np.array([lane]), np.array([offset], np.uint64), 4)
    assert raw.valid.all() and struct.unpack("<f", bytes(raw.data[0]))[0] == model["x"]


def test_inactive_lanes_have_no_branch_values():
    s = _session(DUMPS / "divergent_call.tgllp")
    shown = _shown(s, 2)
    assert int(shown["lane"]) == 2  # kernel-wide values exist in every lane
    assert s.lane_state(s.wave(), 2) == "inactive"


def test_session_reads_the_dump_through_the_shared_loader():
    s = _session(DUMPS / "divergent_call.tgllp")
    program = s.program_for(s.wave())
    assert program.code_object.e_machine == 182 and program.code_object.vendor == "intel"
    assert program.index.dialect_for_cu(0).vendor_ops == "intel"


def test_dap_server_shows_the_variables():
    from test_dap_session import scope_vars, start
    c, stopped = start(str(DUMPS / "divergent_call.tgllp"))
    try:
        frames = c.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        names = scope_vars(c, frames[0]["id"], "Locals")
        shared = scope_vars(c, frames[0]["id"], "Shared")  # __local arrays are workgroup memory
        assert "cells" in shared and "cells" not in names
        names.update(shared)
        assert int(names["lane"]["value"]) == 3
        assert names["cell"]["variablesReference"]
        cells = c.request("variables", {"variablesReference": names["cells"]["variablesReference"]})["variables"]
        assert [v["value"] for v in cells[:8]] == ["5", "5.5", "6", "6.5", "7", "7.5", "0", "0"]
    finally:
        c.close()


def test_build_script_refuses_an_unknown_build_before_compiling(tmp_path):
    """`build.sh NAME.BUILD` with a build it does not know is an error naming the known ones, not a
    silent success (a copy of the script runs with `true` as ocloc, so nothing is compiled)."""
    import shutil
    import subprocess

    script = tmp_path / "build.sh"
    shutil.copy(ROOT / "examples" / "opencl" / "build.sh", script)
    run = subprocess.run(["bash", str(script), "lds_tiles.tgllp", "lds_tiles.tgl"], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", "OCLOC": "true"}, timeout=30)
    assert run.returncode == 1
    assert "no build 'lds_tiles.tgl'" in run.stderr and "divergent_call.acm-g10.O0" in run.stderr
    assert "building" not in run.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build.sh"]
