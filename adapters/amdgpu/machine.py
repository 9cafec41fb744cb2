"""An AMD GPU as the ROCm stack sizes its queues: the KFD topology node a core's agent entry describes,
and the per-queue context-save area and scratch slots libhsakmt and ROCr derive from it.

Sources (read for the rules; nothing copied):
- libhsakmt `queues.c`, update_ctx_save_restore_size: per XCC, cu_num = compute cores / SIMDs per CU /
  XCCs; wave_num = min(cu_num * 40, shader banks / arrays * 512) before gfx10, cu_num * 32 from gfx10;
  the control stack is PAGE_ALIGN(header + wave_num * (8 bytes before gfx10, 12 from gfx10) + 8),
  at most 0x7000 on gfx10; the rest holds cu_num * (VGPR file + 16 KiB SGPRs + LDS + 4 KiB hardware
  registers) per CU, the VGPR file 512 KiB on gfx90a / gfx94x / gfx950 (AccVGPRs included),
  384 KiB on gfx1151 / gfx1200 / gfx1201, else 256 KiB. One such area per XCC, each XCC's at
  ctx_save_restore_address + xcc * ctx_save_restore_size (fill_cwsr_header), then the debugger's
  memory (wave_num * 32 bytes per XCC).
- ROCr `amd_aql_queue.cpp` (FillComputeTmpRingSize): COMPUTE_TMPRING_SIZE.WAVES is the scratch wave
  slots of one XCC, at most CUs * 32 (MaxSlotsScratchCU); ROCdbgapi's scratch_memory_region finds a
  wave's slot from its shader engine and scoreboard id (cwsr.scratch_slot).
- KFD's kfd_dbg_device_info_entry: simd_count, max_waves_per_simd, array_count (shader arrays of
  the whole node), simd_arrays_per_engine, num_xcc.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cwsr

PAGE = 4096
SGPR_BYTES_PER_CU = 0x4000
HWREG_BYTES_PER_CU = 0x1000
SCRATCH_WAVES_PER_CU = 32   # ROCr's MaxSlotsScratchCU
DEBUGGER_BYTES_PER_WAVE = 32


def _page(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


@dataclass(frozen=True)
class Gpu:
    """One agent's GPU: its XCCs, compute units and shader engines (per XCC), as KFD's topology has them."""

    processor: str
    xccs: int
    cus_per_xcc: int
    shader_engines_per_xcc: int
    simds_per_cu: int
    waves_per_simd: int
    lds_kib: int = 64

    @property
    def family(self) -> cwsr.Family:
        family = cwsr.family_for(self.processor)
        if family is None:
            raise ValueError(f"{self.processor}: no context-save layout known")
        return family

    @property
    def gfx10_or_later(self) -> bool:
        return self.family.wave32_capable

    @property
    def wave_slots(self) -> int:
        """libhsakmt's wave_num: the waves one XCC's save area is sized for."""
        if self.gfx10_or_later:
            return self.cus_per_xcc * 32
        banks = self.shader_engines_per_xcc * self.xccs  # NumShaderBanks / NumArrays (one array per engine)
        return min(self.cus_per_xcc * 40, banks * 512)

    @property
    def control_stack_size(self) -> int:
        per_wave = 12 if self.gfx10_or_later else 8
        size = _page(cwsr.HEADER_SIZE + self.wave_slots * per_wave + 8)
        return min(size, 0x7000) if self.processor.startswith("gfx10") else size

    @property
    def vgpr_bytes_per_cu(self) -> int:
        if self.processor in ("gfx90a", "gfx908", "gfx950") or self.processor.startswith("gfx94"):
            return 0x80000
        if self.processor in ("gfx1151", "gfx1200", "gfx1201"):
            return 0x60000
        return 0x40000

    @property
    def area_size(self) -> int:
        """ctx_save_restore_size: one XCC's context-save area (header, control stack, wave records)."""
        per_cu = self.vgpr_bytes_per_cu + SGPR_BYTES_PER_CU + (self.lds_kib << 10) + HWREG_BYTES_PER_CU
        return self.control_stack_size + _page(self.cus_per_xcc * per_cu)

    @property
    def debug_memory_size(self) -> int:
        return (self.wave_slots * DEBUGGER_BYTES_PER_WAVE + 63) // 64 * 64

    @property
    def scratch_waves(self) -> int:
        """COMPUTE_TMPRING_SIZE.WAVES of one XCC (per shader engine on gfx11): its scratch wave slots."""
        waves = self.cus_per_xcc * SCRATCH_WAVES_PER_CU
        return waves // self.shader_engines_per_xcc if self.family is cwsr.GFX11 else waves

    @property
    def slots_per_engine(self) -> int:
        """Scratch slots of one shader engine of one XCC (the wave word's scoreboard id counts them)."""
        return self.cus_per_xcc * SCRATCH_WAVES_PER_CU // self.shader_engines_per_xcc

    def agent_fields(self) -> dict[str, int]:
        """kfd_dbg_device_info_entry's topology fields for this GPU."""
        return {"simd_count": self.xccs * self.cus_per_xcc * self.simds_per_cu,
                "max_waves_per_simd": self.waves_per_simd,
                "array_count": self.xccs * self.shader_engines_per_xcc, "simd_arrays_per_engine": 1,
                "num_xcc": self.xccs}


# one GPU of each kind the save-area layouts cover, as their products ship
GPUS = {
    "gfx90a": Gpu("gfx90a", 1, 110, 8, 4, 8),     # MI250X, one of its two dies
    "gfx942": Gpu("gfx942", 8, 38, 4, 4, 8),      # MI300X: 8 XCCs of 38 CUs
    "gfx1030": Gpu("gfx1030", 1, 60, 4, 2, 16),   # RX 6800
    "gfx1100": Gpu("gfx1100", 1, 96, 6, 2, 16),   # RX 7900 XTX
}


def gpu_for(processor: str) -> Gpu | None:
    return GPUS.get(processor)
