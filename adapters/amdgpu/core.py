"""ROCm GPU core dumps: read one (ROCr's `gpucore.<pid>`, a rocgdb `gcore`, a `coremerge`d host core)
into a GpuState, and write one from a GpuState.

The file is an ELF64 ET_CORE. Its NT_AMDGPU_CORE_STATE note ("AMDGPU", type 33) is the KFD debug
snapshot: runtime info, one entry per agent (GPU), one per queue; every size comes from the note's
header. PT_LOAD segments hold memory at its GPU (flat) virtual address. Waves are not in the
notes: each queue's context-save area, in that memory, holds a control stack and one save record
per wave (adapters/amdgpu/cwsr.py knows the per-generation layout; each queue follows its own agent's, as a
host may have GPUs of several kinds). The rest is found the way
ROCdbgapi finds it:

    queue.read_pointer_address - 0x80   -> amd_queue_t: compute_tmpring_size, scratch backing memory
    ttmp6 / ttmp11 of a wave            -> dispatch packet index in the queue's ring
    the AQL dispatch packet             -> grid and workgroup sizes, kernel descriptor address
    ttmp8..10, ttmp11                   -> workgroup id, wave position in the workgroup
    runtime_info.r_debug                -> r_debug -> link_map: loaded code objects and their bias

Register files and memory are mapped from the core file, not copied. Bytes the core does not
hold (a segment cut short, a data-less segment of a host core) are unavailable.
"""

from __future__ import annotations

import bisect
import os
import struct
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap import limits
from aspace_dap.errors import AspaceError, StateError
from aspace_dap.paths import PathRefused, open_regular
from aspace_dap.state.corefiles import BytesSpan, CoreFiles
from aspace_dap.state.files import FileSpan
from aspace_dap.state.memory import Region, SparseMemory
from aspace_dap.state.model import (Aperture, CodeObjectRef, Dispatch, Focus, GpuState, Stop, Target, Wave, WaveHeads,
                                    Workgroup)
from aspace_dap.state.private import SWIZZLED, PrivateMemory
from aspace_dap.state.registers import RegisterFile

from . import cwsr
from .exceptions import trap_instruction_pc

from .core_elf import detect  # noqa: F401  (state/formats.py asks this module: detect, load_core)
from .core_elf import (AMD_QUEUE_FROM_READ_POINTER, AQL_PACKET, AQL_PACKET_SIZE, DEBUG_PROP_TTMPS_ALWAYS_VALID,
                       KFD_QUEUE_TYPE_COMPUTE_AQL, LINK_MAP, MAX_CONTROL_STACK, PT_LOAD, QUEUE_ID_ERROR,
                       QUEUE_ID_INVALID, R_DEBUG, R_DEBUG_CONSISTENT, RUNTIME_ENABLED, CoreElf, _exceptions,
                       parse_note)


# ---------------------------------------------------------------------- files kept open


class _SliceSpan(FileSpan):
    """Part of the core file's mapping (a wave's save record): a view, never a copy."""

    def __init__(self, parent: FileSpan, offset: int, length: int):
        super().__init__(lambda: (parent.location()[0], parent.location()[1] + offset), length)
        self._parent = parent
        self._offset = offset

    @property
    def array(self) -> np.ndarray:
        return self._parent.array[self._offset:self._offset + self.length]


# ---------------------------------------------------------------------- reading


def load_core(path: str | os.PathLike, *, search_paths: list[str] | None = None) -> GpuState:
    """Open a ROCm GPU core; raises StateError(message, structure) for the first problem."""
    path = Path(path)
    files = CoreFiles(path, "a ROCm GPU core", "aspace-rocmcore-")
    try:
        reader = _Reader(CoreElf(path), files)
        reader._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return reader.build()
        finally:
            os.close(reader._fd)
    except BaseException:
        files.close()
        raise


def _slice(memory: SparseMemory, start: int, size: int, space: str, path: str) -> SparseMemory:
    """[start, start+size) of `memory` as its own space starting at 0 (mapped, not copied)."""
    regions = []
    for r in memory.regions:
        lo, hi = max(r.address, start), min(r.end, start + size)
        if lo < hi:
            regions.append(Region(lo - start, hi - lo, r.file, r.file_offset + lo - r.address, span=r.span))
    return SparseMemory(regions, space, path)


