"""The DP tree's compiled fit: its kernels count what the numpy reference counts, score with
the same floats, and draw the same noise (so a seeded fit grows the same tree)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from privlab.dp import samplers
from privlab.learn.dp_tree import (
    CRITERIA,
    THRESHOLD_GRID,
    DPDecisionTreeClassifier,
    _grid_index,
    _kernel,
    _ranges_from_table,
    quality,
    stacked_quality,
)
from test_dp_mechanisms import _pmf_chi2

pytestmark = [
    pytest.mark.filterwarnings("ignore:the class labels are taken:privlab.errors.PrivacyWarning"),
]


def _reference_ranges(x, y, n_classes, lo, hi, criterion):
    """One continuous feature's candidates as the numpy reference (``_ranges_from_table``
    and ``_grid_index``) computes them: kept ranges' grid points and scores."""
    u, inv = np.unique(x, return_inverse=True)
    tab = np.bincount(inv * n_classes + y, minlength=u.size * n_classes).reshape(-1, n_classes)
    edges, q = _ranges_from_table(tab, u, lo, hi, criterion)
    idx = _grid_index(edges, lo, hi)
    keep = np.diff(idx) > 0
    return idx[:-1][keep], idx[1:][keep], q[keep]


@pytest.mark.parametrize("criterion", ["info_gain", "gini", "max"])
@pytest.mark.parametrize("seed", range(6))
def test_continuous_ranges_are_the_reference_ones(criterion, seed):
    """The kernel's ranges of every feature of a node (a random subset of the records, ties
    and values at the bounds included) and their scores are the reference's, bit for bit."""
    kern = _kernel()
    rng = np.random.default_rng(seed)
    n, C = 400, 3
    y = rng.integers(0, C, n)
    lo, hi = np.array([0.0, -3.0, 0.0]), np.array([1.0, 5.0, 1e-3])
    cols = [
        np.round(rng.random(n), 2),  # ties
        np.clip(rng.normal(1, 3, n), -3, 5),  # at the bounds
        rng.random(n) * 1e-3,  # a narrow interval: ranges without a grid point
    ]
    orders = np.empty((4, n), dtype=np.int64)
    orders[0] = rng.permutation(n)
    ranks = np.empty((3, n), dtype=np.int64)
    uniq, start = [], [0]
    for k, x in enumerate(cols):
        u, ranks[k] = np.unique(x, return_inverse=True)
        orders[1 + k] = np.argsort(x, kind="stable")
        uniq.append(u)
        start.append(start[-1] + u.size)
    # a node: the records of a random subset, kept in each order's sorted position
    member = rng.random(n) < 0.6
    for k in range(4):
        orders[k] = np.concatenate([orders[k][member[orders[k]]], orders[k][~member[orders[k]]]])
    m = int(member.sum())
    feats = np.array([2, 0, 1])
    which, a, b, left = kern.continuous_ranges(
        orders, 0, m, y, C, ranks, np.concatenate(uniq), np.asarray(start), feats,
        lo[feats], hi[feats], THRESHOLD_GRID,
    )  # fmt: skip
    totals = np.bincount(y[member], minlength=C).astype(float)
    q = quality(np.stack([left, totals - left], axis=1), criterion)
    for pos, k in enumerate(feats):
        ra, rb, rq = _reference_ranges(cols[k][member], y[member], C, lo[k], hi[k], criterion)
        sel = which == pos
        assert a[sel].tolist() == ra.tolist()
        assert b[sel].tolist() == rb.tolist()
        assert q[sel].tolist() == rq.tolist()  # the same floats, not merely close


def test_continuous_ranges_of_an_empty_node():
    kern = _kernel()
    orders = np.zeros((2, 0), dtype=np.int64)
    which, a, b, left = kern.continuous_ranges(
        orders, 0, 0, np.zeros(0, dtype=np.int64), 2, np.zeros((1, 0), dtype=np.int64),
        np.zeros(0), np.zeros(2, dtype=np.int64), np.array([0]), np.array([0.0]),
        np.array([1.0]), THRESHOLD_GRID,
    )  # fmt: skip
    assert which.tolist() == [0] and a.tolist() == [0] and b.tolist() == [THRESHOLD_GRID + 1]
    assert left.tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("criterion", CRITERIA)
def test_stacked_quality_is_quality_table_by_table(criterion):
    rng = np.random.default_rng(1)
    for _ in range(200):
        C = int(rng.integers(2, 5))
        sizes = rng.integers(1, 45, size=rng.integers(1, 9))
        tabs = [rng.integers(0, 3000, size=(J, C)) * (rng.random((J, C)) < 0.7) for J in sizes]
        off = np.concatenate([[0], np.cumsum(sizes)])
        got = stacked_quality(np.concatenate(tabs), off, criterion)
        assert got.tolist() == [float(quality(t, criterion)) for t in tabs]


