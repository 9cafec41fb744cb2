"""HIP's coordinate objects as AMD's HIP headers declare them.

`threadIdx`, `blockIdx`, `blockDim` and `gridDim` are globals of an empty struct type
(`__HIP_Coordinates<__HIP_ThreadIdx>` in ROCm's `amd_hip_runtime.h`, `__hip_thread_idx` in headers
written with properties like examples/hip_builtins); `.x` is a static member of an empty type
(`__HIP_Coordinates<__HIP_ThreadIdx>::x`, linkage name `_ZN17__HIP_CoordinatesI15__HIP_ThreadIdxE1xE`)
whose conversion operator reads the hardware's ids. The DWARF holds no value for any of them: the
debugger shows the lane's coordinates in their place.
"""

from __future__ import annotations

import re

from aspace_dap.dwarf.dies import AT_LINKAGE_NAME, AT_MIPS_LINKAGE_NAME
from aspace_dap.dwarf.types import StructType
from aspace_dap.errors import AspaceError

_KINDS = {"ThreadIdx": "threadIdx", "BlockIdx": "blockIdx", "BlockDim": "blockDim", "GridDim": "gridDim"}
_PROPERTY_TYPES = {"__hip_thread_idx": "threadIdx", "__hip_block_idx": "blockIdx", "__hip_block_dim": "blockDim",
                   "__hip_grid_dim": "gridDim"}
_COORDINATES = re.compile(r"^__HIP_Coordinates<__HIP_(ThreadIdx|BlockIdx|BlockDim|GridDim)>$")
_MEMBER = re.compile(r"^_ZN17__HIP_CoordinatesI\d+__HIP_(ThreadIdx|BlockIdx|BlockDim|GridDim)E1([xyz])E$")


def coordinate_global(var, index) -> tuple[str, str | None] | None:
    """("threadIdx", None) for HIP's `threadIdx` object, ("threadIdx", "x") for its static member `x`;
    None for any other variable."""
    t = var.type
    stripped = t.strip() if t is not None else None
    if isinstance(stripped, StructType):
        name = stripped.name or ""
        m = _COORDINATES.match(name)
        if m:
            return _KINDS[m.group(1)], None
        if name in _PROPERTY_TYPES:
            return _PROPERTY_TYPES[name], None
    if var.name not in ("x", "y", "z") or index is None:
        return None
    try:
        die = index.die(var.die_offset)
        linkage = die.get(AT_LINKAGE_NAME) or die.get(AT_MIPS_LINKAGE_NAME)
    except (AspaceError, IndexError, ValueError):
        return None
    m = _MEMBER.match(linkage) if isinstance(linkage, str) else None
    return (_KINDS[m.group(1)], m.group(2)) if m else None
