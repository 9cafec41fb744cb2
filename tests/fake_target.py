"""A small in-memory AMDGPU-like target for evaluator tests: no files, no adapter."""

from __future__ import annotations

import numpy as np

from aspace_dap.dwarf.target import AddressSpace, MemoryRead, RegisterInfo
from aspace_dap.errors import UnavailableError

GLOBAL = AddressSpace(0, "global", 8, "device")
GENERIC = AddressSpace(1, "generic", 8, "device")
LOCAL = AddressSpace(3, "local", 4, "workgroup")
PRIVATE_LANE = AddressSpace(5, "private_lane", 4, "lane")
PRIVATE_WAVE = AddressSpace(6, "private_wave", 4, "wave")
SPACES = {s.number: s for s in (GLOBAL, GENERIC, LOCAL, PRIVATE_LANE, PRIVATE_WAVE)}

PC, EXEC = 16, 17


def sgpr(n: int) -> int:
    return 32 + n


def vgpr(n: int) -> int:
    return 2560 + n


class FakeTarget:
    """64 lanes; SGPRs are 4 bytes, VGPRs are whole-wave (heterogeneous) or per-lane (upstream)."""

    address_size = 8

    def __init__(self, lanes: int = 64, whole_wave_vgprs: bool = True, seed: int = 1):
        self.lanes = lanes
        self.whole_wave_vgprs = whole_wave_vgprs
        rng = np.random.default_rng(seed)
        self.sgprs = {n: rng.integers(0, 2**32, dtype=np.uint64) for n in range(64)}
        self.vgprs = {n: rng.integers(0, 2**32, size=lanes, dtype=np.uint64).astype(np.uint32) for n in range(8)}
        self.pc = 0x1000
        self.exec = (1 << lanes) - 1
        self.memory: dict[int, dict[int, int]] = {0: {}, 3: {}, 5: {}, 6: {}}
        self.missing_registers: set[int] = set()

    # -- setup helpers
    def poke(self, space: int, addr: int, data: bytes, lane: int | None = None):
        key = (space, lane) if space == 5 else space
        mem = self.memory.setdefault(key, {})
        for i, b in enumerate(data):
            mem[addr + i] = b

    # -- EvalTarget
    def register_info(self, regno: int) -> RegisterInfo:
        if regno in self.missing_registers:
            raise UnavailableError(f"register {regno} is not in the dump")
        if regno == PC:
            return RegisterInfo(regno, "pc", 8, False)
        if regno == EXEC:
            return RegisterInfo(regno, "exec", self.lanes // 8, False)
        if 32 <= regno < 96:
            return RegisterInfo(regno, f"s{regno - 32}", 4, False)
        if 2560 <= regno < 2568:
            if self.whole_wave_vgprs:
                return RegisterInfo(regno, f"v{regno - 2560}", 4 * self.lanes, False)
            return RegisterInfo(regno, f"v{regno - 2560}", 4, True)
        raise UnavailableError(f"no register {regno}")

    def read_register(self, regno: int, lanes: np.ndarray) -> MemoryRead:
        info = self.register_info(regno)
        g = len(lanes)
        if regno == PC:
            row = np.frombuffer(self.pc.to_bytes(8, "little"), np.uint8)
        elif regno == EXEC:
            row = np.frombuffer(self.exec.to_bytes(self.lanes // 8, "little"), np.uint8)
        elif 32 <= regno < 96:
            row = np.frombuffer(int(self.sgprs[regno - 32]).to_bytes(4, "little"), np.uint8)
        else:
            v = self.vgprs[regno - 2560]
            if info.per_lane:
                data = v[lanes].astype("<u4").view(np.uint8).reshape(g, 4)
                return MemoryRead(data, np.ones(data.shape, bool))
            row = v.astype("<u4").view(np.uint8)
        data = np.broadcast_to(row, (g, len(row)))
        return MemoryRead(data, np.ones(data.shape, bool))

    def address_space(self, number: int) -> AddressSpace:
        if number in SPACES:
            return SPACES[number]
        if 0x20 <= number < 0x60:
            return AddressSpace(number, f"private_lane{number - 0x20}", 4, "lane")
        from aspace_dap.errors import EvaluationError
        raise EvaluationError(f"unknown address space {number}")

    def default_address_space(self) -> AddressSpace:
        return GLOBAL

    def xderef_address_space(self, number: int) -> AddressSpace:
        return {0: GLOBAL, 1: PRIVATE_LANE, 2: LOCAL}.get(number) or self.address_space(number)

    def frame_base_address(self, regno, value):
        if regno in (64, 65):  # SGPR32 (stack pointer), SGPR33 (frame pointer)
            return PRIVATE_LANE, value >> np.uint64(6)
        return GLOBAL, value

    def read_memory(self, space: AddressSpace, lanes, addrs, size) -> MemoryRead:
        g = len(lanes)
        data = np.zeros((g, size), np.uint8)
        valid = np.zeros((g, size), bool)
        for i in range(g):
            number, lane = space.number, int(lanes[i])
            if number >= 0x20:
                number, lane = 5, number - 0x20
            key = (number, lane) if number == 5 else number
            mem = self.memory.get(key, {})
            for j in range(size):
                b = mem.get(int(addrs[i]) + j)
                if b is not None:
                    data[i, j] = b
                    valid[i, j] = True
        return MemoryRead(data, valid)
