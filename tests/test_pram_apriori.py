"""Apriori from group-randomized items (Ma 2006, Sec. 7.1): oracles, statistics, invariants,
bad input, the CLI and the quick reproductions."""

from __future__ import annotations

from itertools import combinations

import mlxtend.frequent_patterns as mlxtend_fp  # the independent oracle (a test extra)
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privlab.data.items import check_grouping, one_hot
from privlab.data.schema import Attribute, Schema
from privlab.data.table import Table
from privlab.errors import MatrixError, ParameterError, PrivlabError
from privlab.learn.pram_apriori import (
    PramApriori,
    apriori_gen,
    candidate_matrix,
    estimated_supports,
    itemset_supports,
    pattern_counts,
)
from privlab.metrics.itemsets import itemset_scores
from privlab.publish.randomization import joint_m_category_matrix, pram_items
from privlab.release.base import load_release
from reproduction_checks import check_apriori_rows


def _random_items(n, m, seed, density=0.4):
    rng = np.random.default_rng(seed)
    # correlated items: a latent class drives every item, so itemsets of all sizes occur
    z = rng.random(n) < 0.5
    probs = np.where(z[:, None], density + 0.3, density - 0.2)
    return (rng.random((n, m)) < probs).astype(np.int64)


def _randomize(x, groups, p, rng):
    """PRAM of the items in ``groups``; the items outside every group stay as they are (an
    ``empty_like`` here once left them as uninitialized memory: a rare CI failure)."""
    out = x.copy()
    for g in groups:
        k = len(g)
        m = joint_m_category_matrix([2] * k, p)
        pattern = x[:, g] @ (1 << np.arange(k - 1, -1, -1))
        cum = np.cumsum(m, axis=1)
        new = (rng.random(len(x))[:, None] > cum[pattern]).sum(axis=1)
        out[:, g] = (new[:, None] >> np.arange(k - 1, -1, -1)) & 1
    return out


def _brute_frequent(x, min_support):
    n, m = x.shape
    out = {}
    for r in range(1, m + 1):
        for s in combinations(range(m), r):
            sup = int(x[:, list(s)].all(axis=1).sum())
            if sup / n >= min_support:
                out[s] = sup
    return out


# -- exact oracles ------
@pytest.mark.parametrize("min_support", [0.05, 0.2])
def test_p0_equals_mlxtend_apriori(min_support):
    x = _random_items(3000, 9, seed=1)
    fit = PramApriori(min_support=min_support).fit(x, groups=[[0, 1, 2], [3, 4]], p=0.0)
    names = [f"item{i}" for i in range(9)]
    ref = mlxtend_fp.apriori(pd.DataFrame(x.astype(bool), columns=names), min_support=min_support,
                          use_colnames=True)  # fmt: skip
    theirs = {frozenset(s): v for s, v in zip(ref.itemsets, ref.support)}
    mine = fit.itemsets_.shares()
    assert len(theirs) > 40
    assert set(mine) == set(theirs)
    assert max(abs(mine[k] - theirs[k]) for k in mine) < 1e-12


def test_p0_on_one_hot_mushroom_equals_mlxtend():
    from privlab.experiments.apriori_fig7 import mushroom_items

    x, names, groups = mushroom_items()
    fit = PramApriori(min_support=0.3).fit(x, groups=groups, p=0.0, items=names)
    ref = mlxtend_fp.apriori(pd.DataFrame(x.astype(bool), columns=names), min_support=0.3,
                          use_colnames=True)  # fmt: skip
    theirs = {frozenset(s): v for s, v in zip(ref.itemsets, ref.support)}
    mine = fit.itemsets_.shares()
    assert set(mine) == set(theirs) and len(mine) > 100
    assert max(abs(mine[k] - theirs[k]) for k in mine) < 1e-12


