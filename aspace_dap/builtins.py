"""The names a GPU language or a vendor's debugger gives a lane's coordinates, in any expression.

    threadIdx  blockIdx  blockDim  gridDim  warpSize              CUDA and HIP, as cuda-gdb prints them
    get_local_id(n)  get_group_id(n)  get_global_id(n)            OpenCL's work-item functions
    get_local_size(n)  get_global_size(n)  get_num_groups(n)
    $_lane  $_dispatch_pos  $_thread_workgroup_pos  $_lane_workgroup_pos     ROCgdb's convenience variables
    $_workitem_local_id  $_workitem_global_id  $_thread_workgroup            gdb-oneapi's

Values come per lane from the session's coordinates (session/coordinates.py); a lane that is no
work-item of the dispatch reads as unavailable. A program variable of the same name wins over a
builtin (expressions.py asks here only when the program has none, or when it is one of HIP's
coordinate objects, which hold no value of their own).
"""

from __future__ import annotations

import numpy as np

from .dwarf.storage import OK, UNAVAILABLE
from .dwarf.types import ATE_SIGNED, ATE_SIGNED_CHAR, ATE_UNSIGNED, ArrayType, BaseType, Member, StructType, Type
from .errors import AspaceError, EvaluationError
from .values.objects import Obj

_UINT = BaseType("unsigned int", 4, encoding=ATE_UNSIGNED)
_INT = BaseType("int", 4, encoding=ATE_SIGNED)
_SIZE_T = BaseType("size_t", 8, encoding=ATE_UNSIGNED)
_CHAR = BaseType("char", 1, encoding=ATE_SIGNED_CHAR)


def _xyz(name: str) -> StructType:
    return StructType(name, 12, members=[Member(axis, _UINT, 32 * i) for i, axis in enumerate("xyz")])


# CUDA's types for them (cuda-gdb: `ptype threadIdx` is uint3, `ptype blockDim` is dim3)
_STRUCTS = {"threadIdx": _xyz("uint3"), "blockIdx": _xyz("uint3"), "blockDim": _xyz("dim3"), "gridDim": _xyz("dim3")}
VARIABLES = frozenset([*_STRUCTS, "warpSize"])
FUNCTIONS = frozenset(["get_local_id", "get_group_id", "get_global_id", "get_local_size", "get_global_size",
                       "get_num_groups"])
CONVENIENCE = frozenset(["_lane", "_dispatch_pos", "_thread_workgroup_pos", "_lane_workgroup_pos",
                         "_workitem_local_id", "_workitem_global_id", "_thread_workgroup"])
# what OpenCL's functions answer for a dimension past the dispatch's (OpenCL 3.0, 6.15.1)
_PAST_LAST_DIMENSION = {"get_local_id": 0, "get_group_id": 0, "get_global_id": 0, "get_local_size": 1,
                        "get_global_size": 1, "get_num_groups": 1}


def _coordinates(scope):
    session, frame = scope.session, scope.frame
    wave = session.wave(frame.wave_id if frame is not None else None)
    return session.coordinates(wave)


def _rows(scope, table: np.ndarray) -> np.ndarray:
    """Per requested lane, a row of `table` (indexed by lane number)."""
    return table[np.asarray(scope.lanes, np.int64)]


def _object(scope, t: Type, values: np.ndarray, known: np.ndarray) -> Obj:
    """An object of type `t` holding `values` (rows of little-endian bytes) per requested lane;
    rows not `known` are unavailable."""
    data = np.ascontiguousarray(values).view(np.uint8).reshape(len(scope.lanes), -1)
    state = np.where(known[:, None], OK, UNAVAILABLE).astype(np.uint8)
    state = np.broadcast_to(state, data.shape).copy()
    return Obj(t, None, None, lanes=np.asarray(scope.lanes, np.int64), data=data.copy(), state=state)


def _known(scope, coords) -> np.ndarray:
    return _rows(scope, coords.valid)


# what needs the lanes' work-item ids, and what needs only the dispatch's sizes
_NEEDS_IDS = frozenset(["threadIdx", "get_local_id", "get_global_id", "_workitem_local_id", "_workitem_global_id",
                        "_lane_workgroup_pos"])
_NEEDS_SIZES = frozenset(["blockDim", "gridDim", "get_local_size", "get_global_size", "get_num_groups"])


def _unknown(coords, name: str) -> str | None:
    """Why `name` cannot be told for this wave (the source does not hold the sizes or the ids), or None."""
    if name in _NEEDS_IDS or name in _NEEDS_SIZES:
        if coords.sizes_unknown:
            return coords.sizes_unknown
        if name in _NEEDS_IDS:
            return coords.ids_unknown
    return None


