import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privlab.errors import ParameterError, PrivlabError
from privlab.metrics.privacy import (
    distinct_l_diversity,
    entropy_l_diversity,
    group_counts,
    k_anonymity,
    max_disclosure,
    recursive_c,
    recursive_cl_diversity,
)


def test_table_1_2_generalization_is_4_anonymous_but_2_diverse():
    # Mothali (2011) Table 1.2: groups {1-4}, {5-8}, {9-12}; QI-group 1 has AIDS x3 + Cancer.
    groups = np.repeat([0, 1, 2], 4)
    dis = ["AIDS", "AIDS", "Cancer", "AIDS", "Cancer", "Flu", "None", "Flu"]
    dis += ["Cancer", "None", "Flu", "None"]
    codes = np.array([["AIDS", "Cancer", "Flu", "None"].index(d) for d in dis])
    c = group_counts(groups, codes, 4)
    assert k_anonymity(c) == 4
    assert distinct_l_diversity(c) == 2
    # group 1: p = (3/4, 1/4): exp(H) = exp(-(.75 ln .75 + .25 ln .25))
    assert entropy_l_diversity(c) == pytest.approx(
        np.exp(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
    )
    assert max_disclosure(c) == 0.75 and c.shape[0] == 3 and c.sum() == 12


def test_recursive_cl_definition():
    c = np.array([[3, 2, 1], [2, 2, 2]])
    # group 0 sorted (3,2,1): l=2 tail 3 -> needs 3 <= c*3; l=3 tail 1 -> 3 <= c
    assert recursive_cl_diversity(c, 1.0, 2)
    assert not recursive_cl_diversity(c, 2.9, 3)
    assert recursive_cl_diversity(c, 3.0, 3)
    assert recursive_c(c, 3) == 3.0
    assert recursive_c(c, 4) == float("inf")
    with pytest.raises(ParameterError):
        recursive_cl_diversity(c, 0, 2)


def test_empty_partition_is_an_error():
    with pytest.raises(PrivlabError, match="empty"):
        group_counts(np.array([], dtype=int), np.array([], dtype=int))


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=40),
    st.floats(0.2, 5.0),
    st.integers(1, 4),
)
def test_measures_match_brute_force(pairs, c, l):
    groups = np.array([g for g, _ in pairs])
    values = np.array([v for _, v in pairs])
    counts = group_counts(groups, values, 4)
    by_group = {g: [v for gg, v in pairs if gg == g] for g in set(groups.tolist())}
    assert k_anonymity(counts) == min(len(v) for v in by_group.values())
    assert distinct_l_diversity(counts) == min(len(set(v)) for v in by_group.values())
    ent = []
    for vs in by_group.values():
        p = np.array([vs.count(x) for x in set(vs)]) / len(vs)
        ent.append(np.exp(-(p * np.log(p)).sum()))
    assert entropy_l_diversity(counts) == pytest.approx(min(ent))
    ok = True
    for vs in by_group.values():
        r = sorted((vs.count(x) for x in set(vs)), reverse=True)
        ok &= r[0] <= c * sum(r[l - 1 :])
    assert recursive_cl_diversity(counts, c, l) == ok
    # recursive_c is the threshold: satisfied at c* and (when finite) not just below it
    cstar = recursive_c(counts, l)
    if np.isfinite(cstar):
        assert recursive_cl_diversity(counts, cstar, l)
        assert not recursive_cl_diversity(counts, cstar * (1 - 1e-9), l)


def test_group_labels_are_compacted():
    c = group_counts(np.array([10, 10, 99]), np.array([0, 1, 1]))
    assert c.tolist() == [[1, 1], [0, 1]]
    assert list(itertools.chain(*c)) == [1, 1, 0, 1]


# -- Brickell & Shmatikov 2008, Lemma 1: delta-disclosure privacy bounds GAIN(S, Q) ----------
def _expand(counts):
    """(class, value) of every tuple of a count matrix."""
    g, v = np.nonzero(counts)
    reps = counts[g, v]
    return np.repeat(g, reps), np.repeat(v, reps)


def test_information_gain_is_mutual_information_in_nats():
    from scipy.stats import entropy
    from sklearn.metrics import mutual_info_score

    from privlab.metrics.cost_of_privacy import information_gain

    counts = np.array([[3, 1, 0], [1, 3, 2], [5, 0, 0]])
    cls, val = _expand(counts)
    n = counts.sum()
    h_s = entropy(counts.sum(axis=0))  # natural log
    h_s_q = sum(row.sum() / n * entropy(row) for row in counts)
    assert information_gain(counts) == pytest.approx(h_s - h_s_q, abs=1e-12)
    assert information_gain(counts) == pytest.approx(mutual_info_score(cls, val), abs=1e-12)
    # one class, or every class alike: no gain
    assert information_gain(counts.sum(axis=0, keepdims=True)) == 0.0
    assert information_gain(np.array([[2, 4], [1, 2]])) == pytest.approx(0.0, abs=1e-15)