@pytest.mark.parametrize("g", [1, 2, 3, 4])
@pytest.mark.parametrize("p", [0.1, 0.3, 0.45])
def test_candidate_matrix_is_prop_7_2(g, p):
    """Prop. 7.2's closed form: p_ii = 1 - p + p(2^{g-c} - 1)/(2^g - 1), p_ij = p 2^{g-c}/(2^g - 1)
    (with the proof's typo 2^{|G|-1} read as 2^|G| - 1)."""
    big = joint_m_category_matrix([2] * g, p)
    for c in range(1, g + 1):
        for keep in combinations(range(g), c):
            pc = candidate_matrix(big, g, keep)
            off = p * 2 ** (g - c) / (2**g - 1)
            diag = 1 - p + p * (2 ** (g - c) - 1) / (2**g - 1)
            want = np.full((2**c, 2**c), off)
            np.fill_diagonal(want, diag)
            np.testing.assert_allclose(pc, want, atol=1e-14)


def test_prop_7_1_single_item_flip():
    for g, factor in ((3, 4 / 7), (2, 2 / 3)):
        pi = candidate_matrix(joint_m_category_matrix([2] * g, 0.3), g, [g - 1])
        assert pi[0, 1] == pytest.approx(factor * 0.3, abs=1e-14)


def test_pattern_counts_is_inclusion_exclusion_and_brute_force():
    rng = np.random.default_rng(2)
    x = _randomize(_random_items(2000, 4, seed=3), [[0, 1, 2], [3]], 0.3, rng)
    c = (0, 1, 3)
    subset = []
    for b in range(8):
        members = [c[t] for t in range(3) if b >> (2 - t) & 1]
        subset.append(x[:, members].all(axis=1).sum() if members else len(x))
    got = pattern_counts(np.asarray(subset))
    pattern = x[:, list(c)] @ np.array([4, 2, 1])
    np.testing.assert_array_equal(got, np.bincount(pattern, minlength=8))
    # the thesis's two-item example: [N - s2 - s1 + s12, s2 - s12, s1 - s12, s12]
    n, s1, s2, s12 = 100, 30, 40, 10
    np.testing.assert_array_equal(pattern_counts([n, s2, s1, s12]), [40, 30, 20, 10])


def test_apriori_gen_join_and_prune():
    level = [(1, 2), (1, 3), (2, 3), (1, 4)]
    # (1,2,3): all subsets frequent; (1,2,4) and (1,3,4) are pruned: (2,4), (3,4) are not
    assert apriori_gen(level) == [(1, 2, 3)]
    assert apriori_gen([(0,), (1,), (2,)]) == [(0, 1), (0, 2), (1, 2)]
    assert apriori_gen([]) == []
    # the thesis's pseudo-code as printed: the join only
    assert apriori_gen(level, prune=False) == [(1, 2, 3), (1, 2, 4), (1, 3, 4)]


def test_join_only_search_counts_missing_subsets():
    """Without the subset prune a candidate's infrequent subsets are counted on demand; at p = 0
    (exact supports are monotone) the result is Apriori's."""
    x = _random_items(2000, 7, seed=14)
    a = PramApriori(min_support=0.1).fit(x, p=0.0)
    b = PramApriori(min_support=0.1, subset_prune=False).fit(x, p=0.0)
    assert a.itemsets_.itemsets == b.itemsets_.itemsets
    assert len(b.randomized_supports_) >= len(a.randomized_supports_)
    groups = [[0, 1, 2], [3, 4]]
    r = _randomize(x, groups, 0.3, np.random.default_rng(15))
    c = PramApriori(min_support=0.1, subset_prune=False).fit(r, groups=groups, p=0.3)
    for s, v in c.randomized_supports_.items():
        assert v == r[:, list(s)].all(axis=1).sum()


