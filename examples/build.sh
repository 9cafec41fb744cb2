#!/usr/bin/env bash
# Rebuilds every example code object plus the disassembly and DWARF dumps kept next to them.
# Needs hipcc (HIP_PLATFORM=amd) and the LLVM 15 tools; CI only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
export HIP_PLATFORM=amd

HIPCC=${HIPCC:-hipcc}
OBJDUMP=${OBJDUMP:-llvm-objdump-15}
DWARFDUMP=${DWARFDUMP:-llvm-dwarfdump-15}

for tool in "$HIPCC" "$OBJDUMP" "$DWARFDUMP"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "build.sh: '$tool' not found; install hipcc and LLVM 15 tools or set HIPCC/OBJDUMP/DWARFDUMP" >&2
        exit 1
    fi
done

# -ffile-prefix-map keeps the build directory out of the DWARF so rebuilds are reproducible.
COMMON=(-g -ffile-prefix-map="$PWD"=examples)

describe() {
    local co=$1
    "$OBJDUMP" -d --line-numbers "$co" > "$co.s.txt"
    "$DWARFDUMP" --debug-info --debug-loclists --debug-line "$co" > "$co.dwarf.txt"
}

# device_object NAME ARCH OPT: plain ELF code object NAME/NAME.ARCH.OPT.co
device_object() {
    local name=$1 arch=$2 opt=$3
    local out="$name/$name.$arch.$opt.co"
    echo "building $out"
    "$HIPCC" --offload-arch="$arch" "-$opt" "${COMMON[@]}" --cuda-device-only \
        --no-gpu-bundle-output -c "$name/$name.hip" -o "$out"
    describe "$out"
}

for name in lds_tiles scratch_struct divergent_call; do
    device_object "$name" gfx90a O0
    device_object "$name" gfx90a O2
done
device_object lds_tiles gfx1030 O0
device_object lds_tiles gfx1030 O2

# Offload bundle holding the device code (no host entry content).
echo "building lds_tiles/lds_tiles.bundle.o"
"$HIPCC" --offload-arch=gfx90a -O0 "${COMMON[@]}" --cuda-device-only \
    -c lds_tiles/lds_tiles.hip -o lds_tiles/lds_tiles.bundle.o

# Host object whose .hip_fatbin section holds the bundle.
echo "building divergent_call/divergent_call.host.o"
"$HIPCC" --offload-arch=gfx90a -O2 "${COMMON[@]}" \
    -c divergent_call/divergent_call.hip -o divergent_call/divergent_call.host.o

echo "done"
