"""A dispatch's grid against its work-groups, as `state validate` checks them.

`grid_size` counts work-items for every vendor and `workgroup_size` work-items per work-group
(docs/STATE_FORMAT.md, "dispatch"), so a dispatch has ceil(grid_size / workgroup_size) work-groups
per dimension. Where the vendor launches whole work-groups only (a CUDA grid is gridDim blocks), a
grid_size that is no multiple of workgroup_size cannot be right: most likely the writer counted
work-groups. A work-group id past the grid's last work-group has no work-items: the builtins of its
lanes (threadIdx, get_global_id, ...) read unavailable. Both are warnings: the dump still loads.
"""

from __future__ import annotations

import numpy as np

from .numbers import parse_number
from .problems import WARNING, Problem

SAID = 10  # work-groups named one by one; the rest are counted in one more problem


def grid_problems(grid: tuple[int, int, int], size: tuple[int, int, int], workgroups: list, here: str,
                  vendor: str | None, whole_workgroups: bool) -> list[Problem]:
    """Problems of dispatch `here` (its JSON path) whose grid_size is `grid` and workgroup_size `size`."""
    problems = []
    if whole_workgroups:
        for axis, items, per_group in zip("xyz", grid, size):
            if items % per_group:
                problems.append(Problem(
                    f"{here}.grid_size",
                    f"{items} work-items in {axis} is not a whole number of work-groups of {per_group}, and a "
                    f"{vendor} launch holds whole work-groups only (grid_size counts work-items, not work-groups)",
                    WARNING))
    groups = np.array([-(-g // s) for g, s in zip(grid, size)], np.int64)
    ids = _ids(workgroups)
    outside = np.flatnonzero((ids >= groups).any(axis=1) & (ids >= 0).all(axis=1))
    for g in outside[:SAID].tolist():
        problems.append(Problem(
            f"{here}.workgroups[{g}].id",
            f"work-group {ids[g].tolist()} lies outside the grid of {groups.tolist()} work-groups (grid_size "
            f"{list(grid)} work-items in work-groups of {list(size)}): its lanes are no work-items of the "
            f"dispatch, and their threadIdx, get_global_id ... read unavailable", WARNING))
    if len(outside) > SAID:
        problems.append(Problem(f"{here}.workgroups", f"{len(outside) - SAID} more work-groups lie outside the grid "
                                                      f"of {groups.tolist()} work-groups", WARNING))
    return problems


def _ids(workgroups: list) -> np.ndarray:
    """(workgroups, 3) ids; -1 in the rows of ids that are no 3 numbers (the walk reports those)."""
    try:  # plain numbers: one pass
        ids = np.array([w["id"] for w in workgroups], np.int64)
        if ids.shape == (len(workgroups), 3):
            return ids
    except (KeyError, TypeError, ValueError, OverflowError):
        pass
    rows = np.full((len(workgroups), 3), -1, np.int64)
    for i, workgroup in enumerate(workgroups):
        value = workgroup.get("id") if isinstance(workgroup, dict) else None
        if isinstance(value, list) and len(value) == 3:
            try:
                rows[i] = [parse_number(v) for v in value]
            except (ValueError, TypeError, OverflowError):
                pass
    return rows
