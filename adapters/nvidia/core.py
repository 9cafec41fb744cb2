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
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aspace_dap.errors import AspaceError, StateError
from aspace_dap.state.corefiles import BytesSpan, CoreFiles
from aspace_dap.state.files import FileSpan
from aspace_dap.state.formats import is_gzip_file, read_head
from aspace_dap.state.memory import Region, SparseMemory
from aspace_dap.state.model import (Aperture, CodeObjectRef, Dispatch, Fault, Focus, GpuState, Stop, Target, Wave,
                                    Workgroup, mask_to_lanes)
from aspace_dap.state.private import PER_LANE, PrivateMemory
from aspace_dap.state.registers import RegisterFile

ELF_MAGIC = b"\x7fELF"
ET_CORE = 4
EM_CUDA = 0xBE
ELFOSABI_CUDA = 0x33
ELFOSABIV_LATEST = 7
SHT_STRTAB = 3
SHT_NOBITS = 8

_LOUSER = 0x80000000
SHT_MANAGED = _LOUSER + 1
SHT_GLOBAL = _LOUSER + 2
SHT_LOCAL = _LOUSER + 3
SHT_SHARED = _LOUSER + 4
SHT_REGS = _LOUSER + 5
SHT_ELF_IMG = _LOUSER + 6
SHT_RELF_IMG = _LOUSER + 7
SHT_DEV_TABLE = _LOUSER + 9
SHT_CTX_TABLE = _LOUSER + 10
SHT_SM_TABLE = _LOUSER + 11
SHT_GRID_TABLE = _LOUSER + 12
SHT_CTA_TABLE = _LOUSER + 13
SHT_WP_TABLE = _LOUSER + 14
SHT_LN_TABLE = _LOUSER + 15
SHT_MOD_TABLE = _LOUSER + 16
SHT_PRED = _LOUSER + 17
SHT_PARAM = _LOUSER + 18
SHT_UREGS = _LOUSER + 19
SHT_UPRED = _LOUSER + 20
SHT_BT = _LOUSER + 8
SHT_CB_TABLE = _LOUSER + 21
SHT_META = _LOUSER + 22
SHT_CBU_BAR = _LOUSER + 23  # r575: the warp's convergence barrier masks, u32 each

# Generic addresses inside these windows are shared / local (cuda-gdb's fixed window size).
WINDOW_SIZE = 1 << 24
MAX_ROWS = 1 << 20  # more rows than any GPU has SMs, warps or lanes: a corrupt size, not a table

EXCEPTIONS = {
    1: "Lane Illegal Address", 2: "Lane User Stack Overflow", 3: "Device Hardware Stack Overflow",
    4: "Warp Illegal Instruction", 5: "Warp Out-of-range Address", 6: "Warp Misaligned Address",
    7: "Warp Invalid Address Space", 8: "Warp Invalid PC", 9: "Warp Hardware Stack Overflow",
    10: "Device Illegal Address", 11: "Lane Misaligned Address", 12: "Warp Assert",
    13: "Lane Syscall Error", 14: "Warp Illegal Address",
}
EXCEPTION_NONE = 0
EXCEPTION_UNKNOWN = 0xFFFFFFFF

# CUDBGCoredumpGenerationFlags (the meta row's flags, r565+): what the driver was told to leave out.
# CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1 sets every SKIP_*_MEMORY flag.
LEFT_OUT = {
    1 << 1: "global memory (CU_COREDUMP_SKIP_GLOBAL_MEMORY): global values read as unavailable",
    1 << 2: "shared memory (CU_COREDUMP_SKIP_SHARED_MEMORY): __shared__ values read as unavailable",
    1 << 3: "local memory (CU_COREDUMP_SKIP_LOCAL_MEMORY): the stack and spilled values read as unavailable",
    1 << 5: "constant banks (CU_COREDUMP_SKIP_CONSTBANK_MEMORY): parameters come only from .cudbg.param",
    1 << 7: "contexts that did not fault (CU_COREDUMP_FAULTED_CONTEXTS_ONLY): their kernels are not in the core",
}


