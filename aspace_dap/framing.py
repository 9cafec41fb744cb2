"""`Content-Length` framing shared by the DAP and LSP servers: bytes in, message bodies out.

Both protocols frame each JSON object with `Content-Length: N\\r\\n...\\r\\n\\r\\n`.
Input that cannot be framed becomes a `FramingProblem` and the reader skips
ahead to the next `Content-Length:`, so one bad header never ends or freezes a
session: a huge, negative or non-numeric length, a missing length, a header
line without a colon, an overlong header. Buffering is bounded by the header
and body caps. A length larger than the message actually sent would swallow
the messages after it; when a complete JSON object is followed by the next
header, the reader reports it (with the object, so it can be answered) and
goes on from that header.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import limits

MAX_HEADER_SIZE = 64 * 1024

_HEADER_END = b"\r\n\r\n"
_SYNC_TOKEN = b"Content-Length:"
OVERSTATED_SCAN_BYTES = 64 * 1024  # of a body, searched for the next header (see _overstated_length)
OVERSTATED_ATTEMPTS = 16


@dataclass(frozen=True)
class FramingProblem:
    """Bytes that are not a usable message. `message` is the JSON object when one could be read
    (so a request can be answered); `recoverable` is False only when the stream ended mid-message."""

    description: str
    message: dict[str, Any] | None = None
    recoverable: bool = True


class Framer:
    """Splits a byte stream into message bodies. Feed with `receive_data` (b"" = end of stream),
    pull with `next_body` until it returns None."""

    def __init__(self, *, max_body_size: int = limits.MAX_REQUEST_BYTES, max_header_size: int = MAX_HEADER_SIZE):
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self._buffer = bytearray()
        self._body_length: int | None = None  # set once a header is parsed
        self._resyncing = False
        self._scanned = 0  # how far a body still arriving was searched for a next header
        self._attempts = 0  # decodes tried on that body
        self._eof = False
        self._eof_reported = False

    @property
    def peer_closed(self) -> bool:
        return self._eof

    @property
    def buffered_bytes(self) -> int:
        """Bytes held while waiting for the rest of a message (bounded by the caps)."""
        return len(self._buffer)

    @property
    def missing_bytes(self) -> int:
        """Bytes of the message in progress that have not arrived yet (0 before its header is read)."""
        if self._body_length is None:
            return 0
        return max(0, self._body_length - len(self._buffer))

    def receive_data(self, data: bytes) -> None:
        if not data:
            self._eof = True
            return
        if self._eof:
            raise ValueError("data received after end of stream")
        self._buffer += data

    def next_body(self) -> bytes | FramingProblem | None:
        """The next complete body or problem, or None when more bytes are needed."""
        if self._resyncing and not self._resync():
            return self._end_of_stream_problem()
        if self._body_length is None:
            header = self._take_header()
            if header is None:
                return self._end_of_stream_problem()
            if isinstance(header, FramingProblem):
                return header
            self._body_length = header
        if len(self._buffer) < self._body_length:
            return self._overstated_length() or self._end_of_stream_problem()
        body = bytes(self._buffer[: self._body_length])
        del self._buffer[: self._body_length]
        self._body_length = None
        self._scanned = self._attempts = 0
        return body

    def _end_of_stream_problem(self) -> FramingProblem | None:
        if not self._eof or self._eof_reported:
            return None
        pending = bool(self._buffer) or self._body_length is not None
        self._eof_reported = True
        if pending and not self._resyncing:
            return FramingProblem("stream ended in the middle of a message", recoverable=False)
        return None

    def _take_header(self) -> int | FramingProblem | None:
        end = self._buffer.find(_HEADER_END)
        if end < 0:
            if len(self._buffer) > self.max_header_size:
                self._start_resync()
                return FramingProblem(f"message header longer than {self.max_header_size} bytes")
            return None
        if end > self.max_header_size:
            self._start_resync()
            return FramingProblem(f"message header longer than {self.max_header_size} bytes")
        header = bytes(self._buffer[:end])
        length = self._content_length(header)
        if isinstance(length, FramingProblem):
            self._start_resync()
            return length
        del self._buffer[: end + len(_HEADER_END)]
        return length

    def _content_length(self, header: bytes) -> int | FramingProblem:
        length_text = None
        for line in header.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if not colon:
                return FramingProblem(f"malformed header line {line[:80]!r}")
            if name.strip().lower() == b"content-length":
                length_text = value.strip()
        if length_text is None:
            return FramingProblem("message header has no Content-Length")
        if not length_text.isdigit() or len(length_text) > 20:
            return FramingProblem(f"bad Content-Length {length_text[:40]!r}")
        length = int(length_text)
        if length > self.max_body_size:
            return FramingProblem(f"message body of {length} bytes is over the limit of {self.max_body_size} bytes "
                                  + limits.limit_hint("MAX_REQUEST_BYTES"))
        return length

    def _start_resync(self) -> None:
        # Drop one byte so the search cannot find the header that just failed.
        del self._buffer[:1]
        self._resyncing = True

    def _resync(self) -> bool:
        """Skip to the next `Content-Length:`; False while it has not arrived yet."""
        found = self._buffer.find(_SYNC_TOKEN)
        if found < 0:
            # Keep a tail that may be the start of a token split across chunks.
            keep = len(_SYNC_TOKEN) - 1
            if len(self._buffer) > keep:
                del self._buffer[: len(self._buffer) - keep]
            return False
        del self._buffer[:found]
        self._resyncing = False
        return True

    def _overstated_length(self) -> FramingProblem | None:
        """A complete JSON object followed by another header, while the declared length wants more.

        Only the first OVERSTATED_SCAN_BYTES of a body are searched, with at most
        OVERSTATED_ATTEMPTS decodes: each try decodes everything before it, so a body full of
        `}Content-Length:` would otherwise cost time quadratic in its size (minutes for 16 MiB,
        on the thread that reads every client)."""
        start = max(0, self._scanned - len(_SYNC_TOKEN))
        if start >= OVERSTATED_SCAN_BYTES or self._attempts >= OVERSTATED_ATTEMPTS:
            return None
        self._scanned = len(self._buffer)
        while (found := self._buffer.find(_SYNC_TOKEN, start, OVERSTATED_SCAN_BYTES)) >= 0:
            start = found + 1
            last = found - 1
            while last >= 0 and self._buffer[last] in b" \t\r\n":
                last -= 1
            if last < 0 or self._buffer[last] != ord("}"):
                continue
            self._attempts += 1
            if self._attempts > OVERSTATED_ATTEMPTS:
                return None
            head = bytes(self._buffer[:found]).rstrip()
            try:
                text = head.decode("utf-8")
                obj, end = json.JSONDecoder().raw_decode(text)
            except (UnicodeDecodeError, ValueError, RecursionError):
                continue
            if end != len(text) or not isinstance(obj, dict):
                continue
            declared = self._body_length
            del self._buffer[:found]
            self._body_length = None
            self._scanned = self._attempts = 0
            return FramingProblem(f"Content-Length {declared} is longer than the message ({len(head)} bytes)", obj)
        return None
