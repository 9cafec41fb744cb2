"""Intel GPU cores (ELF64 ET_CORE, EM_INTELGT) as gdb-oneapi writes and reads them (intel/gdb
gdb/intelgt-tdep.c, bfd/elf64-intelgt.c, gdbserver/intelgt-ze-low.cc): made from every Intel example
dump in both NT_PRPSINFO forms, with a non-zero isabase, they show every variable of every lane as the
folder dump does (SLM, which the format does not hold, reads as unavailable); hand-made cores check PC,
active lanes and work-groups by gdb-oneapi's rules; broken cores give clean errors."""

from __future__ import annotations

import random
import re
import struct
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dap_client import REPO_ROOT, launched

from aspace_dap.errors import AspaceError, StateError
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.state.corefiles import BytesSpan
from aspace_dap.state.registers import RegisterFile
from aspace_dap.adapters.intel.core import is_intel_core
from aspace_dap.adapters.intel.core_writer import write_core
from session_views import shown

DUMPS = Path(REPO_ROOT) / "examples" / "opencl" / "dumps"
EXAMPLES = sorted(p.name for p in DUMPS.iterdir())
FORMS = ("current", "2023")
FAULT = 0x7F0000DEAD00
SLM_ARRAYS = {"tile", "row_sums", "cells"}
ISABASE = 0x7FF0_1234_0000  # not the writer's default: PCs must be isabase + CR0.2, whatever isabase is


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    out = tmp_path_factory.mktemp("cores")
    made = {}
    for name in EXAMPLES:
        with load_state(DUMPS / name) as state:
            for form in FORMS:
                made[name, form] = write_core(state, out / f"{name}.{form}.core", fault_address=FAULT,
                                              prpsinfo_form=form, isabase=ISABASE, device_id=0x9A49)
    return made


def _notes(data: bytes):
    """(name, type, descriptor) of the PT_NOTE segment, read by the ELF rules (not by our reader)."""
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, offset, _, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type != 4:
            continue
        at = offset
        while at < offset + filesz:
            namesz, descsz, kind = struct.unpack_from("<III", data, at)
            name = data[at + 12:at + 12 + namesz].rstrip(b"\0")
            desc_at = at + 12 + (namesz + 3) // 4 * 4
            yield name, kind, data[desc_at:desc_at + descsz]
            at = desc_at + (descsz + 3) // 4 * 4


def _block_layout(xml: str) -> dict[str, tuple[int, int]]:
    """name -> (offset, size) in a thread's register block: gdb's rule (every <reg> of every <feature>, in
    document order, bitsize / 8 bytes each), applied here with ElementTree."""
    out, at = {}, 0
    for feature in ET.fromstring(xml).iter("feature"):
        for reg in feature.iter("reg"):
            size = int(reg.get("bitsize")) // 8
            out[reg.get("name")] = (at, size)
            at += size
    return out


