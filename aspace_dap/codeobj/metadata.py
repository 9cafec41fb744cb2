"""AMDGPU code object metadata: the NT_AMDGPU_METADATA note and per-kernel facts.

Since code object V3 the metadata is one MessagePack map in an ELF note with
owner "AMDGPU" and type 32. Kernel entries live under "amdhsa.kernels", with
keys that start with a dot (".name", ".vgpr_count", ...).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import msgpack

from aspace_dap.errors import CodeObjectError

from .descriptor import KernelDescriptor

NT_AMDGPU_METADATA = 32
AMDGPU_NOTE_OWNER = b"AMDGPU"

# A kernel's metadata map is small; this only stops a crafted note from
# describing millions of nested objects.
MAX_METADATA_BYTES = 64 << 20


@dataclass(frozen=True)
class Note:
    owner: bytes
    note_type: int
    desc: bytes


def parse_notes(data: bytes, where: str) -> list[Note]:
    """Split a SHT_NOTE section into records (name and desc are padded to 4 bytes)."""
    notes = []
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise CodeObjectError(f"{where}: truncated note header at offset {pos}")
        namesz, descsz, note_type = struct.unpack_from("<III", data, pos)
        name_start = pos + 12
        desc_start = name_start + _align4(namesz)
        desc_end = desc_start + descsz
        if desc_end > len(data):
            raise CodeObjectError(
                f"{where}: note at offset {pos} claims {namesz}+{descsz} bytes, only {len(data) - name_start} remain"
            )
        owner = data[name_start : name_start + namesz].rstrip(b"\0")
        notes.append(Note(owner, note_type, bytes(data[desc_start:desc_end])))
        pos = desc_start + _align4(descsz)
    return notes


def _align4(n: int) -> int:
    return (n + 3) & ~3


def decode_metadata(desc: bytes, where: str) -> dict[str, Any]:
    if len(desc) > MAX_METADATA_BYTES:
        raise CodeObjectError(f"{where}: metadata note is {len(desc)} bytes")
    try:
        value = msgpack.unpackb(desc, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError, TypeError, RecursionError) as exc:
        raise CodeObjectError(f"{where}: metadata is not valid MessagePack: {exc}") from exc
    value = _str_keys(value)
    if not isinstance(value, dict):
        raise CodeObjectError(f"{where}: metadata is a {type(value).__name__}, expected a map")
    return value


def _str_keys(value: Any) -> Any:
    # Producers emit str keys; bytes keys (raw strings) are decoded so lookups stay uniform.
    if isinstance(value, dict):
        return {_key(k): _str_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_str_keys(v) for v in value]
    return value


def _key(key: Any) -> str:
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="replace")
    return key if isinstance(key, str) else str(key)


@dataclass
class KernelInfo:
    name: str  # source-level (mangled) name, also the code symbol
    symbol: str  # the kernel descriptor symbol, "<name>.kd"
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    agpr_count: int | None
    sgpr_spill_count: int
    vgpr_spill_count: int
    group_segment_fixed_size: int  # LDS bytes
    private_segment_fixed_size: int  # scratch bytes per work-item
    kernarg_segment_size: int
    args: list[dict[str, Any]] = field(default_factory=list)  # keys without the leading dot
    descriptor: KernelDescriptor | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def entry_address(self) -> int | None:
        return self.descriptor.entry_address if self.descriptor else None

    @property
    def uses_dynamic_stack(self) -> bool:
        return bool(self.raw.get(".uses_dynamic_stack", False))


def kernels_from_metadata(metadata: dict[str, Any], where: str) -> list[tuple[KernelInfo, str]]:
    """KernelInfo per "amdhsa.kernels" entry, each paired with its descriptor symbol name."""
    entries = metadata.get("amdhsa.kernels", [])
    if not isinstance(entries, list):
        raise CodeObjectError(f"{where}: amdhsa.kernels is not a list")
    kernels = []
    for index, entry in enumerate(entries):
        here = f"{where}: amdhsa.kernels[{index}]"
        if not isinstance(entry, dict):
            raise CodeObjectError(f"{here} is not a map")
        name = _field(entry, ".name", str, here)
        symbol = _field(entry, ".symbol", str, here, default=f"{name}.kd")
        args = entry.get(".args", [])
        if not isinstance(args, list) or not all(isinstance(a, dict) for a in args):
            raise CodeObjectError(f"{here}: .args is not a list of maps")
        kernels.append(
            (
                KernelInfo(
                    name=name,
                    symbol=symbol,
                    wavefront_size=_field(entry, ".wavefront_size", int, here),
                    sgpr_count=_field(entry, ".sgpr_count", int, here),
                    vgpr_count=_field(entry, ".vgpr_count", int, here),
                    agpr_count=_field(entry, ".agpr_count", int, here, default=None),
                    sgpr_spill_count=_field(entry, ".sgpr_spill_count", int, here, default=0),
                    vgpr_spill_count=_field(entry, ".vgpr_spill_count", int, here, default=0),
                    group_segment_fixed_size=_field(entry, ".group_segment_fixed_size", int, here),
                    private_segment_fixed_size=_field(entry, ".private_segment_fixed_size", int, here),
                    kernarg_segment_size=_field(entry, ".kernarg_segment_size", int, here),
                    args=[{k.lstrip("."): v for k, v in arg.items()} for arg in args],
                    raw=entry,
                ),
                symbol,
            )
        )
    return kernels


_MISSING = object()


def _field(entry: dict[str, Any], key: str, kind: type, where: str, default: Any = _MISSING) -> Any:
    value = entry.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise CodeObjectError(f"{where}: missing {key}")
        return default
    # bool is an int subclass; a boolean vgpr count is as wrong as a string.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CodeObjectError(f"{where}: {key} is {value!r}, expected {kind.__name__}")
    return value
