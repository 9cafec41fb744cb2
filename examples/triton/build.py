"""Rebuilds scatter_rows_kernel.sm_90.cubin from scatter_rows_kernel.py with Triton (no GPU needed), and its
`nvdisasm -ndf -c -gi` listing when nvdisasm is found:

    python3 -m venv /tmp/tritonvenv && /tmp/tritonvenv/bin/pip install triton
    cd examples/triton && /tmp/tritonvenv/bin/python build.py

The kernel's module is compiled under its file name relative to this folder, and Triton's cache is a fresh
folder, so the line table names `scatter_rows_kernel.py` (no build folder) and the cubin is built anew. The
committed cubin comes from Triton 3.9.0 (its own ptxas); the cores from examples/dumpgen/production.py.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = "scatter_rows_kernel.py"
CUBIN = "scatter_rows_kernel.sm_90.cubin"
SIGNATURE = {"out_ptr": "*fp32", "in_ptr": "*fp32", "rows_ptr": "*i32", "n_cols": "i32", "scale": "fp32",
             "BLOCK": "constexpr"}


def main() -> int:
    os.chdir(HERE)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        import triton
        from triton.backends.compiler import GPUTarget

        module = types.ModuleType("scatter_rows_kernel")
        module.__file__ = SOURCE
        exec(compile(Path(SOURCE).read_text(), SOURCE, "exec"), module.__dict__)
        source = triton.compiler.ASTSource(fn=module.scatter_rows_kernel, signature=SIGNATURE,
                                           constexprs={"BLOCK": 64})
        # two warps: one element of the 64-wide row per thread
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 2})
    Path(CUBIN).write_bytes(kernel.asm["cubin"])
    print(f"wrote {CUBIN} (Triton {triton.__version__})")
    tool = os.environ.get("NVDISASM") or shutil.which("nvdisasm") or next(
        iter(sorted(glob.glob(str(HERE.parent.parent / ".venv/lib/python3*/site-packages/nvidia/*/bin/nvdisasm")))),
        None)
    if tool:
        listing = subprocess.run([tool, "-ndf", "-c", "-gi", CUBIN], check=True, capture_output=True, text=True)
        Path(CUBIN + ".gi.txt").write_text(listing.stdout)
        print(f"wrote {CUBIN}.gi.txt")
    else:
        print("nvdisasm not found: the listing was not rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
