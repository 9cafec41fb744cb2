"""Each lane's address at the faulting instruction, on examples/fault written as each vendor's core.

The expected addresses come from the files, read here by their formats' documented layouts, and from
the ISA's address rules, never from our reader:

- CUDA: `.cudbg.regs.dev0.sm0.cta0.wp0.lnL` holds lane L's R0, R1, ... as u32 (cuda-gdb's core
  layout); `ST.E desc[UR4][R2.64]` addresses R2 (low word) and R3 (high); `.cudbg.global` sections
  are the global memory the core holds, at their sh_addr.
- ROCm: the kernel's listing (fault.clang19.gfx90a.O2.co.s.txt) loads `out` into s[0:1] (kernarg 0)
  and `stride` into s3 (kernarg 8), puts gid in v2 and `out + (gid * stride << 2)` in v[0:1]; the
  kernarg segment is read from the core's PT_LOAD segments, which are the memory the core holds.
- Intel: NT_PRSTATUS holds each thread's registers in the order of NT_PRPSINFO's XML (gdb's rule);
  the send's A64 payload r68-r69 holds lane L's 64-bit address at byte 8 * L (IGA: "a64 dword
  scattering write", wr:2+1).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from dap_client import REPO_ROOT, launched
from test_intelcore import _block_layout, _notes

from aspace_dap.adapters.amdgpu.addressing import memory_access as amd_access
from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core
from aspace_dap.adapters.intel.addressing import memory_access as intel_access
from aspace_dap.adapters.intel.core_writer import write_core as write_intel_core
from aspace_dap.adapters.nvidia.addressing import memory_access as sass_access, registers_written
from aspace_dap.adapters.nvidia.core_writer import write_core as write_cuda_core
from aspace_dap.dap.lane_addresses import group_lines, progressions
from aspace_dap.session import Session
from aspace_dap.state import load_state

DUMPS = Path(REPO_ROOT) / "examples" / "fault" / "dumps"
MEM_VIOL, XNACK_ERROR = 1 << 8, 1 << 28
AMD_KERNARG = 0x7F0000000000  # where examples/dumpgen/fault.py places the kernarg segment
TGL_GT2 = 0x9A49  # the PCI device id an Intel core names (Linux i915_pciids.h: a Tiger Lake GT2)


def _have(disassembler_of: str):
    from disassembly_tools import tool_or_skip
    from aspace_dap.adapters import adapter_for
    tool_or_skip(adapter_for(disassembler_of).disassembler())


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    out = tmp_path_factory.mktemp("cores")
    with load_state(DUMPS / "sm_90.G") as state:
        cuda = write_cuda_core(state, out / "fault.cudacore", exception=(0, 1, 14, 0x2B0))
    with load_state(DUMPS / "clang19.gfx90a.O2") as state:
        rocm = write_rocm_core(state, out / "gpucore.4242", exception_wave=0, exception_trapsts=MEM_VIOL | XNACK_ERROR)
    with load_state(DUMPS / "tgllp.O0") as state:
        intel = write_intel_core(state, out / "gpu.core", fault_address=0x7F0000600000, device_id=TGL_GT2)
    return {"cuda": cuda, "rocm": rocm, "intel": intel}


def _exception_lines(core) -> tuple[list[str], str]:
    client, stopped = launched(str(core))
    try:
        info = client.request("exceptionInfo", {"threadId": stopped["threadId"]})
        repl = client.request("evaluate", {"expression": "info fault", "context": "repl"})["result"]
        return info["details"]["stackTrace"].splitlines(), repl
    finally:
        client.close()


def _load_segments(path) -> list[tuple[int, bytes]]:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [(seg["p_vaddr"], seg.data()) for seg in elf.iter_segments()
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]]


def _held(regions: list[tuple[int, int]], address: int, size: int) -> bool:
    return any(lo <= address and address + size <= lo + n for lo, n in regions)


def _step(step: int) -> str:
    return f"+ {step if step < 0x1000 else hex(step)}·lane"


# ---- CUDA: a 64-bit register pair, lanes outside the memory the core holds ------------------------------


def _cuda_registers(core) -> tuple[dict[int, list[int]], list[tuple[int, int]]]:
    regs, regions = {}, []
    with open(core, "rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if section.name.startswith(".cudbg.regs.dev0.sm0.cta0.wp0.ln"):
                data = section.data()
                regs[int(section.name.rsplit("ln", 1)[1])] = list(struct.unpack(f"<{len(data) // 4}I", data))
            elif section.name == ".cudbg.global":
                regions.append((section["sh_addr"], section["sh_size"]))
    return regs, regions


def test_cuda_pair_per_lane_with_the_lanes_outside_the_cores_memory(cores):
    _have("nvidia")
    regs, regions = _cuda_registers(cores["cuda"])
    addresses = [regs[lane][2] | regs[lane][3] << 32 for lane in range(32)]
    step = addresses[1] - addresses[0]
    assert addresses == [addresses[0] + step * lane for lane in range(32)]  # the pattern the line must name
    outside = [lane for lane, a in enumerate(addresses) if not _held(regions, a, 4)]
    assert outside == list(range(1, 32))  # gid 0 stores into out's buffer, which the core holds
    lines, repl = _exception_lines(cores["cuda"])
    at = lines.index("Addresses of desc[UR4][R2.64] (generic, 4 bytes a lane), 32 lanes (0-31):")
    assert lines[at + 1:at + 3] == [f"  32 lanes: {addresses[0]:#x} {_step(step)}",
                                    "  Outside every region the core holds: 31 lanes (1-31)"]
    # the REPL's info fault prints what the widget shows, after the exception's name and description
    assert repl.splitlines()[0].startswith("CUDA_EXCEPTION_14: CUDA Exception: Warp Illegal Address.")
    assert repl.splitlines()[1:] == lines


def test_cuda_uniform_base_and_immediate(cores):
    """nvdisasm's `[UR4+0xc]` (sm_90's LDS of a uniform base) and `[R2.64+0x10]`: the core's UR4 (the
    warp's one value, .cudbg.uregs) plus the immediate; the pair plus the immediate."""
    with open(cores["cuda"], "rb") as f:
        uregs = ELFFile(f).get_section_by_name(".cudbg.uregs.dev0.sm0.cta0.wp0").data()
    ur4 = struct.unpack_from("<I", uregs, 4 * 4)[0]
    regs, _ = _cuda_registers(cores["cuda"])
    s = Session.open(str(cores["cuda"]))
    shared = s.lane_addresses(pc=0x2B0, text="LDS R9, [UR4+0xc]")
    [op] = shared.operands
    assert set(op.addresses.values()) == {ur4 + 0xC} and sorted(op.addresses) == list(range(32))
    pair = s.lane_addresses(pc=0x2B0, text="STG.E desc[UR4][R2.64+0x10], R9")
    assert pair.operands[0].addresses == {lane: (regs[lane][2] | regs[lane][3] << 32) + 0x10 for lane in range(32)}


