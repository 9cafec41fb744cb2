"""A code object file holding a build per device (an offload bundle): each dispatch gets the build
for its own device, and a file with no build for it is an error, never another device's code."""

import json
import shutil
from pathlib import Path

import pytest

from aspace_dap.errors import AspaceError
from aspace_dap.inspect import frame_report
from aspace_dap.session import Session
from test_codeobj_malformed import make_bundle

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "lds_tiles"
BUILDS = {p: (EXAMPLES / f"lds_tiles.{p}.O0.co").read_bytes() for p in ("gfx90a", "gfx1030")}


def _dump_with_bundle(tmp_path: Path, processors: list[str], dispatch_processor: str | None = None) -> Path:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "dumps" / "gfx90a.O0", dump)
    bundle = make_bundle([(f"hipv4-amdgcn-amd-amdhsa--{p}", BUILDS[p.split(":")[0]]) for p in processors])
    (dump / "code" / "lds_tiles.bundle").write_bytes(bundle)
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest["code_objects"][0]["path"] = "code/lds_tiles.bundle"
    if dispatch_processor is not None:
        manifest["dispatches"][0]["processor"] = dispatch_processor
    (dump / "manifest.json").write_text(json.dumps(manifest))
    return dump


def _locals(session: Session) -> dict:
    report = frame_report(session, session.focus_wave, session.focus_lane)
    return {v["name"]: v["value"] for v in report["frames"][0]["variables"]}


def test_the_dispatch_device_build_is_chosen_wherever_it_sits_in_the_bundle(tmp_path):
    plain = Session.open(str(EXAMPLES / "dumps" / "gfx90a.O0"))
    fat = Session.open(str(_dump_with_bundle(tmp_path, ["gfx1030", "gfx90a"])))
    program = fat.program_for(fat.wave(fat.focus_wave))
    assert program.code_object.processor == "gfx90a"
    assert _locals(fat) == _locals(plain)


def test_a_bundle_without_the_device_build_is_an_error_not_another_build(tmp_path):
    fat = Session.open(str(_dump_with_bundle(tmp_path, ["gfx1030", "gfx1030:xnack-"])))
    with pytest.raises(AspaceError, match="cannot be read"):
        fat.program_for(fat.wave(fat.focus_wave))
    assert any("holds builds for gfx1030, none for gfx90a" in w for w in fat.warnings)


def test_a_lone_build_for_another_device_is_named(tmp_path):
    session = Session.open(str(_dump_with_bundle(tmp_path, ["gfx1030"])))
    session.program_for(session.wave(session.focus_wave))
    assert any("built for gfx1030, the dump's device is gfx90a" in w for w in session.warnings)


def test_each_dispatch_device_has_its_own_program(tmp_path):
    """Two dispatches on two devices share one bundle: neither gets the other's build."""
    import copy
    dump = _dump_with_bundle(tmp_path, ["gfx90a", "gfx1030"], dispatch_processor="gfx90a")
    manifest = json.loads((dump / "manifest.json").read_text())
    other = copy.deepcopy(manifest["dispatches"][0])
    other["id"], other["processor"] = 1, "gfx1030"
    for wg in other["workgroups"]:
        for wave in wg["waves"]:
            wave["id"] += 1000
    manifest["dispatches"].append(other)
    (dump / "manifest.json").write_text(json.dumps(manifest))
    session = Session.open(str(dump))
    first = session.program_for(session.wave(manifest["dispatches"][0]["workgroups"][0]["waves"][0]["id"]))
    second = session.program_for(session.wave(other["workgroups"][0]["waves"][0]["id"]))
    assert (first.code_object.processor, second.code_object.processor) == ("gfx90a", "gfx1030")
