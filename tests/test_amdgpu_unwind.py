"""Caller frames on real AMDGPU code, whose CFI is empty: the ABI plus the callee's machine code.

The decoder is checked against LLVM's own disassembly of every committed AMD code object
(llvm-objdump 15 and 19, kept beside each object as .s.txt): instruction boundaries, and that
every destination register the disassembly names is among the writes the decoder reports.
The prologue patterns each compiler emits for each target are pinned from that same text.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from aspace_dap.adapters.amdgpu.isa import (ALL, control, decode_all, exec_change, isa_generation, lane_read,
                                            lane_write, scalar_move, sgpr_writes, stack_access,
                                            stack_offsets_per_lane, vgpr_writes)
from aspace_dap.adapters.amdgpu.prologue import scan
from aspace_dap.adapters.base import CallerFrameTarget, CallerState
from aspace_dap.codeobj import load_code_objects
from aspace_dap.session import Session
from aspace_dap.state import StateWriter, load_state

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DC = EXAMPLES / "divergent_call"
O0 = str(DC / "divergent_call.gfx90a.O0.co")
SETTLE = 0x30B0  # _Z6settlefii at -O0 (see divergent_call.gfx90a.O0.co.s.txt)
AMD_OBJECTS = sorted(p for p in EXAMPLES.glob("*/*.co") if re.search(r"\.gfx\d", p.name))
LINE = re.compile(r"^\t(\S+)\s*(.*?)\s*// ([0-9A-F]{12}):", re.M)


def processor(path: Path) -> str:
    return re.search(r"\.(gfx[0-9a-f]+)\.", path.name).group(1)


def disassembly(path: Path) -> dict[int, tuple[str, str]]:
    """address -> (mnemonic, operands) as llvm-objdump printed them."""
    text = Path(str(path) + ".s.txt").read_text()
    return {int(a, 16): (m, ops) for m, ops, a in LINE.findall(text)}


def registers(operand: str) -> tuple[str, set[int]] | None:
    m = re.fullmatch(r"([sv])(\d+)", operand) or re.fullmatch(r"([sv])\[(\d+):(\d+)\]", operand)
    if not m:
        return None
    lo = int(m.group(2))
    hi = int(m.group(3)) if m.lastindex == 3 else lo
    return m.group(1), set(range(lo, hi + 1))


NO_DESTINATION = re.compile(r"^(s_cmp|s_bitcmp|s_setpc|s_cbranch|s_branch|s_waitcnt|s_set|s_nop|s_delay|s_sleep|"
                            r"s_endpgm|s_barrier|s_dcache|s_sendmsg|s_trap|s_icache|s_clause|s_inst_prefetch|"
                            r"s_ttrace|v_cmpx|.*store|.*write(?!lane)|exp|s_cbranch)")


@pytest.mark.parametrize("path", AMD_OBJECTS, ids=lambda p: p.name)
def test_decoder_agrees_with_llvm_objdump(path):
    """Every function decodes to llvm-objdump's instruction boundaries; every destination it
    prints is among the decoder's writes; the prologue instructions are recognised exactly."""
    co = load_code_objects(path)[0]
    gen = isa_generation(processor(path))
    wave64 = co.kernels[0].wavefront_size == 64 if co.kernels else True
    listing = disassembly(path)
    checked = decoded = 0
    for sym in co.symbols.values():
        if sym.type != "FUNC" or not sym.size:
            continue
        instructions = decode_all(co.read_memory(sym.value, sym.size), gen)
        assert instructions is not None, sym.name
        decoded += len(instructions)
        assert [sym.value + i.offset for i in instructions] == sorted(a for a in listing
                                                                        if sym.value <= a < sym.value + sym.size)
        for ins in instructions:
            mnemonic, operands = listing[sym.value + ins.offset]
            first = operands.split(",")[0].strip()
            where = (sym.name, hex(sym.value + ins.offset), mnemonic, operands)
            # the recognisers name exactly the instructions llvm calls by those names
            assert (lane_write(ins, gen) is not None) == (mnemonic == "v_writelane_b32" and
                                                          re.search(r", \d+$", operands) is not None), where
            assert (lane_read(ins, gen) is not None) == (mnemonic == "v_readlane_b32" and
                                                         re.search(r", \d+$", operands) is not None), where
            assert (scalar_move(ins, gen) is not None) == (mnemonic == "s_mov_b32"), where
            how = control(ins, gen)[0]
            assert (how == "jump") == (mnemonic == "s_branch"), where
            assert (how == "branch") == mnemonic.startswith("s_cbranch"), where
            assert (how == "call") == (mnemonic in ("s_swappc_b64", "s_call_b64")), where
            assert (how == "exit") == (mnemonic in ("s_setpc_b64", "s_endpgm")), where
            if mnemonic.startswith(("s_or_saveexec", "s_xor_saveexec")) and operands.endswith(", -1"):
                assert exec_change(ins, gen) == ("all" if mnemonic.startswith("s_or") else "inactive"), where
            access = stack_access(ins, gen)
            if access:
                kind, vgpr, _, base, offset = access
                assert ("store" in mnemonic) == (kind == "store"), where
                assert (base >= 106 or f"s{base}" in operands) and (offset == 0 or f"offset:{offset}" in operands), where
            # soundness: a register llvm names as the destination is one the decoder says may change
            regs = registers(first)
            if regs is None or NO_DESTINATION.match(mnemonic):
                continue
            file, numbers = regs
            writes = sgpr_writes(ins, gen, wave64) if file == "s" else vgpr_writes(ins, gen)
            if writes is ALL:
                continue
            if isinstance(writes, tuple):  # v_writelane: one lane of one VGPR
                assert numbers == {writes[1]}, where
            else:
                assert numbers <= writes, where
            checked += 1
    assert checked > min(20, decoded // 4)  # a one-store kernel (examples/fault) has a dozen instructions


def settle_stop(path: Path) -> tuple[int, int, bytes]:
    """(settle's address, the first address of line 12 in it, settle's code) from llvm's listing."""
    co = load_code_objects(path)[0]
    sym = co.symbols["_Z6settlefii"]
    text = Path(str(path) + ".s.txt").read_text()
    body = text[text.index("<_Z6settlefii>:"):]
    m = re.search(r"divergent_call\.hip:12\n(?:;.*\n)*\t.*// ([0-9A-F]{12}):", body)
    return sym.value, int(m.group(1), 16), co.read_memory(sym.value, sym.size)


# What each compiler's settle prologue does at -O0, read from the .s.txt listings (the frame
# pointer's copy, its lane, the whole-wave save), and where the caller's s33 is found.
PROLOGUES = {
    "divergent_call.gfx90a.O0.co": (  # hipcc (clang-15)
        ["s_or_saveexec -1", "store v15 at entry sp+0x0 offset:24 (all lanes)", "v_writelane_b32 v15, s33, 14",
         "s_mov_b32 s33, s32"], ("v", 15, 14), {15: (0, 24, "all")}),
    "divergent_call.clang15.gfx940.O0.co": (
        ["s_or_saveexec -1", "store v15 at entry sp+0x0 offset:24 (all lanes)", "v_writelane_b32 v15, s33, 14",
         "s_mov_b32 s33, s32"], ("v", 15, 14), {15: (0, 24, "all")}),
    "divergent_call.clang15.gfx1030.O0.co": (
        ["s_or_saveexec -1", "store v15 at entry sp+0x0 offset:56 (all lanes)", "v_writelane_b32 v15, s33, 7",
         "s_mov_b32 s33, s32"], ("v", 15, 7), {15: (0, 56, "all")}),
    "divergent_call.clang15.gfx1100.O0.co": (
        ["s_or_saveexec -1", "store v15 at entry sp+0x0 offset:56 (all lanes)", "v_writelane_b32 v15, s33, 7",
         "s_mov_b32 s33, s32"], ("v", 15, 7), {15: (0, 56, "all")}),
    "divergent_call.clang19.gfx90a.O0.co": (
        ["s_mov_b32 s11, s33", "s_mov_b32 s33, s32", "s_xor_saveexec -1",
         "store v0 at entry sp+0x0 offset:24 (inactive lanes: not a save)"], ("s", 11), {}),
    "divergent_call.clang19.gfx942.O0.co": (
        ["s_mov_b32 s7, s33", "s_mov_b32 s33, s32", "s_xor_saveexec -1",
         "store v0 at entry sp+0x0 offset:24 (inactive lanes: not a save)"], ("s", 7), {}),
    "divergent_call.clang19.gfx1030.O0.co": (
        ["s_mov_b32 s16, s33", "s_mov_b32 s33, s32", "s_xor_saveexec -1",
         "store v0 at entry sp+0x0 offset:60 (inactive lanes: not a save)"], ("s", 16), {}),
    "divergent_call.clang19.gfx1100.O0.co": (
        ["s_mov_b32 s12, s33", "s_mov_b32 s33, s32", "s_xor_saveexec -1",
         "store v0 at entry sp+0x0 offset:60 (inactive lanes: not a save)"], ("s", 12), {}),
}


@pytest.mark.parametrize("name", sorted(PROLOGUES))
def test_prologue_of_settle_at_O0(name):
    path = DC / name
    start, stop, code = settle_stop(path)
    gen = isa_generation(processor(path))
    saved = scan(code, stop - start, gen, processor(path).startswith("gfx9"))
    steps, home, saves = PROLOGUES[name]
    assert saved.decoded and saved.steps[:len(steps)] == steps
    assert saved.sgpr_home[33] == home and 33 not in saved.sgprs_lost
    assert saved.entry_sp == (33, 0)  # s33 = s32 on entry, untouched since
    assert {v: (s.sp_delta, s.offset, s.lanes) for v, s in saved.vgpr_saved.items()} == saves


@pytest.mark.parametrize("name", sorted(p.name for p in DC.glob("divergent_call*.O2.co")))
def test_leaf_settle_at_O2_has_no_prologue(name):
    """-O2 settle is a leaf with no stack: nothing moves, the caller's registers stay in place."""
    path = DC / name
    co = load_code_objects(path)[0]
    sym = co.symbols["_Z6settlefii"]
    code = co.read_memory(sym.value, sym.size)
    saved = scan(code, 4, isa_generation(processor(path)), processor(path).startswith("gfx9"))
    assert saved.decoded and saved.steps == [] and saved.sgpr_home == {} and saved.vgpr_saved == {}
    assert saved.entry_sp == (32, 0) and not {30, 31, 32, 33} & saved.sgprs_lost


def _patched(code: bytes, offset: int, word: int) -> bytes:
    return code[:offset] + word.to_bytes(4, "little") + code[offset + 4:]


def test_a_copy_overwritten_in_the_loop_is_lost():
    """`s_mov_b32 s11, 0` placed after the stop inside settle's loop has run in an earlier
    iteration: the caller's s33 is gone, and the scan says so instead of reading s11."""
    path = DC / "divergent_call.clang19.gfx90a.O0.co"
    start, stop, code = settle_stop(path)
    listing = disassembly(path)
    nop = next(a for a in sorted(listing) if a > stop and listing[a][0] == "s_nop")  # in line 12's body
    s_mov_s11_0 = 0xBE8B0080  # s_mov_b32 s11, 0 (GFX9 SOP1)
    saved = scan(_patched(code, nop - start, s_mov_s11_0), stop - start, 9, True)
    assert 33 in saved.sgprs_lost and 33 not in saved.sgpr_home
    # the same instruction in the epilogue (after the loop, never before the stop) changes nothing
    end = max(a for a in listing if start <= a < start + len(code) and listing[a][0] == "s_setpc_b64")
    waitcnt = max(a for a in listing if stop < a < end and listing[a][0] == "s_waitcnt")
    saved = scan(_patched(code, waitcnt - start, s_mov_s11_0), stop - start, 9, True)
    assert saved.sgpr_home[33] == ("s", 11)


def test_undecodable_code_gives_no_caller_frame():
    path = DC / "divergent_call.clang19.gfx1100.O0.co"
    start, stop, code = settle_stop(path)
    saved = scan(_patched(code, stop - start - 4, 0xFFFFFFFF), stop - start, 11, False)
    assert not saved.decoded


def test_stack_units_per_target():
    """The ISA's frame sizes: MUBUF stacks scale by the wave size, flat-scratch stacks do not."""
    assert [stack_offsets_per_lane(p) for p in ("gfx90a", "gfx1030", "gfx940", "gfx942", "gfx1100")] == \
        [False, False, True, True, True]
    assert isa_generation("gfx803") is None and isa_generation("gfx1200") is None


def test_in_the_epilogue_the_lane_copy_still_answers():
    """After `v_readlane_b32 s33, v15, 14` (0x343c) v15 lane 14 still holds the caller's s33; the
    stack pointer is being unwound there (`s_add_i32 s32, s32, 0xfffff800`), so the caller's
    s32 is reported lost rather than computed from a moving s32."""
    co = load_code_objects(O0)[0]
    code = co.read_memory(SETTLE, 0x345C - SETTLE)
    saved = scan(code, 0x3444 - SETTLE, 9, True)
    assert saved.decoded and saved.sgpr_home[33] == ("v", 15, 14) and 33 not in saved.sgprs_lost


def test_session_shows_the_caller_frame(tmp_path):
    """Stopped inside settle at -O0: the kernel's frame comes back with its own frame pointer."""
    ret = 0x37DC  # after an s_swappc_b64 s[30:31] in the kernel
    kernel_fp = 0x400 << 6  # wave-scaled
    callee_fp = 0x800 << 6
    w = StateWriter("amd", "gfx90a", 64)
    co = w.add_code_object(O0)
    d = w.add_dispatch("_Z9divergentPKfPfi", co, (64, 1, 1), (64, 1, 1))
    wg = d.add_workgroup((0, 0, 0))
    v15 = np.zeros(64, np.uint32)
    v15[14] = kernel_fp
    regs = {"pc": np.uint64(0x3204), "exec": np.uint64(0xAAAAAAAAAAAAAAAA), "s30": np.uint32(ret & 0xFFFFFFFF),
            "s31": np.uint32(ret >> 32), "s32": np.uint32(callee_fp + 0x800), "s33": np.uint32(callee_fp),
            "v15": v15.tobytes()}
    wg.add_wave(0, 0, regs)
    w.set_focus(0, 1)
    path = w.write(tmp_path / "dump")
    s = Session(load_state(path))
    frames = s.frames(0, 1)
    assert [f.name for f in frames][:2] == ["settle", "divergent"]
    caller = frames[1]
    assert caller.runtime_pc == ret and caller.caller_state.how == "prologue analysis"
    index = caller.program.index
    assert caller.line == index.line_for_pc(ret - 1).line
    target = s.frame_target(caller, caller.info.dialect)
    s33 = target.read_register(32 + 33, np.array([1]))
    assert int.from_bytes(bytes(s33.data[0]), "little") == kernel_fp
    s32 = target.read_register(32 + 32, np.array([1]))
    assert int.from_bytes(bytes(s32.data[0]), "little") == callee_fp  # the kernel's stack pointer
    # VGPR0-31 are the callee's to clobber: unavailable in the caller, never the callee's values
    v0 = target.read_register(2560, np.array([1]))
    assert not v0.valid.any()
    # v15 was saved (every lane) at the kernel's s32 + 24: read from there, not from the register
    assert 2560 + 15 in caller.caller_state.saved_in_memory
    assert caller.caller_state.saved_in_memory[2560 + 15] == (callee_fp >> 6) + 24


def test_a_callee_saved_vgpr_the_callee_wrote_is_unavailable(tmp_path):
    """settle (-O0, hipcc) writes v15 lanes only after saving v15; a VGPR above 31 it never
    touches keeps the caller's value; one written without a save would be lost."""
    w = StateWriter("amd", "gfx90a", 64)
    co = w.add_code_object(O0)
    d = w.add_dispatch("_Z9divergentPKfPfi", co, (64, 1, 1), (64, 1, 1))
    wg = d.add_workgroup((0, 0, 0))
    ret = 0x37DC
    regs = {"pc": np.uint64(0x3204), "exec": np.uint64(2), "s30": np.uint32(ret), "s31": np.uint32(0),
            "s32": np.uint32(0x800 << 6), "s33": np.uint32(0x400 << 6), "v15": np.zeros(64, np.uint32).tobytes(),
            "v40": np.arange(64, dtype=np.uint32).tobytes()}
    wg.add_wave(0, 0, regs)
    w.set_focus(0, 1)
    s = Session(load_state(w.write(tmp_path / "dump")))
    caller = s.frames(0, 1)[1]
    target = s.frame_target(caller, caller.info.dialect)
    v40 = target.read_register(2560 + 40, np.array([1, 5]))
    assert v40.valid.all() and list(np.frombuffer(v40.data.tobytes(), "<u4")) == [1, 5]
    assert 2560 + 40 not in caller.caller_state.clobbered
    assert all(2560 + n in caller.caller_state.clobbered for n in range(32) if n != 15)



def test_clang19_prologue_of_a_function_that_calls():
    """clang-19's `__assert_fail` (gfx90a -O0) before its first call: the s33 copy in s16 moves on
    into v42 lane 6 (`v_writelane_b32 v42, s16, 6`), v42 is saved for every lane (`s_mov_b64 exec,
    -1`), and the callee-saved v40/v41 are stored after `s_mov_b64 exec, s[18:19]` restored the
    entry exec: those saves hold only the lanes active on entry."""
    path = DC / "divergent_call.clang19.gfx90a.O0.co"
    co = load_code_objects(path)[0]
    sym = co.symbols["__assert_fail"]
    code = co.read_memory(sym.value, sym.size)
    listing = disassembly(path)
    call = min(a for a in listing if sym.value <= a < sym.value + sym.size and listing[a][0] == "s_swappc_b64")
    saved = scan(code, call - sym.value, 9, True)
    assert saved.steps[:3] == ["s_mov_b32 s16, s33", "s_mov_b32 s33, s32", "s_xor_saveexec -1"]
    assert "v_writelane_b32 v42, s16, 6" in saved.steps
    assert saved.sgpr_home[33] == ("v", 42, 6)
    assert {v: (s.offset, s.lanes) for v, s in saved.vgpr_saved.items()} == \
        {42: (160, "all"), 40: (4, "entry"), 41: (0, "entry")}
    # the xor-saved v0..v7 hold only the lanes inactive on entry: not used as saves
    assert not {0, 1, 4, 6, 7} & set(saved.vgpr_saved)


def test_a_save_of_the_entry_lanes_covers_only_those(tmp_path):
    """A caller register saved for the lanes active on entry reads as unavailable in the others."""
    w = StateWriter("amd", "gfx90a", 64)
    co = w.add_code_object(O0)
    d = w.add_dispatch("_Z9divergentPKfPfi", co, (64, 1, 1), (64, 1, 1))
    wg = d.add_workgroup((0, 0, 0))
    wg.add_wave(0, 0, {"pc": np.uint64(0x3204), "exec": np.uint64(0b1010)},
                private=np.full(64 * 16, 7, np.uint8).tobytes())
    w.set_focus(0, 1)
    state = load_state(w.write(tmp_path / "dump"))
    s = Session(state)
    base = s.target_for(state.wave_by_id(0), s.frames(0, 1)[0].info.dialect)
    caller = CallerFrameTarget(base, CallerState(pc=0, how="prologue analysis", saved_in_memory={2600: 4},
                                                 saved_lanes={2600: 0b1010}))
    got = caller.read_register(2600, np.array([0, 1, 2, 3]))
    assert [bool(v.all()) for v in got.valid] == [False, True, False, True]
