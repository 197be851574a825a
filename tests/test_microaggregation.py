"""Microaggregation's core (privlab.publish.microaggregation_core, issue 35 item 1).

Oracles: a line-by-line transliteration of sdcMicro's MDAV loop (``src/Mdav.cpp``, in
double precision) that the k-d tree kernel must match group for group, ties included; the
published information loss of MDAV on the CASC "Census" reference file (bundled in
sdcMicro as ``CASCrefmicrodata``); exhaustive optima over every partition of tiny tables
for Hansen & Mukherjee's algorithm and for MDAV's distance from the optimum; properties
(group sizes, means kept) by hypothesis.  Nothing here is random: no ``rng``.
"""

from __future__ import annotations

import gzip
import math
from functools import cache
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privlab.errors import ParameterError
from privlab.publish.microaggregation_core import (
    Microaggregation,
    aggregate,
    information_loss,
    mdav,
    mdav_categorical,
    medoid_microaggregation,
    medoids,
    microaggregate,
    refine,
    univariate_optimal,
)

DATA = Path(__file__).parent / "data" / "sdcmicro" / "CASCrefmicrodata.csv.gz"


# ---------------------------------------------------------------- references (slow, plain)


def reference_mdav(z: np.ndarray, k: int, w: np.ndarray | None = None) -> np.ndarray:
    """sdcMicro's ``Mdav.cpp`` loop on already-scaled ``z``: the average record, the row
    farthest from it (first row on a tie: strict ``>`` in row order), the row farthest from
    that one, then the ``k`` remaining rows closest to each (equal distances: later row
    first, the order of its hash sort).  The average is weighted by ``w`` when given."""
    n, p = z.shape
    w = np.ones(n) if w is None else w
    live = list(range(n))
    groups = np.full(n, -1)
    label = 0

    def farthest(q, rows):
        best, best_d = rows[0], -1.0
        for i in rows:
            d = float(((q - z[i]) ** 2).sum())
            if d > best_d:
                best, best_d = i, d
        return best

    def closest(q, rows):
        d = {i: float(((q - z[i]) ** 2).sum()) for i in rows}
        return sorted(rows, key=lambda i: (d[i], -i))[:k]

    while len(live) >= 2 * k:
        total = math.fsum(w[live])
        centre = np.array([math.fsum(w[live] * z[live, j]) for j in range(p)]) / total
        r = farthest(centre, live)
        rounds = 2 if len(live) >= 3 * k else 1
        s = farthest(z[r], live) if rounds == 2 else r
        for q in (z[r].copy(), z[s].copy())[:rounds]:
            groups[closest(q, live)] = label
            label += 1
            live = [i for i in live if groups[i] < 0]
    groups[live] = label
    return groups


def reference_hamming(codes: np.ndarray, k: int) -> np.ndarray:
    """The same loop on codes, Hamming distance, per-column mode (smallest code on a tie)
    as the average record."""
    n, p = codes.shape
    live = list(range(n))
    groups = np.full(n, -1)
    label = 0

    def dist(a, b):
        return int((a != b).sum())

    while len(live) >= 2 * k:
        centre = np.array([np.bincount(codes[live, j]).argmax() for j in range(p)])
        r = max(live, key=lambda i: (dist(codes[i], centre), -i))
        rounds = 2 if len(live) >= 3 * k else 1
        s = max(live, key=lambda i: (dist(codes[i], codes[r]), -i))
        for q in (codes[r].copy(), codes[s].copy())[:rounds]:
            near = sorted(live, key=lambda i: (dist(codes[i], q), -i))[:k]
            groups[near] = label
            label += 1
            live = [i for i in live if groups[i] < 0]
    groups[live] = label
    return groups


