"""`make demo` keeps working: the walkthrough drives the real server and prints each part."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_walkthrough():
    out = subprocess.run([sys.executable, "-m", "aspace_dap", "demo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for part in ("== Call stack", "== Variables of lane", "== After `setFocus lane", "in every lane (laneValues",
                 "== LDS of the workgroup", "stopped in a device function, the caller unwound", "== Attach your editor"):
        assert part in text, part
    assert "#1 0x3da4 divergent at divergent_call.hip:25" in text
    # both __shared__ arrays read from LDS at the offsets the kernel's ISA uses, and the lens says where
    assert "[Share] row_sums = {4284, 4540, 4796, 5052, 0 <repeats 12 times>}  @ local@wg(1,1,0)#0x440" in text
    assert "[Share] tile = {{264, 264.5, " in text
    assert "row_sums \u27f6 local#0x440 (LDS)" in text and "tile \u27f6 local#0x0 (LDS)" in text
