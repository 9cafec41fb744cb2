"""The CUDA example dumps through the real server: every variable in scope, several lanes, against the model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dap_client import REPO_ROOT, launched

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen.cuda_engine import LOCAL_WINDOW, call_return_address  # noqa: E402
from dumpgen.cuda_examples import ARCHES, SPECS  # noqa: E402

STATES = Path(REPO_ROOT) / "examples" / "cuda" / "dumps"
EXAMPLES = [(name, arch) for arch in ARCHES for name in sorted(SPECS)]


def start(dump_dir):
    return launched(dump_dir)


def frame_vars(c, tid):
    fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
    out = {}
    for scope in c.request("scopes", {"frameId": fid})["scopes"]:
        for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
            out[v["name"]] = v
    return fid, out


def children(c, var):
    return {v["name"]: v for v in c.request("variables", {"variablesReference": var["variablesReference"]})["variables"]}


def same(shown: str, expected) -> bool:
    shown = shown.split(") ", 1)[1] if shown.startswith("(") else shown  # "(T *) 0x..." pointers
    if isinstance(expected, float):
        return np.float32(float(shown.split()[0])) == np.float32(expected)
    return int(shown.split()[0], 0) == int(expected)


def check(c, var, expected, where):
    if isinstance(expected, dict):
        kids = children(c, var)
        for name, value in expected.items():
            check(c, kids[name], value, f"{where}.{name}")
    elif isinstance(expected, list):
        kids = list(children(c, var).values())
        assert len(kids) >= len(expected), where
        for i, value in enumerate(expected):
            check(c, kids[i], value, f"{where}[{i}]")
    else:
        assert same(var["value"], expected), f"{where}: shows {var['value']}, model {expected}"


@pytest.mark.parametrize("name,arch", EXAMPLES, ids=lambda v: v)
def test_every_variable_for_several_lanes(name, arch):
    spec = SPECS[name](arch)
    dump = STATES / spec.name
    c, stopped = start(dump)
    try:
        tid = stopped["threadId"]
        threads = c.request("threads")["threads"]
        assert any(t["name"].startswith("CUDA kernel 0 block (") for t in threads)
        top = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
        assert top["line"] == spec.line and top["source"]["path"].endswith(spec.file)
        shared = spec.shared() if spec.shared else {}
        warp = spec.warps[0]
        active = [lane for lane in range(32) if warp.active >> lane & 1]
        for lane in active[:: max(1, len(active) // 4)][:4]:
            focus = c.request("setFocus", {"threadId": tid, "lane": lane})
            assert focus["lane"] == lane and focus["active"]
            _, shown = frame_vars(c, tid)
            thread = (warp.index_in_workgroup * 32 + lane) % spec.block[0], \
                (warp.index_in_workgroup * 32 + lane) // spec.block[0], 0
            model = dict(spec.values(thread))
            model.update(shared)
            checked = 0
            for var, value in model.items():
                if var not in shown:
                    continue
                check(c, shown[var], value, f"{name} lane {lane} {var}")
                checked += 1
            assert checked >= min(4, len(model)), (sorted(shown), sorted(model))
        c.request("disconnect")
    finally:
        c.close()


@pytest.mark.parametrize("arch", ARCHES)
def test_generic_pointer_shows_its_resolved_space(arch):
    spec = SPECS["scratch_struct"](arch)
    c, stopped = start(STATES / spec.name)
    try:
        tid = stopped["threadId"]
        _, shown = frame_vars(c, tid)
        cursor = shown["cursor"]
        assert int(cursor["value"].split()[-1], 0) >= LOCAL_WINDOW
        kids = children(c, cursor)
        # the pointee is `p` itself, reached through the local window
        pointee = next(iter(kids.values()))
        p = children(c, shown["p"])
        assert children(c, pointee)["id"]["value"] == p["id"]["value"]
        c.request("disconnect")
    finally:
        c.close()


def test_lds_tiles_out_col_out_row_not_computed_yet():
    # sm_90, stopped at line 32: %r8/%r9 get their SASS registers only from line 34 on
    spec = SPECS["lds_tiles"]("sm_90")
    c, stopped = start(STATES / spec.name)
    try:
        _, shown = frame_vars(c, stopped["threadId"])
        assert shown["out_col"]["value"] == shown["out_row"]["value"] == "<unavailable>"
        c.request("disconnect")
    finally:
        c.close()


def _caller_steps_kept(spec) -> bool:
    """Whether the kernel keeps `steps` at the call to settle in a register settle preserves:
    the register map (where %r of `steps` lives at the CALL) and settle's CFI (same_value)."""
    import io

    from elftools.elf.elffile import ELFFile

    from aspace_dap.adapters.nvidia.cubin import LOC_REG, ptx_register_name, read_cubin_debug, relocate_cubin
    from aspace_dap.dwarf.cfi import CallFrameInfo
    from aspace_dap.dwarf.index import DwarfIndex
    from aspace_dap.dwarf.ops import decode

    image = relocate_cubin(spec.cubin.read_bytes())
    layout, regmap = read_cubin_debug(image)
    call = call_return_address(image, spec.caller) - 1
    kernel = layout.function_at(call)
    index = DwarfIndex(ELFFile(io.BytesIO(image)), load_bias=0, e_machine=190)
    frame = index.frames_at(call)[-1]
    steps = next(v for v in index.variables(frame, call) if v.name == "steps")
    (op,) = decode(steps.location_at(call), frame.dialect)
    places = regmap.places(kernel.name, ptx_register_name(op.operands[0]), call - kernel.start)
    if not places:
        return False
    settle = next(f for f in layout.functions if f.name == "_Z6settlefii")
    rules = CallFrameInfo(ELFFile(io.BytesIO(image)), e_machine=190).rules_at(settle.start)
    return all(p.kind == LOC_REG and rules.rule_for(LOC_REG << 24 | p.index).kind == "same_value" for p in places)


