"""GPU builtins per lane, on every example dump, against the geometry its manifest records.

The expectations are computed here from manifest.json alone, by the rules of docs/STATE_FORMAT.md
("Work-item ids": lane L of a wave is flat work-item `index_in_workgroup * lanes + L` of its
work-group, x fastest) and of the languages: CUDA's threadIdx / blockIdx / blockDim / gridDim
(gridDim counts blocks: ceil(grid_size / workgroup_size), grid_size counting work-items for every
vendor, the HSA and OpenCL global size), OpenCL's get_local_id / get_group_id / get_global_id /
get_local_size / get_global_size / get_num_groups, and ROCgdb's and gdb-oneapi's convenience
variables as their sources print them ($_dispatch_pos "(x,y,z)/w", $_lane_workgroup_pos "[x,y,z]",
$_workitem_local_id {x, y, z}).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dap_client import REPO_ROOT, launched

from aspace_dap.lane_values import lane_values
from aspace_dap.session import Session

EXAMPLES = Path(REPO_ROOT) / "examples"
DUMPS = sorted(p.parent for p in EXAMPLES.glob("**/dumps/*/manifest.json"))


def _number(v) -> int:
    return int(v, 0) if isinstance(v, str) else int(v)


def _geometry(manifest: dict):
    """Per wave id: {lane: expected values}, from the manifest alone."""
    lanes = int(manifest["target"]["lanes"])
    out = {}
    for dispatch in manifest["dispatches"]:
        size = [int(n) for n in dispatch["workgroup_size"]]
        grid = [int(n) for n in dispatch["grid_size"]]
        groups, items = [-(-g // s) for g, s in zip(grid, size)], grid
        for workgroup in dispatch["workgroups"]:
            gid = [int(n) for n in workgroup["id"]]
            # the work-group's own size: a group at the grid's edge holds what is left of the grid
            own = [min(s, i - g * s) for s, i, g in zip(size, items, gid)]
            for wave in workgroup["waves"]:
                valid = _number(wave.get("valid_lanes", (1 << lanes) - 1))
                rows = {}
                for lane in range(lanes):
                    flat = int(wave["index_in_workgroup"]) * lanes + lane
                    local = [flat % own[0], flat // own[0] % own[1], flat // (own[0] * own[1])]
                    exists = bool(valid >> lane & 1) and flat < own[0] * own[1] * own[2]
                    rows[lane] = {
                        "exists": exists, "local": local, "group": gid, "size": size, "own": own, "groups": groups,
                        "items": items, "global": [g * s + x for g, s, x in zip(gid, size, local)], "lanes": lanes,
                        "wave_in_group": int(wave["index_in_workgroup"]),
                    }
                out[int(wave["id"])] = rows
    return out


def _values(s, wave_id, expression):
    return [r["value"] for r in lane_values(s, expression, wave_id=wave_id)]


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_coordinates_per_lane_follow_the_manifest(dump):
    manifest = json.loads((dump / "manifest.json").read_text())
    s = Session.open(str(dump))
    for wave_id, rows in _geometry(manifest).items():
        lanes = [rows[lane] for lane in sorted(rows)]

        def expect(pick):
            return [str(pick(r)) if r["exists"] else "<unavailable>" for r in lanes]

        def everywhere(pick):
            return [str(pick(r)) for r in lanes]

        assert _values(s, wave_id, "threadIdx.x") == expect(lambda r: r["local"][0])
        assert _values(s, wave_id, "threadIdx.y") == expect(lambda r: r["local"][1])
        assert _values(s, wave_id, "get_local_id(0)") == expect(lambda r: r["local"][0])
        assert _values(s, wave_id, "get_global_id(0)") == expect(lambda r: r["global"][0])
        assert _values(s, wave_id, "blockIdx.x") == everywhere(lambda r: r["group"][0])
        assert _values(s, wave_id, "get_group_id(1)") == everywhere(lambda r: r["group"][1])
        assert _values(s, wave_id, "blockDim.x") == everywhere(lambda r: r["size"][0])
        assert _values(s, wave_id, "get_local_size(0)") == everywhere(lambda r: r["own"][0])
        assert _values(s, wave_id, "gridDim.x") == everywhere(lambda r: r["groups"][0])
        assert _values(s, wave_id, "get_num_groups(0)") == everywhere(lambda r: r["groups"][0])
        assert _values(s, wave_id, "get_global_size(0)") == everywhere(lambda r: r["items"][0])
        assert _values(s, wave_id, "$_lane") == [str(lane) for lane in range(len(lanes))]


@pytest.mark.parametrize("dump", [EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0",
                                  EXAMPLES / "cuda" / "dumps" / "lds_tiles.sm_90.G",
                                  EXAMPLES / "opencl" / "dumps" / "lds_tiles.tgllp"],
                         ids=lambda p: p.parent.parent.name + "/" + p.name)
def test_whole_objects_and_convenience_variables_print_as_the_debuggers_do(dump):
    manifest = json.loads((dump / "manifest.json").read_text())
    s = Session.open(str(dump))
    wave_id = int(manifest["dispatches"][0]["workgroups"][0]["waves"][-1]["id"])
    lane = 5
    r = _geometry(manifest)[wave_id][lane]
    x, y, z = r["local"]
    g = r["group"]

    def value(expression):
        return _values(s, wave_id, expression)[lane]

    assert value("threadIdx") == f"{{x = {x}, y = {y}, z = {z}}}"  # cuda-gdb: $1 = {x = 1, y = 0, z = 0}
    assert value("blockDim") == "{x = %d, y = %d, z = %d}" % tuple(r["size"])
    assert value("warpSize") == str(r["lanes"])
    assert value("$_lane_workgroup_pos") == f'"[{x},{y},{z}]"'  # ROCgdb: "[x,y,z]"
    assert value("$_dispatch_pos") == f'"({g[0]},{g[1]},{g[2]})/{r["wave_in_group"]}"'  # "(x,y,z)/w"
    assert value("$_thread_workgroup_pos") == str(r["wave_in_group"])
    assert value("$_workitem_local_id") == f"{{{x}, {y}, {z}}}"  # gdb-oneapi: {x, y, z}
    gx, gy, gz = r["global"]
    assert value("$_workitem_global_id") == f"{{{gx}, {gy}, {gz}}}"
    assert value("$_thread_workgroup") == f"{{{g[0]}, {g[1]}, {g[2]}}}"
    assert value("$_workitem_local_id[1]") == str(y)
    assert value("threadIdx.x + blockIdx.x * blockDim.x") == str(gx)


def test_a_program_variable_wins_over_a_builtin():
    """divergent_call's clang-15 gfx940 build defines its own `warpSize` (hip_builtins' constexpr int):
    the program's, a `const int`, is what an expression reads."""
    s = Session.open(str(EXAMPLES / "divergent_call" / "dumps" / "clang15.gfx940.O0"))
    row = lane_values(s, "warpSize", wave_id=s.wave().id)[0]
    assert row["type"] == "const int" and row["value"] == "64"


