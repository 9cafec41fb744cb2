"""StateWriter: build a format-1 dump from numpy arrays / bytes (tests, examples, GpuState.save).

A writer either holds every file until `write` (tests, examples) or, made with `into=FOLDER`,
streams each file there the moment it is added and keeps only the manifest (GpuState.save:
memory stays bounded however large the dump, and the time budget and cancellation are checked
between pieces). Every piece is written inside tempfiles.writing(), so SIGTERM never races a
writer that is filling a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..deadline import check_time
from ..errors import StateError
from ..tempfiles import writing
from .model import Aperture, lanes_to_mask
from .numbers import hex_number
from .private import SWIZZLED, swizzle
from .manifest_paths import path_problem
from .validate import FORMAT_NAME, FORMAT_VERSION

_ZERO_SKIP = 1 << 16  # all-zero chunks at least this long become holes in the written file


_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}")


def file_stem(name: str, fallback: str) -> str:
    """`name` if it is a plain file name (letters, digits, `_.+-`, no leading dot, short), else `fallback`."""
    return name if isinstance(name, str) and _SAFE_NAME.fullmatch(name) and ".." not in name else fallback


class Hole:
    """`size` zero bytes a Blob's chunks stand for without making them (a sparse source's hole)."""

    def __init__(self, size: int):
        self.size = size


class Blob:
    """File contents produced in chunks, so large memories are streamed, not held in memory. A chunk
    may be a Hole; `size` is None when only writing tells it (a streaming writer's file)."""

    def __init__(self, size: int | None, chunks: Callable[[], Iterable["bytes | Hole"]]):
        self.size = size
        self._chunks = chunks

    def chunks(self) -> Iterator["bytes | Hole"]:
        yield from self._chunks()

    @classmethod
    def of(cls, data: "bytes | bytearray | memoryview | np.ndarray | Blob") -> "Blob":
        if isinstance(data, Blob):
            return data
        raw = _as_bytes(data)
        return cls(len(raw), lambda: [raw])

    @classmethod
    def from_file(cls, path: Path) -> "Blob":
        def read() -> Iterator[bytes]:
            with open(path, "rb") as f:
                while chunk := f.read(16 << 20):
                    yield chunk
        return cls(path.stat().st_size, read)


def _as_bytes(data) -> bytes:
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        array = np.asarray(data)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        return np.ascontiguousarray(array).tobytes()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise StateError(f"expected bytes or a numpy array, got {type(data).__name__}", "writer")


def _apertures(apertures) -> dict:
    """Each aperture is (base, size) or anything with .base and .size (model.Aperture)."""
    pairs = {name: (a.base, a.size) if hasattr(a, "base") else tuple(a) for name, a in apertures.items()}
    return {name: {"base": hex_number(base), "size": hex_number(size)} for name, (base, size) in pairs.items()}


class _Encoded(str):
    """An entry of the manifest already encoded as compact JSON (a streaming writer's finished workgroup:
    its text is a fifth of what its dicts would hold until the manifest is written)."""


_LINE_DEPTH = 4  # the depth of a workgroup (manifest, dispatches, a dispatch, workgroups)


def _manifest_text(value, depth: int = 0) -> Iterator[str]:
    """json.dumps(value, indent=1) + a newline, in pieces of at most one workgroup each: the manifest of
    a dump of 200,000 waves is never held whole as text."""
    if isinstance(value, _Encoded):
        value = json.loads(value)
    if depth >= _LINE_DEPTH or not isinstance(value, (dict, list)) or not value:
        text = json.dumps(value, indent=1)
        yield text.replace("\n", "\n" + " " * depth) if depth and "\n" in text else text
    else:
        pad = "\n" + " " * (depth + 1)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        yield "{" if isinstance(value, dict) else "["
        for i, (key, item) in enumerate(items):
            yield f"{',' if i else ''}{pad}{json.dumps(key)}: " if isinstance(value, dict) else \
                f"{',' if i else ''}{pad}"
            yield from _manifest_text(item, depth + 1)
        yield pad[:-1] + ("}" if isinstance(value, dict) else "]")
    if depth == 0:
        yield "\n"


def _write_sparse(f, chunk: bytes) -> None:
    """Write `chunk`, seeking over each whole _ZERO_SKIP block of zeros (a file hole)."""
    if len(chunk) < _ZERO_SKIP:
        f.write(chunk)
        return
    view = np.frombuffer(chunk, dtype=np.uint8)
    blocks = len(view) // _ZERO_SKIP
    nonzero = view[:blocks * _ZERO_SKIP].reshape(blocks, _ZERO_SKIP).any(axis=1)
    at = 0
    for block in range(blocks + 1):
        end = min(len(view), (block + 1) * _ZERO_SKIP)
        if block < blocks and not nonzero[block]:
            if at < block * _ZERO_SKIP:
                f.write(memoryview(chunk)[at:block * _ZERO_SKIP])
            f.seek(end - block * _ZERO_SKIP, os.SEEK_CUR)
            at = end
    if at < len(view):
        f.write(memoryview(chunk)[at:])


def _write_file(target: Path, blob: Blob) -> int:
    """Write `blob` to `target`, piece by piece (each inside tempfiles.writing(), the time budget and
    cancellation checked before it); zero runs and holes become file holes. The bytes written."""
    with writing():
        target.parent.mkdir(parents=True, exist_ok=True)
        f = open(target, "wb")
    written = 0
    with f:
        for chunk in blob.chunks():
            check_time()
            with writing():
                if isinstance(chunk, Hole):
                    f.seek(chunk.size, os.SEEK_CUR)
                    written += chunk.size
                    continue
                _write_sparse(f, chunk)
                written += len(chunk)
        with writing():
            f.truncate()
    return written


class WorkgroupBuilder:
    def __init__(self, writer: "StateWriter", entry: dict):
        self._writer = writer
        self.entry = entry

    def add_wave(self, id: int, index_in_workgroup: int,
                 registers: "dict[str, bytes | np.ndarray] | bytes | Blob",
                 layout: "str | list[tuple[str, int]] | None" = None,
                 valid_lanes: "int | np.ndarray | None" = None,
                 private: "bytes | np.ndarray | Blob | None" = None, private_layout: str = SWIZZLED,
                 private_size: int | None = None, private_base: int | None = None,
                 lane_pcs: "Iterable[int] | None" = None,
                 return_addresses: "dict[int, list[int]] | None" = None) -> int:
        """Add a wave. `registers` maps names to values (in layout order if no layout is given) or is
        the raw register file. A 2-D `private` array is (lanes, bytes per lane) and is laid out
        for `private_layout`; 1-D data is the file as is. `return_addresses` is the call stack the
        dump records per lane (lane -> return addresses, innermost caller first; lanes not named
        have no caller)."""
        w = self._writer
        path = f"wave {id}"
        if isinstance(layout, list):
            layout = w.add_register_layout(None, layout)
        if isinstance(registers, dict):
            values = {name: _as_bytes(value) for name, value in registers.items()}
            if layout is None:
                layout = w.add_register_layout(None, [(name, len(v)) for name, v in values.items()])
            entries = w.layouts.get(layout)
            if entries is None:
                raise StateError(f"no register layout named {layout!r}", path)
            extra = set(values) - {name for name, _ in entries}
            if extra:
                raise StateError(f"registers {sorted(extra)} are not in layout {layout!r}", path)
            parts = []
            for name, size in entries:
                if name not in values:
                    raise StateError(f"register {name} of layout {layout!r} has no value", path)
                if len(values[name]) != size:
                    raise StateError(f"register {name} has {len(values[name])} bytes, layout says {size}", path)
                parts.append(values[name])
            blob = Blob.of(b"".join(parts))
        else:
            if layout is None or layout not in w.layouts:
                raise StateError("a raw register file needs a known layout", path)
            blob = Blob.of(registers)
        wave: dict = {"id": int(id), "index_in_workgroup": int(index_in_workgroup),
                      "registers": {"layout": layout, "file": w.add_file(f"regs/wave-{id}.bin", blob)}}
        if valid_lanes is not None:
            mask = valid_lanes if isinstance(valid_lanes, (int, np.integer)) else lanes_to_mask(valid_lanes)
            wave["valid_lanes"] = hex_number(mask)
        if private is not None:
            if isinstance(private, np.ndarray) and private.ndim == 2:
                per_lane = np.ascontiguousarray(private).view(np.uint8).reshape(private.shape[0], -1)
                private = swizzle(per_lane) if private_layout == SWIZZLED else per_lane.tobytes()
            rel = w.add_file(f"mem/private-{id}.bin", Blob.of(private))
            entry = {"layout": private_layout, "file": rel,
                     "size": int(private_size if private_size is not None else w.file_size(rel))}
            if private_base is not None:
                entry["base"] = hex_number(private_base)
            wave["private"] = entry
        if lane_pcs is not None:
            wave["lane_pcs"] = [hex_number(pc) for pc in lane_pcs]
        if return_addresses is not None:
            wave["return_addresses"] = [[hex_number(a) for a in return_addresses.get(lane, ())]
                                        for lane in range(w.lanes)]
        self.entry["waves"].append(wave)
        return int(id)


class DispatchBuilder:
    def __init__(self, writer: "StateWriter", entry: dict):
        self._writer = writer
        self.entry = entry
        self.id = entry["id"]

    def add_workgroup(self, id: tuple[int, int, int], lds: "bytes | np.ndarray | Blob | None" = None,
                      lds_size: int | None = None, cluster: tuple[int, int, int] | None = None) -> WorkgroupBuilder:
        workgroups = self.entry["workgroups"]
        if self._writer.folder is not None and workgroups and not isinstance(workgroups[-1], _Encoded):
            # a streaming writer's workgroup is finished once the next one is added: keep its text
            workgroups[-1] = _Encoded(json.dumps(workgroups[-1]))
        entry: dict = {"id": [int(x) for x in id], "waves": []}
        if cluster is not None:
            entry["cluster"] = [int(x) for x in cluster]
        if lds is not None:
            blob = Blob.of(lds)
            name = f"mem/lds-{self.id}-{len(self.entry['workgroups'])}.bin"
            rel = self._writer.add_file(name, blob)
            entry["lds"] = {"file": rel, "size": int(lds_size if lds_size is not None else self._writer.file_size(rel))}
        self.entry["workgroups"].append(entry)
        return WorkgroupBuilder(self._writer, entry)

    def add_memory(self, space: str, address: int, data, size: int | None = None, bank: int | None = None) -> None:
        """Dispatch-owned memory: kernel parameters ("param"), constant banks ("const" with `bank`)."""
        self.entry.setdefault("memory", []).append(
            self._writer._region(space, address, data, size, bank, f"dispatch{self.id}-"))


class StateWriter:
    def __init__(self, target_vendor: str, processor: str, lanes: int,
                 apertures: "dict[str, tuple[int, int] | Aperture] | None" = None,
                 producer: str = "aspace-dap StateWriter",
                 into: "str | os.PathLike | None" = None):
        self.target: dict = {"vendor": target_vendor, "processor": processor, "lanes": int(lanes)}
        if apertures:
            # Each aperture is (base, size) or anything with .base and .size (model.Aperture).
            self.target["apertures"] = _apertures(apertures)
        self.lanes = int(lanes)
        self.producer = producer
        self.code_objects: list[dict] = []
        self.memory: list[dict] = []
        self.layouts: dict[str, list[tuple[str, int]]] = {}
        self.dispatches: list[dict] = []
        self.focus: dict | None = None
        self.stop: dict | None = None
        self.files: dict[str, Blob] = {}  # held until write(); a streaming writer's are written already
        self._sizes: dict[str, int] = {}
        self._into = Path(into) if into is not None else None

    def add_file(self, rel: str, blob: Blob) -> str:
        """Register a file under a unique relative path; returns the path used.

        Callers build `rel` from fixed words, numbers and `file_stem` names only, never from
        a name as it came in (a space name of "../x" must not leave the dump)."""
        if path_problem(rel) is not None or any(part.startswith(".") for part in rel.split("/")):
            raise StateError(f"internal: unsafe file name {rel!r}", "writer")
        stem, dot, ext = rel.rpartition(".")
        candidate, n = rel, 1
        while candidate in self._sizes:
            candidate = f"{stem}-{n}{dot}{ext}" if dot else f"{rel}-{n}"
            n += 1
        if self._into is not None:
            self._sizes[candidate] = _write_file(self._into / candidate, blob)
        else:
            if blob.size is None:
                raise StateError(f"internal: {rel} has no size and the writer does not stream", "writer")
            self.files[candidate] = blob
            self._sizes[candidate] = blob.size
        return candidate

    @property
    def folder(self) -> Path | None:
        """Where a streaming writer writes (None: it holds its files until write)."""
        return self._into

    def file_size(self, rel: str) -> int:
        """The size of a file added (known once written, for a streaming writer)."""
        return self._sizes[rel]

    def add_code_object(self, path_or_bytes: "str | os.PathLike | bytes | Blob", load_address: int = 0,
                        name: str | None = None, id: int | None = None) -> int:
        co_id = len(self.code_objects) if id is None else int(id)
        if isinstance(path_or_bytes, (str, os.PathLike)):
            source = Path(path_or_bytes)
            blob = Blob.from_file(source)
            name = name or file_stem(source.name, f"code-object-{co_id}.co")
        else:
            blob = Blob.of(path_or_bytes)
            name = name or f"code-object-{co_id}.co"
        self.code_objects.append({"id": co_id, "path": self.add_file(f"code/{file_stem(name, f'code-object-{co_id}.co')}", blob),
                                  "load_address": hex_number(load_address)})
        return co_id

    def _region(self, space: str, address: int, data, size: int | None, bank: int | None, prefix: str = "") -> dict:
        blob = Blob.of(data)
        rel = self.add_file(f"mem/{prefix}{file_stem(space, 'region')}-{len(self._sizes)}.bin", blob)
        entry = {"space": space, "address": hex_number(address),
                 "size": int(self.file_size(rel) if size is None else size), "file": rel, "file_offset": 0}
        if bank is not None:
            entry["bank"] = int(bank)
        return entry

    def add_memory(self, space: str, address: int, data, size: int | None = None, bank: int | None = None) -> None:
        """A device-wide region. `size` larger than the data declares an unavailable tail."""
        self.memory.append(self._region(space, address, data, size, bank))

    def add_register_layout(self, name: str | None, registers: "list[tuple[str, int]]") -> str:
        """Add a layout; with name None, reuse an identical layout or invent a name."""
        entries = [(str(reg), int(size)) for reg, size in registers]
        if name is None:
            for existing, known in self.layouts.items():
                if known == entries:
                    return existing
            name = f"layout{len(self.layouts)}"
            while name in self.layouts:
                name += "_"
        elif name in self.layouts and self.layouts[name] != entries:
            raise StateError(f"register layout {name!r} already exists with other registers", "register_layouts")
        self.layouts[name] = entries
        return name

    def add_dispatch(self, kernel: str, code_object: int | None, grid_size, workgroup_size,
                     id: int | None = None, device: int | None = None,
                     processor: str | None = None,
                     cluster_size: tuple[int, int, int] | None = None,
                     apertures: "dict[str, tuple[int, int] | Aperture] | None" = None) -> DispatchBuilder:
        """`device`: which GPU ran it (a dump of several); `processor`: that GPU's, when not the target's;
        `cluster_size`: blocks per thread block cluster, for a cluster launch; `apertures`: the
        generic-address windows of its device or context, when not the target's."""
        entry = {"id": len(self.dispatches) if id is None else int(id), "kernel": kernel,
                 "code_object": code_object, "grid_size": [int(x) for x in grid_size],
                 "workgroup_size": [int(x) for x in workgroup_size], "workgroups": []}
        if device is not None:
            entry["device"] = int(device)
        if processor is not None and processor != self.target["processor"]:
            entry["processor"] = processor
        if cluster_size is not None:
            entry["cluster_size"] = [int(x) for x in cluster_size]
        if apertures is not None and _apertures(apertures) != self.target.get("apertures", {}):
            entry["apertures"] = _apertures(apertures)
        self.dispatches.append(entry)
        return DispatchBuilder(self, entry)

    def set_focus(self, wave: int, lane: int) -> None:
        self.focus = {"wave": int(wave), "lane": int(lane)}

    def set_stop(self, reason: str, description: str = "", pc: int | None = None) -> None:
        self.stop = {"reason": reason, "description": description}
        if pc is not None:
            self.stop["pc"] = hex_number(pc)

    def manifest(self) -> dict:
        manifest: dict = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "producer": self.producer,
                          "target": self.target, "code_objects": self.code_objects}
        if self.memory:
            manifest["memory"] = self.memory
        manifest["register_layouts"] = {name: [[reg, size] for reg, size in entries]
                                        for name, entries in self.layouts.items()}
        manifest["dispatches"] = self.dispatches
        if self.focus is not None:
            manifest["focus"] = self.focus
        if self.stop is not None:
            manifest["stop"] = self.stop
        return manifest

    def _manifest_bytes(self) -> bytes:
        return "".join(_manifest_text(self.manifest())).encode()

    def write(self, path: "str | os.PathLike") -> Path:
        """Write the dump as a folder (created if needed). Long runs of zeros become file holes.
        A streaming writer (`into`) has written its files already: only the manifest is left."""
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        for rel, blob in self.files.items():
            _write_file(root / rel, blob)
        self._write_manifest(root / "manifest.json")
        return root

    def _write_manifest(self, target: Path) -> None:
        """The manifest, written as it is encoded (a dump of 200,000 waves never holds its text whole)."""
        from .. import limits

        written, pending, size = 0, [], 0
        with writing():
            f = open(target, "w", encoding="utf-8")
        with f:
            for piece in _manifest_text(self.manifest()):
                pending.append(piece)
                size += len(piece)  # (all ASCII: json.dumps escapes the rest)
                if size >= 1 << 20:
                    check_time()
                    with writing():
                        f.write("".join(pending))
                    written, pending, size = written + size, [], 0
            with writing():
                f.write("".join(pending))
            written += size
        if written > limits.MAX_MANIFEST_BYTES:  # it could not be opened again
            with writing():
                target.unlink()
            raise StateError(f"the manifest would have {written} bytes, over the limit of "
                             f"{limits.MAX_MANIFEST_BYTES} for reading it " + limits.limit_hint("MAX_MANIFEST_BYTES"),
                             "manifest.json")

    def write_zip(self, path: "str | os.PathLike", compression: int = zipfile.ZIP_STORED) -> Path:
        """Write the dump as a zip; stored (the default) members can be mapped in place."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", compression=compression) as archive:
            archive.writestr("manifest.json", self._manifest_bytes())
            for rel, blob in self.files.items():
                info = zipfile.ZipInfo(rel, date_time=(2024, 1, 1, 0, 0, 0))
                info.compress_type = compression
                with archive.open(info, "w", force_zip64=blob.size > (1 << 31)) as member:
                    for chunk in blob.chunks():
                        member.write(chunk)
        return target
