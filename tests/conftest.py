"""Shared fixtures: small tables, the seed-000 example, a CLI runner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import settings

from privlab.data import Table, examples

# Property tests draw the same examples on every run (CI must not flake on a new example);
# run with HYPOTHESIS_PROFILE=explore locally to search afresh.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _session_registry(tmp_path_factory):
    """Fixtures of a session's scope get a registry of the session's (never the user's
    home); each module, then each test, replaces it by its own."""
    saved = os.environ.get("PRIVLAB_REGISTRY")
    os.environ["PRIVLAB_REGISTRY"] = str(tmp_path_factory.mktemp("session-registry"))
    yield
    if saved is None:
        os.environ.pop("PRIVLAB_REGISTRY", None)
    else:
        os.environ["PRIVLAB_REGISTRY"] = saved


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """privlab's cache (JAX's compiled programs) in the run's temporary folder, never the
    user's home: one folder for every worker of the run (under pytest-xdist the workers'
    folders share a parent), so that a program compiled once serves the whole run."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    saved = os.environ.get("PRIVLAB_CACHE_DIR")
    os.environ["PRIVLAB_CACHE_DIR"] = str(shared / "privlab-cache")
    yield
    if saved is None:
        os.environ.pop("PRIVLAB_CACHE_DIR", None)
    else:
        os.environ["PRIVLAB_CACHE_DIR"] = saved


@pytest.fixture(scope="module", autouse=True)
def _module_registry(_session_registry, tmp_path_factory):
    """Fixtures of a module's scope save releases too: each module has a registry of its
    own (never the user's home), which each test then replaces by its own."""
    saved = {k: os.environ.get(k) for k in ("PRIVLAB_REGISTRY", "PRIVLAB_EPSILON_TOTAL")}
    os.environ["PRIVLAB_REGISTRY"] = str(tmp_path_factory.mktemp("module-registry"))
    os.environ.pop("PRIVLAB_EPSILON_TOTAL", None)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(autouse=True)
def registry(tmp_path_factory, monkeypatch) -> Path:
    """Every test has its own empty release registry and epsilon ledger (never the user's
    home; the CLI's subprocesses inherit the environment); the test may read it."""
    path = tmp_path_factory.mktemp("registry")
    monkeypatch.setenv("PRIVLAB_REGISTRY", str(path))
    monkeypatch.delenv("PRIVLAB_EPSILON_TOTAL", raising=False)
    return path


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
def cli(run):
    """``privlab ARGS`` for a test of a command's behaviour: in this process (as ``run``;
    a test that needs the command's own process, its signals or its interpreter's exit,
    calls :func:`run_cli`)."""
    return run


class CliResult(NamedTuple):
    """What a CLI run gave: unpack it (code, out, err) or read its fields."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(capsys, monkeypatch):
    """Run ``privlab ARGS`` in this process (saves the interpreter start-up per call); the
    signal handlers the CLI installs, and the registry a ``--registry`` option chose, are
    restored afterwards (a later test of the same worker would otherwise use it)."""
    from privlab._registry import use_registry
    from privlab.cli import main

    def _run(*args) -> CliResult:
        monkeypatch.setattr("sys.argv", ["privlab", *map(str, args)])
        capsys.readouterr()
        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        finally:
            for s, h in saved.items():
                signal.signal(s, h)
            use_registry(None)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return _run


def skewed_anatomy_frame():
    """6,000 rows sorted by s (A: 3,000, B: 2,000, C: 1,000); x says whether a row is in the
    first or the second half of its value's rows, so an Anatomy engine whose ranks within a
    value followed the input order would show in the groups the rows of A join."""
    import numpy as np
    import pandas as pd

    counts = {"A": 3000, "B": 2000, "C": 1000}
    s = np.concatenate([[v] * c for v, c in counts.items()])
    x = np.concatenate([np.arange(c) >= c // 2 for c in counts.values()]).astype(int)
    return pd.DataFrame({"x": x, "s": s})


def input_order_ranks(pdf, seed: int = 9):
    """The power check beside skewed_anatomy_frame's tests: with ranks that followed the
    input order, the groups A's rows join would depend on x.  Returns the value counts, the
    schedule (:func:`~privlab.publish.anatomy_core.group_schedule`, l = 2) and the p-value of
    that dependence (a chi-square test of independence)."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    from privlab.publish.anatomy_core import group_schedule

    counts = pdf["s"].value_counts().reindex(["A", "B", "C"]).to_numpy()
    sched = group_schedule(counts, 2, np.random.default_rng(seed))
    members = pd.Series(np.repeat([1, 2, 4], counts)).groupby(sched).sum().to_numpy()
    kind_in_order = members[sched[: counts[0]]]
    table = pd.crosstab(pdf["x"].to_numpy()[: counts[0]], kind_in_order).to_numpy()
    return counts, sched, stats.chi2_contingency(table).pvalue


