"""The example dumps, checked against small Python models of the example kernels.

Every variable in scope at each dumped PC is looked up through the DWARF index, its location
evaluated by the engine over the dump, and the formatted value compared, for every valid lane,
with what the kernel's source computes for the documented inputs. The models here are written
from the .hip sources and the inputs in the READMEs, independently of examples/dumpgen.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.amdgpu.adapter import AmdgpuAdapter
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.asm import encode_uleb
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.index import ConstValue, DwarfIndex
from aspace_dap.dwarf.locations import (CompositeLocation, ImplicitLocation, Location, MemoryLocation,
                                        RegisterLocation)
from aspace_dap.dwarf.ops import read_sleb
from aspace_dap.dwarf.target import FrameContext
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.values.format import format_obj
from aspace_dap.values.objects import Obj
from dap_client import launched

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
OPTIMIZED_OUT = "<optimized out>"


# --- formatting of model values, GDB style ------------------------------------------------


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def show_float(x: float) -> str:
    return f"{f32(x):.9g}"  # GDB prints a float with 9 significant digits


def show_array(items: list[str]) -> str:
    out, i = [], 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[i]:
            j += 1
        run = j - i + 1
        out.extend([f"{items[i]} <repeats {run} times>"] if run > 10 else items[i:j + 1])  # GDB: reps > 10
        i = j + 1
    return "{" + ", ".join(out) + "}"


def show_floats(values) -> str:
    return show_array([show_float(v) for v in values])


# --- reading a dump through the engine ------------------------------------------------------


def read_repo_source(path: str) -> str | None:
    file = EXAMPLES.parent / path
    return file.read_text() if file.is_file() else None


class DumpView:
    def __init__(self, folder: Path):
        self.state = load_state(folder)
        ref = self.state.code_objects[0]
        (self.code_object,) = load_code_objects(self.state.root / ref.path)
        self.index = DwarfIndex(self.code_object.elf, e_machine=self.code_object.e_machine)
        self.adapter = AmdgpuAdapter()
        # variables whose DWARF address is a placeholder: placed from the kernel's ISA (the dump
        # generator put their bytes where the objdump listing says, independently)
        self.layout = self.adapter.static_layout(self.code_object, self.index, read_repo_source)

    def frame(self, pc: int):
        return self.index.frames_at(pc)[0]

    def variables(self, pc: int) -> dict[str, object]:
        frame = self.frame(pc)
        out = {}
        for var in self.index.variables(frame, pc):
            if not var.shadowed:
                assert var.name not in out, f"two {var.name} in scope"
                out[var.name] = var
        return out

    isa_frame_base_zero = False

    def location(self, wave, pc: int, var, lanes):
        """(lanes, Location) groups, or None when the variable is optimized out at pc."""
        frame = self.frame(pc)
        expr = var.location_at(pc)
        if expr is None:
            return None
        placement = self.adapter.static_placement(self.layout, var)
        if placement is not None:
            assert placement.offset is not None, (var.name, placement.why)
            # the examples speak the upstream dialect: constu N; lit2; swap; xderef (2 = local)
            expr = bytes([0x10, *encode_uleb(placement.offset), 0x32, 0x16, 0x18])
        if self.isa_frame_base_zero and frame.frame_base_expr is None and expr[:1] == b"\x91":
            # no DW_AT_frame_base: the kernel's ISA addresses its stack from scratch offset 0,
            # so DW_OP_fbreg N means private address N (upstream xderef space 1)
            offset = read_sleb(expr, 1, len(expr), 0)[0]
            expr = bytes([0x10, *encode_uleb(offset), 0x31, 0x16, 0x18])
        assert not isinstance(expr, ConstValue)
        target = self.adapter.wave_target(self.state, wave, frame.dialect)
        ctx = FrameContext(pc=pc, frame_base_expr=frame.frame_base_expr,
                           addrx=lambda i: self.index.addr_index(frame.cu_offset, i))
        result = evaluate(expr, target, frame.dialect, lanes, frame=ctx)
        assert not result.errors, result.errors
        return target, result

    def shown(self, wave, pc: int, var, lanes) -> dict[int, str]:
        """The formatted value for each lane, read lane-wide like the debugger does."""
        got = self.location(wave, pc, var, lanes)
        if got is None:
            return {int(lane): OPTIMIZED_OUT for lane in lanes}
        target, result = got
        out = {}
        for glanes, entry in result.groups:
            if not isinstance(entry, Location):  # DW_OP_stack_value
                raw = entry.as_bytes()[0].tobytes()[: var.type.size]
                text = format_obj(Obj.from_bytes(var.type, raw, glanes[:1]), 0)
                out.update((int(lane), text) for lane in glanes)
                continue
            place = entry.primary
            if isinstance(place, MemoryLocation) and place.space.scope == "workgroup" and \
                    len(set(place.address.tolist())) == 1:
                # every lane names the same workgroup memory: one read shows them all
                text = format_obj(Obj.from_location(var.type, entry.take(np.array([0])), target, glanes[:1]), 0)
                out.update((int(lane), text) for lane in glanes)
                continue
            for i, lane in enumerate(glanes):
                one = np.array([i])
                out[int(lane)] = format_obj(Obj.from_location(var.type, entry.take(one), target, glanes[one]), 0)
        return out

    def place(self, wave, pc: int, var, lane: int) -> str:
        """Where the location puts the lane's value: an address space name or a register name."""
        got = self.location(wave, pc, var, [lane])
        if got is None:
            return OPTIMIZED_OUT
        entry = got[1].for_lane(lane)
        if not isinstance(entry, Location):
            return "value"
        place = entry.primary
        if isinstance(place, CompositeLocation):
            return "composite"
        if isinstance(place, MemoryLocation):
            return place.space.name
        assert isinstance(place, RegisterLocation)
        return place.register.name

    def close(self):
        self.state.close()


