"""The register description (GDB target description XML) an Intel GPU core carries in NT_PRPSINFO:
read into a register layout, and written the way gdb-oneapi writes it.

Reading (gdb: tdesc_use_registers numbers the registers of every <feature> in document order;
intelgt_iterate_over_regset_sections lays the thread's register block out in that order, each
register `bitsize / 8` bytes): every <reg> of every <feature>, in document order. Names and sizes
come from the XML, never from a table; a `regnum` attribute does not reorder them.

Writing: gdbserver's create_tdesc (gdbserver/intelgt-ze-low.cc) makes one feature per Level Zero
register set, in the order Level Zero lists them (compute-runtime's getRegisterSetProperties: GRF,
address, flag, ce, state, control, thread dependency, accumulator, mme, sp, state base addresses,
debug, flow control); gdb prints it with print_xml_feature (gdbsupport/tdesc.cc). Two dialects:

- "current" (gdb-oneapi 2024.1 on, master): a <device vendor-id= target-id= .../> element, vector
  types `vectorNxM` of uintM elements, groups grf / arf / virtual, `save-restore="no"` on the
  read-only sets (ce, tdr, sba), `expedited="yes"` on r0, the last GRF, ce, sr0, cr0, genstbase
  and isabase.
- "2023" (2023.1 to 2024.0.1): a <device_info> list of <device_attr name= value=/>, one
  `uintN` type per register, the set's name in capitals as its group.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from aspace_dap.errors import StateError

MAX_REGISTERS = 1 << 16
MAX_REGISTER_BYTES = 1 << 16     # one register (the widest GRF is 64 bytes)
MAX_THREAD_BYTES = 1 << 22       # one thread's register block
INTEL_VENDOR_ID = 0x8086
FEATURE_PREFIX = "org.gnu.gdb.intelgt."
# gdbserver's state base address registers, in the order of the SBA register set (create_tdesc)
SBA_REGISTERS = ("genstbase", "sustbase", "dynbase", "iobase", "isabase", "blsustbase", "blsastbase", "btbase",
                 "scrbase", "scrbase2")


@dataclass(frozen=True)
class RegisterSet:
    feature: str          # after FEATURE_PREFIX
    pattern: str          # the register names of the set
    element_bits: int     # the element of its vector type (0: the register's own width)
    group: str            # gdb-oneapi 2024.1 on
    writable: bool        # Level Zero's typeToRegsetFlags


# Level Zero's order of register sets (the order create_tdesc adds them as features)
REGISTER_SETS = (
    RegisterSet("grf", r"r\d+", 32, "grf", True),
    RegisterSet("addr", r"a\d+", 16, "arf", True),
    RegisterSet("flag", r"f\d+", 16, "arf", True),
    RegisterSet("ce", r"ce", 32, "arf", False),
    RegisterSet("sr", r"sr\d+", 32, "arf", True),
    RegisterSet("cr", r"cr\d+", 32, "arf", True),
    RegisterSet("tdr", r"tdr\d+", 16, "arf", False),
    RegisterSet("acc", r"acc\d+", 32, "arf", True),
    RegisterSet("mme", r"mme\d+", 32, "arf", True),
    RegisterSet("sp", r"sp", 0, "arf", True),
    RegisterSet("sba", "|".join(SBA_REGISTERS), 0, "virtual", False),
    RegisterSet("dbg", r"dbg\d+", 32, "arf", True),
    RegisterSet("fc", r"fc\d+", 32, "arf", True),
)
EXPEDITED = ("ce", "sr0", "cr0", "genstbase", "isabase")


def register_set_of(name: str) -> RegisterSet | None:
    for regset in REGISTER_SETS:
        if re.fullmatch(regset.pattern, name):
            return regset
    return None


@dataclass
class Description:
    registers: list[tuple[str, int]]                      # (name, bytes) in the thread block's order
    device: dict[str, str] = field(default_factory=dict)  # the <device> / <device_info> attributes

    @property
    def device_id(self) -> int | None:
        text = self.device.get("target-id") or self.device.get("target_id")
        try:
            return int(text, 0) if text else None
        except ValueError:
            return None


def parse(xml: str, where: str = "NT_PRPSINFO") -> Description:
    """The register layout of a target description: every register of every feature, in document order."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise StateError(f"the register description is not valid XML: {exc}", where) from None
    if root.tag != "target":
        raise StateError(f"the register description's root element is <{root.tag}>, not <target>", where)
    device: dict[str, str] = {}
    for element in root.iter("device"):
        device.update(element.attrib)
    for element in root.iter("device_attr"):
        if element.get("name"):
            device[element.get("name")] = element.get("value") or ""
    registers: list[tuple[str, int]] = []
    seen: set[str] = set()
    total = 0
    for feature in root.iter("feature"):
        for order, reg in enumerate(feature.iter("reg")):
            name, bits = reg.get("name"), reg.get("bitsize")
            what = f"register {name or order} of feature {feature.get('name') or '(no name)'}"
            if not name:
                raise StateError(f"{what} has no name", where)
            if bits is None or not bits.isdigit() or int(bits) == 0 or int(bits) % 8 \
                    or int(bits) // 8 > MAX_REGISTER_BYTES:
                raise StateError(f"{what} has bitsize {bits!r}, not a whole number of bytes up to "
                                 f"{MAX_REGISTER_BYTES}", where)
            if name in seen:
                raise StateError(f"the register description names register {name} twice", where)
            seen.add(name)
            registers.append((name, int(bits) // 8))
            total += int(bits) // 8
            if len(registers) > MAX_REGISTERS or total > MAX_THREAD_BYTES:
                raise StateError(f"more than {MAX_REGISTERS} registers or {MAX_THREAD_BYTES} bytes per thread",
                                 where)
    if not registers:
        raise StateError("the register description names no register", where)
    return Description(registers, device)


# ---------------------------------------------------------------------- writing


def _ordered(registers: list[tuple[str, int]]) -> list[tuple[RegisterSet, list[tuple[str, int]]]]:
    """The registers grouped by register set, sets in Level Zero's order, registers by number."""
    by_set: dict[str, list[tuple[str, int]]] = {}
    for name, size in registers:
        regset = register_set_of(name)
        if regset is None:
            raise StateError(f"register {name} belongs to no register set of gdb-oneapi's description", name)
        by_set.setdefault(regset.feature, []).append((name, size))

    def key(item):
        name = item[0]
        if name in SBA_REGISTERS:
            return SBA_REGISTERS.index(name)
        digits = re.search(r"\d+$", name)
        return int(digits.group()) if digits else 0

    return [(s, sorted(by_set[s.feature], key=key)) for s in REGISTER_SETS if s.feature in by_set]


def _vector_type(regset: RegisterSet, bits: int) -> str:
    element = regset.element_bits or bits
    return f"uint{bits}" if element == bits else f"vector{bits // element}x{element}"


def describe(registers: list[tuple[str, int]], *, dialect: str = "current", device_id: int = 0,
             device_name: str = "-") -> str:
    """The XML gdb-oneapi writes into NT_PRPSINFO for a thread block of these registers (laid out in
    the order the XML lists them: `layout_of(describe(...))`)."""
    if dialect not in ("current", "2023"):
        raise ValueError(f"unknown description dialect {dialect!r}")
    lines: list[str] = []
    depth = 0

    def add(text: str) -> None:
        lines.append(" " * depth + text)

    add('<?xml version="1.0"?>')
    add('<!DOCTYPE target SYSTEM "gdb-target.dtd">')
    add("<target>")
    depth += 2
    add("<architecture>intelgt</architecture>")
    add("<osabi>GNU/Linux</osabi>")
    name = _xml_text(device_name)
    if dialect == "current":
        add(f'<device vendor-id="0x{INTEL_VENDOR_ID:04x}" target-id="0x{device_id:04x}" family="-" model="-" '
            f'name="{name}" pci-slot="-" uuid="-"/>')
    else:
        add("<device_info>")
        for attr, value in (("vendor_id", f"0x{INTEL_VENDOR_ID:04x}"), ("target_id", f"0x{device_id:04x}"),
                            ("device_name", name)):
            add(f'<device_attr name="{attr}" value="{value}"/>')
        add("</device_info>")
    regnum = 0
    for regset, regs in _ordered(registers):
        add(f'<feature name="{FEATURE_PREFIX}{regset.feature}">')
        depth += 2
        last_grf = regs[-1][0] if regset.feature == "grf" else None
        if dialect == "current":
            vectors = []
            for _, size in regs:
                type_name = _vector_type(regset, size * 8)
                if type_name.startswith("vector") and type_name not in vectors:
                    vectors.append(type_name)
                    count, element = type_name[len("vector"):].split("x")
                    add(f'<vector id="{type_name}" type="uint{element}" count="{count}"/>')
        for reg, size in regs:
            bits = size * 8
            if dialect == "current":
                line = (f'<reg name="{reg}" bitsize="{bits}" type="{_vector_type(regset, bits)}" regnum="{regnum}" '
                        f'group="{regset.group}"')
                if not regset.writable:
                    line += ' save-restore="no"'
                if reg in EXPEDITED or reg == "r0" or reg == last_grf:
                    line += ' expedited="yes"'
            else:
                legacy_type = f"uint{max(8, 1 << (bits - 1).bit_length())}"
                line = (f'<reg name="{reg}" bitsize="{bits}" type="{legacy_type}" regnum="{regnum}" '
                        f'group="{regset.feature.upper()}"')
            add(line + "/>")
            regnum += 1
        depth -= 2
        add("</feature>")
    depth -= 2
    add("</target>")
    return "\n".join(lines) + "\n"


def layout_of(registers: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The thread block's order of these registers in the description `describe` writes."""
    return [reg for _, regs in _ordered(registers) for reg in regs]


def _xml_text(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;"))
