"""Intel GPU cores (ELF64 ET_CORE, EM_INTELGT): made from the tgllp example dumps, they show every
variable of every lane as the folder dump does (SLM, which the format does not hold, reads as
unavailable); the layout follows gdb-oneapi's (intelgt-tdep.c); broken cores give clean errors."""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from dap_client import REPO_ROOT, launched

from aspace_dap.errors import AspaceError, StateError
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.adapters.intel.core import is_intel_core
from aspace_dap.adapters.intel.core_writer import write_core
from session_views import shown

DUMPS = Path(REPO_ROOT) / "examples" / "opencl" / "dumps"
TGLLP = ["lds_tiles.tgllp", "scratch_struct.tgllp", "divergent_call.tgllp", "lds_tiles.tgllp.O0",
         "divergent_call.tgllp.O0"]
FAULT = 0x7F0000DEAD00
SLM_ARRAYS = {"tile", "row_sums", "cells"}


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    out = tmp_path_factory.mktemp("cores")
    made = {}
    for name in TGLLP:
        with load_state(DUMPS / name) as state:
            made[name] = write_core(state, out / f"{name}.core", fault_address=FAULT)
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


def test_the_core_follows_gdb_oneapis_layout(cores):
    data = cores["divergent_call.tgllp"].read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and struct.unpack_from("<HH", data, 16) == (4, 205)
    notes = list(_notes(data))
    kinds = [kind for _, kind, _ in notes]
    assert all(name == b"CORE" for name, _, _ in notes)
    assert kinds == [3, 1, 0x53494749, 0x46494C45]  # PRPSINFO, PRSTATUS + SIGINFO per thread, FILE
    prpsinfo = notes[0][2]
    device, vendor = struct.unpack_from("<II", prpsinfo)
    assert vendor == 0x8086 and prpsinfo[8:12] == b"GPU\0" and prpsinfo.endswith(b"</target>\0")
    xml = prpsinfo[12:-1].decode()
    assert '<reg name="ip" bitsize="32"' in xml and '<reg name="emask" bitsize="32"' in xml
    import re
    assert re.search(r'<reg name="r\d+" bitsize="256"', xml)  # tgllp: 32-byte GRFs
    tid, signal, slm = struct.unpack_from("<QII", notes[1][2])
    with load_state(DUMPS / "divergent_call.tgllp") as state:
        wave = state.waves[0]
        assert tid == wave.id and signal == 11 and slm == 0
        # the registers follow the head back to back, ip first as the description lists it
        assert struct.unpack_from("<II", notes[1][2], 16) == (wave.pc, wave.registers.value("emask"))
    signo, _, code, _, addr = struct.unpack_from("<iiiiQ", notes[2][2])
    assert (signo, code, addr) == (11, 1, FAULT)
    count, page_size = struct.unpack_from("<QQ", notes[3][2])
    start, end, bias = struct.unpack_from("<QQQ", notes[3][2], 16)
    assert (count, page_size, bias) == (1, 1, 0)
    phoff, phnum = struct.unpack_from("<Q", data, 32)[0], struct.unpack_from("<H", data, 56)[0]
    loads = [struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i) for i in range(phnum)]
    [(_, _, offset, vaddr, _, filesz, _, _)] = [p for p in loads if p[0] == 1 and p[3] == start]
    assert filesz == end - start and data[offset:offset + 4] == b"\x7fELF"  # the device ELF, whole


@pytest.mark.parametrize("name", TGLLP)
def test_every_variable_of_every_lane_reads_as_in_the_folder_dump(cores, name):
    folder = Session(load_state(DUMPS / name))
    core = Session(load_state(cores[name]))
    assert core.state.target.vendor == "intel" and core.wave().lanes == folder.wave().lanes
    assert list(core.wave().active_lanes) == list(folder.wave().active_lanes)
    assert core.state.stop.reason == "exception" and f"{FAULT:#x}" in core.state.stop.description
    assert core.state.dispatches[0].kernel == folder.state.dispatches[0].kernel
    for lane in range(folder.wave().lanes):
        frame_f, want = shown(folder, lane)
        frame_c, got = shown(core, lane)
        assert (frame_c.name, frame_c.line) == (frame_f.name, frame_f.line)
        assert set(got) == set(want)
        for var in want:
            if var in SLM_ARRAYS:  # the format holds no SLM
                assert "<unavailable>" in got[var] and not any(ch.isdigit() for ch in got[var].split("<")[0])
            else:
                assert got[var] == want[var], (lane, var)


def test_dap_launch_on_a_core_shows_the_dumps_values(cores):
    seen = {}
    for path in (DUMPS / "divergent_call.tgllp", cores["divergent_call.tgllp"]):
        c, stopped = launched(path)
        try:
            tid = stopped["threadId"]
            frame = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]
            assert frame["line"] == 28
            values = {}
            for lane in (1, 3, 5):
                c.request("setFocus", {"threadId": tid, "lane": lane})
                for scope in c.request("scopes", {"frameId": frame["id"]})["scopes"]:
                    for v in c.request("variables", {"variablesReference": scope["variablesReference"]})["variables"]:
                        values[lane, v["name"]] = v["value"]
            seen[str(path)] = (stopped, values)
            c.request("disconnect")
        finally:
            c.close()
    (_, folder), (stopped, core) = seen.values()
    assert stopped["reason"] == "exception"
    assert {k for k in folder if k[1] not in SLM_ARRAYS} <= set(core)
    for key, value in folder.items():
        if key[1] not in SLM_ARRAYS:
            assert core[key] == value, key


