"""Intel GPU core files (ELF64 ET_CORE, EM_INTELGT), as gdb-oneapi reads them and `coregen` writes them.

The layout (intel/gdb `gdb/intelgt-tdep.c`: intelgt_make_prpsinfo / _prstatus, core_read_description,
core_load_hook):

- `NT_PRPSINFO` ("CORE"): u32 device id, u32 vendor id, the file name ("GPU") and the target
  description XML, each NUL-terminated. The XML's `<reg name= bitsize=>` list, in order, is the
  register layout of every thread.
- `NT_PRSTATUS` ("CORE"), one per hardware thread: u64 thread id, u32 signal, u32 SLM, then every
  register of the XML back to back at its own size.
- `NT_SIGINFO` ("CORE"), per thread: a Linux siginfo (si_signo, si_errno, si_code, pad, si_addr).
- `NT_FILE` ("CORE", page size 1): each device ELF stored whole in a PT_LOAD at the entry's
  [start, end); the entry's offset field is the ELF's load bias.
- Other PT_LOADs: device memory at its GPU virtual address (global; private memory lives there).

SLM is not in the format: a core's work-group local memory reads as unavailable. The core names
no work-group or dispatch either: its threads are shown as the waves of one work-group, in file
order. A thread's SIMD width is not stored: it is the kernel's (IGC's DW_AT_INTEL_simd_width).
Newer descriptions carry no `ip` register: the instruction pointer is dword 2 of `cr0`.

Every size is read from the file and checked; a bad or truncated core raises StateError naming
the structure. `write_core` makes a core from an Intel dump (tests use it).
"""

from __future__ import annotations

import os
import struct
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.corefiles import BytesSpan, CoreFiles
from aspace_dap.state.files import FileSpan
from aspace_dap.state.memory import Region, SparseMemory
from aspace_dap.state.model import CodeObjectRef, Dispatch, Fault, Focus, GpuState, Stop, Target, Wave, Workgroup
from aspace_dap.state.registers import RegisterFile

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
INTEL_VENDOR_ID = 0x8086
MAX_REGISTERS = 1 << 16
CR0_IP_OFFSET = 8  # the instruction pointer is cr0.2


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
    regs_offset: int
    regs_length: int
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
    device_id: int = 0
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
                _read_notes(core, data, seg)
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


def _read_notes(core: _Core, data: bytes, seg: _Segment) -> None:
    at, n, pending_siginfo = 0, 0, 0
    while at + NHDR.size <= len(data):
        namesz, descsz, kind = NHDR.unpack_from(data, at)
        where = f"note {n} of program header {seg.index}"
        desc_at = at + NHDR.size + (namesz + 3 & ~3)
        if desc_at + descsz > len(data):
            raise StateError(f"note of {descsz} bytes runs past its segment's {len(data)} bytes", where)
        name = data[at + NHDR.size:at + NHDR.size + namesz].rstrip(b"\0")
        desc = data[desc_at:desc_at + descsz]
        offset = seg.offset + desc_at
        at = desc_at + (descsz + 3 & ~3)
        n += 1
        if name != CORE_NOTE:
            continue
        if kind == NT_PRPSINFO:
            where = "NT_PRPSINFO"
            if len(desc) < 8:
                raise StateError(f"{len(desc)} bytes, shorter than its device and vendor ids", where)
            core.device_id = int.from_bytes(desc[:4], "little")
            _, xml_at = _cstring(desc, 8, where)
            core.xml, _ = _cstring(desc, xml_at, where)
        elif kind == NT_PRSTATUS:
            if len(desc) < PRSTATUS_HEAD.size:
                raise StateError(f"{len(desc)} bytes, shorter than its {PRSTATUS_HEAD.size}-byte head",
                                 f"NT_PRSTATUS {len(core.threads)}")
            tid, signal, slm = PRSTATUS_HEAD.unpack_from(desc)
            core.threads.append(_Thread(tid, signal, slm, offset + PRSTATUS_HEAD.size,
                                        len(desc) - PRSTATUS_HEAD.size, f"NT_PRSTATUS {len(core.threads)}"))
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
            core.mappings.extend(_file_note(desc))


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


