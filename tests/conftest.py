"""What every test module shares: tests marked `ci` (more rounds of a fuzz test that runs its first rounds
everywhere) run only where the environment variable CI is set (.ci/run sets it), and are skipped, saying
so, in a contributor's `make test`."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="more rounds of a fuzz test whose first rounds ran: they run where CI is set "
                                   "(CI=1 make test; .ci/run sets it)")
    for item in items:
        if "ci" in item.keywords:
            item.add_marker(skip)
