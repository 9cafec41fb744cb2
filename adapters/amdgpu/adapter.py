"""AMDGPU: register numbers, address spaces and the two DWARF dialects.

ROCm's heterogeneous dialect addresses a vector register as the whole wave
(`regx VGPRn; push_lane; lit4; mul; offset` picks the lane's dword) and uses
DW_ASPACE numbers. Upstream LLVM (Debian's clang) writes a plain `regx VGPRn`
meaning the current lane's dword, `addrx; lit2; swap; xderef` for LDS with
its own numbering (1 = private, 2 = local), and a frame base in SGPR33 that
holds a wave-scaled scratch offset.
"""

from __future__ import annotations

import numpy as np

from aspace_dap.dwarf.target import AddressSpace, Dialect, RegisterInfo
from aspace_dap.errors import EvaluationError, UnavailableError

from .hip import coordinate_global
from .isa import ALL, isa_generation, stack_offsets_per_lane
from .lds import LdsPlacement, is_bare_zero, solve_layout, static_lds_address
from .prologue import CALLEE_SAVED_VGPRS, scan
from ..base import CallerState, TargetAdapter, WaveTarget

GLOBAL = AddressSpace(0, "global", 8, "device")
GENERIC = AddressSpace(1, "generic", 8, "device")
REGION = AddressSpace(2, "region", 4, "device")
LOCAL = AddressSpace(3, "local", 4, "workgroup")
PRIVATE_LANE = AddressSpace(5, "private_lane", 4, "lane")
PRIVATE_WAVE = AddressSpace(6, "private_wave", 4, "wave")
PRIVATE_LANE_N = [AddressSpace(0x20 + n, f"private_lane{n}", 4, "wave") for n in range(64)]

SPACES = {s.name: s for s in [GLOBAL, GENERIC, REGION, LOCAL, PRIVATE_LANE, PRIVATE_WAVE, *PRIVATE_LANE_N]}
BY_NUMBER = {s.number: s for s in SPACES.values()}
# upstream LLVM's DW_OP_xderef address-space ids
UPSTREAM_XDEREF = {0: GLOBAL, 1: PRIVATE_LANE, 2: LOCAL}

PC_64 = 16
EXEC_64 = 17
EXEC_32 = 1
SGPR0, SGPR64 = 32, 1088
VGPR32_0, AGPR32_0 = 1536, 2048
VGPR64_0, AGPR64_0 = 2560, 3072
FRAME_REGS = (64, 65)  # SGPR32 (stack pointer), SGPR33 (frame pointer)


