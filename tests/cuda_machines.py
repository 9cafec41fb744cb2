"""A machine with two GPUs of different SM types, made of two example dumps: what the mixed-device CUDA
core tests write as one core and compare with the two folder dumps."""

from __future__ import annotations

import re
from dataclasses import replace

from lane_views import thread_key

from aspace_dap.state.model import GpuState


def two_gpus(first: GpuState, second: GpuState) -> GpuState:
    """Device 0 runs `first`'s dispatches, device 1 `second`'s, each with its own processor and cubins
    (a host with, say, an sm_80 and an sm_90 GPU running the same program). Both read the same global
    memory, so the two dumps must hold the same bytes there. `second`'s objects are renumbered in place."""
    for space in ("global",):
        a, b = first.memory.get(space), second.memory.get(space)
        assert [(r.address, r.size) for r in a.regions] == [(r.address, r.size) for r in b.regions]
        for r in a.regions:
            assert a.read(r.address, r.size)[0].tobytes() == b.read(r.address, r.size)[0].tobytes()
    co_shift = max(ref.id for ref in first.code_objects) + 1
    wave_shift = max(w.id for w in first.waves) + 1
    refs = list(first.code_objects) + [replace(ref, id=ref.id + co_shift) for ref in second.code_objects]
    for wave in second.waves:
        wave.id += wave_shift
    for d in second.dispatches:
        d.id += len(first.dispatches)
        d.code_object = None if d.code_object is None else d.code_object + co_shift
    for device, state in enumerate((first, second)):
        for d in state.dispatches:
            d.device, d.processor = device, state.target.processor
    return GpuState(root=None, source=None, producer="two GPUs", manifest={}, target=first.target,
                    code_objects=refs, memory=first.memory, dispatches=first.dispatches + second.dispatches,
                    focus=first.focus, stop=first.stop)


def device_key(device: int | None = None):
    """A thread key that keeps the device: from a core's thread name, or `device` for a folder dump's."""
    def key(name: str) -> tuple[int, str]:
        found = re.search(r" device (\d+)", name)
        return (int(found.group(1)) if found else device, thread_key(name))
    return key
