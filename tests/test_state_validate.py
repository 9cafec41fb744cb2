"""Broken dumps: the validator names the offending field; load_state raises StateError, never crashes."""

import json
import os
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspace_dap.adapters import register_rules
from aspace_dap.errors import StateError
from aspace_dap.state import check_manifest, load_state, validate_state
from aspace_dap.state.cli import validate_command
from aspace_dap.state.sample import sample_writer

W = "dispatches[0].workgroups[1].waves[1]"  # the fourth wave of the sample


def _wave(m, g=1, w=1):
    return m["dispatches"][0]["workgroups"][g]["waves"][w]


def _del(d, key):
    del d[key]


BROKEN = {
    "wrong format": (lambda m, p: m.update(format="other"), "format"),
    "newer version": (lambda m, p: m.update(version=2), "version"),
    "unknown vendor": (lambda m, p: m["target"].update(vendor="acme"), "target.vendor"),
    "zero lanes": (lambda m, p: m["target"].update(lanes=0), "target.lanes"),
    "negative number": (lambda m, p: m["memory"][0].update(size=-1), "memory[0].size"),
    "bad number string": (lambda m, p: m["memory"][0].update(address="0xZZ"), "memory[0].address"),
    "float number": (lambda m, p: m["memory"][0].update(size=1.5), "memory[0].size"),
    "missing register file": (lambda m, p: os.remove(p / _wave(m)["registers"]["file"]), f"{W}.registers.file"),
    "absolute path": (lambda m, p: _wave(m)["registers"].update(file="/etc/passwd"), f"{W}.registers.file"),
    "path escaping": (lambda m, p: _wave(m)["registers"].update(file="../x.bin"), f"{W}.registers.file"),
    "missing field": (lambda m, p: _del(_wave(m)["registers"], "layout"), f"{W}.registers.layout"),
    "unknown layout": (lambda m, p: _wave(m)["registers"].update(layout="nope"), f"{W}.registers.layout"),
    "duplicate code object id": (lambda m, p: m["code_objects"].append(dict(m["code_objects"][0])),
                                 "code_objects[1].id"),
    "dangling code object": (lambda m, p: m["dispatches"][0].update(code_object=7), "dispatches[0].code_object"),
    "zero register size": (lambda m, p: m["register_layouts"]["wave64"][2].__setitem__(1, 0),
                           "register_layouts.wave64[2][1]"),
    "exec size for wave64": (lambda m, p: m["register_layouts"]["wave64"][1].__setitem__(1, 4),
                             "register_layouts.wave64[1][1]"),
    "swizzled size": (lambda m, p: _wave(m)["private"].update(size=4 * 64 * 3 + 4), f"{W}.private.size"),
    "per_lane size": (lambda m, p: _wave(m)["private"].update(layout="per_lane", size=64 * 5 + 1),
                      f"{W}.private.size"),
    "unknown private layout": (lambda m, p: _wave(m)["private"].update(layout="striped"), f"{W}.private.layout"),
    "overlapping regions": (lambda m, p: m["memory"].append(dict(m["memory"][0], address="0x7f0000000800")),
                            "memory[1]"),
    "duplicate wave id": (lambda m, p: _wave(m).update(id=0), f"{W}.id"),
    "focus on unknown wave": (lambda m, p: m["focus"].update(wave=99), "focus.wave"),
    "focus lane too big": (lambda m, p: m["focus"].update(lane=64), "focus.lane"),
    "lane_pcs length": (lambda m, p: _wave(m).update(lane_pcs=["0x10"] * 63), f"{W}.lane_pcs"),
    "workgroup id not a triple": (lambda m, p: m["dispatches"][0]["workgroups"][1].update(id=[1, 0]),
                                  "dispatches[0].workgroups[1].id"),
    "valid_lanes too wide": (lambda m, p: _wave(m).update(valid_lanes=hex(1 << 64)), f"{W}.valid_lanes"),
    "missing lds file": (lambda m, p: os.remove(p / m["dispatches"][0]["workgroups"][0]["lds"]["file"]),
                         "dispatches[0].workgroups[0].lds.file"),
    "missing private file": (lambda m, p: os.remove(p / _wave(m)["private"]["file"]), f"{W}.private.file"),
    "private path escaping": (lambda m, p: _wave(m)["private"].update(file="../x.bin"), f"{W}.private.file"),
    "absolute lds path": (lambda m, p: m["dispatches"][0]["workgroups"][1]["lds"].update(file="/etc/passwd"),
                          "dispatches[0].workgroups[1].lds.file"),
    "lds without size": (lambda m, p: _del(m["dispatches"][0]["workgroups"][0]["lds"], "size"),
                         "dispatches[0].workgroups[0].lds.size"),
    "private not an object": (lambda m, p: _wave(m).update(private=["mem/private-3.bin"]), f"{W}.private"),
    "workgroups not a list": (lambda m, p: m["dispatches"][0].update(workgroups={}), "dispatches[0].workgroups"),
    "wave not an object": (lambda m, p: m["dispatches"][0]["workgroups"][0]["waves"].append(3),
                           "dispatches[0].workgroups[0].waves[2]"),
    "missing target": (lambda m, p: _del(m, "target"), "target"),
    # optional fields a CUDA core's conversion writes (docs/STATE_FORMAT.md)
    "return_addresses length": (lambda m, p: _wave(m).update(return_addresses=[[]] * 63), f"{W}.return_addresses"),
    "return address not a number": (lambda m, p: _wave(m).update(return_addresses=[["0x10"]] * 63 + [["pc"]]),
                                    f"{W}.return_addresses[63][0]"),
    "return_addresses entry not a list": (lambda m, p: _wave(m).update(return_addresses=[[]] * 63 + [5]),
                                          f"{W}.return_addresses[63]"),
    "device not a number": (lambda m, p: m["dispatches"][0].update(device="first"), "dispatches[0].device"),
    "processor not a string": (lambda m, p: m["dispatches"][0].update(processor=90), "dispatches[0].processor"),
    "cluster_size of zero": (lambda m, p: m["dispatches"][0].update(cluster_size=[2, 0, 1]),
                             "dispatches[0].cluster_size[1]"),
    "cluster not a triple": (lambda m, p: m["dispatches"][0]["workgroups"][1].update(cluster=[0, 0]),
                             "dispatches[0].workgroups[1].cluster"),
    "dispatch aperture without base": (lambda m, p: m["dispatches"][0].update(apertures={"local": {"size": 16}}),
                                       "dispatches[0].apertures.local.base"),
    "stop pc not a number": (lambda m, p: m.update(stop={"reason": "exception", "pc": "here"}), "stop.pc"),
}


