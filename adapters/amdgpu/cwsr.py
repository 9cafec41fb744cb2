"""AMDGPU context-save areas (CWSR): where the hardware's save handler puts each wave's state.

When a queue is preempted (or dumped), every wave on it is saved into the queue's context-save
area: a header, a control stack of 32-bit words, and one record per wave below it. The layout
differs per GPU generation; the numbers here follow ROCdbgapi's architecture code
(`cwsr_record_t`, `control_stack_iterate`, `scratch_memory_region`), which is what ROCgdb uses.

A record, low address to high: VGPRs, (gfx10+: shared VGPRs), (MI: AccVGPRs), SGPRs, 16 hardware
registers, 16 trap temporaries (ttmps), and — for the first wave of a workgroup only — the
workgroup's LDS. Records run downward from the end of the wave area; on gfx9 a 64-byte gap
separates them, on gfx10 and later they are packed.

`layout()` names each register slot of a record in memory order, so a record can be read as a
register file without copying it. Slots that hold nothing a debugger shows start with `_`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

HEADER = "<6IQI4x"         # control_stack_offset/size, wave_state_offset/size, debugger_memory offset/size,
HEADER_SIZE = 40           # error_reason (u64), error_event_id (+4 bytes padding)
PM4_WORDS = 2              # the control stack starts with two PM4 packet words the handler skips

IS_EVENT = 1 << 30         # control-stack word kinds (tested in this order)
IS_STATE = 1 << 31

HWREG_COUNT = 16
TTMP_COUNT = 16
HWREG_STATUS = 5           # dword index in the hardware-register block, gfx9 through gfx11
HWREG_TRAPSTS = 6

# ttmp fields written by the trap handler / SPI (AMDGPUUsage "Trap Handler ABI", ROCdbgapi)
TTMP6_PACKET_ID_MASK = (1 << 25) - 1       # gfx9 (not gfx942), gfx10, gfx11: dispatch packet index
TTMP6_TRAP_ID_SHIFT = 25                   # bits 28:25: the s_trap id that stopped the wave
TTMP6_HALTED = 1 << 29
TTMP6_STOPPED = 1 << 30
TTMP6_SPI_TTMPS_DISABLED = 1 << 31         # ROCr ABI 10+: this wave's SPI-written ttmps (ids, packet) are not valid
TTMP11_WAVE_IN_GROUP_MASK = 0x3F
TTMP11_GFX942_PACKET_SHIFT = 6             # gfx942: packet index in ttmp11 bits 30:6
TTMP11_GFX942_TTMPS_SETUP = 1 << 31        # gfx942: ttmp4:5 (wave id) are valid
TRAP_IDS = {1: "breakpoint", 2: "assert trap", 3: "debug trap"}

TRAPSTS_MEM_VIOL = 1 << 8
TRAPSTS_ILLEGAL_INST = 1 << 11
STATUS_GFX11_NO_VGPRS = 1 << 24


def _bits(value: int, lo: int, hi: int) -> int:
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


def _put(value: int, lo: int, hi: int) -> int:
    if value >> (hi - lo + 1):
        raise ValueError(f"{value} does not fit bits {hi}:{lo}")
    return value << lo


@dataclass(frozen=True)
class Family:
    """What differs between generations in the save area (ROCdbgapi's architecture classes)."""

    name: str
    state_words: int          # COMPUTE_RELAUNCH state words per state entry
    record_gap: int           # bytes between one record's bottom and the next one's top
    # wave word fields
    scoreboard_bits: tuple[int, int]
    scratch_en_bit: int
    first_wave_bit: int
    last_wave_bit: int
    se_bits: tuple[int, int]
    # state word fields
    lds_bits: tuple[int, int]
    acc_vgprs: bool           # MI: AccVGPRs saved between SGPRs and VGPRs; VGPR field covers both
    scalar_count: int         # SGPRs an instruction can name
    alias_count: int          # trailing save slots that are aliases (flat_scratch, xnack, vcc)
    gfx942_ttmps: bool = False

    @property
    def wave32_capable(self) -> bool:
        return self.state_words == 2


GFX9 = Family("gfx9", 1, 64, (0, 8), 15, 17, 16, (11, 12), (9, 17), False, 102, 6)
GFX90A = Family("gfx90a", 1, 64, (0, 8), 15, 17, 16, (9, 11), (9, 16), True, 102, 6)
GFX942 = Family("gfx942", 1, 64, (0, 8), 15, 17, 16, (9, 10), (9, 16), True, 102, 6, gfx942_ttmps=True)
GFX10 = Family("gfx10", 2, 0, (0, 9), 11, 12, 29, (24, 25), (10, 17), False, 106, 2)
GFX11 = Family("gfx11", 2, 0, (0, 9), 11, 12, 29, (24, 26), (10, 17), False, 106, 2)

FAMILIES = {"gfx90a": GFX90A, "gfx942": GFX942, "gfx1030": GFX10, "gfx1100": GFX11}
SUPPORTED = tuple(FAMILIES)


def family_for(processor: str) -> Family | None:
    return FAMILIES.get(processor)


def processor_from_target_version(version: int) -> str:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) as a processor name: 90010 -> gfx90a."""
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor}{stepping:x}"


def target_version(processor: str) -> int:
    digits = processor.removeprefix("gfx")
    major = int(digits[:-2])
    return major * 10000 + int(digits[-2], 16) * 100 + int(digits[-1], 16)


@dataclass(frozen=True)
class WaveRecord:
    """One wave's save record, as the control stack describes it."""

    family: Family
    wave_word: int
    state: tuple[int, ...]
    end: int                  # address one past the record's top byte

    # -- the wave word
    @cached_property
    def first_wave(self) -> bool:
        return bool(self.wave_word >> self.family.first_wave_bit & 1)

    @cached_property
    def last_wave(self) -> bool:
        return bool(self.wave_word >> self.family.last_wave_bit & 1)

    @cached_property
    def scratch_enabled(self) -> bool:
        return bool(self.wave_word >> self.family.scratch_en_bit & 1)

    @cached_property
    def shader_engine(self) -> int:
        return _bits(self.wave_word, *self.family.se_bits)

    @cached_property
    def scoreboard_id(self) -> int:
        return _bits(self.wave_word, *self.family.scoreboard_bits)

    # -- the state word(s)
    @cached_property
    def lanes(self) -> int:
        if self.family.wave32_capable:
            return 32 if _bits(self.state[0], 24, 24) else 64
        return 64

    @cached_property
    def vgpr_count(self) -> int:
        s = self.state[0]
        if self.family.acc_vgprs:        # architected VGPRs: (accum_offset + 1) * 4
            return (_bits(s, 24, 29) + 1) * 4
        if self.family.wave32_capable:   # blocks of 8 (wave32) or 4 (wave64)
            return (_bits(s, 0, 5) + 1) * (8 if self.lanes == 32 else 4)
        return (_bits(s, 0, 5) + 1) * 4

    @cached_property
    def acc_vgpr_count(self) -> int:
        if not self.family.acc_vgprs:
            return 0
        return max((_bits(self.state[0], 0, 5) + 1) * 8 - self.vgpr_count, 0)

    @cached_property
    def shared_vgpr_count(self) -> int:
        return _bits(self.state[0], 26, 29) * 8 if self.family.wave32_capable else 0

    @cached_property
    def sgpr_count(self) -> int:
        if self.family.wave32_capable:
            return 128
        return (_bits(self.state[0], 6, 8) + 1) * 16 - 16  # blocks of 16, less the ttmps

    @cached_property
    def lds_size(self) -> int:
        """Bytes of LDS the workgroup holds (saved with its first wave only); 128-dword granules."""
        return _bits(self.state[0], *self.family.lds_bits) * 512

    # -- geometry, top down from `end`
    @cached_property
    def lds_address(self) -> int:
        return self.end - (self.lds_size if self.first_wave else 0)

    @cached_property
    def hwregs_address(self) -> int:
        return self.lds_address - 4 * (HWREG_COUNT + TTMP_COUNT)

    @cached_property
    def ttmps_address(self) -> int:
        return self.lds_address - 4 * TTMP_COUNT

    @cached_property
    def sgprs_address(self) -> int:
        return self.hwregs_address - 4 * self.sgpr_count

    @cached_property
    def begin(self) -> int:
        return (self.sgprs_address - 4 * self.lanes * (self.vgpr_count + self.acc_vgpr_count)
                - 128 * self.shared_vgpr_count)

    @cached_property
    def register_bytes(self) -> int:
        return self.lds_address - self.begin

    def layout(self, vgprs_saved: bool = True) -> list[tuple[str, int]]:
        """Every 4-byte slot from `begin` to the LDS, named as the model names registers."""
        lanes = self.lanes
        out: list[tuple[str, int]] = []
        prefix = "v" if vgprs_saved else "_novgpr_v"
        out += [(f"{prefix}{i}", 4 * lanes) for i in range(self.vgpr_count)]
        out += [(f"_shared_v{i}", 128) for i in range(self.shared_vgpr_count)]
        out += [(f"a{i}", 4 * lanes) for i in range(self.acc_vgpr_count)]
        out += self._sgpr_slots()
        out += self._hwreg_slots()
        out += [(f"ttmp{i}", 4) for i in range(TTMP_COUNT)]
        return out

    def _sgpr_slots(self) -> list[tuple[str, int]]:
        f = self.family
        count = self.sgpr_count
        end = min(f.scalar_count + f.alias_count, count)
        if end < f.alias_count:  # too few slots for the aliases: nothing nameable
            return [(f"_sgpr{i}", 4) for i in range(count)]
        out = [(f"s{i}", 4) for i in range(end - f.alias_count)]
        if f.alias_count == 6:   # gfx9: flat_scratch, xnack_mask (really saved in the hwregs), vcc
            out += [("flat_scratch", 8), (f"_sgpr{end - 4}", 8), ("vcc", 8)]
        else:                    # gfx10+: vcc only (flat_scratch and xnack are hardware registers)
            out += [("vcc", 8)] if self.lanes == 64 else [("vcc", 4), (f"_sgpr{end - 1}", 4)]
        out += [(f"_sgpr{i}", 4) for i in range(end, count)]
        return out

    def _hwreg_slots(self) -> list[tuple[str, int]]:
        if not self.family.wave32_capable:   # gfx9: m0 pc exec status trapsts xnack_mask mode
            out = [("m0", 4), ("pc", 8), ("exec", 8), ("status", 4), ("trapsts", 4), ("xnack_mask", 8),
                   ("mode", 4)]
        else:                                # gfx10+: exec 32/64, xnack_mask 32, mode, flat_scratch
            exec_ = [("exec", 8)] if self.lanes == 64 else [("exec", 4), ("_hwreg4", 4)]
            out = [("m0", 4), ("pc", 8), *exec_, ("status", 4), ("trapsts", 4), ("xnack_mask", 4), ("mode", 4),
                   ("flat_scratch", 8)]
        used = sum(size for _, size in out) // 4
        return out + [(f"_hwreg{i}", 4) for i in range(used, HWREG_COUNT)]

    def slot_offset(self, name: str) -> int | None:
        """Byte offset of a named slot from `begin`."""
        offset = 0
        for slot, size in self.layout():
            if slot == name:
                return offset
            offset += size
        return None


