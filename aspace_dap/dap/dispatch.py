"""Request dispatch: DAP ordering rules, argument checks, errors as responses.

Handlers are plain synchronous functions `(ctx, arguments) -> body | Reply | None`
registered per command. The dispatcher owns the rules every handler would
otherwise repeat: nothing before `initialize`; `initialized` right after the
initialize response; launch/attach responses held until configurationDone has
been answered; `cancel`; `terminated` after terminate; closing after disconnect;
a failing handler turns into an error response while the session carries on;
and, on a server that requires it (TCP), the secret: until a client has
presented it (the argument `secret` of initialize, launch or attach) only
initialize, launch, attach, configurationDone, disconnect and terminate are
run, and a wrong secret ends the connection.

Threading model (the trio transport relies on it): `receive`/`receive_bytes`
run on the event-loop thread and are quick (they parse, and handle `cancel` at
once); `run` executes one work item and is called from a worker thread, one
item at a time per connection. Every outgoing message is encoded and handed to
the sink under one lock, so `seq` numbers leave in order. The sink must be
thread-safe and must not block.
"""

from __future__ import annotations

import functools
import hmac
import itertools
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..deadline import cancellation
from ..errors import AspaceError, Cancelled
from .errors import ArgumentError, OutgoingMessageError, RequestCancelled
from .protocol import (
    DEFAULT_MAX_BODY_SIZE,
    DapConnection,
    Event,
    Message,
    ProtocolProblem,
    Request,
    Response,
    json_type,
)

# ids for ErrorResponse.body.error.id; clients show them, nothing depends on the values
ERROR_USER = 1  # an AspaceError: bad file, unreadable variable, ...
ERROR_ARGUMENTS = 2
ERROR_UNSUPPORTED = 3
ERROR_ORDER = 4  # request not allowed at this point of the session
ERROR_INVALID_MESSAGE = 5
ERROR_CANCELLED = 6
ERROR_SECRET = 7  # the server needs its secret, and this client has not presented it (or a wrong one)
ERROR_INTERNAL = 99

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

ArgType = type | tuple[type, ...]
EventSpec = tuple[str, Any]  # (event name, body or None)


@dataclass(frozen=True)
class Reply:
    """What a handler returns when it has events to send next to its response.

    `events_before` go out just before the response, `events_after` just after
    it; when the response is held (launch before configurationDone) they are
    held with it. Each event is `(name, body)`.
    """

    body: Any = None
    events_before: Sequence[EventSpec] = ()
    events_after: Sequence[EventSpec] = ()


Handler = Callable[["RequestContext", dict[str, Any]], Any]


@dataclass(frozen=True)
class HandlerSpec:
    command: str
    function: Handler
    required: Mapping[str, ArgType]
    optional: Mapping[str, ArgType]


class HandlerTable:
    """Handlers by command; can be built once at import time and shared by connections."""

    def __init__(self, specs: Iterable[HandlerSpec] = ()):
        self._specs: dict[str, HandlerSpec] = {spec.command: spec for spec in specs}

    def request(
        self,
        command: str,
        *,
        required: Mapping[str, ArgType] | None = None,
        optional: Mapping[str, ArgType] | None = None,
    ) -> Callable[[Handler], Handler]:
        """Decorator: `@table.request("variables", required={"variablesReference": int})`."""

        def register(function: Handler) -> Handler:
            self._specs[command] = HandlerSpec(command, function, dict(required or {}), dict(optional or {}))
            return function

        return register

    def get(self, command: str) -> HandlerSpec | None:
        return self._specs.get(command)

    def __contains__(self, command: str) -> bool:
        return command in self._specs

    def copy(self) -> HandlerTable:
        return HandlerTable(self._specs.values())

    @classmethod
    def joined(cls, *tables: HandlerTable) -> HandlerTable:
        """One table of the requests of several modules; two answers to one command are a mistake."""
        specs: dict[str, HandlerSpec] = {}
        for table in tables:
            for command, spec in table._specs.items():
                if command in specs:
                    raise ValueError(f"two handlers for {command!r}")
                specs[command] = spec
        return cls(specs.values())


# ---- argument checking ---------------------------------------------------

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean",
               dict: "an object", list: "an array", type(None): "null"}


def _type_name(expected: ArgType) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(_TYPE_NAMES.get(kind, kind.__name__) for kind in kinds)


def _matches(value: Any, expected: ArgType) -> bool:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    for kind in kinds:
        if kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif kind is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return True
        elif isinstance(value, kind):
            return True
    return False


