"""Additive noise X + R as an interval PRAM matrix (Ma 2006, Sec. 3.1.2)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from privlab.errors import ParameterError
from privlab.metrics.pram import gamma_amplification, posterior, revealing_values
from privlab.publish.additive_noise import additive_noise_matrix


def _by_quadrature(im, i, j, cdf):
    """(1/w) int_{J_i} [F(b_j - x) - F(a_j - x)] dx by adaptive quadrature (scipy)."""
    w = im.edges[2] - im.edges[1]
    x0 = im.edges[1] - w if i == 0 else im.edges[i]
    a, b = im.edges[j], im.edges[j + 1]

    def f(x):
        return (1.0 if np.isposinf(b) else cdf(b - x)) - (0.0 if np.isneginf(a) else cdf(a - x))

    return integrate.quad(f, x0, x0 + w, epsabs=0, epsrel=1e-11, limit=200)[0] / w


@pytest.mark.parametrize("c", [1, 2, 5])
def test_uniform_noise_closed_form(c):
    """R uniform on [-cw, cw]: every support row is the trapezoid 1/(4c), 1/(2c) x (2c-1),
    1/(4c) over the offsets -c..c, zero elsewhere; M1 = M2 + 2c."""
    m2, w = 7, 0.5
    im = additive_noise_matrix(10.0, 10.0 + m2 * w, m2, noise="uniform", scale=c * w)
    assert im.m1 == m2 + 2 * c and im.support.tolist() == list(range(c, c + m2))
    for i in im.support:
        expect = np.zeros(im.m1)
        expect[i - c : i + c + 1] = 1 / (2 * c)
        expect[[i - c, i + c]] = 1 / (4 * c)
        np.testing.assert_allclose(im.matrix[i], expect, rtol=0, atol=1e-14)
    assert im.edges[0] == -np.inf and im.edges[-1] == np.inf
    assert im.edges[c] == pytest.approx(10.0) and im.edges[c + m2] == pytest.approx(13.5)
    df = im.to_pandas()
    assert df.shape == (im.m1, im.m1 + 1) and df["support"].sum() == m2
    assert df.index[0].startswith("[-inf") and df.columns[-1].endswith("inf)")
    assert im.to_dict()["matrix"] == im.matrix.tolist() and im.to_dict()["m2"] == m2


def test_uniform_noise_not_a_multiple_of_the_width_by_quadrature():
    im = additive_noise_matrix(0.0, 20.0, 20, noise="uniform", scale=2.5)
    cdf = stats.uniform(loc=-2.5, scale=5.0).cdf
    assert im.m1 == 26  # c = ceil(2.5) = 3 on each side
    for i in (0, 3, 12, 22, 25):
        for j in range(im.m1):
            assert im.matrix[i, j] == pytest.approx(_by_quadrature(im, i, j, cdf), abs=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_gaussian_noise_by_quadrature_down_to_the_tails():
    sd = 5 / np.sqrt(3)
    im = additive_noise_matrix(0.0, 20.0, 20, noise="gaussian", scale=sd, reach=4.0)
    cdf = stats.norm(scale=sd).cdf
    assert im.m1 == 20 + 2 * int(np.ceil(4 * sd))
    for i in (im.support[0], im.support[10], im.support[-1]):
        for j in (0, 1, 5, im.m1 // 2, im.m1 - 2, im.m1 - 1):
            q = _by_quadrature(im, i, j, cdf)
            if q > 1e-300:  # the deep tails keep their relative accuracy (gamma is a ratio)
                assert im.matrix[i, j] == pytest.approx(q, rel=1e-8)


def test_uniform_noise_by_monte_carlo():
    """A row against simulated X + R (X uniform in its interval): chi-square, fixed seed."""
    im = additive_noise_matrix(0.0, 10.0, 10, noise="uniform", scale=1.7)
    rng = np.random.default_rng(5)
    i = im.support[0]
    n = 200_000
    x = rng.uniform(im.edges[i], im.edges[i + 1], n) + rng.uniform(-1.7, 1.7, n)
    obs = np.bincount(np.searchsorted(im.edges, x, side="right") - 1, minlength=im.m1)
    keep = im.matrix[i] > 0
    assert obs[~keep].sum() == 0
    assert stats.chisquare(obs[keep], n * im.matrix[i, keep]).pvalue > 1e-3
    # a 30% wider noise is rejected
    wrong = additive_noise_matrix(0.0, 10.0, 10, noise="uniform", scale=1.7 * 1.3)
    exp_wrong = n * wrong.matrix[wrong.support[0]]
    obs_w = np.bincount(np.searchsorted(wrong.edges, x, side="right") - 1, minlength=wrong.m1)
    reach = exp_wrong > 0
    assert obs_w[~reach].sum() == 0  # the wider noise reaches every observed interval
    assert stats.chisquare(obs_w[reach], exp_wrong[reach]).pvalue < 1e-6


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 25),
    st.floats(0.1, 3.0),
    st.floats(0.05, 8.0),
    st.sampled_from(["uniform", "gaussian"]),
)
def test_interval_matrix_invariants(m2, w, scale, noise):
    im = additive_noise_matrix(-1.0, -1.0 + m2 * w, m2, noise=noise, scale=scale)
    p = im.matrix
    assert p.shape == (im.m1, im.m1) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    c = (im.m1 - m2) // 2
    assert im.m1 == m2 + 2 * c and im.support.tolist() == list(range(c, c + m2))
    g_strict = gamma_amplification(p, strict=True, rows=im.support)
    if noise == "uniform":
        # the margins are reachable from one support interval only: gamma = inf, certainty
        assert g_strict == np.inf
        assert revealing_values(p, rows=im.support).tolist() == [0, im.m1 - 1]
        prior = np.zeros(im.m1)
        prior[im.support] = 1
        assert posterior(p, prior)[0, im.support[0]] == pytest.approx(1.0)
    else:
        assert np.isfinite(g_strict) or g_strict == np.inf  # huge, possibly beyond floats


def test_gaussian_gamma_grows_without_bound_with_the_grid():
    sd = 1.0
    g = [
        gamma_amplification(im.matrix, strict=True, rows=im.support)
        for im in (
            additive_noise_matrix(0, 10, 10, noise="gaussian", scale=sd, reach=r)
            for r in (1, 2, 4, 6)
        )
    ]
    assert all(np.isfinite(g)) and all(b > 100 * a for a, b in itertools.pairwise(g))


def test_gamma_rows_and_bad_input():
    p = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    assert gamma_amplification(p, strict=True) == np.inf
    assert gamma_amplification(p, rows=[0, 1]) == 1.0
    assert revealing_values(p, rows=[0, 1]).tolist() == [0, 2]
    with pytest.raises(ParameterError, match="indices of the 3 original values"):
        gamma_amplification(p, rows=[3])
    for kwargs, needle in (
        ({"lo": 1, "hi": 1, "m2": 3, "scale": 1}, r"\[1.0, 1.0\]"),
        ({"lo": 0, "hi": 1, "m2": 0, "scale": 1}, "m2 must be an integer >= 1, got 0"),
        ({"lo": 0, "hi": 1, "m2": 3, "scale": 0}, "scale must be positive, got 0"),
        ({"lo": 0, "hi": 1, "m2": 3, "scale": 1, "noise": "laplace"}, "'laplace'"),
    ):
        with pytest.raises(ParameterError, match=needle):
            additive_noise_matrix(**kwargs)


def test_pram_gamma_additive_rows(tmp_path):
    from privlab.experiments import run_experiment
    from privlab.metrics.pram import gamma_m_category

    res = run_experiment("pram-gamma", quick=True, out=tmp_path / "g", progress=False)
    rows = [r for r in res.rows if r["table"] == "3.1.2-additive"]
    uni = [r for r in rows if r["scheme"].startswith("additive uniform")]
    gauss = [r for r in rows if r["scheme"].startswith("additive Gaussian")]
    pram = [r for r in rows if "PRAM" in r["scheme"]]
    assert len(uni) == 2 and len(gauss) == 6 and len(pram) == 2
    for r in uni:
        assert r["gamma_strict"] == "inf" and r["revealing_intervals"] == 2
        assert r["max_posterior"] == 1.0 and r["m1"] > r["m2"] == 20
    for r in gauss:
        assert r["gamma_strict"] != "inf" and r["gamma_strict"] > 1e10
    for r in pram:
        assert r["gamma_strict"] == r["gamma"] == pytest.approx(r["closed_form"], abs=1e-4)
        assert r["gamma"] == pytest.approx(gamma_m_category(r["m2"], 0.7), abs=1e-4)
        assert r["max_posterior"] == pytest.approx(0.3) and r["revealing_intervals"] == 0
    assert 30 <= pram[1]["m2"] <= 45  # MGAS groups (thesis: 39)
