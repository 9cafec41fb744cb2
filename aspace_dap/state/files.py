"""Where a dump's files live: a folder, or a zip (stored members mapped in place,
compressed members extracted to a temporary folder the first time they are used)."""

from __future__ import annotations

from abc import ABC, abstractmethod
import os
import shutil
import struct
import tempfile
import threading
import weakref
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import numpy as np

from ..errors import StateError

# Files up to this size are read into memory instead of mapped: Python's mmap keeps a
# duplicated descriptor per mapping, and a dump can hold thousands of small register files.
READ_LIMIT = 1 << 20

_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False


def path_problem(rel: object) -> str | None:
    """Why `rel` is not an acceptable manifest path (relative, '/'-separated, inside the dump)."""
    if not isinstance(rel, str):
        return "expected a path string"
    if not rel:
        return "empty path"
    if "\\" in rel:
        return "paths use '/', not '\\'"
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        return "path must be relative"
    if "\0" in rel:
        return "path contains a NUL byte"
    parts = PurePosixPath(rel).parts
    if ".." in parts:
        return "path must stay inside the dump ('..' not allowed)"
    return None


class FileSpan:
    """`length` bytes at `offset` of a file on disk, mapped (or read) on first use."""

    def __init__(self, locate: Callable[[], tuple[Path, int]], length: int):
        self._locate = locate
        self.length = length
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()

    def location(self) -> tuple[Path, int]:
        return self._locate()

    @property
    def array(self) -> np.ndarray:
        """The bytes as a read-only uint8 array (a memory map for large files)."""
        if self._array is None:
            with self._lock:
                if self._array is None:
                    self._array = self._load()
        return self._array

    def _load(self) -> np.ndarray:
        if self.length == 0:
            return _EMPTY
        path, offset = self._locate()
        try:
            if self.length <= READ_LIMIT:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(self.length)
                array = np.frombuffer(data, dtype=np.uint8)
            else:
                array = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(self.length,))
        except (OSError, ValueError) as exc:
            raise StateError(f"cannot read {path}: {exc}", str(path)) from exc
        if len(array) != self.length:
            # The file shrank after the dump was opened; keep what is there.
            self.length = len(array)
        return array

    def chunks(self, start: int, length: int, chunk: int = 16 << 20) -> Iterator[bytes]:
        """Read a range with plain file reads (does not grow the mapping's resident pages)."""
        end = min(start + length, self.length)
        if start >= end:
            return
        path, offset = self._locate()
        with open(path, "rb") as f:
            f.seek(offset + start)
            remaining = end - start
            while remaining > 0:
                data = f.read(min(chunk, remaining))
                if not data:
                    return
                remaining -= len(data)
                yield data


class DumpFiles(ABC):
    """The files a manifest names. Subclasses: a folder, a zip."""

    source: Path

    @abstractmethod
    def read_manifest(self) -> bytes:
        """The manifest's bytes."""

    @abstractmethod
    def size(self, rel: str) -> int | None:
        """Length of the file, or None if it does not exist (or escapes the dump)."""

    @abstractmethod
    def span(self, rel: str) -> FileSpan:
        """The file's bytes, memory-mapped where possible."""

    @abstractmethod
    def materialise(self, rel: str) -> Path:
        """An absolute path of a real file with the member's bytes (code objects need one)."""

    @property
    def root(self) -> Path | None:
        return None

    def close(self) -> None:
        pass