@dataclass
class _QueueWaves:
    queue: dict[str, int]
    agent: dict[str, int]
    processor: str
    records: list = field(default_factory=list)


class _Reader:
    def __init__(self, elf: CoreElf, files: CoreFiles):
        self.elf = elf
        self.files = files
        self.layouts: dict[str, list[tuple[str, int]]] = {}
        self.warnings: list[str] = []
        self.wave_status: dict[int, tuple[int, int]] = {}  # wave id -> (ttmp6, trapsts)
        self.register_templates: dict[tuple, RegisterFile] = {}
        self.heads: dict[int, tuple[int, int, int]] = {}  # wave id -> (pc, exec, lanes) from its hwregs
        self._loaded_objects: dict[int, list] = {}  # code object id -> its builds, parsed once
        self._fd = -1

    # -- memory
    def _memory(self) -> SparseMemory:
        regions = []
        for seg in self.elf.segments:
            if seg.type != PT_LOAD or seg.filesz == 0:
                continue  # a data-less segment (a host core before coremerge): its bytes are unknown
            if seg.filesz > seg.memsz:
                raise StateError(f"p_filesz {seg.filesz:#x} exceeds p_memsz {seg.memsz:#x}",
                                 f"program header {seg.index} (PT_LOAD)")
            if seg.vaddr + seg.filesz > 1 << 64:
                raise StateError(f"segment at {seg.vaddr:#x} wraps past the top of the address space",
                                 f"program header {seg.index} (PT_LOAD)")
            regions.append(Region(seg.vaddr, seg.filesz, f"program header {seg.index}", seg.offset, span=self.elf.span))
        regions.sort(key=lambda r: r.address)
        for a, b in zip(regions, regions[1:]):
            if b.address < a.end:
                raise StateError(f"{b.file} (at {b.address:#x}) overlaps {a.file} (ends at {a.end:#x})", b.file)
        return SparseMemory(regions, "global", "PT_LOAD")

    def _known_prefix(self, address: int, size: int) -> int:
        """How many bytes from `address` the core holds without a gap (nothing is read)."""
        at, end = address, address + size
        for r in self.memory.regions:
            if r.address <= at < r.address + r.available:
                at = min(end, r.address + r.available)
                if at == end:
                    break
            elif r.address > at:
                break
        return at - address

    def read(self, address: int, size: int, what: str) -> bytes:
        known = self._known_prefix(address, size)
        if known < size:
            missing = address + known
            raise StateError(f"{what}: {size} bytes at {address:#x} are not in the core (byte {missing:#x} is "
                             f"missing). ROCr's gpucore keeps only GPU mappings; open the rocgdb gcore or the "
                             f"coremerge'd host+GPU core, which hold host memory too", what)
        return self.memory.read(address, size)[0].tobytes()

    def try_read(self, address: int, size: int) -> bytes | None:
        if self._known_prefix(address, size) < size:
            return None
        return self.memory.read(address, size)[0].tobytes()

    # -- the whole state
    def build(self) -> GpuState:
        if self.elf.note is None:
            raise StateError("the core has no NT_AMDGPU_CORE_STATE note (name \"AMDGPU\", type 33); a file cut "
                             "short before its notes cannot be read", "PT_NOTE")
        self.note = parse_note(self.elf.note)
        self.memory = self._memory()
        self._region_starts = [r.address for r in self.memory.regions]
        if self.note.runtime["runtime_state"] != RUNTIME_ENABLED:
            raise StateError(f"runtime_state {self.note.runtime['runtime_state']}: the ROCm runtime had not enabled "
                             f"debugging (1), so the saved waves cannot be trusted", "NT_AMDGPU_CORE_STATE runtime_info")
        agents = {a["gpu_id"]: a for a in self.note.agents}
        if not agents:
            raise StateError("the note lists no agents", "NT_AMDGPU_CORE_STATE agents")
        queues = [q for q in self.note.queues if not q["queue_id"] & QUEUE_ID_INVALID
                  and q["queue_type"] == KFD_QUEUE_TYPE_COMPUTE_AQL]
        for i, q in enumerate(queues):
            if q["gpu_id"] not in agents:
                raise StateError(f"queue {q['queue_id'] & 0x3FFFFFFF} names gpu_id {q['gpu_id']}, which no agent entry "
                                 f"has", f"NT_AMDGPU_CORE_STATE queues[{i}]")
            # a host with GPUs of several kinds: each queue's save area follows its own agent's layout
            processor = processor_name(agents[q["gpu_id"]])
            if cwsr.family_for(processor) is None:
                raise StateError(f"{processor} (gpu_id {q['gpu_id']}): no context-save layout known (supported: "
                                 f"{', '.join(cwsr.SUPPORTED)})", "NT_AMDGPU_CORE_STATE agents gfx_target_version")
        self.code_objects = self._code_objects()
        waves_by_queue = [self._queue_records(q, agents[q["gpu_id"]], i) for i, q in enumerate(queues)]
        dispatches, dispatch_agents = self._dispatches(waves_by_queue)
        if not dispatches:
            raise StateError("no waves are saved in any queue's context-save area", "NT_AMDGPU_CORE_STATE queues")
        # the target is the first dispatch's GPU; a dispatch on a GPU of another kind names its own
        processor = dispatches[0].processor
        target = Target("amd", processor, dispatches[0].waves[0].lanes, self._apertures(dispatch_agents[0]))
        several = len(self.note.agents) > 1
        for d, agent in zip(dispatches, dispatch_agents):
            if d.processor == processor:
                d.processor = None
            if several:  # which GPU of the node ran it: its agent's place in the note
                d.device = next(i for i, a in enumerate(self.note.agents) if a["gpu_id"] == agent["gpu_id"])
            apertures = self._apertures(agent)
            d.apertures = apertures if apertures != target.apertures else None
        focus, stop = self._focus(dispatches, queues, list(agents.values()))
        manifest = {"format": "rocm-core", "producer": "ROCm GPU core", "register_layouts":
                    {name: [[reg, size] for reg, size in layout] for name, layout in self.layouts.items()}}
        state = GpuState(root=None, source=self.files.source, producer="ROCm GPU core", manifest=manifest,
                         target=target, code_objects=[ref for ref, _ in self.code_objects],
                         memory={"global": self.memory}, dispatches=dispatches, focus=focus, stop=stop,
                         files=self.files, warnings=self.warnings, read_heads=self.read_heads)
        self.state_waves = state.waves
        return state

    @staticmethod
    def _apertures(agent: dict[str, int]) -> dict[str, Aperture]:
        out = {}
        for name, base, limit in (("local", agent["lds_base"], agent["lds_limit"]),
                                  ("private", agent["scratch_base"], agent["scratch_limit"])):
            if base and limit > base:
                out[name] = Aperture(base, limit - base + 1)
        return out

    # -- code objects from the runtime's r_debug
    def _code_objects(self) -> list[tuple[CodeObjectRef, object]]:
        address = self.note.runtime["r_debug"]
        where = "r_debug"
        if not address or self.try_read(address, R_DEBUG.size) is None:
            # ROCr's own gpucore holds GPU memory only: the runtime's r_debug lives in host memory
            self.warnings.append(f"the core does not hold the runtime's r_debug (at {address:#x}), so it does not "
                                 f"say which code objects were loaded: name the kernel's code object with "
                                 f"codeObject, or open the rocgdb gcore / coremerge'd host+GPU core")
            return []
        version, _, r_map, _, r_state, _, _ = R_DEBUG.unpack(self.read(address, R_DEBUG.size, where))
        if not 8 <= version <= 10:
            raise StateError(f"r_version {version}; ROCr writes 8 to 10", where)
        if r_state != R_DEBUG_CONSISTENT:
            raise StateError(f"r_state {r_state}: the code-object list was being changed when the core was "
                             f"written", where)
        out: list[tuple[CodeObjectRef, object]] = []
        seen = set()
        node = r_map
        while node:
            if node in seen or len(seen) > 4096:
                raise StateError(f"link_map list loops back to {node:#x}", "link_map")
            seen.add(node)
            l_addr, l_name, _, l_next, _ = LINK_MAP.unpack(self.read(node, LINK_MAP.size, f"link_map at {node:#x}"))
            uri = self._c_string(l_name, f"link_map at {node:#x} l_name")
            out.append(self._code_object(len(out), uri, l_addr))
            node = l_next
        return out

    def _c_string(self, address: int, what: str, limit: int = 4096) -> str:
        data, valid = self.memory.read(address, limit)
        known = data[:int(np.argmin(valid))] if not valid.all() else data
        end = bytes(known).find(b"\0")
        if end < 0:
            raise StateError(f"string at {address:#x} is not in the core or not terminated", what)
        return bytes(known[:end]).decode("utf-8", "replace")

    def _code_object(self, co_id: int, uri: str, l_addr: int) -> tuple[CodeObjectRef, object]:
        scheme, location, offset, size = parse_uri(uri)
        name = f"code-object-{co_id}.co"
        if scheme == "memory":
            if size is None or size <= 0 or size > 1 << 32:
                raise StateError(f"{uri}: a memory:// code object needs a size", "link_map l_name")
            data = self.read(offset, size, f"code object {uri}")
            return CodeObjectRef(co_id, self.files.write_image(name, data), l_addr, uri), data
        path = Path(location)
        try:
            # the path policy's open: a regular file (a FIFO or a device could block or never end), within
            # the code object size limit
            fd, file_size = open_regular(path, "code object", limits.MAX_CODE_OBJECT_BYTES,
                                         "MAX_CODE_OBJECT_BYTES")
            with os.fdopen(fd, "rb") as f:
                f.seek(offset)
                data = f.read(min(size, file_size) if size else file_size)
        except (PathRefused, OSError, ValueError, OverflowError):
            return self._unreadable(co_id, uri, path, l_addr)
        if size and len(data) < size:
            return self._unreadable(co_id, uri, path, l_addr)
        from aspace_dap.codeobj import load_code_objects

        try:  # parsed now, not when a kernel is looked for: what is not a code object says no more than a missing file
            objects = load_code_objects(data, name=str(path))
        except AspaceError:
            return self._unreadable(co_id, uri, path, l_addr)
        self._loaded_objects[co_id] = objects
        if offset == 0 and (not size or size == file_size):
            return CodeObjectRef(co_id, path, l_addr, uri), data
        return CodeObjectRef(co_id, self.files.write_image(name, data), l_addr, uri), data

    def _unreadable(self, co_id: int, uri: str, path: Path, l_addr: int) -> tuple[CodeObjectRef, None]:
        """A code object file the link map names, outside what the user opened, that gives no code object:
        one message whatever the reason, so that a core cannot tell which files exist and what they hold.
        The session says which file to supply; launch's codeObject supplies it."""
        self.warnings.append(f"code object {uri}: no code object could be read from {path} (missing, unreadable, "
                             f"not a regular file, over MAX_CODE_OBJECT_BYTES, shorter than the link map says or "
                             f"not a code object); supply it with codeObject")
        return CodeObjectRef(co_id, path, l_addr, uri), None

    def _kernel(self, kernel_object: int, processor: str) -> tuple[str, int | None]:
        """The kernel whose descriptor (`name.kd`) is at `kernel_object`, and its code object id. A build
        for the queue's own processor wins: code objects for GPUs of other kinds may be loaded at the same
        addresses (each GPU has its own)."""
        from aspace_dap.codeobj import load_code_objects

        found = []
        for ref, data in self.code_objects:
            if data is None:
                continue
            objects = self._loaded_objects.get(ref.id)
            if objects is None:
                try:
                    objects = load_code_objects(data, name=ref.manifest_path)
                except AspaceError:
                    objects = []
                self._loaded_objects[ref.id] = objects
            for co in objects:
                for sym in co.symbols.values():
                    if sym.name.endswith(".kd") and sym.value + ref.load_address == kernel_object:
                        found.append((getattr(co, "processor", None) != processor, sym.name[:-3], ref.id))
        if found:
            _, name, co_id = min(found, key=lambda f: f[0])  # stable: the first of the best
            return name, co_id
        # no loaded code object holds it: the one whose file is missing, if there is exactly one
        missing = [ref for ref, data in self.code_objects if data is None]
        return f"kernel descriptor {kernel_object:#x}", (missing[0].id if len(missing) == 1 else None)

    # -- waves
    def _queue_records(self, queue: dict[str, int], agent: dict[str, int], index: int) -> _QueueWaves:
        processor = processor_name(agent)
        family = cwsr.family_for(processor)
        out = _QueueWaves(queue, agent, processor)
        xccs = max(agent["num_xcc"], 1)
        if xccs > 64:
            raise StateError(f"num_xcc {agent['num_xcc']} is not a GPU's XCC count", "NT_AMDGPU_CORE_STATE agents")
        for xcc in range(xccs):
            base = queue["ctx_save_restore_address"] + xcc * queue["ctx_save_restore_area_size"]
            where = f"queue {queue['queue_id'] & 0x3FFFFFFF} context-save area (XCC {xcc}) at {base:#x}"
            header = struct.unpack(cwsr.HEADER, self.read(base, cwsr.HEADER_SIZE, where))
            cs_offset, cs_size, ws_offset, ws_size = header[:4]
            area = queue["ctx_save_restore_area_size"]
            if cs_size % 4 or cs_offset + cs_size > area or ws_offset > area or ws_size > ws_offset:
                raise StateError(f"header sizes do not fit the {area}-byte area (control stack {cs_offset:#x}+"
                                 f"{cs_size:#x}, wave state ends {ws_offset:#x} size {ws_size:#x})", where)
            if cs_offset + cs_size != ws_offset - ws_size:
                raise StateError("the control stack and the wave save area are not contiguous", where)
            if not cs_size:
                continue
            if cs_size > MAX_CONTROL_STACK:
                raise StateError(f"control stack of {cs_size} bytes; a queue's is at most {MAX_CONTROL_STACK}", where)
            raw = self.read(base + cs_offset, cs_size, f"{where} control stack")
            words = list(struct.unpack(f"<{cs_size // 4}I", raw))
            try:
                records = cwsr.iterate_control_stack(family, words, base + ws_offset, base + ws_offset - ws_size)
            except ValueError as exc:
                raise StateError(str(exc), f"{where} control stack") from None
            bottom = base + ws_offset - ws_size
            if (records[-1].begin if records else base + ws_offset) != bottom:
                raise StateError("the control stack's waves do not fill the wave save area exactly "
                                 "(corrupted control stack)", where)
            out.records += [(xcc, r) for r in records]
        return out

    def _register_span(self, start: int, size: int) -> FileSpan:
        for r in self.memory.regions:
            if r.address <= start < r.end:
                if start + size <= r.end:
                    offset = r.file_offset + start - r.address
                    return _SliceSpan(self.elf.span, offset, max(0, min(size, self.elf.file_size - offset)))
                break
        data, valid = self.memory.read(start, size)
        known = size if valid.all() else int(np.argmin(valid))
        return BytesSpan(data[:known].tobytes())

    def _scratch(self, queue_info: dict, record, xcc: int, where: str) -> PrivateMemory | None:
        if not record.scratch_enabled:
            return None
        amd_queue = queue_info.get("amd_queue")
        if amd_queue is None:
            return None
        tmpring, backing = amd_queue
        agent = queue_info["agent"]
        engines = agent["array_count"] // max(agent["simd_arrays_per_engine"], 1) // max(agent["num_xcc"], 1)
        offset, size = cwsr.scratch_slot(record.family, tmpring, record, engines, xcc)
        if not size or not backing:
            return None
        view = _slice(self.memory, backing + offset, size, "private_wave", f"{where}.scratch")
        return PrivateMemory(SWIZZLED, size, record.lanes, view, 0, f"{where}.scratch")

    def _dispatches(self, queues: list[_QueueWaves]) -> tuple[list[Dispatch], list[dict[str, int]]]:
        """The dispatches (each with its queue's processor) and, for each, the agent that ran it.

        Only each record's hardware registers and ttmps are read here (pread, not through the memory map:
        a map's fault-around would make every record's neighbourhood resident); a wave's register file,
        scratch and its workgroup's LDS are built when first used."""
        runtime = self.note.runtime
        dispatches: dict[tuple[int, int], dict] = {}
        used_ids: set[int] = set()
        next_id = [0]
        pending: list[tuple[dict, Wave, tuple[int, int, int], tuple | None]] = []
        for qw in queues:
            q = qw.queue
            qname = f"queue {q['queue_id'] & 0x3FFFFFFF}"
            ttmps_valid = bool(runtime["ttmp_setup"]) or bool(qw.agent["debug_prop"] & DEBUG_PROP_TTMPS_ALWAYS_VALID)
            if qw.records and not ttmps_valid:
                raise StateError("trap temporaries were not set up (runtime_info.ttmp_setup 0): the workgroup and "
                                 "dispatch of each wave are unknown", "NT_AMDGPU_CORE_STATE runtime_info")
            info = {"agent": qw.agent, "amd_queue": self._amd_queue(q)}
            lds_of_group: tuple | None = None
            count = cwsr.HWREG_COUNT + cwsr.TTMP_COUNT
            for n, (xcc, record) in enumerate(qw.records):
                where = f"{qname} wave record {n}"
                if record.first_wave and record.lds_size:
                    lds_of_group = (record.lds_address, record.lds_size, f"{where}.lds")
                elif record.first_wave:
                    lds_of_group = None
                hwregs = self._dwords_at(record.hwregs_address, count)
                if hwregs is None:
                    raise StateError("the wave's hardware and trap registers are not in the core (file cut short?)",
                                     where)
                ttmp = hwregs[cwsr.HWREG_COUNT:]
                spi_disabled = bool(ttmp[6] & cwsr.TTMP6_SPI_TTMPS_DISABLED)
                family = record.family  # the queue's agent's layout
                if family.gfx942_ttmps:  # gfx942 marks it only once the trap handler set ttmp11[31]
                    spi_disabled = spi_disabled and bool(ttmp[11] & cwsr.TTMP11_GFX942_TTMPS_SETUP)
                if spi_disabled:
                    self.warnings.append(f"{where}: left out: its workgroup and dispatch are not recorded "
                                         f"(ttmp6 bit 31: trap temporaries not set up for this wave)")
                    continue
                # gfx11: a wave that released its VGPRs (status.no_vgprs) saved none
                vgprs_saved = not (family.name == "gfx11" and hwregs[cwsr.HWREG_STATUS] & cwsr.STATUS_GFX11_NO_VGPRS)
                template = self._template(record, vgprs_saved, f"{where}.registers")
                if family.gfx942_ttmps:
                    packet = (ttmp[11] >> cwsr.TTMP11_GFX942_PACKET_SHIFT) & ((1 << 25) - 1)
                    wave_id = ttmp[4] | ttmp[5] << 32 if ttmp[11] & cwsr.TTMP11_GFX942_TTMPS_SETUP else None
                else:
                    packet = ttmp[6] & cwsr.TTMP6_PACKET_ID_MASK
                    wave_id = ttmp[4] | ttmp[5] << 32
                if wave_id is None or wave_id in used_ids or wave_id >= 1 << 31:  # (thread ids stay int32)
                    while next_id[0] in used_ids:
                        next_id[0] += 1
                    wave_id = next_id[0]
                used_ids.add(wave_id)
                key = (id(qw), packet)
                if key not in dispatches:
                    dispatches[key] = self._dispatch_entry(q, packet, qname, qw.processor)
                    dispatches[key]["agent"] = qw.agent
                group = (ttmp[8], ttmp[9], ttmp[10])
                wave = Wave.deferred(wave_id, ttmp[11] & cwsr.TTMP11_WAVE_IN_GROUP_MASK, record.lanes, where,
                                     self._wave_loader(record, template, info, xcc, where))
                self.wave_status[wave_id] = (ttmp[6], hwregs[cwsr.HWREG_TRAPSTS])
                # the PC and execution mask the waves table shows, without building the wave (hwregs 1-2, 3-4)
                exec_mask = hwregs[3] | (hwregs[4] << 32 if record.lanes == 64 else 0)
                self.heads[wave_id] = (hwregs[1] | hwregs[2] << 32, exec_mask, record.lanes)
                pending.append((dispatches[key], wave, group, lds_of_group))
        out = []
        members: dict[int, list] = {}
        for entry_wave in pending:
            members.setdefault(id(entry_wave[0]), []).append(entry_wave)
        for number, entry in enumerate(dispatches.values()):
            groups: dict[tuple[int, int, int], Workgroup] = {}
            for _, wave, group, lds in members.get(id(entry), []):
                wg = groups.get(group)
                if wg is None:
                    wg = groups[group] = Workgroup(group, None, [], f"{entry['where']} workgroup {group}",
                                                   lds_loader=self._lds_loader(lds))
                wg.waves.append(wave)
            dispatch = Dispatch(number, entry["kernel"], entry["code_object"], entry["grid"], entry["workgroup"],
                                list(groups.values()), {}, entry["where"], kernel_descriptor=entry["descriptor"])
            dispatch.processor = entry["processor"]
            out.append(dispatch)
        return out, [entry["agent"] for entry in dispatches.values()]

    def _lds_loader(self, lds: tuple | None):
        def load():
            return None if lds is None else _slice(self.memory, lds[0], lds[1], "local", lds[2])
        return load

    def _wave_loader(self, record, template: RegisterFile, info: dict, xcc: int, where: str):
        def load(wave: Wave) -> list:
            span = self._register_span(record.begin, record.register_bytes)
            registers = template.with_span(span, f"{where}.registers")
            return [registers, np.ones(record.lanes, dtype=bool), self._scratch(info, record, xcc, where), None]
        return load

    def _dwords_at(self, address: int, count: int) -> list[int] | None:
        """`count` dwords at `address` of the core's memory, read from the file; None where not held."""
        regions = self.memory.regions
        i = bisect.bisect_right(self._region_starts, address) - 1
        size = 4 * count
        if i >= 0 and address + size <= regions[i].address + regions[i].available:
            data = os.pread(self._fd, size, regions[i].file_offset + address - regions[i].address)
            if len(data) == size:
                return list(struct.unpack(f"<{count}I", data))
        data = self.try_read(address, size)
        return None if data is None else list(struct.unpack(f"<{count}I", data))

    def read_heads(self, pc_name: str, exec_name: str | None) -> WaveHeads:
        """pc and exec of every wave from the save records' hardware registers, read at open."""
        waves = self.state_waves
        if (pc_name, exec_name) != ("pc", "exec"):
            return WaveHeads.of_waves(waves, range(len(waves)))
        n = len(waves)
        heads = WaveHeads(np.zeros(n, np.uint64), np.ones(n, bool), np.zeros(n, np.uint64), np.ones(n, bool),
                          np.zeros(n, np.uint64), np.zeros(n, bool))
        for row, wave in enumerate(waves):
            pc, exec_mask, lanes = self.heads[wave.id]
            heads.pc[row], heads.exec[row] = pc, exec_mask
            heads.valid[row] = (1 << lanes) - 1
        return heads

    def _template(self, record, vgprs_saved: bool, path: str) -> RegisterFile:
        """The record shape's register file without bytes: one layout (and its offsets) per shape."""
        key = (record.family.name, record.state, record.lanes, vgprs_saved)
        template = self.register_templates.get(key)
        if template is None:
            layout = record.layout(vgprs_saved)
            name = f"rocm_{record.family.name}_w{record.lanes}_{zlib.crc32(repr(layout).encode()):08x}"
            self.layouts.setdefault(name, layout)
            template = self.register_templates[key] = RegisterFile(layout, None, path, name)
        return template

    def _amd_queue(self, q: dict[str, int]) -> tuple[int, int] | None:
        base = q["read_pointer_address"] - AMD_QUEUE_FROM_READ_POINTER
        data = self.try_read(base + 0x8C, 4 + 16 + 8)   # compute_tmpring_size .. scratch_backing_memory_location
        if data is None:
            return None
        tmpring, = struct.unpack_from("<I", data, 0)
        backing, = struct.unpack_from("<Q", data, 20)
        return tmpring, backing

    def _dispatch_entry(self, q: dict[str, int], packet: int, qname: str, processor: str) -> dict:
        where = f"{qname} dispatch packet {packet}"
        ring = q["ring_size"]
        if not ring or packet * AQL_PACKET_SIZE >= ring:
            raise StateError(f"packet index {packet} is outside the {ring}-byte ring", where)
        raw = self.read(q["ring_base_address"] + packet * AQL_PACKET_SIZE, AQL_PACKET_SIZE, where)
        fields = AQL_PACKET.unpack(raw)
        workgroup = tuple(fields[2:5])
        grid = tuple(fields[6:9])
        kernel_object = fields[11]
        kernel, co_id = self._kernel(kernel_object, processor)
        return {"kernel": kernel, "code_object": co_id, "grid": grid, "workgroup": workgroup, "where": where,
                "descriptor": kernel_object, "processor": processor}

    def _focus(self, dispatches: list[Dispatch], queues: list[dict], agents: list[dict]) -> tuple[Focus, Stop]:
        waves = [w for d in dispatches for w in d.waves]
        reasons = []
        for q in queues:
            names = _exceptions(q["exception_status"])
            if names or q["queue_id"] & QUEUE_ID_ERROR:
                reasons.append(f"queue {q['queue_id'] & 0x3FFFFFFF}: {', '.join(names) or 'error'}")
        for a in agents:
            names = _exceptions(a["exception_status"])
            if names:
                reasons.append(f"GPU {a['gpu_id']}: {', '.join(names)}")

        def first_lane(wave: Wave) -> int:
            active = np.flatnonzero(wave.active_lanes)
            return int(active[0]) if len(active) else 0

        for wave in waves:
            trapsts = self.wave_status[wave.id][1]
            faults = [n for bit, n in ((cwsr.TRAPSTS_MEM_VIOL, "memory violation"),
                                       (cwsr.TRAPSTS_ILLEGAL_INST, "illegal instruction")) if trapsts & bit]
            if faults:
                return Focus(wave.id, first_lane(wave)), Stop("exception", "; ".join(
                    [f"wave {wave.id}: {', '.join(faults)}"] + reasons))
        for wave in waves:
            ttmp6 = self.wave_status[wave.id][0]
            trap = cwsr.TRAP_IDS.get((ttmp6 >> cwsr.TTMP6_TRAP_ID_SHIFT) & 0xF)
            if ttmp6 & cwsr.TTMP6_STOPPED and trap:
                reason = "breakpoint" if trap == "breakpoint" else "exception"
                # the stop names the s_trap, one instruction before the PC the trap handler left
                return Focus(wave.id, first_lane(wave)), Stop(reason, "; ".join([f"wave {wave.id}: {trap}"] + reasons),
                                                              pc=trap_instruction_pc(wave.pc, ttmp6))
        if reasons:
            return Focus(waves[0].id, first_lane(waves[0])), Stop("exception", "; ".join(reasons))
        return Focus(waves[0].id, first_lane(waves[0])), Stop("pause", "ROCm GPU core: no queue or wave reports "
                                                              "an exception")


