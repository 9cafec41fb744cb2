"""Writes ROCm GPU cores from a state, laid out as ROCr and the trap handler lay them out."""

from __future__ import annotations

import os
import struct
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.memory import SparseMemory
from aspace_dap.state.model import Dispatch, GpuState
from aspace_dap.state.private import SWIZZLED
from . import cwsr
from .machine import Gpu, gpu_for
from .core_elf import (AGENT_ENTRY, AQL_PACKET, AQL_PACKET_SIZE, ELFOSABI_AMDGPU_HSA, ELF_MAGIC, EM_AMDGPU, EM_X86_64,
                       ET_CORE, KFD_QUEUE_TYPE_COMPUTE_AQL, LINK_MAP, NOTE_HEADER, NOTE_VERSION, NT_AMDGPU_CORE_STATE,
                       PT_LOAD, PT_NOTE, QUEUE_ENTRY, QUEUE_ID_ERROR, RUNTIME_ENABLED, RUNTIME_INFO, R_DEBUG,
                       R_DEBUG_CONSISTENT)


# ---------------------------------------------------------------------- writing

HOST_BASE = 0x7FFD00000000      # host memory: r_debug, link_map, URIs, memory:// images
QUEUE_BASE = 0x7FFB00000000     # GPU-mapped system memory (a render-node mapping): the AQL ring, amd_queue_t
SAVE_AREA_BASE = 0x7FFE00000000  # the queue's context-save area
SCRATCH_BASE = 0x7FFC00000000    # the queue's scratch backing memory
GPU_ID = 0x1F2E
QUEUE_ID = 1
PAGE = 4096


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class _HostMemory:
    """A bump allocator for the host-side structures the writer lays out."""

    def __init__(self, base: int):
        self.base = base
        self.data = bytearray()

    def put(self, payload: bytes, align: int = 8) -> int:
        self.data += b"\0" * (-len(self.data) % align)
        at = self.base + len(self.data)
        self.data += payload
        return at

    def patch(self, address: int, payload: bytes) -> None:
        at = address - self.base
        self.data[at:at + len(payload)] = payload


def _known(memory: SparseMemory | None, address: int, size: int) -> bytes:
    """The bytes; unknown ones as zeros (a save area or scratch slot has no way to say "unknown")."""
    if memory is None:
        return bytes(size)
    data, valid = memory.read(address, size)
    data[~valid] = 0
    return data.tobytes()


def _register_index(names: list[str], prefix: str) -> int:
    numbers = [int(n[len(prefix):]) for n in names if n.startswith(prefix) and n[len(prefix):].isdigit()]
    return max(numbers) + 1 if numbers else 0


