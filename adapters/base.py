"""What every GPU family adapter provides, and the shared wave-bound target.

An adapter knows one vendor: DWARF register numbers and names, address
spaces and how to reach their storage in a dump, dialect quirks. The
evaluator and the session only talk to it through these methods.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from aspace_dap import limits
from aspace_dap.dwarf.target import AddressSpace, Dialect, MemoryRead, RegisterInfo
from aspace_dap.errors import AspaceError, EvaluationError, StateError
from aspace_dap.tempfiles import make_temp_dir

from .addressing import MemoryAccess


@dataclass
class RaisedException:
    """An exception one wave (or some of its lanes) raised, in the words of the vendor's debugger."""

    id: str                      # the name that debugger reports it by: CUDA_EXCEPTION_14, SIGSEGV
    description: str             # what it is, in the vendor's words: "CUDA Exception: Warp Illegal Address"
    wave: int                    # the wave's id
    lanes: np.ndarray            # bool per lane: the lanes that raised it
    pc: int | None = None        # the faulting instruction, when recorded apart from the lanes' PCs
    address: int | None = None   # the data address that faulted, where the format records it
    notes: list[str] = field(default_factory=list)  # what else the vendor's records say about it

    @property
    def kind(self) -> tuple[str, str]:
        """Exceptions of one kind: the same id and description."""
        return self.id, self.description


