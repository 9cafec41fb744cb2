"""load_state: validate a dump, then build the model over memory-mapped files."""

from __future__ import annotations

import gc
import weakref
import os
from contextlib import contextmanager
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StateError
from .formats import is_core_file, load_core_file
from .files import DumpFiles, FileSpan, FolderFiles, open_dump_files
from .manifest_paths import path_problem
from .memory import Region, SparseMemory
from .model import (DEFAULT_REGISTER_NAMES, Aperture, CodeObjectRef, Dispatch, Focus, GpuState, Stop, Target,
                    Unreadable, Wave, WaveHeads, Workgroup, mask_to_lanes)
from .numbers import parse_number
from .private import PrivateMemory
from .registers import RegisterFile
from . import split_read
from .validate import ManifestChecker, WaveColumns, error_message, memory_problem, read_manifest, register_rules_for
from .wavetable import LazyWaves, LazyWorkgroups, WaveSlice, WaveTable, int_column


def _little_endian(columns: np.ndarray) -> np.ndarray:
    """Rows of up to 8 little-endian bytes as uint64 (wider values keep their low 8 bytes)."""
    padded = np.zeros((len(columns), 8), np.uint8)
    width = min(columns.shape[1], 8)
    padded[:, :width] = columns[:, :width]
    return padded.view("<u8").reshape(-1)


def _int(value: Any) -> int:
    return value if type(value) is int else parse_number(value)


def _ints(values: list) -> list[int]:
    """Numbers of the manifest as ints (it may write them as strings)."""
    return values if set(map(type, values)) <= {int} else [_int(v) for v in values]


_ID = itemgetter("id")
_INDEX = itemgetter("index_in_workgroup")
_WAVES = itemgetter("waves")
_REGISTERS = itemgetter("registers")
_LAYOUT = itemgetter("layout")
_FILE = itemgetter("file")


def _num(value: Any, default: int | None = None) -> int | None:
    return default if value is None else parse_number(value)


def _apertures(entries: dict | None) -> dict[str, Aperture]:
    return {name: Aperture(parse_number(a["base"]), parse_number(a["size"])) for name, a in (entries or {}).items()}


def _head_place(layout: list[tuple[str, int]], lanes: int, pc_name: str, exec_name: str | None) -> tuple:
    """Where a layout keeps the pc and the execution mask: (first byte, length, pc's (offset, size) in that
    range, exec's), None for a register it lacks."""
    offsets, at = {}, 0
    for reg, size in layout:
        offsets.setdefault(reg, (at, size))
        at += size
    wanted = [offsets.get(pc_name), offsets.get(exec_name) if exec_name else None]
    if wanted[1] is not None and wanted[1][1] * 8 < lanes:
        wanted[1] = None  # an exec narrower than the wave says nothing about its upper lanes
    present = [w for w in wanted if w is not None]
    first = min((o for o, _ in present), default=0)
    last = max((o + size for o, size in present), default=0)
    return (first, last - first, *((None if w is None else (w[0] - first, w[1])) for w in wanted))


def _prefetch_heads(manifest: Any, files: DumpFiles) -> None:
    """Start reading every wave's pc and exec (read_heads' range of each register file) while the manifest
    is checked: opening a big dump's 100,000 register files takes longer than the rest of loading. Only the
    plain case (one register layout, waves as the format lays them out) is read ahead; any other manifest
    is read when asked, and a manifest that fails its check drops what was started."""
    if not isinstance(files, FolderFiles):
        return
    try:
        target = manifest["target"]
        waves = [wave for dispatch in manifest["dispatches"] for group in dispatch["workgroups"]
                 for wave in group["waves"]]
        if len(waves) < split_read.HELPER_FILES:
            return
        registers = list(map(_REGISTERS, waves))
        layouts = set(map(_LAYOUT, registers))
        if len(layouts) != 1:
            return
        layout = [(reg, parse_number(size)) for reg, size in manifest["register_layouts"][layouts.pop()]]
        rules = register_rules_for(target["vendor"])
        names = (rules.pc_register, rules.exec_register) if rules is not None else DEFAULT_REGISTER_NAMES
        lanes = parse_number(target["lanes"])
        if lanes > 64:
            return  # (wave_heads reads none for waves that wide)
        first, length, *_ = _head_place(layout, lanes, *names)
        rels = list(map(_FILE, registers))
    except (KeyError, TypeError, ValueError, AttributeError):
        return
    if length:
        files.prefetch_ranges(rels, first, length)