@pytest.mark.parametrize("form", FORMS)
def test_the_core_follows_gdb_oneapis_layout(cores, form):
    data = cores["divergent_call.tgllp", form].read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and struct.unpack_from("<HH", data, 16) == (4, 205)
    notes = list(_notes(data))
    assert all(name == b"CORE" for name, _, _ in notes)
    assert [kind for _, kind, _ in notes] == [3, 1, 0x53494749, 0x46494C45]  # PRPSINFO, PRSTATUS+SIGINFO, FILE
    prpsinfo = notes[0][2]
    if form == "current":  # intelgt_make_prpsinfo (2024.1 on): "GPU" NUL XML NUL
        assert prpsinfo.startswith(b"GPU\0<?xml version=\"1.0\"?>\n")
        xml = prpsinfo[4:-1].decode()
        device = ET.fromstring(xml).find("device")
        assert device.get("vendor-id") == "0x8086" and device.get("target-id") == "0x9a49"
        assert re.search(r'<reg name="ce" bitsize="32" type="uint32" regnum="\d+" group="arf" '
                         r'save-restore="no" expedited="yes"/>', xml)
        assert '<vector id="vector8x32" type="uint32" count="8"/>' in xml  # tgllp: 256-bit GRFs
    else:  # 2023.1-2024.0.1: u32 device id, u32 vendor id, then "GPU" NUL XML NUL
        assert struct.unpack_from("<II", prpsinfo) == (0x9A49, 0x8086) and prpsinfo[8:12] == b"GPU\0"
        xml = prpsinfo[12:-1].decode()
        assert '<device_attr name="vendor_id" value="0x8086"/>' in xml
        assert re.search(r'<reg name="r0" bitsize="256" type="uint256" regnum="0" group="GRF"/>', xml)
    assert prpsinfo.endswith(b"</target>\n\0")
    root = ET.fromstring(xml)
    assert root.findtext("architecture") == "intelgt" and root.findtext("osabi") == "GNU/Linux"
    features = [f.get("name").rsplit(".", 1)[1] for f in root.iter("feature")]
    assert features == ["grf", "ce", "sr", "cr", "sba"]  # Level Zero's order of register sets
    layout = _block_layout(xml)
    assert "ip" not in layout and "emask" not in layout  # gdb-oneapi's $ip is CR0.2, its mask ce
    regs = notes[1][2]
    tid, signal, slm = struct.unpack_from("<QII", regs)
    block = regs[16:]
    assert len(block) == sum(size for _, size in layout.values())

    def u32(name, dword):
        return struct.unpack_from("<I", block, layout[name][0] + 4 * dword)[0]

    with load_state(DUMPS / "divergent_call.tgllp") as state:
        state.use_register_names("ip", "emask")
        wave = state.waves[0]
        assert tid == wave.id and signal == 11 and slm == 0
        assert struct.unpack_from("<Q", block, layout["isabase"][0])[0] == ISABASE
        assert u32("cr0", 2) == wave.pc  # intelgt_read_pc: PC = isabase + CR0.2
        assert u32("ce", 0) == wave.registers.value("emask") == 0xAA and u32("sr0", 2) == 0xFF
        assert (u32("r0", 1), u32("r0", 6), u32("r0", 7)) == wave.workgroup.id == (1, 0, 0)
        for reg in ("r18", "r51"):  # the dump's GRFs at their place in the block
            at, size = layout[reg]
            assert block[at:at + size] == wave.registers.raw(reg)[0].tobytes()
    signo, _, code, _, addr = struct.unpack_from("<iiiiQ", notes[2][2])
    assert (signo, code, addr) == (11, 1, FAULT)
    count, page_size = struct.unpack_from("<QQ", notes[3][2])
    start, end, bias = struct.unpack_from("<QQQ", notes[3][2], 16)
    assert (count, page_size, start, bias) == (1, 1, 1 << 50, ISABASE)  # the ELF's load bias is the heap's
    phoff, phnum = struct.unpack_from("<Q", data, 32)[0], struct.unpack_from("<H", data, 56)[0]
    loads = [struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i) for i in range(phnum)]
    [(_, _, offset, vaddr, _, filesz, _, _)] = [p for p in loads if p[0] == 1 and p[3] == start]
    assert filesz == end - start and data[offset:offset + 4] == b"\x7fELF"  # the device ELF, whole


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_variable_of_every_lane_reads_as_in_the_folder_dump(cores, name, form):
    folder = Session(load_state(DUMPS / name))
    core = Session(load_state(cores[name, form]))
    fw, cw = folder.wave(), core.wave()
    assert core.state.target.vendor == "intel" and cw.lanes == fw.lanes
    assert list(cw.active_lanes) == list(fw.active_lanes) and not cw.active_lanes.all()  # ce & SR0.2
    assert cw.workgroup.id == fw.workgroup.id and cw.pc == fw.pc
    # gdb-oneapi names a core's thread by its LWP (the writer's PRSTATUS thread id: the wave's id)
    assert core.thread_name(cw) == folder.thread_name(fw).replace(f"thread {fw.id} ", f"LWP {fw.id} ")
    assert core.state.stop.reason == "exception" and f"{FAULT:#x}" in core.state.stop.description
    assert core.state.dispatches[0].kernel == folder.state.dispatches[0].kernel
    for lane in range(fw.lanes):
        frame_f, want = shown(folder, lane)
        frame_c, got = shown(core, lane)
        assert (frame_c.name, frame_c.line) == (frame_f.name, frame_f.line)
        assert set(got) == set(want)
        for var in want:
            if var in SLM_ARRAYS and "<unavailable" not in want[var]:  # the format holds no SLM
                assert "<unavailable>" in got[var] and not any(ch.isdigit() for ch in got[var].split("<")[0])
            else:
                assert got[var] == want[var], (lane, var)