def test_registers_written_after_the_fault_are_not_its_registers():
    """The lanes stand at 0x2c0. From 0x2b0 nothing runs in between: R2:R3 are the store's. From 0x270
    (were the fault there), nvdisasm's `MOV R3, R3` at 0x280 writes R3 before the lanes' PC: unknown."""
    _have("nvidia")
    s = Session.open(str(DUMPS / "sm_90.G"))
    known = s.lane_addresses(pc=0x2B0, text="ST.E desc[UR4][R2.64], R4")
    assert len(known.operands[0].addresses) == 32 and not known.operands[0].unknown
    stale = s.lane_addresses(pc=0x270, text="ST.E desc[UR4][R2.64], R4")
    assert stale.operands[0].addresses == {}
    assert stale.operands[0].unknown == {
        "R2.64 may have been written after the instruction, before the lanes' PC 0x2c0": list(range(32))}


@pytest.mark.parametrize("core, operand", [
    ("fault/cores/sm_90.G.light.cudacore", "desc[UR4][R2.64] (generic"),
    ("production/cores/scatter_rows.sm_90.light.cudacore", "desc[UR6][R6.64] (global"),  # -lineinfo -O3
])
def test_a_lightweight_core_is_not_checked_against_memory_it_skipped(core, operand):
    """A lightweight core (the vLLM team's CUDA_COREDUMP_GENERATION_FLAGS) holds no global memory: the
    lanes' addresses come from its registers, and none is called outside what it holds."""
    _have("nvidia")
    path = Path(REPO_ROOT) / "examples" / core
    regs, regions = _cuda_registers(path)
    assert regions == []  # no .cudbg.global section
    pair = int(operand.split("[R")[1].split(".")[0])
    addresses = [regs[lane][pair] | regs[lane][pair + 1] << 32 for lane in range(32)]
    step = addresses[1] - addresses[0]
    assert addresses == [addresses[0] + step * lane for lane in range(32)]
    lines, _ = _exception_lines(path)
    at = next(i for i, line in enumerate(lines) if line.startswith(f"Addresses of {operand}"))
    assert lines[at + 1:at + 3] == [f"  32 lanes: {addresses[0]:#x} {_step(step)}",
                                    "  Not checked against memory: the core skipped global memory (skip_global_memory)"]


