"""Intel GPU core files (ELF64 ET_CORE, EM_INTELGT), as gdb-oneapi reads them and `coregen` writes them.

The layout (intel/gdb `gdb/intelgt-tdep.c`: intelgt_make_prpsinfo / _prstatus, core_read_description,
core_load_hook, read_pc, active_lanes_mask, thread_workgroup; `bfd/elf64-intelgt.c`: grok_psinfo):

- `NT_PRPSINFO` ("CORE"), in one of two forms told apart by their first bytes:
  gdb-oneapi 2024.1 on: a file name ("GPU"), NUL, the target description XML, NUL;
  2023.1 to 2024.0.1: u32 device id, u32 vendor id (0x8086), then the same name and XML.
  The XML's registers, feature by feature in document order, each `bitsize / 8` bytes, are the
  register block of every thread (tdesc.py).
- `NT_PRSTATUS` ("CORE"), one per hardware thread: u64 thread id, u32 signal, u32 SLM, then the
  register block.
- `NT_SIGINFO` ("CORE"), per thread: a Linux siginfo (si_signo, si_errno, si_code, pad, si_addr).
- `NT_FILE` ("CORE", page size 1): each device ELF stored whole in a PT_LOAD at the entry's
  [start, end); the entry's offset field is the ELF's load bias.
- Other PT_LOADs: device memory at its GPU virtual address (global; private memory lives there).

What a thread's registers say: its PC is isabase + CR0.2 (CR0.2 a 32-bit offset from the instruction
base); its active lanes are ce & SR0.2 (SR0.2 the dispatch mask: the lanes that exist); its work-group
is (r0.1, r0.6, r0.7); its work-group and grid sizes and its lanes' local ids are in the dispatch's
implicit arguments (implicit_args.py), at genstbase + (r0.0 & ~0x3f), unavailable where the core does not
map them. In the model the wave's `ip` is the PC relative to the lowest instruction base
of the core's threads (gdb's `$ip` when every thread shares one base, as they do), code objects are
placed relative to that base too, and `emask` is ce & SR0.2. Threads of one work-group are its waves,
numbered by their local ID table entry (r0.2 bits 7:0) where the implicit arguments are read, else in
file order. SLM is not in the format: a core's work-group local memory reads as unavailable. A
thread's SIMD width is not stored: it is the kernel's (IGC's DW_AT_INTEL_simd_width).

Every size is read from the file and checked; a bad or truncated core raises StateError naming the
structure. `core_writer.write_core` makes a core from an Intel dump (tests use it).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.corefiles import BytesSpan, CoreFiles
from aspace_dap.state.files import FileSpan
from aspace_dap.state.memory import Region, SparseMemory
from aspace_dap.state.model import (CodeObjectRef, Dispatch, Fault, Focus, GpuState, Stop, Target, Wave, Workgroup,
                                    mask_to_lanes)
from aspace_dap.state.registers import RegisterFile
from .adapter import PCI_DEVICES, device_for_processor
from .implicit_args import ImplicitArgs, args_address, read_args, read_local_ids
from .tdesc import INTEL_VENDOR_ID, parse

ELF_MAGIC = b"\x7fELF"
ET_CORE, EM_INTELGT = 4, 205
PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_PRPSINFO = 1, 3
NT_SIGINFO, NT_FILE = 0x53494749, 0x46494C45
CORE_NOTE = b"CORE"
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
NHDR = struct.Struct("<III")
PRSTATUS_HEAD = struct.Struct("<QII")  # thread id, signal, SLM
SIGINFO = struct.Struct("<iiiiQ")       # si_signo, si_errno, si_code, pad, si_addr (SIGSEGV/SIGBUS)
SIGINFO_SIZE = 128
SIGSEGV = 11
SIGNALS = {4: "SIGILL", 5: "SIGTRAP", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
LEGACY_PRPSINFO_HEAD = struct.Struct("<II")  # 2023.1-2024.0.1: device id, vendor id
# where gdb-oneapi reads a thread's PC, lanes and work-group (dword offsets of 4 bytes)
CR0_IP_AT = 8                # CR0.2: the instruction pointer, an offset from isabase
SR0_DISPATCH_MASK_AT = 8     # SR0.2: the dispatch mask
R0_WORKGROUP_AT = (4, 24, 28)  # r0.1, r0.6, r0.7: the work-group's x, y, z
# registers gdb-oneapi cannot debug without (intelgt_gdbarch_init, intelgt_get_isabase), and why we need them
REQUIRED = {"cr0": (CR0_IP_AT + 4, "its dword 2 is the instruction pointer"),
            "isabase": (8, "the PC is isabase + CR0.2"),
            "ce": (1, "the channel enable mask (the active lanes)"),
            "r0": (R0_WORKGROUP_AT[-1] + 4, "r0.1, r0.6 and r0.7 are the work-group's ids")}


def is_intel_core(path: str | os.PathLike) -> bool:
    """True for a file whose ELF header says ELF64 little-endian core of an Intel GPU."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return (len(head) == 20 and head[:4] == ELF_MAGIC and head[4] == 2 and head[5] == 1
            and struct.unpack_from("<HH", head, 16) == (ET_CORE, EM_INTELGT))


