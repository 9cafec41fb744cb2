"""The implicit arguments of an Intel GPU dispatch: where a thread's work-group size, the grid's size and
its lanes' local ids are, as gdb-oneapi reads them (intel/gdb `gdb/intelgt-tdep.c`, namespace
intelgt_implicit_args: get_address, parse_struct, check_valid, read_local_id_table, and
intelgt_get_local_ids_data).

- The structure is at genstbase + (r0.0 & ~0x3f): r0's dword 0 holds its offset from the general state
  base in bits 31:6.
- Version 0, read field after field with no padding: u8 struct_size, u8 struct_version, u8 num_work_dim,
  u8 simd_width, u32 local_size x/y/z, u64 global_size x/y/z, u64 printf_buffer_ptr, u64 global_offset
  x/y/z, u64 local_id_table_ptr, then (when struct_size covers them) u32 group_count x/y/z. gdb-oneapi
  requires version 0, struct_size above 80, simd_width 1, 8, 16 or 32, and 1 to 3 dimensions.
- The local ID table (at local_id_table_ptr, a GPU virtual address) has one entry per thread of the
  work-group (r0.2 bits 31:24 of them); a thread's entry is number r0.2 bits 7:0. An entry holds the
  lanes' x ids, then their y ids, then z ids, u16 each, `simd_width` of each (SIMD8: each followed by 8
  reserved u16; SIMD1: just x, y, z).

Nothing here is guessed: memory the core does not map, or a structure gdb-oneapi would refuse, is a
reason the sizes and ids are unavailable.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

HEAD = struct.Struct("<BBBB3I3Q")        # struct_size .. global_size_z: bytes 0..40
TABLE_POINTER_AT = 72                    # local_id_table_ptr, after printf_buffer_ptr and global_offset
GLOBAL_OFFSET_AT = 48
GROUP_COUNT_AT = 80                      # the optional fields start here
SIZE = 92                                # through group_count_z
MIN_STRUCT_SIZE = 81                     # "We require fields up to local_id_table_ptr" (struct_size > 80)
SIMD_WIDTHS = (1, 8, 16, 32)
R0_ARGS_OFFSET_MASK = ~0x3F & 0xFFFFFFFF  # r0.0 bits 31:6
R0_THREAD_AT, R0_THREADS_AT = 8, 11      # bytes of r0: r0.2 bits 7:0 and bits 31:24


@dataclass(frozen=True)
class ImplicitArgs:
    address: int
    simd_width: int
    work_dims: int
    local_size: tuple[int, int, int]
    global_size: tuple[int, int, int]
    global_offset: tuple[int, int, int]
    local_id_table: int


def entry_length(simd_width: int) -> int:
    """u16 values in one thread's entry of the local ID table."""
    return {1: 3, 8: 8 * 2 * 3, 16: 16 * 3, 32: 32 * 3}[simd_width]


def args_address(r0_dword0: int, genstbase: int) -> int:
    return (genstbase + (r0_dword0 & R0_ARGS_OFFSET_MASK)) & (1 << 64) - 1


def _read(memory, address: int, size: int, what: str) -> bytes | str:
    if memory is None:
        return f"the core maps no memory, so not {what} at {address:#x}"
    data, valid = memory.read(address, size)
    if not np.asarray(valid).all():
        return f"the core does not map {what} at {address:#x} ({size} bytes)"
    return np.asarray(data, np.uint8).tobytes()


def read_args(memory, address: int) -> ImplicitArgs | str:
    """The implicit arguments at `address` in `memory` (a SparseMemory), or why they cannot be read."""
    what = "the implicit arguments (genstbase + r0.0 & ~0x3f)"
    head = _read(memory, address, 1, what)
    if isinstance(head, str):
        return head
    struct_size = head[0]
    if struct_size < MIN_STRUCT_SIZE:
        return f"the implicit arguments at {address:#x} say struct_size {struct_size}; gdb-oneapi needs more than 80"
    raw = _read(memory, address, min(struct_size, SIZE), what)
    if isinstance(raw, str):
        return raw
    _, version, dims, simd, *sizes = HEAD.unpack_from(raw)
    if version != 0:
        return f"the implicit arguments at {address:#x} are version {version}; version 0 is the one known"
    if simd not in SIMD_WIDTHS:
        return f"the implicit arguments at {address:#x} say SIMD width {simd} (1, 8, 16 or 32 expected)"
    if not 1 <= dims <= 3:
        return f"the implicit arguments at {address:#x} say {dims} work dimensions (1 to 3 expected)"
    offset = struct.unpack_from("<3Q", raw, GLOBAL_OFFSET_AT)
    table, = struct.unpack_from("<Q", raw, TABLE_POINTER_AT)
    return ImplicitArgs(address, simd, dims, tuple(sizes[:3]), tuple(sizes[3:]), offset, table)  # type: ignore[arg-type]


def read_local_ids(memory, args: ImplicitArgs, thread: int, threads: int) -> np.ndarray | str:
    """(simd_width, 3) local ids of the lanes of the thread whose entry is `thread` in a table of
    `threads` entries (r0.2), or why they cannot be read."""
    if thread >= threads:
        return f"r0.2 names local ID table entry {thread} of {threads}"
    length = entry_length(args.simd_width)
    at = args.local_id_table + 2 * length * thread
    raw = _read(memory, at, 2 * length, f"entry {thread} of the local ID table")
    if isinstance(raw, str):
        return raw
    entry = np.frombuffer(raw, "<u2").astype(np.int64)
    stride = length // 3
    return np.stack([entry[axis * stride:axis * stride + args.simd_width] for axis in range(3)], axis=1)


# ------------------------------------------------------------------------------ writing (core_writer)

def encode(simd_width: int, local_size, global_size, local_id_table: int, struct_size: int = SIZE) -> bytes:
    """Version-0 implicit arguments, laid out as gdb-oneapi parses them (no global offset, no printf)."""
    groups = [-(-g // max(s, 1)) for g, s in zip(global_size, local_size)]
    dims = 3 if global_size[2] > 1 else 2 if global_size[1] > 1 else 1
    out = bytearray(struct_size)
    HEAD.pack_into(out, 0, struct_size, 0, dims, simd_width, *local_size, *global_size)
    struct.pack_into("<Q", out, TABLE_POINTER_AT, local_id_table)
    struct.pack_into("<3I", out, GROUP_COUNT_AT, *groups)
    return bytes(out)


def local_id_table(simd_width: int, local_size, threads: int) -> bytes:
    """A local ID table numbering work-items as the dump format does: thread t's lane L is flat work-item
    t * simd_width + L of the work-group, x fastest (lanes past the work-group get 0)."""
    length, stride = entry_length(simd_width), entry_length(simd_width) // 3
    sx, sy, sz = (max(int(n), 1) for n in local_size)
    table = np.zeros((threads, length), "<u2")
    flat = np.arange(threads)[:, None] * simd_width + np.arange(simd_width)[None, :]
    inside = flat < sx * sy * sz
    for axis, ids in enumerate((flat % sx, flat // sx % sy, flat // (sx * sy))):
        table[:, axis * stride:axis * stride + simd_width] = np.where(inside, ids, 0)
    return table.tobytes()
