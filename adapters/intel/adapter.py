"""Intel GPUs (IGC's DWARF, as Debian's `ocloc compile -options -g` writes it).

Registers (named as gdb-oneapi's intelgt target and the dump format name them): `ip`, the
execution mask `emask` and the general registers `r0`.. (DWARF 16+N), each as wide as the
device's GRF: 32 bytes up to Xe-HPG (tgllp, dg2/acm), 64 bytes on Xe-HPC (pvc). A SIMD
thread's lanes share each GRF: lane L's 32-bit value sits in GRF `base + L*4 // GRF` at byte
`L*4 % GRF`; IGC's expressions compute that with DW_OP_INTEL_push_simd_lane. The device comes
from the code object (ocloc's debug-file header, a zebin's `.note.intelgt.compat`), else from
the dump's processor name, else from the dump's own GRF size.

Addresses: private variables are A64 addresses into a global buffer. SLM variables are
`DW_OP_const8u` of IGC's address-class encoding (bits 63:56 the class, 10 = SLM; the low 16
bits the SLM offset). Generic pointers carry a tag in bits 61:63 (001 private, 010 local,
000/111 global). Only the low 16 bits of an SLM address are significant: IGC marks valid
local pointers with 0x10000000 above them (InlineLocalsResolution's VALID_LOCAL_HIGH_BITS).
The adapter's default space, "generic", decodes these forms on every access, so DWARF memory
operations and pointer dereferences reach the right storage.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from elftools.common.exceptions import DWARFError

from aspace_dap.codeobj import CodeObject, load_code_objects
from aspace_dap.codeobj.codeobject import ELF_PARSE_ERRORS
from aspace_dap.dwarf.locations import Location, MemoryLocation
from aspace_dap.dwarf.target import AddressSpace, Dialect, MemoryRead, RegisterInfo
from aspace_dap.errors import CodeObjectError, EvaluationError, UnavailableError

from ..base import TargetAdapter, WaveTarget

# IGC's LLVM address space numbers (ADDRESS_SPACE_* in IGC)
PRIVATE = AddressSpace(0, "private", 8, "device")
GLOBAL = AddressSpace(1, "global", 8, "device")
CONSTANT = AddressSpace(2, "constant", 8, "device")
LOCAL = AddressSpace(3, "local", 4, "workgroup")
GENERIC = AddressSpace(4, "generic", 8, "device")
SPACES = {s.name: s for s in (PRIVATE, GLOBAL, CONSTANT, LOCAL, GENERIC)}

# DWARF register numbers (gdb-oneapi's intelgt numbering)
IP, EMASK, BTBASE, SCRATCHBASE = 0, 1, 5, 6
GRF0, GRF_COUNT = 16, 256
A0, F0, ACC0 = 272, 288, 304
IP_BYTES = EMASK_BYTES = 4
ADDRESS_REGISTER_BYTES = 32  # a0: sixteen 16-bit subregisters on every device (IGA's Models.cpp)

# ocloc's debug ELF says 182 (EM_INTEL182); zebin device binaries say 205 (EM_INTELGT)
EM_INTEL_DEBUG, EM_INTELGT = 182, 205
INTEL_MACHINES = (EM_INTEL_DEBUG, EM_INTELGT)

# DW_AT_address_class on variables: 1 = SLM
ADDRESS_CLASS_SLM = 1
# IGC's 64-bit address-class encoding of a variable's address
ENCODED_CLASS_SHIFT = 56
ENCODED_CLASS_SLM = 10
# only the low 16 bits of an SLM address are significant (IGC: InlineLocalsResolution)
SLM_OFFSET_MASK = 0xFFFF
# generic pointer tags in bits 61:63
TAG_SHIFT = 61
TAG_PRIVATE, TAG_LOCAL = 0b001, 0b010


@dataclass(frozen=True)
class IntelDevice:
    """A GPU core family's thread register file.

    Sources: GRF size: IGC's Platform.hpp getGRFSize (64 bytes from Xe-HPC on, else 32) and IGA's
    Models.cpp (getGRFByteSize). GRFs a thread addresses: Level Zero's debugger
    (compute-runtime level_zero/core/source/gfx_core_helpers: 128 up to Xe-LP;
    l0_gfx_core_helper_xe_hpg_and_xe_hpc.inl reads large-GRF mode from cr0 for Xe-HPG and
    Xe-HPC, 256 GRFs when set; Xe2 from sr0). Flag and accumulator registers: IGA's
    Models.cpp REGISTER_SPECIFICATIONS (f0-f1 up to Xe-HPG, f0-f3 from Xe-HPC; acc0-1 up to
    Gen11, acc0-7 on Xe-LP/Xe-HP/Xe-HPG, acc0-15 of 64 bytes from Xe-HPC; a single 32-byte
    address register a0). SIMD widths: IGC's Platform.hpp getMinDispatchMode (SIMD16 from
    Xe-HPC on, else SIMD8), up to SIMD32.
    """

    family: str        # IGC's GFXCORE_FAMILY
    grf_bytes: int     # one general register
    grf_count: int     # GRFs a thread can address (large-GRF mode included)
    flag_registers: int
    simd_widths: tuple[int, ...]
    acc_registers: int


# GFXCORE_FAMILY numbers (IGC's igfxfmid.h; ocloc's .dbg headers say 18, 0x0C07 and 0x0C08 for
# tgllp, acm-g10 and pvc) -> register file
GEN8 = IntelDevice("gen8", 32, 128, 2, (8, 16, 32), 2)
GEN9 = IntelDevice("gen9", 32, 128, 2, (8, 16, 32), 2)
GEN11 = IntelDevice("gen11", 32, 128, 2, (8, 16, 32), 2)
GEN12LP = IntelDevice("gen12lp", 32, 128, 2, (8, 16, 32), 8)
XE_HP = IntelDevice("xe_hp", 32, 256, 2, (8, 16, 32), 8)
XE_HPG = IntelDevice("xe_hpg", 32, 256, 2, (8, 16, 32), 8)
XE_HPC = IntelDevice("xe_hpc", 64, 256, 4, (16, 32), 16)
XE2 = IntelDevice("xe2", 64, 256, 4, (16, 32), 16)
CORE_FAMILIES = {11: GEN8, 12: GEN9, 15: GEN11, 16: GEN11, 17: GEN12LP, 18: GEN12LP,
                 0x0C05: XE_HP, 0x0C07: XE_HPG, 0x0C08: XE_HPC, 0x0C09: XE2}
# PRODUCT_FAMILY numbers (a zebin's NT_INTELGT_PRODUCT_FAMILY note: ocloc writes 29 for tgllp, 1270 for
# acm-g10, 1271 for pvc)
PRODUCT_FAMILIES = {16: GEN8, 17: GEN8, **{n: GEN9 for n in range(18, 25)}, **{n: GEN11 for n in range(25, 29)},
                    **{n: GEN12LP for n in range(29, 34)}, 1210: GEN12LP, 1250: XE_HP, 1270: XE_HPG,
                    1271: XE_HPC, 1272: XE_HPG, 1273: XE_HPG, 1274: XE2, 1275: XE2}
# ocloc's -device names
PROCESSORS = {
    **dict.fromkeys(("bdw", "gen8"), GEN8),
    **dict.fromkeys(("skl", "kbl", "cfl", "apl", "bxt", "glk", "whl", "aml", "cml", "gen9"), GEN9),
    **dict.fromkeys(("icllp", "lkf", "ehl", "jsl", "gen11"), GEN11),
    **dict.fromkeys(("tgllp", "rkl", "adl-s", "adl-p", "adl-n", "dg1", "gen12lp", "xe"), GEN12LP),
    **dict.fromkeys(("acm-g10", "acm-g11", "acm-g12", "dg2", "dg2-g10", "dg2-g11", "dg2-g12", "ats-m150",
                     "ats-m75", "xe-hpg", "mtl", "arl"), XE_HPG),  # Xe-LPG (mtl, arl) is an Xe-HPG core
    "xe-hp": XE_HP,
    **dict.fromkeys(("pvc", "pvc-sdv", "xe-hpc"), XE_HPC),
    **dict.fromkeys(("bmg", "lnl", "xe2-hpg", "xe2-lpg"), XE2),
}
# PCI device ids (Linux's include/drm/i915_pciids.h, xe_pciids.h) -> ocloc's device names: gdb-oneapi's cores name
# the device by its id (NT_PRPSINFO's `target-id`), and IGA needs its platform
PCI_DEVICES = {
    **dict.fromkeys((0x9A60, 0x9A68, 0x9A70, 0x9A40, 0x9A49, 0x9A59, 0x9A78, 0x9AC0, 0x9AC9, 0x9AD9, 0x9AF8), "tgllp"),
    **dict.fromkeys((0x4905, 0x4906, 0x4907, 0x4908, 0x4909), "dg1"),
    **dict.fromkeys((0x5690, 0x5691, 0x5692, 0x56A0, 0x56A1, 0x56A2, 0x56BE, 0x56BF), "acm-g10"),
    **dict.fromkeys((0x5693, 0x5694, 0x5695, 0x56A5, 0x56A6, 0x56B0, 0x56B1, 0x56BA, 0x56BB, 0x56BC, 0x56BD),
                    "acm-g11"),
    **dict.fromkeys((0x5696, 0x5697, 0x56A3, 0x56A4, 0x56B2, 0x56B3), "acm-g12"),
    **dict.fromkeys((0x56C0, 0x56C2), "ats-m150"), 0x56C1: "ats-m75",
    # Linux's include/drm/intel/xe_pciids.h
    **dict.fromkeys((0x0B69, 0x0B6E, 0x0BD4, 0x0BD5, 0x0BD6, 0x0BD7, 0x0BD8, 0x0BD9, 0x0BDA, 0x0BDB), "pvc"),
}
# ocloc's debug file: SProgramDebugDataHeaderIGC (magic, version, size, device = GFXCORE_FAMILY, ...)
OCLOC_DEBUG_HEADER = struct.Struct("<4sIII")
OCLOC_DEBUG_MAGIC = b"CTNI"
# a zebin's .note.intelgt.compat notes (owner "IntelGT")
NOTE_OWNER = b"IntelGT"
NT_INTELGT_PRODUCT_FAMILY, NT_INTELGT_GFXCORE_FAMILY = 1, 2
# IGC's DW_AT_INTEL_simd_width on the compile unit and subprograms
AT_INTEL_SIMD_WIDTH = 0x2400


def device_for_processor(processor: str | None) -> IntelDevice | None:
    return PROCESSORS.get((processor or "").lower())


def device_of_code_object(co) -> IntelDevice | None:
    """The device a code object was built for, from what ocloc wrote: the debug file's header
    (GFXCORE_FAMILY) or a zebin's compat note (PRODUCT_FAMILY, or GFXCORE_FAMILY). None when
    the object does not say (a bare debug ELF: e_machine 182, e_flags 0)."""
    header = getattr(co, "container_header", b"") or b""
    if len(header) >= OCLOC_DEBUG_HEADER.size:
        magic, _version, _size, family = OCLOC_DEBUG_HEADER.unpack_from(header)
        if magic == OCLOC_DEBUG_MAGIC and family in CORE_FAMILIES:
            return CORE_FAMILIES[family]
    try:
        for section in co.elf.iter_sections():
            if section["sh_type"] != "SHT_NOTE" or not section.name.startswith(".note.intelgt"):
                continue
            for kind, owner, desc in _notes(section.data()):
                if owner != NOTE_OWNER or len(desc) < 4:
                    continue
                value = int.from_bytes(desc[:4], "little")
                if kind == NT_INTELGT_PRODUCT_FAMILY and value in PRODUCT_FAMILIES:
                    return PRODUCT_FAMILIES[value]
                if kind == NT_INTELGT_GFXCORE_FAMILY and value in CORE_FAMILIES:
                    return CORE_FAMILIES[value]
    except ELF_PARSE_ERRORS:  # a malformed note says nothing about the device
        return None
    return None


def _notes(data: bytes):
    """(type, owner, descriptor) of each ELF note in a section, 4-byte aligned; stops at a bad one."""
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        name_end = at + 12 + namesz
        desc_at = at + 12 + (namesz + 3 & ~3)
        if desc_at + descsz > len(data):
            return
        yield kind, data[at + 12:name_end].rstrip(b"\0"), data[desc_at:desc_at + descsz]
        at = desc_at + (descsz + 3 & ~3)


def simd_width_of_code_object(co) -> int | None:
    """The SIMD width IGC compiled the kernels for (DW_AT_INTEL_simd_width of the compile unit)."""
    try:
        dwarf = co.elf.get_dwarf_info(relocate_dwarf_sections=False)
        for cu in dwarf.iter_CUs():
            attr = cu.get_top_DIE().attributes.get(AT_INTEL_SIMD_WIDTH)
            if attr is not None and isinstance(attr.value, int) and attr.value:
                return attr.value
    except (*ELF_PARSE_ERRORS, DWARFError, AssertionError):
        return None  # no or malformed DWARF (pyelftools asserts on some): the code object does not say
    return None


def grf_lane_slot(base_grf: int, lane: int, element_bytes: int = 4, grf_bytes: int = 32) -> tuple[int, int]:
    """(GRF number, byte offset) of one lane's element of a SIMD-wide value starting at `base_grf`."""
    byte = lane * element_bytes
    return base_grf + byte // grf_bytes, byte % grf_bytes


