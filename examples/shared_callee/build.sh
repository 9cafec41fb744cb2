#!/usr/bin/env bash
# Rebuilds the shared_callee code objects with both compilers, plus the disassembly and DWARF
# dumps kept next to them: Debian's hipcc (clang-15) and clang++-19 for gfx90a at -O0.
# Needs hipcc (HIP_PLATFORM=amd), clang++-19 and the LLVM 15 and 19 tools; CI only uses the outputs.
set -euo pipefail

cd "$(dirname "$0")/.."
export HIP_PLATFORM=amd

for tool in hipcc clang++-19 llvm-objdump-15 llvm-dwarfdump-15 llvm-objdump-19 llvm-dwarfdump-19; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "shared_callee/build.sh: '$tool' not found" >&2
        exit 1
    fi
done

# -ffile-prefix-map keeps the build directory out of the DWARF: paths resolve from any clone.
COMMON=(-O0 -g -ffile-prefix-map="$PWD"=examples --cuda-device-only --no-gpu-bundle-output)
SRC=shared_callee/shared_callee.hip

describe() {
    local co=$1 llvm=$2
    "llvm-objdump-$llvm" -d --line-numbers "$co" > "$co.s.txt"
    "llvm-dwarfdump-$llvm" --debug-info --debug-loclists --debug-line "$co" > "$co.dwarf.txt"
}

out=shared_callee/shared_callee.gfx90a.O0.co
echo "building $out (hipcc, clang-15)"
hipcc --offload-arch=gfx90a "${COMMON[@]}" -c "$SRC" -o "$out"
describe "$out" 15

out=shared_callee/shared_callee.clang19.gfx90a.O0.co
echo "building $out (clang++-19)"
clang++-19 -x hip --offload-arch=gfx90a "${COMMON[@]}" --rocm-path=/usr \
    --hip-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode -c "$SRC" -o "$out"
describe "$out" 19

echo "done"
