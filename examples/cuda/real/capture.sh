#!/usr/bin/env bash
# Real CUDA cores in one go, on a machine with an NVIDIA GPU (sm_90: H100/H200), the CUDA toolkit and
# cuda-gdb: build each program of gdb/*.gdb (<kernel>.sm_90.<G|lineinfo>; `plan.py sources` first
# writes the examples' kernels into the build folder) with nvcc, run it so that the driver writes a
# GPU core when the kernel faults, ask cuda-gdb about each core (the commands of gdb/<program>.gdb,
# written by plan.py) and pack cores, cubins, transcripts and logs into at most 8 files of at most
# 15 MiB under OUT, laid out as examples/cuda/real/cores/ (unpack at the repository root:
# `cat cores.tar.gz* | tar xzf -`).
#
#   capture.sh [OUT]              everything (OUT defaults to $OUT, else ./capture-out)
#   capture.sh --dry-run [OUT]    build and write the cuda-gdb command lines, run nothing (no GPU needed)
#   capture.sh --plan-only [OUT]  only write the cuda-gdb command lines (cores/*.cuda-gdb.args) and pack
#   capture.sh --pack-only DIR OUT  pack DIR (a results folder) into OUT, as the last step does
#
# Every tool is looked up at run time (PATH, $CUDA_HOME, /usr/local/cuda*, the nvidia-cuda-nvcc
# wheel) and named in the log; NVCC, CUDA_GDB, CUOBJDUMP and PYTHON override the search. A failing
# step is logged and the next one runs; the script stops starting steps after CAPTURE_SECONDS
# (default 330) and always packs what it has. Environment for the runs:
# CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, CUDA_COREDUMP_FILE, CUDA_COREDUMP_SHOW_PROGRESS=1 and
# CUDA_COREDUMP_GENERATION_FLAGS (skip_abort,skip_global_memory; one more core of bad_store keeps
# global memory; every faulting program once more with the lightweight flags users are told to set,
# as <program>.light). The hang program's core is triggered through CUDA_COREDUMP_PIPE (with
# CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 and the lightweight flags), then the program is killed. For
# every -lineinfo program, `nvdisasm -ndf -c -gi` of its cubin is kept, and the rows around each
# core's error PC. Cores are gzip'd here. CAPTURE_KEEP=1 keeps the work folder. README.md beside this
# file says more.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ARCH=sm_90
DRY=0
BUILD=1
PACK_ONLY=""
case "${1:-}" in
    --dry-run) DRY=1; shift ;;
    --plan-only) DRY=1; BUILD=0; shift ;;
    --pack-only) PACK_ONLY=${2:?--pack-only needs a results folder}; shift 2 ;;
esac
OUTDIR=${1:-${OUT:-$PWD/capture-out}}
DEADLINE=${CAPTURE_SECONDS:-420}
# the trip back takes 64 MiB in all (the log and a text copy travel too), in parts of 15 MiB; the
# variables set smaller sizes (the tests' packing of small stand-in cores)
PART_BYTES=${CAPTURE_PART_BYTES:-$((15 * 1024 * 1024))}
MAX_PACK_BYTES=${CAPTURE_MAX_PACK_BYTES:-$((56 * 1024 * 1024))}

mkdir -p "$OUTDIR"

# ---- packing (also the whole job of --pack-only) ------------------------------------------------

