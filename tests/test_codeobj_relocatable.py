"""AMDGPU relocatable device objects (`.o`): laid out and relocated on load, they describe the same program
as the code object the linker makes of them.

The objects are clang-15 (-save-temps) and clang-19 (-fhip-emit-relocatable) builds of every example,
next to the linked code objects of the same compile (examples/build.sh relocatable). Expectations come
from the linked objects (ld.lld's layout and relocation of the same bytes), from llvm-dwarfdump-19's
listing of each `.o`, and from AMDGPU's relocation table (AMDGPUUsage, "AMDGPU ELF Relocation Records").
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.adapters.amdgpu.relocations import field_value, relocate_object
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.index import DwarfIndex, LocList
from aspace_dap.errors import CodeObjectError
from dwarfdump_listing import line_tables, read_dies
from test_codeobj_malformed import make_bundle

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# (example, build): EXAMPLES/example/example.build.o and the linked example.build.co of the same compile
PAIRS = [("divergent_call", "clang15.gfx1030.O0"), ("divergent_call", "clang19.gfx1100.O2"),
         ("lds_tiles", "clang15.gfx1030.O2"), ("lds_tiles", "clang19.gfx942.O0"),
         ("scratch_struct", "clang15.gfx1100.O0"), ("scratch_struct", "clang19.gfx942.O2"),
         ("shared_callee", "clang15.gfx940.O0"), ("shared_callee", "clang19.gfx1100.O0")]
IDS = [f"{example}-{build}" for example, build in PAIRS]

R_AMDGPU_ABS32_LO, R_AMDGPU_ABS32_HI, R_AMDGPU_ABS64, R_AMDGPU_REL32, R_AMDGPU_ABS32 = 1, 2, 3, 4, 6
R_AMDGPU_GOTPCREL = 7
SHF_EXECINSTR = 0x4


def paths(example: str, build: str) -> tuple[Path, Path]:
    stem = EXAMPLES / example / f"{example}.{build}"
    return stem.with_name(stem.name + ".o"), stem.with_name(stem.name + ".co")


def text_address(linked: Path) -> int:
    """Where the linker put `.text` (the object's code starts there)."""
    return ELFFile(io.BytesIO(linked.read_bytes())).get_section_by_name(".text")["sh_addr"]


def functions(path: Path) -> dict[str, tuple[int, int]]:
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    return {s.name: (s["st_value"], s["st_size"]) for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"}


def load(path: Path):
    (co,) = load_code_objects(path)
    return co


@pytest.mark.parametrize("example, build", PAIRS, ids=IDS)
def test_object_is_its_linked_code_laid_out_from_zero(example, build):
    obj_path, linked_path = paths(example, build)
    obj, linked = load(obj_path), load(linked_path)
    shift = text_address(linked_path)
    assert obj.relocated and obj.e_type == "ET_REL" and not linked.relocated
    assert (obj.processor, obj.wavefront_size) == (linked.processor, linked.wavefront_size)
    linked_functions = functions(linked_path)
    assert linked_functions
    for name, (value, size) in linked_functions.items():
        assert (obj.symbols[name].value + shift, obj.symbols[name].size) == (value, size), name
        # code relocations applied (R_AMDGPU_REL32_LO/HI of the calls): the linker's bytes
        assert obj.read_memory(obj.symbols[name].value, size) == linked.read_memory(value, size), name
    assert [k.name for k in obj.kernels] == [k.name for k in linked.kernels]
    for mine, theirs in zip(obj.kernels, linked.kernels):
        a, b = mine.descriptor, theirs.descriptor
        assert a is not None and b is not None
        # the entry field is R_AMDGPU_REL64 (S + A - P) against the kernel: it reaches the kernel's code
        assert a.address + a.kernel_code_entry_byte_offset == obj.symbols[mine.name].value
        assert b.address + b.kernel_code_entry_byte_offset == linked.symbols[theirs.name].value
        assert (mine.vgpr_count, mine.sgpr_count, mine.group_segment_fixed_size,
                mine.private_segment_fixed_size, mine.wavefront_size) == \
               (theirs.vgpr_count, theirs.sgpr_count, theirs.group_segment_fixed_size,
                theirs.private_segment_fixed_size, theirs.wavefront_size)


@pytest.mark.parametrize("example, build", PAIRS, ids=IDS)
def test_the_linked_object_is_what_ld_lld_makes_of_the_object(tmp_path, example, build):
    """The premise of the comparisons here: each `.co` is the object linked as clang's driver links it."""
    obj, linked = paths(example, build)
    tool = f"ld.lld-{build[5:7]}"  # the linker of that clang
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (apt-get install lld-{build[5:7]}): the link is not redone")
    out = tmp_path / "linked.co"
    subprocess.run([tool, "-shared", "--no-undefined", "-o", str(out), str(obj)], check=True)
    assert out.read_bytes() == linked.read_bytes()


def _locations(index: DwarfIndex, pc: int, shift: int):
    out = []
    for frame in index.frames_at(pc):
        for var in index.variables(frame, pc):
            loc = var.location
            where = [(lo + shift, hi + shift, bytes(e)) for lo, hi, e in loc.entries] \
                if isinstance(loc, LocList) else loc
            out.append((frame.function, var.name, var.decl_line, where))
    return out


@pytest.mark.parametrize("example, build", PAIRS, ids=IDS)
def test_dwarf_of_the_object_is_the_linked_dwarf_moved(example, build):
    obj_path, linked_path = paths(example, build)
    obj, linked = load(obj_path), load(linked_path)
    shift = text_address(linked_path)
    mine = DwarfIndex(obj.elf, e_machine=obj.e_machine)
    theirs = DwarfIndex(linked.elf, e_machine=linked.e_machine)
    probed = 0
    for name, (value, size) in functions(linked_path).items():
        for pc in range(value, value + size, 4):
            a, b = mine.line_for_pc(pc - shift), theirs.line_for_pc(pc)
            assert (a.file, a.line, a.column) == (b.file, b.line, b.column), (name, hex(pc))
            frames_a = [(f.function, f.decl_line, f.call_line) for f in mine.frames_at(pc - shift)]
            assert frames_a == [(f.function, f.decl_line, f.call_line) for f in theirs.frames_at(pc)], hex(pc)
            if pc % 64 == value % 64:
                assert _locations(mine, pc - shift, shift) == _locations(theirs, pc, 0), (name, hex(pc))
            probed += 1
    assert probed > 50


def _single_text(path: Path) -> bool:
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    return sum(1 for s in elf.iter_sections() if s["sh_flags"] & SHF_EXECINSTR) == 1


@pytest.mark.parametrize("example, build", [p for p in PAIRS if _single_text(paths(*p)[0])],
                         ids=[i for p, i in zip(PAIRS, IDS) if _single_text(paths(*p)[0])])
def test_llvm_dwarfdump_reads_the_same_addresses(example, build):
    """With one `.text`, the object's addresses are llvm-dwarfdump's for the `.o` (sections at 0)."""
    obj_path, _ = paths(example, build)
    text = obj_path.with_name(obj_path.name + ".dwarf.txt").read_text()
    index = DwarfIndex(load(obj_path).elf, e_machine=224)
    dies = read_dies(text)
    subprograms = loclists = 0
    for die in dies.values():
        if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attrs and "DW_AT_high_pc" in die.attrs:
            low = int(die.attrs["DW_AT_low_pc"].strip("()"), 16)
            high = int(die.attrs["DW_AT_high_pc"].strip("()"), 16)  # printed as the address it gives
            frame = index.frames_at(low)[-1]
            assert frame.die_offset == die.offset and frame.ranges == [(low, high)], (hex(low), frame)
            subprograms += 1
        if die.entries:
            # a PC of the list where its scope (a loop's block may start later) holds the variable
            pcs = (pc for lo, hi, _ in die.entries for pc in range(lo, hi, 4))
            found = next(found for pc in pcs if (found := [v for f in index.frames_at(pc)
                                                            for v in index.variables(f, pc)
                                                            if v.die_offset == die.offset]))
            assert len(found) == 1, hex(die.offset)
            assert [(a, b) for a, b, _ in found[0].location.entries] == [(a, b) for a, b, _ in die.entries]
            loclists += 1
    (table,) = line_tables(text)
    rows = 0
    for sequence in table.sequences:
        for n, (address, line, file_no, end) in enumerate(sequence):
            if not end and sequence[n + 1][0] != address:  # of rows at one address, the last one holds
                info = index.line_for_pc(address)
                assert (info.line, info.file) == (line, table.files[file_no]), hex(address)
                rows += 1
    assert subprograms and loclists and rows > 20, (subprograms, loclists, rows)


def test_some_objects_have_one_text_section_and_some_several():
    singles = [_single_text(paths(*p)[0]) for p in PAIRS]
    assert sum(singles) >= 3 and not all(singles)


# --- the relocation records, one at a time ---------------------------------------------------------------

OBJECT = paths("lds_tiles", "clang19.gfx942.O0")[0]


def _rela(data: bytes, name: str) -> tuple[int, int, int]:
    """(file offset of the records, their count, file offset of the section they relocate) of `name`."""
    elf = ELFFile(io.BytesIO(data))
    rela = elf.get_section_by_name(name)
    target = elf.get_section(rela["sh_info"])
    return rela["sh_offset"], rela["sh_size"] // 24, target["sh_offset"]


def _patched(data: bytes, name: str, n: int, *, rtype: int | None = None, offset: int | None = None,
             addend: int | None = None) -> bytes:
    at, count, _ = _rela(data, name)
    assert n < count
    out = bytearray(data)
    r_offset, info, r_addend = struct.unpack_from("<QQq", out, at + 24 * n)
    if rtype is not None:
        info = (info >> 32) << 32 | rtype
    struct.pack_into("<QQq", out, at + 24 * n, r_offset if offset is None else offset, info,
                     r_addend if addend is None else addend)
    return bytes(out)


def _record(data: bytes, name: str, n: int) -> tuple[int, int, int]:
    at, _, _ = _rela(data, name)
    r_offset, info, r_addend = struct.unpack_from("<QQq", data, at + 24 * n)
    return r_offset, info & 0xFFFFFFFF, r_addend


@pytest.mark.parametrize("rtype, named", [(R_AMDGPU_REL32, "R_AMDGPU_REL32 (4)"),
                                          (R_AMDGPU_GOTPCREL, "R_AMDGPU_GOTPCREL (7)"),
                                          (12, "unknown AMDGPU relocation type 12")])
def test_a_relocation_dwarf_does_not_take_is_an_error_naming_it(rtype, named):
    data = _patched(OBJECT.read_bytes(), ".rela.debug_info", 0, rtype=rtype)
    with pytest.raises(CodeObjectError) as err:
        load_code_objects(data, name="patched.o")
    message = str(err.value)
    assert named in message and ".rela.debug_info entry 0" in message and "patched.o" in message


def test_a_value_that_does_not_fit_its_field_is_an_error():
    data = OBJECT.read_bytes()
    assert _record(data, ".rela.debug_str_offsets", 0)[1] == R_AMDGPU_ABS32
    with pytest.raises(CodeObjectError, match=r"R_AMDGPU_ABS32 \(6\) value 0x1000000.. does not fit the 32-bit"):
        load_code_objects(_patched(data, ".rela.debug_str_offsets", 0, addend=1 << 32), name="patched.o")


def test_a_record_past_its_section_is_an_error():
    data = OBJECT.read_bytes()
    with pytest.raises(CodeObjectError, match=r"entry 2 patches \.debug_addr\+0x10000, past its"):
        load_code_objects(_patched(data, ".rela.debug_addr", 2, offset=0x10000), name="patched.o")


def test_each_dwarf_type_computes_what_amdgpus_table_says():
    """ABS32 = S + A, ABS32_LO = (S + A) & 0xFFFFFFFF, ABS32_HI = (S + A) >> 32, ABS64 = S + A; the
    .debug_str_offsets records name .debug_str (S = 0 in a DWARF section), so S + A is the addend."""
    data = OBJECT.read_bytes()
    name = ".rela.debug_str_offsets"
    offset, rtype, addend = _record(data, name, 3)
    assert rtype == R_AMDGPU_ABS32 and addend > 0
    big = (5 << 32) | addend
    for kind, a, value in ((R_AMDGPU_ABS32, addend, addend), (R_AMDGPU_ABS32_LO, big, addend),
                           (R_AMDGPU_ABS32_HI, big, 5)):
        (co,) = load_code_objects(_patched(data, name, 3, rtype=kind, addend=a), name="patched.o")
        assert co.section_data(".debug_str_offsets")[offset:offset + 4] == value.to_bytes(4, "little"), kind
    offset, rtype, addend = _record(data, ".rela.debug_addr", 4)
    assert rtype == R_AMDGPU_ABS64
    co = load_code_objects(data, name="object.o")[0]
    r_sym = struct.unpack_from("<Q", data, _rela(data, ".rela.debug_addr")[0] + 24 * 4 + 8)[0] >> 32
    symtab = ELFFile(io.BytesIO(co.data)).get_section_by_name(".symtab")
    want = symtab.get_symbol(r_sym)["st_value"] + addend
    assert co.section_data(".debug_addr")[offset:offset + 8] == want.to_bytes(8, "little")


def test_undefined_symbols_are_zero_in_dwarf_as_the_linker_leaves_them():
    """clang's __shared__ variables are undefined symbols of the `.o`; the linked DWARF holds 0 for them."""
    obj_path, linked_path = paths("lds_tiles", "clang19.gfx942.O0")
    obj, linked = load(obj_path), load(linked_path)
    mine = np.frombuffer(obj.section_data(".debug_addr")[8:], "<u8")
    theirs = np.frombuffer(linked.section_data(".debug_addr")[8:], "<u8")
    shift = text_address(linked_path)
    assert len(mine) == len(theirs) and list(theirs[:2]) == [0, 0] and list(mine[:2]) == [0, 0]
    # the entries for code: where the object's code starts, the linker put `.text`
    code = [i for i, v in enumerate(theirs) if v >= shift]
    assert len(code) >= 2 and all(int(mine[i]) + shift == int(theirs[i]) for i in code)


def test_relocating_again_changes_nothing():
    once = relocate_object(OBJECT.read_bytes(), "x.o")
    assert relocate_object(once, "x.o") == once


def test_a_bundle_entry_that_is_a_relocatable_object_is_relocated():
    data = OBJECT.read_bytes()
    bundle = make_bundle([("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx942", data)])
    (co,) = load_code_objects(bundle, name="device.o")
    assert co.relocated and co.data == load(OBJECT).data
    assert co.name == "device.o#hipv4-amdgcn-amd-amdhsa--gfx942"


@pytest.mark.parametrize("rtype, s, a, p, value", [
    # AMDGPUUsage's table: REL32 = S + A - P, REL32_LO/HI its halves, REL64 = S + A - P in 64 bits
    (4, 0x1000, 4, 0x20, 0xFE4), (10, 0x1000, 4, 0x20, 0xFE4), (11, 0x1000, 4, 0x20, 0),
    (10, 0x20, 4, 0x1000, 0xFFFFF024), (11, 0x20, 4, 0x1000, 0xFFFFFFFF), (5, 0x20, 0, 0x1000, (1 << 64) - 0xFE0),
    (1, 0x1_2345_6789, 0x10, 0, 0x2345_6799), (2, 0x1_2345_6789, 0x10, 0, 1),
    (3, 0x1_2345_6789, -0x9, 0, 0x1_2345_6780),
    # REL16: a branch's word offset from the next instruction, 16 bits signed
    (14, 0x100, 0, 0x80, 0x1F), (14, 0x80, 0, 0x100, 0xFFDF), (14, 0x40000, 0, 0, None),
    (7, 0x1000, 0, 0, None),  # GOT-relative: not something a debugger computes
])
def test_field_values_follow_amdgpus_table(rtype, s, a, p, value):
    assert field_value(rtype, s, a, p) == value


def test_an_object_of_a_million_records_costs_about_twice_its_size(tmp_path):
    """The records are read where they lie, a slice at a time, and only what relocating changes is copied:
    loading grows the process's peak by about the file (read) and the relocated object, not by copies
    per record (each record's fields in int64 and Python integers cost eight times the file)."""
    data = OBJECT.read_bytes()
    at, count, _ = _rela(data, ".rela.debug_str_offsets")
    records = data[at:at + 24 * count]
    n = 1_000_000
    big = bytearray(data) + bytes(-len(data) % 8)
    where = len(big)
    big += (records * -(-n // count))[:24 * n]  # its own records again and again: all valid
    header = ELFFile(io.BytesIO(data))
    index = next(i for i, s in enumerate(header.iter_sections()) if s.name == ".rela.debug_str_offsets")
    struct.pack_into("<QQ", big, header.header["e_shoff"] + 64 * index + 24, where, 24 * n)
    path = tmp_path / "many.o"
    path.write_bytes(big)
    size = len(big)
    probe = ("import sys; from pathlib import Path; from aspace_dap.codeobj import load_code_objects\n"
             "hwm = lambda: next(int(l.split()[1]) << 10 for l in Path('/proc/self/status').read_text().splitlines()"
             " if l.startswith('VmHWM'))\n"
             "before = hwm(); (co,) = load_code_objects(sys.argv[1]); assert co.relocated; print(hwm() - before)")
    grown = int(subprocess.run([sys.executable, "-c", probe, str(path)], check=True, capture_output=True, text=True,
                               cwd=ROOT, timeout=120).stdout)
    assert grown < 2 * size + (16 << 20), f"{grown >> 20} MiB for a {size >> 20} MiB object"
    # the records past the first slices were applied as the first ones are
    (co,) = load_code_objects(big, name="many.o")
    assert co.section_data(".debug_str_offsets") == load(OBJECT).section_data(".debug_str_offsets")
