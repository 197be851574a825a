"""Convergence is reported, not assumed: R-hat and ESS of the deFinetti chains."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attack_helpers import mirror_modes_release
from privlab.attacks.convergence import (
    ESS_MIN,
    R_HAT_LIMIT,
    TOP_SPREAD_LIMIT,
    diagnose,
    ess_bulk,
    split_rhat,
    top_agreement,
)
from privlab.attacks.definetti import run_definetti
from privlab.attacks.exact import exact_posterior
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


def test_diagnose_judges_every_tracked_person_not_only_those_at_risk():
    g = np.random.default_rng(1)
    ll = g.normal(size=(2, 1000))
    traces = g.integers(0, 2, size=(2, 1000, 3))
    top = np.array([1, 1, 0])
    ok = diagnose(ll, traces, top, at_risk=np.array([True, True, False]))
    assert ok.converged and ok.n_targets == 3 and ok.rhat_targets < R_HAT_LIMIT
    assert ok.top_disagree == 0 and ok.n_at_risk == 2
    traces[0, :, 2], traces[1, :, 2] = 0, 1  # person 2, not at risk: the chains disagree
    bad = diagnose(ll, traces, top, at_risk=np.array([True, True, False]))
    assert not bad.converged and bad.rhat_targets == np.inf and bad.n_targets == 3
    assert bad.top_disagree == 1 and bad.top_spread == 1.0
    assert "NOT converged" in bad.message("the attack") and "R-hat" in bad.message()
    assert "different most probable values for 1 of 3" in bad.message()
    assert ESS_MIN == 400 and not diagnose(ll[:, :100]).converged  # 200 draws: ESS too small


def test_top_agreement_counts_separated_modes_not_near_ties():
    g = np.random.default_rng(2)
    draws = 4000
    # person 0: a near tie (0.5 / 0.5) in both chains: the argmaxes may differ, the spread is
    # Monte Carlo noise; person 1: chain 0 gives value 2 with 0.9, chain 1 value 0 with 0.9
    t = np.zeros((2, draws, 2), dtype=np.int16)
    t[:, :, 0] = g.integers(0, 2, size=(2, draws))
    t[0, :, 1] = np.where(g.random(draws) < 0.9, 2, 0)
    t[1, :, 1] = np.where(g.random(draws) < 0.9, 0, 2)
    disagree, spread = top_agreement(t, n_values=3)
    assert disagree == 1 and 0.8 - 0.05 < spread < 0.8 + 0.05
    alone, _ = top_agreement(t[:, :, :1], n_values=3)
    assert alone == 0
    # chains whose shares of the top value differ by just under / over the limit
    for gap, want in ((TOP_SPREAD_LIMIT - 0.02, 0), (TOP_SPREAD_LIMIT + 0.02, 1)):
        u = np.zeros((2, 1000, 1), dtype=np.int16)
        u[0, : round(1000 * (0.5 + gap / 2)), 0] = 1  # chain 0: value 1 on top
        u[1, : round(1000 * (0.5 - gap / 2)), 0] = 1  # chain 1: value 0 on top
        assert top_agreement(u, n_values=2)[0] == want, gap
    assert top_agreement(t[:1]) == (0, 0.0)  # one chain: nothing to compare


def test_diagnose_sees_chains_that_share_the_pooled_top_but_not_their_own():
    # each chain gives value 0 the same 0.4, so the indicator of the pooled top (value 0)
    # agrees between the chains; their own top values (1 or 0 against 2) do not
    g = np.random.default_rng(5)
    draws = 4000
    t = np.stack([g.choice(3, size=draws, p=[0.4, 0.4, 0.2]),
                  g.choice(3, size=draws, p=[0.4, 0.15, 0.45])])[:, :, None]  # fmt: skip
    ll = g.normal(size=(2, draws))
    d = diagnose(ll, t, np.array([0]), n_values=3)
    assert d.rhat_targets < R_HAT_LIMIT and d.rhat_loglik < R_HAT_LIMIT and d.ess_loglik > ESS_MIN
    assert d.top_disagree == 1 and abs(d.top_spread - 0.25) < 0.05 and not d.converged
    assert "different most probable values for 1 of 1" in d.message()
    same = np.stack([g.choice(3, size=draws, p=[0.4, 0.4, 0.2]) for _ in range(2)])[:, :, None]
    assert diagnose(ll, same, np.array([0]), n_values=3).converged


# -- a release with symmetric modes (issue 29, part 8) ----------------------------------------
@pytest.fixture(scope="module")
def mirror():
    return mirror_modes_release(blocks=16, groups=20)


def test_the_mirror_release_has_posterior_one_half():
    small = mirror_modes_release(blocks=2, groups=4)  # 2 ** 8 assignments: enumerable
    probs = exact_posterior(small).probs
    assert np.allclose(probs[probs > 0], 0.5) and np.allclose(probs.sum(axis=1), 1.0)
    assert (probs > 0).sum(axis=1).tolist() == [2] * small.n_rows


@pytest.mark.parametrize("seed", range(8))
def test_chains_in_mirror_modes_never_pass_as_converged(mirror, seed):
    """Judged on the at-risk people alone, 7 of 8 seeds of such a release passed (with four
    blocks): the people of the blocks the chains disagree on are not at risk in the pooled
    posterior, and mirror modes have the same log-likelihood."""
    with pytest.warns(ConvergenceWarning, match="different most probable values"):
        run = run_definetti(mirror, iterations=2000, chains=2, rng=seed, keep_chains=True)
    d = run.posterior.diagnostics
    assert d["converged"] is False and "NOT converged" in d["convergence"]
    assert d["top_disagreements"] > 0 and d["top_spread"] > 0.9
    assert d["rhat_tracked"] > R_HAT_LIMIT and d["tracked_people"] == 128
    assert d["rhat_loglik"] < R_HAT_LIMIT  # the log-likelihood cannot tell mirror modes apart
    # the premise: the chains sit in different modes on some blocks, so people there get 0.5
    # pooled, and agree on others, whose people look at risk (1.0 where the truth is 0.5)
    gap = np.abs(run.chain_probs[0] - run.chain_probs[1]).max(axis=1)
    assert (gap > 0.9).any() and d["tracked_at_risk"] > 0
    assert np.abs(run.posterior.probs.max(axis=1) - 0.5).max() > 0.45


def test_a_report_on_chains_in_mirror_modes_cannot_pass(mirror):
    from privlab.report import PASS, REVIEW, build, parse_config

    # every risk limit wide open: only the attack's convergence can keep the verdict off PASS
    rep = build(mirror, config=parse_config({"thresholds": {"max_at_risk_share": 1.0}}))
    assert rep.diagnostics["attacks"]["definetti"]["converged"] is False
    assert rep.verdict["level"] == REVIEW
    held = [f["reason"] for f in rep.verdict["findings"] if f["level"] != PASS]
    assert held and all("did not converge" in r for r in held)


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
