"""Intel GPUs: everything the debugger knows about them.

- `adapter` — the target adapter: IGC's DWARF (DW_OP_INTEL_*), SIMD lanes packed in GRFs, SLM,
  private memory, generic pointer tags, the device and its GRF size from the code object.
- `core`, `core_writer` — Intel GPU core files (EM_INTELGT), read and written.
- `tdesc` — the register description (GDB target description XML) such a core carries: read into a
  register layout, and written as gdb-oneapi writes it.
"""