class TargetAdapter(ABC):
    vendor = "unknown"
    address_size = 8
    # Each lane runs at its own PC (NVIDIA's independent thread scheduling): a lane outside the active
    # mask need not be anywhere near the wave's PC. Without the lane's own PC its position is unknown.
    lanes_have_own_pc = False
    # The lanes of a wave read their values out of the same registers (Intel's GRFs), so locations
    # can claim one register byte for two lanes or two variables: the session checks every frame.
    checks_storage_collisions = False
    # The vendor's launches hold only whole work-groups: a grid_size (work-items, docs/STATE_FORMAT.md)
    # that is not a multiple of workgroup_size cannot come from it (`state validate` says so). HSA's
    # AQL packets and OpenCL 2.0's non-uniform work-groups allow a partial group at the grid's edge.
    uniform_workgroups = False
    # What the vendor's debugger and documentation call a wave (cuda-gdb: a warp; gdb-oneapi: a thread):
    # the word every text a user reads says.
    wave_word = "wave"
    # The compiler may say which lanes are active apart from the execution mask (DW_AT_LLVM_active_lane,
    # AMD's heterogeneous DWARF): views of every wave then ask each wave where it does.
    compiler_active_lanes = False

    # --- address spaces -------------------------------------------------------------

    @abstractmethod
    def spaces(self) -> dict[str, AddressSpace]:
        """Every address space by name, as users write them (`local#0x40`)."""

    def space_by_name(self, name: str) -> AddressSpace:
        try:
            return self.spaces()[name]
        except KeyError:
            raise EvaluationError(f"unknown address space {name!r}; known: {', '.join(self.spaces())}") from None

    def default_space(self) -> AddressSpace:
        return self.spaces()["global"]

    def pointer_space(self, dwarf_class: int | None, dialect: Dialect) -> AddressSpace:
        """The space a pointer type with this DWARF address class points into."""
        return self.default_space()

    def workgroup_variable(self, var) -> bool:
        """Whether a variable lives in the workgroup's shared memory (the Shared scope): its
        DWARF address space / class names a space of workgroup scope."""
        if var.address_space is None:
            return False
        return any(s.number == var.address_space and s.scope == "workgroup" for s in self.spaces().values())

    def space_label(self, space: AddressSpace) -> str | None:
        """What the vendor's manuals call the memory behind `space` ("LDS", "shared"), None when
        the space's own name says it."""
        return None

    # --- registers ------------------------------------------------------------------

    # The dump's registers holding a wave's PC and its execution mask (docs/STATE_FORMAT.md names
    # them per vendor); `exec_mask_required`: without it the debugger cannot tell active lanes.
    pc_register = "pc"
    exec_register: str | None = "exec"
    exec_mask_required = False

    def required_registers(self, processor: str, lanes: int) -> dict[str, str]:
        """Registers every wave's layout must hold for the debugger to open it, with why."""
        needs = {self.pc_register: "the wave's program counter"}
        if self.exec_mask_required and self.exec_register:
            needs[self.exec_register] = "the execution mask (which lanes are active)"
        return needs

    def register_size(self, name: str, processor: str, lanes: int) -> int | None:
        """The byte size a dump's register must have on this processor, None when any is accepted."""
        return None

    def use_code_object(self, co) -> None:
        """Learn what a loaded code object says about the device (register sizes, SIMD width)."""

    def use_dump(self, processor: str | None, registers=None) -> None:
        """Learn the device from the dump, where its code objects do not name it (before any is loaded)."""

    @abstractmethod
    def register_info(self, regno: int, lanes: int, dialect: Dialect) -> RegisterInfo:
        """How a location sees DWARF register `regno` in a wave of `lanes` lanes, in this dialect."""

    @abstractmethod
    def register_number(self, name: str, lanes: int) -> int | None:
        """DWARF number of a register written by name (`s5`, `v3`, `exec`), None if unknown."""

    # --- naming -----------------------------------------------------------------------

    def function_symbol(self, code_object, address: int) -> tuple[str, int, int] | None:
        """(name, start, size) of the function symbol holding a code address (the code object's function
        symbols of the address's own code section), or None."""
        sym = code_object.function_symbol_at(address)
        return (sym.name, sym.value, sym.size) if sym is not None else None

    def unwind(self, code_object, target, function_low: int, pc: int, lane: int) -> "CallerState | None":
        """The caller's PC and registers when stopped at `pc` in a function starting at `function_low`."""
        return None

    def call_frame_cfa(self, code_object, target, pc: int):
        """callable(lanes) -> Location for DW_OP_call_frame_cfa at `pc`, or None when the CFI gives none."""
        return None

    def place_variable(self, var, location, target):
        """A variable's location adjusted by what its DIE adds (NVIDIA: the storage kind's space)."""
        return location

    def load_address_for_descriptor(self, code_object, kernel_descriptor: int) -> int | None:
        """Where `code_object` must be loaded for one of its kernels' descriptors to sit at the runtime
        address `kernel_descriptor`; None when that cannot be told."""
        return None

    def kernel_entry(self, state, kernel_descriptor: int) -> int | None:
        """The runtime address of the first instruction of the kernel whose descriptor is at
        `kernel_descriptor`, as the dump's memory says; None when it does not."""
        return None

    def static_layout(self, code_object, index, read_source):
        """Whatever the adapter works out once per code object to place variables whose debug info
        holds only a placeholder address (AMD: LDS offsets from the ISA); None when nothing."""
        return None

    def static_placement(self, layout, var):
        """For a variable with a placeholder address: an object with `space` (name), `offset` (None
        when not proven) and `why`. None for variables the debug info places by itself."""
        return None

    def layout_findings(self, footprints) -> dict[int, dict[int, str]]:
        """{variable key: {lane: why}} for lanes whose location the compiler is known to get wrong,
        from the frame's footprints (dwarf/footprint.py)."""
        return {}

    def entry_frame_base(self, dialect: Dialect) -> bytes | None:
        """Frame base of a kernel whose DWARF gives none (optimized entry functions)."""
        return None

    def thread_name(self, wave) -> str:
        """The wave as the vendor's debugger names it as a thread (the session adds its active lanes)."""
        return f"Wave {wave.id}"

    def thread_names(self, table) -> list[str]:
        """thread_name of every wave of a state's wave table (state/wavetable.py), in its order; an
        adapter names them from the table's columns, without building the waves."""
        return [self.thread_name(w) for w in table.waves]

    # --- what the languages and the vendor's debugger name -----------------------------

    def coordinate_global(self, var, index) -> tuple[str, str | None] | None:
        """(builtin, member) when a program variable only stands for a lane's coordinates (HIP's
        `threadIdx`, an empty struct in the DWARF, is ("threadIdx", None); its static member
        `__HIP_Coordinates<__HIP_ThreadIdx>::x` is ("threadIdx", "x")); None for ordinary variables."""
        return None

    def exceptions(self, state, active_lanes) -> list[RaisedException]:
        """Every exception the dump records, in the vendor's words, the stop's own first;
        `active_lanes(wave)` gives a wave's active lanes (those a whole-wave exception stopped)."""
        return []

    # --- machine code -------------------------------------------------------------------

    def memory_access(self, text: str) -> "MemoryAccess | None":
        """The address operands of one instruction, from the vendor's decoder's text
        (adapters/addressing.py); None when the instruction accesses no memory."""
        return None

    def registers_written(self, text: str) -> set[str] | None:
        """The registers one instruction may write (a superset); None when it changes where the lanes
        go next or the adapter cannot tell."""
        return None

    def disassembler(self) -> "Disassembler | None":
        """The vendor's own decoder for this family's code objects, made once per adapter; None when
        the family has none."""
        made = self.__dict__.get("_disassembler")
        if made is None:
            made = self.__dict__["_disassembler"] = (self.make_disassembler(),)
        return made[0]

    def make_disassembler(self) -> "Disassembler | None":
        return None

    @abstractmethod
    def wave_target(self, state, wave, dialect: Dialect) -> "WaveTarget":
        """The evaluation target for one wave of a dump."""


