"""NVIDIA GPUs: everything the debugger knows about them.

- `adapter` — the target adapter: PTX/SASS registers, storage kinds (shared, local, param,
  const), generic pointers through the shared and local windows, caller frames from CFI.
- `cubin` — a cubin's debug tables: relocation, PTX-to-SASS register maps, kernel parameters.
- `core`, `core_writer` — CUDA GPU core dumps (cudacoredump.h), read and written.
"""