def test_the_widget_lists_the_faulting_instructions_inline_chain():
    """The faulting STG.E of the -lineinfo production build (0x1f0) sits six inline levels deep: the
    levels' lines are the rows `nvdisasm -ndf -c -gi` prints above it (the committed listing), innermost
    first, where the Call Stack shows the lanes' own PC (0x200)."""
    listing = (Path(REPO_ROOT) / "examples" / "production" / "scatter_rows.sm_90.lineinfo.cubin.gi.txt").read_text()
    rows = listing.split("/*01f0*/")[0].rsplit("*/", 1)[1]  # the //## rows between 0x1e0 and 0x1f0
    expected = [f"{Path(f).name}:{n}" for f, n in re.findall(r'//## File "([^"]+)", line (\d+)', rows)]
    assert len(expected) == 6
    lines, _ = _exception_lines(Path(REPO_ROOT) / "examples" / "production" / "cores" / "scatter_rows.sm_90.cudacore")
    at = lines.index("Inlined there, innermost first:")
    shown = lines[at + 1:at + 7]
    assert [line.rsplit("(", 1)[1].rstrip(")") for line in shown] == expected
    assert all(line.startswith("  ") for line in shown) and not lines[at + 7].startswith("  ")


# ---- ROCm: the ISA's rules, a uniform base with an offset ------------------------------------------------


def _kernargs(core) -> tuple[int, int, list[tuple[int, int]]]:
    segments = _load_segments(core)
    base, data = next((a, d) for a, d in segments if a <= AMD_KERNARG < a + len(d))
    out, stride = struct.unpack_from("<Qi", data, AMD_KERNARG - base)
    return out, stride, [(a, len(d)) for a, d in segments]


def test_rocm_pair_from_the_isa_and_the_kernargs(cores):
    _have("amd")
    out, stride, regions = _kernargs(cores["rocm"])
    # v[0:1] = s[0:1] + ((v2 * s3) sign-extended << 2), v2 = gid (listing lines 12-27)
    addresses = [(out + ((lane * stride) << 2)) & (2**64 - 1) for lane in range(64)]
    outside = [lane for lane, a in enumerate(addresses) if not _held(regions, a, 4)]
    assert outside == list(range(1, 64))
    lines, _ = _exception_lines(cores["rocm"])
    at = lines.index("Addresses of v[0:1] (global, 4 bytes a lane), 64 lanes (0-63):")
    assert lines[at + 1:at + 3] == [f"  64 lanes: {addresses[0]:#x} {_step(4 * stride)}",
                                    "  Outside every region the core holds: 63 lanes (1-63)"]


def test_rocm_uniform_base_plus_lane_offset(cores):
    """LLVM's saddr form, as the listings print it (`global_load_ushort v0, v1, s[4:5] offset:N`): the
    address is the SGPR pair + the VGPR's 32 bits, zero-extended, + the offset. In both waves s[0:1] is
    `out` and v2 gid."""
    out, _, _ = _kernargs(cores["rocm"])
    s = Session.open(str(cores["rocm"]))
    for wave in (0, 1):
        found = s.lane_addresses(wave, pc=0x184C, text="global_load_dword v5, v2, s[0:1] offset:16")
        [op] = found.operands
        assert op.addresses == {lane: out + 64 * wave + lane + 16 for lane in range(64)}
        assert op.operand.text == "v2, s[0:1] offset:16"


