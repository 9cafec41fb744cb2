"""Typed reads through locations, formatted like GDB."""

import numpy as np

from aspace_dap.dwarf.asm import assemble
from aspace_dap.dwarf.evaluator import evaluate
from aspace_dap.dwarf.target import Dialect
from aspace_dap.dwarf.types import (ATE_BOOLEAN, ATE_FLOAT, ATE_SIGNED, ATE_SIGNED_CHAR, ATE_UNSIGNED,
                                    ATE_UNSIGNED_CHAR, ArrayType,
                                    BaseType, EnumType, Member, PointerType, StructType, TypedefType)
from aspace_dap.values.format import format_obj
from aspace_dap.values.objects import Obj

from fake_target import FakeTarget

AMD = Dialect(vendor_ops="amd", heterogeneous=True)
INT = BaseType("int", 4, encoding=ATE_SIGNED)
UINT = BaseType("unsigned int", 4, encoding=ATE_UNSIGNED)
FLOAT = BaseType("float", 4, encoding=ATE_FLOAT)
CHAR = BaseType("char", 1, encoding=ATE_SIGNED_CHAR)
BOOL = BaseType("bool", 1, encoding=ATE_BOOLEAN)


def obj_at(text, t, type_, lanes=(0,)):
    lanes = np.array(lanes)
    res = evaluate(assemble(text, AMD), t, AMD, lanes)
    assert not res.errors
    return Obj.from_location(type_, res.groups[0][1], t, lanes)


def test_struct_with_bitfields_and_char():
    t = FakeTarget()
    s = StructType("P", 12, kind="struct", members=[
        Member("a", INT, 0), Member("b", FLOAT, 32), Member("c", CHAR, 64),
        Member("flag", UINT, 72, bit_size=3), Member("neg", INT, 75, bit_size=5)])
    raw = (-3).to_bytes(4, "little", signed=True) + np.float32(1.5).tobytes() + b"A" + bytes([0b11101_101]) + b"\0\0"
    t.poke(0, 0x1000, raw)
    o = obj_at("DW_OP_addr 0x1000", t, s)
    assert format_obj(o) == "{a = -3, b = 1.5, c = 65 'A', flag = 5, neg = -3}"


def test_array_repeats_and_hex():
    t = FakeTarget()
    arr = ArrayType(None, None, element=INT, dims=[13])
    t.poke(0, 0x2000, b"".join(int(v).to_bytes(4, "little") for v in [1, 2] + [7] * 11))
    o = obj_at("DW_OP_addr 0x2000", t, arr)
    # GDB (valprint.c): a run prints as <repeats N times> when N > `print repeats` (10)
    assert format_obj(o) == "{1, 2, 7 <repeats 11 times>}"
    ten = ArrayType(None, None, element=INT, dims=[12])
    assert format_obj(obj_at("DW_OP_addr 0x2000", t, ten)) == "{1, 2, " + ", ".join(["7"] * 10) + "}"
    two_d = ArrayType(None, None, element=INT, dims=[2, 2])
    assert format_obj(obj_at("DW_OP_addr 0x2000", t, two_d), hex=True) == "{{0x1, 0x2}, {0x7, 0x7}}"


def test_hex_formats_each_element_of_char_arrays_and_structs():
    t = FakeTarget()
    uchar = BaseType("unsigned char", 1, encoding=ATE_UNSIGNED_CHAR)
    t.poke(0, 0x2100, b"!" * 8 + b"\0" * 4 + b"!" * 11 + b"\0")
    eight = ArrayType(None, None, element=uchar, dims=[8])
    assert format_obj(obj_at("DW_OP_addr 0x2100", t, eight)) == '"!!!!!!!!"'
    # GDB: p/x of unsigned char[8] prints {0x21, 0x21, ...}, not a string
    assert format_obj(obj_at("DW_OP_addr 0x2100", t, eight), hex=True) == "{" + ", ".join(["0x21"] * 8) + "}"
    eleven = ArrayType(None, None, element=uchar, dims=[12])
    assert format_obj(obj_at("DW_OP_addr 0x210c", t, eleven), hex=True) == "{0x21 <repeats 11 times>, 0x0}"
    s = StructType("S", 8, kind="struct", members=[Member("tag", ArrayType(None, None, element=CHAR, dims=[4]), 0),
                                                   Member("n", INT, 32)])
    t.poke(0, 0x2200, b"ab\0\0" + (255).to_bytes(4, "little"))
    o = obj_at("DW_OP_addr 0x2200", t, s)
    assert format_obj(o, hex=True) == "{tag = {0x61, 0x62, 0x0, 0x0}, n = 0xff}"


