"""The language server's stdio loop: the shared framing (aspace_dap/framing.py) in front of pygls.

pygls's own loop stops answering for good after a bad header and lets a huge
Content-Length exhaust memory. Here bytes are framed like the DAP server's,
and every request gets an answer: a result, or a JSON-RPC error for a bad
frame, bad JSON, an ill-typed request or parameters pygls cannot read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from typing import Any

from lsprotocol.types import ResponseError
from pygls.io_ import StdoutWriter

from ..framing import Framer, FramingProblem

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RECEIVE_SIZE = 64 * 1024


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class MessagePump:
    """Turns bodies into pygls messages, answering what pygls would drop."""

    def __init__(self, server) -> None:
        self.server = server
        self.protocol = server.protocol

    def error(self, msg_id: Any, code: int, message: str) -> None:
        self.protocol._send_response(msg_id if _valid_id(msg_id) else None,
                                     error=ResponseError(code=code, message=message))

    def problem(self, problem: FramingProblem) -> None:
        obj = problem.message or {}
        is_request = "method" in obj and "id" in obj
        self.error(obj.get("id") if is_request else None, PARSE_ERROR, f"ignored a message: {problem.description}")

    def body(self, body: bytes) -> None:
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as exc:
            self.error(None, PARSE_ERROR, f"message body is not JSON: {str(exc)[:200]}")
            return
        if not isinstance(raw, dict):
            self.error(None, INVALID_REQUEST, "message is not a JSON object")
            return
        method = raw.get("method")
        is_request = "method" in raw and "id" in raw
        msg_id = raw.get("id")
        if is_request and not _valid_id(msg_id):
            self.error(None, INVALID_REQUEST, "request 'id' must be a string or an integer")
            return
        if "method" in raw and not isinstance(method, str):
            if is_request:
                self.error(msg_id, INVALID_REQUEST, "'method' must be a string")
            return
        if raw.get("jsonrpc") != "2.0":
            if is_request:
                self.error(msg_id, INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
            return
        if is_request and self.protocol._shutdown:
            self.error(msg_id, INVALID_REQUEST, "the server is shutting down")
            return
        try:
            message = self.protocol.structure_message(raw)
        except Exception as exc:  # pygls raises its own JSON-RPC errors for unreadable parameters
            if is_request:
                self.error(msg_id, INVALID_PARAMS, f"invalid parameters for {method}: {type(exc).__name__}")
            return
        if isinstance(message, dict):  # not a JSON-RPC message pygls knows
            if is_request:
                self.error(msg_id, INVALID_REQUEST, "not a JSON-RPC request")
            return
        try:
            self.protocol.handle_message(message)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            logger.exception("cannot handle a message")
            if is_request:
                self.error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")


async def _serve(server, in_fd: int, out) -> None:
    server.protocol.set_writer(StdoutWriter(out))
    server._stop_event = stop = threading.Event()
    pump = MessagePump(server)
    framer = Framer()
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()
    # A daemon thread reads stdin (a blocked read must not keep the process alive after `exit`);
    # it reads at most a few chunks ahead of the loop, so a fast client cannot fill memory.
    ahead = threading.Semaphore(4)

    def read_stdin() -> None:
        while True:
            ahead.acquire()
            try:
                data = os.read(in_fd, RECEIVE_SIZE)
            except OSError:
                data = b""
            try:
                loop.call_soon_threadsafe(chunks.put_nowait, data)
            except RuntimeError:  # the loop has closed
                return
            if not data:
                return

    threading.Thread(target=read_stdin, name="lsp-stdin", daemon=True).start()
    while not stop.is_set():
        data = await chunks.get()
        ahead.release()
        framer.receive_data(data)
        while (body := framer.next_body()) is not None:
            if isinstance(body, FramingProblem):
                pump.problem(body)
            else:
                pump.body(body)
            await asyncio.sleep(0)  # let handlers' tasks (e.g. awaiting the client's answers) run
        if not data:
            break  # stdin closed: the client is gone


def serve_stdio(server) -> int:
    """Serve LSP on stdin/stdout until stdin closes or the client sends `exit`."""
    try:
        asyncio.run(_serve(server, sys.stdin.fileno(), sys.stdout.buffer))
    except SystemExit as exc:  # pygls's `exit` handler
        return exc.code if isinstance(exc.code, int) else 0
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        server.shutdown()
    return 0
