"""Distance-based record linkage and sdcMicro's interval disclosure
(privlab.attacks.record_linkage): the k-d tree against a full distance matrix from scipy's
cdist, ties, shuffled rows, the chance rate under heavy noise, a hand-made interval example,
and refusals in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import poisson

from privlab.attacks import RecordLinkage, record_linkage
from privlab.errors import ParameterError
from privlab.metrics.intervals import wilson


def brute_credit(x: np.ndarray, xm: np.ndarray, truth: np.ndarray, metric: str) -> np.ndarray:
    """Every masked row's credit from the full distance matrix (scipy's own metrics)."""
    if metric == "standardized":
        d = cdist(xm, x, "seuclidean", V=x.var(axis=0, ddof=1))
    else:
        d = cdist(xm, x, "mahalanobis", VI=np.linalg.inv(np.cov(x, rowvar=False)))
    d_min = d.min(axis=1, keepdims=True)
    tied = d <= d_min * (1 + 1e-9) + 1e-12
    hit = tied[np.arange(len(xm)), truth]
    return np.where(hit, 1.0 / tied.sum(axis=1), 0.0)


def table(n: int, rng: np.random.Generator, p: int = 4) -> np.ndarray:
    scales = np.array([1.0, 100.0, 0.01, 10.0, 3.0])[:p]  # standardization matters
    return (rng.normal(size=(n, p)) @ (np.eye(p) + 0.5)) * scales


@pytest.mark.parametrize("metric", ["standardized", "mahalanobis"])
@pytest.mark.parametrize("noise", [0.15, 0.4, 1.0])
def test_tree_equals_full_distance_matrix(metric, noise):
    rng = np.random.default_rng(int(noise * 100))
    x = table(150, rng)
    xm = x + rng.normal(size=x.shape) * x.std(axis=0) * noise
    r = record_linkage(x, xm, metric=metric)
    expected = brute_credit(x, xm, np.arange(150), metric)
    np.testing.assert_array_equal(r.credit, expected)
    assert 0 < r.rate.value < 1
    assert r.rate.value == pytest.approx(expected.mean(), rel=1e-14)
    low, high = wilson(expected.sum(), 150, 0.95)
    assert (r.rate.low, r.rate.high) == pytest.approx((low, high), rel=1e-12)
    # the tree's nearest row is at the matrix's nearest distance
    d = cdist(xm, x, "seuclidean", V=x.var(axis=0, ddof=1)) if metric == "standardized" else (
        cdist(xm, x, "mahalanobis", VI=np.linalg.inv(np.cov(x, rowvar=False))))  # fmt: skip
    np.testing.assert_allclose(d[np.arange(150), r.nearest], d.min(axis=1), rtol=1e-9)


def test_default_metric_is_standardized_and_scale_free():
    rng = np.random.default_rng(1)
    x = table(100, rng)
    xm = x + rng.normal(size=x.shape) * x.std(axis=0) * 0.5
    r = record_linkage(x, xm)
    assert r.metric == "standardized"
    # rescaling a column of both tables changes nothing
    s = np.array([1e3, 1e-3, 1.0, 7.0])
    np.testing.assert_array_equal(record_linkage(x * s, xm * s).credit, r.credit)
    # unstandardized Euclidean distance would link differently on these scales
    raw = cdist(xm, x).argmin(axis=1) == np.arange(100)
    assert raw.mean() != r.rate.value


def test_identical_masked_table_links_every_record():
    rng = np.random.default_rng(2)
    x = table(200, rng)
    for metric in ("standardized", "mahalanobis"):
        r = record_linkage(x, x.copy(), metric=metric)
        assert r.rate.value == 1.0 and r.rate.high == 1.0 and r.tied == 0
        assert r.linked.all() and (r.nearest == np.arange(200)).all()
        assert r.interval_share == 1.0


def test_heavy_noise_links_at_chance():
    # noise 1000 deviations wide: the nearest original no longer depends on the true one,
    # each masked row hits with probability about 1/n; 40 tables of 100 rows: Poisson(40)
    rng = np.random.default_rng(3)
    hits = 0.0
    for _ in range(40):
        x = table(100, rng)
        r = record_linkage(x, x + rng.normal(size=x.shape) * x.std(axis=0) * 1000)
        hits += r.credit.sum()
        assert r.chance == 0.01
    assert poisson.ppf(0.0005, 40) <= hits <= poisson.ppf(0.9995, 40)


def test_ties_between_duplicated_originals_split_the_credit():
    rng = np.random.default_rng(4)
    x = table(20, rng)
    x[1] = x[0]  # a pair of duplicates
    x[5] = x[6] = x[7]  # and a triple
    r = record_linkage(x, x.copy())
    expected = np.ones(20)
    expected[[0, 1]] = 1 / 2
    expected[[5, 6, 7]] = 1 / 3
    np.testing.assert_array_equal(r.credit, expected)
    assert r.rate.value == pytest.approx(expected.mean(), rel=1e-14)
    assert r.tied == 5 and r.linked.sum() == 20
    np.testing.assert_array_equal(r.credit, brute_credit(x, x, np.arange(20), "standardized"))
    # a masked copy of row 0 moved onto row 2: row 0's truth is no longer among the nearest
    xm = x.copy()
    xm[0] = x[2]
    r2 = record_linkage(x, xm)
    assert r2.credit[0] == 0 and r2.credit[1] == 0.5 and r2.credit[2] == 1.0


def test_shuffled_masked_rows_with_their_truth_give_the_same_links():
    rng = np.random.default_rng(5)
    x = table(120, rng)
    x[3] = x[4]
    xm = x + rng.normal(size=x.shape) * x.std(axis=0) * 0.3
    xm[4] = x[4]
    base = record_linkage(x, xm)
    perm = rng.permutation(120)
    r = record_linkage(x, xm[perm], truth_rows=perm)
    np.testing.assert_array_equal(r.credit, base.credit[perm])
    np.testing.assert_array_equal(r.interval_at_risk, base.interval_at_risk[perm])
    assert r.rate.value == base.rate.value and r.interval_share == base.interval_share
    # the wrong truth (the identity) on shuffled rows links almost nothing
    assert record_linkage(x, xm[perm]).rate.value < base.rate.value / 4


def test_a_masked_subset_with_its_truth():
    rng = np.random.default_rng(6)
    x = table(80, rng)
    rows = rng.choice(80, size=30, replace=False)
    xm = x[rows] + rng.normal(size=(30, 4)) * x.std(axis=0) * 0.2
    r = record_linkage(x, xm, truth_rows=rows)
    np.testing.assert_array_equal(r.credit, brute_credit(x, xm, rows, "standardized"))
    assert (r.n_original, r.n_masked, r.rate.n) == (80, 30, 30)


def test_interval_disclosure_by_hand():
    # masked columns [0, 1, 2] and [0, 2, 4]: deviations 1 and 2; k = 0.5 gives half-widths
    # 0.5 and 1 around each masked value
    xm = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 4.0]])
    x = xm + np.array([[0.5, -1.0], [0.25, -1.5], [-0.75, 0.0]])
    r = record_linkage(x, xm, interval_k=0.5)
    # row 0 on both ends (inside, ends included); row 1 outside in column 1 only; row 2
    # outside in column 0 only: at risk only when inside in every column
    np.testing.assert_array_equal(r.interval_at_risk, [True, False, False])
    assert r.interval_share == pytest.approx(1 / 3)
    assert record_linkage(x, xm, interval_k=0.49).interval_share == 0
    assert record_linkage(x, xm, interval_k=1.5).interval_share == 1
    # sdcMicro's default k = 0.05 and the masked table's deviations (not the original's)
    r0 = record_linkage(x, xm)
    assert r0.interval_k == 0.05 and r0.interval_share == 0
    # S' = 1 in column 0: a half-width of 0.05
    assert record_linkage(xm + np.array([0.04, 0.0]), xm).interval_share == 1.0
    assert record_linkage(xm + np.array([0.06, 0.0]), xm).interval_share == 0.0


def test_to_dict_is_json_and_to_pandas_has_a_row_per_masked_record():
    rng = np.random.default_rng(7)
    x = table(50, rng)
    r = record_linkage(x, x + rng.normal(size=x.shape) * x.std(axis=0) * 0.2)
    assert isinstance(r, RecordLinkage)
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["rate"]["value"] == pytest.approx(r.rate.value) and d["rate"]["n"] == 50
    assert d["linked"] == int(r.linked.sum()) and d["chance"] == 0.02
    assert d["interval_disclosure"] == {"k": 0.05, "share": r.interval_share}
    df = r.to_pandas()
    assert list(df.columns) == ["credit", "linked", "nearest", "interval_at_risk"]
    assert len(df) == 50


X = np.array([[1.0, 10.0], [2.0, 30.0], [3.0, 20.0], [4.0, 40.0]])


@pytest.mark.parametrize(
    ("original", "masked", "kwargs", "match"),
    [
        (X, X[:, :1], {}, "2 column\\(s\\) but the masked one has 1"),
        (X, X[:3], {}, "4 rows but the masked one has 3: say which"),
        (X, np.where(X == 2.0, np.nan, X), {}, "missing or infinite"),
        (np.where(X == 2.0, -np.inf, X), X, {}, "missing or infinite"),
        (X[:1], X[:1], {}, "at least 2 rows"),
        (np.c_[X, np.ones(4)], np.c_[X, np.ones(4)], {}, "column 2 is constant"),
        (np.c_[X, 2 * X[:, 0]], np.c_[X, 2 * X[:, 0]], {"metric": "mahalanobis"}, "singular"),
        (X, X, {"metric": "euclid"}, "metric must be one of"),
        (X, X, {"interval_k": -0.1}, "interval_k must be"),
        (X, X, {"interval_k": math.nan}, "interval_k must be"),
        (X, X, {"level": 1.0}, "level must lie"),
        (X, X, {"truth_rows": [0, 1, 2]}, "one row number per masked row"),
        (X, X, {"truth_rows": [0, 1, 2, 4]}, "lie in \\[0, 4\\)"),
        (X, X, {"truth_rows": [0, 1, 2, -1]}, "lie in \\[0, 4\\)"),
        (X, X, {"truth_rows": [0, 1, 2, 2.5]}, "whole row numbers"),
    ],
)
def test_bad_input_is_refused_in_one_line(original, masked, kwargs, match):
    with pytest.raises(ParameterError, match=match) as err:
        record_linkage(original, masked, **kwargs)
    assert "\n" not in str(err.value)
