"""The one path policy: which files the server may read and where it may write.

Paths come from clients (launch `state`, `codeObject`, `sourceMap`, `source`,
`saveDump`) and from files (manifest entries, zip members, link maps). Each is
resolved once and then:

- read only if it is a regular file outside /proc, /sys and /dev (kernel files
  look regular and may block or be consumed by a read): FIFOs, devices and
  sockets are refused before anything opens them (a stat first, then an
  O_NONBLOCK open whose descriptor is checked again), and never past a size limit;
- for source files (`PathPolicy`): for a client that is the user (stdio, the
  owner-only socket, TCP with the secret) and for `inspect`, any file the user
  can read, as gdb reads what the debug info names; for a client that is not
  (`--insecure-tcp`), only under what the user opened: the dump, the code object
  named at launch, and (for files the debug info names) the working directory,
  so that a name in the debug info or a sourceMap entry opens nothing else;
- written only inside a save folder the caller chose, through a temporary
  sibling renamed into place (`writing_folder`); the names inside are made by
  the writer, never taken from input.

Refusals of a path a client named read the same whether the path is missing,
unreadable or special, so a remote client cannot probe which files exist.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Iterator

from .errors import AspaceError
from .limits import limit_hint
# temporary folders and what is removed at exit live in tempfiles.py
from .tempfiles import forget_at_exit, forget_if_empty_at_exit, remove_at_exit, remove_if_empty_at_exit, writing

MAX_PATH_BYTES = 4096  # Linux's PATH_MAX
MAX_NAME_BYTES = 255  # NAME_MAX of every common file system
# Kernel interfaces, not storage: a save there could change the system, a read could block forever.
PSEUDO_FILE_SYSTEMS = ("/proc", "/sys", "/dev")


class PathRefused(AspaceError):
    """A path the policy does not allow (or cannot be opened safely)."""


def shown(path: object) -> str:
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else repr(path)
    return text if len(text) <= 200 else text[:200] + "..."


def client_path(value: object, what: str) -> str:
    """A path a client named: a non-empty string without NUL bytes, within the OS's length limits."""
    if not isinstance(value, str) or not value:
        raise PathRefused(f"{what} must be a non-empty path")
    if "\0" in value:
        raise PathRefused(f"{what} contains a NUL byte")
    try:
        os.fsencode(value)
    except UnicodeError:  # a lone surrogate ("\ud800") names no file on any system
        raise PathRefused(f"{what} contains a character that cannot be in a file name (a lone UTF-16 "
                          "surrogate)") from None
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRefused(f"{what} is longer than {MAX_PATH_BYTES} bytes")
    if any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        raise PathRefused(f"{what} has a name longer than {MAX_NAME_BYTES} bytes")
    return value


def _cannot_open(what: str, path: object) -> PathRefused:
    # One wording for missing, unreadable and special files.
    return PathRefused(f"cannot open {what} {shown(path)}: nothing readable of that kind there")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def is_pseudo_file_system(path: str | os.PathLike) -> bool:
    real = os.path.realpath(path)
    return any(_within(real, root) for root in PSEUDO_FILE_SYSTEMS)


def _kernel_file(path: str | os.PathLike) -> bool:
    """Under /proc, /sys or /dev once symlinks are resolved (tmpfs /dev/shm aside): files there may
    look regular and still block (/proc/kmsg) or lose what a read takes from them."""
    real = os.path.realpath(path)
    return is_pseudo_file_system(real) and not _within(real, "/dev/shm")


def open_regular(path: str | os.PathLike, what: str, max_bytes: int | None = None,
                 limit_name: str = "") -> tuple[int, int]:
    """(descriptor, size) of a regular file opened for reading; refuses anything else without blocking."""
    try:
        before = os.stat(path)
        if _kernel_file(path):
            raise _cannot_open(what, path)
    except (OSError, ValueError):
        raise _cannot_open(what, path) from None
    if not stat.S_ISREG(before.st_mode):
        raise _cannot_open(what, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        raise _cannot_open(what, path) from None
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):  # swapped for a FIFO between the stat and the open
            raise _cannot_open(what, path)
        if max_bytes is not None and after.st_size > max_bytes:
            raise PathRefused(f"{what} {shown(path)} has {after.st_size} bytes, over the limit of {max_bytes} "
                              + limit_hint(limit_name))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, after.st_size


