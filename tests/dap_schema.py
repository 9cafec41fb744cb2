"""Check DAP messages against the official JSON schema shipped in debugpy's wheel.

Requests and events validate against their own definitions (ThreadsRequest,
StoppedEvent); responses against the definition of their request's response
(ThreadsResponse), or ErrorResponse when `success` is false. Commands and
events the schema does not know (this project's `setFocus`, `laneValues`,
`focus`) validate against the base Request/Response/Event.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import debugpy
import fastjsonschema
import jsonschema

SCHEMA_PATH = os.path.join(
    os.path.dirname(debugpy.__file__),
    "_vendored", "pydevd", "_pydevd_bundle", "_debug_adapter", "debugProtocol.json",
)


class SchemaViolation(AssertionError):
    pass


@functools.cache
def _definitions() -> dict[str, Any]:
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)["definitions"]


def _own_property_enum(definition: dict[str, Any], name: str) -> list[str]:
    for part in definition.get("allOf", []):
        values = part.get("properties", {}).get(name, {}).get("enum")
        if values:
            return values
    return []


@functools.cache
def _names_by_kind() -> tuple[dict[str, str], dict[str, str]]:
    """(command -> request definition name, event -> event definition name)."""
    requests, events = {}, {}
    for name, definition in _definitions().items():
        if name.endswith("Request"):
            for command in _own_property_enum(definition, "command"):
                requests[command] = name
        elif name.endswith("Event"):
            for event in _own_property_enum(definition, "event"):
                events[event] = name
    return requests, events


def _schema(definition_name: str) -> dict[str, Any]:
    return {"$schema": "http://json-schema.org/draft-04/schema#", "$ref": f"#/definitions/{definition_name}",
            "definitions": _definitions()}


@functools.cache
def _check(definition_name: str):
    """A compiled check (fastjsonschema: a test sees thousands of messages, jsonschema took ~7 ms for a
    variables response of 50 variables); jsonschema then says everything that is wrong with a failure."""
    return fastjsonschema.compile(_schema(definition_name))


@functools.cache
def _validator(definition_name: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft4Validator(_schema(definition_name))


def definition_for(message: dict[str, Any]) -> str:
    """The schema definition `message` must satisfy."""
    requests, events = _names_by_kind()
    kind = message.get("type")
    if kind == "request":
        return requests.get(message.get("command"), "Request")
    if kind == "event":
        return events.get(message.get("event"), "Event")
    if kind == "response":
        if message.get("success") is False:
            return "ErrorResponse"
        request_name = requests.get(message.get("command"))
        if request_name:
            response_name = request_name[: -len("Request")] + "Response"
            if response_name in _definitions():
                return response_name
        return "Response"
    return "ProtocolMessage"


def validate_message(message: dict[str, Any]) -> None:
    """Raise SchemaViolation unless `message` is valid DAP."""
    name = definition_for(message)
    if name == "ProtocolMessage":
        raise SchemaViolation(f"message type {message.get('type')!r} is not request/response/event: {message}")
    try:
        _check(name)(message)
        return
    except fastjsonschema.JsonSchemaException as failed:
        first = failed.message
    errors = sorted(_validator(name).iter_errors(message), key=lambda e: list(e.absolute_path))
    details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors[:5]) or first
    raise SchemaViolation(f"{name} violated by {json.dumps(message)[:500]}: {details}")
