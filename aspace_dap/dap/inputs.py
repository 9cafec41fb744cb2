"""Guards on what a client sends, shared by the requests and the REPL: a count that must not be
negative, an expression within the length limit and Python's nesting depth."""

from __future__ import annotations

from .. import limits
from ..errors import AspaceError, LimitExceeded


def not_negative(args: dict, name: str) -> int:
    value = args.get(name) or 0
    if value < 0:
        raise AspaceError(f"{name} must not be negative")
    return value


def parsed(evaluate, session, text, *args, **kw):
    """Run an expression evaluator; input nested past Python's stack is the client's error, not a crash."""
    if len(text) > limits.MAX_EXPRESSION_CHARS:
        raise LimitExceeded(f"the expression has {len(text)} characters, over the limit of "
                            f"{limits.MAX_EXPRESSION_CHARS} " + limits.limit_hint("MAX_EXPRESSION_CHARS"))
    try:
        return evaluate(session, text, *args, **kw)
    except RecursionError:
        raise LimitExceeded("expression is nested too deeply") from None