def write_rocm_core(state: GpuState, path: str | os.PathLike, *, code_object_uri: str = "memory",
                    host_core: bool = False, gpu_only: bool = False, exception_wave: int | None = None,
                    load_bias: int = 0, pid: int = 4242, gpus: dict[str, Gpu] | None = None,
                    queues_per_agent: int = 1, exception_trapsts: int | None = None,
                    exception_trap_id: int | None = None) -> Path:
    """Write `state` (an AMD state) as a ROCm GPU core, laid out the way ROCr and the save handler do.

    One agent per GPU: per `dispatch.device` when the dispatches name their devices, else one per kind
    of GPU the dispatches ran on (a dispatch's `processor`, else the target's). Each GPU is `gpus[processor]`
    (machine.GPUS by default: its XCCs, compute units and shader engines). An agent's dispatches are
    spread over `queues_per_agent` AQL queues (dispatch k on queue k mod n), each queue with its ring of
    dispatch packets, its amd_queue_t, and one context-save area per XCC, sized as libhsakmt sizes it:
    the workgroups of a queue go to its XCCs in turn (as the hardware hands them out), every wave saved
    in that GPU's record layout (gfx90a/gfx942/gfx1030/gfx1100) with LDS beside each workgroup's first
    wave, and swizzled scratch in the queue's scratch backing memory at the wave's slot. The host
    structures a rocgdb gcore holds come too: r_debug, link_map (`memory://` images in the core, or
    `file://` URIs naming the dump's code-object files). `host_core` writes an x86-64 core (as
    `coremerge` leaves it) instead of an EM_AMDGPU one. `gpu_only` leaves host memory out, as ROCr's own
    gpucore does (it copies only the render-node mappings). `exception_wave` marks that wave's TRAPSTS,
    its queue and its agent with a memory violation; otherwise a dump stopped at a breakpoint marks its
    focus wave's ttmp6 with the breakpoint trap. `exception_trapsts` is the TRAPSTS `exception_wave` gets
    instead of MEM_VIOL alone (a page fault: MEM_VIOL | XNACK_ERROR); with it, every wave whose TRAPSTS
    (its own, or this) holds MEM_VIOL or ILLEGAL_INST also gets ttmp6's stopped bit, as the trap handler
    leaves a wave it halted on an exception. `exception_trap_id` makes `exception_wave`'s exception the
    s_trap of that id instead (2: the assert trap of `__builtin_trap()`): its ttmp6 stopped with the trap
    id saved, its TRAPSTS as the dump has it, its queue and agent marked with the trap handler's queue
    error for it (wave abort for trap 2, wave trap otherwise); the wave's pc is the dump's, which for a
    real trap is one s_trap past it (the trap handler advances it). `load_bias` moves the code objects (and each wave's pc, but
    no other register, so use it only with waves stopped in their kernel).

    A save record holds every register: registers the dump does not have are written as zeros,
    and so are unknown bytes of LDS and scratch. Waves that do not fit their GPU (more than an XCC's
    wave slots or save area) are refused, naming the queue and XCC.
    """
    path = Path(path)
    target = state.target
    if target.vendor != "amd":
        raise StateError(f"a ROCm GPU core holds AMD state, not {target.vendor}", "target.vendor")
    if code_object_uri not in ("memory", "file"):
        raise StateError("code_object_uri is 'memory' or 'file'", "code_object_uri")
    if queues_per_agent < 1:
        raise StateError("queues_per_agent is at least 1", "queues_per_agent")
    agents_of = _agents(state)
    machines: list[Gpu] = []
    for (_, processor), dispatches in agents_of.items():
        where = "target.processor" if processor == target.processor else f"{dispatches[0].path}.processor"
        family = cwsr.family_for(processor)
        gpu = (gpus or {}).get(processor) or gpu_for(processor)
        if family is None or gpu is None:
            raise StateError(f"{processor}: no context-save layout known (supported: "
                             f"{', '.join(cwsr.SUPPORTED)})", where)
        lanes = {w.lanes for d in dispatches for w in d.waves} | ({target.lanes} if processor == target.processor
                                                                  else set())
        for n in lanes:
            if n not in (32, 64) or (n == 32 and not family.wave32_capable):
                raise StateError(f"{n}-lane waves do not exist on {processor}",
                                 "target.lanes" if processor == target.processor else where)
        machines.append(gpu)
    for space in state.memory:
        if space != "global":
            raise StateError(f"{space} memory has no place in a ROCm GPU core", f"memory.{space}")
    host = _HostMemory(HOST_BASE)
    queue_memory = _HostMemory(QUEUE_BASE)
    segments: list[tuple[int, list[bytes] | bytes]] = []
    global_memory = state.memory.get("global")
    for start, size in (global_memory.ranges() if global_memory is not None else []):
        data, valid = global_memory.read(start, size)
        known = size if valid.all() else int(np.argmin(valid))
        if known:
            segments.append((start, data[:known].tobytes()))

    # code objects and the runtime's link map
    from aspace_dap.codeobj import load_code_objects

    kd_address: dict[tuple[int, str | None, str], int] = {}  # (code object, build's processor, kernel)
    link_nodes = []
    for ref in state.code_objects:
        image = ref.path.read_bytes()
        l_addr = ref.load_address + load_bias
        if code_object_uri == "memory":
            at = host.put(image, PAGE)
            uri = f"memory://{pid}#offset={at:#x}&size={len(image)}"
        else:
            uri = f"file://{urllib.parse.quote(str(ref.path.resolve()))}#offset=0&size={len(image)}"
        for co in load_code_objects(image, name=ref.path.name):
            for sym in co.symbols.values():
                if sym.name.endswith(".kd"):
                    kd_address[(ref.id, getattr(co, "processor", None), sym.name[:-3])] = sym.value + l_addr
                    kd_address.setdefault((ref.id, None, sym.name[:-3]), sym.value + l_addr)
        link_nodes.append((l_addr, host.put(uri.encode() + b"\0")))
    node_addresses = [host.put(bytes(LINK_MAP.size)) for _ in link_nodes]
    for i, ((l_addr, name_at), at) in enumerate(zip(link_nodes, node_addresses)):
        nxt = node_addresses[i + 1] if i + 1 < len(node_addresses) else 0
        prev = node_addresses[i - 1] if i else 0
        host.patch(at, LINK_MAP.pack(l_addr, name_at, 0, nxt, prev))
    r_debug = host.put(R_DEBUG.pack(9, 0, node_addresses[0] if node_addresses else 0, 0, R_DEBUG_CONSISTENT, 0, 0))

    agent_size = 128  # newer KFDs append capability2 and padding: the reader steps by the header's size
    agents, queues, scratch_segments = [], [], []
    save_at, scratch_at = SAVE_AREA_BASE, SCRATCH_BASE
    queue_id = QUEUE_ID
    for n_agent, (((_, processor), dispatches), gpu) in enumerate(zip(agents_of.items(), machines)):
        if n_agent and not dispatches:
            continue
        apertures = (dispatches[0].apertures if dispatches and dispatches[0].apertures is not None
                     else target.apertures) or {}
        gpu_id = GPU_ID + n_agent
        agent_faulted = False
        count = max(1, min(queues_per_agent, len(dispatches)))
        for n_queue in range(count):
            on_queue = dispatches[n_queue::count]
            queue = _write_queue(state, gpu, on_queue, kd_address, queue_memory, save_at, scratch_at,
                                 exception_wave, load_bias, f"agent {n_agent} queue {n_queue}", exception_trapsts,
                                 exception_trap_id)
            # the exception's queue, else (a wave not in the core) the first agent's first queue
            faulted = exception_wave is not None and (queue.holds_exception or n_agent == 0 and n_queue == 0
                                                      and not any(w.id == exception_wave for w in state.waves))
            agent_faulted |= faulted
            # the trap handler's queue error: wave memory violation (5), wave abort (1, trap 2), wave trap (2)
            code = 5 if exception_trap_id is None else 1 if exception_trap_id == 2 else 2
            status = (1 << (code - 1)) if faulted else 0
            queues.append(QUEUE_ENTRY.pack(status, queue.ring_at, queue.amd_queue_at + 56, queue.amd_queue_at + 0x80,
                                           save_at, queue_id | (QUEUE_ID_ERROR if faulted else 0), gpu_id,
                                           queue.ring_size, KFD_QUEUE_TYPE_COMPUTE_AQL, gpu.area_size, 0))
            queue_id += 1
            segments += queue.save_segments
            save_at += _align(queue.total_size, PAGE)
            if queue.scratch:
                scratch_segments.append((scratch_at, queue.scratch))
                scratch_at += _align(len(queue.scratch), PAGE)
        local, private = apertures.get("local"), apertures.get("private")
        topology = gpu.agent_fields()
        agents.append(AGENT_ENTRY.pack(
            (1 << (code - 1)) if agent_faulted else 0, local.base if local else 0,
            local.base + local.size - 1 if local else 0,
            private.base if private else 0, private.base + private.size - 1 if private else 0,
            0, (1 << 47) - 1, gpu_id, n_agent, 0x1002, 0x740F, 0, 0, 0, 0, cwsr.target_version(processor),
            topology["simd_count"], topology["max_waves_per_simd"], topology["array_count"],
            topology["simd_arrays_per_engine"], topology["num_xcc"], 0, 0) + bytes(agent_size - AGENT_ENTRY.size))

    # the note
    runtime = RUNTIME_INFO.pack(r_debug, RUNTIME_ENABLED, 1)

    def padded(b: bytes) -> bytes:
        return b + bytes(-len(b) % 8)

    desc = (NOTE_HEADER.pack(NOTE_VERSION, 1, 16, len(runtime), len(agents), agent_size, len(queues),
                             QUEUE_ENTRY.size)
            + padded(runtime) + padded(b"".join(agents)) + padded(b"".join(queues)))
    notes = b""
    if host_core:  # a host core's own notes come first; the reader must look past them
        notes += struct.pack("<III", 5, 136, 3) + b"CORE\0\0\0\0" + bytes(136)
    notes += struct.pack("<III", 7, len(desc), NT_AMDGPU_CORE_STATE) + b"AMDGPU\0\0" + padded(desc)

    if not gpu_only:
        segments.append((HOST_BASE, bytes(host.data)))
    segments.append((QUEUE_BASE, bytes(queue_memory.data)))
    segments.sort(key=lambda s: s[0])
    # last in the file, so a core cut short loses scratch first (as a size limit would)
    segments += scratch_segments
    _write_elf(path, notes, segments, EM_X86_64 if host_core else EM_AMDGPU)
    return path


