"""The trio layer: move bytes between a stream (stdio or TCP) and a Dispatcher.

Per connection three tasks run side by side: a reader that parses input and
answers `cancel` at once, a worker that runs requests one at a time in a
thread (handlers are synchronous and may be slow, e.g. DWARF indexing), and a
writer. Running one worker per connection serialises handlers, so responses
keep request order, while the reader keeps reading and can see a `cancel` for
the request that is running.
"""

from __future__ import annotations

import ipaddress
import math
import os
import sys
import traceback
from typing import Callable

import trio

from .. import limits
from ..paths import remove_temp_dirs_on_sigterm
from .allocator import keep_freed_buffers
from .dispatch import Dispatcher, WorkItem
from .protocol import DapConnection, Request

DispatcherFactory = Callable[[], Dispatcher]

RECEIVE_SIZE = 64 * 1024
# Requests answered on the event loop thread: `initialize` only reports capabilities, and a new
# client should get that answer at once even while other clients keep handler threads busy.
INLINE_COMMANDS = frozenset({"initialize"})


async def serve_connection(stream: trio.abc.Stream, dispatcher: Dispatcher, *,
                           input_ended_grace: float | None = None) -> None:
    """Serve one client until it disconnects or its stream ends, then close `stream`.

    The client is read only while its answers are being taken and its queue is short
    (limits MAX_PENDING_OUTPUT_BYTES, MAX_QUEUED_REQUESTS): a client that never reads
    costs a bounded amount of memory. Its handlers run in a thread of its own, so a
    slow request cannot hold up other clients. With `input_ended_grace`, work still
    queued when the input ends gets that many seconds before the connection closes.
    """
    token = trio.lowlevel.current_trio_token()
    out_send, out_recv = trio.open_memory_channel[bytes](math.inf)
    work_send, work_recv = trio.open_memory_channel[WorkItem](math.inf)
    backlog = _Backlog()

    def deliver(data: bytes) -> None:  # on the trio thread
        try:
            out_send.send_nowait(data)
            backlog.add_output(len(data))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # the connection is going away; nobody can read this any more

    def sink(data: bytes) -> None:  # from any thread; FIFO keeps seq order on the wire
        try:
            token.run_sync_soon(deliver, data)
        except trio.RunFinishedError:
            pass  # an abandoned handler thread finishing after the server stopped

    dispatcher.attach_sink(sink)
    # One thread per connection, not trio's shared pool: a handler that blocks must not
    # use up the threads other clients need.
    thread_limiter = trio.CapacityLimiter(1)

    async with trio.open_nursery() as nursery:

        async def reader() -> None:
            async with work_send:
                while not dispatcher.closed:
                    await backlog.wait_until_small()
                    try:
                        data = await stream.receive_some(RECEIVE_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        data = b""
                    backlog.add_input(len(data))
                    for item in dispatcher.receive_bytes(data):
                        backlog.add_work()
                        work_send.send_nowait(item)
                    if not data:
                        break
            if input_ended_grace is not None:
                await trio.sleep(input_ended_grace)
                nursery.cancel_scope.cancel()

        async def worker() -> None:
            async with work_recv:
                async for item in work_recv:
                    await backlog.wait_until_output_small()  # one answer at most past the limit
                    try:
                        if item.request is not None and item.request.command in INLINE_COMMANDS:
                            dispatcher.run(item)  # quick by contract; no thread hand-off for a new client
                        else:
                            await trio.to_thread.run_sync(dispatcher.run, item, abandon_on_cancel=True,
                                                          limiter=thread_limiter)
                    finally:
                        backlog.done_work()
                    if dispatcher.closed:
                        break
            # Queued behind every delivery already scheduled, so nothing sent is lost.
            token.run_sync_soon(out_send.close)

        async def writer() -> None:
            try:
                async with out_recv:
                    async for data in out_recv:
                        await stream.send_all(data)
                        backlog.sent_output(len(data))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client went away
            nursery.cancel_scope.cancel()

        nursery.start_soon(reader)
        nursery.start_soon(worker)
        nursery.start_soon(writer)
    await trio.aclose_forcefully(stream)  # everything queued has been written by now


class _Backlog:
    """Answers not yet written and requests not yet run, for one connection (trio thread only).

    The reader waits while answers pile up, while many requests wait to run, or while the
    requests read since the queue was last empty add up to more than one maximal request;
    the worker waits before a request while answers pile up.
    """

    def __init__(self) -> None:
        self.output_bytes = 0
        self.work_items = 0
        self.input_bytes = 0  # read since the work queue was last empty
        self._changed = trio.Event()

    def _output_small(self) -> bool:
        return self.output_bytes <= limits.MAX_PENDING_OUTPUT_BYTES

    def _small(self) -> bool:
        return self._output_small() and self.work_items <= limits.MAX_QUEUED_REQUESTS and \
            (self.work_items == 0 or self.input_bytes <= limits.MAX_REQUEST_BYTES)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def add_output(self, n: int) -> None:
        self.output_bytes += n

    def sent_output(self, n: int) -> None:
        self.output_bytes -= n
        self._notify()

    def add_input(self, n: int) -> None:
        self.input_bytes += n

    def add_work(self) -> None:
        self.work_items += 1

    def done_work(self) -> None:
        self.work_items -= 1
        if self.work_items == 0:
            self.input_bytes = 0
        self._notify()

    async def wait_until_small(self) -> None:
        while not self._small():
            await self._changed.wait()

    async def wait_until_output_small(self) -> None:
        while not self._output_small():
            await self._changed.wait()


async def serve_stdio(dispatcher_factory: DispatcherFactory) -> None:
    """Serve one client over this process's stdin/stdout."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    # Anything else printing to stdout (a library, a stray print) would corrupt
    # the protocol stream; from now on fd 1 and sys.stdout lead to stderr.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = trio.StapledStream(trio.lowlevel.FdStream(out_fd), trio.lowlevel.FdStream(in_fd))
    async with stream:
        # When stdin closes the client is gone: finish what it asked for, but never wait forever.
        await _serve_logged(stream, dispatcher_factory, input_ended_grace=limits.STDIN_CLOSED_GRACE_SECONDS)


async def serve_tcp(
    dispatcher_factory: DispatcherFactory,
    port: int,
    host: str = "127.0.0.1",
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept clients on host:port (0 = any free port), each with its own dispatcher."""
    if not _is_loopback(host):
        print(f"aspace-dap: warning: listening on {host}, which other machines may reach; "
              "the protocol has no authentication", file=sys.stderr, flush=True)
    listeners = await trio.open_tcp_listeners(port, host=host)
    if port == 0:
        listeners = listeners[:1]  # several listeners would each get a different free port
    bound_port = 0
    for listener in listeners:
        address, bound_port = listener.socket.getsockname()[:2]
        shown = f"[{address}]" if ":" in address else address
        print(f"aspace-dap: listening on {shown}:{bound_port}", file=sys.stderr, flush=True)
    task_status.started(bound_port)

    sessions = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal sessions
        async with stream:
            if sessions >= limits.MAX_SESSIONS:
                await _refuse(stream, f"the server is serving its limit of {limits.MAX_SESSIONS} clients; try "
                                      "again later " + limits.limit_hint("MAX_SESSIONS"))
                return
            sessions += 1
            try:
                await _serve_logged(stream, dispatcher_factory)
            finally:
                sessions -= 1

    await trio.serve_listeners(handle, listeners)


async def _refuse(stream: trio.abc.Stream, message: str) -> None:
    """Answer a client over the session limit: its first request gets `message` as an error, then the end."""
    connection = DapConnection()
    with trio.move_on_after(5):
        try:
            while (request := connection.next_message()) is None:
                data = await stream.receive_some(RECEIVE_SIZE)
                if not data:
                    return
                connection.receive_data(data)
            if isinstance(request, Request):
                await stream.send_all(connection.send_error(request.seq, request.command, message, 1))
            else:
                await stream.send_all(connection.send_event("output", {"category": "important",
                                                                       "output": message + "\n"}))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


async def _serve_logged(stream: trio.abc.Stream, dispatcher_factory: DispatcherFactory, **options) -> None:
    # One connection failing (a bug, or a test's message validation) must not take
    # the server's other connections down; say what happened on stderr.
    try:
        await serve_connection(stream, dispatcher_factory(), **options)
    except Exception:
        print("aspace-dap: connection ended by an internal error:\n" + traceback.format_exc(),
              file=sys.stderr, flush=True)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_server(dispatcher_factory: DispatcherFactory, *, port: int | None = None, host: str = "127.0.0.1") -> int:
    """Serve on stdio (port None) or TCP; returns a process exit code."""
    if port is not None and not 0 <= port <= 65535:
        print(f"aspace-dap: port {port} is not between 0 and 65535", file=sys.stderr)
        return 2
    remove_temp_dirs_on_sigterm()
    keep_freed_buffers()
    # Handler threads compute while the event loop thread accepts and reads: hand the GIL over
    # more often than Python's 5 ms, so a new client is answered at once while others keep it busy.
    sys.setswitchinterval(0.001)
    try:
        if port is None:
            trio.run(serve_stdio, dispatcher_factory)
        else:
            trio.run(serve_tcp, dispatcher_factory, port, host)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"aspace-dap: {exc}", file=sys.stderr)
        return 1
    return 0
