"""sdcMicro's information-loss measures and the pMSE (privlab.metrics.numeric_utility): hand
and closed-form oracles, an independent Newton-Raphson fit of the propensity model, the
pMSE's null distribution, weights as replicated rows, and refusals in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import chi2

from privlab.errors import ParameterError
from privlab.metrics.numeric_utility import NumericUtility, numeric_utility

X4 = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
M4 = np.array([[1.0, 12.0], [3.0, 20.0], [3.0, 30.0], [4.0, 30.0]])


def correlated(n: int, rng: np.random.Generator, p: int = 3) -> np.ndarray:
    """Correlated columns with means well away from 0."""
    a = rng.normal(size=(p, p)) + np.eye(p) * 2
    return rng.normal(size=(n, p)) @ a + np.arange(1, p + 1) * 5.0


def newton_pmse(x: np.ndarray, xm: np.ndarray, interactions: bool = False) -> float:
    """pMSE from a logistic regression fitted by Newton-Raphson on the raw (unscaled) columns:
    the maximum likelihood fit is unique, so it must agree with scikit-learn's."""
    z = np.vstack([x, xm])
    if interactions:
        j, k = np.triu_indices(z.shape[1], 1)
        z = np.hstack([z, z[:, j] * z[:, k]])
    d = np.column_stack([np.ones(len(z)), z])
    y = np.r_[np.zeros(len(x)), np.ones(len(xm))]
    beta = np.zeros(d.shape[1])
    for _ in range(100):
        prob = 1 / (1 + np.exp(-d @ beta))
        step = np.linalg.solve(d.T @ (d * (prob * (1 - prob))[:, None]), d.T @ (y - prob))
        beta += step
        if np.abs(step).max() < 1e-13:
            break
    prob = 1 / (1 + np.exp(-d @ beta))
    c = len(xm) / len(z)
    return float(np.mean((prob - c) ** 2))


def test_identical_tables_lose_nothing():
    rng = np.random.default_rng(1)
    x = correlated(200, rng)
    u = numeric_utility(x, x.copy())
    assert isinstance(u, NumericUtility)
    assert u.il1s == 0 and u.il1s_mean == 0 and u.eigen == 0
    assert u.amean == 0 and u.acov == 0 and u.acor == 0
    # each row appears once with each label: the fitted model is the constant c
    assert u.pmse < 1e-12 < u.pmse_null
    assert u.pmse_null == pytest.approx(3 * 0.25 * 0.5 / 400, rel=1e-14)
    assert u.pmse_converged


def test_il1s_by_hand_on_a_4x2_table():
    # S = sqrt(5/3) and 10 sqrt(5/3); |x - x'| sums to 1 and 12
    u = numeric_utility(X4, M4)
    root = math.sqrt(10 / 3)  # sqrt(2) sqrt(5/3)
    np.testing.assert_allclose(u.il1s_columns, [1 / root, 1.2 / root], rtol=1e-14)
    assert u.il1s == pytest.approx(2.2 * math.sqrt(0.3), rel=1e-14)
    assert u.il1s_mean == pytest.approx(2.2 * math.sqrt(0.3) / 8, rel=1e-14)
    # means: 2.5 -> 2.75 and 25 -> 23
    np.testing.assert_allclose(u.mean_relative, [0.25 / 2.5, 2 / 25], rtol=1e-14)
    assert u.amean == pytest.approx(0.1 + 0.08, rel=1e-14)


def test_affine_distortion_gives_known_moment_losses():
    rng = np.random.default_rng(2)
    x = correlated(300, rng)
    a, b = np.array([2.0, 0.5, 1.0]), np.array([1.0, -3.0, 0.0])
    u = numeric_utility(x, x * a + b)
    m = x.mean(axis=0)
    assert u.amean == pytest.approx(np.sum(np.abs((a - 1) * m + b) / np.abs(m)), rel=1e-10)
    # C' = diag(a) C diag(a): every entry's relative change is |a_j a_k - 1|, over 2p
    assert u.acov == pytest.approx(np.abs(np.outer(a, a) - 1).sum() / 6, rel=1e-10)
    assert u.acor == pytest.approx(0, abs=1e-12)
    assert u.eigen == pytest.approx(0, abs=1e-12)
    s = x.std(axis=0, ddof=1)
    il1s = (np.abs((1 - a) * x - b) / (math.sqrt(2) * s)).sum()
    assert u.il1s == pytest.approx(il1s, rel=1e-12)