def test_the_kernel_s_own_arithmetic_agrees():
    """lds_tiles computes tx = threadIdx.x, ty = threadIdx.y; divergent_call gid = blockIdx.x *
    blockDim.x + threadIdx.x: the builtins give every lane the numbers the kernel computed itself."""
    s = Session.open(str(EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"))
    for wave in s.state.waves:
        assert _values(s, wave.id, "tx == threadIdx.x && ty == threadIdx.y") == ["1"] * wave.lanes
    s = Session.open(str(EXAMPLES / "cuda" / "dumps" / "divergent_call.sm_90.G"))
    wave = s.wave()
    rows = lane_values(s, "gid == blockIdx.x * blockDim.x + threadIdx.x", wave_id=wave.id, frame_index=1)
    active = [r["value"] for r in rows if r["active"]]
    assert active and set(active) == {"1"}


HIP_COORDINATES = [d for d in DUMPS if d.parent.parent.name in ("lds_tiles", "scratch_struct", "divergent_call",
                                                                  "shared_callee")]


@pytest.mark.parametrize("dump", HIP_COORDINATES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_hip_coordinate_objects_show_the_lane_s_coordinates(dump):
    """Globals, hover and Watch: HIP's threadIdx objects (empty structs in the DWARF) are never `{}`."""
    client, stopped = launched(dump)
    try:
        frames = client.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        scopes = client.request("scopes", {"frameId": frames[0]["id"]})["scopes"]
        shown = []
        for scope in scopes:
            if scope["name"] in ("Globals", "Locals", "Arguments", "Shared"):
                shown += client.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]
        assert not [v for v in shown if v["value"] == "{}"], shown
        for v in shown:
            name = v["name"]
            if name.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
                answer = client.request("evaluate", {"expression": name, "frameId": frames[0]["id"],
                                                     "context": "hover"})
                assert answer["result"] == v["value"]
        hover = client.request("evaluate", {"expression": "threadIdx.x", "frameId": frames[0]["id"],
                                            "context": "hover"})
        assert hover["result"].isdigit()
    finally:
        client.close()


def test_hip_globals_name_what_they_stand_for():
    s = Session.open(str(EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"))
    frame = s.frames()[0]
    kinds = [s.coordinate_global(frame, g) for g in s.globals(frame)]
    assert ("threadIdx", None) in kinds and ("threadIdx", "x") in kinds and ("gridDim", "x") in kinds
    assert os.path.isdir(EXAMPLES / "lds_tiles")