_SHAPE = ("first_wave", "lanes", "vgpr_count", "acc_vgpr_count", "shared_vgpr_count", "sgpr_count", "lds_size")


def _shape(family: Family, word: int, state: tuple[int, ...]) -> tuple[dict, int, int]:
    """What a record's geometry depends on (the state and the wave word's first-wave bit), worked out once:
    its size-like properties, and the bytes from its end down to its LDS and to its beginning."""
    probe = WaveRecord(family, word, state, 0)
    values = {name: getattr(probe, name) for name in _SHAPE}
    return values, probe.lds_address, probe.begin


def iterate_control_stack(family: Family, words: list[int], wave_area_end: int,
                          wave_area_begin: int | None = None) -> list[WaveRecord]:
    """The wave records a control stack describes, top record first (ROCdbgapi control_stack_iterate).
    With `wave_area_begin`, a record reaching below it stops the walk (a corrupt stack)."""
    records: list[WaveRecord] = []
    state: tuple[int, ...] | None = None
    shapes: dict[tuple, tuple[dict, int, int]] = {}
    first_bit = 1 << family.first_wave_bit
    last_end = wave_area_end
    i = PM4_WORDS
    while i < len(words):
        word = words[i]
        if word & IS_EVENT:
            i += 1
            continue
        if word & IS_STATE:
            if i + family.state_words > len(words):
                raise ValueError(f"control stack word {i}: state entry cut short")
            state = tuple(words[i:i + family.state_words])
            i += family.state_words
            continue
        if state is None:
            raise ValueError(f"control stack word {i}: a wave before any state entry")
        key = (state, word & first_bit)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = _shape(family, word, state)
        values, lds_at, begin_at = shape
        end = last_end - family.record_gap
        record = WaveRecord(family, word, state, end)
        # the geometry, filled in as the cached properties would compute it
        lds_address = end + lds_at
        hwregs = lds_address - 4 * (HWREG_COUNT + TTMP_COUNT)
        record.__dict__.update(values, lds_address=lds_address, hwregs_address=hwregs,
                               ttmps_address=lds_address - 4 * TTMP_COUNT, begin=end + begin_at,
                               sgprs_address=hwregs - 4 * values["sgpr_count"])
        if wave_area_begin is not None and record.begin < wave_area_begin:
            raise ValueError(f"control stack word {i}: wave {len(records)} reaches below the wave save area")
        records.append(record)
        last_end = record.begin
        i += 1
    return records


