"""Servers of many clients: each connection accepted from a listening socket is a trio
stream, served by the transport (transport.py) like any other.

`serve_listeners` owns what every such server shares, whatever the socket: at most
MAX_SESSIONS clients at once (the next one waits up to twice MAX_INITIALIZE_SECONDS for a
place, then is told so and closed), one ServerBudget for all of them (MAX_SERVER_BUFFER_BYTES),
disconnecting a client that stalls (MAX_STALL_SECONDS) or that has not completed its
handshake within MAX_INITIALIZE_SECONDS of getting its place, and, when given one, the secret every client
must present. A closed client's place is free at once. `serve_tcp` and `serve_unix` only
open listeners for it:

- TCP (`--port`): every user of the machine can connect to a loopback port, so clients must
  present the secret (secret.py), unless the server was started with `--insecure-tcp`; such clients
  are not known to be the user, and read sources only where the user opened something.
- A Unix-domain socket (`--socket PATH`): made owner-only (0600) and served only to peers of
  this user (SO_PEERCRED); a path that exists is taken over only if it is a stale socket of
  this user's that nobody listens on.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import stat
import struct
import sys

import trio

from .. import limits
from ..tempfiles import forget_at_exit, remove_at_exit
from .backlog import RECEIVE_SIZE, ServerBudget
from .protocol import DapConnection, Request
from .transport import DispatcherFactory, serve_logged

REFUSAL_READ_BYTES = 64 * 1024  # of a client over MAX_SESSIONS, before it is told so


class ListenError(Exception):
    """A socket the server cannot (or must not) listen on: it does not start."""


async def serve_listeners(dispatcher_factory: DispatcherFactory, listeners: list[trio.abc.Listener], *,
                          secret: str | None = None, secret_hint: str = "", clients_are_user: bool = True) -> None:
    """Accept clients on `listeners` until cancelled, each with its own dispatcher; with `secret`,
    a client must present it (see Dispatcher.require_secret). `clients_are_user`: False where anyone
    may connect (TCP without a secret); such clients read sources only where the user opened something."""
    sessions = waiting = 0
    budget = ServerBudget(limits.MAX_SERVER_BUFFER_BYTES, limits.MAX_SESSIONS)
    place_freed = trio.Event()

    async def handle(stream: trio.abc.Stream) -> None:
        nonlocal sessions, waiting, place_freed
        async with stream:
            if not _same_user(stream):
                return
            if sessions >= limits.MAX_SESSIONS:
                if waiting >= limits.MAX_SESSIONS:
                    return  # answering refusals must not cost more than serving clients: just close
                waiting += 1
                try:  # a client holding a place without completing its handshake is dropped within
                    # MAX_INITIALIZE_SECONDS of getting it: wait twice that for a place
                    with trio.move_on_after(2 * limits.MAX_INITIALIZE_SECONDS):
                        while sessions >= limits.MAX_SESSIONS:
                            await place_freed.wait()
                    if sessions >= limits.MAX_SESSIONS:
                        await _refuse(stream, f"the server is serving its limit of {limits.MAX_SESSIONS} clients; "
                                              "try again later " + limits.limit_hint("MAX_SESSIONS"))
                        return
                finally:
                    waiting -= 1
            sessions += 1
            released = False

            def release() -> None:  # as soon as the stream is closed: the place is free for the next client
                nonlocal sessions, released, place_freed
                if not released:
                    released = True
                    sessions -= 1
                    place_freed.set()
                    place_freed = trio.Event()

            try:
                # a client that closes its side is gone: what it asked for is cancelled, its place freed at once
                await serve_logged(stream, dispatcher_factory, budget=budget, stall_seconds=limits.MAX_STALL_SECONDS,
                                   input_ended_grace=0,
                                   handshake_seconds=limits.MAX_INITIALIZE_SECONDS, secret=secret,
                                   secret_hint=secret_hint, client_is_user=clients_are_user,
                                   on_closed=release)
            finally:
                release()

    await trio.serve_listeners(handle, listeners)


def _same_user(stream: trio.abc.Stream) -> bool:
    """A Unix-domain client is served only if it runs as this server's user (or root); others always."""
    sock = getattr(stream, "socket", None)
    if sock is None or sock.family != socket.AF_UNIX:
        return True
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _, uid, _ = struct.unpack("3i", creds)
    return uid in (os.geteuid(), 0)


