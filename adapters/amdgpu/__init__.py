"""AMD GPUs (AMDGPU): everything the debugger knows about them.

- `adapter` — the target adapter: DWARF register numbers (ROCm's and upstream LLVM's dialects),
  address spaces and apertures, swizzled scratch, unwinding through the calling convention.
- `isa` — the GFX9/GFX10/GFX11 decoder the analyses use (lengths, register writes, constants).
- `prologue` — where a device function's prologue saved the caller's registers.
- `lds`, `lds_scan` — `__shared__` offsets proven from the kernel's `ds_*` instructions.
- `cwsr` — the context-save area's layout per generation (the trap handler's records).
- `core`, `core_writer` — ROCm GPU core files (NT_AMDGPU_CORE_STATE), read and written.
"""
