"""A code-less inlined instance of the frame's own function (IGC's holder of kernel-scope __local
arrays) completes the frame's variables whatever its call line, and never replaces one the frame
already has (a producer's code-less recursive instance must not hide the real variable)."""

from __future__ import annotations

import struct

import pytest

from aspace_dap.dwarf.index import DwarfIndex
from test_dwarf_index_synthetic import FakeElf, abbrev_table, cstr, exprloc, uleb

ADDR, DATA1, DATA4, STRING, REF4, EXPRLOC = 0x01, 0x0B, 0x06, 0x08, 0x13, 0x18
OWN, INLINED_COPY, ONLY_INLINED = bytes([0x91, 0x10]), bytes([0x91, 0x20]), bytes([0x91, 0x30])


def unit(call_line: int) -> dict[str, bytes]:
    abbrevs = [
        (1, 0x11, True, [(0x03, STRING), (0x11, ADDR), (0x12, DATA4)]),          # compile_unit
        (2, 0x24, False, [(0x03, STRING), (0x0B, DATA1), (0x3E, DATA1)]),         # base_type
        (3, 0x2E, True, [(0x03, STRING), (0x20, DATA1)]),                         # abstract subprogram
        (4, 0x34, False, [(0x03, STRING), (0x49, REF4)]),                         # abstract variable
        (5, 0x2E, True, [(0x31, REF4), (0x11, ADDR), (0x12, DATA4)]),             # concrete subprogram
        (6, 0x34, False, [(0x31, REF4), (0x02, EXPRLOC)]),                        # concrete variable
        (7, 0x1D, True, [(0x31, REF4), (0x59, DATA1)]),                           # inlined, no code
    ]
    abbrev = abbrev_table(abbrevs)
    at = 11  # DWARF 4 unit header; references count from the unit's start
    cu = uleb(1) + cstr("k.cl") + struct.pack("<QI", 0x1000, 0x100)
    int_off = at + len(cu)
    base = uleb(2) + cstr("int") + bytes([4, 0x05])
    f_off = int_off + len(base)
    f = uleb(3) + cstr("k") + bytes([1])
    v_off = f_off + len(f)
    v = uleb(4) + cstr("v") + struct.pack("<I", int_off)
    w_off = v_off + len(v)
    w = uleb(4) + cstr("w") + struct.pack("<I", int_off)
    abstract = f + v + w + b"\0"
    concrete = (uleb(5) + struct.pack("<IQI", f_off, 0x1000, 0x80)
                + uleb(6) + struct.pack("<I", v_off) + exprloc(OWN)
                + uleb(7) + struct.pack("<I", f_off) + bytes([call_line])
                + uleb(6) + struct.pack("<I", v_off) + exprloc(INLINED_COPY)
                + uleb(6) + struct.pack("<I", w_off) + exprloc(ONLY_INLINED) + b"\0"
                + b"\0")
    body = cu + base + abstract + concrete + b"\0"
    info = struct.pack("<IHIB", len(body) + 7, 4, 0, 8) + body
    return {".debug_info": info, ".debug_abbrev": abbrev}


@pytest.mark.parametrize("call_line", [0, 6])  # IGC: 0 when optimized, the declaration line at -O0
def test_code_less_own_instance_completes_the_frame(call_line):
    idx = DwarfIndex(FakeElf(unit(call_line)), e_machine=182)
    [frame] = idx.frames_at(0x1010)
    assert frame.function == "k"
    got = {v.name: v.location_at(0x1010) for v in idx.variables(frame, 0x1010)}
    assert got == {"v": OWN, "w": ONLY_INLINED}
