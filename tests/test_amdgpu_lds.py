"""LDS offsets from the ISA, checked against llvm-objdump and the kernels' metadata.

adapters/amdgpu/lds_scan.py decodes the committed code objects itself; llvm-objdump's listings next
to them (`*.co.s.txt`, printed by LLVM 15 or 19) are the independent source: the instruction
boundaries must be the same, every LDS address the decoder finds must be what the listing prints
there, and each solved layout must tile the kernel's .group_segment_fixed_size.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.amdgpu.lds_scan import FunctionScan, IsaError, instruction_lengths, generation, scan_function
from aspace_dap.adapters.amdgpu.lds import solve_layout, static_lds_address
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.index import DwarfIndex
from aspace_dap.dwarf.types import byte_size
from aspace_dap.lsp.program import load_lenses
from aspace_dap.session import Session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LISTINGS = sorted(p for p in EXAMPLES.glob("*/*.co.s.txt"))
INSN = re.compile(r"^\t(?P<text>.*?)\s*// (?P<addr>[0-9A-F]{12}): ")


def listing(path: Path) -> dict[int, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = INSN.match(line)
        if m:
            out[int(m.group("addr"), 16)] = m.group("text").strip()
    return out


def code_object(path: Path):
    (co,) = load_code_objects(str(path).removesuffix(".s.txt"))
    return co


def read_source(path: str) -> str | None:
    file = ROOT / path
    return file.read_text() if file.is_file() else None


@pytest.mark.parametrize("path", LISTINGS, ids=lambda p: p.name)
def test_instruction_boundaries_match_llvm_objdump(path):
    co = code_object(path)
    text = co.elf.get_section_by_name(".text")
    mine = instruction_lengths(text.data(), text["sh_addr"], generation(co.processor))
    assert sorted(mine) == sorted(listing(path))


def test_instruction_lengths_of_encodings_the_examples_lack():
    # bytes printed by `llvm-mc-19 -show-encoding`; s_endpgm after each shows where the next one starts
    endpgm10, endpgm11 = bytes([0x00, 0x00, 0x81, 0xBF]), bytes([0x00, 0x00, 0xB0, 0xBF])
    madmk = bytes([0x01, 0x05, 0x02, 0x40, 0x44, 0x33, 0x22, 0x11])  # gfx1010 v_madmk_f32 v1, v1, 0x11223344, v2
    nsa10 = bytes([0x0A, 0x0F, 0x00, 0xF0, 0, 0, 0, 0, 0x02, 0, 0, 0])  # gfx1030 image_load ..., [v0, v2] (2D, NSA)
    image11 = bytes([0x04, 0x0F, 0x00, 0xF0, 0, 0, 0, 0])  # gfx1100 image_load ..., v[0:1] (2D)
    nsa11 = bytes([0x09, 0x0F, 0x00, 0xF0, 0, 0, 0, 0, 0x02, 0x04, 0, 0])  # gfx1100 image_load ..., [v0, v2, v4] (3D)
    assert instruction_lengths(madmk + endpgm10, 0, 10) == {0: 8, 8: 4}
    assert instruction_lengths(nsa10 + endpgm10, 0, 10) == {0: 12, 12: 4}
    assert instruction_lengths(image11 + endpgm11, 0, 11) == {0: 8, 8: 4}
    with pytest.raises(IsaError):  # GFX11 takes the NSA form's length from the opcode and dimension
        instruction_lengths(nsa11 + endpgm11, 0, 11)


def _constant(token: str) -> int:
    return int(token, 0) & 0xFFFFFFFF


@pytest.mark.parametrize("path", LISTINGS, ids=lambda p: p.name)
def test_lds_addresses_are_what_the_listing_prints(path):
    co = code_object(path)
    insns = listing(path)
    order = sorted(insns)
    found = 0
    for sym in co.symbols.values():
        if sym.type != "FUNC" or not sym.size:
            continue
        scan = scan_function(co.read_memory(sym.value, sym.size), sym.value, co.processor)
        for access in scan.accesses:
            found += 1
            at = order.index(access.pc)
            text = insns[access.pc]
            before = [insns[a] for a in order[max(0, at - 40):at]]
            if access.how == "generic pointer":
                # the low dword: a move of that constant into a register, shortly before
                moves = (re.match(r"[sv]_mov_b32(?:_e32)? [sv]\d+, (-?\d+|0x[0-9a-f]+)$", t) for t in before)
                consts = [_constant(m.group(1)) for m in moves if m]
                assert access.offset in consts, (hex(access.pc), text, access)
                assert re.match(r"(v_addc_co_u32|v_add_co_ci_u32|flat_|global_|v_lshl_add_u64|v_mov_b64|s_mov_b64)",
                                text), text
            else:
                m = re.match(r"(ds_\w+) v[\d:\[\]]+, v(\d+)|(ds_\w+) v(\d+)", text)
                assert m, text  # a DS read or write (GFX11 listings say ds_load / ds_store)
                offset = int(re.search(r"offset:(\d+)", text).group(1)) if "offset:" in text else 0
                if access.kind == "at least":  # the offset field alone, over an index register
                    assert access.offset == offset, (text, access)
                    continue
                vaddr = m.group(2) or m.group(4)
                set_by = [t for t in before if re.match(rf"v_mov_b32_e32 v{vaddr}, ", t)]
                base = _constant(set_by[-1].split(", ")[1])
                assert access.offset == base + offset, (text, set_by[-1], access)
    if "lds_tiles" in path.name or "shared_callee" in path.name:
        assert found, "every LDS example addresses LDS through a constant somewhere"


def lds_variables(co, index):
    """Every variable of the code object whose DWARF location is a fixed LDS address."""
    out = {}
    for sym in co.symbols.values():
        if sym.type != "FUNC" or not sym.size:
            continue
        frames = index.frames_at(sym.value)
        if frames:
            for var in index.function_variables(frames[-1]) + index.globals(frames[-1].cu_offset):
                if static_lds_address(var, index)[1]:
                    out[var.die_offset] = var
    return list(out.values())


@pytest.mark.parametrize("co_path", sorted(str(p) for p in EXAMPLES.glob("*/*.co")), ids=lambda p: Path(p).name)
def test_solved_layouts_tile_the_group_segment(co_path):
    (co,) = load_code_objects(co_path)
    index = DwarfIndex(co.elf, e_machine=co.e_machine)
    layout = solve_layout(co, index, read_source)
    group = co.kernels[0].group_segment_fixed_size
    variables = lds_variables(co, index)
    if group == 0:
        assert variables == []
        return
    spans = []
    for var in variables:
        placement = layout.placement(var)
        assert placement is not None and placement.offset is not None, (var.name, placement)
        spans.append((placement.offset, placement.offset + byte_size(var.type)))
    spans.sort()
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert spans[0][0] == 0 and spans[-1][1] == group  # O0/O2 clang 15 and 19 pack them without holes


def test_without_the_source_two_arrays_of_one_function_stay_unresolved(tmp_path, monkeypatch):
    # tile and row_sums are both in scope at every access; only the source line says which one a
    # constant belongs to. Without it, two layouts fit: nothing is proven, nothing is guessed.
    # (the dump alone in a folder, opened from there: its source is nowhere to be found)
    shutil.copytree(EXAMPLES / "lds_tiles/dumps/gfx90a.O0", tmp_path / "dump")
    monkeypatch.chdir(tmp_path)
    session = Session.open(str(tmp_path / "dump"))
    frame = session.frames()[0]
    variables = {v.name: v for v in session.variables(frame)}
    for name in ("tile", "row_sums"):
        obj = session.read_variable(frame, variables[name]).obj_for(frame.lane)
        assert obj.error.startswith("<unavailable: the code object gives") and "does not pin" in obj.error
        assert session.location_text(obj) == "local#? (LDS, offset unresolved)"
    # what the source does not decide, the call graph can: shared_callee needs no source
    shutil.copytree(EXAMPLES / "shared_callee/dumps/gfx90a.O0", tmp_path / "callee")
    callee = Session.open(str(tmp_path / "callee"))
    f0 = callee.frames()[0]
    hbuf = next(v for v in callee.variables(f0) if v.name == "hbuf")
    assert callee.location_text(callee.read_variable(f0, hbuf).obj_for(f0.lane)) == "local#0x0 (LDS)"


def test_lens_says_where_or_that_it_cannot(monkeypatch):
    (lens,) = load_lenses(str(EXAMPLES / "lds_tiles/lds_tiles.gfx90a.O0.co"))
    found = {v.name: v.first.text for v in lens.variables("examples/lds_tiles/lds_tiles.hip", range(20, 40))}
    assert found["tile"] == "local#0x0 (LDS)" and found["row_sums"] == "local#0x440 (LDS)"
    (blind,) = load_lenses(str(EXAMPLES / "lds_tiles/lds_tiles.gfx90a.O0.co"))
    monkeypatch.setattr(blind, "read_source", lambda path: None)
    found = {v.name: v.first.text for v in blind.variables("examples/lds_tiles/lds_tiles.hip", range(20, 40))}
    assert found["tile"] == found["row_sums"] == "local#? (LDS, offset unresolved)"


def test_garbage_code_never_crashes_the_scan():
    rng = random.Random(7)
    for processor in ("gfx90a", "gfx942", "gfx1030", "gfx1100"):
        for _ in range(200):
            code = bytes(rng.getrandbits(8) for _ in range(4 * rng.randint(1, 64)))
            try:
                scan_function(code, 0x1000, processor)
            except IsaError:
                pass
    with pytest.raises(IsaError):
        generation("gfx803")
    assert np.all([generation(p) for p in ("gfx90a", "gfx942", "gfx1030", "gfx1100")] == np.array([9, 9, 10, 11]))


def test_overlap_across_kernel_and_callee_marks_placeholders(monkeypatch):
    # without the undefined-symbol evidence, kbuf (stage) and hbuf (neighbour_sum) both claim LDS 0:
    # two live arrays of one kernel cannot share bytes, whichever frames they belong to
    import aspace_dap.adapters.amdgpu.lds as lds

    monkeypatch.setattr(lds, "_undefined_symbols", lambda code_object: set())
    (co,) = load_code_objects(str(EXAMPLES / "shared_callee/shared_callee.gfx90a.O0.co"))
    index = DwarfIndex(co.elf, e_machine=co.e_machine)
    layout = solve_layout(co, index, None)
    got = {v.name: layout.placement(v) for v in lds_variables(co, index)}
    assert {name: p.offset for name, p in got.items()} == {"hbuf": 0, "kbuf": 0x100}
    assert all("overlaps" not in p.why for p in got.values())  # proven placements say how
    # and with no ISA evidence and an unknown call graph (calls through registers), the overlap
    # alone makes both unavailable, never LDS 0
    monkeypatch.setattr(lds, "scan_function", lambda code, start, processor: FunctionScan(unknown_calls=1))
    layout = solve_layout(co, index, None)
    got = {v.name: layout.placement(v) for v in lds_variables(co, index)}
    assert all(p.offset is None and "overlaps" in p.why for p in got.values()), got
