#!/usr/bin/env bash
# Rebuilds the OpenCL example binaries for Intel Tiger Lake (tgllp) with Debian's ocloc
# (intel-opencl-icd), plus the debug ELF and a DWARF listing kept next to them.
# CI has no ocloc and only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
OCLOC=${OCLOC:-ocloc}
DWARFDUMP=${DWARFDUMP:-llvm-dwarfdump-15}
DEVICE=tgllp

if ! command -v "$OCLOC" >/dev/null 2>&1; then
    echo "build.sh: '$OCLOC' not found; install intel-opencl-icd or set OCLOC" >&2
    exit 1
fi

for name in lds_tiles scratch_struct divergent_call; do
    echo "building $name.$DEVICE"
    tmp=$(mktemp -d)
    cp "$name.cl" "$tmp/"
    (cd "$tmp" && "$OCLOC" compile -file "$name.cl" -device "$DEVICE" -options "-g -cl-std=CL2.0" \
        -output_no_suffix -output "$name" >/dev/null)
    cp "$tmp/$name" "$name.$DEVICE.bin"
    cp "$tmp/$name.dbg" "$name.$DEVICE.dbg"
    rm -rf "$tmp"
    # The .dbg file is a small ocloc header followed by the debug ELF (e_machine 182).
    python3 - "$name.$DEVICE.dbg" "$name.$DEVICE.elf" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\x7fELF")
if start < 0:
    sys.exit(f"{sys.argv[1]}: no ELF inside")
open(sys.argv[2], "wb").write(data[start:])
PY
    if command -v "$DWARFDUMP" >/dev/null 2>&1; then
        "$DWARFDUMP" --debug-info --debug-loc --debug-line "$name.$DEVICE.elf" > "$name.$DEVICE.elf.dwarf.txt" 2>/dev/null || true
    fi
done
