"""What a cubin adds to plain ELF + DWARF: relocation of its debug sections and the PTX→SASS register map.

nvcc writes cubins unrelocated: every function section sits at address 0 and
the DWARF names functions only through R_CUDA_64 relocations. cuda-gdb (and a
CUDA core dump's relocated image) lays the code sections out one after the
other and applies those relocations; `relocate_cubin` does the same so the
DWARF index sees distinct, final addresses.

`.nv_debug_info_reg_sass` says where each PTX virtual register (`%r1`,
`%rd4`) lives at a PC: repeated blocks of {function name NUL, u32 count,
count × {u32 piece, register name NUL, u32 sass location, u32 start, u32
end}}, ranges relative to the function start. A location's top byte is its
class (5 = general register R, 2 = predicate P, 0xb = uniform register UR,
6 = local memory address, 7 = offset from the stack register R1), the low 24
bits its index or offset. A 64-bit register has one entry per 32-bit piece.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from aspace_dap.codeobj.sections import Section, section_table, body as section_body
from aspace_dap.errors import CodeObjectError

EM_CUDA = 190
R_CUDA_32 = 1
R_CUDA_64 = 2

SHT_SYMTAB = 2
SHT_RELA = 4
SHT_REL = 9
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4

# SASS location classes
LOC_PRED = 2
LOC_HALF = 4
LOC_REG = 5
LOC_LOCAL = 6
LOC_STACK = 7
LOC_UREG = 0xB

STACK_REGISTER = 1  # R1 holds the local-memory stack pointer


class _Elf64:
    """A minimal little-endian ELF64 section-table view over bytes, bounds-checked."""

    def __init__(self, data: bytes, label: str):
        self.data = data
        self.label = label
        self.sections: list[Section] = section_table(data, label)
        self.e_type, self.e_machine = struct.unpack_from("<HH", data, 16)

    def body(self, sec: Section) -> bytes:
        return section_body(self.data, sec.offset, sec.size, self.label, sec.name or f"section {sec.index}")

    def by_name(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


def _is_code(sec: Section) -> bool:
    # only code moves: shared, constant and local sections keep their window offsets
    return bool(sec.flags & SHF_ALLOC) and bool(sec.flags & SHF_EXECINSTR)


def relocate_cubin(data: bytes, label: str = "cubin", warnings: list[str] | None = None) -> bytes:
    """The cubin with its code sections laid out from address 0 and its debug relocations applied.

    An image that is already laid out (a code section with a non-zero
    address, as in a CUDA core dump's relocated image) is returned unchanged.
    What had to be read leniently is said in `warnings`, when given.
    """
    elf = _Elf64(bytes(data), label)
    if elf.e_machine != EM_CUDA:
        raise CodeObjectError(f"{label}: not a CUDA ELF (e_machine {elf.e_machine})")
    loaded = [s for s in elf.sections if _is_code(s)]
    if any(s.addr for s in loaded):
        return bytes(data)
    out = bytearray(data)
    addresses: dict[int, int] = {}
    cursor = 0
    for sec in loaded:
        align = max(sec.align, 1)
        cursor = (cursor + align - 1) // align * align
        addresses[sec.index] = cursor
        struct.pack_into("<Q", out, sec.header_at + 16, cursor)  # sh_addr
        cursor += sec.size
    symbols = _relocate_symbols(elf, out, addresses)
    for rela in elf.sections:
        if rela.type not in (SHT_RELA, SHT_REL) or not 0 <= rela.info < len(elf.sections):
            continue
        target = elf.sections[rela.info]
        if target.flags & SHF_ALLOC:
            continue  # instruction fixups: the debugger only needs the debug sections
        _apply(elf, out, rela, target, symbols, warnings)
    return bytes(out)


def _relocate_symbols(elf: _Elf64, out: bytearray, addresses: dict[int, int]) -> dict[int, list[int]]:
    """Move every symbol defined in a loaded section by its section's address; values by symbol table."""
    values: dict[int, list[int]] = {}
    for symtab in (s for s in elf.sections if s.type == SHT_SYMTAB):
        if symtab.entsize != 24:
            raise CodeObjectError(f"{elf.label}: symbol table entries of {symtab.entsize} bytes")
        body = elf.body(symtab)
        vals = []
        for n in range(len(body) // 24):
            _, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", body, n * 24)
            if shndx in addresses:
                value += addresses[shndx]
                struct.pack_into("<Q", out, symtab.offset + n * 24 + 8, value)
            vals.append(value)
        values[symtab.index] = vals
    return values


def _apply(elf: _Elf64, out: bytearray, rela: Section, target: Section,
           symbols: dict[int, list[int]], warnings: list[str] | None) -> None:
    width = 24 if rela.type == SHT_RELA else 16
    if rela.entsize not in (0, width):
        raise CodeObjectError(f"{elf.label}: {rela.name} entries of {rela.entsize} bytes")
    body = elf.body(rela)
    table = symbols.get(rela.link)
    if table is None and len(symbols) == 1 and body:
        # some nvcc releases (CUDA 12.1) leave a debug relocation section's sh_link naming no symbol
        # table; a cubin has one, which llvm-dwarfdump and cuda-gdb use
        (index, table), = symbols.items()
        if warnings is not None:
            warnings.append(f"{elf.label}: {rela.name}'s sh_link ({rela.link}) names no symbol table; its "
                            f"relocations were read against the file's one symbol table (section {index})")
    table = table or []
    for n in range(len(body) // width):
        if rela.type == SHT_RELA:
            offset, info, addend = struct.unpack_from("<QQq", body, n * width)
        else:
            offset, info = struct.unpack_from("<QQ", body, n * width)
            addend = None
        sym, rtype = info >> 32, info & 0xFFFFFFFF
        if sym >= len(table):
            raise CodeObjectError(f"{elf.label}: {rela.name} entry {n} names symbol {sym} outside the table")
        size = {R_CUDA_64: 8, R_CUDA_32: 4}.get(rtype)
        if size is None:
            raise CodeObjectError(f"{elf.label}: {rela.name} entry {n}: unsupported relocation type {rtype}")
        if offset + size > target.size:
            raise CodeObjectError(f"{elf.label}: {rela.name} entry {n} patches outside {target.name}")
        at = target.offset + offset
        if addend is None:
            addend = int.from_bytes(out[at:at + size], "little")
        value = (table[sym] + addend) & ((1 << (8 * size)) - 1)
        out[at:at + size] = value.to_bytes(size, "little")


# ---------------------------------------------------------------------- register map


@dataclass(frozen=True)
class SassPlace:
    """Where one 32-bit piece of a PTX register is, from `start` to `end` (function offsets)."""

    piece: int
    kind: int  # LOC_* class
    index: int  # register number, or local offset for LOC_LOCAL / LOC_STACK
    start: int
    end: int


class RegisterMap:
    """PTX register → SASS places, per function."""

    def __init__(self, functions: dict[str, dict[str, list[SassPlace]]]):
        self.functions = functions

    @classmethod
    def parse(cls, data: bytes, label: str = ".nv_debug_info_reg_sass") -> "RegisterMap":
        functions: dict[str, dict[str, list[SassPlace]]] = {}
        pos = 0

        def cstring() -> str:
            nonlocal pos
            end = data.find(b"\0", pos)
            if end < 0:
                raise CodeObjectError(f"{label}: unterminated name at {pos:#x}")
            text = data[pos:end].decode("latin-1")
            pos = end + 1
            return text

        def u32s(n: int) -> tuple[int, ...]:
            nonlocal pos
            if pos + 4 * n > len(data):
                raise CodeObjectError(f"{label}: truncated entry at {pos:#x}")
            vals = struct.unpack_from(f"<{n}I", data, pos)
            pos += 4 * n
            return vals

        while pos < len(data):
            function = cstring()
            (count,) = u32s(1)
            regs = functions.setdefault(function, {})
            for _ in range(count):
                (piece,) = u32s(1)
                name = cstring()
                loc, start, end = u32s(3)
                name = name if name.startswith("%") else "%" + name
                regs.setdefault(name, []).append(SassPlace(piece, loc >> 24, loc & 0xFFFFFF, start, end))
        return cls(functions)

    def places(self, function: str, register: str, offset: int) -> list[SassPlace] | None:
        """One place per piece for `register` at `offset` into `function`; None if it lives nowhere there."""
        entries = self.functions.get(function, {}).get(register)
        if not entries:
            return None
        chosen: dict[int, SassPlace] = {}
        for place in entries:
            if place.start <= offset < place.end and place.piece not in chosen:
                chosen[place.piece] = place
        if not chosen:
            return None
        return [chosen[k] for k in sorted(chosen)]


def ptx_register_name(regno: int) -> str | None:
    """A DW_OP_regx operand holding a packed ASCII PTX register name (`0x257231` → `%r1`), else None."""
    if regno <= 0xFF:
        return None
    raw = regno.to_bytes((regno.bit_length() + 7) // 8, "big")
    if raw[:1] != b"%" or not all(0x21 <= b < 0x7F for b in raw):
        return None
    return raw.decode("ascii")


def ptx_register_number(name: str) -> int:
    return int.from_bytes(name.encode("ascii"), "big")


def ptx_register_size(name: str) -> int:
    """Bytes of a PTX register by its type prefix (%rd/%fd 64-bit, %rs/%h 16-bit, %p predicate)."""
    body = name.lstrip("%")
    prefix = body.rstrip("0123456789")
    if prefix in ("rd", "fd", "rl"):
        return 8
    if prefix in ("rs", "h", "hh"):
        return 2
    if prefix == "p":
        return 1
    return 4


@dataclass(frozen=True)
class FunctionRange:
    name: str
    start: int
    end: int


class CubinLayout:
    """Function address ranges of a (relocated) cubin, for mapping a PC to a function offset."""

    def __init__(self, functions: list[FunctionRange]):
        self.functions = sorted(functions, key=lambda f: f.start)
        self._starts = [f.start for f in self.functions]

    def function_at(self, pc: int) -> FunctionRange | None:
        # optimised builds nest internal helpers inside the kernel's range: the innermost wins
        i = bisect.bisect_right(self._starts, pc) - 1
        while i >= 0:
            if pc < self.functions[i].end:
                return self.functions[i]
            i -= 1
        return None


def read_cubin_debug(data: bytes, label: str = "cubin") -> tuple[CubinLayout, RegisterMap]:
    """The function layout and register map of a relocated cubin."""
    elf = _Elf64(bytes(data), label)
    functions = []
    for symtab in (s for s in elf.sections if s.type == SHT_SYMTAB):
        names = elf.body(elf.sections[symtab.link]) if 0 <= symtab.link < len(elf.sections) else b""
        body = elf.body(symtab)
        for n in range(len(body) // 24):
            name_at, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", body, n * 24)
            if info & 0xF != 2 or not size:  # STT_FUNC with a size
                continue
            end = names.find(b"\0", name_at)
            functions.append(FunctionRange(names[name_at:end].decode("latin-1"), value, value + size))
    sec = elf.by_name(".nv_debug_info_reg_sass")
    regmap = RegisterMap.parse(elf.body(sec)) if sec is not None else RegisterMap({})
    return CubinLayout(functions), regmap


# ---------------------------------------------------------------------- .nv.info attributes

# `.nv.info` (per cubin) and `.nv.info.<kernel>` hold ptxas's attributes: records of
# {u8 format, u8 attribute, u16 value-or-size}, the EIFMT_SVAL format (4) followed by
# `size` bytes. Only the attributes that say where a kernel's state lives are read.
EIFMT_SVAL = 4
EIATTR_PARAM_CBANK = 0x0A  # {u32 symbol of .nv.constant0.<kernel>, u16 offset, u16 size}
EIATTR_KPARAM_INFO = 0x17  # {u32 index, u16 ordinal, u16 offset, u32 flags: size in bits 18-31}
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_REGCOUNT = 0x2F  # {u32 function symbol, u32 registers}


@dataclass(frozen=True)
class KernelParameter:
    ordinal: int
    offset: int  # from the start of the parameters
    size: int


@dataclass(frozen=True)
class KernelParameters:
    """Where a kernel's parameters sit: constant bank 0 from `offset` (c[0x0][offset]), `size` bytes."""

    offset: int
    size: int
    parameters: tuple[KernelParameter, ...]


def _attributes(elf: _Elf64, sec: Section) -> list[tuple[int, int, bytes]]:
    """(attribute, value, payload) of every record; value is the SVAL size or the inline u16."""
    body = elf.body(sec)
    out, pos = [], 0
    while pos < len(body):
        if pos + 4 > len(body):
            raise CodeObjectError(f"{elf.label}: {sec.name}: truncated attribute at {pos:#x}")
        fmt, attribute, value = struct.unpack_from("<BBH", body, pos)
        pos += 4
        payload = b""
        if fmt == EIFMT_SVAL:
            if pos + value > len(body):
                raise CodeObjectError(f"{elf.label}: {sec.name}: attribute {attribute:#x} runs past the section")
            payload = body[pos:pos + value]
            pos += value
        out.append((attribute, value, payload))
    return out


def _symbol_names(elf: _Elf64) -> list[str]:
    symtab = next((s for s in elf.sections if s.type == SHT_SYMTAB), None)
    if symtab is None or not 0 <= symtab.link < len(elf.sections):
        return []
    names = elf.body(elf.sections[symtab.link])
    body = elf.body(symtab)
    out = []
    for n in range(len(body) // 24):
        name_at = struct.unpack_from("<I", body, n * 24)[0]
        end = names.find(b"\0", name_at)
        out.append(names[name_at:end].decode("latin-1") if 0 <= name_at < len(names) and end >= 0 else "")
    return out


def kernel_parameters(data: bytes, kernel: str, label: str = "cubin") -> KernelParameters | None:
    """The kernel's parameter layout from `.nv.info.<kernel>`; None when ptxas wrote none."""
    elf = _Elf64(bytes(data), label)
    sec = elf.by_name(f".nv.info.{kernel}")
    if sec is None:
        return None
    bank, params = None, []
    for attribute, _, payload in _attributes(elf, sec):
        if attribute == EIATTR_PARAM_CBANK and len(payload) >= 8:
            _, offset, size = struct.unpack_from("<IHH", payload)
            bank = (offset, size)
        elif attribute == EIATTR_KPARAM_INFO and len(payload) >= 12:
            _, ordinal, offset, flags = struct.unpack_from("<IHHI", payload)
            params.append(KernelParameter(ordinal, offset, flags >> 18))
    if bank is None:
        return None
    return KernelParameters(bank[0], bank[1], tuple(sorted(params, key=lambda p: p.ordinal)))


def register_counts(data: bytes, label: str = "cubin") -> dict[str, int]:
    """Registers each function uses (EIATTR_REGCOUNT in `.nv.info`), by function name."""
    elf = _Elf64(bytes(data), label)
    sec = elf.by_name(".nv.info")
    if sec is None:
        return {}
    names = _symbol_names(elf)
    out = {}
    for attribute, _, payload in _attributes(elf, sec):
        if attribute == EIATTR_REGCOUNT and len(payload) >= 8:
            symbol, count = struct.unpack_from("<II", payload)
            out[names[symbol] if symbol < len(names) else f"symbol {symbol}"] = count
    return out
