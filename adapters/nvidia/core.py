"""CUDA GPU core dumps (the ELF file cuda-gdb opens with `target cudacore`): read one into a GpuState,
and write one from a GpuState.

The layout is NVIDIA's public cudacoredump.h, as libcudacore reads it: an ELF64 ET_CORE file for
EM_CUDA (0xbe) with OSABI 0x33. Sections are recognised by sh_type (SHT_LOUSER + n), not by name.
Tables hold fixed rows of sh_entsize bytes (newer drivers append fields, so rows may be longer than
the structs below, never shorter). A child section names its parent table by sh_link (a section
index) and one row of it by sh_info:

    devtbl  <- ctxtbl, smtbl, gridtbl  (one devtbl; sh_info = the device's row)
    ctxtbl  <- modtbl <- elfimg / relfimg (cubins)
    gridtbl <- param (kernel parameters at paramsOffset), cbankstbl (constant banks in global memory)
    smtbl   <- ctatbl <- shared
    ctatbl  <- wptbl  <- lntbl, uregs, upred
    lntbl   <- regs (u32 per register), pred (u32 per predicate), local (sh_addr = lane address),
               bt (the lane's call stack: return addresses, level 0 = the innermost caller)
    global / managed: sh_addr and sh_size place the bytes

Rows grew with the driver (r346 … r575): a reader takes the row size from sh_entsize and reads
the fields that fit in it, newer fields reading as 0 (ROW_SIZES lists the sizes drivers wrote).

In the model a warp is a wave, a CTA a workgroup (its shared memory the `lds`), a grid a dispatch
(grids of every device, wave ids unique across devices); lane registers become the `R0…` vector
layout (lane 0 first), predicates `P0…`, uniform registers `UR0…` and uniform predicates `UP0…`,
local memory the per_lane private memory, lane PCs `lane_pcs`, the backtrace tables each wave's
`return_addresses`, constant banks the dispatch's `const` memory. Section bytes are mapped from the
core file, not copied, except the registers, which are transposed from per-lane to per-register order.

A full GPU holds hundreds of thousands of sections (core_elf.py reads the container in bulk). Opening
reads every warp and lane row into arrays (what the waves table, the focus and the layouts need); a
warp's registers, local memory and backtraces are read when the warp is first looked at.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import numpy as np

from aspace_dap.errors import AspaceError, StateError
from aspace_dap.state.corefiles import BytesSpan, CoreFiles
from aspace_dap.state.formats import is_gzip_file, read_head
from aspace_dap.state.memory import Region, SparseMemory
from aspace_dap.state.model import (Aperture, CodeObjectRef, Dispatch, Fault, Focus, GpuState, Stop, Target, Wave,
                                    WaveHeads, Workgroup, mask_to_lanes)
from aspace_dap.state.private import PER_LANE, PrivateMemory
from aspace_dap.state.registers import RegisterFile
from .core_elf import (EM_CUDA, ELF_MAGIC, ELFOSABI_CUDA, ET_CORE, EXCEPTION_NONE, EXCEPTION_UNKNOWN, EXCEPTIONS,
                       LEFT_OUT, SHT_BT, SHT_CB_TABLE, SHT_CBU_BAR, SHT_CTA_TABLE, SHT_CTX_TABLE, SHT_DEV_TABLE,
                       SHT_ELF_IMG, SHT_GLOBAL, SHT_GRID_TABLE, SHT_LN_TABLE, SHT_LOCAL, SHT_MANAGED, SHT_META,
                       SHT_MOD_TABLE, SHT_NOBITS, SHT_PARAM, SHT_PRED, SHT_REGS, SHT_RELF_IMG, SHT_SHARED,
                       SHT_SM_TABLE, SHT_UPRED, SHT_UREGS, SHT_WP_TABLE, SKIPPED_SPACES, WINDOW_SIZE, CoreElf, Section)

BIG = np.int64(1 << 40)


def is_cuda_core(path: str | os.PathLike) -> bool:
    """True for a file whose ELF header says CUDA core dump (the file may be gzip-compressed)."""
    head = read_head(path)
    return (len(head) == 20 and head[:4] == ELF_MAGIC and head[7] == ELFOSABI_CUDA
            and struct.unpack_from("<HH", head, 16) == (ET_CORE, EM_CUDA))


# ---------------------------------------------------------------------- reading: the model


def load_core(path: str | os.PathLike) -> GpuState:
    """Open a CUDA core dump; raises StateError(message, section name) for the first problem."""
    path = Path(path)
    files = CoreFiles(path, "a CUDA core dump", "aspace-cudacore-")
    try:
        elf_path = files.inflate(path) if is_gzip_file(path) else path
        elf = CoreElf(elf_path, str(path))
        try:
            return _CoreReader(elf, files).build()
        finally:
            elf.close()  # what waves read later, they read by opening the file again
    except BaseException:
        files.close()
        raise


class _Lanes:
    """Every lane row of the core in one array, grouped by warp (warps in wptbl row order) and, within
    a warp, by lane number: what opening needs of 270,000 lanes without a Python object per lane."""

    def __init__(self, elf: CoreElf, lanes: int):
        self.elf = elf
        warp_tables = elf.indices(SHT_WP_TABLE)
        self.warps, warp_bounds = elf.row_array(warp_tables, SHT_WP_TABLE)
        self.warp_start = {int(t): int(b) for t, b in zip(warp_tables, warp_bounds[:-1])}  # wptbl -> first warp
        by_warp = elf.children(SHT_LN_TABLE, SHT_WP_TABLE)  # every lane table's link checked
        lane_tables = by_warp.sections
        rows, bounds = elf.row_array(lane_tables, SHT_LN_TABLE)
        counts = np.diff(bounds)
        table = np.repeat(np.arange(len(lane_tables)), counts)
        self.section = lane_tables[table]                            # each row's lntbl
        self.row_in_table = np.arange(len(rows)) - bounds[:-1][table]
        bad = rows["ln"] >= lanes
        if bad.any():
            i = int(np.argmax(bad))
            raise StateError(f"row {int(self.row_in_table[i])} names lane {int(rows['ln'][i])} of a {lanes}-lane warp",
                             elf.name(int(self.section[i])))
        links = elf.table["link"][self.section].astype(np.int64)
        infos = elf.table["info"][self.section].astype(np.int64)
        first_warp = np.zeros(elf.count, np.int64)  # section index -> its first warp, for the warp tables
        first_warp[warp_tables] = warp_bounds[:-1]
        warp_of = first_warp[links] + infos
        self.warp_count = {int(t): int(b - a) for t, a, b in zip(warp_tables, warp_bounds[:-1], warp_bounds[1:])}
        order = np.lexsort((rows["ln"], warp_of))
        self.rows, self.section, self.row_in_table = rows[order], self.section[order], self.row_in_table[order]
        self.warp_of = warp_of[order]
        n = len(self.warps)
        self.start = np.searchsorted(self.warp_of, np.arange(n))
        self.end = np.searchsorted(self.warp_of, np.arange(n), side="right")
        self.ln = self.rows["ln"].astype(np.int64)
        bit = np.left_shift(np.uint64(1), self.ln.astype(np.uint64))
        self.present = self._per_warp(np.bitwise_or, bit, np.uint64(0))
        valid = self.warps["validLanesMask"].astype(np.uint64)
        self.valid_row = (valid[self.warp_of] >> self.ln.astype(np.uint64)) & np.uint64(1) == 1 if len(self.ln) else \
            np.zeros(0, bool)

    def _per_warp(self, ufunc, values: np.ndarray, empty):
        """ufunc.reduce of `values` over each warp's rows (`empty` for a warp without rows)."""
        out = np.full(len(self.warps), empty, dtype=values.dtype if len(values) else np.asarray(empty).dtype)
        has = self.end > self.start
        if has.any() and len(values):
            out[has] = ufunc.reduceat(values, self.start[has])[: int(has.sum())]
        return out

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Each warp's first row (lowest lane) where `mask` holds, or -1."""
        positions = np.where(mask, np.arange(len(mask)), BIG)
        first = self._per_warp(np.minimum, positions.astype(np.int64), BIG)
        return np.where(first < BIG, first, -1)

    def words(self, kind_sections, size_per_word: int = 4) -> np.ndarray:
        """Words each lane row's section of a kind holds (0 without one)."""
        found = kind_sections.first(self.section, self.row_in_table)
        sizes = np.where(found >= 0, self.elf.table["size"][np.maximum(found, 0)], 0)
        return (sizes // size_per_word).astype(np.int64), found


class _CoreReader:
    def __init__(self, elf: CoreElf, files: CoreFiles):
        self.elf = elf
        self.files = files
        self.layouts: dict[str, list[tuple[str, int]]] = {}
        self.next_wave = 0
        self.lane_exceptions: dict[tuple[int, int], int] = {}  # (wave id, lane) -> CUDBGException_t, when one
        # parent (section, row) -> child sections, each link checked once
        self.per_lane = {kind: elf.children(kind, SHT_LN_TABLE) for kind in (SHT_REGS, SHT_PRED, SHT_LOCAL, SHT_BT)}
        self.uniform = {kind: elf.children(kind, SHT_WP_TABLE) for kind in (SHT_UREGS, SHT_UPRED, SHT_CBU_BAR)}
        self.waves_by_sm: dict[tuple[int, int], list[Wave]] = {}  # (smtbl section, row) -> its warps
        self.error_pcs: dict[int, int] = {}  # wave id -> the warp row's errorPC, when errorPCValid
        self.syscall_waves: list[int] = []  # waves with lanes in a syscall (r575 inSyscallLanesMask)
        self.warp_of_wave: dict[int, int] = {}  # wave id -> its warp (row of the warp arrays)
        self._layout_names: dict[tuple[int, ...], str] = {}
        self.sm_fault: tuple[int, int, int | None] | None = None  # (wave, code, errorPC) of an SM row's exception

    def _table(self, sh_type: int, what: str) -> tuple[Section, list[dict[str, int]]]:
        found = self.elf.of_type(sh_type)
        if not found:
            raise StateError(f"the core has no {what} table", self.elf.label)
        if len(found) > 1 and sh_type == SHT_DEV_TABLE:
            raise StateError(f"{len(found)} device tables; a core has one", found[1].name)
        return found[0], self.elf.rows(found[0])

    def _device_of(self, sec: Section) -> int:
        """The device row a per-device table (ctxtbl, smtbl, gridtbl) belongs to (sh_link / sh_info)."""
        self.elf.parent(sec, SHT_DEV_TABLE)
        return sec.info

    def build(self) -> GpuState:
        elf = self.elf
        dev_sec, devices = self._table(SHT_DEV_TABLE, "device (.cudbg.devtbl)")
        if not devices:
            raise StateError("the device table is empty", dev_sec.name)
        device = devices[0]
        # a machine may hold GPUs of several SM types, each running its own cubins: the target names
        # device 0's, every dispatch its own device's (Dispatch.processor); the warp size is one for all
        if any(d["numLanesPerWarp"] != device["numLanesPerWarp"] for d in devices):
            raise StateError("devices with different warp sizes in one core", dev_sec.name)
        self.devices = devices
        self.lanes = device["numLanesPerWarp"]
        if not 0 < self.lanes <= 64:
            raise StateError(f"numLanesPerWarp {self.lanes} is not a warp size", dev_sec.name)
        self.processors = [elf.string(d["smType"]) or f"sm_{d['smMajor']}{d['smMinor']}" for d in devices]
        self.windows = self._windows()
        # the target's windows are the first context's; a grid whose context differs carries its own
        target = Target("nvidia", self.processors[0], self.lanes, next(iter(self.windows.values()), {}))
        code_objects, modules = self._code_objects()
        memory = self._global_memory()
        self.all_lanes = _Lanes(elf, self.lanes)
        dispatches = self._dispatches(modules, memory.get("global"), target.apertures)
        self.state_waves = [w for d in dispatches for w in d.waves]
        focus, stop = self._focus(dispatches)
        stop.faults = self._faults(focus)
        producer = self._producer()
        warnings = self._left_out(memory)
        not_kept = self._not_kept(focus, stop)
        manifest = {"format": "cuda-core", "producer": producer, "register_layouts":
                    {name: [[reg, size] for reg, size in layout] for name, layout in self.layouts.items()}}
        state = GpuState(root=None, source=self.files.source, producer=producer, manifest=manifest,
                         target=target, code_objects=code_objects, memory=memory, dispatches=dispatches,
                         focus=focus, stop=stop, files=self.files, warnings=warnings, read_heads=self.read_heads)
        state.not_kept = not_kept
        meta = self._meta()
        # what a value in these spaces reads as, when the core left their memory out (its generation flags)
        state.missing_memory = {space: why for flag, (spaces, why) in SKIPPED_SPACES.items()
                                if meta is not None and meta["flags"] & flag for space in spaces}
        return state

    def _faults(self, focus: Focus | None) -> list[Fault]:
        """Every lane's exception, one Fault per warp and code (its lanes as a mask, the warp's errorPC),
        the stop's own first; the SM row's exception when no lane records one (r555+: the warps exited)."""
        masks: dict[tuple[int, int], int] = {}
        for (wave, ln), code in sorted(self.lane_exceptions.items()):
            if code not in (EXCEPTION_NONE, EXCEPTION_UNKNOWN):
                masks[(wave, code)] = masks.get((wave, code), 0) | 1 << ln
        faults = [Fault(wave, code, mask, self.error_pcs.get(wave)) for (wave, code), mask in masks.items()]
        if not faults and self.sm_fault is not None:
            wave, code, pc = self.sm_fault
            faults.append(Fault(wave, code, None, pc))
        if focus is not None:
            faults.sort(key=lambda f: f.wave != focus.wave or not (f.lanes is None or f.lanes >> focus.lane & 1))
        return faults

    def _not_kept(self, focus: Focus | None, stop: Stop | None) -> list[str]:
        """What the core records that a dump folder has no field for: exceptions and error PCs other
        than the stop's, lanes stopped in a syscall, which global ranges were managed memory."""
        out = []
        stopped = (focus.wave, focus.lane) if focus is not None and stop is not None and \
            stop.reason == "exception" else None
        others = [(w, ln, code) for (w, ln), code in sorted(self.lane_exceptions.items())
                  if code not in (EXCEPTION_NONE, EXCEPTION_UNKNOWN) and (w, ln) != stopped]
        if others:
            shown = ", ".join(f"wave {w} lane {ln}: {EXCEPTIONS.get(code, f'exception {code}')}"
                              for w, ln, code in others[:8])
            more = f" and {len(others) - 8} more" if len(others) > 8 else ""
            out.append(f"the exceptions of {len(others)} more lane{'s' if len(others) > 1 else ''} ({shown}{more})")
        pcs = [(w, pc) for w, pc in sorted(self.error_pcs.items())
               if stop is None or stop.pc != pc or focus is None or focus.wave != w]
        if pcs:
            out.append("the error PCs of " + ", ".join(f"wave {w} ({pc:#x})" for w, pc in pcs[:8])
                       + (f" and {len(pcs) - 8} more" if len(pcs) > 8 else ""))
        if self.syscall_waves:
            out.append(f"which lanes were stopped in a syscall (waves {', '.join(map(str, self.syscall_waves[:8]))})")
        if self.elf.of_type(SHT_MANAGED):
            out.append("which global ranges were managed memory (they are kept as global memory)")
        return out

    def _meta(self) -> dict[str, int] | None:
        for sec in self.elf.of_type(SHT_META):
            for meta in self.elf.rows(sec)[:1]:
                return meta
        return None

    def _left_out(self, memory: dict[str, SparseMemory]) -> list[str]:
        """What the driver did not write into the core, so the user knows why values are unavailable."""
        meta = self._meta()
        if meta is not None:
            return [f"the core was written without {what}" for flag, what in LEFT_OUT.items() if meta["flags"] & flag]
        held = [t for t in (SHT_GLOBAL, SHT_MANAGED, SHT_SHARED, SHT_LOCAL) if self.elf.of_type(t)]
        if not held and self.waves_by_sm:
            return ["the core holds no global, shared or local memory (a lightweight core: "
                    "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1); values in memory read as unavailable"]
        return []

    def _producer(self) -> str:
        """"cuda core dump", with the writer and driver versions when the core has metadata (r565+)."""
        meta = self._meta()
        if meta is None:
            return "cuda core dump"
        name = self.elf.string(meta["generatorName"]) or "unnamed writer"
        when = ""
        if meta["timestamp"]:
            when = time.strftime(", written %Y-%m-%d %H:%M:%S UTC", time.gmtime(meta["timestamp"]))
        return (f"cuda core dump by {name}, driver {meta['driverVersionMajor']}.{meta['driverVersionMinor']}, "
                f"CUDA {meta['cudaDriverVersionMajor']}.{meta['cudaDriverVersionMinor']}{when}")

    def _context_device(self, sec: Section) -> int:
        # a context table names its device by sh_link/sh_info; one without a link is device 0's
        return 0 if sec.link == 0 else self._device_of(sec)

    def _windows(self) -> dict[tuple[int, int], dict[str, Aperture]]:
        """Each context's shared and local windows, by (device, contextId): cuda-gdb reads a generic
        address through the windows of the context its grid runs in."""
        out: dict[tuple[int, int], dict[str, Aperture]] = {}
        for sec in self.elf.of_type(SHT_CTX_TABLE):
            dev = self._context_device(sec)
            for row in self.elf.rows(sec):
                windows = {}
                if row["sharedWindowBase"]:
                    windows["shared"] = Aperture(row["sharedWindowBase"], WINDOW_SIZE)
                if row["localWindowBase"]:
                    windows["local"] = Aperture(row["localWindowBase"], WINDOW_SIZE)
                out.setdefault((dev, row["contextId"]), windows)
        return out

    def _code_objects(self) -> tuple[list[CodeObjectRef], dict[tuple[int, int], tuple[int, bytes]]]:
        """One code object per (device, module handle), the relocated image preferred."""
        images: dict[tuple[int, int], tuple[Section, bool]] = {}
        for sh_type, relocated in ((SHT_ELF_IMG, False), (SHT_RELF_IMG, True)):
            for sec in self.elf.of_type(sh_type):
                mod_sec, module = self.elf.parent(sec, SHT_MOD_TABLE)
                ctx_sec, _ = self.elf.parent(mod_sec, SHT_CTX_TABLE)
                key = (self._context_device(ctx_sec), module["moduleHandle"])
                if relocated or key not in images:
                    images[key] = (sec, relocated)
        refs, modules = [], {}
        for co_id, (key, (sec, _)) in enumerate(sorted(images.items())):
            data = self.elf.body(sec)
            if not data.startswith(ELF_MAGIC):
                raise StateError("the embedded cubin is not an ELF image", sec.name)
            name = f"dev{key[0]}-module-{key[1]:x}.cubin" if key[0] else f"module-{key[1]:x}.cubin"
            refs.append(CodeObjectRef(co_id, self.files.write_image(name, data), 0, name))
            modules[key] = (co_id, data)
        return refs, modules

    def _regions(self, sections: list[Section], space: str, path: str, base: int | None = None) -> SparseMemory:
        regions = [Region(s.addr if base is None else base, s.size, s.name, s.offset, span=self.elf.span)
                   for s in sections if s.type != SHT_NOBITS]
        return SparseMemory(regions, space, path)

    def _global_memory(self) -> dict[str, SparseMemory]:
        sections = self.elf.of_type(SHT_GLOBAL) + self.elf.of_type(SHT_MANAGED)
        return {"global": self._regions(sections, "global", ".cudbg.global")} if sections else {}

    def _const_banks(self, table: Section | None, global_memory: SparseMemory | None) -> SparseMemory | None:
        """A grid's constant banks (rows {addr, size, bankId}): each bank's bytes are global memory at
        addr, so they are the parts of the .cudbg.global sections inside it; the rest stays unknown."""
        if table is None:
            return None
        regions = []
        for row_index, row in enumerate(self.elf.rows(table)):
            if row["addr"] + row["size"] > 1 << 64:
                raise StateError(f"row {row_index}: bank {row['bankId']} runs past the address space", table.name)
            start, end = row["addr"], row["addr"] + row["size"]
            for sec in (global_memory.regions if global_memory is not None else []):
                lo, hi = max(start, sec.address), min(end, sec.end)
                if lo < hi:
                    regions.append(Region(lo - start, hi - lo, sec.file, sec.file_offset + lo - sec.address,
                                          bank=row["bankId"], span=sec.span))
        return SparseMemory(regions, "const", table.name)

    def _kernel_name(self, grid: dict[str, int], module: tuple[int, bytes] | None) -> str:
        if module is not None:
            from .cubin import read_cubin_debug, relocate_cubin

            try:
                layout, _ = read_cubin_debug(relocate_cubin(module[1]))
            except AspaceError:
                layout = None
            for function in layout.functions if layout else []:
                if function.start == grid["functionEntry"]:
                    return function.name
        return f"{grid['functionEntry']:#x}"

    def _dispatches(self, modules: dict[tuple[int, int], tuple[int, bytes]],
                    global_memory: SparseMemory | None, target_windows: dict[str, Aperture]) -> list[Dispatch]:
        elf = self.elf
        params = elf.children(SHT_PARAM, SHT_GRID_TABLE)
        banks = elf.children(SHT_CB_TABLE, SHT_GRID_TABLE)
        # (device, gridId64) -> (grid row, param memory, constant banks): grid ids are unique per device
        grids: dict[tuple[int, int], tuple[dict[str, int], SparseMemory | None, SparseMemory | None]] = {}
        for sec in elf.of_type(SHT_GRID_TABLE):
            dev = self._device_of(sec)
            for i, grid in enumerate(elf.rows(sec)):
                found = self._sections(params.get(sec.index, i))
                memory = self._regions(found, "param", found[0].name, grid["paramsOffset"]) if found else None
                bank_tables = self._sections(banks.get(sec.index, i))
                const = self._const_banks(bank_tables[0] if bank_tables else None, global_memory)
                grids.setdefault((dev, grid["gridId64"]), (grid, memory, const))
        workgroups: dict[tuple[int, int], list[Workgroup]] = {}
        shared = elf.children(SHT_SHARED, SHT_CTA_TABLE)
        warps_by_cta = elf.children(SHT_WP_TABLE, SHT_CTA_TABLE)
        sm_devices = {sec.index: self._device_of(sec) for sec in elf.of_type(SHT_SM_TABLE)}
        self._warp_facts()
        cta_tables = elf.indices(SHT_CTA_TABLE)
        cta_rows, cta_bounds = elf.row_array(cta_tables, SHT_CTA_TABLE)
        columns = {name: cta_rows[name].tolist() for name in cta_rows.dtype.names}
        for k, cta_index in enumerate(cta_tables.tolist()):
            cta_sec = elf.section(cta_index)
            sm_sec, _ = elf.parent(cta_sec, SHT_SM_TABLE)
            dev = sm_devices[sm_sec.index]
            for row_index, at in enumerate(range(int(cta_bounds[k]), int(cta_bounds[k + 1]))):
                cta = {name: values[at] for name, values in columns.items()}
                key = (dev, cta["gridId64"])
                if key not in grids:
                    raise StateError(f"CTA row {row_index} names grid {cta['gridId64']}, which the grid "
                                     f"table of device {dev} does not hold", cta_sec.name)
                grid = grids[key][0]
                lds_sections = self._sections(shared.get(cta_sec.index, row_index))
                lds = self._regions(lds_sections, "local", lds_sections[0].name, 0) if lds_sections else None
                waves = []
                for wp in warps_by_cta.get(cta_sec.index, row_index):
                    waves.extend(self._warps(int(wp), grid, dev))
                self.waves_by_sm.setdefault((sm_sec.index, cta_sec.info), []).extend(waves)
                block = (cta["blockIdxX"], cta["blockIdxY"], cta["blockIdxZ"])
                workgroup = Workgroup(block, lds, waves, f"{cta_sec.name}[{row_index}]")
                if _cluster_size(grid) is not None:  # r525+: a cluster launch (sm_90): the block's cluster
                    workgroup.cluster = (cta["clusterIdxX"], cta["clusterIdxY"], cta["clusterIdxZ"])
                workgroups.setdefault(key, []).append(workgroup)
        dispatches = []
        for key, (grid, param, const) in grids.items():
            if key not in workgroups:
                continue
            module = modules.get((key[0], grid["moduleHandle"]))
            memory = {name: m for name, m in (("param", param), ("const", const)) if m is not None}
            where = f"device {key[0]} grid {key[1]}" if len(self.devices) > 1 else f"grid {key[1]}"
            dispatch = Dispatch(
                len(dispatches), self._kernel_name(grid, module), None if module is None else module[0],
                _grid_items(grid), (grid["blockDimX"], grid["blockDimY"], grid["blockDimZ"]), workgroups[key],
                memory, where)
            dispatch.cluster_size = _cluster_size(grid)
            windows = self.windows.get((key[0], grid["contextId"]))
            if windows is not None and windows != target_windows:
                dispatch.apertures = windows
            if len(self.devices) > 1:
                dispatch.device = key[0]
                if self.processors[key[0]] != self.processors[0]:
                    dispatch.processor = self.processors[key[0]]
            dispatches.append(dispatch)
        return dispatches

    def _sections(self, indices) -> list[Section]:
        return [self.elf.section(int(i)) for i in indices]

    # -- warps: what every warp shows is worked out for all at once; a warp's registers, local memory
    #    and backtraces are read when it is first looked at
    def _warp_facts(self) -> None:
        lanes = self.all_lanes
        warps = lanes.warps
        valid = warps["validLanesMask"].astype(np.uint64)
        missing = valid & ~lanes.present
        if missing.any():
            w = int(np.argmax(missing != 0))
            ln = int(np.flatnonzero(mask_to_lanes(int(missing[w]), 64))[0])
            raise StateError(f"valid lane {ln} has no lane table row", self._warp_where(w))
        active = warps["activeLanesMask"].astype(np.uint64) & valid
        shift = lanes.ln.astype(np.uint64)
        active_row = (active[lanes.warp_of] >> shift) & np.uint64(1) == 1 if len(shift) else np.zeros(0, bool)
        first = lanes.first_where(active_row)
        first = np.where(first >= 0, first, lanes.first_where(lanes.valid_row))
        pcs = lanes.rows["virtualPC"]
        self.warp_pc = np.where(first >= 0, pcs[np.maximum(first, 0)] if len(pcs) else 0, warps["errorPC"])
        self.warp_active = active
        # register counts: what every valid lane holds (a warp without valid lanes: what its lanes hold)
        self.counts = {}
        for kind in (SHT_REGS, SHT_PRED):
            words, _ = lanes.words(self.per_lane[kind])
            held = lanes._per_warp(np.minimum, np.where(lanes.valid_row, words, BIG), BIG)
            some = lanes._per_warp(np.minimum, np.where(words > 0, words, BIG), BIG)
            self.counts[kind] = np.where(held < BIG, held, np.where(some < BIG, some, 0))
        links, infos = self._warp_keys()
        for kind, sections in self.uniform.items():
            found = sections.first(links, infos)
            sizes = np.where(found >= 0, self.elf.table["size"][np.maximum(found, 0)], 0)
            self.counts[kind] = (sizes // 4).astype(np.int64)
        self._check_local_windows()
        _, bt = lanes.words(self.per_lane[SHT_BT], 1)
        self.has_backtrace = (lanes._per_warp(np.maximum, (bt >= 0).astype(np.int8), np.int8(0)) > 0).tolist()
        codes = lanes.rows["exception"]
        self.exception_rows = np.flatnonzero((codes != EXCEPTION_NONE) & (codes != EXCEPTION_UNKNOWN))
        self.exceptions_of: dict[int, list[tuple[int, int]]] = {}  # warp -> (lane, code) of its lanes' exceptions
        for row in self.exception_rows.tolist():
            self.exceptions_of.setdefault(int(lanes.warp_of[row]), []).append((int(lanes.ln[row]), int(codes[row])))
        # what each warp's wave needs at once, as plain lists
        self.column = {name: warps[name].tolist()
                       for name in ("warpId", "errorPC", "errorPCValid", "inSyscallLanesMask")}
        self.count_lists = {kind: values.tolist() for kind, values in self.counts.items()}
        has = lanes.end > lanes.start
        first = np.where(has, lanes.start, 0)
        rows = lanes.rows[first] if len(lanes.rows) else np.zeros(len(warps), lanes.rows.dtype)
        self.first_lane = (has.tolist(), rows["threadIdxX"].tolist(), rows["threadIdxY"].tolist(),
                           rows["threadIdxZ"].tolist(), rows["ln"].tolist())

    def _check_local_windows(self) -> None:
        """Each warp's local memory (its lanes' sh_addr ranges) lies within one local window."""
        lanes, table = self.all_lanes, self.elf.table
        _, found = lanes.words(self.per_lane[SHT_LOCAL], 1)
        held = found >= 0
        at = np.maximum(found, 0)
        low = lanes._per_warp(np.minimum, np.where(held, table["addr"][at], np.uint64(2**64 - 1)), np.uint64(2**64 - 1))
        high = lanes._per_warp(np.maximum, np.where(held, table["addr"][at] + table["size"][at], np.uint64(0)),
                               np.uint64(0))
        wide = (high > low) & (high - np.minimum(low, high) > np.uint64(WINDOW_SIZE))
        if wide.any():
            w = int(np.argmax(wide))
            rows = [r for r in range(int(lanes.start[w]), int(lanes.end[w])) if held[r]]
            base = int(low[w])
            far = max(rows, key=lambda r: abs(int(table["addr"][found[r]]) - base))
            raise StateError(f"the warp's local memory sections span {int(high[w]) - base:#x} bytes (sh_addr {base:#x} "
                             f"to {int(table['addr'][found[far]]):#x}), more than the {WINDOW_SIZE:#x}-byte local "
                             f"window", self.elf.name(int(found[far])))

    def _warp_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """(wptbl section, row) of every warp, in warp order."""
        if not hasattr(self, "_keys"):
            lanes = self.all_lanes
            links = np.zeros(len(lanes.warps), np.int64)
            infos = np.zeros(len(lanes.warps), np.int64)
            starts = sorted(lanes.warp_start.items(), key=lambda kv: kv[1])
            for n, (table, start) in enumerate(starts):
                end = starts[n + 1][1] if n + 1 < len(starts) else len(lanes.warps)
                links[start:end] = table
                infos[start:end] = np.arange(end - start)
            self._keys = (links, infos)
        return self._keys

    def _warp_where(self, w: int) -> str:
        links, _ = self._warp_keys()
        return f"{self.elf.name(int(links[w]))}[warp {int(self.all_lanes.warps['warpId'][w])}]"

    def _warps(self, wp_index: int, grid: dict[str, int], dev: int) -> list[Wave]:
        lanes = self.all_lanes
        start = lanes.warp_start[wp_index]
        name = self.elf.name(wp_index)
        device = self.devices[dev]  # register counts are the warp's own device's
        waves = []
        column, counts_of = self.column, self.count_lists
        for w in range(start, start + lanes.warp_count[wp_index]):
            where = f"{name}[warp {column['warpId'][w]}]"
            wave_id = self.next_wave
            self.next_wave += 1
            self.warp_of_wave[wave_id] = w
            counts = (min(counts_of[SHT_REGS][w], device["numRegsPerLane"]),
                      min(counts_of[SHT_PRED][w], device["numPredicatesPrLane"]),
                      counts_of[SHT_UREGS][w], counts_of[SHT_UPRED][w], counts_of[SHT_CBU_BAR][w])
            layout_name = self._layout(counts)
            for ln, code in self.exceptions_of.get(w, ()):
                self.lane_exceptions[(wave_id, ln)] = code
            if column["errorPCValid"][w]:
                self.error_pcs[wave_id] = column["errorPC"][w]
            if column["inSyscallLanesMask"][w]:
                self.syscall_waves.append(wave_id)
            wave = Wave.deferred(wave_id, self._index_in_block(w, grid), self.lanes, where,
                                 self._warp_loader(w, wp_index, counts, layout_name, where),
                                 returns_pending=self.has_backtrace[w])
            waves.append(wave)
        return waves

    def _layout(self, counts: tuple[int, ...]) -> str:
        """The register layout of a warp holding these many R, P, UR, UP and B registers (named once)."""
        name = self._layout_names.get(counts)
        if name is not None:
            return name
        n_r, n_p, n_ur, n_up, n_b = counts
        name = self._layout_names[counts] = f"cuda_r{n_r}_p{n_p}_ur{n_ur}_up{n_up}" + (f"_b{n_b}" if n_b else "")
        if name not in self.layouts:
            lanes = self.lanes
            layout = [("pc", 8), ("exec", (lanes + 7) // 8)]
            layout += [(f"R{i}", 4 * lanes) for i in range(n_r)] + [(f"P{i}", lanes) for i in range(n_p)]
            layout += [(f"UR{i}", 4) for i in range(n_ur)] + [(f"UP{i}", 1) for i in range(n_up)]
            layout += [(f"B{i}", 4) for i in range(n_b)]  # convergence barriers: a mask of lanes each
            self.layouts[name] = layout
        return name

    def _index_in_block(self, w: int, grid: dict[str, int]) -> int:
        # the lane table's thread index says where the warp sits in its block (warpId is the SM's slot)
        has, tx, ty, tz, ln = self.first_lane  # the warp's lowest lane
        if not has[w]:
            return self.column["warpId"][w]
        bx, by = max(grid["blockDimX"], 1), max(grid["blockDimY"], 1)
        flat = tx[w] + bx * (ty[w] + by * tz[w])
        return max(flat - ln[w], 0) // self.lanes

    def _warp_loader(self, w: int, wp_index: int, counts: tuple[int, ...], layout_name: str, where: str):
        def load(wave: Wave) -> list:
            return self._load_warp(wave, w, wp_index, counts, layout_name, where)
        return load

    def _load_warp(self, wave: Wave, w: int, wp_index: int, counts, layout_name: str, where: str) -> list:
        lanes = self.all_lanes
        n_lanes = self.lanes
        rows = range(int(lanes.start[w]), int(lanes.end[w]))
        valid = mask_to_lanes(int(lanes.warps["validLanesMask"][w]), n_lanes)
        warp_pc = int(self.warp_pc[w])
        pcs = np.full(n_lanes, warp_pc, dtype=np.uint64)
        for r in rows:
            if valid[lanes.ln[r]]:
                pcs[lanes.ln[r]] = lanes.rows["virtualPC"][r]
        for r in rows:  # an invalid lane keeps the PC its row gives (the warp's when it has none)
            if not valid[lanes.ln[r]]:
                pcs[lanes.ln[r]] = lanes.rows["virtualPC"][r]
        pcs[~valid] = warp_pc
        n_r, n_p, n_ur, n_up, n_b = counts
        regs = self._lane_words(SHT_REGS, rows, n_r, "<u4")
        preds = self._lane_words(SHT_PRED, rows, n_p, "<u4")
        links, infos = self._warp_keys()
        uregs, upreds, barriers = (self._uniform_words(kind, int(links[w]), int(infos[w]), n)
                                   for kind, n in ((SHT_UREGS, n_ur), (SHT_UPRED, n_up), (SHT_CBU_BAR, n_b)))
        mask_bytes = (n_lanes + 7) // 8
        data = (warp_pc.to_bytes(8, "little") + int(self.warp_active[w]).to_bytes(mask_bytes, "little")
                + np.ascontiguousarray(regs.T).tobytes()
                + np.ascontiguousarray((preds.T & 0xFF).astype(np.uint8)).tobytes() + uregs.tobytes()
                + (upreds & 0xFF).astype(np.uint8).tobytes() + barriers.tobytes())
        registers = RegisterFile(self.layouts[layout_name], BytesSpan(data), f"{where}.registers", layout_name)
        if wave._returns_pending:
            wave.return_addresses = self._return_addresses(rows)
        return [registers, valid, self._local(rows, where), pcs]

    def _lane_words(self, kind: int, rows: range, n: int, dtype: str) -> np.ndarray:
        """(lanes, n) u32 per lane from the per-lane sections of a kind (lanes without one read 0)."""
        out = np.zeros((self.lanes, n), dtype=dtype)
        if not n:
            return out
        lanes = self.all_lanes
        found = self.per_lane[kind].first(lanes.section[rows.start:rows.stop], lanes.row_in_table[rows.start:rows.stop])
        for r, sec in zip(rows, found):
            if sec >= 0:
                size = int(self.elf.table["size"][sec])
                body = self.elf.read(int(self.elf.table["offset"][sec]), min(size, 4 * n))
                values = np.frombuffer(body[:len(body) // 4 * 4], dtype="<u4")
                out[lanes.ln[r], :len(values)] = values
        return out

    def _uniform_words(self, kind: int, link: int, info: int, n: int) -> np.ndarray:
        found = self.uniform[kind].get(link, info)
        if not len(found) or not n:
            return np.zeros(0, dtype="<u4")
        sec = self.elf.section(int(found[0]))
        return np.frombuffer(self.elf.body(sec)[:sec.size // 4 * 4], dtype="<u4")

    def _return_addresses(self, rows: range) -> dict[int, list[int]] | None:
        """Each lane's call stack from its backtrace table: virtual return addresses by level (level 0
        is the innermost caller), None when the core has no backtrace tables for this warp."""
        lanes = self.all_lanes
        found = {}
        bt = self.per_lane[SHT_BT]
        for r in rows:
            for sec in self._sections(bt.get(int(lanes.section[r]), int(lanes.row_in_table[r]))):
                levels = {}
                for row in self.elf.rows(sec):
                    levels.setdefault(row["level"], row["virtualReturnAddress"])
                if sorted(levels) != list(range(len(levels))):
                    raise StateError(f"backtrace levels {sorted(levels)} are not 0..{len(levels) - 1}", sec.name)
                found[int(lanes.ln[r])] = [levels[k] for k in range(len(levels))]
        return found or None

    def _local(self, rows: range, where: str) -> PrivateMemory | None:
        lanes = self.all_lanes
        found = {}
        local = self.per_lane[SHT_LOCAL]
        for r in rows:
            sections = local.get(int(lanes.section[r]), int(lanes.row_in_table[r]))
            if len(sections):
                found[int(lanes.ln[r])] = self.elf.section(int(sections[0]))
        if not found:
            return None
        base = min(s.addr for s in found.values())
        lane_size = max(s.addr + s.size for s in found.values()) - base
        if lane_size > WINDOW_SIZE:
            far = max(found.values(), key=lambda s: abs(s.addr - base))
            raise StateError(f"the warp's local memory sections span {lane_size:#x} bytes (sh_addr {base:#x} to "
                             f"{far.addr:#x}), more than the {WINDOW_SIZE:#x}-byte local window", far.name)
        secs = [found.get(ln) for ln in range(self.lanes)]
        contiguous = all(s is not None and s.addr == base and s.size == lane_size and
                         s.offset == secs[0].offset + ln * lane_size for ln, s in enumerate(secs))
        if contiguous:
            # the usual layout (and the writer's): one mapped region for the whole warp
            regions = [Region(0, lane_size * self.lanes, secs[0].name, secs[0].offset, span=self.elf.span)]
        else:
            regions = [Region(ln * lane_size + s.addr - base, s.size, s.name, s.offset, span=self.elf.span)
                       for ln, s in found.items() if s.size]
        view = SparseMemory(regions, "private_wave", f"{where}.local")
        return PrivateMemory(PER_LANE, lane_size * self.lanes, self.lanes, view, base, f"{where}.local")

    def read_heads(self, pc_name: str, exec_name: str | None) -> WaveHeads:
        """pc, active lanes and valid lanes of every warp from the tables read at open."""
        waves = self.state_waves
        if (pc_name, exec_name) != ("pc", "exec"):
            return WaveHeads.of_waves(waves, range(len(waves)))
        rows = np.array([self.warp_of_wave[w.id] for w in waves], np.int64)
        warps = self.all_lanes.warps
        n = len(waves)
        return WaveHeads(self.warp_pc[rows].astype(np.uint64), np.ones(n, bool), self.warp_active[rows],
                         np.ones(n, bool), warps["validLanesMask"][rows].astype(np.uint64), np.ones(n, bool))

    def _focus(self, dispatches: list[Dispatch]) -> tuple[Focus | None, Stop | None]:
        waves = self.state_waves
        lanes = self.all_lanes
        faulted = []
        for row in self.exception_rows:
            if lanes.valid_row[row]:
                faulted.append((int(lanes.warp_of[row]), int(lanes.ln[row]), int(lanes.rows["exception"][row])))
        order = {self.warp_of_wave[w.id]: (n, w) for n, w in enumerate(waves)}
        faulted = sorted((order[w][0], ln, code) for w, ln, code in faulted if w in order)
        if faulted:
            n, ln, code = faulted[0]
            wave = waves[n]
            name = EXCEPTIONS.get(code, f"exception {code}")
            # warp errors are reported late: the lanes stand past the faulting instruction, which
            # the warp row's errorPC names (cuda-gdb: "the exception was triggered at PC ...")
            error_pc = self.error_pcs.get(wave.id)
            at = f" triggered at PC {error_pc:#x}" if error_pc is not None else ""
            return Focus(wave.id, ln), Stop("exception", f"CUDA Exception: {name} ({code}){at}", pc=error_pc)
        # r555+: an SM row keeps the exception even when the faulting warps exited (no lane says so);
        # the focus goes to a warp of that SM whose errorPC is valid, else its first warp
        for (sm_sec, sm_row), on_sm in self.waves_by_sm.items():
            row = self.elf.rows(self.elf.section(sm_sec))[sm_row]
            code = row["exception"]
            if code in (EXCEPTION_NONE, EXCEPTION_UNKNOWN) or not on_sm:
                continue
            wave = next((w for w in on_sm if w.id in self.error_pcs), on_sm[0])
            active = np.flatnonzero(wave.active_lanes)
            lane = int(active[0]) if len(active) else int(np.flatnonzero(wave.valid_lanes)[0]) \
                if wave.valid_lanes.any() else 0
            name = EXCEPTIONS.get(code, f"exception {code}")
            device = f" of device {self.elf.section(sm_sec).info}" if len(self.devices) > 1 else ""
            where = f" at {row['errorPC']:#x}" if row["errorPCValid"] else ""
            self.sm_fault = (wave.id, code, row["errorPC"] if row["errorPCValid"] else None)
            if row["clusterExceptionTargetBlockIdxValid"]:  # r565: a cluster request to another block failed
                where += (f", target block ({row['clusterExceptionTargetBlockIdxX']},"
                          f"{row['clusterExceptionTargetBlockIdxY']},{row['clusterExceptionTargetBlockIdxZ']})")
            return Focus(wave.id, lane), Stop("exception", f"CUDA Exception: {name} ({code}) on SM {row['smId']}"
                                              f"{device}{where}", pc=row["errorPC"] if row["errorPCValid"] else None)
        for wave in waves:
            active = int(self.warp_active[self.warp_of_wave[wave.id]])
            if active:
                lane = (active & -active).bit_length() - 1
                return Focus(wave.id, lane), Stop("pause", "CUDA core dump: no lane reports an exception")
        return (Focus(waves[0].id, 0) if waves else None), Stop("pause", "CUDA core dump")


def _cluster_size(grid: dict[str, int]) -> tuple[int, int, int] | None:
    """The grid's thread block cluster shape (r525+, sm_90+); None for a launch without clusters
    (every dimension 1, or 0 in rows that predate the field)."""
    size = (grid["clusterDimX"], grid["clusterDimY"], grid["clusterDimZ"])
    return None if all(n <= 1 for n in size) else size


def _grid_items(grid: dict[str, int]) -> tuple[int, int, int]:
    """A grid row's size in work-items (docs/STATE_FORMAT.md, "dispatch"): the core records gridDim in
    blocks of blockDim threads."""
    return tuple(int(grid[f"gridDim{a}"]) * int(grid[f"blockDim{a}"]) for a in "XYZ")  # type: ignore[return-value]
