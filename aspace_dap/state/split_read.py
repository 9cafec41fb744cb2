"""One byte range of many files of a folder (every wave's pc and exec; the registers an expression reads in
every wave), read by two processes at once.

Opening 100,000 small files is system calls, a few microseconds each, and threads do not share that work
out: each call hands the interpreter lock back and forth. A helper process (this file run as a script,
`helper_main`) lists the folder, says which names are regular files in it, and reads the list from its
start while this process reads it from its end, chunk by chunk, until they meet. A SplitRead starts its helper when made, so it can
be made early and read while this process checks the manifest. Whatever the helper does not read (it
failed to start, died, or left a file alone) is read here or left to the caller, so the answer never
depends on it.

The helper is `python -I -S split_read.py FOLDER OFFSET LENGTH CHUNK NAMES_FD OUT_FD`, with two inherited
descriptors: NAMES_FD holds the file names, one per line; OUT_FD receives first one byte per name, 1 where
the folder's listing has it as a regular file (the server's existence check), then for each CHUNK names in
turn their lengths (little-endian int32 each, -1: not read) and their bytes. One byte on stdout tells that
the listing is written, then one that a chunk is whole. It runs without the package (-I -S): this file
imports only the standard library, and at its top only what the helper needs.
"""

from __future__ import annotations

import os
import select
import sys
import weakref
from array import array

HELPER = os.path.abspath(__file__)
CHUNK = 2048  # files per chunk: what either side reads between looks at the other's progress
HELPER_FILES = 16384  # fewer files than this are read by this process alone (a helper takes ~50 ms to start)
LISTING_WAIT_S = 30.0  # the longest wait for the helper's listing before doing without it
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def read_listed(names: list[str], regular, folder: int, offset: int, length: int) -> list[bytes | None]:
    """read_names of the names whose byte in `regular` (the folder's listing, one per name) is 1; None for
    the others."""
    read = iter(read_names([name for name, ok in zip(names, regular) if ok], folder, offset, length))
    return [next(read) if ok else None for ok in regular]


def read_names(names: list[str], folder: int, offset: int, length: int) -> list[bytes | None]:
    """The range of each file named in the open folder `folder`; None where it cannot be opened or read
    (the caller reads those its own way, which says why). The names must be regular files of the folder's
    listing: a name is opened as it is."""
    open_, pread, close, flags = os.open, os.pread, os.close, _FLAGS
    out: list[bytes | None] = []
    append = out.append
    for name in names:
        try:
            fd = open_(name, flags, dir_fd=folder)
            try:
                append(pread(fd, length, offset))
            finally:
                close(fd)
        except OSError:
            append(None)
    return out


