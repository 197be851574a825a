"""Shared fixtures: small tables, the seed-000 example, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

from privlab.data import Table

# Property tests draw the same examples on every run (CI must not flake on a new example);
# run with HYPOTHESIS_PROFILE=explore locally to search afresh.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Seed 000, Table 1.1 (== Table 3.1): Gender, Age, Zip Code, Disease.
TABLE_1_1 = [
    ("M", 25, "90210", "AIDS"),
    ("F", 43, "90211", "AIDS"),
    ("M", 29, "90212", "Cancer"),
    ("M", 41, "90213", "AIDS"),
    ("F", 41, "07620", "Cancer"),
    ("F", 40, "33109", "Cancer"),
    ("F", 40, "07620", "Flu"),
    ("F", 24, "33109", "None"),
    ("M", 48, "07620", "None"),
    ("F", 40, "07620", "Flu"),
    ("M", 48, "33109", "Flu"),
    ("M", 49, "33109", "None"),
]


@pytest.fixture
def table_1_1() -> Table:
    df = pd.DataFrame(TABLE_1_1, columns=["gender", "age", "zip", "disease"])
    return Table.from_pandas(df, qi=["gender", "age", "zip"], sensitive="disease")


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
