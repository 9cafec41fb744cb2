"""Coordinates: where each lane of a wave stands in its dispatch.

Owns the numbering the languages and the vendors' debuggers give a work-item: its id in the
work-group and in the grid, the work-group's id and size, the grid's size (CUDA's threadIdx, blockIdx,
blockDim, gridDim; OpenCL's get_local_id ...; ROCgdb's $_lane_workgroup_pos, gdb-oneapi's
$_workitem_local_id). Everything comes from the dump's dispatch, work-group and lane numbering
(docs/STATE_FORMAT.md, "Work-item ids"): lane L of a wave is flat work-item
`index_in_workgroup * lanes + L` of its work-group, x fastest, then y, then z.

A work-group at the edge of a grid counted in work-items (AMD and Intel dispatches) may be partial;
its work-items are numbered within the partial sizes, as the hardware launches them and as ROCgdb
numbers them (`work_item_info::partial_work_group_sizes`); gridDim is ceil(grid_size / workgroup_size).
A lane that is no work-item of the dispatch (past a partial work-group, or not valid in the dump)
has no coordinates: its values are unavailable, never invented. A source that does not hold the sizes
(an Intel core whose implicit arguments are not mapped) gives every size and id as `<unavailable: why>`;
one that records each lane's id (an Intel core's local ID table) is followed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .programs import Part, Programs


@dataclass(frozen=True)
class LaneCoordinates:
    """One wave's numbering, per lane (rows are lanes; columns x, y, z)."""

    local: np.ndarray        # (lanes, 3) int64: work-item id in the work-group (threadIdx, get_local_id)
    valid: np.ndarray        # (lanes,) bool: the lane is a work-item of the dispatch
    group: tuple[int, int, int]          # the work-group's id (blockIdx, get_group_id)
    group_size: tuple[int, int, int]     # the work-group size the dispatch asked for (blockDim)
    local_size: tuple[int, int, int]     # this work-group's own size: smaller at a partial edge (get_local_size)
    grid_groups: tuple[int, int, int]    # work-groups per dimension (gridDim, get_num_groups)
    grid_items: tuple[int, int, int]     # work-items per dimension (get_global_size)
    wave_in_group: int                   # the wave's position in its work-group ($_thread_workgroup_pos)
    lanes: int                           # the wave size (warpSize)
    sizes_unknown: str | None = None     # why the work-group and grid sizes are unknown (then the ids too)
    ids_unknown: str | None = None       # why the lanes' work-item ids are unknown

    @property
    def global_(self) -> np.ndarray:
        """(lanes, 3) work-item id in the grid (get_global_id, $_workitem_global_id)."""
        return self.local + np.array(self.group, np.int64) * np.array(self.group_size, np.int64)


class Coordinates(Part):
    def __init__(self, programs: Programs):
        super().__init__(programs)
        self._by_wave: dict[int, LaneCoordinates] = {}

    def of(self, wave) -> LaneCoordinates:
        hit = self._by_wave.get(wave.id)
        if hit is None:
            hit = self._by_wave[wave.id] = self._work_out(wave)
        return hit

    def _work_out(self, wave) -> LaneCoordinates:
        dispatch, workgroup = wave.dispatch, wave.workgroup
        lanes = wave.lanes
        group = tuple(int(n) for n in workgroup.id) if workgroup is not None else (0, 0, 0)
        if dispatch is not None and (dispatch.grid_size is None or dispatch.workgroup_size is None):
            nothing = np.zeros((lanes, 3), np.int64)
            return LaneCoordinates(nothing, np.zeros(lanes, bool), group, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0),
                                   int(wave.index_in_workgroup), lanes,
                                   sizes_unknown=dispatch.geometry_unknown or "the dump holds no work-group size")
        size = tuple(max(int(n), 1) for n in dispatch.workgroup_size) if dispatch is not None else (lanes, 1, 1)
        grid = tuple(max(int(n), 1) for n in dispatch.grid_size) if dispatch is not None else size
        # grid_size counts work-items for every vendor; the last group of a dimension may be cut (HSA,
        # OpenCL 2.0), never in a CUDA launch (`state validate` says where a dump has one)
        grid_items = grid
        grid_groups = tuple(-(-g // s) for g, s in zip(grid, size))
        partial = tuple(max(min(s, g - i * s), 0) for g, s, i in zip(grid, size, group))
        recorded = dispatch.local_ids.get(wave.id) if dispatch is not None and dispatch.local_ids else None
        ids_unknown = recorded if isinstance(recorded, str) else None
        sx, sy, sz = (max(n, 1) for n in partial)
        if isinstance(recorded, np.ndarray):  # as the source numbers its lanes (an Intel core's local ID table)
            local = np.zeros((lanes, 3), np.int64)
            local[:len(recorded)] = recorded[:lanes]
            inside = (local < np.array([sx, sy, sz])).all(axis=1) & (np.arange(lanes) < len(recorded))
        else:
            flat = wave.index_in_workgroup * lanes + np.arange(lanes, dtype=np.int64)
            local = np.stack([flat % sx, (flat // sx) % sy, flat // (sx * sy)], axis=1)
            inside = flat < sx * sy * sz
        valid = np.asarray(wave.valid_lanes, bool) & inside & (min(partial) > 0) & (ids_unknown is None)
        return LaneCoordinates(local, valid, group, size, partial, grid_groups, grid_items,
                               int(wave.index_in_workgroup), lanes, ids_unknown=ids_unknown)