def check_arguments(spec: HandlerSpec, arguments: dict[str, Any]) -> None:
    """Raise ArgumentError unless every declared argument has its declared type.

    Integers are also held to the signed 64-bit range: larger values cannot be
    addresses, counts or references, and would only travel on to fail deeper.
    """
    for name, expected in spec.required.items():
        if name not in arguments:
            raise ArgumentError(f"{spec.command}: argument '{name}' is required")
    for table in (spec.required, spec.optional):
        for name, expected in table.items():
            if name not in arguments:
                continue
            value = arguments[name]
            if not _matches(value, expected):
                raise ArgumentError(
                    f"{spec.command}: argument '{name}' must be {_type_name(expected)}, "
                    f"not {json_type(value)}"
                )
            if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
                raise ArgumentError(f"{spec.command}: argument '{name}' is out of range")


# ---- per-request context --------------------------------------------------


@dataclass(eq=False)
class WorkItem:
    """One unit for `Dispatcher.run`: a request, or a problem to report."""

    request: Request | None = None
    problem: ProtocolProblem | None = None
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    started: bool = False


class RequestContext:
    """What a handler can see and do besides reading its arguments."""

    def __init__(self, dispatcher: Dispatcher, item: WorkItem):
        assert item.request is not None
        self._dispatcher = dispatcher
        self._item = item
        self.request: Request = item.request

    @property
    def request_seq(self) -> int:
        return self.request.seq

    @property
    def command(self) -> str:
        return self.request.command

    @property
    def state(self) -> Any:
        """The per-connection object given to the Dispatcher (the debugger session)."""
        return self._dispatcher.state

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The client's initialize arguments."""
        return self._dispatcher.client_capabilities

    @property
    def client_is_user(self) -> bool:
        """Whether the client is the user (see Dispatcher.client_is_user)."""
        return self._dispatcher.client_is_user

    @property
    def cancelled(self) -> bool:
        return self._item.cancel_requested.is_set()

    def check_cancelled(self) -> None:
        """Long handlers call this between steps; it ends the request as cancelled."""
        if self.cancelled:
            raise RequestCancelled(f"{self.command} cancelled")

    def send_event(self, event: str, body: Any = None) -> None:
        self._dispatcher.send_event(event, body)

    def output(self, text: str, category: str = "console") -> None:
        self._dispatcher.send_event("output", {"category": category, "output": text})

    def connection_output(self) -> Callable[[str], None]:
        """A function that says a line in the client's Debug Console for as long as the connection lives
        (a session's notes, said by whichever request comes upon them)."""
        dispatcher = self._dispatcher
        return lambda text: dispatcher.send_event("output", {"category": "console", "output": text + "\n"})

    def progress_start(
        self,
        title: str,
        message: str | None = None,
        percentage: float | None = None,
        cancellable: bool = False,
    ) -> str:
        """Start a progress report and return its id; silent if the client did not opt in."""
        return self._dispatcher._progress_start(self._item, title, message, percentage, cancellable)

    def progress_update(self, progress_id: str, message: str | None = None, percentage: float | None = None) -> None:
        self._dispatcher._progress_event("progressUpdate", progress_id, message, percentage)

    def progress_end(self, progress_id: str, message: str | None = None) -> None:
        self._dispatcher._progress_event("progressEnd", progress_id, message, None)
        self._dispatcher._forget_progress(progress_id)


# ---- the dispatcher --------------------------------------------------------

# Commands the dispatcher answers itself when no handler is registered.
_BUILTIN_COMMANDS = frozenset({"initialize", "configurationDone", "disconnect", "terminate"})
# What a client may ask before it has presented the server's secret, and where it may present it.
_BEFORE_SECRET = frozenset({"initialize", "launch", "attach", "configurationDone", "disconnect", "terminate"})
_SECRET_CARRIERS = frozenset({"initialize", "launch", "attach"})


@dataclass
class _HeldReply:
    request: Request
    send: Callable[[], Any]


