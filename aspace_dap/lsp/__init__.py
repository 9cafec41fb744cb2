"""`aspace-dap lsp`: a language server showing where each source variable lives (address space, register)."""
