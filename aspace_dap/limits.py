"""Every limit that keeps one client or one hostile file from exhausting the server.

Each limit is a named constant read once at start-up; an environment variable
`ASPACE_<NAME>` (a whole number, `k`/`M`/`G` suffixes allowed for sizes)
overrides it. The README's "Running the server safely" section lists them.
A refusal always says which limit it hit and how to raise it.
"""

from __future__ import annotations

import os
import sys

_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}

# name -> (default, what it bounds); the single source for the README table and `limit_hint`
DEFAULTS: dict[str, tuple[int, str]] = {
    "MAX_CODE_OBJECT_BYTES": (512 << 20, "bytes of one code object file read from disk"),
    "MAX_MANIFEST_BYTES": (64 << 20, "bytes of a dump's manifest.json"),
    "MAX_DECOMPRESSED_BYTES": (4 << 30, "bytes one input may inflate to: a dump's compressed zip members or a "
                               "gzip-compressed core together (on disk); a code object's compressed entries "
                               "together (in memory, also within MAX_CODE_OBJECT_BYTES)"),
    "MAX_SOURCE_BYTES": (16 << 20, "bytes of one source file sent to a client"),
    "MAX_REQUEST_BYTES": (16 << 20, "bytes of one DAP or LSP message from a client"),
    "MAX_EXPRESSION_CHARS": (16 << 10, "characters of one expression"),
    "MAX_EVAL_SECONDS": (10, "seconds one expression may take to evaluate"),
    "MAX_SAVE_SECONDS": (300, "seconds one save (saveDump, the REPL's save) may take"),
    "MAX_FIND_SECONDS": (300, "seconds one search of every lane (findLanes, the REPL's find) may take"),
    "MAX_DISASSEMBLER_SECONDS": (60, "seconds one run of a vendor's disassembler (llvm-objdump, nvdisasm, iga64) "
                                     "may take"),
    "MAX_PENDING_OUTPUT_BYTES": (8 << 20, "bytes of answers queued for a client that does not read them"),
    "MAX_QUEUED_REQUESTS": (64, "requests of one client waiting to run"),
    "MAX_SESSIONS": (64, "clients a TCP server serves at once"),
    "MAX_SERVER_BUFFER_BYTES": (256 << 20, "bytes of requests and answers all clients of a TCP server hold together"),
    "MAX_STALL_SECONDS": (60, "seconds a socket client may take none of its answers, or stop mid-message"),
    "MAX_INITIALIZE_SECONDS": (10, "seconds a socket client may take to complete initialize (and present the "
                                   "TCP server's secret)"),
    "STDIN_CLOSED_GRACE_SECONDS": (30, "seconds queued requests may still run after stdin closed"),
    "MAX_GLOB_FILES": (1000, "code objects one language-server glob may match"),
    "MAX_GLOB_ENTRIES": (200_000, "directory entries one language-server glob may visit"),
}


def _parse(text: str) -> int:
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = _SUFFIXES.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    value = int(text, 10) * scale
    if value <= 0:
        raise ValueError("must be positive")
    return value


def _load(name: str) -> int:
    default = DEFAULTS[name][0]
    raw = os.environ.get(f"ASPACE_{name}")
    if raw is None:
        return default
    try:
        return _parse(raw)
    except (ValueError, IndexError):
        print(f"aspace-dap: ignoring ASPACE_{name}={raw[:40]!r}: expected a positive whole number "
              f"(k, M, G suffixes allowed); using {default}", file=sys.stderr)
        return default


def limit_hint(name: str) -> str:
    """The tail of a refusal message: how to raise the limit."""
    return f"(limit {name}; set ASPACE_{name} to change it)"


MAX_CODE_OBJECT_BYTES = _load("MAX_CODE_OBJECT_BYTES")
MAX_MANIFEST_BYTES = _load("MAX_MANIFEST_BYTES")
MAX_DECOMPRESSED_BYTES = _load("MAX_DECOMPRESSED_BYTES")
MAX_SOURCE_BYTES = _load("MAX_SOURCE_BYTES")
MAX_REQUEST_BYTES = _load("MAX_REQUEST_BYTES")
MAX_EXPRESSION_CHARS = _load("MAX_EXPRESSION_CHARS")
MAX_EVAL_SECONDS = _load("MAX_EVAL_SECONDS")
MAX_SAVE_SECONDS = _load("MAX_SAVE_SECONDS")
MAX_FIND_SECONDS = _load("MAX_FIND_SECONDS")
MAX_DISASSEMBLER_SECONDS = _load("MAX_DISASSEMBLER_SECONDS")
MAX_PENDING_OUTPUT_BYTES = _load("MAX_PENDING_OUTPUT_BYTES")
MAX_QUEUED_REQUESTS = _load("MAX_QUEUED_REQUESTS")
MAX_SESSIONS = _load("MAX_SESSIONS")
MAX_SERVER_BUFFER_BYTES = _load("MAX_SERVER_BUFFER_BYTES")
MAX_STALL_SECONDS = _load("MAX_STALL_SECONDS")
MAX_INITIALIZE_SECONDS = _load("MAX_INITIALIZE_SECONDS")
STDIN_CLOSED_GRACE_SECONDS = _load("STDIN_CLOSED_GRACE_SECONDS")
MAX_GLOB_FILES = _load("MAX_GLOB_FILES")
MAX_GLOB_ENTRIES = _load("MAX_GLOB_ENTRIES")