class WaveTarget(ABC):
    """EvalTarget for one wave of a dump, through an adapter."""

    def __init__(self, adapter: TargetAdapter, state, wave, dialect: Dialect):
        self.adapter = adapter
        self.state = state
        self.wave = wave
        self.dialect = dialect
        self.lanes = wave.lanes
        self.address_size = adapter.address_size

    # registers
    def register_info(self, regno: int) -> RegisterInfo:
        return self.adapter.register_info(regno, self.lanes, self.dialect)

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        info = self.register_info(regno)
        regs = self.wave.registers
        if not regs.has(info.name):
            # a register the dump lacks reads as unavailable bytes: shown, never invented
            return unavailable(len(lanes) if info.per_lane else 1, info.size)
        if info.per_lane:
            data, valid = regs.lane_view(info.name, self.lanes)
            return MemoryRead(data[lanes], valid[lanes])
        data, valid = regs.raw(info.name)
        return MemoryRead(data[None, : info.size], valid[None, : info.size])

    def write_register(self, regno: int, lanes: np.ndarray, byte_offsets: np.ndarray, data: np.ndarray) -> None:
        info = self.register_info(regno)
        full = self.wave.registers.size(info.name) or 0
        for lane, off, row in zip(lanes, byte_offsets, data):
            base = int(lane) * info.size if info.per_lane and full > info.size else 0
            self.wave.registers.write(info.name, base + int(off), bytes(row))

    # address spaces
    def address_space(self, number: int) -> AddressSpace:
        for s in self.adapter.spaces().values():
            if s.number == number:
                return s
        raise EvaluationError(f"unknown address space {number}")

    def default_address_space(self) -> AddressSpace:
        return self.adapter.default_space()

    def xderef_address_space(self, number: int) -> AddressSpace:
        return self.address_space(number)

    def frame_base_address(self, regno: int, value: np.ndarray):
        return self.default_address_space(), value

    # Generic (flat) addresses reach other spaces through windows the dump's `apertures` place:
    # (aperture name, space) pairs, tried in order; anything outside them is `generic_fallback`.
    generic_windows: tuple[tuple[str, AddressSpace], ...] = ()
    generic_fallback: AddressSpace | None = None

    @property
    def apertures(self) -> dict:
        """The windows of this wave's device or context (a dispatch's own, else the dump's)."""
        return self.state.apertures_for(self.wave)

    def resolve_generic(self, addr: int) -> tuple[AddressSpace, int]:
        """The space and offset a generic address names."""
        apertures = self.apertures
        for name, space in self.generic_windows:
            ap = apertures.get(name)
            if ap is not None and ap.base <= addr < ap.base + ap.size:
                return space, addr - ap.base
        return self.generic_fallback, addr

    def read_generic(self, lanes: np.ndarray, addrs: np.ndarray, size: int) -> MemoryRead:
        """`resolve_generic` for every lane at once: each window's lanes are read together."""
        g = len(lanes)
        data = np.zeros((g, size), np.uint8)
        valid = np.zeros((g, size), bool)
        rest = np.ones(g, bool)
        apertures = self.apertures
        for name, space in self.generic_windows:
            ap = apertures.get(name)
            if ap is None:
                continue
            hit = (addrs >= np.uint64(ap.base)) & (addrs < np.uint64(ap.base + ap.size)) & rest
            if hit.any():
                got = self.read_memory(space, lanes[hit], addrs[hit] - np.uint64(ap.base), size)
                data[hit], valid[hit] = got.data, got.valid
                rest &= ~hit
        if rest.any():
            got = self.read_memory(self.generic_fallback, lanes[rest], addrs[rest], size)
            data[rest], valid[rest] = got.data, got.valid
        return MemoryRead(data, valid)

    # --- where each space's bytes are in the dump: the only part a family has to say ---------

    @abstractmethod
    def storage(self, space: AddressSpace):
        """The dump memory (SparseMemory) behind a device, workgroup or wave space; None if absent."""

    def private_owners(self, space: AddressSpace, lanes: np.ndarray) -> np.ndarray | None:
        """For a space backed by per-lane private memory, the lane whose memory each row reads."""
        return None

    def storage_address(self, space: AddressSpace, addrs: np.ndarray) -> np.ndarray:
        """An address as the storage file counts it (a space may ignore high bits)."""
        return addrs

    def read_memory(self, space: AddressSpace, lanes, addrs, size) -> MemoryRead:
        """`size` bytes at each lane's address in `space`, with their availability."""
        lanes = np.asarray(lanes, np.int64)
        addrs = np.asarray(addrs, np.uint64)
        g = len(lanes)
        if space.name == "generic":
            return self.read_generic(lanes, addrs, size)
        owners = self.private_owners(space, lanes)
        if owners is not None:
            private = self.wave.private
            if private is None:
                return unavailable(g, size)
            data, valid = private.read_lane(owners, addrs, size)
            return MemoryRead(data.reshape(g, size), valid.reshape(g, size))
        mem = self.storage(space)
        if mem is None:
            return unavailable(g, size)
        data, valid = mem.read_many(self.storage_address(space, addrs), size)
        return MemoryRead(data, valid)

    def write_memory(self, space: AddressSpace, lanes, addrs, data) -> None:
        """Write each lane's row of `data` into the dump's overlay (the files never change)."""
        lanes = np.asarray(lanes, np.int64)
        addrs = np.asarray(addrs, np.uint64)
        for i, row in enumerate(data):
            lane, addr, raw = lanes[i:i + 1], int(addrs[i]), bytes(row)
            if space.name == "generic":
                real, offset = self.resolve_generic(addr)
                self.write_memory(real, lane, [offset], [row])
                continue
            owners = self.private_owners(space, lane)
            if owners is not None:
                if self.wave.private is None:
                    raise StateError(f"wave {self.wave.id} has no private memory in the dump")
                self.wave.private.write_lane(int(owners[0]), addr, raw)
                continue
            mem = self.storage(space)
            if mem is None:
                raise StateError(f"the dump holds no {space.name} memory for wave {self.wave.id}")
            mem.write(int(self.storage_address(space, np.array([addr], np.uint64))[0]), raw)


