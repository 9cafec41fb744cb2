"""CUDA cores of production builds: the scatter_rows example (nvcc -lineinfo -O3, sm_90), a Triton kernel's
cubin (examples/triton), and the lightweight core of the fault example.

    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.production            # rewrite the cores
    cd examples && PYTHONPATH=.. ../.venv/bin/python -m dumpgen.production --check    # exit 1 if one is stale

Every core is written by aspace-dap's own CUDA core writer (`write_core`), as the driver lays one out,
from a state whose registers are the ones the cubin's SASS computes before the fault (each instruction
the model relies on is checked against nvdisasm's listing committed beside the cubin, so a rebuilt cubin
whose code moved is refused). Two cores per fault: the regular one (`CUDA_COREDUMP_GENERATION_FLAGS`
unset: both cubin images, the global memory the kernel read, the constant banks) and the lightweight one
users are told to write (`skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,
skip_local_memory,skip_constbank_memory`: the tables, registers, PCs and the relocated cubin stay, the
flags are recorded in `.cudbg.meta`).

The grid table of a core holds CUDA's gridDim (blocks), as the driver writes it; the state's `grid_size`
counts work-items (gridDim * blockDim, as the dump format counts them for every vendor), `write_core`
divides it by the block, and `_check_grid` refuses a core whose grid table does not say the blocks
launched.
"""

from __future__ import annotations

import argparse
import filecmp
import re
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

from aspace_dap.adapters.nvidia.core_elf import LIGHTWEIGHT_FLAGS, SHT_GRID_TABLE, CoreElf
from aspace_dap.adapters.nvidia.core_writer import write_core
from aspace_dap.adapters.nvidia.cubin import kernel_parameters, register_counts, relocate_cubin
from aspace_dap.state import StateWriter, load_state

from .cuda_engine import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE, processor, uniform_registers

EXAMPLES = Path(__file__).resolve().parent.parent
LANES = 32
PREDICATES = 7  # P0-P6 (P7 is PT)
STACK_TOP = 0xFFFC00  # c[0x0][0x28]: where R1 starts (the local window offset of the stack's top)
WARP_ILLEGAL_ADDRESS = 14  # CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS


