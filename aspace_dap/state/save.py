"""GpuState.save: write the state, overlay writes included, as a new dump folder.

Unknown bytes stay unknown: a region whose known bytes have gaps is saved as several
regions, each with a file that stops where its known bytes stop (the rest of the
region is the unavailable tail). Registers, LDS and private memory have one file
each, so there an unknown byte may only be followed by unknown bytes.

A save streams: each file is written into the partial folder as soon as it is made,
16 MiB at a time (holes of a sparse source stay holes, unread), so what it holds is a
chunk and the manifest whatever the dump's size; between pieces it checks the running
request's time budget and cancellation (deadline.check_time), and anything that stops
it leaves nothing behind (paths.writing_folder).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Iterator

import numpy as np

from ..deadline import check_time
from ..errors import StateError
from ..paths import writing_folder
from .memory import Region, SparseMemory, _merge
from .model import GpuState, Wave, lanes_to_mask
from .numbers import parse_number
from .wavetable import passing
from .writer import Blob, Hole, StateWriter

_CHUNK = 16 << 20


def _run_blob(memory: SparseMemory, region: Region, start: int, end: int) -> Blob:
    """The bytes of [start, end) of a region: file contents, then overlay writes on top; a piece that is
    a hole of a sparse file and holds no write stays a hole (neither read nor made)."""

    def chunks() -> Iterator[bytes | Hole]:
        holes = _HoleFinder(region if end - start >= _CHUNK else None)  # only a big piece may hold a hole
        for lo in range(start, end, _CHUNK):
            hi = min(end, lo + _CHUNK)
            available_hi = min(hi, region.address + region.available)
            if available_hi >= hi and holes.is_hole(lo - region.address, hi - lo) and \
                    not memory.written_runs(lo, hi):
                yield Hole(hi - lo)
                continue
            data = np.zeros(hi - lo, dtype=np.uint8)
            valid = np.zeros(hi - lo, dtype=bool)
            position = lo - region.address
            if available_hi > lo and region.span is not None:
                filled = 0
                for piece in region.span.chunks(region.file_offset + position, available_hi - lo):
                    data[filled : filled + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
                    filled += len(piece)
                valid[:filled] = True
            memory._apply_overlay_range(lo, data, valid)
            yield data.tobytes()

    return Blob(end - start, chunks)


class _HoleFinder:
    """Whether a piece of a region's file is a hole (lseek SEEK_DATA), for plain files on disk only."""

    def __init__(self, region: Region | None):
        self._fd = None
        self._base = 0
        span = region.span if region is not None else None
        if span is None or not span.sparse_aware:
            return
        try:
            path, offset = span.location()
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            self._base = offset + region.file_offset
        except (OSError, StateError):
            self._fd = None

    def is_hole(self, start: int, length: int) -> bool:
        if self._fd is None:
            return False
        try:
            data_at = os.lseek(self._fd, self._base + start, os.SEEK_DATA)
        except OSError as exc:
            return exc.errno == errno.ENXIO  # no data after this point: a hole up to the end
        return data_at >= self._base + start + length

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def _known_runs(memory: SparseMemory, region: Region) -> list[tuple[int, int]]:
    runs = memory.written_runs(region.address, region.end)
    if region.available:
        runs.append((region.address, region.address + region.available))
    return _merge(runs)


def region_pieces(memory: SparseMemory, region: Region) -> list[tuple[int, int, Blob]]:
    """(address, declared size, contents) pieces that together describe the region exactly."""
    runs = _known_runs(memory, region)
    pieces: list[tuple[int, int, Blob]] = []
    if not runs or runs[0][0] > region.address:
        first_end = runs[0][0] if runs else region.end
        pieces.append((region.address, first_end - region.address, Blob.of(b"")))
    for i, (start, end) in enumerate(runs):
        declared_end = runs[i + 1][0] if i + 1 < len(runs) else region.end
        pieces.append((start, declared_end - start, _run_blob(memory, region, start, end)))
    return pieces