def subset_sse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SSE and size of every subset of the rows, indexed by bit mask."""
    n = x.shape[0]
    member = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
    size = member.sum(1)
    s1 = member @ x
    s2 = member @ (x * x).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        sse = s2 - (s1 * s1).sum(1) / size
    return np.where(size > 0, np.maximum(sse, 0.0), 0.0), size


def optimum_all_partitions(x: np.ndarray, k: int) -> float:
    """The least SSE over *every* partition of the rows into groups of at least ``k``
    (no contiguity, no upper size): a dynamic programme over subsets, the group of the
    lowest remaining row chosen among all its submasks (3^n steps)."""
    n = x.shape[0]
    sse, size = subset_sse(x)
    best = np.full(1 << n, np.inf)
    best[0] = 0.0
    for mask in range(1, 1 << n):
        low = mask & -mask
        rest = mask ^ low
        sub = rest
        while True:
            g = sub | low
            if size[g] >= k:
                best[mask] = min(best[mask], sse[g] + best[mask ^ g])
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return float(best[-1])


def contiguous_optimum(v: np.ndarray, k: int) -> float:
    """The least SSE over every cut of the sorted values into runs of ``k .. 2k - 1``,
    enumerated (every composition of ``n`` into such parts)."""
    v = np.sort(v)
    n = v.size
    best = np.inf

    def walk(start: int, acc: float) -> None:
        nonlocal best
        if start == n:
            best = min(best, acc)
            return
        for size in range(k, 2 * k):
            if start + size <= n:
                run = v[start : start + size]
                walk(start + size, acc + float(((run - run.mean()) ** 2).sum()))

    walk(0, 0.0)
    return best


def sse_of(x: np.ndarray, groups: np.ndarray) -> float:
    x = x.reshape(len(x), -1)
    return float(sum(((x[groups == g] - x[groups == g].mean(0)) ** 2).sum()
                     for g in np.unique(groups)))  # fmt: skip


def zscores(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(0)) / x.std(0)


def sizes_ok(groups: np.ndarray, k: int, n: int) -> None:
    sizes = np.bincount(groups)
    assert sizes.sum() == n and (sizes >= k).all() and (sizes <= max(2 * k - 1, k)).all()
    if n >= 2 * k:  # every group but the last formed has exactly k
        assert (sizes[:-1] == k).all()


# ------------------------------------------------------------------ MDAV: deterministic


def test_mdav_matches_sdcmicro_loop_on_continuous_and_tied_tables():
    for seed in range(120):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 160))
        p = int(rng.integers(1, 5))
        k = int(rng.integers(1, min(n, 7) + 1))
        if seed % 2:  # small integers: duplicates and equal distances everywhere
            x = rng.integers(0, 4, (n, p)).astype(float)
            got, z = mdav(x, k, standardize=False), x
        else:
            x = rng.normal(size=(n, p)) * rng.uniform(0.1, 100, p)
            got, z = mdav(x, k), zscores(x)
        np.testing.assert_array_equal(got, reference_mdav(z, k), err_msg=f"seed {seed}")


def test_mdav_matches_the_loop_with_weights_and_beyond_one_leaf():
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        x = rng.integers(0, 7, (700, 3)).astype(float) if seed == 1 else rng.normal(size=(700, 3))
        w = rng.uniform(1, 50, 700)
        np.testing.assert_array_equal(
            mdav(x, 3, standardize=False, weights=w), reference_mdav(x, 3, w)
        )


def test_mdav_tie_rules_on_a_hand_table():
    # four copies of a point and one of another, k = 2 (5 records: one round, then the
    # last group): the average is (0.8, 0), the farthest is row 4; its two closest are
    # itself and, of the four rows tied at distance 16, the *last* (row 3)
    x = np.array([[0.0, 0], [0, 0], [0, 0], [0, 0], [4, 0]])
    assert mdav(x, 2, standardize=False).tolist() == [1, 1, 1, 0, 0]


def test_mdav_groups_follow_the_steps_exactly():
    # n = 7, k = 2: two rounds of two groups (7 >= 6), then 3 left (< 4): the last group
    x = np.array([[0.0], [1], [2], [10], [11], [12], [30]])
    g = mdav(x, 2, standardize=False)
    # average 9.43: farthest 30 takes 12; farthest from 30 is 0, which takes 1
    assert g.tolist() == [1, 1, 2, 2, 2, 0, 0]
    # n = 5, k = 2: one round of one group (4 <= 5 < 6), then 3 left
    assert mdav(np.array([[0.0], [1], [2], [3], [9]]), 2, standardize=False).tolist() == [
        1, 1, 1, 0, 0]  # fmt: skip
    # n < 2k: a single group
    assert mdav(np.arange(5.0), 3).tolist() == [0] * 5
    # k = 1: every record alone
    assert sorted(mdav(np.arange(6.0), 1).tolist()) == list(range(6))


def test_mdav_recovers_well_separated_clusters_of_k():
    rng = np.random.default_rng(7)
    centres = rng.normal(scale=100, size=(20, 3))
    x = np.repeat(centres, 4, axis=0) + rng.normal(scale=0.01, size=(80, 3))
    g = mdav(x, 4, standardize=False)
    truth = np.repeat(np.arange(20), 4)
    assert len({(a, b) for a, b in zip(g, truth, strict=True)}) == 20  # the same partition


def test_standardize_is_invariant_to_scale_and_shift_and_differs_from_raw():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(90, 3))
    moved = x * np.array([1e3, 1e-3, 7]) + np.array([5, -2e4, 0.5])
    np.testing.assert_array_equal(mdav(x, 3), mdav(moved, 3))
    assert not np.array_equal(mdav(moved, 3, standardize=False), mdav(moved, 3))
    # the z-scores are the population ones: ddof does not matter to the groups
    np.testing.assert_array_equal(mdav(x, 3), mdav(zscores(x), 3, standardize=False))


def test_equal_weights_are_no_weights_and_unequal_ones_move_the_average():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 2))
    np.testing.assert_array_equal(mdav(x, 3, weights=np.full(60, 7.5)), mdav(x, 3))
    w = np.where(x[:, 0] > 1, 1000.0, 1.0)
    assert not np.array_equal(mdav(x, 3, weights=w), mdav(x, 3))


# -------------------------------------------------- the published Census results (golden)


def census() -> np.ndarray:
    with gzip.open(DATA, "rt") as f:
        return np.loadtxt(f, delimiter=",", skiprows=1)


@pytest.mark.parametrize(("k", "published"), [(3, 5.69), (4, 7.49), (5, 9.09), (10, 14.16)])
def test_mdav_on_the_census_file_gives_the_published_information_loss(k, published):
    """MDAV on the CASC "Census" file (1,080 records x 13 numerical variables, z-scores):
    SSE/SST x 100 = 5.69, 7.49, 9.09, 14.16 for k = 3, 4, 5, 10, as published for MDAV by
    Domingo-Ferrer, Martinez-Balleste, Mateo-Sanz & Sebe (2006), "Efficient multivariate
    data-oriented microaggregation", VLDB J 15(4), and repeated by later comparisons on
    this file.  (Every group here is of exactly k: 1080 is a multiple of 3, 4, 5 and 10.)"""
    x = census()
    assert x.shape == (1080, 13)
    r = microaggregate(x, k)
    assert round(100 * r.il, 2) == published
    assert r.sst == pytest.approx(1080 * 13)  # z-scores: SST = n p
    assert (r.sizes == k).all()


@pytest.mark.parametrize(
    ("k", "plain", "refined"),
    [(3, 5.69, 4.97), (4, 7.49, 6.60), (5, 9.09, 7.75), (10, 14.16, 11.97)],
)
def test_refined_mdav_on_the_census_file(k, plain, refined):
    """MDAV then :func:`refine` on the Census file: SSE/SST x 100 = 4.97, 6.60, 7.75, 11.97
    for k = 3, 4, 5, 10, against MDAV's published 5.69, 7.49, 9.09, 14.16 (12 to 15% less
    loss).  privlab's own measurement, pinned: no published figure to hold it to."""
    x = census()
    base = microaggregate(x, k)
    r = microaggregate(x, k, refine=True)
    assert round(100 * base.il, 2) == plain and round(100 * r.il, 2) == refined
    assert r.refined and not base.refined and r.to_dict()["refined"] is True
    assert r.sizes.min() >= k and r.sst == base.sst


