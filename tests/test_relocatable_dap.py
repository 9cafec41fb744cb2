"""A relocatable device object (`.o`) given as the launch's `codeObject` shows the same threads, frames and
variables (every lane, every frame) as the code object the linker made of it.

A dump names the code object it ran; here that file could not be kept (a placeholder stands in), and
the launch supplies the code: the linked object where the dump says it was loaded, or the `.o`, whose
code starts at its address 0, where the dump says its `.text` was loaded. The divergent_call builds
have real example dumps; the other examples get a synthetic wave per kernel and callee.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.state.sample import private_lanes, vgpr_values
from aspace_dap.state.writer import StateWriter
from dap_client import initialized, launched
from dwarfdump_listing import line_tables
from test_codeobj_relocatable import IDS, OBJECT, PAIRS, _patched, paths


ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PLACEHOLDER = b"the loaded code object was not kept\n"
REAL_DUMPS = {("divergent_call", "clang15.gfx1030.O0"), ("divergent_call", "clang19.gfx1100.O2")}


def everything_shown(c) -> dict:
    """Thread names, each frame's name and line, every variable of every frame as the Variables view
    shows it and, for those an expression can name, as every lane shows it."""
    out = {}
    for thread in c.request("threads")["threads"]:
        tid = thread["id"]
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        out[(tid, "name")] = thread["name"]
        out[(tid, "frames")] = [(f["name"], f.get("line")) for f in frames]
        for depth, frame in enumerate(frames):
            for scope in c.request("scopes", {"frameId": frame["id"]})["scopes"]:
                for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                    key = (tid, depth, scope["name"], v["name"])
                    out[key] = v["value"]
                    if v["name"].isidentifier() and scope["name"] != "Registers":
                        out[key + ("lanes",)] = c.request("laneValues", {
                            "threadId": tid, "frameId": frame["id"], "expression": v["name"]})["lanes"]
    return out


def shown_with(state: Path, code_object: Path) -> dict:
    c = initialized()
    try:
        seq = c.send("launch", {"state": str(state), "codeObject": str(code_object)})
        c.request("configurationDone")
        answer = c.wait_response(seq)
        assert answer["success"], answer.get("message")
        c.wait_event("stopped")
        shown = everything_shown(c)
        c.request("disconnect")
        return shown
    finally:
        c.close()


def kernel_descriptor(linked: Path) -> tuple[int, bytes]:
    """The linked object's kernel descriptor: its address in the object and its 64 bytes, which the
    runtime leaves in device memory where the code object is loaded."""
    elf = ELFFile(io.BytesIO(linked.read_bytes()))
    kd = next(s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name.endswith(".kd"))
    section = elf.get_section(kd["st_shndx"])
    start = kd["st_value"] - section["sh_addr"]
    return kd["st_value"], section.data()[start:start + 64]


def staged_copy(dump: Path, folder: Path, linked: Path) -> Path:
    """The dump with its code object's file lost, as a core whose code objects were not kept: the
    dispatch's kernel descriptor in global memory, at the linked object's load address."""
    shutil.copytree(dump, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (entry,) = manifest["code_objects"]
    (folder / entry["path"]).unlink()
    entry["path"] = "code/lost.co"
    (folder / entry["path"]).write_bytes(PLACEHOLDER)
    at, descriptor = kernel_descriptor(linked)
    at += int(entry["load_address"], 16)
    (folder / "mem" / "descriptor.bin").write_bytes(descriptor)
    manifest.setdefault("memory", []).append({"space": "global", "address": hex(at), "size": len(descriptor),
                                             "file": "mem/descriptor.bin", "file_offset": 0})
    for dispatch in manifest["dispatches"]:
        dispatch["kernel_descriptor"] = hex(at)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return folder


@pytest.mark.parametrize("example, build", sorted(REAL_DUMPS), ids=[f"{e}-{b}" for e, b in sorted(REAL_DUMPS)])
def test_example_dump_shows_the_same_with_the_object(tmp_path, example, build):
    obj, linked = paths(example, build)
    dump = EXAMPLES / example / "dumps" / build
    c, _ = launched(dump)
    try:
        from_dump = everything_shown(c)
        c.request("disconnect")
    finally:
        c.close()
    with_linked = shown_with(staged_copy(dump, tmp_path / "linked", linked), linked)
    with_object = shown_with(staged_copy(dump, tmp_path / "object", linked), obj)
    assert with_linked == from_dump
    assert with_object == from_dump
    frames = [v for k, v in from_dump.items() if k[1] == "frames"]
    assert frames and all(name for name, _ in frames[0])


def _symbols(path: Path) -> dict[str, tuple[int, int]]:
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    return {s.name: (s["st_value"], s["st_size"]) for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]}


def _kernel(path: Path) -> str:
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    return next(s.name[:-3] for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name.endswith(".kd"))


def synthetic_dump(folder: Path, linked: Path, load_address: int) -> Path:
    """A wave stopped mid-kernel, and one in each function the kernel calls: PCs at rows of llvm-dwarfdump's
    line table of the linked object, registers and scratch filled with known patterns."""
    from aspace_dap.codeobj import load_code_objects

    (co,) = load_code_objects(linked)
    lanes = co.wavefront_size
    (table,) = line_tables(linked.with_name(linked.name + ".dwarf.txt").read_text())
    rows = sorted({address for seq in table.sequences for address, line, _, end in seq if line and not end})
    kernel = _kernel(linked)
    functions = _symbols(linked)
    stops = []
    for name, (start, size) in sorted(functions.items(), key=lambda f: f[0] != kernel):
        inside = [pc for pc in rows if start <= pc < start + size]
        if inside and (name == kernel or not name.startswith("_ZN")):  # the kernel and its own callees
            stops.append(inside[len(inside) * 2 // 3])
    writer = StateWriter("amd", co.processor, lanes, apertures={"local": (0x1000000000000, 0x100000000),
                                                               "private": (0x2000000000000, 0x100000000)},
                         producer="aspace-dap test")
    writer.add_code_object(PLACEHOLDER, load_address=load_address, name="lost.co")
    registers = [("pc", 8), ("exec", lanes // 8)] + [(f"s{n}", 4) for n in range(106)] + \
        [(f"v{n}", 4 * lanes) for n in range(64)]
    layout = writer.add_register_layout("wave", registers)
    dispatch = writer.add_dispatch(kernel, 0, [4 * lanes, 1, 1], [2 * lanes, 1, 1])
    at, descriptor = kernel_descriptor(linked)
    writer.add_memory("global", load_address + at, descriptor)
    dispatch.entry["kernel_descriptor"] = hex(load_address + at)
    workgroup = dispatch.add_workgroup((1, 0, 0), lds=bytes(range(256)) * 256)
    for wave, pc in enumerate(stops):
        values = {"pc": np.uint64(load_address + pc), "exec": ((1 << lanes) - 1 - (1 << wave)).to_bytes(lanes // 8, "little")}
        values.update({f"s{n}": np.uint32(0x100 * n + wave) for n in range(106)})
        values.update({"s32": np.uint32(0), "s33": np.uint32(0)})  # stack and frame at the lane's scratch start
        values.update({f"v{n}": vgpr_values(wave, n, lanes) for n in range(64)})
        private = np.tile(private_lanes(wave, lanes), (1, 16))
        workgroup.add_wave(wave, wave, values, layout=layout, private=private)
    writer.set_focus(0, 3)
    writer.set_stop("breakpoint", "stopped mid-kernel")
    return writer.write(folder)


@pytest.mark.parametrize("example, build", [p for p in PAIRS if p not in REAL_DUMPS],
                         ids=[i for p, i in zip(PAIRS, IDS) if p not in REAL_DUMPS])
def test_synthetic_waves_show_the_same_with_the_object(tmp_path, example, build):
    obj, linked = paths(example, build)
    base = 0x7F3A00000000
    with_linked = shown_with(synthetic_dump(tmp_path / "linked", linked, base), linked)
    with_object = shown_with(synthetic_dump(tmp_path / "object", linked, base), obj)
    assert with_object == with_linked
    names = [v for k, v in with_linked.items() if k[1] == "frames"]
    assert names and all(frames and frames[0][0] for frames in names), names
    read = [v for k, v in with_linked.items() if len(k) == 4 and k[2] != "Registers" and "unavailable" not in v]
    assert len(read) >= 3, with_linked


def test_a_launch_with_an_object_that_cannot_be_relocated_says_why(tmp_path):
    bad = tmp_path / "bad.o"
    bad.write_bytes(_patched(OBJECT.read_bytes(), ".rela.debug_addr", 0, rtype=7))  # R_AMDGPU_GOTPCREL
    dump = EXAMPLES / "lds_tiles" / "dumps" / "gfx90a.O0"
    c = initialized()
    try:
        seq = c.send("launch", {"state": str(dump), "codeObject": str(bad)})
        c.request("configurationDone")
        answer = c.wait_response(seq)
        assert not answer["success"]
        assert "bad.o" in answer["message"] and "R_AMDGPU_GOTPCREL (7)" in answer["message"], answer["message"]
        assert c.request_raw("threads")["type"] == "response"  # the server still answers
    finally:
        c.close()


def test_an_object_the_dump_cannot_place_is_refused_not_shown_at_the_linked_address(tmp_path):
    """Without the kernel's descriptor in memory, nothing says where a `.o`'s code went: the linked
    object's load address would put every PC off by the linker's .text address."""
    obj, linked = paths("divergent_call", "clang19.gfx1100.O2")
    dump = EXAMPLES / "divergent_call" / "dumps" / "clang19.gfx1100.O2"
    staged = tmp_path / "no-descriptor"
    shutil.copytree(dump, staged)
    manifest = json.loads((staged / "manifest.json").read_text())
    (entry,) = manifest["code_objects"]
    (staged / entry["path"]).write_bytes(PLACEHOLDER)
    (staged / "manifest.json").write_text(json.dumps(manifest, indent=1))
    c = initialized()
    try:
        seq = c.send("launch", {"state": str(staged), "codeObject": str(obj)})
        c.request("configurationDone")
        c.wait_response(seq)
        thread = c.request("threads")["threads"][0]["id"]
        answer = c.send("stackTrace", {"threadId": thread})
        reply = c.wait_response(answer)
        text = json.dumps(reply)
        assert "relocatable object" in text and "ld.lld -shared" in text, reply
        frames = reply.get("body", {}).get("stackFrames", [])
        assert not any(f.get("line") for f in frames), frames  # no source line from a misplaced PC
    finally:
        c.close()
