"""The Intel adapter on ocloc's real debug ELFs: every location expression decodes and has semantics."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from elftools.dwarf.locationlists import LocationEntry, LocationParser
from elftools.elf.elffile import ELFFile

from aspace_dap.adapters import adapter_for
from aspace_dap.adapters.intel.adapter import (GEN12LP, GENERIC, GLOBAL, LOCAL, PRIVATE, XE_HPC, XE_HPG, IntelAdapter,
                                               debug_index, device_of_code_object, grf_lane_slot, load_debug_elf,
                                               resolve_address, simd_width_of_code_object)
from aspace_dap.codeobj import load_code_objects
from aspace_dap.dwarf.dialects import detect_dialect
from aspace_dap.dwarf.evaluator import _HANDLERS, evaluate
from aspace_dap.dwarf.ops import decode
from aspace_dap.dwarf.target import Dialect, MemoryRead
from aspace_dap.errors import CodeObjectError, UnavailableError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "opencl"
KERNELS = ["lds_tiles", "scratch_struct", "divergent_call"]
INTEL = Dialect(vendor_ops="intel", producer="clang", address_size=8, offset_size=4, version=4)
LOCATION_ATTRS = ("DW_AT_location", "DW_AT_frame_base", "DW_AT_data_member_location", "DW_AT_segment")


def _expressions(elf_path: Path):
    """(DIE offset, attribute, expression bytes) for every location expression, read with pyelftools."""
    elf = ELFFile(io.BytesIO(elf_path.read_bytes()))
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
    loc_parser = LocationParser(dwarf.location_lists())
    for cu in dwarf.iter_CUs():
        for die in cu.iter_DIEs():
            for name in LOCATION_ATTRS:
                attr = die.attributes.get(name)
                if attr is None or not LocationParser.attribute_has_location(attr, cu["version"]):
                    continue
                loc = loc_parser.parse_from_attribute(attr, cu["version"], die)
                if isinstance(loc, list):
                    for entry in loc:
                        if isinstance(entry, LocationEntry):
                            yield die.offset, name, bytes(entry.loc_expr)
                else:
                    yield die.offset, name, bytes(loc.loc_expr)


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_location_expression_decodes_and_has_semantics(kernel):
    exprs = list(_expressions(EXAMPLES / f"{kernel}.tgllp.elf"))
    assert len(exprs) > 10
    seen_intel = set()
    for die, attr, expr in exprs:
        for op in decode(expr, INTEL):
            assert op.name in _HANDLERS, f"DIE {die:#x} {attr}: no semantics for {op.name}"
            if op.name.startswith("DW_OP_INTEL_"):
                seen_intel.add(op.name)
    # IGC's SIMD-lane register views are in every kernel
    assert {"DW_OP_INTEL_push_simd_lane", "DW_OP_INTEL_regs", "DW_OP_INTEL_push_bit_piece_stack"} <= seen_intel


def test_leaked_llvm_operations_decode_and_evaluate_to_an_honest_error():
    # scratch_struct's `step` and `axis` are computed from two SSA values (an LLVM DIArgList);
    # IGC wrote its location of the first, then LLVM's own elements: arg 0, masks, arg 1, ...
    leaked = [(die, expr) for die, _, expr in _expressions(EXAMPLES / "scratch_struct.tgllp.elf")
              if any(op.name == "DW_OP_LLVM_arg" for op in decode(expr, INTEL))]
    assert len(leaked) == 2
    for die, expr in leaked:
        ops = decode(expr, INTEL)
        args = [op.operands for op in ops if op.name == "DW_OP_LLVM_arg"]
        assert args == [(0x10, 0), (0x10, 1)], f"DIE {die:#x}"
        first = next(i for i, op in enumerate(ops) if op.name == "DW_OP_LLVM_arg")
        assert ops[first - 1].name == "DW_OP_stack_value"  # IGC's own, complete expression for arg 0
        res = evaluate(expr, _Target(8), INTEL, np.arange(8))
        assert not res.groups and set(res.errors) == set(range(8))
        assert all("DW_OP_LLVM_arg 0" in str(e) and isinstance(e, UnavailableError) for e in res.errors.values())
    converts = [op.operands for _, expr in leaked for op in decode(expr, INTEL) if op.name == "DW_OP_LLVM_convert"]
    assert converts == [(0x10, 16, 5), (0x10, 32, 5)]  # to a signed 16-bit, then a signed 32-bit integer


@pytest.mark.parametrize("kernel", KERNELS)
def test_debug_elf_loads_from_the_dbg_container_and_is_intel(kernel):
    co = load_debug_elf(EXAMPLES / f"{kernel}.tgllp.dbg")
    assert co.e_machine == 182  # EM_INTEL182: ocloc's debug ELF (zebin device binaries say 205)
    assert co.elf.get_section_by_name(".debug_info") is not None
    assert (EXAMPLES / f"{kernel}.tgllp.elf").read_bytes() == (EXAMPLES / f"{kernel}.tgllp.dbg").read_bytes()[
        (EXAMPLES / f"{kernel}.tgllp.dbg").read_bytes().find(b"\x7fELF"):]
    assert debug_index(co).dialect_for_cu(0).vendor_ops == "intel"


def test_dbg_container_without_elf_is_a_code_object_error():
    with pytest.raises(CodeObjectError):
        load_debug_elf(b"CTNI" + bytes(40))
    with pytest.raises(CodeObjectError):
        load_code_objects(b"CTNI" + bytes(40))


@pytest.mark.parametrize("suffix", ["dbg", "elf"])
def test_shared_loader_reads_ocloc_output_as_intel_device_code(suffix):
    [co] = load_code_objects(EXAMPLES / f"divergent_call.tgllp.{suffix}")
    assert co.e_machine == 182 and co.vendor == "intel"
    assert co.has_dwarf()


@pytest.mark.parametrize("machine", [182, 205])
def test_intel_is_detected_by_machine_even_though_the_producer_says_clang(machine):
    d = detect_dialect(producer="Debian clang version 14.0.6", augmentation=None, e_machine=machine,
                       address_size=8, offset_size=4, version=4)
    assert d.vendor_ops == "intel"


# --- the adapter ------------------------------------------------------------------------


def test_register_numbering():
    a = adapter_for("intel")
    assert isinstance(a, IntelAdapter)
    with pytest.raises(UnavailableError, match="GRF size is unknown"):  # no code object or dump named the device
        a.register_info(16 + 5, 16, INTEL)
    a = IntelAdapter(GEN12LP)
    assert a.register_info(16 + 5, 16, INTEL).name == "r5"
    assert a.register_info(16 + 5, 16, INTEL).size == 32
    assert IntelAdapter(XE_HPC).register_info(16 + 5, 16, INTEL).size == 64
    # the register file per device: 128 GRFs and f0-f1 on Xe-LP, 256 GRFs (large GRF mode), f0-f3 on Xe-HPC
    with pytest.raises(UnavailableError, match="128 GRFs"):
        a.register_info(16 + 200, 16, INTEL)
    assert IntelAdapter(XE_HPC).register_info(16 + 200, 16, INTEL).name == "r200"
    with pytest.raises(UnavailableError, match="2 flag registers"):
        a.register_info(288 + 3, 16, INTEL)
    assert IntelAdapter(XE_HPC).register_info(288 + 3, 16, INTEL).name == "f3"
    assert (a.register_info(0, 16, INTEL).name, a.register_info(1, 16, INTEL).name) == ("ip", "emask")
    assert a.register_number("r125", 16) == 16 + 125
    assert a.register_number("emask", 8) == a.register_number("exec", 8) == 1
    assert a.register_number("ip", 8) == a.register_number("pc", 8) == 0
    assert a.register_number("acc2", 8) == 306
    assert a.register_number("r256", 8) is None
    with pytest.raises(UnavailableError):
        a.register_info(4000, 16, INTEL)


# (GRF bytes, GRFs, flag registers, accumulators, SIMD widths) as the vendor's sources give them:
# IGC Platform.hpp getGRFSize / getMinDispatchMode, IGA Models.cpp register specifications, Level
# Zero's large-GRF detection (cr0 on Xe-HPG and Xe-HPC, 256 GRFs when set; 128 up to Xe-LP)
REGISTER_FILES = {GEN12LP: (32, 128, 2, 8, (8, 16, 32)), XE_HPG: (32, 256, 2, 8, (8, 16, 32)),
                  XE_HPC: (64, 256, 4, 16, (16, 32))}


@pytest.mark.parametrize("device", list(REGISTER_FILES), ids=lambda d: d.family)
def test_the_register_file_of_each_device(device):
    grf_bytes, grfs, flags, accs, widths = REGISTER_FILES[device]
    assert (device.grf_bytes, device.grf_count, device.flag_registers, device.acc_registers,
            device.simd_widths) == (grf_bytes, grfs, flags, accs, widths)
    a = IntelAdapter(device)
    assert a.register_info(16 + grfs - 1, 16, INTEL).size == grf_bytes
    assert a.register_info(288 + flags - 1, 16, INTEL).size == 4
    with pytest.raises(UnavailableError, match=f"{flags} flag registers"):
        a.register_info(288 + flags, 16, INTEL)
    assert a.register_info(304 + accs - 1, 16, INTEL).size == grf_bytes
    if accs < 16:
        with pytest.raises(UnavailableError, match=f"{accs} accumulators"):
            a.register_info(304 + accs, 16, INTEL)
    # one 32-byte address register on every device, 64-byte GRFs or not
    assert (a.register_info(272, 16, INTEL).name, a.register_info(272, 16, INTEL).size) == ("a0", 32)
    with pytest.raises(UnavailableError, match="one address register"):
        a.register_info(273, 16, INTEL)


@pytest.mark.parametrize("simd", [8, 16, 32])
def test_grf_lane_slots_span_one_to_four_grfs(simd):
    slots = [grf_lane_slot(40, lane) for lane in range(simd)]
    assert len({g for g, _ in slots}) == simd // 8
    assert slots[9 % simd] == (40 + (9 % simd) // 8, (9 % simd) % 8 * 4)
    assert grf_lane_slot(40, 5, 8) == (41, 8)  # 64-bit elements: four lanes per GRF


# ocloc -device -> what ocloc's debug file and IGC's DWARF say (GFXCORE_FAMILY in the header,
# DW_AT_INTEL_simd_width on the compile unit); IGC's GRF size per family: 64 bytes on Xe-HPC only
BUILT = {"lds_tiles.tgllp": (GEN12LP, 32), "lds_tiles.tgllp.O0": (GEN12LP, 8), "lds_tiles.pvc": (XE_HPC, 32),
         "lds_tiles.pvc.O0": (XE_HPC, 16), "lds_tiles.acm-g10": (XE_HPG, 32),
         "scratch_struct.tgllp": (GEN12LP, 16), "scratch_struct.pvc.O0": (XE_HPC, 16),
         "divergent_call.tgllp": (GEN12LP, 8), "divergent_call.pvc": (XE_HPC, 16),
         "divergent_call.acm-g10": (XE_HPG, 8)}


@pytest.mark.parametrize("build", sorted(BUILT))
def test_device_and_simd_width_come_from_the_code_object(build):
    device, simd = BUILT[build]
    [co] = load_code_objects(EXAMPLES / f"{build}.dbg")
    assert device_of_code_object(co) is device and simd_width_of_code_object(co) == simd
    assert simd in device.simd_widths
    [bare] = load_code_objects(EXAMPLES / f"{build}.elf")  # the debug ELF alone does not name the device
    assert bare.e_flags == 0 and device_of_code_object(bare) is None
    assert simd_width_of_code_object(bare) == simd
    # where IGC's own lane arithmetic shows (optimized builds keep values in GRFs), it agrees: lanes
    # per GRF = GRF bytes / element size (`lit7 and` for dwords of 32-byte GRFs, `lit15 and` on 64-byte
    # ones; half that for 64-bit elements)
    per_grf = device.grf_bytes // 4
    masks = set()
    for _, _, expr in _expressions(EXAMPLES / f"{build}.elf"):
        ops = decode(expr, INTEL)
        for i in range(2, len(ops)):
            if ops[i].name == "DW_OP_and" and ops[i - 2].name == "DW_OP_INTEL_push_simd_lane":
                mask = ops[i - 1]
                if mask.name.startswith("DW_OP_lit"):  # a lane-in-GRF mask, not a value mask
                    masks.add(int(mask.name[len("DW_OP_lit"):]))
    if build.endswith(".O0"):
        return  # -cl-opt-disable keeps variables in memory
    assert max(masks) == per_grf - 1 and masks <= {per_grf - 1, per_grf // 2 - 1}


@pytest.mark.parametrize("device,expected", [("tgllp", GEN12LP), ("pvc", XE_HPC), ("acm-g10", XE_HPG)])
def test_an_ocloc_zebin_names_its_device(device, expected):
    # `ocloc --format zebin`: e_machine 205 and .note.intelgt.compat's NT_INTELGT_PRODUCT_FAMILY
    # (29 Tiger Lake LP, 1270 DG2, 1271 PVC)
    [co] = load_code_objects(EXAMPLES / f"lds_tiles.{device}.zebin")
    assert co.e_machine == 205 and device_of_code_object(co) is expected
    assert simd_width_of_code_object(co) == 32


def test_a_zebin_names_its_product_family():
    # ocloc --format zebin writes .note.intelgt.compat: NT_INTELGT_PRODUCT_FAMILY (1271 = PVC)
    from aspace_dap.adapters.intel.adapter import _notes
    note = b"IntelGT\0"
    body = struct.pack("<III", len(note), 4, 1) + note + struct.pack("<I", 1271)
    assert list(_notes(body)) == [(1, b"IntelGT", struct.pack("<I", 1271))]
    assert list(_notes(body[:-2])) == []  # a cut note says nothing


def test_address_resolution():
    assert resolve_address(0x0A00000010000040) == (LOCAL, 0x40)  # SLM address-class encoding
    assert resolve_address(0x4000000000000080) == (LOCAL, 0x80)  # generic, tag 010
    # IGC marks valid SLM pointers with 0x10000000 above the significant low 16 bits
    assert resolve_address(0x400000001000000C) == resolve_address(0x400000000000000C) == (LOCAL, 0xC)
    assert resolve_address(0x2000700000001000) == (PRIVATE, 0x700000001000)  # tag 001
    assert resolve_address(0x3800800000001000) == (PRIVATE, 0xF800800000001000)  # canonical high half
    assert resolve_address(0x00007F0000001000) == (GLOBAL, 0x7F0000001000)
    assert resolve_address(0xFFFF800000000000) == (GLOBAL, 0xFFFF800000000000)  # tag 111 = global


class _Regs:
    """A register file of 32-byte GRFs where every dword holds (GRF << 8 | dword)."""

    def __init__(self, simd):
        self.lanes = simd

    def grf(self, n):
        return b"".join(struct.pack("<I", n << 8 | d) for d in range(8))


class _Target:
    def __init__(self, simd, memory=None):
        self.adapter = IntelAdapter(GEN12LP)
        self.lanes = simd
        self.address_size = 8
        self.regs = _Regs(simd)
        self.memory = memory or {}

    def register_info(self, regno):
        return self.adapter.register_info(regno, self.lanes, INTEL)

    def read_register(self, regno, lanes):
        info = self.register_info(regno)
        raw = np.frombuffer(self.regs.grf(regno - 16), np.uint8)[: info.size]
        return MemoryRead(raw[None, :], np.ones((1, info.size), bool))

    def address_space(self, number):
        return next(s for s in self.adapter.spaces().values() if s.number == number)

    def default_address_space(self):
        return GENERIC

    def xderef_address_space(self, number):
        return self.address_space(number)

    def frame_base_address(self, regno, value):
        return GENERIC, value

    def read_memory(self, space, lanes, addrs, size):
        data = np.zeros((len(lanes), size), np.uint8)
        valid = np.zeros((len(lanes), size), bool)
        for i, addr in enumerate(addrs):
            real, off = resolve_address(int(addr))
            blob = self.memory.get(real.name, b"")
            chunk = blob[off:off + size]
            data[i, :len(chunk)] = np.frombuffer(chunk, np.uint8)
            valid[i, :len(chunk)] = True
        return MemoryRead(data, valid)


def _lane_values(expr: bytes, simd: int):
    res = evaluate(expr, _Target(simd), INTEL, np.arange(simd))
    assert not res.errors, res.errors
    out = {}
    for lanes, entry in res.groups:
        data = entry.primary.data
        for row, lane in enumerate(lanes):
            out[int(lane)] = int.from_bytes(bytes(data[row][:4]), "little")
    return out


def test_simd8_lane_view_from_divergent_call():
    # `gid` in divergent(): push_simd_lane; lit3; shr; plus_uconst 0x29; regs; push_simd_lane; lit7; and;
    # const1u 32; mul; const1u 32; push_bit_piece_stack; stack_value
    expr = bytes.fromhex("ed332523 29eb ed371a 08201e 0820 ec 9f".replace(" ", ""))
    values = _lane_values(expr, 16)
    for lane in range(16):
        grf, byte = grf_lane_slot(0x29 - 16, lane)
        assert values[lane] == grf << 8 | byte // 4


def test_simd32_branching_view_from_lds_tiles():
    # lanes 0-15 read one GRF pair, lanes 16-31 another (DW_OP_bra on push_simd_lane >= 16)
    expr = bytes.fromhex("ed402a281300ed3325232aebed371a08201e0820ec9f2f1200ed401c3325232cebed371a08201e0820ec9f")
    values = _lane_values(expr, 32)
    for lane in range(32):
        base = 0x2A - 16 if lane < 16 else 0x2C - 16
        grf, byte = grf_lane_slot(base, lane % 16)
        assert values[lane] == grf << 8 | byte // 4


def test_regval_bits_and_bit_piece_stack():
    # regs r3; offset 64 -> regval_bits 16 pushes the low half of dword 2 of r3
    expr = bytes([0x08, 16 + 3, 0xEB, 0x08, 64, 0xFE, 16, 0x9F])
    values = _lane_values(expr, 8)
    assert set(values.values()) == {(3 << 8 | 2) & 0xFFFF}
    # a composite: 32 bits of r4 from bit 32 via bit_piece_stack (size on top, offset below)
    expr = bytes([0x90, 16 + 4, 0x08, 32, 0x08, 32, 0xEF])
    target = _Target(8)
    res = evaluate(expr, target, INTEL, np.arange(2))
    assert not res.errors
    from aspace_dap.dwarf.storage import read_bytes
    data, state = read_bytes(res.groups[0][1], target, 4)
    assert int.from_bytes(bytes(data[0]), "little") == 4 << 8 | 1


def test_slm_variable_address_is_decoded_by_the_generic_space():
    slm = bytes(range(256)) * 4
    target = _Target(8, {"local": slm})
    expr = bytes([0x0E]) + (0x0A00000010000040).to_bytes(8, "little")  # DW_OP_const8u
    res = evaluate(expr, target, INTEL, np.arange(8))
    loc = res.groups[0][1]
    from aspace_dap.dwarf.storage import read_bytes
    data, state = read_bytes(loc, target, 4)
    assert bytes(data[0]) == slm[0x40:0x44]