@dataclass(frozen=True)
class RowFormat:
    """One table's row struct, every field through the newest driver's, as little-endian struct codes.

    `sizes` are the row sizes drivers wrote, oldest first: a row of sh_entsize bytes holds the
    fields that end within it; the others read as 0 (a newer driver's larger row is read the same way).
    """

    table: str
    fields: tuple[tuple[str, str], ...]
    sizes: tuple[int, ...]

    @property
    def fmt(self) -> str:
        return "<" + "".join(code for _, code in self.fields)

    @property
    def size(self) -> int:
        """The oldest row size: no row may be shorter."""
        return self.sizes[0]

    def _offsets(self) -> list[tuple[str, str, int]]:
        out, at = [], 0
        for name, code in self.fields:
            out.append((name, code, at))
            at += struct.calcsize("<" + code)
        return out

    def unpack(self, body: bytes, at: int, entsize: int) -> dict[str, int]:
        row = {}
        for name, code, offset in self._offsets():
            width = struct.calcsize("<" + code)
            row[name] = struct.unpack_from("<" + code, body, at + offset)[0] if offset + width <= entsize else 0
        return row

    def pack(self, entsize: int | None = None, **values: int) -> bytes:
        entsize = self.sizes[-1] if entsize is None else entsize
        out = bytearray(entsize)
        for name, code, offset in self._offsets():
            width = struct.calcsize("<" + code)
            if offset + width <= entsize:
                struct.pack_into("<" + code, out, offset, values.get(name, 0))
        return bytes(out)


def _row(table: str, sizes: tuple[int, ...], spec: str) -> RowFormat:
    form = RowFormat(table, tuple((name, code) for code, name in (f.split(":") for f in spec.split())), sizes)
    assert struct.calcsize(form.fmt) == sizes[-1], table
    return form


DEVICE_ROW = _row("devtbl", (72, 80, 88),
                  "Q:devName Q:devType Q:smType I:devId I:pciBusId I:pciDevId I:numSMs I:numWarpsPerSM "
                  "I:numLanesPerWarp I:numRegsPerLane I:numPredicatesPrLane I:smMajor I:smMinor "
                  "I:instructionSize I:status "
                  "I:numUniformRegsPrWarp I:numUniformPredicatesPrWarp "  # r400
                  "I:numConvergenceBarriersPrWarp I:padding0")  # r575
GRID_ROW = _row("gridtbl", (104, 120, 136),
                "Q:gridId64 Q:contextId Q:function Q:functionEntry Q:moduleHandle Q:parentGridId64 "
                "Q:paramsOffset I:kernelType I:origin I:gridStatus I:numRegs I:gridDimX I:gridDimY "
                "I:gridDimZ I:blockDimX I:blockDimY I:blockDimZ I:attrLaunchBlocking I:attrHostTid "
                "I:clusterDimX I:clusterDimY I:clusterDimZ I:padding0 "  # r525
                "I:preferredClusterDimX I:preferredClusterDimY I:preferredClusterDimZ I:padding1")  # r565
SM_ROW = _row("smtbl", (8, 40),
              "I:smId I:padding0 "
              "I:exception I:errorPCValid Q:errorPC I:clusterExceptionTargetBlockIdxValid "  # r555
              "I:clusterExceptionTargetBlockIdxX I:clusterExceptionTargetBlockIdxY I:clusterExceptionTargetBlockIdxZ")
CTA_ROW = _row("ctatbl", (24, 40, 56),
               "Q:gridId64 I:blockIdxX I:blockIdxY I:blockIdxZ I:padding0 "
               "I:clusterIdxX I:clusterIdxY I:clusterIdxZ I:padding1 "  # r525
               "I:clusterDimX I:clusterDimY I:clusterDimZ I:padding2")  # r565
WARP_ROW = _row("wptbl", (32, 40, 48, 64),
                "Q:errorPC I:warpId I:validLanesMask I:activeLanesMask I:isWarpBroken I:errorPCValid I:padding0 "
                "I:numRegs I:padding1 "  # r525
                "I:sharedMemSize I:padding2 "  # r570
                "I:inSyscallLanesMask I:cbuActiveLanesMask I:cbuExitedLanesMask I:cbuCollectiveLanesMask")  # r575