def read_regular(path: str | os.PathLike, what: str, max_bytes: int, limit_name: str) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (read with a cap even if it grows meanwhile)."""
    fd, _ = open_regular(path, what, max_bytes, limit_name)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PathRefused(f"{what} {shown(path)} is over the limit of {max_bytes} bytes " + limit_hint(limit_name))
    return data


def _starts_with_any(path: str | os.PathLike, what: str, magics: tuple[bytes, ...]) -> bool:
    fd, _ = open_regular(path, what)
    try:
        head = os.read(fd, max(len(m) for m in magics))
    except OSError:
        raise _cannot_open(what, path) from None
    finally:
        os.close(fd)
    return any(head.startswith(m) for m in magics)


def check_dump_path(path: str, folder_marker: str, file_magics: tuple[bytes, ...]) -> str:
    """A dump a client named: a folder holding `folder_marker` as a regular file, or a regular file
    starting with one of `file_magics`. Anything else, missing or unreadable gets one refusal."""
    what = "the dump"
    client_path(path, what)
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        raise _cannot_open(what, path) from None
    if stat.S_ISDIR(info.st_mode):
        marker = os.path.join(path, folder_marker)
        try:
            os.close(open_regular(marker, what)[0])
        except PathRefused:
            raise _cannot_open(what, path) from None
        return path
    if not _starts_with_any(path, what, file_magics):
        raise _cannot_open(what, path)
    return path


def check_client_file(path: str, what: str, magics: tuple[bytes, ...]) -> str:
    """A file a client named (a code object): a regular file starting with one of `magics`;
    anything else, missing or unreadable gets one refusal."""
    client_path(path, what)
    if not _starts_with_any(path, what, magics):
        raise _cannot_open(what, path)
    return path


class PathPolicy:
    """The folders and files one session may read source text from.

    A client that is the user (`client_is_user`) may read every regular file outside /proc, /sys and
    /dev. Any other client only what the roots allow. Read roots: every file below may be read (the
    dump, the code object the user named). Named roots: only files the debug info names may be read
    below (the working directory); the caller says which kind of read it is. Roots are compared after
    resolving symlinks, so a link inside an allowed folder cannot lead out of it.
    """

    def __init__(self, client_is_user: bool = False) -> None:
        self.client_is_user = client_is_user
        self._roots: set[str] = set()
        self._named_roots: set[str] = set()
        self._lock = threading.Lock()

    def _add_root(self, roots: set[str], folder: str | os.PathLike) -> None:
        real = os.path.realpath(folder)
        if is_pseudo_file_system(real) or real == "/":
            return  # never a source root, whatever a file or a map says
        with self._lock:
            roots.add(real)

    def allow_read_root(self, folder: str | os.PathLike) -> None:
        self._add_root(self._roots, folder)

    def allow_named_root(self, folder: str | os.PathLike) -> None:
        """Below `folder`, files the debug info names may be read (`allows(..., named=True)`)."""
        self._add_root(self._named_roots, folder)

    def allows(self, path: str | os.PathLike, named: bool = False) -> bool:
        """Whether `path` may be read; `named`: the debug info names it (the named roots count too)."""
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return False
        if is_pseudo_file_system(real):
            return False
        if self.client_is_user:
            return True
        with self._lock:
            roots = self._roots | self._named_roots if named else self._roots
            return any(_within(real, root) for root in roots)

    def may_look(self, path: str | os.PathLike, named: bool = False) -> bool:
        """Whether a lookup may consider `path` at all, from its name alone (nothing on disk is asked, so
        the places a lookup lists say nothing about which files exist); `allows` decides the read."""
        text = os.path.abspath(path)
        if any(_within(text, root) for root in PSEUDO_FILE_SYSTEMS):
            return False
        if self.client_is_user:
            return True
        with self._lock:
            roots = self._roots | self._named_roots if named else self._roots
            return any(_within(text, root) for root in roots)

    def check_read(self, path: str | os.PathLike, what: str = "file", named: bool = False) -> str:
        """The resolved path if the policy allows reading it; the uniform refusal otherwise."""
        if not isinstance(path, (str, os.PathLike)) or "\0" in os.fspath(path) or not self.allows(path, named):
            raise _cannot_open(what, path)
        return os.path.realpath(path)

    def read_text(self, path: str | os.PathLike, what: str, max_bytes: int, limit_name: str,
                  named: bool = False) -> str:
        real = self.check_read(path, what, named)
        return read_regular(real, what, max_bytes, limit_name).decode("utf-8", errors="replace")


# ---- writing ------------------------------------------------------------------------------------

PARTIAL_MARK = ".aspace-partial-save"  # inside a folder being written; holds the writer's pid


def save_target(path: str) -> Path:
    """The folder a client asked to save into, checked: no NUL, sane length, not under /proc, /sys, /dev."""
    client_path(path, "the save path")
    full = Path(os.path.abspath(path))
    if any(_within(str(full), root) for root in PSEUDO_FILE_SYSTEMS):
        raise PathRefused(f"cannot save to {shown(path)}: {', '.join(PSEUDO_FILE_SYSTEMS)} are not for files")
    if is_pseudo_file_system(full):  # only a symlink on the way says so: that is not for the client to learn
        raise _cannot_save(path)
    return full


def _cannot_save(path: object) -> PathRefused:
    # One wording wherever the server cannot write, whatever is (or is not) there.
    return PathRefused(f"cannot save to {shown(path)}: a save makes a new folder (or fills an empty one) "
                       "inside a folder this server can write to, and there is none such there")


def check_save_place(target: Path, path: object) -> None:
    """Refuse a save to `target` (from save_target) before any work is done; `path` is what the client wrote.

    Where the server cannot write, every refusal reads the same: whether the folder or the
    name exists, is a file, or cannot be searched stays unknown to the client. Where it can
    write, the client could find out what is there by saving anyway, so the answer says what
    is in the way. Missing parent folders are created, as `mkdir -p` would.
    """
    parent = target.parent
    try:
        with writing():  # (SIGTERM removes what a save made: it never races this)
            parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise _cannot_save(path) from None
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise _cannot_save(path)
    if target.is_symlink():
        raise PathRefused(f"{shown(path)} is a symbolic link; a save needs a new or empty folder")
    if os.path.lexists(target):
        try:
            empty = target.is_dir() and not any(os.scandir(target))
        except OSError:
            empty = False
        if not empty:
            raise PathRefused(f"{shown(path)} exists and is not an empty folder; the original dump is never overwritten")


@contextlib.contextmanager
def save_place(target: Path, path: object) -> Iterator[None]:
    """check_save_place, then the body (the save); if the body fails or is cancelled, or SIGTERM ends the
    server during it, the parent folders the check created (as `mkdir -p` would) are removed again, so
    nothing of the save is left."""
    created = []
    for folder in [target.parent, *target.parent.parents]:
        if os.path.lexists(folder):
            break
        created.append(folder)
    names = [str(folder) for folder in created]
    remove_if_empty_at_exit(names)  # before they exist: no moment where SIGTERM would leave them
    try:
        check_save_place(target, path)
        yield
    except BaseException:
        for folder in created:  # the deepest first; one that is not empty (someone else's) stops it
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    finally:
        forget_if_empty_at_exit(names)


def _partial_prefix(target: Path) -> str:
    """`.NAME.aspace-partial-`, the hidden sibling a save is written into; for a long NAME (its random
    tail included, the sibling's name must stay within NAME_MAX) the start of NAME and a hash of it."""
    name = target.name
    tail = ".aspace-partial-"
    room = MAX_NAME_BYTES - len(tail) - 1 - _PARTIAL_RANDOM
    if len(name.encode("utf-8", "surrogateescape")) > room:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        keep = name.encode("utf-8", "surrogateescape")[:room - 17].decode("utf-8", "ignore")
        name = f"{keep}~{digest}"
    return f".{name}{tail}"


_PARTIAL_RANDOM = 8  # characters tempfile.mkdtemp adds


def _is_leftover(folder: Path) -> bool:
    """A partial save whose writer is gone (killed mid-save): safe to replace."""
    mark = folder / PARTIAL_MARK
    if folder.is_symlink() or not mark.is_file():
        return False
    try:
        pid = int(mark.read_text().strip() or 0)
    except (OSError, ValueError):
        return True
    if pid == os.getpid():
        return False  # a save still running in this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


@contextlib.contextmanager
def writing_folder(target: Path) -> Iterator[Path]:
    """A fresh sibling folder to write a dump into; on success it becomes `target` in one rename.

    An interrupted save leaves only a hidden sibling (`.NAME.aspace-partial-*`), which the
    next save to the same place recognises and removes; `target` itself is either absent
    or complete. A save that fails or is cancelled leaves nothing, and neither does SIGTERM
    (the writer puts every piece through tempfiles.writing()).
    """
    parent = target.parent
    try:
        with writing():
            parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise _cannot_save(target) from None
    for entry in parent.glob(_partial_prefix(target).replace("[", "[[]") + "*"):
        if _is_leftover(entry):
            shutil.rmtree(entry, ignore_errors=True)
    try:
        with writing():
            partial = Path(tempfile.mkdtemp(prefix=_partial_prefix(target), dir=parent))
            remove_at_exit(str(partial))
    except OSError:
        raise _cannot_save(target) from None  # e.g. a read-only file system, even for root
    try:
        (partial / PARTIAL_MARK).write_text(str(os.getpid()))
        yield partial
        with writing():
            (partial / PARTIAL_MARK).unlink()
            os.rename(partial, target)  # replaces an empty folder; fails on a non-empty one
            forget_at_exit(str(partial))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        forget_at_exit(str(partial))
