#!/usr/bin/env bash
# Rebuilds the hang example's code objects and the vendor tools' listings kept next to them:
#   hang.clang19.gfx90a.O3.co        Debian's clang++-19, -O3, no debug information at all
#   hang.clang19.gfx90a.O3.lines.co  the same code with -gline-tables-only (lines and inlining only)
#   hang.sm_90.O3.cubin              nvcc -O3, no line information
#   hang.sm_90.lineinfo.cubin        nvcc -O3 -lineinfo
# with llvm-objdump -d --line-numbers and nvdisasm -gi listings (*.s.txt): the tests take the hang
# sites' addresses and lines from them. Needs clang++-19, llvm-objdump-19, nvcc and nvdisasm (CUDA 13.0
# made the committed cubins). CI only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")/.."
CLANG19=${CLANG19:-clang++-19}
OBJDUMP19=${OBJDUMP19:-llvm-objdump-19}
NVCC=${NVCC:-nvcc}
NVDISASM=${NVDISASM:-nvdisasm}

for opt in "O3" "O3 -gline-tables-only"; do
    tag=${opt// -gline-tables-only/.lines}
    out=hang/hang.clang19.gfx90a.$tag.co
    echo "building $out"
    # shellcheck disable=SC2086
    "$CLANG19" -x hip --offload-arch=gfx90a -$opt -ffile-prefix-map="$PWD"=examples -nogpuinc -nogpulib \
        -Ihip_builtins -cuid=hang --cuda-device-only --no-gpu-bundle-output -c hang/hang.hip -o "$out"
    "$OBJDUMP19" -d --line-numbers "$out" > "$out.s.txt"
done

# nvcc writes its working directory into the line table: build where the DWARF should name (see
# examples/cuda/build.sh: the directory is reported as ".")
cd hang
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -o "$work/cwd_dot.so" ../cuda/cwd_dot.c
for opt in O3 lineinfo; do
    out=hang.sm_90.$opt.cubin
    echo "building $out"
    flags=(-O3)
    [ "$opt" = lineinfo ] && flags+=(-lineinfo)
    env PWD=. LD_PRELOAD="$work/cwd_dot.so" "$NVCC" -cubin -arch=sm_90 "${flags[@]}" -o "$out" hang.cu
    "$NVDISASM" -gi -c "$out" > "$out.s.txt"
done