def _agents(state: GpuState) -> dict[tuple[int | None, str], list[Dispatch]]:
    """(device, processor) -> its dispatches, the target's GPU first: one agent each. Dispatches that name
    no device are one agent per kind of GPU."""
    target = state.target
    out: dict[tuple[int | None, str], list[Dispatch]] = {}
    by_device = any(d.device is not None for d in state.dispatches)
    if not by_device:
        out[(None, target.processor)] = []
    for d in sorted(state.dispatches, key=lambda d: (d.device or 0) if by_device else 0):
        processor = d.processor or target.processor
        key = (d.device or 0, processor) if by_device else (None, processor)
        if by_device and any(k[0] == key[0] and k[1] != processor for k in out):
            raise StateError(f"device {key[0]} runs dispatches for two processors", d.path)
        out.setdefault(key, []).append(d)
    return out


@dataclass
class _WrittenQueue:
    ring_at: int
    ring_size: int
    amd_queue_at: int
    save_segments: list           # (address, chunks) per XCC: header through the top of its wave records
    total_size: int               # the whole allocation: every XCC's area and the debugger's memory
    scratch: bytes
    holds_exception: bool


@dataclass
class _XccArea:
    words: list = field(default_factory=lambda: [0, 0])  # the two PM4 words the handler skips
    records: list = field(default_factory=list)           # (body, lds) from the top record down
    slot: int = 0                                         # the next free wave slot
    record_bytes: int = 0


