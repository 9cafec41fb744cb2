"""Memory references: `<space>[@<context>]#0x<addr>`, self-contained and stable across focus changes.

    global#0x7f0000001000
    local@wg(1,0,0)#0x40          LDS of one workgroup (of dispatch 0 unless `d1.` prefixes it)
    private_lane@wave3.lane5#0x10 one lane's scratch
    private_wave@wave3#0x100      a wave's unswizzled scratch
    private_lane7@wave3#0x10      lane 7 of wave 3 (the space names the lane)

ROCgdb-style addresses without a context (`local#0x40`) resolve against the focus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import AspaceError

_REF = re.compile(r"^\s*(?P<space>[A-Za-z_][A-Za-z0-9_]*)(?:@(?P<ctx>[^#]+))?#(?P<addr>0[xX][0-9a-fA-F]+|\d+)\s*$")
_WG = re.compile(r"^(?:d(?P<d>\d+)\.)?wg\((?P<x>\d+),(?P<y>\d+),(?P<z>\d+)\)$")
_WAVE = re.compile(r"^wave(?P<w>\d+)(?:\.lane(?P<l>\d+))?$")


@dataclass(frozen=True)
class MemRef:
    space: str
    address: int
    wave: int | None = None  # for lane/wave-scoped spaces
    lane: int | None = None
    workgroup: tuple[int, int, int] | None = None  # for local
    dispatch: int = 0

    def __str__(self) -> str:
        return format_memref(self)

    def moved(self, delta: int) -> "MemRef":
        return MemRef(self.space, self.address + delta, self.wave, self.lane, self.workgroup, self.dispatch)


def format_memref(ref: MemRef) -> str:
    ctx = ""
    if ref.workgroup is not None:
        x, y, z = ref.workgroup
        ctx = f"@{'d%d.' % ref.dispatch if ref.dispatch else ''}wg({x},{y},{z})"
    elif ref.wave is not None:
        ctx = f"@wave{ref.wave}" + (f".lane{ref.lane}" if ref.lane is not None else "")
    return f"{ref.space}{ctx}#0x{ref.address:x}"


def parse_memref(text: str) -> MemRef:
    m = _REF.match(text)
    if not m:
        raise AspaceError(f"not a memory reference: {text[:80]!r} (expected SPACE[@CONTEXT]#0xADDRESS)")
    if any(len(n) > 24 for n in re.findall(r"[0-9a-fA-FxX]+", text.split("#", 1)[1])) or \
            any(len(n) > 24 for n in re.findall(r"\d+", m["ctx"] or "")):
        raise AspaceError(f"a number in {text[:80]!r}... is longer than any 64-bit number")
    addr = int(m["addr"], 0)
    if addr >= 1 << 64:
        raise AspaceError(f"address {m['addr']} does not fit in 64 bits")
    ctx = m["ctx"]
    if ctx is None:
        return MemRef(m["space"], addr)
    wg = _WG.match(ctx.replace(" ", ""))
    if wg:
        return MemRef(m["space"], addr, workgroup=(int(wg["x"]), int(wg["y"]), int(wg["z"])),
                      dispatch=int(wg["d"] or 0))
    wave = _WAVE.match(ctx)
    if wave:
        return MemRef(m["space"], addr, wave=int(wave["w"]), lane=int(wave["l"]) if wave["l"] else None)
    raise AspaceError(f"unknown memory context {ctx!r} (expected wg(x,y,z), waveN or waveN.laneM)")
