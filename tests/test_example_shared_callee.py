"""shared_callee: a kernel's __shared__ kbuf[32] and its callee's __shared__ hbuf[64], both compilers.

The model below is written from shared_callee.hip and the inputs in the example's README; the
debugger's frames and values (through the session, as a client sees them) must match it in every
lane. Both compilers leave LDS address 0 for both arrays in the DWARF, so showing the right bytes
needs the offsets the ISA proves (hbuf at 0, kbuf at 0x100, per the objdump listings); neither
array may ever show the other's bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.session import Session
from aspace_dap.values.format import format_obj

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "shared_callee"
LANES, KBUF, HBUF = 64, 32, 64
IN_ADDR, OUT_ADDR = 0x7F0000100000, 0x7F0000200000


def kbuf_model() -> list[int]:
    return [(7 * i - 50) + 100 for i in range(KBUF)]  # line 23: kbuf[lane] = in[lane] + 100


def hbuf_model() -> list[int]:
    kbuf = kbuf_model()
    return [kbuf[lane % KBUF] * 3 + 1 for lane in range(HBUF)]  # line 12, value = kbuf[lane % 32]


def show(values) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def shown(session: Session, frame, var) -> dict[int, str]:
    read = session.read_variable(frame, var, lanes=np.arange(LANES))
    out = {}
    for lane in range(LANES):
        obj = read.obj_for(lane)
        out[lane] = format_obj(obj, 0) if obj is not None else read.errors[lane]
    return out


def listing_offset(listing: Path, function: str, line: int) -> int:
    """The constant the objdump listing moves into the low SGPR of the generic LDS pointer on a
    source line (`s_mov_b32 sN, 0x100` before the aperture's copy into sN+1)."""
    text = listing.read_text()
    body = text.split(f"<{function}>:", 1)[1].split(">:\n", 1)[0]
    block = body.split(f"shared_callee.hip:{line}\n", 1)[1].split("\n; ", 1)[0]
    consts = re.findall(r"s_mov_b32 s(\d+), (0x[0-9a-f]+|\d+)\s", block)
    copies = re.findall(r"s_mov_b32 s(\d+), s\d+\s", block)
    pairs = [int(v, 0) for reg, v in consts if str(int(reg) + 1) in copies and int(reg) % 2 == 0]
    return pairs[-1]


BUILDS = ["gfx90a.O0", "clang19.gfx90a.O0"]


@pytest.mark.parametrize("build", BUILDS)
def test_each_array_shows_its_own_bytes_in_its_frame(build):
    session = Session.open(str(EXAMPLE / "dumps" / build))
    frames = session.frames()
    assert [f.name for f in frames[:2]] == ["neighbour_sum", "stage"]
    callee = {v.name: v for v in session.variables(frames[0])}
    kernel = {v.name: v for v in session.variables(frames[1])}
    assert "kbuf" not in callee and "hbuf" not in kernel
    for lane, text in shown(session, frames[0], callee["hbuf"]).items():
        assert text == show(hbuf_model()), (build, lane)
    for lane, text in shown(session, frames[1], kernel["kbuf"]).items():
        assert text == show(kbuf_model()), (build, lane)
    # where: the lens and the debugger name the ISA's offsets
    obj = session.read_variable(frames[0], callee["hbuf"]).obj_for(frames[0].lane)
    assert session.location_text(obj) == "local#0x0 (LDS)"
    obj = session.read_variable(frames[1], kernel["kbuf"]).obj_for(frames[1].lane)
    assert session.location_text(obj) == "local#0x100 (LDS)"


@pytest.mark.parametrize("build", BUILDS)
def test_callee_frame_in_every_lane(build):
    session = Session.open(str(EXAMPLE / "dumps" / build))
    frame = session.frames()[0]
    variables = {v.name: v for v in session.variables(frame)}
    assert set(variables) == {"value", "lane", "hbuf", "total"}
    kbuf = kbuf_model()
    for lane, text in shown(session, frame, variables["value"]).items():
        assert text == str(kbuf[lane % KBUF])
    for lane, text in shown(session, frame, variables["lane"]).items():
        assert text == str(lane)
    assert set(shown(session, frame, variables["total"]).values()) == {"0"}  # not assigned yet


def kernel_frame_check(build):
    session = Session.open(str(EXAMPLE / "dumps" / build))
    frame = session.frames()[1]
    variables = {v.name: v for v in session.variables(frame)}
    assert set(variables) == {"in", "out", "kbuf", "lane", "sum"}
    assert set(shown(session, frame, variables["in"]).values()) == {f"(const int *) 0x{IN_ADDR:x}"}
    assert set(shown(session, frame, variables["out"]).values()) == {f"(int *) 0x{OUT_ADDR:x}"}
    for lane, text in shown(session, frame, variables["lane"]).items():
        assert text == str(lane)


@pytest.mark.parametrize("build", BUILDS)
def test_kernel_frame_in_every_lane(build):
    # clang-19 saves the caller's s33 through an SGPR copy; the unwound frame must still find it
    kernel_frame_check(build)


@pytest.mark.parametrize("build,code_object", [("gfx90a.O0", "shared_callee.gfx90a.O0.co"),
                                                ("clang19.gfx90a.O0", "shared_callee.clang19.gfx90a.O0.co")])
def test_offsets_are_the_listings(build, code_object):
    """The debugger's LDS offsets equal what llvm-objdump printed, and the two arrays tile the
    kernel's .group_segment_fixed_size."""
    listing = EXAMPLE / f"{code_object}.s.txt"
    session = Session.open(str(EXAMPLE / "dumps" / build))
    frames = session.frames()
    hbuf = next(v for v in session.variables(frames[0]) if v.name == "hbuf")
    kbuf = next(v for v in session.variables(frames[1]) if v.name == "kbuf")
    got = {name: session.read_variable(f, v).obj_for(f.lane).memory_place().address[0]
           for name, f, v in (("hbuf", frames[0], hbuf), ("kbuf", frames[1], kbuf))}
    assert got == {"hbuf": listing_offset(listing, "_Z13neighbour_sumii", 12),
                   "kbuf": listing_offset(listing, "_Z5stagePKiPi", 23)}
    group = frames[0].program.code_object.kernels[0].group_segment_fixed_size
    assert sorted([(got["hbuf"], 4 * HBUF), (got["kbuf"], 4 * KBUF)]) == [(0, 256), (256, 128)]
    assert group == 384


@pytest.mark.parametrize("code_object", ["shared_callee.gfx90a.O0.co", "shared_callee.clang19.gfx90a.O0.co"])
def test_lens_places_each_array(code_object):
    from aspace_dap.lsp.program import load_lenses

    (lens,) = load_lenses(str(EXAMPLE / code_object))
    places = {v.name: v.first.text for v in lens.variables("examples/shared_callee/shared_callee.hip")
              if v.name in ("kbuf", "hbuf")}
    assert places == {"hbuf": "local#0x0 (LDS)", "kbuf": "local#0x100 (LDS)"}