@dataclass
class _Segment:
    index: int
    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int


@dataclass
class _Thread:
    tid: int
    signal: int
    slm: int
    regs: memoryview  # the note's register block (may be shorter than the description)
    where: str
    siginfo: tuple[int, int, int] | None = None  # signo, code, address


@dataclass
class _Mapping:
    start: int
    end: int
    bias: int
    name: str


@dataclass
class _Core:
    path: Path
    size: int
    segments: list[_Segment] = field(default_factory=list)
    prpsinfo_form: str = ""
    device_id: int | None = None
    xml: str | None = None
    threads: list[_Thread] = field(default_factory=list)
    mappings: list[_Mapping] = field(default_factory=list)


def _read_core(path: Path) -> _Core:
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(EHDR.size)
        if len(head) < EHDR.size:
            raise StateError(f"the ELF header is truncated ({len(head)} of {EHDR.size} bytes)", "ELF header")
        ident, e_type, machine, _, _, phoff, _, _, _, phentsize, phnum, _, _, _ = EHDR.unpack(head)
        if ident[:4] != ELF_MAGIC or ident[4] != 2 or ident[5] != 1:
            raise StateError("not a 64-bit little-endian ELF file", "ELF header")
        if (e_type, machine) != (ET_CORE, EM_INTELGT):
            raise StateError(f"ELF type {e_type}, machine {machine} is not an Intel GPU core "
                             f"(ET_CORE {ET_CORE}, EM_INTELGT {EM_INTELGT})", "ELF header")
        if phnum == 0:
            raise StateError("the core has no program headers", "ELF header")
        if phentsize < PHDR.size:
            raise StateError(f"e_phentsize {phentsize} is smaller than a program header ({PHDR.size})",
                             "ELF header")
        if phoff + phnum * phentsize > size:
            raise StateError(f"the program header table [{phoff:#x}, +{phnum * phentsize:#x}) ends past the "
                             f"{size}-byte file (truncated?)", "program headers")
        core = _Core(path, size)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = PHDR.unpack(f.read(PHDR.size))
            if p_type in (PT_LOAD, PT_NOTE) and p_offset > size:
                raise StateError(f"segment offset {p_offset:#x} is past the end of the {size}-byte file",
                                 f"program header {i}")
            if p_type == PT_LOAD and p_vaddr + max(p_memsz, p_filesz) > 1 << 64:
                raise StateError("segment extends past the 64-bit address space", f"program header {i}")
            core.segments.append(_Segment(i, p_type, p_offset, p_vaddr, p_filesz, p_memsz))
        for seg in core.segments:
            if seg.type == PT_NOTE:
                if seg.filesz > size - seg.offset:
                    raise StateError(f"the note segment of {seg.filesz} bytes at {seg.offset:#x} ends past the "
                                     f"{size}-byte file (truncated?)", f"program header {seg.index}")
                f.seek(seg.offset)
                data = f.read(seg.filesz)
                if len(data) < seg.filesz:
                    raise StateError(f"the note segment holds {seg.filesz} bytes, the file only {len(data)} "
                                     f"(truncated?)", f"program header {seg.index}")
                _read_notes(core, memoryview(data), seg)
    if core.xml is None:
        raise StateError("the core has no NT_PRPSINFO note (the register description)", "NT_PRPSINFO")
    if not core.threads:
        raise StateError("the core has no NT_PRSTATUS note (no GPU thread)", "NT_PRSTATUS")
    return core


