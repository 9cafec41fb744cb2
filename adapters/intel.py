"""Intel GPUs (IGC's DWARF, as Debian's `ocloc compile -options -g` writes it).

Registers: IP, the execution mask and the 32-byte general registers r0.. (DWARF
16+N). A SIMD thread's lanes share each GRF: lane L's 32-bit value sits in GRF
`base + L*4 // 32` at byte `L*4 % 32`, so a per-lane view spans 1-4 GRFs for
SIMD8/16/32; IGC's expressions compute that with DW_OP_INTEL_push_simd_lane.

Addresses: private variables are A64 addresses into a global buffer. SLM
variables are `DW_OP_const8u` of IGC's address-class encoding (bits 63:56 the
class, 10 = SLM; the low 16 bits the SLM offset). Generic pointers carry a tag
in bits 61:63 (001 private, 010 local, 000/111 global). The adapter's default
space, "generic", decodes both forms on every access, so DWARF memory
operations and pointer dereferences reach the right storage.
"""

from __future__ import annotations

import os

import numpy as np

from aspace_dap.codeobj import CodeObject, load_code_objects
from aspace_dap.dwarf.locations import Location, MemoryLocation
from aspace_dap.dwarf.target import AddressSpace, Dialect, MemoryRead, RegisterInfo
from aspace_dap.errors import CodeObjectError, EvaluationError, UnavailableError

from .base import TargetAdapter, WaveTarget

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
GRF_BYTES = 32

# ocloc's debug ELF says 182 (EM_INTEL182); zebin device binaries say 205 (EM_INTELGT)
EM_INTEL_DEBUG, EM_INTELGT = 182, 205
INTEL_MACHINES = (EM_INTEL_DEBUG, EM_INTELGT)

# DW_AT_address_class on variables: 1 = SLM
ADDRESS_CLASS_SLM = 1
# IGC's 64-bit address-class encoding of a variable's address
ENCODED_CLASS_SHIFT = 56
ENCODED_CLASS_SLM = 10
SLM_OFFSET_MASK = 0xFFFF
# generic pointer tags in bits 61:63
TAG_SHIFT = 61
TAG_PRIVATE, TAG_LOCAL = 0b001, 0b010


def grf_lane_slot(base_grf: int, lane: int, element_bytes: int = 4) -> tuple[int, int]:
    """(GRF number, byte offset) of one lane's element of a SIMD-wide value starting at `base_grf`."""
    byte = lane * element_bytes
    return base_grf + byte // GRF_BYTES, byte % GRF_BYTES


def resolve_address(addr: int) -> tuple[AddressSpace, int]:
    """Where an IGC address points: the SLM class encoding, a generic tag, or plain global."""
    addr &= 0xFFFFFFFFFFFFFFFF
    if addr >> ENCODED_CLASS_SHIFT == ENCODED_CLASS_SLM:
        return LOCAL, addr & SLM_OFFSET_MASK
    tag = addr >> TAG_SHIFT
    if tag == TAG_LOCAL:
        return LOCAL, addr & 0xFFFFFFFF
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
    address_size = 8

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

    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        if regno == IP:
            return RegisterInfo(regno, "pc", 4, False)
        if regno == EMASK:
            return RegisterInfo(regno, "exec", 4, False)
        if regno == BTBASE:
            return RegisterInfo(regno, "btbase", 8, False)
        if regno == SCRATCHBASE:
            return RegisterInfo(regno, "scratchbase", 8, False)
        if GRF0 <= regno < GRF0 + GRF_COUNT:
            return RegisterInfo(regno, f"r{regno - GRF0}", GRF_BYTES, False)
        if A0 <= regno < A0 + 16:
            return RegisterInfo(regno, f"a{regno - A0}", GRF_BYTES, False)
        if F0 <= regno < F0 + 16:
            return RegisterInfo(regno, f"f{regno - F0}", 4, False)
        if ACC0 <= regno < ACC0 + 16:
            return RegisterInfo(regno, f"acc{regno - ACC0}", GRF_BYTES, False)
        raise UnavailableError(f"DWARF register {regno} is not an Intel GPU register")

    def register_number(self, name: str, lanes: int) -> int | None:
        name = name.lower()
        fixed = {"pc": IP, "ip": IP, "exec": EMASK, "emask": EMASK, "btbase": BTBASE, "scratchbase": SCRATCHBASE}
        if name in fixed:
            return fixed[name]
        for prefix, base, count in (("acc", ACC0, 16), ("r", GRF0, GRF_COUNT), ("a", A0, 16), ("f", F0, 16)):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                n = int(name[len(prefix):])
                return base + n if n < count else None
        return None

    def thread_name(self, wave, active: int, total: int) -> str:
        # gdb-oneapi shows one thread per SIMD thread with its lanes; add the work-group like ROCgdb does
        wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
        return (f"Intel GPU thread {wave.id} ({wg[0]},{wg[1]},{wg[2]})/{wave.index_in_workgroup}"
                f" SIMD{wave.lanes} [{active}/{total} active]")

    def wave_target(self, state, wave, dialect):
        return IntelWaveTarget(self, state, wave, dialect)


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
        # only the low 32 bits of an SLM address are significant
        return addrs & np.uint64(0xFFFFFFFF) if space.name == "local" else addrs

    def storage(self, space: AddressSpace):
        if space.name in ("global", "private", "constant"):
            # private memory is a per-lane slice of a global buffer
            return self.state.memory.get("global")
        if space.name == "local":
            wg = self.wave.workgroup
            return wg.lds if wg is not None else None
        return None
