"""Command line: the DAP server by default, plus `inspect`, `state validate`, `demo`, `lsp`."""

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print("aspace-dap: no command yet", file=sys.stderr)
    return 2
