"""Where a dump's files live: a folder, or a zip (stored members mapped in place,
compressed members extracted to a temporary folder the first time they are used)."""

from __future__ import annotations

from abc import ABC, abstractmethod
import os
import stat
import struct
import threading
import weakref
import zipfile
from collections import Counter
from itertools import repeat
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import numpy as np

from .. import limits
from ..errors import StateError
from ..inflate import copy_inflated, dump_budget
from ..paths import PathRefused, read_regular
from ..tempfiles import make_temp_dir, remove_temp_dir, writing
from .formats import ELF_MAGIC, GZIP_MAGIC
from .manifest_paths import is_plain_path, path_problem
from . import split_read
from .split_read import SplitRead

# Files up to this size are read into memory instead of mapped: Python's mmap keeps a
# duplicated descriptor per mapping, and a dump can hold thousands of small register files.
READ_LIMIT = 1 << 20

# What a dump a client names can be: a folder with this file, or a file starting with one of these
# (a zip, empty or not, or a GPU core file: ELF, or gzip-compressed as the CUDA driver may write it).
# Every entry point (DAP launch, inspect, state validate/convert) then opens it with load_state, which
# tells the kinds apart (formats.is_core_file looks inside a gzip file for the ELF header).
MANIFEST = "manifest.json"
DUMP_FILE_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", ELF_MAGIC, GZIP_MAGIC)