def test_census_optimal_univariate_beats_mdav_on_one_column():
    x = census()[:, 1]  # AGI
    for k in (3, 5):
        opt = microaggregate(x, k, method="univariate_optimal")
        heur = microaggregate(x, k)
        assert opt.sse <= heur.sse + 1e-9
        assert opt.method == "univariate_optimal" and heur.method == "mdav"


# ----------------------------------------------------- MDAV against the exhaustive optimum

SEEDS = range(40)


@cache
def tiny_table(seed: int) -> tuple[np.ndarray, int, float]:
    """The fixed tiny table of ``seed`` (6 to 12 records, 1 to 3 normal columns, k = 2 or
    3), its k and the least SSE of its z-scores over every partition into groups of >= k."""
    rng = np.random.default_rng(seed)
    n, p, k = int(rng.integers(6, 13)), int(rng.integers(1, 4)), int(rng.integers(2, 4))
    x = rng.normal(size=(n, p))
    return x, k, optimum_all_partitions(zscores(x), k)


def test_mdav_against_the_optimum_over_all_partitions():
    """MDAV has no approximation guarantee.  On these 40 fixed tables of 6 to 12 records
    (1 to 3 normal columns, k = 2 or 3) its SSE is within 5% of the optimum over *every*
    partition into groups of >= k on 19 of them (the optimum itself on 18), the median
    ratio is 1.07 and the worst 2.31: the issue's 5% does not hold table by table on tiny
    tables.  The counts are pinned, so a change in the heuristic shows here."""
    ratios = []
    for seed in SEEDS:
        x, k, opt = tiny_table(seed)
        got, _ = information_loss(x, mdav(x, k))
        assert got >= opt - 1e-9  # the oracle's optimum is a lower bound
        ratios.append(got / opt)
    ratios = np.array(ratios)
    assert int((ratios <= 1.05 + 1e-12).sum()) == 19
    assert int((ratios <= 1 + 1e-9).sum()) == 18  # MDAV finds the optimum itself
    assert 2.3 < ratios.max() < 2.32
    assert 1.07 < np.median(ratios) < 1.075