def _cstring(data: bytes, at: int, where: str) -> tuple[str, int]:
    end = data.find(b"\0", at)
    if end < 0:
        raise StateError("a string is not NUL-terminated", where)
    return data[at:end].decode("utf-8", "replace"), end + 1


def _named_xml(desc: bytes, at: int) -> str | None:
    """The XML of `NAME\\0XML\\0` at `at` when the bytes have that shape (a printable name, then '<')."""
    end = desc.find(b"\0", at)
    if end <= at or not all(0x20 <= b < 0x7F for b in desc[at:end]):
        return None
    xml_end = desc.find(b"\0", end + 1)
    text = desc[end + 1:xml_end if xml_end >= 0 else len(desc)]
    if not text.lstrip().startswith(b"<"):
        return None
    if xml_end < 0:
        raise StateError("the register description is not NUL-terminated", "NT_PRPSINFO")
    return text.decode("utf-8", "replace")


def read_prpsinfo(desc: bytes) -> tuple[str, int | None, str]:
    """(form, device id, XML) of an NT_PRPSINFO descriptor: "current" for `NAME\\0XML\\0` (gdb-oneapi
    2024.1 on: intelgt_make_prpsinfo), "2023" for u32 device id, u32 vendor id, then `NAME\\0XML\\0`
    (2023.1 to 2024.0.1). The first bytes tell them apart: a printable name and a NUL, or a device id
    whose bytes are not such a name."""
    xml = _named_xml(desc, 0)
    if xml is not None:
        return "current", None, xml
    if len(desc) >= LEGACY_PRPSINFO_HEAD.size:
        device, vendor = LEGACY_PRPSINFO_HEAD.unpack_from(desc)
        xml = _named_xml(desc, LEGACY_PRPSINFO_HEAD.size)
        if xml is not None:
            if vendor != INTEL_VENDOR_ID:
                raise StateError(f"vendor id {vendor:#x} after device id {device:#x} is not Intel's "
                                 f"({INTEL_VENDOR_ID:#x})", "NT_PRPSINFO")
            return "2023", device, xml
    raise StateError(f"{len(desc)} bytes in neither form gdb-oneapi writes: \"GPU\\0\" + the register description "
                     "XML + NUL (2024.1 on), or u32 device id, u32 vendor id, then \"GPU\\0\" + XML + NUL "
                     "(2023.1 to 2024.0.1)", "NT_PRPSINFO")


def _read_notes(core: _Core, data: memoryview, seg: _Segment) -> None:
    at, n, pending_siginfo = 0, 0, 0
    while at + NHDR.size <= len(data):
        namesz, descsz, kind = NHDR.unpack_from(data, at)
        where = f"note {n} of program header {seg.index}"
        desc_at = at + NHDR.size + (namesz + 3 & ~3)
        if desc_at + descsz > len(data):
            raise StateError(f"note of {descsz} bytes runs past its segment's {len(data)} bytes", where)
        name = bytes(data[at + NHDR.size:at + NHDR.size + namesz]).rstrip(b"\0")
        desc = data[desc_at:desc_at + descsz]
        at = desc_at + (descsz + 3 & ~3)
        n += 1
        if name != CORE_NOTE:
            continue
        if kind == NT_PRPSINFO:
            if core.xml is not None:
                raise StateError("a second NT_PRPSINFO note (a core has one register description)", "NT_PRPSINFO")
            core.prpsinfo_form, core.device_id, core.xml = read_prpsinfo(bytes(desc))
        elif kind == NT_PRSTATUS:
            if len(desc) < PRSTATUS_HEAD.size:
                raise StateError(f"{len(desc)} bytes, shorter than its {PRSTATUS_HEAD.size}-byte head",
                                 f"NT_PRSTATUS {len(core.threads)}")
            tid, signal, slm = PRSTATUS_HEAD.unpack_from(desc)
            core.threads.append(_Thread(tid, signal, slm, desc[PRSTATUS_HEAD.size:],
                                        f"NT_PRSTATUS {len(core.threads)}"))
        elif kind == NT_SIGINFO:
            # each thread's siginfo follows its NT_PRSTATUS
            if len(desc) < SIGINFO.size:
                raise StateError(f"{len(desc)} bytes, shorter than a siginfo", f"NT_SIGINFO {pending_siginfo}")
            if not core.threads:
                raise StateError("NT_SIGINFO before any NT_PRSTATUS", f"NT_SIGINFO {pending_siginfo}")
            signo, _, code, _, addr = SIGINFO.unpack_from(desc)
            core.threads[-1].siginfo = (signo, code, addr)
            pending_siginfo += 1
        elif kind == NT_FILE:
            core.mappings.extend(_file_note(bytes(desc)))


