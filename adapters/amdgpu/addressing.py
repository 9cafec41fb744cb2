"""The address operands of AMDGPU memory instructions, from LLVM's assembly syntax.

The operands as llvm-objdump prints them (the AMDGPU ISA manuals' address computations, "Global,
Scratch and Flat Address Space", "Buffer Instructions", "LDS/GDS" and "Scalar Memory Operations"):

- `global_*`: `vaddr` and `saddr`, then `offset:N` (signed). With saddr `off`, vaddr is a VGPR pair, each
  lane's 64-bit address; with an SGPR pair, the address is saddr + vaddr (a 32-bit unsigned VGPR
  offset) + offset. A load writes its vdst before vaddr: `global_load_dword v0, v[2:3], off`; a store
  or an atomic without return starts with vaddr: `global_store_dword v[0:1], v2, off`; an atomic with
  return writes vdst first: `global_atomic_add v0, v[0:1], v2, off glc`.
- `flat_*`: the same without saddr; a flat address is generic (the LDS and private apertures, else
  global memory).
- `scratch_*`: `vaddr` (a VGPR or `off`) and `saddr` (an SGPR or `off`), each a 32-bit offset, plus the
  offset: the lane's offset in its private (scratch) memory.
- `buffer_*` (MUBUF): `vdata, vaddr|off, s[n:n+3], soffset` with `offen` (vaddr is an offset), `idxen`
  (vaddr is an index) and `offset:N`: an offset into the buffer the resource describes, before its
  stride and swizzle; the resource's base is not part of the text.
- `ds_*`: `vaddr` (32-bit) + `offset:N` in the work-group's LDS; `read2`/`write2` access two
  elements, at `offset0:` and `offset1:` elements (64 elements for `st64`).
- `s_load_*`/`s_store_*`/`s_atomic_*`: `sbase` (an SGPR pair) + an offset (an immediate or an SGPR),
  one address for the wave; `s_buffer_*` an offset into a buffer resource.
"""

from __future__ import annotations

import re

from ..addressing import MemoryAccess, Operand, Term, immediate, register_span

# bytes a lane accesses, from the opcode's data type
SIZES = [("dwordx16", 64), ("dwordx8", 32), ("dwordx4", 16), ("dwordx3", 12), ("dwordx2", 8), ("dword", 4),
         ("b512", 64), ("b256", 32), ("b128", 16), ("b96", 12), ("b64", 8), ("b32", 4), ("b16", 2), ("b8", 1),
         ("ubyte", 1), ("sbyte", 1), ("byte", 1), ("ushort", 2), ("sshort", 2), ("short", 2),
         ("u64", 8), ("i64", 8), ("f64", 8), ("x2", 8), ("u32", 4), ("i32", 4), ("f32", 4), ("u16", 2),
         ("i16", 2), ("d16", 2), ("u8", 1), ("i8", 1)]
# instructions in these families that address no memory
NOT_MEMORY = re.compile(r"^(buffer_(wbinvl1|gl[01]_inv|inv|wbl2|wb)|global_(wb|inv|wbinv)$|s_(dcache|icache|scratch)|"
                        r"ds_(swizzle|permute|bpermute|nop|gws|append|consume|ordered_count|bvh_stack|"
                        r"(read|write|load|store)_addtid))")
FAMILIES = ("global", "flat", "scratch", "buffer", "ds", "s")
_VGPRS = re.compile(r"^v(\d+)$|^v\[(\d+):(\d+)\]$")
_SGPRS = re.compile(r"^s(\d+)$|^s\[(\d+):(\d+)\]$|^ttmp(\d+)$|^ttmp\[(\d+):(\d+)\]$")


def _registers(text: str) -> tuple[tuple[str, ...], bool] | None:
    """(register names, per lane) of `v5`, `v[0:1]`, `s4`, `s[4:5]`, `ttmp[4:5]`; None for anything else."""
    m = _VGPRS.match(text)
    if m:
        first, last = (int(m.group(1)),) * 2 if m.group(1) else (int(m.group(2)), int(m.group(3)))
        return register_span("v", first, last - first + 1), True
    m = _SGPRS.match(text)
    if m:
        groups = m.groups()
        prefix = "s" if any(groups[:3]) else "ttmp"
        one, lo, hi = (groups[0], groups[1], groups[2]) if prefix == "s" else (groups[3], groups[4], groups[5])
        first, last = (int(one),) * 2 if one else (int(lo), int(hi))
        return register_span(prefix, first, last - first + 1), False
    return None


