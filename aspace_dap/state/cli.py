"""`aspace-dap state validate PATH` (a dump's problems, or a one-line summary) and
`aspace-dap state convert CORE FOLDER` (a core dump written as a dump folder)."""

from __future__ import annotations

import json

from ..errors import AspaceError
from .problems import Problem
from .reader import load_state
from .validate import RulesFor, validate_state


def validate_command(path: str, json_output: bool = False, rules_for: RulesFor | None = None) -> int:
    """Exit status 0 when the dump loads (warnings allowed), 1 when it has errors. `rules_for`
    gives each vendor's register needs (the adapters', supplied by the command line)."""
    from .formats import is_core_file

    if is_core_file(path):  # a GPU core dump: checked by opening it (its readers validate as they go)
        problems = []
        summary = None
        try:
            with load_state(path) as state:
                summary = state.summary()
                problems = [Problem(str(path), w, "warning") for w in state.warnings]
        except AspaceError as exc:
            where = getattr(exc, "path", "") or str(path)
            message = str(exc).removeprefix(f"{where}: ")
            problems.append(Problem(where, message))
        return _report(problems, summary, json_output)
    problems = validate_state(path, rules_for)
    summary = None
    if not any(p.is_error for p in problems):
        try:
            with load_state(path) as state:
                summary = state.summary()
        except AspaceError as exc:  # e.g. a zip member that cannot be extracted
            problems.append(Problem(getattr(exc, "path", "") or str(path), str(exc)))
    return _report(problems, summary, json_output)


def _report(problems: list[Problem], summary: str | None, json_output: bool) -> int:
    ok = not any(p.is_error for p in problems)
    if json_output:
        print(json.dumps({"ok": ok, "summary": summary,
                          "problems": [{"path": p.path, "message": p.message, "severity": p.severity}
                                       for p in problems]}, indent=1))
    else:
        for problem in problems:
            print(problem)
        if ok:
            print(f"ok: {summary}")
    return 0 if ok else 1


def convert_command(source: str, folder: str) -> int:
    """Open `source` (any format load_state knows) and save it as a new dump folder; never touches `source`."""
    import os
    import sys

    if os.path.exists(folder):
        print(f"error: {folder} already exists; name a new folder", file=sys.stderr)
        return 1
    try:
        with load_state(source) as state:
            out = state.save(folder)
            summary = state.summary()
            not_kept = list(state.not_kept)
    except AspaceError as exc:
        where = getattr(exc, "path", "")
        print(f"error: {exc}" + (f" ({where})" if where and where not in str(exc) else ""), file=sys.stderr)
        return 1
    print(f"wrote {out}: {summary}")
    for what in not_kept:
        print(f"not kept (the dump format has no place for it): {what}")
    return 0
