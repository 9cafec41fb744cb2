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

from .dispatch import Dispatcher, WorkItem

DispatcherFactory = Callable[[], Dispatcher]

RECEIVE_SIZE = 64 * 1024


async def serve_connection(stream: trio.abc.Stream, dispatcher: Dispatcher) -> None:
    """Serve one client until it disconnects or its stream ends, then close `stream`."""
    token = trio.lowlevel.current_trio_token()
    out_send, out_recv = trio.open_memory_channel[bytes](math.inf)
    work_send, work_recv = trio.open_memory_channel[WorkItem](math.inf)

    def deliver(data: bytes) -> None:  # on the trio thread
        try:
            out_send.send_nowait(data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # the connection is going away; nobody can read this any more

    def sink(data: bytes) -> None:  # from any thread; FIFO keeps seq order on the wire
        try:
            token.run_sync_soon(deliver, data)
        except trio.RunFinishedError:
            pass  # an abandoned handler thread finishing after the server stopped

    dispatcher.attach_sink(sink)

    async with trio.open_nursery() as nursery:

        async def reader() -> None:
            async with work_send:
                while not dispatcher.closed:
                    try:
                        data = await stream.receive_some(RECEIVE_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        data = b""
                    for item in dispatcher.receive_bytes(data):
                        work_send.send_nowait(item)
                    if not data:
                        break

        async def worker() -> None:
            async with work_recv:
                async for item in work_recv:
                    await trio.to_thread.run_sync(dispatcher.run, item, abandon_on_cancel=True)
                    if dispatcher.closed:
                        break
            # Queued behind every delivery already scheduled, so nothing sent is lost.
            token.run_sync_soon(out_send.close)

        async def writer() -> None:
            try:
                async with out_recv:
                    async for data in out_recv:
                        await stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client went away
            nursery.cancel_scope.cancel()

        nursery.start_soon(reader)
        nursery.start_soon(worker)
        nursery.start_soon(writer)
    await trio.aclose_forcefully(stream)  # everything queued has been written by now


async def serve_stdio(dispatcher_factory: DispatcherFactory) -> None:
    """Serve one client over this process's stdin/stdout."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    # Anything else printing to stdout (a library, a stray print) would corrupt
    # the protocol stream; from now on fd 1 and sys.stdout lead to stderr.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = trio.StapledStream(trio.lowlevel.FdStream(out_fd), trio.lowlevel.FdStream(in_fd))
    async with stream:
        await _serve_logged(stream, dispatcher_factory)


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

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            await _serve_logged(stream, dispatcher_factory)

    await trio.serve_listeners(handle, listeners)


async def _serve_logged(stream: trio.abc.Stream, dispatcher_factory: DispatcherFactory) -> None:
    # One connection failing (a bug, or a test's message validation) must not take
    # the server's other connections down; say what happened on stderr.
    try:
        await serve_connection(stream, dispatcher_factory())
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