def check_dump(view: DumpView, expected_for, places: dict[str, str]) -> None:
    """Every valid lane of every wave shows the model's values; locations land where expected."""
    for wave in view.state.dispatches[0].waves:
        pc = wave.pc
        variables = view.variables(pc)
        lanes = np.nonzero(wave.valid_lanes)[0]
        expected = {int(lane): expected_for(wave, int(lane)) for lane in lanes}
        for lane in lanes:
            assert set(variables) == set(expected[int(lane)]), (wave.id, sorted(variables))
        for name, var in variables.items():
            shown = view.shown(wave, pc, var, lanes)
            for lane in lanes:
                assert shown[int(lane)] == expected[int(lane)][name], (wave.id, int(lane), name)
        for name, var in variables.items():
            assert view.place(wave, pc, var, int(lanes[-1])) == places.get(name, OPTIMIZED_OUT), name


@pytest.fixture
def open_dump():
    views = []

    def opener(example: str, build: str) -> DumpView:
        view = DumpView(EXAMPLES / example / "dumps" / build)
        views.append(view)
        return view

    yield opener
    for v in views:
        v.close()


# --- lds_tiles ------------------------------------------------------------------------------

TILE, ROWS, COLS, BX, BY = 16, 20, 32, 1, 1
LDS_IN, LDS_OUT, LDS_SUMS = 0x7F0000100000, 0x7F0000200000, 0x7F0000300000


def lds_tiles_block():
    """tile and row_sums of block (1, 1) after the second __syncthreads()."""
    tile = [[0.0] * (TILE + 1) for _ in range(TILE)]
    for ty in range(TILE):
        for tx in range(TILE):
            row, col = BY * TILE + ty, BX * TILE + tx
            tile[ty][tx] = 0.5 * (row * COLS + col) if row < ROWS and col < COLS else 0.0
    sums = []
    for ty in range(TILE):
        acc = 0.0
        for k in range(TILE):
            acc = f32(acc + tile[ty][k])
        sums.append(acc)
    return tile, sums


def lds_tiles_expected(opt: str, arch: str):
    tile, sums = lds_tiles_block()
    tile_text = show_array([show_floats(row) for row in tile])
    row_sums_text = show_floats(sums)

    def expected(wave, lane):
        flat = wave.index_in_workgroup * wave.lanes + lane
        tx, ty = flat % TILE, flat // TILE
        col, row = BX * TILE + tx, BY * TILE + ty
        live = {
            "tile": tile_text, "row_sums": row_sums_text, "tx": str(tx), "ty": str(ty), "col": str(col),
            "row": str(row), "value": show_float(tile[ty][tx]), "out_col": str(BY * TILE + tx),
            "out_row": str(BX * TILE + ty), "in": f"(const float *) 0x{LDS_IN:x}",
            "out": f"(float *) 0x{LDS_OUT:x}", "tile_sums": f"(float *) 0x{LDS_SUMS:x}", "rows": str(ROWS),
            "cols": str(COLS)}
        if opt == "O2":  # what the -O2 loclists still cover at line 38
            kept = {"gfx90a": {"tile", "row_sums", "tx", "ty", "out_col", "out_row"},
                    "gfx1030": {"tile", "row_sums", "out_col", "out_row"},
                    "clang19.gfx90a": {"tile", "row_sums", "tx", "ty", "out_col", "out_row"}}[arch]
            live = {k: (v if k in kept else OPTIMIZED_OUT) for k, v in live.items()}
        return live

    return expected, sums


