"""How many examples the long property tests draw: all of them where CI is set (.ci/run sets it), a quarter
in a contributor's `make test` (the same tests, fewer rounds; as conftest.py's `ci` mark does for the
numbered fuzz rounds)."""

from __future__ import annotations

import os


def rounds(ci: int) -> int:
    return ci if os.environ.get("CI") else max(50, ci // 4)
