"""`aspace-dap lsp`: the address-space lens as a language server (LSP over stdio).

Settings (initializationOptions, workspace/didChangeConfiguration or
workspace/configuration, section "aspace"):
  codeObjects   paths or globs of code objects, relative to the workspace root
  ldsBudget     bytes of LDS per kernel above which a diagnostic appears (off when unset)
  scratchBudget bytes of scratch per lane above which a diagnostic appears (off when unset)
Code objects are reloaded when the client reports them changed.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import limits
from ..errors import AspaceError
from ..paths import read_regular, remove_temp_dirs_on_sigterm
from . import features, globbing, messages
from .documents import Documents, choose_encoding, to_fs_path
from .messages import path_of
from .program import CodeObjectLens, load_lenses
from .transport import Connection, serve_stdio

SECTION = "aspace"
NAME, VERSION = "aspace-dap-lsp", "0.1.0"
WARNING = 2  # MessageType.Warning
INCREMENTAL = 2  # TextDocumentSyncKind.Incremental


@dataclass
class Settings:
    code_objects: list[str] = field(default_factory=list)
    lds_budget: int | None = None
    scratch_budget: int | None = None

    @classmethod
    def from_client(cls, raw) -> "Settings | None":
        """Settings from `{"aspace": {...}}`, a bare section, or dotted keys; None if none are given."""
        if not isinstance(raw, dict):
            return None
        section = raw.get(SECTION) if isinstance(raw.get(SECTION), dict) else None
        if section is None:
            dotted = {k[len(SECTION) + 1:]: v for k, v in raw.items() if k.startswith(SECTION + ".")}
            section = dotted or raw
        if not any(k in section for k in ("codeObjects", "ldsBudget", "scratchBudget")):
            return None
        paths = section.get("codeObjects") or []
        if isinstance(paths, str):
            paths = [paths]
        return cls([p for p in paths if isinstance(p, str)], _budget(section.get("ldsBudget")),
                   _budget(section.get("scratchBudget")))


def _budget(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class AspaceLanguageServer:
    """The server's state and its handlers: `requests` and `notifications` map LSP methods to
    handlers of the message's params (transport.MessagePump calls them)."""

    def __init__(self):
        self.settings = Settings()
        self.lenses: list[CodeObjectLens] = []
        self.loaded_paths: list[str] = []
        self.load_errors: list[str] = []
        self.glob_notes: list[str] = []
        self.client_capabilities: dict = {}
        self.documents = Documents()
        self.folders: dict[str, None] = {}  # workspace folder URIs, in the client's order
        self.root_path: str | None = None
        self.shut_down = False
        self.exit_code: int | None = None
        self.connection: Connection | None = None
        self._due: dict[str, None] = {}  # documents whose diagnostics are to be published, oldest first
        self.requests: dict[str, Callable[[Any], Any]] = {
            "initialize": self._initialize,
            "shutdown": self._shutdown,
            "textDocument/inlayHint": self._inlay_hints,
            "textDocument/hover": self._hover,
            "textDocument/codeLens": self._code_lens,
            "workspace/executeCommand": self._execute_command,
        }
        self.notifications: dict[str, Callable[[Any], None]] = {
            "initialized": self._initialized,
            "exit": self._exit,
            "workspace/didChangeConfiguration": self._configuration,
            "workspace/didChangeWatchedFiles": self._watched,
            "workspace/didChangeWorkspaceFolders": self._folders_changed,
            "textDocument/didOpen": self._opened,
            "textDocument/didChange": self._changed,
            "textDocument/didClose": self._closed,
            "textDocument/didSave": self._saved,
        }

    def attach(self, connection: Connection) -> None:
        self.connection = connection

    # --- code objects ---------------------------------------------------------------------------

    def roots(self) -> list[str]:
        roots = [to_fs_path(uri) for uri in self.folders]
        if not roots and self.root_path:
            roots = [self.root_path]
        return [r for r in roots if r] or [os.getcwd()]

    def resolve_paths(self) -> list[str]:
        found: list[str] = []
        self.glob_notes = []
        for pattern in self.settings.code_objects:
            for root in ([None] if os.path.isabs(pattern) else self.roots()):
                full = pattern if root is None else os.path.join(root, pattern)
                hits, note = globbing.expand(full)  # bounded, never through symlinked folders
                found += hits
                if note:
                    self.glob_notes.append(note)
        return globbing.unique_files(found)  # each file once, however many paths lead to it

    _loaded = False

    def reload(self) -> None:
        lenses, errors = [], []
        paths = self.resolve_paths()
        for path in paths:
            try:
                lenses += load_lenses(path)
            except AspaceError as exc:
                errors.append(f"{path}: {exc}")
        self.lenses, self.loaded_paths, self.load_errors = lenses, paths, errors
        self._loaded = True
        for message in errors + self.glob_notes:
            self.log_warning(message)

    def watches(self, path: str) -> bool:
        path = os.path.normpath(path)
        if path in self.loaded_paths:
            return True
        for pattern in self.settings.code_objects:
            for root in ([None] if os.path.isabs(pattern) else self.roots()):
                full = os.path.normpath(pattern if root is None else os.path.join(root, pattern))
                if fnmatch.fnmatch(path, full):
                    return True
        return False

    def views(self, uri: str) -> list[features.FileView]:
        path = to_fs_path(uri)
        if not path:
            return []
        out = []
        for lens in self.lenses:
            try:
                name = lens.match_file(path)
            except AspaceError:
                continue
            if name is not None:
                out.append(features.FileView(lens, name))
        return out

    def lines(self, uri: str) -> list[str]:
        if uri in self.documents:  # open in the editor: the client sent its text
            return self.documents.lines(uri)
        # not open: from disk, a regular file only (never a FIFO or /dev/zero) and within the size limit
        path = to_fs_path(uri)
        if not path:
            return []
        try:
            data = read_regular(path, "source", limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except AspaceError:
            return []
        return data.decode("utf-8", errors="replace").splitlines(keepends=True)

    # --- talking to the client ------------------------------------------------------------------

    def log_warning(self, message: str) -> None:
        self.connection.notify("window/logMessage", {"type": WARNING, "message": message})

    def schedule_diagnostics(self, uri: str) -> None:
        """Publish the document's diagnostics once no message waits: they read the whole file, and the
        inlay hints and hovers an editor asks for right after opening it should not wait for that."""
        self._due.pop(uri, None)
        self._due[uri] = None

    def has_idle_work(self) -> bool:
        return bool(self._due)

    def idle_step(self) -> None:
        """Publish the diagnostics of the document that has waited longest."""
        uri = next(iter(self._due))
        del self._due[uri]
        self.publish(uri)

    def publish(self, uri: str) -> None:
        try:
            diags = features.diagnostics(self.views(uri), self.lines(uri), self.settings.lds_budget,
                                         self.settings.scratch_budget, self.documents.encoding)
        except AspaceError as exc:
            self.log_warning(str(exc))
            diags = []
        self.connection.notify("textDocument/publishDiagnostics", {"uri": uri, "diagnostics": diags})

    def refresh(self) -> None:
        caps = self.client_capabilities
        if path_of(caps, "workspace", "inlayHint", "refreshSupport") is True:
            self.connection.request("workspace/inlayHint/refresh")
        if path_of(caps, "workspace", "codeLens", "refreshSupport") is True:
            self.connection.request("workspace/codeLens/refresh")
        for uri in self.documents.uris():
            self.schedule_diagnostics(uri)

    def apply(self, settings: Settings | None) -> None:
        if settings is None:
            return
        # the client sends its settings at initialize and again when asked: load code objects only
        # when the list changed (budgets alone just redo the diagnostics)
        same_objects = settings.code_objects == self.settings.code_objects and self._loaded
        self.settings = settings
        if not same_objects:
            self.reload()
        self.refresh()

    def capabilities(self) -> dict:
        return {
            "positionEncoding": self.documents.encoding,
            "textDocumentSync": {"openClose": True, "change": INCREMENTAL, "save": True},
            "hoverProvider": True,
            "codeLensProvider": {"resolveProvider": False},
            "executeCommandProvider": {"commands": []},
            "inlayHintProvider": {"resolveProvider": False},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                          "fileOperations": {}},
        }

    # --- lifecycle ------------------------------------------------------------------------------

    def _initialize(self, params) -> dict:
        params = messages.obj(params, "params")
        caps = messages.obj(params.get("capabilities"), "capabilities")
        folders = messages.workspace_folders(params.get("workspaceFolders"))
        root_uri = messages.field(params, "rootUri", str, "params", optional=True)
        root_path = messages.field(params, "rootPath", str, "params", optional=True)
        self.client_capabilities = caps
        self.documents = Documents(choose_encoding(path_of(caps, "general", "positionEncodings")))
        self.folders = dict.fromkeys(folders)
        self.root_path = to_fs_path(root_uri) if root_uri is not None else root_path
        settings = Settings.from_client(params.get("initializationOptions"))
        if settings is not None:
            self.settings = settings
            self.reload()
        return {"capabilities": self.capabilities(), "serverInfo": {"name": NAME, "version": VERSION}}

    def _initialized(self, params) -> None:
        caps = self.client_capabilities
        if path_of(caps, "workspace", "didChangeWatchedFiles", "dynamicRegistration") is True:
            options = {"watchers": [{"globPattern": "**/*"}]}
            self.connection.request("client/registerCapability", {"registrations": [{
                "id": "aspace-code-objects", "method": "workspace/didChangeWatchedFiles",
                "registerOptions": options}]})
        if path_of(caps, "workspace", "configuration") is True:
            def configured(answer) -> None:
                if isinstance(answer, list) and answer:
                    self.apply(Settings.from_client({SECTION: answer[0]}))
            self.connection.request("workspace/configuration", {"items": [{"section": SECTION}]}, configured)

    def _shutdown(self, params) -> None:
        self.shut_down = True
        return None

    def _exit(self, params) -> None:
        self.exit_code = 0 if self.shut_down else 1

    def _execute_command(self, params) -> None:
        command = messages.field(messages.obj(params, "params"), "command", str, "params")
        raise messages.InvalidParams(f"command {command!r} is not defined")

    # --- workspace ------------------------------------------------------------------------------

    def _configuration(self, params) -> None:
        self.apply(Settings.from_client(messages.obj(params, "params").get("settings")))

    def _watched(self, params) -> None:
        if any(self.watches(to_fs_path(uri) or "") for uri in messages.watched_uris(params)):
            self.reload()
            self.refresh()

    def _folders_changed(self, params) -> None:
        event = messages.obj(messages.obj(params, "params").get("event"), "event")
        added = messages.workspace_folders(event.get("added"))
        removed = messages.workspace_folders(event.get("removed"))
        for uri in removed:
            self.folders.pop(uri, None)
        self.folders.update(dict.fromkeys(added))

    # --- documents ------------------------------------------------------------------------------

    def _opened(self, params) -> None:
        uri, text = messages.did_open(params)
        self.documents.open(uri, text)
        self.schedule_diagnostics(uri)

    def _changed(self, params) -> None:
        uri, changes = messages.did_change(params)
        self.documents.change(uri, changes)

    def _closed(self, params) -> None:
        self.documents.close(messages.text_document_uri(params))

    def _saved(self, params) -> None:
        self.schedule_diagnostics(messages.text_document_uri(params))

    def _inlay_hints(self, params) -> list[dict]:
        uri = messages.text_document_uri(params)
        first, _, last, _ = messages.span(params.get("range"))
        try:
            return features.inlay_hints(self.views(uri), self.lines(uri), first + 1, last + 1,
                                        self.documents.encoding)
        except AspaceError as exc:
            self.log_warning(str(exc))
            return []

    def _hover(self, params) -> dict | None:
        uri = messages.text_document_uri(params)
        line, units = messages.position(params.get("position"))
        try:
            lines = self.lines(uri)
            return features.hover(self.views(uri), lines, line, self.documents.column(lines, line, units))
        except AspaceError as exc:
            self.log_warning(str(exc))
            return None

    def _code_lens(self, params) -> list[dict]:
        uri = messages.text_document_uri(params)
        try:
            return features.code_lenses(self.views(uri))
        except AspaceError as exc:
            self.log_warning(str(exc))
            return []


def main() -> int:
    remove_temp_dirs_on_sigterm()
    return serve_stdio(AspaceLanguageServer())
