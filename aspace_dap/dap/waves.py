"""Waves and lanes shaped for display, shared by the requests (waveGroups, lanes) and the REPL
(`info waves`, `info lanes`): a wave group's body, wave ids as ranges, one row per lane."""

from __future__ import annotations

import os

import numpy as np

from ..errors import AspaceError
from ..names import display_name
from ..session import Session
from .refs import thread_id

GROUP_WAVES_SHOWN = 8  # wave ids per group in the summary; `waveGroups {group}` lists them all


def group_body(s: Session, index: int, group, full: bool) -> dict:
    ids = group.wave_ids if full else group.wave_ids[:GROUP_WAVES_SHOWN]
    frames = []
    for f in group.frames:
        item = {"name": f["name"], "line": f["line"] or 0, "column": f["column"] or 0}
        if f["file"]:  # a file not found here has no path to give (see handlers._frame_source)
            item["source"] = {"name": os.path.basename(f["file"])}
            if s.openable(f["file"]):
                item["source"]["path"] = f["file"]
        frames.append(item)
    dispatch = group.dispatch
    return {"id": index, "dispatch": dispatch.id if dispatch is not None else None,
            "kernel": display_name(dispatch.kernel) if dispatch is not None and dispatch.kernel else None,
            "frames": frames,
            "waveCount": len(group.wave_ids), "activeLanes": group.active_lanes, "lanes": group.valid_lanes,
            "waveIds": ids.tolist(), "threadIds": [thread_id(w) for w in ids.tolist()],
            "waveRanges": coalesce_ranges(group.wave_ids), "hasFocus": bool((group.wave_ids == s.focus_wave).any())}


def coalesce_ranges(ids, limit: int = 8) -> str:
    """Sorted wave ids as ranges, like cuda-gdb: `0-3995, 3997`; past `limit` ranges, a count of the rest."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return ""
    breaks = np.nonzero(np.diff(ids) != 1)[0]
    starts = np.concatenate(([ids[0]], ids[breaks + 1])).tolist()
    ends = np.concatenate((ids[breaks], [ids[-1]])).tolist()
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in zip(starts[:limit], ends[:limit])]
    if len(starts) > limit:
        parts.append(f"... ({len(starts) - limit} more ranges)")
    return ", ".join(parts)


def lane_rows(s: Session, wave_id: int) -> list[dict]:
    wave = s.wave(wave_id)
    coords = s.coordinates(wave)
    work_items = coords.global_.tolist()  # as get_global_id numbers them (partial groups too)
    known = not (coords.sizes_unknown or coords.ids_unknown)  # else no workItem: the dump does not hold it
    rows = []
    for lane in range(wave.lanes):
        state = s.lane_state(wave, lane)
        row = {"lane": lane, "state": state, "pc": "0x0"} | ({"workItem": work_items[lane]} if known else {})
        try:
            pc = s.lane_pc(wave, lane)
            if pc is None:
                rows.append(row | {"pc": "unknown"})
                continue
            row["pc"] = f"0x{pc:x}"
            program = s.program_for(wave)
            if program.index is not None:
                li = program.index.line_for_pc(program.elf_pc(pc))
                if li is not None:
                    path = s.map_source(li.file)
                    if s.openable(path):  # a file not found here has no path to give (see handlers._frame_source)
                        row["source"] = {"path": path, "name": os.path.basename(li.file)}
                    row["line"] = li.line
        except AspaceError:
            pass
        rows.append(row)
    return rows