def test_dap_launch_on_a_core_shows_the_dumps_values(cores):
    seen = {}
    for path in (DUMPS / "divergent_call.tgllp", cores["divergent_call.tgllp", "current"]):
        c, stopped = launched(path)
        try:
            tid = stopped["threadId"]
            [thread] = [t for t in c.request("threads")["threads"] if t["id"] == tid]
            frame = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
            assert frame["line"] == 28
            values = {}
            for lane in (1, 3, 5):
                c.request("setFocus", {"threadId": tid, "lane": lane})
                for scope in c.request("scopes", {"frameId": frame["id"]})["scopes"]:
                    for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                        values[lane, v["name"]] = v["value"]
            seen[str(path)] = (stopped, thread["name"], values)
            c.request("disconnect")
        finally:
            c.close()
    (_, folder_name, folder), (stopped, core_name, core) = seen.values()
    assert stopped["reason"] == "exception"
    assert core_name == folder_name.replace("Intel GPU thread ", "Intel GPU LWP ") and "(1,0,0)" in core_name
    assert "[4/8 active]" in core_name
    assert {k for k in folder if k[1] not in SLM_ARRAYS} <= set(core)
    for key, value in folder.items():
        if key[1] not in SLM_ARRAYS:
            assert core[key] == value, key


@pytest.mark.parametrize("form", FORMS)
def test_state_convert_of_a_core_validates(cores, form, tmp_path, capsys):
    from aspace_dap.cli import main

    out = tmp_path / "from-core"
    assert main(["state", "convert", str(cores["lds_tiles.tgllp.O0", form]), str(out)]) == 0
    assert main(["state", "validate", str(out)]) == 0, capsys.readouterr().out
    _, from_core = shown(Session(load_state(out)), 2)
    _, from_dump = shown(Session(load_state(DUMPS / "lds_tiles.tgllp.O0")), 2)
    assert {k: v for k, v in from_core.items() if k not in SLM_ARRAYS} == \
        {k: v for k, v in from_dump.items() if k not in SLM_ARRAYS}
    # and the converted dump makes the same core again (cr0, sr0, ce, isabase, r0 agree with its state)
    with load_state(out) as state:
        again = write_core(state, tmp_path / "again.core", prpsinfo_form=form, device_id=0x9A49)
    first = dict((kind, desc) for _, kind, desc in _notes(cores["lds_tiles.tgllp.O0", form].read_bytes()))
    second = dict((kind, desc) for _, kind, desc in _notes(again.read_bytes()))

    def registers(prpsinfo):  # the description less its device name (the core names no processor)
        return re.sub(rb'<device [^>]*/>|<device_attr name="device_name"[^>]*/>', b"", prpsinfo)

    assert registers(first[3]) == registers(second[3]) and first[1][16:] == second[1][16:]


def test_inspect_detects_the_format(cores, capsys):
    from aspace_dap.cli import main
    core = cores["lds_tiles.tgllp", "current"]
    assert is_intel_core(core) and not is_intel_core(DUMPS / "lds_tiles.tgllp" / "manifest.json")
    assert main(["inspect", str(core), "--lane", "2"]) == 0
    out = capsys.readouterr().out
    assert "transpose_tiles" in out and "lds_tiles.cl:36" in out and "rows      = 20" in out


# ---------------------------------------------------------------------- hand-made cores

