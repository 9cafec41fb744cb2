"""The language server over its real protocol: `aspace-dap lsp` as a process, LSP over pipes."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ARROW = "\u27f6"


class ForkedLsp:
    """`aspace-dap lsp` forked from the warm server, with the stdin, stdout, wait, poll and kill of a
    subprocess.Popen (no exit code)."""

    @classmethod
    def start(cls):
        from dap_client import REPO_ROOT, _server_env
        from forked_servers import start_forked

        forked = start_forked(_server_env(), REPO_ROOT, ("lsp",), stderr=False)
        return None if forked is None else cls(*forked)

    def __init__(self, sock, _stderr, server):
        self.stdin, self.stdout = sock.makefile("wb"), sock.makefile("rb")
        self.wait, self.poll, self.kill = server.wait, server.poll, server.kill


class LspProcess:
    """A minimal synchronous LSP client: requests wait for their answer, notifications are kept."""

    def __init__(self, root: Path, settings: dict, capabilities: dict | None = None, own_process: bool = False):
        """`own_process`: a process of its own (its exit code is read), not one forked from the
        test process's warm server (forked_servers)."""
        self.proc = None if own_process else ForkedLsp.start()
        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, "-m", "aspace_dap", "lsp"], cwd=ROOT, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.incoming: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.settings = settings
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        caps = capabilities or {"workspace": {"inlayHint": {"refreshSupport": True},
                                              "didChangeWatchedFiles": {"dynamicRegistration": True}}}
        self.initialized = self.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                                       "capabilities": caps,
                                                       "initializationOptions": {"aspace": settings}})
        self.notify("initialized", {})

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.incoming.put(None)
                    return
                line = line.decode().strip()
                if not line:
                    break
                k, v = line.split(":", 1)
                headers[k.lower()] = v.strip()
            self.incoming.put(json.loads(out.read(int(headers["content-length"]))))

    def _send(self, msg: dict):
        body = json.dumps(msg).encode()
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params):
        msg = self.answer(method, params)
        assert "error" not in msg, msg["error"]
        return msg.get("result")

    def answer(self, method: str, params) -> dict:
        """The whole answer message (a result or an error)."""
        self._next += 1
        rid = self._next
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.incoming.get(timeout=60)
            assert msg is not None, "server exited"
            if msg.get("id") == rid and "method" not in msg:
                return msg
            self._handle(msg)

    def _handle(self, msg):
        if "method" in msg and "id" in msg:
            self.server_requests.append(msg)
            result = [self.settings] if msg["method"] == "workspace/configuration" else None
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif "method" in msg:
            self.notifications.append(msg)

    def drain(self):
        """Let notifications already sent arrive: a round trip orders them before its answer."""
        self.request("textDocument/codeLens", {"textDocument": {"uri": (ROOT / "nothing.hip").as_uri()}})

    def open(self, path: Path):
        self.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "cpp",
                                                               "version": 1, "text": path.read_text()}})

    def hints(self, path: Path, first: int = 0, last: int = 10_000):
        return self.request("textDocument/inlayHint", {"textDocument": {"uri": path.as_uri()}, "range": {
            "start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}})

    def hover(self, path: Path, line: int, word: str):
        text = path.read_text().splitlines()[line - 1]
        col = re.search(rf"\b{re.escape(word)}\b", text).start()
        return self.request("textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                                   "position": {"line": line - 1, "character": col + 1}})

    def diagnostics(self, path: Path, timeout: float = 60):
        """The latest diagnostics published for `path`, waiting for the first (the server publishes
        them once no message waits)."""
        def latest():
            found = [n["params"]["diagnostics"] for n in self.notifications
                     if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == path.as_uri()]
            return found[-1] if found else None
        while latest() is None:
            msg = self.incoming.get(timeout=timeout)
            assert msg is not None, "server exited"
            self._handle(msg)
        return latest()

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def hints_by_line(hints) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for h in hints:
        out.setdefault(h["position"]["line"] + 1, []).append(h["label"])
    return out


@pytest.fixture(scope="module")
def scratch_o2():
    client = LspProcess(ROOT, {"codeObjects": ["examples/scratch_struct/scratch_struct.gfx90a.O2.co"], "scratchBudget": 64})
    yield client
    client.close()


SCRATCH_HIP = EXAMPLES / "scratch_struct" / "scratch_struct.hip"
LDS_HIP = EXAMPLES / "lds_tiles" / "lds_tiles.hip"


def test_hints_on_declarations_and_location_changes(scratch_o2):
    lines = hints_by_line(scratch_o2.hints(SCRATCH_HIP))
    src = SCRATCH_HIP.read_text().splitlines()
    assert lines[24] == [f"{ARROW} v6[lane]"]  # int gid = ...
    assert "gid" in src[23]
    assert lines[28] == [f"{ARROW} private_lane#0x8 (scratch)"]  # Particle p: fixed frame, no frame base
    assert lines[40] == [f"{ARROW} private_lane#0x50 (scratch)"]
    assert f"{ARROW} step: optimized out" in lines[51]  # shares its line with a change of s
    # every hint sits at the end of its line
    for h in scratch_o2.hints(SCRATCH_HIP):
        assert h["position"]["character"] == len(src[h["position"]["line"]])


def test_hints_only_for_the_requested_range(scratch_o2):
    lines = hints_by_line(scratch_o2.hints(SCRATCH_HIP, 23, 24))
    assert set(lines) <= {24, 25}
    assert lines[24] == [f"{ARROW} v6[lane]"]


def test_hover_lists_ranges_and_expressions(scratch_o2):
    text = scratch_o2.hover(SCRATCH_HIP, 24, "gid")["contents"]["value"]
    assert "**gid**" in text and "`integrate`" in text
    assert "`0x1840`\u2013`0x249c`" in text
    assert "v6[lane]" in text and "DW_OP_regx" in text
    assert scratch_o2.hover(SCRATCH_HIP, 24, "int") is None


def test_code_lens_shows_kernel_resources(scratch_o2):
    lenses = scratch_o2.request("textDocument/codeLens", {"textDocument": {"uri": SCRATCH_HIP.as_uri()}})
    assert len(lenses) == 1
    title = lenses[0]["command"]["title"]
    assert lenses[0]["range"]["start"]["line"] == 20  # __global__ void integrate(...) at line 21
    assert re.fullmatch(r"wave64 · \d+ VGPR · \d+ SGPR · \d+ AGPR · LDS 0 B · scratch \d+ B · spills \d+ SGPR / \d+ VGPR",
                        title), title


def test_scratch_budget_diagnostic(scratch_o2):
    scratch_o2.open(SCRATCH_HIP)
    scratch_o2.drain()
    diags = scratch_o2.diagnostics(SCRATCH_HIP)
    budget = [d for d in diags if "aspace.scratchBudget" in d["message"]]
    assert len(budget) == 1 and budget[0]["severity"] == 3  # Information
    assert budget[0]["range"]["start"]["line"] == 20


def test_unrelated_file_gets_nothing(scratch_o2):
    assert scratch_o2.hints(LDS_HIP) == []
    assert scratch_o2.request("textDocument/codeLens", {"textDocument": {"uri": LDS_HIP.as_uri()}}) == []


def test_o0_frame_pointer_words_and_lds_budget():
    client = LspProcess(ROOT, {"codeObjects": ["examples/lds_tiles/lds_tiles.gfx90a.O0.co"], "ldsBudget": 1024})
    try:
        lines = hints_by_line(client.hints(LDS_HIP))
        # clang-15 gives tile and row_sums the placeholder LDS address 0; the kernel's ISA forms
        # `s_mov_b32 s6, 0x440` as the low dword of row_sums' generic pointer (line 31)
        assert lines[12] == [f"{ARROW} local#0x0 (LDS)"]
        assert lines[13] == [f"{ARROW} local#0x440 (LDS)"]
        assert any(re.fullmatch(rf"{ARROW} private_lane fp\+0x[0-9a-f]+ \(scratch\)", h) for h in lines[15])
        client.open(LDS_HIP)
        client.drain()
        assert any("aspace.ldsBudget" in d["message"] for d in client.diagnostics(LDS_HIP))
    finally:
        client.close()


def test_settings_change_and_watched_file_reload(tmp_path):
    client = LspProcess(tmp_path, {"codeObjects": ["objs/*.co"]})
    try:
        hip = tmp_path / "scratch_struct.hip"
        shutil.copy(SCRATCH_HIP, hip)
        assert client.hints(hip) == []
        assert any(r["method"] == "client/registerCapability" for r in client.server_requests)
        (tmp_path / "objs").mkdir()
        shutil.copy(EXAMPLES / "scratch_struct" / "scratch_struct.gfx90a.O2.co", tmp_path / "objs" / "k.co")
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "objs" / "k.co").as_uri(), "type": 1}]})
        assert hints_by_line(client.hints(hip))[24] == [f"{ARROW} v6[lane]"]
        assert any(r["method"] == "workspace/inlayHint/refresh" for r in client.server_requests)
        # the setting emptied: the code object is found in the workspace instead
        client.notify("workspace/didChangeConfiguration", {"settings": {"aspace": {"codeObjects": []}}})
        assert hints_by_line(client.hints(hip))[24] == [f"{ARROW} v6[lane]"]
        assert client.request("aspace/codeObjects", {"uri": hip.as_uri()})["from"] == "workspace"
        (tmp_path / "objs" / "k.co").unlink()
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "objs" / "k.co").as_uri(), "type": 3}]})
        assert client.hints(hip) == []
    finally:
        client.close()


