"""Reading the parameters of the LSP messages the server handles, as the protocol types them.

Each reader returns plain Python values or raises `InvalidParams` (answered
with JSON-RPC error -32602); a notification with unreadable parameters is
dropped. Fields the server does not use are not checked.
"""

from __future__ import annotations

from typing import Any

UINTEGER_MAX = 2**31 - 1  # the protocol's uinteger


class InvalidParams(Exception):
    pass


def obj(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise InvalidParams(f"{what} must be an object")
    return value


def field(container: dict, name: str, kind: type | tuple[type, ...], what: str, *, optional: bool = False):
    value = container.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidParams(f"{what}.{name} is missing or of the wrong type")
    return value


def uinteger(container: dict, name: str, what: str) -> int:
    value = container.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= UINTEGER_MAX:
        raise InvalidParams(f"{what}.{name} must be an integer from 0 to {UINTEGER_MAX}")
    return value


def text_document_uri(params: Any) -> str:
    params = obj(params, "params")
    return field(obj(params.get("textDocument"), "textDocument"), "uri", str, "textDocument")


def position(value: Any, what: str = "position") -> tuple[int, int]:
    value = obj(value, what)
    return uinteger(value, "line", what), uinteger(value, "character", what)


def span(value: Any, what: str = "range") -> tuple[int, int, int, int]:
    """A range as (start line, start character, end line, end character)."""
    value = obj(value, what)
    return position(value.get("start"), what + ".start") + position(value.get("end"), what + ".end")


def did_open(params: Any) -> tuple[str, str]:
    doc = obj(obj(params, "params").get("textDocument"), "textDocument")
    field(doc, "languageId", str, "textDocument")
    field(doc, "version", int, "textDocument")
    return field(doc, "uri", str, "textDocument"), field(doc, "text", str, "textDocument")


def did_change(params: Any) -> tuple[str, list[tuple[tuple[int, int, int, int] | None, str]]]:
    params = obj(params, "params")
    doc = obj(params.get("textDocument"), "textDocument")
    uri = field(doc, "uri", str, "textDocument")
    changes = params.get("contentChanges")
    if not isinstance(changes, list):
        raise InvalidParams("contentChanges must be a list")
    out = []
    for change in changes:
        change = obj(change, "contentChanges[]")
        text = field(change, "text", str, "contentChanges[]")
        out.append((span(change["range"], "contentChanges[].range") if "range" in change else None, text))
    return uri, out


def watched_uris(params: Any) -> list[str]:
    changes = obj(params, "params").get("changes")
    if not isinstance(changes, list):
        raise InvalidParams("changes must be a list")
    return [field(obj(c, "changes[]"), "uri", str, "changes[]") for c in changes]


def workspace_folders(value: Any) -> list[str]:
    """The URIs of a WorkspaceFolder[] (null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidParams("workspaceFolders must be a list")
    return [field(obj(f, "workspaceFolders[]"), "uri", str, "workspaceFolders[]") for f in value]


def path_of(value: Any, *keys: str) -> Any:
    """A nested member of JSON objects, or None where one is missing or not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
