"""Checks a manifest (and the files it names) against format 1; never raises for a bad dump.

Every problem carries the JSON path of the field that caused it. A file shorter than
declared is a *warning*: the dump still loads and the missing tail reads as unavailable.
"""

from __future__ import annotations

import json
import os
from itertools import chain, repeat
from operator import contains, itemgetter
import re
from typing import Any, Callable, NamedTuple, Protocol

from ..errors import StateError
import numpy as np

from .files import DumpFiles, open_dump_files
from .manifest_paths import all_plain_paths, path_problem
from .geometry import grid_problems
from .numbers import MAX_U64, parse_number
from .private import LAYOUTS, PER_LANE, SWIZZLED
from .problems import ERROR, WARNING, Problem

FORMAT_NAME = "aspace-gpustate"
FORMAT_VERSION = 1
VENDORS = ("amd", "nvidia", "intel")
MAX_LANES = 4096  # far above any real wave; keeps masks and per-lane arrays sane

_MISSING = object()
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RegisterRules(Protocol):
    """What a vendor's dumps must hold in their register layouts (the vendor's adapter answers)."""

    pc_register: str              # the register holding a wave's PC
    exec_register: str | None     # ... and its execution mask
    uniform_workgroups: bool      # its launches hold whole work-groups only (grid_size a multiple)

    def required_registers(self, processor: str, lanes: int) -> dict[str, str]: ...

    def register_size(self, name: str, processor: str, lanes: int) -> int | None: ...


# vendor -> its rules (None: none known). The state layer knows no vendor: the adapters register
# theirs when imported (use_register_rules), or a caller passes its own.
RulesFor = Callable[[str], "RegisterRules | None"]
_registered_rules: RulesFor | None = None


def register_rules_for(vendor: str) -> "RegisterRules | None":
    """The registered rules of `vendor` (None when none are registered or the vendor is unknown)."""
    return _registered_rules(vendor) if _registered_rules is not None else None


def use_register_rules(rules_for: RulesFor | None) -> None:
    """Make `rules_for` the default register rules of validate_state, check_manifest and load_state."""
    global _registered_rules
    _registered_rules = rules_for


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class WaveColumns(NamedTuple):
    """What the bulk check read of one dispatch's waves, in order, for the reader to use again."""

    ids: list[int]
    index_in_workgroup: list[int]
    layouts: list[str]  # of their register files
    register_files: list[str]
    lane_fields: bool  # some wave may have valid_lanes, lane_pcs or return_addresses