# LDS and private memories, whose entries and files opening does not look at (a dump of 100,000 waves
# names 125,000 of them): the reader says what is wrong, with the same JSON path, when one is first read.
FIRST_READ = {
    "missing lds file": lambda state: state.dispatches[0].workgroups[0].lds,
    "missing private file": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
    "private path escaping": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
    "absolute lds path": lambda state: state.dispatches[0].workgroups[1].lds,
    "swizzled size": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
    "per_lane size": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
    "unknown private layout": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
    "lds without size": lambda state: state.dispatches[0].workgroups[0].lds,
    "private not an object": lambda state: state.dispatches[0].workgroups[1].waves[1].private,
}


def _broken(tmp_path, mutate):
    path = sample_writer().write(tmp_path / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    mutate(manifest, path)
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_dump_is_reported_with_its_json_path(tmp_path, name):
    mutate, expected_path = BROKEN[name]
    path = _broken(tmp_path, mutate)
    errors = [p for p in validate_state(path, register_rules) if p.is_error]
    assert errors, name
    assert errors[0].path == expected_path, errors
    with pytest.raises(StateError) as raised:
        FIRST_READ[name](load_state(path)) if name in FIRST_READ else load_state(path)
    assert raised.value.path == expected_path and str(raised.value) == str(errors[0]), raised.value


def test_missing_register_file_message(tmp_path):
    path = _broken(tmp_path, BROKEN["missing register file"][0])
    assert [str(p) for p in validate_state(path)] == [f"{W}.registers.file: missing"]


def test_validator_never_raises_on_garbage(tmp_path):
    for manifest in ([], "text", {"format": None, "target": [], "dispatches": "x", "register_layouts": 3},
                     {"target": {"lanes": "0x"}, "dispatches": [{"workgroups": [{"waves": [{"registers": 1}]}]}]},
                     {"register_layouts": {"a": [["v0"], [1, 2], ["s0", "x"]]}, "focus": {"wave": True}}):
        problems = check_manifest(manifest)
        assert problems and all(p.is_error for p in problems)


def test_not_json_and_no_manifest(tmp_path):
    (tmp_path / "a").mkdir()
    assert [p.path for p in validate_state(tmp_path / "a")] == ["manifest.json"]
    (tmp_path / "a" / "manifest.json").write_text("{not json")
    [problem] = validate_state(tmp_path / "a")
    assert problem.path == "manifest.json" and "JSON" in problem.message
    with pytest.raises(StateError):
        load_state(tmp_path / "a")
    (tmp_path / "junk.zip").write_bytes(b"PK not really")
    assert validate_state(tmp_path / "junk.zip")[0].message.startswith("not a readable zip")
    with pytest.raises(StateError):
        load_state(tmp_path / "junk.zip")
    with pytest.raises(StateError):
        load_state(tmp_path / "does-not-exist")


def test_zip_member_missing(tmp_path):
    sample_writer().write_zip(tmp_path / "d.zip")
    with zipfile.ZipFile(tmp_path / "d.zip") as src, zipfile.ZipFile(tmp_path / "e.zip", "w") as dst:
        for info in src.infolist():
            if info.filename != "regs/wave-3.bin":
                dst.writestr(info, src.read(info))
    assert [p.path for p in validate_state(tmp_path / "e.zip")] == [f"{W}.registers.file"]


def test_symlink_out_of_the_dump_is_rejected(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(bytes(4096))
    path = sample_writer().write(tmp_path / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    os.symlink(outside, path / "mem" / "link.bin")
    manifest["memory"][0]["file"] = "mem/link.bin"
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert [p.path for p in validate_state(path)] == ["memory[0].file"]


def test_short_file_is_only_a_warning(tmp_path):
    path = sample_writer().write(tmp_path / "dump")
    manifest = json.loads((path / "manifest.json").read_text())
    os.truncate(path / manifest["memory"][0]["file"], 100)
    [problem] = validate_state(path)
    assert (problem.path, problem.severity) == ("memory[0].file", "warning")
    load_state(path).close()


def test_null_optional_fields_mean_absent(tmp_path):
    def mutate(m, p):
        _wave(m)["private"] = None
        m["focus"] = None
        _wave(m)["return_addresses"] = None
        m["dispatches"][0].update(device=None, processor=None, cluster_size=None, apertures=None)
        m["dispatches"][0]["workgroups"][1]["cluster"] = None
    path = _broken(tmp_path, mutate)
    assert not [p for p in validate_state(path, register_rules) if p.is_error]
    with load_state(path) as state:
        assert state.focus is None and state.wave_by_id(3).private is None
        assert state.wave_by_id(3).return_addresses is None
        d = state.dispatches[0]
        assert (d.device, d.processor, d.cluster_size, d.apertures, d.workgroups[1].cluster) == (None,) * 5


def test_optional_multi_device_fields_read_back(tmp_path):
    def mutate(m, p):
        _wave(m)["return_addresses"] = [[]] * 62 + [["0x1040", "0x2080"], []]
        m["dispatches"][0].update(device=1, processor="gfx942", cluster_size=[2, 1, 1],
                                  apertures={"local": {"base": "0x5000", "size": "0x1000"}})
        m["dispatches"][0]["workgroups"][1]["cluster"] = [1, 0, 0]
        m["stop"] = {"reason": "exception", "description": "x", "pc": "0x1000"}
    with load_state(_broken(tmp_path, mutate)) as state:
        assert state.wave_by_id(3).return_addresses == {62: [0x1040, 0x2080]}
        d = state.dispatches[0]
        assert (d.device, d.processor, d.cluster_size, d.workgroups[1].cluster) == (1, "gfx942", (2, 1, 1), (1, 0, 0))
        assert d.apertures["local"].base == 0x5000 and state.stop.pc == 0x1000
        assert state.apertures_for(state.wave_by_id(3))["local"].base == 0x5000


def test_cli(tmp_path, capsys):
    good = sample_writer().write(tmp_path / "good")
    assert validate_command(str(good)) == 0
    assert capsys.readouterr().out.startswith("ok: amd gfx90a, 64 lanes")
    bad = _broken(tmp_path / "b", BROKEN["focus lane too big"][0])
    assert validate_command(str(bad)) == 1
    assert "focus.lane: lane 64 is not below 64" in capsys.readouterr().out
    assert validate_command(str(bad), json_output=True) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["problems"][0]["path"] == "focus.lane"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2 ** 70) | st.floats(allow_nan=False)
    | st.sampled_from(["", "0x", "0x10", "-1", "12", "../x", "/abs", "swizzled", "per_lane", "wave64", "amd"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12)


def _nodes(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, path + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _nodes(child, path + (i,))


SAMPLE_MANIFEST = sample_writer().manifest()
SAMPLE_NODES = list(_nodes(SAMPLE_MANIFEST))[1:]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SAMPLE_NODES), json_values)
def test_any_single_field_replaced_never_crashes_the_validator(node, replacement):
    manifest = json.loads(json.dumps(SAMPLE_MANIFEST))
    parent = manifest
    for key in node[:-1]:
        parent = parent[key]
    parent[node[-1]] = replacement
    for problem in check_manifest(manifest):
        assert isinstance(problem.path, str) and problem.message


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(SAMPLE_NODES), json_values)
def test_load_state_raises_only_state_errors(tmp_path_factory, node, replacement):
    path = sample_writer().write(tmp_path_factory.mktemp("fuzz"))
    manifest = json.loads((path / "manifest.json").read_text())
    parent = manifest
    for key in node[:-1]:
        parent = parent[key]
    parent[node[-1]] = replacement
    (path / "manifest.json").write_text(json.dumps(manifest))
    try:
        load_state(path).close()
    except StateError:
        pass
