"""Number fields of the manifest: JSON integers or "0x…"/decimal strings, never negative."""

from __future__ import annotations

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