def test_partially_optimized_out_struct():
    t = FakeTarget()
    s = StructType("P", 8, members=[Member("a", INT, 0), Member("b", INT, 32)])
    o = obj_at("DW_OP_constu 42; DW_OP_stack_value; DW_OP_piece 4; DW_OP_piece 4", t, s)
    assert format_obj(o) == "{a = 42, b = <optimized out>}"


def test_pieces_that_stop_before_the_end_of_a_struct():
    """clang-19 -O2 describes a 72-byte struct as `DW_OP_piece 40, DW_OP_regx VGPR6, DW_OP_piece 4`
    (scratch_struct's p): the members past the last piece have no location (DWARF 5 §2.6.1.2: only
    the pieces describe where the object is), so they are optimized out and the rest still prints."""
    t = FakeTarget()
    s = StructType("S", 16, members=[Member("a", INT, 0), Member("b", INT, 32), Member("c", INT, 64),
                                     Member("d", ArrayType(None, None, element=INT, dims=[1]), 96)])
    o = obj_at("DW_OP_piece 4; DW_OP_constu 7; DW_OP_stack_value; DW_OP_piece 4", t, s)
    assert format_obj(o) == "{a = <optimized out>, b = 7, c = <optimized out>, d = {<optimized out>}}"


def test_unavailable_memory_is_not_zero():
    t = FakeTarget()
    t.poke(0, 0x3000, b"\x01\x00")  # only half of the int is in the dump
    o = obj_at("DW_OP_addr 0x3000", t, INT)
    assert format_obj(o) == "<unavailable>"


def test_lane_wide_vgpr_variable():
    t = FakeTarget()
    o = obj_at("DW_OP_regx 2560; DW_OP_LLVM_push_lane; DW_OP_lit4; DW_OP_mul; DW_OP_LLVM_offset", t,
               TypedefType("myint", None, target=UINT), lanes=range(64))
    for lane in (0, 5, 63):
        assert format_obj(o, lane) == str(int(t.vgprs[0][lane]))


def test_enum_bool_pointer_float():
    t = FakeTarget()
    color = EnumType("color", 4, underlying=UINT, enumerators=[("RED", 0), ("GREEN", 1), ("BLUE", 2)])
    flags = EnumType("flags", 4, underlying=UINT, enumerators=[("A", 1), ("B", 2), ("C", 4)])
    t.poke(0, 0x10, (2).to_bytes(4, "little") + (5 | 8).to_bytes(4, "little") + b"\x01")
    assert format_obj(obj_at("DW_OP_addr 0x10", t, color)) == "BLUE"
    assert format_obj(obj_at("DW_OP_addr 0x14", t, flags)) == "(A | C | unknown: 0x8)"
    assert format_obj(obj_at("DW_OP_addr 0x18", t, BOOL)) == "true"
    ptr = PointerType(None, 8, target=INT)
    t.poke(0, 0x20, (0x7F0000001000).to_bytes(8, "little"))
    assert format_obj(obj_at("DW_OP_addr 0x20", t, ptr)) == "(int *) 0x7f0000001000"


def test_char_array_as_string():
    t = FakeTarget()
    t.poke(0, 0x40, b"hi\0\0")
    arr = ArrayType(None, None, element=CHAR, dims=[4])
    assert format_obj(obj_at("DW_OP_addr 0x40", t, arr)) == '"hi"'