def test_refined_mdav_against_the_optimum_over_all_partitions():
    """MDAV then :func:`refine`'s local search, on the same 40 tables: within 5% of the
    optimum on all 40 (the optimum itself on 39; the other at 1.0096 of it), against 19
    for plain MDAV (worst 2.31).  The search is a heuristic too: on the next 160 tables
    of the same kind (seeds 40 to 199, measured once, not run here) it was within 5% on
    157 and at worst 1.18 of the optimum.  Pinned, so a change in the search shows here."""
    ratios = []
    for seed in SEEDS:
        x, k, opt = tiny_table(seed)
        plain, _ = information_loss(x, mdav(x, k))
        groups = mdav(x, k, refine=True)
        got, _ = information_loss(x, groups)
        assert opt - 1e-9 <= got <= plain * (1 + 1e-12)
        assert (np.bincount(groups) >= k).all()
        np.testing.assert_array_equal(groups, refine(x, mdav(x, k), k))  # the same search
        ratios.append(got / opt)
    ratios = np.array(ratios)
    assert int((ratios <= 1.05 + 1e-12).sum()) == 40
    assert int((ratios <= 1 + 1e-9).sum()) == 39
    assert 1.0096 < ratios.max() < 1.0097


# ----------------------------------------------------------------- refine: local search


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    pairs = len(set(zip(a.tolist(), b.tolist())))
    return pairs == len(set(a.tolist())) == len(set(b.tolist()))


def weighted_sse(x: np.ndarray, groups: np.ndarray, w: np.ndarray) -> float:
    total = 0.0
    for g in np.unique(groups):
        rows = groups == g
        mean = np.average(x[rows], axis=0, weights=w[rows])
        total += float((w[rows][:, None] * (x[rows] - mean) ** 2).sum())
    return total


def no_move_nor_swap_pays(x: np.ndarray, groups: np.ndarray, k: int, w: np.ndarray) -> None:
    """Every move of one record to another group (its own keeping >= k) and every swap of
    two records of different groups, tried by brute force: none lowers the SSE."""
    best = weighted_sse(x, groups, w)
    slack = 1e-9 * best + 1e-12
    sizes = np.bincount(groups)
    for i in range(groups.size):
        for g in np.unique(groups):
            if g != groups[i] and sizes[groups[i]] > k:
                moved = groups.copy()
                moved[i] = g
                assert weighted_sse(x, moved, w) >= best - slack, (i, g)
        for j in range(i + 1, groups.size):
            if groups[j] != groups[i]:
                swapped = groups.copy()
                swapped[i], swapped[j] = groups[j], groups[i]
                assert weighted_sse(x, swapped, w) >= best - slack, (i, j)


