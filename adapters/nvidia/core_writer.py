"""Writes CUDA GPU core dumps from a state, in the layout of cudacoredump.h (each driver's row sizes)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aspace_dap.errors import StateError
from aspace_dap.state.memory import SparseMemory
from aspace_dap.state.model import Aperture, Dispatch, GpuState, Wave, Workgroup, lanes_to_mask
from aspace_dap.state.private import PER_LANE
from .core_elf import (CBU_SINCE, CONST_BANKS_SINCE, ELFOSABIV_LATEST, ELFOSABI_CUDA, ELF_MAGIC, EM_CUDA, ET_CORE,
                       EXCEPTION_NONE, META_SINCE, ROW_SIZES, SHN_LORESERVE, SHN_XINDEX, SHT_BT, SHT_CBU_BAR,
                       SHT_CB_TABLE, SHT_CTA_TABLE, SHT_CTX_TABLE, SHT_DEV_TABLE, SHT_ELF_IMG, SHT_GLOBAL,
                       SHT_GRID_TABLE, SHT_LN_TABLE, SHT_LOCAL, SHT_META, SHT_MOD_TABLE, SHT_PARAM, SHT_PRED,
                       SHT_REGS, SHT_RELF_IMG, SHT_SHARED, SHT_SM_TABLE, SHT_STRTAB, SHT_UPRED, SHT_UREGS,
                       SHT_WP_TABLE, SKIP_CONSTBANK_MEMORY, SKIP_GLOBAL_MEMORY, SKIP_LOCAL_MEMORY,
                       SKIP_NONRELOCATED_ELF_IMAGES, SKIP_SHARED_MEMORY, TABLES, UNIFORM_SINCE, generation_flags)


@dataclass
class _OutSection:
    name: str
    type: int
    data: bytes = b""
    link: int = 0
    info: int = 0
    entsize: int = 0
    addr: int = 0


# what each generation flag leaves out of the core
_SKIPPED_TYPES = {SHT_ELF_IMG: SKIP_NONRELOCATED_ELF_IMAGES, SHT_GLOBAL: SKIP_GLOBAL_MEMORY,
                  SHT_SHARED: SKIP_SHARED_MEMORY, SHT_LOCAL: SKIP_LOCAL_MEMORY, SHT_CB_TABLE: SKIP_CONSTBANK_MEMORY}


class _CoreBuilder:
    def __init__(self, flags: int = 0):
        self.sections: list[_OutSection] = [_OutSection("", 0)]
        self.strings = bytearray(b"\0")
        self.flags = flags  # the generation flags: sections they skip are not added

    def skips(self, sh_type: int) -> bool:
        return bool(self.flags & _SKIPPED_TYPES.get(sh_type, 0))

    def add(self, name: str, sh_type: int, data: bytes = b"", *, link: int = 0, info: int = 0,
            entsize: int = 0, addr: int = 0) -> int:
        if self.skips(sh_type):
            return -1
        self.sections.append(_OutSection(name, sh_type, bytes(data), link, info, entsize, addr))
        return len(self.sections) - 1

    def table(self, name: str, sh_type: int, rows: list[dict[str, int]], *, link: int = 0, info: int = 0,
              entsize: int | None = None) -> int:
        form = TABLES[sh_type]
        entsize = form.sizes[-1] if entsize is None else entsize
        return self.add(name, sh_type, b"".join(form.pack(entsize, **row) for row in rows), link=link, info=info,
                        entsize=entsize)

    def string(self, text: str) -> int:
        at = len(self.strings)
        self.strings += text.encode() + b"\0"
        return at

    def write(self, path: Path) -> None:
        self.add(".strtab", SHT_STRTAB, bytes(self.strings))
        shstrndx = self.add(".shstrtab", SHT_STRTAB)
        names = bytearray(b"\0")
        name_at = []
        for sec in self.sections:
            name_at.append(len(names) if sec.name else 0)
            if sec.name:
                names += sec.name.encode() + b"\0"
        self.sections[shstrndx].data = bytes(names)
        out = bytearray(64)
        offsets = []
        for sec in self.sections:
            out += bytes(-len(out) % 8)
            offsets.append(len(out))
            out += sec.data
        out += b"\0" * (-len(out) % 8)
        shoff = len(out)
        # ELF's extended numbering (what a full GPU needs: a section per lane and kind): with SHN_LORESERVE
        # sections or more, e_shnum is 0 and section 0's sh_size holds the count; a string table index
        # past it is SHN_XINDEX, the index in section 0's sh_link (libcudacore's elfGetSectionHeaderNum)
        count = len(self.sections)
        extended = count >= SHN_LORESERVE
        self.sections[0].link = shstrndx if shstrndx >= SHN_LORESERVE else 0
        headers = bytearray(64 * count)
        for i, (sec, name, offset) in enumerate(zip(self.sections, name_at, offsets)):
            size = count if i == 0 and extended else len(sec.data)
            struct.pack_into("<IIQQQQIIQQ", headers, 64 * i, name, sec.type, 0, sec.addr, offset if sec.type else 0,
                             size, sec.link, sec.info, 8 if sec.type else 0, sec.entsize)
        out += headers
        ident = ELF_MAGIC + bytes([2, 1, 1, ELFOSABI_CUDA, ELFOSABIV_LATEST]) + b"\0" * 7
        out[:64] = ident + struct.pack("<HHIQQQIHHHHHH", ET_CORE, EM_CUDA, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                                       0 if extended else count,
                                       SHN_XINDEX if shstrndx >= SHN_LORESERVE else shstrndx)
        path.write_bytes(bytes(out))


def _known_prefix(memory: SparseMemory, address: int, size: int) -> bytes:
    """The bytes from `address` up to the first unknown one (a core section cannot hold holes)."""
    data, valid = memory.read(address, size)
    known = size if valid.all() else int(np.argmin(valid))
    return data[:known].tobytes()


def _register_words(wave: Wave, prefix: str, per_lane: int) -> np.ndarray:
    """(lanes, n) u32 of registers prefix0..prefix{n-1}; every valid lane's bytes must be known."""
    names = sorted((n for n in wave.registers.names if n.startswith(prefix) and n[len(prefix):].isdigit()),
                   key=lambda n: int(n[len(prefix):]))
    if [int(n[len(prefix):]) for n in names] != list(range(len(names))):
        raise StateError(f"{prefix} registers are not numbered from 0 without gaps", wave.registers.path)
    out = np.zeros((wave.lanes, len(names)), dtype="<u4")
    for i, name in enumerate(names):
        data, valid = wave.registers.lane_view(name, wave.lanes)
        if data.shape[1] != per_lane:
            raise StateError(f"register {name} has {data.shape[1]} bytes per lane, a core holds {per_lane}",
                             wave.registers.path)
        if not valid[wave.valid_lanes].all():
            raise StateError(f"register {name} is not fully known; a core cannot say so", wave.registers.path)
        out[:, i] = np.ascontiguousarray(data).view("<u4")[:, 0] if per_lane == 4 else data[:, 0]
    return out


