"""The trio layer: serve one client over any trio stream, the same way whatever the stream.

Where streams come from is someone else's job: stdio.py makes one of this process's
stdin and stdout, listeners.py gets one per client from listening sockets (TCP). From
there on everything is here. Per connection three tasks run side by side: a reader
that parses input and answers `cancel` at once, a worker that runs requests one at a
time in a thread (handlers are synchronous and may be slow, e.g. DWARF indexing), and
a writer. Running one worker per connection serialises handlers, so responses keep
request order, while the reader keeps reading and can see a `cancel` for the request
that is running. What a connection may hold is counted by backlog.py; `run_server` is
the process around it all.
"""

from __future__ import annotations

import math
import sys
import traceback
from typing import Callable

import trio

from .. import limits
from ..tempfiles import remove_temp_dirs_on_sigterm, sweep_dead_leftovers
from .allocator import keep_freed_buffers
from .backlog import RECEIVE_SIZE, Backlog, ServerBudget
from .dispatch import Dispatcher, WorkItem

DispatcherFactory = Callable[[], Dispatcher]

# Requests answered on the event loop thread: `initialize` only reports capabilities, and a new
# client should get that answer at once even while other clients keep handler threads busy.
INLINE_COMMANDS = frozenset({"initialize"})


class _Stalled(Exception):
    """The client made no progress for MAX_STALL_SECONDS (or did not complete its handshake within
    MAX_INITIALIZE_SECONDS): it is disconnected."""

    def __init__(self, what: str, limit_name: str = "MAX_STALL_SECONDS"):
        super().__init__(what)
        self.limit_name = limit_name


async def serve_connection(stream: trio.abc.Stream, dispatcher: Dispatcher, *,
                           input_ended_grace: float | None = None, budget: ServerBudget | None = None,
                           stall_seconds: float | None = None, handshake_seconds: float | None = None,
                           secret: str | None = None, secret_hint: str = "", client_is_user: bool = True,
                           on_closed: Callable[[], None] | None = None) -> None:
    """Serve one client until it disconnects or its stream ends, then close `stream`.

    The client is read only while its answers are being taken and its queue is short
    (limits MAX_PENDING_OUTPUT_BYTES, MAX_QUEUED_REQUESTS): a client that never reads
    costs a bounded amount of memory. Its handlers run in a thread of its own, so a
    slow request cannot hold up other clients. With `input_ended_grace`, work still
    queued when the input ends gets that many seconds before the connection closes.
    With `budget`, what all clients hold together is bounded too (MAX_SERVER_BUFFER_BYTES).
    With `stall_seconds`, a client that takes none of its answers for that long, or
    stops in the middle of a message for that long, is disconnected (MAX_STALL_SECONDS);
    a client that keeps reading, however slowly, is not. With `handshake_seconds`, a client
    that has not completed initialize (and presented `secret`, when given) within that
    time is disconnected (MAX_INITIALIZE_SECONDS). When its input ends, the client is gone:
    whatever it asked for is cancelled after `input_ended_grace` seconds (None: finished
    first). `on_closed` runs once the stream is closed, before anything is said about it.
    `client_is_user`: False for a client that proved nothing (TCP without a secret): it reads sources
    only where the user opened something (see session/sources.py).
    """
    if secret is not None:
        dispatcher.require_secret(secret, secret_hint)
    dispatcher.client_is_user = client_is_user
    token = trio.lowlevel.current_trio_token()
    out_send, out_recv = trio.open_memory_channel[bytes](math.inf)
    work_send, work_recv = trio.open_memory_channel[WorkItem](math.inf)
    backlog = Backlog(budget, dispatcher.connection)

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
                        try:
                            for item in items:
                                work_send.send_nowait(item)
                                backlog.add_work()
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            break  # the worker has ended the session (disconnect, a wrong secret): read no more
                        backlog.add_input(held_before + len(data) - dispatcher.connection.buffered_bytes, bool(items))
                        if not data:
                            break
                if input_ended_grace is not None:
                    await trio.sleep(input_ended_grace)
                    dispatcher.cancel_all()  # a handler left running stops at its next check
                    nursery.cancel_scope.cancel()

            async def handshake_watch() -> None:
                await trio.sleep(handshake_seconds)
                if not dispatcher.handshake_done:
                    what = "" if dispatcher.authenticated else " (presenting the server's secret)"
                    raise _Stalled(f"did not complete initialize{what} within {limits.MAX_INITIALIZE_SECONDS} s",
                                   "MAX_INITIALIZE_SECONDS")

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
                if stall_seconds is None:
                    await stream.send_all(data)
                    return
                # Piece by piece, so that any progress at all restarts the clock: a slow reader is served.
                view = memoryview(data)
                while view:
                    with trio.move_on_after(stall_seconds):
                        view = view[await _send_some(stream, view):]
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
            if handshake_seconds is not None:
                nursery.start_soon(handshake_watch)

    stalled = None
    try:
        await serve()
    except* _Stalled as group:
        stalled = group.exceptions[0]
        dispatcher.closed = True
    finally:
        dispatcher.cancel_all()  # nobody will read what is still being worked on
        backlog.release()
        await trio.aclose_forcefully(stream)  # everything queued has been written by now
        if on_closed is not None:
            on_closed()
    if stalled is not None:  # said once it is closed and its place is free
        print(f"aspace-dap: disconnected a client that {stalled} " + limits.limit_hint(stalled.limit_name),
              file=sys.stderr, flush=True)


