"""A wave's register file: the layout's registers concatenated in one file, plus a write overlay."""

from __future__ import annotations

import numpy as np

from ..errors import StateError, UnavailableError
from .files import FileSpan

# No GPU has a register this large (a whole wave64 VGPR file of 512 registers is 128 KiB): a layout that
# declares more is refused when the register is used, instead of allocating what it declares.
MAX_REGISTER_BYTES = 16 << 20


class RegisterFile:
    def __init__(self, layout: list[tuple[str, int]], span: FileSpan | None, path: str = "",
                 layout_name: str | None = None):
        self.layout = [(str(name), int(size)) for name, size in layout]
        self.layout_name = layout_name
        self.path = path  # JSON path of the wave's "registers", for errors
        self._span = span
        self._offsets: dict[str, tuple[int, int]] = {}
        offset = 0
        for name, size in self.layout:
            self._offsets.setdefault(name, (offset, size))
            offset += size
        self.total_size = offset
        self._overlay: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def with_span(self, span: FileSpan | None, path: str = "") -> "RegisterFile":
        """Another wave's registers in the same layout (offsets computed once, shared)."""
        other = object.__new__(RegisterFile)
        other.layout, other.layout_name, other._offsets, other.total_size = (
            self.layout, self.layout_name, self._offsets, self.total_size)
        other.path = path
        other._span = span
        other._overlay = {}
        return other

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.layout]

    def has(self, name: str) -> bool:
        return name in self._offsets

    def size(self, name: str) -> int | None:
        entry = self._offsets.get(name)
        return None if entry is None else entry[1]

    def _entry(self, name: str) -> tuple[int, int]:
        entry = self._offsets.get(name)
        if entry is None:
            raise UnavailableError(f"register {name} not in dump")
        if entry[1] > MAX_REGISTER_BYTES:
            raise StateError(f"register {name} is declared {entry[1]} bytes long; no GPU register is over "
                             f"{MAX_REGISTER_BYTES} bytes", f"{self.path}.{name}" if self.path else name)
        return entry

    def raw(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The register's bytes and which of them the dump holds (a short file loses the tail)."""
        offset, size = self._entry(name)
        data = np.zeros(size, dtype=np.uint8)
        valid = np.zeros(size, dtype=bool)
        if self._span is not None:
            present = max(0, min(size, self._span.length - offset))
            if present:
                data[:present] = self._span.array[offset : offset + present]
                valid[:present] = True
        written = self._overlay.get(name)
        if written is not None:
            data[written[1]] = written[0][written[1]]
            valid |= written[1]
        return data, valid

    def lane_view(self, name: str, lanes: int) -> tuple[np.ndarray, np.ndarray]:
        """A vector register as (lanes, bytes per lane): lane 0's bytes come first in the file."""
        data, valid = self.raw(name)
        if lanes <= 0 or len(data) % lanes:
            raise StateError(f"register {name} has {len(data)} bytes, not a multiple of {lanes} lanes",
                             f"{self.path}.{name}" if self.path else name)
        return data.reshape(lanes, -1), valid.reshape(lanes, -1)

    def value(self, name: str) -> int | None:
        """A scalar register as a little-endian integer, None if absent or partly unavailable."""
        if not self.has(name):
            return None
        data, valid = self.raw(name)
        if not valid.all():
            return None
        return int.from_bytes(data.tobytes(), "little")

    def write(self, name: str, offset: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Overlay `data` at `offset` in the register; the dump file is never touched."""
        _, size = self._entry(name)
        payload = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
            np.ascontiguousarray(data).view(np.uint8).reshape(-1))
        if offset < 0 or offset + len(payload) > size:
            raise StateError(f"write of {len(payload)} bytes at offset {offset} does not fit register "
                             f"{name} ({size} bytes)", f"{self.path}.{name}" if self.path else name)
        entry = self._overlay.get(name)
        if entry is None:
            entry = (np.zeros(size, dtype=np.uint8), np.zeros(size, dtype=bool))
            self._overlay[name] = entry
        entry[0][offset : offset + len(payload)] = payload
        entry[1][offset : offset + len(payload)] = True

    @property
    def modified(self) -> bool:
        return bool(self._overlay)

    def __repr__(self) -> str:
        return f"RegisterFile({len(self.layout)} registers)"