class ManifestChecker:
    def __init__(self, manifest: Any, files: DumpFiles | None, rules_for: RulesFor | None = None,
                 require_registers: bool = True, sizes: bool = True, memories: bool = True):
        self.manifest = manifest
        self.files = files
        self.rules_for = rules_for if rules_for is not None else _registered_rules
        self.require_registers = require_registers
        self.sizes = sizes  # False: check that files exist, not their lengths (short files are only warnings)
        self.memories = memories  # False: LDS and private entries are left to their first read (check_manifest)
        self.problems: list[Problem] = []
        self.lanes: int | None = None
        self.vendor: str | None = None
        self.processor: str | None = None
        self.layout_sizes: dict[str, int] = {}  # layouts without problems: name -> file size
        self.layout_names: set[str] = set()
        self.code_object_ids: set[int] = set()
        self.wave_ids: set[int] = set()
        self.wave_columns: dict[int, WaveColumns] = {}  # dispatch index -> its waves, where checked in bulk

    # ----- small checkers ------------------------------------------------------------------

    def report(self, path: str, message: str, severity: str = ERROR) -> None:
        self.problems.append(Problem(path, message, severity))

    def field(self, obj: dict, key: str, path: str, required: bool = True) -> Any:
        value = obj.get(key, _MISSING)
        if value is None and not required:
            value = _MISSING  # null in an optional field means absent
        if value is _MISSING:
            if required:
                self.report(_join(path, key), "missing")
            return _MISSING
        return value

    def number(self, obj: dict, key: str, path: str, required: bool = True, minimum: int = 0) -> int | None:
        value = self.field(obj, key, path, required)
        if value is _MISSING:
            return None
        return self.number_value(value, _join(path, key), minimum)

    def number_value(self, value: Any, path: str, minimum: int = 0) -> int | None:
        try:
            number = parse_number(value)
        except ValueError as exc:
            self.report(path, str(exc))
            return None
        if number > MAX_U64:
            self.report(path, f"{value!r} does not fit in 64 bits")
            return None
        if number < minimum:
            self.report(path, f"must be at least {minimum}, got {number}")
            return None
        return number

    def string(self, obj: dict, key: str, path: str, required: bool = True, nonempty: bool = True) -> str | None:
        value = self.field(obj, key, path, required)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            self.report(_join(path, key), f"expected a string, got {type(value).__name__}")
            return None
        if nonempty and not value:
            self.report(_join(path, key), "must not be empty")
            return None
        return value

    def identifier(self, obj: dict, key: str, path: str) -> str | None:
        """A name (memory space, register, layout) that must be a plain identifier: such names end up in
        file names and messages, so "../x" or "a/b" is refused here rather than escaped later."""
        value = self.string(obj, key, path)
        return value if value is None or self.is_identifier(value, _join(path, key)) else None

    def is_identifier(self, value: str, path: str) -> bool:
        if _IDENTIFIER.fullmatch(value):
            return True
        self.report(path, f"{value[:60]!r} is not a plain name (letters, digits and _, not starting with a digit)")
        return False

    def obj(self, value: Any, path: str) -> dict | None:
        if not isinstance(value, dict):
            self.report(path, f"expected an object, got {type(value).__name__}")
            return None
        return value

    def array(self, value: Any, path: str) -> list | None:
        if not isinstance(value, list):
            self.report(path, f"expected a list, got {type(value).__name__}")
            return None
        return value

    def triple(self, obj: dict, key: str, path: str, minimum: int = 0) -> tuple[int, int, int] | None:
        value = self.field(obj, key, path)
        if value is _MISSING:
            return None
        here = _join(path, key)
        if not isinstance(value, list) or len(value) != 3:
            self.report(here, "expected a list of 3 numbers [x, y, z]")
            return None
        numbers = [self.number_value(v, f"{here}[{i}]", minimum) for i, v in enumerate(value)]
        return None if None in numbers else tuple(numbers)  # type: ignore[return-value]

    def file(self, obj: dict, key: str, path: str, needed: int | None) -> None:
        """A file field: a safe relative path to an existing file, ideally `needed` bytes long."""
        rel = self.field(obj, key, path)
        if rel is _MISSING:
            return
        here = _join(path, key)
        why = path_problem(rel)
        if why is not None:
            self.report(here, why)
            return
        if self.files is None:
            return
        if not self.sizes:
            if not self.files.exists(rel):
                self.report(here, "missing")
            return
        size = self.files.size(rel)
        if size is None:
            self.report(here, "missing")
        elif needed is not None and size < needed:
            self.report(here, f"file has {size} bytes, {needed} declared: the tail is unavailable", WARNING)

    # ----- sections ------------------------------------------------------------------------

    def check(self) -> list[Problem]:
        manifest = self.obj(self.manifest, "manifest.json")
        if manifest is None:
            return self.problems
        fmt = self.field(manifest, "format", "")
        if fmt is not _MISSING and fmt != FORMAT_NAME:
            self.report("format", f"expected {FORMAT_NAME!r}, got {fmt!r}")
        version = self.field(manifest, "version", "")
        if version is not _MISSING:
            try:
                ok = parse_number(version) == FORMAT_VERSION
            except ValueError:
                ok = False
            if not ok:
                self.report("version", f"unsupported version {version!r} (this reader knows {FORMAT_VERSION})")
        self.string(manifest, "producer", "", nonempty=False)
        self.check_target(manifest)
        self.check_code_objects(manifest)
        memory = self.field(manifest, "memory", "", required=False)
        if memory is not _MISSING:
            self.check_regions(memory, "memory")
        self.check_layouts(manifest)
        self.check_dispatches(manifest)
        self.check_focus_and_stop(manifest)
        return self.problems

    def check_target(self, manifest: dict) -> None:
        value = self.field(manifest, "target", "")
        target = None if value is _MISSING else self.obj(value, "target")
        if target is None:
            return
        vendor = self.string(target, "vendor", "target")
        if vendor is not None:
            if vendor in VENDORS:
                self.vendor = vendor
            else:
                self.report("target.vendor", f"unknown vendor {vendor!r} (expected one of {', '.join(VENDORS)})")
        self.processor = self.string(target, "processor", "target")
        lanes = self.number(target, "lanes", "target", minimum=1)
        if lanes is not None:
            if lanes > MAX_LANES:
                self.report("target.lanes", f"{lanes} lanes is more than {MAX_LANES}")
            else:
                self.lanes = lanes
        self.check_apertures(target, "target")

    def check_apertures(self, owner: dict, path: str) -> None:
        apertures = self.field(owner, "apertures", path, required=False)
        if apertures is not _MISSING and self.obj(apertures, f"{path}.apertures") is not None:
            for name, aperture in apertures.items():
                here = f"{path}.apertures.{name}"
                if not self.is_identifier(name, here):
                    continue
                if self.obj(aperture, here) is not None:
                    base = self.number(aperture, "base", here)
                    size = self.number(aperture, "size", here)
                    if base is not None and size is not None and base + size > MAX_U64 + 1:
                        self.report(here, "aperture extends past the 64-bit address space")

    def check_code_objects(self, manifest: dict) -> None:
        value = self.field(manifest, "code_objects", "")
        entries = None if value is _MISSING else self.array(value, "code_objects")
        for i, entry in enumerate(entries or []):
            here = f"code_objects[{i}]"
            if self.obj(entry, here) is None:
                continue
            co_id = self.number(entry, "id", here)
            if co_id is not None:
                if co_id in self.code_object_ids:
                    self.report(f"{here}.id", f"duplicate code object id {co_id}")
                self.code_object_ids.add(co_id)
            self.file(entry, "path", here, None)
            self.number(entry, "load_address", here)

    def check_regions(self, value: Any, path: str) -> None:
        regions = self.array(value, path)
        seen: dict[tuple[str, int | None], list[tuple[int, int, str]]] = {}
        for i, region in enumerate(regions or []):
            here = f"{path}[{i}]"
            if self.obj(region, here) is None:
                continue
            space = self.identifier(region, "space", here)
            address = self.number(region, "address", here)
            size = self.number(region, "size", here)
            offset = self.number(region, "file_offset", here)
            bank = self.number(region, "bank", here, required=False)
            needed = None if size is None or offset is None else size + offset
            self.file(region, "file", here, needed)
            if address is None or size is None or space is None:
                continue
            if address + size > MAX_U64 + 1:
                self.report(here, "region extends past the 64-bit address space")
                continue
            key = (space, bank)
            for other_start, other_end, other_path in seen.get(key, []):
                if address < other_end and other_start < address + size:
                    self.report(here, f"overlaps {other_path} in space {space!r} "
                                      f"({other_start:#x}..{other_end:#x})")
                    break
            seen.setdefault(key, []).append((address, address + size, here))

    def check_layouts(self, manifest: dict) -> None:
        value = self.field(manifest, "register_layouts", "")
        layouts = None if value is _MISSING else self.obj(value, "register_layouts")
        rules = self.rules_for(self.vendor) if self.rules_for is not None and self.vendor else None
        processor, lanes = self.processor or "", self.lanes or 0
        for name, entries in (layouts or {}).items():
            self.layout_names.add(name)
            here = f"register_layouts.{name}"
            if not self.is_identifier(name, here):
                continue
            if self.array(entries, here) is None:
                continue
            total, names, ok = 0, set(), True
            for i, entry in enumerate(entries):
                at = f"{here}[{i}]"
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0]):
                    self.report(at, "expected [register name, byte size]")
                    ok = False
                    continue
                reg, size = entry[0], self.number_value(entry[1], f"{at}[1]", minimum=1)
                if not self.is_identifier(reg, f"{at}[0]"):
                    ok = False
                    continue
                if reg in names:
                    self.report(at, f"register {reg} appears twice")
                names.add(reg)
                if size is None:
                    ok = False
                    continue
                total += size
                expected = rules.register_size(reg, processor, lanes) if rules is not None else None
                if expected is not None and size != expected:
                    self.report(f"{at}[1]", f"{reg} is {size} bytes; a {lanes}-lane {processor} wave's is "
                                            f"{expected}")
                    ok = False
            if rules is not None and self.require_registers:
                for reg, why in rules.required_registers(processor, lanes).items():
                    if reg not in names:
                        self.report(here, f"no {reg} register: {why}; a {self.vendor} dump must name it {reg}")
                        ok = False
            if ok:
                self.layout_sizes[name] = total

    def check_dispatches(self, manifest: dict) -> None:
        value = self.field(manifest, "dispatches", "")
        dispatches = None if value is _MISSING else self.array(value, "dispatches")
        dispatch_ids: set[int] = set()
        for d, dispatch in enumerate(dispatches or []):
            here = f"dispatches[{d}]"
            if self.obj(dispatch, here) is None:
                continue
            dispatch_id = self.number(dispatch, "id", here)
            if dispatch_id is not None:
                if dispatch_id in dispatch_ids:
                    self.report(f"{here}.id", f"duplicate dispatch id {dispatch_id}")
                dispatch_ids.add(dispatch_id)
            self.string(dispatch, "kernel", here)
            self.number(dispatch, "kernel_descriptor", here, required=False)
            self.number(dispatch, "device", here, required=False)
            self.string(dispatch, "processor", here, required=False)
            if dispatch.get("cluster_size") is not None:
                self.triple(dispatch, "cluster_size", here, minimum=1)
            self.check_apertures(dispatch, here)
            co = self.field(dispatch, "code_object", here, required=False)
            if co is not _MISSING and co is not None:
                co_id = self.number_value(co, f"{here}.code_object")
                if co_id is not None and co_id not in self.code_object_ids:
                    self.report(f"{here}.code_object", f"no code object with id {co_id}")
            grid_size = self.triple(dispatch, "grid_size", here)
            workgroup_size = self.triple(dispatch, "workgroup_size", here, minimum=1)
            memory = self.field(dispatch, "memory", here, required=False)
            if memory is not _MISSING:
                self.check_regions(memory, f"{here}.memory")
            value = self.field(dispatch, "workgroups", here)
            workgroups = None if value is _MISSING else self.array(value, f"{here}.workgroups")
            workgroup_ids: set[tuple] = set()
            if grid_size is not None and workgroup_size is not None:
                rules = self.rules_for(self.vendor) if self.rules_for is not None and self.vendor else None
                self.problems += grid_problems(grid_size, workgroup_size, workgroups or [], here, self.vendor,
                                               getattr(rules, "uniform_workgroups", False))
            if workgroups and len(workgroups) > 1 and self.plain_workgroups(workgroups, workgroup_size, d):
                continue
            for g, workgroup in enumerate(workgroups or []):
                self.check_workgroup(workgroup, f"{here}.workgroups[{g}]", workgroup_size, workgroup_ids)

    def plain_workgroups(self, workgroups: list, workgroup_size, dispatch: int | None = None) -> bool:
        """A dispatch's workgroups and waves checked in bulk, for dumps of many thousand waves.

        True when all of them are plainly well formed (plain numbers and paths, files present and
        long enough, nothing the walk below would report); False leaves it to that walk, which
        names each problem. Nothing is reported here; what was read is kept in wave_columns[dispatch].
        """
        lanes = self.lanes
        if lanes is None or workgroup_size is None:
            return False
        try:
            # one pass per field, in C where possible; a missing key, a non-object (itemgetter and
            # dict.get raise TypeError for anything else JSON makes) or an unhashable value ends the
            # bulk check
            ids = list(map(_ID, workgroups))
            m = len(workgroups)
            if list(map(dict.get, workgroups, repeat("cluster", m))).count(None) != m:  # checked one by one below
                return False
            wave_lists = list(map(_WAVES, workgroups))
            if not (_all_type(wave_lists, list) and _all_type(ids, list)):
                return False
            waves = list(chain.from_iterable(wave_lists))
            wave_ids = list(map(_ID, waves))
            indexes = list(map(_INDEX, waves))
            registers = list(map(_REGISTERS, waves))
            n = len(waves)
            # Waves with no other field than these have no valid_lanes, lane_pcs or return_addresses
            # (counted, not looked up: the common case); others are looked at field by field.
            with_private = sum(map(contains, waves, repeat("private", n)))
            lane_fields = sum(map(len, waves)) != 3 * n + with_private
            if lane_fields and not self._plain_lane_fields(waves):
                return False
            flat = list(chain.from_iterable(ids))
            if set(map(len, ids)) != {3} or not (_all_type(flat, int) and _plain_numbers(flat)):
                return False
            if len(set(map(tuple, ids))) != len(ids):
                return False
            if not (_all_type(wave_ids, int) and _plain_numbers(wave_ids)):
                return False
            unique_ids = set(wave_ids)
            if len(unique_ids) != len(wave_ids) or not unique_ids.isdisjoint(self.wave_ids):
                return False
            items = workgroup_size[0] * workgroup_size[1] * workgroup_size[2]
            if not (_all_type(indexes, int) and _plain_numbers(indexes)
                    and (not indexes or max(indexes) * lanes < items)):
                return False
            layouts, register_files = list(map(_LAYOUT, registers)), list(map(_FILE, registers))
            layout_names = set(layouts)
            # (an LDS or private file: its entry, path and presence, unless opening leaves them to their first read)
            memory_files = self._plain_memories(workgroups, waves) if self.memories else {}
        except (KeyError, TypeError):
            return False
        if memory_files is None:
            return False
        if not _all_type(list(layout_names), str) or "" in layout_names or not layout_names <= self.layout_sizes.keys():
            return False
        rels = register_files + list(memory_files) if memory_files else register_files
        if not all_plain_paths(rels):
            return False
        if self.files is not None:
            if self.sizes:
                needed: dict[Any, int] = dict(memory_files)  # file -> bytes it must hold
                for layout, rel in zip(layouts, register_files):
                    _need(needed, rel, self.layout_sizes[layout])
                for rel, size in needed.items():
                    have = self.files.size(rel)
                    if have is None or have < size:
                        return False
            elif self.files.missing(rels):
                return False
        self.wave_ids.update(unique_ids)
        if dispatch is not None:
            self.wave_columns[dispatch] = WaveColumns(wave_ids, indexes, layouts, register_files, lane_fields)
        return True

    def _plain_memories(self, workgroups: list, waves: list) -> dict[str, int] | None:
        """The LDS and private files of plain workgroups and waves (in bulk, as plain_workgroups), each
        with the bytes it must hold; None for anything the walk would look at (KeyError or TypeError
        for a missing field or a non-object)."""
        lanes = self.lanes or 1
        lds = list(map(dict.get, workgroups, repeat("lds", len(workgroups))))
        if lds.count(None):
            lds = [x for x in lds if x is not None]
        privates = list(map(dict.get, waves, repeat("private", len(waves))))
        if privates.count(None):
            privates = [p for p in privates if p is not None]
        lds_sizes, lds_files = list(map(_SIZE, lds)), list(map(_FILE, lds))
        private_layouts, private_sizes = list(map(_LAYOUT, privates)), list(map(_SIZE, privates))
        private_files = list(map(_FILE, privates))
        kinds = set(private_layouts)
        private_kinds = set(zip(private_layouts, private_sizes)) if len(kinds) > 1 else \
            {(kind, size) for kind in kinds for size in set(private_sizes)}
        sizes = lds_sizes + private_sizes
        if not _all_type(sizes, int):
            return None
        distinct = list(set(sizes))
        if not (_plain_numbers(distinct) and max(distinct, default=0) <= MAX_U64):
            return None
        if sum(map(len, privates)) != 3 * len(privates) \
                and [p.get("base") for p in privates].count(None) != len(privates):
            return None
        for layout, size in private_kinds:
            if layout not in _LAYOUT_SET or size % (4 * lanes if layout == SWIZZLED else lanes):
                return None
        needed: dict[str, int] = {}
        for rel, size in zip(lds_files + private_files, sizes):
            if type(rel) is not str:
                return None
            _need(needed, rel, size)
        return needed

    @staticmethod
    def _plain_lane_fields(waves: list[dict]) -> bool:
        """No wave has valid_lanes or lane_pcs, nor return_addresses unless it says lane_pcs: null (what it
        names under lane_pcs wins, even None): those the walk checks wave by wave."""
        n = len(waves)
        if list(map(dict.get, waves, repeat("valid_lanes", n))).count(None) != n:
            return False
        lane_pcs = list(map(dict.get, waves, repeat("lane_pcs", n), repeat(_MISSING, n)))
        if lane_pcs.count(None) + lane_pcs.count(_MISSING) != n:
            return False
        if lane_pcs.count(_MISSING):
            stacks = list(map(dict.get, waves, repeat("return_addresses", n)))
            if stacks.count(None) != n and any(s is not None for s, p in zip(stacks, lane_pcs) if p is _MISSING):
                return False
        return True

    def check_workgroup(self, workgroup: Any, here: str, workgroup_size, workgroup_ids: set) -> None:
        if self.obj(workgroup, here) is None:
            return
        wg_id = self.triple(workgroup, "id", here)
        if wg_id is not None:
            if wg_id in workgroup_ids:
                self.report(f"{here}.id", f"duplicate workgroup id {list(wg_id)}")
            workgroup_ids.add(wg_id)
        if workgroup.get("cluster") is not None:
            self.triple(workgroup, "cluster", here)
        lds = self.field(workgroup, "lds", here, required=False)
        if lds is not _MISSING and self.memories:
            self.check_lds(lds, f"{here}.lds")
        value = self.field(workgroup, "waves", here)
        waves = None if value is _MISSING else self.array(value, f"{here}.waves")
        for w, wave in enumerate(waves or []):
            self.check_wave(wave, f"{here}.waves[{w}]", workgroup_size)

    def check_wave(self, wave: Any, here: str, workgroup_size) -> None:
        if self.obj(wave, here) is None:
            return
        wave_id = self.number(wave, "id", here)
        if wave_id is not None:
            if wave_id in self.wave_ids:
                self.report(f"{here}.id", f"duplicate wave id {wave_id}")
            self.wave_ids.add(wave_id)
        index = self.number(wave, "index_in_workgroup", here)
        lanes = self.lanes
        if index is not None and lanes and workgroup_size:
            items = workgroup_size[0] * workgroup_size[1] * workgroup_size[2]
            if index * lanes >= items:
                self.report(f"{here}.index_in_workgroup",
                            f"wave {index} starts at work-item {index * lanes}, past the workgroup's {items}",
                            WARNING)
        registers = self.field(wave, "registers", here)
        if registers is not _MISSING and self.obj(registers, f"{here}.registers") is not None:
            layout = self.string(registers, "layout", f"{here}.registers")
            needed = None
            if layout is not None:
                if layout in self.layout_sizes:
                    needed = self.layout_sizes[layout]
                elif layout not in self.layout_names:
                    self.report(f"{here}.registers.layout", f"no register layout named {layout!r}")
            self.file(registers, "file", f"{here}.registers", needed)
        valid = self.field(wave, "valid_lanes", here, required=False)
        if valid is not _MISSING:
            mask = self.number_value(valid, f"{here}.valid_lanes")
            if mask is not None and lanes and mask >> lanes:
                self.report(f"{here}.valid_lanes", f"mask {mask:#x} sets bits past lane {lanes - 1}")
        private = self.field(wave, "private", here, required=False)
        if private is not _MISSING and self.memories:
            self.check_private(private, f"{here}.private")
        lane_pcs = self.field(wave, "lane_pcs", here, required=False)
        if lane_pcs is not _MISSING and self.array(lane_pcs, f"{here}.lane_pcs") is not None:
            if lanes is not None and len(lane_pcs) != lanes:
                self.report(f"{here}.lane_pcs", f"has {len(lane_pcs)} entries, expected {lanes} (one per lane)")
            for i, pc in enumerate(lane_pcs):
                self.number_value(pc, f"{here}.lane_pcs[{i}]")
        stacks = self.field(wave, "return_addresses", here, required=False)
        if stacks is not _MISSING and self.array(stacks, f"{here}.return_addresses") is not None:
            if lanes is not None and len(stacks) != lanes:
                self.report(f"{here}.return_addresses", f"has {len(stacks)} entries, expected {lanes} (one per lane)")
            for i, stack in enumerate(stacks):
                if self.array(stack, f"{here}.return_addresses[{i}]") is not None:
                    for level, address in enumerate(stack):
                        self.number_value(address, f"{here}.return_addresses[{i}][{level}]")

    def check_lds(self, lds: Any, here: str) -> None:
        if self.obj(lds, here) is not None:
            size = self.number(lds, "size", here)
            self.file(lds, "file", here, size)

    def check_private(self, private: Any, here: str) -> None:
        if self.obj(private, here) is None:
            return
        layout = self.string(private, "layout", here)
        if layout is not None and layout not in LAYOUTS:
            self.report(f"{here}.layout", f"unknown layout {layout!r} (expected swizzled or per_lane)")
        size = self.number(private, "size", here)
        self.number(private, "base", here, required=False)
        lanes = self.lanes
        if size is not None and lanes:
            if layout == SWIZZLED and size % (4 * lanes):
                self.report(f"{here}.size", f"{size} is not a multiple of 4 * {lanes} lanes (swizzled)")
            elif layout == PER_LANE and size % lanes:
                self.report(f"{here}.size", f"{size} is not a multiple of {lanes} lanes (per_lane)")
        self.file(private, "file", here, size)

    def check_focus_and_stop(self, manifest: dict) -> None:
        focus = self.field(manifest, "focus", "", required=False)
        if focus is not _MISSING and self.obj(focus, "focus") is not None:
            wave = self.number(focus, "wave", "focus")
            if wave is not None and wave not in self.wave_ids:
                self.report("focus.wave", f"no wave with id {wave}")
            lane = self.number(focus, "lane", "focus")
            if lane is not None and self.lanes is not None and lane >= self.lanes:
                self.report("focus.lane", f"lane {lane} is not below {self.lanes}")
        stop = self.field(manifest, "stop", "", required=False)
        if stop is not _MISSING and self.obj(stop, "stop") is not None:
            self.string(stop, "reason", "stop")
            self.string(stop, "description", "stop", required=False, nonempty=False)
            self.number(stop, "pc", "stop", required=False)


