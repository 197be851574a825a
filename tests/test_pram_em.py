"""The certified EM of PRAM counts (issue 31, item 3) and the weighted pocket's use of it.

Oracles: the closed form (the moment estimate is the MLE when it is interior), plain EM as
Ma 2006 Sec. 2.4.2 writes it, run in the test until its own duality gap certifies it, and the
duality-gap bound itself checked against the maximum on random problems (hypothesis).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.errors import ConvergenceWarning, MatrixError, ParameterError
from privlab.estimate.pram import Identity, em_estimate, kron_matrix
from privlab.estimate.pram_em import GAP_TOL, duality_gap, em_certified
from privlab.learn import pram_bn, pram_pocket
from privlab.learn.pram_bn import PramBayesNetEstimator, PramData, estimate_family
from privlab.learn.pram_pocket import EM_GAP_TOL, PramPocketClassifier
from privlab.publish.randomization import binary_symmetric_matrix, m_category_matrix
from test_pram_pocket import CATS, _lenses


def _plain_em_oracle(obs, p, tol=1e-7, max_iter=1_000_000):
    """EM from ``N~ / N`` (the thesis's start), stopped by its own duality gap ``tol``;
    returns ``(theta, steps, converged)``."""
    n = obs.sum()
    theta = obs / n
    for it in range(1, max_iter + 1):
        tt = p.T @ theta
        g = p @ np.divide(obs, n * tt, out=np.zeros_like(obs), where=tt > 0)
        if n * (g.max() - 1.0) <= tol:
            return theta, it, True
        theta = theta * g
        theta /= theta.sum()
    return theta, max_iter, False


def _lenses_counts(p, seed):
    """Lenses' observed counts over (class, X1..X4 randomized) and the full matrix."""
    x, y, xr, mats = _lenses(p, seed)
    k = np.ravel_multi_index(tuple((xr - 1).T), (3, 2, 2, 2))
    obs = np.bincount(y * 24 + k, minlength=48).astype(float)
    rand = kron_matrix([mats[j] for j in range(4)])
    return x, y, xr, mats, obs, rand


def _loglik(obs, p, theta):
    tt = p.T @ theta
    return float(obs[obs > 0] @ np.log(tt[obs > 0]))


# -- deterministic limits ------------------------------------------------------------------------
@pytest.mark.parametrize("strata", [False, True])
def test_the_mle_is_the_moment_estimate_when_that_is_interior(strata):
    # observed counts equal to their expectation P^T N: the moment estimate is N exactly,
    # positive, hence the MLE (Ma Sec. 2.4.2); the estimate must find it
    true = np.array([300.0, 200.0, 500.0, 1000.0, 40.0, 960.0])
    mats = [m_category_matrix(3, 0.4), binary_symmetric_matrix(0.3)]
    factors = [Identity(2), *mats] if strata else mats
    if strata:
        true = np.concatenate([true, true[::-1] * 2])
    obs = kron_matrix(factors).T @ true
    res = em_certified(obs, factors)
    assert res.converged and 0 <= res.gap <= GAP_TOL
    np.testing.assert_allclose(res.counts, true, atol=1e-3 * true.sum() / true.size)
    assert res.theta.sum() == pytest.approx(1.0) and np.all(res.theta >= 0)
    assert duality_gap(obs, factors, true) == pytest.approx(0.0, abs=1e-9)


def test_no_randomization_gives_the_observed_proportions_at_once():
    obs = np.array([3.0, 0.0, 5.0, 2.0])
    res = em_certified(obs, [np.eye(2), np.eye(2)])
    np.testing.assert_allclose(res.theta, obs / obs.sum(), atol=1e-6)
    assert res.converged and res.gap <= GAP_TOL


# -- the long-run oracle -----------------------------------------------------------------------
@pytest.mark.parametrize(("p", "seed"), [(0.4, 0), (0.4, 3), (0.5, 0)])
def test_certified_em_equals_a_long_plain_em_that_certifies_itself(p, seed):
    *_, obs, rand = _lenses_counts(p, seed)
    full = np.kron(np.eye(2), rand)
    ref, _, ok = _plain_em_oracle(obs, full)
    assert ok  # the oracle reports its own convergence: duality gap <= 1e-7 nats
    res = em_certified(obs, [Identity(2), rand])
    assert res.converged and res.gap <= GAP_TOL
    # the strata's gaps add up to at most the whole joint's gap (both bound what is left)
    assert res.gap <= duality_gap(obs, [Identity(2), rand], res.theta) + 1e-12
    assert res.loglik == pytest.approx(_loglik(obs, full, res.theta), abs=1e-9)
    assert res.loglik >= _loglik(obs, full, ref) - GAP_TOL
    if p < 0.5:  # invertible P: the maximizer is unique
        assert np.abs(res.counts - ref * obs.sum()).max() < 0.01
    else:  # singular P: a face of maximizers, unique in the randomized distribution
        assert np.abs(full.T @ (res.theta - ref)).max() * obs.sum() < 0.01
    # what the pocket ran before (plain EM capped at 5,000 steps from the clipped moment
    # start, stopped by the step size) is far from the maximum at p = 0.4 and says converged
    # or not without knowing
    if p < 0.5:
        old = em_estimate(obs, [Identity(2), rand], init="moment", tol=1e-8, max_iter=5000)
        assert np.abs(old.counts - ref * obs.sum()).max() > 20  # records
        assert duality_gap(obs, [Identity(2), rand], old.theta) > 1.0  # nats, at most


def test_an_unconverged_run_says_so_with_its_gap():
    *_, obs, rand = _lenses_counts(0.4, 0)
    res = em_certified(obs, [Identity(2), rand], max_steps=3)
    assert not res.converged and res.iterations <= 3 + 1  # each stratum takes a step
    assert res.gap > GAP_TOL
    assert res.gap <= duality_gap(obs, [Identity(2), rand], res.theta) + 1e-12
    one = em_certified(obs, [np.kron(np.eye(2), rand)], max_steps=3)  # no strata split
    assert not one.converged and one.iterations == 3
    assert one.gap == pytest.approx(duality_gap(obs, [np.kron(np.eye(2), rand)], one.theta))


# -- invariants -----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.sampled_from([2, 3, 4]),
    p=st.floats(0.0, 0.6),
    n=st.integers(1, 400),
)
def test_duality_gap_bounds_the_loglik_still_to_gain(seed, k, p, n):
    g = np.random.default_rng(seed)
    mats = [m_category_matrix(k, p), g.dirichlet(np.ones(2) * 2, size=2)]
    obs = g.multinomial(n, g.dirichlet(np.ones(2 * k))).astype(float)
    best = em_certified(obs, mats, gap_tol=1e-9)
    full = kron_matrix(mats)
    assert best.converged and np.all(best.theta >= 0) and best.theta.sum() == pytest.approx(1)
    for _ in range(5):
        theta = g.dirichlet(np.ones(2 * k))
        assert _loglik(obs, full, theta) <= best.loglik + 1e-9
        # concavity: the gap at theta bounds what the maximum gains over it
        assert best.loglik - _loglik(obs, full, theta) <= duality_gap(obs, mats, theta) + 1e-7
    # and no start ends lower: EM's fixed point from N~ / N has the same likelihood
    other = em_certified(obs, mats, gap_tol=1e-9, init="observed")
    assert other.loglik == pytest.approx(best.loglik, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"gap_tol": 0.0}, "gap_tol"),
        ({"gap_tol": float("nan")}, "gap_tol"),
        ({"max_steps": 0}, "max_steps"),
        ({"init": "median"}, "median"),
        ({"init": np.ones(3)}, "start"),
    ],
)
def test_bad_parameters_name_the_value(kwargs, words):
    with pytest.raises(ParameterError, match=words):
        em_certified(np.ones(4), [binary_symmetric_matrix(0.2)] * 2, **kwargs)


