"""Keep freed megabyte buffers in the process instead of handing them back to the kernel.

A readMemory answer builds a few buffers of a megabyte or more (the bytes read, their
base64, the framed message). glibc serves blocks that large with fresh mmap()s and
returns them on free, so every answer pays for faulting in a few hundred new pages:
over half of what a 1 MiB readMemory costs the server. Raising the mmap and trim
thresholds lets those buffers be reused from the heap, answer after answer. The heap
keeps what the largest answers needed (readMemory is capped at 16 MiB) — a bounded cost.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt parameters from glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# larger than any one message the server builds (16 MiB readMemory → ~22 MiB of base64)
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's maximum on 64-bit systems
TRIM_THRESHOLD_BYTES = 64 << 20


def keep_freed_buffers() -> bool:
    """Tune glibc's allocator for a server that builds large answers repeatedly.
    Returns whether it was applied (False off Linux/glibc, e.g. musl or macOS)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: libc's among them
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
