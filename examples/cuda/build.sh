#!/usr/bin/env bash
# Rebuilds the CUDA example cubins: a -G (device debug) build and an optimised -lineinfo build of each
# kernel, for every SM in ARCHES. Needs nvcc (CUDA 12.8+ for sm_120; the committed cubins come from
# CUDA 13.0) and a C compiler. CI only uses the committed outputs.
#
# nvcc has no -fdebug-prefix-map: cicc writes the working directory (getcwd, or $PWD when it names
# the same place) as DW_AT_comp_dir and the line table's directory. The build runs inside this
# folder with the working directory reported as "." (PWD=. and cwd_dot.c's getcwd, preloaded; real/
# capture.sh builds with it too), so the DWARF names `./lds_tiles.cu` and resolves from any clone.
set -euo pipefail

cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
CC=${CC:-cc}
ARCHES=${ARCHES:-"sm_80 sm_90 sm_120"}

if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "build.sh: '$NVCC' not found; install the CUDA toolkit (or the nvidia-cuda-nvcc wheel) or set NVCC" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$CC" -shared -fPIC -o "$work/cwd_dot.so" cwd_dot.c

nvcc_here() {
    env PWD=. LD_PRELOAD="$work/cwd_dot.so" "$NVCC" "$@"
}

for arch in $ARCHES; do
    for name in lds_tiles scratch_struct divergent_call; do
        echo "building $name.$arch.G.cubin and $name.$arch.lineinfo.cubin"
        nvcc_here -cubin -G -arch="$arch" -o "$name.$arch.G.cubin" "$name.cu"
        nvcc_here -cubin -lineinfo -O3 -arch="$arch" -o "$name.$arch.lineinfo.cubin" "$name.cu"
    done
done

# Host objects whose .nv_fatbin carries the -G sm_90 cubin of divergent_call: one plain, one with
# nvcc's default zstd compression (reading that one needs the zstandard package).
echo "building divergent_call.sm_90.G.host.o and divergent_call.sm_90.G.zstd.host.o"
nvcc_here -G -arch=sm_90 --no-compress -c -o "divergent_call.sm_90.G.host.o" divergent_call.cu
nvcc_here -G -arch=sm_90 -c -o "divergent_call.sm_90.G.zstd.host.o" divergent_call.cu

# no file may name the folder it was built in
if grep -l "$(pwd -P)" ./*.cubin ./*.host.o; then
    echo "build.sh: the files above name the build folder" >&2
    exit 1
fi