def test_bad_counts_and_matrices_are_refused():
    with pytest.raises(ParameterError, match="4 finite"):
        em_certified(np.ones(3), [binary_symmetric_matrix(0.2)] * 2)
    with pytest.raises(ParameterError, match="sum to 0"):
        em_certified(np.zeros(4), [binary_symmetric_matrix(0.2)] * 2)
    with pytest.raises(MatrixError):
        em_certified(np.ones(2), [np.array([[0.5, 0.6], [0.5, 0.5]])])


# -- the weighted pocket ---------------------------------------------------------------------
@pytest.mark.parametrize(("p", "seed"), [(0.4, 0), (0.4, 3)])
def test_the_pocket_learns_from_the_converged_joint(p, seed):
    _, y, xr, mats, obs, rand = _lenses_counts(p, seed)
    ref, _, ok = _plain_em_oracle(obs, np.kron(np.eye(2), rand))
    assert ok
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = PramPocketClassifier(n_iter=500, categories=CATS, rng=0).fit(xr, y, matrices=mats)
    assert clf.em_converged_ and 0 <= clf.em_gap_ <= EM_GAP_TOL and clf.em_iterations_ > 0
    s = clf.samples_
    cell = s.codes[:, 4] * 24 + np.ravel_multi_index(tuple(s.codes[:, :4].T), (3, 2, 2, 2))
    assert np.abs(s.joint - ref[cell] * obs.sum()).max() < 0.01
    assert clf.to_dict()["em_converged"] is True and clf.to_dict()["em_gap"] <= EM_GAP_TOL