@given(
    st.integers(1, 40),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.booleans(),
)
def test_refine_never_raises_the_sse_and_keeps_every_group_of_k(n, k, p, seed, ties, weighted):
    """From MDAV's groups and from a random partition into groups of >= k: the SSE (the
    weighted one with weights) never rises, every group keeps >= k records, the labels are
    0 .. G - 1, a second search changes nothing, and, with at most 9 groups (where every
    group is a candidate), no single move or swap lowers the SSE."""
    k = min(k, n)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, (n, p)).astype(float) if ties else rng.normal(size=(n, p))
    w = rng.uniform(0.1, 10, n) if weighted else None
    ww = np.ones(n) if w is None else w
    count = int(rng.integers(1, n // k + 1))
    start = np.arange(n) % count
    rng.shuffle(start)
    for first in (start, mdav(x, k, standardize=False, weights=w)):
        groups = refine(x, first, k, standardize=False, weights=w)
        assert weighted_sse(x, groups, ww) <= weighted_sse(x, first, ww) * (1 + 1e-12) + 1e-12
        assert (np.bincount(groups) >= k).all()
        assert set(groups.tolist()) == set(range(groups.max() + 1))
        again = refine(x, groups, k, standardize=False, weights=w)
        np.testing.assert_array_equal(again, groups)  # labels by first row: the partition
        if groups.max() < 9:
            no_move_nor_swap_pays(x, groups, k, ww)


def test_refine_leaves_an_optimal_partition_alone():
    # the optimal univariate groups: no change lowers their SSE, so none is made (on
    # continuous values and on small integers, where equal-cost changes abound)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 60))
        k = int(rng.integers(1, min(n, 5) + 1))
        v = rng.normal(size=n) if seed % 2 else rng.integers(0, 6, n).astype(float)
        if np.ptp(v) == 0:
            continue
        best = univariate_optimal(v, k)
        for standardize in (True, False):
            assert same_partition(refine(v, best, k, standardize=standardize), best), seed
        r = microaggregate(v, k, method="univariate_optimal", refine=True)
        assert same_partition(r.groups, best) and r.refined


def test_refine_by_hand():
    # k = 2: {0, 1, 10} {11, 20, 21}: 10 moves over, and the group of four is cut
    x = np.array([0.0, 1, 10, 11, 20, 21])
    got = refine(x, [0, 0, 0, 1, 1, 1], 2, standardize=False)
    assert got.tolist() == [0, 0, 1, 1, 2, 2]
    assert sse_of(x, got) == pytest.approx(1.5)
    # a swap: {0, 11} {1, 10} -> {0, 1} {10, 11}
    assert refine([0.0, 11, 1, 10], [0, 0, 1, 1], 2, standardize=False).tolist() == [0, 1, 0, 1]
    # no move (every group has k) nor swap pays; dissolving {8, 3} into the others does
    x = np.array([9.0, 2, 10, 8, 1, 3])
    got = refine(x, [0, 1, 0, 2, 1, 2], 2, standardize=False)
    assert got.tolist() == [0, 1, 0, 0, 1, 1] and sse_of(x, got) == pytest.approx(4.0)
    # no move nor swap pays, a cycle does: row 0 to {1, 3}'s group, 3 to {2, 5}'s, 5 to 0's
    x = np.array([[5.0, 1], [0, 1], [2, 4], [2, 0], [2, 3], [4, 4]])
    start = np.array([0, 1, 2, 0, 1, 2])
    for i, j in combinations(range(6), 2):
        if start[i] != start[j]:
            swapped = start.copy()
            swapped[[i, j]] = start[[j, i]]
            assert sse_of(x, swapped) >= sse_of(x, start) == pytest.approx(11.0)
    got = refine(x, start, 2, standardize=False)
    assert got.tolist() == [0, 1, 2, 1, 2, 0] and sse_of(x, got) == pytest.approx(8.0)
    # a group of 2k or more is cut; k = 1 ends with every record alone
    assert sorted(np.bincount(refine(np.arange(8.0), np.zeros(8, int), 2)).tolist()) == [2] * 4
    assert sorted(refine(np.arange(5.0), [0, 0, 0, 1, 1], 1).tolist()) == list(range(5))


def test_refine_with_weights():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(300, 3))
    w = np.where(x[:, 0] > 0.5, 50.0, 1.0)
    z = (x - np.average(x, axis=0, weights=w)) / np.sqrt(
        np.average((x - np.average(x, axis=0, weights=w)) ** 2, axis=0, weights=w))  # fmt: skip
    plain = mdav(x, 3, weights=w)
    refined = mdav(x, 3, weights=w, refine=True)
    np.testing.assert_array_equal(refined, refine(x, plain, 3, weights=w))
    before, _ = information_loss(x, plain, weights=w)
    after, _ = information_loss(x, refined, weights=w)
    assert after < 0.9 * before
    assert after == pytest.approx(weighted_sse(z, refined, w), rel=1e-9)
    # the weights change what the search keeps: without them, another partition
    unweighted = refine(x, plain, 3)
    assert not same_partition(refined, unweighted)
    assert information_loss(x, unweighted, weights=w)[0] > after
    # equal weights are no weights
    np.testing.assert_array_equal(refine(x, plain, 3, weights=np.full(300, 4.0)),
                                  refine(x, plain, 3))  # fmt: skip


def test_refine_on_many_groups_uses_neighbours_and_stays_deterministic():
    # more groups than NEIGHBOURS + 1: the candidates are the nearest groups; the result
    # is the same on a second call and does not depend on how the start is labelled
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2000, 4))
    start = mdav(x, 4)
    got = refine(x, start, 4)
    np.testing.assert_array_equal(got, refine(x, start, 4))
    np.testing.assert_array_equal(refine(x, (start * 7919) % 100003, 4), got)
    assert information_loss(x, got)[0] < 0.9 * information_loss(x, start)[0]
    assert (np.bincount(got) >= 4).all()


# ------------------------------------------------------ optimal univariate microaggregation


def test_univariate_optimal_equals_the_enumerated_contiguous_optimum():
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 16))
        k = int(rng.integers(1, min(n, 5) + 1))
        v = rng.normal(size=n) if seed % 3 else rng.integers(0, 5, n).astype(float)
        g = univariate_optimal(v, k)
        assert sse_of(v, g) == pytest.approx(contiguous_optimum(v, k), rel=1e-9, abs=1e-12)
        sizes_ok_univariate(v, g, k)


