"""DAP over this process's stdin/stdout with plain threads: what an editor starts.

The same three roles as the trio transport (transport.py, used for TCP): a reader
that parses input and answers `cancel` at once, a worker that runs requests one at
a time, and a writer; here each is a thread. One connection needs no event loop,
and not importing one saves a tenth of a second of every start.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import traceback
from typing import Callable

from .. import limits
from ..paths import remove_temp_dirs_on_sigterm
from .allocator import keep_freed_buffers
from .dispatch import Dispatcher

RECEIVE_SIZE = 64 * 1024
_END = object()


def serve_stdio(dispatcher_factory: Callable[[], Dispatcher]) -> int:
    """Serve one client until it disconnects or stdin ends; returns the exit code."""
    remove_temp_dirs_on_sigterm()
    in_fd, out_fd = os.dup(0), os.dup(1)
    # Anything else printing to stdout (a library, a stray print) would corrupt
    # the protocol stream; from now on fd 1 and sys.stdout lead to stderr.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _widen_pipe(out_fd)
    keep_freed_buffers()
    try:
        _serve(dispatcher_factory(), in_fd, out_fd)
    except KeyboardInterrupt:
        return 130
    except Exception:
        print("aspace-dap: connection ended by an internal error:\n" + traceback.format_exc(),
              file=sys.stderr, flush=True)
        return 1
    finally:
        for fd in (in_fd, out_fd):
            try:
                os.close(fd)
            except OSError:
                pass
    return 0


def _widen_pipe(fd: int) -> None:
    """A megabyte readMemory answer crosses a default 64 KiB pipe in 20 turns of writer and
    reader; a 1 MiB pipe (Linux's limit for unprivileged processes) takes it in one or two."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError, ValueError):
        pass  # not a pipe, or not Linux


def _serve(dispatcher: Dispatcher, in_fd: int, out_fd: int) -> None:
    """Returns once everything sent has been written, or the client stopped reading: the
    process then exits, and a handler still running is abandoned (as the trio transport does).

    As over TCP, answers the client does not take stop the worker (MAX_PENDING_OUTPUT_BYTES),
    a full request queue stops the reader (MAX_QUEUED_REQUESTS), and once stdin has closed,
    queued work gets STDIN_CLOSED_GRACE_SECONDS before the process ends."""
    outgoing: queue.SimpleQueue = queue.SimpleQueue()
    work: queue.Queue = queue.Queue(maxsize=limits.MAX_QUEUED_REQUESTS)
    pending = _PendingOutput()

    def send(data: bytes) -> None:  # thread-safe, never blocks; FIFO keeps seq order
        pending.add(len(data))
        outgoing.put(data)

    def reader() -> None:
        while not dispatcher.closed:
            try:
                data = os.read(in_fd, RECEIVE_SIZE)
            except OSError:
                data = b""
            for item in dispatcher.receive_bytes(data):
                work.put(item)  # blocks while the queue is full: the client is not read meanwhile
            if not data:
                break
        # the client is gone: finish what it asked for, but never wait forever
        timer = threading.Timer(limits.STDIN_CLOSED_GRACE_SECONDS, outgoing.put, [_END])
        timer.daemon = True
        timer.start()
        work.put(_END)

    def worker() -> None:
        while True:
            item = work.get()
            if item is _END:
                break
            pending.wait_until_small()
            dispatcher.run(item)
            if dispatcher.closed:
                break
        outgoing.put(_END)  # behind every message already sent, so nothing is lost

    dispatcher.attach_sink(send)
    for role in (reader, worker):
        threading.Thread(target=role, name=f"dap-{role.__name__}", daemon=True).start()
    while True:  # the writer
        data = outgoing.get()
        if data is _END:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(out_fd, view):]
        except OSError:
            return  # the client went away
        pending.sent(len(data))


class _PendingOutput:
    """Bytes handed to the writer and not yet written."""

    def __init__(self) -> None:
        self._bytes = 0
        self._changed = threading.Condition()

    def add(self, n: int) -> None:
        with self._changed:
            self._bytes += n

    def sent(self, n: int) -> None:
        with self._changed:
            self._bytes -= n
            self._changed.notify_all()

    def wait_until_small(self) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._bytes <= limits.MAX_PENDING_OUTPUT_BYTES)