def test_code_objects_found_in_the_workspace(tmp_path):
    """No aspace.codeObjects: each source gets the code object whose line table names it, newest first;
    a host executable with a CUDA fat binary counts; the client is told which one is used."""
    hip, cu, other = tmp_path / "scratch_struct.hip", tmp_path / "divergent_call.cu", tmp_path / "other.hip"
    shutil.copy(SCRATCH_HIP, hip)
    shutil.copy(EXAMPLES / "cuda" / "divergent_call.cu", cu)
    other.write_text("__global__ void k() {}\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "bin").mkdir()
    shutil.copy(EXAMPLES / "scratch_struct" / "scratch_struct.gfx90a.O2.co", tmp_path / "build" / "k.co")
    shutil.copy(EXAMPLES / "lds_tiles" / "lds_tiles.gfx90a.O0.co", tmp_path / "build" / "lds.co")
    app = tmp_path / "bin" / "app"  # an executable holding .nv_fatbin, named like none of the suffixes
    shutil.copy(EXAMPLES / "cuda" / "divergent_call.sm_90.G.host.o", app)
    app.chmod(0o755)
    client = LspProcess(tmp_path, {})
    try:
        which = lambda path: client.request("aspace/codeObjects", {"uri": path.as_uri()})  # noqa: E731
        assert hints_by_line(client.hints(hip))[24] == [f"{ARROW} v6[lane]"]  # as with the setting
        assert which(hip)["codeObjects"] == [str(tmp_path / "build" / "k.co")] and which(hip)["from"] == "workspace"
        assert which(cu)["codeObjects"] == [str(app)]
        assert which(other)["codeObjects"] == [] and client.hints(other) == []
        # a newer build of the same source is used once the client reports it
        newer = tmp_path / "build" / "k2.co"
        shutil.copy(EXAMPLES / "scratch_struct" / "scratch_struct.gfx90a.O0.co", newer)
        os.utime(newer, (time.time() + 10, time.time() + 10))
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": newer.as_uri(), "type": 1}]})
        assert which(hip)["codeObjects"] == [str(newer)]
        assert any(n["method"] == "aspace/codeObjectsChanged" for n in client.notifications)
        # the setting names the code objects again: only those
        client.notify("workspace/didChangeConfiguration", {"settings": {"aspace": {"codeObjects": ["build/lds.co"]}}})
        assert which(hip) == {"codeObjects": [], "from": "setting", "searched": 1, "note": None}
        assert client.hints(hip) == []
    finally:
        client.close()


def test_the_search_prefers_a_build_with_variables_to_a_newer_lineinfo_one(tmp_path):
    from aspace_dap.lsp.discover import Discovery
    from aspace_dap.lsp.program import load_lenses
    for build in ("G", "lineinfo"):
        shutil.copy(EXAMPLES / "cuda" / f"lds_tiles.sm_90.{build}.cubin", tmp_path / f"k.{build}.cubin")
    later = time.time() + 10
    os.utime(tmp_path / "k.lineinfo.cubin", (later, later))
    found = Discovery(lambda: load_lenses).find(str(EXAMPLES / "cuda" / "lds_tiles.cu"), [str(tmp_path)])
    assert found.path == str(tmp_path / "k.G.cubin") and found.searched == 2
    (tmp_path / "k.G.cubin").unlink()  # the line tables alone, when nothing has more
    assert Discovery(lambda: load_lenses).find(str(EXAMPLES / "cuda" / "lds_tiles.cu"), [str(tmp_path)]).path == \
        str(tmp_path / "k.lineinfo.cubin")


def test_the_search_for_code_objects_stops_at_its_budget(tmp_path):
    from aspace_dap.lsp.discover import Discovery
    from aspace_dap.lsp.program import load_lenses
    shutil.copy(EXAMPLES / "scratch_struct" / "scratch_struct.gfx90a.O2.co", tmp_path / "k.co")
    roots = [str(tmp_path)]
    # out of time while walking the workspace
    walked = Discovery(lambda: load_lenses, budget=-1).find(str(SCRATCH_HIP), roots)
    assert walked.path is None and "out of time" in walked.note
    # out of time before reading a candidate for this source (the walk was done for another)
    search = Discovery(lambda: load_lenses)
    assert search.find(str(LDS_HIP), roots).path is None
    search.budget = -1
    found = search.find(str(SCRATCH_HIP), roots)
    assert found.path is None and found.searched == 0 and "stopped after -1 s (0 of 1 files)" in found.note
    assert Discovery(lambda: load_lenses).find(str(SCRATCH_HIP), roots).path == str(tmp_path / "k.co")


SHADOW_HIP = ROOT / "tests" / "lsp_inputs" / "shadow.hip"


def test_hover_picks_the_variable_by_lexical_scope():
    # shadow.hip: `v` at line 6 (kernel scope), line 8 (the if block), line 16 (another kernel)
    client = LspProcess(ROOT, {"codeObjects": ["tests/lsp_inputs/shadow.gfx90a.O0.co"]})

    def declared(line: int) -> list[int]:
        text = client.hover(SHADOW_HIP, line, "v")["contents"]["value"]
        return [int(n) for n in re.findall(r"declared at line (\d+)", text)]

    try:
        assert declared(7) == [6]  # `if (v < n)`
        assert declared(9) == [8]  # inside the block the inner one hides the outer
        assert declared(11) == [6]  # after the block: the outer one again, though line 8 is nearer
        assert declared(17) == [16]
        # a line without code (the signature) falls back to the nearest declaration in scope
        text = client.hover(SHADOW_HIP, 4, "n")["contents"]["value"]
        assert "declared at line 4" in text and "in `shadow`" in text
    finally:
        client.close()


# ---- documents, position encodings and the protocol's edges ------------------------------------

EMOJI = "\U0001F600"  # outside the Basic Multilingual Plane: 2 UTF-16 code units, 4 UTF-8 bytes


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _change(client: LspProcess, path: Path, version: int, start: tuple[int, int], end: tuple[int, int], text: str):
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": path.as_uri(), "version": version},
        "contentChanges": [{"range": {"start": {"line": start[0], "character": start[1]},
                                      "end": {"line": end[0], "character": end[1]}}, "text": text}]})