def sizes_ok_univariate(v: np.ndarray, g: np.ndarray, k: int) -> None:
    sizes = np.bincount(g)
    assert (sizes >= k).all() and (sizes <= 2 * k - 1).all()
    order = np.argsort(v, kind="stable")
    assert (np.diff(g[order]) >= 0).all()  # runs of the sorted order, numbered upwards


def test_univariate_optimal_is_the_optimum_over_all_partitions():
    """For n <= 10 the optimum over every partition into groups of >= k (any sizes, any
    membership) equals the best contiguous cut into runs of k .. 2k - 1: the two lemmas
    the algorithm rests on, checked, not assumed."""
    for seed in range(25):
        rng = np.random.default_rng(1000 + seed)
        n = int(rng.integers(2, 11))
        k = int(rng.integers(1, min(n, 4) + 1))
        v = rng.normal(size=n) if seed % 2 else rng.integers(0, 4, n).astype(float)
        best = optimum_all_partitions(v[:, None], k)
        assert best == pytest.approx(contiguous_optimum(v, k), rel=1e-9, abs=1e-12)
        assert sse_of(v, univariate_optimal(v, k)) == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_univariate_optimal_is_stable_with_large_values_and_small_gaps():
    # prefix sums of squares would cancel every digit here
    v = 1e9 + np.array([0.0, 0.001, 0.002, 5.0, 5.001, 5.002])
    assert univariate_optimal(v, 3).tolist() == [0, 0, 0, 1, 1, 1]
    assert univariate_optimal(v[::-1], 3).tolist() == [1, 1, 1, 0, 0, 0]


def test_univariate_optimal_takes_one_column():
    assert univariate_optimal(np.arange(6.0)[:, None], 2).tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ParameterError, match="one column"):
        univariate_optimal(np.zeros((6, 2)), 2)


def test_univariate_optimal_on_a_worked_example():
    # 1, 2, 3, 10, 11, 30, 31, 32 with k = 2: {1,2,3} {10,11} {30,31,32}: SSE 2 + 0.5 + 2
    v = np.array([30.0, 1, 11, 2, 32, 3, 10, 31])
    g = univariate_optimal(v, 2)
    assert g.tolist() == [2, 0, 1, 0, 2, 0, 1, 2]
    assert sse_of(v, g) == pytest.approx(4.5)


# --------------------------------------------------------------------------- aggregate()


def test_aggregate_gives_group_means_and_weighted_means():
    x = np.array([[1.0, 10], [3, 20], [5, 30], [7, 40]])
    g = np.array([0, 0, 1, 1])
    np.testing.assert_allclose(aggregate(x, g), [[2, 15], [2, 15], [6, 35], [6, 35]])
    w = np.array([1.0, 3, 1, 1])
    np.testing.assert_allclose(aggregate(x, g, weights=w), [[2.5, 17.5], [2.5, 17.5],
                                                             [6, 35], [6, 35]])  # fmt: skip
    # any labels: only equality matters; a 1-d column stays 1-d
    np.testing.assert_allclose(aggregate(x[:, 0], [5, 5, 9, 9]), [2, 2, 6, 6])


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(-1e6, 1e6), min_size=2 * n, max_size=2 * n),
            st.lists(st.integers(0, 5), min_size=n, max_size=n),
            st.lists(st.floats(0.01, 100), min_size=n, max_size=n),
        )
    )
)
def test_aggregate_keeps_the_means_and_the_weighted_totals(data):
    values, labels, weights = data
    x = np.array(values).reshape(-1, 2)
    g, w = np.array(labels), np.array(weights)
    scale = np.abs(x).sum(0) + 1
    np.testing.assert_allclose(aggregate(x, g).sum(0), x.sum(0), rtol=0, atol=1e-12 * scale.max())
    wx = w[:, None] * x
    tol = 1e-11 * np.abs(wx).sum(0).max() + 1e-12
    np.testing.assert_allclose((w[:, None] * aggregate(x, g, weights=w)).sum(0), wx.sum(0),
                               rtol=0, atol=tol)  # fmt: skip
    out = aggregate(x, g)
    for label in np.unique(g):  # constant within a group, between the group's min and max
        block = out[g == label]
        assert (block == block[0]).all()
        assert (block[0] >= x[g == label].min(0) - 1e-9 * scale).all()
        assert (block[0] <= x[g == label].max(0) + 1e-9 * scale).all()


# ------------------------------------------------------------------------- hypothesis


@given(st.integers(1, 120), st.integers(1, 9), st.integers(0, 2**32 - 1), st.booleans())
def test_mdav_group_sizes(n, k, seed, ties):
    k = min(k, n)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, (n, 2)).astype(float) if ties else rng.normal(size=(n, 2))
    g = mdav(x, k, standardize=False)
    sizes_ok(g, k, n)
    assert set(g.tolist()) == set(range(g.max() + 1))


