"""Type names as C declares them and GDB prints them (`ptype`, the `(type) 0x...` of a pointer value)."""

import pytest

from aspace_dap.dwarf.types import (ArrayType, BaseType, FunctionType, PointerType, QualifiedType, StructType,
                                    TypedefType, VoidType, c_type_name)

FLOAT = BaseType(name="float", size=4)
INT = BaseType(name="int", size=4)
CHAR = BaseType(name="char", size=1)
TILE = ArrayType(element=FLOAT, dims=[16, 17])


@pytest.mark.parametrize("t, spelled", [
    (PointerType(target=FLOAT), "float *"),
    (TILE, "float [16][17]"),
    (PointerType(target=TILE), "float (*)[16][17]"),
    (ArrayType(element=PointerType(target=FLOAT), dims=[4]), "float *[4]"),
    (PointerType(target=PointerType(target=CHAR)), "char **"),
    (PointerType(target=QualifiedType(qualifier="const", target=CHAR)), "const char *"),
    (QualifiedType(qualifier="const", target=PointerType(target=INT)), "int * const"),
    (PointerType(target=FunctionType(return_type=INT, params=[INT, FLOAT])), "int (*)(int, float)"),
    (PointerType(target=FunctionType(return_type=None, params=[])), "void (*)(void)"),
    (PointerType(target=VoidType()), "void *"),
    (PointerType(target=TypedefType(name="row_t", target=TILE)), "row_t *"),
    (PointerType(target=StructType(name="Particle")), "Particle *"),
    (PointerType(target=FLOAT, kind="reference"), "float &"),
    (ArrayType(element=FLOAT, dims=[None]), "float []"),
])
def test_types_are_spelled_as_c_declares_them(t, spelled):
    assert c_type_name(t) == spelled
    assert t.display_name() == spelled


def test_a_pointer_chain_too_long_to_print_ends_in_an_ellipsis():
    t = FLOAT
    for _ in range(200):
        t = PointerType(target=t)
    assert c_type_name(t).startswith("... *")
