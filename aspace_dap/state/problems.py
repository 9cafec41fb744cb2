"""What the validator reports: one problem per offending field, named by its JSON path."""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
# A warning does not stop a dump from loading (e.g. a file shorter than declared:
# its tail is simply unavailable).
WARNING = "warning"


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == WARNING else ""
        return f"{prefix}{self.path}: {self.message}"