def test_a_core_saves_as_a_dump_that_validates(cores, tmp_path):
    from aspace_dap.adapters import register_rules
    from aspace_dap.state import validate_state
    with load_state(cores["lds_tiles.tgllp.O0"]) as state:
        saved = state.save(tmp_path / "from-core")
    assert [p for p in validate_state(saved, register_rules) if p.is_error] == []
    _, from_core = shown(Session(load_state(saved)), 2)
    _, from_dump = shown(Session(load_state(DUMPS / "lds_tiles.tgllp.O0")), 2)
    assert {k: v for k, v in from_core.items() if k not in SLM_ARRAYS} == \
        {k: v for k, v in from_dump.items() if k not in SLM_ARRAYS}


def test_inspect_detects_the_format(cores, capsys):
    from aspace_dap.cli import main
    assert is_intel_core(cores["lds_tiles.tgllp"]) and not is_intel_core(DUMPS / "lds_tiles.tgllp" / "manifest.json")
    assert main(["inspect", str(cores["lds_tiles.tgllp"]), "--lane", "2"]) == 0
    out = capsys.readouterr().out
    assert "transpose_tiles" in out and "lds_tiles.cl:36" in out and "rows      = 20" in out


def _hand_made_core(xml: str, regs: bytes, tid: int = 7) -> bytes:
    """A minimal core written here from the layout rules: one thread, no memory, no code object."""
    def note(kind, desc):
        return struct.pack("<III", 5, len(desc), kind) + b"CORE\0\0\0\0" + desc + bytes(-len(desc) % 4)
    notes = note(3, struct.pack("<II", 0x0BD5, 0x8086) + b"GPU\0" + xml.encode() + b"\0")
    notes += note(1, struct.pack("<QII", tid, 0, 0) + regs)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 4, 205, 1, 0, 64, 0, 0, 64,
                                                                     56, 1, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(notes), 0, 4)
    return header + phdr + notes


def test_newer_descriptions_keep_the_ip_in_cr0(tmp_path):
    # gdb-oneapi reads $ip as dword 2 of cr0 when the description has no ip register
    xml = ('<target><architecture>intelgt</architecture><feature name="org.gnu.gdb.intelgt.arf12">'
           '<reg name="emask" bitsize="32"/><reg name="cr0" bitsize="128"/></feature>'
           '<feature name="org.gnu.gdb.intelgt.grf"><reg name="r0" bitsize="512"/></feature></target>')
    regs = struct.pack("<I", 0xFFFF) + struct.pack("<IIII", 1, 2, 0x1230, 4) + bytes(range(64))
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(xml, regs))
    with load_state(path) as state:
        wave = state.waves[0]
        assert wave.pc == 0x1230 and wave.registers.value("emask") == 0xFFFF
        assert wave.registers.raw("r0")[0].tobytes() == bytes(range(64))
        assert state.code_objects == [] and state.dispatches[0].code_object is None


def test_a_short_thread_note_leaves_the_tail_unavailable(tmp_path):
    xml = ('<target><feature name="f"><reg name="ip" bitsize="32"/><reg name="emask" bitsize="32"/>'
           '<reg name="r0" bitsize="256"/></feature></target>')
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(xml, struct.pack("<II", 0x40, 0xFF) + bytes(10)))
    with load_state(path) as state:
        data, valid = state.waves[0].registers.raw("r0")
        assert valid.tolist() == [True] * 10 + [False] * 22


@pytest.mark.parametrize("xml,message", [
    ("<target><reg name='r0' bitsize='12'/></target>", "whole number of bytes"),
    ("<target>", "not valid XML"),
    ("<target></target>", "names no register"),
    ("<target><reg name='a' bitsize='8'/><reg name='a' bitsize='8'/></target>", "twice"),
])
def test_a_bad_description_is_named(tmp_path, xml, message):
    path = tmp_path / "gpu.core"
    path.write_bytes(_hand_made_core(xml, bytes(8)))
    with pytest.raises(StateError, match=message) as raised:
        load_state(path)
    assert raised.value.path == "NT_PRPSINFO"


def _variants(base: bytes, count: int, seed: int):
    rng = random.Random(seed)
    for i in range(count):
        data = bytearray(base)
        kind = i % 4
        if kind == 0:  # truncated anywhere
            yield bytes(data[:rng.randrange(len(data))])
            continue
        if kind == 1:  # bytes flipped in the headers and notes
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(min(len(data), 2048))] ^= 1 << rng.randrange(8)
        elif kind == 2:  # a size or count field set to something large or odd
            at = rng.randrange(0, min(len(data), 2048) - 8) & ~3
            data[at:at + 4] = struct.pack("<I", rng.choice([0, 1, 3, 0x7FFFFFFF, 0xFFFFFFFF, len(base)]))
        else:  # random bytes over a random stretch
            at = rng.randrange(len(data))
            data[at:at + 16] = bytes(rng.randrange(256) for _ in range(16))
        yield bytes(data)


def test_corrupted_and_truncated_cores_give_clean_errors(cores, tmp_path):
    base = cores["divergent_call.tgllp"].read_bytes()
    slowest, errors, opened = 0.0, 0, 0
    for i, data in enumerate(_variants(base, 200, seed=1213)):
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