def _cubin_layout(code_path: Path):
    from .cubin import read_cubin_debug, relocate_cubin

    layout, _ = read_cubin_debug(relocate_cubin(code_path.read_bytes(), str(code_path)), str(code_path))
    return layout


def _function_entry(code_path: Path, kernel: str) -> int:
    for function in _cubin_layout(code_path).functions:
        if function.name == kernel:
            return function.start
    raise StateError(f"kernel {kernel} is not a function of {code_path.name}", str(code_path))


WRITABLE_REGISTERS = ("pc", "exec")
CONST_BANK_BASE = 0x7FFF_0000_0000  # where the writer places each grid's constant bank 0 in global memory
CONST_BANK_STRIDE = 0x1_0000


def _numbered(wave: Wave, prefix: str) -> list[str]:
    names = sorted((n for n in wave.registers.names if n.startswith(prefix) and n[len(prefix):].isdigit()),
                   key=lambda n: int(n[len(prefix):]))
    if [int(n[len(prefix):]) for n in names] != list(range(len(names))):
        raise StateError(f"{prefix} registers are not numbered from 0 without gaps", wave.registers.path)
    return names


def _uniform_words(wave: Wave, prefix: str, size: int) -> list[int]:
    values = [wave.registers.value(name) for name in _numbered(wave, prefix)]
    if any(v is None for v in values):
        raise StateError(f"a uniform register ({prefix}) is not fully known; a core cannot say so",
                         wave.registers.path)
    return [v & ((1 << 8 * size) - 1) for v in values]


