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
