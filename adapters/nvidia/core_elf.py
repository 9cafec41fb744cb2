"""The container of a CUDA core dump: its ELF section table, read in bulk, and the tables it holds.

cudacoredump.h's sections are recognised by sh_type (SHT_LOUSER + n), not by name. Tables hold fixed rows
of sh_entsize bytes (newer drivers append fields, so rows may be longer than the structs below, never
shorter); a child section names its parent table by sh_link (a section index) and one row of it by
sh_info. A full GPU's core has a section per lane and kind (regs, pred, local, bt): hundreds of thousands,
more than e_shnum holds, so ELF's extended numbering is followed (e_shnum 0: the count is section 0's
sh_size; e_shstrndx SHN_XINDEX: the index is section 0's sh_link), as libcudacore's elf.c does. The
section table is one numpy array; every section is checked to lie inside the file at once; a section's
name is read only when it is asked for (errors, labels); bodies are read with pread, not through a
memory map, so opening does not make the file resident.
"""

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
EM_CUDA = 0xBE
ELFOSABI_CUDA = 0x33
ELFOSABIV_LATEST = 7  # the core's ABI version (libcudacore common.h)
SHN_LORESERVE, SHN_XINDEX = 0xFF00, 0xFFFF  # ELF extended section numbering
EI_PAD = 9
CORE_IDENT = ELF_MAGIC + bytes([2, 1, 1, ELFOSABI_CUDA, ELFOSABIV_LATEST])  # libcudacore's cudaElfIdent
IDENT_NAMES = ("EI_MAG0", "EI_MAG1", "EI_MAG2", "EI_MAG3", "EI_CLASS", "EI_DATA", "EI_VERSION", "EI_OSABI",
               "EI_ABIVERSION")
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
SKIP_NONRELOCATED_ELF_IMAGES, SKIP_GLOBAL_MEMORY, SKIP_SHARED_MEMORY = 1 << 0, 1 << 1, 1 << 2
SKIP_LOCAL_MEMORY, SKIP_CONSTBANK_MEMORY, GZIP_COMPRESS, FAULTED_CONTEXTS_ONLY = 1 << 3, 1 << 5, 1 << 6, 1 << 7
# CUDA_COREDUMP_GENERATION_FLAGS names them (comma-separated, lower case), as users set it
GENERATION_FLAGS = {"skip_nonrelocated_elf_images": SKIP_NONRELOCATED_ELF_IMAGES,
                    "skip_global_memory": SKIP_GLOBAL_MEMORY, "skip_shared_memory": SKIP_SHARED_MEMORY,
                    "skip_local_memory": SKIP_LOCAL_MEMORY, "skip_abort": 1 << 4,
                    "skip_constbank_memory": SKIP_CONSTBANK_MEMORY, "gzip_compress": GZIP_COMPRESS,
                    "faulted_contexts_only": FAULTED_CONTEXTS_ONLY}
# what the vLLM team's posts tell users to set (CUDBG_COREDUMP_LIGHTWEIGHT_FLAGS in cudadebugger.h)
LIGHTWEIGHT_FLAGS = (SKIP_NONRELOCATED_ELF_IMAGES | SKIP_GLOBAL_MEMORY | SKIP_SHARED_MEMORY | SKIP_LOCAL_MEMORY
                     | SKIP_CONSTBANK_MEMORY)
# the memory spaces (the NVIDIA adapter's names) each flag leaves without bytes, and what to say about them
SKIPPED_SPACES = {SKIP_GLOBAL_MEMORY: (("global",), "the core skipped global memory (skip_global_memory)"),
                  SKIP_SHARED_MEMORY: (("shared",), "the core skipped shared memory (skip_shared_memory)"),
                  SKIP_LOCAL_MEMORY: (("local",), "the core skipped local memory (skip_local_memory)"),
                  SKIP_CONSTBANK_MEMORY: (("const",), "the core skipped the constant banks (skip_constbank_memory)")}


def generation_flags(flags: int | str) -> int:
    """CUDBGCoredumpGenerationFlags from a number or CUDA_COREDUMP_GENERATION_FLAGS' comma-separated names."""
    if isinstance(flags, int):
        return flags
    out = 0
    for name in (n.strip().lower() for n in flags.split(",") if n.strip()):
        if name not in GENERATION_FLAGS:
            raise StateError(f"unknown core dump generation flag {name!r}; known: {', '.join(GENERATION_FLAGS)}",
                             "generation_flags")
        out |= GENERATION_FLAGS[name]
    return out