def test_the_pocket_warns_when_its_em_stops_unconverged(monkeypatch):
    _, y, xr, mats = _lenses(0.4, 0)
    monkeypatch.setattr(pram_pocket, "EM_MAX_STEPS", 4)
    with pytest.warns(ConvergenceWarning, match="EM has NOT converged after"):
        clf = PramPocketClassifier(n_iter=200, categories=CATS, rng=0).fit(xr, y, matrices=mats)
    assert clf.em_converged_ is False and clf.em_gap_ > EM_GAP_TOL
    assert clf.to_dict()["em_converged"] is False


def test_the_plain_pocket_runs_no_em():
    _, y, xr, mats = _lenses(0.4, 0)
    clf = PramPocketClassifier(weighted=False, n_iter=200, categories=CATS, rng=0)
    clf.fit(xr, y, matrices=mats)
    assert clf.em_converged_ and clf.em_iterations_ == 0 and np.isnan(clf.em_gap_)


# -- the Bayesian network's EM estimator -------------------------------------------------------
def _bn_data(seed=0, n=3000):
    g = np.random.default_rng(seed)
    a = g.integers(0, 2, n)
    b = np.where(g.random(n) < 0.8, a, 1 - a)
    codes = np.column_stack([a, b])
    mats = {"A": binary_symmetric_matrix(0.45), "B": binary_symmetric_matrix(0.45)}
    rand = np.column_stack(
        [np.where(g.random(n) < 0.45, 1 - codes[:, j], codes[:, j]) for j in range(2)]
    )
    return PramData.from_codes(rand, mats, names=["A", "B"])


def test_the_network_reports_its_em_convergence():
    data = _bn_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = PramBayesNetEstimator(structure={"A": [], "B": ["A"]}, estimator="em").fit(data)
    info = est.network_.info
    assert est.em_converged_ and info["em_converged"] and info["em_unconverged"] == []
    assert est.em_iterations_ == sum(info["em_iterations"].values()) > 0
    # the family of B is the certified MLE of its 4 cells
    fam = estimate_family(data, "B", ["A"], estimator="em")
    assert fam.em["converged"] and fam.em["gap"] <= GAP_TOL
    moment = PramBayesNetEstimator(structure={"A": [], "B": ["A"]}).fit(data)
    assert moment.em_converged_ and moment.em_iterations_ == 0
    assert "em_converged" not in moment.network_.info


def test_the_network_warns_when_a_family_em_stops_unconverged(monkeypatch):
    monkeypatch.setattr(pram_bn, "EM_MAX_STEPS", 2)
    with pytest.warns(ConvergenceWarning, match="family of 'B' has NOT converged"):
        est = PramBayesNetEstimator(structure={"A": [], "B": ["A"]}, estimator="em")
        est.fit(_bn_data())
    assert est.em_converged_ is False and "B" in est.network_.info["em_unconverged"]


def _release_of(seed=0, n=2000, p=0.6):
    """A PRAM release whose moment estimate leaves the simplex (a declared value nobody
    holds), so that its EM needs more than one step to certify the maximum."""
    import pandas as pd

    from privlab.data import Table
    from privlab.estimate.pram import moment_estimate, observed_counts
    from privlab.publish.randomization import pram

    g = np.random.default_rng(seed)
    df = pd.DataFrame({"a": g.choice(["x", "y"], n, p=[0.97, 0.03])})
    t = Table.from_pandas(df, domains={"a": ["x", "y", "z"]})
    rel = pram(t, columns=["a"], p=p, rng=np.random.default_rng(seed + 1))
    obs = observed_counts(rel.table.columns(["a"]), [3])
    assert (moment_estimate(obs, [rel.blocks[0].matrix]) < 0).any()  # not interior
    return rel


def _capped(monkeypatch, *targets):
    """Make the named modules' em_certified stop after one step (unconverged)."""
    import importlib

    def capped(*args, **kwargs):
        return em_certified(*args, **{**kwargs, "max_steps": 1})

    for module in targets:
        monkeypatch.setattr(importlib.import_module(module), "em_certified", capped)


def test_estimate_release_em_says_when_it_has_not_converged(monkeypatch):
    from privlab.estimate.pram_release import estimate_release

    rel = _release_of()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        good = estimate_release(rel, ["a"], method="em")  # converges: no warning
    assert good.counts.sum() == pytest.approx(2000)
    _capped(monkeypatch, "privlab.estimate.pram_em")
    with pytest.warns(ConvergenceWarning, match="EM estimate of a has NOT converged"):
        estimate_release(rel, ["a"], method="em")


def test_pram_privacy_prior_em_says_when_it_has_not_converged(monkeypatch):
    rel = _release_of(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        rel.privacy()
    _capped(monkeypatch, "privlab.estimate.pram_em")
    with pytest.warns(ConvergenceWarning, match="prior of a has NOT converged"):
        rel.privacy()