# ---- Intel: the send's payload, and a dump without it ----------------------------------------------------


def _intel_payload(core) -> list[int]:
    data = Path(core).read_bytes()
    notes = list(_notes(data))
    xml = notes[0][2][4:-1].decode()  # "GPU" NUL XML NUL (gdb-oneapi 2024.1 on)
    layout = _block_layout(xml)
    block = notes[1][2][16:]  # thread id, signal, SLM, then the registers
    payload = b"".join(block[layout[r][0]:layout[r][0] + layout[r][1]] for r in ("r68", "r69"))
    return [struct.unpack_from("<Q", payload, 8 * lane)[0] for lane in range(8)]


def test_intel_a64_payload_per_lane(cores):
    _have("intel")
    addresses = _intel_payload(cores["intel"])
    regions = [(a, len(d)) for a, d in _load_segments(cores["intel"])]
    step = addresses[1] - addresses[0]
    assert addresses == [addresses[0] + step * lane for lane in range(8)]
    assert [lane for lane, a in enumerate(addresses) if not _held(regions, a, 4)] == list(range(1, 8))
    lines, _ = _exception_lines(cores["intel"])
    assert "a64 dword scattering write" in lines[0] and lines[0].startswith("Instruction at the stop: 0x6f0: send")
    at = lines.index("Addresses of r68-r69 (global, 4 bytes a lane), 8 lanes (0-7):")
    assert lines[at + 1:at + 3] == [f"  8 lanes: {addresses[0]:#x} {_step(step)}",
                                    "  Outside every region the core holds: 7 lanes (1-7)"]