# pack RESULTS OUT: RESULTS becomes examples/cuda/real/cores/ inside cores.tar.gz (split into
# cores.tar.gz.00, .01, ... when larger than one part). While the archive is too big for the trip,
# the biggest core is left out with its transcript (a line in capture.log says so; transcripts.txt,
# beside the archive, keeps every transcript as plain text, with capture.log).
pack() {
    local results=$1 out=$2 stage cores tarball size biggest t
    stage=$(mktemp -d "${TMPDIR:-/tmp}/cudareal-pack.XXXXXX")
    cores="$stage/examples/cuda/real/cores"
    mkdir -p "$stage/examples/cuda/real"
    cp -r "$results" "$cores"
    rm -f "$out"/cores.tar.gz "$out"/cores.tar.gz.[0-9][0-9]
    : > "$out/transcripts.txt"
    for t in "$cores"/*.cuda-gdb.txt; do
        [ -f "$t" ] || continue
        printf '==== %s\n' "$(basename "$t")" >> "$out/transcripts.txt"
        cat "$t" >> "$out/transcripts.txt"
    done
    tarball="$stage/cores.tar.gz"
    while :; do
        tar -C "$stage" -czf "$tarball" examples
        size=$(stat -c %s "$tarball")
        [ "$size" -le "$MAX_PACK_BYTES" ] && break
        biggest=$(find "$cores" -name '*.cudacore*' -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
        if [ -z "$biggest" ]; then
            echo "pack: the archive is $size bytes even without cores; sending it anyway"
            break
        fi
        echo "pack: left out $(basename "$biggest") ($(stat -c %s "$biggest") bytes) and its transcript: the archive was $size bytes" \
            | tee -a "$cores/capture.log"
        rm -f "$biggest" "${biggest%%.cudacore*}.cuda-gdb.txt"
    done
    if [ "$size" -le "$PART_BYTES" ]; then
        mv "$tarball" "$out/cores.tar.gz"
    else
        split -b "$PART_BYTES" -d -a 2 "$tarball" "$out/cores.tar.gz."
    fi
    [ -f "$cores/capture.log" ] && cp "$cores/capture.log" "$out/capture.log"
    rm -rf "$stage"
    echo "pack: $(cd "$out" && ls | tr '\n' ' ')"
}

if [ -n "$PACK_ONLY" ]; then
    pack "$PACK_ONLY" "$OUTDIR"
    exit $?
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cudareal.XXXXXX")
[ -n "${CAPTURE_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT  # CAPTURE_KEEP=1 keeps the work folder
SRC=$WORK/src        # sources; builds and cuda-gdb run here, so the DWARF and the transcripts name no folder
BIN=$WORK/bin
RES=$WORK/cores      # what comes back: examples/cuda/real/cores/
mkdir -p "$SRC" "$BIN" "$RES"
LOG=$RES/capture.log
: > "$LOG"

log() { printf '[capture +%3ds] %s\n' "$SECONDS" "$*" | tee -a "$LOG"; }
left() { echo $((DEADLINE - SECONDS)); }
# time_for SECONDS WHAT: true when SECONDS remain before the deadline, else says what is skipped
time_for() {
    if [ "$(left)" -lt "$1" ]; then
        log "SKIPPED $2: $(left)s left of CAPTURE_SECONDS=$DEADLINE"
        return 1
    fi
}

log "capture.sh in $HERE, work folder $WORK, results to $OUTDIR ($([ $BUILD = 0 ] && echo plan only || ([ $DRY = 1 ] && echo dry run) || echo full run))"

# ---- tools ------------------------------------------------------------------------------------

# find_tool NAME VAR: the tool's path from $VAR, PATH, the CUDA folders or the nvcc wheel, else ""
find_tool() {
    local name=$1 override=${!2:-} dir candidate
    if [ -n "$override" ]; then
        if [ -x "$override" ] || command -v "$override" >/dev/null 2>&1; then
            command -v "$override" 2>/dev/null || echo "$override"
            return
        fi
        log "$2=$override is not an executable; searching for $name" >&2
    fi
    if command -v "$name" >/dev/null 2>&1; then
        command -v "$name"
        return
    fi
    for dir in ${CUDA_HOME:+"$CUDA_HOME/bin"} ${CUDA_PATH:+"$CUDA_PATH/bin"} /usr/local/cuda/bin \
               $(ls -d /usr/local/cuda-*/bin 2>/dev/null | sort -rV) /opt/cuda/bin \
               $(ls -d /usr/local/lib/python3*/dist-packages/nvidia/cu1*/bin \
                       /usr/lib/python3/dist-packages/nvidia/cu1*/bin 2>/dev/null); do
        candidate="$dir/$name"
        if [ -x "$candidate" ]; then
            echo "$candidate"
            return
        fi
    done
    echo ""
}

NVCC=$(find_tool nvcc NVCC)
CUDA_GDB=$(find_tool cuda-gdb CUDA_GDB)
CUOBJDUMP=$(find_tool cuobjdump CUOBJDUMP)
NVDISASM=$(find_tool nvdisasm NVDISASM)
CC_BIN=$(command -v "${CC:-cc}" 2>/dev/null || command -v gcc 2>/dev/null || true)
PYTHON=$(command -v "${PYTHON:-python3}" 2>/dev/null || command -v python3 2>/dev/null || true)
for pair in "nvcc:$NVCC:builds the programs (required)" "cuda-gdb:$CUDA_GDB:reads the cores (required for transcripts)" \
            "cuobjdump:$CUOBJDUMP:extracts the cubins that ran (else nvcc -cubin builds them again)" \
            "nvdisasm:$NVDISASM:prints the inline chains of the -lineinfo cubins (nvdisasm -gi)" \
            "cc:$CC_BIN:builds the getcwd shim that keeps the build folder out of the DWARF" \
            "python3:$PYTHON:writes the kernels from the examples (plan.py sources; all but bad_store need it)"; do
    IFS=: read -r name path why <<< "$pair"
    if [ -n "$path" ]; then log "found $name: $path"; else log "MISSING $name: $why; looked in PATH, \$CUDA_HOME/bin, /usr/local/cuda*/bin, the nvcc wheel"; fi
