"""examples/cuda/real/: the kernels, the command lists and capture.sh, checked without a GPU.

capture.sh runs on a machine with an H100 for a few minutes at a time, so everything it does is
tried here first: the kernels plan.py writes from the examples keep their examples' line numbers and
differ only by the stop macros and the host program's include, the cuda-gdb command lists are the
ones plan.py writes, and the script itself runs end to end with stand-ins for nvcc, the programs
and cuda-gdb (each stand-in records how it was called), packs at most 8 files of at most 16 MiB,
and leaves out the biggest cores when the archive is too big. A real nvcc, when there is one,
builds every program for sm_90 (`--dry-run`), and nvdisasm, when there is one, shows a trap on
every stop line and no file but `./<kernel>.cu` in the line tables.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from dap_client import REPO_ROOT

REAL = Path(REPO_ROOT) / "examples" / "cuda" / "real"
CAPTURE = REAL / "capture.sh"
sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen import cuda_engine  # noqa: E402
from dumpgen.cuda_examples import SPECS  # noqa: E402


def _plan():
    spec = importlib.util.spec_from_file_location("real_plan", REAL / "plan.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["real_plan"] = module
    spec.loader.exec_module(module)
    return module


def _bash(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    return subprocess.run(["bash", str(CAPTURE), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


# ---- the kernels and the command lists ----------------------------------------------------------

@pytest.mark.parametrize("kernel", sorted(SPECS))
def test_each_kernel_is_its_example_with_a_fault_on_the_stop_line_and_the_host_program_after_it(kernel, tmp_path):
    plan = _plan()
    # what capture.sh builds: `plan.py sources` writes the kernels into its build folder
    written = plan.write_sources(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{k}.cu" for k in SPECS)
    example = (REAL.parent / f"{kernel}.cu").read_text().splitlines()
    real = (tmp_path / f"{kernel}.cu").read_text().splitlines()
    stop = SPECS[kernel]().line  # the example dumps' stop line (examples/cuda/README.md)
    changed = []
    for number, (before, after) in enumerate(zip(example, real), start=1):
        if before != after:
            # the only change: a macro of fault.cuh put before the line's own statement
            m = re.fullmatch(r"(\s*)(STOP_AT\(.+?\)|WAIT_HERE\(\)); (.*)", after)
            assert m and m.group(1) + m.group(3) == before, (number, before, after)
            changed.append((number, m.group(2).split("(")[0]))
    assert (stop, "STOP_AT") in changed and len(changed) <= 2, changed
    # the host program is included after the kernel, so no line of the example moves
    assert real[len(example):] == ["", f'#include "{kernel}.host.cuh"'], real[len(example):]
    host = (REAL / f"{kernel}.host.cuh").read_text()
    assert "int main()" in host and "int main()" not in "\n".join(example)
    assert not (REAL / f"{kernel}.cu").exists()  # the kernel is written at build time, never committed


def test_a_stop_line_that_moved_in_its_example_is_refused(tmp_path, monkeypatch):
    plan = _plan()
    moved = "// a line more\n" + (REAL.parent / "lds_tiles.cu").read_text()
    (tmp_path / "lds_tiles.cu").write_text(moved)
    monkeypatch.setattr(plan, "EXAMPLES", tmp_path)
    with pytest.raises(ValueError, match=r"lds_tiles\.cu:32 does not start with `int out_col =`"):
        plan.kernel_source("lds_tiles")


def test_plan_py_sources_writes_the_kernels_as_capture_sh_runs_it(tmp_path):
    done = subprocess.run([sys.executable, str(REAL / "plan.py"), "sources", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    plan = _plan()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{k}.cu" for k in plan.STOPS)
    for kernel in plan.STOPS:
        assert (tmp_path / f"{kernel}.cu").read_text() == plan.kernel_source(kernel)


def test_the_committed_command_lists_are_plan_py_s():
    plan = _plan()
    names = {p.name for p in plan.PROGRAMS}
    assert {f.stem for f in (REAL / "gdb").glob("*.gdb")} == names
    for program in plan.PROGRAMS:
        assert (REAL / "gdb" / f"{program.name}.gdb").read_text() == plan.command_file(program), program.name
        # the source: a kernel of its own committed here, or an example that plan.py makes stop
        assert (REAL / f"{program.kernel}.cu").exists() != (program.kernel in plan.STOPS), program.kernel
        assert (REAL.parent / f"{program.kernel}.cu").exists() == (program.kernel in plan.STOPS), program.kernel
    # four -G programs (three examples and the illegal-address store) and four -lineinfo builds (two
    # examples, the seven-level inline chain and the hang)
    assert sorted(n.rsplit(".", 1)[1] for n in names) == ["G"] * 4 + ["lineinfo"] * 4
    assert [p.name for p in plan.PROGRAMS if p.trigger == "user"] == ["hang.sm_90.lineinfo"]
    for program in plan.PROGRAMS:
        for header in program.headers:
            assert (REAL / header).exists(), header
        # capture.sh tells the hang from the gdb file alone (it runs without python3 too)
        assert ("# core: user-triggered" in plan.command_file(program)) == (program.trigger == "user")


def test_the_production_programs_ask_what_the_vllm_workflow_asks():
    plan = _plan()
    chain = next(p for p in plan.PROGRAMS if p.kernel == "inline_chain")
    assert plan.commands(chain)[:4] == ["info cuda kernels", "info line *$errorpc", "info symbol $errorpc",
                                        "x/4i $errorpc"]
    hang = next(p for p in plan.PROGRAMS if p.kernel == "hang")
    assert plan.commands(hang)[:2] == ["info cuda kernels", "info cuda warps"]
    # a warp at each of the three places, in two blocks (warps 0-1 spin, 2-5 wait at the barrier, 6-7 loop)
    warps = sorted(int(t.strip("()").split(",")[0]) // 32 for _label, _block, t in hang.threads)
    assert warps == [0, 1, 3, 4, 6, 7]
    assert plan.LIGHTWEIGHT_FLAGS == ("skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,"
                                      "skip_local_memory,skip_constbank_memory")
    assert f'LIGHT="{plan.LIGHTWEIGHT_FLAGS}"' in CAPTURE.read_text()


def test_every_core_is_asked_about_six_threads_and_the_stop():
    plan = _plan()
    for program in plan.PROGRAMS:
        commands = plan.commands(program)
        switches = [c for c in commands if c.startswith("cuda block ")]
        assert len(switches) == 6 and len(set(switches)) == 6, program.name
        per_thread = plan.thread_commands(program)
        for needed in ("bt", "info args", "info locals", "print threadIdx", "print blockIdx",
                       plan.FOCUS_QUERY, f"info registers {plan.REGISTERS}"):
            assert needed in per_thread, (program.name, needed)
        if program.build == "G":
            assert any(c.startswith("print/x ") for c in per_thread), program.name
            assert any(c.startswith("x/8xw ") for c in per_thread), program.name
    lds = next(p for p in plan.PROGRAMS if p.name == "lds_tiles.sm_90.G")
    assert "x/8xw &tile" in plan.thread_commands(lds)  # a shared array


# ---- capture.sh --------------------------------------------------------------------------------

def test_capture_script_is_valid_bash():
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    assert subprocess.run(["bash", "-n", str(CAPTURE)]).returncode == 0


def test_plan_only_writes_one_cuda_gdb_command_line_per_program(tmp_path):
    done = _bash("--plan-only", str(tmp_path / "out"), env={"TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["capture.log", "cores.tar.gz", "transcripts.txt"]
    with tarfile.open(out / "cores.tar.gz") as tar:
        names = tar.getnames()
        args = tar.extractfile("examples/cuda/real/cores/lds_tiles.sm_90.G.cuda-gdb.args").read().decode()
    assert "examples/cuda/real/cores/divergent_call.sm_90.lineinfo.gdb" in names
    lines = args.splitlines()
    assert lines[:3] == ["-nx", "-q", "-batch"]
    # each command runs as its own -ex (a failing one does not stop the rest), echoed first
    i = lines.index("target cudacore lds_tiles.sm_90.G.cudacore")
    assert lines[i - 1] == "-ex" and lines[i - 2] == "echo (cuda-gdb) target cudacore lds_tiles.sm_90.G.cudacore\\n"
    assert lines.index("set pagination off") < i < lines.index("x/8xw &tile")
    assert not any(line.startswith("#") for line in lines)
    assert [p for p in tmp_path.iterdir() if p.name.startswith("cudareal")] == []  # the work folder is gone


STAND_INS = {
    # nvcc: a "program" that writes a core where CUDA_COREDUMP_FILE says, and a cubin
    "nvcc": r'''#!/usr/bin/env bash
out=""; cubin=0; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; [ "$a" = "-cubin" ] && cubin=1; prev=$a; done
echo "nvcc $*" >> "$STAND_IN_LOG"
if [ $cubin = 1 ]; then printf '\177ELF cubin' > "$out"; exit 0; fi
cat > "$out" <<'EOF'
#!/usr/bin/env bash
echo "program $(basename "$0"): flags=$CUDA_COREDUMP_GENERATION_FLAGS on=$CUDA_ENABLE_COREDUMP_ON_EXCEPTION"
bytes=${STAND_IN_CORE_BYTES:-4096}
case "$CUDA_COREDUMP_GENERATION_FLAGS" in *skip_shared_memory*) bytes=$((bytes / 16)) ;; esac  # lightweight
if [ "$CUDA_ENABLE_USER_TRIGGERED_COREDUMP" = 1 ]; then
  # a hang: the driver opens the pipe, the core is written once something is written to it
  pipe=${CUDA_COREDUMP_PIPE//%p/$$}
  mkfifo "$pipe"
  echo "program: launched"
  cat "$pipe" > /dev/null
  head -c "$bytes" /dev/urandom > "$CUDA_COREDUMP_FILE"
  echo "coredump: All done (took 00s)"
  sleep 600
fi
head -c "$bytes" /dev/urandom > "$CUDA_COREDUMP_FILE"
echo "program: synchronize cudaErrorLaunchFailure"
EOF
chmod +x "$out"
''',
    # cuda-gdb: runs the echo commands as GDB would, and answers the others with one line
    "cuda-gdb": r'''#!/usr/bin/env bash
echo "cuda-gdb $# args in $PWD" >> "$STAND_IN_LOG"
[ "$1" = "--version" ] && { echo "NVIDIA (R) cuda-gdb stand-in"; exit 0; }
prev=""
for a in "$@"; do
  if [ "$prev" = "-ex" ]; then
    case "$a" in
      "echo "*) printf '%b' "${a#echo }" ;;
      "target cudacore "*) [ -f "${a#target cudacore }" ] && echo "Opening GPU coredump: ${a#target cudacore }" ;;
      *) echo "answer to $a" ;;
    esac
  fi
  prev=$a
done
''',
}


def _stand_ins(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("nvcc", "cuda-gdb"):
        (bin_dir / name).write_text(STAND_INS[name])
        (bin_dir / name).chmod(0o755)
    return {"NVCC": str(bin_dir / "nvcc"), "CUDA_GDB": str(bin_dir / "cuda-gdb"), "CUOBJDUMP": "",
            "STAND_IN_LOG": str(tmp_path / "stand-ins.log"), "TMPDIR": str(tmp_path)}


def _unpack(out: Path) -> dict[str, bytes]:
    parts = sorted(out.glob("cores.tar.gz*"))
    data = b"".join(p.read_bytes() for p in parts)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _check_trip_back(out: Path) -> None:
    files = list(out.iterdir())
    assert len(files) <= 8 and all(f.stat().st_size <= 16 << 20 for f in files)
    assert sum(f.stat().st_size for f in files) <= 64 << 20
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", f.name) for f in files)


def test_capture_runs_every_program_asks_cuda_gdb_and_packs(tmp_path):
    env = {**_stand_ins(tmp_path), "CAPTURE_KEEP": "1"}
    out = tmp_path / "out"
    done = _bash(str(out), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _check_trip_back(out)
    files = _unpack(out)
    cores = "examples/cuda/real/cores/"
    plan = _plan()
    faulting = [p.name for p in plan.PROGRAMS if p.trigger == "exception"]
    for program in plan.PROGRAMS:
        name = program.name
        assert cores + f"{name}.cubin" in files, name
        assert files[cores + f"{name}.cudacore.gz"][:2] == b"\x1f\x8b", name  # gzip'd here
        run = files[cores + f"{name}.run.txt"].decode()
        if program.trigger == "user":
            # the hang: lightweight flags, the core triggered through the pipe, then the program killed
            assert f"flags={plan.LIGHTWEIGHT_FLAGS} on=1" in run, run
            assert "trigger: dd if=/dev/zero bs=1M count=1 > hang.sm_90.lineinfo.pipe." in run, run
            assert "killed after" in run, run
        else:
            assert "flags=skip_abort,skip_global_memory on=1" in run, run
            # and the same fault once more as a lightweight core, with its own transcript
            light = files[cores + f"{name}.light.run.txt"].decode()
            assert f"flags={plan.LIGHTWEIGHT_FLAGS} on=1" in light, light
            assert f"target cudacore {name}.light.cudacore" in files[cores + f"{name}.light.cuda-gdb.txt"].decode()
        transcript = files[cores + f"{name}.cuda-gdb.txt"].decode()
        assert f"(cuda-gdb) target cudacore {name}.cudacore\nOpening GPU coredump: {name}.cudacore\n" in transcript
        assert transcript.count("(cuda-gdb) cuda block ") == 6
    # one more core of the illegal-address program keeps global memory, with its own transcript
    full = cores + "bad_store.sm_90.G.fullmem"
    assert "flags=skip_abort on=1" in files[full + ".run.txt"].decode()
    assert "target cudacore bad_store.sm_90.G.fullmem.cudacore" in files[full + ".cuda-gdb.txt"].decode()
    log = (out / "capture.log").read_text()
    assert "found nvcc: " in log and "found cuda-gdb: " in log and "done" in log
    if shutil.which("cuobjdump") is None:
        assert "MISSING cuobjdump" in log  # then the cubins come from nvcc -cubin
    transcripts = (out / "transcripts.txt").read_text()
    assert transcripts.count("==== ") == len(plan.PROGRAMS) + len(faulting) + 1
    # builds ran inside the sources' folder with -include fault.cuh, for sm_90
    calls = (tmp_path / "stand-ins.log").read_text()
    assert "-G -arch=sm_90 -include fault.cuh" in calls and "-lineinfo -O3 -arch=sm_90" in calls
    # on the kernels plan.py wrote there (the work folder is kept with CAPTURE_KEEP=1)
    assert "plan.py sources: wrote lds_tiles.cu" in log
    (src,) = tmp_path.glob("cudareal.*/src")
    for kernel in plan.STOPS:
        assert (src / f"{kernel}.cu").read_text() == plan.kernel_source(kernel), kernel
        assert (src / f"{kernel}.host.cuh").exists(), kernel
    assert (src / "fault.cuh").exists() and (src / "bad_store.cu").exists()


def test_capture_leaves_out_the_biggest_cores_when_the_archive_is_too_big(tmp_path):
    env = _stand_ins(tmp_path)
    # incompressible: 9 cores of 12 MiB would not fit in the 56 MiB of the trip (the 8 lightweight cores, the
    # hang's too, are 16 times smaller, as their memories are left out); all scaled down 8 times (the packing
    # is the same, gzip has an eighth of the bytes to compress)
    env["STAND_IN_CORE_BYTES"] = str(12 << 20 >> 3)
    env["CAPTURE_MAX_PACK_BYTES"], env["CAPTURE_PART_BYTES"] = str(56 << 20 >> 3), str(15 << 20 >> 3)
    out = tmp_path / "out"
    done = _bash(str(out), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _check_trip_back(out)
    files = _unpack(out)
    kept = sorted(n for n in files if n.endswith(".cudacore.gz"))
    plan = _plan()
    faulting = sum(p.trigger == "exception" for p in plan.PROGRAMS)
    # lightweight: each fault's .light core and the hang's (written with the lightweight flags)
    small = [n for n in kept if ".light." in n or "/hang." in n]
    assert len(small) == faulting + 1, kept  # the small ones all fit
    assert 1 <= len(kept) - len(small) <= 4, kept
    for name in kept:  # every core that travels has its transcript, and the reverse
        assert name.replace(".cudacore.gz", ".cuda-gdb.txt") in files
    assert sum(n.endswith(".cuda-gdb.txt") for n in files) == len(kept)
    written = len(plan.PROGRAMS) + faulting + 1  # each program, the lightweight ones, bad_store with global memory
    assert (out / "capture.log").read_text().count("pack: left out ") == written - len(kept)
    assert len(list(out.glob("cores.tar.gz.*"))) >= 2  # split into parts (of 15 MiB at full size)


def test_capture_stops_starting_steps_at_its_deadline_and_still_packs(tmp_path):
    env = _stand_ins(tmp_path)
    env["CAPTURE_SECONDS"] = "30"  # less than the builds ask for
    out = tmp_path / "out"
    done = _bash(str(out), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (out / "capture.log").read_text()
    assert "SKIPPED the builds" in log and "packing into" in log
    assert (out / "cores.tar.gz").exists()


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """`capture.sh --dry-run` with a real nvcc (NVCC, else PATH): (nvcc, the build folder, the packed files)."""
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if not nvcc:
        reason = "no nvcc (set NVCC, or install the CUDA toolkit or the nvidia-cuda-nvcc wheel)"
        print(reason)
        pytest.skip(reason)
    tmp_path = tmp_path_factory.mktemp("dry_run")
    out = tmp_path / "out"
    done = _bash("--dry-run", str(out), env={"NVCC": nvcc, "TMPDIR": str(tmp_path)}, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return nvcc, tmp_path, _unpack(out)


def test_dry_run_builds_every_program_for_sm_90_with_a_real_nvcc(dry_run):
    _nvcc, build_root, files = dry_run
    plan = _plan()
    for program in plan.PROGRAMS:
        cubin = files[f"examples/cuda/real/cores/{program.name}.cubin"]
        # an ELF cubin whose e_flags name sm_90 in bits 8-15 (examples/cuda/README.md)
        assert cubin[:4] == b"\x7fELF" and (int.from_bytes(cubin[48:52], "little") >> 8) & 0xFF == 90, program.name
        assert str(build_root) not in cubin.decode("latin-1"), program.name  # the DWARF names no build folder


def _nvdisasm(nvcc: str) -> str | None:
    """NVDISASM, else PATH or the nvidia-cuda-nvdisasm wheel (as the dump generator finds it), else beside nvcc."""
    if os.environ.get("NVDISASM"):
        return os.environ["NVDISASM"]
    try:
        return cuda_engine.nvdisasm()
    except FileNotFoundError:
        beside = Path(nvcc).resolve().parent / "nvdisasm"  # the toolkit's bin, or the nvcc wheel's
        return str(beside) if beside.is_file() else None


def test_dry_run_cubins_trap_on_every_stop_line_and_name_only_their_source(dry_run, tmp_path):
    nvcc, _build_root, files = dry_run
    nvdisasm = _nvdisasm(nvcc)
    if not nvdisasm:
        reason = "no nvdisasm (set NVDISASM, or install the CUDA toolkit or the nvidia-cuda-nvdisasm wheel)"
        print(reason)
        pytest.skip(reason)
    plan = _plan()
    for program in plan.PROGRAMS:
        cubin = tmp_path / f"{program.name}.cubin"
        cubin.write_bytes(files[f"examples/cuda/real/cores/{program.name}.cubin"])
        sass = subprocess.run([nvdisasm, "-g", "-c", str(cubin)], capture_output=True, text=True, timeout=120)
        assert sass.returncode == 0, sass.stderr
        # nvdisasm -g puts `//## File "F", line N` before the instructions of each line
        where, files_named, traps = None, set(), set()
        for row in sass.stdout.splitlines():
            m = re.search(r'//## File "([^"]+)", line (\d+)', row)
            if m:
                where = (m.group(1), int(m.group(2)))
                files_named.add(m.group(1))
            elif "BPT.TRAP" in row:
                traps.add(where)
        source = f"./{program.kernel}.cu"
        assert files_named == {source, *(f"./{h}" for h in program.headers)}, (program.name, files_named)
        stops = {(source, stop.line) for stop in plan.STOPS.get(program.kernel, ()) if stop.macro.startswith("STOP_AT")}
        assert stops <= traps, (program.name, stops, traps)