def slm_offset(addr: int) -> int:
    """The SLM byte an address names: IGC keeps only its low 16 bits significant."""
    return addr & SLM_OFFSET_MASK


def resolve_address(addr: int) -> tuple[AddressSpace, int]:
    """Where an IGC address points: the SLM class encoding, a generic tag, or plain global."""
    addr &= 0xFFFFFFFFFFFFFFFF
    if addr >> ENCODED_CLASS_SHIFT == ENCODED_CLASS_SLM:
        return LOCAL, slm_offset(addr)
    tag = addr >> TAG_SHIFT
    if tag == TAG_LOCAL:
        return LOCAL, slm_offset(addr)
    if tag == TAG_PRIVATE:
        # clearing the tag restores the canonical form: bits 60:63 copy bit 59
        low = addr & ((1 << 60) - 1)
        return PRIVATE, low | (0xF << 60) if (addr >> 59) & 1 else low
    return GLOBAL, addr


def load_debug_elf(path_or_bytes: str | os.PathLike | bytes, name: str | None = None) -> CodeObject:
    """The debug ELF of an ocloc build: a `.dbg` file (ocloc header, then the ELF) or the ELF itself."""
    co = load_code_objects(path_or_bytes, name=name)[0]
    if co.e_machine not in INTEL_MACHINES:
        raise CodeObjectError(f"{co.name}: ELF machine {co.e_machine} is not an Intel GPU (182 or 205)")
    return co