def _file_note(desc: bytes) -> list[_Mapping]:
    where = "NT_FILE"
    if len(desc) < 16:
        raise StateError(f"{len(desc)} bytes, shorter than its count and page size", where)
    count, page_size = struct.unpack_from("<QQ", desc)
    if count > (len(desc) - 16) // 24:
        raise StateError(f"{count} mappings do not fit its {len(desc)} bytes", where)
    names_at = 16 + 24 * count
    out = []
    for i in range(count):
        start, end, offset = struct.unpack_from("<QQQ", desc, 16 + 24 * i)
        if end < start:
            raise StateError(f"mapping {i} ends ({end:#x}) before it starts ({start:#x})", where)
        name, names_at = _cstring(desc, names_at, f"{where} file name {i}")
        # gdb-oneapi writes page size 1, so the offset field is the load bias itself
        out.append(_Mapping(start, end, (offset * max(page_size, 1)) & (1 << 64) - 1, name))
    return out


def load_intel_core(path: str | os.PathLike) -> GpuState:
    """Open an Intel GPU core; raises StateError(message, structure) for the first problem."""
    path = Path(path)
    files = CoreFiles(path, "an Intel GPU core", "aspace-intelcore-")
    try:
        return _build(_read_core(path), files)
    except BaseException:
        files.close()
        raise


def _core_span(core: _Core, offset: int, length: int) -> FileSpan:
    length = max(0, min(length, core.size - offset))
    return FileSpan(lambda: (core.path, offset), length)


@dataclass
class _Heads:
    """What gdb-oneapi reads from a thread's registers; None where its note ends first."""
    offset_ip: int | None = None   # CR0.2
    isabase: int | None = None
    ce: int | None = None
    dispatch: int | None = None    # SR0.2
    workgroup: tuple[int, int, int] | None = None


def _uint(regs: memoryview, at: int, size: int) -> int | None:
    return int.from_bytes(regs[at:at + size], "little") if at + size <= len(regs) else None


def _heads(thread: _Thread, offsets: dict[str, tuple[int, int]]) -> _Heads:
    regs = thread.regs
    cr0, isabase, ce = offsets["cr0"][0], offsets["isabase"], offsets["ce"]
    heads = _Heads(_uint(regs, cr0 + CR0_IP_AT, 4), _uint(regs, isabase[0], min(isabase[1], 8)),
                   _uint(regs, ce[0], min(ce[1], 8)))
    if "sr0" in offsets and offsets["sr0"][1] >= SR0_DISPATCH_MASK_AT + 4:
        heads.dispatch = _uint(regs, offsets["sr0"][0] + SR0_DISPATCH_MASK_AT, 4)
    ids = [_uint(regs, offsets["r0"][0] + at, 4) for at in R0_WORKGROUP_AT]
    if None not in ids:
        heads.workgroup = tuple(ids)  # type: ignore[assignment]
    return heads


