"""Arrays of numbers print from one read of the lane's bytes (Obj.number_elements) exactly as the object per
element prints them: on every example dump's arrays, in every lane, and where some elements' bytes are
missing or optimized out."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from aspace_dap.dwarf.storage import OK, OPTIMIZED_OUT, UNAVAILABLE
from aspace_dap.dwarf.types import ATE_FLOAT, ATE_SIGNED, ArrayType, BaseType, EnumType
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.values.format import format_obj
from aspace_dap.values.objects import Obj

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# the kernels with arrays among their variables: LDS tiles, a struct with an array member, a shared callee's
DUMPS = sorted(p for p in EXAMPLES.glob("*/dumps/*") if (p / "manifest.json").exists()
               and any(k in f"{p.parent.parent.name}/{p.name}" for k in ("lds_tiles", "scratch_struct", "shared_callee")))


def _both(obj: Obj, lane: int, hex: bool = False) -> tuple[str, str]:
    fast = format_obj(obj, lane, hex=hex, top=False)
    with mock.patch.object(Obj, "number_elements", lambda self, lane, count: None):
        generic = format_obj(obj, lane, hex=hex, top=False)
    return fast, generic


def _arrays(obj: Obj, depth: int = 0):
    """obj and the arrays inside it (struct members, rows of arrays), a few levels down."""
    t = obj.stripped
    if isinstance(t, ArrayType):
        yield obj
    if depth < 3:
        for _, member in obj.members():
            yield from _arrays(member, depth + 1)


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_arrays_of_the_examples_print_as_element_objects_do(dump):
    s = Session(load_state(dump))
    compared = 0
    for wave in list(s.state.waves)[:2]:
        lanes = np.nonzero(s.active_lanes(wave))[0][:8]
        for lane in lanes.tolist():
            s.set_focus(wave=wave.id, lane=lane)
            for frame in s.frames()[:2]:
                for var in s.variables(frame):
                    obj = s.read_variable(frame, var).obj_for(lane)
                    if obj is None:
                        continue
                    for array in _arrays(obj):
                        for hex in (False, True):
                            fast, generic = _both(array, 0, hex)
                            assert fast == generic, (var.name, lane)
                            compared += 1
    assert compared


def test_missing_and_optimized_out_elements_print_as_element_objects_do():
    lanes = np.arange(2)
    float_type = BaseType(name="float", size=4, encoding=ATE_FLOAT)
    values = np.array([[1.5, -2.0, 3.25, 0.0, 7.0], [1.5, 1.5, 1.5, 1.5, 1.5]], "<f4")
    data = values.view(np.uint8).reshape(2, 20).copy()
    state = np.full((2, 20), OK, np.uint8)
    state[0, 4:8] = UNAVAILABLE  # element 1 of lane 0 is not in the dump
    state[0, 14] = OPTIMIZED_OUT  # one byte of element 3
    array = Obj(ArrayType(name=None, size=20, element=float_type, dims=[5]), None, None, lanes=lanes, data=data,
                state=state)
    for lane in (0, 1):
        fast, generic = _both(array, lane)
        assert fast == generic
    assert format_obj(array, 0, top=False) == "{1.5, <unavailable>, 3.25, <optimized out>, 7}"
    assert format_obj(array, 1, top=False) == "{1.5, 1.5, 1.5, 1.5, 1.5}"

    # signed shorts and an enum: the signs and the names as the element objects give them
    short = BaseType(name="short", size=2, encoding=ATE_SIGNED)
    raw = np.array([[-1, 2, -32768, 12] * 4] * 2, "<i2").view(np.uint8).reshape(2, 32).copy()
    shorts = Obj(ArrayType(name=None, size=32, element=short, dims=[16]), None, None, lanes=lanes, data=raw,
                 state=np.zeros((2, 32), np.uint8))
    colour = EnumType(name="colour", size=2, enumerators=[("red", -1), ("green", 2)], signed=True)
    enums = Obj(ArrayType(name=None, size=32, element=colour, dims=[16]), None, None, lanes=lanes, data=raw,
                state=np.zeros((2, 32), np.uint8))
    for obj in (shorts, enums):
        for hex in (False, True):
            fast, generic = _both(obj, 1, hex)
            assert fast == generic
    assert format_obj(shorts, 0, top=False).startswith("{-1, 2, -32768, 12, -1,")
    assert format_obj(enums, 0, top=False).startswith("{red, green, -32768, 12, red,")