# delta-disclosure needs every value of the table in every class (else delta = inf): counts
# of at least 1, plus an optional value absent from the whole table (p(T, s) = 0, skipped).
finite_delta = st.integers(1, 5).flatmap(
    lambda g: st.integers(1, 4).flatmap(
        lambda m: st.tuples(
            st.lists(st.lists(st.integers(1, 60), min_size=m, max_size=m), min_size=g, max_size=g),
            st.booleans(),
        )
    )
)


@given(finite_delta, st.floats(1e-6, 2.0))
def test_lemma_1_delta_disclosure_bounds_the_gain(drawn, slack):
    """Every delta-disclosure-private partition has GAIN(S, Q) < delta, both in nats (the
    partition is delta-private for every delta above delta_disclosure, strictly; Defn 1)."""
    from sklearn.metrics import mutual_info_score

    from privlab.metrics.cost_of_privacy import cost_of_privacy, information_gain
    from privlab.metrics.privacy import delta_disclosure

    rows, absent = drawn
    counts = np.array(rows)
    if absent:
        counts = np.column_stack([counts, np.zeros(len(rows), dtype=int)])
    d_min = delta_disclosure(counts)
    gain = information_gain(counts)
    assert np.isfinite(d_min) and gain >= 0
    assert gain == pytest.approx(mutual_info_score(*_expand(counts)), abs=1e-12)
    assert cost_of_privacy(counts).gain == gain
    assert cost_of_privacy(counts).max_log_a_quot == pytest.approx(d_min)
    # Lemma 1 for a delta the partition satisfies: delta_disclosure < delta
    delta = d_min + slack
    assert gain < delta
    # ... and at the smallest such delta itself: GAIN <= delta_disclosure, strictly unless
    # every class has the table's distribution (then both are 0)
    assert gain <= d_min + 1e-12
    if d_min > 1e-9:
        assert gain < d_min


def test_lemma_1_on_generalized_adult():
    """The lemma on real releases: Mondrian delta-disclosure generalizations of Adult (salary
    sensitive; 12, 67 and 101 classes) have a gain of salary from their classes below delta."""
    from privlab.data.datasets import load_adult
    from privlab.metrics.cost_of_privacy import information_gain
    from privlab.metrics.privacy import delta_disclosure
    from privlab.publish.generalization import generalize

    t = load_adult().take(np.arange(3000)).select(["age", "sex", "race", "salary"])
    for delta in (0.5, 1.0, 2.0):
        rel = generalize(t, qi=["age", "sex", "race"], sensitive="salary", k=2, delta=delta,
                         dataset="adult", method="mondrian")  # fmt: skip
        counts = rel.partition().counts
        d = delta_disclosure(counts)
        assert counts.shape[0] >= 10 and 0 < d < delta  # non-trivial, and the guarantee
        assert 0 < information_gain(counts) < d


def test_privacy_report_a_know_and_a_acc_are_brickell_shmatikovs():
    """A_acc = size-weighted mean of each class's top share minus the table's top share;
    A_know the size-weighted mean EMD (equal distance) to the table's distribution: by
    hand on classes (3, 1, 0), (0, 2, 2), (1, 1, 2): p = (4, 4, 4) / 12."""
    from privlab.data.partition import Partition
    from privlab.data.schema import Attribute
    from privlab.metrics import privacy as pm
    from privlab.metrics.cost_of_privacy import a_acc, a_know

    groups = np.repeat([0, 1, 2], 4)
    codes = np.array([0, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2, 2])
    c = group_counts(groups, codes, 3)
    part = Partition(groups, c, Attribute("s", ("x", "y", "z")), kind="classes")
    got = pm._partition_measures(part)
    want_acc = (4 * 3 / 4 + 4 * 2 / 4 + 4 * 2 / 4) / 12 - 1 / 3
    assert got["a_acc"] == pytest.approx(want_acc, abs=1e-12) and want_acc > 0
    assert got["a_acc"] == pytest.approx(a_acc(c), abs=1e-12)
    assert got["a_know"] == pytest.approx(a_know(c), abs=1e-12)


def test_partition_measures_below_one_are_not_raised_to_one():
    """Two classes (2, 1) and (1, 2) against p = (1/2, 1/2): the largest share is 2/3, the
    delta-disclosure |log((1/3) / (1/2))| = log(3/2), the EMD (equal distance) 1/6 each:
    every measure below 1, as computed, not floored at 1."""
    from privlab.data.partition import Partition
    from privlab.data.schema import Attribute
    from privlab.metrics import privacy as pm

    groups = np.repeat([0, 1], 3)
    codes = np.array([0, 0, 1, 0, 1, 1])
    c = group_counts(groups, codes, 2)
    got = pm._partition_measures(Partition(groups, c, Attribute("s", ("x", "y")), kind="classes"))
    assert got["max_disclosure"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["delta"] == pytest.approx(np.log(3 / 2), abs=1e-12)
    assert got["t_equal"] == pytest.approx(1 / 6, abs=1e-12)
    assert got["t_ordered"] == pytest.approx(1 / 6, abs=1e-12)
    assert got["a_know"] == pytest.approx(1 / 6, abs=1e-12)
    assert got["a_acc"] == pytest.approx(2 / 3 - 1 / 2, abs=1e-12)
    assert got["recursive_c"] == 2.0 and got["distinct_l"] == 2 and got["min_group"] == 3
