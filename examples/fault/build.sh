#!/usr/bin/env bash
# Rebuilds the fault example (a store through a bad pointer) with each vendor's compiler:
#
#   fault.clang19.gfx90a.O2.co   clang++-19 -x hip, gfx90a, -O2 -g   (apt-get install clang-19 llvm-19 lld-19)
#   fault.sm_90.G.cubin          nvcc -cubin -G -arch=sm_90           (the nvidia-cuda-nvcc wheel, or a CUDA toolkit)
#   fault.tgllp.O0.{bin,dbg,elf} ocloc compile -g -cl-opt-disable     (Debian's intel-opencl-icd)
#
# with the disassembly and DWARF listings beside them. Debian ships no HIP headers or ROCm device
# libraries for clang-19 here: the HIP build uses ../hip_builtins (threadIdx and friends written with
# clang's AMDGPU builtins), as examples/build.sh does for gfx942. Paths in the DWARF are relative
# (examples/fault/...), so rebuilds anywhere give the same debug info. `build.sh amd|cuda|intel`
# rebuilds one. The dumps and cores come from examples/dumpgen/fault.py; CI only uses the committed
# outputs.
set -euo pipefail

cd "$(dirname "$0")"
CLANG19=${CLANG19:-clang++-19}
OBJDUMP19=${OBJDUMP19:-llvm-objdump-19}
DWARFDUMP19=${DWARFDUMP19:-llvm-dwarfdump-19}
NVCC=${NVCC:-nvcc}
OCLOC=${OCLOC:-ocloc}
CC=${CC:-cc}
WHICH=("$@")
[ ${#WHICH[@]} -gt 0 ] || WHICH=(amd cuda intel)

need() {
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "build.sh: '$tool' not found; install it or set CLANG19/OBJDUMP19/DWARFDUMP19/NVCC/OCLOC" >&2
            exit 1
        fi
    done
}

build_amd() {
    need "$CLANG19" "$OBJDUMP19" "$DWARFDUMP19"
    local out=fault.clang19.gfx90a.O2.co
    echo "building $out"
    (cd .. && "$CLANG19" -x hip --offload-arch=gfx90a -O2 -g -ffile-prefix-map="$PWD"=examples \
        -nogpuinc -nogpulib -Ihip_builtins -cuid=fault --cuda-device-only --no-gpu-bundle-output \
        -c fault/fault.hip -o "fault/$out")
    "$OBJDUMP19" -d --line-numbers "$out" > "$out.s.txt"
    "$DWARFDUMP19" --debug-info --debug-loclists --debug-line "$out" > "$out.dwarf.txt"
}

build_cuda() {
    need "$NVCC" "$CC"
    local work
    work=$(mktemp -d)
    # nvcc has no -fdebug-prefix-map: getcwd() answers "." so the DWARF names ./fault.cu (see ../cuda/build.sh)
    cat > "$work/cwd_dot.c" <<'C'
#include <errno.h>
#include <stdlib.h>
#include <string.h>
char *getcwd(char *buf, size_t size) {
    if (buf == NULL) {
        size = size ? size : 2;
        if ((buf = malloc(size)) == NULL)
            return NULL;
    }
    if (size < 2) {
        errno = ERANGE;
        return NULL;
    }
    strcpy(buf, ".");
    return buf;
}
C
    "$CC" -shared -fPIC -o "$work/cwd_dot.so" "$work/cwd_dot.c"
    echo "building fault.sm_90.G.cubin"
    env PWD=. LD_PRELOAD="$work/cwd_dot.so" "$NVCC" -cubin -G -arch=sm_90 -o fault.sm_90.G.cubin fault.cu
    rm -rf "$work"
}

build_intel() {
    need "$OCLOC"
    local out=fault.tgllp.O0
    echo "building $out"
    "$OCLOC" compile -file fault.cl -device tgllp -options "-g -cl-std=CL2.0 -cl-opt-disable" \
        -output_no_suffix -output "$out" >/dev/null
    mv "$out" "$out.bin"
    rm -f "$out.spv"
    # the .dbg file is ocloc's header followed by the debug ELF (as ../opencl/build.sh keeps it)
    python3 - "$out.dbg" "$out.elf" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\x7fELF")
if start < 0:
    sys.exit(f"{sys.argv[1]}: no ELF inside")
open(sys.argv[2], "wb").write(data[start:])
PY
    if command -v "$DWARFDUMP19" >/dev/null 2>&1; then
        "$DWARFDUMP19" --debug-info --debug-loc --debug-line "$out.elf" > "$out.elf.dwarf.txt" 2>/dev/null || true
    fi
}

for which in "${WHICH[@]}"; do
    case $which in
        amd) build_amd ;;
        cuda) build_cuda ;;
        intel) build_intel ;;
        *) echo "build.sh: unknown '$which' (amd, cuda or intel)" >&2; exit 1 ;;
    esac
done

# no file may name the folder it was built in (but ocloc's: it takes no prefix map, and its DWARF names
# this folder as ../opencl's do; the debugger finds fault.cl beside the dumps from any clone)
if grep -l "$(pwd -P)" ./*.co ./*.cubin 2>/dev/null; then
    echo "build.sh: the files above name the build folder" >&2
    exit 1
fi
echo "done"