def test_negating_a_column_flips_its_correlations_but_not_the_eigenvalues():
    rng = np.random.default_rng(3)
    x = correlated(300, rng)
    flip = np.array([-1.0, 1.0, 1.0])
    u = numeric_utility(x, x * flip)
    # four off-diagonal entries change sign: |r - (-r)| / |r| = 2 each, over 2p = 6
    assert u.acor == pytest.approx(8 / 6, rel=1e-10)
    assert u.acov == pytest.approx(8 / 6, rel=1e-10)
    assert u.eigen == pytest.approx(0, abs=1e-10)  # D R D has R's eigenvalues


def test_eigenvalue_measure_of_two_columns_in_closed_form():
    # a 2 x 2 correlation matrix has eigenvalues 1 + |r| and 1 - |r|
    rng = np.random.default_rng(4)
    x = correlated(400, rng, p=2)
    xm = x + rng.normal(size=x.shape) * np.array([3.0, 0.5])
    r = abs(np.corrcoef(x, rowvar=False)[0, 1])
    rm = abs(np.corrcoef(xm, rowvar=False)[0, 1])
    expected = abs(r - rm) / (1 + r) + abs(r - rm) / (1 - r)
    assert numeric_utility(x, xm).eigen == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("interactions", [False, True])
def test_pmse_equals_an_independent_newton_fit(interactions):
    rng = np.random.default_rng(5)
    x = correlated(150, rng)
    xm = x + rng.normal(size=x.shape) * 2.0
    u = numeric_utility(x, xm, interactions=interactions)
    assert u.pmse == pytest.approx(newton_pmse(x, xm, interactions), rel=1e-6)
    assert u.pmse_parameters == (7 if interactions else 4)
    k = u.pmse_parameters
    assert u.pmse_null == pytest.approx((k - 1) * 0.25 * 0.5 / 300, rel=1e-14)


def test_pmse_of_independent_draws_is_twice_snokes_null():
    # two independent samples: N pMSE / (c (1 - c)) is asymptotically chi-square with k - 1
    # degrees of freedom, so the sum over 40 replicates is chi-square with 40 (k - 1), and
    # the ratio to Snoke's (k - 1)(1 - c)^2 c / N is near 1 / (1 - c) = 2
    rng = np.random.default_rng(6)
    reps, n, total, ratios = 40, 300, 0.0, []
    for _ in range(reps):
        u = numeric_utility(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), interactions=True)
        total += 2 * n * u.pmse / (0.5 * 0.5)
        ratios.append(u.pmse_ratio)
    df = reps * (u.pmse_parameters - 1)
    assert 1e-3 < chi2.cdf(total, df) < 1 - 1e-3
    assert np.mean(ratios) == pytest.approx(2.0, abs=0.4)


def test_pmse_of_draws_from_the_fitted_model_matches_snokes_null():
    # masked rows drawn from the normal fitted to the original (its mean and covariance):
    # only the masked sample's error remains, and the ratio is near 1
    rng = np.random.default_rng(13)
    reps, n, total, ratios = 40, 300, 0.0, []
    for _ in range(reps):
        x = rng.normal(size=(n, 3))
        mean, cov = x.mean(axis=0), np.cov(x, rowvar=False)
        u = numeric_utility(x, rng.multivariate_normal(mean, cov, size=n), interactions=True)
        total += 2 * n * u.pmse / (0.5 * 0.25)
        ratios.append(u.pmse_ratio)
    df = reps * (u.pmse_parameters - 1)
    assert 1e-3 < chi2.cdf(total, df) < 1 - 1e-3
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.25)


def test_pmse_grows_when_the_masked_table_is_shifted():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(500, 3))
    same = numeric_utility(x, rng.normal(size=(500, 3)))
    shifted = numeric_utility(x, rng.normal(size=(500, 3)) + 0.5)
    # a shift of half a deviation in 3 columns: pMSE near (0.25 * 0.87 * 0.5)^2 / ... >> null
    assert shifted.pmse_ratio > 20 > 3 > same.pmse_ratio
    assert shifted.pmse > 10 * same.pmse


def test_separable_tables_do_not_converge_and_near_the_maximum():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100, 2))
    u = numeric_utility(x, x + 100.0)
    assert u.pmse == pytest.approx(0.25, rel=1e-3)  # c (1 - c): every p^ is 0 or 1