def reseal(directory: Path, meta: dict | None = None) -> None:
    """Write ``meta`` (default: the folder's own) as ``directory/release.json`` with every
    table's SHA-256 and row count and the file's own digest recomputed: a release edited by
    someone who knows the format, to test the checks behind the digests."""
    import json

    import pandas as pd

    from privlab._io import sha256_path
    from privlab._release_files import DIGEST_FIELD, meta_digest

    path = Path(directory) / "release.json"
    meta = json.loads(path.read_text()) if meta is None else meta
    for spec in meta.get("tables", {}).values():
        f = Path(directory) / spec["file"]
        if f.is_file():
            spec["sha256"] = sha256_path(f)
            if isinstance(spec.get("rows"), int) and f.suffix == ".csv":
                spec["rows"] = len(pd.read_csv(f, dtype=str, keep_default_na=False))
    meta[DIGEST_FIELD] = {"sha256": meta_digest(meta)}
    path.write_text(json.dumps(meta))


def fails(r, *needles) -> None:
    """Assert that a CLI run failed with exit status 2 and one line holding ``needles``."""
    code, out, err = r.returncode, r.stdout, r.stderr  # CliResult or CompletedProcess
    assert code == 2, (code, out, err)
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]


# -- markers: what `make test-fast` leaves out ------------------------------------------------
#: modules that drive the command line (subprocesses, signals, concurrent writers, the README
#: tour): `system`
SYSTEM_MODULES = frozenset(
    {
        "test_attack_cli",
        "test_alphabeta_cli",
        "test_audit",
        "test_bad_input",
        "test_cli",
        "test_dp_cli",
        "test_dp_tree_cli",
        "test_killed_audits",
        "test_pram_bn_cli",
        "test_pram_cli",
        "test_readme",
        "test_robustness",
    }
)
#: the reproductions (quick runs of the registered experiments): `slow`
SLOW_MODULES = frozenset(
    {
        "test_bn_experiments",
        "test_dp_experiments",
        "test_experiments_quick",
        "test_small_reproductions",
    }
)
#: unit tests that take seconds on one idle core (measured with --durations): `slow`
SLOW_TESTS = frozenset(
    {
        "tests/test_additive_noise.py::test_interval_matrix_invariants",
        "tests/test_additive_noise.py::test_pram_gamma_additive_rows",
        "tests/test_anonymeter_adapter.py::test_knn_and_random_world",
        "tests/test_attacks.py::test_every_sampler_matches_exact_enumeration",
        "tests/test_attacks_beyond_anatomy.py::"
        "test_rows_carry_every_field_and_intervals_hold_their_estimates",
        "tests/test_dp_forest.py::test_neighbouring_datasets_exact_ratio_and_sampled_frequencies",
        "tests/test_dp_naive_bayes.py::test_cross_validation_and_grid_search_on_adult_are_finite",
        "tests/test_dp_tree.py::test_attribute_selection_frequencies_match_theory",
        "tests/test_population_attack.py::"
        "test_overlapping_cells_make_membership_latent_and_match_the_enumeration",
        "tests/test_marginals_combinatorial.py::"
        "test_no_published_collection_pins_a_combination_below_k_many_tables",
        "tests/test_pram_apriori.py::test_apriori_fig75_quick",
        "tests/test_release.py::test_reload_and_evaluate_with_the_custody_directory_alone",
        "tests/test_custody_registry.py::test_seeded_dp_tree_brute_force_over_seeds_finds_none",
        "tests/test_limits.py::test_anatomy_count_memory_estimate_bounds_the_measured_peak",
        "tests/test_limits.py::test_definetti_memory_estimate_bounds_the_measured_peak",
        "tests/test_commit_group.py::test_simultaneous_commit_pairs_never_mix_release_and_custody",
    }
)


#: the modules of the longest runs (measured with --durations=0 on 2 cores), run first so
#: that the workers end on short tests instead of one waiting for the other's long fixture
FIRST_MODULES = (
    "test_readme",
    "test_attacks_beyond_anatomy",
    "test_spark",
    "test_bad_input",
    "test_robustness",
    "test_experiments_quick",
    "test_audit",
    "test_report",
)


def pytest_collection_modifyitems(config, items):
    """Mark every test ``system`` (drives the CLI: a module above, or the ``cli`` / ``run``
    fixtures), ``spark`` (starts a JVM) or ``slow`` (a reproduction or a unit test of seconds),
    so that ``pytest -m "not slow and not system and not spark"`` is the fast inner loop; put
    :data:`FIRST_MODULES` first (each module's tests stay together, in their order)."""
    rank = {m: i for i, m in enumerate(FIRST_MODULES)}

    def first(item):
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        return rank.get(module, len(rank))

    items.sort(key=first)  # stable: every other test keeps its place
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if module == "test_spark":
            item.add_marker(pytest.mark.spark)
        if module in SYSTEM_MODULES or fixtures & {"cli", "run"}:
            item.add_marker(pytest.mark.system)
        if module in SLOW_MODULES or item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