def _build(core: _Core, files: CoreFiles) -> GpuState:
    description = parse(core.xml)
    layout = description.registers
    offsets: dict[str, tuple[int, int]] = {}
    at = 0
    for name, size in layout:
        offsets[name] = (at, size)
        at += size
    total = at
    for name, (need, why) in REQUIRED.items():
        if name not in offsets:
            raise StateError(f"the register description has no {name} ({why}); gdb-oneapi needs it too",
                             "NT_PRPSINFO")
        if offsets[name][1] < need:
            raise StateError(f"register {name} has {offsets[name][1]} bytes, fewer than the {need} "
                             f"gdb-oneapi reads ({why})", "NT_PRPSINFO")
    for name in ("ip", "emask"):
        if name in offsets:
            raise StateError(f"the register description has a register named {name}, the name the debugger "
                             f"gives the {'instruction pointer' if name == 'ip' else 'execution mask'} it computes",
                             "NT_PRPSINFO")
    heads = [_heads(thread, offsets) for thread in core.threads]
    for thread, head in zip(core.threads, heads):
        if head.workgroup is None:
            raise StateError(f"its {len(thread.regs)}-byte register block ends before r0's work-group ids",
                             thread.where)
    bases = [h.isabase for h in heads if h.isabase is not None]
    base = min(bases) if bases else 0
    loads = [s for s in core.segments if s.type == PT_LOAD]
    code_objects, images = _code_objects(core, loads, files, base)
    memory = _memory(core, loads, core.mappings)
    lanes = _simd_width(images) or 32  # the emask width when no kernel says (every lane then exists)
    width = (1 << lanes) - 1
    model_layout = [("ip", 4), ("emask", 4)] + layout
    waves: list[Wave] = []
    tids = [thread.tid for thread in core.threads]
    # the threads' own ids name the waves when they can (unique, small enough for a DAP thread id)
    unique = len(set(tids)) == len(tids) and max(tids) < 1 << 31
    groups: dict[tuple, list[Wave]] = {}
    pcs: dict[int, int | None] = {}
    launches = _Launches(offsets, memory.get("global"))
    for index, (thread, head) in enumerate(zip(core.threads, heads)):
        ip = None
        if head.offset_ip is not None and head.isabase is not None:
            ip = head.isabase + head.offset_ip - base
            if ip >= 1 << 32:
                raise StateError(f"its PC {head.isabase + head.offset_ip:#x} (isabase + CR0.2) is 4 GiB or more "
                                 f"above the lowest instruction base of the core's threads ({base:#x})", thread.where)
        dispatch_mask = width if head.dispatch is None else head.dispatch & width
        emask = None if head.ce is None else head.ce & dispatch_mask
        wave = Wave.deferred(thread.tid if unique else index, 0, lanes, thread.where,
                             _loader(thread, model_layout, ip, emask, dispatch_mask, total))
        wave.pc_register, wave.exec_register = "ip", "emask"
        waves.append(wave)
        pcs[wave.id] = ip
        co_id = images.code_object_for(ip)
        # one launch per code object and implicit arguments (the structure lives as long as its dispatch)
        groups.setdefault((co_id, launches.of(thread, wave), head.workgroup), []).append(wave)
    dispatches: list[Dispatch] = []
    by_launch: dict[tuple, list[Workgroup]] = {}
    for (co_id, args, wg_id), members in groups.items():
        for i, wave in enumerate(members):
            # gdb-oneapi's thread number in the work-group is its local ID table entry (r0.2 bits 7:0)
            wave.index_in_workgroup = launches.thread[wave.id] if isinstance(args, ImplicitArgs) else i
        by_launch.setdefault((co_id, args), []).append(Workgroup(wg_id, None, members, f"work-group {wg_id}"))
    for (co_id, args), workgroups in by_launch.items():
        first = workgroups[0].waves[0]
        kernel = images.kernel_at(co_id, pcs[first.id])
        known = isinstance(args, ImplicitArgs)
        dispatch = Dispatch(len(dispatches), kernel, co_id, args.global_size if known else None,
                            args.local_size if known else None, workgroups, {}, f"threads of code object {co_id}")
        if known:
            dispatch.local_ids = {w.id: launches.local_ids[w.id] for wg in workgroups for w in wg.waves}
        else:
            dispatch.geometry_unknown = args
        dispatches.append(dispatch)
    focus, stop = _stop(core, waves)
    # the device's PCI id names the processor, where the register description agrees on the GRF size
    device_id = core.device_id if core.device_id is not None else description.device_id
    processor = PCI_DEVICES.get(device_id)
    grf = dict(layout).get("r0")
    if processor is not None and grf is not None and device_for_processor(processor).grf_bytes != grf:
        processor = None
    target = Target("intel", processor or "intelgt", lanes)
    manifest = {"format": "intel-gpu-core", "producer": "intel gpu core",
                "register_layouts": {"core": [[n, s] for n, s in model_layout]}}
    state = GpuState(root=None, source=files.source, producer="intel gpu core", manifest=manifest, target=target,
                     code_objects=code_objects, memory=memory, dispatches=dispatches, focus=focus, stop=stop,
                     files=files)
    state.not_kept = [f"the register description's features and types (NT_PRPSINFO, {core.prpsinfo_form} form): "
                      "the registers are kept by name"]
    return state


