"""GPU cores of whole machines, made at bench or test time from an example dump's wave (never committed).

    python benchmarks/gen_machines.py OUT_FOLDER [--kind amd|cuda]

- `amd_node_state`: a node of AMD GPUs (gfx942, an MI300X's 8 XCCs each), every GPU running one
  dispatch of the divergent_call clang-19 -O2 kernel with `waves` waves in workgroups of 4: each wave
  the example's registers (so it stops where the example does), widened to `vgprs` VGPRs and
  `acc_vgprs` AccVGPRs of random bytes, each workgroup with `lds` bytes of LDS.
- `cuda_node_state`: a full H100 (132 SMs x 64 warps) running the divergent_call sm_90 -G kernel,
  every warp the example's first warp (its registers, local memory and lane rows) under its own
  block and warp index.
Both are GpuStates in memory (register files shared between waves where they are equal), handed to the
vendors' core writers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aspace_dap.state import load_state  # noqa: E402
from aspace_dap.state.corefiles import BytesSpan  # noqa: E402
from aspace_dap.state.memory import Region, SparseMemory  # noqa: E402
from aspace_dap.state.model import Dispatch, GpuState, Wave, Workgroup  # noqa: E402
from aspace_dap.state.registers import RegisterFile  # noqa: E402

AMD_EXAMPLE = REPO / "examples" / "divergent_call" / "dumps" / "clang19.gfx942.O2"
CUDA_EXAMPLE = REPO / "examples" / "cuda" / "dumps" / "divergent_call.sm_90.G"
WAVES_PER_GROUP = 4


def amd_node_state(*, gpus: int = 8, waves: int = 1216, vgprs: int = 128, acc_vgprs: int = 128,
                   lds: int = 64 << 10, dispatches: int = 1, seed: int = 0, pcs: list[int] | None = None) -> GpuState:
    """`gpus` GPUs, each running `dispatches` dispatches of `waves` waves. `pcs`: where the waves stop
    (wave k at pcs[k % len(pcs)], code object addresses); by default where the example's wave does."""
    example = load_state(AMD_EXAMPLE)
    wave0 = example.waves[0]
    lanes = wave0.lanes
    held = dict(wave0.registers.layout)
    layout = [(n, s) for n, s in wave0.registers.layout if not n.startswith("v")]
    layout += [(f"v{i}", 4 * lanes) for i in range(vgprs)] + [(f"a{i}", 4 * lanes) for i in range(acc_vgprs)]
    rng = np.random.default_rng(seed)
    variants = []
    load = example.code_objects[0].load_address
    stops = [wave0.pc] if pcs is None else [load + pc for pc in pcs]
    for k in range(4 * len(stops)):  # a few register files, shared: the core writer copies each into its record anyway
        parts = []
        for name, size in layout:
            if name == "pc":
                parts.append(int(stops[k % len(stops)]).to_bytes(size, "little"))
            elif name in held:
                data, _ = wave0.registers.raw(name)
                parts.append(data.tobytes())
            else:
                parts.append(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        variants.append(BytesSpan(b"".join(parts)))
    lds_bytes = BytesSpan(rng.integers(0, 256, lds, dtype=np.uint8).tobytes())
    template = RegisterFile(layout, None, "", "node")
    source = example.dispatches[0]
    out = []
    wave_id = 0
    for gpu, _ in ((g, d) for g in range(gpus) for d in range(dispatches)):
        workgroups = []
        for g in range(-(-waves // WAVES_PER_GROUP)):
            members = []
            for i in range(min(WAVES_PER_GROUP, waves - g * WAVES_PER_GROUP)):
                registers = template.with_span(variants[wave_id % len(variants)], f"wave {wave_id}")
                members.append(Wave(wave_id, i, registers, lanes, np.ones(lanes, bool)))
                wave_id += 1
            shared = SparseMemory([Region(0, lds, "lds", 0, span=lds_bytes)], "local", f"gpu {gpu} workgroup {g}")
            workgroups.append(Workgroup((g, 0, 0), shared, members, f"gpu {gpu} workgroup {g}"))
        size = WAVES_PER_GROUP * lanes
        dispatch = Dispatch(len(out), source.kernel, source.code_object, (size * len(workgroups), 1, 1),
                            (size, 1, 1), workgroups, {}, f"gpu {gpu} dispatch {len(out)}")
        dispatch.device = gpu
        out.append(dispatch)
    state = GpuState(root=None, source=None, producer="gen_machines amd node", manifest={}, target=example.target,
                     code_objects=example.code_objects, memory=example.memory, dispatches=out,
                     focus=None, stop=example.stop)
    state._example = example  # keeps its files open
    return state


def cuda_node_state(*, sms: int = 132, warps_per_sm: int = 64) -> GpuState:
    """A full H100: `sms` SMs x `warps_per_sm` warps, one block of 2 warps on each SM slot pair."""
    example = load_state(CUDA_EXAMPLE)
    source = example.dispatches[0]
    warp = source.workgroups[0].waves[0]
    lanes = warp.lanes
    per_block = source.workgroup_size[0] // lanes
    blocks = sms * warps_per_sm // per_block
    workgroups = []
    wave_id = 0
    for b in range(blocks):
        members = []
        for i in range(per_block):
            wave = Wave(wave_id, i, warp.registers, lanes, warp.valid_lanes, warp.private, warp.lane_pcs, f"warp {wave_id}")
            wave.return_addresses = warp.return_addresses
            members.append(wave)
            wave_id += 1
        workgroups.append(Workgroup((b, 0, 0), source.workgroups[0].lds, members, f"block {b}"))
    dispatch = Dispatch(0, source.kernel, source.code_object, (source.workgroup_size[0] * blocks, 1, 1),
                        source.workgroup_size, workgroups, source.memory, "grid")
    state = GpuState(root=None, source=None, producer="gen_machines cuda node", manifest={}, target=example.target,
                     code_objects=example.code_objects, memory=example.memory, dispatches=[dispatch],
                     focus=None, stop=example.stop)
    state._example = example
    return state


def write_amd_node(path: Path, **kwargs) -> Path:
    from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core

    return write_rocm_core(amd_node_state(**kwargs), path)


def write_cuda_node(path: Path, **kwargs) -> Path:
    from aspace_dap.adapters.nvidia.core_writer import write_core

    sms = kwargs.get("sms", 132)
    return write_core(cuda_node_state(**kwargs), path, sms=sms, warps_per_sm=kwargs.get("warps_per_sm", 64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kind", choices=("amd", "cuda"), default="amd")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    made = write_amd_node(args.out / "gpucore.node") if args.kind == "amd" else write_cuda_node(args.out / "node.cudbg")
    print(f"{made}: {made.stat().st_size >> 20} MiB")


if __name__ == "__main__":
    main()
