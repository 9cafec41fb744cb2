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
REFUSAL_READ_BYTES = 64 * 1024  # of a client over MAX_SESSIONS, before it is told so
# Requests answered on the event loop thread: `initialize` only reports capabilities, and a new
# client should get that answer at once even while other clients keep handler threads busy.
INLINE_COMMANDS = frozenset({"initialize"})


class _Stalled(Exception):
    """The client made no progress for MAX_STALL_SECONDS: it is disconnected."""


async def serve_connection(stream: trio.abc.Stream, dispatcher: Dispatcher, *,
                           input_ended_grace: float | None = None, budget: ServerBudget | None = None,
                           stall_seconds: float | None = None) -> None:
    """Serve one client until it disconnects or its stream ends, then close `stream`.

    The client is read only while its answers are being taken and its queue is short
    (limits MAX_PENDING_OUTPUT_BYTES, MAX_QUEUED_REQUESTS): a client that never reads
    costs a bounded amount of memory. Its handlers run in a thread of its own, so a
    slow request cannot hold up other clients. With `input_ended_grace`, work still
    queued when the input ends gets that many seconds before the connection closes.
    With `budget`, what all clients hold together is bounded too (MAX_SERVER_BUFFER_BYTES).
    With `stall_seconds`, a client that takes none of its answers for that long, or
    stops in the middle of a message for that long, is disconnected (MAX_STALL_SECONDS);
    a client that keeps reading, however slowly, is not.
    """
    token = trio.lowlevel.current_trio_token()
    out_send, out_recv = trio.open_memory_channel[bytes](math.inf)
    work_send, work_recv = trio.open_memory_channel[WorkItem](math.inf)
    backlog = _Backlog(budget, dispatcher.connection)

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

    async def serve() -> None:
        async with trio.open_nursery() as nursery:

            async def receive() -> bytes:
                # Silence between messages is fine (an editor left open); in the middle of one it is not.
                if stall_seconds is None or not dispatcher.connection.buffered_bytes:
                    return await stream.receive_some(RECEIVE_SIZE)
                with trio.move_on_after(stall_seconds):
                    return await stream.receive_some(RECEIVE_SIZE)
                raise _Stalled(f"sent part of a message, then nothing for {stall_seconds} s")

            async def reader() -> None:
                async with work_send:
                    while not dispatcher.closed:
                        await backlog.wait_until_small()
                        try:
                            data = await receive()
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            data = b""
                        held_before = dispatcher.connection.buffered_bytes
                        items = dispatcher.receive_bytes(data)
                        for item in items:
                            backlog.add_work()
                            work_send.send_nowait(item)
                        backlog.add_input(held_before + len(data) - dispatcher.connection.buffered_bytes, bool(items))
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

            async def send(data: bytes) -> None:
                if stall_seconds is None or not isinstance(stream, trio.SocketStream):
                    await stream.send_all(data)
                    return
                # Piece by piece, so that any progress at all restarts the clock: a slow reader is served.
                view = memoryview(data)
                while view:
                    with trio.move_on_after(stall_seconds):
                        view = view[await stream.socket.send(view[:RECEIVE_SIZE]):]
                        continue
                    raise _Stalled(f"took none of its answers for {stall_seconds} s")

            async def writer() -> None:
                try:
                    async with out_recv:
                        async for data in out_recv:
                            await send(data)
                            backlog.sent_output(len(data))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass  # the client went away
                nursery.cancel_scope.cancel()

            nursery.start_soon(reader)
            nursery.start_soon(worker)
            nursery.start_soon(writer)

    try:
        await serve()
    except* _Stalled as stalled:
        print(f"aspace-dap: disconnected a client that {stalled.exceptions[0]} "
              + limits.limit_hint("MAX_STALL_SECONDS"), file=sys.stderr, flush=True)
        dispatcher.closed = True
    finally:
        backlog.release()
        await trio.aclose_forcefully(stream)  # everything queued has been written by now