class Dispatcher:
    """One connection's request dispatch. See the module docstring for threading."""

    def __init__(
        self,
        handlers: HandlerTable | None = None,
        *,
        state: Any = None,
        outgoing_hook: Callable[[dict[str, Any]], None] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        defer_until_configured: Iterable[str] = ("launch", "attach"),
    ):
        self.handlers = handlers.copy() if handlers is not None else HandlerTable()
        self.state = state
        self.connection = DapConnection(max_body_size=max_body_size, outgoing_hook=outgoing_hook)
        self.client_capabilities: dict[str, Any] = {}
        self.defer_until_configured = frozenset(defer_until_configured)
        self.closed = False  # set after disconnect, or when the stream broke mid-message
        self._lock = threading.RLock()
        self._outbox: list[bytes] = []
        self._sink: Callable[[bytes], None] = self._outbox.append
        self._initialized = False
        self._configured = False
        self._defer_active = False
        self._terminated_sent = False
        self._pending: dict[int, WorkItem] = {}
        self._held: list[_HeldReply] = []
        self._progress_ids = itertools.count(1)
        self._progress_owner: dict[str, WorkItem] = {}
        self._secret: bytes | None = None
        self._secret_hint = ""
        self.authenticated = True
        # whether the client is the user (stdio, the owner-only socket, TCP with the secret): it may read
        # every source the user can; False for a TCP client without a secret (--insecure-tcp)
        self.client_is_user = True

    def require_secret(self, secret: str, hint: str = "") -> None:
        """From now on the client must present `secret` (argument `secret` of initialize, launch or
        attach) before anything but the handshake is run; `hint` says where the user finds it."""
        self._secret = secret.encode()
        self._secret_hint = hint
        self.authenticated = False

    @property
    def handshake_done(self) -> bool:
        """initialize answered and, where the server requires its secret, the secret presented."""
        return self._initialized and self.authenticated

    def cancel_all(self) -> None:
        """The client is gone: every request still queued or running is cancelled (a running handler
        stops at its next check, see deadline.check_time)."""
        with self._lock:
            for item in self._pending.values():
                item.cancel_requested.set()

    def request(self, command: str, **schema: Mapping[str, ArgType] | None) -> Callable[[Handler], Handler]:
        """Register a handler on this dispatcher only (see HandlerTable.request)."""
        return self.handlers.request(command, **schema)

    # ---- output ----

    def attach_sink(self, sink: Callable[[bytes], None]) -> None:
        """Send output to `sink` from now on (thread-safe, non-blocking)."""
        with self._lock:
            pending, self._outbox = self._outbox, []
            self._sink = sink
            for data in pending:
                sink(data)

    def take_output(self) -> bytes:
        """Bytes produced so far when no sink is attached (for tests and tools)."""
        with self._lock:
            data, self._outbox[:] = b"".join(self._outbox), []
            return data

    def send_event(self, event: str, body: Any = None) -> None:
        with self._lock:
            self._sink(self.connection.send_event(event, body))
            if event == "terminated":
                self._terminated_sent = True

    def _send_error(self, request_seq: int, command: str, message: str, error_id: int, **extra: Any) -> None:
        with self._lock:
            self._sink(self.connection.send_error(request_seq, command, message, error_id, **extra))

    def _send_cancelled(self, request: Request) -> None:
        self._send_error(request.seq, request.command, f"{request.command} was cancelled",
                         ERROR_CANCELLED, short_message="cancelled")

    # ---- input (event-loop thread) ----

    def receive_bytes(self, data: bytes) -> list[WorkItem]:
        """Parse `data` (b"" = end of stream) and return the work it produced, in order."""
        self.connection.receive_data(data)
        items = []
        while (message := self.connection.next_message()) is not None:
            item = self.receive(message)
            if item is not None:
                items.append(item)
        return items

    def receive(self, message: Message | ProtocolProblem) -> WorkItem | None:
        """Take one parsed message; `cancel` is answered at once, the rest becomes work."""
        if isinstance(message, ProtocolProblem):
            return WorkItem(problem=message)
        if isinstance(message, (Response, Event)):
            return None  # no reverse requests are sent, so nothing waits for these
        if message.command == "cancel":
            self._cancel(message)
            return None
        item = WorkItem(request=message)
        with self._lock:
            self._pending[message.seq] = item
        return item

    def _cancel(self, request: Request) -> None:
        arguments = request.arguments
        target_seq = arguments.get("requestId")
        progress_id = arguments.get("progressId")
        if target_seq is not None and (not isinstance(target_seq, int) or isinstance(target_seq, bool)):
            self._send_error(request.seq, request.command, "cancel: 'requestId' must be an integer", ERROR_ARGUMENTS)
            return
        if progress_id is not None and not isinstance(progress_id, str):
            self._send_error(request.seq, request.command, "cancel: 'progressId' must be a string", ERROR_ARGUMENTS)
            return
        with self._lock:
            targets = []
            if target_seq is not None and target_seq in self._pending:
                targets.append(self._pending[target_seq])
            if progress_id is not None and progress_id in self._progress_owner:
                targets.append(self._progress_owner[progress_id])
            for item in targets:
                item.cancel_requested.set()
            for held in list(self._held):
                if held.request.seq == target_seq or any(t.request is held.request for t in targets):
                    self._held.remove(held)
                    self._send_cancelled(held.request)
            # Cancel is only a hint: it succeeds whether or not anything was stopped.
            self._sink(self.connection.send_response(request))

    # ---- work (worker thread) ----

    def run(self, item: WorkItem) -> None:
        """Execute one work item, sending its response and events."""
        if item.problem is not None:
            self._report_problem(item.problem)
            return
        request = item.request
        assert request is not None
        try:
            with self._lock:
                if item.cancel_requested.is_set():
                    self._send_cancelled(request)
                    return
                item.started = True
            with cancellation(item.cancel_requested):
                self._run_request(item)
        finally:
            with self._lock:
                self._pending.pop(request.seq, None)
                for progress_id, owner in list(self._progress_owner.items()):
                    if owner is item:
                        del self._progress_owner[progress_id]

    def feed(self, data: bytes) -> None:
        """Parse and run everything in `data` on this thread (sans-io use and tests)."""
        for item in self.receive_bytes(data):
            self.run(item)

    def _report_problem(self, problem: ProtocolProblem) -> None:
        if problem.request_seq is not None and problem.command is not None:
            self._send_error(problem.request_seq, problem.command,
                             f"invalid request: {problem.description}", ERROR_INVALID_MESSAGE)
        else:
            self.send_event("output", {"category": "stderr",
                                       "output": f"aspace-dap: ignored a message: {problem.description}\n"})
        if not problem.recoverable:
            self.closed = True

    def _run_request(self, item: WorkItem) -> None:
        request = item.request
        assert request is not None
        command = request.command
        if self.closed:
            self._send_error(request.seq, command, "the session has ended", ERROR_ORDER)
            return
        if command == "initialize":
            if self._initialized:
                self._send_error(request.seq, command, "initialize was already received", ERROR_ORDER)
                return
        elif not self._initialized and command != "disconnect":  # leaving is always allowed
            self._send_error(request.seq, command, f"'{command}' was sent before initialize", ERROR_ORDER)
            return

        if not self.authenticated and not self._check_secret(request):
            return

        spec = self.handlers.get(command)
        if spec is None and command not in _BUILTIN_COMMANDS:
            self._send_error(request.seq, command, f"unsupported request: {command}", ERROR_UNSUPPORTED)
            return
        if command == "initialize":
            self.client_capabilities = dict(request.arguments)

        # The outcome is decided first and sent later, because launch/attach
        # answers (failures included) may have to wait for configurationDone.
        reply: Reply | None = None
        outcome: Callable[[], Any]
        try:
            if spec is not None:
                check_arguments(spec, request.arguments)
                reply = _as_reply(spec.function(RequestContext(self, item), request.arguments))
            else:
                reply = Reply()
            outcome = functools.partial(self._send_reply, request, reply)
        except (RequestCancelled, Cancelled):
            outcome = functools.partial(self._send_cancelled, request)
        except AspaceError as exc:
            error_id = ERROR_ARGUMENTS if isinstance(exc, ArgumentError) else ERROR_USER
            outcome = functools.partial(self._send_error, request.seq, command,
                                        str(exc) or type(exc).__name__, error_id)
        except Exception as exc:  # a bug in a handler must not end the session
            outcome = functools.partial(self._report_internal_error, request, exc)

        if command == "disconnect":
            self._finish_disconnect(outcome)
        elif command == "initialize":
            if reply is None:
                outcome()
            else:
                self._finish_initialize(request, reply)
        elif command in self.defer_until_configured and self._defer_active and not self._configured:
            with self._lock:
                self._held.append(_HeldReply(request, outcome))
        else:
            outcome()
            if command == "configurationDone":
                self._release_held()
            elif command == "terminate" and reply is not None and not self._terminated_sent:
                self.send_event("terminated")

    def _check_secret(self, request: Request) -> bool:
        """Whether `request` may run on a connection that has not presented the secret yet; a request that
        presents it authenticates the connection, a wrong secret (or a launch without one) ends it."""
        command = request.command
        offered = request.arguments.get("secret") if command in _SECRET_CARRIERS else None
        if offered is not None:
            assert self._secret is not None
            if isinstance(offered, str) and hmac.compare_digest(offered.encode("utf-8", "replace"), self._secret):
                self.authenticated = True
                return True
            self._send_error(request.seq, command, f"{command}: wrong secret; the connection is closed", ERROR_SECRET)
            self.closed = True
            return False
        if command in _BEFORE_SECRET and command not in ("launch", "attach"):
            return True
        self._send_error(request.seq, command,
                         f"{command}: this server accepts only clients that present its secret, as the "
                         f"argument \"secret\" of launch or attach{self._secret_hint}; the connection is closed",
                         ERROR_SECRET)
        self.closed = True
        return False

    def _finish_initialize(self, request: Request, reply: Reply) -> None:
        body = dict(reply.body) if isinstance(reply.body, dict) else {}
        if reply.body is not None and not isinstance(reply.body, dict):
            self._report_internal_error(request, TypeError("initialize must return a capabilities object"))
            return
        body.setdefault("supportsCancelRequest", True)
        # A client sends configurationDone only if told it may; without that, never wait for it.
        self._defer_active = bool(body.get("supportsConfigurationDoneRequest"))
        with self._lock:
            if self._send_reply(request, Reply(body, reply.events_before)):
                self._initialized = True
                self.send_event("initialized")
                for event, event_body in reply.events_after:
                    self.send_event(event, event_body)

    def _release_held(self) -> None:
        with self._lock:
            self._configured = True
            held, self._held = self._held, []
            for entry in held:
                entry.send()

    def _finish_disconnect(self, outcome: Callable[[], Any]) -> None:
        with self._lock:
            # Nobody will send configurationDone now; do not leave held requests unanswered.
            held, self._held = self._held, []
            for entry in held:
                self._send_cancelled(entry.request)
            outcome()
            self.closed = True

    def _send_reply(self, request: Request, reply: Reply) -> bool:
        """Send events_before, the response, events_after; False if the response could not be encoded."""
        with self._lock:
            try:
                for event, body in reply.events_before:
                    self.send_event(event, body)
                self._sink(self.connection.send_response(request, reply.body))
            except OutgoingMessageError as exc:
                self._report_internal_error(request, exc)
                return False
            try:
                for event, body in reply.events_after:
                    self.send_event(event, body)
            except OutgoingMessageError as exc:
                self.send_event("output", {"category": "important",
                                           "output": f"aspace-dap: internal error: {exc}\n"})
            return True

    def _report_internal_error(self, request: Request, exc: BaseException) -> None:
        summary = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8))
        with self._lock:
            self.send_event("output", {
                "category": "important",
                "output": f"aspace-dap: internal error in '{request.command}':\n{summary}",
            })
            self._send_error(request.seq, request.command,
                             f"internal error: {type(exc).__name__}: {exc}", ERROR_INTERNAL)

    # ---- progress ----

    def _progress_start(self, item: WorkItem, title: str, message: str | None,
                        percentage: float | None, cancellable: bool) -> str:
        assert item.request is not None
        progress_id = f"aspace-{item.request.seq}-{next(self._progress_ids)}"
        if not self.client_capabilities.get("supportsProgressReporting"):
            return progress_id
        body: dict[str, Any] = {"progressId": progress_id, "title": title,
                                "requestId": item.request.seq, "cancellable": cancellable}
        if message is not None:
            body["message"] = message
        if percentage is not None:
            body["percentage"] = min(100.0, max(0.0, float(percentage)))
        with self._lock:
            self._progress_owner[progress_id] = item
            self.send_event("progressStart", body)
        return progress_id

    def _forget_progress(self, progress_id: str) -> None:
        with self._lock:
            self._progress_owner.pop(progress_id, None)

    def _progress_event(self, event: str, progress_id: str, message: str | None, percentage: float | None) -> None:
        if not self.client_capabilities.get("supportsProgressReporting"):
            return
        body: dict[str, Any] = {"progressId": progress_id}
        if message is not None:
            body["message"] = message
        if percentage is not None:
            body["percentage"] = min(100.0, max(0.0, float(percentage)))
        self.send_event(event, body)


def _as_reply(result: Any) -> Reply:
    if isinstance(result, Reply):
        return result
    if result is None or isinstance(result, dict):
        return Reply(result)
    raise TypeError(f"handler returned {type(result).__name__}; expected a dict, Reply or None")