def write_core(state: GpuState, path: str | os.PathLike, *,
               exception: tuple[int, ...] | None = None, version: str = "r575", devices: int = 1,
               backtraces: dict[tuple[int, int], list[int]] | None = None, param_sections: bool = True,
               sms: int | None = None, warps_per_sm: int = 64, flags: int | str = 0) -> Path:
    """Write `state` (an NVIDIA state) as a CUDA core dump.

    Each workgroup becomes one CTA on its own SM, each wave a warp whose warpId is its index in the
    block; with `sms`, a device has that many SMs of `warps_per_sm` warp slots (an H100: 132 x 64) and
    its CTAs are handed to them in turn, each warp's warpId its slot on the SM. `exception` = (wave id,
    lane, CUDBGException_t code[, error PC]) marks that lane as the one that faulted (its warp's errorPC
    is the error PC given, else the lane's PC). `version` picks the driver whose row sizes are written
    (ROW_SIZES; constant banks from r550, uniform registers from r400). A dispatch whose `device` is
    set runs on that device, of its `processor` (a machine with GPUs of several SM types); the others
    are spread over `devices` devices (wave i on device i % devices, each with its copy of the grid
    and CTA), as a multi-GPU core holds them. `backtraces` gives lanes' call stacks ((wave id, lane) ->
    return addresses, innermost caller first) for the `.cudbg.bt` tables; without it, the waves'
    own `return_addresses` are written. Each grid's parameters go
    into constant bank 0 (the `.cudbg.cbankstbl` table, bank bytes in global memory) and, unless
    `param_sections` is False, a `.cudbg.param` section too. Registers must be known for every valid
    lane, and memory is written up to its first unknown byte: the format has no way to say "unknown".
    Every valid lane needs a PC in a core: a lane the state gives none of its own (an inactive lane
    of a dump without lane PCs) gets the warp's.

    `flags` are the driver's generation flags (CUDBGCoredumpGenerationFlags, or the names
    CUDA_COREDUMP_GENERATION_FLAGS takes: `core_elf.LIGHTWEIGHT_FLAGS` is the lightweight core users
    are told to write), left out as the driver leaves them out: the unrelocated cubin images, global
    memory (but for constant banks), shared memory, local memory, the constant banks (table and bytes).
    The tables, registers, predicates, PCs, backtraces and relocated images stay, and the flags are
    recorded in the `.cudbg.meta` row as the driver records them (r565+).
    """
    path = Path(path)
    target = state.target
    if target.vendor != "nvidia":
        raise StateError(f"a CUDA core dump holds NVIDIA state, not {target.vendor}", "target.vendor")
    if version not in ROW_SIZES:
        raise StateError(f"unknown driver version {version!r}; known: {', '.join(ROW_SIZES)}", "version")
    if devices < 1:
        raise StateError(f"{devices} devices", "devices")
    for space in state.memory:
        if space != "global":
            raise StateError(f"{space} memory has no place in a CUDA core dump", f"memory.{space}")
    sizes = ROW_SIZES[version]
    uniform = version >= UNIFORM_SINCE
    flags = generation_flags(flags)
    out = _CoreBuilder(flags)
    waves = state.waves
    if backtraces is None:
        backtraces = {(w.id, ln): stack for w in waves for ln, stack in (w.return_addresses or {}).items()}
    for wave in waves:
        for name, _ in wave.registers.layout:
            if name not in WRITABLE_REGISTERS and not any(
                    name.startswith(p) and name[len(p):].isdigit() for p in ("R", "P", "UR", "UP", "B")):
                raise StateError(f"register {name} has no place in a CUDA core dump", wave.registers.path)
    # device d holds the waves of dispatches placed on it, else those i with i % devices == d,
    # grouped by their workgroup
    count = max([devices] + [d.device + 1 for d in state.dispatches if d.device is not None])
    placement: list[list[tuple[Dispatch, Workgroup, list[Wave]]]] = [[] for _ in range(count)]
    processors: list[str | None] = [None] * count
    order = {id(w): i for i, w in enumerate(waves)}
    for d in state.dispatches:
        for wg in d.workgroups:
            for dev in ([d.device] if d.device is not None else range(count)):
                mine = [w for w in wg.waves if d.device is not None or order[id(w)] % devices == dev]
                if mine:
                    placement[dev].append((d, wg, mine))
        for dev in ([d.device] if d.device is not None else range(devices)):
            processor = d.processor or target.processor
            if processors[dev] not in (None, processor):
                raise StateError(f"device {dev} runs dispatches for {processors[dev]} and {processor}", d.path)
            processors[dev] = processor
    device_rows = []
    for dev in range(count):
        processor = processors[dev] or target.processor
        digits = processor.removeprefix("sm_")
        if not digits[:-1].isdigit():
            raise StateError(f"processor {processor!r} is not an sm_NN name", "target.processor")
        mine = [w for _, _, on in placement[dev] for w in on]
        counts = {prefix: max((len(_numbered(w, prefix)) for w in mine), default=0)
                  for prefix in ("R", "P", "UR", "UP", "B")}
        if not uniform and (counts["UR"] or counts["UP"]):
            raise StateError(f"a {version} core has no uniform registers", "version")
        if version < CBU_SINCE and counts["B"]:
            raise StateError(f"a {version} core has no convergence barriers", "version")
        device_rows.append(dict(
            devName=out.string("aspace-dap core"), devType=out.string("GPU"), smType=out.string(processor),
            devId=dev, numSMs=max(len(placement[dev]) if sms is None else sms, 1),
            numWarpsPerSM=warps_per_sm if sms is not None else max([64] + [w.index_in_workgroup + 1 for w in waves]),
            numLanesPerWarp=target.lanes, numRegsPerLane=counts["R"], numPredicatesPrLane=counts["P"],
            smMajor=int(digits[:-1]), smMinor=int(digits[-1], 16), instructionSize=16,
            numUniformRegsPrWarp=counts["UR"], numUniformPredicatesPrWarp=counts["UP"],
            numConvergenceBarriersPrWarp=counts["B"]))
    dev_tbl = out.table(".cudbg.devtbl", SHT_DEV_TABLE, device_rows, entsize=sizes["devtbl"])
    if version >= META_SINCE:
        out.table(".cudbg.meta", SHT_META, [dict(generatorName=out.string("aspace-dap write_core"),
                                                driverVersionMajor=int(version[1:]), flags=flags)])
    global_memory = state.memory.get("global")
    for address, size in (global_memory.ranges() if global_memory is not None else []):
        out.add(".cudbg.global", SHT_GLOBAL, _known_prefix(global_memory, address, size), addr=address)
    from .cubin import relocate_cubin

    layouts: dict[int, object] = {}  # code object id -> its function layout, read once
    for dev in range(count):
        grids = [d for d in state.dispatches if any(p[0] is d for p in placement[dev])]
        # one context per device, whose windows are its dispatches' (the target's unless they say)
        windows = {_window_bases(d.apertures) for d in grids if d.apertures is not None}
        if len(windows) > 1:
            raise StateError(f"device {dev}'s dispatches place the shared and local windows differently",
                             "dispatches")
        shared, local = windows.pop() if windows else _window_bases(target.apertures)
        ctx = out.table(f".cudbg.ctxtbl.dev{dev}", SHT_CTX_TABLE, [dict(
            contextId=1, deviceIdx=dev, sharedWindowBase=shared, localWindowBase=local)], link=dev_tbl, info=dev)
        # a device holds the modules its grids run
        used = {d.code_object for d in grids}
        refs = [ref for ref in state.code_objects if ref.id in used or len(state.code_objects) == 1]
        handles = {ref.id: 0x1000 + ref.id for ref in refs}
        mod = out.table(f".cudbg.modtbl.dev{dev}.ctx0", SHT_MOD_TABLE,
                        [dict(moduleHandle=h) for h in handles.values()], link=ctx, info=0)
        for row, ref in enumerate(refs):
            image = ref.path.read_bytes()
            out.add(f".cudbg.elfimg.dev{dev}.ctx0", SHT_ELF_IMG, image, link=mod, info=row)
            out.add(f".cudbg.relfimg.dev{dev}.ctx0", SHT_RELF_IMG, relocate_cubin(image, str(ref.path)),
                    link=mod, info=row)
        grid_rows = []
        for d in grids:
            for space in d.memory:
                if space != "param":
                    raise StateError(f"dispatch {space} memory has no place in a CUDA core dump", d.path)
            ref = state.code_object_by_id(d.code_object) if d.code_object is not None else None
            entry = _function_entry(ref.path, d.kernel) if ref is not None else 0
            param = d.memory.get("param")
            grid_rows.append(dict(
                gridId64=d.id + 1, contextId=1, function=entry, functionEntry=entry,
                moduleHandle=handles.get(d.code_object, 0),
                paramsOffset=param.regions[0].address if param is not None and param.regions else 0,
                kernelType=1, numRegs=device_rows[dev]["numRegsPerLane"],
                **dict(zip(("gridDimX", "gridDimY", "gridDimZ"), _grid_blocks(d))),
                blockDimX=d.workgroup_size[0], blockDimY=d.workgroup_size[1], blockDimZ=d.workgroup_size[2],
                **dict(zip(("clusterDimX", "clusterDimY", "clusterDimZ"), d.cluster_size or (1, 1, 1)))))
        grid_tbl = out.table(f".cudbg.gridtbl.dev{dev}", SHT_GRID_TABLE, grid_rows, link=dev_tbl, info=dev,
                             entsize=sizes["gridtbl"])
        for row, d in enumerate(grids):
            _write_parameters(out, d, dev, row, grid_tbl, version, param_sections)
        # the SMs and the CTAs on each: one CTA per SM, or the device's SMs taking the CTAs in turn
        on_sm: list[list] = [[cta] for cta in placement[dev]] if sms is None else [[] for _ in range(sms)]
        if sms is not None:
            for k, cta in enumerate(placement[dev]):
                on_sm[k % sms].append(cta)
        sm_tbl = out.table(f".cudbg.smtbl.dev{dev}", SHT_SM_TABLE, [dict(smId=i) for i in range(len(on_sm))],
                           link=dev_tbl, info=dev, entsize=sizes["smtbl"])
        for sm, ctas in enumerate(on_sm):
            if sms is not None and sum(len(mine) for _, _, mine in ctas) > warps_per_sm:
                raise StateError(f"device {dev} SM {sm} would hold {sum(len(m) for _, _, m in ctas)} warps, more "
                                 f"than its {warps_per_sm} warp slots", "waves")
            if ctas:
                _write_sm(out, state, ctas, dev, sm, sm_tbl, exception, sizes, backtraces, layouts,
                          slots=sms is not None)
    out.write(path)
    return path


