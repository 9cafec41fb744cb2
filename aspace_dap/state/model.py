"""The loaded dump: target, code objects, memories, dispatches, workgroups and waves."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import StateError
from .memory import SparseMemory
from .private import PrivateMemory
from .registers import RegisterFile

if TYPE_CHECKING:
    from .files import DumpFiles


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


@dataclass
class Stop:
    reason: str
    description: str = ""


def mask_to_lanes(mask: int, lanes: int) -> np.ndarray:
    """Bit i of `mask` -> lane i."""
    bits = np.frombuffer(int(mask & ((1 << lanes) - 1)).to_bytes((lanes + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[:lanes].astype(bool)


def lanes_to_mask(lanes: np.ndarray) -> int:
    return int.from_bytes(np.packbits(np.asarray(lanes, dtype=bool), bitorder="little").tobytes(), "little")


class Wave:
    # the registers holding the PC and the execution mask: the adapter's names, set for every
    # wave by GpuState.use_register_names (AMD and NVIDIA dumps say `pc` / `exec`)
    pc_register = "pc"
    exec_register: str | None = "exec"

    def __init__(self, id: int, index_in_workgroup: int, registers: RegisterFile, lanes: int,
                 valid_lanes: np.ndarray, private: PrivateMemory | None = None,
                 lane_pcs: np.ndarray | None = None, path: str = ""):
        self.id = id
        self.index_in_workgroup = index_in_workgroup
        self.registers = registers
        self.lanes = lanes
        self.valid_lanes = valid_lanes
        self.private = private
        self.lane_pcs = lane_pcs
        self.path = path
        self.workgroup: Workgroup | None = None
        self.dispatch: Dispatch | None = None

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
    def __init__(self, id: tuple[int, int, int], lds: SparseMemory | None, waves: list[Wave], path: str = ""):
        self.id = id
        self.lds = lds
        self.waves = waves
        self.path = path
        self.dispatch: Dispatch | None = None

    def __repr__(self) -> str:
        return f"Workgroup(id={self.id}, {len(self.waves)} waves)"


class Dispatch:
    def __init__(self, id: int, kernel: str, code_object: int | None, grid_size: tuple[int, int, int],
                 workgroup_size: tuple[int, int, int], workgroups: list[Workgroup],
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
        for workgroup in workgroups:
            workgroup.dispatch = self
            for wave in workgroup.waves:
                wave.workgroup = workgroup
                wave.dispatch = self

    def const_bank(self, bank: int) -> SparseMemory | None:
        memory = self.memory.get("const")
        return None if memory is None else memory.bank(bank)

    @property
    def waves(self) -> list[Wave]:
        return [wave for workgroup in self.workgroups for wave in workgroup.waves]

    def __repr__(self) -> str:
        return f"Dispatch(id={self.id}, kernel={self.kernel!r})"


class GpuState:
    def __init__(self, *, root: Path | None, source: Path | None, producer: str, manifest: dict,
                 target: Target, code_objects: list[CodeObjectRef], memory: dict[str, SparseMemory],
                 dispatches: list[Dispatch], focus: Focus | None, stop: Stop | None,
                 files: "DumpFiles | None" = None, warnings: list[str] | None = None):
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
        self.waves: list[Wave] = [w for d in dispatches for w in d.waves]
        self._waves_by_id = {wave.id: wave for wave in self.waves}

    def use_register_names(self, pc: str, exec_mask: str | None) -> None:
        """Name the registers that hold each wave's PC and execution mask (the adapter knows them)."""
        for wave in self.waves:
            wave.pc_register, wave.exec_register = pc, exec_mask

    def wave_by_id(self, wave_id: int) -> Wave:
        wave = self._waves_by_id.get(int(wave_id))
        if wave is None:
            raise StateError(f"no wave with id {wave_id}", "waves")
        return wave

    def code_object_by_id(self, co_id: int) -> CodeObjectRef | None:
        for ref in self.code_objects:
            if ref.id == co_id:
                return ref
        return None

    @property
    def modified(self) -> bool:
        """True once any overlay write happened (memories, LDS, private, registers)."""
        spaces = list(self.memory.values()) + [m for d in self.dispatches for m in d.memory.values()]
        for wave in self.waves:
            if wave.registers.modified or (wave.private and wave.private.wave_view.modified):
                return True
        for d in self.dispatches:
            spaces += [wg.lds for wg in d.workgroups if wg.lds is not None]
        return any(m.modified for m in spaces)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the state, overlays included, as a new dump folder."""
        from .save import save_state

        return save_state(self, Path(path))

    def close(self) -> None:
        """Release temporary files extracted from a zip (also done when the state is collected)."""
        if self._files is not None:
            self._files.close()

    def __enter__(self) -> "GpuState":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def summary(self) -> str:
        t = self.target
        workgroups = sum(len(d.workgroups) for d in self.dispatches)
        return (f"{t.vendor} {t.processor}, {t.lanes} lanes, {len(self.code_objects)} code objects, "
                f"{len(self.dispatches)} dispatches, {workgroups} workgroups, {len(self.waves)} waves")

    def __repr__(self) -> str:
        return f"GpuState({self.summary()})"
