"""The loaded dump: target, code objects, memories, dispatches, workgroups and waves."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..errors import StateError
from .memory import SparseMemory
from .private import PrivateMemory
from .registers import RegisterFile

if TYPE_CHECKING:
    from .files import DumpFiles
    from .wavetable import LazyWaves, WaveTable


@dataclass(frozen=True)
class Aperture:
    base: int
    size: int

    def contains(self, address: int) -> bool:
        return self.base <= address < self.base + self.size


@dataclass
class Target:
    vendor: str
    processor: str
    lanes: int
    apertures: dict[str, Aperture] = field(default_factory=dict)


@dataclass
class CodeObjectRef:
    id: int
    path: Path
    load_address: int
    manifest_path: str = ""  # the path as written in the manifest


@dataclass
class Focus:
    wave: int
    lane: int


@dataclass(frozen=True)
class Fault:
    """An exception a wave (or some of its lanes) raised, as the vendor's format records it; the vendor's
    adapter puts it in words (adapters/<vendor>/exceptions.py)."""

    wave: int                   # the wave's id
    code: int                   # the vendor's code: CUDBGException_t (NVIDIA), the signal number (Intel)
    lanes: int | None = None    # mask of the lanes that raised it; None: the wave as a whole
    pc: int | None = None       # the faulting instruction, recorded apart from the wave's PC (NVIDIA errorPC)
    address: int | None = None  # the data address that faulted (Intel si_addr)
    detail: int = 0             # a second word of the vendor's (Intel si_code)


@dataclass
class Stop:
    reason: str
    description: str = ""
    pc: int | None = None  # the faulting instruction, when the dump records it apart from the lanes' PCs
    # every exception the format records per wave or lane, the stop's own first (GPU cores; a dump
    # folder has no field for them: AMD waves keep theirs in their trap status registers)
    faults: list[Fault] = field(default_factory=list, compare=False)


def mask_to_lanes(mask: int, lanes: int) -> np.ndarray:
    """Bit i of `mask` -> lane i."""
    bits = np.frombuffer(int(mask & ((1 << lanes) - 1)).to_bytes((lanes + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[:lanes].astype(bool)


def lanes_to_mask(lanes: np.ndarray) -> int:
    return int.from_bytes(np.packbits(np.asarray(lanes, dtype=bool), bitorder="little").tobytes(), "little")


class Unreadable:
    """A part of a wave that the dump names but that cannot be read (its file is missing): the wave's
    other parts stay usable, and using this one raises the error, with its JSON path."""

    def __init__(self, message: str, path: str):
        self.message, self.path = message, path


def _readable(part):
    if isinstance(part, Unreadable):
        raise StateError(part.message, part.path)
    return part


DEFAULT_REGISTER_NAMES: tuple[str, str | None] = ("pc", "exec")
LOAD_LOCK = threading.RLock()  # a lazily built part (or wave) is built once, even with two threads asking


class Wave:
    """One wave. Its registers, private memory and lane masks may be built on first use
    (`Wave.deferred`): a dump of 100,000 waves costs only what is looked at."""

    # a fixed set of fields: a dump of 100,000 waves holds 100,000 of these
    __slots__ = ("id", "index_in_workgroup", "lanes", "path", "workgroup", "dispatch", "_loader", "_parts",
                 "_returns", "_returns_pending", "pc_register", "exec_register", "__weakref__")

    # pc_register / exec_register: the registers holding the PC and the execution mask, the adapter's
    # names, set for every wave by GpuState.use_register_names (AMD and NVIDIA dumps say `pc` / `exec`)

    def __init__(self, id: int, index_in_workgroup: int, registers: RegisterFile, lanes: int,
                 valid_lanes: np.ndarray, private: PrivateMemory | None = None,
                 lane_pcs: np.ndarray | None = None, path: str = ""):
        self.id = id
        self.index_in_workgroup = index_in_workgroup
        self.lanes = lanes
        self.path = path
        self.pc_register, self.exec_register = DEFAULT_REGISTER_NAMES
        self.workgroup: Workgroup | None = None
        self.dispatch: Dispatch | None = None
        self._loader: Callable[[Wave], list] | None = None
        self._parts: list | None = [registers, valid_lanes, private, lane_pcs]
        # the call stack the dump itself records per lane (a CUDA core's backtrace tables): return
        # addresses, innermost caller first; None when the dump records none
        self._returns: dict[int, list[int]] | None = None
        self._returns_pending = False

    @classmethod
    def deferred(cls, id: int, index_in_workgroup: int, lanes: int, path: str,
                 loader: Callable[["Wave"], list], returns_pending: bool = False) -> "Wave":
        """A wave whose [registers, valid_lanes, private, lane_pcs] `loader` builds when first asked for;
        with `returns_pending`, the loader also sets its return_addresses."""
        wave = cls.__new__(cls)
        wave.id = id
        wave.index_in_workgroup = index_in_workgroup
        wave.lanes = lanes
        wave.path = path
        wave.pc_register, wave.exec_register = DEFAULT_REGISTER_NAMES
        wave.workgroup = None
        wave.dispatch = None
        wave._loader = loader
        wave._parts = None
        wave._returns = None
        wave._returns_pending = returns_pending
        return wave

    def _get_returns(self) -> "dict[int, list[int]] | None":
        if self._returns_pending and self._parts is None:
            self._load()
        return self._returns

    def _set_returns(self, value: "dict[int, list[int]] | None") -> None:
        self._returns, self._returns_pending = value, False

    return_addresses = property(_get_returns, _set_returns)

    @property
    def loaded(self) -> bool:
        """True once the registers and memories exist as objects (and so may carry writes)."""
        return self._parts is not None

    def _load(self) -> list:
        parts = self._parts
        if parts is None:
            with LOAD_LOCK:
                if self._parts is None:
                    self._parts = self._loader(self)
                    self._loader = None
                parts = self._parts
        return parts

    registers = property(lambda self: self._load()[0], lambda self, v: self._set(0, v))
    valid_lanes = property(lambda self: self._load()[1], lambda self, v: self._set(1, v))
    private = property(lambda self: _readable(self._load()[2]), lambda self, v: self._set(2, v))
    lane_pcs = property(lambda self: self._load()[3], lambda self, v: self._set(3, v))

    def _set(self, index: int, value) -> None:
        self._load()[index] = value

    @property
    def exec_mask(self) -> np.ndarray | None:
        """Lanes set in the execution mask register; None if the dump lacks it (or part of it)."""
        name = self.exec_register
        if name is None or not self.registers.has(name):
            return None
        data, valid = self.registers.raw(name)
        if not valid.all() or len(data) * 8 < self.lanes:
            return None
        return mask_to_lanes(int.from_bytes(data.tobytes(), "little"), self.lanes)

    @property
    def active_lanes(self) -> np.ndarray:
        """exec & valid_lanes. With exec unknown, every valid lane counts as active."""
        exec_mask = self.exec_mask
        return self.valid_lanes.copy() if exec_mask is None else exec_mask & self.valid_lanes

    @property
    def pc(self) -> int | None:
        return self.registers.value(self.pc_register)

    def _check_lane(self, lane: int) -> int:
        lane = int(lane)
        if not 0 <= lane < self.lanes:
            raise StateError(f"lane {lane} is outside the wave's {self.lanes} lanes", self.path)
        return lane

    def local_id(self, lane: int) -> tuple[int, int, int]:
        """Work-item id in the workgroup: lanes are flattened x fastest, then y, then z."""
        lane = self._check_lane(lane)
        sx, sy, _ = self.dispatch.workgroup_size if self.dispatch else (1 << 62, 1, 1)
        flat = self.index_in_workgroup * self.lanes + lane
        sx, sy = max(sx, 1), max(sy, 1)
        return flat % sx, (flat // sx) % sy, flat // (sx * sy)

    def global_id(self, lane: int) -> tuple[int, int, int]:
        local = self.local_id(lane)
        if self.dispatch is None or self.workgroup is None:
            return local
        size = self.dispatch.workgroup_size
        return tuple(g * s + l for g, s, l in zip(self.workgroup.id, size, local))  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Wave(id={self.id}, index_in_workgroup={self.index_in_workgroup})"


class Workgroup:
    def __init__(self, id: tuple[int, int, int], lds: SparseMemory | None, waves: list[Wave], path: str = "",
                 lds_loader: Callable[[], SparseMemory | None] | None = None):
        self.id = id
        self._lds = lds
        self._lds_loader = lds_loader  # builds the LDS on first use (`lds` is then None)
        self.waves = waves
        self.path = path
        self.dispatch: Dispatch | None = None
        self.cluster: tuple[int, int, int] | None = None  # the thread block cluster it belongs to (NVIDIA sm_90+)

    @property
    def lds(self) -> SparseMemory | None:
        if self._lds_loader is not None:
            with LOAD_LOCK:
                if self._lds_loader is not None:
                    self._lds = self._lds_loader()
                    self._lds_loader = None
        return self._lds

    @lds.setter
    def lds(self, value: SparseMemory | None) -> None:
        self._lds, self._lds_loader = value, None

    @property
    def lds_loaded(self) -> bool:
        return self._lds_loader is None

    def __repr__(self) -> str:
        return f"Workgroup(id={self.id}, {len(self.waves)} waves)"


class Dispatch:
    def __init__(self, id: int, kernel: str, code_object: int | None, grid_size: tuple[int, int, int] | None,
                 workgroup_size: tuple[int, int, int] | None, workgroups: list[Workgroup],
                 memory: dict[str, SparseMemory] | None = None, path: str = "",
                 kernel_descriptor: int | None = None):
        self.id = id
        self.kernel = kernel
        # runtime address of the kernel's descriptor (AMD), when the source knows it: it places a code
        # object supplied by the user when the state itself names none
        self.kernel_descriptor = kernel_descriptor
        self.code_object = code_object
        self.grid_size = grid_size
        self.workgroup_size = workgroup_size
        self.workgroups = workgroups
        self.memory = memory or {}
        self.path = path
        self.device: int | None = None  # which GPU ran it, when the dump holds several
        # that GPU's processor when it differs from the target's (a machine with GPUs of several kinds)
        self.processor: str | None = None
        self.cluster_size: tuple[int, int, int] | None = None  # blocks per cluster, for a cluster launch
        # why grid_size and workgroup_size are None: a GPU core that does not hold them (an Intel core
        # whose implicit arguments are not mapped)
        self.geometry_unknown: str | None = None
        # per wave id, its lanes' work-item ids in the work-group, (lanes, 3), as the source records them
        # (an Intel core's local ID table), or why they cannot be read; None: numbered as
        # docs/STATE_FORMAT.md says ("Work-item ids")
        self.local_ids: dict[int, np.ndarray | str] | None = None
        # the generic-address windows of the device or context that ran it, when not the target's
        self.apertures: dict[str, Aperture] | None = None
        if isinstance(workgroups, list):  # (workgroups made on demand are told their dispatch when made)
            for workgroup in workgroups:
                workgroup.dispatch = self
                for wave in workgroup.waves:
                    wave.workgroup = workgroup
                    wave.dispatch = self

    def const_bank(self, bank: int) -> SparseMemory | None:
        memory = self.memory.get("const")
        return None if memory is None else memory.bank(bank)

    @property
    def waves(self) -> Sequence[Wave]:
        waves = getattr(self.workgroups, "waves", None)  # workgroups made on demand know their waves
        if waves is not None:
            return waves
        return [wave for workgroup in self.workgroups for wave in workgroup.waves]

    def __repr__(self) -> str:
        return f"Dispatch(id={self.id}, kernel={self.kernel!r})"


@dataclass
class WaveHeads:
    """Per wave, in `GpuState.waves` order: pc, exec and valid lanes as bit masks (waves of at most 64 lanes)."""

    pc: np.ndarray          # uint64
    pc_known: np.ndarray    # bool: the dump holds the whole pc
    exec: np.ndarray        # uint64
    exec_known: np.ndarray  # bool: the dump holds the whole exec (else every valid lane counts as active)
    valid: np.ndarray       # uint64
    lane_pcs: np.ndarray    # bool: the wave has per-lane pcs (lanes may stand elsewhere than pc)

    def copy(self) -> "WaveHeads":
        return WaveHeads(self.pc.copy(), self.pc_known.copy(), self.exec.copy(), self.exec_known.copy(),
                         self.valid.copy(), self.lane_pcs.copy())

    @property
    def active(self) -> np.ndarray:
        """exec & valid (valid alone where exec is unknown), as masks."""
        return np.where(self.exec_known, self.exec & self.valid, self.valid)

    @classmethod
    def of_waves(cls, waves, indices) -> "WaveHeads":
        """From built wave objects (reads their registers)."""
        n = len(indices)
        heads = cls(np.zeros(n, np.uint64), np.zeros(n, bool), np.zeros(n, np.uint64), np.zeros(n, bool),
                    np.zeros(n, np.uint64), np.zeros(n, bool))
        for row, i in enumerate(indices):
            wave = waves[i]
            pc = wave.pc
            if pc is not None:
                heads.pc[row], heads.pc_known[row] = pc & 0xFFFF_FFFF_FFFF_FFFF, True
            exec_mask = wave.exec_mask
            if exec_mask is not None:
                heads.exec[row], heads.exec_known[row] = lanes_to_mask(exec_mask), True
            heads.valid[row] = lanes_to_mask(wave.valid_lanes)
            heads.lane_pcs[row] = wave.lane_pcs is not None
        return heads


def popcount(masks: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    as_bytes = np.ascontiguousarray(masks, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(as_bytes, axis=1).sum(axis=1)


class GpuState:
    def __init__(self, *, root: Path | None, source: Path | None, producer: str, manifest: dict,
                 target: Target, code_objects: list[CodeObjectRef], memory: dict[str, SparseMemory],
                 dispatches: list[Dispatch], focus: Focus | None, stop: Stop | None,
                 files: "DumpFiles | None" = None, warnings: list[str] | None = None,
                 read_heads: "Callable[[str, str | None], WaveHeads] | None" = None,
                 waves: "LazyWaves | None" = None, wave_table: "Callable[[], WaveTable] | None" = None):
        self.root = root          # the dump folder; None for a zip (see `source`)
        self.source = source      # the folder or .zip that was loaded
        self.producer = producer
        self.manifest = manifest
        self.target = target
        self.code_objects = code_objects
        self.memory = memory
        self.dispatches = dispatches
        self.focus = focus
        self.stop = stop
        self._files = files
        self.warnings = list(warnings or [])  # what the source lacks, said to the user at launch
        # what the source holds that a dump folder has no place for: said when it is saved as one
        self.not_kept: list[str] = []
        # every wave, in dispatch and workgroup order: a list, or (a dump folder) a LazyWaves that
        # makes each wave when first asked for; then `wave_table` gives their columns without them
        self.waves: Sequence[Wave]
        if waves is None:
            self.waves = [w for d in dispatches for w in d.waves]
            self._waves_by_id: dict[int, int] | None = {wave.id: i for i, wave in enumerate(self.waves)}
        else:
            self.waves, self._waves_by_id = waves, None
        self._make_table = wave_table
        self._table: WaveTable | None = None
        self._read_heads = read_heads  # pc/exec of every wave straight from the files, in bulk
        self._file_heads: WaveHeads | None = None

    @property
    def is_core(self) -> bool:
        """Read from a vendor's GPU core file rather than a dump folder."""
        from .corefiles import CoreFiles

        return isinstance(self._files, CoreFiles)

    def wave_table(self) -> "WaveTable":
        """Every wave's id, place and workgroup as columns (wavetable.WaveTable)."""
        if self._table is None:
            from .wavetable import WaveTable

            self._table = self._make_table() if self._make_table is not None else \
                WaveTable.of_waves(self.waves, self.dispatches)
        return self._table

    def made_waves(self) -> "list[tuple[int, Wave]]":
        """(index in `waves`, wave) of the wave objects that exist (every wave, unless made on demand)."""
        made = getattr(self.waves, "made", None)
        return made() if made is not None else list(enumerate(self.waves))

    def wave_index(self, wave_id: int) -> int | None:
        """Where the wave with this id is in `waves`, or None."""
        if self._waves_by_id is not None:
            return self._waves_by_id.get(wave_id)
        return self.waves.index_of(wave_id)

    def wave_heads(self) -> "WaveHeads | None":
        """pc, exec and valid lanes of every wave (in `waves` order) as arrays, for views of the
        whole dump; None for waves wider than 64 lanes. Waves already built answer from their
        registers, so writes are seen."""
        if self.target.lanes > 64:
            return None
        if self._file_heads is None:
            # every wave names its pc and mask alike
            names = getattr(self.waves, "register_names", None) or (  # (waves made on demand know them)
                (self.waves[0].pc_register, self.waves[0].exec_register) if self.waves else DEFAULT_REGISTER_NAMES)
            self._file_heads = self._read_heads(*names) \
                if self._read_heads is not None else WaveHeads.of_waves(self.waves, range(len(self.waves)))
        heads = self._file_heads
        built = [i for i, wave in self.made_waves() if wave.loaded]
        if built:
            live = WaveHeads.of_waves(self.waves, built)
            heads = heads.copy()
            for name in ("pc", "pc_known", "exec", "exec_known", "valid", "lane_pcs"):
                getattr(heads, name)[built] = getattr(live, name)
        return heads

    def use_register_names(self, pc: str, exec_mask: str | None) -> None:
        """Name the registers that hold each wave's PC and execution mask (the adapter knows them)."""
        if hasattr(self.waves, "register_names"):  # for the waves made from now on
            self.waves.register_names = (pc, exec_mask)
        for _, wave in self.made_waves():
            wave.pc_register, wave.exec_register = pc, exec_mask
        self._file_heads = None

    def wave_by_id(self, wave_id: int) -> Wave:
        index = self.wave_index(int(wave_id))
        if index is None:
            raise StateError(f"no wave with id {wave_id}", "waves")
        return self.waves[index]

    def apertures_for(self, wave: Wave) -> dict[str, Aperture]:
        """The generic-address windows a wave's addresses go through: its dispatch's, else the target's."""
        dispatch = wave.dispatch
        if dispatch is not None and dispatch.apertures is not None:
            return dispatch.apertures
        return self.target.apertures or {}

    def code_object_by_id(self, co_id: int) -> CodeObjectRef | None:
        for ref in self.code_objects:
            if ref.id == co_id:
                return ref
        return None

    @property
    def modified(self) -> bool:
        """True once any overlay write happened (memories, LDS, private, registers)."""
        spaces = list(self.memory.values()) + [m for d in self.dispatches for m in d.memory.values()]
        for _, wave in self.made_waves():  # a wave not built yet has no writes
            if wave.loaded:
                private = wave._load()[2]  # (an Unreadable one has no writes)
                if wave.registers.modified or (isinstance(private, PrivateMemory) and private.wave_view.modified):
                    return True
        for d in self.dispatches:
            made = d.workgroups.made() if hasattr(d.workgroups, "made") else d.workgroups
            spaces += [wg.lds for wg in made if wg.lds_loaded and wg.lds is not None]
        return any(m.modified for m in spaces)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the state, overlays included, as a new dump folder."""
        from .save import save_state

        return save_state(self, Path(path))

    def close(self) -> None:
        """Release temporary files extracted from a zip (also done when the state is collected), and let
        the collector walk what loading froze (reader._no_collection)."""
        if self._files is not None:
            self._files.close()
        thaw = getattr(self, "_thaw", None)
        if thaw is not None:
            thaw()

    def __enter__(self) -> "GpuState":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def summary(self) -> str:
        t = self.target
        workgroups = sum(len(d.workgroups) for d in self.dispatches)
        others = sorted({d.processor for d in self.dispatches if d.processor and d.processor != t.processor})
        processor = " + ".join([t.processor] + others)
        return (f"{t.vendor} {processor}, {t.lanes} lanes, {len(self.code_objects)} code objects, "
                f"{len(self.dispatches)} dispatches, {workgroups} workgroups, {len(self.waves)} waves")

    def __repr__(self) -> str:
        return f"GpuState({self.summary()})"
