"""Number fields of the manifest: JSON integers or "0x…"/decimal strings, never negative."""

from __future__ import annotations

import numpy as np

MAX_U64 = (1 << 64) - 1


def parse_number(value: object) -> int:
    """Return the non-negative integer `value` stands for; ValueError says why it is not one."""
    # bool is an int subclass in Python; a JSON true is not a number here.
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if text != value or not text:
            raise ValueError(f"not a number: {value!r}")
        try:
            if text[:2].lower() == "0x":
                digits = text[2:]
                if not digits or digits.startswith(("+", "-", "_")) or "_" in digits:
                    raise ValueError
                number = int(digits, 16)
            else:
                if not text.isdigit():
                    raise ValueError
                number = int(text, 10)
        except ValueError:
            raise ValueError(f"not a number: {value!r}") from None
    else:
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if number < 0:
        raise ValueError(f"negative numbers are not allowed: {value!r}")
    return number


def hex_number(value: int) -> str:
    """The string form writers use for addresses and masks (JSON numbers lose bits past 2**53)."""
    return hex(int(value))


def as_addresses(addr) -> tuple[np.ndarray, np.ndarray]:
    """Addresses (an int, a sequence or an array) as uint64, and which of them are real addresses.

    A negative or wider-than-64-bit address reaches no byte; it is reported, not wrapped.
    Python sequences go through object arrays: numpy would turn [-1, 2**64 - 1] into floats.
    """
    raw = addr if isinstance(addr, np.ndarray) else np.asarray(addr, dtype=object)
    kind = raw.dtype.kind
    if kind == "u":
        return raw.astype(np.uint64), np.ones(raw.shape, dtype=bool)
    if kind == "i":
        ok = raw >= 0
        return np.where(ok, raw, 0).astype(np.uint64), ok
    if kind == "O":
        flat = raw.reshape(-1)
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat):
            raise ValueError("addresses must be integers")
        values = [int(v) for v in flat]
        ok = [0 <= v <= MAX_U64 for v in values]
        cleaned = np.array([v if real else 0 for v, real in zip(values, ok)], dtype=np.uint64)
        return cleaned.reshape(raw.shape), np.array(ok, dtype=bool).reshape(raw.shape)
    raise ValueError(f"addresses must be integers, not {raw.dtype}")