LDS_PLACES = {
    "O0": {"tile": "local", "row_sums": "local", "in": "private_lane", "out": "private_lane",
           "tile_sums": "private_lane", "rows": "private_lane", "cols": "private_lane", "tx": "private_lane",
           "ty": "private_lane", "col": "private_lane", "row": "private_lane", "value": "private_lane",
           "out_col": "private_lane", "out_row": "private_lane"},
    ("O2", "gfx90a"): {"tile": "local", "row_sums": "local", "tx": "v1", "ty": "v2", "out_col": "v0", "out_row": "v3"},
    ("O2", "gfx1030"): {"tile": "local", "row_sums": "local", "out_col": "v2", "out_row": "v3"},
    # clang-19 at 0x1b8c: v1/v2 split from the packed ids at entry, v0/v4 set by lines 35/36
    ("O2", "clang19.gfx90a"): {"tile": "local", "row_sums": "local", "tx": "v1", "ty": "v2", "out_col": "v0",
                               "out_row": "v4"},
}


@pytest.mark.parametrize("arch,opt", [("gfx90a", "O0"), ("gfx90a", "O2"), ("gfx1030", "O0"), ("gfx1030", "O2"),
                                      ("clang19.gfx90a", "O2")])
def test_lds_tiles_dump(open_dump, arch, opt):
    view = open_dump("lds_tiles", f"{arch}.{opt}")
    lanes = 32 if arch.endswith("gfx1030") else 64
    state = view.state
    assert state.target.lanes == lanes and state.target.processor == arch.split(".")[-1]
    waves = state.dispatches[0].waves
    assert len(waves) == TILE * TILE // lanes
    expected, sums = lds_tiles_expected(opt, arch)
    for wave in waves:
        assert view.index.line_for_pc(wave.pc).line == 38
        flat = wave.index_in_workgroup * lanes + np.arange(lanes)
        # the if at line 37: out_row = 16 + ty < cols always, out_col = 16 + tx < rows for tx < 4
        assert list(wave.exec_mask) == list((BY * TILE + flat % TILE) < ROWS)
    check_dump(view, expected, LDS_PLACES.get("O0" if opt == "O0" else (opt, arch)))
    # the real row_sums sits where the ISA writes it (ds_write_b32 ... offset:1088)
    lds = state.dispatches[0].workgroups[0].lds
    data, valid = lds.read(TILE * (TILE + 1) * 4, 4 * TILE)
    assert valid.all() and list(np.frombuffer(data.tobytes(), "<f4")) == sums
    # stores other workgroups made to `out` are unknown: the buffer reads as unavailable
    _, valid = state.memory["global"].read(LDS_OUT, 4)
    assert not valid.any()
    focus = state.focus
    focus_wave = state.wave_by_id(focus.wave)
    assert focus.lane != 0 and focus_wave.active_lanes[focus.lane]


# --- scratch_struct ---------------------------------------------------------------------------

SS_N, SS_BLOCK, SS_GROUP = 100, 64, 1
SS_STATE, SS_PROBE, SS_OUT = 0x7F0000100000, 0x7F0000200000, 0x7F0000300000


def scratch_struct_item(gid: int, tid: int) -> dict[str, str]:
    """integrate() at line 55 with dt = 0; values as a debugger prints them."""
    shown = {"state": f"(const float *) 0x{SS_STATE:x}", "probe": f"(const int *) 0x{SS_PROBE:x}",
             "out": f"(float *) 0x{SS_OUT:x}", "n": str(SS_N), "dt": "0", "gid": str(gid)}
    if gid >= SS_N:  # returned early: nothing else was ever stored for this lane
        zeros = "{0, 0, 0}"
        shown.update(p=f"{{pos = {zeros}, vel = {zeros}, force = {zeros}, mass = 0, id = 0, flags = 0, "
                       f"neighbors = {{0, 0, 0, 0, 0, 0}}}}", history="{0 <repeats 24 times>}", damping="0",
                     pick="0", step="0", axis="0", neighbor="0", sample="0")
        return shown
    pos = [float(gid % 5 + k) for k in range(3)]
    vel = [0.5 * (k + 1) for k in range(3)]
    force = [f32(-0.1 * f32(x)) for x in pos]
    mass = 1.0 + (gid & 7)
    damping = f32(1.0 - f32(0.01 * (tid % 8)))
    for _ in range(24):
        vel = [f32(v * damping) for v in vel]  # dt = 0: the force term adds zero and pos stays
    history = [f32(pos[0] + pos[1] + pos[2])] * 24
    neighbors = [(gid + 7 * j) % SS_N for j in range(1, 7)]
    pick = gid % 24 | (gid % 6) << 8 | (gid % 3) << 16
    step, axis, neighbor = (pick & 0xFFFF) % 24, (pick >> 16) % 3, neighbors[(pick >> 8) % 6]
    shown.update(
        p=f"{{pos = {show_floats(pos)}, vel = {show_floats(vel)}, force = {show_floats(force)}, "
          f"mass = {show_float(mass)}, id = {gid}, flags = {tid & 3}, neighbors = {{{', '.join(map(str, neighbors))}}}}}",
        history=show_floats(history), damping=show_float(damping), pick=str(pick), step=str(step),
        axis=str(axis), neighbor=str(neighbor), sample=show_float(history[step] + pos[axis]))
    return shown