def test_partition_keeps_every_order_sorted_and_stable():
    """Every row of ``orders`` holds the node's records (the kernels' invariant); a split
    gives each child its records in the order they had, so sorted rows stay sorted."""
    kern = _kernel()
    rng = np.random.default_rng(2)
    n = 300
    x = rng.integers(0, 20, n).astype(float)
    codes = rng.integers(0, 4, n)
    orders = np.vstack([rng.permutation(n), np.argsort(x, kind="stable")]).astype(np.int64)
    child, tmp = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    before = orders.copy()
    bounds = kern.partition(orders, 0, n, codes, 0.0, True, 4, child, tmp)
    assert bounds[0] == 0 and bounds[-1] == n
    for v in range(4):
        for k in range(2):  # the records of code v, in the order they had
            part = orders[k, bounds[v] : bounds[v + 1]]
            assert part.tolist() == [r for r in before[k] if codes[r] == v]
    s, e = int(bounds[1]), int(bounds[2])  # split child 1 on x <= 7
    inner = kern.partition(orders, s, e, x, 7.0, False, 2, child, tmp)
    left, right = orders[1, s : inner[1]], orders[1, inner[1] : e]
    assert np.all(x[left] <= 7.0) and np.all(x[right] > 7.0)
    assert np.all(np.diff(x[left]) >= 0) and np.all(np.diff(x[right]) >= 0)
    assert sorted(orders[0, s : inner[1]].tolist()) == sorted(left.tolist())


# -- the compiled few-draw path of the exact discrete Laplace sampler ------------------------
PARAMS = [(1, 1), (1, 12), (3, 7), (1 << 20, 12582913), (1, 1 << 48), (5, 1)]


@pytest.mark.parametrize(("s", "t"), PARAMS)
def test_the_compiled_few_draw_path_draws_what_python_draws(s, t):
    """Word for word: the same draws and the same generator state afterwards."""
    for seed in range(20):
        for size in (1, 2, 7, 32):
            g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
            got = samplers._discrete_laplace_few(s, t, size, samplers._chunk_source(g1))
            randbelow = samplers._scalar_below(g2)
            want = [samplers._discrete_laplace_one(s, t, randbelow) for _ in range(size)]
            assert got.tolist() == want
            assert g1.bit_generator.state == g2.bit_generator.state


def test_discrete_laplace_takes_the_compiled_path_once_loaded_with_the_same_draws(monkeypatch):
    import privlab.dp._sampler_kernel  # noqa: F401

    with_kernel = samplers.discrete_laplace(1 << 20, 12582913, (2,), 7)
    monkeypatch.delitem(sys.modules, samplers._KERNEL_MODULE)
    assert samplers.discrete_laplace(1 << 20, 12582913, (2,), 7).tolist() == with_kernel.tolist()
    assert samplers.discrete_laplace(1, 3, (0,), 7).shape == (0,)


def test_an_integer_beyond_63_bits_hands_the_call_to_python_from_the_same_words(monkeypatch):
    """The kernel's way out (status -2, astronomically rare): the draws are the Python
    path's from the words already read."""
    from privlab.dp import _sampler_kernel

    calls = []

    def stub(s, t, words, pos, out, start):
        calls.append(words.size)
        return (0, 0, -1) if len(calls) == 1 else (0, 0, -2)  # one more chunk, then give up

    monkeypatch.setattr(_sampler_kernel, "discrete_laplace_popped", stub)
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    got = samplers._discrete_laplace_few(1 << 20, 12582913, 5, samplers._chunk_source(g1))
    randbelow = samplers._scalar_below(g2)
    want = [samplers._discrete_laplace_one(1 << 20, 12582913, randbelow) for _ in range(5)]
    assert calls == [32, 64] and got.tolist() == want


@pytest.mark.parametrize("rng", [3, None], ids=["seeded", "os-csprng"])
@pytest.mark.parametrize(("s", "t"), [(1, 1), (7, 20), (1 << 20, 3 * (1 << 20) + 1)])
def test_the_compiled_few_draw_path_is_exact(rng, s, t):
    """200,000 draws (fixed generator, or the OS CSPRNG) accept the discrete Laplace of
    scale ``t/s`` (p > 1e-4) and reject one 30% wider or narrower (p < 1e-6)."""
    fetch = samplers._chunk_source(None if rng is None else np.random.default_rng(rng))
    draws = samplers._discrete_laplace_few(s, t, 200_000, fetch)
    assert _pmf_chi2(draws, t / s) > 1e-4
    assert _pmf_chi2(draws, 1.3 * t / s) < 1e-6
    assert _pmf_chi2(draws, 0.7 * t / s) < 1e-6


# -- whole fits ---------------------------------------------------------------------------
@pytest.mark.parametrize("criterion", CRITERIA)
def test_a_seeded_fit_is_reproducible_and_its_leaves_hold_every_record(criterion):
    rng = np.random.default_rng(4)
    n = 3000
    X = np.column_stack([rng.integers(0, 5, n), rng.integers(0, 2, n), rng.random(n)])
    y = ((X[:, 0] > 1) ^ (X[:, 2] > 0.4)).astype(int)
    kw = dict(epsilon=_epsilon(criterion), max_depth=6, criterion=criterion,
              categorical_features=[0, 1], categories=[5, 2], bounds=([0, 0, 0], [4, 1, 1]),
              classes=[0, 1], n_records=n)  # fmt: skip
    a = DPDecisionTreeClassifier(rng=9, **kw).fit(X, y)
    b = DPDecisionTreeClassifier(rng=9, **kw).fit(X, y)
    assert a.export_text() == b.export_text()
    assert np.array_equal(a.node_proba_, b.node_proba_, equal_nan=True)
    if kw["epsilon"] == math.inf:  # exact counts: the leaves partition the records
        leaves = a.node_feature_ < 0
        total = sum(a._nodes[i].counts.sum() for i in np.flatnonzero(leaves))
        assert total == n
        assert np.mean(a.predict(X) == y) > 0.99


def _epsilon(criterion: str) -> float:
    """ε = inf (exact counts) for the exponential-mechanism criteria, 5 for SuLQ."""
    return 5.0 if criterion == "noisy_counts" else math.inf
