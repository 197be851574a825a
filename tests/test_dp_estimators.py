"""Post-processing estimators: closed forms, exact oracles (quadrature), risk, invariants."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import integrate, optimize

from privlab.dp import _posterior as E
from privlab.dp.estimators import (
    ESTIMATORS,
    HistogramLayout,
    consistent,
    empirical_bayes,
    get_estimator,
    james_stein,
    laplace_posterior_mean,
    mle,
)
from privlab.errors import ParameterError


def test_closed_forms():
    x = np.array([10.0, -2.0, 4.0, 0.0])
    b = 1.5
    p, l1, sq = 4, 16.0, 120.0
    assert np.array_equal(mle(x, b), x)
    assert np.allclose(empirical_bayes(x, b), x - np.sign(x) * 2 * p * b * b / l1)
    assert np.allclose(james_stein(x, b), (1 - (p - 2) * 2 * b * b / sq) * x)
    # with Table 8.1's clipping: input clipped, Eq. 7.13 on it, output clipped
    xc = np.maximum(x, 0)
    assert np.allclose(empirical_bayes(x, b, clip=True), np.maximum(xc - 2 * p * b * b / 14, 0))
    assert np.all(james_stein(x, b, clip=True) >= 0)


def test_eq_7_13_on_non_negative_input_is_literal():
    x = np.array([[100.0, 50.0, 0.0, 3.0], [1.0, 2.0, 3.0, 4.0]])
    b = 2.0
    expected = x - 2 * 4 * b * b / x.sum(axis=1, keepdims=True)
    expected[0, 2] = 0.0  # sign(0) = 0: an exact zero stays
    assert np.allclose(empirical_bayes(x, b), expected)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_zero_noise_returns_input(name):
    x = np.array([[5.0, 0.0, 3.0, 7.0, 1.0, 2.0]])
    lay = HistogramLayout((3,), 2)
    out = get_estimator(name)(x, 0.0, layout=lay)
    assert np.array_equal(out, x)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_rows_are_estimated_independently_and_clip(name):
    g = np.random.default_rng(0)
    x = g.normal(5, 4, (6, 12))
    lay = HistogramLayout((2, 4), 2)
    f = get_estimator(name)
    batch = f(x, 2.0, clip=True, layout=lay)
    rows = np.stack([f(r, 2.0, clip=True, layout=lay) for r in x])
    assert np.allclose(batch, rows)
    assert np.all(batch >= 0)


def test_js_needs_three_dimensions():
    x = np.array([3.0, 4.0])
    assert np.array_equal(james_stein(x, 1.0), x)


def test_unknown_estimator_and_bad_input():
    with pytest.raises(ParameterError, match="'foo'"):
        get_estimator("foo")
    assert get_estimator("empirical-bayes") is empirical_bayes
    with pytest.raises(ParameterError, match="scale"):
        mle([1.0], -1.0)
    with pytest.raises(ParameterError, match="NaN"):
        empirical_bayes([1.0, float("nan")], 1.0)
    with pytest.raises(ParameterError, match="layout"):
        consistent(np.ones(5), 1.0, layout=HistogramLayout((2,), 2))


# --- the exact posterior mean (Eq. 7.8) ------------------------------------------------------
def _quadrature_mean(x: float, lam: float, a: float) -> float:
    f = lambda t: math.exp(-lam * abs(x - t) - a * abs(t))  # noqa: E731
    pts = sorted({0.0, x})
    width = 80 / min(lam, a)
    cuts = [pts[0] - width, *pts, pts[-1] + width]
    z = sum(integrate.quad(f, u, v, limit=200)[0] for u, v in itertools.pairwise(cuts))
    m = sum(
        integrate.quad(lambda t: t * f(t), u, v, limit=200)[0] for u, v in itertools.pairwise(cuts)
    )
    return m / z


@pytest.mark.parametrize(
    ("x", "a"), [(0.3, 0.2), (5.0, 0.5), (2.0, 1.0), (2.0, 1.0 + 1e-7), (3.0, 2.5), (-4.0, 0.3)]
)
def test_posterior_moments_match_quadrature(x, a):
    _lz, mean, _, _ = E._moments(abs(x), a)
    assert math.copysign(mean, x) == pytest.approx(_quadrature_mean(x, 1.0, a), rel=1e-9)


def test_posterior_mean_matches_eq_7_8_and_alpha_maximizes_eq_7_9():
    g = np.random.default_rng(1)
    b = 2.0
    x = g.uniform(0, 10, 40) + g.laplace(0, b, 40)
    y, alpha = laplace_posterior_mean(x, b, return_alpha=True)
    # alpha maximizes the marginal likelihood (checked by a bounded scalar search)
    res = optimize.minimize_scalar(
        lambda u: -E._loglik(np.abs(x) / b, math.exp(u)),
        bounds=(-15, 10),
        method="bounded",
        options={"xatol": 1e-9},
    )
    assert res.success  # the oracle says it converged
    assert alpha * b == pytest.approx(math.exp(res.x), rel=1e-4)
    # the thesis's closed form (valid for x >= 0, alpha < lambda)
    lam = 1 / b
    assert alpha < lam
    xp = np.abs(x)
    r = np.exp((alpha - lam) * xp)
    eq78 = lam / (lam - alpha * r) * (xp - 2 * alpha / (alpha**2 - lam**2) * (r - 1))
    assert np.allclose(np.sign(x) * eq78, y, rtol=1e-9, atol=1e-9)


def test_posterior_approaches_eq_7_12_for_a_diffuse_prior():
    # alpha << lambda and x >> b: E[theta | x] -> x - 2 alpha / lambda^2 (Sec. 7.1)
    lam, a = 1.0, 1e-3
    for x in (20.0, 50.0):
        mean = E._moments(x, a)[1]
        assert mean == pytest.approx(x - 2 * a / lam**2, abs=1e-6)


def test_bimodal_likelihood_finds_the_global_maximum():
    # most components near 0, a few large: Eq. 7.9 has two modes
    g = np.random.default_rng(3)
    for _ in range(40):
        th = np.where(np.arange(47) < g.integers(1, 47), g.uniform(0, 1, 47), g.uniform(0, 100, 47))
        x = np.abs(th + g.laplace(0, 1, 47))
        a = E._fit_alpha(x, 1e-9, 1e6, 0.0)
        grid = np.exp(np.linspace(math.log(1e-6), math.log(1e4), 300))
        best = max(E._loglik(x, c) for c in grid)
        assert E._loglik(x, a) >= best - 1e-6


# --- risk (Sec. 7.2): shrinkage beats ML in squared error ------------------------------------
def test_eb_and_js_have_lower_risk_than_ml_at_p_10():
    from privlab.experiments.estimators_risk import risks

    r = risks(10, 20_000, np.random.default_rng(0))
    assert r["eb"] < r["ml"] - 0.3  # ML risk is 2 p b^2 = 20
    assert r["js"] < r["ml"]
    assert r["ml"] == pytest.approx(20.0, rel=0.03)
    assert r["eb_unsigned"] > r["ml"]  # the literal reading of Eq. 7.13 does worse


# --- consistency ------------------------------------------------------------------------------
def test_consistent_least_squares_total():
    lay = HistogramLayout((2, 3), 1)
    x = np.array([4.0, 6.0, 1.0, 2.0, 3.0])  # totals 10 and 6
    y = consistent(x, 1.0, layout=lay)
    t = (10 / 2 + 6 / 3) / (1 / 2 + 1 / 3)
    assert np.allclose(y, [4 + (t - 10) / 2, 6 + (t - 10) / 2, 1 + (t - 6) / 3, 2 + (t - 6) / 3,
                           3 + (t - 6) / 3])  # fmt: skip


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(np.float64, (3, 18), elements=st.floats(-20, 60)),
    st.booleans(),
)
def test_consistent_invariants(x, clip):
    lay = HistogramLayout((4, 2, 3), 2)
    y = consistent(x, 3.0, layout=lay, clip=clip)
    blocks = y.reshape(3, 2, 9)
    totals = np.stack(
        [blocks[..., 0:4].sum(-1), blocks[..., 4:6].sum(-1), blocks[..., 6:9].sum(-1)]
    )
    assert np.allclose(totals, totals[0], atol=1e-8)  # one total per block
    if clip:
        assert np.all(y >= 0)
    # projecting again changes nothing
    assert np.allclose(consistent(y, 3.0, layout=lay, clip=clip), y, atol=1e-8)
