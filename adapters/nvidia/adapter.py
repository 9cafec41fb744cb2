"""NVIDIA (nvcc / ptxas DWARF): storage kinds, PTX registers, shared/local/param memory, generic windows.

DW_AT_address_class holds a ptxStorageKind, used here as the address space
number. A variable's storage kind says where a DW_OP_addr address points
(param: the kernel parameter bank, shared: the CTA's shared memory);
a pointer type's says what it points into (generic when absent). DW_OP_regx
operands are packed ASCII PTX register names, found in SASS registers through
the cubin's register map at the lane's PC. The frame base is the CFA, the value
R1 plus an offset (a local-window offset, as cuda-gdb reads it). Generic addresses inside the shared
or local window (the dump's `shared` / `local` apertures) are those spaces,
anything else is global.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from pathlib import Path

import numpy as np

from aspace_dap.dwarf.locations import (CompositeLocation, Location, MemoryLocation, Piece, RegisterLocation,
                                        UndefinedLocation)
from aspace_dap.dwarf.target import AddressSpace, Dialect, MemoryRead, RegisterInfo
from aspace_dap.errors import AspaceError, CallerUnavailable, EvaluationError, StateError, UnavailableError

from ..base import CallerState, TargetAdapter, WaveTarget, unavailable
from .cubin import (LOC_HALF, LOC_LOCAL, LOC_PRED, LOC_REG, LOC_STACK, LOC_UREG, STACK_REGISTER,
                          CubinLayout, RegisterMap, ptx_register_name, ptx_register_number, ptx_register_size,
                          read_cubin_debug, relocate_cubin)

# ptxStorageKind numbers double as the adapter's address space numbers
CODE = AddressSpace(1, "code", 8, "device")
CONST = AddressSpace(4, "const", 8, "device")
GLOBAL = AddressSpace(5, "global", 8, "device")
LOCAL = AddressSpace(6, "local", 4, "lane")
PARAM = AddressSpace(7, "param", 8, "device")
SHARED = AddressSpace(8, "shared", 4, "workgroup")
GENERIC = AddressSpace(12, "generic", 8, "device")

SPACES = {s.name: s for s in (GLOBAL, GENERIC, SHARED, LOCAL, PARAM, CONST, CODE)}
BY_STORAGE_KIND = {s.number: s for s in SPACES.values()}
# iparam / oparam (device-function parameters) live on the local stack
BY_STORAGE_KIND.update({13: LOCAL, 14: LOCAL, 15: LOCAL})
REGISTER_KINDS = (2, 3, 16)  # reg, sreg, ureg: the location is a register, not memory

# SASS register numbers as the CFI writes them: class << 24 | index
SASS_CLASS_NAMES = {LOC_REG: "R", LOC_PRED: "P", LOC_UREG: "UR", LOC_HALF: "R"}
PC_REGNO = 0xFFFF_FFFF  # pseudo number for `pc` (the CFI's return address column)

WINDOWS = (("shared", SHARED), ("local", LOCAL))


def sass_regno(kind: int, index: int) -> int:
    return kind << 24 | index


def relocated_cubin(path: str | Path) -> bytes:
    """A cubin file's bytes laid out and relocated (unchanged when already relocated)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read cubin {path}: {exc.strerror or exc}") from exc
    return relocate_cubin(data, str(path))


