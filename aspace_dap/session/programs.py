"""Programs: the code object each wave runs, and what evaluating in it needs.

Owns the loaded code objects (one per dispatch's code object and device: a file may hold a build per
device), the launch's codeObject and where it is placed, and the waves as evaluation targets per dialect;
with them the dump, its adapter and the warnings list, which every other part reaches through Part.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..codeobj import load_code_objects
from ..dwarf.frame_context import frame_context
from ..dwarf.index import DwarfIndex, FrameInfo
from ..dwarf.target import Dialect, FrameContext
from ..errors import AspaceError
from ..names import is_mangled, missing_demangler


@dataclass
class Program:
    """One loaded code object and its DWARF index."""

    id: int
    path: str
    code_object: object
    index: DwarfIndex | None
    load_address: int = 0

    def elf_pc(self, runtime_pc: int) -> int:
        return runtime_pc - self.load_address


class Programs:
    def __init__(self, state, adapter, code_object: str | None):
        self.state = state
        self.adapter = adapter
        adapter.use_dump(state.target.processor)  # the device, where no code object will name it
        self.warnings: list[str] = list(getattr(state, "warnings", []))  # what the user is told at launch
        self._programs: dict[tuple[int, str | None], Program] = {}
        self._failures: dict[tuple[int, str | None], str] = {}  # why a dispatch's code object could not be read
        self._extra: Program | None = None
        self._placed: dict[int, Program] = {}  # the launch's codeObject at other load addresses
        if code_object:
            self._extra = self._load_program(-1, code_object, 0)
        self._targets: dict[tuple[int, Dialect], object] = {}

    def _load_program(self, co_id: int, path: str, load_address: int, processor: str | None = None) -> Program:
        objs = load_code_objects(path)
        wanted = processor or self.state.target.processor  # the dispatch's device may differ from the target
        co = next((o for o in objs if getattr(o, "processor", None) == wanted), None)
        if co is None:
            builds = sorted({str(getattr(o, "processor", None) or "?") for o in objs})
            if len(objs) > 1:  # another device's build would decode registers and code wrongly
                raise AspaceError(f"{path} holds builds for {', '.join(builds)}, none for {wanted}")
            co = objs[0]
            if wanted and builds != ["?"]:
                self.warnings.append(f"{path} was built for {builds[0]}, the dump's device is {wanted}")
        self.adapter.use_code_object(co)
        missing = missing_demangler()
        if missing and missing not in self.warnings and any(is_mangled(name) for name in co.symbols):
            self.warnings.append(missing)
        self.warnings.extend(w for w in co.load_warnings if w not in self.warnings)
        index = None
        if co.has_dwarf() or co.has_line_tables():
            index = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine,
                               function_at=lambda pc: self.adapter.function_symbol(co, pc))
        if index is None:
            self.warnings.append(f"{path}: no DWARF; frames show addresses only")
        elif not co.has_dwarf():
            self.warnings.append(f"{path}: line tables only (no .debug_info): frames show functions and source "
                                 f"lines, there is no variable information")
        return Program(co_id, str(path), co, index, load_address)

    def program_for(self, wave) -> Program:
        dispatch = wave.dispatch
        co_id = dispatch.code_object if dispatch is not None else None
        processor = getattr(dispatch, "processor", None)
        key = (co_id, processor)  # one file may hold a build per device (a fat binary)
        if co_id is not None and key not in self._programs:
            ref = self.state.code_object_by_id(co_id)
            if ref is not None:
                try:
                    self._programs[key] = self._load_program(co_id, str(ref.path), ref.load_address, processor)
                except (AspaceError, OSError) as e:
                    self.warnings.append(f"code object {co_id} ({ref.path}): {e}")
                    self._failures[key] = str(e)
                    self._programs[key] = None  # type: ignore[assignment]
        program = self._programs.get(key) if co_id is not None else None
        if program is None:
            ref = self.state.code_object_by_id(co_id) if co_id is not None else None
            if self._extra is None:
                if ref is not None:
                    why = self._failures.get(key)
                    raise AspaceError(f"wave {wave.id}: code object {ref.path} cannot be read"
                                      f"{f' ({why})' if why else ''}; supply it with codeObject (--code-object "
                                      f"on the command line)")
                raise AspaceError(f"wave {wave.id}: no readable code object (name one with codeObject, or "
                                  f"--code-object on the command line)")
            return self._placed_extra(ref, dispatch)
        return program

    def _placed_extra(self, ref, dispatch) -> Program:
        """The launch's codeObject, loaded where the unreadable code object was, or where the dispatch's
        kernel descriptor says it was when the state names no code object. A relocatable object (`.o`)
        has its own layout, not the linked one the dump's load address is for: it is placed by where the
        dispatch's kernel starts, or refused."""
        descriptor = getattr(dispatch, "kernel_descriptor", None)
        if getattr(self._extra.code_object, "relocated", False):
            return self._placed_at(self._relocatable_bias(dispatch, descriptor))
        bias = self._extra.load_address
        if ref is not None:
            bias = ref.load_address
        elif descriptor:
            found = self.adapter.load_address_for_descriptor(self._extra.code_object, descriptor)
            bias = bias if found is None else found
        return self._placed_at(bias)

    def _relocatable_bias(self, dispatch, descriptor: int | None) -> int:
        kernel = getattr(dispatch, "kernel", None)
        entry = self.adapter.kernel_entry(self.state, descriptor) if descriptor else None
        symbol = self._extra.code_object.symbols.get(kernel) if kernel else None
        if entry is None or symbol is None:
            raise AspaceError(
                f"{self._extra.path} is a relocatable object: its addresses are not those of the linked code "
                f"object the dump was loaded from, and the dump does not say where kernel {kernel or '?'} starts "
                f"(its kernel descriptor in memory); give the linked code object (ld.lld -shared) instead")
        return entry - symbol.value

    def _placed_at(self, bias: int) -> Program:
        if bias == self._extra.load_address:
            return self._extra
        placed = self._placed.get(bias)
        if placed is None:
            placed = self._placed[bias] = replace(self._extra, load_address=bias)
        return placed

    def programs(self) -> list[Program]:
        """Every program of the dump (each dispatch's, loaded now if need be), then the launch's codeObject."""
        for dispatch in self.state.dispatches:  # the program depends on the dispatch only
            waves = next((wg.waves for wg in dispatch.workgroups if wg.waves), None)
            if waves:
                try:
                    self.program_for(waves[0])
                except AspaceError:
                    pass
        return self.loaded()

    def loaded(self) -> list[Program]:
        """The programs loaded so far (a dispatch's whose code object could be read), then the launch's."""
        out = [p for p in self._programs.values() if p is not None]
        if self._extra is not None:
            out.append(self._extra)
        return out

    def target_for(self, wave, dialect: Dialect):
        key = (wave.id, dialect)
        t = self._targets.get(key)
        if t is None:
            t = self._targets[key] = self.adapter.wave_target(self.state, wave, dialect)
        return t

    def frame_context(self, program: Program, info: FrameInfo | None, runtime_pc: int,
                      target=None) -> FrameContext:
        pc = program.elf_pc(runtime_pc) if info is not None else runtime_pc
        cfa = self.adapter.call_frame_cfa(program.code_object, target, pc) if target is not None else None
        return frame_context(program.index, program.code_object, self.adapter, info, pc,
                             load_bias=program.load_address, cfa=cfa)


class Part:
    """A part of a session built on its programs: the dump, the adapter and the warnings list are the
    programs' own (the same objects in every part, never rebound: one list of warnings)."""

    def __init__(self, programs: Programs):
        self.programs = programs
        self.state, self.adapter, self.warnings = programs.state, programs.adapter, programs.warnings