def test_row_order_of_the_masked_table():
    rng = np.random.default_rng(9)
    x = correlated(200, rng)
    xm = x + rng.normal(size=x.shape)
    perm = rng.permutation(len(x))
    u, v = numeric_utility(x, xm), numeric_utility(x, xm[perm])
    assert v.pmse == pytest.approx(u.pmse, rel=1e-6)
    for name in ("eigen", "amean", "acov", "acor"):
        assert getattr(v, name) == pytest.approx(getattr(u, name), rel=1e-10), name
    assert v.il1s > 2 * u.il1s  # IL1s pairs the rows: shuffling them is a loss


def test_integer_weights_equal_replicated_rows():
    rng = np.random.default_rng(10)
    x = correlated(60, rng)
    xm = x + rng.normal(size=x.shape)
    w = rng.integers(1, 4, size=60)
    u = numeric_utility(x, xm, weights=w)
    r = numeric_utility(np.repeat(x, w, axis=0), np.repeat(xm, w, axis=0))
    for name in ("il1s", "il1s_mean", "eigen", "amean", "acov", "acor"):
        assert getattr(u, name) == pytest.approx(getattr(r, name), rel=1e-10), name
    np.testing.assert_allclose(u.il1s_columns, r.il1s_columns, rtol=1e-10)
    assert u.pmse == pytest.approx(r.pmse, rel=1e-5)
    assert u.weighted and math.isnan(u.pmse_null) and math.isnan(u.pmse_ratio)
    ones = numeric_utility(x, xm, weights=np.ones(60))
    plain = numeric_utility(x, xm)
    assert ones.il1s == pytest.approx(plain.il1s, rel=1e-12)
    assert ones.acov == pytest.approx(plain.acov, rel=1e-12)
    assert ones.pmse_null == plain.pmse_null


def test_constant_masked_column_leaves_correlations_undefined():
    rng = np.random.default_rng(11)
    x = correlated(50, rng)
    xm = x.copy()
    xm[:, 1] = 7.0
    u = numeric_utility(x, xm)
    assert math.isnan(u.acor) and math.isnan(u.eigen)
    assert math.isfinite(u.il1s) and math.isfinite(u.acov) and math.isfinite(u.pmse)
    d = u.to_dict()
    assert d["acor"] is None and d["eigen"] is None


def test_zero_original_entries_count_zero_when_kept_and_infinite_when_changed():
    x = np.array([[-1.0, 0.0], [1.0, 2.0], [0.0, -2.0]])  # column 0 has mean 0
    assert numeric_utility(x, x.copy()).amean == 0
    assert numeric_utility(x, x + np.array([0.5, 0.0])).amean == math.inf


def test_to_dict_is_json_and_to_pandas_has_a_row_per_column():
    rng = np.random.default_rng(12)
    x = correlated(40, rng)
    u = numeric_utility(x, x + rng.normal(size=x.shape), interactions=True)
    d = json.loads(json.dumps(u.to_dict(), allow_nan=False))
    assert d["pmse"]["parameters"] == 7 and d["pmse"]["interactions"] is True
    assert d["il1s"] == pytest.approx(u.il1s)
    assert d["pmse"]["ratio"] == pytest.approx(u.pmse / u.pmse_null)
    df = u.to_pandas()
    assert list(df.columns) == ["il1s", "mean_relative"] and len(df) == 3


@pytest.mark.parametrize(
    ("original", "masked", "kwargs", "match"),
    [
        (X4, M4[:3], {}, "4 x 2 but the masked one is 3 x 2"),
        (X4, M4[:, :1], {}, "rows must pair"),
        (X4, np.where(M4 == 3.0, np.nan, M4), {}, "missing or infinite"),
        (np.where(X4 == 1.0, np.inf, X4), M4, {}, "missing or infinite"),
        (X4[:1], M4[:1], {}, "at least 2 rows"),
        (np.c_[X4, np.ones(4)], np.c_[M4, np.ones(4)], {}, "column 2 is constant"),
        (X4, M4, {"weights": [1, 2, 3]}, "3 weights for 4 records"),
        (X4, M4, {"weights": [1, 0, 1, 1]}, "finite numbers > 0"),
        (X4, M4, {"weights": [0.1, 0.1, 0.1, 0.1]}, "sum to more than 1"),
        (X4, M4, {"interactions": 1}, "True or False"),
        (np.zeros((2, 2, 2)), M4, {}, "2-dimensional"),
        ([["a", "b"], ["c", "d"]], M4, {}, "numbers only"),
    ],
)
def test_bad_input_is_refused_in_one_line(original, masked, kwargs, match):
    with pytest.raises(ParameterError, match=match) as err:
        numeric_utility(original, masked, **kwargs)
    assert "\n" not in str(err.value)
