"""Dumps and cores of a hung kernel (examples/hang), made at bench or test time (never committed).

    python benchmarks/gen_hangs.py OUT_FOLDER [--vendor amd|nvidia] [--devices 3] [--blocks 8] [--waves 8]

Every wave of the hang kernel stands at one of its three hang sites, by its index in the block as the
kernel sends it (index % 3: the spin-wait inlined from wait_for, the barrier, the loop), as a core taken
of the stopped process holds them: a ROCm gpucore of the gfx90a build, a user-triggered CUDA core of the
sm_90 build (CUDA_ENABLE_USER_TRIGGERED_COREDUMP), no exception. The sites' addresses come from the
vendors' listings next to the code objects (llvm-objdump, nvdisasm), found by their instructions.
Registers hold seeded random words, except that the first VGPR (AMD v0) and R0 (NVIDIA) hold each
lane's flat work-item id in its block; each dispatch runs on a device of its own (`devices`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HANG = REPO / "examples" / "hang"
KERNEL = "_Z4hangPViPiii"
# each site's instruction in the vendor's listing, by the path the kernel sends wave index % 3 down
SITE_INSTRUCTIONS = {
    "amd": ("flat_load_dword v1, v[2:3] glc", "s_barrier", "global_load_dword v5, v[6:7], off"),
    "nvidia": ("LDG.E.STRONG.SYS", "BAR.SYNC.DEFER_BLOCKING", "LDG.E R4, desc[UR4][R4.64]"),
}
SITE_NAMES = ("spin-wait", "barrier", "loop")
VGPRS, SGPRS, REGS, PREDS = 8, 16, 16, 7


def code_object(vendor: str, lines: bool) -> Path:
    if vendor == "amd":
        return HANG / f"hang.clang19.gfx90a.O3{'.lines' if lines else ''}.co"
    return HANG / f"hang.sm_90.{'lineinfo' if lines else 'O3'}.cubin"


def site_pcs(vendor: str, lines: bool = True) -> tuple[int, int, int]:
    """The three hang sites' code object addresses, from the vendor tool's listing of the build."""
    listing = Path(f"{code_object(vendor, lines)}.s.txt").read_text()
    pattern = r"// ([0-9A-F]{12}):" if vendor == "amd" else r"/\*([0-9a-f]{4})\*/"
    out = []
    for instruction in SITE_INSTRUCTIONS[vendor]:
        line = next(text for text in listing.splitlines() if instruction in text)
        out.append(int(re.search(pattern, line)[1], 16))
    return tuple(out)  # type: ignore[return-value]


def write_hang_dump(out: Path, vendor: str, *, lines: bool = True, devices: int = 1, blocks: int = 8,
                    waves: int = 8, seed: int = 0) -> Path:
    """A dump folder of the hung kernel: `devices` dispatches (one per device) of `blocks` blocks of
    `waves` waves; wave i of a block at site i % 3."""
    from aspace_dap.state import StateWriter

    rng = np.random.default_rng(seed)
    lanes = 64 if vendor == "amd" else 32
    pcs = site_pcs(vendor, lines)
    writer = StateWriter(vendor, "gfx90a" if vendor == "amd" else "sm_90", lanes)
    co = writer.add_code_object(str(code_object(vendor, lines)))
    if vendor == "amd":
        layout = [("pc", 8), ("exec", 8)] + [(f"s{i}", 4) for i in range(SGPRS)] + \
            [(f"v{i}", 4 * lanes) for i in range(VGPRS)]
    else:
        layout = [("pc", 8), ("exec", 4)] + [(f"R{i}", 4 * lanes) for i in range(REGS)] + \
            [(f"P{i}", lanes) for i in range(PREDS)]
    layout_name = writer.add_register_layout("hang", layout)
    size = (waves * lanes, 1, 1)
    wave_id = 0
    for device in range(devices):
        dispatch = writer.add_dispatch(KERNEL, co, (blocks * size[0], 1, 1), size,
                                       device=device if devices > 1 else None)
        for b in range(blocks):
            wg = dispatch.add_workgroup((b, 0, 0), lds=bytes(64))
            for i in range(waves):
                values = {}
                for name, nbytes in layout:
                    if name == "pc":
                        values[name] = int(pcs[i % 3]).to_bytes(8, "little")
                    elif name == "exec":
                        values[name] = ((1 << lanes) - 1).to_bytes(nbytes, "little")
                    elif name in ("v0", "R0"):
                        values[name] = (np.arange(lanes, dtype="<u4") + i * lanes).tobytes()
                    elif name.startswith("P"):
                        values[name] = rng.integers(0, 2, nbytes, dtype=np.uint8).tobytes()
                    else:
                        values[name] = rng.integers(0, 1 << 32, nbytes // 4, dtype=np.uint64).astype("<u4").tobytes()
                wg.add_wave(wave_id, i, values, layout=layout_name,
                            lane_pcs=[pcs[i % 3]] * lanes if vendor == "nvidia" else None)
                wave_id += 1
    return writer.write(out)


def write_hang_core(out: Path, vendor: str, **kwargs) -> Path:
    """The core a hung process leaves: a ROCm gpucore or a user-triggered CUDA core (no exception)."""
    from aspace_dap.state import load_state

    folder = write_hang_dump(out.parent / f"{out.name}.dump", vendor, **kwargs)
    with load_state(folder) as state:
        if vendor == "amd":
            from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
            return write_rocm_core(state, out)
        from aspace_dap.adapters.nvidia.core_writer import write_core
        return write_core(state, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--vendor", choices=("amd", "nvidia"), default="amd")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--waves", type=int, default=8)
    parser.add_argument("--no-lines", action="store_true", help="the build without line information")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    name = "gpucore.hang" if args.vendor == "amd" else "hang.cudacore"
    made = write_hang_core(args.out / name, args.vendor, lines=not args.no_lines, devices=args.devices,
                           blocks=args.blocks, waves=args.waves)
    print(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