def debug_index(co: CodeObject):
    """The DWARF index a session builds for this code object (the machine selects IGC's operations)."""
    from aspace_dap.dwarf.index import DwarfIndex
    return DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine)


class IntelAdapter(TargetAdapter):
    vendor = "intel"
    wave_word = "thread"  # gdb-oneapi's word for a SIMD thread
    address_size = 8
    pc_register = "ip"
    exec_register = "emask"
    exec_mask_required = True
    checks_storage_collisions = True  # a SIMD thread's lanes share its GRFs

    def __init__(self, device: IntelDevice | None = None):
        self.device = device  # None until a code object, the dump or the caller says
        self.device_source = "given" if device is not None else ""
        self.simd_width: int | None = None

    # --- the device ---------------------------------------------------------------------

    def use_code_object(self, co) -> None:
        device = device_of_code_object(co)
        if device is not None:
            self.device, self.device_source = device, f"{co.name}"
        self.simd_width = simd_width_of_code_object(co) or self.simd_width

    def use_dump(self, processor: str | None, registers=None) -> None:
        """A device the code objects did not name: the dump's processor, else its GRF size."""
        if self.device is not None:
            return
        device = device_for_processor(processor)
        if device is not None:
            self.device, self.device_source = device, f"processor {processor}"
            return
        grfs = [n for n in registers.names if n[:1] == "r" and n[1:].isdigit()] if registers is not None else []
        size = registers.size(grfs[0]) if grfs else None
        if size in (32, 64):
            self.device = XE_HPC if size == 64 else GEN12LP
            self.device_source = "the dump's 64-byte GRFs" if size == 64 else "the dump's 32-byte GRFs"

    @property
    def device_grf_count(self) -> int:
        return self.device.grf_count if self.device is not None else GRF_COUNT

    @property
    def grf_bytes(self) -> int:
        if self.device is None:
            raise UnavailableError("the Intel device is unknown (neither the code object nor the dump's "
                                   "processor names it), so the GRF size is unknown")
        return self.device.grf_bytes

    # --- address spaces -----------------------------------------------------------------

    def exceptions(self, state, active_lanes):
        from .exceptions import exceptions  # the vendor's words for what the dump records

        return exceptions(state, active_lanes)

    def spaces(self):
        return SPACES

    def default_space(self) -> AddressSpace:
        return GENERIC

    def pointer_space(self, dwarf_class, dialect):
        # OpenCL 2.0 pointers may be generic; named ones are canonical (global) or carry the
        # SLM class encoding, which the generic space decodes as well
        if dwarf_class == ADDRESS_CLASS_SLM:
            return LOCAL
        return GENERIC

    def workgroup_variable(self, var) -> bool:
        # SLM: address class 1, or a location that is the SLM class encoding itself (DW_OP_const8u)
        if var.address_space == ADDRESS_CLASS_SLM:
            return True
        expr = getattr(var.location, "expr", None)
        if expr and len(expr) == 9 and expr[0] == 0x0E:  # DW_OP_const8u <encoded address>
            return int.from_bytes(expr[1:9], "little") >> ENCODED_CLASS_SHIFT == ENCODED_CLASS_SLM
        return False

    def place_variable(self, var, location, target):
        """A variable at a generic (tagged or SLM-class encoded) address lives in the space the
        encoding names: show it there (`local#0x10`), as the reads already resolve it."""
        if not isinstance(location, Location):
            return location
        places = []
        for p in location.places:
            if isinstance(p, MemoryLocation) and p.space is GENERIC:
                resolved = [resolve_address(int(a)) for a in p.address]
                spaces = {space.name for space, _ in resolved}
                if len(spaces) == 1:
                    p = MemoryLocation(resolved[0][0], np.array([a for _, a in resolved], np.uint64),
                                       p.bit_offset, p.lanes)
            places.append(p)
        return Location(tuple(places))

    def space_label(self, space):
        # SLM is Intel's name for work-group local memory
        return {LOCAL.name: "SLM", PRIVATE.name: "private"}.get(space.name)

    # --- registers ----------------------------------------------------------------------

    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        if regno == IP:
            return RegisterInfo(regno, "ip", IP_BYTES, False)
        if regno == EMASK:
            return RegisterInfo(regno, "emask", EMASK_BYTES, False)
        if regno == BTBASE:
            return RegisterInfo(regno, "btbase", 8, False)
        if regno == SCRATCHBASE:
            return RegisterInfo(regno, "scratchbase", 8, False)
        if GRF0 <= regno < GRF0 + GRF_COUNT:
            if regno - GRF0 >= self.device_grf_count:
                raise UnavailableError(f"r{regno - GRF0} is beyond the {self.device_grf_count} GRFs of "
                                       f"{self.device.family}")
            return RegisterInfo(regno, f"r{regno - GRF0}", self.grf_bytes, False)
        if A0 <= regno < A0 + 16:
            if regno != A0:
                raise UnavailableError(f"a{regno - A0}: an Intel GPU thread has one address register, a0")
            return RegisterInfo(regno, "a0", ADDRESS_REGISTER_BYTES, False)
        if F0 <= regno < F0 + 16:
            if self.device is not None and regno - F0 >= self.device.flag_registers:
                raise UnavailableError(f"f{regno - F0} is beyond the {self.device.flag_registers} flag registers "
                                       f"of {self.device.family}")
            return RegisterInfo(regno, f"f{regno - F0}", 4, False)
        if ACC0 <= regno < ACC0 + 16:
            if self.device is not None and regno - ACC0 >= self.device.acc_registers:
                raise UnavailableError(f"acc{regno - ACC0} is beyond the {self.device.acc_registers} accumulators "
                                       f"of {self.device.family}")
            return RegisterInfo(regno, f"acc{regno - ACC0}", self.grf_bytes, False)
        raise UnavailableError(f"DWARF register {regno} is not an Intel GPU register")

    def layout_findings(self, footprints) -> dict[int, dict[int, str]]:
        """Lanes whose location IGC writes for a layout the register does not have.

        IGC's DWARF emitter places every vectorized GRF value narrower than 32 bits one lane per
        32 bits (DwarfCompileUnit.cpp, buildValidVar calls addSimdLane with isPacked false: the
        "unpacked" form), but vISA keeps a SIMD variable of 16-bit (or 8-bit) elements packed,
        lane L at element L: the local-ID payload that tx/ty come from is read as
        `r1.0<1;1,0>:uw` by the kernels' own ISA. Such a location gives lane L another lane's
        bits, so none of its lanes is shown."""
        found = {}
        for key, fp in footprints.items():
            narrow = {lane: p[0] for lane, p in sorted(fp.pulls.items()) if len(p) == 1 and 0 < p[0][2] < 32}
            for lane, (reg, bit, nbits) in narrow.items():
                after = narrow.get(lane + 1)
                if after is not None and after[0] == reg and after[1] - bit > nbits:
                    why = (f"IGC places this {nbits}-bit SIMD value one lane per {after[1] - bit} bits of {reg} "
                           f"(its unpacked form), but the register holds {nbits}-bit values packed, "
                           "so that location names another lane's bits")
                    found[key] = dict.fromkeys(fp.asked, why)
                    break
        return found

    def register_number(self, name: str, lanes: int) -> int | None:
        name = name.lower()
        fixed = {"ip": IP, "pc": IP, "emask": EMASK, "exec": EMASK, "btbase": BTBASE, "scratchbase": SCRATCHBASE}
        if name in fixed:
            return fixed[name]
        for prefix, base, count in (("acc", ACC0, 16), ("r", GRF0, GRF_COUNT), ("a", A0, 16), ("f", F0, 16)):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                n = int(name[len(prefix):])
                return base + n if n < count else None
        return None

    def register_size(self, name: str, processor: str, lanes: int) -> int | None:
        if name == self.pc_register:
            return IP_BYTES
        if name == self.exec_register:
            return EMASK_BYTES
        device = device_for_processor(processor)
        if device is not None and name[:1] == "r" and name[1:].isdigit():
            return device.grf_bytes if int(name[1:]) < device.grf_count else None
        return None

    def memory_access(self, text: str):
        from .addressing import memory_access
        return memory_access(text, self.grf_bytes)

    def make_disassembler(self):
        from .disassembler import Iga
        return Iga(self)

    def thread_name(self, wave) -> str:
        # gdb-oneapi names a thread of a GPU core by its LWP (intelgt_core_pid_to_str), one inferior per
        # device; the work-group is added as ROCgdb does
        wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
        return (f"Intel GPU {_thread_text(wave.id, wave.slot, wave.dispatch)} ({wg[0]},{wg[1]},{wg[2]})/"
                f"{wave.index_in_workgroup} SIMD{wave.lanes}")

    def thread_names(self, table) -> list[str]:
        x, y, z = table.workgroup_ids.T.tolist()
        owner = list(table.dispatches) + [None]
        slots = [None] * len(table) if table.slots is None else table.slots
        return [f"Intel GPU {_thread_text(i, s, owner[d])} ({a},{b},{c})/{k} SIMD{w}"
                for i, s, d, a, b, c, k, w in zip(table.ids.tolist(), slots, table.dispatch.tolist(), x, y, z,
                                                  table.index_in_workgroup.tolist(), table.lanes.tolist())]

    def wave_target(self, state, wave, dialect):
        if state is not None:
            self.use_dump(state.target.processor, getattr(wave, "registers", None))
        return IntelWaveTarget(self, state, wave, dialect)


