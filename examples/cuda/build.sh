#!/usr/bin/env bash
# Rebuilds the CUDA example cubins: a -G (device debug) build and an optimised -lineinfo build of each kernel.
# Needs nvcc (CUDA 12+; the committed cubins come from CUDA 13.0). CI only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90}

if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "build.sh: '$NVCC' not found; install the CUDA toolkit (or the nvidia-cuda-nvcc wheel) or set NVCC" >&2
    exit 1
fi

for name in lds_tiles scratch_struct divergent_call; do
    echo "building $name.$ARCH.G.cubin and $name.$ARCH.lineinfo.cubin"
    "$NVCC" -cubin -G -arch="$ARCH" -o "$name.$ARCH.G.cubin" "$name.cu"
    "$NVCC" -cubin -lineinfo -O3 -arch="$ARCH" -o "$name.$ARCH.lineinfo.cubin" "$name.cu"
done

# Host objects whose .nv_fatbin carries the -G sm_90 cubin of divergent_call: one plain, one with
# nvcc's default zstd compression (reading that one needs the zstandard package).
echo "building divergent_call.$ARCH.G.host.o and divergent_call.$ARCH.G.zstd.host.o"
"$NVCC" -G -arch="$ARCH" --no-compress -c -o "divergent_call.$ARCH.G.host.o" divergent_call.cu
"$NVCC" -G -arch="$ARCH" -c -o "divergent_call.$ARCH.G.zstd.host.o" divergent_call.cu
