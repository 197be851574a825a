"""Kifer & Gehrke's classification metric (metrics.utility.classification_metric)."""

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privlab.data.datasets import load_adult
from privlab.errors import PrivlabError
from privlab.metrics.utility import classification_metric
from privlab.publish.generalization import generalize

records = st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 2)), min_size=1, max_size=9)


def _by_definition(pairs):
    """Kifer & Gehrke's words, record by record: 1 for a suppressed record, 1 for a record
    whose label is not its group's majority label (any majority: ties cost the same)."""
    groups = {}
    for g, y in pairs:
        if g >= 0:
            groups.setdefault(g, []).append(y)
    majority = {g: Counter(ys).most_common(1)[0][0] for g, ys in groups.items()}
    return sum(1 if g < 0 else int(y != majority[g]) for g, y in pairs)


def _best_group_prediction(pairs):
    """Brute force: the fewest errors of any rule predicting one label per group, over every
    assignment of the labels {0, 1, 2} to the groups (plus one per suppressed record)."""
    groups = sorted({g for g, _ in pairs if g >= 0})
    supp = sum(g < 0 for g, _ in pairs)
    best = min(
        sum(y != guess[groups.index(g)] for g, y in pairs if g >= 0)
        for guess in itertools.product(range(3), repeat=len(groups))
    )
    return supp + best


@given(records)
def test_cm_matches_brute_force(pairs):
    g = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    cm = classification_metric(g, y)
    assert cm == _by_definition(pairs) == _best_group_prediction(pairs)
    assert classification_metric(g, y, normalize=True) == pytest.approx(cm / len(pairs))


@given(records, st.permutations(range(4)), st.permutations(range(3)))
def test_cm_invariants(pairs, group_perm, label_perm):
    g = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    cm = classification_metric(g, y)
    n_supp = int((g < 0).sum())
    published = len(pairs) - n_supp
    # bounds: every suppressed record costs 1; a majority holds at least 1/3 of a group
    assert n_supp <= cm <= n_supp + published * (1 - 1 / 3) + 1e-9
    # renaming the groups or the labels changes nothing
    g2 = np.where(g < 0, -1, np.array(group_perm)[np.maximum(g, 0)])
    assert classification_metric(g2, np.array(label_perm)[y]) == cm
    # singletons: only the suppressed records cost; one group: n - its majority's count
    assert classification_metric(np.where(g < 0, -1, np.arange(g.size)), y) == n_supp
    if published:
        merged = np.where(g < 0, -1, 0)
        pub = y[g >= 0]
        assert classification_metric(merged, y) == n_supp + pub.size - np.bincount(pub).max()
        # coarsening (merging every group into one) never lowers CM
        assert classification_metric(merged, y) >= cm
    # the record order is irrelevant
    order = np.random.default_rng(len(pairs)).permutation(g.size)
    assert classification_metric(g[order], y[order]) == cm


def test_cm_by_hand():
    # groups {0: a a b}, {1: b}, one suppressed record: 1 (b in group 0) + 1 (suppressed)
    assert classification_metric([0, 0, 0, 1, -1], [0, 0, 1, 1, 0]) == 2.0
    assert classification_metric([0, 0, 0, 1, -1], [0, 0, 1, 1, 0], normalize=True) == 0.4
    assert classification_metric([-1, -1], [0, 1]) == 2.0  # everything suppressed


def test_cm_bad_input():
    with pytest.raises(PrivlabError, match="3 records but labels has 2"):
        classification_metric([0, 0, 1], [0, 1])
    with pytest.raises(PrivlabError, match="empty"):
        classification_metric([], [])
    with pytest.raises(PrivlabError, match="-2"):
        classification_metric([0, 1], [0, -2])


@pytest.mark.parametrize("method", ["optimal", "mondrian"])
def test_generalized_release_reports_cm_of_its_sensitive_column(method):
    """A generalization's utility carries CM with the sensitive attribute as the class,
    recomputed here from the published table (QI classes, suppressed = input - published)."""
    t = load_adult().take(np.arange(2000)).select(["age", "workclass", "sex", "occupation"])
    kw = {"suppression": 0.02} if method == "optimal" else {}
    rel = generalize(t, qi=["age", "workclass", "sex"], sensitive="occupation", k=20,
                     dataset="adult", method=method, **kw)  # fmt: skip
    df = rel.to_pandas()
    wrong = df.groupby(["age", "workclass", "sex"], observed=True)["occupation"].agg(
        lambda s: len(s) - s.value_counts().max()
    )
    n_supp = t.n_rows - len(df)
    assert rel.n_suppressed == n_supp
    assert rel.utility.classification_metric == pytest.approx((n_supp + wrong.sum()) / t.n_rows)
    # without a sensitive attribute there is no class column: no CM
    plain = generalize(t, qi=["age", "workclass", "sex"], k=20, dataset="adult", method=method)
    assert plain.utility.classification_metric is None