def _thread_text(wave_id: int, slot, dispatch) -> str:
    """`LWP n` for a core's thread (its own id), else `thread <wave id>`; the device when the dump names it."""
    name = f"LWP {slot[0]}" if slot is not None else f"thread {wave_id}"
    device = getattr(dispatch, "device", None)
    return name if device is None else f"{name} device {device}"


class IntelWaveTarget(WaveTarget):
    def address_space(self, number):
        for s in SPACES.values():
            if s.number == number:
                return s
        raise EvaluationError(f"unknown Intel address space {number}")

    def resolve_generic(self, addr: int) -> tuple[AddressSpace, int]:
        return resolve_address(addr)

    def read_generic(self, lanes, addrs, size) -> MemoryRead:
        # a generic address carries its space in tag bits (or the SLM class encoding): lane by lane
        g = len(lanes)
        data = np.zeros((g, size), np.uint8)
        valid = np.zeros((g, size), bool)
        for i, addr in enumerate(addrs):
            real, offset = resolve_address(int(addr))
            got = self.read_memory(real, lanes[i:i + 1], np.array([offset], np.uint64), size)
            data[i], valid[i] = got.data[0], got.valid[0]
        return MemoryRead(data, valid)

    def storage_address(self, space, addrs):
        # only the low 16 bits of an SLM address are significant (IGC tags valid ones above them)
        return addrs & np.uint64(SLM_OFFSET_MASK) if space.name == "local" else addrs

    def storage(self, space: AddressSpace):
        if space.name in ("global", "private", "constant"):
            # private memory is a per-lane slice of a global buffer
            return self.state.memory.get("global")
        if space.name == "local":
            wg = self.wave.workgroup
            return wg.lds if wg is not None else None
        return None
