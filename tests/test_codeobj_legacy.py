"""AMD binaries of other eras: code object v2 kernels (STT_AMDGPU_HSA_KERNEL symbols at their 256-byte
amd_kernel_code_t, the code after it) get their names, and a legacy AMD OpenCL binary (e_machine 0xaf5b,
EM_HSAIL_64) is refused naming its machine."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from aspace_dap.codeobj import load_code_objects
from aspace_dap.errors import CodeObjectError

V2_KERNEL = """\t.text
\t.amdgpu_hsa_kernel scatter_v2
scatter_v2:
\t.amd_kernel_code_t
\t.end_amd_kernel_code_t
\ts_mov_b32 s0, 0
\ts_mov_b32 s1, 1
\ts_endpgm
.Lend:
\t.size scatter_v2, .Lend-scatter_v2
"""


def _tool(*names: str) -> str:
    for name in names:
        if shutil.which(name):
            return name
    pytest.skip(f"{names[0]} not installed: apt-get install {'llvm-15' if 'mc' in names[0] else 'lld-19'} "
                "(LLVM 15 is the last to assemble code object v2)")


def test_code_object_v2_kernels_are_named_after_their_header(tmp_path):
    mc, ld = _tool("llvm-mc-15"), _tool("ld.lld-19", "ld.lld")
    (tmp_path / "k.s").write_text(V2_KERNEL)
    subprocess.run([mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx803", "--amdhsa-code-object-version=2",
                    "-filetype=obj", "k.s", "-o", "k.o"], cwd=tmp_path, check=True)
    subprocess.run([ld, "-shared", "k.o", "-o", "k.co"], cwd=tmp_path, check=True)
    readelf = shutil.which("llvm-readelf-19") or _tool("llvm-readelf")
    table = subprocess.run([readelf, "-s", "k.co"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    (row,) = [line.split() for line in table.splitlines() if line.endswith(" scatter_v2")]
    header, size = int(row[1], 16), int(row[2])
    assert row[3] == "AMDGPU_HSA_KERNEL" and size == 256 + 12  # the header, then three 4-byte instructions
    data = (tmp_path / "k.co").read_bytes()
    (co,) = load_code_objects(data, name="k.co")
    assert co.code_object_version == 2
    # amd_kernel_code_t's kernel_code_entry_byte_offset (i64 at byte 16) says where the code starts
    offset = struct.unpack_from("<q", co.read_memory(header, 256), 16)[0]
    assert offset == 256
    sym = co.symbols["scatter_v2"]
    assert (sym.value, sym.size, sym.type) == (header + 256, 12, "FUNC")
    for pc in (header + 256, header + 264):
        assert co.symbol_at(pc).name == co.function_symbol_at(pc).name == "scatter_v2"
    assert co.symbol_at(header + 8) is None  # inside the header: no code


def test_a_legacy_amd_opencl_binary_is_refused_by_its_machine():
    header = bytearray(64)
    header[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HHI", header, 16, 2, 0xAF5B, 1)  # ET_EXEC, EM_HSAIL_64, EV_CURRENT
    struct.pack_into("<H", header, 52, 64)  # e_ehsize
    with pytest.raises(CodeObjectError) as err:
        load_code_objects(bytes(header), name="kernel.bin")
    message = str(err.value)
    assert "legacy AMD OpenCL binary" in message and "0xaf5b" in message and "EM_HSAIL_64" in message
    assert "hip_fatbin" not in message