def _window_bases(apertures: dict[str, Aperture] | None) -> tuple[int, int]:
    """(sharedWindowBase, localWindowBase) of a context: 0 for a window the dump does not place."""
    apertures = apertures or {}
    return tuple(apertures[n].base if n in apertures else 0 for n in ("shared", "local"))  # type: ignore[return-value]


def _write_parameters(out: _CoreBuilder, d: Dispatch, dev: int, row: int, grid_tbl: int, version: str,
                      param_sections: bool) -> None:
    param = d.memory.get("param")
    if param is None or not param.regions:
        return
    if len(param.regions) > 1:
        raise StateError("a core holds the parameter bank as one range", d.path)
    region = param.regions[0]
    known = _known_prefix(param, region.address, region.size)
    if param_sections:
        out.add(f".cudbg.param.dev{dev}.grid{row}", SHT_PARAM, known, link=grid_tbl, info=row)
    if version >= CONST_BANKS_SINCE and known and not out.flags & SKIP_CONSTBANK_MEMORY:
        # bank 0 in global memory; only its parameter bytes are known, so only they are dumped (with
        # skip_global_memory too: since CUDA 12.6 constant banks have their own flag)
        bank = CONST_BANK_BASE + (dev * 64 + d.id) * CONST_BANK_STRIDE
        out.sections.append(_OutSection(".cudbg.global", SHT_GLOBAL, known, addr=bank + region.address))
        out.table(f".cudbg.cbankstbl.dev{dev}.grid{row}", SHT_CB_TABLE,
                  [dict(addr=bank, size=region.address + len(known), bankId=0)], link=grid_tbl, info=row)


