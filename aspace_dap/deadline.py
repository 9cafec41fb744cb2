"""One time budget for everything a request does to evaluate and show values (limit MAX_EVAL_SECONDS).

Checking the clock between parser tokens is not enough: one step can run long
(formatting a big nested array, a lane-by-lane fallback over 64 lanes, a wide
struct). `evaluation_time()` opens a budget for the running request (per thread:
each connection runs its requests in a thread of its own), and the loops that
can grow call `check_time()`; a nested `evaluation_time()` keeps the outer
budget, so a lane-by-lane retry cannot start a fresh one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from . import limits
from .errors import LimitExceeded

_current = threading.local()


class TimeLimitExceeded(LimitExceeded):
    """The request's time budget is spent: it ends the whole request, never just one lane's value."""


@contextlib.contextmanager
def evaluation_time(what: str = "the expression") -> Iterator[None]:
    """Run the body under one MAX_EVAL_SECONDS budget (the outermost one, when nested)."""
    if getattr(_current, "deadline", None) is not None:
        yield
        return
    _current.deadline = time.monotonic() + limits.MAX_EVAL_SECONDS
    _current.what = what
    try:
        yield
    finally:
        _current.deadline = None


def check_time() -> None:
    """Raise LimitExceeded once the running budget is spent; nothing without a budget."""
    deadline = getattr(_current, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitExceeded(f"{_current.what} took more than {limits.MAX_EVAL_SECONDS} s "
                            + limits.limit_hint("MAX_EVAL_SECONDS"))