def _term(text: str, size: int | None = None) -> Term | None:
    regs = _registers(text)
    if regs is None:
        return None
    names, per_lane = regs
    if size is not None:
        names = names[: size // 4]
    return Term(text, names, per_lane, 4 * len(names))


def _split(rest: str) -> tuple[list[str], dict[str, str]]:
    """The comma-separated operands and the modifiers after the last one (`offset:16`, `glc`, `offen`)."""
    operands = [o.strip() for o in rest.split(",")] if rest.strip() else []
    modifiers: dict[str, str] = {}
    if operands:
        last, *mods = operands[-1].split()
        operands[-1] = last
        for mod in mods:
            key, _, value = mod.partition(":")
            modifiers[key] = value
    return operands, modifiers


def _size(opcode: str) -> int | None:
    tail = opcode.split("_", 2)[-1]
    return next((size for name, size in SIZES if tail.endswith(name) or f"_{name}_" in f"_{tail}_"), None)


def memory_access(text: str) -> MemoryAccess | None:
    """The address operands of one AMDGPU instruction; None when it addresses no memory."""
    opcode, _, rest = text.strip().partition(" ")
    family = opcode.split("_", 1)[0]
    if not re.fullmatch(r"[a-z][a-z0-9_]*", opcode) or family not in FAMILIES or NOT_MEMORY.match(opcode):
        return None
    if family == "s" and not re.match(r"s_(load|store|buffer_load|buffer_store|atomic|buffer_atomic)_", opcode):
        return None
    operands, modifiers = _split(rest)
    access = MemoryAccess(opcode)
    size = _size(opcode)
    offset = immediate(modifiers.get("offset", "0")) or 0
    loads = "load" in opcode or "read" in opcode
    try:
        if family in ("global", "flat"):
            _flat(access, family, operands, offset, size, loads)
        elif family == "scratch":
            _scratch(access, operands, offset, size, loads)
        elif family == "buffer":
            _buffer(access, operands, modifiers, offset, size)
        elif family == "ds":
            _ds(access, opcode, operands, modifiers, size, loads or "_rtn" in opcode)
        else:
            _scalar(access, opcode, operands, offset, size)
    except IndexError:
        access.notes.append(f"{opcode}: fewer operands than its form has; not decoded")
    return access


def _flat(access: MemoryAccess, family: str, operands: list[str], offset: int, size, loads: bool) -> None:
    saddr = operands[-1] if family == "global" else "off"
    registers = operands[:-1] if family == "global" else operands
    vaddr = registers[-1] if loads else registers[-2]
    space = "global" if family == "global" else "generic"
    if saddr == "off":
        term = _term(vaddr, 8)
        if term is None or len(term.registers) != 2:
            access.notes.append(f"{access.opcode}: the address {vaddr} is not a VGPR pair; not decoded")
            return
        access.operands.append(Operand(f"{vaddr}" + (f" offset:{offset}" if offset else ""), space, (term,),
                                       offset, 64, size))
        return
    base, index = _term(saddr), _term(vaddr, 4)
    if base is None or index is None:
        access.notes.append(f"{access.opcode}: cannot read {vaddr}, {saddr}; not decoded")
        return
    access.operands.append(Operand(f"{vaddr}, {saddr}" + (f" offset:{offset}" if offset else ""), space,
                                   (base, index), offset, 64, size))


def _scratch(access: MemoryAccess, operands: list[str], offset: int, size, loads: bool) -> None:
    saddr, registers = operands[-1], operands[:-1]
    vaddr = registers[-1] if loads else registers[-2]
    terms = tuple(t for t in (_term(vaddr, 4) if vaddr != "off" else None,
                              _term(saddr, 4) if saddr != "off" else None) if t is not None)
    shown = f"{vaddr}, {saddr}" + (f" offset:{offset}" if offset else "")
    access.operands.append(Operand(shown, "private_lane", terms, offset, 32, size))


def _buffer(access: MemoryAccess, operands: list[str], modifiers: dict, offset: int, size) -> None:
    vaddr, resource, soffset = operands[1], operands[2], operands[3]
    if "idxen" in modifiers:
        access.notes.append(f"{access.opcode}: an indexed buffer access (idxen) scales by the resource's stride; "
                            "not decoded")
        return
    terms = []
    if "offen" in modifiers:
        term = _term(vaddr, 4)
        if term is None:
            access.notes.append(f"{access.opcode}: cannot read the offset {vaddr}; not decoded")
            return
        terms.append(term)
    constant = immediate(soffset)
    if constant is not None:
        offset += constant
    elif soffset not in ("off", "null"):
        term = _term(soffset, 4)
        if term is None:
            access.notes.append(f"{access.opcode}: cannot read soffset {soffset}; not decoded")
            return
        terms.append(term)
    shown = f"{vaddr}, {resource}, {soffset}" + (" offen" if "offen" in modifiers else "")
    access.operands.append(Operand(shown + (f" offset:{offset}" if offset else ""), "buffer", tuple(terms), offset,
                                   32, size, base=f"the buffer resource {resource} (its base, stride and swizzle "
                                                  "apply on top)"))


def _ds(access: MemoryAccess, opcode: str, operands: list[str], modifiers: dict, size, returns: bool) -> None:
    vaddr = operands[1] if returns else operands[0]
    term = _term(vaddr, 4)
    if term is None:
        access.notes.append(f"{opcode}: cannot read the address {vaddr}; not decoded")
        return
    if "read2" in opcode or "write2" in opcode or "load_2addr" in opcode or "store_2addr" in opcode:
        element = (size or 4) * (64 if "st64" in opcode else 1)
        for key in ("offset0", "offset1"):
            step = immediate(modifiers.get(key, "0")) or 0
            access.operands.append(Operand(f"{vaddr} {key}:{step}", "local", (term,), step * element, 32, size))
        return
    offset = immediate(modifiers.get("offset", "0")) or 0
    shown = vaddr + (f" offset:{offset}" if offset else "")
    access.operands.append(Operand(shown, "local", (term,), offset, 32, size))


def _scalar(access: MemoryAccess, opcode: str, operands: list[str], offset: int, size) -> None:
    access.uniform = True
    base, offset_text = operands[1], operands[2] if len(operands) > 2 else "0"
    constant = immediate(offset_text)
    shown = offset_text + (f" offset:{offset}" if offset else "")
    offset += constant or 0
    if "buffer" in opcode:
        terms = () if constant is not None else tuple(t for t in (_term(offset_text, 4),) if t is not None)
        access.operands.append(Operand(shown, "buffer", terms, offset, 32, size, base=f"the buffer resource {base}"))
        return
    sbase = _term(base, 8)
    if sbase is None or len(sbase.registers) != 2:
        access.notes.append(f"{opcode}: the base {base} is not an SGPR pair; not decoded")
        return
    terms = (sbase,) if constant is not None else tuple(t for t in (sbase, _term(offset_text, 4)) if t is not None)
    access.operands.append(Operand(f"{base}, {shown}", "global", terms, offset, 64, size))