@given(st.integers(1, 200), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_univariate_optimal_sizes_and_no_worse_than_mdav(n, k, seed):
    k = min(k, n)
    v = np.random.default_rng(seed).normal(size=n)
    g = univariate_optimal(v, k)
    sizes = np.bincount(g)
    assert sizes.sum() == n and (sizes >= k).all() and (sizes <= 2 * k - 1).all()
    assert sse_of(v, g) <= sse_of(v, mdav(v, k, standardize=False)) * (1 + 1e-9) + 1e-12


@given(st.integers(1, 80), st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_categorical_groups_and_medoids(n, k, p, seed):
    k = min(k, n)
    codes = np.random.default_rng(seed).integers(0, 3, (n, p))
    groups, published = medoid_microaggregation(codes, k)
    sizes_ok(groups, k, n)
    for label in np.unique(groups):
        rows = codes[groups == label]
        out = published[groups == label]
        assert (out == out[0]).all()
        # the medoid is a record of its group, so each value is one of the group's values
        assert any((row == out[0]).all() for row in rows)


# ----------------------------------------------------------------------------- categorical


def test_categorical_matches_the_plain_loop():
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 90))
        p = int(rng.integers(1, 5))
        k = int(rng.integers(1, min(n, 6) + 1))
        codes = rng.integers(0, int(rng.integers(1, 5)), (n, p))
        np.testing.assert_array_equal(mdav_categorical(codes, k), reference_hamming(codes, k))


def test_medoids_by_hand():
    codes = np.array([[0, 0], [0, 1], [1, 1], [2, 2], [2, 2], [0, 2]])
    g = np.array([0, 0, 0, 1, 1, 1])
    # group 0: summed distances (0,0): 1+2, (0,1): 1+1, (1,1): 2+1 -> (0,1);
    # group 1: (2,2): 0+1 twice, (0,2): 1+1 -> (2,2)
    assert medoids(codes, g).tolist() == [[0, 1]] * 3 + [[2, 2]] * 3
    # a tie goes to the first row of the group
    assert medoids(np.array([[0], [1]]), [0, 0]).tolist() == [[0], [0]]
    assert medoids(np.array([0, 1, 1]), [3, 3, 3]).tolist() == [1, 1, 1]


def test_medoid_is_the_exhaustive_argmin():
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, (40, 3))
    g = mdav_categorical(codes, 4)
    out = medoids(codes, g)
    for label in np.unique(g):
        rows = np.flatnonzero(g == label)
        cost = [sum(int((codes[a] != codes[b]).sum()) for b in rows) for a in rows]
        assert (out[rows[0]] == codes[rows[int(np.argmin(cost))]]).all()


# ------------------------------------------------------------------- result and metrics


def test_microaggregate_result_and_to_dict():
    x = np.array([[0.0, 1], [1, 0], [10, 11], [11, 10], [20, 20], [21, 21]])
    r = microaggregate(x, 2)
    assert isinstance(r, Microaggregation)
    d = r.to_dict()
    assert d["n"] == 6 and d["k"] == 2 and d["groups"] == 3 and d["method"] == "mdav"
    assert d["smallest_group"] == d["largest_group"] == 2
    assert d["il"] == pytest.approx(r.sse / r.sst)
    assert d["standardized"] is True and d["weighted"] is False
    sse, sst = information_loss(x, r.groups)
    z = zscores(x)
    assert sse == pytest.approx(sse_of(z, r.groups)) and sst == pytest.approx(12.0)
    assert r.to_pandas()["group"].tolist() == r.groups.tolist()
    raw = microaggregate(x, 2, standardize=False)
    assert raw.sse == pytest.approx(sse_of(x, raw.groups))
    assert raw.sst == pytest.approx(((x - x.mean(0)) ** 2).sum())


def test_weighted_information_loss():
    x = np.array([[0.0], [2], [10], [14]])
    g = np.array([0, 0, 1, 1])
    w = np.array([1.0, 3, 1, 1])
    sse, sst = information_loss(x, g, standardize=False, weights=w)
    # group means 1.5 and 12; weighted mean (0 + 6 + 10 + 14) / 6 = 5
    assert sse == pytest.approx(1 * 1.5**2 + 3 * 0.5**2 + 2 * 2**2)
    assert sst == pytest.approx(25 + 3 * 9 + 25 + 81)
    assert microaggregate(x, 2, standardize=False, weights=w).weighted is True


def test_an_all_equal_table_has_no_loss():
    r = microaggregate(np.ones((6, 2)), 2, standardize=False)
    assert r.sse == 0 and r.sst == 0 and r.il == 0


