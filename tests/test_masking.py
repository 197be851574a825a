"""Masking of numeric variables (issue 35, item 3): noise addition (additive, correlated,
Kim 1986), rank swapping (Moore 1996) and top/bottom coding, as sdcMicro defines them.

Three layers: deterministic limits (noise 0, p 0, declared thresholds), statistical tests with
a fixed generator, large n and tolerances derived from the sampling sd (each accepts the true
value and rejects one 30% wrong), and invariants (hypothesis).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privlab.errors import ParameterError, PrivacyWarning
from privlab.publish import masking_core as mc
from privlab.publish.masking_core import add_noise, rank_swap, swap_partners, top_bottom_code

#: Large-sample tests: n rows, tolerances of Z standard deviations (a false failure has
#: probability about 6e-7 per compared number).
N = 200_000
Z = 5.0


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    """``N`` rows of three correlated columns (correlations 0.6, 0.4, 0.5) on different
    scales and far from 0, drawn once from a fixed generator; every test conditions on it."""
    corr = np.array([[1.0, 0.6, 0.4], [0.6, 1.0, 0.5], [0.4, 0.5, 1.0]])
    sd = np.array([2.0, 30.0, 500.0])
    g = np.random.default_rng(20240601)
    z = g.standard_normal((N, 3)) @ np.linalg.cholesky(corr).T
    return np.array([5.0, 50.0, -300.0]) + z * sd


def _scatter_sd(s: np.ndarray, alpha: float, n: int) -> np.ndarray:
    """The sd of each entry of ``sum_i (d_i + e_i)(d_i + e_i)^T / (n - 1)`` given the centred
    data ``d`` (``sum d d^T = (n - 1) S``) and ``e_i ~ N(0, alpha S)``: the cross terms
    contribute ``2 alpha (n - 1) (S_jj S_kk + S_jk^2)`` to the variance of the sum, the noise's
    own products ``n alpha^2 (S_jj S_kk + S_jk^2)`` (Gaussian: Isserlis)."""
    v = np.outer(np.diag(s), np.diag(s)) + s**2
    return np.sqrt((2 * alpha * (n - 1) + alpha**2 * n) * v) / (n - 1)


def _one_line(excinfo) -> None:
    msg = str(excinfo.value)
    assert msg and "\n" not in msg


# -- noise: deterministic limits ---------------------------------------------------------------


@pytest.mark.parametrize("method", mc.NOISE_METHODS)
def test_no_noise_is_the_identity(method):
    x = np.random.default_rng(1).normal(size=(50, 3)) * [1, 10, 100]
    r = add_noise(x, method=method, noise=0, rng=2)
    np.testing.assert_allclose(r.masked, x, rtol=1e-12, atol=1e-9)
    assert r.c == (1.0 if method == "kim" else None)


def test_kim_is_the_correlated_noise_transformed():
    """Same generator, same noise: Kim's ``z = c y + (1 - c) xbar`` of the correlated ``y``
    exactly, with ``c = sqrt((n - 1) / (n (1 + alpha) - 1))``."""
    x = np.random.default_rng(3).normal(size=(40, 2)) * [3, 7] + [1, -2]
    y = add_noise(x, method="correlated", noise=80, rng=9).masked
    k = add_noise(x, method="kim", noise=80, rng=9)
    n, alpha = 40, 0.8
    c = math.sqrt((n - 1) / (n * (1 + alpha) - 1))
    assert k.c == pytest.approx(c, rel=1e-15)
    np.testing.assert_allclose(k.masked, c * y + (1 - c) * x.mean(axis=0), rtol=1e-13)


@pytest.mark.parametrize("method", ["correlated", "kim"])
def test_correlated_noise_keeps_exact_linear_relations(method):
    """A column that is an affine function of another stays so: the noise lies in the span
    of the covariance (eigen-factored, so a singular ``S`` is allowed)."""
    a = np.random.default_rng(4).normal(size=500)
    x = np.column_stack([a, 2 * a + 3])
    z = add_noise(x, method=method, rng=5).masked
    np.testing.assert_allclose(z[:, 1], 2 * z[:, 0] + 3, atol=1e-9)
    assert not np.allclose(z, x)


def test_one_dimensional_input_keeps_its_shape():
    x = np.arange(10.0)
    for method in mc.NOISE_METHODS:
        assert add_noise(x, method=method, rng=0).masked.shape == (10,)
    assert rank_swap(x, p=30, rng=0).masked.shape == (10,)
    assert top_bottom_code(x, top=5).masked.shape == (10,)


def test_same_seed_same_noise_and_results_are_read_only():
    x = np.random.default_rng(6).normal(size=(30, 2))
    for method in mc.NOISE_METHODS:
        a = add_noise(x, method=method, rng=11).masked
        assert np.array_equal(a, add_noise(x, method=method, rng=11).masked)
        assert not np.array_equal(a, add_noise(x, method=method, rng=12).masked)
        with pytest.raises(ValueError):
            a[0, 0] = 1.0
    assert np.array_equal(rank_swap(x, p=20, rng=3).masked, rank_swap(x, p=20, rng=3).masked)


def test_unit_weights_are_no_weights():
    x = np.random.default_rng(7).normal(size=(60, 3))
    for method in mc.NOISE_METHODS:
        a = add_noise(x, method=method, rng=1)
        b = add_noise(x, method=method, rng=1, weights=np.ones(60))
        np.testing.assert_allclose(a.masked, b.masked, rtol=1e-12, atol=1e-12)
        assert b.weighted and not a.weighted


def test_integer_weights_are_repeated_rows():
    """Frequency weights: the sd that scales the additive noise, and Kim's mean and ``c``,
    are the repeated data's.  The standard normals are the generator's first draw."""
    g = np.random.default_rng(8)
    x = g.normal(size=(25, 2)) * [2, 5]
    w = g.integers(1, 5, size=25)
    rep = np.repeat(x, w, axis=0)
    normals = np.random.default_rng(2).standard_normal((25, 2))
    r = add_noise(x, method="additive", noise=60, rng=2, weights=w)
    np.testing.assert_allclose((r.masked - x) / normals, np.broadcast_to(
        0.6 * rep.std(axis=0, ddof=1), (25, 2)), rtol=1e-10)  # fmt: skip
    y = add_noise(x, method="correlated", noise=60, rng=2, weights=w).masked
    k = add_noise(x, method="kim", noise=60, rng=2, weights=w)
    total = w.sum()
    c = math.sqrt((total - 1) / (total * 1.6 - 1))
    assert k.c == pytest.approx(c)
    np.testing.assert_allclose(k.masked, c * y + (1 - c) * rep.mean(axis=0), rtol=1e-12)
    # the correlated noise is normals @ F^T with F F^T = alpha times the repeated data's S
    f_t = np.linalg.lstsq(normals, y - x, rcond=None)[0]
    np.testing.assert_allclose(f_t.T @ f_t, 0.6 * np.cov(rep, rowvar=False), rtol=1e-10)


# -- noise: statistical tests ------------------------------------------------------------------


@pytest.mark.parametrize("noise", [150.0, 40.0])
def test_additive_noise_variance_is_scale_times_sd_squared(data, noise):
    """sdcMicro's ``additive``: ``e_j ~ N(0, (noise/100 s_j)^2)``, independent across
    columns.  The sample variance of ``n`` normals has sd ``sigma^2 sqrt(2 / (n - 1))``."""
    e = add_noise(data, method="additive", noise=noise, rng=101).masked - data
    truth = (noise / 100 * data.std(axis=0, ddof=1)) ** 2
    var = e.var(axis=0, ddof=1)
    tol = Z * truth * math.sqrt(2 / (N - 1))
    assert np.all(np.abs(var - truth) <= tol), (var / truth, tol / truth)
    assert np.all(np.abs(var - 1.3 * truth) > tol)  # a 30% wrong variance is rejected
    assert np.all(np.abs(var - truth / 1.3) > tol)
    # zero mean (sd sigma / sqrt(n)) and no correlation between columns (sd 1 / sqrt(n))
    assert np.all(np.abs(e.mean(axis=0)) <= Z * np.sqrt(truth / N))
    r = np.corrcoef(e, rowvar=False)[np.triu_indices(3, 1)]
    assert np.all(np.abs(r) <= Z / math.sqrt(N))


def test_correlated_noise_covariance_is_one_plus_alpha_sigma(data):
    """Brand (2002): ``E[cov(x + e)] = (1 + alpha) S`` given ``x``, ``e ~ N(0, alpha S)``."""
    alpha = 1.5  # sdcMicro's default noise 150
    s = np.cov(data, rowvar=False)
    cov = np.cov(add_noise(data, method="correlated", rng=202).masked, rowvar=False)
    truth = (1 + alpha) * s
    tol = Z * _scatter_sd(s, alpha, N)
    assert np.all(np.abs(cov - truth) <= tol), (cov - truth) / tol
    assert np.all(np.abs(cov - 1.3 * truth) > tol)  # 30% wrong, every entry
    assert np.all(np.abs(cov - truth / 1.3) > tol)


def test_kim_keeps_mean_and_covariance_in_expectation(data):
    """Kim (1986): ``z - xbar = c (d + e)``.  Exactly in expectation: ``E[zbar] = xbar`` and
    ``E[sum (z_i - xbar)(z_i - xbar)^T / (n - 1)] = S``; the sample covariance about
    ``zbar`` is ``(1 - alpha / (n (1 + alpha) - 1)) S`` in expectation."""
    alpha = 1.5
    r = add_noise(data, method="kim", rng=303)
    z, c = r.masked, r.c
    xbar, s = data.mean(axis=0), np.cov(data, rowvar=False)
    sd_mean = c * np.sqrt(alpha * np.diag(s) / N)
    dev = z.mean(axis=0) - xbar
    assert np.all(np.abs(dev) <= Z * sd_mean), dev / sd_mean
    assert np.all(np.abs(z.mean(axis=0) - 1.3 * xbar) > Z * sd_mean)  # a 30% wrong mean
    d = z - xbar
    scatter = d.T @ d / (N - 1)
    tol = Z * c**2 * _scatter_sd(s, alpha, N)
    assert np.all(np.abs(scatter - s) <= tol), (scatter - s) / tol
    assert np.all(np.abs(scatter - 1.3 * s) > tol)  # 30% wrong, every entry
    assert np.all(np.abs(scatter - s / 1.3) > tol)
    shrunk = (1 - alpha / (N * (1 + alpha) - 1)) * s
    assert np.all(np.abs(np.cov(z, rowvar=False) - shrunk) <= tol)


# -- noise: bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "kwargs"),
    [
        ([[1.0, 2.0], [np.nan, 3.0], [2.0, 1.0]], {}),
        ([[1.0, 2.0], [np.inf, 3.0], [2.0, 1.0]], {}),
        ([[1.0, 2.0]], {}),  # fewer than 2 rows
        ([[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]], {"method": "correlated"}),  # constant column
        ([[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]], {"method": "additive"}),
        ([[1.0], [2.0]], {"noise": -1.0}),
        ([[1.0], [2.0]], {"noise": float("nan")}),
        ([[1.0], [2.0]], {"noise": True}),
        ([[1.0], [2.0]], {"method": "restr"}),
        ([[1.0], [2.0]], {"weights": [1.0, -1.0]}),
        ([[1.0], [2.0]], {"weights": [1.0]}),
        ([[1.0], [2.0]], {"weights": [0.25, 0.5]}),  # W - 1 <= 0
        ([["a"], ["b"]], {}),
        ([[1.0], [2.0]], {"names": ["a", "b"]}),
    ],
)
def test_noise_refuses_bad_input_in_one_line(x, kwargs):
    with pytest.raises(ParameterError) as excinfo:
        add_noise(np.array(x), rng=0, **kwargs)
    _one_line(excinfo)


def test_constant_column_is_named():
    x = np.column_stack([np.arange(5.0), np.full(5, 7.0)])
    with pytest.raises(ParameterError, match="'income' is constant"):
        add_noise(x, method="correlated", names=["age", "income"], rng=0)


# -- rank swapping -----------------------------------------------------------------------------


def test_rank_swap_zero_window_is_the_identity():
    x = np.random.default_rng(12).normal(size=(40, 3))
    for p in (0, 0.0, 2.0):  # 2% of 40 rows is no whole rank
        r = rank_swap(x, p=p, rng=1)
        assert r.window == 0 and np.array_equal(r.masked, x)


def test_swap_partners_deterministic_limits():
    """n = 3, window 1: rank 0 must take rank 1 (its only candidate), rank 2 has none."""
    for u in (0.0, 0.5, 0.999999):
        assert swap_partners(np.full(3, u), 1).tolist() == [1, 0, 2]
    assert swap_partners(np.full(5, 0.3), 0).tolist() == list(range(5))
    # the uniform picks the want-th free candidate: u = 0 the nearest, u -> 1 the farthest
    assert swap_partners(np.array([0.0, 0, 0, 0, 0, 0]), 3).tolist() == [1, 0, 3, 2, 5, 4]
    assert swap_partners(np.array([0.99, 0, 0.99, 0, 0, 0]), 3)[0] == 3


def test_first_rank_partner_is_uniform_in_its_window():
    """Rank 0 sees all of ``1 .. w`` free: its partner is uniform on them.  With ``T`` draws
    each share has sd ``sqrt(q (1 - q) / T)``; a share 30% off is rejected."""
    w, trials = 4, 20_000
    g = np.random.default_rng(404)
    first = np.array([swap_partners(g.random(10), w)[0] for _ in range(trials)])
    share = np.bincount(first, minlength=w + 1)[1:] / trials
    q = 1 / w
    tol = Z * math.sqrt(q * (1 - q) / trials)
    assert np.all(np.abs(share - q) <= tol), share
    assert np.all(np.abs(share - 1.3 * q) > tol) and np.all(np.abs(share - 0.7 * q) > tol)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), window=st.integers(0, 320), seed=st.integers(0, 2**32 - 1))
def test_swap_partners_is_an_involution_within_the_window(n, window, seed):
    u = np.random.default_rng(seed).random(n)
    part = swap_partners(u, window)
    ranks = np.arange(n)
    assert np.array_equal(part[part], ranks)
    assert np.all(np.abs(part - ranks) <= window)
    # a rank left alone had no free candidate: every rank in (r, r + w] was already paired
    # with a rank below r when r was visited
    for r in np.flatnonzero(part == ranks):
        assert np.all(part[r + 1 : r + window + 1] < r)


def test_compiled_kernel_matches_python():
    from privlab.publish._rankswap_kernel import swap_partners_compiled

    g = np.random.default_rng(505)
    for n, window in [(2, 1), (17, 3), (1000, 50), (5000, 4999), (3000, 0)]:
        u = g.random(n)
        assert np.array_equal(swap_partners(u, window), swap_partners_compiled(u, window))


def test_large_columns_use_the_kernel_with_the_same_answer(monkeypatch):
    x = np.random.default_rng(606).normal(size=(3000, 2))
    python = rank_swap(x, p=3, rng=7).masked
    monkeypatch.setattr(mc, "_KERNEL_MIN", 100)
    assert np.array_equal(rank_swap(x, p=3, rng=7).masked, python)


def _columns(draw_values):
    return st.integers(2, 60).flatmap(
        lambda n: st.integers(1, 3).flatmap(
            lambda m: hnp.arrays(np.float64, (n, m), elements=draw_values)
        )
    )


@settings(max_examples=120, deadline=None)
@given(
    x=_columns(st.one_of(st.integers(-3, 3).map(float), st.floats(-1e6, 1e6))),
    p=st.floats(0, 100),
    seed=st.integers(0, 2**32 - 1),
)
def test_rank_swap_keeps_each_column_and_stays_in_the_window(x, p, seed):
    """Ties allowed: each column's sorted values are unchanged, and the value a row gets lies
    between the values ``w`` ranks below and above its own rank (stable order)."""
    r = rank_swap(x, p=p, rng=seed)
    n = x.shape[0]
    assert r.window == math.floor(p * n / 100)
    assert np.array_equal(np.sort(r.masked, axis=0), np.sort(x, axis=0))
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")
        rank = np.empty(n, dtype=int)
        rank[order] = np.arange(n)
        s = x[order, j]
        lo = s[np.maximum(rank - r.window, 0)]
        hi = s[np.minimum(rank + r.window, n - 1)]
        assert np.all((lo <= r.masked[:, j]) & (r.masked[:, j] <= hi))


@settings(max_examples=80, deadline=None)
@given(
    x=st.integers(2, 80).flatmap(
        lambda n: hnp.arrays(np.float64, n, elements=st.floats(-1e3, 1e3), unique=True)
    ),
    p=st.floats(0, 100),
    seed=st.integers(0, 2**32 - 1),
)
def test_rank_swap_distinct_values_pairs_within_p_percent(x, p, seed):
    """Distinct values: rows exchange values in pairs, at rank distance <= p n / 100."""
    r = rank_swap(x, p=p, rng=seed)
    s = np.sort(x)
    before, after = np.searchsorted(s, x), np.searchsorted(s, r.masked)
    assert np.all(np.abs(after - before) <= p * x.size / 100)
    row_of_rank = np.argsort(x)
    partner_row = row_of_rank[after]  # the row whose value each row received
    assert np.array_equal(partner_row[partner_row], np.arange(x.size))


@pytest.mark.parametrize(
    ("x", "p"),
    [
        ([[1.0], [2.0]], 101.0),
        ([[1.0], [2.0]], -0.5),
        ([[1.0], [2.0]], float("nan")),
        ([[1.0], [2.0]], "5"),
        ([[1.0]], 5.0),
        ([[1.0], [np.nan]], 5.0),
    ],
)
def test_rank_swap_refuses_bad_input_in_one_line(x, p):
    with pytest.raises(ParameterError) as excinfo:
        rank_swap(np.array(x), p=p, rng=0)
    _one_line(excinfo)


# -- top and bottom coding ---------------------------------------------------------------------


def _quiet(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared thresholds: no warning at all
        return top_bottom_code(**kwargs)


def test_top_coding_is_strict_and_uses_the_threshold():
    r = _quiet(x=np.array([1.0, 5.0, 6.0, 10.0]), top=5.0)
    assert r.masked.tolist() == [1.0, 5.0, 5.0, 5.0]
    assert r.top_coded.tolist() == [2] and r.bottom is None and r.replacement == "threshold"


def test_sdcmicro_example_with_a_given_replacement():
    """sdcMicro's test_topBotCoding: top 35 replaced by 0, and bottom 35 replaced by 0."""
    v = np.array([17.63611, 80.94412, 39.10929, 33.44570, 60.60797])
    assert _quiet(x=v, top=35, replacement=0).masked.tolist() == [17.63611, 0, 0, 33.4457, 0]
    assert _quiet(x=v, bottom=35, replacement=0.0).masked.tolist() == [
        0, 80.94412, 39.10929, 0, 60.60797
    ]  # fmt: skip


