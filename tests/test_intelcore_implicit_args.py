"""Intel GPU cores: a lane's get_local_id / get_global_id / get_local_size come from the dispatch's implicit
arguments at genstbase + (r0.0 & ~0x3f) and the local ID table they point to, as gdb-oneapi reads them
(intel/gdb gdb/intelgt-tdep.c: get_address, parse_struct, read_local_id_table,
intelgt_current_workitem_local_id / _global_id, intelgt_workitem_local_size); a core that does not map them
gives `<unavailable: why>`, never the SIMD width as a size."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from dap_client import REPO_ROOT

from aspace_dap.errors import StateError
from aspace_dap.lane_values import lane_values
from aspace_dap.session import Session
from aspace_dap.state import load_state
from aspace_dap.adapters.intel.core_writer import write_core
from aspace_dap.dap.waves import lane_rows

DUMP = Path(REPO_ROOT) / "examples" / "opencl" / "dumps" / "lds_tiles.tgllp.O0"  # 16x16 work-groups, SIMD8
GENSTBASE = 0x7ABC_0000_0000


def _loads(data: bytes) -> list[tuple]:
    """(program header offset, p_type, p_offset, p_vaddr, p_filesz) of every program header, by the ELF rules."""
    phoff, phnum = struct.unpack_from("<Q", data, 32)[0], struct.unpack_from("<H", data, 56)[0]
    out = []
    for i in range(phnum):
        p_type, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i)
        out.append((phoff + 56 * i, p_type, offset, vaddr, filesz))
    return out


def _at(data: bytes, address: int, size: int) -> bytes:
    for _, p_type, offset, vaddr, filesz in _loads(data):
        if p_type == 1 and vaddr <= address and address + size <= vaddr + filesz:
            return data[offset + address - vaddr:offset + address - vaddr + size]
    raise AssertionError(f"no PT_LOAD holds {address:#x}")


def _thread_r0_and_genstbase(data: bytes) -> tuple[bytes, int]:
    """The first thread's r0 and genstbase, from its NT_PRSTATUS by the register description's order."""
    import re
    text = data.decode("latin-1")
    regs = re.findall(r'<reg name="(\w+)" bitsize="(\d+)"', text[text.index("<target"):text.index("</target>")])
    offsets, at = {}, 0
    for name, bits in regs:
        offsets[name] = at
        at += int(bits) // 8
    status = data.index(b"CORE\0\0\0\0", data.index(b"</target>")) + 8 + 16  # NT_PRSTATUS: after tid, signal, SLM
    block = data[status:]
    return block[offsets["r0"]:offsets["r0"] + 32], struct.unpack_from("<Q", block, offsets["genstbase"])[0]


@pytest.fixture(scope="module")
def dump():
    with load_state(DUMP) as state:
        yield state


@pytest.fixture(scope="module")
def core(dump, tmp_path_factory):
    return write_core(dump, tmp_path_factory.mktemp("core") / "lds.core", genstbase=GENSTBASE)


def _values(path, expression):
    s = Session.open(str(path))
    return [r["value"] for r in lane_values(s, expression, wave_id=s.state.waves[0].id)]


def test_the_writer_puts_the_implicit_arguments_where_gdb_oneapi_reads_them(core, dump):
    data = core.read_bytes()
    r0, genstbase = _thread_r0_and_genstbase(data)
    assert genstbase == GENSTBASE
    address = genstbase + (struct.unpack_from("<I", r0, 0)[0] & ~0x3F)
    size, version, dims, simd = _at(data, address, 4)
    assert (version, simd) == (0, 8) and size > 80 and 1 <= dims <= 3
    local = struct.unpack("<3I", _at(data, address + 4, 12))
    glob = struct.unpack("<3Q", _at(data, address + 16, 24))
    d = dump.dispatches[0]
    assert local == d.workgroup_size == (16, 16, 1) and glob == d.grid_size
    table, = struct.unpack("<Q", _at(data, address + 72, 8))
    entry, entries = r0[8], r0[11]  # r0.2 bits 7:0 and 31:24
    assert entries == 16 * 16 // 8 and entry == dump.waves[0].index_in_workgroup
    # a SIMD8 entry: x[8], 8 reserved, y[8], 8 reserved, z[8], 8 reserved
    ids = struct.unpack("<48H", _at(data, table + entry * 96, 96))
    flat = [entry * 8 + lane for lane in range(8)]
    assert list(ids[:8]) == [f % 16 for f in flat] and list(ids[16:24]) == [f // 16 for f in flat]
    assert list(ids[32:40]) == [0] * 8


def test_work_item_functions_read_the_implicit_arguments(core):
    # the folder dump's geometry (manifest: work-groups of 16x16 in a 48x32 grid) in the core's own bytes
    for expression in ("get_local_id(0)", "get_local_id(1)", "get_global_id(0)", "get_global_id(1)",
                       "get_local_size(0)", "get_local_size(1)", "get_global_size(1)", "get_num_groups(0)",
                       "threadIdx", "blockDim", "gridDim", "$_workitem_global_id"):
        assert _values(core, expression) == _values(DUMP, expression), expression
    assert set(_values(core, "get_local_size(1)")) == {"16"}  # never 1 (a SIMD thread's row)


def test_the_local_id_table_is_followed(core, tmp_path):
    # swap lanes 0 and 1 in the thread's table entry: their ids follow the table, not a numbering rule
    data = bytearray(core.read_bytes())
    r0, genstbase = _thread_r0_and_genstbase(bytes(data))
    address = genstbase + (struct.unpack_from("<I", r0, 0)[0] & ~0x3F)
    table, = struct.unpack("<Q", _at(bytes(data), address + 72, 8))
    entry = table + r0[8] * 96
    for _, p_type, offset, vaddr, filesz in _loads(bytes(data)):
        if p_type == 1 and vaddr <= entry < vaddr + filesz:
            at = offset + entry - vaddr
            data[at:at + 4] = data[at + 2:at + 4] + data[at:at + 2]
    swapped = tmp_path / "swapped.core"
    swapped.write_bytes(bytes(data))
    before, after = _values(core, "get_local_id(0)"), _values(swapped, "get_local_id(0)")
    assert after[:2] == before[1::-1] and after[2:] == before[2:]
    # such a core cannot become a dump folder (which numbers lanes by its rule) without losing its ids
    with load_state(swapped) as state:
        from aspace_dap.state.save import save_state
        with pytest.raises(StateError, match="local ID table numbers its lanes otherwise"):
            save_state(state, tmp_path / "out")


def test_without_implicit_arguments_sizes_and_ids_are_unavailable(dump, core, tmp_path):
    bare = write_core(dump, tmp_path / "bare.core", implicit_args=False)
    for expression in ("get_local_id(0)", "get_global_id(0)", "get_local_size(0)", "threadIdx.x", "gridDim"):
        values = set(_values(bare, expression))
        assert len(values) == 1 and values.pop().startswith("<unavailable: the core's register description has no "
                                                             "genstbase"), expression
    assert set(_values(bare, "get_group_id(0)")) == {"1"}  # r0.1 holds the work-group's id all the same
    # genstbase given, but the memory it points to not in the core
    data = bytearray(core.read_bytes())
    r0, genstbase = _thread_r0_and_genstbase(bytes(data))
    address = genstbase + (struct.unpack_from("<I", r0, 0)[0] & ~0x3F)
    [header] = [h for h, p_type, _, vaddr, _ in _loads(bytes(data)) if p_type == 1 and vaddr == address]
    struct.pack_into("<I", data, header, 0)  # PT_NULL
    unmapped = tmp_path / "unmapped.core"
    unmapped.write_bytes(bytes(data))
    assert set(_values(unmapped, "get_local_size(0)")) == \
        {f"<unavailable: the core does not map the implicit arguments (genstbase + r0.0 & ~0x3f) at {address:#x} "
         "(1 bytes)>"}
    s = Session.open(str(unmapped))
    rows = lane_rows(s, s.state.waves[0].id)
    assert all("workItem" not in row for row in rows)  # the lanes view shows no invented work-item
    from aspace_dap.state.save import save_state
    with pytest.raises(StateError, match="a dump folder must give each dispatch's grid_size"):
        save_state(s.state, tmp_path / "out")
