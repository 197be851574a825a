"""MGAS discretization (seed 002, Ma Sec. 2.3) and the PRAM experiments' building blocks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.errors import ParameterError
from privlab.publish.mgas import MGAS_MAX_POINTS, mgas, mgas_1d


def _check_groups(x, res, k, g):
    assert res.labels.shape == x.shape
    assert res.counts.sum() == x.size
    np.testing.assert_array_equal(np.bincount(res.labels, minlength=res.n_groups), res.counts)
    # groups are disjoint intervals in value order
    assert np.all(res.hi[:-1] < res.lo[1:])
    for i in range(res.n_groups):
        members = x[res.labels == i]
        assert members.min() == res.lo[i] and members.max() == res.hi[i]
        assert members.mean() == pytest.approx(res.means[i])
    if x.size >= k and x.max() - x.min() >= g:
        assert res.counts.min() >= k
        assert (res.hi - res.lo).min() >= g - 1e-12


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=120),
    k=st.integers(1, 30),
    g=st.floats(0, 20),
)
def test_mgas_groups_are_intervals_meeting_both_constraints(values, k, g):
    x = np.round(np.asarray(values), 2)
    res = mgas_1d(x, min_records=k, granularity=g)
    _check_groups(x, res, k, g)


def test_mgas_small_example_by_hand():
    x = np.array([0.0, 0.1, 0.2, 5.0, 5.1, 5.2, 9.0])
    res = mgas_1d(x, min_records=3, granularity=0.15)
    # {0, .1, .2} and {5, 5.1, 5.2} finish; 9.0 is a leftover and joins the nearest finished
    np.testing.assert_array_equal(res.labels, [0, 0, 0, 1, 1, 1, 1])
    np.testing.assert_allclose(res.means, [0.1, (5 + 5.1 + 5.2 + 9) / 4])
    np.testing.assert_allclose(res.edges, [0.0, 2.6, 9.0])


def test_mgas_two_triangle_and_bad_input():
    from privlab.experiments.pram_mgas import density, sample

    rng = np.random.default_rng(0)
    x = sample(30_000, rng)
    res = mgas_1d(x, min_records=500, granularity=0.25)
    _check_groups(x, res, 500, 0.25)
    grid = np.linspace(-1, 21, 20_001)
    assert np.trapezoid(density(grid), grid) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ParameterError, match="min_records = 0"):
        mgas_1d(x, min_records=0, granularity=0.1)
    with pytest.raises(ParameterError, match="granularity = -1"):
        mgas_1d(x, min_records=5, granularity=-1)
    with pytest.raises(ParameterError, match="at least one value"):
        mgas_1d([], min_records=5, granularity=0.1)
    with pytest.raises(ParameterError, match="finite"):
        mgas_1d([1.0, np.nan], min_records=1, granularity=0.1)


def test_l1_density_distance_is_zero_for_the_exact_histogram():
    from privlab.metrics.pram import l1_density_distance

    edges = np.array([0.0, 1.0, 3.0])

    def f(x):
        return np.where(x < 1, 0.5, 0.25)

    assert l1_density_distance(f, edges, [50, 50]) == pytest.approx(0.0)
    assert l1_density_distance(f, edges, [100, 0]) == pytest.approx(1.0)


def test_pram_gamma_and_odds_ratio_experiments_quick(tmp_path):
    from privlab.experiments import run_experiment

    res = run_experiment("pram-gamma", quick=True, out=tmp_path / "g", progress=False)
    t51 = {r["variable"]: r["gamma"] for r in res.rows if r["table"] == "5.1"}
    assert t51 == pytest.approx(
        {"A": 3, "L": 4.6667, "B": 4.6667, "E": 4, "D": 3, "X": 4, "C": 7.5, "F": 7.5}, abs=1e-4
    )
    assert (tmp_path / "g" / "pram_gamma.png").is_file()
    res = run_experiment("pram-odds-ratio", quick=True, out=tmp_path / "o", progress=False)
    r, r_hat = res.rows
    assert r["median"] == pytest.approx(1.0, abs=0.02) and r["sd"] < 0.06
    assert r_hat["sd"] > 20 * r["sd"]  # independence is fragile under PRAM
    assert r_hat["q97.5"] - r_hat["q2.5"] > 3


def test_estimation_experiment_building_block():
    from privlab.estimate.pram import em_estimate, moment_estimate
    from privlab.experiments.pram_estimation import PMF, sample_and_randomize

    assert PMF.sum() == pytest.approx(1.0) and PMF[1] == pytest.approx(0.3 / 0.95)
    true, obs, f = sample_and_randomize(5000, 0.5, np.random.default_rng(1))
    assert true.sum() == obs.sum() == 5000
    mom = moment_estimate(obs, f)
    em = em_estimate(obs, f, tol=1e-8, max_iter=50_000)
    assert np.all(em.counts >= 0) and mom.sum() == pytest.approx(5000)
    # both land near the truth on the big cells (sd ~ 100 at p = 0.5, N = 5000)
    big = true > 400
    assert np.all(np.abs(mom[big] - true[big]) < 400)
    assert np.all(np.abs(em.counts[big] - true[big]) < 400)


# -- the general (multivariate) MGAS -------------------------------------------------------------
def _mgas_literal(points, k, g):
    """Ma Sec. 2.3 read literally, with plain loops: the oracle for :func:`mgas`.

    Clusters are lists of distinct-point indices (points in lexicographic order, as
    np.unique sorts them); ties go to the lowest pair of indices.
    """
    uniq, inv, cnt = np.unique(points, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    clusters = [[i] for i in range(len(uniq))]

    def size(c):
        return sum(int(cnt[i]) for i in c)

    def cen(c):
        return sum(cnt[i] * uniq[i] for i in c) / size(c)

    def diam(c):
        return max(float(np.linalg.norm(uniq[i] - uniq[j])) for i in c for j in c)

    def done(c):
        return size(c) >= k and diam(c) >= g

    active = [c for c in clusters if not done(c)]
    final = [c for c in clusters if done(c)]
    while len(active) >= 2:
        best = None
        for a in range(len(active)):
            for b in range(a + 1, len(active)):
                d = float(np.linalg.norm(cen(active[a]) - cen(active[b])))
                if best is None or d < best[0] - 1e-12:
                    best = (d, a, b)
        _, a, b = best
        merged = active[a] + active[b]
        active = [c for i, c in enumerate(active) if i not in (a, b)]
        (final if done(merged) else active).append(merged)
    for c in active:  # the leftover joins the finished cluster with the nearest centroid
        if final:
            j = min(range(len(final)), key=lambda q: float(np.linalg.norm(cen(final[q]) - cen(c))))
            final[j] = final[j] + c
        else:
            final = [c]
    group_of_point = {i: q for q, c in enumerate(final) for i in c}
    return [frozenset(np.flatnonzero([group_of_point[i] == q for i in inv])) for q in
            range(len(final))]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(5, 40), st.integers(1, 2), st.integers(1, 6),
       st.floats(0, 1.5))  # fmt: skip
def test_general_mgas_equals_the_literal_algorithm(seed, n, d, k, g):
    rng = np.random.default_rng(seed)
    pts = rng.random((n, d)) * 3
    pts[: n // 4] = pts[n // 4 : 2 * (n // 4)]  # repeated points (weights)
    res = mgas(pts, min_records=k, granularity=g)
    groups = {frozenset(np.flatnonzero(res.labels == q)) for q in range(res.n_groups)}
    assert groups == set(_mgas_literal(pts, k, g))
    for q in range(res.n_groups):
        members = pts[res.labels == q]
        assert res.counts[q] == len(members)
        np.testing.assert_allclose(res.means[q], members.mean(axis=0))
        diam = max(np.linalg.norm(a - b) for a in members for b in members)
        assert res.diameters[q] == pytest.approx(diam)
        if res.n_groups > 1:  # a lone group may be everything, short of the constraints
            assert res.counts[q] >= k and res.diameters[q] >= g - 1e-12
    np.testing.assert_allclose(res.means_of(), res.means[res.labels])


def test_general_mgas_on_two_clouds_and_bad_input():
    rng = np.random.default_rng(0)
    pts = np.vstack([rng.normal(0, 0.3, (300, 2)), rng.normal(5, 0.3, (300, 2))])
    res = mgas(pts, min_records=100, granularity=0.5)
    assert res.n_groups >= 2
    # Ma's literal algorithm: the last unfinished clusters of the two clouds are each other's
    # only partners, so at most one group (holding those leftovers) straddles the clouds
    straddle = [q for q in range(res.n_groups) if 0 < (pts[res.labels == q, 0] > 2.5).mean() < 1]
    assert len(straddle) <= 1
    assert res.counts.min() >= 100 and res.diameters.min() >= 0.5
    with pytest.raises(ParameterError, match="min_records"):
        mgas(pts, min_records=0, granularity=1)
    with pytest.raises(ParameterError, match="granularity"):
        mgas(pts, min_records=2, granularity=-1)
    with pytest.raises(ParameterError, match="finite"):
        mgas(np.array([[0.0, np.nan]]), min_records=1, granularity=0)
    with pytest.raises(ParameterError, match="distinct points"):
        mgas(np.arange(MGAS_MAX_POINTS + 1.0), min_records=1, granularity=0)
