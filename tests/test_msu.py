"""Minimal sample uniques against brute force over every column subset (random tables of up to
8 columns), by hand on a small example, and their invariants."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privlab.errors import ParameterError
from privlab.metrics.msu import minimal_sample_uniques


def brute_force(codes: np.ndarray, max_size: int) -> set[tuple[int, tuple[int, ...]]]:
    """Every (record, columns) whose values no other record shares and none of whose proper
    subsets (all of them, not only one column smaller) is already unique for the record."""
    n, d = codes.shape

    def unique(i: int, cols: tuple[int, ...]) -> bool:
        return all(
            tuple(codes[j, list(cols)]) != tuple(codes[i, list(cols)]) for j in range(n) if j != i
        )

    out = set()
    for i in range(n):
        for k in range(1, max_size + 1):
            for cols in combinations(range(d), k):
                if not unique(i, cols):
                    continue
                smaller = (s for r in range(1, k) for s in combinations(cols, r))
                if not any(unique(i, s) for s in smaller):
                    out.add((i, cols))
    return out


@pytest.mark.parametrize(("seed", "d", "values"), [(0, 3, 3), (1, 5, 2), (2, 6, 3), (3, 8, 2)])
def test_msus_match_brute_force(seed, d, values):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, values, size=(24, d))
    names = [f"q{j}" for j in range(d)]
    for top in sorted({1, 2, d}):
        got = minimal_sample_uniques(codes, names, max_size=top)
        want = brute_force(codes, top)
        pairs = {(i, tuple(names.index(c) for c in cols)) for i, cols in got.pairs()}
        assert pairs == want, (top, pairs ^ want)
        assert len(got.pairs()) == len(want)  # each MSU once
        for k in range(1, top + 1):
            per_record = np.bincount([i for i, c in want if len(c) == k], minlength=24)
            assert got.counts[:, k - 1].tolist() == per_record.tolist()


def test_a_small_example_by_hand():
    """Record 0 alone has sex 1: its MSU is {sex}; record 1 alone has zip 1: {zip}; record 2
    shares each of its values (sex with record 1, zip with record 0) but not the pair
    {sex, zip}; everyone has age 30, so no MSU holds age."""
    codes = np.array([
        # sex age zip
        [1, 30, 0],
        [0, 30, 1],
        [0, 30, 0],
    ])  # fmt: skip
    got = minimal_sample_uniques(codes, ["sex", "age", "zip"])
    assert set(got.pairs()) == {
        (0, ("sex",)),
        (1, ("zip",)),
        (2, ("sex", "zip")),  # record 2: zip 0 is shared with record 0, sex 0 with record 1
    }
    assert got.smallest.tolist() == [1, 1, 2]
    assert got.records_with_msu(1) == 2 and got.records_with_msu(2) == 3
    d = got.to_dict()
    assert d["msus"] == 3 and d["msus_by_size"] == [2, 1, 0]
    df = got.to_pandas()
    assert list(df.columns) == ["smallest_msu", "msu_1", "msu_2", "msu_3"]


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 20), st.integers(1, 5)),
              elements=st.integers(0, 2)))  # fmt: skip
def test_msu_invariants(codes):
    """A record has an MSU exactly when it is unique on all its columns (uniqueness only
    grows with the columns); no MSU contains another MSU of the same record; a duplicated
    record has none."""
    got = minimal_sample_uniques(codes)
    n = codes.shape[0]
    full_unique = np.array([(codes == codes[i]).all(axis=1).sum() == 1 for i in range(n)])
    assert ((got.counts.sum(axis=1) > 0) == full_unique).all()
    by_record: dict[int, list[set[str]]] = {}
    for i, cols in got.pairs():
        by_record.setdefault(i, []).append(set(cols))
    for sets in by_record.values():
        for a in sets:
            assert not any(b < a for b in sets)


def test_bad_input_is_refused():
    codes = np.zeros((3, 2), dtype=int)
    with pytest.raises(ParameterError, match="max_size must be at most the 2 columns, got 3"):
        minimal_sample_uniques(codes, max_size=3)
    with pytest.raises(ParameterError, match="max_size must be an integer >= 1, got 0"):
        minimal_sample_uniques(codes, max_size=0)
    with pytest.raises(ParameterError, match="1 names for 2 columns"):
        minimal_sample_uniques(codes, ["a"])
    with pytest.raises(ParameterError, match="no quasi-identifier"):
        minimal_sample_uniques(np.zeros((3, 0), dtype=int))
