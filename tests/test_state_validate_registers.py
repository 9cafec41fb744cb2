"""`state validate` refuses what the debugger cannot open: each adapter says which registers a
wave's layout must hold (the PC; the execution mask where the vendor has one) and their sizes.

Checked on every bundled dump: the dump validates, and with any required register removed from
its layouts the validator names the register and the layout's JSON path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aspace_dap.adapters import adapter_for, register_rules
from aspace_dap.session import Session
from aspace_dap.state import load_state, validate_state
from aspace_dap.state.cli import validate_command

ROOT = Path(__file__).resolve().parent.parent
DUMPS = sorted(p.parent for p in ROOT.glob("examples/**/dumps/*/manifest.json"))


def _required(manifest: dict) -> dict[str, str]:
    target = manifest["target"]
    return adapter_for(target["vendor"]).required_registers(target["processor"], int(target["lanes"]))


def _cases():
    for dump in DUMPS:
        manifest = json.loads((dump / "manifest.json").read_text())
        for register in _required(manifest):
            yield pytest.param(dump, register, id=f"{dump.relative_to(ROOT / 'examples')}-{register}")


def test_every_vendor_needs_its_pc_and_amd_and_intel_their_execution_mask():
    assert set(adapter_for("intel").required_registers("pvc", 16)) == {"ip", "emask"}
    assert set(adapter_for("amd").required_registers("gfx90a", 64)) == {"pc", "exec"}
    assert set(adapter_for("nvidia").required_registers("sm_90", 32)) == {"pc"}
    assert register_rules("acme") is None


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_bundled_dumps_validate(dump):
    assert [p for p in validate_state(dump, register_rules) if p.is_error] == []


@pytest.mark.parametrize("dump,register", list(_cases()))
def test_a_missing_required_register_is_named_with_its_layout(tmp_path, dump, register):
    copy = tmp_path / "dump"
    shutil.copytree(dump, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    layouts = manifest["register_layouts"]
    holding = [name for name, entries in layouts.items() if any(r == register for r, _ in entries)]
    assert holding, f"{dump}: no layout holds {register}"
    for name in holding:
        layouts[name] = [entry for entry in layouts[name] if entry[0] != register]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    errors = [p for p in validate_state(copy, register_rules) if p.is_error]
    assert {p.path for p in errors} == {f"register_layouts.{name}" for name in holding}
    assert all(f"no {register} register" in p.message for p in errors)
    assert validate_command(str(copy), rules_for=register_rules) == 1


def _intel_dump(tmp_path, dump="lds_tiles.pvc.O0") -> tuple[Path, dict]:
    copy = tmp_path / "dump"
    shutil.copytree(ROOT / "examples" / "opencl" / "dumps" / dump, copy)
    return copy, json.loads((copy / "manifest.json").read_text())


def test_an_intel_dump_with_ip_and_emask_opens(tmp_path):
    path, manifest = _intel_dump(tmp_path)
    [layout] = manifest["register_layouts"].values()
    assert [name for name, _ in layout[:2]] == ["ip", "emask"]
    assert validate_command(str(path), rules_for=register_rules) == 0
    session = Session(load_state(path))
    wave = session.wave()
    assert wave.pc == int(manifest["dispatches"][0]["workgroups"][0]["waves"][0].get("pc", wave.pc))
    assert session.frames()[0].line == 36
    assert list(wave.exec_mask).count(True) == 4  # tx < 4 of the 16 lanes


def test_the_old_pc_and_exec_names_are_refused_for_intel(tmp_path, capsys):
    path, manifest = _intel_dump(tmp_path)
    [(name, layout)] = manifest["register_layouts"].items()
    layout[0][0], layout[1][0] = "pc", "exec"
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert validate_command(str(path), rules_for=register_rules) == 1
    out = capsys.readouterr().out
    assert f"register_layouts.{name}: no ip register" in out
    assert f"register_layouts.{name}: no emask register" in out


def test_grf_size_must_be_the_devices(tmp_path):
    # pvc has 64-byte GRFs: a 32-byte r5 is refused at its size field
    path, manifest = _intel_dump(tmp_path)
    [(name, layout)] = manifest["register_layouts"].items()
    index = next(i for i, (reg, _) in enumerate(layout) if reg.startswith("r"))
    assert layout[index][1] == 64
    layout[index][1] = 32
    (path / "manifest.json").write_text(json.dumps(manifest))
    errors = [p for p in validate_state(path, register_rules) if p.is_error]
    assert [p.path for p in errors] == [f"register_layouts.{name}[{index}][1]"]
    assert "is 32 bytes" in errors[0].message and "64" in errors[0].message