LEFT_OUT = {
    1 << 0: "its unrelocated ELF images (CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES): the relocated ones are read",
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

    def dtype(self, entsize: int) -> np.dtype:
        """A numpy record of `entsize` bytes holding the fields that end within it (rows read in bulk)."""
        names, formats, offsets = [], [], []
        for name, code, offset in self._offsets():
            width = struct.calcsize("<" + code)
            if offset + width <= entsize:
                names.append(name)
                formats.append("<" + code)
                offsets.append(offset)
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": entsize})

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




SECTION = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("addr", "<u8"), ("offset", "<u8"),
                    ("size", "<u8"), ("link", "<u4"), ("info", "<u4"), ("align", "<u8"), ("entsize", "<u8")])
MEMORY_TYPES = (SHT_GLOBAL, SHT_MANAGED, SHT_LOCAL)
MAX_NAME = 256


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class CoreElf:
    """The section table of a core file, every section checked to lie inside the file."""

    def __init__(self, path: Path, label: str | None = None):
        self.path = path  # the file read: the core, or its inflated copy
        self.label = label or str(path)  # the core as the user named it, for errors
        self._fd: int | None = None
        self._rows: dict[int, list[dict[str, int]]] = {}
        self._sections: dict[int, Section] = {}
        self._by_type: dict[int, np.ndarray] | None = None
        self.span = FileSpan(lambda: (path, 0), 0)
        try:
            self._open()
        except OSError as exc:
            self.close()
            raise StateError(f"cannot read: {exc.strerror or exc}", self.label) from exc
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        self.file_size = self.path.stat().st_size
        self.span = FileSpan(lambda: (self.path, 0), self.file_size)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        header = os.pread(self._fd, 64, 0)
        self._check_header(header)
        shoff, = struct.unpack_from("<Q", header, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 58)
        if shentsize != 64 or not 0 < shoff <= self.file_size - 64:
            raise StateError("section header table missing or outside the file", self.label)
        section0 = os.pread(self._fd, 64, shoff)
        count = shnum or struct.unpack_from("<Q", section0, 32)[0]  # extended numbering: section 0's sh_size
        if shstrndx == SHN_XINDEX:
            shstrndx, = struct.unpack_from("<I", section0, 40)  # ... and the string table's: its sh_link
        if count == 0 or count > (self.file_size - shoff) // 64:
            raise StateError("section header table missing or outside the file", self.label)
        self.table = np.frombuffer(os.pread(self._fd, count * 64, shoff), dtype=SECTION)
        self.count = count
        self.types = self.table["type"]
        if not 0 < shstrndx < count:
            raise StateError(f"section name table index {shstrndx} out of range", self.label)
        self._names = self.table[shstrndx]
        self._check_extent(shstrndx)
        self._check_extents()
        for sh_type in TABLES:
            self._check_tables(sh_type)

    def _check_header(self, header: bytes) -> None:
        if len(header) < 64 or header[:4] != ELF_MAGIC:
            raise StateError("not an ELF file", self.label)
        if header[4] != 2 or header[5] != 1:
            raise StateError("a CUDA core dump is a little-endian ELF64 file", self.label)
        e_type, e_machine = struct.unpack_from("<HH", header, 16)
        if e_type != ET_CORE or e_machine != EM_CUDA or header[7] != ELFOSABI_CUDA:
            raise StateError(f"not a CUDA core dump (e_type {e_type}, e_machine {e_machine:#x}, "
                             f"OSABI {header[7]:#x})", self.label)
        # libcudacore (elf.c, elfCheckHeader) compares all nine ident bytes with its own: magic,
        # ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_CUDA and ABI version ELFOSABIV_LATEST
        if header[:EI_PAD] != CORE_IDENT:
            at = next(i for i in range(EI_PAD) if header[i] != CORE_IDENT[i])
            raise StateError(f"ELF ident byte {at} ({IDENT_NAMES[at]}) is {header[at]}, not "
                             f"{CORE_IDENT[at]}: cuda-gdb opens only cores whose first {EI_PAD} ident "
                             f"bytes are {CORE_IDENT.hex(' ')}", self.label)

    def close(self) -> None:
        """Stop holding the file open (later reads open it again)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- checks, all sections at once
    def _check_extent(self, index: int) -> None:
        offset, size = int(self.table["offset"][index]), int(self.table["size"][index])
        if offset > self.file_size or size > self.file_size - offset:
            raise StateError(f"{size} bytes at file offset {offset:#x} run past the end of the "
                             f"{self.file_size}-byte file (truncated)", self.name(index))

    def _check_extents(self) -> None:
        offsets, sizes, size = self.table["offset"], self.table["size"], np.uint64(self.file_size)
        held = self.types != SHT_NOBITS
        held[0] = False
        bad = held & ((offsets > size) | (sizes > size - np.minimum(offsets, size)))
        if bad.any():
            self._check_extent(int(np.argmax(bad)))
        memory = np.isin(self.types, MEMORY_TYPES)
        wraps = memory & (sizes > np.uint64(2**64 - 1) - self.table["addr"])
        if wraps.any():
            i = int(np.argmax(wraps))
            raise StateError(f"sh_addr {int(self.table['addr'][i]):#x} + sh_size {int(sizes[i]):#x} runs past the "
                             f"64-bit address space", self.name(i))

    def _check_tables(self, sh_type: int) -> None:
        """Every table of a type: rows at least as long as the oldest driver's, a whole number of them."""
        form = TABLES[sh_type]
        found = self.indices(sh_type)
        if not len(found):
            return
        entsize, size = self.table["entsize"][found], self.table["size"][found]
        short = entsize < form.size
        if short.any():
            i = int(found[np.argmax(short)])
            raise StateError(f"sh_entsize {int(self.table['entsize'][i])} is smaller than a {form.table} row "
                             f"({form.size} bytes)", self.name(i))
        ragged = size % np.maximum(entsize, 1) != 0
        if ragged.any():
            i = int(found[np.argmax(ragged)])
            raise StateError(f"{int(self.table['size'][i])} bytes is not a whole number of "
                             f"{int(self.table['entsize'][i])}-byte rows (truncated table)", self.name(i))
        many = size // np.maximum(entsize, 1) > MAX_ROWS
        if many.any():
            i = int(found[np.argmax(many)])
            raise StateError(f"{int(self.row_counts(np.array([i]))[0])} rows is more than a {form.table} table holds",
                             self.name(i))

    # -- sections
    def name(self, index: int) -> str:
        names_at, names_size = int(self._names["offset"]), int(self._names["size"])
        at = int(self.table["name"][index])
        if at >= names_size:
            return f"section {index}"
        data = self.read(names_at + at, min(MAX_NAME, names_size - at))
        end = data.find(b"\0")
        return data[:end].decode("latin-1") if end >= 0 else f"section {index}"

    def section(self, index: int) -> Section:
        found = self._sections.get(index)
        if found is None:
            row = self.table[index]
            found = self._sections[index] = Section(index, self.name(index), int(row["type"]), int(row["addr"]),
                                                    int(row["offset"]), int(row["size"]), int(row["link"]),
                                                    int(row["info"]), int(row["entsize"]))
        return found

    def indices(self, sh_type: int) -> np.ndarray:
        """The indices of the sections of a type, in file order."""
        if self._by_type is None:
            order = np.argsort(self.types, kind="stable")
            kinds, starts = np.unique(self.types[order], return_index=True)
            bounds = list(starts[1:]) + [len(order)]
            self._by_type = {int(k): order[s:e] for k, s, e in zip(kinds, starts, bounds)}
        return self._by_type.get(sh_type, np.zeros(0, np.int64))

    def of_type(self, sh_type: int) -> list[Section]:
        return [self.section(int(i)) for i in self.indices(sh_type)]

    def row_counts(self, indices: np.ndarray) -> np.ndarray:
        return self.table["size"][indices] // np.maximum(self.table["entsize"][indices], 1)

    # -- bodies
    def read(self, offset: int, size: int) -> bytes:
        if size <= 0:
            return b""
        if self._fd is not None:
            return os.pread(self._fd, size, offset)
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(size)

    def body(self, sec: Section) -> bytes:
        return b"" if sec.type == SHT_NOBITS else self.read(sec.offset, sec.size)

    def rows(self, sec: Section) -> list[dict[str, int]]:
        found = self._rows.get(sec.index)
        if found is None:
            form, body = TABLES[sec.type], self.body(sec)
            found = self._rows[sec.index] = [form.unpack(body, at, sec.entsize)
                                             for at in range(0, len(body), sec.entsize)]
        return found

    def row_array(self, indices: np.ndarray, sh_type: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows of many tables of one type in one array (every field of the newest row; fields a row is
        too short for read 0), and where each table's rows start in it (len(indices) + 1 bounds)."""
        form = TABLES[sh_type]
        full = form.dtype(form.sizes[-1])
        counts = self.row_counts(indices).astype(np.int64)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        out = np.zeros(int(bounds[-1]), dtype=full)
        entsizes = self.table["entsize"][indices]
        for entsize in np.unique(entsizes):
            group = np.flatnonzero(entsizes == entsize)
            raw = b"".join(self.read(int(self.table["offset"][indices[g]]), int(self.table["size"][indices[g]]))
                           for g in group)
            rows = np.frombuffer(raw, dtype=form.dtype(int(entsize)))
            at = np.concatenate([np.arange(bounds[g], bounds[g + 1]) for g in group]) if len(group) else []
            for field in rows.dtype.names:
                out[field][at] = rows[field]
        return out, bounds

    def parent(self, sec: Section, table_type: int) -> tuple[Section, dict[str, int]]:
        """The parent table (sh_link) and the row of it (sh_info) that `sec` belongs to."""
        want = TABLES[table_type].table
        if not 0 < sec.link < self.count or int(self.types[sec.link]) != table_type:
            raise StateError(f"sh_link {sec.link} does not name a {want} section", sec.name)
        parent = self.section(sec.link)
        rows = self.rows(parent)
        if sec.info >= len(rows):
            raise StateError(f"sh_info {sec.info} is past the {len(rows)} rows of {parent.name}", sec.name)
        return parent, rows[sec.info]

    def children(self, sh_type: int, parent_type: int) -> "Children":
        return Children(self, sh_type, parent_type)

    def string(self, index: int) -> str:
        for sec in self.of_type(SHT_STRTAB):
            if sec.name == ".strtab":
                body = self.body(sec)
                end = body.find(b"\0", index)
                return body[index:end].decode("latin-1") if 0 <= index < len(body) and end >= 0 else ""
        return ""


class Children:
    """The sections of one type by the (parent table, row) they belong to, every link checked at once."""

    def __init__(self, elf: CoreElf, sh_type: int, parent_type: int):
        found = elf.indices(sh_type)
        links = elf.table["link"][found].astype(np.int64)
        infos = elf.table["info"][found].astype(np.int64)
        safe = np.where((links > 0) & (links < elf.count), links, 0)
        bad = (links <= 0) | (links >= elf.count) | (elf.types[safe] != parent_type)
        if bad.any():
            i = int(found[np.argmax(bad)])
            raise StateError(f"sh_link {int(elf.table['link'][i])} does not name a {TABLES[parent_type].table} section",
                             elf.name(i))
        rows = elf.row_counts(safe)
        past = infos.astype(np.uint64) >= rows
        if past.any():
            at = int(np.argmax(past))
            i = int(found[at])
            raise StateError(f"sh_info {int(infos[at])} is past the {int(rows[at])} rows of {elf.name(int(safe[at]))}",
                             elf.name(i))
        keys = (links << 32) | infos
        order = np.argsort(keys, kind="stable")
        self.keys, self.sections = keys[order], found[order]

    def get(self, link: int, info: int) -> np.ndarray:
        key = (int(link) << 32) | int(info)
        lo, hi = np.searchsorted(self.keys, [key, key + 1])
        return self.sections[lo:hi]

    def first(self, links: np.ndarray, infos: np.ndarray) -> np.ndarray:
        """For each (link, info): its first section, or -1."""
        keys = (links.astype(np.int64) << 32) | infos.astype(np.int64)
        at = np.searchsorted(self.keys, keys)
        hit = at < len(self.keys)
        hit[hit] = self.keys[at[hit]] == keys[hit]
        return np.where(hit, self.sections[np.minimum(at, len(self.sections) - 1)] if len(self.sections) else -1, -1)
