"""Where an AMDGPU device function put its caller's registers: prologue analysis.

Debian's clang-15 and clang-19 emit `.debug_frame` entries without rules for AMDGPU, so a
caller frame cannot come from CFI. The calling convention plus the callee's own code can:
on entry the return address is in s[30:31] and the caller's stack pointer in s32, and the
prologue parks what it will overwrite. The prologues these compilers emit:

- clang-15: `s_or_saveexec -1; buffer_store_dword vN, off, s[0:3], s32 offset:K` (or
  `scratch_store_dword off, vN, s32 offset:K`) saves every lane of a VGPR, `v_writelane_b32
  vN, s33, L` parks the caller's frame pointer (and s30/s31 before calls) in it, then
  `s_mov_b32 s33, s32`.
- clang-19 and leaf functions of clang-15: `s_mov_b32 sX, s33` keeps the caller's frame
  pointer in a free SGPR, `s_mov_b32 s33, s32`, then `s_xor_saveexec -1` stores of the lanes
  inactive on entry (whole-wave spill registers) and plain stores of callee-saved VGPRs.

The scan follows the straight-line prologue from the entry precisely, then treats every
instruction that can run between the entry and the stopped PC (loops included) as a
possible clobber. A register whose caller value was overwritten and not saved where the
scan can see it is reported lost, never read from the callee.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .isa import (ALL, EXEC_HI, EXEC_LO, control, decode_all, exec_change, lane_read, lane_write,
                         saveexec_destination, scalar_move, sgpr_writes, stack_access, stack_adjust, vgpr_writes)

SP, FP = 32, 33
CALLEE_SAVED_VGPRS = 32  # VGPR0-31 are the callee's to clobber


@dataclass
class VgprSave:
    sp_delta: int  # the base register's distance from the entry stack pointer, in register units
    offset: int  # the instruction's immediate offset: bytes within a lane's stack
    lanes: str  # "all" lanes of the wave, or the lanes active on "entry"


@dataclass
class SavedRegisters:
    """The caller's registers as far as the callee's code up to the stopped PC shows them."""

    # caller SGPR -> where its value is now: ("s", n) or ("v", vgpr, lane)
    sgpr_home: dict[int, tuple] = field(default_factory=dict)
    sgprs_lost: set[int] = field(default_factory=set)  # written, and no copy survives
    vgpr_saved: dict[int, VgprSave] = field(default_factory=dict)
    vgprs_written: set[int] | str = field(default_factory=set)
    # the caller's stack pointer = register - delta (the register's value when stopped)
    entry_sp: tuple[int, int] | None = (SP, 0)
    decoded: bool = True  # False when an instruction could not be decoded: nothing is known
    steps: list[str] = field(default_factory=list)  # what the prologue did, for tests and reports


def _flow(instructions, gen):
    """Successor indices of each instruction."""
    at = {ins.offset: i for i, ins in enumerate(instructions)}
    succ = []
    for i, ins in enumerate(instructions):
        how, target = control(ins, gen)
        nxt = [i + 1] if i + 1 < len(instructions) else []
        if how == "jump":
            succ.append([at[target]] if target in at else None)
        elif how == "branch":
            succ.append(nxt + [at[target]] if target in at else None)
        elif how == "exit":
            succ.append([])
        else:
            succ.append(nxt)
    return succ


def _executed_before(succ, stop: int) -> set[int] | None:
    """Instructions on some path from the entry that reaches `stop` afterwards."""
    if any(s is None for s in succ):
        return None  # a branch leaves the function's known code
    forward, todo = {0}, [0]
    while todo:
        for j in succ[todo.pop()]:
            if j not in forward:
                forward.add(j)
                todo.append(j)
    preds: dict[int, list[int]] = {}
    for i, s in enumerate(succ):
        for j in s:
            preds.setdefault(j, []).append(i)
    backward, todo = set(), [stop]
    while todo:
        for p in preds.get(todo.pop(), []):
            if p not in backward:
                backward.add(p)
                todo.append(p)
    return forward & backward


class _Places:
    """For each caller SGPR, the places (`("s", n)` or `("v", vgpr, lane)`) holding its value."""

    def __init__(self):
        self.of = {c: {("s", c)} for c in range(30, 106)}

    def holders(self, place):
        return [c for c, ps in self.of.items() if place in ps]

    def drop(self, match):
        for ps in self.of.values():
            ps -= {p for p in ps if match(p)}

    def write_sgpr(self, n):
        self.drop(lambda p: p == ("s", n))

    def write_vgpr(self, v, lane=None):
        self.drop(lambda p: p[0] == "v" and p[1] == v and (lane is None or p[2] == lane))

    def copy(self, src, dst):
        holders = self.holders(src)
        if dst[0] == "s":
            self.write_sgpr(dst[1])
        else:
            self.write_vgpr(dst[1], dst[2])
        for c in holders:
            self.of[c].add(dst)


def _clobber(places: _Places, ins, gen, wave64, written_s: set, written_v: set) -> bool:
    """Apply an instruction's possible register writes; True if it may write every VGPR."""
    if control(ins, gen)[0] == "call":  # the called function may clobber SGPR4-31 and VGPR0-31
        places.drop(lambda p: (p[0] == "s" and 4 <= p[1] < 32) or (p[0] == "v" and p[1] < CALLEE_SAVED_VGPRS))
        written_s.update(range(4, 32))
        written_v.update(range(CALLEE_SAVED_VGPRS))
    s = sgpr_writes(ins, gen, wave64)
    if s is ALL:
        places.drop(lambda p: p[0] == "s")
        written_s.update(range(106))
    else:
        for n in s - {EXEC_LO, EXEC_HI}:
            places.write_sgpr(n)
            written_s.add(n)
    w = vgpr_writes(ins, gen)
    if w is ALL:
        places.drop(lambda p: p[0] == "v")
        return True
    if isinstance(w, tuple):
        places.write_vgpr(w[1], w[2])
        written_v.add(w[1])
    else:
        for v in w:
            places.write_vgpr(v)
        written_v.update(w)
    return False


