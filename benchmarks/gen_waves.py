"""A device-scale dump: the lds_tiles gfx90a -O0 workgroup (4 waves) repeated N times.

    python benchmarks/gen_waves.py OUT_FOLDER --workgroups 10000 [--odd 3 --odd-pc 0x1234] [--distinct]

Every wave gets its own register, private and LDS file names, as a real capture
would, but the files are hard links to the example's (fast to make, no disk
space); with `--distinct` every register file is a file of its own, as a real
capture writes them (the same bytes, another inode: read one by one), and
`--all-active` makes every lane of them active. `--example` picks another example
dump (its first workgroup is repeated). `--odd K`
gives the last K waves a copy of their register file with the pc set to
`--odd-pc` (default: the start of another source line of the kernel), so they
stop somewhere else than the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links not allowed: copy
        shutil.copyfile(src, dst)


def other_line_pc(example: Path = EXAMPLE) -> int:
    """A runtime pc in the kernel on another source line than the dump's focus wave: where odd waves stop."""
    from aspace_dap.session import Session

    session = Session.open(str(example))
    wave = session.wave()
    program = session.program_for(wave)
    here = program.index.line_for_pc(program.elf_pc(wave.pc))
    function = program.index.frames_at(program.elf_pc(wave.pc))[-1]
    low, high = function.ranges[0] if function.ranges else (function.low_pc, function.low_pc + 0x1000)
    for pc in range(low, high, 4):
        line = program.index.line_for_pc(pc)
        if line is not None and line.line and line.line != here.line and program.index.frames_at(pc):
            session.state.close()
            return pc + program.load_address
    raise RuntimeError("no other line in the kernel")


def write_waves_dump(out: Path, workgroups: int, odd: int = 0, odd_pc: int | None = None,
                     example: Path = EXAMPLE, distinct: bool = False, all_active: bool = False) -> Path:
    """Write the dump into `out` (created; must not exist) and return it. `all_active` (with `distinct`):
    every lane of every wave active (exec all ones), as a full dispatch of a compute kernel has them."""
    if all_active and not distinct:
        raise ValueError("all_active changes the register files: it needs distinct ones")
    manifest = json.loads((example / "manifest.json").read_text())
    out.mkdir(parents=True)
    for sub in ("code", "mem", "regs"):
        (out / sub).mkdir()
    for co in manifest["code_objects"]:
        shutil.copyfile(example / co["path"], out / co["path"])
    for region in manifest.get("memory") or []:
        shutil.copyfile(example / region["file"], out / region["file"])
    dispatch = manifest["dispatches"][0]
    template = dispatch["workgroups"][0]
    per_wg = len(template["waves"])
    total = workgroups * per_wg
    if odd and odd_pc is None:
        odd_pc = other_line_pc(example)
    layout = manifest["register_layouts"][template["waves"][0]["registers"]["layout"]]
    offsets, at = {}, 0
    for name, size in layout:
        offsets.setdefault(name, at)
        at += int(size)
    pc_offset = offsets["pc"]

    def own(src: Path, pc: int | None = None) -> bytes:
        data = bytearray(src.read_bytes())
        if pc is not None:
            data[pc_offset:pc_offset + 8] = pc.to_bytes(8, "little")
        if all_active:
            data[offsets["exec"]:offsets["exec"] + 8] = b"\xff" * 8
        return bytes(data)
    side = 1
    while side * side < workgroups:
        side += 1
    size = dispatch["workgroup_size"]
    groups = []
    registers: dict[Path, bytes] = {}
    wave_id = 0
    for g in range(workgroups):
        lds_src = example / template["lds"]["file"]
        lds_rel = f"mem/lds-{g}.bin"
        _link(lds_src, out / lds_rel)
        waves = []
        for w in template["waves"]:
            regs_rel, private_rel = f"regs/wave-{wave_id}.bin", f"mem/private-{wave_id}.bin"
            regs_src = example / w["registers"]["file"]
            if wave_id >= total - odd:
                (out / regs_rel).write_bytes(own(regs_src, odd_pc))
            elif distinct:
                (out / regs_rel).write_bytes(registers.setdefault(regs_src, own(regs_src)))
            else:
                _link(regs_src, out / regs_rel)
            entry = dict(w, id=wave_id, registers=dict(w["registers"], file=regs_rel))
            if "private" in w:  # (an -O2 kernel may have no scratch)
                _link(example / w["private"]["file"], out / private_rel)
                entry["private"] = dict(w["private"], file=private_rel)
            waves.append(entry)
            wave_id += 1
        groups.append({"id": [g % side, g // side, 0], "lds": dict(template["lds"], file=lds_rel), "waves": waves})
    dispatch = dict(dispatch, workgroups=groups, grid_size=[side * size[0], side * size[1], size[2]])
    manifest["dispatches"] = [dispatch]
    manifest["focus"] = {"wave": 0, "lane": manifest.get("focus", {}).get("lane", 0)}
    manifest["producer"] = f"benchmarks/gen_waves.py: {workgroups} x the workgroup of {example.name}"
    (out / "manifest.json").write_text(json.dumps(manifest, separators=(",", ":")))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--workgroups", type=int, default=10_000)
    parser.add_argument("--odd", type=int, default=0)
    parser.add_argument("--odd-pc", type=lambda s: int(s, 0))
    parser.add_argument("--distinct", action="store_true", help="register files of their own, not hard links")
    parser.add_argument("--all-active", action="store_true", help="every lane active (needs --distinct)")
    parser.add_argument("--example", type=Path, default=EXAMPLE, help="the example dump whose workgroup is repeated")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    path = write_waves_dump(args.out, args.workgroups, args.odd, args.odd_pc, example=args.example,
                            distinct=args.distinct, all_active=args.all_active)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