def _registers(xml: str) -> list[tuple[str, int]]:
    """[(name, bytes)] of the description's registers in register-number order."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise StateError(f"the register description is not valid XML: {exc}", "NT_PRPSINFO") from None
    numbered: list[tuple[int, int, str, int]] = []
    regnum = 0
    for order, reg in enumerate(root.iter("reg")):
        name, bits = reg.get("name"), reg.get("bitsize")
        if not name or bits is None or not bits.isdigit() or int(bits) == 0 or int(bits) % 8:
            raise StateError(f"register {order} ({name or 'no name'}) has bitsize {bits!r}, not a whole number "
                             f"of bytes", "NT_PRPSINFO")
        if reg.get("regnum") is not None:
            if not reg.get("regnum").isdigit():
                raise StateError(f"register {name} has regnum {reg.get('regnum')!r}", "NT_PRPSINFO")
            regnum = int(reg.get("regnum"))
        numbered.append((regnum, order, name, int(bits) // 8))
        regnum += 1
        if len(numbered) > MAX_REGISTERS:
            raise StateError(f"more than {MAX_REGISTERS} registers", "NT_PRPSINFO")
    if not numbered:
        raise StateError("the register description names no register", "NT_PRPSINFO")
    layout = [(name, size) for _, _, name, size in sorted(numbered)]
    if len({name for name, _ in layout}) != len(layout):
        raise StateError("the register description names a register twice", "NT_PRPSINFO")
    return layout


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


def _build(core: _Core, files: CoreFiles) -> GpuState:
    layout = _registers(core.xml)
    names = {name for name, _ in layout}
    total = sum(size for _, size in layout)
    loads = [s for s in core.segments if s.type == PT_LOAD]
    code_objects, images = _code_objects(core, loads, files)
    memory = _memory(core, loads, core.mappings)
    simd = _simd_width(images)
    waves = []
    tids = [thread.tid for thread in core.threads]
    # the threads' own ids name the waves when they can (unique, small enough for a DAP thread id)
    unique = len(set(tids)) == len(tids) and max(tids) < 1 << 31
    for index, thread in enumerate(core.threads):
        # a note shorter than the description: the registers past its end read as unavailable
        span = _core_span(core, thread.regs_offset, min(thread.regs_length, total))
        wave_layout = list(layout)
        if "ip" not in names and "cr0" in names:
            # newer descriptions keep the instruction pointer only as cr0.2
            wave_layout, span = _with_ip(layout, span)
        registers = RegisterFile(wave_layout, span, f"{thread.where}.registers", "core")
        lanes = simd or 32  # the emask width when no kernel says (every lane then exists)
        waves.append(Wave(thread.tid if unique else index, index, registers, lanes, np.ones(lanes, bool), None,
                          None, thread.where))
    if not waves:
        raise StateError("the core has no GPU thread", "NT_PRSTATUS")
    lanes = waves[0].lanes
    for wave in waves:
        wave.pc_register, wave.exec_register = "ip", "emask"
    workgroup = Workgroup((0, 0, 0), None, waves, "threads")
    co_id = _code_object_for(waves[0], images)
    kernel = _kernel_at(images, co_id, waves[0].pc)
    dispatch = Dispatch(0, kernel, co_id, (lanes * len(waves), 1, 1), (lanes * len(waves), 1, 1),
                        [workgroup], {}, "threads")
    focus, stop = _stop(core, waves)
    target = Target("intel", "intelgt", lanes)
    manifest = {"format": "intel-gpu-core", "producer": "intel gpu core",
                "register_layouts": {"core": [[n, s] for n, s in layout]}}
    return GpuState(root=None, source=files.source, producer="intel gpu core", manifest=manifest, target=target,
                    code_objects=code_objects, memory=memory, dispatches=[dispatch], focus=focus, stop=stop,
                    files=files)


def _with_ip(layout, span: FileSpan):
    """`ip` (cr0's dword 2) put first, over the register bytes copied once; unknown if cr0 is cut off."""
    data = span.array.tobytes()
    offset = 0
    for name, size in layout:
        if name == "cr0":
            break
        offset += size
    ip = data[offset + CR0_IP_OFFSET:offset + CR0_IP_OFFSET + 4]
    if len(ip) < 4:
        return layout, span
    return [("ip", 4)] + list(layout), BytesSpan(ip + data)


def _code_objects(core: _Core, loads: list[_Segment], files: CoreFiles):
    refs, images = [], []
    for i, m in enumerate(core.mappings):
        seg = next((s for s in loads if s.vaddr <= m.start and m.end <= s.vaddr + s.filesz), None)
        where = f"NT_FILE mapping {i} ({m.name})"
        if seg is None:
            raise StateError(f"no PT_LOAD holds its bytes [{m.start:#x}, {m.end:#x})", where)
        offset = seg.offset + (m.start - seg.vaddr)
        if offset + (m.end - m.start) > core.size:
            raise StateError(f"its bytes end past the {core.size}-byte file (truncated?)", where)
        with open(core.path, "rb") as f:
            f.seek(offset)
            data = f.read(m.end - m.start)
        if not data.startswith(ELF_MAGIC):
            raise StateError("the embedded device file is not an ELF image", where)
        name = f"{i}-{os.path.basename(m.name) or 'device.elf'}"
        refs.append(CodeObjectRef(i, files.write_image(name, data), m.bias, m.name))
        images.append((i, data, m.bias))
    return refs, images


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


def _simd_width(images) -> int | None:
    if not images:
        return None
    from .adapter import simd_width_of_code_object  # the kernels' SIMD width is IGC's DWARF
    from aspace_dap.codeobj import load_code_objects
    from aspace_dap.errors import AspaceError

    for _, data, _ in images:
        try:
            width = simd_width_of_code_object(load_code_objects(data)[0])
        except AspaceError:
            continue
        if width in (1, 2, 4, 8, 16, 32):
            return width
    return None


def _code_object_for(wave: Wave, images) -> int | None:
    if not images:
        return None
    pc = wave.pc
    for co_id, data, bias in images:
        if pc is not None and _text_contains(data, pc - bias):
            return co_id
    return images[0][0]


def _text_contains(data: bytes, address: int) -> bool:
    from aspace_dap.codeobj import load_code_objects
    from aspace_dap.errors import AspaceError

    try:
        co = load_code_objects(data)[0]
        return co.symbol_at(address) is not None
    except AspaceError:
        return False


def _kernel_at(images, co_id: int | None, pc: int | None) -> str:
    """The function the thread stopped in: DWARF's outermost frame there, else the ELF symbol."""
    from aspace_dap.codeobj import load_code_objects
    from aspace_dap.dwarf.index import DwarfIndex
    from aspace_dap.errors import AspaceError

    for i, data, bias in images:
        if i != co_id or pc is None:
            continue
        try:
            co = load_code_objects(data)[0]
            if co.has_dwarf():
                frames = DwarfIndex(co.elf, load_bias=0, e_machine=co.e_machine).frames_at(pc - bias)
                if frames:
                    return frames[-1].function
            symbol = co.symbol_at(pc - bias)
        except AspaceError:
            return ""
        return symbol.name if symbol is not None else ""
    return ""


def _stop(core: _Core, waves: list[Wave]) -> tuple[Focus | None, Stop | None]:
    faults = _faults(core, waves)
    for wave, thread in zip(waves, core.threads):
        signo = thread.siginfo[0] if thread.siginfo else thread.signal
        if signo:
            name = SIGNALS.get(signo, f"signal {signo}")
            text = name
            if thread.siginfo and signo in (SIGSEGV, 7):
                text = f"{name}: invalid access at address {thread.siginfo[2]:#x}"
            lane = int(np.argmax(wave.active_lanes)) if wave.active_lanes.any() else 0
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


# ---------------------------------------------------------------------- writing
