"""What a GpuState read from a vendor's core file keeps open: the core itself, the code
objects copied out of it into a temporary folder, and bytes built in memory."""

from __future__ import annotations

import os
import re
import weakref
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import StateError
from ..tempfiles import make_temp_dir, remove_temp_dir, writing
from .files import DumpFiles, FileSpan


class CoreFiles(DumpFiles):
    """A core file behind the DumpFiles interface; `kind` names it in errors ("a CUDA core dump")."""

    def __init__(self, path: Path, kind: str, temp_prefix: str):
        self.source = path.resolve()
        self._kind = kind
        self._temp_prefix = temp_prefix
        self._tempdir: list[str | None] = [None]
        self._finalizer = weakref.finalize(self, CoreFiles._cleanup, self._tempdir)

    @staticmethod
    def _cleanup(holder: list) -> None:
        if holder[0]:
            remove_temp_dir(holder[0])

    def write_image(self, name: str, data: bytes) -> Path:
        if self._tempdir[0] is None:
            self._tempdir[0] = make_temp_dir(self._temp_prefix)  # removed on SIGTERM too
        # the name may come from the core (a link map entry): keep a plain file name of it
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)[:100].lstrip(".") or "image"
        target = Path(self._tempdir[0]) / safe
        with writing():
            target.write_bytes(data)
        return target

    def inflate(self, path: Path) -> Path:
        """A gzip-compressed core inflated into the temporary folder (removed with the state), within
        MAX_DECOMPRESSED_BYTES (aspace_dap.inflate); the compressed file is only read."""
        import gzip
        import zlib

        from ..inflate import copy_inflated, dump_budget

        if self._tempdir[0] is None:
            self._tempdir[0] = make_temp_dir(self._temp_prefix)
        target = Path(self._tempdir[0]) / "inflated.core"
        try:
            with gzip.open(path, "rb") as src, open(target, "wb") as out:
                copy_inflated(src.read, out, "the gzip-compressed core", dump_budget(),
                              lambda message: StateError(message, str(path)), writing)
        except (OSError, EOFError, zlib.error) as exc:
            raise StateError(f"{self._kind} compressed with gzip cannot be inflated: {exc}", str(path)) from exc
        return target

    def read_manifest(self) -> bytes:
        raise StateError(f"{self._kind} has no manifest", str(self.source))

    def size(self, rel: str) -> int | None:
        return None

    def span(self, rel: str) -> FileSpan:
        raise StateError("missing", rel)

    def materialise(self, rel: str) -> Path:
        raise StateError("missing", rel)

    def close(self) -> None:
        self._finalizer()


class BytesSpan(FileSpan):
    """Bytes built in memory (registers transposed to the model's order, a record split over
    segments) behind the FileSpan interface."""

    sparse_aware = False  # no file behind it

    def __init__(self, data: bytes):
        super().__init__(lambda: (Path(os.devnull), 0), len(data))
        self._array = np.frombuffer(data, dtype=np.uint8)

    def chunks(self, start: int, length: int, chunk: int = 16 << 20) -> Iterator[bytes]:
        end = min(start + length, self.length)
        for lo in range(start, end, chunk):
            yield self._array[lo:min(end, lo + chunk)].tobytes()
