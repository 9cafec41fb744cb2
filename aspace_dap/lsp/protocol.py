"""pygls's protocol and stdio loop, with an answer to every request and the shared framing in front.

pygls reads, structures, dispatches and answers; this module only adds what a
hostile or confused client needs beyond that:

- `AspaceProtocol` answers with a JSON-RPC error every request pygls would
  drop: an ill-formed envelope, parameters lsprotocol cannot structure, a
  notification method sent as a request, any request after `shutdown`, a body
  that is not JSON. An unknown method is MethodNotFound before its parameters
  are read.
- `FramedStdin` feeds pygls's loop (`pygls.io_.run_async`) one message at a
  time from the `Content-Length` framing the DAP server shares
  (aspace_dap/framing.py): pygls's own header reader would try to read a
  terabyte for `Content-Length: 1000000000000` and lose every later message
  after a header without a length. Before it waits for input it runs the
  server's idle work (diagnostics) while no message is waiting.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import select
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

import attrs
import cattrs
from cattrs.v import format_exception
from lsprotocol.types import EXIT, INITIALIZE, TEXT_DOCUMENT_DID_CHANGE
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter, run_async
from pygls.protocol import LanguageServerProtocol

from ..framing import Framer, FramingProblem

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
RECEIVE_SIZE = 64 * 1024
UNREADABLE_JSON = (ValueError, RecursionError)  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
DROPPED = object()  # a notification or an answer of the client that cannot be read: no answer


@dataclass(frozen=True)
class Refusal:
    """A request answered with an error instead of being handled."""

    id: Any
    code: int
    message: str


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class AspaceProtocol(LanguageServerProtocol):
    """pygls's language server protocol, answering the requests it would leave without an answer."""

    def answer_error(self, msg_id: Any, code: int, message: str) -> None:
        # a plain object: lsprotocol's ResponseErrorMessage would leave out the null id JSON-RPC wants
        # when the request's id could not be read
        self._send_data({"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None,
                         "error": {"code": code, "message": message}})

    def _takes_requests(self, method: str) -> bool:
        """Whether `method` has a handler here and is a request (not a notification) in lsprotocol."""
        fm = self.fm
        if method not in fm.builtin_features and method not in fm.features:
            return False
        kind = self.get_message_type(method)
        return kind is None or "id" in attrs.fields_dict(kind)

    def structure_message(self, data: dict[str, Any]):
        # json.loads calls this for every object of a body, innermost first; messages have "jsonrpc"
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        is_request = "method" in data and "id" in data
        msg_id = data.get("id")
        if is_request and not _valid_id(msg_id):
            return Refusal(None, INVALID_REQUEST, "request 'id' must be a string or an integer")
        if "method" in data and not isinstance(method, str):
            return Refusal(msg_id, INVALID_REQUEST, "'method' must be a string") if is_request else DROPPED
        if data["jsonrpc"] != "2.0":
            return Refusal(msg_id, INVALID_REQUEST, "'jsonrpc' must be \"2.0\"") if is_request else DROPPED
        if is_request and not self._takes_requests(method):
            return Refusal(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {method}")
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not is_request:
                if method is not None:  # (a client's answer that cannot be read is dropped silently)
                    say(f"ignored a {method} notification with invalid parameters: {_why(exc)}")
                return DROPPED
            return Refusal(msg_id, INVALID_PARAMS, f"invalid parameters for {method}: {_why(exc)}")

    def handle_message(self, message) -> None:
        if message is DROPPED:
            return
        if getattr(message, "method", None) == TEXT_DOCUMENT_DID_CHANGE and not hasattr(message, "id") and \
                self._workspace is not None:
            uri = message.params.text_document.uri
            if unquote(uri) not in self._workspace.text_documents:  # (pygls keys them unquoted)
                say(f"ignored a change to {uri}: it is not open (textDocument/didOpen comes first)")
                return
        if isinstance(message, Refusal):
            self.answer_error(message.id, message.code, message.message)
        elif not hasattr(message, "jsonrpc"):  # not a JSON object, or one without "jsonrpc"
            if not isinstance(message, dict):
                self.answer_error(None, INVALID_REQUEST, "message is not a JSON object")
            elif "method" in message and "id" in message:
                self.answer_error(message["id"], INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
        elif self._workspace is None and getattr(message, "method", INITIALIZE) not in (INITIALIZE, EXIT):
            if hasattr(message, "id"):  # a notification before `initialize` is dropped, as the protocol says
                self.answer_error(message.id, SERVER_NOT_INITIALIZED, "the server is not initialized")
        elif self._shutdown and hasattr(message, "method") and hasattr(message, "id"):
            self.answer_error(message.id, INVALID_REQUEST, "the server is shutting down")
        else:
            super().handle_message(message)


def say(message: str) -> None:
    """One line on stderr (the client's log of the server): what was ignored, and why."""
    print(f"aspace-dap lsp: {message}", file=sys.stderr, flush=True)


def _why(exc: JsonRpcException) -> str:
    """What cattrs found wrong in the parameters, in a few lines, with the fields as the protocol names
    them (`$.params.position.line: expected an integer`)."""
    cause = exc.__cause__
    if isinstance(cause, cattrs.ClassValidationError):
        said: dict[str, None] = {}
        for line in cattrs.transform_error(cause, format_exception=_what):
            what, _, where = line.partition(" @ ")
            if what == _NOT_AN_OBJECT:  # cattrs read a field of a number or a string: say it of that value
                what, where = "expected an object", where.rpartition(".")[0]
            said[f"{_camel(where)}: {what}" if where else what] = None
        return "; ".join(list(said)[:3])
    return "they do not have the protocol's types"


_NOT_AN_OBJECT = "not an object"
_EXPECTED = {int: "an integer", str: "a string", bool: "true or false", float: "a number"}


def _what(exc: BaseException, kind) -> str:
    if kind is None and type(exc) is ValueError and str(exc):
        # lsprotocol's validators say what they wanted ("Position.line should be in range [0:2147483647]...")
        return str(exc)
    if isinstance(exc, TypeError) and ("subscriptable" in str(exc) or "indices" in str(exc)):
        return _NOT_AN_OBJECT
    if kind in _EXPECTED and isinstance(exc, (ValueError, TypeError)):
        return f"expected {_EXPECTED[kind]}"  # (never Python's own text: "invalid literal for int()...")
    return format_exception(exc, kind)


def _camel(path: str) -> str:
    """cattrs's `$.text_document.uri` as the protocol writes it: `$.textDocument.uri`."""
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), path)


