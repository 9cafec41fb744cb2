#!/usr/bin/env bash
# Rebuilds the language-server test code objects; CI uses the committed outputs.
#
#   tests/lsp_inputs/build.sh          # both
#   tests/lsp_inputs/build.sh shadow   # shadow.gfx90a.O0.co: hipcc (HIP_PLATFORM=amd)
#   tests/lsp_inputs/build.sh moves    # moves.clang19.<arch>.O2.co: clang-19 and llvm-dwarfdump-19
set -euo pipefail
cd "$(dirname "$0")"
export HIP_PLATFORM=amd
WHAT=("$@")
[ ${#WHAT[@]} -gt 0 ] || WHAT=(shadow moves)
EXAMPLES=$(cd ../../examples && pwd)

for what in "${WHAT[@]}"; do
    case $what in
    shadow)
        # the prefix map keeps the build directory out of the DWARF, as examples/build.sh does
        "${HIPCC:-hipcc}" --offload-arch=gfx90a -O0 -g -ffile-prefix-map="$PWD"=tests/lsp_inputs --cuda-device-only \
            --no-gpu-bundle-output -c shadow.hip -o shadow.gfx90a.O0.co
        ;;
    moves)
        # against the builtins-only HIP header of the examples (-cuid fixes the symbol clang-19 otherwise
        # draws at random); the listing is what the tests take their expectations from
        for arch in gfx90a gfx942 gfx1100; do
            out=moves.clang19.$arch.O2.co
            echo "building $out"
            "${CLANG19:-clang++-19}" -x hip --offload-arch="$arch" -O2 -g -nogpuinc -nogpulib -I"$EXAMPLES/hip_builtins" \
                -ffile-prefix-map="$PWD"=tests/lsp_inputs -ffile-prefix-map="$EXAMPLES"=examples --cuda-device-only \
                --no-gpu-bundle-output -cuid=moves -c moves.hip -o "$out"
            "${DWARFDUMP19:-llvm-dwarfdump-19}" --debug-info --debug-loclists --debug-line "$out" > "$out.dwarf.txt"
        done
        ;;
    *) echo "build.sh: unknown target '$what' (shadow or moves)" >&2; exit 1 ;;
    esac
done