def processor_name(agent: dict[str, int]) -> str:
    return cwsr.processor_from_target_version(agent["gfx_target_version"])


def parse_uri(uri: str) -> tuple[str, str, int, int | None]:
    """(scheme, path or pid, offset, size) of a loaded code object's URI, parsed as ROCgdb's solib-rocm
    does: the path runs to the first '#' or '?', is %-decoded, and `offset=`/`size=` follow, '&'-separated,
    as C integers (0x for hex); a size of 0 is invalid, none means the rest of the file."""
    where = "link_map l_name"
    scheme, sep, rest = uri.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("file", "memory"):
        raise StateError(f"code object URI {uri!r}: only file:// and memory:// are known", where)
    cut = min((i for i in (rest.find("#"), rest.find("?")) if i >= 0), default=len(rest))
    location = urllib.parse.unquote(rest[:cut]) if scheme == "file" else rest[:cut]
    params = dict(token.split("=", 1) for token in rest[cut + 1:].split("&") if "=" in token)
    try:
        offset = int(params.get("offset", "0"), 0)
        size = int(params["size"], 0) if "size" in params else None
    except ValueError:
        raise StateError(f"code object URI {uri!r}: offset and size must be numbers", where) from None
    if offset < 0 or (size is not None and size <= 0):
        raise StateError(f"code object URI {uri!r}: a negative offset or a size that is not positive", where)
    return scheme, location, offset, size
