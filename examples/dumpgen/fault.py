"""The fault example (examples/fault/): a store through a bad pointer, stopped on the faulting store.

    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.fault            # rewrite fault/dumps/
    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.fault --check    # exit 1 if one is stale

`scatter(out, stride)` stores gid at `out + gid * stride`; the host passed stride = 1 << 20 for a
256-int buffer, so every work-item but gid 0 stores 4 MiB * gid past `out`, where nothing is mapped.
Each dump holds the first work-group at the store, as its vendor's hardware leaves it, and the global
memory a full core holds of the program: `out`'s 256 ints, zero as the host cleared them (gid 0's store
of 0 leaves them so):

- AMD (clang-19 -O2, gfx90a): workgroup 0 of two 128-wide groups, waves 0 and 1, both at the
  `global_store_dword v[0:1], v2, off` (0x184c) with TRAPSTS = MEM_VIOL | XNACK_ERROR (a page
  fault, ROCdbgapi's memory violation). Registers as the ISA left them before the store: s[4:5] the
  kernarg segment, s[0:1] out, s3 stride, s2 the work-group size (hidden_group_size_x at kernarg
  0x1c), s6 group * 128, v2 gid, v[0:1] the address, v3 out's high half, vcc 0 (no carry).
- NVIDIA (nvcc -G, sm_90): block 0 of two 64-thread blocks, warps 0 and 1, past the faulting
  `ST.E desc[UR4][R2.64], R4` (0x2b0): the lanes at the next instruction (0x2c0, line 10), the warp's
  error PC the store. The core marks lane 1 (gid 1, the first bad address) with
  CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14).
- Intel (ocloc -g -cl-opt-disable, tgllp, SIMD8): work-group 0's thread at 0x6f0, the last
  instruction of line 9, the store's `send.dc1 (8|M0) null r68 r65 0x40 0x040681FF` (IGA: "a64 dword
  scattering write", 2 GRFs of address payload and 1 of data): r68-r69 hold the 8 lanes' 64-bit
  addresses (lane L's at byte 8 * L, as the two `mov`s before it interleave the low and high halves
  read from slot), r65 gid. The core records SIGSEGV (si_code SEGV_MAPERR) at lane 1's address.

The cores are written from these dumps with each vendor's core writer (tests/test_exceptions.py).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import struct
import sys
import tempfile
from pathlib import Path


from .cuda_engine import CudaDumpSpec, WarpSpec
from .engine import DumpSpec, FrameSpec, WaveSpec, lane_u32, sgpr_pair, u32, u64
from .opencl_engine import OpenclDump

HERE = Path(__file__).resolve().parent.parent / "fault"
DUMPS = HERE / "dumps"
STRIDE = 1 << 20
N = 256  # the buffer's ints, and the grid's work-items
TRAPSTS_MEM_VIOL, TRAPSTS_XNACK_ERROR = 1 << 8, 1 << 28

# --- AMD -----------------------------------------------------------------------------------------------

AMD_GROUP = 128
AMD_KERNARG = 0x7F0000000000
AMD_OUT = 0x7F0000100000
AMD_STORE = 0x184C  # global_store_dword v[0:1], v2, off (fault.clang19.gfx90a.O2.co.s.txt, line 10)


BUFFER = bytes(4 * N)  # `out`, as the host cleared it


def address(out: int, gid: int) -> int:
    """`out + gid * stride` as the kernel computes it: the int product, widened, times 4."""
    return (out + 4 * (gid * STRIDE)) & (2**64 - 1)


def amd() -> DumpSpec:
    waves = []
    for w in range(AMD_GROUP // 64):
        gids = [w * 64 + lane for lane in range(64)]
        addresses = [address(AMD_OUT, g) for g in gids]
        regs = {"pc": u64(AMD_STORE), "exec": u64(2**64 - 1), "vcc": u64(0), "s2": u32(AMD_GROUP), "s3": u32(STRIDE),
                "s6": u32(0), "v0": lane_u32(a & 0xFFFFFFFF for a in addresses),
                "v1": lane_u32(a >> 32 for a in addresses), "v3": lane_u32([AMD_OUT >> 32] * 64),
                "trapsts": u32(TRAPSTS_MEM_VIOL | TRAPSTS_XNACK_ERROR)}
        regs.update(sgpr_pair("s4", AMD_KERNARG))
        regs.update(sgpr_pair("s0", AMD_OUT))
        frame = FrameSpec(AMD_STORE, {"gid": gids})
        waves.append(WaveSpec(id=w, index_in_workgroup=w, registers=regs, frames=[frame]))
    kernargs = u64(AMD_OUT) + u32(STRIDE) + bytes(4) + struct.pack("<3I3H", N // AMD_GROUP, 1, 1, AMD_GROUP, 1, 1)
    return DumpSpec(
        name="clang19.gfx90a.O2", code_object=HERE / "fault.clang19.gfx90a.O2.co", processor="gfx90a", lanes=64,
        kernel="_Z7scatterPii", grid_size=(N, 1, 1), workgroup_size=(AMD_GROUP, 1, 1), workgroup_id=(0, 0, 0),
        waves=waves, memory=[(AMD_KERNARG, kernargs, len(kernargs)), (AMD_OUT, BUFFER, len(BUFFER))], focus=(0, 1),
        stop=("exception", "memory violation (TRAPSTS: MEM_VIOL, XNACK_ERROR)"))


# --- NVIDIA --------------------------------------------------------------------------------------------

CUDA_BLOCK = 64
CUDA_OUT = 0x7F1000000000
CUDA_STORE, CUDA_AFTER = 0x2B0, 0x2C0  # ST.E desc[UR4][R2.64], R4 and the MEMBAR after it (nvdisasm -c)
CUDA_EXCEPTION = 14  # CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS


def cuda() -> CudaDumpSpec:
    def values(t):
        gid = t[0]  # block 0
        return {"gid": gid, "slot": address(CUDA_OUT, gid)}

    return CudaDumpSpec(
        name="sm_90.G", cubin=HERE / "fault.sm_90.G.cubin", kernel="_Z7scatterPii", file="fault.cu", line=9,
        grid=(N // CUDA_BLOCK, 1, 1), block=(CUDA_BLOCK, 1, 1), block_id=(0, 0, 0),
        warps=[WarpSpec(0, 0xFFFFFFFF), WarpSpec(1, 0xFFFFFFFF)], params=struct.pack("<Qi", CUDA_OUT, STRIDE),
        values=values, address=CUDA_AFTER, memory=[(CUDA_OUT, BUFFER)],
        stop=("exception", f"CUDA Exception: Warp Illegal Address ({CUDA_EXCEPTION})", CUDA_STORE))


# --- Intel ---------------------------------------------------------------------------------------------

INTEL_SIMD = 8
INTEL_OUT = 0x7F0000200000
INTEL_STORE = 0x6F0  # the last row of line 9 (line table: 0x6b0, 0x6c0, 0x6f0; line 10 at 0x700)


def intel() -> OpenclDump:
    gids = list(range(INTEL_SIMD))
    values = {"out": [INTEL_OUT] * INTEL_SIMD, "stride": [STRIDE] * INTEL_SIMD, "gid": gids,
              "slot": [address(INTEL_OUT, g) for g in gids]}
    # the send's payload: r68-r69 the lanes' addresses, a qword each; r65 the data, gid a dword each
    payload = b"".join(struct.pack("<Q", a) for a in values["slot"])
    registers = {"r65": b"".join(struct.pack("<I", g) for g in gids), "r68": payload[:32], "r69": payload[32:]}
    return OpenclDump(
        name="tgllp.O0", debug_elf=HERE / "fault.tgllp.O0.dbg", processor="tgllp", kernel="scatter",
        lanes=INTEL_SIMD, pc=INTEL_STORE, active=0xFF, values=values, grid_size=(N, 1, 1),
        workgroup_size=(INTEL_SIMD, 1, 1), workgroup_id=(0, 0, 0), focus_lane=1, stop="line 9: *slot = gid",
        memory=[(INTEL_OUT, BUFFER, len(BUFFER))], registers=registers)


def write(name: str, dest: Path) -> None:
    """Build one dump into `dest` (which must not exist)."""
    if name == "clang19.gfx90a.O2":
        from .engine import build

        build(amd()).write(dest)
    elif name == "sm_90.G":
        from .cuda_engine import build

        build(cuda(), dest)
    else:
        from .opencl_engine import build

        writer = build(intel())
        writer.set_stop("exception", f"SIGSEGV: invalid access at address {address(INTEL_OUT, 1):#x}")
        writer.write(dest)


NAMES = ("clang19.gfx90a.O2", "sm_90.G", "tgllp.O0")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed dumps, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name in NAMES:
        dest = DUMPS / name
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / name
            write(name, fresh)
            if args.check:
                left = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
                right = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()} \
                    if dest.is_dir() else set()
                differ = sorted(left ^ right) + [r for r in sorted(left & right)
                                                 if not filecmp.cmp(fresh / r, dest / r, shallow=False)]
                if differ:
                    stale.append(f"{name}: {', '.join(differ)}")
                continue
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(fresh, dest)
        print(f"wrote {dest}")
    for line in stale:
        print(f"stale: {line}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
