"""Servers of many clients: each connection accepted from a listening socket is a trio
stream, served by the transport (transport.py) like any other.

`serve_listeners` owns what every such server shares, whatever the socket: at most
MAX_SESSIONS clients at once (the next one is told so and closed), one ServerBudget
for all of them (MAX_SERVER_BUFFER_BYTES), and disconnecting a client that stalls
(MAX_STALL_SECONDS). `serve_tcp` only opens TCP listeners for it; another kind of
socket is another way to open `trio.abc.Listener`s.
"""

from __future__ import annotations

import ipaddress
import sys

import trio

from .. import limits
from .backlog import RECEIVE_SIZE, ServerBudget
from .protocol import DapConnection, Request
from .transport import DispatcherFactory, serve_logged

REFUSAL_READ_BYTES = 64 * 1024  # of a client over MAX_SESSIONS, before it is told so


async def serve_listeners(dispatcher_factory: DispatcherFactory, listeners: list[trio.abc.Listener]) -> None:
    """Accept clients on `listeners` until cancelled, each with its own dispatcher."""
    sessions = refusing = 0
    budget = ServerBudget(limits.MAX_SERVER_BUFFER_BYTES, limits.MAX_SESSIONS)

    async def handle(stream: trio.abc.Stream) -> None:
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
                await serve_logged(stream, dispatcher_factory, budget=budget, stall_seconds=limits.MAX_STALL_SECONDS)
            finally:
                sessions -= 1

    await trio.serve_listeners(handle, listeners)


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
    await serve_listeners(dispatcher_factory, listeners)


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


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
