"""The experiments' catalogue (issue 38, 7): listing them imports none of them, and it
lists exactly what the modules register."""

from __future__ import annotations

import subprocess
import sys

import pytest

from privlab.errors import PrivlabError
from privlab.experiments import REGISTRY, catalogue, discover, run_experiment
from privlab.experiments._catalogue import CATALOGUE


def test_the_catalogue_is_the_registry():
    """Fails when an experiment is added, renamed or retitled without the catalogue (run
    ``PYTHONPATH=src .venv/bin/python tools/experiments_catalogue.py``)."""
    registered = {e.id: (e.func.__module__.rsplit(".", 1)[1], e.title, e.source)
                  for e in discover().values()}  # fmt: skip
    assert CATALOGUE == registered
    assert catalogue() == [{"id": i, "title": t, "source": s}
                           for i, (_, t, s) in sorted(registered.items())]  # fmt: skip


def test_listing_imports_no_experiment_and_no_kernel():
    code = (
        "import sys\nfrom privlab.experiments import catalogue\nassert catalogue()\n"
        "print(sorted(m for m in sys.modules if m.startswith('privlab.experiments.')"
        " or m.split('.')[0] in ('numba', 'jax', 'sklearn')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['privlab.experiments._catalogue']"


def test_running_one_imports_its_module_only(tmp_path):
    """`reproduce ID` imports the experiment's own module; an unknown id lists the known."""
    code = (
        "import sys\nfrom privlab.experiments import _lookup\n_lookup('kifer-table6')\n"
        "print(sorted(m for m in sys.modules if m.startswith('privlab.experiments.')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    module = CATALOGUE["kifer-table6"][0]
    assert r.stdout.strip() == str(sorted(["privlab.experiments._catalogue",
                                           f"privlab.experiments.{module}"]))  # fmt: skip
    with pytest.raises(PrivlabError, match=r"unknown experiment 'no-such'; known: .*kifer"):
        run_experiment("no-such", out=tmp_path / "x")
    assert "kifer-table6" in REGISTRY and not (tmp_path / "x").exists()
