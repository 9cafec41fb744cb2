"""The helper process of split_read.py: reads one byte range of many files of a folder, from the start
of the list, while the server reads the same list from its end.

Run as `python -I -S range_reader.py FOLDER OFFSET LENGTH CHUNK NAMES_FD OUT_FD`, with two inherited
descriptors: NAMES_FD holds the file names, one per line (names of FOLDER's files); OUT_FD receives first
one byte per name, 1 where the folder's listing has it as a regular file (the server's existence check),
then for each CHUNK names in turn their lengths (little-endian int32 each, -1: not read) and their bytes.
One byte on stdout tells that the listing is written, then one that a chunk is whole. Only the regular
files of the listing are opened, never through a symlink; anything else is left for the server to read
its own way (and to say what is wrong). Standard library only: the helper starts without the package
(-I -S).
"""

import os
import sys
from array import array


def _read_all(fd: int) -> bytes:
    parts = []
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            return b"".join(parts)
        parts.append(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(argv: list[str]) -> int:
    folder = argv[1]
    offset, length, chunk, names_fd, out_fd = map(int, argv[2:7])
    os.lseek(names_fd, 0, os.SEEK_SET)
    names = _read_all(names_fd).decode("utf-8", "surrogateescape").split("\n")
    at = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    with os.scandir(at) as listing:
        regular = {entry.name for entry in listing if entry.is_file(follow_symlinks=False)}
    _write_all(out_fd, bytes(map(regular.__contains__, names)))
    _write_all(1, b"L")
    open_, pread, close = os.open, os.pread, os.close
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    for start in range(0, len(names), chunk):
        sizes, parts = array("i"), []
        for name in names[start:start + chunk]:
            data = None
            if name in regular:
                try:
                    fd = open_(name, flags, dir_fd=at)
                    try:
                        data = pread(fd, length, offset)
                    finally:
                        close(fd)
                except OSError:
                    data = None
            if data is None:
                sizes.append(-1)
            else:
                sizes.append(len(data))
                parts.append(data)
        if sys.byteorder != "little":
            sizes.byteswap()
        _write_all(out_fd, sizes.tobytes() + b"".join(parts))
        _write_all(1, b"+")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, ValueError, KeyboardInterrupt):
        sys.exit(1)  # the server reads what is left itself
