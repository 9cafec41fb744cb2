"""variablesReference handles and thread ids: small numbers the client echoes back."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import AspaceError

MAX_HANDLES = 1_000_000


@dataclass
class ScopeHandle:
    frame: object
    variables: list


@dataclass
class NoteHandle:
    """A scope that holds only a sentence: why the frame has no variables."""

    text: str


@dataclass
class ObjectHandle:
    obj: object
    frame: object
    evaluate_name: str | None


@dataclass
class RegistersHandle:
    wave_id: int
    lane: int


@dataclass
class VectorRegisterHandle:
    wave_id: int
    name: str


class Handles:
    """Handles live until the focus changes (clients refetch on the `stopped` that announces it)."""

    def __init__(self):
        self._items: dict[int, object] = {}
        self._next = 1

    def add(self, item) -> int:
        if len(self._items) >= MAX_HANDLES:
            self._items.clear()
        ref = self._next
        self._next += 1
        self._items[ref] = item
        return ref

    def get(self, ref: int):
        item = self._items.get(ref)
        if item is None:
            raise AspaceError(f"unknown or stale variablesReference {ref}")
        return item

    def clear(self):
        self._items.clear()


def thread_id(wave_id: int) -> int:
    # DAP thread ids are positive; wave ids may be 0
    return wave_id + 1


def thread_ids(wave_ids) -> list[int]:
    """thread_id of each of an array of wave ids."""
    return (wave_ids + 1).tolist()


def wave_of_thread(session, tid: int):
    try:
        return session.state.wave_by_id(tid - 1)
    except AspaceError:
        raise AspaceError(f"unknown threadId {tid}") from None