# -------------------------------------------------------------------- writing (for making cores)


def state_words(family: Family, *, lanes: int, vgprs: int, acc_vgprs: int, sgprs: int, lds_size: int) -> tuple[int, ...]:
    """COMPUTE_RELAUNCH state word(s) for a wave shape; counts are rounded up to the hardware granules."""
    granule = (lds_size + 511) // 512
    lo, hi = family.lds_bits
    word = IS_STATE | _put(granule, lo, hi)
    if family.acc_vgprs:
        arch_blocks = max((vgprs + 3) // 4, 1)
        total_blocks = max((arch_blocks * 4 + acc_vgprs + 7) // 8, 1)
        word |= _put(total_blocks - 1, 0, 5) | _put(arch_blocks - 1, 24, 29) | _put((sgprs + 16 + 15) // 16 - 1, 6, 8)
        return (word,)
    if family.wave32_capable:
        per = 8 if lanes == 32 else 4
        word |= _put(max((vgprs + per - 1) // per, 1) - 1, 0, 5) | _put(1 if lanes == 32 else 0, 24, 24)
        return (word, 0)
    return (word | _put(max((vgprs + 3) // 4, 1) - 1, 0, 5) | _put((sgprs + 16 + 15) // 16 - 1, 6, 8),)


def wave_word(family: Family, *, scoreboard_id: int, shader_engine: int, first: bool, last: bool,
              scratch: bool) -> int:
    return (_put(scoreboard_id, *family.scoreboard_bits) | _put(shader_engine, *family.se_bits)
            | (int(first) << family.first_wave_bit) | (int(last) << family.last_wave_bit)
            | (int(scratch) << family.scratch_en_bit))


# -------------------------------------------------------------------- scratch


def tmpring_fields(family: Family) -> tuple[tuple[int, int], int]:
    """COMPUTE_TMPRING_SIZE's WAVESIZE bits and their unit in bytes."""
    return ((12, 26), 256) if family is GFX11 else ((12, 24), 1024)


def scratch_slot(family: Family, tmpring_size: int, record: WaveRecord, shader_engines: int,
                 xcc: int = 0) -> tuple[int, int]:
    """(offset in the queue's scratch backing memory, bytes) of a wave's scratch; size 0 when unknowable."""
    waves = _bits(tmpring_size, 0, 11)
    (lo, hi), unit = tmpring_fields(family)
    wavesize = _bits(tmpring_size, lo, hi) * unit
    if family is GFX11:  # WAVES counts per shader engine
        offset = (waves * record.shader_engine + record.scoreboard_id) * wavesize
        return waves * max(shader_engines, 1) * wavesize * xcc + offset, wavesize
    if shader_engines <= 0 or waves % shader_engines:
        return 0, 0   # the hardware's slot assignment is unknown then (ROCdbgapi disables scratch too)
    offset = ((waves // shader_engines) * record.shader_engine + record.scoreboard_id) * wavesize
    return waves * wavesize * xcc + offset, wavesize


def tmpring_size(family: Family, waves: int, wavesize: int) -> int:
    (lo, hi), unit = tmpring_fields(family)
    return _put(waves, 0, 11) | _put((wavesize + unit - 1) // unit, lo, hi)
