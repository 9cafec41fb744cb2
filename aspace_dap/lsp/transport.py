"""The language server's JSON-RPC over stdin/stdout: the shared framing (aspace_dap/framing.py),
one message at a time, and an answer to every request.

Bytes are framed like the DAP server's (a bad header or a huge Content-Length
is answered and skipped, never the end of the session), and every request
gets an answer: a result, or a JSON-RPC error for a bad frame, bad JSON, an
ill-typed request or parameters of the wrong type. Requests to the client
(configuration, refreshes, registrations) carry a callback for its answer.
Handlers run one at a time on the thread that reads; no event loop is needed.
Work an answer does not wait for (diagnostics) runs when no message is waiting.
"""

from __future__ import annotations

import json
import os
import select
import sys
import traceback
from typing import Any, Callable

from ..framing import Framer, FramingProblem
from .messages import InvalidParams

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RECEIVE_SIZE = 64 * 1024


class ClientGone(Exception):
    """The client closed its end of stdout."""


class ResponseError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class Connection:
    """Sends JSON-RPC messages through `write` (framed bytes) and matches the client's answers to
    the requests the server sent."""

    def __init__(self, write: Callable[[bytes], None]):
        self._write = write
        self._next_id = 0
        self._waiting: dict[Any, Callable[[Any], None] | None] = {}

    def send(self, message: dict) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        self._write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def respond(self, msg_id: Any, result: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None,
                   "error": {"code": code, "message": message}})

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None, on_result: Callable[[Any], None] | None = None) -> None:
        """Ask the client; `on_result` gets the result when the answer comes (an error answer is dropped)."""
        self._next_id += 1
        msg_id = f"aspace-{self._next_id}"
        self._waiting[msg_id] = on_result
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def answered(self, message: dict) -> None:
        callback = self._waiting.pop(message.get("id"), None) if _valid_id(message.get("id")) else None
        if callback is not None and "error" not in message:
            callback(message.get("result"))


class MessagePump:
    """Checks each body's JSON-RPC envelope and hands requests and notifications to the server:
    `server.requests` / `server.notifications` map a method to a handler taking the params."""

    def __init__(self, server, connection: Connection) -> None:
        self.server = server
        self.connection = connection

    def problem(self, problem: FramingProblem) -> None:
        obj = problem.message or {}
        is_request = "method" in obj and "id" in obj
        self.connection.error(obj.get("id") if is_request else None, PARSE_ERROR,
                              f"ignored a message: {problem.description}")

    def body(self, body: bytes) -> None:
        error = self.connection.error
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as exc:
            error(None, PARSE_ERROR, f"message body is not JSON: {str(exc)[:200]}")
            return
        if not isinstance(raw, dict):
            error(None, INVALID_REQUEST, "message is not a JSON object")
            return
        method = raw.get("method")
        is_request = "method" in raw and "id" in raw
        msg_id = raw.get("id")
        if is_request and not _valid_id(msg_id):
            error(None, INVALID_REQUEST, "request 'id' must be a string or an integer")
            return
        if "method" in raw and not isinstance(method, str):
            if is_request:
                error(msg_id, INVALID_REQUEST, "'method' must be a string")
            return
        if raw.get("jsonrpc") != "2.0":
            if is_request:
                error(msg_id, INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
            return
        if "method" not in raw:
            if "id" in raw and ("result" in raw or "error" in raw):
                try:
                    self.connection.answered(raw)  # the client's answer to a request of the server
                except (SystemExit, KeyboardInterrupt, ClientGone):
                    raise
                except Exception:
                    _log_internal_error("an answer of the client")
            return
        params = raw.get("params")
        if not is_request:
            handler = self.server.notifications.get(method)
            if handler is None:
                return  # unknown notifications ($/cancelRequest, $/setTrace, ...) are ignored
            try:
                handler(params)
            except InvalidParams:
                return
            except (SystemExit, KeyboardInterrupt, ClientGone):
                raise
            except Exception:
                _log_internal_error(method)
            return
        if self.server.shut_down:
            error(msg_id, INVALID_REQUEST, "the server is shutting down")
            return
        handler = self.server.requests.get(method)
        if handler is None:
            error(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {method}")
            return
        try:
            result = handler(params)
        except InvalidParams as exc:
            error(msg_id, INVALID_PARAMS, f"invalid parameters for {method}: {exc}")
            return
        except ResponseError as exc:
            error(msg_id, exc.code, exc.message)
            return
        except (SystemExit, KeyboardInterrupt, ClientGone):
            raise
        except Exception as exc:
            _log_internal_error(method)
            error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")
            return
        self.connection.respond(msg_id, result)


def _log_internal_error(method: str) -> None:
    print(f"aspace-dap lsp: cannot handle {method}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)


def _input_waiting(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def serve_stdio(server) -> int:
    """Serve LSP on stdin/stdout until stdin closes or the client sends `exit`; returns the exit code
    (`exit` after `shutdown`: 0, without: 1)."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    # Anything else printing to stdout (a library, a stray print) would corrupt the protocol
    # stream; from now on fd 1 and sys.stdout lead to stderr.
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def write(data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(out_fd, view):]
        except OSError as exc:
            raise ClientGone() from exc

    connection = Connection(write)
    server.attach(connection)
    pump = MessagePump(server, connection)
    framer = Framer()
    try:
        while server.exit_code is None:
            try:
                data = os.read(in_fd, RECEIVE_SIZE)
            except OSError:
                data = b""
            framer.receive_data(data)
            while server.exit_code is None and (body := framer.next_body()) is not None:
                if isinstance(body, FramingProblem):
                    pump.problem(body)
                else:
                    pump.body(body)
            if not data:
                break  # stdin closed: the client is gone
            # work that waits for a quiet moment (diagnostics), a piece at a time between messages
            while server.exit_code is None and server.has_idle_work() and not _input_waiting(in_fd):
                server.idle_step()
    except (ClientGone, KeyboardInterrupt):
        pass
    finally:
        for fd in (in_fd, out_fd):
            try:
                os.close(fd)
            except OSError:
                pass
    return server.exit_code or 0