async def serve_tcp(
    dispatcher_factory: DispatcherFactory,
    port: int,
    host: str = "127.0.0.1",
    *,
    secret: str | None = None,
    secret_file: str | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept clients on host:port (0 = any free port), each with its own dispatcher. With `secret`, it
    is written to `secret_file` (default ~/.aspace-dap/port-PORT.secret) and clients must present it."""
    from .secret import SecretFileError, default_secret_file, write_secret_file

    if not _is_loopback(host):
        print(f"aspace-dap: warning: listening on {host}, which other machines may reach"
              + ("" if secret is not None else "; with --insecure-tcp anyone who reaches it acts as you"),
              file=sys.stderr, flush=True)
    listeners = await trio.open_tcp_listeners(port, host=host)
    if port == 0:
        listeners = listeners[:1]  # several listeners would each get a different free port
    bound_port = 0
    for listener in listeners:
        address, bound_port = listener.socket.getsockname()[:2]
        shown = f"[{address}]" if ":" in address else address
        print(f"aspace-dap: listening on {shown}:{bound_port}", file=sys.stderr, flush=True)
    hint = ""
    if secret is not None:
        path = secret_file or str(default_secret_file(bound_port))
        from pathlib import Path

        try:
            write_secret_file(Path(path), secret, default_place=secret_file is None)
        except SecretFileError as exc:
            for listener in listeners:
                await listener.aclose()
            raise ListenError(f"cannot keep the secret where only you can read it: {exc}") from None
        hint = f" (the server printed it at start and wrote it to {path})"
        print(f"aspace-dap: clients present the secret {secret} (the launch argument \"secret\"; "
              f"also in {path}, readable by you only)", file=sys.stderr, flush=True)
    else:
        print("aspace-dap: warning: --insecure-tcp: every user of this machine can connect and act as you",
              file=sys.stderr, flush=True)
    task_status.started(bound_port)
    # with the secret a client is the user; without it (--insecure-tcp) anyone on the machine may be
    await serve_listeners(dispatcher_factory, listeners, secret=secret, secret_hint=hint,
                          clients_are_user=secret is not None)


async def serve_unix(
    dispatcher_factory: DispatcherFactory,
    path: str,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept clients on a Unix-domain socket at `path`, which only this user can connect to."""
    listener = open_unix_listener(path)
    print(f"aspace-dap: listening on {path} (a Unix-domain socket only you can connect to)", file=sys.stderr,
          flush=True)
    task_status.started(path)
    try:
        await serve_listeners(dispatcher_factory, [listener])
    finally:
        _remove_socket(path)


def open_unix_listener(path: str) -> trio.SocketListener:
    """A listening Unix-domain socket at `path`, mode 0600. A path that exists is replaced only if it is
    a socket of this user's that nobody listens on (a server that died); anything else is refused."""
    folder = os.path.dirname(os.path.abspath(path)) or "/"
    try:
        info = os.stat(folder)
    except OSError as exc:
        raise ListenError(f"cannot listen on {path}: its folder {folder}: {exc.strerror or exc}") from None
    if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
        raise ListenError(f"cannot listen on {path}: anyone may replace files in {folder} (mode "
                          f"{stat.S_IMODE(info.st_mode):o}, no sticky bit)")
    _take_over_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket file is made 0600: only this user may connect
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old_umask)
    remove_at_exit(path)
    os.chmod(path, 0o600)
    sock.listen(128)
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


def _take_over_stale(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.geteuid():
        raise ListenError(f"cannot listen on {path}: it exists and is not a socket of yours; "
                          "choose another path (nothing was changed)")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
        os.unlink(path)  # nobody listens: a stale socket of a server that died
        return
    finally:
        probe.close()
    raise ListenError(f"cannot listen on {path}: another server is listening there")


def _remove_socket(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
    forget_at_exit(path)


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