def _single_file(memory: SparseMemory, what: str) -> tuple[int, Blob]:
    """Declared size and contents of a one-file memory (LDS, private) whose known bytes form a prefix."""
    if len(memory.regions) > 1:
        # several regions (a CUDA core's per-lane local sections): one file only if they tile the space,
        # read a chunk at a time; its length is the known prefix, found while writing
        end = max(r.end for r in memory.regions)

        def chunks() -> Iterator[bytes]:
            known_ended = False
            for lo in range(0, end, _CHUNK):
                check_time()
                data, valid = memory.read(lo, min(_CHUNK, end - lo))
                if known_ended or not valid.all():
                    known = 0 if known_ended else int(np.argmin(valid))
                    if valid[known:].any():
                        raise StateError(f"cannot save {what}: its regions leave unknown bytes between known ones",
                                         memory.path)
                    if not known_ended and known:
                        yield data[:known].tobytes()
                    known_ended = True
                    continue
                yield data.tobytes()

        return end, Blob(None, chunks)
    region = memory.regions[0]
    pieces = region_pieces(memory, region)
    if len(pieces) != 1:
        raise StateError(f"cannot save {what}: written bytes leave unknown bytes before them", memory.path)
    return region.size, pieces[0][2]


def _register_file(wave: Wave) -> tuple[list[tuple[str, int]], bytes]:
    """Layout and bytes for a wave's registers; registers entirely unknown are left out.

    Only the last register kept may end in unknown bytes (the file then stops early).
    """
    registers = wave.registers
    layout: list[tuple[str, int]] = []
    parts: list[bytes] = []
    cut_short: str | None = None  # a register whose tail is unknown ends the file
    for name, size in registers.layout:
        check_time()
        data, valid = registers.raw(name)
        if not valid.any():
            continue
        if cut_short is not None:
            raise StateError(f"cannot save: register {name} is known but the file must end at "
                             f"{cut_short}'s unknown bytes", registers.path)
        known = size if valid.all() else int(np.argmin(valid))
        if valid[known:].any():
            raise StateError(f"cannot save: register {name} has unknown bytes between known ones",
                             registers.path)
        layout.append((name, size))
        parts.append(data[:known].tobytes())
        if known < size:
            cut_short = name
    return layout, b"".join(parts)


def save_state(state: GpuState, path: Path) -> Path:
    # Writing over a dump (above all the one being read, whose files are mapped) would corrupt it.
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise StateError("save needs a new or empty folder", str(path))
    target = state.target
    # the format has one lane count (target.lanes): a core of wave64 and wave32 GPUs has no faithful folder form
    # (from the table of waves: looking at each wave would make and keep every one of a big dump)
    others = np.flatnonzero(state.wave_table().lanes != target.lanes)
    if len(others):
        other = state.waves[int(others[0])]
        raise StateError(f"cannot save: wave {other.id} has {other.lanes} lanes and the dump format holds one lane "
                         f"count for every wave ({target.lanes}, target.lanes)", other.path or "waves")
    # written beside the target and renamed into place: an interrupted save leaves no half dump
    with writing_folder(path) as partial:
        _write(state, StateWriter(target.vendor, target.processor, target.lanes,
                                  {n: (a.base, a.size) for n, a in target.apertures.items()} or None, state.producer,
                                  into=partial))
    return path


