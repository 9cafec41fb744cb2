#!/usr/bin/env bash
# Rebuilds the OpenCL example binaries with Debian's ocloc (intel-opencl-icd) for Tiger Lake
# (tgllp), Ponte Vecchio (pvc) and Alchemist (acm-g10), with -g and, for tgllp and pvc, also
# with -cl-opt-disable (the usual debug build), plus the debug ELF and a DWARF listing.
# ocloc takes no -fdebug-prefix-map, so it compiles here, in the example folder: the DWARF names
# this folder and the source by its own name, which the debugger finds beside the dumps from any
# clone. CI has no ocloc and only uses the committed outputs.
set -euo pipefail

cd "$(dirname "$0")"
OCLOC=${OCLOC:-ocloc}
DWARFDUMP=${DWARFDUMP:-llvm-dwarfdump-15}

if ! command -v "$OCLOC" >/dev/null 2>&1; then
    echo "build.sh: '$OCLOC' not found; install intel-opencl-icd or set OCLOC" >&2
    exit 1
fi

# build tag: device and extra options
BUILDS=("tgllp:" "tgllp.O0:-cl-opt-disable" "pvc:" "pvc.O0:-cl-opt-disable" "acm-g10:")
# divergent_call's -g builds for pvc and acm-g10 have no line rows past settle (line 15): IGC's DWARF
# gives the kernel 0x0-0x50 and settle the rest of the code, so Alchemist also gets -cl-opt-disable
EXTRA_BUILDS=("divergent_call:acm-g10.O0:-cl-opt-disable")

build_one() {  # kernel, build tag, extra options
    local name=$1 tag=$2 extra=$3
    local device=${tag%%.*} out="$name.$tag"
    echo "building $out"
    "$OCLOC" compile -file "$name.cl" -device "$device" -options "-g -cl-std=CL2.0 $extra" \
        -output_no_suffix -output "$out" >/dev/null
    mv "$out" "$out.bin"
    rm -f "$out.spv"
    # The .dbg file is ocloc's header (device = GFXCORE_FAMILY) followed by the debug ELF (e_machine 182).
    python3 - "$out.dbg" "$out.elf" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\x7fELF")
if start < 0:
    sys.exit(f"{sys.argv[1]}: no ELF inside")
open(sys.argv[2], "wb").write(data[start:])
PY
    if command -v "$DWARFDUMP" >/dev/null 2>&1; then
        "$DWARFDUMP" --debug-info --debug-loc --debug-line "$out.elf" > "$out.elf.dwarf.txt" 2>/dev/null || true
    fi
}

ALL=()
for name in lds_tiles scratch_struct divergent_call; do
    for build in "${BUILDS[@]}"; do
        ALL+=("$name:$build")
    done
done
ALL+=("${EXTRA_BUILDS[@]}")

# `build.sh NAME.TAG...` rebuilds only those (e.g. divergent_call.acm-g10.O0); an unknown one is an error
KNOWN=()
for entry in "${ALL[@]}"; do
    rest=${entry#*:}
    KNOWN+=("${entry%%:*}.${rest%%:*}")
done
for wanted in "$@"; do
    if [[ ! " ${KNOWN[*]} " == *" $wanted "* ]]; then
        echo "build.sh: no build '$wanted'; one of: ${KNOWN[*]}" >&2
        exit 1
    fi
done
for entry in "${ALL[@]}"; do
    name=${entry%%:*}
    rest=${entry#*:}
    tag=${rest%%:*}
    if [ $# -gt 0 ] && [[ ! " $* " == *" $name.$tag "* ]]; then
        continue
    fi
    build_one "$name" "$tag" "${rest#*:}"
done
[ $# -gt 0 ] && exit 0

# The same lds_tiles as zebin (--format zebin: an EM_INTELGT ELF whose .note.intelgt.compat
# names the product family), to check the device is read from it too.
for device in tgllp pvc acm-g10; do
    echo "building lds_tiles.$device.zebin"
    "$OCLOC" compile -file lds_tiles.cl -device "$device" -options "-g -cl-std=CL2.0" --format zebin \
        -output_no_suffix -output "lds_tiles.$device.zebin" >/dev/null
    rm -f "lds_tiles.$device.zebin.spv"
done
