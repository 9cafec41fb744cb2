"""`aspace-dap lsp`: the address-space lens as a language server (pygls over stdio).

Settings (initializationOptions, workspace/didChangeConfiguration or
workspace/configuration, section "aspace"):
  codeObjects   paths or globs of code objects, relative to the workspace root; when it names none,
                each source gets the code object found in the workspace whose line table names it
                (discover.py)
  ldsBudget     bytes of LDS per kernel above which a diagnostic appears (off when unset)
  scratchBudget bytes of scratch per lane above which a diagnostic appears (off when unset)
Code objects are reloaded when the client reports them changed. `aspace/codeObjects {uri}` answers
which code objects a source's hints come from ({codeObjects, from: "setting" | "workspace", searched,
note}); `aspace/codeObjectsChanged` tells the client to ask again.

The features are registered on one pygls `LanguageServer` (`server` below); pygls
keeps the open documents (in the position encoding it agreed with the client)
and speaks the protocol. The lenses, with numpy and the DWARF modules under
them, are imported with the first code object to load.
"""

from __future__ import annotations

import fnmatch
import gc
import json
import os
import sys
from dataclasses import dataclass, field
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import limits
from ..errors import AspaceError
from ..paths import read_regular
from ..tempfiles import remove_temp_dirs_on_sigterm, sweep_dead_leftovers
from . import discover, features, globbing
from .protocol import PARSE_ERROR, AspaceProtocol, quiet_pygls, say, serve_stdio, unreadable_body

SECTION = "aspace"
CODE_OBJECTS, CHANGED = "aspace/codeObjects", "aspace/codeObjectsChanged"
NAME, VERSION = "aspace-dap-lsp", "0.1.0"


@dataclass
class Settings:
    code_objects: list[str] = field(default_factory=list)
    lds_budget: int | None = None
    scratch_budget: int | None = None
    # what was given but cannot be used, said to the client (a setting of the wrong type is left out)
    problems: list[str] = field(default_factory=list, compare=False)

    @classmethod
    def from_client(cls, raw) -> "Settings | None":
        """Settings from `{"aspace": {...}}`, a bare section, or dotted keys; None if none are given."""
        if not isinstance(raw, dict):
            return None
        section = raw.get(SECTION) if isinstance(raw.get(SECTION), dict) else None
        if section is None:
            dotted = {k[len(SECTION) + 1:]: v for k, v in raw.items() if isinstance(k, str) and k.startswith(SECTION + ".")}
            section = dotted or raw
        if not any(k in section for k in ("codeObjects", "ldsBudget", "scratchBudget")):
            return None
        problems: list[str] = []
        paths = section.get("codeObjects")
        if paths is None:
            paths = []
        elif isinstance(paths, str):
            paths = [paths]
        elif not isinstance(paths, list):
            problems.append(f"{SECTION}.codeObjects is {_shown(paths)}: it takes a path or a list of paths (globs "
                            "relative to the workspace)")
            paths = []
        wrong = [p for p in paths if not isinstance(p, str)]
        if wrong:
            problems.append(f"{SECTION}.codeObjects: {', '.join(map(_shown, wrong[:3]))} left out: not a path")
        return cls([p for p in paths if isinstance(p, str)], _budget(section, "ldsBudget", problems),
                   _budget(section, "scratchBudget", problems), problems)


def _budget(section: dict, key: str, problems: list[str]) -> int | None:
    value = section.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    problems.append(f"{SECTION}.{key} is {_shown(value)}: it takes a number of bytes (0 or more); no budget is checked")
    return None


def _shown(value) -> str:
    text = json.dumps(value) if isinstance(value, (int, float, str, bool, list, dict)) or value is None else "?"
    return text if len(text) <= 60 else text[:57] + "..."


def fs_path(uri: str) -> str | None:
    """The file-system path of a `file:` URI; None for other schemes and for what is not a URI."""
    try:
        return to_fs_path(uri)
    except ValueError:  # urllib refuses some netlocs ("file://[x/...")
        return None


def _load_lenses():
    """program.load_lenses, imported with the first code object (numpy, pyelftools and the DWARF
    modules: a workspace without code objects never loads them). What imports make lives as long as
    the process: frozen, the garbage collector no longer walks it in every full collection (with
    pygls's objects walked, a whole-file diagnostics pass took ~40% longer)."""
    first = f"{__package__}.program" not in sys.modules
    from .program import load_lenses
    if first:
        gc.freeze()
    return load_lenses


