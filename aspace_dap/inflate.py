"""Every decompressor behind one streaming cap.

Compressed input comes in four kinds: zstd and zlib entries of code objects (CUDA fat binary
entries, compressed clang offload bundles), compressed zip members of a dump, and gzip-compressed
GPU cores. A size a header declares is never trusted for anything but a consistency check: output
is produced CHUNK bytes at a time, counted as it comes, and the moment the running total passes the
budget the decompression stops with a refusal that names the limit. Nothing is allocated up front.

Two budgets, one mechanism (`Budget`): what one dump inflates to disk (zip members, a gzip core)
is bounded by MAX_DECOMPRESSED_BYTES; what one code object file inflates to in memory (every
entry of a fat binary or bundle together) by MAX_CODE_OBJECT_BYTES as well, since what comes out
is a code object held in memory.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO, Callable, ContextManager

from . import limits
from .errors import AspaceError, CodeObjectError

CHUNK = 1 << 20  # the most one step inflates

ErrorType = Callable[[str], AspaceError]


class Budget:
    """Bytes still allowed to come out of decompressors, for one input (a code object file, a dump)."""

    def __init__(self, limit: int, limit_name: str):
        self.limit = limit
        self.limit_name = limit_name
        self.used = 0

    def take(self, n: int, what: str, error: ErrorType) -> None:
        self.used += n
        if self.used > self.limit:
            raise error(f"{what} inflates to more than {self.limit} bytes " + limits.limit_hint(self.limit_name))

    def room(self) -> int:
        return max(0, self.limit - self.used)


def code_object_budget() -> Budget:
    """For one code object file: what its compressed entries inflate to, together, in memory."""
    if limits.MAX_CODE_OBJECT_BYTES <= limits.MAX_DECOMPRESSED_BYTES:
        return Budget(limits.MAX_CODE_OBJECT_BYTES, "MAX_CODE_OBJECT_BYTES")
    return Budget(limits.MAX_DECOMPRESSED_BYTES, "MAX_DECOMPRESSED_BYTES")


def dump_budget() -> Budget:
    """For one dump: what its zip members or its gzip-compressed core inflate to, together, on disk."""
    return Budget(limits.MAX_DECOMPRESSED_BYTES, "MAX_DECOMPRESSED_BYTES")


def _collect(step: Callable[[int], bytes], what: str, budget: Budget, expected: int | None,
             error: ErrorType) -> bytes:
    """Call `step(n)` (at most n more bytes, b"" at the end) until the end, one past `expected`, or the budget."""
    out = bytearray()
    stop = None if expected is None else expected + 1  # one byte past the promise is enough to catch a lie
    while stop is None or len(out) < stop:
        want = CHUNK if stop is None else min(CHUNK, stop - len(out))
        chunk = step(want)
        if not chunk:
            break
        budget.take(len(chunk), what, error)
        out += chunk
    return bytes(out)


def inflate_zstd(payload: bytes, what: str, budget: Budget, expected: int | None = None,
                 error: ErrorType = CodeObjectError) -> bytes:
    """A zstd stream's bytes, within `budget` (and at most one byte past `expected`, when given)."""
    try:
        import zstandard
    except ImportError:
        raise error(f"{what} is zstd-compressed; install the 'zstandard' package to read it") from None
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(payload)
        return _collect(reader.read, what, budget, expected, error)
    except zstandard.ZstdError as exc:
        raise error(f"{what}: the zstd payload is corrupt: {exc}") from exc


def inflate_zlib(payload: bytes, what: str, budget: Budget, expected: int | None = None,
                 error: ErrorType = CodeObjectError) -> bytes:
    """A zlib stream's bytes, within `budget` (and at most one byte past `expected`, when given)."""
    decompressor = zlib.decompressobj()
    pending = [payload]

    def step(n: int) -> bytes:
        data = pending[0]
        pending[0] = b""
        chunk = decompressor.decompress(data or decompressor.unconsumed_tail, n)
        return chunk

    try:
        return _collect(step, what, budget, expected, error)
    except zlib.error as exc:
        raise error(f"{what}: the zlib payload is corrupt: {exc}") from exc


def copy_inflated(read: Callable[[int], bytes], out: BinaryIO, what: str, budget: Budget,
                  error: ErrorType, gate: Callable[[], ContextManager] | None = None) -> int:
    """Write what `read(n)` (a gzip or zip member stream) yields to `out`, within `budget`; bytes written.
    Each write happens inside `gate()` (tempfiles.writing: SIGTERM waits for it, then stops the next)."""
    written = 0
    while True:
        chunk = read(CHUNK)
        if not chunk:
            return written
        budget.take(len(chunk), what, error)
        if gate is None:
            out.write(chunk)
        else:
            with gate():
                out.write(chunk)
        written += len(chunk)