def test_estimate_of_whole_group_is_the_kronecker_moment_estimate():
    """The last entry of (P_C^T)^-1 T~_C, P_C the Kronecker product across groups."""
    rng = np.random.default_rng(4)
    groups = [[0, 1, 2], [3, 4]]
    x = _randomize(_random_items(5000, 5, seed=5), groups, 0.25, rng)
    c = (0, 2, 3)
    est = estimated_supports(x, [c], groups=groups, p=0.25)[0]
    p1 = candidate_matrix(joint_m_category_matrix([2, 2, 2], 0.25), 3, [0, 2])
    p2 = candidate_matrix(joint_m_category_matrix([2, 2], 0.25), 2, [0])
    pattern = x[:, list(c)] @ np.array([4, 2, 1])
    t_tilde = np.bincount(pattern, minlength=8)
    want = np.linalg.solve(np.kron(p1, p2).T, t_tilde)[-1]
    assert est == pytest.approx(want, rel=1e-10)


# -- statistics ------
def test_estimated_support_is_unbiased_and_rejects_a_wrong_value():
    groups = [[0, 1, 2], [3, 4]]
    x = _random_items(4000, 5, seed=6)
    sets = [(0,), (0, 1), (1, 2, 3), (0, 2, 3, 4)]
    true = itemset_supports(x, sets).astype(float)
    rng = np.random.default_rng(7)
    reps = 300
    est = np.array(
        [estimated_supports(_randomize(x, groups, 0.3, rng), sets, groups=groups, p=0.3)
         for _ in range(reps)]
    )  # fmt: skip
    se = est.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(est.mean(axis=0) - true) < 4 * se)
    assert np.all(np.abs(est.mean(axis=0) - 1.3 * true) > 4 * se)
    # the randomized supports themselves are biased: estimation is needed
    raw = itemset_supports(_randomize(x, groups, 0.3, rng), sets)
    assert abs(raw[-1] - true[-1]) > 5 * se[-1]


def test_error_shrinks_with_n():
    groups = [[0, 1, 2], [3, 4]]
    rng = np.random.default_rng(8)
    errs = []
    for n in (1000, 100_000):
        x = _random_items(n, 5, seed=9)
        true = itemset_supports(x, [(0, 1, 3)])[0] / n
        e = []
        for _ in range(20):
            rand = _randomize(x, groups, 0.3, rng)
            e.append(abs(estimated_supports(rand, [(0, 1, 3)], groups=groups, p=0.3)[0] / n - true))
        errs.append(np.mean(e))
    assert errs[1] < errs[0] / 5


# -- invariants ------
@settings(max_examples=40, deadline=None)
@given(
    x=arrays(
        np.int64, st.tuples(st.integers(1, 40), st.integers(1, 6)), elements=st.integers(0, 1)
    ),
    min_support=st.sampled_from([0.1, 0.25, 0.5, 1.0]),
)
def test_p0_equals_brute_force_enumeration(x, min_support):
    fit = PramApriori(min_support=min_support).fit(x, p=0.0)
    got = dict(zip(fit.itemsets_.itemsets, fit.itemsets_.support))
    want = _brute_frequent(x, min_support)
    assert set(got) == set(want)
    assert all(got[s] == want[s] for s in want)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.sampled_from([0.1, 0.3, 0.45]))
def test_found_itemsets_are_downward_closed(seed, p):
    groups = [[0, 1], [2, 3, 4]]
    x = _randomize(_random_items(300, 5, seed=seed), groups, p, np.random.default_rng(seed))
    fit = PramApriori(min_support=0.1).fit(x, groups=groups, p=p)
    found = set(fit.itemsets_.itemsets)
    for s in found:
        for r in range(1, len(s)):
            assert all(t in found for t in combinations(s, r))
    # every counted candidate's randomized support is the count in the data
    for s, v in list(fit.randomized_supports_.items())[:20]:
        assert v == x[:, list(s)].all(axis=1).sum()


