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