class _Builder:
    def __init__(self, manifest: dict, files: DumpFiles, columns: dict[int, WaveColumns] | None = None):
        self.manifest = manifest
        self.files = files
        self.columns = columns or {}  # what the bulk check read of a dispatch's waves (validate.WaveColumns)
        # the same for all waves in GpuState.waves order (None: not read yet)
        self.index_in_workgroup: list[int] | None = None
        self.register_layouts: list[str] | None = None
        self.register_files: list[str] | None = None
        self.lane_fields = True  # a wave may have valid_lanes, lane_pcs or return_addresses
        self.spans: dict[str, FileSpan] = {}
        self.layouts: dict[str, list[tuple[str, int]]] = {}
        self.wave_entries: list[dict] = []  # every wave's manifest entry, in GpuState.waves order
        self.group_entries: list[dict] = []  # every workgroup's, all dispatches in turn
        self.group_dispatch: list[int] = []  # the dispatch of each of those
        self.dispatch_first_group: list[int] = []  # where each dispatch's workgroups start among them
        self.dispatch_list: list[Dispatch] = []
        # sized once the dispatches are read
        self.waves = LazyWaves(0, self.wave, np.zeros(0, np.int64), partial(self.wave, keep=False))
        target = manifest["target"]
        self.lanes = parse_number(target["lanes"])

    def span(self, rel: str) -> FileSpan:
        # Regions often share one file at different offsets: map it once.
        found = self.spans.get(rel)
        if found is None:
            found = self.files.span(rel)
            self.spans[rel] = found
        return found

    def check_memory(self, entry: Any, path: str, lds: bool = False) -> None:
        """A private memory (or LDS) entry, which opening left to its first read (validate.check_manifest's
        `memories`): its first problem is raised as the validator says it."""
        problem = memory_problem(entry, path, self.lanes, lds)
        if problem is not None:
            raise StateError(problem.message, problem.path)

    def file_span(self, rel: str, where: str) -> FileSpan:
        """The file that the field at JSON path `where` names; a missing one is said as the validator says
        it (opening looked for the register files, not for the LDS and private ones)."""
        why = path_problem(rel)
        if why is not None:
            raise StateError(why, where)
        try:
            return self.files.span(rel)
        except StateError as exc:
            if exc.path == rel and error_message(exc) == "missing":
                raise StateError("missing", where) from None
            raise

    def regions(self, entries: list[dict], path: str) -> dict[str, SparseMemory]:
        by_space: dict[str, list[Region]] = {}
        for entry in entries:
            region = Region(address=parse_number(entry["address"]), size=parse_number(entry["size"]),
                            file=entry["file"], file_offset=parse_number(entry["file_offset"]),
                            bank=_num(entry.get("bank")), span=self.span(entry["file"]))
            by_space.setdefault(entry["space"], []).append(region)
        return {space: SparseMemory(regions, space, path) for space, regions in by_space.items()}

    def target(self) -> Target:
        target = self.manifest["target"]
        return Target(target["vendor"], target["processor"], self.lanes, _apertures(target.get("apertures")))

    def code_objects(self) -> list[CodeObjectRef]:
        return [CodeObjectRef(parse_number(e["id"]), self.files.materialise(e["path"]),
                              parse_number(e["load_address"]), e["path"])
                for e in self.manifest["code_objects"]]

    def wave_parts(self, entry: dict, wave: Wave) -> list:
        """[registers, valid_lanes, private, lane_pcs] of one wave: built the first time the wave is used."""
        path = wave.path
        regs = entry["registers"]
        registers = RegisterFile(self.layouts[regs["layout"]], self.file_span(regs["file"], f"{path}.registers.file"),
                                 f"{path}.registers", regs["layout"])
        mask = entry.get("valid_lanes")
        valid = np.ones(self.lanes, dtype=bool) if mask is None else mask_to_lanes(parse_number(mask), self.lanes)
        private = None
        if entry.get("private") is not None:
            try:
                private = self.private(entry["private"], f"{path}.private")
            except StateError as exc:  # the registers stay usable; the private memory says why it is not
                private = Unreadable(error_message(exc), exc.path)
        lane_pcs = None
        if entry.get("lane_pcs") is not None:
            lane_pcs = np.array([parse_number(pc) for pc in entry["lane_pcs"]], dtype=np.uint64)
        return [registers, valid, private, lane_pcs]

    def private(self, p: Any, path: str) -> PrivateMemory:
        self.check_memory(p, path)
        size = parse_number(p["size"])
        view = SparseMemory([Region(0, size, p["file"], 0, span=self.file_span(p["file"], f"{path}.file"))],
                            "private_wave", path)
        return PrivateMemory(p["layout"], size, self.lanes, view, _num(p.get("base"), 0), path)

    def lds(self, lds: dict, path: str) -> SparseMemory:
        self.check_memory(lds, path, lds=True)
        size = parse_number(lds["size"])
        return SparseMemory([Region(0, size, lds["file"], 0, span=self.file_span(lds["file"], f"{path}.file"))],
                            "local", path)

    def dispatches(self) -> list[Dispatch]:
        """The dispatches, whose workgroups and waves are made when first asked for (self.waves): only
        their columns are read here."""
        self.layouts = {name: [(reg, parse_number(size)) for reg, size in entries]
                        for name, entries in self.manifest["register_layouts"].items()}
        result = []
        wave_counts: list[int] = []  # per workgroup, all dispatches in turn
        dispatches = self.manifest["dispatches"]
        read = [self.columns.get(d) for d in range(len(dispatches))]
        for d, entry in enumerate(dispatches):
            here = f"dispatches[{d}]"
            groups = entry["workgroups"]
            wave_lists = list(map(_WAVES, groups))
            first_group, first_wave = len(wave_counts), len(self.wave_entries)
            self.dispatch_first_group.append(first_group)
            wave_counts += map(len, wave_lists)
            self.wave_entries += chain.from_iterable(wave_lists)
            self.group_entries += groups
            self.group_dispatch += [d] * len(groups)
            waves = WaveSlice(self.waves, first_wave, len(self.wave_entries))
            make = partial(self.workgroup, first_group)
            workgroups = LazyWorkgroups(len(groups), make, waves, make)
            co = entry.get("code_object")
            dispatch = Dispatch(
                parse_number(entry["id"]), entry["kernel"], None if co is None else parse_number(co),
                tuple(parse_number(x) for x in entry["grid_size"]),
                tuple(parse_number(x) for x in entry["workgroup_size"]), workgroups,
                self.regions(entry.get("memory") or [], f"{here}.memory"), here,
                kernel_descriptor=_num(entry.get("kernel_descriptor")))
            dispatch.device = _num(entry.get("device"))
            dispatch.processor = entry.get("processor")
            if entry.get("cluster_size") is not None:
                dispatch.cluster_size = tuple(_int(x) for x in entry["cluster_size"])
            if entry.get("apertures") is not None:
                dispatch.apertures = _apertures(entry["apertures"])
            result.append(dispatch)
        self.dispatch_list = result
        counts = np.array(wave_counts, np.int64)
        self.group_first = np.concatenate(([0], np.cumsum(counts)))  # each workgroup's first wave
        self.wave_group = np.repeat(np.arange(len(counts)), counts)  # each wave's workgroup
        if None not in read:  # the bulk check read every wave: take its columns
            self.index_in_workgroup = list(chain.from_iterable(c.index_in_workgroup for c in read))
            self.register_layouts = list(chain.from_iterable(c.layouts for c in read))
            self.register_files = list(chain.from_iterable(c.register_files for c in read))
            self.lane_fields = any(c.lane_fields for c in read)
            ids = list(chain.from_iterable(c.ids for c in read))
        else:
            ids = _ints(list(map(_ID, self.wave_entries)))
        self.waves.set_ids(int_column(ids))
        return result

    def workgroup(self, first_group: int, index: int) -> Workgroup:
        """Workgroup `index` of the dispatch whose first workgroup is `first_group` (of all dispatches')."""
        g = first_group + index
        d, entry = self.group_dispatch[g], self.group_entries[g]
        path = f"dispatches[{d}].workgroups[{index}]"
        lds = entry.get("lds")
        start, end = int(self.group_first[g]), int(self.group_first[g + 1])
        workgroup = Workgroup(tuple(_int(x) for x in entry["id"]), None, WaveSlice(self.waves, start, end), path,
                              lds_loader=None if lds is None else partial(self.lds, lds, f"{path}.lds"))
        if entry.get("cluster") is not None:
            workgroup.cluster = tuple(_int(x) for x in entry["cluster"])
        workgroup.dispatch = self.dispatch_list[d]
        return workgroup

    def wave(self, i: int, keep: bool = True) -> Wave:
        """Wave `i` of all dispatches' (GpuState.waves order), with its workgroup: the one kept, or
        without `keep` (a wave made for one look, LazyWaves.passing) a new one unless it was made before."""
        entry = self.wave_entries[i]
        g = int(self.wave_group[i])
        d = self.group_dispatch[g]
        workgroups, at = self.dispatch_list[d].workgroups, g - self.dispatch_first_group[d]
        workgroup = workgroups[at] if keep else next(workgroups.passing(at, at + 1))
        wave = Wave.deferred(_int(entry["id"]), _int(entry["index_in_workgroup"]), self.lanes,
                             f"{workgroup.path}.waves[{i - int(self.group_first[g])}]", partial(self.wave_parts, entry))
        wave.workgroup, wave.dispatch = workgroup, workgroup.dispatch
        wave.pc_register, wave.exec_register = self.waves.register_names
        if entry.get("return_addresses") is not None:  # the call stacks the dump records (CUDA backtraces)
            wave.return_addresses = {lane: [parse_number(a) for a in stack]
                                     for lane, stack in enumerate(entry["return_addresses"]) if stack}
        return wave

    def wave_table(self) -> WaveTable:
        n = len(self.wave_entries)
        groups = self.group_entries
        group_ids = int_column(_ints([x for e in groups for x in _ID(e)])).reshape(len(groups), 3)
        clusters = None
        if any(e.get("cluster") is not None for e in groups):
            per_group = [None if e.get("cluster") is None else tuple(_int(x) for x in e["cluster"]) for e in groups]
            clusters = [per_group[g] for g in self.wave_group.tolist()]
        return WaveTable(self.waves, self.dispatch_list, self.waves.ids,
                         int_column(self.index_in_workgroup if self.index_in_workgroup is not None
                                    else _ints(list(map(_INDEX, self.wave_entries)))), np.full(n, self.lanes, np.int64),
                         np.array(self.group_dispatch, np.int64)[self.wave_group] if n else np.zeros(0, np.int64),
                         group_ids[self.wave_group], clusters)

    def read_heads(self, pc_name: str = "pc", exec_name: str | None = "exec") -> WaveHeads:
        """pc, execution mask and valid lanes of every wave from the files, without building the waves
        (`pc_name` and `exec_name`: the registers holding them, as the vendor names them)."""
        n, lanes = len(self.wave_entries), self.lanes
        heads = WaveHeads(np.zeros(n, np.uint64), np.zeros(n, bool), np.zeros(n, np.uint64), np.zeros(n, bool),
                          np.full(n, (1 << lanes) - 1, np.uint64), np.zeros(n, bool))
        # layout -> (first byte, length, pc slice, exec slice)
        places = {name: _head_place(layout, lanes, pc_name, exec_name) for name, layout in self.layouts.items()}
        limit, lane_bits = (1 << 64) - 1, (1 << lanes) - 1
        layouts, register_files = self.register_layouts, self.register_files
        if layouts is None or register_files is None:
            registers = list(map(_REGISTERS, self.wave_entries))
            layouts, register_files = list(map(_LAYOUT, registers)), list(map(_FILE, registers))
        by_layout: dict[str, list[int]] = {}
        if len(set(layouts)) == 1:
            by_layout[layouts[0]] = list(range(n))
        else:
            for i, layout in enumerate(layouts):
                by_layout.setdefault(layout, []).append(i)
        for layout, rows in by_layout.items():
            first, length, pc_at, exec_at = places[layout]
            if not length:
                continue
            chunks = self.files.read_ranges(register_files if len(rows) == n else [register_files[i] for i in rows],
                                            first, length)
            table = np.zeros((len(rows), length), np.uint8)  # the bytes each file holds; short files leave zeros
            held = np.zeros(len(rows), np.int64)
            whole = b"".join(chunks)
            if len(whole) == len(rows) * length:
                table[:] = np.frombuffer(whole, np.uint8).reshape(len(rows), length)
                held[:] = length
            else:
                for r, data in enumerate(chunks):
                    table[r, :len(data)] = np.frombuffer(data, np.uint8)
                    held[r] = len(data)
            rows = np.array(rows, dtype=np.int64)
            for at, values, known, bits in ((pc_at, heads.pc, heads.pc_known, limit),
                                            (exec_at, heads.exec, heads.exec_known, lane_bits)):
                if at is None:
                    continue
                start, size = at
                ok = held >= start + size
                values[rows[ok]] = _little_endian(table[ok, start:start + size]) & np.uint64(bits)
                known[rows[ok]] = True
        if not self.lane_fields:  # (no wave has valid_lanes or lane_pcs)
            return heads
        masks = list(map(dict.get, self.wave_entries, repeat("valid_lanes", n)))
        if masks.count(None) != n:
            for i, mask in enumerate(masks):
                if mask is not None:
                    heads.valid[i] = parse_number(mask) & lane_bits
        per_lane = list(map(dict.get, self.wave_entries, repeat("lane_pcs", n)))
        if per_lane.count(None) != n:
            heads.lane_pcs[:] = [pcs is not None for pcs in per_lane]
        return heads

    def _register_places(self) -> tuple[list[str], list[str]]:
        """Every wave's register layout name and register file, in waves order."""
        layouts, register_files = self.register_layouts, self.register_files
        if layouts is None or register_files is None:
            registers = list(map(_REGISTERS, self.wave_entries))
            layouts, register_files = list(map(_LAYOUT, registers)), list(map(_FILE, registers))
            self.register_layouts, self.register_files = layouts, register_files
        return layouts, register_files

    def read_registers(self, rows: np.ndarray, names: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Registers of the waves at `rows`, read from their files in bulk (GpuState.register_bytes): one
        read of each file, from the first of the registers to the end of the last."""
        layouts, register_files = self._register_places()
        places: dict[str, dict[str, tuple[int, int]]] = {}  # layout -> register -> (offset, size)
        for layout_name in {layouts[i] for i in rows.tolist()}:
            at, found = 0, {}
            for reg, size in self.layouts[layout_name]:
                if reg in names and reg not in found:
                    found[reg] = (at, int(size))
                at += int(size)
            places[layout_name] = found
        widths = {name: max((p[name][1] for p in places.values() if name in p), default=0) for name in names}
        out = {name: (np.zeros((len(rows), widths[name]), np.uint8), np.zeros((len(rows), widths[name]), bool))
               for name in names}
        by_layout: dict[str, list[int]] = {}
        if len(places) == 1:
            by_layout[next(iter(places))] = list(range(len(rows)))
        else:
            for k, i in enumerate(rows.tolist()):
                by_layout.setdefault(layouts[i], []).append(k)
        for layout_name, ks in by_layout.items():
            found = places[layout_name]
            if not found:
                continue
            first = min(offset for offset, _ in found.values())
            length = max(offset + size for offset, size in found.values()) - first
            chunks = self.files.read_ranges([register_files[i] for i in rows[ks].tolist()], first, length)
            whole = b"".join(chunks)
            table = np.zeros((len(ks), length), np.uint8)
            held = np.full(len(ks), length, np.int64)
            if len(whole) == len(ks) * length:
                table[:] = np.frombuffer(whole, np.uint8).reshape(len(ks), length)
            else:  # short files: the tail they lack is unavailable
                for r, chunk in enumerate(chunks):
                    table[r, :len(chunk)] = np.frombuffer(chunk, np.uint8)
                    held[r] = len(chunk)
            every = len(ks) == len(rows)  # (one layout: whole columns, no row lists)
            for name, (offset, size) in found.items():
                data, valid = out[name]
                lo = offset - first
                at = slice(None) if every else ks
                data[at, :size] = table[:, lo:lo + size]
                if (held == length).all():
                    valid[at, :size] = True
                else:
                    valid[at, :size] = (lo + np.arange(size))[None, :] < held[:, None]
        return [out[name] for name in names]

    def build(self) -> GpuState:
        focus = self.manifest.get("focus")
        stop = self.manifest.get("stop")
        root = self.files.root if isinstance(self.files, FolderFiles) else None
        return GpuState(
            root=root, source=self.files.source, producer=self.manifest["producer"], manifest=self.manifest,
            target=self.target(), code_objects=self.code_objects(),
            memory=self.regions(self.manifest.get("memory") or [], "memory"),
            dispatches=self.dispatches(), read_heads=self.read_heads, waves=self.waves, wave_table=self.wave_table,
            read_registers=self.read_registers,
            focus=None if focus is None else Focus(parse_number(focus["wave"]), parse_number(focus["lane"])),
            stop=None if stop is None else Stop(stop["reason"], stop.get("description") or "", _num(stop.get("pc"))),
            files=self.files)


def load_state(path: str | os.PathLike, read_ahead: bool = False) -> GpuState:
    """Open a dump folder, a .zip or a GPU core dump (formats.py); raises StateError(message, json_path)
    for the first problem. `read_ahead`: a big dump folder's every pc and exec start being read while it
    is checked (a debugging session lists its threads and groups its waves next)."""
    if os.path.isfile(path) and is_core_file(path):
        return load_core_file(path)
    files = open_dump_files(Path(path))
    with _no_collection() as loaded:
        try:
            state = _load(files, read_ahead)
        except BaseException:
            files.close()
            raise
        loaded.append(state)
    return state


# a dump with this many waves stays frozen for the collector while it is open (see _no_collection)
FREEZE_WAVES = 10_000


@contextmanager
def _no_collection():
    """A big manifest is a million small objects: the cyclic collector would walk them again and
    again while they are made, which costs more than the parsing. Pause it while loading, then move
    what was made out of the young generations (gc.freeze). A dump of FREEZE_WAVES waves or more
    stays frozen while its state is open, so the first full collection after the load does not pause
    the server for half a second (100,000 waves); closing or dropping the state thaws it, so what it
    made can be collected. A smaller dump, or a load that fails, is thawed at once (into the oldest
    generation)."""
    enabled = gc.isenabled()
    gc.disable()
    loaded: list = []
    try:
        yield loaded
    finally:
        if enabled:
            gc.freeze()
            if loaded and len(loaded[0].waves) >= FREEZE_WAVES:
                loaded[0]._thaw = weakref.finalize(loaded[0], gc.unfreeze)
            else:
                gc.unfreeze()
            gc.enable()


def _load(files: DumpFiles, read_ahead: bool = False) -> GpuState:
    manifest, problem = read_manifest(files)
    if problem is not None:
        raise StateError(problem.message, problem.path)
    if read_ahead:
        _prefetch_heads(manifest, files)
    # opening needs the register files (the waves table reads them) and the code objects and memories to
    # exist; their lengths only matter once read (short = unavailable tail); an LDS or private memory's
    # entry and file are looked at when first read
    checker = ManifestChecker(manifest, files, require_registers=False, sizes=False, memories=False)
    problems = checker.check()
    for problem in problems:
        if problem.is_error:
            raise StateError(problem.message, problem.path)
    state = _Builder(manifest, files, checker.wave_columns).build()
    state.warnings += [str(p) for p in problems]  # e.g. a grid that does not hold a work-group: told at launch
    rules = register_rules_for(state.target.vendor)
    if rules is not None:  # the vendor's names for the PC and execution-mask registers
        state.use_register_names(rules.pc_register, rules.exec_register)
    return state