def test_itemset_scores_by_hand():
    s = itemset_scores(
        {"a": 0.5, "b": 0.3, "ab": 0.06},
        {"a": 0.52, "b": 0.3, "ab": 0.04},
        {"a", "b", "c", "bc"},
    )
    assert (s.found, s.truly_frequent, s.false_positives, s.false_negatives) == (3, 4, 1, 2)
    assert s.avg_support_error == pytest.approx((0.02 + 0 + 0.02) / 3)
    assert s.false_positive_pct == 25.0 and s.false_negative_pct == 50.0
    assert s.to_pandas().shape == (1, 7)
    with pytest.raises(ParameterError, match="no true support"):
        itemset_scores({"a": 0.5}, {}, {"a"})


# -- releases ------
def _table():
    rng = np.random.default_rng(10)
    attrs = (
        Attribute("a", ("x", "y", "z"), declared=True),
        Attribute("b", ("u", "v"), declared=True),
    )
    return Table(np.column_stack([rng.integers(0, 3, 4000), rng.integers(0, 2, 4000)]),
                 Schema(attrs))  # fmt: skip


def test_one_hot_items():
    t = _table()
    items = one_hot(t)
    assert items.names == ("a=x", "a=y", "a=z", "b=u", "b=v")
    np.testing.assert_array_equal(items.codes.sum(axis=1), 2)
    np.testing.assert_array_equal(items.column("a=y"), (t.column("a") == 1).astype(int))


def test_release_round_trip_and_fit_release(tmp_path):
    groups = [["a=x", "a=y", "a=z"], ["b=u", "b=v"]]
    rel = pram_items(_table(), groups=groups, p=0.2, rng=11)
    assert len(rel.blocks) == 2
    rel.save(tmp_path / "rel", custody=tmp_path / "c")
    loaded = load_release(tmp_path / "rel", custody=tmp_path / "c")
    a = PramApriori(min_support=0.05).fit_release(loaded)
    x = loaded.table.codes
    b = PramApriori(min_support=0.05).fit(x, groups=[[0, 1, 2], [3, 4]], p=0.2)
    assert a.itemsets_.itemsets == b.itemsets_.itemsets
    np.testing.assert_allclose(a.itemsets_.support, b.itemsets_.support, rtol=1e-12)
    assert a.items_ == ("a=x", "a=y", "a=z", "b=u", "b=v")
    # the custody holds the original items; the release does not
    truth = loaded.custody.truth
    assert truth.names == loaded.table.names
    assert not np.array_equal(truth.codes, loaded.table.codes)
    d = a.itemsets_.to_dict()
    assert d["itemsets"][0]["items"] == ["a=x"]


def test_fit_release_on_a_subset_of_a_group_marginalizes(tmp_path):
    rel = pram_items(_table(), groups=[["a=x", "a=y", "a=z"]], p=0.2, rng=12)
    a = PramApriori(min_support=0.05).fit_release(rel, items=["a=x", "b=u"])
    x = rel.table.columns(["a=x", "b=u"])
    m1 = candidate_matrix(joint_m_category_matrix([2, 2, 2], 0.2), 3, [0])
    b = PramApriori(min_support=0.05).fit(
        x, groups=[[0], [1]], matrices=[m1, joint_m_category_matrix([2], 0.2)]
    )
    np.testing.assert_allclose(a.itemsets_.support, b.itemsets_.support, rtol=1e-12)


# -- bad input ------
@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), "0.1", True])
def test_support_threshold_outside_unit_interval(bad):
    with pytest.raises(ParameterError, match="support threshold must lie in"):
        PramApriori(min_support=bad).fit(np.ones((5, 2), dtype=int), p=0.0)


def test_grouping_not_a_partition():
    with pytest.raises(ParameterError, match=r"is in groups 1 and 2"):
        check_grouping(["a", "b", "c"], [["a", "b"], ["b"]])
    with pytest.raises(ParameterError, match="'d', which is not an item"):
        check_grouping(["a", "b", "c"], [["a", "d"]])
    with pytest.raises(ParameterError, match="group 1 is empty"):
        check_grouping(["a"], [[]])
    assert check_grouping(["a", "b", "c"], [["c", "a"]]) == [["c", "a"], ["b"]]
    x = np.ones((4, 3), dtype=int)
    with pytest.raises(ParameterError, match="is in groups"):
        PramApriori().fit(x, groups=[[0, 1], [1, 2]], p=0.1)
    with pytest.raises(ParameterError, match=r"not a partition|is in groups"):
        pram_items(_table(), groups=[["a=x"], ["a=x", "b=u"]], p=0.1)


