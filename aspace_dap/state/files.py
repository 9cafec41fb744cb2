"""Where a dump's files live: a folder, or a zip (stored members mapped in place,
compressed members extracted to a temporary folder the first time they are used)."""

from __future__ import annotations

from abc import ABC, abstractmethod
import os
import re
import stat
import struct
import threading
import weakref
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import numpy as np

from .. import limits
from ..errors import StateError
from ..inflate import copy_inflated, dump_budget
from ..paths import PathRefused, read_regular
from ..tempfiles import make_temp_dir, remove_temp_dir, writing

# Files up to this size are read into memory instead of mapped: Python's mmap keeps a
# duplicated descriptor per mapping, and a dump can hold thousands of small register files.
READ_LIMIT = 1 << 20

# What a dump a client names can be: a folder with this file, or a file starting with one of these
# (a zip, empty or not, an ELF GPU core, or a gzip-compressed one: the CUDA driver's
# CU_COREDUMP_GZIP_COMPRESS, or a core gzip'd to keep it small).
MANIFEST = "manifest.json"
DUMP_FILE_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"\x7fELF", b"\x1f\x8b")

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


# Paths made only of these characters, without '..', pass path_problem; checked in bulk for big dumps.
PLAIN_PATH = re.compile(r"[A-Za-z0-9_.+\-]+(?:/[A-Za-z0-9_.+\-]+)*")


_PLAIN_LINES = re.compile(r"(?:[A-Za-z0-9_.+\-]+(?:/[A-Za-z0-9_.+\-]+)*\n)*")


def is_plain_path(rel: object) -> bool:
    """A quick yes for the common path (`regs/wave-7.bin`); False means: ask path_problem."""
    return type(rel) is str and PLAIN_PATH.fullmatch(rel) is not None and ".." not in rel


def all_plain_paths(rels) -> bool:
    """is_plain_path for every one, in one regex pass (a big dump names 100,000 files)."""
    rels = list(rels)
    if not all(type(rel) is str for rel in rels):
        return False
    text = "\n".join(rels) + "\n" if rels else ""
    return _PLAIN_LINES.fullmatch(text) is not None and ".." not in text


