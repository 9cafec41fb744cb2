"""Writes ROCm GPU cores from a state, laid out as ROCr and the trap handler lay them out."""

from __future__ import annotations

import os
import struct
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.memory import SparseMemory
from aspace_dap.state.model import Dispatch, GpuState
from aspace_dap.state.private import SWIZZLED
from . import cwsr
from .core import (AGENT_ENTRY, AQL_PACKET, AQL_PACKET_SIZE, ELFOSABI_AMDGPU_HSA, ELF_MAGIC, EM_AMDGPU, EM_X86_64,
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
                    load_bias: int = 0, pid: int = 4242, exception_trapsts: int | None = None) -> Path:
    """Write `state` (an AMD state) as a ROCm GPU core, laid out the way ROCr and the save handler do.

    One agent per kind of GPU the dispatches ran on (a dispatch's `processor`, else the target's),
    each with one AQL queue holding one packet per dispatch and every wave saved in the queue's
    context-save area in that GPU's layout (gfx90a/gfx942/gfx1030/gfx1100 records), LDS with each
    workgroup's first wave, swizzled scratch in the queue's scratch backing memory, and the host
    structures a rocgdb gcore holds: r_debug, link_map (`memory://` images in the core, or `file://`
    URIs naming the dump's code-object files), amd_queue_t and the ring. `host_core` writes an x86-64
    core (as `coremerge` leaves it) instead of an EM_AMDGPU one. `gpu_only` leaves host memory out, as
    ROCr's own gpucore does (it copies only the render-node mappings). `exception_wave` marks that
    wave's TRAPSTS, its queue and its agent with a memory violation; otherwise a dump stopped at a
    breakpoint marks its focus wave's ttmp6 with the breakpoint trap. `exception_trapsts` is the TRAPSTS
    `exception_wave` gets instead of MEM_VIOL alone (a page fault: MEM_VIOL | XNACK_ERROR); with it, every
    wave whose TRAPSTS (its own, or this) holds MEM_VIOL or ILLEGAL_INST also gets ttmp6's stopped bit,
    as the trap handler leaves a wave it halted on an exception. `load_bias` moves the code
    objects (and each wave's pc, but no other register, so use it only with waves stopped in their
    kernel).

    A save record holds every register: registers the dump does not have are written as zeros,
    and so are unknown bytes of LDS and scratch.
    """
    path = Path(path)
    target = state.target
    if target.vendor != "amd":
        raise StateError(f"a ROCm GPU core holds AMD state, not {target.vendor}", "target.vendor")
    if code_object_uri not in ("memory", "file"):
        raise StateError("code_object_uri is 'memory' or 'file'", "code_object_uri")
    # one agent (and queue) per kind of GPU, the target's first
    by_processor: dict[str, list[Dispatch]] = {target.processor: []}
    for d in state.dispatches:
        by_processor.setdefault(d.processor or target.processor, []).append(d)
    for processor, dispatches in by_processor.items():
        where = "target.processor" if processor == target.processor else f"{dispatches[0].path}.processor"
        family = cwsr.family_for(processor)
        if family is None:
            raise StateError(f"{processor}: no context-save layout known (supported: "
                             f"{', '.join(cwsr.SUPPORTED)})", where)
        lanes = {w.lanes for d in dispatches for w in d.waves} | ({target.lanes} if processor == target.processor
                                                                  else set())
        for n in lanes:
            if n not in (32, 64) or (n == 32 and not family.wave32_capable):
                raise StateError(f"{n}-lane waves do not exist on {processor}",
                                 "target.lanes" if processor == target.processor else where)
    for space in state.memory:
        if space != "global":
            raise StateError(f"{space} memory has no place in a ROCm GPU core", f"memory.{space}")
    host = _HostMemory(HOST_BASE)
    queue_memory = _HostMemory(QUEUE_BASE)
    segments: list[tuple[int, bytes]] = []
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
    for n_agent, (processor, dispatches) in enumerate(by_processor.items()):
        if n_agent and not dispatches:
            continue
        apertures = (dispatches[0].apertures if dispatches and dispatches[0].apertures is not None
                     else target.apertures) or {}
        queue = _write_queue(state, processor, dispatches, kd_address, queue_memory, save_at, scratch_at,
                             exception_wave, load_bias, exception_trapsts)
        gpu_id = GPU_ID + n_agent
        faulted = exception_wave is not None and (queue.holds_exception or n_agent == 0 and not any(
            w.id == exception_wave for w in state.waves))
        status = (1 << (5 - 1)) if faulted else 0
        local, private = apertures.get("local"), apertures.get("private")
        agents.append(AGENT_ENTRY.pack(
            status, local.base if local else 0, local.base + local.size - 1 if local else 0,
            private.base if private else 0, private.base + private.size - 1 if private else 0,
            0, (1 << 47) - 1, gpu_id, n_agent, 0x1002, 0x740F, 0, 0, 0, 0, cwsr.target_version(processor),
            4, 8, queue.engines, 1, 1, 0, 0) + bytes(agent_size - AGENT_ENTRY.size))
        queues.append(QUEUE_ENTRY.pack(status, queue.ring_at, queue.amd_queue_at + 56, queue.amd_queue_at + 0x80,
                                       save_at, (QUEUE_ID + n_agent) | (QUEUE_ID_ERROR if faulted else 0), gpu_id,
                                       queue.ring_size, KFD_QUEUE_TYPE_COMPUTE_AQL, queue.area_size, 0))
        segments.append((save_at, queue.save_area))
        save_at += queue.area_size
        if queue.scratch:
            scratch_segments.append((scratch_at, queue.scratch))
            scratch_at += _align(len(queue.scratch), PAGE)

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
    segments.sort()
    # last in the file, so a core cut short loses scratch first (as a size limit would)
    segments += scratch_segments
    _write_elf(path, notes, segments, EM_X86_64 if host_core else EM_AMDGPU)
    return path


