"""The project's own AMDGPU decoder (adapters/amdgpu/isa.py: instruction sizes and the few opcodes the
prologue and LDS analyses read) against LLVM's MC disassembler on every function of every example
code object: the same instruction boundaries, an encoding family that fits LLVM's mnemonic, and, for
every instruction isa.py gives a meaning, the mnemonic LLVM prints for it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dap_client import REPO_ROOT
from disassembly_tools import llvm_objdump_listing, tool_or_skip

from aspace_dap.adapters.amdgpu import isa
from aspace_dap.adapters.amdgpu.disassembler import LlvmObjdump
from aspace_dap.codeobj import load_code_objects

EXAMPLES = Path(REPO_ROOT) / "examples"


def _unique_objects() -> list[Path]:
    seen, out = set(), []
    for path in sorted(EXAMPLES.glob("**/*.co")):
        digest = hashlib.sha1(path.read_bytes()).hexdigest()
        if digest not in seen:  # the dumps hold copies of the example objects
            seen.add(digest)
            out.append(path)
    return out


OBJECTS = _unique_objects()
SMEM = ("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache", "s_memtime", "s_memrealtime",
        "s_scratch", "s_atomic", "s_buffer_atomic", "s_gl1_inv", "s_atc_probe")


def families(mnemonic: str) -> set[str]:
    """The encodings (isa.py's names) an instruction LLVM prints with this mnemonic may have."""
    if mnemonic.startswith(SMEM):
        return {"smem"}
    if mnemonic.startswith("s_"):
        return {"sop1", "sop2", "sopk", "sopc", "sopp"}
    if mnemonic.startswith("v_dual_"):
        return {"vopd"}
    if mnemonic.startswith("v_"):
        return {"vop1", "vop2", "vopc", "vop3", "vop3p", "vinterp"}
    prefixes = {"ds_": "ds", "flat_": "flat", "global_": "flat", "scratch_": "flat", "buffer_": "mubuf",
                "tbuffer_": "mtbuf", "image_": "mimg", "exp": "exp"}
    return {family for prefix, family in prefixes.items() if mnemonic.startswith(prefix)}


def meaning_fits(ins: isa.Instruction, gen: int, mnemonic: str) -> str | None:
    """What isa.py says an instruction is, when that disagrees with LLVM's mnemonic; None when it fits."""
    kind, _ = isa.control(ins, gen)
    expected = {"jump": ("s_branch",), "branch": ("s_cbranch_",), "call": ("s_swappc_b64", "s_call_b64"),
                "exit": ("s_endpgm", "s_setpc_b64")}.get(kind)
    if expected and not mnemonic.startswith(expected):
        return f"isa.py reads a {kind}"
    if kind == "next" and mnemonic.startswith(("s_branch", "s_cbranch_", "s_swappc", "s_setpc", "s_endpgm")) \
            and not mnemonic.startswith(("s_endpgm_saved", "s_endpgm_ordered", "s_cbranch_join",
                                         "s_cbranch_g_fork", "s_cbranch_i_fork")):
        return "isa.py reads no control flow"
    checks = [(isa.scalar_move(ins, gen), "s_mov_b32"), (isa.lane_write(ins, gen), "v_writelane_b32"),
              (isa.lane_read(ins, gen), "v_readlane_b32"),
              (isa.saveexec_destination(ins, gen), ("s_or_saveexec_", "s_xor_saveexec_"))]
    for said, name in checks:
        if said is not None and not mnemonic.startswith(name):
            return f"isa.py reads {name}"
    if isa.stack_adjust(ins, gen) is not None and not mnemonic.startswith(
            ("s_add_i32", "s_add_u32", "s_sub_i32", "s_sub_u32", "s_addk_i32")):
        return "isa.py reads a stack adjustment"
    return None


@pytest.mark.parametrize("path", OBJECTS, ids=[p.name for p in OBJECTS])
def test_isa_decoder_agrees_with_llvm(path):
    tool = tool_or_skip(LlvmObjdump())
    co = load_code_objects(str(path))[0]
    gen = isa.isa_generation(co.processor)
    assert gen is not None, co.processor
    listing = llvm_objdump_listing(tool, path, co.processor)
    sizes = sorted(listing)
    checked = 0
    for sym in co.symbols.values():
        if sym.type != "FUNC" or not sym.size:
            continue
        decoded = isa.decode_all(co.read_memory(sym.value, sym.size), gen)
        assert decoded is not None, f"{sym.name}: isa.py cannot size every instruction"
        llvm = [a for a in sizes if sym.value <= a < sym.value + sym.size]
        assert [sym.value + x.offset for x in decoded] == llvm, f"{sym.name}: instruction boundaries differ"
        for ins in decoded:
            mnemonic = listing[sym.value + ins.offset].split()[0]
            assert ins.kind in families(mnemonic), (sym.name, hex(sym.value + ins.offset), ins.kind, mnemonic)
            wrong = meaning_fits(ins, gen, mnemonic)
            assert wrong is None, (sym.name, hex(sym.value + ins.offset), wrong, mnemonic)
            checked += 1
    assert checked >= 15  # the smallest example (examples/fault, gfx90a -O2) has 15 instructions in its kernel