def _hover_at(client: LspProcess, path: Path, line: int, character: int):
    return client.request("textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                                 "position": {"line": line - 1, "character": character}})


def test_edits_and_hovers_count_utf16_code_units(tmp_path):
    # LSP positions count UTF-16 code units unless both sides agree otherwise (the protocol's default)
    hip = tmp_path / "scratch_struct.hip"
    shutil.copy(SCRATCH_HIP, hip)
    client = LspProcess(ROOT, {"codeObjects": ["examples/scratch_struct/scratch_struct.gfx90a.O2.co"]})
    try:
        client.open(hip)
        prefix = f"/*{EMOJI * 4}*/"
        _change(client, hip, 2, (23, 0), (23, 0), prefix)  # line 24 now starts with the comment
        line = prefix + SCRATCH_HIP.read_text().splitlines()[23]
        gid = line.index("gid")
        # the client's column of `g` is 4 units past its code-point index: read as a code-point
        # index it would point past `gid`
        assert _utf16_len(line[:gid]) == gid + 4 and line[gid + 3:gid + 5] == " ="
        assert "**gid**" in _hover_at(client, hip, 24, _utf16_len(line[:gid]))["contents"]["value"]
        # the hint of line 24 sits at its end, counted in UTF-16
        hint = [h for h in client.hints(hip, 23, 23) if h["position"]["line"] == 23]
        assert hint and all(h["position"]["character"] == _utf16_len(line) for h in hint)
        # delete the first two emoji (UTF-16 columns 2..6)
        _change(client, hip, 3, (23, 2), (23, 6), "")
        line = f"/*{EMOJI * 2}*/" + SCRATCH_HIP.read_text().splitlines()[23]
        gid = line.index("gid")
        assert "**gid**" in _hover_at(client, hip, 24, _utf16_len(line[:gid]))["contents"]["value"]
        # a whole-document change (no range) replaces the text
        client.notify("textDocument/didChange", {"textDocument": {"uri": hip.as_uri(), "version": 4},
                                                 "contentChanges": [{"text": SCRATCH_HIP.read_text()}]})
        plain = SCRATCH_HIP.read_text().splitlines()[23]
        assert "**gid**" in _hover_at(client, hip, 24, plain.index("gid"))["contents"]["value"]
        client.notify("textDocument/didClose", {"textDocument": {"uri": hip.as_uri()}})
        assert client.hints(hip, 23, 23)[0]["position"]["character"] == len(plain)  # from disk again
    finally:
        client.close()


def test_a_client_preferring_utf8_gets_utf8_columns(tmp_path):
    hip = tmp_path / "scratch_struct.hip"
    lines = SCRATCH_HIP.read_text().splitlines(keepends=True)
    lines[23] = lines[23].rstrip("\n") + f" // {EMOJI}\u00e9\n"
    hip.write_text("".join(lines), encoding="utf-8")
    caps = {"general": {"positionEncodings": ["utf-8", "utf-16"]}}
    client = LspProcess(ROOT, {"codeObjects": ["examples/scratch_struct/scratch_struct.gfx90a.O2.co"]}, caps)
    try:
        assert client.initialized["capabilities"]["positionEncoding"] == "utf-8"
        hint = [h for h in client.hints(hip, 23, 23) if h["position"]["line"] == 23]
        assert hint and hint[0]["position"]["character"] == len(lines[23].rstrip("\n").encode("utf-8"))
    finally:
        client.close()


def test_unknown_requests_commands_and_exit_without_shutdown(tmp_path):
    client = LspProcess(tmp_path, {"codeObjects": []}, own_process=True)
    try:
        for method in ("textDocument/documentSymbol", "no/such"):
            assert client.answer(method, {})["error"]["code"] == -32601  # MethodNotFound
        answer = client.answer("workspace/executeCommand", {"command": "nothing", "arguments": []})
        assert answer["error"]["code"] == -32602  # InvalidParams: no such command
        # folders added after start become roots for relative code-object paths
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": ROOT.as_uri(), "name": "repo"}], "removed": []}})
        client.notify("workspace/didChangeConfiguration", {"settings": {"aspace": {
            "codeObjects": ["examples/scratch_struct/scratch_struct.gfx90a.O2.co"]}}})
        assert hints_by_line(client.hints(SCRATCH_HIP))[24] == [f"{ARROW} v6[lane]"]
        client.notify("exit", None)  # `exit` before `shutdown`: exit code 1, as the protocol says
        assert client.proc.wait(timeout=10) == 1
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


@pytest.mark.parametrize("code_object, source", [
    ("tests/lsp_inputs/shadow.gfx90a.O0.co", "tests/lsp_inputs/shadow.hip"),
    ("examples/scratch_struct/scratch_struct.gfx90a.O2.co", "examples/scratch_struct/scratch_struct.hip"),
    ("examples/divergent_call/divergent_call.clang19.gfx90a.O2.co", "examples/divergent_call/divergent_call.hip"),
    ("examples/shared_callee/shared_callee.gfx90a.O0.co", "examples/shared_callee/shared_callee.hip"),
])
def test_a_hover_reading_one_line_says_what_one_reading_the_file_says(code_object, source):
    # a hover first reads only its line's variables; the answer must not depend on what was read before
    from aspace_dap.lsp import features
    from aspace_dap.lsp.program import load_lenses

    def view():
        lens = load_lenses(str(ROOT / code_object))[0]
        return features.FileView(lens, lens.match_file(str(ROOT / source)))

    lines = (ROOT / source).read_text().splitlines(keepends=True)
    whole = view()
    whole.lens.variables(whole.file)
    names = {v.name for v in whole.lens.variables(whole.file)}
    compared = 0
    for number, text in enumerate(lines):
        fresh = view()
        for match in re.finditer(r"\b[A-Za-z_]\w*\b", text):
            if match.group() in names:
                at = (number, match.start())
                assert features.hover([fresh], lines, *at) == features.hover([whole], lines, *at), (number + 1, text)
                compared += 1
    assert compared >= 10


SWEEP_OBJECTS = sorted(str(p.relative_to(ROOT)) for pattern in ("*/*.gfx90a.O*.co", "cuda/*.sm_90.G.cubin",
                                                                  "opencl/*.pvc*.elf") for p in EXAMPLES.glob(pattern))


@pytest.mark.parametrize("code_object", SWEEP_OBJECTS)
def test_reading_each_scope_once_changes_no_hint_or_hover(code_object, monkeypatch):
    # the lens reads the variables of one PC per set of enclosing scopes; reading every PC must say the same
    from aspace_dap.lsp import features
    from aspace_dap.lsp.program import load_lenses

    def answers():
        out = []
        for lens in load_lenses(str(ROOT / code_object)):
            for file in lens.source_files():
                view = features.FileView(lens, file)
                out.append((file, features.inlay_hints([view], [], 1, 100_000),
                            [(v.name, v.decl_line, v.ranges, v.scope, v.scope_lines) for v in lens.variables(file)]))
        return out

    swept = answers()
    from aspace_dap.dwarf.index import DwarfIndex
    monkeypatch.setattr(DwarfIndex, "scopes_at", lambda self, pc: None)  # every PC read
    assert answers() == swept


def test_hints_asked_with_the_open_come_before_its_diagnostics(tmp_path):
    # an editor opening a file asks for its hints at once; the diagnostics (which read the whole file)
    # follow when no message waits
    client = LspProcess(ROOT, {"codeObjects": ["tests/lsp_inputs/shadow.gfx90a.O0.co"], "scratchBudget": 1024})
    try:
        hip = tmp_path / "shadow.hip"
        shutil.copy(SHADOW_HIP, hip)
        bodies = [json.dumps(m).encode() for m in (
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": hip.as_uri(), "languageId": "cpp", "version": 1, "text": hip.read_text()}}},
            {"jsonrpc": "2.0", "id": "hints", "method": "textDocument/inlayHint", "params": {
                "textDocument": {"uri": hip.as_uri()},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}}})]
        data = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
        assert len(data) <= 4096  # one atomic pipe write (PIPE_BUF): the server reads both at once
        client.proc.stdin.write(data)
        client.proc.stdin.flush()
        order = []
        while "diagnostics" not in order:
            msg = client.incoming.get(timeout=60)
            if msg.get("id") == "hints":
                order.append("hints")
                assert msg["result"]
            elif msg.get("method") == "textDocument/publishDiagnostics":
                order.append("diagnostics")
                assert sum("aspace.scratchBudget" in d["message"] for d in msg["params"]["diagnostics"]) == 2
            else:
                client._handle(msg)
        assert order == ["hints", "diagnostics"]
    finally:
        client.close()