def _dump_without(tmp_path, name: str, registers=(), memory: bool = True) -> Path:
    """A copy of a fault dump that holds fewer registers or no global memory, as a dumper may write one."""
    dest = tmp_path / name
    shutil.copytree(DUMPS / name, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    for layout_name, layout in manifest["register_layouts"].items():
        offsets, at = {}, 0
        for reg, size in layout:
            offsets[reg] = (at, size)
            at += size
        kept = [[reg, size] for reg, size in layout if reg not in registers]
        for regs_file in (dest / "regs").iterdir():
            data = regs_file.read_bytes()
            regs_file.write_bytes(b"".join(data[offsets[r][0]:offsets[r][0] + s] for r, s in kept))
        manifest["register_layouts"][layout_name] = kept
    if not memory:
        manifest.pop("memory", None)
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def test_registers_the_core_lacks_are_named(tmp_path):
    _have("intel")
    with load_state(_dump_without(tmp_path, "tgllp.O0", registers=("r68", "r69"))) as state:
        core = write_intel_core(state, tmp_path / "gpu.core", fault_address=0x7F0000600000, device_id=TGL_GT2)
    lines, _ = _exception_lines(core)
    at = lines.index("Addresses of r68-r69 (global, 4 bytes a lane), 8 lanes (0-7):")
    assert lines[at + 1] == "  8 lanes: <unavailable: r68, r69 are not in the core>"


def test_no_global_memory_is_not_checked(tmp_path):
    _have("nvidia")
    lines, _ = _exception_lines(_dump_without(tmp_path, "sm_90.G", memory=False))
    at = lines.index("Addresses of desc[UR4][R2.64] (generic, 4 bytes a lane), 32 lanes (0-31):")
    assert lines[at + 2] == "  Not checked against memory: the dump holds no global memory"
    assert not any(line.startswith("  Outside") for line in lines)


# ---- the decoders' text, by the ISA's rules --------------------------------------------------------------


@pytest.mark.parametrize("text, terms, offset, space", [
    ("global_store_dword v[0:1], v2, off", [("v0", "v1")], 0, "global"),
    ("global_load_dword v0, v[2:3], off offset:-16", [("v2", "v3")], -16, "global"),
    ("global_atomic_add v0, v[4:5], v2, off glc", [("v4", "v5")], 0, "global"),
    ("global_load_ushort v0, v1, s[4:5] offset:24", [("s4", "s5"), ("v1",)], 24, "global"),
    ("flat_load_dword v0, v[2:3] offset:8", [("v2", "v3")], 8, "generic"),
    ("flat_store_dword v[0:1], v2", [("v0", "v1")], 0, "generic"),
    ("scratch_load_dword v0, off, s33 offset:4", [("s33",)], 4, "private_lane"),
    ("scratch_store_b32 off, v1, s33 offset:16", [("s33",)], 16, "private_lane"),
    ("scratch_load_dword v0, v1, off offset:8", [("v1",)], 8, "private_lane"),
    ("buffer_store_dword v1, v0, s[0:3], 0 offen offset:16", [("v0",)], 16, "buffer"),
    ("buffer_load_dword v0, off, s[0:3], s33 offset:104", [("s33",)], 104, "buffer"),
    ("ds_write_b32 v1, v2 offset:16", [("v1",)], 16, "local"),
    ("ds_add_rtn_u32 v0, v1, v2", [("v1",)], 0, "local"),
    ("s_load_dwordx2 s[0:1], s[4:5], 0x10", [("s4", "s5")], 16, "global"),
])
def test_llvm_amdgpu_operands(text, terms, offset, space):
    [op] = amd_access(text).operands
    assert [t.registers for t in op.terms] == terms and op.offset == offset and op.space == space


def test_ds_read2_gives_two_addresses():
    first, second = amd_access("ds_read2_b32 v[0:1], v2 offset0:1 offset1:2").operands
    assert (first.offset, second.offset) == (4, 8)  # offsets count 4-byte elements


@pytest.mark.parametrize("text", ["s_waitcnt vmcnt(0)", "v_add_u32 v0, v1, v2", "buffer_wbinvl1_vol",
                                  "ds_swizzle_b32 v0, v1 offset:swizzle(SWAP,16)"])
def test_amdgpu_instructions_without_memory(text):
    assert amd_access(text) is None


def test_every_memory_instruction_of_the_amd_listings_is_read():
    """The committed llvm-objdump listings' memory instructions all decode (no text left unread)."""
    seen = 0
    for listing in sorted((Path(REPO_ROOT) / "examples").glob("*/*.co.s.txt")):
        for line in listing.read_text().splitlines():
            m = re.match(r"^\t(.*?)\s*// [0-9A-F]+:", line)  # an instruction: `\t<text>  // <ADDRESS>: <dwords>`
            found = amd_access(m.group(1)) if m else None
            if found is not None:
                seen += 1
                assert found.operands and not found.notes, f"{listing.name}: {m.group(1)}: {found.notes}"
    assert seen > 1000


@pytest.mark.parametrize("text, registers, offset, space, bits, size", [
    ("ST.E desc[UR4][R2.64], R4", [("R2", "R3")], 0, "generic", 64, 4),
    ("STG.E desc[UR4][R2.64+0x10], R9", [("R2", "R3")], 16, "global", 64, 4),
    ("LDG.E.U8 R3, desc[UR36][R2.64]", [("R2", "R3")], 0, "global", 64, 1),
    ("LDS R6, [R6+UR4]", [("R6",), ("UR4",)], 0, "shared", 32, 4),
    ("LDS R9, [UR4+0xc]", [("UR4",)], 12, "shared", 32, 4),
    ("STL.128 [R1+0x10], R4", [("R1",)], 16, "local", 32, 16),
    ("LDS R5, [0xc]", [], 12, "shared", 32, 4),
    ("LDG.E.SYS R0, [R2]", [("R2", "R3")], 0, "global", 64, 4),  # before sm_75: .E makes R2 a pair
])
def test_sass_operands(text, registers, offset, space, bits, size):
    [op] = sass_access(text).operands
    assert [t.registers for t in op.terms] == registers
    assert (op.offset, op.space, op.bits, op.size) == (offset, space, bits, size)


def test_sass_scale_predicate_and_two_addresses():
    [op] = sass_access("@!P0 STS [R9.X4+-0x10], R6").operands
    assert op.terms[0].scale == 4 and op.offset == -16
    assert sass_access("@!P0 STS [R9.X4+-0x10], R6").predicate == ("P0", True, True)
    shared, global_ = sass_access("LDGSTS.E [R5+0x100], desc[UR4][R2.64]").operands
    assert (shared.space, global_.space) == ("shared", "global")
    assert sass_access("LDC R1, c[0x0][0x28]") is None and sass_access("MOV R2, R3") is None


def test_sass_writes():
    assert {"R2", "R3", "P0", "P1"} <= registers_written("IADD3 R2, P0, P1, R22, UR4, R2")
    assert registers_written("STG.E desc[UR4][R2.64], R3") == set()
    assert registers_written("BRA 0x100") is None


@pytest.mark.parametrize("text, grf, registers, first_lane, element, space, base", [
    ("send.dc1 (8|M0) null r68 r65 0x40 0x040681FF {@1,$7} // wr:2+1, rd:0; a64 dword scattering write",
     32, ("r68", "r69"), 0, 8, "global", None),
    ("send.dc1 (16|M16) null r13 r9 0x80 0x04025E00 {@1,$1} // wr:2+2, rd:0; untyped surface write with x",
     32, ("r13", "r14"), 16, 4, "surface", "binding table entry 0's surface"),
    ("send.ugm (32|M0) null r9 r5:2 0x0 0x08000584 {A@1,$3} // wr:4+2, rd:0; store.ugm.d32.a64",
     64, ("r9", "r10", "r11", "r12"), 0, 8, "global", None),
    ("store.ugm.d32.a32.wb.wb (16|M16)  bti[0][r13:2] r9:2 {A@1,$4}",
     32, ("r13", "r14"), 16, 4, "surface", "binding table entry 0's surface"),
    ("send.dc0 (8|M0) r7 r5 0xA 0x021106FE // wr:1+0, rd:1; dword gathering read",
     32, ("r5",), 0, 4, "local", None),  # binding table index 0xFE: SLM
])
def test_iga_send_payloads(text, grf, registers, first_lane, element, space, base):
    [op] = intel_access(text, grf).operands
    [term] = op.terms
    assert (term.registers, term.first_lane, term.size, term.payload) == (registers, first_lane, element, True)
    assert (op.space, op.base) == (space, base)


def test_iga_header_messages_are_named_not_guessed():
    found = intel_access("(W) send.dc0 (8|M0) r1 r127 null:0 0x0 0x024844FD {A@1,$0} // wr:1h+0, rd:4; "
                         "oword aligned block read x8", 32)
    assert not found.operands and "not decoded" in found.notes[0]
    assert intel_access("(W) send.ts (8|M0) null r127 null 0x0 0x02000010 {EOT,@1} // wr:1+0, rd:0; "
                        "end of thread", 32) is None


def test_progressions():
    lanes = list(range(8))
    assert progressions(lanes, [0x1000 + 4 * lane for lane in lanes]) == [(lanes, 0x1000, 4)]
    assert progressions([0, 1, 2, 5], [8, 8, 8, 8]) == [([0, 1, 2, 5], 8, 0)]
    # a run stops where the pattern does; two lanes make no run
    assert progressions([0, 1, 2, 3, 4], [0, 4, 8, 100, 50]) == [([0, 1, 2], 0, 4), ([3], 100, 0), ([4], 50, 0)]
    # one lane apart from the others' progression: the progression is one run around it
    addresses = [0x1000 + 4 * lane if lane != 7 else 0 for lane in range(32)]
    assert progressions(list(range(32)), addresses) == [([*range(7), *range(8, 32)], 0x1000, 4), ([7], 0, 0)]
    assert group_lines(list(range(32)), addresses, 64, list(range(32))) == [
        "31 lanes (0-6, 8-31): 0x1000 + 4·lane", "lane 7: 0x0"]


def test_help_names_info_fault():
    from aspace_dap.dap.repl import HELP
    assert "info fault" in HELP


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
