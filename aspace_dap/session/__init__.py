"""A debugging session over one dump: focus, frames, variables, memory. No I/O, no DAP.

The DAP handlers, `inspect` and the language server all ask the session; the
session asks the DWARF index where things are, the evaluator what they are,
and the adapter how to reach them in the dump.

`Session` is a facade over parts with one job each, each depending only on those above it here:

    programs   the code object each wave runs; waves as evaluation targets
    focus      the one wave, lane and frame every view follows; a wave's active lanes
    sources    where the files the debug info names are, and which may be read
    frames     a lane's PC and its inlined and unwound frames
    variables  reads per lane, storage collisions, pointers; the write epoch
    memory     memory references; reading, writing and laying out memory
    waves      the triage of all waves: lane counts, groups by where they stand (stacks: each distinct
               stack worked out once), names
    coordinates  where each lane stands in its dispatch (threadIdx, get_global_id, $_lane_workgroup_pos)
    find         every active lane by the place it stands at; what an expression reads there for all of them
    lane_addresses  each lane's address at a memory instruction, from the vendor's decoder text and the dump
    exceptions   the stop's exception in the vendor's words, its instruction, the lanes and waves sharing it
    disassembly  machine code decoded by the vendor's tool, once per function; rows around an address

Each piece of shared state has one owner, and the other parts ask it: the dump, its adapter and the
warnings list belong to programs (the other parts hold the same objects, see programs.Part); a cache
to the part that fills it (waves counts lanes from focus's active lanes); the write epoch to variables
(memory's writes bump it there). The facade keeps no state of its own: each attribute reads its owner.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from .. import adapters as _adapters_pkg  # noqa: F401  (aspace_dap.adapters, installed from adapters/)
from ..adapters import adapter_for
from ..dwarf.index import FrameInfo, VariableInfo
from ..dwarf.target import Dialect, FrameContext
from ..memref import MemRef
from ..state import GpuState, load_state
from ..values.objects import Obj
from .coordinates import Coordinates, LaneCoordinates
from .exceptions import ExceptionDetail, Exceptions, disassemble_at
from .find import Find, Place
from .disassembly import Disassembly, Function, Instruction, Invalid
from .focus import Focus
from .frames import MAX_FRAMES, Frame, Frames
from .lane_addresses import AccessAddresses, LaneAddresses
from .memory import Memory
from .programs import Program, Programs
from .sources import Sources
from .variables import VariableRead, Variables
from .waves import WaveGroup, Waves

__all__ = ["MAX_FRAMES", "AccessAddresses", "ExceptionDetail", "Frame", "Function", "Instruction", "Invalid", "LaneCoordinates",
           "Program", "Session", "VariableRead", "WaveGroup"]


class Session:
    """Everything a front end asks about one dump, answered by the part that owns it."""

    def __init__(self, state: GpuState, *, code_object: str | None = None, wave: int | None = None,
                 lane: int | None = None, source_map: dict[str, str] | None = None, workspace: str | None = None,
                 client_is_user: bool = True):
        adapter = adapter_for(state.target.vendor)
        state.use_register_names(adapter.pc_register, adapter.exec_register)
        self._programs = Programs(state, adapter, code_object)
        # client_is_user: the front end serves the user (stdio, the owner-only socket, TCP with the secret,
        # inspect, the language server), who may read any source; False for a client without a secret
        self._sources = Sources(self._programs, source_map, code_object, workspace, client_is_user)
        self._focus = Focus(self._programs, wave, lane)
        self._frames = Frames(self._programs, self._focus, self._sources)
        self._variables = Variables(self._programs, self._focus, self._frames, self._sources)
        self._memory = Memory(self._programs, self._focus, self._variables)
        self._waves = Waves(self._programs, self._focus, self._frames, lambda: self._variables.write_epoch)
        self._coordinates = Coordinates(self._programs)
        self._disassembly = Disassembly(self._programs, self._focus, self._sources)
        self._find = Find(self._programs, self._focus, self._frames, self._variables, self._waves)
        self._lane_addresses = LaneAddresses(self._programs, self._frames,
                                             lambda pc, count: self._disassembly.instructions(pc, count))
        self._exceptions = Exceptions(self._programs, self._focus, self._frames,
                                      lambda pc: disassemble_at(self._disassembly, pc), self._lane_addresses.at)

    @classmethod
    def open(cls, state_path: str, read_ahead: bool = False, **kw) -> "Session":
        """A session over the dump at `state_path` (`read_ahead`: see load_state)."""
        return cls(load_state(state_path, read_ahead), **kw)

    # ------------------------------------------------------------------ state, read where its owner keeps it

    state = property(attrgetter("_programs.state"))
    adapter = property(attrgetter("_programs.adapter"))
    warnings = property(attrgetter("_programs.warnings"))  # told at launch: the dump's own, then the parts'
    notes = property(attrgetter("_sources.notes"))
    paths = property(attrgetter("_sources.paths"))
    source_map = property(attrgetter("_sources.source_map"))
    focus_wave = property(attrgetter("_focus.focus_wave"))
    focus_lane = property(attrgetter("_focus.focus_lane"))
    focus_frame = property(attrgetter("_focus.focus_frame"))
    write_epoch = property(attrgetter("_variables.write_epoch"))

    # ------------------------------------------------------------------ programs

    def program_for(self, wave) -> Program:
        return self._programs.program_for(wave)

    def programs(self) -> list[Program]:
        return self._programs.programs()

    def target_for(self, wave, dialect: Dialect):
        return self._programs.target_for(wave, dialect)

    def frame_context(self, program: Program, info: FrameInfo | None, runtime_pc: int,
                      target=None) -> FrameContext:
        return self._programs.frame_context(program, info, runtime_pc, target)

    # ------------------------------------------------------------------ focus

    def wave(self, wave_id: int | None = None):
        return self._focus.wave(wave_id)

    def active_lanes(self, wave) -> np.ndarray:
        return self._focus.active_lanes(wave)

    def lane_state(self, wave, lane: int) -> str:
        return self._focus.lane_state(wave, lane)

    def set_focus(self, wave: int | None = None, lane: int | None = None) -> None:
        self._focus.set_focus(wave, lane)

    # ------------------------------------------------------------------ sources

    def map_source(self, path: str | None, tell: bool = False) -> str | None:
        return self._sources.map_source(path, tell)

    def openable(self, path: str | None) -> bool:
        return self._sources.openable(path)

    def lookup_source(self, path: str):
        return self._sources.lookup(path)

    def missing_source_text(self, path: str) -> str:
        return self._sources.missing_text(path)

    def set_note_sink(self, sink) -> None:
        """From now on a note is handed to `sink` as it comes (the Debug Console), not kept in `notes`."""
        self._sources.note_sink = sink

    def read_source_file(self, dwarf_name: str, max_bytes: int, limit_name: str) -> str:
        return self._sources.read_source_file(dwarf_name, max_bytes, limit_name)

    def read_source(self, dwarf_path: str) -> str | None:
        return self._sources.read_source(dwarf_path)

    # ------------------------------------------------------------------ frames

    def lane_pc(self, wave, lane: int) -> int | None:
        return self._frames.lane_pc(wave, lane)

    def stop_text(self) -> str:
        return self._frames.stop_text()

    def frames(self, wave_id: int | None = None, lane: int | None = None) -> list[Frame]:
        return self._frames.frames(wave_id, lane)

    def frame_target(self, frame: Frame, dialect: Dialect):
        return self._frames.frame_target(frame, dialect)

    def caller_register(self, frame: Frame, name: str):
        return self._frames.caller_register(frame, name)

    # ------------------------------------------------------------------ variables

    def note_write(self) -> None:
        self._variables.note_write()

    def remembered(self, frame: Frame, key, compute):
        return self._variables.remembered(frame, key, compute)

    def variables(self, frame: Frame) -> list[VariableInfo]:
        return self._variables.variables(frame)

    def globals(self, frame: Frame) -> list[VariableInfo]:
        return self._variables.globals(frame)

    def no_variables_reason(self, frame: Frame) -> str | None:
        return self._variables.no_variables_reason(frame)

    def read_variable(self, frame: Frame, var: VariableInfo, lanes=None) -> VariableRead:
        return self._variables.read_variable(frame, var, lanes)

    def storage_collisions(self, frame: Frame) -> dict[int, dict[int, str]]:
        return self._variables.storage_collisions(frame)

    def pointer_target(self, obj: Obj, lane_index: int, dialect: Dialect) -> Obj | None:
        return self._variables.pointer_target(obj, lane_index, dialect)

    def location_text(self, obj: Obj, lane_index: int = 0) -> str:
        return self._variables.location_text(obj, lane_index)

    # ------------------------------------------------------------------ memory

    def memory_reference(self, obj: Obj, wave_id: int, lane_index: int = 0) -> str | None:
        return self._memory.memory_reference(obj, wave_id, lane_index)

    def memref_for_space(self, space: str, addr: int, wave_id: int, lane: int) -> MemRef:
        return self._memory.memref_for_space(space, addr, wave_id, lane)

    def resolve_memref(self, text: str) -> tuple[MemRef, object, object, int]:
        return self._memory.resolve_memref(text)

    def read_memory(self, text: str, offset: int, count: int) -> tuple[int, memoryview, np.ndarray]:
        return self._memory.read_memory(text, offset, count)

    def memory_layout(self, frame: Frame, text: str, offset: int, count: int) -> list[dict]:
        return self._memory.memory_layout(frame, text, offset, count)

    def write_memory(self, text: str, offset: int, data: bytes) -> int:
        return self._memory.write_memory(text, offset, data)

    def memory_spaces(self, wave_id: int | None = None, lane: int | None = None) -> list[dict]:
        return self._memory.memory_spaces(wave_id, lane)

    # ------------------------------------------------------------------ waves

    def lane_counts(self) -> tuple[np.ndarray, np.ndarray]:
        return self._waves.lane_counts()

    def dispatch_slices(self) -> list[tuple[object, int, int]]:
        return self._waves.dispatch_slices()

    def wave_ids(self) -> np.ndarray:
        return self._waves.wave_ids()

    def wave_groups(self) -> list[WaveGroup]:
        return self._waves.wave_groups()

    def thread_names(self) -> list[str]:
        return self._waves.thread_names()

    def thread_name(self, wave) -> str:
        return self._waves.thread_name(wave)

    # ------------------------------------------------------------------ find

    def lane_places(self):
        """Every active lane of every wave by the place (dispatch and pc) it stands at: (places, unplaced)."""
        return self._find.places()

    def place_frame(self, place: Place, row: int = 0) -> Frame | None:
        return self._find.frame_at(place, row)

    def place_leaves(self, place: Place, reasons):
        return self._find.leaves(place, reasons)

    # ------------------------------------------------------------------ coordinates

    def coordinates(self, wave) -> LaneCoordinates:
        return self._coordinates.of(wave)

    def coordinate_global(self, frame: Frame, var: VariableInfo) -> tuple[str, str | None] | None:
        """(builtin, member) when a program variable only stands for the lane's coordinates (HIP's
        `threadIdx` and its static members); None for ordinary variables."""
        return self.adapter.coordinate_global(var, frame.program.index)

    # ------------------------------------------------------------------ exceptions

    def exceptions(self) -> list:
        return self._exceptions.raised()

    def exception_detail(self, wave_id: int | None = None) -> ExceptionDetail | None:
        return self._exceptions.detail(wave_id)

    def stop_waves(self) -> list[int]:
        return self._exceptions.stop_waves()

    def lane_addresses(self, wave_id: int | None = None, pc: int | None = None,
                       text: str | None = None) -> AccessAddresses | None:
        """Each lane's address at the instruction at `pc` (the wave's PC by default) of wave `wave_id` (the
        focused one), whose text is `text` (the vendor's decoding by default); None when it accesses no
        memory or cannot be decoded."""
        wave = self.wave(wave_id)
        pc = wave.pc if pc is None else pc
        if text is None:
            text = disassemble_at(self._disassembly, pc)
        return self._lane_addresses.at(wave, pc, text) if text is not None else None

    # ------------------------------------------------------------------ disassembly

    def instructions(self, address: int, count: int, offset: int = 0) -> list[Instruction | Invalid]:
        return self._disassembly.instructions(address, count, offset)

    def instruction_holding(self, address: int) -> Instruction | None:
        return self._disassembly.holding(address)

    def instructions_around(self, address: int, before: int, after: int) -> list[Instruction | Invalid]:
        return self._disassembly.around(address, before, after)

    def function_at(self, address: int) -> Function | None:
        return self._disassembly.function_at(address)

    def function_instructions(self, address: int) -> tuple[Function, list[Instruction]]:
        return self._disassembly.function_instructions(address)

    def function_address(self, name: str) -> int | None:
        return self._disassembly.address_of(name)

    @property
    def disassembly(self) -> Disassembly:
        """The disassembly part itself (its decoder and how often it ran: tests and benchmarks)."""
        return self._disassembly