_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False


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
        # What listing a folder found, by path from the dump's root (`regs/wave-7.bin`), so that a
        # manifest's paths are looked up as they are, without splitting each:
        self._listed: dict[str, int] = {}  # the folders listed, each with its place in that order
        # their regular files, each with the inode number the listing gave and its folder's place:
        # number << 16 | place (0 where there are too many folders to tell)
        self._plain: dict[str, int] = {}
        self._other: set[str] = set()  # their other entries (symlinks, folders, ...)
        self._direct = True  # every listed folder is where its path says (no symlink on the way)
        self._lock = threading.Lock()
        self._ahead: tuple[list[str], int, int, SplitRead] | None = None  # prefetch_ranges' read under way
        self._ahead_at = 0  # how many of its files missing() has been asked about, in order

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
        """The real path of a regular file inside the dump, or None; cached per path, except in a folder
        listed already, whose listing answers at the cost of the cache (a save of 200,000 waves would
        otherwise keep a path for each of their files)."""
        try:
            return self._files[rel]
        except KeyError:
            pass
        with self._lock:
            found = self._find(rel)
            if rel.rpartition("/")[0] not in self._listed:
                self._files[rel] = found
        return found

    def _find(self, rel: str) -> str | None:
        if not is_plain_path(rel) and path_problem(rel) is not None:
            return None
        folder, _, name = rel.rpartition("/")
        real = self._folder(folder)
        if real is None or name in ("", ".", ".."):
            return self._slow_find(rel)
        if folder not in self._listed:
            asked = self._asked[folder] = self._asked.get(folder, 0) + 1
            if asked > self.LIST_AFTER:
                self._list(folder, real)
        if folder in self._listed:
            if rel in self._plain:
                return f"{real}/{name}"
            return self._slow_find(rel) if rel in self._other else None
        full = f"{real}/{name}"
        try:
            info = os.lstat(full)
        except OSError:
            return None
        if stat.S_ISREG(info.st_mode):
            self._sizes[rel] = info.st_size
            return full
        return self._slow_find(rel)

    def _list(self, folder: str, real: str) -> None:
        """Note the folder's regular files and its other entries (one scandir: their types come with
        the names)."""
        try:
            with os.scandir(real) as listing:
                entries = list(listing)
        except OSError:
            entries = []
        prefix = f"{folder}/" if folder else ""
        place = len(self._listed)
        if place < 1 << 16:
            plain = {prefix + entry.name: entry.inode() << 16 | place
                     for entry in entries if entry.is_file(follow_symlinks=False)}
        else:
            plain = dict.fromkeys((prefix + entry.name for entry in entries if entry.is_file(follow_symlinks=False)), 0)
        if len(plain) != len(entries):
            self._other.update({prefix + entry.name for entry in entries} - plain.keys())
        self._plain.update(plain)
        self._listed[folder] = place
        if real != (f"{self._root}/{folder}" if folder else str(self._root)):
            self._direct = False

    def _slow_find(self, rel: str) -> str | None:
        # symlinks and odd names: resolve the whole path
        full = self._resolve(rel)
        return str(full) if full is not None and full.is_file() else None

    def exists(self, rel: str) -> bool:
        return self._file(rel) is not None

    def missing(self, rels) -> list[str]:
        unsure = rels if isinstance(rels, list) else list(rels)
        listing = self._prefetched_listing(unsure)
        if listing is not None:  # the helper reading them ahead listed their folder
            if not listing.count(0):
                return []
            unsure = [rel for rel, regular in zip(unsure, listing) if not regular]
        # in bulk: list the folders they are in, once each, and compare whole paths as sets
        if len(unsure) > self.LIST_AFTER:
            unsure = self._list_folders_of(unsure)
        return [rel for rel in unsure if not self.exists(rel)]

    def _list_folders_of(self, rels: list) -> list:
        """List the folders of `rels` (a sample's, then the rest's); those of them not found as regular files."""
        unsure = rels
        while len(unsure) > self.LIST_AFTER:
            # the folders of a sample of what is left to find; another round lists those of the rest
            folders = {rel.rpartition("/")[0] for rel in unsure[::max(1, len(unsure) // 64)] if type(rel) is str}
            listed = False
            for folder in folders - self._listed.keys():
                if (folder == "" or is_plain_path(folder)) and (real := self._folder(folder)) is not None:
                    with self._lock:
                        if folder not in self._listed:
                            self._list(folder, real)
                    listed = True
            if all(map(self._plain.__contains__, unsure)):
                return []
            unsure = [rel for rel in unsure if rel not in self._plain]
            if not listed:
                break
        return unsure

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

    def prefetch_ranges(self, rels: list[str], offset: int, length: int) -> None:
        """Start read_ranges(rels, offset, length) in a helper process (split_read.py), for a later call with
        the same arguments: many files right in one folder of the dump. The helper's listing of that folder
        answers missing() for them meanwhile."""
        self.cancel_prefetch()
        if len(rels) < split_read.HELPER_FILES or type(rels[0]) is not str:
            return
        folder = rels[0].rpartition("/")[0]
        names = _names_in(rels, folder)
        real = self._folder(folder) if names is not None and (folder == "" or is_plain_path(folder)) else None
        if real is not None and real == (f"{self._root}/{folder}" if folder else str(self._root)):
            with self._lock:
                self._ahead, self._ahead_at = (rels, offset, length, SplitRead(real, names, offset, length)), 0

    def cancel_prefetch(self) -> None:
        with self._lock:
            ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead[3].cancel()

    def _prefetched_listing(self, rels: list) -> bytes | None:
        """One byte per rel, 1 where the prefetch's listing has it as a regular file; None when the
        prefetch does not cover them (rels: all it reads, or the run of them after the last asked)."""
        ahead = self._ahead
        if ahead is None:
            return None
        every, at = ahead[0], self._ahead_at
        if every[at:at + len(rels)] != rels:
            at = 0
            if every[:len(rels)] != rels:
                return None
        mask = ahead[3].regular()
        if mask is None:
            return None
        self._ahead_at = at + len(rels)
        return mask[at:at + len(rels)]

    def read_ranges(self, rels: list[str], offset: int, length: int) -> list[bytes]:
        with self._lock:
            ahead, self._ahead = self._ahead, None
        if ahead is not None and not (ahead[1:3] == (offset, length) and ahead[0] == rels):
            ahead[3].cancel()
            ahead = None
        if ahead is None:
            return self._read_ranges(rels, offset, length)
        out = ahead[3].result()  # (which stops the helper)
        if out.count(None):  # those the helper's listing does not show as regular files
            return self._read_ranges(rels, offset, length, out)
        return out  # type: ignore[return-value]

    def _read_ranges(self, rels: list[str], offset: int, length: int,
                     out: list[bytes | None] | None = None) -> list[bytes]:
        """read_ranges of the files whose entry in `out` is None (of all, without `out`)."""
        if len(rels) > self.LIST_AFTER and (out is None or out.count(None) > self.LIST_AFTER):
            self._list_folders_of(rels if out is None else [rel for rel, data in zip(rels, out) if data is None])
        # a regular file of a listed folder is opened by its path from the root, without a lookup
        plain = self._plain if self._direct else {}
        keys = list(map(plain.get, rels))
        if out is None:
            out = [None] * len(rels)
            if len(set(keys)) * 2 <= len(rels):  # many names for few files: hard links
                out = list(map(self._read_linked(rels, keys, offset, length).get, keys))
                if not out.count(None):
                    return out  # type: ignore[return-value]
            if rels and out.count(None) == len(rels) and keys.count(None) == 0 and len(self._listed) < 1 << 16:
                out = self._read_one_folder(rels, keys, f"{self._root}/", offset, length)
                if not out.count(None):
                    return out  # type: ignore[return-value]
        root = f"{self._root}/"
        open_, pread, close, flags = os.open, os.pread, os.close, os.O_RDONLY
        # a listed folder's files are opened by name from the folder (openat: no path walk per file)
        folders: dict[str, int] = {}
        try:
            for i, (rel, key) in enumerate(zip(rels, keys)):
                if out[i] is not None:
                    continue
                if key is None:
                    full, name, at = self._file(rel), None, None
                    if full is None:
                        raise StateError("missing", rel)
                else:
                    folder, _, name = rel.rpartition("/")
                    at = folders.get(folder)
                    if at is None:
                        at = folders[folder] = open_(root + folder if folder else root, flags | os.O_DIRECTORY)
                    full = root + rel
                try:
                    fd = open_(full, flags) if at is None else open_(name, flags, dir_fd=at)
                    try:
                        out[i] = pread(fd, length, offset)
                    finally:
                        close(fd)
                except OSError as exc:
                    raise StateError(f"cannot read {full}: {exc}", rel) from exc
        except OSError as exc:  # a listed folder that cannot be opened any more
            raise StateError(f"cannot read {root}: {exc}", "") from exc
        finally:
            for fd in folders.values():
                close(fd)
        return out  # type: ignore[return-value]

    @staticmethod
    def _read_one_folder(rels: list[str], keys: list[int], root: str, offset: int, length: int) -> list[bytes | None]:
        """read_ranges of regular files all in one listed folder (a dump's `regs/`), shared with a helper
        process when there are many (split_read.py); None for each file left to the loop that says what is
        wrong."""
        places = np.fromiter(keys, np.uint64, len(keys)) & np.uint64(0xFFFF)
        folder = rels[0].rpartition("/")[0]
        names = _names_in(rels, folder) if not (places != places[0]).any() else None
        if names is None:
            return [None] * len(rels)
        return SplitRead(root + folder if folder else root, names, offset, length, names_listed=True).result()

    def _read_linked(self, rels: list[str], keys: list[int | None], offset: int, length: int) -> dict[int, bytes]:
        """The range of each file that several of `rels` name (hard links: one inode number in a folder's
        listing), read once: {key in _plain: bytes}. A file is taken for all its names only when opening it
        confirms the number, on the device of its folder (a union file system whose layers number
        their files apart gives them their layer's), with at least that many links; the others are
        read name by name."""
        counts = Counter(keys)
        one_name = dict(zip(keys, rels))  # (the last name of each)
        known = {}
        devices: dict[int, int | None] = {}  # folder's place -> its device
        for key, count in counts.items():
            if count < 2 or not key:  # (0: a folder past the count that inode numbers are kept for)
                continue
            inode, place = key >> 16, key & 0xFFFF
            if place not in devices:
                try:
                    devices[place] = os.stat(self._folder(list(self._listed)[place]) or "").st_dev
                except OSError:
                    devices[place] = None
            try:
                fd = os.open(self._file(one_name[key]) or "", os.O_RDONLY)
                try:
                    info = os.fstat(fd)
                    if info.st_ino == inode and info.st_dev == devices[place] and info.st_nlink >= count \
                            and stat.S_ISREG(info.st_mode):
                        known[key] = os.pread(fd, length, offset)
                finally:
                    os.close(fd)
            except OSError:
                pass  # read name by name, which says what went wrong
        return known

    def materialise(self, rel: str) -> Path:
        full = self._file(rel)
        if full is None:
            raise StateError("missing", rel)
        return Path(full)

    def close(self) -> None:
        self.cancel_prefetch()


def _names_in(rels: list[str], folder: str) -> list[str] | None:
    """The names of `rels` in `folder` when every one is a file right in it (no deeper path), else None."""
    cut = len(folder) + 1 if folder else 0
    if folder and not all(map(str.startswith, rels, repeat(f"{folder}/"))):
        return None
    names = [rel[cut:] for rel in rels]
    return None if "/" in "".join(names) else names


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