# a description as gdb-oneapi master prints one (print_xml_feature), written out here by hand
GDB_XML = """<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target>
  <architecture>intelgt</architecture>
  <osabi>GNU/Linux</osabi>
  <device vendor-id="0x8086" target-id="0x0bd5" family="-" model="-" name="Intel(R) Data Center GPU Max 1100" pci-slot="0000:29:00.0" uuid="-" total-cores="448" total-threads="3584"/>
  <feature name="org.gnu.gdb.intelgt.grf">
    <vector id="vector16x32" type="uint32" count="16"/>
    <reg name="r0" bitsize="512" type="vector16x32" regnum="0" group="grf" expedited="yes"/>
    <reg name="r1" bitsize="512" type="vector16x32" regnum="1" group="grf" expedited="yes"/>
  </feature>
  <feature name="org.gnu.gdb.intelgt.ce">
    <reg name="ce" bitsize="32" type="uint32" regnum="2" group="arf" save-restore="no" expedited="yes"/>
  </feature>
  <feature name="org.gnu.gdb.intelgt.sr">
    <vector id="vector4x32" type="uint32" count="4"/>
    <reg name="sr0" bitsize="128" type="vector4x32" regnum="3" group="arf" expedited="yes"/>
  </feature>
  <feature name="org.gnu.gdb.intelgt.cr">
    <vector id="vector4x32" type="uint32" count="4"/>
    <reg name="cr0" bitsize="128" type="vector4x32" regnum="4" group="arf" expedited="yes"/>
  </feature>
  <feature name="org.gnu.gdb.intelgt.sba">
    <reg name="genstbase" bitsize="64" type="uint64" regnum="5" group="virtual" save-restore="no" expedited="yes"/>
    <reg name="isabase" bitsize="64" type="uint64" regnum="6" group="virtual" save-restore="no" expedited="yes"/>
  </feature>
</target>
"""


def _thread(isabase: int, ip: int, ce: int, dmask: int, wg: tuple[int, int, int], r1: bytes = bytes(64)) -> bytes:
    r0 = bytearray(64)
    for dword, value in zip((1, 6, 7), wg):
        struct.pack_into("<I", r0, 4 * dword, value)
    return (bytes(r0) + r1 + struct.pack("<I", ce) + struct.pack("<IIII", 0, 0, dmask, 0)
            + struct.pack("<IIII", 0, 0, ip, 0) + struct.pack("<QQ", 0xAB000, isabase))


def _hand_made_core(prpsinfo: bytes, threads: list[tuple[int, bytes]]) -> bytes:
    """A core written here from the layout rules, no code object."""
    def note(kind, desc):
        return struct.pack("<III", 5, len(desc), kind) + b"CORE\0\0\0\0" + desc + bytes(-len(desc) % 4)
    notes = note(3, prpsinfo)
    for tid, regs in threads:
        notes += note(1, struct.pack("<QII", tid, 0, 0) + regs)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 4, 205, 1, 0, 64, 0, 0, 64,
                                                                     56, 1, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(notes), 0, 4)
    return header + phdr + notes


@pytest.mark.parametrize("form", FORMS)
def test_pc_lanes_and_work_groups_follow_gdb_oneapi(tmp_path, form):
    prpsinfo = b"GPU\0" + GDB_XML.encode() + b"\0"
    if form == "2023":
        prpsinfo = struct.pack("<II", 0x0BD5, 0x8086) + prpsinfo
    threads = [(0x100, _thread(0x10000, 0x43D0, 0x3F, 0xFF, (3, 4, 5), bytes(range(64)))),
               (0x101, _thread(0x10000, 0x4400, 0xFFFF, 0xFF, (3, 4, 5))),
               (0x102, _thread(0x10000, 0x43D0, 0xF0F0, 0xFFFF, (0, 1, 0)))]
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(prpsinfo, threads))
    with load_state(path) as state:
        assert [w.id for w in state.waves] == [0x100, 0x101, 0x102]
        first, second, third = state.waves
        # intelgt_read_pc: isabase + CR0.2; the model's ip is that PC less the core's instruction base
        assert (first.pc, second.pc) == (0x43D0, 0x4400)
        # intelgt_active_lanes_mask: ce & SR0.2 (the dispatch mask); the width is 32 with no kernel to say
        assert first.active_lanes.nonzero()[0].tolist() == list(range(6))
        assert first.valid_lanes.nonzero()[0].tolist() == list(range(8))
        assert second.active_lanes.nonzero()[0].tolist() == list(range(8))
        assert third.active_lanes.nonzero()[0].tolist() == [4, 5, 6, 7, 12, 13, 14, 15]
        # intelgt_thread_workgroup: (r0.1, r0.6, r0.7)
        groups = {wg.id: [w.id for w in wg.waves] for d in state.dispatches for wg in d.workgroups}
        assert groups == {(3, 4, 5): [0x100, 0x101], (0, 1, 0): [0x102]}
        assert (first.index_in_workgroup, second.index_in_workgroup) == (0, 1)
        assert first.registers.raw("r1")[0].tobytes() == bytes(range(64))
        assert first.registers.value("isabase") == 0x10000 and first.registers.value("genstbase") == 0xAB000
        session = Session(state)
        assert "(3,4,5)/1" in session.thread_name(second) and "[6/8 active]" in session.thread_name(first)


