"""Sans-io DAP framing: bytes in, messages out; messages in, bytes out.

The base protocol frames each JSON object with `Content-Length: N\\r\\n\\r\\n`
(aspace_dap/framing.py, shared with the language server). Nothing here does
I/O, so every corner of the framing can be tested by feeding bytes. Input the
parser cannot use becomes a `ProtocolProblem`; afterwards the parser skips
ahead to the next `Content-Length:` and carries on, so one bad message never
ends a session.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import limits
from ..framing import MAX_HEADER_SIZE, Framer
from .errors import OutgoingMessageError

DEFAULT_MAX_BODY_SIZE = limits.MAX_REQUEST_BYTES


@dataclass(frozen=True)
class Request:
    seq: int
    command: str
    arguments: dict[str, Any]
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Response:
    """A response from the client, to a reverse request such as runInTerminal."""

    seq: int
    request_seq: int
    command: str
    success: bool
    message: str | None
    body: Any
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Event:
    seq: int
    event: str
    body: Any
    raw: dict[str, Any] = field(repr=False, compare=False)


Message = Request | Response | Event


@dataclass(frozen=True)
class ProtocolProblem:
    """Input that is not a usable message.

    `request_seq` and `command` are filled in when the message got far enough to
    be answered with an error response. `recoverable` is False only when the
    stream itself is finished (it ended in the middle of a message).
    """

    description: str
    request_seq: int | None = None
    command: str | None = None
    recoverable: bool = True


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _reject_constant(name: str) -> Any:
    # JSON has no NaN/Infinity; Python's json module would accept them.
    raise ValueError(f"{name} is not valid JSON")


class DapConnection:
    """One side of a DAP conversation, without I/O.

    Feed received bytes with `receive_data` (b"" means the peer closed), pull
    messages with `next_message`, and turn outgoing messages into bytes with the
    `send_*` methods, which number them with this side's `seq` counter.
    `outgoing_hook`, when given, sees every outgoing message dict before it is
    encoded (tests use it to check each message against the DAP schema).
    """

    def __init__(
        self,
        *,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_header_size: int = MAX_HEADER_SIZE,
        outgoing_hook: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self.outgoing_hook = outgoing_hook
        self._framer = Framer(max_body_size=max_body_size, max_header_size=max_header_size)
        self._next_seq = 1

    # ---- incoming -------------------------------------------------------

    @property
    def peer_closed(self) -> bool:
        return self._framer.peer_closed

    @property
    def buffered_bytes(self) -> int:
        """Bytes held while waiting for the rest of a message (bounded by the caps)."""
        return self._framer.buffered_bytes

    @property
    def missing_bytes(self) -> int:
        """Bytes of the message in progress that have not arrived yet (0 before its header is read)."""
        return self._framer.missing_bytes

    def receive_data(self, data: bytes) -> None:
        self._framer.receive_data(data)

    def next_message(self) -> Message | ProtocolProblem | None:
        """The next complete message or problem, or None when more bytes are needed."""
        body = self._framer.next_body()
        if body is None or isinstance(body, bytes):
            return None if body is None else parse_message(body)
        obj = body.message or {}
        seq, command = obj.get("seq"), obj.get("command")
        if obj.get("type") == "request" and _is_int(seq) and isinstance(command, str):
            return ProtocolProblem(body.description, request_seq=seq, command=command)
        return ProtocolProblem(body.description, recoverable=body.recoverable)

    # ---- outgoing -------------------------------------------------------

    def send_response(
        self,
        request: Request | int,
        body: Any = None,
        success: bool = True,
        message: str | None = None,
        *,
        command: str | None = None,
    ) -> bytes:
        """Answer `request` (a Request, or its seq together with `command`)."""
        if isinstance(request, Request):
            request_seq, command = request.seq, request.command
        else:
            request_seq = request
            if command is None:
                raise ValueError("command is required when answering by seq")
        msg: dict[str, Any] = {
            "type": "response",
            "request_seq": request_seq,
            "success": success,
            "command": command,
        }
        if message is not None:
            msg["message"] = message
        if body is not None:
            msg["body"] = body
        return self._encode(msg)

    def send_event(self, event: str, body: Any = None) -> bytes:
        msg: dict[str, Any] = {"type": "event", "event": event}
        if body is not None:
            msg["body"] = body
        return self._encode(msg)

    def send_error(
        self,
        request_seq: int,
        command: str,
        message: str,
        error_id: int,
        format_vars: dict[str, str] | None = None,
        *,
        short_message: str | None = None,
        show_user: bool | None = None,
    ) -> bytes:
        """A failed response with a structured `body.error` (an ErrorResponse).

        `message` is the readable text; `short_message` goes in the response's
        own `message` field (e.g. "cancelled") and defaults to `message`.
        """
        # `format` may hold {name} placeholders filled from `variables`; the
        # plain `message` field carries the text with the values already in.
        error: dict[str, Any] = {"id": error_id, "format": message}
        text = message
        if format_vars:
            error["variables"] = {str(k): str(v) for k, v in format_vars.items()}
            for name, value in error["variables"].items():
                text = text.replace("{" + name + "}", value)
        if show_user is not None:
            error["showUser"] = show_user
        return self.send_response(
            request_seq,
            body={"error": error},
            success=False,
            message=short_message if short_message is not None else text,
            command=command,
        )

    def send_request(self, command: str, arguments: Any = None) -> bytes:
        """A request to the peer (clients, and reverse requests such as runInTerminal)."""
        msg: dict[str, Any] = {"type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        return self._encode(msg)

    def _encode(self, msg: dict[str, Any]) -> bytes:
        msg = {"seq": self._next_seq, **msg}
        try:
            # ASCII output keeps lone surrogates (from undecodable names) valid on the wire.
            parts = _dumps_with_base64(msg)
        except (TypeError, ValueError) as exc:
            raise OutgoingMessageError(f"{msg.get('command') or msg.get('event')}: {exc}") from exc
        if self.outgoing_hook is not None:
            self.outgoing_hook(_as_text(msg))
        # Only a message that was really produced uses up a seq number.
        self._next_seq += 1
        # one copy of a megabyte-sized body, into the framed message
        return b"".join([b"Content-Length: %d\r\n\r\n" % sum(map(len, parts)), *parts])


class Base64Text(str):
    """Base64 text: only [A-Za-z0-9+/=], so JSON needs no escaping of it."""


class Base64Bytes:
    """Base64 as ASCII bytes (readMemory data).

    Megabytes of memory views go out this way: the bytes are spliced into the
    encoded message instead of becoming a str and running through the JSON
    encoder, which keeps readMemory close to the cost of base64 itself.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    @classmethod
    def encode(cls, raw: bytes | memoryview) -> Base64Bytes:
        """The base64 of `raw`, by a SIMD encoder: for a megabyte, a tenth of a millisecond
        where the standard library's takes over one — most of what a readMemory cost."""
        import pybase64  # only memory views need it
        return cls(pybase64.b64encode(raw))

    def __str__(self) -> str:
        return self.data.decode("ascii")


