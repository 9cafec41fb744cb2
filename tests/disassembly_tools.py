"""The vendors' disassemblers run on their own, as a person would at a shell, for tests to compare with.

Each function runs the tool on a code object file and reads its listing into {ELF address: text};
a missing tool skips the test with the reason printed (pytest -rs) and the package that provides it.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import pytest
from elftools.elf.elffile import ELFFile

from aspace_dap.adapters.base import DisassemblerMissing


def tool_or_skip(disassembler) -> str:
    """The path of a vendor disassembler's tool, or a skip that says what is missing."""
    try:
        found = disassembler.locate()
    except DisassemblerMissing as exc:
        pytest.skip(f"{disassembler.tool} missing: {exc}")
    return found[0] if isinstance(found, tuple) else found


def _elf_bytes(path) -> bytes:
    data = open(path, "rb").read()
    return data[data.find(b"\x7fELF"):]  # ocloc's .dbg puts a header before the ELF


def llvm_objdump_listing(tool: str, path, processor: str) -> dict[int, str]:
    """`llvm-objdump -d --mcpu=P FILE`: each line `\\t<text>  // <ADDR>: <dwords> [<target>]`."""
    out = subprocess.run([tool, "-d", f"--mcpu={processor}", str(path)], capture_output=True, text=True,
                         check=True).stdout
    listing = {}
    for line in out.splitlines():
        m = re.match(r"^\t(.*?)\s*// ([0-9A-F]{12}):((?: [0-9A-F]{8})+)(?: (<.*>))?$", line)
        if m:
            listing[int(m[2], 16)] = m[1] + (f" {m[4]}" if m[4] else "")
    return listing


def nvdisasm_listing(tool: str, path) -> dict[int, str]:
    """`nvdisasm -c FILE`: each line `/*<addr>*/  <text> ;` (nvdisasm lays the sections out itself)."""
    out = subprocess.run([tool, "-c", str(path)], capture_output=True, text=True, check=True).stdout
    listing = {}
    for line in out.splitlines():
        m = re.match(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*$", line)
        if m:
            listing[int(m[1], 16)] = m[2]
    return listing


def nvdisasm_encodings(tool: str, path) -> dict[int, bytes]:
    """`nvdisasm -c -hex FILE`: each instruction's two 64-bit encoding words (`/* 0x... */`), as bytes."""
    out = subprocess.run([tool, "-c", "-hex", str(path)], capture_output=True, text=True, check=True).stdout
    found: dict[int, bytes] = {}
    address = None
    for line in out.splitlines():
        m = re.match(r"^\s+/\*([0-9a-f]{4,})\*/.*/\* (0x[0-9a-f]{16}) \*/\s*$", line)
        if m:
            address = int(m[1], 16)
            found[address] = int(m[2], 16).to_bytes(8, "little")
            continue
        m = re.match(r"^\s+/\* (0x[0-9a-f]{16}) \*/\s*$", line)
        if m and address is not None:
            found[address] += int(m[1], 16).to_bytes(8, "little")
            address = None
    return found


def iga64_listing(tool: str, path, platform: str) -> dict[int, str]:
    """The .text of the device ELF as a raw kernel, `iga64 -d -p=P -Xprint-pc KERNEL`: each line
    `/* [<PC>]  */ <text>`, PCs counted from the section's address."""
    elf = ELFFile(__import__("io").BytesIO(_elf_bytes(path)))
    text = elf.get_section_by_name(".text")
    with tempfile.TemporaryDirectory() as tmp:
        kernel = os.path.join(tmp, "kernel.krn")
        with open(kernel, "wb") as f:
            f.write(text.data())
        out = subprocess.run([tool, "-d", f"-p={platform}", "-Xprint-pc", kernel], capture_output=True, text=True,
                             check=True).stdout
    listing = {}
    for line in out.splitlines():
        m = re.match(r"^/\* \[([0-9A-F]+)\]\s+\*/\s+(.*?)\s*$", line)
        if m:
            listing[text["sh_addr"] + int(m[1], 16)] = m[2]
    return listing


def file_bytes(path, address: int, size: int) -> bytes:
    """`size` bytes at an ELF address of a code object file whose sections have their addresses (AMD,
    Intel), read through its section headers."""
    elf = ELFFile(__import__("io").BytesIO(_elf_bytes(path)))
    for section in elf.iter_sections():
        lo = section["sh_addr"]
        if section["sh_flags"] & 0x4 and lo <= address and address + size <= lo + section["sh_size"]:
            return section.data()[address - lo:address - lo + size]
    raise AssertionError(f"no code section holds 0x{address:x}")


def nvdisasm_inline_chains(tool: str, path) -> dict[int, list[tuple[str, int]]]:
    """`nvdisasm -ndf -c -gi FILE`: each instruction's inline chain, innermost first, as the block of
    `//## File "F", line L [inlined at "G", line M]` lines above it prints it (each level's file and line;
    a block holds until the next one, within a function). Files are normalised (`./a.cu` -> `a.cu`)."""
    import posixpath

    out = subprocess.run([tool, "-ndf", "-c", "-gi", str(path)], capture_output=True, text=True, check=True).stdout
    chains: dict[int, list[tuple[str, int]]] = {}
    block: list[tuple[str, int]] = []
    called_from = None  # the call site the last level named: the next level's own file and line
    current = None
    fresh = False
    for line in out.splitlines():
        m = re.match(r'^\s*//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?', line)
        if m:
            here = (posixpath.normpath(m[1]), int(m[2]))
            if not fresh or called_from is None:
                block, fresh = [], True
            else:
                assert here == called_from, f"nvdisasm's chain breaks at {line!r}"
            block.append(here)
            called_from = (posixpath.normpath(m[3]), int(m[4])) if m[3] else None
            continue
        insn = re.match(r"^\s+/\*([0-9a-f]{4,})\*/", line)
        if insn:
            if fresh:
                assert called_from is None, f"nvdisasm's chain ends inside a call at {insn[1]}"
                current, fresh = list(block), False
            if current is not None:
                chains[int(insn[1], 16)] = current
        elif line.startswith("//-----"):
            current, fresh, called_from = None, False, None
    return chains