async def _send_some(stream: trio.abc.Stream, view: memoryview) -> int:
    """Send the start of `view` (at most RECEIVE_SIZE bytes); how many bytes went. A socket says
    when it took only part of them; any other stream has taken all of them when send_all returns."""
    piece = view[:RECEIVE_SIZE]
    if isinstance(stream, trio.SocketStream):  # TCP or Unix-domain
        return await stream.socket.send(piece)
    await stream.send_all(piece)
    return len(piece)


async def serve_logged(stream: trio.abc.Stream, dispatcher_factory: DispatcherFactory, **options) -> bool:
    """serve_connection with a fresh dispatcher; False if it ended by an internal error.

    One connection failing (a bug, or a test's message validation) must not take
    the server's other connections down; what happened is said on stderr."""
    try:
        await serve_connection(stream, dispatcher_factory(), **options)
    except Exception:
        print("aspace-dap: connection ended by an internal error:\n" + traceback.format_exc(),
              file=sys.stderr, flush=True)
        return False
    return True


def run_server(dispatcher_factory: DispatcherFactory, *, port: int | None = None, host: str = "127.0.0.1",
               socket_path: str | None = None, insecure_tcp: bool = False, secret_file: str | None = None) -> int:
    """Serve on stdio (no port, no socket), a Unix-domain socket, or TCP (with a secret clients must
    present, unless `insecure_tcp`); returns a process exit code."""
    if socket_path is not None:
        from .listeners import serve_unix
        serve, arguments = serve_unix, (dispatcher_factory, socket_path)
    elif port is None:
        from .stdio import serve_stdio
        serve, arguments = serve_stdio, (dispatcher_factory,)
    elif not 0 <= port <= 65535:
        print(f"aspace-dap: port {port} is not between 0 and 65535", file=sys.stderr)
        return 2
    else:
        from functools import partial

        from .listeners import serve_tcp
        from .secret import new_secret
        secret = None if insecure_tcp else new_secret()
        serve, arguments = partial(serve_tcp, secret=secret, secret_file=secret_file), (dispatcher_factory, port, host)
    remove_temp_dirs_on_sigterm()
    sweep_dead_leftovers()  # what a killed server left in the temporary folder
    keep_freed_buffers()
    # Handler threads compute while the event loop thread accepts and reads: hand the GIL over
    # more often than Python's 5 ms, so a new client is answered at once while others keep it busy.
    sys.setswitchinterval(0.001)
    from .listeners import ListenError
    try:
        served = trio.run(serve, *arguments)
    except KeyboardInterrupt:
        return 130
    except ListenError as exc:
        print(f"aspace-dap: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"aspace-dap: {exc}", file=sys.stderr)
        return 1
    return 1 if served is False else 0
