"""The language server reads every vendor's code objects through the same adapters as the debugger."""

import os

from aspace_dap.lsp.program import load_lenses

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def places(code_object: str, source_suffix: str) -> dict[str, list[str]]:
    out = {}
    for lens in load_lenses(os.path.join(ROOT, code_object)):
        src = next(f for f in lens.index.source_files() if f.endswith(source_suffix))
        for v in lens.variables(src):
            out[v.name] = [r.where.text for r in v.ranges]
    return out


def test_nvidia_storage_kinds_name_the_space():
    got = places("examples/cuda/lds_tiles.sm_90.G.cubin", "lds_tiles.cu")
    assert got["tile"] == ["shared#0x440"] and got["row_sums"] == ["shared#0x400"]
    assert got["in"] == ["param#0x210"] and got["rows"] == ["param#0x228"]
    assert got["tx"][0] == "%r1[lane]"


def test_intel_locations_are_described():
    got = places("examples/opencl/divergent_call.tgllp.elf", "divergent_call.cl")
    assert got, "no variables"
    assert not any(text.startswith("unreadable") for texts in got.values() for text in texts)
    # a kernel-scope __local array: IGC's SLM class encoding resolves to SLM offset 0
    assert got["cells"] == ["local#0x0 (SLM)"]
