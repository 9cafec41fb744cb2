"""Device-scale dumps: how long until the user sees something, and how much memory it takes.

Run: .venv/bin/python benchmarks/bench_scale.py [--waves 1000,10000,40000,100000] [--runs 3]

For each size a dump is generated into a temporary folder (gen_waves.py: the
lds_tiles gfx90a -O0 workgroup of 4 waves repeated) and the real server is
spawned over stdio: spawn -> initialize -> launch -> threads -> stackTrace ->
scopes -> variables of the last wave is "first locals"; then `threads` and
`waveGroups` are timed again on the open dump, and the server's peak RSS is read
from /proc before it exits. `json.load` of the same manifest (in this process)
is the yardstick. Each number is the median of --runs runs.
Targets: 40,000 waves: first locals under 2 s and under 10x json.load;
100,000 waves: first locals under 1.5 s, peak RSS under 300 MiB.

Then the dump of a whole device as a capture writes it: 100,000 waves of the lds_tiles gfx90a -O2
workgroup (tx and ty live in VGPRs), every lane active, every wave's register file a file of its own
(not a hard link: 100,000 files to read), 3 waves at another line. Timed over DAP as above: first
locals, `waveGroups`, the same again, one group's every wave (`waveGroups {group}`), and `findLanes`
of an expression over variables that live in registers (6.4 million lanes, one place). Targets: first
locals under 1 s, waveGroups under 0.5 s and then under 20 ms per request, findLanes under 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_dap import StdioClient  # noqa: E402
from gen_waves import write_waves_dump  # noqa: E402

FIRST_LOCALS_TARGET_S = 2.0
JSON_RATIO_TARGET = 10.0
RSS_TARGET_MIB = 300
FIRST_LOCALS_100K_TARGET_S = 1.5
BIG_CODE_OBJECT_TARGET_S = 0.4
O2_EXAMPLE = REPO / "examples" / "lds_tiles" / "dumps" / "gfx90a.O2"
DEVICE_WAVES = 100_000
DEVICE_FIRST_TARGET_S, DEVICE_GROUPS_TARGET_S, DEVICE_AGAIN_TARGET_S, DEVICE_FIND_TARGET_S = 1.0, 0.5, 0.02, 3.0
DEVICE_FIND = "tx + ty * 16 == 37"


def big_code_object_dump(folder: Path, dies: int) -> Path:
    """One wave stopped in the last function of a generated code object with `dies` DIEs
    (the bench_index.py / bench_lsp.py input)."""
    import numpy as np
    from elftools.elf.elffile import ELFFile

    from bench_index import last_function_pc
    from gen_big_code_object import write_code_object

    from aspace_dap.state import StateWriter

    data, _, _ = write_code_object(dies, 100)
    code_object = folder / f"generated-{dies}.co"
    code_object.write_bytes(data)
    with open(code_object, "rb") as f:
        pc = last_function_pc(ELFFile(f))
    writer = StateWriter("amd", "gfx90a", 64)
    co = writer.add_code_object(str(code_object))
    wg = writer.add_dispatch("kernel", co, (64, 1, 1), (64, 1, 1)).add_workgroup((0, 0, 0), lds=bytes(4096))
    wg.add_wave(0, 0, {"pc": np.uint64(pc), "exec": np.uint64(2**64 - 1), "s33": np.uint32(0),
                       "v0": np.arange(64, dtype=np.uint32).tobytes()}, private=np.zeros((64, 256), np.uint8))
    return writer.write(folder / "dump")


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (a loaded machine stretches wall time, not this)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def one_run(dump: Path, groups: bool = True, keep: bool = False) -> dict:
    start = time.perf_counter()
    client = StdioClient()
    client.request("initialize", {"adapterID": "aspace-bench", "supportsInvalidatedEvent": True})
    seq = client.send("launch", {"state": str(dump)})
    client.request("configurationDone")
    client.response(seq)
    threads = client.request("threads")["threads"]
    last = threads[-1]["id"]
    frames = client.request("stackTrace", {"threadId": last})["stackFrames"]
    scopes = client.request("scopes", {"frameId": frames[0]["id"]})["scopes"]
    local = next(s for s in scopes if s["name"] == "Locals")
    shown = client.request("variables", {"variablesReference": local["variablesReference"]})["variables"]
    first_locals = time.perf_counter() - start
    cpu = _cpu_s(client._proc.pid)
    if keep:
        return {"first": first_locals, "cpu": cpu, "client": client}
    if not groups:
        client.close()
        return {"first": first_locals, "cpu": cpu}
    t0 = time.perf_counter()
    client.request("threads")
    threads_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    groups = client.request("waveGroups")["groups"]
    groups_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    client.request("waveGroups")
    groups_again_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    listing = client.request("evaluate", {"expression": "info waves", "context": "repl"})["result"]
    info_waves_s = time.perf_counter() - t0
    if str(last) not in listing and "wave" not in listing:
        raise RuntimeError(f"`info waves` did not list waves: {listing[:200]!r}")
    rss = _peak_rss_mib(client._proc.pid)
    client.close()
    return {"first": first_locals, "cpu": cpu, "threads": threads_s, "groups": groups_s, "groups_again": groups_again_s,
            "info_waves": info_waves_s, "rss": rss, "count": len(threads), "locals": len(shown), "group_count": len(groups)}


def device_run(dump: Path) -> dict:
    """first locals, waveGroups (twice), one group in full and findLanes, on a dump of a whole device."""
    out = one_run(dump, groups=False, keep=True)
    client = out.pop("client")
    for name, command, args in (("groups", "waveGroups", {}), ("again", "waveGroups", {}),
                                ("group", "waveGroups", {"group": 0}),
                                ("find", "findLanes", {"expression": DEVICE_FIND, "limit": 20})):
        t0 = time.perf_counter()
        body = client.request(command, args)
        out[name] = time.perf_counter() - t0
        if command == "findLanes":
            out["matched"], out["searched"] = body["matched"], body["searched"]
        elif name == "groups":
            out["group_count"] = len(body["groups"])
    client.close()
    return out


def device_rows(runs: int) -> tuple[str, bool]:
    with tempfile.TemporaryDirectory(prefix="aspace-scale-") as tmp:
        dump = write_waves_dump(Path(tmp) / "dump", DEVICE_WAVES // 4, odd=3, example=O2_EXAMPLE, distinct=True,
                                all_active=True)
        results = [device_run(dump) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results)
           for k in ("first", "cpu", "groups", "again", "group", "find")}
    ok = {"first": med["first"] < DEVICE_FIRST_TARGET_S, "groups": med["groups"] < DEVICE_GROUPS_TARGET_S,
          "again": max(med["again"], med["group"]) < DEVICE_AGAIN_TARGET_S, "find": med["find"] < DEVICE_FIND_TARGET_S}
    r = results[0]
    line = (f"{DEVICE_WAVES:,} waves, register files of their own, every lane active: first locals "
            f"{med['first'] * 1e3:.0f} ms (server cpu {med['cpu'] * 1e3:.0f} ms) [< {DEVICE_FIRST_TARGET_S:g} s: "
            f"{'ok' if ok['first'] else 'MISSED'}]; waveGroups {med['groups'] * 1e3:.0f} ms ({r['group_count']} groups) "
            f"[< {DEVICE_GROUPS_TARGET_S:g} s: {'ok' if ok['groups'] else 'MISSED'}], again {med['again'] * 1e3:.1f} ms, "
            f"a group's every wave {med['group'] * 1e3:.1f} ms [< {DEVICE_AGAIN_TARGET_S * 1e3:.0f} ms: "
            f"{'ok' if ok['again'] else 'MISSED'}]; findLanes {DEVICE_FIND!r} over {r['searched']:,} lanes "
            f"{med['find'] * 1e3:.0f} ms ({r['matched']:,} match) [< {DEVICE_FIND_TARGET_S:g} s: "
            f"{'ok' if ok['find'] else 'MISSED'}]")
    return line, all(ok.values())


def json_load_s(manifest: Path, runs: int) -> float:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(manifest, "rb") as f:
            json.load(f)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", default="1000,10000,40000,100000",
                        help="comma-separated wave counts (multiples of 4)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dies", type=int, default=200_000, help="DIEs of the generated code object (0: skip)")
    parser.add_argument("--no-device", dest="device", action="store_false",
                        help="skip the 100,000-wave dump with register files of their own")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.waves.split(",")]
    print(f"{'waves':>8}{'manifest':>10}{'json.load':>11}{'first locals':>14}{'ratio':>7}{'(cpu)':>8}{'threads':>10}"
          f"{'waveGroups':>12}{'(again)':>9}{'info waves':>12}{'peak RSS':>10}  targets")
    failed = False
    for waves in sizes:
        with tempfile.TemporaryDirectory(prefix="aspace-scale-") as tmp:
            dump = write_waves_dump(Path(tmp) / "dump", max(1, waves // 4))
            manifest = dump / "manifest.json"
            runs = [one_run(dump) for _ in range(args.runs)]
            load = json_load_s(manifest, max(3, args.runs))
            size_mb = manifest.stat().st_size / 1e6
        med = {k: statistics.median(r[k] for r in runs) for k in ("first", "threads", "groups", "groups_again", "info_waves")}
        cpu = statistics.median((r["cpu"] or 0) for r in runs)
        rss = max((r["rss"] or 0) for r in runs)
        ratio = med["first"] / load
        notes = []
        if waves == 40_000:
            ok = med["first"] < FIRST_LOCALS_TARGET_S and ratio < JSON_RATIO_TARGET
            failed |= not ok
            notes.append(f"first < {FIRST_LOCALS_TARGET_S:g} s and < {JSON_RATIO_TARGET:g}x: "
                         f"{'ok' if ok else 'MISSED'}")
        if waves >= 100_000:
            ok = rss < RSS_TARGET_MIB
            failed |= not ok
            notes.append(f"RSS < {RSS_TARGET_MIB} MiB: {'ok' if ok else 'MISSED'}")
            ok = med["first"] < FIRST_LOCALS_100K_TARGET_S
            failed |= not ok
            notes.append(f"first < {FIRST_LOCALS_100K_TARGET_S:g} s: {'ok' if ok else 'MISSED'}")
        print(f"{runs[0]['count']:>8}{size_mb:>8.1f}MB{load * 1e3:>9.0f}ms{med['first'] * 1e3:>12.0f}ms"
              f"{ratio:>6.1f}x{cpu * 1e3:>6.0f}ms{med['threads'] * 1e3:>8.0f}ms{med['groups'] * 1e3:>10.0f}ms"
              f"{med['groups_again'] * 1e3:>7.0f}ms{med['info_waves'] * 1e3:>10.0f}ms{rss:>7.0f}MiB  {'; '.join(notes)}", flush=True)
    if args.device:
        line, ok = device_rows(args.runs)
        failed |= not ok
        print(f"\n{line}", flush=True)
    if args.dies:
        with tempfile.TemporaryDirectory(prefix="aspace-scale-") as tmp:
            dump = big_code_object_dump(Path(tmp), args.dies)
            runs = [one_run(dump, groups=False) for _ in range(max(3, args.runs))]
            first = statistics.median(r["first"] for r in runs)
            cpu = statistics.median((r["cpu"] or 0) for r in runs)
        ok = first < BIG_CODE_OBJECT_TARGET_S
        failed |= not ok
        print(f"\n{args.dies:,}-DIE code object, one wave: first locals {first * 1e3:.0f}ms "
              f"(server cpu {cpu * 1e3:.0f}ms) "
              f"(target < {BIG_CODE_OBJECT_TARGET_S * 1e3:.0f} ms: {'ok' if ok else 'MISSED'})")
    print(f"\nfirst locals = spawn -> initialize -> launch -> threads -> stackTrace -> scopes -> variables "
          f"of the last wave; (cpu) = the server's CPU time up to then; median of {args.runs} runs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
