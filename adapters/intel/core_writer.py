"""Writes Intel GPU cores from a state, as gdb-oneapi's gcore lays them out."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.model import GpuState
from .core import (CORE_NOTE, EHDR, ELF_MAGIC, EM_INTELGT, ET_CORE, INTEL_VENDOR_ID, NHDR, NT_FILE, NT_PRPSINFO,
                   NT_PRSTATUS, NT_SIGINFO, PHDR, PRSTATUS_HEAD, PT_LOAD, PT_NOTE, SIGINFO, SIGINFO_SIZE, SIGSEGV)


def _xml(layout: list[tuple[str, int]]) -> str:
    grf = [(n, s) for n, s in layout if n[:1] == "r" and n[1:].isdigit()]
    other = [(n, s) for n, s in layout if (n, s) not in grf]
    parts = ['<?xml version="1.0"?>', "<!DOCTYPE target SYSTEM \"gdb-target.dtd\">", "<target>",
             "<architecture>intelgt</architecture>"]
    regnum = 0
    for feature, regs in (("org.gnu.gdb.intelgt.debug", other), ("org.gnu.gdb.intelgt.grf", grf)):
        if not regs:
            continue
        parts.append(f'<feature name="{feature}">')
        for name, size in regs:
            kind = f' type="uint{size * 8}"' if size in (4, 8) else ""
            parts.append(f'<reg name="{name}" bitsize="{size * 8}"{kind} regnum="{regnum}"/>')
            regnum += 1
        parts.append("</feature>")
    parts.append("</target>")
    return "".join(parts)


def _note(kind: int, desc: bytes) -> bytes:
    name = CORE_NOTE + b"\0"
    return (NHDR.pack(len(name), len(desc), kind) + name.ljust(len(name) + 3 & ~3, b"\0")
            + desc.ljust(len(desc) + 3 & ~3, b"\0"))


def write_core(state: GpuState, path: str | os.PathLike, *, fault_address: int | None = None,
               device_id: int = 0) -> Path:
    """An Intel GPU core of a dump's waves, memory and code objects. The register description lists
    exactly the registers of the waves' layout (one layout for every wave), in its order, so a
    register the dump lacks stays absent. SLM is not written (the format has none). With
    `fault_address`, the focus wave stopped on SIGSEGV at that address."""
    if state.target.vendor != "intel":
        raise StateError(f"an Intel core holds Intel waves, not {state.target.vendor}", "target.vendor")
    waves = state.waves
    layouts = {tuple(w.registers.layout) for w in waves}
    if len(layouts) != 1:
        raise StateError("the waves have different register layouts; a core has one description", "waves")
    layout = list(next(iter(layouts)))
    focus = state.focus.wave if state.focus else waves[0].id
    notes = _note(NT_PRPSINFO, struct.pack("<II", device_id, INTEL_VENDOR_ID) + b"GPU\0"
                  + _xml(layout).encode() + b"\0")
    for wave in waves:
        regs = b""
        for name, size in layout:
            data, valid = wave.registers.raw(name)
            if not valid.all():
                raise StateError(f"register {name} is not fully known; a core stores every byte", wave.path)
            regs += data.tobytes()
        faulted = fault_address is not None and wave.id == focus
        signal = SIGSEGV if faulted else 0
        notes += _note(NT_PRSTATUS, PRSTATUS_HEAD.pack(wave.id, signal, 0) + regs)
        siginfo = SIGINFO.pack(signal, 0, 1 if faulted else 0, 0, fault_address or 0)
        notes += _note(NT_SIGINFO, siginfo.ljust(SIGINFO_SIZE, b"\0"))
    images = []
    for i, ref in enumerate(state.code_objects):
        data = Path(ref.path).read_bytes()
        start = data.find(ELF_MAGIC)
        if start < 0:
            raise StateError("not an ELF file", f"code_objects[{i}]")
        images.append(((i + 1) << 50, data[start:], ref.load_address, ref.manifest_path or Path(ref.path).name))
    entries = b"".join(struct.pack("<QQQ", addr, addr + len(data), bias) for addr, data, bias, _ in images)
    names = b"".join(name.encode() + b"\0" for *_, name in images)
    notes += _note(NT_FILE, struct.pack("<QQ", len(images), 1) + entries + names)
    loads: list[tuple[int, bytes, int]] = [(addr, data, len(data)) for addr, data, _, _ in images]
    global_memory = state.memory.get("global")
    for region in (global_memory.regions if global_memory is not None else []):
        data, valid = global_memory.read(region.address, region.size)
        known = int(np.argmin(valid)) if not valid.all() else len(valid)  # the known prefix
        loads.append((region.address, data[:known].tobytes(), region.size))
    phnum = 1 + len(loads)
    at = EHDR.size + phnum * PHDR.size
    headers = [PHDR.pack(PT_NOTE, 0, at, 0, 0, len(notes), 0, 4)]
    body = notes
    for vaddr, data, memsz in loads:
        offset = at + len(body)
        headers.append(PHDR.pack(PT_LOAD, 6, offset, vaddr, 0, len(data), memsz, 1))
        body += data
    ident = ELF_MAGIC + bytes([2, 1, 1, 0]) + bytes(8)
    header = EHDR.pack(ident, ET_CORE, EM_INTELGT, 1, 0, EHDR.size, 0, 0, EHDR.size, PHDR.size, phnum, 64, 0, 0)
    out = Path(path)
    out.write_bytes(header + b"".join(headers) + body)
    return out