def _record_plan(record: cwsr.WaveRecord, layout: tuple, path: str, processor: str):
    """How a wave's register file maps into a save record: the record's size and slot offsets, and runs
    (source offset, record offset, length) that copy the file's registers in a few slices."""
    offsets = {}
    at = 0
    for name, size in record.layout():
        offsets[name] = (at, size)
        at += size
    runs: list[list[int]] = []
    src = 0
    for name, size in layout:
        if name not in offsets or offsets[name][1] != size:
            raise StateError(f"register {name} ({size} bytes) has no place in a {processor} save record", path)
        dst = offsets[name][0]
        if runs and runs[-1][0] + runs[-1][2] == src and runs[-1][1] + runs[-1][2] == dst:
            runs[-1][2] += size
        else:
            runs.append([src, dst, size])
        src += size
    return offsets, [tuple(r) for r in runs]


def _record_body(w, record: cwsr.WaveRecord, plan, load_bias: int) -> bytearray:
    """The record's register bytes from the wave's register file (unknown bytes as zeros)."""
    offsets, runs = plan
    body = bytearray(record.register_bytes)
    registers = w.registers
    span = registers._span
    if span is not None and not registers.modified:
        data = span.array
        known = min(span.length, registers.total_size)
        for src, dst, size in runs:
            take = max(0, min(size, known - src))
            if take:
                body[dst:dst + take] = data[src:src + take].tobytes()
    else:
        for name, _ in registers.layout:
            raw, valid = registers.raw(name)
            raw = raw.copy()
            raw[~valid] = 0
            o, size = offsets[name]
            body[o:o + size] = raw.tobytes()
    if "pc" in registers.names and load_bias:
        o, _ = offsets["pc"]
        pc = int.from_bytes(body[o:o + 8], "little")
        body[o:o + 8] = ((pc + load_bias) & (2**64 - 1)).to_bytes(8, "little")
    return body


