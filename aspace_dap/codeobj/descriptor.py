"""The 64-byte AMDHSA kernel descriptor (`<kernel>.kd`), code object V3 and later.

Byte layout:
    0  u32 group_segment_fixed_size      4  u32 private_segment_fixed_size
    8  u32 kernarg_size                 12  reserved
   16  i64 kernel_code_entry_byte_offset (from the descriptor's own address)
   24  reserved (20 bytes)
   44  u32 compute_pgm_rsrc3            48  u32 compute_pgm_rsrc1
   52  u32 compute_pgm_rsrc2            56  u16 kernel_code_properties
   58  u16 kernarg_preload              60  reserved
The rsrc words are what the command processor loads into the COMPUTE_PGM_RSRC*
registers; the debugger needs them to know which SGPRs/VGPRs a wave started with.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aspace_dap.errors import CodeObjectError

from .elfflags import gfx_major

KERNEL_DESCRIPTOR_SIZE = 64
_LAYOUT = struct.Struct("<IIII q 20x IIIHH 4x")
assert _LAYOUT.size == KERNEL_DESCRIPTOR_SIZE

# Processors whose unified VGPR/AGPR file allocates in blocks of 8 and uses rsrc3 ACCUM_OFFSET.
_UNIFIED_VGPR_FILE = frozenset({"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"})


def _bits(value: int, low: int, width: int) -> int:
    return (value >> low) & ((1 << width) - 1)


@dataclass(frozen=True)
class KernelDescriptor:
    address: int  # where the descriptor itself lives (value of the .kd symbol)
    group_segment_fixed_size: int  # LDS bytes per work-group
    private_segment_fixed_size: int  # scratch bytes per work-item
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    compute_pgm_rsrc3: int
    kernel_code_properties: int
    kernarg_preload: int

    @classmethod
    def parse(cls, raw: bytes, address: int) -> KernelDescriptor:
        if len(raw) < KERNEL_DESCRIPTOR_SIZE:
            raise CodeObjectError(
                f"kernel descriptor at 0x{address:x} has {len(raw)} bytes, needs {KERNEL_DESCRIPTOR_SIZE}"
            )
        (group, private, kernarg, _reserved, entry, rsrc3, rsrc1, rsrc2, props, preload) = _LAYOUT.unpack_from(raw)
        return cls(address, group, private, kernarg, entry, rsrc1, rsrc2, rsrc3, props, preload)

    @property
    def entry_address(self) -> int:
        return self.address + self.kernel_code_entry_byte_offset

    # compute_pgm_rsrc1
    @property
    def granulated_workitem_vgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 0, 6)

    @property
    def granulated_wavefront_sgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 6, 4)

    @property
    def float_round_mode_32(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 12, 2)

    @property
    def float_round_mode_16_64(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 14, 2)

    @property
    def float_denorm_mode_32(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 16, 2)

    @property
    def float_denorm_mode_16_64(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 18, 2)

    @property
    def enable_dx10_clamp(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 21, 1))

    @property
    def enable_ieee_mode(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 23, 1))

    @property
    def fp16_overflow(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 26, 1))

    @property
    def wgp_mode(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 29, 1))

    @property
    def mem_ordered(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 30, 1))

    # compute_pgm_rsrc2
    @property
    def enable_private_segment(self) -> bool:
        """Scratch is set up and the wave gets a private segment wave offset SGPR."""
        return bool(_bits(self.compute_pgm_rsrc2, 0, 1))

    @property
    def user_sgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc2, 1, 5)

    @property
    def enable_trap_handler(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 6, 1))

    @property
    def enable_sgpr_workgroup_id(self) -> tuple[bool, bool, bool]:
        return tuple(bool(_bits(self.compute_pgm_rsrc2, 7 + axis, 1)) for axis in range(3))

    @property
    def enable_sgpr_workgroup_info(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 10, 1))

    @property
    def enable_vgpr_workitem_id(self) -> int:
        """0: only X in v0; 1: X, Y; 2: X, Y, Z (packed into v0 on gfx90a+ or v0..v2 before)."""
        return _bits(self.compute_pgm_rsrc2, 11, 2)

    @property
    def granulated_lds_size(self) -> int:
        return _bits(self.compute_pgm_rsrc2, 15, 9)

    # compute_pgm_rsrc3
    @property
    def accum_offset(self) -> int:
        """First AGPR's index in the unified register file (gfx90a/gfx940 family only)."""
        return (_bits(self.compute_pgm_rsrc3, 0, 6) + 1) * 4

    @property
    def tg_split(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc3, 16, 1))

    @property
    def shared_vgpr_count(self) -> int:
        """GFX10+ wave64 shared VGPRs, in blocks of 8."""
        return _bits(self.compute_pgm_rsrc3, 0, 4)

    # kernel_code_properties
    @property
    def enable_sgpr_private_segment_buffer(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 0, 1))

    @property
    def enable_sgpr_dispatch_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 1, 1))

    @property
    def enable_sgpr_queue_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 2, 1))

    @property
    def enable_sgpr_kernarg_segment_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 3, 1))

    @property
    def enable_sgpr_dispatch_id(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 4, 1))

    @property
    def enable_sgpr_flat_scratch_init(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 5, 1))

    @property
    def enable_sgpr_private_segment_size(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 6, 1))

    @property
    def enable_wavefront_size32(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 10, 1))

    @property
    def uses_dynamic_stack(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 11, 1))

    @property
    def wavefront_size(self) -> int:
        return 32 if self.enable_wavefront_size32 else 64

    def initial_sgprs(self) -> dict[str, int]:
        """First SGPR of each value the hardware/CP preloads, in the ABI's fixed order.

        User SGPRs come first (each enabled one takes its width), then the
        system SGPRs: work-group ids, work-group info, private segment wave offset.
        """
        layout: dict[str, int] = {}
        next_sgpr = 0
        user = (
            ("private_segment_buffer", self.enable_sgpr_private_segment_buffer, 4),
            ("dispatch_ptr", self.enable_sgpr_dispatch_ptr, 2),
            ("queue_ptr", self.enable_sgpr_queue_ptr, 2),
            ("kernarg_segment_ptr", self.enable_sgpr_kernarg_segment_ptr, 2),
            ("dispatch_id", self.enable_sgpr_dispatch_id, 2),
            ("flat_scratch_init", self.enable_sgpr_flat_scratch_init, 2),
            ("private_segment_size", self.enable_sgpr_private_segment_size, 1),
        )
        for name, enabled, width in user:
            if enabled:
                layout[name] = next_sgpr
                next_sgpr += width
        # rsrc2.USER_SGPR_COUNT is authoritative: it also counts preloaded kernargs.
        next_sgpr = max(next_sgpr, self.user_sgpr_count)
        for axis, enabled in zip("xyz", self.enable_sgpr_workgroup_id):
            if enabled:
                layout[f"workgroup_id_{axis}"] = next_sgpr
                next_sgpr += 1
        if self.enable_sgpr_workgroup_info:
            layout["workgroup_info"] = next_sgpr
            next_sgpr += 1
        if self.enable_private_segment:
            layout["private_segment_wave_offset"] = next_sgpr
            next_sgpr += 1
        return layout

    def vgpr_granule(self, processor: str) -> int | None:
        """VGPRs per GRANULATED_WORKITEM_VGPR_COUNT step, or None where not known."""
        if processor in _UNIFIED_VGPR_FILE:
            return 8
        major = gfx_major(processor)
        if major is None or major > 10:
            return None
        if major == 10:
            return 8 if self.enable_wavefront_size32 else 4
        return 4

    def allocated_vgprs(self, processor: str) -> int | None:
        granule = self.vgpr_granule(processor)
        return None if granule is None else (self.granulated_workitem_vgpr_count + 1) * granule

    def allocated_sgprs(self, processor: str) -> int | None:
        """SGPRs the wave was given; None on GFX10+ (always 128 there, field unused)."""
        major = gfx_major(processor)
        if major is None or major >= 10:
            return None
        if major == 9:
            return (self.granulated_wavefront_sgpr_count // 2 + 1) * 16
        return (self.granulated_wavefront_sgpr_count + 1) * 8
