"""This process's stdin and stdout as one trio stream: what an editor starts.

The transport (transport.py) serves it like any other client's stream. Here only the
two file descriptors are made into a stream:

- A pipe or a socket (what editors spawn a server with; VS Code's are sockets) becomes
  a `trio.lowlevel.FdStream`: read and written from the event loop, woken by epoll, no
  thread hand-off per message, which a busy machine would make wait for a scheduler slot.
- Anything else (a terminal, a file, /dev/null) is read and written with blocking calls
  in a thread of trio's. FdStream would put the open file into non-blocking mode, and a
  terminal's is shared with the shell and with our own stderr; a file or a device cannot
  be waited on with epoll anyway. The same holds for a pipe that is also our stderr.
"""

from __future__ import annotations

import os
import stat
import sys

import trio

from .. import limits
from .backlog import RECEIVE_SIZE
from .transport import DispatcherFactory, serve_logged


async def serve_stdio(dispatcher_factory: DispatcherFactory) -> bool:
    """Serve one client over stdin/stdout until it disconnects or stdin closes; False after an
    internal error."""
    in_fd, out_fd = _claim_stdio()
    stream = trio.StapledStream(_fd_stream(out_fd), _fd_stream(in_fd))
    # When stdin closes the client is gone: finish what it asked for, but never wait forever.
    return await serve_logged(stream, dispatcher_factory, input_ended_grace=limits.STDIN_CLOSED_GRACE_SECONDS)


def _claim_stdio() -> tuple[int, int]:
    """The protocol's own copies of stdin and stdout. Anything else printing to stdout (a
    library, a stray print) would corrupt the protocol stream, anything reading stdin would
    take the client's bytes: from now on fd 1 and sys.stdout lead to stderr, fd 0 reads
    /dev/null."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    _widen_pipe(out_fd)
    return in_fd, out_fd


def _widen_pipe(fd: int) -> None:
    """A megabyte readMemory answer crosses a default 64 KiB pipe in 20 turns of writer and
    reader; a 1 MiB pipe (Linux's limit for unprivileged processes) takes it in one or two."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError, ValueError):
        pass  # not a pipe, or not Linux


def _fd_stream(fd: int) -> trio.abc.Stream:
    try:
        info, err = os.fstat(fd), os.fstat(2)
    except OSError:
        return _BlockingFdStream(fd)
    pollable = stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)
    if pollable and (info.st_dev, info.st_ino) != (err.st_dev, err.st_ino):
        return trio.lowlevel.FdStream(fd)
    return _BlockingFdStream(fd)


class _BlockingFdStream(trio.abc.Stream):
    """A file descriptor left in blocking mode, each read and write made in a thread of
    trio's (abandoned, not waited for, if the connection is cancelled meanwhile). One
    reader and one writer at a time, as the transport uses it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await self._in_thread(os.read, self._fd, max_bytes or RECEIVE_SIZE)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._in_thread(_write_all, self._fd, data)

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
        await trio.lowlevel.checkpoint()

    async def _in_thread(self, function, *arguments):
        if self._fd < 0:
            raise trio.ClosedResourceError("the stream is closed")
        try:
            return await trio.to_thread.run_sync(function, *arguments, abandon_on_cancel=True)
        except OSError as exc:  # a terminal hung up, a disk full: the client is gone
            raise trio.BrokenResourceError(str(exc)) from exc


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