SS_PLACES = {
    "O0": dict.fromkeys(["state", "probe", "out", "n", "dt", "gid", "p", "history", "damping", "pick", "step",
                         "axis", "neighbor", "sample"], "private_lane"),
    "O2": {"p": "private_lane", "history": "private_lane", "gid": "v6", "pick": "v7", "neighbor": "v10",
           "sample": "v0"},
}


@pytest.mark.parametrize("build,opt", [("gfx90a", "O0"), ("gfx90a", "O2"), ("clang19.gfx90a", "O0")])
def test_scratch_struct_dump(open_dump, build, opt):
    view = open_dump("scratch_struct", f"{build}.{opt}")
    view.isa_frame_base_zero = opt == "O2"
    (wave,) = view.state.dispatches[0].waves
    gids = SS_GROUP * SS_BLOCK + np.arange(64)
    assert list(wave.exec_mask) == list(gids < SS_N)
    assert view.index.line_for_pc(wave.pc).line == 55

    def expected(wave, lane):
        shown = scratch_struct_item(SS_GROUP * SS_BLOCK + lane, lane)
        if opt == "O2":
            kept = {"p", "history", "gid", "pick", "neighbor", "sample"}
            shown = {k: (v if k in kept else OPTIMIZED_OUT) for k, v in shown.items()}
        return shown

    check_dump(view, expected, SS_PLACES[opt])


def test_scratch_struct_clang19_o2_dump(open_dump):
    """clang-19 -O2 at line 55 (0x23c4, after `v_add_f32 v0, v3, v4` computed sample): history stays
    in scratch at 80, p is described only by pieces (40 bytes undefined, then id in v6, nothing
    after): its other members are optimized out even though the ISA stored most of them."""
    view = open_dump("scratch_struct", "clang19.gfx90a.O2")
    view.isa_frame_base_zero = True
    (wave,) = view.state.dispatches[0].waves
    assert wave.pc == 0x23C4 and view.index.line_for_pc(wave.pc).line == 55
    gids = SS_GROUP * SS_BLOCK + np.arange(64)
    assert list(wave.exec_mask) == list(gids < SS_N)
    out3, out6 = ", ".join([OPTIMIZED_OUT] * 3), ", ".join([OPTIMIZED_OUT] * 6)

    def p_text(gid: int) -> str:
        return (f"{{pos = {{{out3}}}, vel = {{{out3}}}, force = {{{out3}}}, mass = {OPTIMIZED_OUT}, id = {gid}, "
                f"flags = {OPTIMIZED_OUT}, neighbors = {{{out6}}}}}")

    def expected(wave, lane):
        gid = SS_GROUP * SS_BLOCK + lane
        shown = dict.fromkeys(["state", "probe", "out", "n", "dt", "damping", "axis", "step"], OPTIMIZED_OUT)
        model = scratch_struct_item(gid, lane)
        shown.update(gid=str(gid), p=p_text(gid), history=model["history"])
        if gid < SS_N:
            shown.update(pick=model["pick"], neighbor=model["neighbor"], sample=model["sample"])
        else:  # returned early: v7/v19 never written (0 in the dump); v0 still the work-item id
            shown.update(pick="0", neighbor="0", sample=show_float(struct.unpack("<f", struct.pack("<I", lane))[0]))
        return shown

    check_dump(view, expected, {"history": "private_lane", "p": "composite", "gid": "v6", "pick": "v7",
                                "neighbor": "v19", "sample": "v0"})


