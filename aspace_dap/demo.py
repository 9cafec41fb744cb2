"""`make demo`: start the DAP server on a bundled example and walk through it as a client would."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

# the examples: in a checkout beside the package, in an installed package inside it (pyproject.toml's package-data)
PACKAGE = Path(__file__).resolve().parent
ROOT = next((p for p in (PACKAGE.parent, PACKAGE) if (p / "examples" / "lds_tiles" / "dumps").is_dir()), PACKAGE.parent)
DEFAULT_DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"
# where the server runs: the checkout, or the installed examples (never the package folder itself, whose
# modules would shadow the standard library's for `python -m`)
SERVER_CWD = ROOT if ROOT != PACKAGE else ROOT / "examples"


class Client:
    """A tiny DAP client over the server's stdio (Content-Length framing)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "aspace_dap"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=SERVER_CWD)
        self.seq = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        headers = {}
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed the connection")
            line = line.strip()
            if not line:
                break
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        return json.loads(self.proc.stdout.read(int(headers["content-length"])))

    def send(self, command: str, arguments: dict | None = None) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments or {}})
        self.proc.stdin.write(f"Content-Length: {len(body.encode())}\r\n\r\n{body}".encode())
        self.proc.stdin.flush()
        return self.seq

    def response(self, seq: int) -> dict:
        while True:
            msg = self._read()
            if msg["type"] == "event":
                self.events.append(msg)
            elif msg.get("request_seq") == seq:
                if not msg["success"]:
                    raise RuntimeError(f"{msg['command']}: {msg.get('message')}")
                return msg.get("body") or {}

    def request(self, command: str, arguments: dict | None = None) -> dict:
        return self.response(self.send(command, arguments))

    def event(self, name: str) -> dict:
        for i, e in enumerate(self.events):
            if e["event"] == name:
                return self.events.pop(i).get("body", {})
        while True:
            msg = self._read()
            if msg["type"] == "event" and msg["event"] == name:
                return msg.get("body", {})
            if msg["type"] == "event":
                self.events.append(msg)

    def close(self):
        try:
            self.request("disconnect")
        finally:
            self.proc.stdin.close()
            self.proc.wait(10)


def hexdump(start: int, data: bytes, space: str) -> str:
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        lines.append(f"  {space}#0x{start + off:04x}  {chunk.hex(' ')}")
    return "\n".join(lines)


CALL_DUMP = ROOT / "examples" / "divergent_call" / "dumps" / "gfx90a.O0"


def lens_walkthrough() -> None:
    """What the source lens (`aspace-dap lsp`) shows on the __shared__ declarations of lds_tiles.hip."""
    from .lsp.program import load_lenses

    (lens,) = load_lenses(str(ROOT / "examples" / "lds_tiles" / "lds_tiles.gfx90a.O0.co"))
    print("\n== The source lens (aspace-dap lsp) on lds_tiles.hip: where the __shared__ arrays live")
    for var in lens.variables("examples/lds_tiles/lds_tiles.hip"):
        if var.name in ("tile", "row_sums") and var.ranges:
            dwarf, _, why = var.ranges[0].expression.partition(" (")
            print(f"   line {var.decl_line}: {var.name} \u27f6 {var.first.text}")
            print(f"      DWARF: {dwarf}; {why[:-1]}")


def call_stack_walkthrough() -> None:
    """A second dump: stopped inside a device function, the caller's frame and variables unwound."""
    c = Client()
    try:
        c.request("initialize", {"adapterID": "aspace-gpu"})
        seq = c.send("launch", {"state": str(CALL_DUMP)})
        c.request("configurationDone")
        c.response(seq)
        tid = c.event("stopped")["threadId"]
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        print(f"\n== {CALL_DUMP.relative_to(ROOT)}: stopped in a device function, the caller unwound")
        for i, f in enumerate(frames):
            print(f"   #{i} {f['instructionPointerReference']} {f['name']} at {f.get('source', {}).get('name', '??')}:{f['line']}")
            scopes = {sc["name"]: sc for sc in c.request("scopes", {"frameId": f["id"]})["scopes"]}
            names = []
            for scope in ("Arguments", "Locals"):
                if scope in scopes:
                    names += c.request("variables", {"variablesReference": scopes[scope]["variablesReference"]})["variables"]
            print("      " + ", ".join(f"{v['name']} = {v['value']}" for v in names))
    finally:
        c.close()


