"""Target adapters: one module per GPU family (amdgpu, nvptx, intel)."""
