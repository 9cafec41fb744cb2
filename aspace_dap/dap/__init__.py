"""The Debug Adapter Protocol server: protocol, request handlers, REPL and transport.

- `protocol`, `dispatch`, `errors`, `refs` — the sans-io core: bytes in, typed messages and answers out;
  argument checks; the handler table; variablesReference handles.
- `handlers` (session, threads, stack, focus, lanes, sources), `variables` (scopes, variables, evaluate),
  `memory` (memory requests, saveDump), `waves` (wave groups, lane rows), `focus` (stopped events and
  focus changes), `connection` (per-client state, frame ids), `inputs` (guards on what a client sends) —
  each request only translated into session calls.
- `repl` — the Debug Console's GDB-style commands (`wave`, `lane`, `x/`, `print`, `info`, `save`, `help`).
- `transport`, `backlog`, `stdio`, `listeners`, `server`, `allocator` — one trio transport for stdio and
  sockets: reading, one worker, writing, budgets and stalls; how the server process is set up.
"""