@dataclass
class CallerState:
    """Registers of a caller frame, as far as they can be recovered.

    `values`: scalar registers known by value; `saved_in_memory`: vector registers the
    callee stored, at a lane address in `memory_space` (`saved_lanes`: when a save covers
    only some lanes, a bit mask of them; the others read as unavailable); `clobbered`:
    registers the calling convention lets the callee destroy, or that it overwrote without a
    save (shown as unavailable, never guessed).
    """

    pc: int
    how: str  # "cfi" or "prologue analysis": shown to the user beside the frame
    values: dict[int, int] = field(default_factory=dict)
    saved_in_memory: dict[int, int] = field(default_factory=dict)
    saved_lanes: dict[int, int] = field(default_factory=dict)
    memory_space: str = "private_lane"
    clobbered: frozenset[int] = frozenset()
    level: int = 1  # which caller: 1 = the innermost frame's caller
    note: str | None = None  # what the user should know about this frame (e.g. two unwinders disagree)


class CallerFrameTarget:
    """A wave target seen from a caller frame: unwound registers override the wave's."""

    def __init__(self, base, state: CallerState):
        self._base = base
        self._state = state

    def __getattr__(self, name):
        return getattr(self._base, name)

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        info = self._base.register_info(regno)
        g = len(lanes)
        st = self._state
        if regno in st.values:
            row = np.frombuffer(int(st.values[regno]).to_bytes(info.size, "little"), np.uint8)
            return MemoryRead(np.broadcast_to(row, (g, info.size)), np.ones((g, info.size), bool))
        if regno in st.saved_in_memory:
            space = self._base.adapter.space_by_name(st.memory_space)
            mask = st.saved_lanes.get(regno)
            if info.per_lane:
                got = self._base.read_memory(space, lanes, np.full(g, st.saved_in_memory[regno], np.uint64), 4)
                if mask is not None:
                    got = MemoryRead(got.data, got.valid & (((np.uint64(mask) >> np.asarray(lanes, np.uint64)) & np.uint64(1)) == 1)[:, None])
                return got
            everyone = np.arange(self._base.lanes)
            got = self._base.read_memory(space, everyone, np.full(len(everyone), st.saved_in_memory[regno], np.uint64), 4)
            valid = got.valid
            if mask is not None:
                valid = valid & (((np.uint64(mask) >> everyone.astype(np.uint64)) & np.uint64(1)) == 1)[:, None]
            return MemoryRead(got.data.reshape(1, -1), valid.reshape(1, -1))
        if regno in st.clobbered:
            return MemoryRead(np.zeros((g, info.size), np.uint8), np.zeros((g, info.size), bool))
        return self._base.read_register(regno, lanes)

    def write_register(self, regno, lanes, byte_offsets, data):
        if regno in self._state.values or regno in self._state.saved_in_memory or regno in self._state.clobbered:
            from aspace_dap.errors import EvaluationError
            raise EvaluationError("changing a caller frame's saved register is not supported")
        self._base.write_register(regno, lanes, byte_offsets, data)