LANE_ROW = _row("lntbl", (48, 56),
                "Q:virtualPC Q:physPC I:ln I:threadIdxX I:threadIdxY I:threadIdxZ I:exception "
                "I:callDepth I:syscallCallDepth I:ccRegister "
                "I:cbuThreadState I:padding0")  # r575
BACKTRACE_ROW = _row("bt", (24,), "Q:returnAddress Q:virtualReturnAddress I:level I:padding0")
CONST_BANK_ROW = _row("cbankstbl", (16,), "Q:addr I:size I:bankId")  # r550
META_ROW = _row("meta", (32,), "Q:generatorName I:driverVersionMajor I:driverVersionMinor I:cudaDriverVersionMajor "
                            "I:cudaDriverVersionMinor I:flags I:timestamp")  # r565
MODULE_ROW = _row("modtbl", (8,), "Q:moduleHandle")
CONTEXT_ROW = _row("ctxtbl", (40,), "Q:contextId Q:sharedWindowBase Q:localWindowBase Q:globalWindowBase "
                                    "I:deviceIdx I:tid")

TABLES = {SHT_DEV_TABLE: DEVICE_ROW, SHT_GRID_TABLE: GRID_ROW, SHT_SM_TABLE: SM_ROW, SHT_CTA_TABLE: CTA_ROW,
          SHT_WP_TABLE: WARP_ROW, SHT_LN_TABLE: LANE_ROW, SHT_MOD_TABLE: MODULE_ROW, SHT_CTX_TABLE: CONTEXT_ROW,
          SHT_BT: BACKTRACE_ROW, SHT_CB_TABLE: CONST_BANK_ROW, SHT_META: META_ROW}

# Row sizes by driver (cudacoredump.h's format history): what write_core(version=...) writes.
ROW_SIZES = {
    "r346": {"devtbl": 72, "gridtbl": 104, "smtbl": 8, "ctatbl": 24, "wptbl": 32, "lntbl": 48},
    "r400": {"devtbl": 80, "gridtbl": 104, "smtbl": 8, "ctatbl": 24, "wptbl": 32, "lntbl": 48},
    "r525": {"devtbl": 80, "gridtbl": 120, "smtbl": 8, "ctatbl": 40, "wptbl": 40, "lntbl": 48},
    "r555": {"devtbl": 80, "gridtbl": 120, "smtbl": 40, "ctatbl": 40, "wptbl": 40, "lntbl": 48},
    "r565": {"devtbl": 80, "gridtbl": 136, "smtbl": 40, "ctatbl": 56, "wptbl": 40, "lntbl": 48},
    "r570": {"devtbl": 80, "gridtbl": 136, "smtbl": 40, "ctatbl": 56, "wptbl": 48, "lntbl": 48},
    "r575": {"devtbl": 88, "gridtbl": 136, "smtbl": 40, "ctatbl": 56, "wptbl": 64, "lntbl": 56},
}
CONST_BANKS_SINCE = "r550"  # the constant bank table
META_SINCE = "r565"  # .cudbg.meta: who wrote the core, driver and CUDA versions
UNIFORM_SINCE = "r400"  # uniform registers and predicates
CBU_SINCE = "r575"  # convergence barrier masks (.cudbg.cbu_bar), per-lane thread state


def is_cuda_core(path: str | os.PathLike) -> bool:
    """True for a file whose ELF header says CUDA core dump (the file may be gzip-compressed)."""
    head = read_head(path)
    return (len(head) == 20 and head[:4] == ELF_MAGIC and head[7] == ELFOSABI_CUDA
            and struct.unpack_from("<HH", head, 16) == (ET_CORE, EM_CUDA))


# ---------------------------------------------------------------------- reading: the ELF container