class _Launches:
    """Each thread's implicit arguments and its lanes' local ids, read as gdb-oneapi reads them
    (implicit_args.py), or why they cannot be: the work-group size is never the SIMD width."""

    def __init__(self, offsets: dict[str, tuple[int, int]], memory):
        self.offsets, self.memory = offsets, memory
        self.read: dict[int, ImplicitArgs | str] = {}   # by address
        self.thread: dict[int, int] = {}                  # wave id -> its local ID table entry
        self.local_ids: dict[int, np.ndarray | str] = {}  # wave id -> (lanes, 3) ids, or why not

    def of(self, thread: _Thread, wave: Wave) -> ImplicitArgs | str:
        if "genstbase" not in self.offsets:
            return ("the core's register description has no genstbase, and the implicit arguments (the "
                    "work-group and grid sizes) are at genstbase + (r0.0 & ~0x3f)")
        r0, genstbase = self.offsets["r0"][0], self.offsets["genstbase"]
        base = _uint(thread.regs, genstbase[0], min(genstbase[1], 8))
        r0_0, r0_2 = _uint(thread.regs, r0, 4), _uint(thread.regs, r0 + 8, 4)
        if base is None or r0_0 is None or r0_2 is None:
            return f"{thread.where}'s register block ends before genstbase or r0.2"
        address = args_address(r0_0, base)
        if address not in self.read:
            self.read[address] = read_args(self.memory, address)
        args = self.read[address]
        if isinstance(args, ImplicitArgs):
            entry, entries = r0_2 & 0xFF, r0_2 >> 24
            self.thread[wave.id] = entry
            ids = read_local_ids(self.memory, args, entry, entries)
            if isinstance(ids, np.ndarray) and args.simd_width != wave.lanes:
                ids = f"the implicit arguments say SIMD{args.simd_width}, the kernel is SIMD{wave.lanes}"
            self.local_ids[wave.id] = ids
        return args


def _loader(thread: _Thread, model_layout, ip: int | None, emask: int | None, dispatch_mask: int, total: int):
    def load(wave: Wave) -> list:
        regs = bytes(thread.regs[:total])
        layout = list(model_layout)
        prefix = b""
        # ip and emask come first; one the note does not give is left out (never a guess)
        for name, value in (("ip", ip), ("emask", emask)):
            if value is None:
                layout.remove((name, 4))
            else:
                prefix += value.to_bytes(4, "little")
        registers = RegisterFile(layout, BytesSpan(prefix + regs), f"{thread.where}.registers",
                                 "core" if len(layout) == len(model_layout) else None)
        valid = mask_to_lanes(dispatch_mask, wave.lanes)  # SR0.2: the lanes dispatched
        return [registers, valid, None, None]
    return load


class _Images:
    """The device ELFs of NT_FILE: which one holds a PC, and the function there (each parsed once)."""

    def __init__(self, images: list[tuple[int, bytes, int]]):
        self.images = images
        self._loaded: dict[int, object] = {}

    def __bool__(self) -> bool:
        return bool(self.images)

    def _code_object(self, co_id: int):
        from aspace_dap.codeobj import load_code_objects
        from aspace_dap.errors import AspaceError

        if co_id not in self._loaded:
            data = next(data for i, data, _ in self.images if i == co_id)
            try:
                self._loaded[co_id] = load_code_objects(data)[0]
            except AspaceError:
                self._loaded[co_id] = None
        return self._loaded[co_id]

    def code_object_for(self, pc: int | None) -> int | None:
        if not self.images:
            return None
        from aspace_dap.errors import AspaceError

        for co_id, _, load in self.images:
            co = self._code_object(co_id)
            if pc is None or co is None:
                continue
            try:
                if co.symbol_at(pc - load) is not None:
                    return co_id
            except AspaceError:
                continue
        return self.images[0][0]

    def kernel_at(self, co_id: int | None, pc: int | None) -> str:
        """The function the thread stopped in: DWARF's outermost frame there, else the ELF symbol."""
        from aspace_dap.dwarf.index import DwarfIndex
        from aspace_dap.errors import AspaceError

        found = next((load for i, _, load in self.images if i == co_id), None)
        co = None if co_id is None else self._code_object(co_id)
        if co is None or pc is None or found is None:
            return ""
        try:
            if co.has_dwarf() or co.has_line_tables():
                frames = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine,
                                    function_at=lambda at: _function(co, at)).frames_at(pc - found)
                if frames:
                    return frames[-1].function
            symbol = co.function_symbol_at(pc - found)
        except AspaceError:
            return ""
        return symbol.name if symbol is not None else ""