def _write_sm(out: _CoreBuilder, state: GpuState, ctas: list[tuple[Dispatch, Workgroup, list[Wave]]], dev: int,
              sm: int, sm_tbl: int, exception: tuple[int, ...] | None, sizes: dict[str, int],
              backtraces: dict[tuple[int, int], list[int]], layouts: dict[int, object], slots: bool) -> None:
    """One SM: its CTA table (a row per CTA) and each CTA's shared memory and warps."""
    rows = []
    for d, wg, _ in ctas:
        cluster = dict(zip(("clusterIdxX", "clusterIdxY", "clusterIdxZ"), wg.cluster or (0, 0, 0)))
        cluster.update(zip(("clusterDimX", "clusterDimY", "clusterDimZ"), d.cluster_size or (1, 1, 1)))
        rows.append(dict(gridId64=d.id + 1, blockIdxX=wg.id[0], blockIdxY=wg.id[1], blockIdxZ=wg.id[2], **cluster))
    cta = out.table(f".cudbg.ctatbl.dev{dev}.sm{sm}", SHT_CTA_TABLE, rows, link=sm_tbl, info=sm,
                    entsize=sizes["ctatbl"])
    slot = 0
    for row, (d, wg, waves) in enumerate(ctas):
        warp_ids = list(range(slot, slot + len(waves))) if slots else [w.index_in_workgroup for w in waves]
        slot += len(waves)
        _write_cta(out, state, d, wg, waves, dev, sm, cta, row, warp_ids, exception, sizes, backtraces, layouts)