class JsonText:
    """A value already encoded as JSON (ASCII bytes), spliced into the message as it is: the threads of
    100,000 waves are written as text in one pass instead of 100,000 dicts through the JSON encoder."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


_SPLICED = (Base64Bytes, JsonText)


def _as_text(msg: dict[str, Any]) -> dict[str, Any]:
    """The message as plain JSON values (Base64Bytes as str, JsonText parsed), for hooks that inspect it."""
    body = msg.get("body")
    if isinstance(body, dict) and any(isinstance(v, _SPLICED) for v in body.values()):
        return dict(msg, body={k: str(v) if isinstance(v, Base64Bytes) else json.loads(v.data)
                               if isinstance(v, JsonText) else v for k, v in body.items()})
    return msg


def _dumps_with_base64(msg: dict[str, Any]) -> list[bytes]:
    """The message's JSON as ASCII byte strings to concatenate."""
    body = msg.get("body")
    spliced: dict[str, list[bytes]] = {}  # key -> its JSON text, in parts (a megabyte is not copied to quote it)
    if isinstance(body, dict):
        for key, value in body.items():
            if isinstance(value, Base64Bytes):
                spliced[key] = [b'"', value.data, b'"']
            elif isinstance(value, Base64Text) and len(value) > 4096:
                spliced[key] = [b'"', value.encode("ascii"), b'"']
            elif isinstance(value, JsonText):
                spliced[key] = [value.data]
    if not spliced:
        return [json.dumps(msg, allow_nan=False, separators=(",", ":")).encode("ascii")]
    marks = {key: f"\x00spliced:{key}\x00" for key in spliced}
    shallow = dict(msg, body={k: (marks[k] if k in marks else v) for k, v in body.items()})
    rest = json.dumps(shallow, allow_nan=False, separators=(",", ":"))
    parts = []
    for key, data in spliced.items():  # in body order, as json.dumps wrote them
        before, _, rest = rest.partition(json.dumps(marks[key]))
        parts += [before.encode("ascii"), *data]
    parts.append(rest.encode("ascii"))
    return parts