def _function(co, address: int) -> tuple[str, int, int] | None:
    sym = co.function_symbol_at(address)
    return (sym.name, sym.value, sym.size) if sym is not None else None


def _code_objects(core: _Core, loads: list[_Segment], files: CoreFiles, base: int):
    refs, images = [], []
    for i, m in enumerate(core.mappings):
        seg = next((s for s in loads if s.vaddr <= m.start and m.end <= s.vaddr + s.filesz), None)
        where = f"NT_FILE mapping {i} ({m.name})"
        if seg is None:
            raise StateError(f"no PT_LOAD holds its bytes [{m.start:#x}, {m.end:#x})", where)
        offset = seg.offset + (m.start - seg.vaddr)
        if offset + (m.end - m.start) > core.size:
            raise StateError(f"its bytes end past the {core.size}-byte file (truncated?)", where)
        if m.bias < base:
            raise StateError(f"its load bias {m.bias:#x} is below the threads' instruction base {base:#x}: its "
                             "code cannot be where their PCs (isabase + CR0.2) point", where)
        with open(core.path, "rb") as f:
            f.seek(offset)
            data = f.read(m.end - m.start)
        if not data.startswith(ELF_MAGIC):
            raise StateError("the embedded device file is not an ELF image", where)
        name = f"{i}-{os.path.basename(m.name) or 'device.elf'}"
        refs.append(CodeObjectRef(i, files.write_image(name, data), m.bias - base, m.name))
        images.append((i, data, m.bias - base))
    return refs, _Images(images)


def _memory(core: _Core, loads: list[_Segment], mappings: list[_Mapping]) -> dict[str, SparseMemory]:
    regions = []
    for seg in loads:
        if any(seg.vaddr <= m.start < seg.vaddr + max(seg.filesz, 1) for m in mappings):
            continue  # a device ELF, not memory
        if seg.memsz == 0:
            continue
        # bytes past p_filesz (or past a cut file) are not in the core: unavailable, never zero
        regions.append(Region(seg.vaddr, seg.memsz, core.path.name, 0,
                              span=_core_span(core, seg.offset, min(seg.filesz, seg.memsz))))
    regions.sort(key=lambda r: r.address)
    for a, b in zip(regions, regions[1:]):
        if b.address < a.address + a.size:
            raise StateError(f"memory segments overlap at {b.address:#x}", "program headers")
    return {"global": SparseMemory(regions, "global", "PT_LOAD")} if regions else {}


def _simd_width(images: _Images) -> int | None:
    from .adapter import simd_width_of_code_object  # the kernels' SIMD width is IGC's DWARF
    from aspace_dap.errors import AspaceError

    for co_id, _, _ in images.images:
        co = images._code_object(co_id)
        if co is None:
            continue
        try:
            width = simd_width_of_code_object(co)
        except AspaceError:
            continue
        if width in (1, 2, 4, 8, 16, 32):
            return width
    return None


def _stop(core: _Core, waves: list[Wave]) -> tuple[Focus | None, Stop | None]:
    faults = _faults(core, waves)
    for wave, thread in zip(waves, core.threads):
        signo = thread.siginfo[0] if thread.siginfo else thread.signal
        if signo:
            name = SIGNALS.get(signo, f"signal {signo}")
            text = name
            if thread.siginfo and signo in (SIGSEGV, 7):
                text = f"{name}: invalid access at address {thread.siginfo[2]:#x}"
            active = wave.active_lanes
            lane = int(np.argmax(active)) if active.any() else 0
            return Focus(wave.id, lane), Stop("exception", f"thread {thread.tid:#x}: {text}", faults=faults)
    return None, Stop("pause", "core file")


def _faults(core: _Core, waves: list[Wave]) -> list[Fault]:
    """Each thread's signal (NT_PRSTATUS, or its NT_SIGINFO), with si_code and, for SIGSEGV and SIGBUS,
    si_addr: the address that faulted. The first is the stop's (gdb's current thread is the first)."""
    out = []
    for wave, thread in zip(waves, core.threads):
        signo = thread.siginfo[0] if thread.siginfo else thread.signal
        if not signo:
            continue
        address = thread.siginfo[2] if thread.siginfo and signo in (SIGSEGV, 7) else None
        out.append(Fault(wave.id, signo, address=address, detail=thread.siginfo[1] if thread.siginfo else 0))
    return out