class NvptxAdapter(TargetAdapter):
    vendor = "nvidia"
    address_size = 8
    lanes_have_own_pc = True  # sm_70+: independent thread scheduling; core dumps carry a PC per lane
    wave_word = "warp"
    uniform_workgroups = True  # a CUDA launch is gridDim blocks of blockDim threads

    def __init__(self):
        self._cubins: dict[str, tuple[CubinLayout, RegisterMap]] = {}
        self._frame_info = weakref.WeakKeyDictionary()  # code object -> (CallFrameInfo, rows by PC)

    def exceptions(self, state, active_lanes):
        from .exceptions import exceptions  # the vendor's words for what the dump records

        return exceptions(state, active_lanes)

    def spaces(self):
        return SPACES

    def default_space(self) -> AddressSpace:
        return GENERIC

    def pointer_space(self, dwarf_class, dialect):
        if dwarf_class is None:
            return GENERIC
        return BY_STORAGE_KIND.get(dwarf_class, GENERIC)

    def space_label(self, space):
        return {SHARED.name: "shared", LOCAL.name: "local"}.get(space.name)

    def variable_space(self, storage_kind: int | None) -> AddressSpace | None:
        """The space a variable's DW_OP_addr address is in, by its storage kind; None = unchanged."""
        if storage_kind is None or storage_kind in REGISTER_KINDS:
            return None
        return BY_STORAGE_KIND.get(storage_kind)

    def place_variable(self, var, location, target):
        """The variable's storage kind says which space a generic address (DW_OP_addr, frame base) is in.

        In a caller frame, PTX registers are looked up in the register map at the call
        instruction and become the SASS registers (or local slots) holding them there, so
        the unwound registers apply: a callee-clobbered register reads as unavailable.
        """
        caller = getattr(target, "_state", None)  # set on CallerFrameTarget views of caller frames
        if isinstance(caller, CallerState) and isinstance(location, Location):
            location = self._ptx_at_call(location, target, caller.pc - 1)
        space = self.variable_space(var.address_space)
        if space is None or not isinstance(location, Location):
            return location
        places = []
        for p in location.places:
            if isinstance(p, MemoryLocation) and p.space is GENERIC:
                address = p.address
                # the wave's device's windows; none for the language server's static view
                apertures = getattr(target, "apertures", None) or {}
                ap = apertures.get(space.name) if space in (SHARED, LOCAL) else None
                if ap is not None:
                    inside = (address >= np.uint64(ap.base)) & (address < np.uint64(ap.base + ap.size))
                    address = np.where(inside, address - np.uint64(ap.base), address).astype(np.uint64)
                p = MemoryLocation(space, address, p.bit_offset, p.lanes)
            places.append(p)
        return Location(tuple(places))

    def _ptx_at_call(self, location: Location, target, pc: int) -> Location:
        layout, regmap = target._cubin()
        elf_pc = pc - target._load_address
        function = layout.function_at(elf_pc)
        if function is None:
            return location

        def rebind(place):
            if isinstance(place, CompositeLocation):
                pieces = tuple(Piece(Location(tuple(rebind(q) for q in piece.location.places)), piece.bits)
                               for piece in place.pieces)
                return CompositeLocation(pieces, place.bit_offset, place.complete)
            if not isinstance(place, RegisterLocation):
                return place
            name = ptx_register_name(place.register.regno)
            if name is None:
                return place
            found = {p.piece: p for p in regmap.places(function.name, name, elf_pc - function.start) or []}
            size = place.register.size
            pieces = []
            for k in range(0, size, 4):
                where = self._sass_place(found.get(k // 4), target, place.lanes)
                pieces.append(Piece(Location((where,)), 8 * min(4, size - k)))
            return CompositeLocation(tuple(pieces), place.bit_offset)

        return Location(tuple(rebind(p) for p in location.places))

    def _sass_place(self, place, target, lanes):
        """One 32-bit piece of a PTX register as a location in SASS registers or local memory."""
        zeros = np.zeros(len(lanes), np.int64)
        if place is None:
            return UndefinedLocation(zeros)
        if place.kind in (LOC_REG, LOC_HALF, LOC_UREG, LOC_PRED):
            info = target.register_info(sass_regno(place.kind, place.index))
            return RegisterLocation(info, zeros, lanes)
        if place.kind == LOC_LOCAL:
            return MemoryLocation(LOCAL, np.full(len(lanes), place.index, np.uint64), zeros, lanes)
        if place.kind == LOC_STACK:
            sp = target.read_register(sass_regno(LOC_REG, STACK_REGISTER), lanes)
            if not sp.valid[:, :4].all():
                return UndefinedLocation(zeros)
            base = sp.data[:, :4].copy().view("<u4").reshape(-1).astype(np.uint64)
            return MemoryLocation(LOCAL, base + np.uint64(place.index), zeros, lanes)
        return UndefinedLocation(zeros)

    # --- registers ------------------------------------------------------------------

    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        ptx = ptx_register_name(regno)
        if ptx is not None:
            return RegisterInfo(regno, ptx, ptx_register_size(ptx), True)
        if regno == PC_REGNO:
            return RegisterInfo(regno, "pc", 8, False)
        kind, index = regno >> 24, regno & 0xFFFFFF
        if kind in (LOC_REG, LOC_HALF):
            return RegisterInfo(regno, f"R{index}", 4, True)
        if kind == LOC_PRED:
            return RegisterInfo(regno, f"P{index}", 1, True)
        if kind == LOC_UREG:
            return RegisterInfo(regno, f"UR{index}", 4, False)
        raise UnavailableError(f"DWARF register {regno:#x} is neither a PTX register name nor a SASS register")

    def register_number(self, name: str, lanes: int) -> int | None:
        if name.startswith("%"):
            return ptx_register_number(name)
        if name == "pc":
            return PC_REGNO
        for kind, prefix in ((LOC_UREG, "UR"), (LOC_REG, "R"), (LOC_PRED, "P")):
            if name.upper().startswith(prefix) and name[len(prefix):].isdigit():
                return sass_regno(kind, int(name[len(prefix):]))
        return None

    # --- code objects -----------------------------------------------------------------

    def cubin_debug(self, path: str) -> tuple[CubinLayout, RegisterMap]:
        """Function layout and PTX register map of a dump's cubin, read once."""
        found = self._cubins.get(path)
        if found is None:
            found = self._cubins[path] = read_cubin_debug(relocated_cubin(path), path)
        return found

    def call_frame_cfa(self, code_object, target, pc: int):
        """DW_OP_call_frame_cfa from the cubin's .debug_frame: the value R1 + offset.

        As in cuda-gdb, the CFA is the stack pointer's value (an offset in the lane's local
        window), pushed as a value so DWARF arithmetic (`fbreg -176; plus_uconst 0x48`)
        applies to it; the variable's storage kind (local) then says which space it names,
        with or without the dump's local aperture.
        """
        if code_object is None:
            return None
        try:
            rules = self._frame_rules(code_object, pc)
        except AspaceError:
            return None
        if rules is None or rules.cfa.register is None:
            return None
        regno, offset = rules.cfa.register, rules.cfa.offset

        def cfa(lanes):
            got = target.read_register(regno, lanes)
            if not got.valid[:, :4].all():
                raise UnavailableError(f"{target.register_info(regno).name} (the stack register) is not in the dump")
            sp = got.data[:, :4].copy().view("<u4").reshape(-1).astype(np.uint64)
            space, addr = target.frame_base_address(regno, sp + np.uint64(offset & 0xFFFFFFFF))
            g = len(lanes)
            return Location((MemoryLocation(space, addr, np.zeros(g, np.int64), np.asarray(lanes, np.int64)),))

        return cfa

    def _frame_rules(self, code_object, pc: int):
        from aspace_dap.dwarf.cfi import CallFrameInfo

        found = self._frame_info.get(code_object)
        if found is None:
            found = self._frame_info[code_object] = (CallFrameInfo(code_object.elf, e_machine=code_object.e_machine), {})
        cfi, rows = found
        if pc not in rows:  # every lane of a warp asks for the same few PCs
            rows[pc] = cfi.rules_at(pc)
        return rows[pc]

    def unwind(self, code_object, target, function_low, pc, lane):
        """The caller's PC and registers, cross-checked with the call stack the dump records.

        A CUDA core's backtrace tables say where each lane's frames return; the CFI says the
        same from the code. When both exist and agree the frame is the CFI's; when they
        disagree the core's return address stands (it is what the hardware recorded), every
        register of that frame reads as unavailable (the CFI's recovery cannot be trusted
        there) and the frame carries a note saying so.
        """
        prev = getattr(target, "_state", None)
        level = prev.level + 1 if isinstance(prev, CallerState) else 1
        recorded = getattr(target.wave, "return_addresses", None)
        if recorded is None:
            state = self._unwind_cfi(code_object, target, pc, lane)
            return state if state is None else replace(state, level=level)
        try:
            state = self._unwind_cfi(code_object, target, pc, lane)
        except AspaceError as exc:
            state, failure = None, f"the CFI fails ({exc})"
        else:
            failure = "the CFI finds no caller"
        stack = recorded.get(int(lane), [])
        core_pc = stack[level - 1] if level <= len(stack) else None
        if state is not None and state.pc == core_pc:
            return replace(state, level=level, how="cfi, as the core's backtrace")
        if core_pc is None:
            if state is None:
                return None
            raise UnavailableError(f"lane {lane}: the CFI unwinds to {state.pc:#x} but the core's backtrace "
                                   f"has no frame {level}; the stack ends here")
        cfi = f"the CFI unwinds to {state.pc:#x}" if state is not None else failure
        every = frozenset(self._sass_registers(target.wave))
        return CallerState(pc=core_pc, how="core backtrace", memory_space=LOCAL.name, clobbered=every, level=level,
                           note=f"lane {lane} frame {level}: the core's backtrace returns to {core_pc:#x}, {cfi}; "
                                f"its registers are shown as unavailable")

    @staticmethod
    def _sass_registers(wave) -> list[int]:
        out = []
        for name in wave.registers.names:
            for kind, prefix in ((LOC_UREG, "UR"), (LOC_REG, "R"), (LOC_PRED, "P")):
                if name.startswith(prefix) and name[len(prefix):].isdigit():
                    out.append(sass_regno(kind, int(name[len(prefix):])))
                    break
        return out

    def _unwind_cfi(self, code_object, target, pc, lane):
        """The caller's PC and registers from the callee's .debug_frame row at `pc`.

        nvcc -G describes every SASS register: "undefined" ones are the callee's to
        clobber, "same_value" ones still hold the caller's value, "offset" ones were
        saved in local memory at CFA + N. The return address column is R20 with the
        high half in R21 (CALL.REL takes the address from the pair). The CFA is R1 +
        offset, per lane in the local window.
        """
        if code_object is None:
            return None
        rules = self._frame_rules(code_object, pc)
        if rules is None or rules.cfa.register is None:
            return None
        lanes = np.array([lane])

        def register(regno):
            got = target.read_register(regno, lanes)
            return int.from_bytes(bytes(got.data[0, :4]), "little") if got.valid[0, :4].all() else None

        sp = register(rules.cfa.register)
        if sp is None:
            return None
        cfa = (sp + rules.cfa.offset) & 0xFFFFFFFF

        def caller_value(regno):
            rule = rules.rule_for(regno)
            if rule.kind == "same_value":
                return register(regno)
            if rule.kind == "register":
                return register(rule.operand)
            if rule.kind == "val_offset":
                return (cfa + rule.operand) & 0xFFFFFFFF
            if rule.kind == "offset":
                got = target.read_memory(LOCAL, lanes, np.array([cfa + rule.operand], np.uint64), 4)
                return int.from_bytes(bytes(got.data[0]), "little") if got.valid[0].all() else None
            return None

        ra = rules.return_address_register
        lo, hi = caller_value(ra), caller_value(ra + 1)
        if lo is None or hi is None:
            saved = [cfa + rules.rule_for(r).operand for r in (ra, ra + 1) if rules.rule_for(r).kind == "offset"]
            why = getattr(target.state, "missing_memory", {}).get(LOCAL.name)
            if saved and why:  # the callee saved the return address on the stack, which the core left out
                raise CallerUnavailable(f"the return address is saved in local memory at {min(saved):#x}, and "
                                       f"{why}: the caller is unknown")
            return None
        layout, _ = target._cubin()
        ret = (hi << 32 | lo) - target._load_address
        caller = layout.function_at(ret)
        if caller is None or caller.start == ret:
            return None  # a lane that never made the call: a return address follows a CALL, never starts a function
        values, saved, clobbered = {}, {}, set()
        for regno, rule in rules.registers.items():
            if rule.kind == "undefined":
                clobbered.add(regno)
            elif rule.kind == "offset":
                saved[regno] = cfa + rule.operand
            elif rule.kind in ("register", "val_offset"):
                # a moved stack pointer: the warp shares one, so the focus lane's value stands for all
                value = caller_value(regno)
                if value is None:
                    clobbered.add(regno)
                else:
                    values[regno] = value
        return CallerState(pc=hi << 32 | lo, how="cfi", values=values, saved_in_memory=saved,
                           memory_space=LOCAL.name, clobbered=frozenset(clobbered))

    # --- naming -----------------------------------------------------------------------

    def function_symbol(self, code_object, address: int) -> tuple[str, int, int] | None:
        """The function symbol holding a code address. ptxas gives a device function it places inside a
        kernel's section a local symbol `$<kernel>$<function>` (both mangled): the function's own name is
        the part after the kernel's."""
        found = super().function_symbol(code_object, address)
        if found is not None and found[0].startswith("$") and found[0].count("$") >= 2:
            return (found[0].rsplit("$", 1)[1] or found[0],) + found[1:]
        return found

    def memory_access(self, text: str):
        from .addressing import memory_access
        return memory_access(text)

    def registers_written(self, text: str):
        from .addressing import registers_written
        return registers_written(text)

    def make_disassembler(self):
        from .disassembler import Nvdisasm
        return Nvdisasm()

    def thread_name(self, wave) -> str:
        # cuda-gdb's focus words, in its order: kernel (the dispatch), cluster, block, the warp's first
        # thread, device, and where a core says the warp ran: sm and the warp's slot on it
        dispatch = wave.dispatch
        wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
        first = wave.local_id(0) if dispatch is not None else (0, 0, 0)
        kernel = f"kernel {dispatch.id} " if dispatch is not None else ""
        cluster = getattr(wave.workgroup, "cluster", None)
        cluster_text = "" if cluster is None else f"cluster ({cluster[0]},{cluster[1]},{cluster[2]}) "
        return (f"CUDA {kernel}{cluster_text}block ({wg[0]},{wg[1]},{wg[2]}) thread ({first[0]},{first[1]},{first[2]})"
                f"{_device_text(dispatch, wave.slot)}")

    def thread_names(self, table) -> list[str]:
        dispatches = table.dispatches
        if table.ids.dtype == object or any(max(d.workgroup_size) >= 1 << 31 for d in dispatches):
            return super().thread_names(table)
        kernel = [f"kernel {d.id} " for d in dispatches] + [""]
        slots = table.slots
        # each warp's first thread: lane 0's local id, x fastest (Wave.local_id); none without a dispatch
        size = np.array([[max(v, 1) for v in d.workgroup_size] for d in dispatches] + [[1, 1, 1]], np.int64)
        size = size[table.dispatch]
        flat = table.index_in_workgroup * table.lanes
        first = np.stack([flat % size[:, 0], flat // size[:, 0] % size[:, 1], flat // (size[:, 0] * size[:, 1])])
        first[:, table.dispatch < 0] = 0
        clusters = [None] * len(table) if table.clusters is None else table.clusters
        cluster_text = ["" if c is None else f"cluster ({c[0]},{c[1]},{c[2]}) " for c in clusters]
        x, y, z = table.workgroup_ids.T.tolist()
        tx, ty, tz = first.tolist()
        owner = list(dispatches) + [None]
        slots = [None] * len(table) if slots is None else slots
        return [f"CUDA {kernel[d]}{c}block ({a},{b},{e}) thread ({i},{j},{m}){_device_text(owner[d], s)}"
                for c, a, b, e, i, j, m, d, s in zip(cluster_text, x, y, z, tx, ty, tz, table.dispatch.tolist(), slots)]

    def wave_target(self, state, wave, dialect):
        return NvptxWaveTarget(self, state, wave, dialect)


def _device_text(dispatch, slot) -> str:
    """` device D sm S warp W` as far as the dump says: the device when it holds several (a core of one
    device: its device 0), the SM and warp slot from a core's tables."""
    device = getattr(dispatch, "device", None)
    if device is None and slot is not None:
        device = 0
    text = "" if device is None else f" device {device}"
    return text if slot is None else f"{text} sm {slot[0]} warp {slot[1]}"


class NvptxWaveTarget(WaveTarget):
    """One warp: PTX registers through the register map, spaces through the dump."""

    generic_windows = WINDOWS
    generic_fallback = GLOBAL

    def __init__(self, adapter: NvptxAdapter, state, wave, dialect):
        super().__init__(adapter, state, wave, dialect)
        self._debug: tuple[CubinLayout, RegisterMap] | None = None
        self._load_address = 0

    def address_space(self, number):
        space = BY_STORAGE_KIND.get(number)
        if space is None:
            raise EvaluationError(f"unknown NVIDIA storage kind {number}")
        return space

    def frame_base_address(self, regno, value):
        # R1 and the CFA hold offsets in the lane's local window. They are values (a generic
        # address, as DWARF 5 reads a frame base), so fbreg / plus_uconst arithmetic applies;
        # the variable's storage kind turns them into local addresses (place_variable)
        return GENERIC, value & np.uint64(0xFFFFFFFF)

    # ------------------------------------------------------------------ registers

    def _cubin(self) -> tuple[CubinLayout, RegisterMap]:
        if self._debug is None:
            dispatch = self.wave.dispatch
            ref = self.state.code_object_by_id(dispatch.code_object) if dispatch and \
                dispatch.code_object is not None else None
            if ref is None:
                raise UnavailableError("PTX registers need the dump's cubin (its register map)")
            self._debug = self.adapter.cubin_debug(str(ref.path))
            self._load_address = ref.load_address
        return self._debug

    def _lane_pcs(self, lanes: np.ndarray) -> np.ndarray:
        if self.wave.lane_pcs is not None:
            return self.wave.lane_pcs[lanes].astype(np.int64)
        pc = self.wave.pc
        if pc is None:
            raise UnavailableError(f"wave {self.wave.id} has no pc in the dump")
        return np.full(len(lanes), pc, np.int64)

    def read_register(self, regno, lanes):
        lanes = np.asarray(lanes, np.int64)
        info = self.register_info(regno)
        if info.name == "pc":
            pcs = self._lane_pcs(lanes).astype("<u8")
            return MemoryRead(pcs.view(np.uint8).reshape(len(lanes), 8), np.ones((len(lanes), 8), bool))
        if not info.name.startswith("%"):
            if info.name.startswith("P"):
                return self._read_predicate(info.name, lanes)
            return super().read_register(regno, lanes)
        data = np.zeros((len(lanes), info.size), np.uint8)
        valid = np.zeros((len(lanes), info.size), bool)
        layout, regmap = self._cubin()
        pcs = self._lane_pcs(lanes)
        for pc in np.unique(pcs):
            rows = np.nonzero(pcs == pc)[0]
            elf_pc = int(pc) - self._load_address
            function = layout.function_at(elf_pc)
            if function is None:
                continue
            places = regmap.places(function.name, info.name, elf_pc - function.start)
            for place in places or []:
                got = self._read_place(place, lanes[rows])
                lo = 4 * place.piece
                n = min(4, info.size - lo)
                if n <= 0:
                    continue
                data[rows, lo:lo + n] = got.data[:, :n]
                valid[rows, lo:lo + n] = got.valid[:, :n]
        return MemoryRead(data, valid)

    def stacked_pieces(self, regno: int, pc: int) -> list[tuple[int, int]] | None:
        """How read_register reads DWARF register `regno` for lanes standing at runtime `pc`, where it reads
        whole SASS registers only: [(byte offset in the value, the SASS register's DWARF number)], each read
        as WaveTarget.read_register reads it (its first bytes); [] when nothing holds it there; None when it
        is read any other way (the pc, a predicate, local memory). What reading many warps at once needs."""
        info = self.register_info(regno)
        if info.name == "pc" or info.name.startswith("P"):
            return None
        if not info.name.startswith("%"):
            return [(0, regno)]
        layout, regmap = self._cubin()
        elf_pc = pc - self._load_address
        function = layout.function_at(elf_pc)
        if function is None:
            return []
        out = []
        for place in regmap.places(function.name, info.name, elf_pc - function.start) or []:
            if place.kind not in (LOC_REG, LOC_HALF, LOC_UREG):
                return None
            out.append((4 * place.piece, sass_regno(place.kind, place.index)))
        return out

    def _read_place(self, place, lanes) -> MemoryRead:
        if place.kind in (LOC_REG, LOC_HALF, LOC_UREG):
            return WaveTarget.read_register(self, sass_regno(place.kind, place.index), lanes)
        if place.kind == LOC_PRED:
            got = self._read_predicate(f"P{place.index}", lanes)
            data = np.zeros((len(lanes), 4), np.uint8)
            valid = np.zeros((len(lanes), 4), bool)
            data[:, :1], valid[:] = got.data, got.valid[:, :1]
            return MemoryRead(data, valid)
        if place.kind == LOC_LOCAL:
            return self.read_memory(LOCAL, lanes, np.full(len(lanes), place.index, np.uint64), 4)
        if place.kind == LOC_STACK:
            sp = WaveTarget.read_register(self, sass_regno(LOC_REG, STACK_REGISTER), lanes)
            base = sp.data[:, :4].copy().view("<u4").reshape(-1).astype(np.uint64)
            got = self.read_memory(LOCAL, lanes, base + np.uint64(place.index), 4)
            got.valid &= sp.valid[:, :4].all(axis=1, keepdims=True)
            return got
        return unavailable(len(lanes), 4)

    def _read_predicate(self, name: str, lanes) -> MemoryRead:
        regs = self.wave.registers
        if not regs.has(name):
            return unavailable(len(lanes), 1)
        data, valid = regs.lane_view(name, self.lanes)
        return MemoryRead((data[lanes, :1] & 1).astype(np.uint8), valid[lanes, :1])

    def write_register(self, regno, lanes, byte_offsets, data):
        info = self.register_info(regno)
        if not info.name.startswith("%"):
            super().write_register(regno, lanes, byte_offsets, data)
            return
        layout, regmap = self._cubin()
        pcs = self._lane_pcs(np.asarray(lanes, np.int64))
        for lane, pc, off, row in zip(lanes, pcs, byte_offsets, data):
            elf_pc = int(pc) - self._load_address
            function = layout.function_at(elf_pc)
            places = regmap.places(function.name, info.name, elf_pc - function.start) if function else None
            if not places:
                raise StateError(f"{info.name} lives nowhere at pc {int(pc):#x}")
            raw = bytes(row)
            for i, byte in enumerate(raw):
                at = int(off) + i
                place = next((p for p in places if p.piece == at // 4), None)
                if place is None or place.kind not in (LOC_REG, LOC_HALF):
                    raise StateError(f"byte {at} of {info.name} is not in a general register at pc {int(pc):#x}")
                WaveTarget.write_register(self, sass_regno(place.kind, place.index), np.array([lane]),
                                          np.array([at % 4]), np.array([[byte]], np.uint8))

    # ------------------------------------------------------------------ memory

    def _param(self):
        dispatch = self.wave.dispatch
        if dispatch is None:
            return None
        return dispatch.memory.get("param") or dispatch.const_bank(0)

    def private_owners(self, space, lanes):
        return lanes if space is LOCAL else None

    def storage(self, space):
        if space is GLOBAL or space is CODE:
            return self.state.memory.get("global")
        if space is SHARED:
            wg = self.wave.workgroup
            return wg.lds if wg is not None else None
        if space is PARAM:
            return self._param()
        if space is CONST:
            return self.state.memory.get("const") or self.state.memory.get("global")
        return None