@dataclass(frozen=True)
class _Section:
    index: int
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class _CoreElf:
    """The section table of a core file, every section checked to lie inside the file."""

    def __init__(self, path: Path, label: str | None = None):
        self.path = path  # the file read: the core, or its inflated copy
        self.label = label or str(path)  # the core as the user named it, for errors
        try:
            self.file_size = path.stat().st_size
            with open(path, "rb") as f:
                header = f.read(64)
                if len(header) < 64 or header[:4] != ELF_MAGIC:
                    raise StateError("not an ELF file", self.label)
                if header[4] != 2 or header[5] != 1:
                    raise StateError("a CUDA core dump is a little-endian ELF64 file", self.label)
                e_type, e_machine = struct.unpack_from("<HH", header, 16)
                if e_type != ET_CORE or e_machine != EM_CUDA or header[7] != ELFOSABI_CUDA:
                    raise StateError(f"not a CUDA core dump (e_type {e_type}, e_machine {e_machine:#x}, "
                                     f"OSABI {header[7]:#x})", self.label)
                shoff, = struct.unpack_from("<Q", header, 40)
                shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 58)
                if shentsize != 64 or shnum == 0 or shoff + shnum * 64 > self.file_size:
                    raise StateError("section header table missing or outside the file", self.label)
                f.seek(shoff)
                table = f.read(shnum * 64)
        except OSError as exc:
            raise StateError(f"cannot read: {exc.strerror or exc}", self.label) from exc
        raw = [struct.unpack_from("<IIQQQQIIQQ", table, i * 64) for i in range(shnum)]
        if not 0 < shstrndx < shnum:
            raise StateError(f"section name table index {shstrndx} out of range", self.label)
        names_hdr = raw[shstrndx]
        self._check_extent(f"section {shstrndx}", names_hdr[4], names_hdr[5])
        names = self._read(names_hdr[4], names_hdr[5])
        self.sections: list[_Section] = []
        for index, (name_at, sh_type, _, addr, offset, size, link, info, _, entsize) in enumerate(raw):
            end = names.find(b"\0", name_at)
            name = names[name_at:end].decode("latin-1") if 0 <= name_at < len(names) and end >= 0 \
                else f"section {index}"
            if sh_type != SHT_NOBITS and index:
                self._check_extent(name, offset, size)
            self.sections.append(_Section(index, name, sh_type, addr, offset, size, link, info, entsize))
        self.span = FileSpan(lambda: (path, 0), self.file_size)
        self._rows: dict[int, list[dict[str, int]]] = {}

    def _check_extent(self, name: str, offset: int, size: int) -> None:
        if offset + size > self.file_size:
            raise StateError(f"{size} bytes at file offset {offset:#x} run past the end of the "
                             f"{self.file_size}-byte file (truncated)", name)

    def _read(self, offset: int, size: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(size)

    def body(self, sec: _Section) -> bytes:
        return b"" if sec.type == SHT_NOBITS else self._read(sec.offset, sec.size)

    def of_type(self, sh_type: int) -> list[_Section]:
        return [s for s in self.sections if s.type == sh_type]

    def rows(self, sec: _Section) -> list[dict[str, int]]:
        found = self._rows.get(sec.index)
        if found is None:
            found = self._rows[sec.index] = self._parse_rows(sec)
        return found

    def _parse_rows(self, sec: _Section) -> list[dict[str, int]]:
        form = TABLES[sec.type]
        if sec.entsize < form.size:
            raise StateError(f"sh_entsize {sec.entsize} is smaller than a {form.table} row "
                             f"({form.size} bytes)", sec.name)
        if sec.size % sec.entsize:
            raise StateError(f"{sec.size} bytes is not a whole number of {sec.entsize}-byte rows "
                             f"(truncated table)", sec.name)
        if sec.size // sec.entsize > MAX_ROWS:
            raise StateError(f"{sec.size // sec.entsize} rows is more than a {form.table} table holds", sec.name)
        body = self.body(sec)
        return [form.unpack(body, at, sec.entsize) for at in range(0, len(body), sec.entsize)]

    def parent(self, sec: _Section, table_type: int) -> tuple[_Section, dict[str, int]]:
        """The parent table (sh_link) and the row of it (sh_info) that `sec` belongs to."""
        want = TABLES[table_type].table
        if not 0 < sec.link < len(self.sections) or self.sections[sec.link].type != table_type:
            raise StateError(f"sh_link {sec.link} does not name a {want} section", sec.name)
        parent = self.sections[sec.link]
        rows = self.rows(parent)
        if sec.info >= len(rows):
            raise StateError(f"sh_info {sec.info} is past the {len(rows)} rows of {parent.name}", sec.name)
        return parent, rows[sec.info]

    def children(self, sh_type: int, parent_type: int) -> dict[tuple[int, int], list[_Section]]:
        """Sections of one type keyed by (parent section index, parent row), links checked."""
        out: dict[tuple[int, int], list[_Section]] = {}
        for sec in self.of_type(sh_type):
            self.parent(sec, parent_type)
            out.setdefault((sec.link, sec.info), []).append(sec)
        return out

    def string(self, index: int) -> str:
        for sec in self.of_type(SHT_STRTAB):
            if sec.name == ".strtab":
                body = self.body(sec)
                end = body.find(b"\0", index)
                return body[index:end].decode("latin-1") if 0 <= index < len(body) and end >= 0 else ""
        return ""


# ---------------------------------------------------------------------- reading: the model


def load_core(path: str | os.PathLike) -> GpuState:
    """Open a CUDA core dump; raises StateError(message, section name) for the first problem."""
    path = Path(path)
    files = CoreFiles(path, "a CUDA core dump", "aspace-cudacore-")
    try:
        elf_path = files.inflate(path) if is_gzip_file(path) else path
        return _CoreReader(_CoreElf(elf_path, str(path)), files).build()
    except BaseException:
        files.close()
        raise


class _CoreReader:
    def __init__(self, elf: _CoreElf, files: CoreFiles):
        self.elf = elf
        self.files = files
        self.layouts: dict[str, list[tuple[str, int]]] = {}
        self.next_wave = 0
        self.lane_exceptions: dict[tuple[int, int], int] = {}  # (wave id, lane) -> CUDBGException_t
        # parent (section, row) -> child sections, each link checked once
        self.lanes_by_warp = elf.children(SHT_LN_TABLE, SHT_WP_TABLE)
        self.per_lane = {kind: elf.children(kind, SHT_LN_TABLE) for kind in (SHT_REGS, SHT_PRED, SHT_LOCAL, SHT_BT)}
        self.uregs = elf.children(SHT_UREGS, SHT_WP_TABLE)
        self.upreds = elf.children(SHT_UPRED, SHT_WP_TABLE)
        self.barriers = elf.children(SHT_CBU_BAR, SHT_WP_TABLE)
        self.waves_by_sm: dict[tuple[int, int], list[Wave]] = {}  # (smtbl section, row) -> its warps
        self.error_pcs: dict[int, int] = {}  # wave id -> the warp row's errorPC, when errorPCValid
        self.syscall_waves: list[int] = []  # waves with lanes in a syscall (r575 inSyscallLanesMask)
        self.sm_fault: tuple[int, int, int | None] | None = None  # (wave, code, errorPC) of an SM row's exception

    def _table(self, sh_type: int, what: str) -> tuple[_Section, list[dict[str, int]]]:
        found = self.elf.of_type(sh_type)
        if not found:
            raise StateError(f"the core has no {what} table", self.elf.label)
        if len(found) > 1 and sh_type == SHT_DEV_TABLE:
            raise StateError(f"{len(found)} device tables; a core has one", found[1].name)
        return found[0], self.elf.rows(found[0])

    def _device_of(self, sec: _Section) -> int:
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
        dispatches = self._dispatches(modules, memory.get("global"), target.apertures)
        focus, stop = self._focus(dispatches)
        stop.faults = self._faults(focus)
        producer = self._producer()
        warnings = self._left_out(memory)
        not_kept = self._not_kept(focus, stop)
        manifest = {"format": "cuda-core", "producer": producer, "register_layouts":
                    {name: [[reg, size] for reg, size in layout] for name, layout in self.layouts.items()}}
        state = GpuState(root=None, source=self.files.source, producer=producer, manifest=manifest,
                         target=target, code_objects=code_objects, memory=memory, dispatches=dispatches,
                         focus=focus, stop=stop, files=self.files, warnings=warnings)
        state.not_kept = not_kept
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

    def _context_device(self, sec: _Section) -> int:
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
        images: dict[tuple[int, int], tuple[_Section, bool]] = {}
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

    def _regions(self, sections: list[_Section], space: str, path: str, base: int | None = None) -> SparseMemory:
        regions = [Region(s.addr if base is None else base, s.size, s.name, s.offset, span=self.elf.span)
                   for s in sections if s.type != SHT_NOBITS]
        return SparseMemory(regions, space, path)

    def _global_memory(self) -> dict[str, SparseMemory]:
        sections = self.elf.of_type(SHT_GLOBAL) + self.elf.of_type(SHT_MANAGED)
        return {"global": self._regions(sections, "global", ".cudbg.global")} if sections else {}

    def _const_banks(self, table: _Section | None, global_memory: SparseMemory | None) -> SparseMemory | None:
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
                found = params.get((sec.index, i), [])
                memory = self._regions(found, "param", found[0].name, grid["paramsOffset"]) if found else None
                bank_tables = banks.get((sec.index, i), [])
                const = self._const_banks(bank_tables[0] if bank_tables else None, global_memory)
                grids.setdefault((dev, grid["gridId64"]), (grid, memory, const))
        workgroups: dict[tuple[int, int], list[Workgroup]] = {}
        shared = elf.children(SHT_SHARED, SHT_CTA_TABLE)
        warps_by_cta = elf.children(SHT_WP_TABLE, SHT_CTA_TABLE)
        sm_devices = {sec.index: self._device_of(sec) for sec in elf.of_type(SHT_SM_TABLE)}
        for cta_sec in elf.of_type(SHT_CTA_TABLE):
            sm_sec, _ = elf.parent(cta_sec, SHT_SM_TABLE)
            dev = sm_devices[sm_sec.index]
            for row_index, cta in enumerate(elf.rows(cta_sec)):
                key = (dev, cta["gridId64"])
                if key not in grids:
                    raise StateError(f"CTA row {row_index} names grid {cta['gridId64']}, which the grid "
                                     f"table of device {dev} does not hold", cta_sec.name)
                grid = grids[key][0]
                lds_sections = shared.get((cta_sec.index, row_index), [])
                lds = self._regions(lds_sections, "local", lds_sections[0].name, 0) if lds_sections else None
                waves = []
                for wp_sec in warps_by_cta.get((cta_sec.index, row_index), []):
                    waves.extend(self._warps(wp_sec, grid, dev))
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
                (grid["gridDimX"], grid["gridDimY"], grid["gridDimZ"]),
                (grid["blockDimX"], grid["blockDimY"], grid["blockDimZ"]), workgroups[key], memory, where)
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

    def _warps(self, wp_sec: _Section, grid: dict[str, int], dev: int) -> list[Wave]:
        elf = self.elf
        waves = []
        for w, warp in enumerate(elf.rows(wp_sec)):
            lane_rows: dict[int, tuple[_Section, int, dict[str, int]]] = {}
            for ln_sec in self.lanes_by_warp.get((wp_sec.index, w), []):
                for i, lane in enumerate(elf.rows(ln_sec)):
                    if lane["ln"] >= self.lanes:
                        raise StateError(f"row {i} names lane {lane['ln']} of a {self.lanes}-lane warp",
                                         ln_sec.name)
                    lane_rows[lane["ln"]] = (ln_sec, i, lane)
            uniform = tuple(found.get((wp_sec.index, w), []) for found in (self.uregs, self.upreds, self.barriers))
            waves.append(self._wave(wp_sec, warp, lane_rows, self.per_lane, uniform, grid, dev))
        return waves

    def _lane_words(self, kind_sections: dict, lane_rows: dict, valid: np.ndarray, count: int) -> np.ndarray:
        """(lanes, n) u32 per lane from per-lane sections; n is what every valid lane holds."""
        words: dict[int, np.ndarray] = {}
        for ln, (ln_sec, i, _) in lane_rows.items():
            found = kind_sections.get((ln_sec.index, i))
            if found:
                body = self.elf.body(found[0])
                words[ln] = np.frombuffer(body[:len(body) // 4 * 4], dtype="<u4")
        n = min([count] + [len(words.get(ln, ())) for ln in np.flatnonzero(valid)]) if words or valid.any() else 0
        out = np.zeros((self.lanes, n), dtype="<u4")
        for ln, values in words.items():
            out[ln] = values[:n]
        return out

    def _uniform_words(self, sections: list[_Section]) -> np.ndarray:
        if not sections:
            return np.zeros(0, dtype="<u4")
        return np.frombuffer(self.elf.body(sections[0])[:sections[0].size // 4 * 4], dtype="<u4")

    def _return_addresses(self, lane_rows) -> dict[int, list[int]] | None:
        """Each lane's call stack from its backtrace table: virtual return addresses by level (level 0
        is the innermost caller), None when the core has no backtrace tables for this warp."""
        found = {}
        for ln, (ln_sec, i, _) in lane_rows.items():
            for sec in self.per_lane[SHT_BT].get((ln_sec.index, i), []):
                levels = {}
                for row in self.elf.rows(sec):
                    levels.setdefault(row["level"], row["virtualReturnAddress"])
                if sorted(levels) != list(range(len(levels))):
                    raise StateError(f"backtrace levels {sorted(levels)} are not 0..{len(levels) - 1}", sec.name)
                found[ln] = [levels[k] for k in range(len(levels))]
        return found or None

    def _wave(self, wp_sec, warp, lane_rows, per_lane, uniform, grid, dev) -> Wave:
        lanes = self.lanes
        where = f"{wp_sec.name}[warp {warp['warpId']}]"
        valid = mask_to_lanes(warp["validLanesMask"], lanes)
        for ln in np.flatnonzero(valid):
            if int(ln) not in lane_rows:
                raise StateError(f"valid lane {int(ln)} has no lane table row", where)
        active = warp["activeLanesMask"] & warp["validLanesMask"]
        pcs = np.zeros(lanes, dtype=np.uint64)
        for ln, (_, _, lane) in lane_rows.items():
            pcs[ln] = lane["virtualPC"]
        first = next((ln for ln in range(lanes) if active >> ln & 1), None)
        if first is None:
            first = next((ln for ln in range(lanes) if valid[ln]), None)
        warp_pc = int(pcs[first]) if first is not None else warp["errorPC"]
        pcs[~valid] = warp_pc

        device = self.devices[dev]  # register counts are the warp's own device's
        regs = self._lane_words(per_lane[SHT_REGS], lane_rows, valid, device["numRegsPerLane"])
        preds = self._lane_words(per_lane[SHT_PRED], lane_rows, valid, device["numPredicatesPrLane"])
        uregs, upreds, barriers = (self._uniform_words(sections) for sections in uniform)
        mask_bytes = (lanes + 7) // 8
        layout = [("pc", 8), ("exec", mask_bytes)]
        layout += [(f"R{i}", 4 * lanes) for i in range(regs.shape[1])]
        layout += [(f"P{i}", lanes) for i in range(preds.shape[1])]
        layout += [(f"UR{i}", 4) for i in range(len(uregs))]
        layout += [(f"UP{i}", 1) for i in range(len(upreds))]
        layout += [(f"B{i}", 4) for i in range(len(barriers))]  # convergence barriers: a mask of lanes each
        data = (struct.pack("<Q", warp_pc) + active.to_bytes(mask_bytes, "little")
                + np.ascontiguousarray(regs.T).tobytes()
                + np.ascontiguousarray((preds.T & 0xFF).astype(np.uint8)).tobytes() + uregs.tobytes()
                + (upreds & 0xFF).astype(np.uint8).tobytes() + barriers.tobytes())
        layout_name = f"cuda_r{regs.shape[1]}_p{preds.shape[1]}_ur{len(uregs)}_up{len(upreds)}" + \
            (f"_b{len(barriers)}" if len(barriers) else "")
        self.layouts[layout_name] = layout
        registers = RegisterFile(layout, BytesSpan(data), f"{where}.registers", layout_name)

        wave_id = self.next_wave
        self.next_wave += 1
        for ln, (_, _, lane) in lane_rows.items():
            self.lane_exceptions[(wave_id, ln)] = lane["exception"]
        if warp["errorPCValid"]:
            self.error_pcs[wave_id] = warp["errorPC"]
        if warp["inSyscallLanesMask"]:
            self.syscall_waves.append(wave_id)
        wave = Wave(wave_id, self._index_in_block(warp, lane_rows, grid), registers, lanes, valid,
                    self._local(per_lane[SHT_LOCAL], lane_rows, where), pcs, where)
        wave.return_addresses = self._return_addresses(lane_rows)
        return wave

    def _index_in_block(self, warp, lane_rows, grid) -> int:
        # the lane table's thread index says where the warp sits in its block (warpId is the SM's slot)
        if not lane_rows:
            return warp["warpId"]
        ln, (_, _, lane) = min(lane_rows.items())
        bx, by = max(grid["blockDimX"], 1), max(grid["blockDimY"], 1)
        flat = lane["threadIdxX"] + bx * (lane["threadIdxY"] + by * lane["threadIdxZ"])
        return max(flat - ln, 0) // self.lanes

    def _local(self, local_sections, lane_rows, where) -> PrivateMemory | None:
        found = {}
        for ln, (ln_sec, i, _) in lane_rows.items():
            sections = local_sections.get((ln_sec.index, i))
            if sections:
                found[ln] = sections[0]
        if not found:
            return None
        base = min(s.addr for s in found.values())
        lane_size = max(s.addr + s.size for s in found.values()) - base
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

    def _focus(self, dispatches: list[Dispatch]) -> tuple[Focus | None, Stop | None]:
        waves = [w for d in dispatches for w in d.waves]
        for wave in waves:
            for ln in np.flatnonzero(wave.valid_lanes):
                code = self.lane_exceptions.get((wave.id, int(ln)), EXCEPTION_NONE)
                if code not in (EXCEPTION_NONE, EXCEPTION_UNKNOWN):
                    name = EXCEPTIONS.get(code, f"exception {code}")
                    # warp errors are reported late: the lanes stand past the faulting instruction, which
                    # the warp row's errorPC names (cuda-gdb: "the exception was triggered at PC ...")
                    error_pc = self.error_pcs.get(wave.id)
                    at = f" triggered at PC {error_pc:#x}" if error_pc is not None else ""
                    return Focus(wave.id, int(ln)), Stop("exception", f"CUDA Exception: {name} ({code}){at}",
                                                         pc=error_pc)
        # r555+: an SM row keeps the exception even when the faulting warps exited (no lane says so);
        # the focus goes to a warp of that SM whose errorPC is valid, else its first warp
        for (sm_sec, sm_row), on_sm in self.waves_by_sm.items():
            row = self.elf.rows(self.elf.sections[sm_sec])[sm_row]
            code = row["exception"]
            if code in (EXCEPTION_NONE, EXCEPTION_UNKNOWN) or not on_sm:
                continue
            wave = next((w for w in on_sm if w.id in self.error_pcs), on_sm[0])
            active = np.flatnonzero(wave.active_lanes)
            lane = int(active[0]) if len(active) else int(np.flatnonzero(wave.valid_lanes)[0]) \
                if wave.valid_lanes.any() else 0
            name = EXCEPTIONS.get(code, f"exception {code}")
            device = f" of device {self.elf.sections[sm_sec].info}" if len(self.devices) > 1 else ""
            where = f" at {row['errorPC']:#x}" if row["errorPCValid"] else ""
            self.sm_fault = (wave.id, code, row["errorPC"] if row["errorPCValid"] else None)
            if row["clusterExceptionTargetBlockIdxValid"]:  # r565: a cluster request to another block failed
                where += (f", target block ({row['clusterExceptionTargetBlockIdxX']},"
                          f"{row['clusterExceptionTargetBlockIdxY']},{row['clusterExceptionTargetBlockIdxZ']})")
            return Focus(wave.id, lane), Stop("exception", f"CUDA Exception: {name} ({code}) on SM {row['smId']}"
                                              f"{device}{where}", pc=row["errorPC"] if row["errorPCValid"] else None)
        for wave in waves:
            active = np.flatnonzero(wave.active_lanes)
            if len(active):
                return Focus(wave.id, int(active[0])), Stop("pause", "CUDA core dump: no lane reports an exception")
        return (Focus(waves[0].id, 0) if waves else None), Stop("pause", "CUDA core dump")


def _cluster_size(grid: dict[str, int]) -> tuple[int, int, int] | None:
    """The grid's thread block cluster shape (r525+, sm_90+); None for a launch without clusters
    (every dimension 1, or 0 in rows that predate the field)."""
    size = (grid["clusterDimX"], grid["clusterDimY"], grid["clusterDimZ"])
    return None if all(n <= 1 for n in size) else size


# ---------------------------------------------------------------------- writing
