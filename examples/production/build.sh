#!/usr/bin/env bash
# Rebuilds the production-style example: scatter_rows.cu (with layout.cuh and store.cuh) as a release
# build ships it, `nvcc -cubin -lineinfo -O3` (line tables only, no -G), for sm_90 and sm_80, and the
# listing `nvdisasm -ndf -c -gi` prints of each (every instruction's whole inline chain, what users read
# by hand). Needs nvcc (the committed cubins come from CUDA 13.0), a C compiler and nvdisasm (the
# nvidia-cuda-nvdisasm wheel `make setup` installs, or the toolkit's). CI only uses the committed files;
# the cores come from examples/dumpgen/production.py.
#
# nvcc has no -fdebug-prefix-map: as ../cuda/build.sh does, the build runs here with the working
# directory reported as "." (PWD=. and ../cuda/cwd_dot.c's getcwd, preloaded), so the line table names
# ./scatter_rows.cu, ./layout.cuh and ./store.cuh and resolves from any clone.
set -euo pipefail

cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
CC=${CC:-cc}
ARCHES=${ARCHES:-"sm_90 sm_80"}
NVDISASM=${NVDISASM:-$(command -v nvdisasm || ls ../../.venv/lib/python3*/site-packages/nvidia/*/bin/nvdisasm 2>/dev/null | head -1)}

for tool in "$NVCC" "$CC" "$NVDISASM"; do
    if [ -z "$tool" ] || ! command -v "$tool" >/dev/null 2>&1; then
        echo "build.sh: '${tool:-nvdisasm}' not found; install it or set NVCC/CC/NVDISASM" >&2
        exit 1
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$CC" -shared -fPIC -o "$work/cwd_dot.so" ../cuda/cwd_dot.c

for arch in $ARCHES; do
    out=scatter_rows.$arch.lineinfo.cubin
    echo "building $out"
    env PWD=. LD_PRELOAD="$work/cwd_dot.so" "$NVCC" -cubin -lineinfo -O3 -arch="$arch" -o "$out" scatter_rows.cu
    "$NVDISASM" -ndf -c -gi "$out" > "$out.gi.txt"
done

if grep -l "$(pwd -P)" ./*.cubin; then
    echo "build.sh: the files above name the build folder" >&2
    exit 1
fi
echo "done"
