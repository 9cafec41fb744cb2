"""Draws the extension's icon, images/icon.png (128x128): a wave of 8x8 lanes, most active, a few
inactive, one focused, on a dark tile. Standard library only: `python3 scripts/make_icon.py`."""

import struct
import zlib
from pathlib import Path

SIZE, LANES, CELL, GAP, MARGIN = 128, 8, 11, 3, 10
BACKGROUND = (30, 34, 44)
ACTIVE, INACTIVE, FOCUS = (64, 160, 255), (70, 78, 96), (255, 184, 48)
INACTIVE_LANES = {5, 6, 7, 13, 14, 15, 29, 30, 31, 45, 46, 47, 61, 62, 63}
FOCUSED_LANE = 18


def pixels() -> list[list[tuple[int, int, int, int]]]:
    image = [[(0, 0, 0, 0)] * SIZE for _ in range(SIZE)]
    radius = 20
    for y in range(SIZE):
        for x in range(SIZE):
            # a rounded square: outside the corner circles stays transparent
            cx = min(max(x, radius), SIZE - 1 - radius)
            cy = min(max(y, radius), SIZE - 1 - radius)
            if (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2:
                image[y][x] = (*BACKGROUND, 255)
    for lane in range(LANES * LANES):
        row, column = divmod(lane, LANES)
        colour = FOCUS if lane == FOCUSED_LANE else INACTIVE if lane in INACTIVE_LANES else ACTIVE
        top, left = MARGIN + row * (CELL + GAP), MARGIN + column * (CELL + GAP)
        for y in range(top, top + CELL):
            for x in range(left, left + CELL):
                image[y][x] = (*colour, 255)
    return image


def png(image) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + bytes(v for px in row for v in px) for row in image)
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "images" / "icon.png"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(png(pixels()))
    print(out)