def test_both_sides_per_column_thresholds_and_pairs():
    x = np.array([[0.0, 10.0], [5.0, 50.0], [9.0, 90.0], [3.0, 30.0]])
    r = _quiet(x=x, top=[8.0, 60.0], bottom=[1.0, 20.0])
    assert r.masked.tolist() == [[1.0, 20.0], [5.0, 50.0], [8.0, 60.0], [3.0, 30.0]]
    assert r.top_coded.tolist() == [1, 1] and r.bottom_coded.tolist() == [1, 1]
    r = _quiet(x=x, top=8.0, bottom=1.0, replacement=(-1.0, 99.0))
    assert r.masked[:, 0].tolist() == [-1.0, 5.0, 99.0, 3.0]
    r = _quiet(x=x, top=np.inf)  # inf codes nothing
    assert np.array_equal(r.masked, x) and r.top_coded.tolist() == [0, 0]
    json.dumps(r.to_dict())
    assert list(r.to_pandas().columns) == ["0", "1"]


def test_mean_replacement_is_the_mean_of_the_coded_values_and_warns():
    x = np.array([1.0, 2.0, 8.0, 10.0, 12.0])
    with pytest.warns(PrivacyWarning, match="mean of the 3 coded private values"):
        r = top_bottom_code(x, top=5.0, replacement="mean", names=["income"])
    assert r.masked.tolist() == [1.0, 2.0, 10.0, 10.0, 10.0]
    assert r.top_value.tolist() == [10.0]