_STRUCTURE = re.compile(r'["{}\[\]]')
_ANSWERED_FIELDS = ("seq", "type", "command")


def _top_level_fields(text: str) -> dict:
    """`seq`, `type` and `command` of a message that did not parse (too deep, or broken further on),
    read from its top level only: a scan for strings and brackets that never recurses."""
    found: dict = {}
    depth = 0
    at = len(text) - len(text.lstrip(" \t\r\n"))
    if not text.startswith("{", at):
        return found
    decoder = json.JSONDecoder()
    while (match := _STRUCTURE.search(text, at)) is not None:
        char, at = match.group(), match.end()
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                break
        else:
            try:
                key, at = json.decoder.scanstring(text, at)
            except ValueError:
                break
            if depth != 1:
                continue
            colon = at
            while colon < len(text) and text[colon] in " \t\r\n":
                colon += 1
            if colon >= len(text) or text[colon] != ":" or key not in _ANSWERED_FIELDS or key in found:
                continue
            start = colon + 1
            while start < len(text) and text[start] in " \t\r\n":
                start += 1
            if start < len(text) and text[start] not in "{[":
                try:
                    found[key], at = decoder.raw_decode(text, start)
                except ValueError:
                    pass
    return found


def _unparsed_request_problem(text: str, description: str) -> ProtocolProblem:
    """A body that is not JSON (or too deep to read) is still answered when it is a request whose seq
    and command can be read: the client would otherwise wait for that answer forever."""
    fields = _top_level_fields(text)
    seq, command = fields.get("seq"), fields.get("command")
    if fields.get("type") == "request" and _is_int(seq) and isinstance(command, str):
        return ProtocolProblem(description, request_seq=seq, command=command)
    return ProtocolProblem(description)


def parse_message(body: bytes) -> Message | ProtocolProblem:
    """Turn one message body into a Request/Response/Event, or say what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ProtocolProblem(f"message body is not UTF-8 (byte {exc.start})")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return _unparsed_request_problem(
            text, "message body is nested too deeply to read (deeper than the JSON reader goes)")
    except ValueError as exc:
        return _unparsed_request_problem(text, f"message body is not JSON: {str(exc)[:200]}")
    if not isinstance(obj, dict):
        return ProtocolProblem(f"message is a JSON {type(obj).__name__}, not an object")

    seq = obj.get("seq")
    command = obj.get("command")
    known_seq = seq if _is_int(seq) else None
    known_command = command if isinstance(command, str) else None
    kind = obj.get("type")

    def problem(description: str) -> ProtocolProblem:
        # Only a request can be answered, so only then pass seq/command along.
        if kind == "request" and known_seq is not None and known_command is not None:
            return ProtocolProblem(description, request_seq=known_seq, command=known_command)
        return ProtocolProblem(description)

    if "seq" not in obj:
        return problem("message has no 'seq'")
    if known_seq is None:
        return problem(f"'seq' must be an integer, not {json_type(seq)}")
    if not isinstance(kind, str):
        return problem("message has no string 'type'")

    if kind == "request":
        if known_command is None:
            return problem("request has no string 'command'")
        arguments = obj.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            return problem(f"'arguments' must be an object, not {json_type(arguments)}")
        return Request(seq, known_command, arguments, obj)
    if kind == "response":
        request_seq = obj.get("request_seq")
        success = obj.get("success")
        message = obj.get("message")
        if not _is_int(request_seq):
            return problem("response has no integer 'request_seq'")
        if not isinstance(success, bool):
            return problem("response has no boolean 'success'")
        if known_command is None:
            return problem("response has no string 'command'")
        if message is not None and not isinstance(message, str):
            return problem("response 'message' must be a string")
        return Response(seq, request_seq, known_command, success, message, obj.get("body"), obj)
    if kind == "event":
        event = obj.get("event")
        if not isinstance(event, str):
            return problem("event has no string 'event'")
        return Event(seq, event, obj.get("body"), obj)
    return problem(f"unknown message type {kind[:40]!r}")


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages about wrong arguments."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