_LAYOUT_SET = frozenset(LAYOUTS)
_ID = itemgetter("id")
_WAVES = itemgetter("waves")
_REGISTERS = itemgetter("registers")
_INDEX = itemgetter("index_in_workgroup")
_SIZE = itemgetter("size")
_FILE = itemgetter("file")
_LAYOUT = itemgetter("layout")


def _all_type(values, kind: type) -> bool:
    """Every value is exactly of `kind` (bool is not an int here)."""
    return not values or set(map(type, values)) == {kind}


def _need(needed: dict, rel: str, size: int) -> None:
    needed[rel] = max(size, needed.get(rel) or 0)


def _plain_size(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_U64


def _plain_numbers(values: list) -> bool:
    """Plain ints (already checked) all within 0..2**63: one numpy pass."""
    try:
        array = np.array(values, dtype=np.int64)
    except (OverflowError, ValueError, TypeError):
        return False
    return array.size == 0 or int(array.min()) >= 0


def error_message(exc: StateError) -> str:
    """The message of a StateError without its "path: " prefix."""
    text = str(exc)
    prefix = f"{exc.path}: "
    return text[len(prefix):] if exc.path and text.startswith(prefix) else text


def check_manifest(manifest: Any, files: DumpFiles | None = None, rules_for: RulesFor | None = None,
                   require_registers: bool = True, sizes: bool = True, memories: bool = True) -> list[Problem]:
    """Problems of an already parsed manifest; with `files`, also checks the files it names (with
    `sizes=False` only that they exist: the short-file warnings are left out). With `memories=False`
    the workgroups' LDS and the waves' private memory entries are not looked at: the reader checks
    each when it is first read (memory_problem) and says the same problem with the same JSON path.
    The register rules
    (`rules_for`, else the registered ones) check each vendor's register sizes and, with
    `require_registers`, that every layout holds the registers the debugger needs to open a wave
    (its PC, the execution mask). A dump lacking them still loads (they read as unknown)."""
    return ManifestChecker(manifest, files, rules_for, require_registers, sizes, memories).check()


def memory_problem(entry: Any, path: str, lanes: int, lds: bool = False) -> Problem | None:
    """The first problem of a wave's private memory entry (with `lds`, a workgroup's LDS entry) at JSON
    path `path`, as the validator says it; its file's presence is not looked at here."""
    checker = ManifestChecker(None, None)
    checker.lanes = lanes
    (checker.check_lds if lds else checker.check_private)(entry, path)
    return next((p for p in checker.problems if p.is_error), None)


def read_manifest(files: DumpFiles) -> tuple[Any, Problem | None]:
    try:
        raw = files.read_manifest()
    except (OSError, KeyError) as exc:
        return None, Problem("manifest.json", f"missing ({exc})" if not isinstance(exc, FileNotFoundError)
                             else "missing")
    except Exception as exc:  # a corrupt zip member surfaces as zlib/zipfile errors
        return None, Problem("manifest.json", f"unreadable: {exc}")
    try:
        return json.loads(raw), None
    except (UnicodeDecodeError, ValueError) as exc:
        return None, Problem("manifest.json", f"not valid JSON: {exc}")


def validate_state(path: str | os.PathLike, rules_for: RulesFor | None = None) -> list[Problem]:
    """Every problem of the dump at `path` (folder or .zip), errors and warnings. Never raises for bad dumps."""
    try:
        files = open_dump_files(path)
    except StateError as exc:
        return [Problem(str(path), error_message(exc))]
    try:
        manifest, problem = read_manifest(files)
        if problem is not None:
            return [problem]
        return check_manifest(manifest, files, rules_for)
    finally:
        files.close()