def _write_queue(state: GpuState, gpu: Gpu, dispatches: list[Dispatch], kd_address: dict,
                 queue_memory: _HostMemory, save_at: int, scratch_at: int, exception_wave: int | None,
                 load_bias: int, qname: str,
                 exception_trapsts: int | None = None, exception_trap_id: int | None = None) -> _WrittenQueue:
    """One AQL queue of `gpu`: its ring and amd_queue_t in `queue_memory`, a context-save area per XCC (to be
    placed from `save_at`) in the GPU's layout, and the scratch backing memory (at `scratch_at`)."""
    family = gpu.family
    processor = gpu.processor
    # the queue: ring of dispatch packets and amd_queue_t
    ring_size = max(_align(len(dispatches) * AQL_PACKET_SIZE, PAGE), PAGE)
    ring = bytearray(ring_size)
    for n, d in enumerate(dispatches):
        kd = 0
        if d.code_object is not None:
            kd = kd_address.get((d.code_object, processor, d.kernel)) or kd_address.get((d.code_object, None, d.kernel))
            if not kd:
                raise StateError(f"kernel {d.kernel} has no descriptor symbol ({d.kernel}.kd) in its code object",
                                 d.path)
        AQL_PACKET.pack_into(ring, n * AQL_PACKET_SIZE, 2 | (1 << 8), 3, *d.workgroup_size, 0, *d.grid_size,
                             0, 0, kd, 0, 0, 0)
    ring_at = queue_memory.put(bytes(ring), PAGE)
    amd_queue_at = queue_memory.put(bytes(256), 64)

    waves = [w for d in dispatches for w in d.waves]
    (_, _), unit = cwsr.tmpring_fields(family)
    wavesize = max([_align(w.private.size, unit) for w in waves if w.private is not None] or [0])
    for w in waves:
        if w.private is not None and w.private.layout != SWIZZLED:
            raise StateError("a ROCm core holds scratch swizzled (the hardware's layout)", w.private.path)
    per_engine = gpu.slots_per_engine
    if per_engine > 1 << (family.scoreboard_bits[1] - family.scoreboard_bits[0] + 1) or \
            gpu.shader_engines_per_xcc > 1 << (family.se_bits[1] - family.se_bits[0] + 1):
        raise StateError(f"{processor} with {gpu.cus_per_xcc} CUs in {gpu.shader_engines_per_xcc} shader engines "
                         f"has more wave slots than a save record's wave word can number", qname)
    slots = per_engine * gpu.shader_engines_per_xcc   # scratch wave slots of one XCC
    tmpring = cwsr.tmpring_size(family, gpu.scratch_waves, wavesize) if wavesize else 0
    xcc_scratch = slots * wavesize
    amd_queue = bytearray(256)
    struct.pack_into("<Q", amd_queue, 56, len(dispatches))                  # write_dispatch_id
    struct.pack_into("<Q", amd_queue, 0x80, 0)                              # read_dispatch_id
    struct.pack_into("<I", amd_queue, 0x8C, tmpring)                        # compute_tmpring_size
    struct.pack_into("<QQ", amd_queue, 0xA0, scratch_at if wavesize else 0, gpu.xccs * xcc_scratch)
    queue_memory.patch(amd_queue_at, bytes(amd_queue))

    # each XCC's control stack and records (top record = first control-stack wave); workgroups go to the
    # XCCs in turn, each workgroup's waves to consecutive slots of one shader engine
    areas = [_XccArea() for _ in range(gpu.xccs)]
    scratch = bytearray(gpu.xccs * xcc_scratch)
    plans: dict[tuple, tuple] = {}
    holds_exception = False
    n_group = 0
    for n_d, d in enumerate(dispatches):
        for wg in d.workgroups:
            if not wg.waves:
                continue
            xcc = n_group % gpu.xccs
            n_group += 1
            area = areas[xcc]
            where = f"{qname} XCC {xcc}"
            if len(wg.waves) > per_engine:
                raise StateError(f"workgroup {wg.id} has {len(wg.waves)} waves, more than a shader engine's "
                                 f"{per_engine} slots", wg.path)
            if area.slot % per_engine + len(wg.waves) > per_engine:  # a workgroup stays on one shader engine
                area.slot += per_engine - area.slot % per_engine
            if area.slot + len(wg.waves) > min(slots, gpu.wave_slots):
                raise StateError(f"{len(waves)} waves on {where}: more than its {min(slots, gpu.wave_slots)} wave "
                                 f"slots ({gpu.cus_per_xcc} CUs); spread them over more queues or GPUs", wg.path)
            names = sorted({name for w in wg.waves for name in w.registers.names})
            lds_size = wg.lds.regions[-1].end if wg.lds is not None and wg.lds.regions else 0
            sgpr_slots = _register_index(names, "s") + family.alias_count
            try:
                state_ = cwsr.state_words(family, lanes=wg.waves[0].lanes, vgprs=max(_register_index(names, "v"), 1),
                                          acc_vgprs=_register_index(names, "a"), sgprs=sgpr_slots, lds_size=lds_size)
            except ValueError as exc:  # more registers or LDS than a save record can describe
                raise StateError(f"workgroup {wg.id} does not fit a {processor} save record: {exc}",
                                 wg.path) from None
            area.words += list(state_)
            for i, w in enumerate(wg.waves):
                slot = area.slot
                area.slot += 1
                scratch_en = w.private is not None
                word = cwsr.wave_word(family, scoreboard_id=slot % per_engine, shader_engine=slot // per_engine,
                                      first=i == 0, last=i == len(wg.waves) - 1, scratch=scratch_en)
                area.words.append(word)
                record = cwsr.WaveRecord(family, word, state_, 0)
                key = (state_, record.first_wave, tuple(w.registers.layout))
                plan = plans.get(key)
                if plan is None:
                    plan = plans[key] = _record_plan(record, key[2], w.registers.path, processor)
                offsets = plan[0]
                body = _record_body(w, record, plan, load_bias)
                ttmp6 = n_d & cwsr.TTMP6_PACKET_ID_MASK
                ttmp11 = w.index_in_workgroup & cwsr.TTMP11_WAVE_IN_GROUP_MASK
                if family.gfx942_ttmps:
                    ttmp6 = 0
                    ttmp11 |= n_d << cwsr.TTMP11_GFX942_PACKET_SHIFT | cwsr.TTMP11_GFX942_TTMPS_SETUP
                focus = state.focus is not None and state.focus.wave == w.id
                if focus and exception_wave is None and state.stop is not None and state.stop.reason == "breakpoint":
                    ttmp6 |= cwsr.TTMP6_STOPPED | 1 << cwsr.TTMP6_TRAP_ID_SHIFT
                ttmps = [0] * 16
                ttmps[4], ttmps[5] = w.id & 0xFFFFFFFF, w.id >> 32
                ttmps[6], ttmps[8], ttmps[9], ttmps[10], ttmps[11] = ttmp6, *wg.id, ttmp11
                o, _ = offsets["ttmp0"]
                body[o:o + 64] = struct.pack("<16I", *ttmps)
                if exception_wave == w.id and exception_trap_id is not None:
                    ttmp6 |= cwsr.TTMP6_STOPPED | (exception_trap_id & 0xF) << cwsr.TTMP6_TRAP_ID_SHIFT
                    struct.pack_into("<I", body, offsets["ttmp0"][0] + 24, ttmp6)
                    holds_exception = True
                elif exception_wave == w.id:
                    o, _ = offsets["trapsts"]
                    struct.pack_into("<I", body, o, cwsr.TRAPSTS_MEM_VIOL if exception_trapsts is None
                                     else exception_trapsts)
                    holds_exception = True
                if exception_trapsts is not None:
                    o, _ = offsets["trapsts"]
                    if struct.unpack_from("<I", body, o)[0] & (cwsr.TRAPSTS_MEM_VIOL | cwsr.TRAPSTS_ILLEGAL_INST):
                        ttmp6 |= cwsr.TTMP6_STOPPED  # halted by the trap handler on its exception
                        struct.pack_into("<I", body, offsets["ttmp0"][0] + 24, ttmp6)
                lds = _known(wg.lds, 0, record.lds_size) if i == 0 and record.lds_size else b""
                area.records.append((bytes(body), lds))
                area.record_bytes += len(body) + len(lds) + family.record_gap
                if area.record_bytes > gpu.area_size - gpu.control_stack_size:
                    raise StateError(f"the waves on {where} need more than its save area's "
                                     f"{gpu.area_size - gpu.control_stack_size} bytes for wave state "
                                     f"({gpu.cus_per_xcc} CUs); spread them over more queues or GPUs", w.path)
                if scratch_en:
                    at = xcc * xcc_scratch + slot * wavesize
                    scratch[at:at + wavesize] = _known(w.private.wave_view, 0, wavesize)
    save_segments = []
    gap = bytes(family.record_gap)
    for xcc, area in enumerate(areas):
        control_stack = struct.pack(f"<{len(area.words)}I", *area.words) if len(area.words) > 2 else b""
        if len(control_stack) > gpu.control_stack_size - cwsr.HEADER_SIZE:
            raise StateError(f"the control stack of {qname} XCC {xcc} needs {len(control_stack)} bytes, more than "
                             f"the {gpu.control_stack_size - cwsr.HEADER_SIZE} libhsakmt gives it", qname)
        # the control stack ends where the wave records begin (ctl_stack_size); records run downward from
        # the wave state's end, the first control-stack wave at the top
        chunks = []
        for body, lds in reversed(area.records):
            chunks += [body, lds, gap]
        wave_size = sum(len(c) for c in chunks)
        cs_offset = gpu.control_stack_size - len(control_stack)
        ws_offset = gpu.control_stack_size + wave_size
        header = struct.pack(cwsr.HEADER, cs_offset, len(control_stack), ws_offset, wave_size, 0, 0, 0, 0)
        header += bytes(cwsr.HEADER_SIZE - len(header))
        save_segments.append((save_at + xcc * gpu.area_size,
                              [header, bytes(cs_offset - len(header)), control_stack] + chunks))
    total = gpu.xccs * (gpu.area_size + gpu.debug_memory_size)
    return _WrittenQueue(ring_at, ring_size, amd_queue_at, save_segments, total, bytes(scratch), holds_exception)


