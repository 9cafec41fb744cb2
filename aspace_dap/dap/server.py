"""One connection = one dispatcher with the debugger's handlers and a fresh session state."""

from __future__ import annotations

from .connection import DebugState
from .dispatch import Dispatcher
from .handlers import handlers


def dispatcher_factory(outgoing_hook=None) -> Dispatcher:
    return Dispatcher(handlers, state=DebugState(), outgoing_hook=outgoing_hook)
