"""The container of a ROCm GPU core: the ELF header and program headers (ROCr's quirks tolerated, a file
cut short at the core size limit read as far as it goes), and the NT_AMDGPU_CORE_STATE note (ROCdbgapi's
kfd_core_driver_t rules: note version 1, every size from the header, blocks padded to 8 bytes)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.files import FileSpan

ELF_MAGIC = b"\x7fELF"
ET_CORE = 4
EM_AMDGPU = 224
EM_X86_64 = 62
ELFOSABI_AMDGPU_HSA = 64
PT_NULL, PT_LOAD, PT_NOTE = 0, 1, 4
_PHDR = np.dtype([("type", "<u4"), ("flags", "<u4"), ("offset", "<u8"), ("vaddr", "<u8"), ("paddr", "<u8"),
                  ("filesz", "<u8"), ("memsz", "<u8"), ("align", "<u8")])
PN_XNUM = 0xFFFF
NT_AMDGPU_CORE_STATE = 33
NOTE_NAME = b"AMDGPU"
NOTE_VERSION = 1
KFD_QUEUE_TYPE_COMPUTE_AQL = 2
QUEUE_ID_ERROR = 1 << 30
QUEUE_ID_INVALID = 1 << 31
RUNTIME_ENABLED = 1
R_DEBUG_CONSISTENT = 0
AMD_QUEUE_FROM_READ_POINTER = 0x80        # amd_queue_t.read_dispatch_id is at offset 0x80
AQL_PACKET_SIZE = 64
DEBUG_PROP_TTMPS_ALWAYS_VALID = 1 << 10   # kfd_dbg_device_info_entry.debug_prop
MAX_CONTROL_STACK = 1 << 22               # far above any GPU's saved waves: a guard against corrupt sizes

NOTE_HEADER = struct.Struct("<QIIQIIII")  # version, kfd major/minor, runtime size, agents n/size, queues n/size
RUNTIME_INFO = struct.Struct("<QII")      # r_debug, runtime_state, ttmp_setup
AGENT_ENTRY = struct.Struct("<7Q16I")     # kfd_dbg_device_info_entry up to debug_prop (120 bytes)
AGENT_FIELDS = ("exception_status lds_base lds_limit scratch_base scratch_limit gpuvm_base gpuvm_limit gpu_id "
                "location_id vendor_id device_id revision_id subsystem_vendor_id subsystem_device_id fw_version "
                "gfx_target_version simd_count max_waves_per_simd array_count simd_arrays_per_engine num_xcc "
                "capability debug_prop").split()
QUEUE_ENTRY = struct.Struct("<5Q6I")      # kfd_queue_snapshot_entry (64 bytes)
QUEUE_FIELDS = ("exception_status ring_base_address write_pointer_address read_pointer_address "
                "ctx_save_restore_address queue_id gpu_id ring_size queue_type ctx_save_restore_area_size "
                "reserved").split()
AQL_PACKET = struct.Struct("<HH3HH3III2QQQ")
LINK_MAP = struct.Struct("<5Q")           # l_addr, l_name, l_ld, l_next, l_prev
R_DEBUG = struct.Struct("<iiQQiiQ")       # r_version (+pad), r_map, r_brk, r_state (+pad), r_ldbase

# KFD exception codes (kfd_ioctl.h kfd_dbg_trap_exception_code); bit (code - 1) of exception_status
EXCEPTIONS = {
    1: "wave abort", 2: "wave trap", 3: "wave math error", 4: "wave illegal instruction",
    5: "wave memory violation", 6: "wave aperture violation", 16: "dispatch dimension invalid",
    17: "dispatch group segment size invalid", 18: "dispatch code invalid", 19: "reserved packet",
    20: "unsupported packet", 21: "dispatch workgroup size invalid", 22: "dispatch register invalid",
    23: "vendor packet unsupported", 30: "queue preemption error", 32: "queue deleted",
    33: "device memory violation", 34: "device RAS error", 35: "device fatal halt",
}
EC_QUEUE_NEW, EC_DEVICE_NEW = 31, 36


def _exceptions(status: int) -> list[str]:
    return [EXCEPTIONS[code] for code in sorted(EXCEPTIONS) if status >> (code - 1) & 1]


# ---------------------------------------------------------------------- the ELF container


@dataclass(frozen=True)
class Segment:
    index: int
    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int


def _read_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(64)
    except OSError:
        return b""


def _program_headers(path: Path, head: bytes, file_size: int) -> list[Segment]:
    """The program headers that lie inside the file (a core cut short loses its tail)."""
    phoff, = struct.unpack_from("<Q", head, 32)
    shoff, = struct.unpack_from("<Q", head, 40)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    if phentsize != 56:
        raise StateError(f"program header size {phentsize}, an ELF64 core has 56", "ELF header e_phentsize")
    with open(path, "rb") as f:
        if phnum == PN_XNUM:  # more than 65534 segments: the real count is section 0's sh_info
            f.seek(shoff)
            section0 = f.read(64)
            if len(section0) < 64:
                raise StateError("e_phnum is PN_XNUM but section header 0 is not in the file", "ELF header e_phnum")
            phnum, = struct.unpack_from("<I", section0, 44)
        if phoff >= file_size or phnum == 0:
            raise StateError(f"no program headers inside the {file_size}-byte file (e_phoff {phoff:#x}, "
                             f"e_phnum {phnum})", "ELF header")
        count = min(phnum, (file_size - phoff) // 56)
        f.seek(phoff)
        table = f.read(count * 56)
    # p_flags and p_align are not checked: ROCr writes section flags and a shift count there.
    # Only notes and loads mean anything to the reader; the table is decoded in one step (a core may
    # have tens of thousands of segments, and a damaged e_phnum may claim 65,535).
    rows = np.frombuffer(table, _PHDR)
    wanted = np.flatnonzero((rows["type"] == PT_LOAD) | (rows["type"] == PT_NOTE))
    picked = rows[wanted]
    return [Segment(i, p_type, offset, vaddr, filesz, memsz) for i, p_type, offset, vaddr, filesz, memsz in
            zip(wanted.tolist(), picked["type"].tolist(), picked["offset"].tolist(), picked["vaddr"].tolist(),
                picked["filesz"].tolist(), picked["memsz"].tolist())]


def _notes(data: bytes, where: str):
    """(name, type, desc offset in data, desc size) of each note in a PT_NOTE segment."""
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, at)
        name_at = at + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        end = desc_at + ((descsz + 3) & ~3)
        if desc_at + descsz > len(data):
            raise StateError(f"note at offset {at:#x} runs past the end of the segment (namesz {namesz}, "
                             f"descsz {descsz})", where)
        yield data[name_at:name_at + namesz].rstrip(b"\0"), ntype, desc_at, descsz
        at = end


class CoreElf:
    """Header, segments and the AMDGPU note of a core file."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.file_size = path.stat().st_size
            head = _read_head(path)
            if len(head) < 64 or head[:4] != ELF_MAGIC:
                raise StateError("not an ELF file (or shorter than an ELF header)", str(path))
            if head[4] != 2 or head[5] != 1:
                raise StateError("a ROCm GPU core is a little-endian ELF64 file", "ELF header e_ident")
            self.e_type, self.e_machine = struct.unpack_from("<HH", head, 16)
            if self.e_type != ET_CORE:
                raise StateError(f"e_type {self.e_type}: not a core file (ET_CORE is 4)", "ELF header e_type")
            self.segments = _program_headers(path, head, self.file_size)
            self.note = self._find_note()
        except OSError as exc:
            raise StateError(f"cannot read: {exc.strerror or exc}", str(path)) from exc
        self.span = FileSpan(lambda: (path, 0), self.file_size)

    def _read(self, offset: int, size: int) -> bytes:
        if offset >= self.file_size or size <= 0:
            return b""
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(size)

    def _find_note(self) -> bytes | None:
        for seg in self.segments:
            if seg.type != PT_NOTE:
                continue
            where = f"program header {seg.index} (PT_NOTE)"
            data = self._read(seg.offset, min(seg.filesz, max(self.file_size - seg.offset, 0)))
            if len(data) < seg.filesz:
                where += f", cut short at {len(data)} of {seg.filesz} bytes"
            for name, ntype, desc_at, descsz in _notes(data, where):
                if name == NOTE_NAME and ntype == NT_AMDGPU_CORE_STATE:
                    return data[desc_at:desc_at + descsz]
        return None