@dataclass
class _WrittenQueue:
    ring_at: int
    ring_size: int
    amd_queue_at: int
    save_area: bytes
    area_size: int
    scratch: bytes
    engines: int
    holds_exception: bool


def _write_queue(state: GpuState, processor: str, dispatches: list[Dispatch], kd_address: dict,
                 queue_memory: _HostMemory, save_at: int, scratch_at: int, exception_wave: int | None,
                 load_bias: int, exception_trapsts: int | None = None) -> _WrittenQueue:
    """One agent's AQL queue: its ring and amd_queue_t in `queue_memory`, the context-save area (to be
    placed at `save_at`) in `processor`'s layout, and the scratch backing memory (at `scratch_at`)."""
    family = cwsr.family_for(processor)
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
    # scratch slots: numbered per shader engine (scoreboard id), engines added until every wave has one
    per_engine_limit = 1 << (family.scoreboard_bits[1] - family.scoreboard_bits[0] + 1)
    engines = max(1, -(-len(waves) // per_engine_limit))
    if engines > 1 << (family.se_bits[1] - family.se_bits[0] + 1):
        raise StateError(f"{len(waves)} waves do not fit one {processor} queue's scratch slots", "waves")
    per_engine = -(-len(waves) // engines)
    slots = per_engine * engines
    tmpring = cwsr.tmpring_size(family, slots if family is not cwsr.GFX11 else per_engine, wavesize) if wavesize else 0
    amd_queue = bytearray(256)
    struct.pack_into("<Q", amd_queue, 56, len(dispatches))                  # write_dispatch_id
    struct.pack_into("<Q", amd_queue, 0x80, 0)                              # read_dispatch_id
    struct.pack_into("<I", amd_queue, 0x8C, tmpring)                        # compute_tmpring_size
    struct.pack_into("<QQ", amd_queue, 0xA0, scratch_at if wavesize else 0, slots * wavesize)
    queue_memory.patch(amd_queue_at, bytes(amd_queue))

    # the context-save area: header, control stack, records (top record = first control-stack wave)
    words = [0, 0]  # the two PM4 words the handler skips
    records = []    # (record geometry, bytes below LDS, LDS bytes)
    scratch = bytearray(slots * wavesize)
    slot = 0
    for n_d, d in enumerate(dispatches):
        for wg in d.workgroups:
            if not wg.waves:
                continue
            names = sorted({name for w in wg.waves for name in w.registers.names})
            lds_size = wg.lds.regions[-1].end if wg.lds is not None and wg.lds.regions else 0
            sgpr_slots = _register_index(names, "s") + family.alias_count
            try:
                state_ = cwsr.state_words(family, lanes=wg.waves[0].lanes, vgprs=max(_register_index(names, "v"), 1),
                                          acc_vgprs=_register_index(names, "a"), sgprs=sgpr_slots, lds_size=lds_size)
            except ValueError as exc:  # more registers or LDS than a save record can describe
                raise StateError(f"workgroup {wg.id} does not fit a {processor} save record: {exc}",
                                 wg.path) from None
            words += list(state_)
            for i, w in enumerate(wg.waves):
                scratch_en = w.private is not None
                word = cwsr.wave_word(family, scoreboard_id=slot % per_engine, shader_engine=slot // per_engine,
                                      first=i == 0,
                                      last=i == len(wg.waves) - 1, scratch=scratch_en)
                words.append(word)
                record = cwsr.WaveRecord(family, word, state_, 0)
                body = bytearray(record.register_bytes)
                offsets = {}
                at = 0
                for name, size in record.layout():
                    offsets[name] = (at, size)
                    at += size
                for name, size in w.registers.layout:
                    if name not in offsets or offsets[name][1] != size:
                        raise StateError(f"register {name} ({size} bytes) has no place in a {processor} "
                                         f"save record", w.registers.path)
                    data, valid = w.registers.raw(name)
                    data = data.copy()
                    data[~valid] = 0
                    if name == "pc":
                        data = np.frombuffer(struct.pack("<Q", (int.from_bytes(data.tobytes(), "little")
                                                                 + load_bias) & (2**64 - 1)), np.uint8)
                    o, _ = offsets[name]
                    body[o:o + size] = data.tobytes()
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
                if exception_wave == w.id:
                    o, _ = offsets["trapsts"]
                    struct.pack_into("<I", body, o, cwsr.TRAPSTS_MEM_VIOL if exception_trapsts is None
                                     else exception_trapsts)
                if exception_trapsts is not None:
                    o, _ = offsets["trapsts"]
                    if struct.unpack_from("<I", body, o)[0] & (cwsr.TRAPSTS_MEM_VIOL | cwsr.TRAPSTS_ILLEGAL_INST):
                        ttmp6 |= cwsr.TTMP6_STOPPED  # halted by the trap handler on its exception
                        struct.pack_into("<I", body, offsets["ttmp0"][0] + 24, ttmp6)
                lds = _known(wg.lds, 0, record.lds_size) if i == 0 and record.lds_size else b""
                records.append((record, bytes(body), lds))
                if scratch_en:
                    scratch[slot * wavesize:(slot + 1) * wavesize] = _known(w.private.wave_view, 0, wavesize)
                slot += 1
    control_stack = struct.pack(f"<{len(words)}I", *words)
    gap = family.record_gap
    # records run downward: the first control-stack wave is at the top, with the gap above it
    wave_area = b"".join(body + lds + bytes(gap) for record, body, lds in reversed(records))
    cs_offset = cwsr.HEADER_SIZE
    ws_offset = cs_offset + len(control_stack) + len(wave_area)
    header = struct.pack(cwsr.HEADER, cs_offset, len(control_stack), ws_offset, len(wave_area), 0, 0, 0, 0)
    header += bytes(cwsr.HEADER_SIZE - len(header))
    save_area = header + control_stack + wave_area
    return _WrittenQueue(ring_at, ring_size, amd_queue_at, save_area, _align(len(save_area), PAGE), bytes(scratch),
                         engines, exception_wave is not None and any(w.id == exception_wave for w in waves))


def _write_elf(path: Path, notes: bytes, segments: list[tuple[int, bytes]], machine: int) -> None:
    count = 1 + len(segments)
    phoff = 64
    data_at = _align(phoff + 56 * count, 8)
    headers = bytearray()
    body = bytearray()
    at = data_at
    headers += struct.pack("<IIQQQQQQ", PT_NOTE, 0, at, 0, 0, len(notes), 0, 4)
    body += notes
    for vaddr, payload in segments:
        body += bytes(-len(body) % 8)
        at = data_at + len(body)
        # ROCr's quirks: section flags (SHF_ALLOC | SHF_WRITE) in p_flags, a shift count in p_align
        headers += struct.pack("<IIQQQQQQ", PT_LOAD, 0x3, at, vaddr, 0, len(payload), len(payload), 4)
        body += payload
    osabi = ELFOSABI_AMDGPU_HSA if machine == EM_AMDGPU else 0
    ident = ELF_MAGIC + bytes([2, 1, 1, osabi, 0]) + bytes(7)
    header = ident + struct.pack("<HHIQQQIHHHHHH", ET_CORE, machine, 1, 0, phoff, 0, 0, 64, 56, count, 64, 0, 0)
    path.write_bytes(header + bytes(headers) + bytes(data_at - 64 - len(headers)) + bytes(body))