def test_threads_with_another_instruction_base(tmp_path):
    # PC = isabase + CR0.2 per thread; the model's ip is relative to the lowest base, so both PCs keep their
    # distance
    prpsinfo = b"GPU\0" + GDB_XML.encode() + b"\0"
    threads = [(1, _thread(0x20000, 0x10, 1, 1, (0, 0, 0))), (2, _thread(0x10000, 0x10, 1, 1, (0, 0, 0)))]
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(prpsinfo, threads))
    with load_state(path) as state:
        assert [w.pc for w in state.waves] == [0x10010, 0x10]
    far = [(1, _thread(0x1_0000_0000_0000, 0x10, 1, 1, (0, 0, 0))), (2, _thread(0x10000, 0x10, 1, 1, (0, 0, 0)))]
    path.write_bytes(_hand_made_core(prpsinfo, far))
    with pytest.raises(StateError, match="4 GiB or more above") as raised:
        load_state(path)
    assert raised.value.path == "NT_PRSTATUS 0"


def test_a_short_thread_note_leaves_the_tail_unavailable(tmp_path):
    prpsinfo = b"GPU\0" + GDB_XML.encode() + b"\0"
    full = _thread(0x10000, 0x40, 0xFF, 0xFF, (1, 2, 3))
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(prpsinfo, [(7, full[:64 + 10])]))  # r0 and 10 bytes of r1
    with load_state(path) as state:
        wave = state.waves[0]
        data, valid = wave.registers.raw("r1")
        assert valid.tolist() == [True] * 10 + [False] * 54
        assert wave.pc is None and not wave.registers.has("ip")  # cr0 and isabase are past the end: no PC
        assert wave.workgroup.id == (1, 2, 3)


@pytest.mark.parametrize("xml,message", [
    ("<target><feature name='f'><reg name='r0' bitsize='12'/></feature></target>", "whole number of bytes"),
    ("<target>", "not valid XML"),
    ("<target></target>", "names no register"),
    ("<target><feature name='f'><reg name='a' bitsize='8'/><reg name='a' bitsize='8'/></feature></target>", "twice"),
    (GDB_XML.replace('name="cr0"', 'name="cr9"'), "no cr0"),
    (GDB_XML.replace('name="isabase"', 'name="isabase2"'), "no isabase"),
    (GDB_XML.replace('<reg name="ce" bitsize="32"', '<reg name="ip" bitsize="32"'), "no ce"),
    (GDB_XML.replace('name="genstbase"', 'name="emask"'), "named emask"),
    ("<tdesc><feature name='f'><reg name='r0' bitsize='8'/></feature></tdesc>", "not <target>"),
])
def test_a_bad_description_is_named(tmp_path, xml, message):
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(b"GPU\0" + xml.encode() + b"\0", [(1, bytes(8))]))
    with pytest.raises(StateError, match=message) as raised:
        load_state(path)
    assert raised.value.path == "NT_PRPSINFO"