def detect(path: str | os.PathLike) -> bool:
    """ET_CORE for EM_AMDGPU, or any ET_CORE (a host core) carrying an NT_AMDGPU_CORE_STATE note."""
    head = _read_head(Path(path))
    if len(head) < 64 or head[:4] != ELF_MAGIC or head[4] != 2 or head[5] != 1:
        return False
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    if e_type != ET_CORE:
        return False
    if e_machine == EM_AMDGPU:
        return True
    try:
        return CoreElf(Path(path)).note is not None
    except (StateError, OSError):
        return False


# ---------------------------------------------------------------------- the note


@dataclass
class CoreState:
    kfd_version: tuple[int, int]
    runtime: dict[str, int]
    agents: list[dict[str, int]]
    queues: list[dict[str, int]]


def parse_note(desc: bytes) -> CoreState:
    """The NT_AMDGPU_CORE_STATE body, version 1 (ROCdbgapi's core driver rules: every size from the
    header, each block padded to 8 bytes, the body ends where the blocks end)."""
    where = "NT_AMDGPU_CORE_STATE"
    if len(desc) < NOTE_HEADER.size:
        raise StateError(f"note body of {len(desc)} bytes is shorter than its {NOTE_HEADER.size}-byte header", where)
    version, major, minor, runtime_size, n_agents, agent_size, n_queues, queue_size = NOTE_HEADER.unpack_from(desc)
    if version != NOTE_VERSION:
        raise StateError(f"note version {version}; only version {NOTE_VERSION} is known", f"{where} header")
    if runtime_size < RUNTIME_INFO.size or runtime_size > 1 << 16:
        raise StateError(f"runtime_info_size {runtime_size}: a kfd_runtime_info is {RUNTIME_INFO.size} bytes",
                         f"{where} header")
    if n_agents and (agent_size < AGENT_ENTRY.size or agent_size % 8):
        raise StateError(f"agent_entry_size {agent_size}: a kfd_dbg_device_info_entry is at least "
                         f"{AGENT_ENTRY.size} bytes, a multiple of 8", f"{where} header")
    if n_queues and (queue_size < QUEUE_ENTRY.size or queue_size % 8):
        raise StateError(f"queue_entry_size {queue_size}: a kfd_queue_snapshot_entry is at least "
                         f"{QUEUE_ENTRY.size} bytes, a multiple of 8", f"{where} header")

    def padded(n: int) -> int:
        return (n + 7) & ~7

    runtime_at = NOTE_HEADER.size
    agents_at = runtime_at + padded(runtime_size)
    queues_at = agents_at + padded(n_agents * agent_size)
    end = queues_at + padded(n_queues * queue_size)
    if end != len(desc):
        raise StateError(f"the header's sizes add up to {end} bytes but the note body has {len(desc)} "
                         f"({n_agents} agents x {agent_size}, {n_queues} queues x {queue_size})", f"{where} header")
    r_debug, runtime_state, ttmp_setup = RUNTIME_INFO.unpack_from(desc, runtime_at)
    agents = [dict(zip(AGENT_FIELDS, AGENT_ENTRY.unpack_from(desc, agents_at + i * agent_size)))
              for i in range(n_agents)]
    queues = [dict(zip(QUEUE_FIELDS, QUEUE_ENTRY.unpack_from(desc, queues_at + i * queue_size)))
              for i in range(n_queues)]
    return CoreState((major, minor), dict(r_debug=r_debug, runtime_state=runtime_state, ttmp_setup=ttmp_setup),
                     agents, queues)
