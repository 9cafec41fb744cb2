"""GPU core-dump formats that open like a dump folder: one table, one entry per format.

Each entry names a module and two of its functions: one that tells whether a file is of that format
(cheap: the ELF header and, at most, the program headers and notes) and one that opens it as a
GpuState. `load_state` asks them in order; the first that recognises the file opens it. A new format
is one more line in CORE_FORMATS.
"""

from __future__ import annotations

import gzip
import importlib
import os
import struct
import zlib
from dataclasses import dataclass

from ..errors import StateError

ELF_MAGIC = b"\x7fELF"
GZIP_MAGIC = b"\x1f\x8b"  # the CUDA driver's CU_COREDUMP_GZIP_COMPRESS writes the core gzip-compressed


@dataclass(frozen=True)
class CoreFormat:
    name: str                 # what the user is told ("ROCm GPU core")
    module: str               # the reader's module, imported on first use
    where: str                # how such a file is recognised, for error messages
    detect_fn: str = "detect"      # module function: path -> bool
    load_fn: str = "load_core"     # module function: path -> GpuState

    def detect(self, path: str | os.PathLike) -> bool:
        return bool(getattr(importlib.import_module(self.module), self.detect_fn)(path))

    def load(self, path: str | os.PathLike):
        return getattr(importlib.import_module(self.module), self.load_fn)(path)


CORE_FORMATS: tuple[CoreFormat, ...] = (
    CoreFormat("CUDA core dump", "aspace_dap.adapters.nvidia.core", "ET_CORE, e_machine 190, OSABI 0x33",
               detect_fn="is_cuda_core"),
    CoreFormat("Intel GPU core", "aspace_dap.adapters.intel.core", "ET_CORE, e_machine 205 (EM_INTELGT), from coregen",
               detect_fn="is_intel_core", load_fn="load_intel_core"),
    CoreFormat("ROCm GPU core", "aspace_dap.adapters.amdgpu.core",
               "ET_CORE with an AMDGPU NT_AMDGPU_CORE_STATE note (gpucore, rocgdb gcore, coremerge)"),
)


def read_head(path: str | os.PathLike, size: int = 20) -> bytes:
    """The first `size` bytes of a core file, inflated first when it is gzip-compressed; b"" if unreadable."""
    try:
        with open(path, "rb") as f:
            head = f.read(size)
            if not head.startswith(GZIP_MAGIC):
                return head
        with gzip.open(path, "rb") as f:
            return f.read(size)
    except (OSError, EOFError, zlib.error):
        return b""


def is_gzip_file(path: str | os.PathLike) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False


def is_core_file(path: str | os.PathLike) -> bool:
    """An ELF file, plain or gzip-compressed, or any gzip file: load_state hands those to load_core_file
    (which says what a gzip file holds when it is not a core)."""
    return read_head(path, 4) == ELF_MAGIC or is_gzip_file(path)


def detect_format(path: str | os.PathLike) -> CoreFormat | None:
    for fmt in CORE_FORMATS:
        if fmt.detect(path):
            return fmt
    return None


def load_core_file(path: str | os.PathLike):
    """Open an ELF file as whichever GPU core format recognises it; a clear error otherwise."""
    fmt = detect_format(path)
    if fmt is not None:
        return fmt.load(path)
    head = read_head(path)
    if not head:
        raise StateError("cannot read the file", str(path))
    what = " (gzip-compressed)" if is_gzip_file(path) else ""
    if not head.startswith(ELF_MAGIC):
        raise StateError("a gzip-compressed file, but what it holds is not a GPU core file (no ELF header)",
                         str(path))
    if len(head) >= 20:
        e_type, e_machine = struct.unpack_from("<HH", head, 16)
        what += f" (e_type {e_type}, e_machine {e_machine}, OSABI {head[7]:#x})"
    known = "; ".join(f"{f.name}: {f.where}" for f in CORE_FORMATS)
    raise StateError(f"an ELF file but not a GPU core dump{what}; known formats: {known}", str(path))