def test_singular_matrix_is_refused_with_its_items():
    x = _random_items(200, 3, seed=13)
    with pytest.raises(MatrixError, match=r"item\(s\) item1 \(group 2\) is singular"):
        PramApriori().fit(x, groups=[[0, 2]], p=0.5)
    # a pair's pattern matrix is singular at p = 3/4
    with pytest.raises(MatrixError, match="singular"):
        PramApriori().fit(x, groups=[[0, 1], [2]], matrices=[
            joint_m_category_matrix([2, 2], 0.75), joint_m_category_matrix([2], 0.1)])  # fmt: skip


def test_items_not_binary_or_not_in_the_release(tmp_path):
    with pytest.raises(ParameterError, match="record 0, item 1 holds 2"):
        PramApriori().fit(np.array([[0, 2]]), p=0.0)
    rel = pram_items(_table(), p=0.1, rng=1)
    with pytest.raises(ParameterError, match="no item 'c=q'"):
        PramApriori().fit_release(rel, items=["c=q"])
    from privlab.publish.randomization import pram

    plain = pram(_table(), columns=["a"], p=0.1, rng=1)
    with pytest.raises(ParameterError, match="column 'a' is not an item"):
        PramApriori().fit_release(plain, items=["a"])
    with pytest.raises(ParameterError, match="not 0/1"):
        pram_items(_table(), columns=["a"], p=0.1, binary=True)
    with pytest.raises(PrivlabError):
        pram_items(_table(), columns=["nope"], p=0.1)


# -- CLI and experiments ------
def test_cli_items_and_apriori(tmp_path, cli):
    run_cli = cli
    rel, cus, csv = tmp_path / "rel", tmp_path / "rel.c", tmp_path / "sets.csv"
    r = run_cli("pram", "items", "adult", "--columns", "sex,race,salary", "--group",
                "sex=Female|sex=Male", "--group", "salary=<=50K|salary=>50K", "--p", "0.2",
                "--out", str(rel), "--custody", str(cus), "--seed", "3")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "randomized 9 items of 30162 records in 7 groups" in (r.stdout + r.stderr)
    r = run_cli("pram", "apriori", str(rel), "--min-support", "0.2", "--custody", str(cus),
                "--out", str(csv))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "truly frequent" in (r.stdout + r.stderr) and "sex=Male" in (r.stdout + r.stderr)
    frame = pd.read_csv(csv)
    assert {"itemset", "support", "randomized_support", "true_support"} <= set(frame.columns)
    assert (frame.support >= 0.2).all()
    assert np.abs(frame.support - frame.true_support).max() < 0.02
    r = run_cli("pram", "apriori", str(rel), "--min-support", "0")
    assert r.returncode == 2 and "support threshold must lie in (0, 1], got 0" in (
        r.stdout + r.stderr
    )
    r = run_cli("pram", "items", "adult", "--columns", "sex", "--group", "sex=Female|sex=X",
                "--p", "0.1", "--out", str(tmp_path / "r2"))  # fmt: skip
    assert r.returncode == 2 and "'sex=X', which is not an item" in (r.stdout + r.stderr)
    assert not (tmp_path / "r2").exists()


def test_apriori_fig75_quick(tmp_path):  # apriori-fig7.4 runs in the README's tour
    from privlab.experiments import run_experiment

    res = run_experiment("apriori-fig7.5", quick=True, seed=0, out=tmp_path / "r", progress=False)
    check_apriori_rows(res.rows, tmp_path / "r")
