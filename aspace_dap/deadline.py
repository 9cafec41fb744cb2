"""One time budget for everything a request does (limit MAX_EVAL_SECONDS for evaluations, MAX_SAVE_SECONDS
for saves), and the request's cancellation.

Checking the clock between parser tokens is not enough: one step can run long
(formatting a big nested array, a lane-by-lane fallback over 64 lanes, a wide
struct, a save's next megabytes). `evaluation_time()` opens a budget for the
running request (per thread: each connection runs its requests in a thread of
its own), and the loops that can grow call `check_time()`; a nested
`evaluation_time()` keeps the outer budget, so a lane-by-lane retry cannot
start a fresh one. `work_time()` opens a budget of its own for work that is not
an evaluation (a save), whatever budget was open around it. The dispatcher runs
each request inside `cancellation()`, so the same checks end a request the
client cancelled or left behind.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from . import limits
from .errors import Cancelled, LimitExceeded

_current = threading.local()


class TimeLimitExceeded(LimitExceeded):
    """The request's time budget is spent: it ends the whole request, never just one lane's value."""


class WorkCancelled(TimeLimitExceeded, Cancelled):
    """The client cancelled the request or left: like a spent budget it ends the whole request, and
    the dispatcher answers it as cancelled."""


@contextlib.contextmanager
def evaluation_time(what: str = "the expression") -> Iterator[None]:
    """Run the body under one MAX_EVAL_SECONDS budget (the outermost one, when nested)."""
    if getattr(_current, "deadline", None) is not None:
        yield
        return
    with work_time(what, limits.MAX_EVAL_SECONDS, "MAX_EVAL_SECONDS"):
        yield


@contextlib.contextmanager
def work_time(what: str, seconds: float, limit_name: str) -> Iterator[None]:
    """Run the body under a budget of its own of `seconds` (limit `limit_name`); the outer one, if any,
    holds again afterwards."""
    saved = (getattr(_current, "deadline", None), getattr(_current, "what", None),
             getattr(_current, "seconds", None), getattr(_current, "limit_name", None))
    _current.deadline = time.monotonic() + seconds
    _current.what, _current.seconds, _current.limit_name = what, seconds, limit_name
    try:
        yield
    finally:
        _current.deadline, _current.what, _current.seconds, _current.limit_name = saved


@contextlib.contextmanager
def cancellation(event: threading.Event) -> Iterator[None]:
    """While the body runs, check_time() ends it once `event` is set (the client cancelled or left)."""
    saved = getattr(_current, "cancel", None)
    _current.cancel = event
    try:
        yield
    finally:
        _current.cancel = saved


def cancelled() -> bool:
    event = getattr(_current, "cancel", None)
    return event is not None and event.is_set()


def check_time() -> None:
    """Raise Cancelled once the running request is cancelled, LimitExceeded once its budget is spent;
    nothing without either."""
    if cancelled():
        raise WorkCancelled("the request was cancelled")
    deadline = getattr(_current, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitExceeded(f"{_current.what} took more than {_current.seconds} s "
                                + limits.limit_hint(_current.limit_name))