def scan(code: bytes, stop: int, gen: int, wave64: bool) -> SavedRegisters:
    """Analyse a function's whole code (`code`) for a wave stopped at byte offset `stop`."""
    saved = SavedRegisters()
    instructions = decode_all(code, gen)
    index = {ins.offset: i for i, ins in enumerate(instructions or [])}
    if instructions is None or stop not in index:
        saved.decoded = False
        return saved
    succ = _flow(instructions, gen)
    executed = _executed_before(succ, index[stop])
    if executed is None:
        saved.decoded = False
        return saved
    targets = {index.get(control(ins, gen)[1]) for ins in instructions} - {None}  # branch targets
    places = _Places()
    written_s: set[int] = set()
    written_v: set[int] = set()
    all_v_written = False
    exec_mode, entry_exec_in = "entry", set()
    sp_delta, fp_delta = 0, None  # s32 = entry SP + sp_delta; s33 = entry SP + fp_delta (None: unknown)

    # 1. the straight-line prologue: every instruction from the entry up to the first branch,
    #    branch target or call dominates the stop, so its effects are applied in order
    i = 0
    while i in executed and (i == 0 or i not in targets) and control(instructions[i], gen)[0] == "next":
        ins = instructions[i]
        move, adjust, access = scalar_move(ins, gen), stack_adjust(ins, gen), stack_access(ins, gen)
        lane_w, lane_r, exec_how = lane_write(ins, gen), lane_read(ins, gen), exec_change(ins, gen)
        if move and move[0] < 106 and move[1] < 106:
            dst, src = move
            places.copy(("s", src), ("s", dst))
            written_s.add(dst)
            if src == FP and dst != FP:
                saved.steps.append(f"s_mov_b32 s{dst}, s33")
            if dst == FP:
                fp_delta = sp_delta if src == SP else None
                if src == SP:
                    saved.steps.append("s_mov_b32 s33, s32")
            if dst == SP:
                sp_delta = fp_delta if src == FP else None
        elif adjust and adjust[0] in (SP, FP):
            reg, delta = adjust
            places.write_sgpr(reg)
            written_s.add(reg)
            if reg == SP:
                sp_delta = None if sp_delta is None else sp_delta + delta
            else:
                fp_delta = None if fp_delta is None else fp_delta + delta
        elif lane_w:
            vgpr, lane, src = lane_w
            places.copy(("s", src), ("v", vgpr, lane))
            written_v.add(vgpr)
            saved.steps.append(f"v_writelane_b32 v{vgpr}, s{src}, {lane}")
        elif lane_r:
            sdst, vgpr, lane = lane_r
            places.copy(("v", vgpr, lane), ("s", sdst))
            written_s.add(sdst)
        elif access and access[0] == "store":
            _, vgpr, dwords, base, offset = access
            delta = sp_delta if base == SP else fp_delta if base == FP else None
            for n in range(vgpr, vgpr + dwords):
                at = offset + 4 * (n - vgpr)
                if delta is None or n in written_v or n in saved.vgpr_saved:
                    continue  # not a stack slot we can place, or not the caller's value any more
                # a save slot is one the compiler made for it: a whole-wave store (WWM spill
                # registers) or a callee-saved VGPR; other stores are variables' slots
                if exec_mode == "all" or (exec_mode == "entry" and n >= CALLEE_SAVED_VGPRS):
                    saved.vgpr_saved[n] = VgprSave(delta, at, exec_mode)
                    saved.steps.append(f"store v{n} at entry sp{delta:+#x} offset:{at} ({exec_mode} lanes)")
                else:
                    saved.steps.append(f"store v{n} at entry sp{delta:+#x} offset:{at} ({exec_mode} lanes: not a save)")
        else:
            if exec_how is not None:
                dst = saveexec_destination(ins, gen)
                if exec_how in ("all", "inactive") and dst is not None:
                    if exec_mode == "entry":
                        entry_exec_in = {dst, dst + 1}
                    saved.steps.append({"all": "s_or_saveexec -1", "inactive": "s_xor_saveexec -1"}[exec_how])
                    exec_mode = exec_how
                elif exec_how == "all":
                    exec_mode = "all"
                elif isinstance(exec_how, tuple) and exec_how[1] in entry_exec_in:
                    exec_mode = "entry"
                else:
                    exec_mode = "other"
            all_v_written |= _clobber(places, ins, gen, wave64, written_s, written_v)
            s = sgpr_writes(ins, gen, wave64)
            s = set(range(106)) if s is ALL else s
            if SP in s:
                sp_delta = None
            if FP in s:
                fp_delta = None
            if saveexec_destination(ins, gen) is None:
                entry_exec_in -= s  # the copy of the entry exec is gone
        i += 1
    # 2. everything else that may run before the stop (loops may run code past it) clobbers
    for j in sorted(executed):
        if j < i:
            continue
        ins = instructions[j]
        all_v_written |= _clobber(places, ins, gen, wave64, written_s, written_v)
        access = stack_access(ins, gen)
        if access and access[0] == "store":  # a slot written again no longer holds the save
            _, _, dwords, base, offset = access
            for n, save in list(saved.vgpr_saved.items()):
                if base in (SP, FP) and offset <= save.offset < offset + 4 * dwords:
                    del saved.vgpr_saved[n]
        s = sgpr_writes(ins, gen, wave64)
        if s is ALL or SP in s:
            sp_delta = None
        if s is ALL or FP in s:
            fp_delta = None
    # the caller's SGPRs: unchanged in place, parked elsewhere (SGPR copies first), or lost
    for caller, ps in places.of.items():
        if ("s", caller) in ps:
            continue
        if ps:
            saved.sgpr_home[caller] = sorted(ps, key=lambda p: (p[0] != "s", p))[0]
        else:
            saved.sgprs_lost.add(caller)
    saved.vgprs_written = ALL if all_v_written else written_v
    saved.entry_sp = (FP, fp_delta) if fp_delta is not None else (SP, sp_delta) if sp_delta is not None else None
    return saved