def _unnamed_file() -> int:
    """A file descriptor without a name, for the helper to inherit (memory where the system has memfd)."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("aspace-ranges")  # (close-on-exec: only the helper is given it)
        except OSError:
            pass
    import tempfile

    fd, path = tempfile.mkstemp(prefix="aspace-ranges-")
    os.unlink(path)
    return fd


def _stop(proc, fds: list[int]) -> None:
    if proc is not None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


class SplitRead:
    """`length` bytes at `offset` of each of `names` (names of files in the folder at path `folder`):
    result() gives them in order, None for a file not read this way. With `names_listed`, the caller
    vouches that every name is a regular file of the folder's listing; otherwise this process reads only
    those the helper's listing shows (regular()), and without a helper none."""

    def __init__(self, folder: str, names: list[str], offset: int, length: int, names_listed: bool = False):
        self.folder, self.names, self.offset, self.length = folder, names, offset, length
        self._listed = names_listed
        self._chunk = CHUNK  # (the helper's too)
        self._proc = None  # the helper's subprocess.Popen
        self._fds: list[int] = []
        self._reported = 0  # bytes of progress the helper wrote: its listing, then one per chunk
        self._regular: bytes | None = None
        self._stopper = weakref.finalize(self, _stop, None, self._fds)
        if len(names) >= HELPER_FILES and sys.executable:
            self._start()

    def _start(self) -> None:
        import subprocess  # (only here: the helper runs this file, and starts no process)

        text = "\n".join(self.names)
        if text.count("\n") != len(self.names) - 1:
            return  # a name with a newline in it: the helper's list would not line up
        try:
            names_fd = _unnamed_file()
            self._fds.append(names_fd)
            os.write(names_fd, text.encode("utf-8", "surrogateescape"))
            out_fd = _unnamed_file()
            self._fds.append(out_fd)
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", HELPER, self.folder, str(self.offset), str(self.length),
                 str(self._chunk), str(names_fd), str(out_fd)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=(names_fd, out_fd))
        except (OSError, ValueError, UnicodeEncodeError, subprocess.SubprocessError):
            _stop(None, self._fds)
            self._proc = None
            return
        os.set_blocking(self._proc.stdout.fileno(), False)
        self._stopper.detach()
        self._stopper = weakref.finalize(self, _stop, self._proc, self._fds)

    def cancel(self) -> None:
        """Stop the helper (what it has not written is lost; result() reads it here)."""
        self._stopper()
        self._proc = None

    def regular(self, wait_s: float = LISTING_WAIT_S) -> bytes | None:
        """One byte per name, 1 where the folder's listing (made by the helper) has a regular file of that
        name; None without a helper, or when it gave none within `wait_s`."""
        if self._regular is None and self._progress(wait_s) >= 1:
            mask = self._pread(len(self.names), 0)
            if mask is not None and len(mask) == len(self.names) and mask.count(0) + mask.count(1) == len(mask):
                self._regular = mask
            else:
                self.cancel()
        return self._regular

    def result(self) -> list[bytes | None]:
        count, chunk = len(self.names), self._chunk
        chunks = -(-count // chunk)
        done: list[list[bytes | None] | None] = [None] * chunks
        mask = None if self._listed else self.regular()
        taken = own = 0  # chunks taken from the helper (from the start), read here (from the end)
        at = count  # where the helper's next chunk begins in its output (after its listing)
        try:
            folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self.cancel()
            return [None] * count
        try:
            while taken + own < chunks:
                for _ in range(max(0, self._progress() - 1 - taken) if self._proc is not None else 0):
                    if taken + own == chunks:
                        break
                    part, at = self._helper_chunk(taken, at)
                    if part is None:  # not what the helper says it wrote: read the rest here
                        self.cancel()
                        break
                    done[taken] = part
                    taken += 1
                if taken + own == chunks:
                    break
                k = chunks - 1 - own
                names = self.names[k * chunk:(k + 1) * chunk]
                if self._listed:
                    done[k] = read_names(names, folder, self.offset, self.length)
                elif mask is not None:
                    done[k] = read_listed(names, mask[k * chunk:(k + 1) * chunk], folder, self.offset, self.length)
                else:
                    done[k] = [None] * len(names)
                own += 1
        finally:
            os.close(folder)
            self.cancel()
        return [data for part in done for data in part]  # type: ignore[union-attr]

    def _progress(self, wait_s: float = 0.0) -> int:
        """Progress bytes the helper has written so far, waiting up to `wait_s` for the first."""
        if self._proc is None:
            return self._reported
        fd = self._proc.stdout.fileno()
        if not self._reported and wait_s > 0:
            select.select([fd], [], [], wait_s)
        try:
            while data := os.read(fd, 65536):
                self._reported += len(data)
            self._proc.poll()  # the end of its output: it has finished (or died); let it go
        except OSError:  # (BlockingIOError: nothing more yet)
            pass
        return self._reported

    def _pread(self, size: int, at: int) -> bytes | None:
        try:
            return os.pread(self._fds[1], size, at)
        except (OSError, IndexError):
            return None

    def _helper_chunk(self, k: int, at: int) -> tuple[list[bytes | None] | None, int]:
        """Chunk `k` as the helper wrote it at `at` in its output, and where its next begins; None when the
        output does not hold what it should."""
        count = min(self._chunk, len(self.names) - k * self._chunk)
        header = self._pread(4 * count, at)
        if header is None or len(header) != 4 * count:
            return None, at
        sizes = array("i")
        sizes.frombytes(header)
        if sys.byteorder != "little":
            sizes.byteswap()
        if max(sizes) > self.length:
            return None, at
        want = sum(s for s in sizes if s > 0)
        data = self._pread(want, at + 4 * count)
        if data is None or len(data) != want:
            return None, at
        out: list[bytes | None] = []
        pos = 0
        for size in sizes:
            if size < 0:
                out.append(None)
            else:
                out.append(data[pos:pos + size])
                pos += size
        return out, at + 4 * count + want


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def helper_main(argv: list[str]) -> int:
    """The helper: list FOLDER, write the listing of the names, then every chunk's lengths and bytes (see
    the module's docstring). Only the regular files of the listing are opened, never through a symlink."""
    folder = argv[1]
    offset, length, chunk, names_fd, out_fd = map(int, argv[2:7])
    os.lseek(names_fd, 0, os.SEEK_SET)  # (the server wrote them through the same open file)
    with os.fdopen(names_fd, "rb") as names_file:
        names = names_file.read().decode("utf-8", "surrogateescape").split("\n")
    at = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    with os.scandir(at) as listing:
        regular = {entry.name for entry in listing if entry.is_file(follow_symlinks=False)}
    listed = bytes(map(regular.__contains__, names))
    _write_all(out_fd, listed)
    _write_all(1, b"L")
    for start in range(0, len(names), chunk):
        read = read_listed(names[start:start + chunk], listed[start:start + chunk], at, offset, length)
        sizes = array("i", [-1 if data is None else len(data) for data in read])
        if sys.byteorder != "little":
            sizes.byteswap()
        _write_all(out_fd, sizes.tobytes() + b"".join(data for data in read if data is not None))
        _write_all(1, b"+")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(helper_main(sys.argv))
    except (OSError, ValueError, KeyboardInterrupt):
        sys.exit(1)  # the server reads what is left itself