class AmdgpuAdapter(TargetAdapter):
    vendor = "amd"
    compiler_active_lanes = True
    address_size = 8
    exec_mask_required = True

    def register_size(self, name, processor, lanes):
        # EXEC has one bit per lane of the wave
        return lanes // 8 if name == self.exec_register and lanes in (32, 64) else None

    def exceptions(self, state, active_lanes):
        from .exceptions import exceptions  # the vendor's words for what the dump records

        return exceptions(state, active_lanes)

    def spaces(self):
        return SPACES

    def coordinate_global(self, var, index):
        return coordinate_global(var, index)

    def pointer_space(self, dwarf_class, dialect):
        # HIP pointers are flat (generic) unless the type says otherwise
        if dwarf_class is None:
            return GENERIC
        if dialect.heterogeneous:
            return BY_NUMBER.get(dwarf_class, GENERIC)
        return UPSTREAM_XDEREF.get(dwarf_class, GENERIC)

    def space_label(self, space):
        if space.scope == "workgroup":
            return "LDS"
        if space is REGION:
            return "GDS"
        # private_lane, private_wave and private_laneN are views of the same scratch memory
        return "scratch" if space.scope in ("lane", "wave") else None

    def workgroup_variable(self, var) -> bool:
        # ROCm: DW_ASPACE local or DW_MSPACE group (3); upstream clang: `...; lit2; swap; xderef` (2 = local)
        if var.address_space == LOCAL.number or var.memory_space == 3:
            return True
        expr = getattr(var.location, "expr", None)
        return not var.dialect.heterogeneous and bool(expr) and bytes(expr[-3:]) == bytes([0x32, 0x16, 0x18])

    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        vbase, abase = (VGPR64_0, AGPR64_0) if lanes == 64 else (VGPR32_0, AGPR32_0)
        whole = dialect.heterogeneous
        if regno == PC_64:
            return RegisterInfo(regno, "pc", 8, False)
        if (regno == EXEC_64 and lanes == 64) or (regno == EXEC_32 and lanes == 32):
            return RegisterInfo(regno, "exec", lanes // 8, False)
        if SGPR0 <= regno < SGPR0 + 64:
            return RegisterInfo(regno, f"s{regno - SGPR0}", 4, False)
        if SGPR64 <= regno < SGPR64 + 42:
            return RegisterInfo(regno, f"s{regno - SGPR64 + 64}", 4, False)
        for base, prefix in ((vbase, "v"), (abase, "a")):
            if base <= regno < base + 256:
                name = f"{prefix}{regno - base}"
                return RegisterInfo(regno, name, 4 * lanes, False) if whole else RegisterInfo(regno, name, 4, True)
        raise UnavailableError(f"DWARF register {regno} is not an AMDGPU {'wave64' if lanes == 64 else 'wave32'} register")

    def register_number(self, name: str, lanes: int) -> int | None:
        name = name.lower()
        if name == "pc":
            return PC_64
        if name == "exec":
            return EXEC_64 if lanes == 64 else EXEC_32
        if name[:1] in "sva" and name[1:].isdigit():
            n = int(name[1:])
            if name[0] == "s":
                return SGPR0 + n if n < 64 else SGPR64 + n - 64 if n < 106 else None
            if n < 256:
                return (VGPR64_0 if lanes == 64 else VGPR32_0) + n if name[0] == "v" else \
                    (AGPR64_0 if lanes == 64 else AGPR32_0) + n
        return None

    def unwind(self, code_object, target, function_low, pc, lane):
        """Caller registers from the AMDGPU calling convention and the callee's code.

        On entry the return address is in s[30:31] and the caller's stack pointer in s32;
        SGPR4-31 and VGPR0-31 are the callee's to clobber. The scan of the callee's code
        (prologue.py) says where s30, s31, s33 and the VGPRs it saved went, and which
        callee-saved registers it overwrote before the stopped PC: those are unavailable.
        """
        processor = _processor_of(target.state, target.wave)
        gen = isa_generation(processor)
        if gen is None or code_object is None or function_low is None or pc < function_low:
            return None
        saved = self._scan(code_object, function_low, pc, gen, target.lanes == 64)
        if saved is None or not saved.decoded:
            return None
        lanes = np.array([lane])
        upstream = Dialect(vendor_ops="amd")

        def read_place(place):
            if place[0] == "s":
                got = target.read_register(SGPR0 + place[1] if place[1] < 64 else SGPR64 + place[1] - 64, lanes)
                data, valid = got.data[0, :4], got.valid[0, :4]
            else:
                _, vgpr, vlane = place
                info = self.register_info(self._vgpr(vgpr, target.lanes), target.lanes, upstream)
                got = target.read_register(info.regno, np.array([vlane]))
                data, valid = got.data[0, :4], got.valid[0, :4]
            return int.from_bytes(bytes(data), "little") if valid.all() else None

        def caller_sgpr(n):
            if n in saved.sgprs_lost:
                return None
            return read_place(saved.sgpr_home.get(n, ("s", n)))

        lo, hi = caller_sgpr(30), caller_sgpr(31)
        if lo is None or hi is None:
            return None
        entry_sp = caller_sgpr(32)
        if entry_sp is None and saved.entry_sp is not None:
            reg, delta = saved.entry_sp
            now = read_place(("s", reg))
            entry_sp = None if now is None else (now - delta) & 0xFFFFFFFF
        values = {}
        clobbered = {SGPR0 + n for n in range(4, 32)}  # includes s30/s31: the return address, spent
        if entry_sp is not None:
            values[SGPR0 + 32] = entry_sp
        else:
            clobbered.add(SGPR0 + 32)
        for n in range(33, 106):
            regno = SGPR0 + n if n < 64 else SGPR64 + n - 64
            if n in saved.sgprs_lost:
                clobbered.add(regno)
            elif n in saved.sgpr_home:
                value = caller_sgpr(n)
                if value is None:
                    clobbered.add(regno)
                else:
                    values[regno] = value
        per_lane_stack = stack_offsets_per_lane(processor)
        shift = 0 if per_lane_stack else (6 if target.lanes == 64 else 5)
        in_memory, masks = {}, {}
        exec_now = self._exec(target)
        for vgpr, save in saved.vgpr_saved.items():
            if entry_sp is None or (save.lanes == "entry" and exec_now is None):
                continue
            regno = self._vgpr(vgpr, target.lanes)
            in_memory[regno] = (((entry_sp + save.sp_delta) & 0xFFFFFFFF) >> shift) + save.offset
            if save.lanes == "entry":  # lanes active now were active on entry; others are unknown
                masks[regno] = exec_now
        written = saved.vgprs_written
        for v in range(256):
            regno = self._vgpr(v, target.lanes)
            if regno in in_memory:
                continue
            if v < CALLEE_SAVED_VGPRS or written == ALL or v in written:
                clobbered.add(regno)
        agpr0 = AGPR64_0 if target.lanes == 64 else AGPR32_0
        clobbered |= {agpr0 + n for n in range(256)}  # the scan does not follow accumulation registers
        return CallerState(pc=(hi << 32) | lo, how="prologue analysis", values=values, saved_in_memory=in_memory,
                           saved_lanes=masks, clobbered=frozenset(clobbered))

    def _scan(self, code_object, function_low, pc, gen, wave64):
        """The prologue scan of one function for one stop, kept: every lane unwinds the same way."""
        cache = self.__dict__.setdefault("_scans", {})
        key = (id(code_object), function_low, pc, wave64)
        hit = cache.get(key)
        if hit is not None and hit[0] is code_object:
            return hit[1]
        size = next((size for _, value, size, _ in code_object.symbols_of_types(("FUNC",))
                     if value == function_low and size), None)
        code = code_object.read_memory(function_low, size) if size and pc - function_low < size else None
        # without the function's extent its loops cannot be followed: no caller frame
        saved = scan(code, pc - function_low, gen, wave64) if code is not None else None
        if len(cache) > 256:
            cache.clear()
        cache[key] = (code_object, saved)
        return saved

    def _exec(self, target):
        regno = EXEC_64 if target.lanes == 64 else EXEC_32
        got = target.read_register(regno, np.array([0]))
        if not got.valid.all():
            return None
        return int.from_bytes(bytes(got.data[0, :target.lanes // 8]), "little")

    @staticmethod
    def _vgpr(n, lanes):
        return (VGPR64_0 if lanes == 64 else VGPR32_0) + n

    def load_address_for_descriptor(self, code_object, kernel_descriptor):
        # the runtime loads code objects page-aligned; a kernel's descriptor is its `name.kd` symbol.
        # A relocatable object's symbols are in its own layout, not the linked one: no answer from them.
        if getattr(code_object, "relocated", False):
            return None
        biases = {kernel_descriptor - sym.value for sym in code_object.symbols.values()
                  if sym.name.endswith(".kd") and sym.value <= kernel_descriptor
                  and (kernel_descriptor - sym.value) % 4096 == 0}
        return biases.pop() if len(biases) == 1 else None

    def kernel_entry(self, state, kernel_descriptor):
        # kernel_code_entry_byte_offset: the descriptor's signed 64-bit field at byte 16, from the
        # descriptor to the kernel's first instruction (AMDGPUUsage, "Kernel Descriptor")
        memory = state.memory.get("global")
        if memory is None:
            return None
        data, valid = memory.read(kernel_descriptor + 16, 8)
        if not valid.all():
            return None
        return (kernel_descriptor + int.from_bytes(data.tobytes(), "little", signed=True)) & ((1 << 64) - 1)

    def static_layout(self, code_object, index, read_source):
        if code_object is None or index is None or getattr(code_object, "e_machine", None) != 224:
            return None
        return solve_layout(code_object, index, read_source)

    def static_placement(self, layout, var):
        placement = None
        if layout is not None and (is_bare_zero(var) or static_lds_address(var, layout.index)[1]):
            placement = layout.placement(var)
        if placement is None and is_bare_zero(var):
            # ROCm 4.x's location for an optimized-out __shared__ array: not an address
            return LdsPlacement(None, "the compiler gave it the placeholder location DW_OP_constu 0", "global")
        return placement

    def entry_frame_base(self, dialect):
        # an optimized kernel may drop DW_AT_frame_base; its stack starts at lane scratch offset 0
        from aspace_dap.dwarf.asm import assemble
        return assemble(f"DW_OP_lit0; DW_OP_constu {PRIVATE_LANE.number}; DW_OP_LLVM_form_aspace_address",
                        Dialect(vendor_ops="amd"))

    def memory_access(self, text: str):
        from .addressing import memory_access
        return memory_access(text)

    def make_disassembler(self):
        from .disassembler import LlvmObjdump
        return LlvmObjdump()

    def thread_name(self, wave) -> str:
        # ROCgdb: AMDGPU Wave agent:queue:dispatch:wave (workgroup x,y,z)/index-in-workgroup, "?" for what
        # is not known (amd-dbgapi-target.c, wave_coordinates::to_string)
        dispatch = wave.dispatch
        wg = wave.workgroup.id if wave.workgroup is not None else None
        return (f"AMDGPU Wave {_agent(dispatch)}:{_queue(dispatch)}:{dispatch.id if dispatch is not None else '?'}:"
                f"{wave.id} {_group(wg)}/{wave.index_in_workgroup}")

    def thread_names(self, table) -> list[str]:
        dispatches = table.dispatches
        # (index -1: no dispatch)
        prefix = [f"AMDGPU Wave {_agent(d)}:{_queue(d)}:{d.id}:" for d in dispatches] + ["AMDGPU Wave ?:?:?:"]
        x, y, z = table.workgroup_ids.T.tolist()
        has = table.has_workgroup.tolist()
        return [f"{prefix[d]}{i} ({a},{b},{c})/{k}" if h else f"{prefix[d]}{i} (?,?,?)/{k}"
                for d, i, a, b, c, h, k in zip(table.dispatch.tolist(), table.ids.tolist(), x, y, z, has,
                                               table.index_in_workgroup.tolist())]

    def wave_target(self, state, wave, dialect):
        return AmdgpuWaveTarget(self, state, wave, dialect)


def _agent(dispatch) -> str:
    """The agent (GPU) of a dispatch as the dump numbers its GPUs: its `device`; a dump of one GPU names
    none, and that GPU is its agent 0."""
    if dispatch is None:
        return "?"
    return str(dispatch.device) if dispatch.device is not None else "0"


def _queue(dispatch) -> str:
    queue = getattr(dispatch, "queue", None)
    return "?" if queue is None else str(queue)


def _group(wg) -> str:
    return "(?,?,?)" if wg is None else f"({wg[0]},{wg[1]},{wg[2]})"


def _processor_of(state, wave) -> str:
    """The GPU a wave ran on: its dispatch's (a host with GPUs of several kinds), else the dump's target."""
    dispatch = getattr(wave, "dispatch", None)
    return getattr(dispatch, "processor", None) or state.target.processor


class AmdgpuWaveTarget(WaveTarget):
    generic_windows = (("local", LOCAL), ("private", PRIVATE_LANE))
    generic_fallback = GLOBAL

    def xderef_address_space(self, number):
        if self.dialect.heterogeneous:
            return self.address_space(number)
        space = UPSTREAM_XDEREF.get(number)
        if space is None:
            raise EvaluationError(f"unknown DW_OP_xderef address space {number} (upstream AMDGPU numbering)")
        return space

    def frame_base_address(self, regno, value):
        if regno in FRAME_REGS:
            # MUBUF stacks: the stack and frame pointers hold a wave-scaled scratch offset (one
            # lane's bytes are interleaved with the others'), so a lane address is the offset
            # divided by the wave size; flat-scratch stacks (gfx940+, GFX11) hold lane offsets
            per_lane = self.state is not None and stack_offsets_per_lane(_processor_of(self.state, self.wave))
            shift = np.uint64(0 if per_lane else 6 if self.lanes == 64 else 5)
            return PRIVATE_LANE, (value >> shift) & np.uint64(0xFFFFFFFF)
        return GLOBAL, value

    # ------------------------------------------------------------------ memory

    def private_owners(self, space, lanes):
        if space.name == "private_lane":
            return lanes
        if space.name.startswith("private_lane"):  # private_laneN: lane N's memory, whoever asks
            return np.full(len(lanes), space.number - 0x20, np.int64)
        return None

    def storage(self, space: AddressSpace):
        if space.name == "global":
            return self.state.memory.get("global")
        if space.name == "region":
            return self.state.memory.get("region")
        if space.name == "local":
            wg = self.wave.workgroup
            return wg.lds if wg is not None else None
        if space.name == "private_wave":
            return self.wave.private.wave_view if self.wave.private is not None else None
        return None
