#!/usr/bin/env bash
# Rebuilds the language-server test code objects. Needs hipcc (HIP_PLATFORM=amd); CI uses the committed outputs.
set -euo pipefail
cd "$(dirname "$0")"
export HIP_PLATFORM=amd
# the prefix map keeps the build directory out of the DWARF, as examples/build.sh does
"${HIPCC:-hipcc}" --offload-arch=gfx90a -O0 -g -ffile-prefix-map="$PWD"=tests/lsp_inputs --cuda-device-only \
    --no-gpu-bundle-output -c shadow.hip -o shadow.gfx90a.O0.co