def f32(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def listing(path: Path) -> dict[int, str]:
    """{address: instruction} of a committed `nvdisasm -ndf -c -gi` listing (single-kernel cubins, whose
    kernel starts at 0: the addresses are the laid-out ones)."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$", line)
        if m:
            out[int(m.group(1), 16)] = m.group(2).rstrip(" ;")
    return out


def expect(code: dict[int, str], wanted: dict[int, str], where: str) -> None:
    for address, text in wanted.items():
        if code.get(address) != text:
            raise ValueError(f"{where}: {address:#x} is {code.get(address)!r}, the model expects {text!r}; "
                             f"the cubin was rebuilt with other code: update the model")


class Warp:
    """One warp's registers, lane by lane: R and P registers as (lanes,) arrays, uniform ones as ints."""

    def __init__(self, registers: int, uniform: int, uniform_predicates: int):
        self.r = {n: np.zeros(LANES, np.uint32) for n in range(registers)}
        self.p = {n: np.zeros(LANES, np.uint8) for n in range(PREDICATES)}
        self.ur = {n: 0 for n in range(uniform)}
        self.up = {n: 0 for n in range(uniform_predicates)}

    def pair(self, n: int, values) -> None:
        """R<n>:R<n+1> = 64-bit values (low half in R<n>)."""
        values = np.asarray(values, np.uint64)
        self.r[n] = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        self.r[n + 1] = (values >> np.uint64(32)).astype(np.uint32)

    def registers(self, pc: int, active: int) -> tuple[dict, list]:
        regs = {"pc": struct.pack("<Q", pc), "exec": struct.pack("<I", active)}
        layout = [("pc", 8), ("exec", 4)]
        for n, v in self.r.items():
            regs[f"R{n}"], layout = v.astype("<u4").tobytes(), layout + [(f"R{n}", 4 * LANES)]
        for n, v in self.p.items():
            regs[f"P{n}"], layout = v.astype(np.uint8).tobytes(), layout + [(f"P{n}", LANES)]
        for n, v in self.ur.items():
            regs[f"UR{n}"], layout = struct.pack("<I", v & 0xFFFFFFFF), layout + [(f"UR{n}", 4)]
        for n, v in self.up.items():
            regs[f"UP{n}"], layout = bytes([v]), layout + [(f"UP{n}", 1)]
        return regs, layout


# --- scatter_rows (examples/production) -----------------------------------------------------------------

PRODUCTION = EXAMPLES / "production"
KERNEL = "_ZN4prod12scatter_rowsIfLi64EEEvPT_PKS1_PKiiS1_"  # prod::scatter_rows<float, 64>
WIDTH = 64  # the template's Width: a row's floats, and the block's threads
GRID = 4  # blocks (gridDim.x)
ROWS = 8  # n
STALE = 1 << 24  # rows[5]: a stale index, 4 GiB past the output
OUT, IN, ROW_TABLE = 0x7F20_0000_0000, 0x7F20_0001_0000, 0x7F20_0002_0000
SCALE = 2.0
FAULT_BLOCK, FAULT_ROW = 1, 5  # block 1 copies rows 1 and 5 (row += gridDim.x)
STORE, AFTER = 0x1F0, 0x200  # STG.E desc[UR6][R6.64], R3 and the branch after it

# what the register model below takes from the SASS at each address (scatter_rows.sm_90.lineinfo.cubin.gi.txt)
SCATTER_ROWS_SASS = {
    0x0: "LDC R1, c[0x0][0x28]", 0x50: "S2R R10, SR_TID.X", 0x60: "LDC R12, c[0x0][0xc]",
    0x70: "IMAD.U32 R11, RZ, RZ, UR4", 0x80: "ULDC.64 UR6, c[0x0][0x208]", 0x90: "ULDC UR4, c[0x0][0x0]",
    0xb0: "ULDC UR5, c[0x0][0x22c]", 0xc0: "ULDC.64 UR8, c[0x0][0x210]", 0xf0: "LDC.64 R2, c[0x0][0x220]",
    0x100: "LDC.64 R8, c[0x0][0x218]", 0x110: "IMAD.WIDE R2, R11, 0x4, R2", 0x120: "LDG.E R13, desc[UR6][R2.64]",
    0x130: "IMAD.MOV.U32 R0, RZ, RZ, R10", 0x140: "LEA R5, R11, R0, 0x6", 0x150: "IMAD.WIDE R4, R5, 0x4, R8",
    0x160: "LDG.E R4, desc[UR6][R4.64]", 0x170: "SHF.R.S32.HI R3, RZ, 0x1f, R0.reuse",
    0x180: "IMAD.MOV.U32 R2, RZ, RZ, R0", 0x190: "IADD3 R0, R0, UR4, RZ", 0x1a0: "IMAD.WIDE R2, R13, 0x40, R2",
    0x1b0: "LEA R6, P0, R2, UR8, 0x2", 0x1c0: "LEA.HI.X R7, R2, UR9, R3, 0x2, P0",
    0x1d0: "ISETP.GE.AND P0, PT, R0, 0x40, PT", 0x1e0: "FMUL R3, R4, UR5", STORE: "STG.E desc[UR6][R6.64], R3",
}


def row_table() -> list[int]:
    rows = list(range(ROWS))
    rows[FAULT_ROW] = STALE
    return rows


def _cubin_state(cubin: Path, sass: dict[int, str], kernel: str, param_size: int):
    """(relocated image, kernel parameters, writer, code object index) for a dump of one cubin whose
    nvdisasm listing beside it holds `sass` and whose kernel's parameters are `param_size` bytes at
    c[0x0][0x210]."""
    image = relocate_cubin(cubin.read_bytes(), cubin.name)
    expect(listing(cubin.with_name(cubin.name + ".gi.txt")), sass, cubin.name)
    params = kernel_parameters(image, kernel, cubin.name)
    if params is None or (params.offset, params.size) != (0x210, param_size):
        raise ValueError(f"{cubin.name}: the parameters are not at c[0x0][0x210] ({param_size} bytes): {params}")
    writer = StateWriter("nvidia", processor(image), LANES,
                         apertures={"shared": (SHARED_WINDOW, WINDOW_SIZE), "local": (LOCAL_WINDOW, WINDOW_SIZE)},
                         producer="examples/dumpgen/production.py")
    return image, params, writer, writer.add_code_object(image, 0, name=cubin.name)


def scatter_rows_state(folder: Path):
    cubin = PRODUCTION / "scatter_rows.sm_90.lineinfo.cubin"
    image, params, writer, co = _cubin_state(cubin, SCATTER_ROWS_SASS, KERNEL, 32)
    uregs, upreds = uniform_registers(image)
    inputs = np.arange(ROWS * WIDTH, dtype=np.float32) * np.float32(0.5)
    writer.add_memory("global", IN, inputs.tobytes())
    writer.add_memory("global", ROW_TABLE, np.array(row_table(), "<i4").tobytes())
    # the output's bytes depend on how far the other blocks got: the state holds none of them
    dispatch = writer.add_dispatch(KERNEL, co, (GRID * WIDTH, 1, 1), (WIDTH, 1, 1))
    dispatch.add_memory("param", params.offset, struct.pack("<QQQif", OUT, IN, ROW_TABLE, ROWS, SCALE))
    wg = dispatch.add_workgroup((FAULT_BLOCK, 0, 0))
    dest = row_table()[FAULT_ROW]
    for w in range(WIDTH // LANES):
        tid = np.arange(LANES, dtype=np.int64) + LANES * w
        col = tid  # Width == blockDim.x: each thread copies one column, once
        warp = Warp(max(register_counts(image, cubin.name).values()), uregs, upreds)
        warp.r[1][:] = STACK_TOP
        warp.r[10][:] = tid
        warp.r[11][:] = FAULT_ROW
        warp.r[12][:] = GRID
        warp.r[13][:] = dest & 0xFFFFFFFF
        warp.pair(8, np.full(LANES, IN))
        warp.r[0][:] = col + WIDTH  # 0x190: the next column
        value = inputs[FAULT_ROW * WIDTH + col]
        warp.r[4][:] = value.view(np.uint32)  # 0x160: in[row * Width + col]
        warp.r[5][:] = [(IN + 4 * int(c + FAULT_ROW * WIDTH)) >> 32 for c in col]  # 0x150's high half
        slot = dest * WIDTH + col  # 0x1a0: R2:R3 = dest * 64 + col
        warp.r[2][:] = (slot & 0xFFFFFFFF).astype(np.uint32)
        warp.pair(6, [OUT + 4 * int(s) for s in slot])  # 0x1b0 / 0x1c0: the store's address
        warp.r[3][:] = (value * np.float32(SCALE)).view(np.uint32)  # 0x1e0: the value stored
        warp.p[0][:] = (col + WIDTH >= WIDTH).astype(np.uint8)  # 0x1d0
        warp.ur[4], warp.ur[5] = WIDTH, f32(SCALE)
        warp.ur[8], warp.ur[9] = OUT & 0xFFFFFFFF, OUT >> 32
        regs, layout = warp.registers(AFTER, 0xFFFFFFFF)
        wg.add_wave(w, w, regs, layout)
    writer.set_focus(0, 0)
    writer.set_stop("exception", f"CUDA Exception: Warp Illegal Address ({WARP_ILLEGAL_ADDRESS})", STORE)
    writer.write(folder)
    return load_state(folder)


# --- a Triton kernel (examples/triton) ---------------------------------------------------------------------

TRITON = EXAMPLES / "triton"
TRITON_KERNEL = "scatter_rows_kernel"
TRITON_PROGRAMS, TRITON_FAULT_ROW = 8, 5  # a program per row; program 5's row index is stale
TRITON_STORE, TRITON_AFTER = 0x1E0, 0x1F0  # STG.E desc[UR6][R4.64], R11 and the EXIT after it
TRITON_SASS = {
    0x0: "LDC R1, c[0x0][0x28]", 0x20: "S2R R9, SR_TID.X", 0x40: "ULDC UR10, c[0x0][0x228]",
    0x50: "ULDC.64 UR8, c[0x0][0x218]", 0x70: "LDC.64 R10, c[0x0][0x210]", 0x90: "UIMAD UR4, UR5, UR10, URZ",
    0xb0: "ULEA UR5, UP0, UR4, UR8, 0x2", 0xc0: "MOV R4, UR6", 0xd0: "LOP3.LUT R9, R9, 0x3f, RZ, 0xc0, !PT",
    0xe0: "ULEA.HI.X.SX32 UR4, UR4, UR9, 0x2, UP0", 0xf0: "MOV R5, UR7", 0x100: "ULDC.64 UR6, c[0x0][0x208]",
    0x110: "ISETP.GE.AND P0, PT, R9, UR10, PT", 0x120: "IMAD.U32 R2, RZ, RZ, UR5", 0x130: "LDG.E R4, desc[UR6][R4.64]",
    0x140: "MOV R3, UR4", 0x150: "ULDC UR4, c[0x0][0x22c]", 0x160: "IMAD.WIDE.U32 R2, R9, 0x4, R2",
    0x170: "@!P0 LDG.E R0, desc[UR6][R2.64]", 0x180: "IMAD R7, R4, UR10, RZ", 0x190: "LEA R6, P1, R7, R10, 0x2",
    0x1a0: "LEA.HI.X.SX32 R7, R7, R11, 0x2, P1", 0x1b0: "FMUL R11, R0, UR4", 0x1c0: "IMAD.WIDE.U32 R4, R9, 0x4, R6",
    0x1d0: "@P0 EXIT", TRITON_STORE: "STG.E desc[UR6][R4.64], R11",
}


def triton_state(folder: Path):
    cubin = TRITON / "scatter_rows_kernel.sm_90.cubin"
    image, params, writer, co = _cubin_state(cubin, TRITON_SASS, TRITON_KERNEL, 48)
    uregs, upreds = uniform_registers(image)
    inputs = np.arange(TRITON_PROGRAMS * WIDTH, dtype=np.float32) * np.float32(0.5)
    rows = list(range(TRITON_PROGRAMS))
    rows[TRITON_FAULT_ROW] = STALE
    writer.add_memory("global", IN, inputs.tobytes())
    writer.add_memory("global", ROW_TABLE, np.array(rows, "<i4").tobytes())
    dispatch = writer.add_dispatch(TRITON_KERNEL, co, (TRITON_PROGRAMS * WIDTH, 1, 1), (WIDTH, 1, 1))
    # out, in, rows, n_cols, scale, then Triton's global and profile scratch pointers (none: 0)
    dispatch.add_memory("param", params.offset, struct.pack("<QQQifQQ", OUT, IN, ROW_TABLE, WIDTH, SCALE, 0, 0))
    wg = dispatch.add_workgroup((TRITON_FAULT_ROW, 0, 0))
    dest = rows[TRITON_FAULT_ROW]
    row_in = IN + 4 * TRITON_FAULT_ROW * WIDTH
    for w in range(WIDTH // LANES):
        col = np.arange(LANES, dtype=np.int64) + LANES * w  # tid & 0x3f: one element per thread
        warp = Warp(max(register_counts(image, cubin.name).values()), uregs, upreds)
        warp.r[1][:] = STACK_TOP
        warp.r[9][:] = col
        value = inputs[TRITON_FAULT_ROW * WIDTH + col]
        warp.r[0][:] = value.view(np.uint32)  # 0x170: in[row * n_cols + col]
        warp.pair(2, [row_in + 4 * int(c) for c in col])  # 0x160
        base = OUT + 4 * (dest * WIDTH)  # 0x190 / 0x1a0: out + dest * n_cols (sign-extended), in bytes
        warp.pair(4, [base + 4 * int(c) for c in col])  # 0x1c0: the store's address
        warp.pair(6, np.full(LANES, base))
        warp.r[10][:] = OUT & 0xFFFFFFFF  # 0x70 (R11, the high half, was overwritten at 0x1b0)
        warp.r[11][:] = (value * np.float32(SCALE)).view(np.uint32)  # 0x1b0: the value stored
        warp.ur[4], warp.ur[5] = f32(SCALE), row_in & 0xFFFFFFFF  # 0x150, 0xb0
        warp.ur[8], warp.ur[9], warp.ur[10] = IN & 0xFFFFFFFF, IN >> 32, WIDTH
        regs, layout = warp.registers(TRITON_AFTER, 0xFFFFFFFF)
        wg.add_wave(w, w, regs, layout)
    writer.set_focus(0, 0)
    writer.set_stop("exception", f"CUDA Exception: Warp Illegal Address ({WARP_ILLEGAL_ADDRESS})", TRITON_STORE)
    writer.write(folder)
    return load_state(folder)


# --- the fault example (examples/fault) -------------------------------------------------------------------

def fault_state(folder: Path):
    return load_state(EXAMPLES / "fault" / "dumps" / "sm_90.G")


# --- the cores -----------------------------------------------------------------------------------------------

# (core path under examples/, state builder, exception = (wave, lane, code, error PC), grid table's gridDim)
CORES = [
    ("production/cores/scatter_rows.sm_90.cudacore", scatter_rows_state, (0, 0, WARP_ILLEGAL_ADDRESS, STORE), 0,
     (GRID, 1, 1)),
    ("production/cores/scatter_rows.sm_90.light.cudacore", scatter_rows_state, (0, 0, WARP_ILLEGAL_ADDRESS, STORE),
     LIGHTWEIGHT_FLAGS, (GRID, 1, 1)),
    ("triton/cores/scatter_rows_kernel.sm_90.light.cudacore", triton_state,
     (0, 0, WARP_ILLEGAL_ADDRESS, TRITON_STORE), LIGHTWEIGHT_FLAGS, (TRITON_PROGRAMS, 1, 1)),
    ("fault/cores/sm_90.G.light.cudacore", fault_state, (0, 1, WARP_ILLEGAL_ADDRESS, 0x2B0), LIGHTWEIGHT_FLAGS,
     (4, 1, 1)),
]


def _check_grid(path: Path, grid: tuple[int, int, int]) -> None:
    elf = CoreElf(path)
    try:
        rows = [row for sec in elf.of_type(SHT_GRID_TABLE) for row in elf.rows(sec)]
    finally:
        elf.close()
    found = [(r["gridDimX"], r["gridDimY"], r["gridDimZ"]) for r in rows]
    if found != [grid]:
        raise ValueError(f"{path.name}: the grid table says gridDim {found}, the launch was {grid} blocks")


def write(relative: str, dest: Path) -> None:
    _, build, exception, flags, grid = next(c for c in CORES if c[0] == relative)
    with tempfile.TemporaryDirectory() as tmp:
        state = build(Path(tmp) / "state")
        try:
            write_core(state, dest, exception=exception, flags=flags)
        finally:
            state.close()
    _check_grid(dest, grid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed cores, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for relative, *_ in CORES:
        dest = EXAMPLES / relative
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / dest.name
            write(relative, fresh)
            if args.check:
                if not dest.is_file() or not filecmp.cmp(fresh, dest, shallow=False):
                    stale.append(relative)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(fresh.read_bytes())
                print(f"wrote {relative} ({dest.stat().st_size} bytes)")
    if stale:
        print("stale: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
