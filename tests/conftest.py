"""Shared fixtures: small tables, the seed-000 example, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from privlab.data import Table, examples

# Property tests draw the same examples on every run (CI must not flake on a new example);
# run with HYPOTHESIS_PROFILE=explore locally to search afresh.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def table_1_1() -> Table:
    """Seed 000, Table 1.1 (== Table 3.1): Gender, Age, Zip Code, Disease."""
    return examples.table_1_1()


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m privlab.cli ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "privlab.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def cli():
    return run_cli
