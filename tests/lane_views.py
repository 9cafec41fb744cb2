"""What the session shows for every lane of a dump: the shared reading of the CUDA core and frame-base tests."""

from __future__ import annotations

import re

import numpy as np

from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.values.format import format_obj


def thread_key(name: str) -> str:
    """A thread's name without its lane counts, kernel, device and hardware slot: the same warp in a folder
    dump and a core (which may spread one dispatch over devices, one grid each)."""
    return re.sub(r"(?: device \d+)?(?: sm \d+ warp \d+)?$", "", re.sub(r"^CUDA kernel \d+ ", "CUDA ", name.split(" [")[0]))


def cfi_return_addresses(path) -> dict[tuple[int, int], list[int]]:
    """(wave id, lane) -> the caller frames' runtime PCs our CFI unwinding finds, for lanes stopped in a
    call: what a core's backtrace tables are written from and checked against."""
    out = {}
    with load_state(path) as state:
        session = Session(state)
        for wave in state.waves:
            for lane in np.flatnonzero(wave.valid_lanes):
                frames = session.frames(wave.id, int(lane))
                if len(frames) > 1:
                    out[wave.id, int(lane)] = [f.runtime_pc for f in frames[1:]]
    return out


def every_lane(path, first_wave_only: bool = False, active_only: bool = False,
               key=thread_key) -> tuple[dict, list[str]]:
    """(thread name, lane, frame index, function, variable or "pc") -> the text shown, for every valid
    (or only every active) lane and every frame; shared (per-block) variables once per wave, as all
    its lanes see the same bytes. Also the session's warnings. `key` names a thread from its full name."""
    out = {}
    with load_state(path) as state:
        session = Session(state)
        for wave in state.waves[:1] if first_wave_only else state.waves:
            name = key(session.thread_name(wave))
            lanes = session.active_lanes(wave) if active_only else wave.valid_lanes
            for n, lane in enumerate(int(x) for x in np.flatnonzero(lanes)):
                for frame in session.frames(wave.id, lane):
                    at = (name, lane, frame.index, frame.name)
                    out[at + ("pc",)] = hex(frame.runtime_pc)
                    for var in session.variables(frame):
                        if n and session.adapter.workgroup_variable(var):
                            continue
                        read = session.read_variable(frame, var, [lane])
                        obj = read.obj_for(lane)
                        out[at + (var.name,)] = format_obj(obj, 0) if obj is not None else \
                            str(read.errors.get(lane, "<unavailable>"))
        return out, list(session.warnings)
