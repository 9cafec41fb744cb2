"""What a connection, and a server of many connections, may hold (trio thread only).

The transport (transport.py) asks before it reads and before it runs a request;
these classes count the bytes and requests held and say when to wait. Limits:
MAX_PENDING_OUTPUT_BYTES, MAX_QUEUED_REQUESTS, MAX_REQUEST_BYTES per connection,
MAX_SERVER_BUFFER_BYTES for all connections of one server together.
"""

from __future__ import annotations

import trio

from .. import limits

RECEIVE_SIZE = 64 * 1024  # the most one read takes from a client


class ServerBudget:
    """Bytes all clients of one server hold together: requests read and not yet
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

    def may_read(self, backlog: Backlog) -> bool:
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

    def may_run(self, backlog: Backlog) -> bool:
        return backlog.output_bytes <= self.share or self.held <= self.limit


class Backlog:
    """Answers not yet written and requests not yet run, for one connection.

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