class AspaceLanguageServer(LanguageServer):
    """The lens's state on top of pygls's: settings, loaded code objects, diagnostics still to publish."""

    def __init__(self) -> None:
        super().__init__(NAME, VERSION, protocol_cls=AspaceProtocol)
        self.settings = Settings()
        self.lenses: list = []  # program.CodeObjectLens
        self.loaded_paths: list[str] = []
        self.load_errors: list[str] = []
        self.glob_notes: list[str] = []
        self._loaded = False
        self.discovery = discover.Discovery(_load_lenses)
        self._due: dict[str, None] = {}  # documents whose diagnostics are to be published, oldest first

    # --- code objects ---------------------------------------------------------------------------

    def roots(self) -> list[str]:
        ws = self.workspace
        roots = [fs_path(f.uri) for f in ws.folders.values()]
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

    def reload(self) -> None:
        lenses, errors = [], []
        paths = self.resolve_paths()
        if paths:
            load_lenses = _load_lenses()
            for path in paths:
                try:
                    lenses += load_lenses(path)
                except AspaceError as exc:
                    errors.append(f"{path}: {exc}")
        self.lenses, self.loaded_paths, self.load_errors = lenses, paths, errors
        self.discovery.forget()
        self._loaded = True
        for message in errors + self.glob_notes:
            self.log_warning(message)

    def watches(self, path: str) -> bool:
        path = os.path.normpath(path)
        if path in self.loaded_paths:
            return True
        if self.auto():
            # a new build, or one removed: any file named like a code object, or without a name
            # suffix (an executable); sources being edited are not
            name = os.path.basename(path)
            return name.endswith(discover.SUFFIXES) or "." not in name
        for pattern in self.settings.code_objects:
            for root in ([None] if os.path.isabs(pattern) else self.roots()):
                full = os.path.normpath(pattern if root is None else os.path.join(root, pattern))
                if fnmatch.fnmatch(path, full):
                    return True
        return False

    def auto(self) -> bool:
        """No code objects named: each source gets the one found in the workspace."""
        return not self.settings.code_objects

    def lenses_for(self, path: str) -> list:
        if not self.auto():
            return self.lenses
        return self.discovery.find(path, self.roots()).lenses

    def views(self, uri: str) -> list[features.FileView]:
        path = fs_path(uri)
        if not path:
            return []
        out = []
        for lens in self.lenses_for(path):
            try:
                name = lens.match_file(path)
            except AspaceError:
                continue
            if name is not None:
                out.append(features.FileView(lens, name))
        return out

    def lines(self, uri: str) -> list[str]:
        document = self.workspace.text_documents.get(unquote(uri))  # pygls keys them unquoted
        if document is not None:  # open in the editor: the client sent its text
            return document.lines
        # not open: from disk, a regular file only (never a FIFO or /dev/zero) and within the size limit
        path = fs_path(uri)
        if not path:
            return []
        try:
            data = read_regular(path, "source", limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
        except AspaceError:
            return []
        return data.decode("utf-8", errors="replace").splitlines(keepends=True)

    # --- talking to the client ------------------------------------------------------------------

    def log_warning(self, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))

    def report_server_error(self, error: Exception, source) -> None:
        """Errors pygls does not answer itself: a body that is not JSON gets a parse error (JSON-RPC's
        answer with a null id); a failing notification handler is one line on stderr (pygls answered a
        failing request already)."""
        if unreadable_body(error):
            self.protocol.answer_error(None, PARSE_ERROR, f"message body is not JSON: {str(error)[:200]}")
        elif source is not FeatureRequestError:
            say(f"a notification could not be handled ({error}); the server goes on")

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
                                         self.settings.scratch_budget, self.workspace.position_codec)
        except AspaceError as exc:
            self.log_warning(str(exc))
            diags = []
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))

    def refresh(self) -> None:
        caps = self.client_capabilities.workspace
        if caps is not None and caps.inlay_hint is not None and caps.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        for document in self.workspace.text_documents.values():
            self.schedule_diagnostics(document.uri)  # as the client wrote it (pygls keys them unquoted)
        self.protocol.notify(CHANGED, None)

    def code_objects(self, uri: str) -> dict:
        """What `aspace/codeObjects` answers: the code objects whose lenses name this source."""
        path = fs_path(uri) if isinstance(uri, str) else None
        if not path:
            return {"codeObjects": [], "from": "workspace" if self.auto() else "setting", "searched": 0, "note": None}
        if self.auto():
            found = self.discovery.find(path, self.roots())
            return {"codeObjects": [found.path] if found.path else [], "from": "workspace",
                    "searched": found.searched, "note": found.note}
        paths = {view.lens.path for view in self.views(uri) if view.lens.path}
        return {"codeObjects": sorted(paths), "from": "setting", "searched": len(self.loaded_paths),
                "note": "; ".join(self.load_errors + self.glob_notes) or None}

    def apply(self, settings: Settings | None) -> None:
        if settings is None:
            return
        for problem in settings.problems:
            self.log_warning(problem)
        # the client sends its settings at initialize and again when asked: load code objects only
        # when the list changed (budgets alone just redo the diagnostics)
        same_objects = settings.code_objects == self.settings.code_objects and self._loaded
        self.settings = settings
        if not same_objects:
            self.reload()
        self.refresh()


