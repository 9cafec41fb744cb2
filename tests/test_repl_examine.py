"""`x/NFU`'s rows from the bytes a memory read gives (GDB's formats), including bytes the dump lacks."""

import struct

import numpy as np
import pytest

from aspace_dap.dap.repl import _examine


class Memory:
    """What Session.read_memory gives: the first address, the bytes, which of them the dump holds."""

    def __init__(self, data: bytes, known: list[bool] | None = None, start: int = 0x40):
        self.data, self.start = data, start
        self.known = np.array(known if known is not None else [True] * len(data), bool)

    def read_memory(self, where, offset, count):
        return self.start, memoryview(self.data[:count]), self.known[:count]


WORDS = struct.pack("<4i", -2, 7, 0x7FFFFFFF, 65)


@pytest.mark.parametrize("fmt, row", [
    ("x", "\t0xfffffffe\t0x00000007\t0x7fffffff\t0x00000041"),
    ("d", "\t-2\t7\t2147483647\t65"),
    ("u", "\t4294967294\t7\t2147483647\t65"),
    ("o", "\t037777777776\t07\t017777777777\t0101"),
    ("t", "\t11111111111111111111111111111110\t111\t1111111111111111111111111111111\t1000001"),
])
def test_words_in_each_integer_format(fmt, row):
    assert _examine(Memory(WORDS), 4, fmt, "w", "local#0x40") == "local#0x40:" + row


def test_floats_and_characters():
    floats = struct.pack("<2f", 1.5, -0.25)
    assert _examine(Memory(floats), 2, "f", "w", "local#0x40") == "local#0x40:\t1.5\t-0.25"
    assert _examine(Memory(struct.pack("<d", 2.0)), 1, "f", "g", "global#0x40") == "global#0x40:\t2.0"
    assert _examine(Memory(b"A\n"), 2, "c", "w", "local#0x40") == "local#0x40:\t65 'A'\t10"


def test_rows_of_sixteen_bytes_with_their_addresses():
    text = _examine(Memory(bytes(range(20))), 5, "x", "w", "local#0x40")
    assert text.splitlines() == ["local#0x40:\t0x03020100\t0x07060504\t0x0b0a0908\t0x0f0e0d0c",
                                 "local#0x50:\t0x13121110"]


def test_a_unit_with_an_unknown_byte_or_past_the_end_is_unavailable():
    known = [True] * 4 + [True, False, True, True] + [True] * 2  # the second word lacks a byte; the third is short
    text = _examine(Memory(bytes(range(10)), known), 3, "x", "w", "local#0x40")
    assert text == "local#0x40:\t0x03020100\t<unavailable>\t<unavailable>"