done

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uname: $(uname -srm)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>&1 | head -4 | tr '\n' ';')"
    else
        echo "nvidia-smi: not found"
    fi
    [ -n "$NVCC" ] && echo "nvcc: $("$NVCC" --version 2>&1 | tail -2 | tr '\n' ' ')"
    [ -n "$CUDA_GDB" ] && echo "cuda-gdb: $("$CUDA_GDB" --version 2>&1 | head -2 | tr '\n' ' ')"
} > "$RES/machine.txt" 2>&1
sed 's/^/    /' "$RES/machine.txt" | tee -a "$LOG"

PROGRAMS=()
for f in "$HERE"/gdb/*."$ARCH".*.gdb; do
    [ -f "$f" ] && PROGRAMS+=("$(basename "$f" .gdb)")
done
log "programs: ${PROGRAMS[*]:-none (no gdb/*.gdb: run python3 plan.py write)}"

# ---- build ------------------------------------------------------------------------------------

# bad_store.cu, fault.cuh and the host programs (<kernel>.host.cuh), then the kernels plan.py writes
# from the examples: ../<kernel>.cu with the stop macros put in, under the example's own name
cp "$HERE"/*.cu "$HERE"/*.cuh "$SRC"/
if [ -z "$PYTHON" ]; then
    log "no python3: the examples' kernels are not written (only bad_store builds)"
elif written=$("$PYTHON" "$HERE/plan.py" sources "$SRC" 2>&1); then
    log "plan.py sources: $(tr '\n' ' ' <<< "$written")"
else
    log "FAILED plan.py sources: the examples' kernels are not written: $written"
fi
SHIM=""
if [ -n "$CC_BIN" ]; then
    if "$CC_BIN" -shared -fPIC -o "$WORK/cwd_dot.so" "$HERE/../cwd_dot.c" >> "$LOG" 2>&1; then
        SHIM="$WORK/cwd_dot.so"
    else
        log "the getcwd shim did not build: the DWARF will name the build folder"
    fi
fi
LINK_EXTRA=()
if [ -n "$NVCC" ] && [ -f "$(dirname "$NVCC")/../lib/libcudart_static.a" ]; then
    LINK_EXTRA=(-L"$(dirname "$NVCC")/../lib")  # the nvcc wheel keeps the runtime beside it
fi

flags_of() { case "$1" in *.G) echo "-G" ;; *.lineinfo) echo "-lineinfo -O3" ;; esac; }
kernel_of() { echo "${1%%.*}"; }

# build NAME [EXTRA_FLAG]: the program bin/NAME and the cubin cores/NAME.cubin
build() {
    local name=$1 extra=${2:-} kernel flags xdir
    kernel=$(kernel_of "$name")
    flags=$(flags_of "$name")
    (
        cd "$SRC" || exit 1
        # shellcheck disable=SC2086
        env ${SHIM:+LD_PRELOAD=$SHIM} PWD=. timeout 180 "$NVCC" $flags $extra -arch="$ARCH" -include fault.cuh \
            "${LINK_EXTRA[@]}" -o "$BIN/$name" "$kernel.cu"
    ) > "$RES/$name.build.txt" 2>&1 || { echo "nvcc failed: see $name.build.txt"; return 1; }
    xdir="$WORK/x.$name"
    mkdir -p "$xdir"
    if [ -n "$CUOBJDUMP" ] && (cd "$xdir" && "$CUOBJDUMP" -xelf all "$BIN/$name" >> "$RES/$name.build.txt" 2>&1) \
            && ls "$xdir"/*"$ARCH"*.cubin >/dev/null 2>&1; then
        cp "$(ls "$xdir"/*"$ARCH"*.cubin | head -1)" "$RES/$name.cubin"
        "$CUOBJDUMP" -sass "$BIN/$name" > "$RES/$name.sass.txt" 2>&1 || true
    else
        (
            cd "$SRC" || exit 1
            # shellcheck disable=SC2086
            env ${SHIM:+LD_PRELOAD=$SHIM} PWD=. timeout 180 "$NVCC" $flags $extra -arch="$ARCH" -include fault.cuh \
                -cubin -o "$RES/$name.cubin" "$kernel.cu"
        ) >> "$RES/$name.build.txt" 2>&1 || { echo "nvcc -cubin failed: see $name.build.txt"; return 1; }
    fi
    if [ -n "$NVDISASM" ] && [[ $name == *.lineinfo ]]; then
        # the whole chain of every line, as users read it by hand (-gi); the rows at the error PC come later
        "$NVDISASM" -ndf -c -gi "$RES/$name.cubin" > "$RES/$name.nvdisasm-gi.txt" 2>&1 || true
    fi
    echo "built bin/$name and $name.cubin ($flags${extra:+ $extra})"
}

if [ $BUILD = 0 ]; then
    log "plan only: no builds"
elif [ -z "$NVCC" ]; then
    log "SKIPPED the builds: no nvcc"
elif time_for 60 "the builds"; then
    pids=()
    for name in "${PROGRAMS[@]}"; do
        build "$name" > "$WORK/build.$name.status" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        log "${PROGRAMS[$i]}: $(cat "$WORK/build.${PROGRAMS[$i]}.status")"
    done
fi

# ---- cuda-gdb command lines ---------------------------------------------------------------------

# gdb_args NAME CORE: cuda-gdb's arguments, one a line: every command of gdb/NAME.gdb as an -ex, each
# after an -ex that echoes it as "(cuda-gdb) COMMAND" (each -ex runs even when an earlier one fails;
# the echo keeps the transcript readable and parseable), `target cudacore CORE` after the settings
gdb_args() {
    local name=$1 core=$2 line
    printf '%s\n' -nx -q -batch
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
            "# target cudacore CORE") line="target cudacore $core" ;;
            "#"*|"") continue ;;
        esac
        printf '%s\n' -ex "echo (cuda-gdb) $line\\n" -ex "$line"
    done < "$HERE/gdb/$name.gdb"
}

# user_triggered NAME: true for a program whose core is triggered through the pipe (a hang)
user_triggered() { grep -q '^# core: user-triggered' "$HERE/gdb/$1.gdb"; }

for name in "${PROGRAMS[@]}"; do
    cp "$HERE/gdb/$name.gdb" "$RES/$name.gdb"
    gdb_args "$name" "$name.cudacore" > "$RES/$name.cuda-gdb.args"
    user_triggered "$name" || gdb_args "$name" "$name.light.cudacore" > "$RES/$name.light.cuda-gdb.args"
done

if [ $DRY = 1 ]; then
    log "dry run: no program runs and no cuda-gdb; the command lines are in cores/*.cuda-gdb.args"
    pack "$RES" "$OUTDIR" | tee -a "$LOG"
    cp "$LOG" "$OUTDIR/capture.log"
    exit 0
fi

# ---- run: the driver writes the cores ------------------------------------------------------------

# Every core keeps shared and local memory, the constant banks and both ELF images (the tables
# cuda-gdb and aspace-dap read); global memory, which may hold everything the context allocated, is
# left out of all but one core (CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1 would drop shared and local memory
# too). skip_abort: the program goes on after the core is written, and says how its kernel ended.
ulimit -c 0  # the host process's own core is not wanted
FLAGS="skip_abort,skip_global_memory"
# what the vLLM team's posts tell users to set (plan.py LIGHTWEIGHT_FLAGS): only the tables, registers and
# the relocated images stay
LIGHT="skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory"
is_gzip() { [ "$(head -c 2 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "1f8b" ]; }

# run_one PROGRAM FLAGS [CORE_NAME]: bin/PROGRAM with the core written to $SRC/CORE_NAME.cudacore
# (CORE_NAME defaults to PROGRAM); prints "OK bytes seconds exit rc" or "NOCORE ..."
run_one() {
    local name=$1 flags=$2 as=${3:-$1} core start rc
    core="$SRC/$as.cudacore"
    rm -f "$core"
    start=$SECONDS
    env CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_FILE="$core" CUDA_COREDUMP_SHOW_PROGRESS=1 \
        CUDA_COREDUMP_GENERATION_FLAGS="$flags" timeout -k 10 90 "$BIN/$name" > "$RES/$as.run.txt" 2>&1
    rc=$?
    echo "exit $rc, CUDA_COREDUMP_GENERATION_FLAGS=$flags, $((SECONDS - start))s" >> "$RES/$as.run.txt"
    if [ ! -e "$core" ] && ls "$core"* >/dev/null 2>&1; then
        # a driver that adds to the name it was given: take what it wrote
        mv "$(ls "$core"* | head -1)" "$core"
    fi
    if [ -s "$core" ]; then
        echo "OK $(stat -c %s "$core") $((SECONDS - start)) exit $rc"
    else
        echo "NOCORE exit $rc after $((SECONDS - start))s"
    fi
}

# run_hang PROGRAM: a kernel that never ends; once the driver has opened its pipe (CUDA_COREDUMP_PIPE) and
# the kernel has run a while, writing to the pipe makes the driver write the core; then the program is
# killed. Prints "OK bytes seconds ..." or "NOCORE ...".
run_hang() {
    local name=$1 core="$SRC/$1.cudacore" pipe pid start waited
    rm -f "$core" "$SRC/$name.pipe".*
    start=$SECONDS
    : > "$RES/$name.run.txt"  # appended to by the program and by the lines below alike
    env CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE="$SRC/$name.pipe.%p" \
        CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 \
        CUDA_COREDUMP_GENERATION_FLAGS="$LIGHT" CUDA_COREDUMP_FILE="$core" \
        setsid "$BIN/$name" >> "$RES/$name.run.txt" 2>&1 &
    pid=$!
    pipe=""
    for waited in $(seq 1 60); do
        pipe=$(ls "$SRC/$name.pipe".* 2>/dev/null | head -1)
        [ -n "$pipe" ] && grep -q "launched" "$RES/$name.run.txt" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if [ -z "$pipe" ]; then
        kill -9 -- "-$pid" "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
        echo "NOCORE: no pipe ($SRC/$name.pipe.PID) after $((SECONDS - start))s"
        return
    fi
    sleep 3  # every warp reaches the place it waits at
    echo "trigger: dd if=/dev/zero bs=1M count=1 > $(basename "$pipe") after $((SECONDS - start))s" >> "$RES/$name.run.txt"
    timeout 30 dd if=/dev/zero bs=1M count=1 of="$pipe" 2>> "$RES/$name.run.txt"
    for waited in $(seq 1 120); do
        grep -q "All done" "$RES/$name.run.txt" 2>/dev/null && break
        sleep 0.5
    done
    sleep 1
    kill -9 -- "-$pid" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "killed after $((SECONDS - start))s; CUDA_COREDUMP_GENERATION_FLAGS=$LIGHT" >> "$RES/$name.run.txt"
    if [ -s "$core" ]; then
        echo "OK $(stat -c %s "$core") $((SECONDS - start)) killed"
    else
        echo "NOCORE after $((SECONDS - start))s"
    fi
}

CORES=()
if ! command -v nvidia-smi >/dev/null 2>&1; then
    log "no nvidia-smi: there may be no GPU; running anyway"
fi
for name in "${PROGRAMS[@]}"; do
    [ -x "$BIN/$name" ] || { log "$name: not built, not run"; continue; }
    time_for 40 "running $name" || continue
    if user_triggered "$name"; then
        result=$(run_hang "$name")
        log "$name (user-triggered): $result; the program said: $(tail -c 600 "$RES/$name.run.txt" | tr '\n' ' ')"
        [[ $result == OK* ]] && CORES+=("$name")
        continue
    fi
    result=$(run_one "$name" "$FLAGS")
    log "$name: $result; the program said: $(tail -c 400 "$RES/$name.run.txt" | tr '\n' ' ')"
    if [[ $result == NOCORE* ]] && [[ $name != bad_store.* ]] && time_for 60 "the store variant of $name"; then
        log "$name: no core from the trap; building the variant that stops with a bad store (-DSTOP_BY_STORE)"
        log "$name: $(build "$name" -DSTOP_BY_STORE 2>&1)"
        result=$(run_one "$name" "$FLAGS")
        log "$name (store variant): $result"
        [[ $result == OK* ]] && echo "stopped by the bad store of fault.cuh (STOP_BY_STORE)" >> "$RES/$name.run.txt"
    fi
    [[ $result == OK* ]] && CORES+=("$name")
done

# the same faults once more as users' lightweight cores (the programs built as they were for the first core)
for name in "${PROGRAMS[@]}"; do
    [ -x "$BIN/$name" ] && ! user_triggered "$name" || continue
    time_for 40 "the lightweight core of $name" || continue
    result=$(run_one "$name" "$LIGHT" "$name.light")
    log "$name.light (lightweight): $result"
    [[ $result == OK* ]] && CORES+=("$name.light")
done

# one core with global memory as well: the exception program's, when there is time
FULL=bad_store.$ARCH.G
if [ -x "$BIN/$FULL" ] && time_for 150 "the core of $FULL with global memory"; then
    result=$(run_one "$FULL" "skip_abort" "$FULL.fullmem")
    log "$FULL.fullmem (global memory too): $result"
    if [[ $result == OK* ]]; then
        read -r _ bytes _ <<< "$result"
        if [ "$bytes" -gt $((400 * 1024 * 1024)) ]; then
            log "$FULL.fullmem: $bytes bytes is too big to bring back; dropped"
            rm -f "$SRC/$FULL.fullmem.cudacore"
        else
            gdb_args "$FULL" "$FULL.fullmem.cudacore" > "$RES/$FULL.fullmem.cuda-gdb.args"
            CORES+=("$FULL.fullmem")
        fi
    fi
fi
log "cores: ${CORES[*]:-none}"

# ---- cuda-gdb reads each core (in parallel: they are independent) --------------------------------

if [ -z "$CUDA_GDB" ]; then
    log "SKIPPED cuda-gdb: not found"
elif [ ${#CORES[@]} -gt 0 ] && time_for 30 "cuda-gdb"; then
    pids=()
    for name in "${CORES[@]}"; do
        (
            cd "$SRC" || exit 1
            mapfile -t args < "$RES/$name.cuda-gdb.args"
            timeout -k 10 $(( $(left) > 200 ? 180 : $(left) - 20 )) "$CUDA_GDB" "${args[@]}" \
                > "$RES/$name.cuda-gdb.txt" 2>&1
            echo "cuda-gdb exit $?" > "$WORK/gdb.$name.status"
        ) &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        name=${CORES[$i]}
        log "$name: $(cat "$WORK/gdb.$name.status" 2>/dev/null), $(wc -l < "$RES/$name.cuda-gdb.txt") lines: $(grep -m1 -E 'CUDA Exception|signal|focus set' "$RES/$name.cuda-gdb.txt" || true)"
    done
fi

# the rows of `nvdisasm -gi` around each core's error PC: cuda-gdb's `info symbol $errorpc` names the
# function and the offset in it ("kernel + 384 in section .text.kernel"), which is the cubin's address
for name in "${CORES[@]}"; do
    gi="$RES/${name%.light}.nvdisasm-gi.txt"
    gi="${gi/.fullmem.nvdisasm/.nvdisasm}"
    [ -f "$gi" ] && [ -f "$RES/$name.cuda-gdb.txt" ] || continue
    where=$(grep -m1 -oE '\+ [0-9]+ in section \.text\.[^ ]+' "$RES/$name.cuda-gdb.txt")
    [ -n "$where" ] || continue
    offset=$(cut -d' ' -f2 <<< "$where")
    section=$(cut -d' ' -f5 <<< "$where")
    row=$(printf '/*%04x*/' "$offset")
    # only the function's own section: every section of a cubin starts at address 0
    { echo "# nvdisasm -ndf -c -gi $(basename "${gi%.nvdisasm-gi.txt}").cubin, $section, the rows around $row (info symbol \$errorpc: + $offset)"
      awk -v s="$section" '$1 == ".section" { keep = (index($2, s ",") == 1) } keep' "$gi" | grep -F -B20 -A4 "$row"
    } > "$RES/$name.errorpc-gi.txt" 2>&1
    log "$name: the error PC's rows of nvdisasm -gi in $name.errorpc-gi.txt ($(wc -l < "$RES/$name.errorpc-gi.txt") lines)"
done

# ---- compress the cores, pack ---------------------------------------------------------------------

for name in "${CORES[@]}"; do
    core="$SRC/$name.cudacore"
    if is_gzip "$core"; then
        cp "$core" "$RES/$name.cudacore.gz"
    else
        gzip -9 -c "$core" > "$RES/$name.cudacore.gz"
    fi
    log "$name.cudacore.gz: $(stat -c %s "$RES/$name.cudacore.gz") bytes (the core: $(stat -c %s "$core"))"
done
rm -f "$RES"/*.cuda-gdb.args
log "packing into $OUTDIR"
pack "$RES" "$OUTDIR" | tee -a "$LOG"
log "done in ${SECONDS}s"
cp "$LOG" "$OUTDIR/capture.log"