@pytest.mark.parametrize("prpsinfo", [
    b"GPU\0<target/>",                                   # the XML not NUL-terminated
    b"\x01\x02\x03\x04\x86\x80\x00\x00GPU\0plain text\0",  # no XML after the name
    b"\xd5\x0b\x00\x00\x02\x10\x00\x00GPU\0<target/>\0",    # a vendor that is not Intel
    b"\xd5\x0b",
])
def test_a_prpsinfo_in_neither_form_is_named(tmp_path, prpsinfo):
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(prpsinfo, [(1, bytes(8))]))
    with pytest.raises(StateError) as raised:
        load_state(path)
    assert raised.value.path == "NT_PRPSINFO"


def test_a_code_object_below_the_instruction_base_is_refused(cores, tmp_path):
    data = bytearray(cores["divergent_call.tgllp", "current"].read_bytes())
    notes = list(_notes(bytes(data)))
    file_desc = notes[-1][2]
    at = bytes(data).index(file_desc) + 16 + 16  # NT_FILE entry 0's offset field: the load bias
    struct.pack_into("<Q", data, at, ISABASE - 0x1000)
    path = tmp_path / "low.core"
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="below the threads' instruction base") as raised:
        load_state(path)
    assert raised.value.path.startswith("NT_FILE mapping 0")


def test_the_writer_refuses_a_dump_its_registers_contradict(tmp_path):
    with load_state(DUMPS / "divergent_call.tgllp") as state:
        state.use_register_names("ip", "emask")
        wave = state.waves[0]
        layout = wave.registers.layout + [("r0", 32)]
        wave.registers = RegisterFile(layout, BytesSpan(wave.registers._span.array.tobytes() + bytes(32)))
        # r0.1 = 0, but the wave's work-group is (1, 0, 0)
        with pytest.raises(StateError, match="register r0 bytes 4..7 hold 0x0, but the wave's state says 0x1"):
            write_core(state, tmp_path / "bad.core")


def _variants(base: bytes, count: int, seed: int):
    rng = random.Random(seed)
    xml_at = base.index(b"<?xml")
    xml_end = base.index(b"</target>")
    for i in range(count):
        data = bytearray(base)
        kind = i % 5
        if kind == 0:  # truncated anywhere
            yield bytes(data[:rng.randrange(len(data))])
            continue
        if kind == 1:  # bytes flipped in the headers and notes
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(min(len(data), 2048))] ^= 1 << rng.randrange(8)
        elif kind == 2:  # a size or count field set to something large or odd
            at = rng.randrange(0, min(len(data), 2048) - 8) & ~3
            data[at:at + 4] = struct.pack("<I", rng.choice([0, 1, 3, 0x7FFFFFFF, 0xFFFFFFFF, len(base)]))
        elif kind == 3:  # the register description edited: a character changed inside the XML
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(xml_at, xml_end)] = rng.choice(b"<>\"=/ 0123456789abcrx\0")
        else:  # random bytes over a random stretch
            at = rng.randrange(len(data))
            data[at:at + 16] = bytes(rng.randrange(256) for _ in range(16))
        yield bytes(data)


def test_corrupted_and_truncated_cores_give_clean_errors(cores, tmp_path):
    slowest, errors, opened = 0.0, 0, 0
    variants = [v for seed, form in ((1213, "current"), (1214, "2023"))
                for v in _variants(cores["divergent_call.tgllp", form].read_bytes(), 100, seed)]
    for i, data in enumerate(variants):
        path = tmp_path / f"v{i}.core"
        path.write_bytes(data)
        start = time.process_time()  # CPU time: the machine's load does not count
        try:
            with load_state(path) as state:
                shown(Session(state), 3)  # what a debugger shows first
                opened += 1
        except AspaceError as exc:
            errors += 1
            text = str(exc)
            assert text and "Traceback" not in text
            if isinstance(exc, StateError) and exc.path and exc.path != str(path):  # (else no longer a core)
                assert any(word in exc.path for word in ("ELF header", "program header", "NT_", "note")), exc.path
        slowest = max(slowest, time.process_time() - start)
    assert errors + opened == 200 and errors >= 50
    assert slowest < 1.0, slowest  # each variant: open and first view