class ServerBudget:
    """Bytes all clients of one server hold together (trio thread only): requests read and not yet
    run, answers not yet sent, and room made for the rest of messages on their way. Limit
    MAX_SERVER_BUFFER_BYTES.

    Each client may always hold a small share, so a new client is read and answered however
    full the server is. Past its share a client reads on only if the rest of the message it is
    sending fits in what the server has left: that room is reserved at once, so a message that
    has begun can always finish, and the others wait for room instead of each holding part of
    theirs. Its next request runs only while the server is under the limit. A client that holds
    room and goes silent is disconnected after MAX_STALL_SECONDS, which frees the room.
    """

    def __init__(self, limit: int, sessions: int):
        self.limit = limit
        self.share = max(2 * RECEIVE_SIZE, limit // (2 * max(1, sessions)))
        self.held = 0
        self._changed = trio.Event()

    def change(self, delta: int) -> None:
        self.held += delta
        if delta < 0:
            self._changed.set()
            self._changed = trio.Event()

    async def wait(self) -> None:
        await self._changed.wait()

    def may_read(self, backlog: _Backlog) -> bool:
        if backlog.held + RECEIVE_SIZE <= self.share:
            return True
        missing = backlog.missing()
        if not missing:  # between messages, or a header still arriving (at most 64 KiB)
            return self.held + RECEIVE_SIZE <= self.limit
        if backlog.reserved >= missing:
            return True
        if self.held + missing - backlog.reserved > self.limit:
            return False
        backlog.reserve(missing)
        return True

    def may_run(self, backlog: _Backlog) -> bool:
        return backlog.output_bytes <= self.share or self.held <= self.limit


class _Backlog:
    """Answers not yet written and requests not yet run, for one connection (trio thread only).

    The reader waits while answers pile up, while many requests wait to run, or while the
    requests read since the queue was last empty add up to more than one maximal request;
    the worker waits before a request while answers pile up. With a ServerBudget, both
    also wait while the server as a whole holds too much.
    """

    def __init__(self, budget: ServerBudget | None = None, connection=None) -> None:
        self.output_bytes = 0
        self.work_items = 0
        self.input_bytes = 0  # read since the work queue was last empty
        self.held = 0  # bytes this connection holds
        self.reserved = 0  # bytes of the message in progress that are still to come, made room for
        self._counted = 0  # what this connection counts in the budget: held + reserved
        self._budget = budget
        self._connection = connection  # the framing state: bytes of a message still arriving
        self._changed = trio.Event()

    def missing(self) -> int:
        return self._connection.missing_bytes if self._connection is not None else 0

    def reserve(self, missing: int) -> None:
        self.reserved = missing
        self._account()

    def _output_small(self) -> bool:
        return self.output_bytes <= limits.MAX_PENDING_OUTPUT_BYTES and \
            (self._budget is None or self._budget.may_run(self))

    def _small(self) -> bool:
        return self._output_small() and self.work_items <= limits.MAX_QUEUED_REQUESTS and \
            (self.work_items == 0 or self.input_bytes <= limits.MAX_REQUEST_BYTES) and \
            (self._budget is None or self._budget.may_read(self))

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _account(self) -> None:
        framed = self._connection.buffered_bytes if self._connection is not None else 0
        self.held = self.output_bytes + self.input_bytes + framed
        self.reserved = min(self.reserved, self.missing())  # what arrived is held now, not reserved
        counted = self.held + self.reserved
        if self._budget is not None:
            self._budget.change(counted - self._counted)
        self._counted = counted

    def add_output(self, n: int) -> None:
        self.output_bytes += n
        self._account()

    def sent_output(self, n: int) -> None:
        self.output_bytes -= n
        self._account()
        self._notify()

    def add_input(self, n: int, queued: bool = True) -> None:
        """`n` bytes were framed into messages (queued: some became work) or dropped."""
        if queued or self.work_items:
            self.input_bytes += n
        self._account()

    def add_work(self) -> None:
        self.work_items += 1

    def done_work(self) -> None:
        self.work_items -= 1
        if self.work_items == 0:
            self.input_bytes = 0
        self._account()
        self._notify()

    def release(self) -> None:
        """The connection has ended: nothing of it is held any more."""
        self.output_bytes = self.input_bytes = self.reserved = 0
        self._connection = None
        self._account()

    async def _wait(self) -> None:
        if self._budget is None:
            await self._changed.wait()
            return
        async with trio.open_nursery() as nursery:  # whichever comes first: this client's or the server's change
            async def wait_for(event_wait) -> None:
                await event_wait()
                nursery.cancel_scope.cancel()
            nursery.start_soon(wait_for, self._changed.wait)
            nursery.start_soon(wait_for, self._budget.wait)

    async def wait_until_small(self) -> None:
        while not self._small():
            await self._wait()

    async def wait_until_output_small(self) -> None:
        while not self._output_small():
            await self._wait()


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

    sessions = refusing = 0
    budget = ServerBudget(limits.MAX_SERVER_BUFFER_BYTES, limits.MAX_SESSIONS)

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal sessions, refusing
        async with stream:
            if sessions >= limits.MAX_SESSIONS:
                if refusing >= limits.MAX_SESSIONS:
                    return  # answering refusals must not cost more than serving clients: just close
                refusing += 1
                try:
                    await _refuse(stream, f"the server is serving its limit of {limits.MAX_SESSIONS} clients; "
                                          "try again later " + limits.limit_hint("MAX_SESSIONS"))
                finally:
                    refusing -= 1
                return
            sessions += 1
            try:
                await _serve_logged(stream, dispatcher_factory, budget=budget,
                                    stall_seconds=limits.MAX_STALL_SECONDS)
            finally:
                sessions -= 1

    await trio.serve_listeners(handle, listeners)


async def _refuse(stream: trio.abc.Stream, message: str) -> None:
    """Answer a client over the session limit: its first request gets `message` as an error, then the end.
    Only a small first message is read (an initialize is a few hundred bytes)."""
    connection = DapConnection(max_body_size=REFUSAL_READ_BYTES)
    with trio.move_on_after(5):
        try:
            while (request := connection.next_message()) is None:
                data = await stream.receive_some(RECEIVE_SIZE)
                if not data or connection.buffered_bytes > REFUSAL_READ_BYTES:
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
