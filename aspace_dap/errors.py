"""The project's own error types. Anything the user's input can cause is one of these."""


class AspaceError(Exception):
    """Base of every error caused by input (files, DWARF, DAP messages)."""


class DecodeError(AspaceError):
    """A DWARF expression could not be decoded; carries the byte offset."""

    def __init__(self, message: str, offset: int | None = None):
        self.offset = offset
        super().__init__(f"{message} at offset {offset}" if offset is not None else message)


class EvaluationError(AspaceError):
    """A well-formed expression could not be evaluated (bad stack, bad types, ...)."""


class LimitExceeded(EvaluationError):
    """Evaluation ran past a safety limit (steps, stack depth, piece size, call depth)."""


class Cancelled(AspaceError):
    """The client cancelled the request (DAP `cancel`) or left; the work stopped at a check."""


class UnavailableError(EvaluationError):
    """Something the expression needs is not in the dump (register, memory, caller state)."""


class CallerUnavailable(UnavailableError):
    """What names a frame's caller (its saved return address) is not in the dump: the stack shows why."""


class StateError(AspaceError):
    """The GPU state dump is malformed; `path` is the JSON path of the offending field."""

    def __init__(self, message: str, path: str = ""):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class CodeObjectError(AspaceError):
    """A code object (ELF, bundle, metadata, DWARF) is malformed or unsupported."""