class FileSpan:
    """`length` bytes at `offset` of a file on disk, mapped (or read) on first use."""

    sparse_aware = True  # its bytes are a file's: a hole in that file reads as zeros (save keeps it a hole)

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

    def exists(self, rel: str) -> bool:
        """The file is there (cheaper than `size` where sizes need a stat)."""
        return self.size(rel) is not None

    def missing(self, rels) -> list[str]:
        """Those of `rels` that are not files of the dump."""
        return [rel for rel in rels if not self.exists(rel)]

    def read_range(self, rel: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes at `offset` (fewer at the end of the file), without building a span."""
        return b"".join(self.span(rel).chunks(offset, length))

    def read_ranges(self, rels: list[str], offset: int, length: int) -> list[bytes]:
        """read_range of many files (the pc and exec of every wave)."""
        return [self.read_range(rel, offset, length) for rel in rels]

    def close(self) -> None:
        pass


class FolderFiles(DumpFiles):
    # A folder asked about more often than this is listed once instead of stat'ed per file.
    LIST_AFTER = 64

    def __init__(self, folder: Path):
        self.source = folder
        self._root = folder.resolve()
        # Every file is resolved and checked once (a big dump names 100,000 files):
        self._files: dict[str, str | None] = {}  # rel -> the real file, None: missing or outside
        self._sizes: dict[str, int] = {}
        self._folders: dict[str, str | None] = {}  # folder rel -> its real path, None: outside the dump
        self._asked: dict[str, int] = {}
        self._listings: dict[str, tuple[set[str], set[str]]] = {}  # folder rel -> (plain files, others)
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        return self._root

    def read_manifest(self) -> bytes:
        full = self._resolve("manifest.json")
        if full is None or not os.path.lexists(full):
            raise FileNotFoundError("manifest.json")
        return read_regular(full, "manifest.json", limits.MAX_MANIFEST_BYTES, "MAX_MANIFEST_BYTES")

    def _resolve(self, rel: str) -> Path | None:
        if path_problem(rel) is not None:
            return None
        try:
            full = (self._root / rel).resolve()
        except (OSError, RuntimeError):  # a symlink loop
            return None
        # A symlink must not lead out of the dump either.
        if full != self._root and self._root not in full.parents:
            return None
        return full

    def _folder(self, folder: str) -> str | None:
        real = self._folders.get(folder, "")
        if real == "":
            full = self._resolve(folder) if folder else self._root
            real = self._folders[folder] = None if full is None else str(full)
        return real

    def _file(self, rel: str) -> str | None:
        """The real path of a regular file inside the dump, or None; cached per path."""
        try:
            return self._files[rel]
        except KeyError:
            pass
        with self._lock:
            found = self._find(rel)
            self._files[rel] = found
        return found

    def _find(self, rel: str) -> str | None:
        if not is_plain_path(rel) and path_problem(rel) is not None:
            return None
        folder, _, name = rel.rpartition("/")
        real = self._folder(folder)
        if real is None or name in ("", ".", ".."):
            return self._slow_find(rel)
        listing = self._listings.get(folder)
        if listing is None:
            asked = self._asked[folder] = self._asked.get(folder, 0) + 1
            if asked > self.LIST_AFTER:
                listing = self._listings[folder] = self._list(real)
        if listing is not None:
            plain, others = listing
            if name in plain:
                return f"{real}/{name}"
            return self._slow_find(rel) if name in others else None
        full = f"{real}/{name}"
        try:
            info = os.lstat(full)
        except OSError:
            return None
        if stat.S_ISREG(info.st_mode):
            self._sizes[rel] = info.st_size
            return full
        return self._slow_find(rel)

    @staticmethod
    def _list(real: str) -> tuple[set[str], set[str]]:
        plain, others = set(), set()
        try:
            with os.scandir(real) as entries:
                for entry in entries:
                    (plain if entry.is_file(follow_symlinks=False) else others).add(entry.name)
        except OSError:
            pass
        return plain, others

    def _slow_find(self, rel: str) -> str | None:
        # symlinks and odd names: resolve the whole path
        full = self._resolve(rel)
        return str(full) if full is not None and full.is_file() else None

    def exists(self, rel: str) -> bool:
        return self._file(rel) is not None

    def missing(self, rels) -> list[str]:
        # in bulk: list each folder once and compare names as sets
        rels = set(rels)
        by_folder: dict[str, int] = {}
        for folder in [rel.rpartition("/")[0] for rel in rels]:
            by_folder[folder] = by_folder.get(folder, 0) + 1
        unsure = rels
        for folder, count in by_folder.items():
            if count <= self.LIST_AFTER or not is_plain_path(folder):
                continue
            real = self._folder(folder)
            if real is None:
                continue
            with self._lock:
                listing = self._listings.get(folder)
                if listing is None:
                    listing = self._listings[folder] = self._list(real)
            unsure = unsure - {f"{folder}/{name}" for name in listing[0]}
        return [rel for rel in unsure if not self.exists(rel)]

    def size(self, rel: str) -> int | None:
        full = self._file(rel)
        if full is None:
            return None
        size = self._sizes.get(rel)
        if size is None:
            try:
                size = self._sizes[rel] = os.stat(full).st_size
            except OSError:
                return None
        return size

    def span(self, rel: str) -> FileSpan:
        full = self._file(rel)
        size = self.size(rel)
        if full is None or size is None:
            raise StateError("missing", rel)
        return FileSpan(lambda: (Path(full), 0), size)

    def read_range(self, rel: str, offset: int, length: int) -> bytes:
        full = self._file(rel)
        if full is None:
            raise StateError("missing", rel)
        try:
            fd = os.open(full, os.O_RDONLY)
            try:
                return os.pread(fd, length, offset)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StateError(f"cannot read {full}: {exc}", rel) from exc

    def read_ranges(self, rels: list[str], offset: int, length: int) -> list[bytes]:
        out = []
        listings, folders, known = self._listings, self._folders, self._files
        for rel in rels:
            full = known.get(rel)
            if full is None:
                # a listed folder answers without a lookup per file
                folder, _, name = rel.rpartition("/")
                listing = listings.get(folder)
                real = folders.get(folder)
                full = f"{real}/{name}" if listing is not None and real and name in listing[0] else self._file(rel)
            if full is None:
                raise StateError("missing", rel)
            try:
                fd = os.open(full, os.O_RDONLY)
                try:
                    out.append(os.pread(fd, length, offset))
                finally:
                    os.close(fd)
            except OSError as exc:
                raise StateError(f"cannot read {full}: {exc}", rel) from exc
        return out

    def materialise(self, rel: str) -> Path:
        full = self._file(rel)
        if full is None:
            raise StateError("missing", rel)
        return Path(full)


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
        self._budget = dump_budget()
        self._finalizer = weakref.finalize(self, ZipFiles._cleanup, self._zip, [None])

    @staticmethod
    def _cleanup(archive: zipfile.ZipFile, tempdir_holder: list) -> None:
        archive.close()
        if tempdir_holder[0]:
            remove_temp_dir(tempdir_holder[0])

    def read_manifest(self) -> bytes:
        info = self._members.get("manifest.json")
        if info is None:
            raise FileNotFoundError("manifest.json is not at the root of the zip")
        if info.file_size > limits.MAX_MANIFEST_BYTES:
            raise PathRefused(f"manifest.json has {info.file_size} bytes, over the limit of "
                              f"{limits.MAX_MANIFEST_BYTES} " + limits.limit_hint("MAX_MANIFEST_BYTES"))
        with self._zip.open(info) as member:
            return member.read(limits.MAX_MANIFEST_BYTES + 1)[: limits.MAX_MANIFEST_BYTES]

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
            # Only compressed members are unpacked, each once, all together within one budget
            # (aspace_dap.inflate): the declared sizes refuse early, the bytes that come out are counted.
            if self._budget.used + info.file_size > self._budget.limit:
                raise StateError(f"unpacking {info.file_size} more bytes from the zip would pass the limit of "
                                 f"{self._budget.limit} " + limits.limit_hint(self._budget.limit_name),
                                 info.filename)
            if self._tempdir is None:
                self._tempdir = make_temp_dir("aspace-state-")
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, ZipFiles._cleanup, self._zip, [self._tempdir])
            target = Path(self._tempdir) / f"{len(self._extracted)}-{PurePosixPath(info.filename).name}"
            try:
                with self._zip.open(info) as src, open(target, "wb") as dst:
                    # the zip module stops at the member's declared size; count anyway
                    written = copy_inflated(src.read, dst, info.filename, self._budget,
                                            lambda message: StateError(message, info.filename), writing)
                    if written > info.file_size:
                        raise StateError("zip member is longer than its declared size", info.filename)
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
        if info.file_size > limits.MAX_CODE_OBJECT_BYTES:  # only code objects are materialised
            raise StateError(f"{info.file_size} bytes, over the limit of {limits.MAX_CODE_OBJECT_BYTES} for a code "
                             "object " + limits.limit_hint("MAX_CODE_OBJECT_BYTES"), rel)
        return self._extract(info)

    def close(self) -> None:
        self._finalizer()


def open_dump_files(path: str | os.PathLike) -> DumpFiles:
    p = Path(path)
    if p.is_dir():
        return FolderFiles(p)
    if p.is_file():
        return ZipFiles(p)
    raise StateError("no such dump (expected a folder, a .zip or a GPU core file)", str(p))
