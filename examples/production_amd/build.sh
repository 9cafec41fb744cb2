#!/usr/bin/env bash
# Rebuilds the production example, a templated -O3 kernel with line tables only, for three AMD GPUs:
#
#   inline_chain.clang19.gfx942.O3.co    clang++-19 -x hip -O3 -gline-tables-only, gfx942 (MI300)
#   inline_chain.clang19.gfx1100.O3.co   the same for gfx1100 (RX 7900, wave32)
#   inline_chain.clang19.gfx90a.O3.co    the same for gfx90a (MI200)
#
# (apt-get install clang-19 llvm-19 lld-19), with llvm-objdump-19's and llvm-dwarfdump-19's listings
# beside them. The kernel needs no device library: every target is built against ../hip_builtins
# (threadIdx and friends written with clang's AMDGPU builtins), as ../build.sh builds gfx942.
# -ffile-prefix-map keeps the build folder out of the DWARF: it names examples/production_amd/... wherever
# this runs. The dumps come from ../dumpgen/production_amd.py (`../make_dumps.py production_amd`); CI only
# uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
CLANG19=${CLANG19:-clang++-19}
OBJDUMP19=${OBJDUMP19:-llvm-objdump-19}
DWARFDUMP19=${DWARFDUMP19:-llvm-dwarfdump-19}
for tool in "$CLANG19" "$OBJDUMP19" "$DWARFDUMP19"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build.sh: '$tool' not found; install it or set CLANG19/OBJDUMP19/DWARFDUMP19" >&2; exit 1; }
done

for arch in gfx942 gfx1100 gfx90a; do
    out=inline_chain.clang19.$arch.O3.co
    echo "building $out"
    # -cuid fixes the compilation-unit id clang-19 otherwise draws at random (a __hip_cuid_ symbol)
    (cd .. && "$CLANG19" -x hip --offload-arch="$arch" -O3 -gline-tables-only -ffile-prefix-map="$PWD"=examples \
        -nogpuinc -nogpulib -Ihip_builtins -cuid=inline_chain --cuda-device-only --no-gpu-bundle-output \
        -c production_amd/inline_chain.hip -o "production_amd/$out")
    # -z: the zero padding llvm-objdump would elide as "..." is listed too (every instruction start)
    "$OBJDUMP19" -d -z --line-numbers "$out" > "$out.s.txt"
    "$DWARFDUMP19" --debug-info --debug-line "$out" > "$out.dwarf.txt"
done

# no file may name the folder it was built in (nor a temporary one)
if grep -l "$(pwd -P)" ./*.co 2>/dev/null || grep -l "/tmp/" ./*.co 2>/dev/null; then
    echo "build.sh: the files above name a build folder" >&2
    exit 1
fi
echo "done"
