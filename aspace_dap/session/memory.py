"""Memory: memory references, and reading, writing and laying out the memory they name.

Owns how a place in an address space becomes a self-contained reference (`local@wg(1,0,0)#0x40`) and
back (missing context taken from the focus), byte reads and writes through the wave's target, which
variables occupy a range, and the memory a user can open for a wave and lane.
"""

from __future__ import annotations

import numpy as np

from ..dwarf.target import Dialect
from ..errors import AspaceError
from ..memref import MemRef, format_memref, parse_memref
from ..values.elements import scalar_elements
from ..values.objects import Obj
from .focus import Focus
from .frames import Frame
from .programs import Part, Programs
from .variables import Variables


MAX_LAYOUT_ELEMENTS = 4096  # a 512-byte page of a view has at most 512


class Memory(Part):
    def __init__(self, programs: Programs, focus: Focus, variables: Variables):
        super().__init__(programs)
        self.focus = focus
        self.variables = variables
        self._first_wave_of: dict = {}  # (dispatch id, workgroup id) -> its first wave

    def memory_reference(self, obj: Obj, wave_id: int, lane_index: int = 0) -> str | None:
        place = obj.memory_place()
        if place is None:
            return None
        lane = int(place.lanes[lane_index])
        addr = int(place.address[lane_index])
        return format_memref(self.memref_for_space(place.space.name, addr, wave_id, lane))

    def memref_for_space(self, space: str, addr: int, wave_id: int, lane: int) -> MemRef:
        """A self-contained reference: the space's scope says which context it needs."""
        wave = self.focus.wave(wave_id)
        scope = self.adapter.space_by_name(space).scope
        if scope == "workgroup":
            wg = wave.workgroup.id if wave.workgroup is not None else (0, 0, 0)
            d = wave.dispatch.id if wave.dispatch is not None else 0
            return MemRef(space, addr, workgroup=tuple(wg), dispatch=d)
        if scope == "lane":
            return MemRef(space, addr, wave=wave.id, lane=lane)
        if scope == "wave":
            return MemRef(space, addr, wave=wave.id)
        return MemRef(space, addr)

    def resolve_memref(self, text: str) -> tuple[MemRef, object, object, int]:
        """A memory reference → (ref, address space, wave target, lane) using the focus for missing context."""
        ref = parse_memref(text)
        space = self.adapter.space_by_name(ref.space)
        wave = self.focus.wave()
        lane = self.focus.focus_lane
        if ref.workgroup is not None:
            wave = self._wave_in_workgroup(ref.dispatch, ref.workgroup)
        elif ref.wave is not None:
            wave = self.state.wave_by_id(ref.wave)
            if ref.lane is not None:
                lane = ref.lane
        if not 0 <= lane < wave.lanes:
            raise AspaceError(f"lane {lane} is outside wave {wave.id}")
        ref = self.memref_for_space(ref.space, ref.address, wave.id, lane)
        return ref, space, self.programs.target_for(wave, Dialect(vendor_ops=self.adapter.vendor)), lane

    def _wave_in_workgroup(self, dispatch: int, wg: tuple[int, int, int]):
        """The first wave of the workgroup, found in the wave table (not by making every wave)."""
        key = (dispatch, tuple(wg))
        w = self._first_wave_of.get(key)
        if w is None:
            index = self.state.wave_table().first_in_workgroup(dispatch, key[1])
            if index is None:
                raise AspaceError(f"no workgroup ({wg[0]},{wg[1]},{wg[2]}) in dispatch {dispatch}")
            w = self._first_wave_of[key] = self.state.waves[index]
        return w

    def read_memory(self, text: str, offset: int, count: int) -> tuple[int, memoryview, np.ndarray]:
        """(start address, bytes, valid mask) for `count` bytes at the reference + offset; the bytes
        are a read-only view, not a copy (a memory view may read megabytes)."""
        ref, space, target, lane = self.resolve_memref(text)
        start = ref.address + offset
        if start < 0 or start >= 1 << (8 * space.address_size):
            return start, memoryview(b""), np.zeros(0, bool)
        count = min(count, (1 << (8 * space.address_size)) - start)
        got = target.read_memory(space, np.array([lane]), np.array([start], np.uint64), count)
        return start, memoryview(got.data[0]).toreadonly(), got.valid[0]

    def memory_layout(self, frame: Frame, text: str, offset: int, count: int) -> list[dict]:
        """The variables of a frame (and its file scope) that occupy bytes of [reference + offset,
        + count) in the same memory and context: [{name, type, address, size, memoryReference}],
        from each variable's evaluated location for the frame's lane. Variables whose place is not
        known (optimized out, registers, unresolved LDS offsets) are not listed. `elements` lists the
        (address, size, kind) of each scalar element of a variable inside the range, from its DWARF
        type, unless there are more than MAX_LAYOUT_ELEMENTS."""
        ref, _, _, _ = self.resolve_memref(text)
        start, end = ref.address + offset, ref.address + offset + count
        same = (ref.space, ref.wave, ref.lane, ref.workgroup, ref.dispatch)
        out = []
        for var in self.variables.variables(frame) + self.variables.globals(frame):
            try:
                obj = self.variables.read_variable(frame, var).obj_for(frame.lane)
            except AspaceError:
                continue
            if obj is None or obj.error is not None or obj.location is None:
                continue
            places = obj.location.places
            place = obj.memory_place()
            if place is None or len(places) != 1 or obj.size is None:
                continue  # in pieces or not in memory: no single byte range to mark
            addr = int(place.address[0])
            at = self.memref_for_space(place.space.name, addr, frame.wave_id, int(place.lanes[0]))
            if (at.space, at.wave, at.lane, at.workgroup, at.dispatch) != same:
                continue
            if addr < end and addr + obj.size > start:
                found = {"name": var.name or "?", "type": obj.type.display_name(), "address": addr,
                         "size": int(obj.size), "memoryReference": format_memref(at)}
                elements = scalar_elements(obj.type, start - addr, end - addr, MAX_LAYOUT_ELEMENTS)
                if elements is not None:
                    found["elements"] = [(addr + offset, size, kind) for offset, size, kind in elements]
                out.append(found)
        out.sort(key=lambda v: (v["address"], -v["size"]))
        return out

    def write_memory(self, text: str, offset: int, data: bytes) -> int:
        self.variables.note_write()
        ref, space, target, lane = self.resolve_memref(text)
        start = ref.address + offset
        if start < 0 or start + len(data) > 1 << (8 * space.address_size):
            raise AspaceError(f"writeMemory at {text} offset {offset} is outside the {space.name} address space")
        target.write_memory(space, np.array([lane]), np.array([start], np.uint64),
                            np.frombuffer(data, np.uint8)[None, :])
        return len(data)

    def memory_spaces(self, wave_id: int | None = None, lane: int | None = None) -> list[dict]:
        """Memory a user can open for this wave and lane: its workgroup's shared memory, the lane's
        private memory, the wave's raw private memory, and the device regions of the dump.

        `kind` is the scope ("workgroup", "lane", "wave", "device"), so clients need not know each
        vendor's names (AMD local/private_lane, NVIDIA shared/local, Intel local/private).
        """
        wave = self.focus.wave(wave_id)
        lane = self.focus.focus_lane if lane is None else lane
        out = []

        def add(space, addr, size, kind):
            out.append({"name": space, "kind": kind, "size": size,
                        "memoryReference": format_memref(self.memref_for_space(space, addr, wave.id, lane))})

        wg = wave.workgroup
        by_scope: dict[str, list[str]] = {}
        for name, space in self.adapter.spaces().items():
            by_scope.setdefault(space.scope, []).append(name)
        if wg is not None and wg.lds is not None:
            size = max((a + n for a, n in wg.lds.declared_ranges()), default=0)
            for name in by_scope.get("workgroup", []):
                add(name, 0, size, "workgroup")
        if wave.private is not None:
            for name in by_scope.get("lane", []):
                add(name, wave.private.base, wave.private.lane_size, "lane")
            if wave.private.layout == "swizzled":
                for name in by_scope.get("wave", []):
                    if name == "private_wave":
                        add(name, 0, wave.private.size, "wave")
        for name, mem in self.state.memory.items():
            for addr, size in mem.declared_ranges():
                out.append({"name": name, "kind": "device", "memoryReference": format_memref(MemRef(name, addr)),
                            "size": size})
        return out