@pytest.mark.parametrize("arch", ARCHES)
def test_divergent_call_shows_settle_called_from_divergent_per_lane(arch):
    spec = SPECS["divergent_call"](arch)
    image = spec.cubin.read_bytes()
    from aspace_dap.adapters.nvidia.cubin import relocate_cubin
    return_pc = call_return_address(relocate_cubin(image), spec.caller)
    steps_kept = _caller_steps_kept(spec)
    c, stopped = start(STATES / spec.name)
    try:
        tid = stopped["threadId"]
        for lane in (1, 7, 13, 31):
            c.request("setFocus", {"threadId": tid, "lane": lane})
            frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
            assert [f["name"].split("(")[0] for f in frames[:2]] == ["settle", "divergent"], frames
            assert frames[1]["line"] == 21 and frames[1]["instructionPointerReference"] == hex(return_pc)
            shown = {}
            for scope in c.request("scopes", {"frameId": frames[1]["id"]})["scopes"]:
                for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    shown[v["name"]] = v
            model = spec.caller_values((lane, 0, 0))
            assert set(model) == {"gid", "lane", "x", "steps"}
            for name, value in model.items():
                if name == "steps" and not steps_kept:
                    # the register map gives it no place at the call: never guessed
                    assert shown["steps"]["value"] == "<optimized out>"
                    continue
                check(c, shown[name], value, f"caller lane {lane} {name}")
            callee = frame_vars(c, tid)[1]
            assert same(callee["lane"]["value"], lane) and same(callee["steps"]["value"], lane % 5 + 1)
        # an even lane never made the call: only its own frame
        c.request("setFocus", {"threadId": tid, "lane": 2})
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        assert len(frames) == 1
        c.request("disconnect")
    finally:
        c.close()


def test_sm_120_keeps_steps_at_the_call_and_older_sms_do_not():
    # what the three builds' register maps and CFI say, so both branches above are exercised
    assert [_caller_steps_kept(SPECS["divergent_call"](arch)) for arch in ARCHES] == [False, False, True]
