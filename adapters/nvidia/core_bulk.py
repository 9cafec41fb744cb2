"""Many warps of a CUDA core at once: their lanes' pcs and their registers, straight from the tables and
sections the reader (core.py) found at open, without building each warp (what grouping and searching
every warp of a whole GPU need; GpuState.register_bytes, GpuState.lane_pc_table)."""

from __future__ import annotations

import numpy as np

from .core_elf import SHT_PRED, SHT_REGS


def _warps(reader, rows: np.ndarray) -> np.ndarray:
    """The warp (row of the reader's warp arrays) of each wave at `rows` (indices into the state's waves)."""
    waves = reader.state_waves
    return np.array([reader.warp_of_wave[waves[int(i)].id] for i in rows.tolist()], np.int64)


def _lane_rows(reader, warp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every lane row of these warps, warp after warp, and which of `warp` each belongs to."""
    lanes = reader.all_lanes
    starts, ends = lanes.start[warp], lanes.end[warp]
    counts = ends - starts
    owner = np.repeat(np.arange(len(warp)), counts)
    return np.arange(int(counts.sum())) + np.repeat(starts - (np.cumsum(counts) - counts), counts), owner


def lane_pcs(reader, rows: np.ndarray) -> np.ndarray:
    """Every lane's pc of the warps at `rows`, as _load_warp gives them: a valid lane's own row's
    virtual PC, the warp's pc for the others."""
    warp = _warps(reader, rows)
    lanes = reader.all_lanes
    out = np.repeat(reader.warp_pc[warp].astype(np.uint64)[:, None], reader.lanes, axis=1)
    at, owner = _lane_rows(reader, warp)
    valid = lanes.valid_row[at]
    out[owner[valid], lanes.ln[at][valid]] = lanes.rows["virtualPC"][at][valid]
    return out


def register(reader, rows: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Register `name` of the warps at `rows`, as each warp's own register file holds it (_load_warp),
    read for all of them at once: R and P registers from their lanes' sections in the mapped file, the pc
    and exec from the tables read at open; any other register through the warps themselves."""
    waves = reader.state_waves
    warp = _warps(reader, rows)
    kind = {"R": (SHT_REGS, 4), "P": (SHT_PRED, 1)}.get(name[:1]) if name[1:].isdigit() else None
    n, lanes = len(rows), reader.lanes
    if name == "pc":
        data = reader.warp_pc[warp].astype("<u8").view(np.uint8).reshape(n, 8)
        return data.copy(), np.ones((n, 8), bool)
    if name == "exec":
        width = (lanes + 7) // 8
        data = reader.warp_active[warp].astype("<u8").view(np.uint8).reshape(n, 8)[:, :width]
        return data.copy(), np.ones((n, width), bool)
    if kind is None:
        out = [waves[int(i)].registers for i in rows.tolist()]
        got = [r.raw(name) if r.has(name) else (np.zeros(0, np.uint8), np.zeros(0, bool)) for r in out]
        width = max((len(d) for d, _ in got), default=0)
        data, valid = np.zeros((n, width), np.uint8), np.zeros((n, width), bool)
        for k, (d, v) in enumerate(got):
            data[k, :len(d)], valid[k, :len(d)] = d, v
        return data, valid
    sh_type, size = kind
    index = int(name[1:])
    count = reader.counts[sh_type][warp]
    if sh_type == SHT_REGS:  # (a warp holds at most its device's registers: _warps)
        per_device = np.array([d["numRegsPerLane"] for d in reader.devices], np.int64)
        count = np.minimum(count, per_device[reader.warp_device[warp]])
    else:
        per_device = np.array([d["numPredicatesPrLane"] for d in reader.devices], np.int64)
        count = np.minimum(count, per_device[reader.warp_device[warp]])
    held = count > index
    data = np.zeros((n, lanes * size), np.uint8)
    valid = np.repeat(held, lanes * size).reshape(n, lanes * size)
    all_lanes = reader.all_lanes
    lane_rows, owner = _lane_rows(reader, warp)
    found = reader.per_lane[sh_type].first(all_lanes.section[lane_rows], all_lanes.row_in_table[lane_rows])
    table = reader.elf.table
    at = np.maximum(found, 0)
    has = (found >= 0) & (table["size"][at] >= 4 * (index + 1)) & held[owner]
    if has.any():
        mapped = reader.elf.span.array.view(np.ndarray)
        offsets = table["offset"][at[has]].astype(np.int64) + 4 * index
        words = mapped[offsets[:, None] + np.arange(size)]
        column = all_lanes.ln[lane_rows[has]] * size
        data[owner[has][:, None], column[:, None] + np.arange(size)] = words
    return data, valid