def _write_elf(path: Path, notes: bytes, segments: list[tuple[int, list[bytes] | bytes]], machine: int) -> None:
    """The core file: ELF header, program headers, the note, then each segment's bytes (written piece by
    piece: a machine's save areas are hundreds of megabytes)."""
    count = 1 + len(segments)
    phoff = 64
    data_at = _align(phoff + 56 * count, 8)
    pieces = [[chunk] if isinstance(chunk, (bytes, bytearray)) else chunk for _, chunk in segments]
    headers = bytearray()
    headers += struct.pack("<IIQQQQQQ", PT_NOTE, 0, data_at, 0, 0, len(notes), 0, 4)
    at = data_at + len(notes)
    layout = []
    for (vaddr, _), chunks in zip(segments, pieces):
        at += -at % 8
        size = sum(len(c) for c in chunks)
        # ROCr's quirks: section flags (SHF_ALLOC | SHF_WRITE) in p_flags, a shift count in p_align
        headers += struct.pack("<IIQQQQQQ", PT_LOAD, 0x3, at, vaddr, 0, size, size, 4)
        layout.append(at)
        at += size
    osabi = ELFOSABI_AMDGPU_HSA if machine == EM_AMDGPU else 0
    ident = ELF_MAGIC + bytes([2, 1, 1, osabi, 0]) + bytes(7)
    header = ident + struct.pack("<HHIQQQIHHHHHH", ET_CORE, machine, 1, 0, phoff, 0, 0, 64, 56, count, 64, 0, 0)
    with open(path, "wb") as f:
        f.write(header + bytes(headers) + bytes(data_at - 64 - len(headers)) + notes)
        for offset, chunks in zip(layout, pieces):
            f.write(bytes(offset - f.tell()))
            for chunk in chunks:
                f.write(chunk)
