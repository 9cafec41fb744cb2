"""Errors of the DAP layer; all are AspaceErrors so handlers can raise them freely."""

from ..errors import AspaceError, Cancelled


class ArgumentError(AspaceError):
    """A request's arguments are missing, ill-typed or out of range."""


class RequestCancelled(Cancelled):
    """A handler noticed that the client cancelled its request and stopped early."""


class OutgoingMessageError(AspaceError):
    """A message could not be encoded as JSON (e.g. a handler returned a non-JSON value)."""
