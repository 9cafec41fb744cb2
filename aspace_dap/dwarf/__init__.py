"""DWARF as GPUs use it: decoding, evaluating and indexing, with no knowledge of files or vendors' dumps.

- `opcodes`, `ops`, `asm`, `dialects` — DW_OP tables (DWARF 5, GNU, AMD, Intel, the DWARF 6 proposal),
  decoding expressions into operations, assembling them for tests, which vendor table a unit uses.
- `evaluator`, `locations`, `storage`, `target`, `frame_context` — the stack machine over all lanes at
  once, the location descriptions it yields, reading and writing their bytes, what it asks a target for.
- `reader`, `dies`, `index`, `lines`, `loclists`, `cfi` — sections and DIEs read lazily; frames, variables,
  types and lines by PC; location and range lists; call frame information.
- `types`, `typebuild` — C types built on demand from DIEs.
- `describe`, `footprint` — a location in words (the lens); which bytes each variable claims.
"""
