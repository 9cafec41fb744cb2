"""Command line: the DAP server by default, plus `inspect`, `state validate`, `state convert`, `lsp` and `demo`."""

from __future__ import annotations

import argparse
import os
import sys


COMMANDS = """\
commands (each takes --help):
  aspace-dap inspect STATE        the call stack and variables of one lane of a dump or GPU core
  aspace-dap state validate PATH  check a dump against the format (or open a GPU core)
  aspace-dap state convert CORE NEW_FOLDER
                                  write a GPU core dump (ROCm, CUDA, Intel) as a dump folder
  aspace-dap lsp [--stdio]        the language server: where each source variable lives
  aspace-dap demo [STATE]         start the server on a bundled example and walk through it"""


def _server(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="aspace-dap", description="Post-mortem GPU debugger (Debug Adapter Protocol). "
                                "Without --socket or --port, speaks DAP on stdin/stdout.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COMMANDS)
    p.add_argument("--socket", metavar="PATH", help="listen on a Unix-domain socket that only you can connect "
                   "to (VS Code's DebugAdapterNamedPipeServer, nvim-dap's pipe adapter)")
    p.add_argument("--port", type=int, help="listen on TCP (0 picks a free port); clients must present the secret "
                   "the server prints and writes to --secret-file")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on with --port (default 127.0.0.1)")
    p.add_argument("--secret-file", metavar="PATH", help="where --port keeps its secret, readable by you only "
                   "(default ~/.aspace-dap/port-PORT.secret)")
    p.add_argument("--insecure-tcp", action="store_true", help="with --port: serve every client without a secret "
                   "(anyone who can connect, every user of this machine included, acts as you)")
    args = p.parse_args(argv)
    if args.socket is not None and args.port is not None:
        p.error("--socket and --port are two ways to listen: choose one")
    if args.port is None and (args.insecure_tcp or args.secret_file is not None):
        p.error("--insecure-tcp and --secret-file go with --port")
    if args.insecure_tcp and args.secret_file is not None:
        p.error("--insecure-tcp has no secret to write to --secret-file")
    # The server makes no BLAS calls, but numpy's OpenBLAS starts a thread per core on import that
    # spins for a while: on a busy machine they take CPU from the server's own start (~0.05 s).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .dap.server import dispatcher_factory
    from .dap.transport import run_server
    return run_server(dispatcher_factory, port=args.port, host=args.host, socket_path=args.socket,
                      insecure_tcp=args.insecure_tcp, secret_file=args.secret_file)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        # `aspace-dap inspect ... | head`: the reader left; that is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "inspect":
        p = argparse.ArgumentParser(prog="aspace-dap inspect",
                                    description="Print the call stack and variables of one lane of a dumped wave.")
        p.add_argument("state", help="dump folder or .zip")
        p.add_argument("--code-object", dest="code_object", help="code object to use (adds to the dump's)")
        p.add_argument("--wave", type=int, help="wave id (default: the dump's focus)")
        p.add_argument("--lane", type=int, help="lane (default: the dump's focus)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--all-lanes", dest="all_lanes", metavar="EXPR", help="print EXPR for every lane")
        p.add_argument("--source-map", dest="source_map", metavar="FROM=TO", action="append", default=[],
                       help="look for the sources the debug info names below FROM in the folder TO (as the "
                            "launch configuration's sourceMap); may be given more than once")
        from .inspect import main as inspect_main
        return inspect_main(p.parse_args(argv[1:]))
    if argv[:2] == ["state", "validate"]:
        p = argparse.ArgumentParser(prog="aspace-dap state validate", description="Check a GPU state dump.")
        p.add_argument("path")
        p.add_argument("--json", action="store_true")
        args = p.parse_args(argv[2:])
        from .adapters import register_rules
        from .state.cli import validate_command
        return validate_command(args.path, args.json, register_rules)
    if argv[:2] == ["state", "convert"]:
        p = argparse.ArgumentParser(prog="aspace-dap state convert",
                                    description="Write a GPU core dump (ROCm, CUDA, ...) or a dump as a dump folder. "
                                    "The input is only read.")
        p.add_argument("core", help="core file (or dump folder / .zip)")
        p.add_argument("folder", help="new dump folder (must not exist)")
        args = p.parse_args(argv[2:])
        from .state.cli import convert_command
        return convert_command(args.core, args.folder)
    if argv and argv[0] == "lsp":
        p = argparse.ArgumentParser(prog="aspace-dap lsp", description="Language server (LSP over stdin/stdout) "
                                    "showing where each source variable lives, from the code objects in the "
                                    "workspace setting aspace.codeObjects.")
        p.add_argument("--stdio", action="store_true", help="accepted for LSP clients; stdio is the only transport")
        p.parse_args(argv[1:])
        from .lsp.server import main as lsp_main
        return lsp_main()
    if argv and argv[0] == "demo":
        p = argparse.ArgumentParser(prog="aspace-dap demo", description="Start the DAP server on a bundled "
                                    "example (or STATE) and walk through it as a client would.")
        p.add_argument("state", nargs="?", help="dump folder, .zip or GPU core (default: the bundled lds_tiles dump)")
        args = p.parse_args(argv[1:])
        from .demo import main as demo_main
        return demo_main([] if args.state is None else [args.state])
    return _server(argv)
