"""benchmarks/gen_big_code_object.py writes code objects the loader and pyelftools accept."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.index import DwarfIndex

GENERATOR = Path(__file__).resolve().parent.parent / "benchmarks" / "gen_big_code_object.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_big_code_object", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def count_dies(dwarf) -> int:
    return sum(1 for cu in dwarf.iter_CUs() for die in cu.iter_DIEs() if not die.is_null())


def test_generated_code_object_is_consistent(tmp_path):
    generator = load_generator()
    out = tmp_path / "small.co"
    assert generator.main([str(out), "--dies", "700", "--functions-per-cu", "25"]) == 0

    (co,) = load_code_objects(out)
    assert (co.processor, co.xnack, co.sramecc, co.code_object_version) == ("gfx90a", "any", "any", 4)
    dwarf = co.dwarf_info()
    cus = list(dwarf.iter_CUs())
    assert len(co.kernels) == len(cus) == 3  # 13 + 25 * 9 = 238 DIEs per full unit
    assert count_dies(dwarf) >= 700

    for kernel, cu in zip(co.kernels, cus):
        descriptor = kernel.descriptor
        assert kernel.entry_address == co.symbols[kernel.name].value
        assert descriptor.group_segment_fixed_size == kernel.group_segment_fixed_size
        assert descriptor.private_segment_fixed_size == kernel.private_segment_fixed_size
        # The unit's code starts with its kernel.
        assert cu.get_top_DIE().attributes["DW_AT_low_pc"].value == kernel.entry_address

    # Every subprogram DIE names a symbol at its low_pc.
    for cu in cus:
        for die in cu.iter_DIEs():
            if die.tag == "DW_TAG_subprogram":
                low_pc = die.attributes["DW_AT_low_pc"].value
                assert co.symbol_at(low_pc).name == die.attributes["DW_AT_name"].value.decode()

    line_program = dwarf.line_program_for_CU(cus[0])
    rows = [entry.state for entry in line_program.get_entries() if entry.state is not None]
    assert rows[0].address == co.kernels[0].entry_address and rows[-1].end_sequence


def test_die_count_scales(tmp_path):
    generator = load_generator()
    image, die_count, cu_count = generator.write_code_object(5000, 100)
    assert die_count >= 5000 and cu_count == 6
    (co,) = load_code_objects(image, name="gen.co")
    assert count_dies(co.dwarf_info()) == die_count


def test_lines_and_declarations_name_the_unit_source(tmp_path):
    generator = load_generator()
    image, _, _ = generator.write_code_object(300, 10)
    (co,) = load_code_objects(image, name="gen.co")
    index = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine)
    entry = co.kernels[1].entry_address
    line = index.line_for_pc(entry + 16)
    assert line is not None and line.file == "/work/generated/gen/unit_00001.hip" and line.line == 11
    (frame,) = index.frames_at(entry + 16)
    variables = index.variables(frame, entry + 16)
    assert {v.name for v in variables} >= {"x", "lane", "p", "acc", "steps", "history", "k"}
    assert {v.decl_file for v in variables} == {line.file}


def test_line_rows_of_a_unit_file(tmp_path):
    generator = load_generator()
    image, _, _ = generator.write_code_object(300, 10)
    (co,) = load_code_objects(image, name="gen.co")
    index = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine)
    entry = co.kernels[1].entry_address
    rows = index.line_rows("gen/unit_00001.hip")  # a relative name matches the full path's tail
    assert rows == index.line_rows("/work/generated/gen/unit_00001.hip")
    # four 16-byte rows per function on lines 10 + 8 * function .. + 3
    functions = len(rows) // 4
    assert functions >= 2 and len(rows) == functions * 4
    for f in range(functions):
        for row in range(4):
            assert rows[10 + 8 * f + row] == [entry + generator.FUNCTION_BYTES * f + 16 * row]
    assert index.line_rows("gen/unit_99999.hip") == {}
