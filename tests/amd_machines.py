"""A host with AMD GPUs of two kinds, made from two example dumps of the same program: one state whose
second GPU's dispatches name their own processor (what a ROCm core of such a host reads as)."""

from __future__ import annotations

from aspace_dap.state.model import CodeObjectRef, GpuState

# the second GPU's waves are renumbered by this much: wave ids are unique in a process
SECOND_GPU_WAVE_IDS = 100


def two_gpu_state(first: GpuState, second: GpuState) -> GpuState:
    """`first`'s dispatches on its target GPU, then `second`'s on its own (a GPU of another kind).

    Both dumps ran the same program on the same inputs, so their global memory must be the same bytes
    (one process has one address space); that is checked, not assumed. `second`'s objects are renumbered
    in place (code objects after `first`'s, waves by SECOND_GPU_WAVE_IDS)."""
    g1, g2 = first.memory.get("global"), second.memory.get("global")
    assert g1.ranges() == g2.ranges()
    for start, size in g1.ranges():
        a, b = g1.read(start, size), g2.read(start, size)
        assert (a[1] == b[1]).all() and (a[0][a[1]] == b[0][a[1]]).all(), "the dumps' global memory differs"
    assert first.target.processor != second.target.processor
    co_offset = len(first.code_objects)
    code_objects = list(first.code_objects) + [CodeObjectRef(ref.id + co_offset, ref.path, ref.load_address,
                                                             ref.manifest_path) for ref in second.code_objects]
    for n, d in enumerate(second.dispatches):
        d.id = len(first.dispatches) + n
        d.code_object = None if d.code_object is None else d.code_object + co_offset
        d.processor = second.target.processor
        for wave in d.waves:
            wave.registers  # built under its own id first
            wave.id += SECOND_GPU_WAVE_IDS
    return GpuState(root=None, source=None, producer="two GPUs", manifest={}, target=first.target,
                    code_objects=code_objects, memory=first.memory, dispatches=first.dispatches + second.dispatches,
                    focus=first.focus, stop=first.stop)