def test_confused_clients_get_clear_words_and_no_tracebacks(tmp_path):
    """A change to a document that is not open, settings of the wrong types, notifications whose parameters
    do not fit the protocol and requests with ill-typed fields: one clear line each (on stderr, in a log
    message or in the error answer), never a traceback or Python's own text, and the server goes on."""
    def message(rid, method, params):
        body = {"jsonrpc": "2.0", "method": method, "params": params} | ({} if rid is None else {"id": rid})
        data = json.dumps(body).encode()
        return b"Content-Length: %d\r\n\r\n" % len(data) + data

    doc = {"uri": (tmp_path / "a.hip").as_uri()}
    sent = b"".join([
        message(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                                  "initializationOptions": {"aspace": {"scratchBudget": -4}}}),
        message(None, "initialized", {}),
        message(None, "textDocument/didChange", {"textDocument": doc | {"version": 2}, "contentChanges": [{"text": "x"}]}),
        message(None, "workspace/didChangeConfiguration", {"settings": {"aspace": {"codeObjects": 5}}}),
        message(None, "workspace/didChangeConfiguration", {"settings": {"aspace": {"codeObjects": ["a.co", 7],
                                                                                   "ldsBudget": "x"}}}),
        message(None, "textDocument/didOpen", {"textDocument": 5}),
        message(None, "textDocument/didOpen", {"textDocument": doc | {"languageId": "hip", "version": "x", "text": ""}}),
        message(2, "textDocument/hover", {"textDocument": doc, "position": {"line": "x", "character": 0}}),
        message(3, "textDocument/hover", {"textDocument": doc, "position": "here"}),
        message(4, "textDocument/codeLens", {"textDocument": doc}),
        message(5, "shutdown", None), message(None, "exit", None)])
    done = subprocess.run([sys.executable, "-m", "aspace_dap", "lsp"], input=sent, capture_output=True, cwd=ROOT,
                          timeout=60)
    answers, out = [], done.stdout
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        answers.append(json.loads(rest[:length]))
        out = rest[length:]
    errors = {a["id"]: a["error"]["message"] for a in answers if "error" in a}
    assert errors == {2: "invalid parameters for textDocument/hover: $.params.position.line: expected an integer",
                      3: "invalid parameters for textDocument/hover: $.params.position: expected an object"}
    assert next(a["result"] for a in answers if a.get("id") == 4) == []
    logged = [a["params"]["message"] for a in answers if a.get("method") == "window/logMessage"]
    assert logged == ["aspace.codeObjects is 5: it takes a path or a list of paths (globs relative to the workspace)",
                      "aspace.codeObjects: 7 left out: not a path",
                      'aspace.ldsBudget is "x": it takes a number of bytes (0 or more); no budget is checked']
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert stderr.splitlines() == [
        "aspace-dap lsp: aspace.scratchBudget is -4: it takes a number of bytes (0 or more); no budget is checked",
        f"aspace-dap lsp: ignored a change to {doc['uri']}: it is not open (textDocument/didOpen comes first)",
        "aspace-dap lsp: ignored a textDocument/didOpen notification with invalid parameters: "
        "$.params.textDocument: expected an object",
        "aspace-dap lsp: ignored a textDocument/didOpen notification with invalid parameters: "
        "$.params.textDocument.version: expected an integer"], stderr
    assert done.returncode == 0
