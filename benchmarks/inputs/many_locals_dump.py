"""Build a dump of `many_locals` (many_locals.hip, -O0, gfx90a) stopped at the final store, line 237.

Every local's value comes from a model of the source: the declarations are parsed
from the .hip (`T NAME = EXPR;` in five shapes) and evaluated per lane in numpy
with the C type's width and rounding (float arithmetic unfused). The bytes are
placed where the DWARF says each variable lives, by examples/dumpgen/engine.py.
Global memory holds `in` (2 MiB of floats) for the readMemory benchmark.

    python benchmarks/inputs/many_locals_dump.py OUT_DIR
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
for extra in (REPO, REPO / "examples"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from dumpgen.engine import DumpSpec, FrameSpec, WaveSpec, build, u32, u64  # noqa: E402

SOURCE = HERE / "many_locals.hip"
CODE_OBJECT = HERE / "many_locals.gfx90a.O0.co"
KERNEL = "_Z11many_localsPKfPdi"
STOP_PC = 0xD9B4  # first instruction of line 237, `out[gid] = acc;`
STACK_POINTER = 0x32000  # the kernel prologue's `s_mov_b32 s32, 0x32000` (wave-scaled)
FRAME_BYTES = STACK_POINTER // 64
LANES, BLOCK, GROUP = 64, 64, 1
KERNARG = 0x7F0000000000
IN_ADDR = 0x7F0000100000
OUT_ADDR = 0x7F0000400000
IN_COUNT = 512 * 1024  # 2 MiB of floats: room for a 1 MiB read anywhere in the first half

_DECL = re.compile(r"^\s+(int|float|unsigned|double|short) (\w+) = (.+);$")
_SHAPES = [
    ("int", re.compile(r"^gid \* (\d+) \+ (\d+)$")),
    ("float", re.compile(r"^x \* ([\d.]+)f \+ ([\d.]+)f$")),
    ("unsigned", re.compile(r"^\(unsigned\)gid \^ (0x[0-9a-f]+)u$")),
    ("double", re.compile(r"^\(double\)x / ([\d.]+)$")),
    ("short", re.compile(r"^\(short\)\(tid - (\d+)\)$")),
]


def input_value(i: np.ndarray) -> np.ndarray:
    return (np.float32(0.25) * (i % 1000).astype(np.float32) - np.float32(3.0)).astype(np.float32)


def declarations() -> list[tuple[str, str, str]]:
    """(type, name, expression) of the 200 locals, in source order."""
    out = []
    for line in SOURCE.read_text().splitlines():
        m = _DECL.match(line)
        if m and m[2] not in ("tid", "gid", "x", "acc"):
            out.append((m[1], m[2], m[3]))
    if len(out) != 200:
        raise ValueError(f"{SOURCE.name}: expected 200 locals, parsed {len(out)}")
    return out


def local_value(ctype: str, expr: str, tid, gid, x):
    for shape, pattern in _SHAPES:
        m = pattern.match(expr)
        if shape == ctype and m:
            break
    else:
        raise ValueError(f"no model for `{ctype} ... = {expr}`")
    if ctype == "int":
        return (gid * int(m[1]) + int(m[2])).astype(np.int32)
    if ctype == "float":
        return (x * np.float32(m[1]) + np.float32(m[2])).astype(np.float32)
    if ctype == "unsigned":
        return gid.astype(np.uint32) ^ np.uint32(int(m[1], 16))
    if ctype == "double":
        return x.astype(np.float64) / float(m[1])
    return (tid - int(m[1])).astype(np.int16)


def lane_values() -> dict[str, list]:
    tid = np.arange(BLOCK, dtype=np.int32)
    gid = GROUP * BLOCK + tid
    x = input_value(gid % IN_COUNT)
    values = {"in": [IN_ADDR] * LANES, "out": [OUT_ADDR] * LANES, "n": [IN_COUNT] * LANES,
              "tid": tid.tolist(), "gid": gid.tolist(), "x": [float(v) for v in x]}
    acc = np.zeros(LANES, np.float64)
    for ctype, name, expr in declarations():
        v = local_value(ctype, expr, tid, gid, x)
        acc += v.astype(np.float64)
        values[name] = [float(e) for e in v] if v.dtype.kind == "f" else [int(e) for e in v]
    values["acc"] = [float(a) for a in acc]
    return values


def spec() -> DumpSpec:
    regs = {"pc": u64(STOP_PC), "exec": u64((1 << LANES) - 1), "s32": u32(STACK_POINTER), "s33": u32(0)}
    wave = WaveSpec(id=0, index_in_workgroup=0, registers=regs, frames=[FrameSpec(STOP_PC, lane_values())])
    kernargs = u64(IN_ADDR) + u64(OUT_ADDR) + u32(IN_COUNT)
    inputs = input_value(np.arange(IN_COUNT)).tobytes()
    return DumpSpec(
        name="gfx90a.O0", code_object=CODE_OBJECT, processor="gfx90a", lanes=LANES, kernel=KERNEL,
        grid_size=(4 * BLOCK, 1, 1), workgroup_size=(BLOCK, 1, 1), workgroup_id=(GROUP, 0, 0), waves=[wave],
        private_per_lane=FRAME_BYTES,
        memory=[(KERNARG, kernargs, len(kernargs)), (IN_ADDR, inputs, len(inputs)),
                (OUT_ADDR, b"", 4 * BLOCK * 8)],
        focus=(0, 5), stop=("breakpoint", "line 237: out[gid] = acc"))


def write_dump(out_dir: str | Path) -> Path:
    return build(spec()).write(out_dir)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.rstrip().splitlines()[-1].strip())
    print(write_dump(sys.argv[1]))
