"""Convergence is reported, not assumed: R-hat and ESS of the deFinetti chains."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privlab.attacks.convergence import ESS_MIN, R_HAT_LIMIT, diagnose, ess_bulk, split_rhat
from privlab.attacks.definetti import run_definetti
from privlab.errors import ConvergenceWarning
from privlab.publish import anatomize


def test_split_rhat_accepts_agreeing_chains_and_rejects_disagreeing_ones():
    g = np.random.default_rng(0)
    same = g.normal(size=(4, 2000))
    assert split_rhat(same) < 1.01
    assert ess_bulk(same) > 0.8 * same.size  # independent draws: ESS about the draw count
    apart = same + np.array([[0.0], [0.0], [1.0], [1.0]])  # two chains in another mode
    assert split_rhat(apart) > R_HAT_LIMIT
    # an autocorrelated chain (AR(1), rho = 0.95): ESS about n (1 - rho) / (1 + rho)
    x = np.zeros((4, 4000))
    for t in range(1, 4000):
        x[:, t] = 0.95 * x[:, t - 1] + g.normal(size=4)
    assert 0.5 * 16000 * 0.05 / 1.95 < ess_bulk(x) < 2.0 * 16000 * 0.05 / 1.95


def test_degenerate_traces():
    assert split_rhat(np.ones((3, 50))) == 1.0 and ess_bulk(np.ones((3, 50))) == 150
    stuck = np.repeat([[0.0], [1.0]], 50, axis=1)  # each chain on its own value forever
    assert split_rhat(stuck) == np.inf and ess_bulk(stuck) == 0.0
    assert np.isnan(split_rhat(np.zeros((2, 3))))  # too short to split


def test_diagnose_judges_the_at_risk_people():
    g = np.random.default_rng(1)
    ll = g.normal(size=(2, 1000))
    traces = g.integers(0, 2, size=(2, 1000, 3))
    traces[0, :, 2], traces[1, :, 2] = 0, 1  # person 2: the chains disagree
    top = np.array([1, 1, 0])
    ok = diagnose(ll, traces, top, at_risk=np.array([True, True, False]))
    assert ok.converged and ok.n_targets == 2 and ok.rhat_targets < R_HAT_LIMIT
    bad = diagnose(ll, traces, top, at_risk=np.array([False, True, True]))
    assert not bad.converged and bad.rhat_targets == np.inf
    assert "NOT converged" in bad.message("the attack") and "R-hat" in bad.message()
    assert ESS_MIN == 400 and not diagnose(ll[:, :100]).converged  # 200 draws: ESS too small


@pytest.fixture(scope="module")
def small_release():
    g = np.random.default_rng(3)
    n = 600
    a = g.choice(list("xyz"), n)
    s = np.where(g.random(n) < 0.7, np.char.add("s", a), g.choice(["sx", "sy", "sz", "t"], n))
    import pandas as pd

    df = pd.DataFrame({"a": a, "b": g.choice(["u", "v"], n), "s": s})
    return anatomize(df, qi=["a", "b"], sensitive="s", l=2, rng=np.random.default_rng(4))


def test_parallel_chains_give_the_same_result_for_a_seed(small_release):
    one = run_definetti(small_release, iterations=400, chains=3, rng=7, workers=1, warn=False)
    two = run_definetti(small_release, iterations=400, chains=3, rng=7, workers=3, warn=False)
    assert np.array_equal(one.posterior.probs, two.posterior.probs)
    assert np.array_equal(one.loglik, two.loglik)


def test_a_short_run_says_it_has_not_converged(small_release):
    with pytest.warns(ConvergenceWarning, match="NOT converged"):
        run = run_definetti(small_release, iterations=30, chains=2, rng=1)
    assert run.posterior.diagnostics["converged"] is False
    assert "not reliable" in run.posterior.diagnostics["convergence"]


def test_until_converged_stops_when_the_chains_agree(small_release):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        run = run_definetti(small_release, iterations=None, chains=4, rng=2, max_seconds=120)
    d = run.posterior.diagnostics
    assert d["converged"] and d["stopped_by"] == "converged" and d["mode"] == "until converged"
    assert d["rhat_loglik"] < R_HAT_LIMIT and d["ess_loglik"] >= ESS_MIN
    assert d["iterations"] in (1000, 2000, 4000, 8000) and d["burn_in"] == d["iterations"] // 2


def test_until_converged_respects_the_time_budget(small_release, monkeypatch):
    import privlab.attacks.definetti as definetti

    monkeypatch.setattr(definetti, "FIRST_STAGE", 20)  # far too short to converge
    with pytest.warns(ConvergenceWarning, match="time budget"):
        run = run_definetti(small_release, iterations=None, chains=2, rng=2, max_seconds=1e-6)
    d = run.posterior.diagnostics
    assert d["stopped_by"] == "time budget" and d["iterations"] == 20 and not d["converged"]