def _input_waiting(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


class FramedStdin:
    """pygls's reader interface (`readline`, `readexactly`) over the shared framing: each complete
    body comes as its `Content-Length` header line, the empty line and the body (pygls asks for as
    many bytes as the header says); a framing problem is answered and skipped. While no message is
    waiting, `idle` runs the pieces of work that wait for a quiet moment (`has_idle`: is there any)."""

    def __init__(self, fd: int, protocol: AspaceProtocol, idle: Callable[[], None],
                 has_idle: Callable[[], bool]) -> None:
        self.fd = fd
        self.protocol = protocol
        self.idle = idle
        self.has_idle = has_idle
        self.framer = Framer()
        self._blank_line_due = False
        self._body = b""
        self._ended = False

    async def readline(self) -> bytes:
        if self._blank_line_due:
            self._blank_line_due = False
            return b"\r\n"
        while True:
            body = self.framer.next_body()
            if isinstance(body, FramingProblem):
                self._refuse(body)
            elif body:
                self._body, self._blank_line_due = body, True
                return b"Content-Length: %d\r\n" % len(body)
            elif body is not None:
                self.protocol.answer_error(None, PARSE_ERROR, "message body is not JSON: it is empty")
            elif self._ended:
                return b""  # pygls's loop ends
            else:
                await self._receive()

    async def readexactly(self, n: int) -> bytes:
        body, self._body = self._body, b""
        return body

    def _refuse(self, problem: FramingProblem) -> None:
        obj = problem.message or {}
        is_request = "method" in obj and "id" in obj
        self.protocol.answer_error(obj.get("id") if is_request else None, PARSE_ERROR,
                                   f"ignored a message: {problem.description}")

    async def _receive(self) -> None:
        while self.has_idle() and not _input_waiting(self.fd):
            try:
                self.idle()
            except Exception:  # one failing piece must not end the session
                print(f"aspace-dap lsp: cannot finish work between messages:\n{traceback.format_exc()}",
                      file=sys.stderr, flush=True)
        await self._readable()
        try:
            data = os.read(self.fd, RECEIVE_SIZE)
        except OSError:
            data = b""
        self.framer.receive_data(data)
        self._ended = not data

    async def _readable(self) -> None:
        """Wait in the event loop until input arrives (no thread sits in a read that would outlive `exit`
        or Ctrl-C); where the loop cannot watch the descriptor (a regular file, Windows) the read blocks."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        try:
            loop.add_reader(self.fd, lambda: ready.done() or ready.set_result(None))
        except (NotImplementedError, OSError, ValueError):
            return
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)


class ProtocolStdout(StdoutWriter):
    """pygls's stdout writer on the protocol's own descriptor (fd 1 then leads to stderr)."""

    def __init__(self, fd: int) -> None:
        super().__init__(os.fdopen(fd, "wb"))


def serve_stdio(server, idle: Callable[[], None], has_idle: Callable[[], bool]) -> int:
    """Serve LSP on stdin/stdout until stdin closes or the client sends `exit`; the exit code (`exit`
    after `shutdown`: 0, without: 1)."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    # anything else printing to stdout (a library, a stray print) would corrupt the protocol stream:
    # from now on fd 1 and sys.stdout lead to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    server.protocol.set_writer(ProtocolStdout(out_fd))
    server._stop_event = threading.Event()
    reader = FramedStdin(in_fd, server.protocol, idle, has_idle)
    try:
        asyncio.run(run_async(server._stop_event, reader, server.protocol, error_handler=server.report_server_error))
    except SystemExit as exc:  # pygls's `exit`
        return exc.code if isinstance(exc.code, int) else 0
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        server.shutdown()
        os.close(in_fd)
    return 0


class _OneLine(logging.Filter):
    """pygls's own log records as one line each, without a traceback; its "Unable to deserialize message"
    not at all (AspaceProtocol.structure_message answers or reports those, naming the field)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Unable to deserialize message"):
            return False
        record.msg, record.args = message.splitlines()[0][:300] if message else "", None
        record.exc_info = record.exc_text = record.stack_info = None
        return True


def quiet_pygls() -> None:
    """pygls logs errors only (it warns of every unknown notification and late $/cancelRequest), each as one line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_OneLine())
    handler.setFormatter(logging.Formatter("aspace-dap lsp: %(message)s"))
    logger = logging.getLogger("pygls")
    logger.setLevel(logging.ERROR)
    logger.addHandler(handler)
    logger.propagate = False


def unreadable_body(error: Exception) -> bool:
    """Whether an error pygls's loop reports is a body that is not JSON (answered with a parse error)."""
    return isinstance(error, UNREADABLE_JSON)