def test_combinations_helper_is_exhaustive():
    # the subset programme agrees with explicit enumeration on a 6-record table, k = 2
    x = np.random.default_rng(5).normal(size=(6, 2))

    def explicit(rows):
        if not rows:
            return 0.0
        first, rest = rows[0], rows[1:]
        best = np.inf
        for size in range(1, len(rest) + 1):
            for others in combinations(rest, size):
                group = [first, *others]
                left = [r for r in rest if r not in others]
                if len(left) == 1:
                    continue
                part = x[group]
                best = min(best, ((part - part.mean(0)) ** 2).sum() + explicit(left))
        return best

    assert optimum_all_partitions(x, 2) == pytest.approx(explicit(list(range(6))))


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mdav(np.zeros((5, 2)), 0), "k must be an integer >= 1, got 0"),
        (lambda: mdav(np.zeros((5, 2)), 6), "k = 6 exceeds the number of records"),
        (lambda: mdav(np.zeros((5, 2)), True), "k must be an integer"),
        (lambda: mdav(np.zeros((5, 2)), 2.0), "k must be an integer"),
        (lambda: mdav(np.zeros((0, 2)), 1), "exceeds the number of records"),
        (lambda: mdav([[1.0, np.nan], [2, 3]], 1), "non-finite value"),
        (lambda: mdav([[1.0, np.inf], [2, 3]], 1), "non-finite value"),
        (lambda: mdav(np.zeros((3, 2, 2)), 1), "2-d array"),
        (lambda: mdav([["a"], ["b"]], 1), "must be numbers"),
        (lambda: mdav([[1.0, 5], [2, 5], [3, 5]], 1), "column 1 is constant"),
        (lambda: mdav([[0.1, 1], [0.1, 2], [0.1, 3]], 1), "column 0 is constant"),
        (lambda: mdav([[1.0, 2]], 1), "column 0 is constant"),
        (lambda: mdav(np.eye(3), 1, standardize="yes"), "standardize must be True or False"),
        (lambda: mdav(np.eye(3), 1, weights=[1, 2]), "one number per record"),
        (lambda: mdav(np.eye(3), 1, weights=[1, -2, 1]), "finite and > 0, got -2.0"),
        (lambda: mdav(np.eye(3), 1, weights=[1, 0, 1]), "finite and > 0, got 0.0"),
        (lambda: mdav(np.eye(3), 1, weights=[1, np.nan, 1]), "finite and > 0, got nan"),
        (lambda: aggregate(np.eye(3), [0, 0]), "one label per record"),
        (lambda: aggregate(np.eye(3), [0, -1, 0]), "labels >= 0"),
        (lambda: aggregate(np.eye(3), [0.5, 0, 0]), "integer labels"),
        (lambda: aggregate(np.eye(3), [0, 0, 0], weights=[1, 1, -1]), "finite and > 0"),
        (lambda: univariate_optimal([1.0, 2, np.nan], 1), "non-finite value"),
        (lambda: univariate_optimal([1.0, 2], 3), "k = 3 exceeds"),
        (lambda: mdav_categorical([[0, 1], [1, -1]], 1), "codes must be >= 0"),
        (lambda: mdav_categorical([[0.5, 1]], 1), "integer codes"),
        (lambda: mdav_categorical([[0, 1]], 2), "k = 2 exceeds"),
        (lambda: microaggregate(np.eye(3), 1, method="kmeans"), "method must be one of"),
        (lambda: information_loss(np.eye(3), [0, 0, 0], weights=[1, 1]), "one number per"),
        (lambda: refine(np.eye(4), [0, 0, 0, 1], 2), "group 1 has 1 record, fewer than k = 2"),
        (lambda: refine(np.eye(4), [0, 0, 1], 1), "one label per record (4), got shape (3,)"),
        (lambda: refine(np.eye(4), [[0, 0, 1, 1]], 1), "one label per record"),
        (lambda: refine(np.eye(4), [0, 0, 1.5, 1], 1), "integer labels"),
        (lambda: refine(np.eye(4), [0, 0, 1, 1], 5), "k = 5 exceeds"),
        (lambda: refine(np.eye(4), [0, 0, 1, 1], 2, max_rounds=0), "max_rounds must be an"),
        (lambda: refine(np.zeros((4, 2)), [0, 0, 1, 1], 2), "column 0 is constant"),
        (lambda: refine(np.eye(4), [0, 0, 1, 1], 2, weights=[1, 1]), "one number per record"),
        (lambda: mdav(np.eye(4), 2, refine="yes"), "refine must be True or False"),
        (lambda: microaggregate(np.eye(4), 2, refine=1), "refine must be True or False"),
    ],
)
def test_bad_input_is_refused_in_one_line(call, message):
    with pytest.raises(ParameterError, match=None) as info:
        call()
    text = str(info.value)
    assert message in text and "\n" not in text