# --- disassembly: the vendor's decoder behind one interface -------------------------------------


@dataclass(frozen=True)
class DecodedInstruction:
    """One instruction as the vendor's tool printed it, at an address of the code object's own ELF."""

    address: int
    size: int
    text: str


class DisassemblerMissing(AspaceError):
    """The vendor's decoder is not installed, or too old for this code object; says what provides it."""


class Disassembler(ABC):
    """A vendor's disassembler (LLVM's MC through llvm-objdump, nvdisasm, IGA), run as its own tool.

    Each run is a process: the session decodes a whole function or object once and keeps the text.
    `decode` answers every instruction in [start, end) of the code object's addresses, and may
    answer more (a tool that decodes a whole object as fast as one function)."""

    tool = ""  # the command it runs, as users know it
    package = ""  # what provides the tool, as the user is told when it is missing
    min_size = 4  # the shortest instruction in bytes (the step of rows that cannot be decoded)
    max_size = 16  # the longest: how many bytes a number of rows can span (what to decode for them)

    def __init__(self):
        self._code_files: dict[int, tuple[object, str]] = {}  # id(code object) -> (it, its file)
        self._folder: str | None = None

    def temp_folder(self) -> str:
        """This disassembler's temporary folder for the files its tool reads (made when first needed)."""
        if self._folder is None:
            self._folder = make_temp_dir(f"aspace-{self.tool}-")
        return self._folder

    def code_file(self, code_object, suffix: str = ".elf") -> str:
        """A file of the code object's bytes, written once per object in a temporary folder: for tools that
        read no pipe, and for the others a file read in place beats megabytes fed through a pipe."""
        held = self._code_files.get(id(code_object))
        if held is not None and held[0] is code_object:
            return held[1]
        path = os.path.join(self.temp_folder(), f"{len(self._code_files)}{suffix}")
        with open(path, "wb") as f:
            f.write(code_object.data)
        self._code_files[id(code_object)] = (code_object, path)
        return path

    @abstractmethod
    def decode(self, code_object, start: int, end: int) -> list[DecodedInstruction]:
        """The instructions of [start, end) (at least), in address order; DisassemblerMissing when
        the tool is missing or cannot decode this code object's processor."""

    def missing(self, why: str) -> DisassemblerMissing:
        return DisassemblerMissing(f"{why}; {self.package} provides it")

    def run(self, argv: list[str], stdin: bytes | None = None) -> tuple[str, str]:
        """The tool's standard output and error; its own message on failure, never a hang
        (MAX_DISASSEMBLER_SECONDS)."""
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True,
                                  timeout=limits.MAX_DISASSEMBLER_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            raise AspaceError(f"{self.tool} took more than {limits.MAX_DISASSEMBLER_SECONDS} s "
                              f"{limits.limit_hint('MAX_DISASSEMBLER_SECONDS')}") from None
        except OSError as exc:
            raise self.missing(f"{self.tool} cannot run ({exc.strerror or exc})") from None
        err = done.stderr.decode("utf-8", "replace").strip()
        if done.returncode != 0:
            raise AspaceError(f"{self.tool} failed: {err.splitlines()[-1] if err else f'exit {done.returncode}'}")
        return done.stdout.decode("utf-8", "replace"), err


def find_tool(names: list[str], folders: list[str] = ()) -> str | None:
    """The first of `names` on PATH, else in one of `folders`."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for folder in folders:
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def unavailable(g: int, size: int) -> MemoryRead:
    return MemoryRead(np.zeros((g, size), np.uint8), np.zeros((g, size), bool))