def _write(state: GpuState, writer: StateWriter) -> None:
    """Add everything of `state` to a streaming writer (each file is written as it is added), then the manifest."""
    for ref in state.code_objects:
        check_time()
        writer.add_code_object(ref.path, ref.load_address, Path(ref.manifest_path or ref.path.name).name, ref.id)
    for space, memory in state.memory.items():
        for region in memory.regions:
            for address, size, blob in region_pieces(memory, region):
                writer.add_memory(space, address, blob, size, region.bank)
    for name, entries in (state.manifest.get("register_layouts") or {}).items():
        writer.add_register_layout(name, [(reg, parse_number(size)) for reg, size in entries])
    for dispatch in state.dispatches:
        _check_geometry(dispatch)
        builder = writer.add_dispatch(dispatch.kernel, dispatch.code_object, dispatch.grid_size,
                                      dispatch.workgroup_size, dispatch.id, dispatch.device, dispatch.processor,
                                      dispatch.cluster_size, dispatch.apertures)
        if getattr(dispatch, "kernel_descriptor", None) is not None:
            builder.entry["kernel_descriptor"] = hex(dispatch.kernel_descriptor)
        for space, memory in dispatch.memory.items():
            for region in memory.regions:
                for address, size, blob in region_pieces(memory, region):
                    builder.add_memory(space, address, blob, size, region.bank)
        # workgroups and waves not made before are made for this pass and dropped after it
        for workgroup in passing(dispatch.workgroups):
            lds, lds_size = None, None
            if workgroup.lds is not None:
                lds_size, lds = _single_file(workgroup.lds, "LDS")
            wg_builder = builder.add_workgroup(workgroup.id, lds, lds_size, workgroup.cluster)
            for wave in passing(workgroup.waves):
                check_time()
                layout, data = _register_file(wave)
                layout_name = wave.registers.layout_name
                if layout != wave.registers.layout or layout_name is None:
                    layout_name = writer.add_register_layout(None, layout)
                private, private_size, private_layout, private_base = None, None, "swizzled", None
                if wave.private is not None:
                    private_size, private = _single_file(wave.private.wave_view, "private memory")
                    private_layout = wave.private.layout
                    private_base = wave.private.base or None
                valid = None if wave.valid_lanes.all() else lanes_to_mask(wave.valid_lanes)
                wg_builder.add_wave(wave.id, wave.index_in_workgroup, Blob.of(data), layout_name, valid,
                                    private, private_layout, private_size, private_base,
                                    None if wave.lane_pcs is None else [int(pc) for pc in wave.lane_pcs],
                                    wave.return_addresses)
    if state.focus is not None:
        writer.set_focus(state.focus.wave, state.focus.lane)
    if state.stop is not None:
        writer.set_stop(state.stop.reason, state.stop.description, state.stop.pc)
    writer.write(writer.folder)


def _check_geometry(dispatch) -> None:
    """A dump folder says each dispatch's sizes and numbers its work-items by them (docs/STATE_FORMAT.md,
    "Work-item ids"): a source that does not hold the sizes, or numbers its lanes otherwise (an Intel
    core's local ID table), cannot be written as one without inventing or losing ids."""
    if dispatch.grid_size is None or dispatch.workgroup_size is None:
        raise StateError(f"{dispatch.geometry_unknown or 'the work-group size is unknown'}; a dump folder must "
                         "give each dispatch's grid_size and workgroup_size", dispatch.path)
    if not dispatch.local_ids:
        return  # (lanes numbered as a dump folder numbers them: no wave needs a look)
    sx, sy, _ = (max(int(n), 1) for n in dispatch.workgroup_size)
    for workgroup in passing(dispatch.workgroups):
        for wave in passing(workgroup.waves):
            ids = dispatch.local_ids.get(wave.id)
            if ids is None:
                continue
            if isinstance(ids, str):
                raise StateError(f"wave {wave.id}: {ids}; a dump folder numbers its lanes' work-items",
                                 dispatch.path)
            flat = wave.index_in_workgroup * wave.lanes + np.arange(len(ids))
            numbered = np.stack([flat % sx, flat // sx % sy, flat // (sx * sy)], axis=1)
            valid = np.asarray(wave.valid_lanes, bool)[:len(ids)]
            if not (numbered[valid] == ids[valid]).all():
                raise StateError(f"wave {wave.id}: its local ID table numbers its lanes otherwise than a dump "
                                 "folder does (index_in_workgroup * lanes + lane, x fastest)", dispatch.path)