def test_a_quantile_threshold_warns_naming_the_column():
    x = np.column_stack([np.arange(100.0), np.arange(100.0) * 2])
    with pytest.warns(PrivacyWarning) as record:
        r = top_bottom_code(x, top_quantile=0.9, names=["age", "income"])
    messages = [str(w.message) for w in record if issubclass(w.category, PrivacyWarning)]
    assert len(messages) == 2
    assert "'age'" in messages[0] and "'income'" in messages[1]
    assert all("computed from the records" in m and "declare" in m for m in messages)
    np.testing.assert_allclose(r.top, [89.1, 178.2])  # R's type 7
    assert r.from_data == (("age", "top"), ("income", "top"))
    assert r.masked[:, 0].max() == pytest.approx(89.1)
    with pytest.warns(PrivacyWarning, match="bottom threshold"):
        top_bottom_code(x[:, 0], bottom_quantile=0.05)


@settings(max_examples=100, deadline=None)
@given(
    x=_columns(st.floats(-1e6, 1e6)),
    bounds=st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)).map(sorted),
)
def test_threshold_coding_clips_and_leaves_the_middle(x, bounds):
    lo, hi = bounds
    r = _quiet(x=x, top=hi, bottom=lo)
    np.testing.assert_array_equal(r.masked, np.clip(x, lo, hi))
    middle = (x >= lo) & (x <= hi)
    assert np.array_equal(r.masked[middle], x[middle])
    assert r.top_coded.tolist() == (x > hi).sum(axis=0).tolist()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"top": 5.0, "top_quantile": 0.9},
        {"top_quantile": 1.5},
        {"bottom_quantile": -0.1},
        {"top": 1.0, "bottom": 2.0},
        {"top": 5.0, "bottom": 1.0, "replacement": 3.0},  # one number, two sides
        {"top": 5.0, "replacement": "median"},
        {"top": -np.inf},
        {"bottom": np.inf},
        {"top": [1.0, 2.0, 3.0]},  # the data have 2 columns
        {"top": float("nan")},
        {"top": 5.0, "replacement": float("inf")},
    ],
)
def test_top_bottom_refuses_bad_input_in_one_line(kwargs):
    with pytest.raises(ParameterError) as excinfo:
        top_bottom_code(np.array([[1.0, 2.0], [3.0, 4.0]]), **kwargs)
    _one_line(excinfo)


# -- results -----------------------------------------------------------------------------------


def test_results_to_dict_are_json_and_say_their_parameters():
    x = np.random.default_rng(13).normal(size=(20, 2))
    d = add_noise(x, method="kim", noise=50, rng=1, names=["a", "b"]).to_dict()
    assert d["method"] == "kim" and d["alpha"] == 0.5 and d["sd_factor"] is None
    assert d["c"] == pytest.approx(math.sqrt(19 / (20 * 1.5 - 1)))
    assert d["columns"] == ["a", "b"] and len(d["masked"]) == 20
    d = add_noise(x, noise=50, rng=1).to_dict()
    assert d["sd_factor"] == 0.5 and d["alpha"] is None
    d = rank_swap(x, p=10, rng=1).to_dict()
    assert d["p"] == 10 and d["window"] == 2
    for r in (add_noise(x, rng=1), rank_swap(x, rng=1), top_bottom_code(x, top=0.0)):
        json.dumps(r.to_dict())
        assert r.to_pandas().shape == (20, 2)