def _failed(scope, t: Type, why: str) -> Obj:
    return Obj.failed(t, f"<unavailable: {why}>", np.asarray(scope.lanes, np.int64))


def variable(scope, name: str, member: str | None = None) -> Obj:
    """threadIdx, blockIdx, blockDim, gridDim (whole, or one `member` of them) or warpSize."""
    coords = _coordinates(scope)
    n = len(scope.lanes)
    known = _known(scope, coords)
    if name == "warpSize":
        return _object(scope, _INT, np.full(n, coords.lanes, "<i4"), np.ones(n, bool))
    why = _unknown(coords, name)
    if why:
        obj = _failed(scope, _STRUCTS[name], why)
        return obj if member is None else _failed(scope, _UINT, why)
    if name == "threadIdx":
        table = _rows(scope, coords.local)
    else:  # the wave's work-group and the dispatch's sizes: the same for every lane
        row = {"blockIdx": coords.group, "blockDim": coords.group_size, "gridDim": coords.grid_groups}[name]
        table, known = np.tile(np.array(row, np.int64), (n, 1)), np.ones(n, bool)
    values = table.astype("<u4")
    obj = _object(scope, _STRUCTS[name], values, known)
    if member is None:
        return obj
    return dict(obj.members())[member]


def call(scope, name: str, args: list[Obj]) -> Obj:
    """One of OpenCL's work-item functions for the scope's lanes."""
    from .expressions import _numbers  # per-lane numbers of an argument object

    if len(args) != 1:
        raise EvaluationError(f"{name} takes one argument (the dimension), not {len(args)}")
    dims = _numbers(args[0])
    coords = _coordinates(scope)
    why = _unknown(coords, name)
    if why:
        return _failed(scope, _SIZE_T, why)
    n = len(scope.lanes)
    per_lane = {"get_local_id": _rows(scope, coords.local), "get_global_id": _rows(scope, coords.global_)}
    fixed = {"get_group_id": coords.group, "get_local_size": coords.local_size, "get_global_size": coords.grid_items,
             "get_num_groups": coords.grid_groups}
    values = np.zeros(n, "<u8")
    known = _known(scope, coords) if name in per_lane else np.ones(n, bool)
    for i, dim in enumerate(dims):
        if dim is None or isinstance(dim, float) or dim < 0:
            raise EvaluationError(f"{name}: the dimension must be a non-negative integer")
        if dim > 2:
            values[i] = _PAST_LAST_DIMENSION[name]
            known[i] = True
        elif name in per_lane:
            values[i] = per_lane[name][i, dim]
        else:
            values[i] = fixed[name][dim]
    return _object(scope, _SIZE_T, values, known)


def convenience(scope, name: str) -> Obj:
    """$_lane and the ROCgdb / gdb-oneapi convenience variables, per lane."""
    if name not in CONVENIENCE:
        raise AspaceError(f"unknown convenience variable ${name}")
    coords = _coordinates(scope)
    lanes = np.asarray(scope.lanes, np.int64)
    n = len(lanes)
    known = _known(scope, coords)
    if name == "_lane":
        return _object(scope, _INT, lanes.astype("<i4"), np.ones(n, bool))
    if name == "_thread_workgroup_pos":
        return _object(scope, _INT, np.full(n, coords.wave_in_group, "<i4"), np.ones(n, bool))
    why = _unknown(coords, name)
    if why:
        return _failed(scope, ArrayType(None, 12, element=_UINT, dims=[3]) if name != "_lane_workgroup_pos"
                       else ArrayType(None, 1, element=_CHAR, dims=[1]), why)
    if name in ("_workitem_local_id", "_workitem_global_id", "_thread_workgroup"):
        if name == "_thread_workgroup":
            table, known = np.tile(np.array(coords.group, np.int64), (n, 1)), np.ones(n, bool)
        else:
            table = _rows(scope, coords.local if name == "_workitem_local_id" else coords.global_)
        return _object(scope, ArrayType(None, 12, element=_UINT, dims=[3]), table.astype("<u4"), known)
    # strings, as ROCgdb prints them: "(1,0,0)/3" and "[5,0,0]"
    if name == "_dispatch_pos":
        gx, gy, gz = coords.group
        texts = [f"({gx},{gy},{gz})/{coords.wave_in_group}"] * n
        known = np.ones(n, bool)
    else:
        local = _rows(scope, coords.local)
        texts = [f"[{x},{y},{z}]" for x, y, z in local.tolist()]
    width = max(len(t) for t in texts) + 1
    raw = np.zeros((n, width), np.uint8)
    for i, text in enumerate(texts):
        raw[i, :len(text)] = np.frombuffer(text.encode(), np.uint8)
    return _object(scope, ArrayType(None, width, element=_CHAR, dims=[width]), raw, known)