server = AspaceLanguageServer()


# --- lifecycle and workspace ----------------------------------------------------------------------

@server.feature(types.INITIALIZE)
def _initialize(ls: AspaceLanguageServer, params: types.InitializeParams) -> None:
    settings = Settings.from_client(params.initialization_options)
    if settings is not None:
        for problem in settings.problems:
            say(problem)  # (the client takes log messages only once initialized)
        ls.settings = settings
        ls.reload()


@server.feature(types.INITIALIZED)
def _initialized(ls: AspaceLanguageServer, params: types.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    watch = caps.did_change_watched_files if caps is not None else None
    if watch is not None and watch.dynamic_registration:
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")])
        ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
            id="aspace-code-objects", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))
    if caps is not None and caps.configuration:
        def configured(answer) -> None:
            if isinstance(answer, list) and answer:
                ls.apply(Settings.from_client({SECTION: answer[0]}))
        ls.workspace_configuration(types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]),
                                   configured)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def _configuration(ls: AspaceLanguageServer, params: types.DidChangeConfigurationParams) -> None:
    ls.apply(Settings.from_client(params.settings))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def _watched(ls: AspaceLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(ls.watches(fs_path(change.uri) or "") for change in params.changes):
        ls.reload()
        ls.refresh()


# --- documents (pygls applies opens, edits and closes) --------------------------------------------

@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def _opened(ls: AspaceLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule_diagnostics(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def _saved(ls: AspaceLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule_diagnostics(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
def _inlay_hints(ls: AspaceLanguageServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    uri, span = params.text_document.uri, params.range
    try:
        return features.inlay_hints(ls.views(uri), ls.lines(uri), span.start.line + 1, span.end.line + 1,
                                    ls.workspace.position_codec)
    except AspaceError as exc:
        ls.log_warning(str(exc))
        return []


@server.feature(types.TEXT_DOCUMENT_HOVER)
def _hover(ls: AspaceLanguageServer, params: types.HoverParams) -> types.Hover | None:
    uri, position = params.text_document.uri, params.position
    try:
        lines = ls.lines(uri)
        if position.line >= len(lines):
            return None
        column = ls.workspace.position_codec.position_from_client_units(lines, position).character
        return features.hover(ls.views(uri), lines, position.line, column)
    except AspaceError as exc:
        ls.log_warning(str(exc))
        return None


@server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
def _code_lens(ls: AspaceLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    try:
        return features.code_lenses(ls.views(params.text_document.uri))
    except AspaceError as exc:
        ls.log_warning(str(exc))
        return []


@server.feature(CODE_OBJECTS)
def _code_objects(ls: AspaceLanguageServer, params) -> dict:
    uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
    return ls.code_objects(uri)


def main() -> int:
    remove_temp_dirs_on_sigterm()
    sweep_dead_leftovers()  # what a killed server left in the temporary folder
    quiet_pygls()
    gc.freeze()  # pygls's and lsprotocol's ~600 classes, cattrs's hooks: see _load_lenses
    return serve_stdio(server, server.idle_step, server.has_idle_work)