class FolderFiles(DumpFiles):
    def __init__(self, folder: Path):
        self.source = folder
        self._root = folder.resolve()

    @property
    def root(self) -> Path:
        return self._root

    def read_manifest(self) -> bytes:
        return (self._root / "manifest.json").read_bytes()

    def _resolve(self, rel: str) -> Path | None:
        if path_problem(rel) is not None:
            return None
        full = (self._root / rel).resolve()
        # A symlink must not lead out of the dump either.
        if full != self._root and self._root not in full.parents:
            return None
        return full

    def size(self, rel: str) -> int | None:
        full = self._resolve(rel)
        if full is None or not full.is_file():
            return None
        return full.stat().st_size

    def span(self, rel: str) -> FileSpan:
        full = self._resolve(rel)
        size = self.size(rel)
        if full is None or size is None:
            raise StateError("missing", rel)
        return FileSpan(lambda: (full, 0), size)

    def materialise(self, rel: str) -> Path:
        full = self._resolve(rel)
        if full is None or not full.is_file():
            raise StateError("missing", rel)
        return full


def _local_header_data_offset(zip_path: Path, info: zipfile.ZipInfo) -> int:
    """Byte offset of a member's data in the archive (after its local header)."""
    with open(zip_path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise StateError("bad local header in zip", info.filename)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length


class ZipFiles(DumpFiles):
    def __init__(self, zip_path: Path):
        self.source = zip_path.resolve()
        try:
            self._zip = zipfile.ZipFile(self.source)
        except (OSError, zipfile.BadZipFile) as exc:
            raise StateError(f"not a readable zip: {exc}", str(zip_path)) from exc
        self._members = {info.filename: info for info in self._zip.infolist() if not info.is_dir()}
        self._lock = threading.Lock()
        self._tempdir: str | None = None
        self._extracted: dict[str, Path] = {}
        self._finalizer = weakref.finalize(self, ZipFiles._cleanup, self._zip, [None])

    @staticmethod
    def _cleanup(archive: zipfile.ZipFile, tempdir_holder: list) -> None:
        archive.close()
        if tempdir_holder[0]:
            shutil.rmtree(tempdir_holder[0], ignore_errors=True)

    def read_manifest(self) -> bytes:
        info = self._members.get("manifest.json")
        if info is None:
            raise FileNotFoundError("manifest.json is not at the root of the zip")
        return self._zip.read(info)

    def _member(self, rel: str) -> zipfile.ZipInfo | None:
        if path_problem(rel) is not None:
            return None
        return self._members.get(str(PurePosixPath(rel)))

    def size(self, rel: str) -> int | None:
        info = self._member(rel)
        return None if info is None else info.file_size

    def _extract(self, info: zipfile.ZipInfo) -> Path:
        with self._lock:
            done = self._extracted.get(info.filename)
            if done is not None:
                return done
            if self._tempdir is None:
                self._tempdir = tempfile.mkdtemp(prefix="aspace-state-")
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, ZipFiles._cleanup, self._zip, [self._tempdir])
            target = Path(self._tempdir) / f"{len(self._extracted)}-{PurePosixPath(info.filename).name}"
            try:
                with self._zip.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
                raise StateError(f"cannot extract from zip: {exc}", info.filename) from exc
            self._extracted[info.filename] = target
            return target

    def span(self, rel: str) -> FileSpan:
        info = self._member(rel)
        if info is None:
            raise StateError("missing", rel)
        encrypted = info.flag_bits & 0x1
        if info.compress_type == zipfile.ZIP_STORED and not encrypted:
            offset_holder: list[int] = []

            def locate() -> tuple[Path, int]:
                if not offset_holder:
                    offset_holder.append(_local_header_data_offset(self.source, info))
                return self.source, offset_holder[0]

            return FileSpan(locate, info.file_size)
        return FileSpan(lambda: (self._extract(info), 0), info.file_size)

    def materialise(self, rel: str) -> Path:
        info = self._member(rel)
        if info is None:
            raise StateError("missing", rel)
        return self._extract(info)

    def close(self) -> None:
        self._finalizer()


def open_dump_files(path: str | os.PathLike) -> DumpFiles:
    p = Path(path)
    if p.is_dir():
        return FolderFiles(p)
    if p.is_file():
        return ZipFiles(p)
    raise StateError("no such dump (expected a folder or a .zip)", str(p))
