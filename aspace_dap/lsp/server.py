"""`aspace-dap lsp`: the address-space lens as a language server (pygls, stdio).

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

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import limits
from ..errors import AspaceError
from ..paths import read_regular, remove_temp_dirs_on_sigterm
from . import features, globbing
from .program import CodeObjectLens, load_lenses
from .transport import serve_stdio

SECTION = "aspace"


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


class AspaceLanguageServer(LanguageServer):
    def __init__(self):
        super().__init__("aspace-dap-lsp", "0.1.0")
        self.settings = Settings()
        self.lenses: list[CodeObjectLens] = []
        self.loaded_paths: list[str] = []
        self.load_errors: list[str] = []
        self.glob_notes: list[str] = []

    # --- code objects ---------------------------------------------------------------------------

    def roots(self) -> list[str]:
        ws = self.workspace
        roots = [to_fs_path(f.uri) for f in ws.folders.values()] if ws.folders else []
        if not roots and ws.root_path:
            roots = [ws.root_path]
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
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=message))

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
        if uri in self.workspace.text_documents:  # open in the editor: the client sent its text
            return list(self.workspace.get_text_document(uri).lines)
        # not open: from disk, a regular file only (never a FIFO or /dev/zero) and within the size limit
        path = to_fs_path(uri)
        if not path:
            return []
        try:
            data = read_regular(path, "source", limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except AspaceError:
            return []
        return data.decode("utf-8", errors="replace").splitlines(keepends=True)

    # --- pushing to the client ------------------------------------------------------------------

    def publish(self, uri: str) -> None:
        try:
            diags = features.diagnostics(self.views(uri), self.lines(uri), self.settings.lds_budget,
                                         self.settings.scratch_budget)
        except AspaceError as exc:
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=str(exc)))
            diags = []
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags))

    def refresh(self) -> None:
        caps = self.client_capabilities.workspace
        if caps is not None and caps.inlay_hint is not None and caps.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        for uri in list(self.workspace.text_documents):
            self.publish(uri)

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


server = AspaceLanguageServer()


@server.feature(lsp.INITIALIZE)
def _initialize(ls: AspaceLanguageServer, params: lsp.InitializeParams) -> None:
    settings = Settings.from_client(params.initialization_options)
    if settings is not None:
        ls.settings = settings
        ls.reload()


@server.feature(lsp.INITIALIZED)
async def _initialized(ls: AspaceLanguageServer, params: lsp.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    watch = caps.did_change_watched_files if caps is not None else None
    if watch is not None and watch.dynamic_registration:
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[lsp.FileSystemWatcher(glob_pattern="**/*")])
        ls.client_register_capability(lsp.RegistrationParams(registrations=[lsp.Registration(
            id="aspace-code-objects", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))
    if caps is not None and caps.configuration:
        answer = await ls.workspace_configuration_async(
            lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)]))
        if answer:
            ls.apply(Settings.from_client({SECTION: answer[0]}))


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def _configuration(ls: AspaceLanguageServer, params: lsp.DidChangeConfigurationParams) -> None:
    ls.apply(Settings.from_client(params.settings))


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def _watched(ls: AspaceLanguageServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    if any(ls.watches(to_fs_path(change.uri) or "") for change in params.changes):
        ls.reload()
        ls.refresh()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def _opened(ls: AspaceLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def _saved(ls: AspaceLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
def _inlay_hints(ls: AspaceLanguageServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    uri = params.text_document.uri
    r = params.range
    try:
        return features.inlay_hints(ls.views(uri), ls.lines(uri), r.start.line + 1, r.end.line + 1)
    except AspaceError as exc:
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=str(exc)))
        return []


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def _hover(ls: AspaceLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    uri = params.text_document.uri
    try:
        return features.hover(ls.views(uri), ls.lines(uri), params.position)
    except AspaceError as exc:
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=str(exc)))
        return None


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def _code_lens(ls: AspaceLanguageServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    try:
        return features.code_lenses(ls.views(params.text_document.uri))
    except AspaceError as exc:
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=str(exc)))
        return []


def main() -> int:
    remove_temp_dirs_on_sigterm()
    return serve_stdio(server)