def main(argv: list[str]) -> int:
    dump = Path(argv[0]) if argv else DEFAULT_DUMP
    c = Client()
    try:
        c.request("initialize", {"adapterID": "aspace-gpu", "supportsInvalidatedEvent": True})
        c.event("initialized")
        seq = c.send("launch", {"state": str(dump)})
        c.request("configurationDone")
        c.response(seq)
        stopped = c.event("stopped")
        tid = stopped["threadId"]
        threads = {t["id"]: t["name"] for t in c.request("threads")["threads"]}
        print(f"== Opened {dump.relative_to(ROOT) if dump.is_relative_to(ROOT) else dump}")
        print(f"   stopped ({stopped['reason']}): {stopped.get('description', '')}")
        print(f"   {len(threads)} waves; focus: {threads[tid]}, {stopped.get('text', '')}\n")
        frames = c.request("stackTrace", {"threadId": tid})["stackFrames"]
        print("== Call stack")
        for i, f in enumerate(frames):
            src = f.get("source", {}).get("name", "??")
            print(f"   #{i} {f['instructionPointerReference']} {f['name']} at {src}:{f['line']}")

        def show_locals(title):
            print(f"\n== {title}")
            scopes = c.request("scopes", {"frameId": fid})["scopes"]
            shown = {}
            for s in scopes:
                if s["name"] in ("Registers", "Globals"):
                    continue
                for v in c.request("variables", {"variablesReference": s["variablesReference"]})["variables"]:
                    value = v["value"] if len(v["value"]) < 70 else v["value"][:67] + "..."
                    where = f"  @ {v['memoryReference']}" if v.get("memoryReference") else ""
                    print(f"   [{s['name'][:5]}] {v['name']} = {value}{where}")
                    shown[v["name"]] = v
            return shown

        focus = c.request("setFocus", {"threadId": tid})
        c.event("stopped")
        fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]  # ids are renewed on focus
        before = show_locals(f"Variables of lane {focus['lane']}")
        name = next((n for n in ("row", "col", "tx", "i", "x", "value") if n in before), next(iter(before)))
        rows = c.request("laneValues", {"threadId": tid, "frameId": fid, "expression": name})["lanes"]
        other = next((r["lane"] for r in rows if r["active"] and r["value"] != rows[focus["lane"]]["value"]),
                     focus["lane"])
        c.request("setFocus", {"threadId": tid, "lane": other})
        c.event("stopped")
        fid = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        after = show_locals(f"After `setFocus lane {other}`: the same variables in lane {other}")
        print(f"\n   {name}: lane {focus['lane']} = {before[name]['value']}, lane {other} = {after[name]['value']}")
        print(f"\n== `{name}` in every lane (laneValues; '-' marks inactive lanes)")
        for i in range(0, len(rows), 8):
            print("   " + "  ".join(f"{'' if r['active'] else '-'}{r['lane']:>2}:{r['value']:>6}" for r in rows[i:i + 8]))
        spaces = {s["name"]: s for s in c.request("memorySpaces", {"threadId": tid})["spaces"]}
        if "local" in spaces:
            ref = spaces["local"]["memoryReference"]
            got = c.request("readMemory", {"memoryReference": ref, "count": 64})
            print(f"\n== LDS of the workgroup ({ref}, first 64 of {spaces['local']['size']} bytes)")
            print(hexdump(int(got["address"], 16), base64.b64decode(got.get("data", "")), "local"))
        if not argv:
            lens_walkthrough()
            call_stack_walkthrough()
        print("\n== Attach your editor")
        print("   VS Code: install vscode-extension/aspace-gpu.vsix (built by `make test`), then a launch config")
        print(f'     {{"type": "aspace-gpu", "request": "launch", "name": "GPU dump", "state": "{dump}"}}')
        print("   Any DAP client: run `.venv/bin/aspace-dap` (stdio) or `.venv/bin/aspace-dap --port 4711` (TCP);")
        print("   ready configurations for nvim-dap and Emacs dape are in README.md.")
    finally:
        c.close()
    return 0