def _write_cta(out: _CoreBuilder, state: GpuState, d: Dispatch, wg: Workgroup, waves: list[Wave], dev: int,
               sm: int, cta: int, cta_row: int, warp_ids: list[int], exception: tuple[int, ...] | None,
               sizes: dict[str, int], backtraces: dict[tuple[int, int], list[int]], layouts: dict[int, object]) -> None:
    where = f"dev{dev}.sm{sm}.cta{cta_row}"
    if wg.lds is not None and wg.lds.regions:
        out.add(f".cudbg.shared.{where}", SHT_SHARED, _known_prefix(wg.lds, 0, wg.lds.regions[-1].end),
                link=cta, info=cta_row)
    num_regs = len(_numbered(waves[0], "R"))
    warp_rows = []
    for wave, warp_id in zip(waves, warp_ids):
        faulted = exception is not None and exception[0] == wave.id
        pc = wave.pc or 0
        error_pc = int(wave.lane_pcs[exception[1]]) if faulted and wave.lane_pcs is not None else pc
        if faulted and len(exception) > 3:  # the faulting instruction, before the PC the lanes moved on to
            error_pc = exception[3]
        exec_mask = wave.exec_mask
        active = wave.valid_lanes if exec_mask is None else exec_mask & wave.valid_lanes
        warp_rows.append(dict(errorPC=error_pc if faulted else 0, warpId=warp_id,
                              validLanesMask=lanes_to_mask(wave.valid_lanes), activeLanesMask=lanes_to_mask(active),
                              errorPCValid=int(faulted), numRegs=num_regs))
    wp_tbl = out.table(f".cudbg.wptbl.{where}", SHT_WP_TABLE, warp_rows, link=cta, info=cta_row,
                       entsize=sizes["wptbl"])
    ref = state.code_object_by_id(d.code_object) if d.code_object is not None else None
    if ref is not None and ref.id not in layouts:
        layouts[ref.id] = _cubin_layout(ref.path)
    layout = layouts.get(ref.id) if ref is not None else None
    for row, wave in enumerate(waves):
        valid_lanes = [int(ln) for ln in np.flatnonzero(wave.valid_lanes)]
        pc = wave.pc or 0
        lane_rows = []
        for ln in valid_lanes:
            lane_pc = int(wave.lane_pcs[ln]) if wave.lane_pcs is not None else pc
            tid = wave.local_id(ln)
            code = exception[2] if exception is not None and exception[:2] == (wave.id, ln) else EXCEPTION_NONE
            # physPC: the offset of the PC in the function it is in (cudacoredump.h)
            lane_rows.append(dict(virtualPC=lane_pc, physPC=_offset_in_caller(layout, lane_pc), ln=ln, threadIdxX=tid[0], threadIdxY=tid[1],
                                  threadIdxZ=tid[2], exception=code,
                                  callDepth=len(backtraces.get((wave.id, ln), ()))))
        wp_where = f"{where}.wp{warp_ids[row]}"
        ln_tbl = out.table(f".cudbg.lntbl.{wp_where}", SHT_LN_TABLE, lane_rows, link=wp_tbl, info=row,
                           entsize=sizes["lntbl"])
        regs = _register_words(wave, "R", 4)
        preds = _register_words(wave, "P", 1)
        uregs, upreds = _uniform_words(wave, "UR", 4), _uniform_words(wave, "UP", 1)
        barriers = _uniform_words(wave, "B", 4)
        if barriers:
            out.add(f".cudbg.cbu_bar.{wp_where}", SHT_CBU_BAR, struct.pack(f"<{len(barriers)}I", *barriers),
                    link=wp_tbl, info=row)
        if uregs:
            out.add(f".cudbg.uregs.{wp_where}", SHT_UREGS, struct.pack(f"<{len(uregs)}I", *uregs),
                    link=wp_tbl, info=row)
        if upreds:
            out.add(f".cudbg.upred.{wp_where}", SHT_UPRED, struct.pack(f"<{len(upreds)}I", *upreds),
                    link=wp_tbl, info=row)
        private = wave.private
        if private is not None and private.layout != PER_LANE:
            raise StateError("a core holds local memory per lane (per_lane layout)", private.path)
        for lane_row, ln in enumerate(valid_lanes):
            lane_where = f"{wp_where}.ln{ln}"
            out.add(f".cudbg.regs.{lane_where}", SHT_REGS, regs[ln].tobytes(), link=ln_tbl, info=lane_row)
            if preds.shape[1]:
                out.add(f".cudbg.pred.{lane_where}", SHT_PRED, preds[ln].tobytes(), link=ln_tbl, info=lane_row)
            stack = backtraces.get((wave.id, ln))
            if stack:
                out.table(f".cudbg.bt.{lane_where}", SHT_BT, [
                    dict(returnAddress=_offset_in_caller(layout, ret), virtualReturnAddress=ret, level=level)
                    for level, ret in enumerate(stack)], link=ln_tbl, info=lane_row)
        # local memory of the warp's lanes back to back, so a reader can map it as one range
        for lane_row, ln in enumerate(valid_lanes if private is not None else []):
            block = _known_prefix(private.wave_view, ln * private.lane_size, private.lane_size)
            out.add(f".cudbg.local.{wp_where}.ln{ln}", SHT_LOCAL, block, link=ln_tbl, info=lane_row,
                    addr=private.base)


def _offset_in_caller(layout, address: int) -> int:
    """returnAddress: the return address as an offset from the start of the function it returns into."""
    function = layout.function_at(address) if layout is not None else None
    return address - function.start if function is not None else address


def _grid_blocks(d) -> tuple[int, int, int]:
    """gridDim, as a core records it: the dispatch's grid_size counts work-items (docs/STATE_FORMAT.md),
    and a CUDA grid is a whole number of blocks."""
    blocks = []
    for axis, items, size in zip("xyz", d.grid_size, d.workgroup_size):
        if size <= 0 or items % size:
            raise StateError(f"grid_size {list(d.grid_size)} is not a whole number of blocks of "
                             f"{list(d.workgroup_size)} in {axis}: a CUDA core dump records gridDim in blocks",
                             f"{d.path}.grid_size")
        blocks.append(items // size)
    return tuple(blocks)  # type: ignore[return-value]
