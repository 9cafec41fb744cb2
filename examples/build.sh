#!/usr/bin/env bash
# Rebuilds every example code object plus the disassembly and DWARF dumps kept next to them.
#
#   examples/build.sh            # all: hipcc, clang15, clang19 and relocatable
#   examples/build.sh hipcc      # Debian's hipcc (HIP 5.2, clang 15) with the LLVM 15 tools
#   examples/build.sh clang15    # Debian's clang++-15 for gfx940/gfx1030/gfx1100 (divergent_call)
#   examples/build.sh clang19    # Debian's clang++-19 with the LLVM 19 tools
#   examples/build.sh relocatable # relocatable device objects (.o) of clang++-15 and clang++-19, and the
#                                 # linked code objects they stand for where no other build has them
#
# CI only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
export HIP_PLATFORM=amd

HIPCC=${HIPCC:-hipcc}
OBJDUMP=${OBJDUMP:-llvm-objdump-15}
DWARFDUMP=${DWARFDUMP:-llvm-dwarfdump-15}
CLANG15=${CLANG15:-clang++-15}
CLANG19=${CLANG19:-clang++-19}
OBJDUMP19=${OBJDUMP19:-llvm-objdump-19}
DWARFDUMP19=${DWARFDUMP19:-llvm-dwarfdump-19}
COMPILERS=("$@")
[ ${#COMPILERS[@]} -gt 0 ] || COMPILERS=(hipcc clang15 clang19 relocatable)

need() {
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "build.sh: '$tool' not found; install it or set HIPCC/OBJDUMP/DWARFDUMP/CLANG19/OBJDUMP19/DWARFDUMP19" >&2
            exit 1
        fi
    done
}

# -ffile-prefix-map keeps the build directory out of the DWARF so rebuilds are reproducible.
COMMON=(-g -ffile-prefix-map="$PWD"=examples)

describe() {
    local co=$1 objdump=${2:-$OBJDUMP} dwarfdump=${3:-$DWARFDUMP}
    "$objdump" -d --line-numbers "$co" > "$co.s.txt"
    "$dwarfdump" --debug-info --debug-loclists --debug-line "$co" > "$co.dwarf.txt"
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

build_hipcc() {
    need "$HIPCC" "$OBJDUMP" "$DWARFDUMP"
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
}

# clang_object VERSION NAME ARCH OPT: NAME/NAME.clangVERSION.ARCH.OPT.co with Debian's clang++-VERSION.
# Debian's ROCm device libraries and HIP headers stop at gfx90a/gfx1030 (and clang-15 knows
# gfx940 but not gfx942); the other targets are built without them, against the builtins-only
# header in hip_builtins/.
clang_object() {
    local version=$1 name=$2 arch=$3 opt=$4
    local out="$name/$name.clang$version.$arch.$opt.co"
    local libs=(--rocm-path=/usr --hip-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode)
    local clang=$CLANG19 objdump=$OBJDUMP19 dwarfdump=$DWARFDUMP19 cuid=(-cuid="$name")
    if [ "$version" = 15 ]; then
        clang=$CLANG15 objdump=$OBJDUMP dwarfdump=$DWARFDUMP cuid=()
        libs=()
    fi
    case $arch in
        gfx940|gfx942|gfx1100) libs=() ;;
    esac
    [ ${#libs[@]} -gt 0 ] || libs=(-nogpuinc -nogpulib -Ihip_builtins)
    echo "building $out"
    # -cuid fixes the compilation-unit id clang-19 otherwise draws at random (a __hip_cuid_ symbol)
    "$clang" -x hip --offload-arch="$arch" "-$opt" "${COMMON[@]}" "${libs[@]}" "${cuid[@]}" --cuda-device-only \
        --no-gpu-bundle-output -c "$name/$name.hip" -o "$out"
    describe "$out" "$objdump" "$dwarfdump"
}

# relocatable_object VERSION NAME ARCH OPT: NAME/NAME.clangVERSION.ARCH.OPT.o, the device object before the
# link, compiled as clang_object compiles the .co of the same name (builtins-only header), so that .co is
# what the linker makes of it: clang-19 with -fhip-emit-relocatable; clang-15, which has no such option,
# with a stand-in for the device link (-B: found before lld) that keeps the object it is handed.
# The listing is llvm-dwarfdump-19's for every object.
relocatable_object() {
    local version=$1 name=$2 arch=$3 opt=$4
    local out="$name/$name.clang$version.$arch.$opt.o"
    local flags=(-x hip --offload-arch="$arch" "-$opt" "${COMMON[@]}" -nogpuinc -nogpulib -Ihip_builtins
                 --cuda-device-only -c "$name/$name.hip" -o "$out")
    echo "building $out"
    if [ "$version" = 19 ]; then
        "$CLANG19" "${flags[@]}" -cuid="$name" -fhip-emit-relocatable
    else
        local keep
        keep=$(mktemp -d)
        printf '%s\n' '#!/bin/sh' 'for a; do case $a in *.o) obj=$a ;; esac; done' \
            'while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done' 'cp "$obj" "$out"' > "$keep/lld"
        chmod +x "$keep/lld"
        "$CLANG15" "${flags[@]}" --no-gpu-bundle-output -B"$keep"
        rm -r "$keep"
    fi
    "$DWARFDUMP19" --debug-info --debug-loclists --debug-line "$out" > "$out.dwarf.txt"
}

# one clang-15 and one clang-19 relocatable object of each example; divergent_call's stand for code objects
# (and dumps) the clang15 and clang19 builds already have, the others' linked objects are built here
build_relocatable() {
    need "$CLANG15" "$CLANG19" "$OBJDUMP" "$DWARFDUMP" "$OBJDUMP19" "$DWARFDUMP19"
    relocatable_object 15 divergent_call gfx1030 O0
    relocatable_object 19 divergent_call gfx1100 O2
    for build in "15 lds_tiles gfx1030 O2" "19 lds_tiles gfx942 O0" "15 scratch_struct gfx1100 O0" \
                 "19 scratch_struct gfx942 O2" "15 shared_callee gfx940 O0" "19 shared_callee gfx1100 O0"; do
        # shellcheck disable=SC2086
        clang_object $build
        # shellcheck disable=SC2086
        relocatable_object $build
    done
}

build_clang19() {
    need "$CLANG19" "$OBJDUMP19" "$DWARFDUMP19"
    for arch in gfx90a gfx1030 gfx942 gfx1100; do
        clang_object 19 divergent_call "$arch" O0
        clang_object 19 divergent_call "$arch" O2
    done
    for name in lds_tiles scratch_struct; do
        clang_object 19 "$name" gfx90a O0
        clang_object 19 "$name" gfx90a O2
    done
}

# clang-15's prologues on the targets hipcc does not build here (for the unwinder's tests)
build_clang15() {
    need "$CLANG15" "$OBJDUMP" "$DWARFDUMP"
    for arch in gfx1030 gfx940 gfx1100; do
        clang_object 15 divergent_call "$arch" O0
        clang_object 15 divergent_call "$arch" O2
    done
}

for compiler in "${COMPILERS[@]}"; do
    case $compiler in
        hipcc) build_hipcc ;;
        clang15) build_clang15 ;;
        clang19) build_clang19 ;;
        relocatable) build_relocatable ;;
        *) echo "build.sh: unknown compiler '$compiler' (hipcc, clang15, clang19 or relocatable)" >&2; exit 1 ;;
    esac
done

echo "done"
