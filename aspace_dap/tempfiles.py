"""Temporary folders and files, and what is left of them when a server dies.

A server keeps some data on disk for a while: compressed zip members and a gzip-compressed core
inflated for mapping, code objects copied out of a core, a save being written, its socket and its
secret file. All of them are removed on exit, on SIGTERM and when their owner lets go of them.

SIGTERM can arrive while another thread is writing into such a folder; a writer puts every piece
through `writing()`, which the SIGTERM handler takes for good before it removes anything, so no
writer makes a file (or recreates a folder) behind the removal.

A killed server (SIGKILL, a crash, the machine's OOM killer) removes nothing. Every temporary
folder of ours is therefore named `aspace-*` in the system's temporary folder and holds a lock
file that its server keeps locked (flock) as long as it lives; the next server to start (DAP or
language server), or command to make a temporary folder, removes every such folder of this user
whose lock nobody holds.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import signal
import stat
import tempfile
import threading
import time

TEMP_PREFIX = "aspace-"  # every temporary folder's name starts so (see sweep_dead_leftovers)
LOCK_NAME = ".aspace-lock"

_exit_paths: set[str] = set()  # removed at exit and on SIGTERM
_exit_folders: dict[str, int] = {}  # folders removed after those if empty (a save's new parents), deepest first
_locks: dict[str, int] = {}  # temporary folder -> descriptor of its locked lock file
_lock = threading.RLock()  # an RLock: the SIGTERM handler may interrupt the main thread holding it
_exit_gate = threading.RLock()  # writers hold it per piece; the SIGTERM handler takes it for good
_swept = False


def writing():
    """Hold while writing one piece into a temporary or partial folder (a context manager)."""
    return _exit_gate


def remove_at_exit(path: str) -> None:
    """Remove `path` (a file or a folder) at exit and on SIGTERM, unless forget_at_exit says otherwise."""
    with _lock:
        _exit_paths.add(path)


def forget_at_exit(path: str) -> None:
    with _lock:
        _exit_paths.discard(path)


def remove_if_empty_at_exit(folders: list[str]) -> None:
    """Remove these folders (the deepest first) at exit and on SIGTERM if they are empty then: the
    parents a save created, which it leaves when it is stopped; a folder that holds anything stays."""
    with _lock:
        for folder in folders:
            _exit_folders[folder] = _exit_folders.get(folder, 0) + 1


def forget_if_empty_at_exit(folders: list[str]) -> None:
    with _lock:
        for folder in folders:
            count = _exit_folders.pop(folder, 0) - 1
            if count > 0:  # another save that made the same folder still runs
                _exit_folders[folder] = count


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def make_temp_dir(prefix: str) -> str:
    """A temporary folder `prefix*` (prefix starting with TEMP_PREFIX), removed at exit, on SIGTERM or by
    remove_temp_dir; a dead server's are removed by the next one (sweep_dead_leftovers)."""
    sweep_dead_leftovers()
    path = tempfile.mkdtemp(prefix=prefix)
    # the lock file is locked before it has the name a sweeper looks for: a folder without it is passed
    # over, and a sweeper never finds the lock of a living server free
    making = os.path.join(path, LOCK_NAME + ".new")
    fd = os.open(making, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(making, os.path.join(path, LOCK_NAME))
    with _lock:
        _locks[path] = fd
        _exit_paths.add(path)
    return path


def made_here(path: str | os.PathLike) -> bool:
    """Whether `path` lies in a temporary folder this process made (a code object copied out of a core):
    the folders above it say nothing about where the user's files are."""
    text = os.path.abspath(path)
    with _lock:
        return any(text == folder or text.startswith(folder.rstrip("/") + "/") for folder in _locks)


def remove_temp_dir(path: str) -> None:
    with _lock:
        _exit_paths.discard(path)
        fd = _locks.pop(path, None)
    shutil.rmtree(path, ignore_errors=True)
    if fd is not None:
        os.close(fd)


def sweep_dead_leftovers(folder: str | None = None, *, force: bool = False) -> list[str]:
    """Remove this user's `aspace-*` temporary folders whose server is gone (their lock is free); once
    per process unless `force`. Returns what was removed."""
    global _swept
    if _swept and not force:
        return []
    _swept = True
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(TEMP_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = _open_lock(entry.path)
        except OSError:
            continue  # not ours, or not one with a lock (another program's, or being made right now)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its server is alive
        try:
            with _lock:
                if entry.path in _locks:
                    continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(fd)
    return removed


MAKING_GRACE_SECONDS = 60


def _open_lock(folder: str) -> int:
    """The lock file of one of our temporary folders, opened; OSError when it has none. A lock file
    still under its first name is one whose server died making it, once it is a minute old."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(os.path.join(folder, LOCK_NAME), flags)
    except FileNotFoundError:
        making = os.path.join(folder, LOCK_NAME + ".new")
        fd = os.open(making, flags)
        if time.time() - os.fstat(fd).st_mtime < MAKING_GRACE_SECONDS:
            os.close(fd)
            raise
        return fd


def remove_all_at_exit() -> None:
    with _lock:
        paths = list(_exit_paths)
        _exit_paths.clear()
        folders = sorted(_exit_folders, key=lambda f: -f.count(os.sep))  # inner folders before their parents
        _exit_folders.clear()
    for path in paths:
        _remove(path)
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            pass  # not empty (or gone): it stays


atexit.register(remove_all_at_exit)


def remove_temp_dirs_on_sigterm() -> None:
    """SIGTERM ends the process at once, after removing its temporary folders and files (zip extraction,
    saves, its socket and secret); writers are stopped first (see writing())."""

    def on_sigterm(signum, frame) -> None:
        _exit_gate.acquire()  # never released: a writer in another thread stops before its next piece
        remove_all_at_exit()
        os._exit(128 + signal.SIGTERM)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