def test_make_dumps_check_passes():
    done = subprocess.run([sys.executable, str(EXAMPLES / "make_dumps.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- divergent_call ---------------------------------------------------------------------------

DC_N, DC_BLOCK, DC_GROUP, DC_WAVE = 360, 256, 1, 1
DC_IN, DC_OUT = 0x7F0000100000, 0x7F0000200000
DC_STOP = {"O0": (0x329C, 12), "O2": (0x1704, 11)}  # settle: line 12 in the third iteration / line 11 on entry
DC_RETURN = {"O0": 0x3DA4, "O2": 0x18E4}  # after the kernel's s_swappc_b64 s[30:31] at line 25
DC_ITERATION = 2  # -O0: settle's loop is at i = 2
UNAVAILABLE = "<unavailable>"


def dc_lane(lane: int, lanes: int = 64, wave: int = DC_WAVE) -> dict:
    """divergent() for one lane of the dumped wave, from the .hip source and the README's inputs
    (warpSize = `lanes`)."""
    tid = wave * lanes + lane
    gid = DC_GROUP * DC_BLOCK + tid
    x = ((gid % 13) - 6) * 0.25 if gid < DC_N else 0.0  # dyadic inputs: every float op is exact
    item = {"gid": gid, "lane": tid % lanes, "x": x, "odd": tid % lanes % 2 == 1}
    if item["odd"]:
        item["steps"] = item["lane"] % 5 + 1
        done = min(DC_ITERATION, item["steps"])
        acc = x
        for i in range(done):
            acc = acc * 0.5 + (item["lane"] + i)
        item.update(done=done, acc=acc)
    else:
        result = -x  # -0.0 when x is 0 and the loop does not run
        for i in range(item["lane"] % 7):
            result += i * x
        item["result"] = result
    return item


def dc_settle_expected(opt: str):
    def expected(wave, lane):
        it = dc_lane(lane)
        if opt == "O0":
            if not it["odd"]:  # never called settle: its frame slots hold scratch nobody wrote (zero here)
                return dict.fromkeys(["x", "lane", "steps", "acc", "i"], "0")
            return {"x": show_float(it["x"]), "lane": str(it["lane"]), "steps": str(it["steps"]),
                    "acc": show_float(it["acc"]), "i": str(it["done"])}
        if it["odd"]:  # on entry: the arguments in v0..v2, acc = x, i = 0 from the debug info
            return {"x": show_float(it["x"]), "lane": str(it["lane"]), "steps": str(it["steps"]),
                    "acc": show_float(it["x"]), "i": "0"}
        # even lanes wait in the kernel: v0 = threadIdx.x & 1, v1 = lane, v2 = low half of &in[gid]
        # (lanes that loaded x; the others never wrote v2)
        address = (DC_IN + 4 * it["gid"]) & 0xFFFFFFFF if it["gid"] < DC_N else 0
        return {"x": "0", "lane": str(it["lane"]), "steps": str(address), "acc": "0", "i": "0"}

    return expected


DC_PLACES = {"O0": dict.fromkeys(["x", "lane", "steps", "acc", "i"], "private_lane"),
             "O2": {"x": "v0", "lane": "v1", "steps": "v2", "acc": "v0"}}


def dc_kernel_expected(opt: str, lane: int) -> dict[str, str]:
    """The caller frame (divergent at line 25) as a debugger must show it for one lane."""
    it = dc_lane(lane)
    if opt == "O2":
        # gid, x and steps were in v4, v3, v2 at the call: VGPR0-31 are the callee's to clobber
        # (settle did overwrite v2 and v3), and there is no CFI to say otherwise
        shown = dict.fromkeys(["gid", "x", "steps"], UNAVAILABLE)
        shown.update(dict.fromkeys(["in", "out", "n", "lane", "result"], OPTIMIZED_OUT))
        return shown
    return {"in": f"(const float *) 0x{DC_IN:x}", "out": f"(float *) 0x{DC_OUT:x}", "n": str(DC_N),
            "gid": str(it["gid"]), "lane": str(it["lane"]), "x": show_float(it["x"]),
            # odd lanes assign result after the call; even lanes ran the else branch first (-O0 order)
            "result": show_float(it["result"]) if not it["odd"] else "0",
            "steps": str(it["steps"]) if it["odd"] else "0"}


def _lane_pc_attributes(code_object) -> set:
    found = set()
    for cu in code_object.elf.get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            found.update(a for a in die.attributes if a in (0x3E0B, 0x3E12) or "lane_pc" in str(a).lower())
    return found


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_divergent_call_settle_frame(open_dump, opt):
    view = open_dump("divergent_call", f"gfx90a.{opt}")
    (wave,) = view.state.dispatches[0].waves
    pc, line = DC_STOP[opt]
    assert wave.pc == pc and view.index.line_for_pc(pc).line == line
    assert view.frame(pc).function == "settle"
    items = [dc_lane(lane) for lane in range(64)]
    active = [it["odd"] and (opt == "O2" or it["steps"] > DC_ITERATION) for it in items]
    assert list(wave.exec_mask) == active
    variables = view.variables(pc)
    assert set(variables) == {"x", "lane", "steps", "acc", "i"}
    expected = dc_settle_expected(opt)
    lanes = np.arange(64)
    for name, var in variables.items():
        shown = view.shown(wave, pc, var, lanes)
        assert {lane: shown[lane] for lane in range(64)} == {lane: expected(wave, lane)[name] for lane in range(64)}, name
        if name in DC_PLACES[opt]:
            assert view.place(wave, pc, var, 63) == DC_PLACES[opt][name], name
        else:  # -O2 i: DW_OP_consts 0, DW_OP_stack_value
            assert isinstance(view.location(wave, pc, var, [63])[1].for_lane(63).primary, ImplicitLocation)
    focus = view.state.focus
    assert focus.lane != 0 and wave.active_lanes[focus.lane]


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_divergent_call_lane_pc_is_absent(open_dump, opt):
    """Upstream clang emits no DW_AT_LLVM_lane_pc: inactive lanes are shown at the wave's PC."""
    view = open_dump("divergent_call", f"gfx90a.{opt}")
    assert _lane_pc_attributes(view.code_object) == set()
    (wave,) = view.state.dispatches[0].waves
    assert all(f.lane_pc_expr is None for f in view.index.frames_at(wave.pc))
    session = Session(view.state)
    assert {session.lane_pc(wave, lane) for lane in range(64)} == {wave.pc}


def _shown(session, frame, var, lane: int) -> str:
    read = session.read_variable(frame, var, [lane])
    if lane in read.errors:
        return read.errors[lane]
    obj = read.obj_for(lane)
    assert obj is not None, (frame.name, var.name, lane)
    return format_obj(obj, 0)


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_divergent_call_two_frames(open_dump, opt):
    """Every lane, active or not, sees settle called from divergent at line 25 with its own variables."""
    view = open_dump("divergent_call", f"gfx90a.{opt}")
    (wave,) = view.state.dispatches[0].waves
    session = Session(view.state)
    settle_expected = dc_settle_expected(opt)
    for lane in range(64):
        frames = session.frames(wave.id, lane)
        assert [f.name for f in frames] == ["settle", "divergent"], (lane, session.warnings)
        inner, caller = frames
        assert inner.runtime_pc == wave.pc and inner.line == DC_STOP[opt][1]
        assert caller.runtime_pc == DC_RETURN[opt] and caller.line == 25, lane
        got = {v.name: _shown(session, inner, v, lane) for v in session.variables(inner) if not v.shadowed}
        want = settle_expected(wave, lane)
        if opt == "O2":  # a DW_OP_stack_value constant is the DWARF's own; the session reads locations only
            got.pop("i", None), want.pop("i")
        assert got == want, lane
        got = {v.name: _shown(session, caller, v, lane) for v in session.variables(caller) if not v.shadowed}
        assert got == dc_kernel_expected(opt, lane), lane


# --- divergent_call, clang-19 -O0 for four targets -----------------------------------------
# From each object's disassembly (examples/divergent_call/divergent_call.clang19.<arch>.O0.co.s.txt):
# the first instruction of line 12 in settle, and the instruction after the kernel's
# `s_swappc_b64 s[30:31]` at line 25. wave32 targets dump wave 3 (threadIdx.x 96..127): lanes 0..7
# have gid < n. Registers and scratch come from the ISA (see the example README); the
# expectations below come from the source and the inputs only.
DC19 = {"gfx90a": (64, 1, 0x3BFC, 0x4A18), "gfx942": (64, 1, 0x1DE4, 0x2B34),
        "gfx1030": (32, 3, 0x3888, 0x460C), "gfx1100": (32, 3, 0x1D40, 0x295C)}
# clang-15 -O0 (divergent_call.clang15.<arch>.O0.co.s.txt): the same line 12 and line 25 points; the
# kernel's s33 comes back from lane 14 (wave64) / 7 (wave32) of v15, where settle's prologue put it
DC_O0_OTHER = {**{f"clang19.{arch}": v for arch, v in DC19.items()},
               "clang15.gfx940": (64, 1, 0x19E8, 0x23C0), "clang15.gfx1030": (32, 3, 0x19B8, 0x2448),
               "clang15.gfx1100": (32, 3, 0x1970, 0x2224)}


def dc19_expected(lane: int, lanes: int, wave: int) -> tuple[dict, dict]:
    """(settle's variables, divergent's variables) for one lane, as a debugger must show them."""
    it = dc_lane(lane, lanes, wave)
    if it["odd"]:
        settle = {"x": show_float(it["x"]), "lane": str(it["lane"]), "steps": str(it["steps"]),
                  "acc": show_float(it["acc"]), "i": str(it["done"])}
    else:  # never called settle: its frame slots hold scratch nobody wrote (zero in the dump)
        settle = dict.fromkeys(["x", "lane", "steps", "acc", "i"], "0")
    kernel = {"in": f"(const float *) 0x{DC_IN:x}", "out": f"(float *) 0x{DC_OUT:x}", "n": str(DC_N),
              "gid": str(it["gid"]), "lane": str(it["lane"]), "x": show_float(it["x"]),
              "result": show_float(it["result"]) if not it["odd"] else "0",
              "steps": str(it["steps"]) if it["odd"] else "0"}
    return settle, kernel


@pytest.mark.parametrize("build", sorted(DC_O0_OTHER))
def test_divergent_call_o0_frames(open_dump, build):
    """Both frames, every lane: the caller's frame pointer comes back from settle's SGPR copy
    (clang-19) or from the v15 lane its prologue wrote (clang-15)."""
    lanes, wave_index, stop, ret = DC_O0_OTHER[build]
    view = open_dump("divergent_call", f"{build}.O0")
    (wave,) = view.state.dispatches[0].waves
    assert view.state.target.lanes == lanes and wave.index_in_workgroup == wave_index
    assert wave.pc == stop and view.index.line_for_pc(stop).line == 12
    items = [dc_lane(lane, lanes, wave_index) for lane in range(lanes)]
    assert list(wave.exec_mask) == [it["odd"] and it["steps"] > DC_ITERATION for it in items]
    session = Session(view.state)
    for lane in range(lanes):
        frames = session.frames(wave.id, lane)
        assert [f.name for f in frames] == ["settle", "divergent"], (lane, session.warnings)
        inner, caller = frames
        assert caller.runtime_pc == ret and caller.line == 25 and caller.caller_state.how == "prologue analysis"
        settle, kernel = dc19_expected(lane, lanes, wave_index)
        got = {v.name: _shown(session, inner, v, lane) for v in session.variables(inner) if not v.shadowed}
        assert got == settle, (build, lane)
        got = {v.name: _shown(session, caller, v, lane) for v in session.variables(caller) if not v.shadowed}
        assert got == kernel, (build, lane)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_divergent_call_clang19_over_dap(arch):
    """The same caller frame through the real server, for a few lanes of a per-lane-stack target."""
    lanes, wave_index, _, ret = DC19[arch]
    c, stopped = launched(EXAMPLES / "divergent_call" / "dumps" / f"clang19.{arch}.O0")
    try:
        tid = stopped["threadId"]
        for lane in (7, 2, 9):
            c.request("setFocus", {"threadId": tid, "lane": lane})
            frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
            assert [f["name"].split("(")[0].strip() for f in frames][:2] == ["settle", "divergent"], frames
            assert frames[1]["line"] == 25
            shown = {}
            for scope in c.request("scopes", {"frameId": frames[1]["id"]})["scopes"]:
                if scope.get("expensive"):
                    continue
                for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    shown[v["name"]] = v["value"]
            _, kernel = dc19_expected(lane, lanes, wave_index)
            assert {k: shown.get(k) for k in kernel} == kernel, (arch, lane, shown)
    finally:
        c.close()


def test_lds_tiles_clang19_dump(open_dump):
    """clang-19 -O0 lds_tiles, every lane of every wave, through the session. Its DWARF gives
    both __shared__ arrays LDS address 0; the ISA puts row_sums at 0x440, and each array shows
    its own bytes from where the ISA places it."""
    view = open_dump("lds_tiles", "clang19.gfx90a.O0")
    expected, sums = lds_tiles_expected("O0", "gfx90a")
    tile, _ = lds_tiles_block()
    true_lds = {"tile": show_array([show_floats(row) for row in tile]), "row_sums": show_floats(sums)}
    session = Session(view.state)
    waves = view.state.dispatches[0].waves
    assert len(waves) == 4
    for wave in waves:
        assert view.index.line_for_pc(wave.pc).line == 38 and wave.pc == 0x52A8
        for lane in np.nonzero(wave.valid_lanes)[0]:
            (frame,) = session.frames(wave.id, int(lane))
            got = {v.name: _shown(session, frame, v, int(lane)) for v in session.variables(frame) if not v.shadowed}
            want = expected(wave, int(lane))
            for name in ("tile", "row_sums"):
                assert got.pop(name) == true_lds[name], name
                want.pop(name)
            assert got == want, (wave.id, int(lane))
    lds = view.state.dispatches[0].workgroups[0].lds
    data, valid = lds.read(TILE * (TILE + 1) * 4, 4 * TILE)
    assert valid.all() and list(np.frombuffer(data.tobytes(), "<f4")) == sums


# --- divergent_call -O2: clang-19 on four targets, clang-15 on gfx940/gfx1030/gfx1100 ---------------
# From each object's disassembly (divergent_call.<build>.O2.co.s.txt): settle's line 11 first
# instruction (where a function breakpoint lands), the instruction after the kernel's
# `s_swappc_b64 s[30:31]`, and what the kernel left in the even lanes' v0 and v2, which settle's
# DWARF names for x/acc and steps: "bit" = `v_and_b32 v0/v2, 1, v0` (0), "tid" = the hardware's
# work-item id (v0 was never written), "address" = the low half of &in[gid] (v2 for gid < n; lanes
# with gid >= n never wrote it: 0 in the dump).
DC_O2_OTHER = {
    "clang19.gfx90a": (64, 1, 0x1904, 0x1AD0, "bit", "address"),
    "clang19.gfx942": (64, 1, 0x1904, 0x1AB4, "bit", "address"),
    "clang19.gfx1030": (32, 3, 0x1908, 0x1AEC, "tid", "bit"),
    "clang19.gfx1100": (32, 3, 0x1908, 0x1AF4, "tid", "bit"),
    "clang15.gfx940": (64, 1, 0x1604, 0x17BC, "bit", "address"),
    "clang15.gfx1030": (32, 3, 0x1610, 0x17F0, "tid", "bit"),
    "clang15.gfx1100": (32, 3, 0x1610, 0x17F8, "tid", "bit"),
}


def dc_o2_expected(build: str, lane: int) -> tuple[dict, dict]:
    """(settle's variables, divergent's variables) at settle's entry, for one lane."""
    lanes, wave, _, _, even_v0, even_v2 = DC_O2_OTHER[build]
    it = dc_lane(lane, lanes, wave)
    if it["odd"]:  # the call's arguments in v0..v2; acc = x; i = 0 (a DW_OP_stack_value constant)
        settle = {"x": show_float(it["x"]), "lane": str(it["lane"]), "steps": str(it["steps"]),
                  "acc": show_float(it["x"]), "i": "0"}
    else:  # waiting in the kernel: settle's registers hold what the kernel left there
        v0 = 0 if even_v0 == "bit" else wave * lanes + lane
        x = show_float(struct.unpack("<f", struct.pack("<I", v0))[0])
        v2 = (DC_IN + 4 * it["gid"]) & 0xFFFFFFFF if even_v2 == "address" and it["gid"] < DC_N else 0
        settle = {"x": x, "lane": str(it["lane"]), "steps": str(v2), "acc": x, "i": "0"}
    # the caller: gid, x, steps were in v4, v3, v2 at the call; VGPRs 0-31 are the callee's to
    # clobber (settle's loop writes v2 and v3) and no CFI says otherwise; the rest has no location
    # there (wave32 builds keep no location for gid at all)
    kernel = dict.fromkeys(["in", "out", "n", "lane", "result"], OPTIMIZED_OUT)
    kernel.update(dict.fromkeys(["x", "steps"], UNAVAILABLE))
    kernel["gid"] = UNAVAILABLE if lanes == 64 else OPTIMIZED_OUT
    return settle, kernel


@pytest.mark.parametrize("build", sorted(DC_O2_OTHER))
def test_divergent_call_o2_frames(open_dump, build):
    """settle on entry and its caller, every lane of a wave64 or wave32 dump."""
    lanes, wave_index, stop, ret, _, _ = DC_O2_OTHER[build]
    view = open_dump("divergent_call", f"{build}.O2")
    (wave,) = view.state.dispatches[0].waves
    assert view.state.target.lanes == lanes and wave.lanes == lanes and wave.index_in_workgroup == wave_index
    assert wave.pc == stop and view.index.line_for_pc(stop).line == 11 and view.frame(stop).function == "settle"
    items = [dc_lane(lane, lanes, wave_index) for lane in range(lanes)]
    assert list(wave.exec_mask) == [it["odd"] for it in items]
    session = Session(view.state)
    for lane in range(lanes):
        frames = session.frames(wave.id, lane)
        assert [f.name for f in frames] == ["settle", "divergent"], (lane, session.warnings)
        inner, caller = frames
        assert caller.runtime_pc == ret and caller.line == 25, lane
        settle, kernel = dc_o2_expected(build, lane)
        got = {v.name: _shown(session, inner, v, lane) for v in session.variables(inner) if not v.shadowed}
        assert got == settle, (build, lane)
        got = {v.name: _shown(session, caller, v, lane) for v in session.variables(caller) if not v.shadowed}
        assert got == kernel, (build, lane)
