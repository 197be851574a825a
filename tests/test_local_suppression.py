"""Local (cell) suppression to k-anonymity (privlab.publish.local_suppression): wildcard
frequencies as sdcMicro's freqCalc counts them, every method k-anonymous, the integer
program against brute force over every mask, the heuristic within 10% of the optimum."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.errors import ParameterError
from privlab.publish.local_suppression import (
    LocalSuppression,
    default_importance,
    local_suppression,
    suppression_gap,
    wildcard_frequencies,
)


def naive_fk(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """fk by definition: records equal, or suppressed on either side, in every column."""
    eq = (codes[:, None, :] == codes[None, :, :]) | mask[:, None, :] | mask[None, :, :]
    return eq.all(axis=2).sum(axis=1)


def brute_force(codes: np.ndarray, k: int, costs: np.ndarray) -> float:
    """The least weighted cost over every suppression mask (2^(n d) masks)."""
    n, d = codes.shape
    cells = n * d
    masks = np.array(list(product([False, True], repeat=cells)), dtype=bool).reshape(-1, n, d)
    eq = codes[:, None, :] == codes[None, :, :]
    compat = (eq[None] | masks[:, :, None, :] | masks[:, None, :, :]).all(axis=3)
    ok = (compat.sum(axis=2) >= k).all(axis=1)
    return float((masks[ok].sum(axis=1) @ costs).min())


def random_table(rng: np.random.Generator, n: int, d: int, top: int = 4) -> np.ndarray:
    sizes = rng.integers(2, top + 1, size=d)
    return np.column_stack([rng.integers(0, s, size=n) for s in sizes])


# -- the definition ----------------------------------------------------------------------


def test_wildcard_frequencies_match_the_definition_on_random_masks():
    rng = np.random.default_rng(5)
    for _ in range(40):
        n, d = int(rng.integers(1, 25)), int(rng.integers(1, 5))
        codes = random_table(rng, n, d)
        mask = rng.random((n, d)) < 0.35
        assert (wildcard_frequencies(codes, mask) == naive_fk(codes, mask)).all()


def test_wildcard_frequencies_as_sdcmicro_freqcalc_counts():
    # a suppressed cell matches both sides; non-transitive: (*, b) and (a', *) match
    codes = np.array([[0, 1], [2, 3], [0, 3], [0, 1]])
    mask = np.array([[True, False], [False, True], [False, False], [False, False]])
    # (*,1): itself, (2,*), (0,1) ; (2,*): itself, (*,1) ; (0,3): itself ; (0,1): (*,1), itself
    assert wildcard_frequencies(codes, mask).tolist() == [3, 2, 1, 2]
    # an all-suppressed record matches everyone (freqCalc gives it n)
    all_star = np.zeros((4, 2), dtype=bool)
    all_star[1] = True
    assert wildcard_frequencies(codes, all_star).tolist() == [3, 4, 2, 3]


# -- k-anonymity reached -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 30),
    d=st.integers(1, 4),
    k=st.integers(1, 5),
    method=st.sampled_from(["heuristic", "local"]),
)
def test_every_record_is_k_anonymous_after_suppression(seed, n, d, k, method):
    rng = np.random.default_rng(seed)
    codes = random_table(rng, n, d)
    k = min(k, n)
    res = local_suppression(codes, k, method=method)
    fk = naive_fk(codes, res.mask)
    assert (fk >= k).all()
    assert (res.fk == fk).all() and res.k_reached == fk.min()
    # only records whose key is below k, or one delegate of a key, are touched
    assert res.mask.shape == (n, d)


def test_optimal_is_k_anonymous_on_random_tables():
    rng = np.random.default_rng(11)
    for _ in range(15):
        codes = random_table(rng, int(rng.integers(5, 25)), int(rng.integers(1, 4)))
        k = int(rng.integers(2, 4))
        res = local_suppression(codes, k, method="optimal")
        assert (naive_fk(codes, res.mask) >= k).all()


def test_no_suppression_when_already_k_anonymous():
    codes = np.array([[0, 1]] * 3 + [[2, 2]] * 4)
    for method in ("heuristic", "local", "optimal"):
        res = local_suppression(codes, 3, method=method)
        assert res.suppressed == 0 and res.records_touched == 0 and res.k_reached == 3
    assert local_suppression(np.array([[0], [1]]), 1).suppressed == 0


# -- the exact method --------------------------------------------------------------------


def test_optimal_matches_brute_force_over_every_mask():
    rng = np.random.default_rng(3)
    checked = 0
    for n, d in [(3, 2), (4, 2), (5, 2), (4, 3), (6, 2), (5, 3)]:
        for _ in range(3):
            codes = random_table(rng, n, d, top=3)
            k = int(rng.integers(2, min(n, 4) + 1))
            importance = rng.permutation(d) + 1 if checked % 2 else None
            res = local_suppression(codes, k, method="optimal", importance=importance)
            costs = np.asarray(res.costs)
            assert res.cost == pytest.approx(brute_force(codes, k, costs))
            checked += 1


# -- the heuristic against the optimum ---------------------------------------------------

#: The fixed random tables of the gap check (issue 35, item 2: within 10%).
GAP_TABLES = 150


def gap_tables():
    rng = np.random.default_rng(2024)
    for t in range(GAP_TABLES):
        n, d = int(rng.integers(10, 41)), int(rng.integers(2, 5))
        k = int(rng.integers(2, 4))
        importance = rng.permutation(d) + 1 if t % 2 else None
        yield random_table(rng, n, d), k, importance


def test_heuristic_within_ten_percent_of_the_optimum():
    gaps = []
    for codes, k, importance in gap_tables():
        res = suppression_gap(codes, k, importance=importance)
        assert (naive_fk(codes, res.mask) >= k).all()
        assert res.optimal_cost is not None and res.cost >= res.optimal_cost - 1e-9
        gaps.append(res.gap)
    # measured: worst 0.0526 (one table: 20 weighted units for 19), mean about 0.001
    assert max(gaps) <= 0.10
    assert min(gaps) >= 0


def test_local_method_is_sdcmicro_like_and_never_better_than_the_optimum():
    rng = np.random.default_rng(8)
    for _ in range(10):
        codes = random_table(rng, 25, 3)
        loc = local_suppression(codes, 3, method="local")
        opt = local_suppression(codes, 3, method="optimal")
        assert (naive_fk(codes, loc.mask) >= 3).all()
        assert loc.cost >= opt.cost - 1e-9


def test_hub_the_wildcard_definitions_cheapest_answer():
    # 1 record fully suppressed matches everyone: k = 2 costs at most d cells
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, 50, 400), rng.integers(0, 50, 400)])
    res = local_suppression(codes, 2)
    assert res.suppressed <= 2 and res.k_reached >= 2
    assert local_suppression(codes, 2, method="local").suppressed > 50


# -- importance --------------------------------------------------------------------------


def test_importance_less_important_column_suppressed_first():
    # the unique record (0, 9) can join the (0, 0) key by suppressing its 2nd column, or the
    # (5, 9) key by suppressing its 1st: one cell either way, importance decides
    codes = np.array([[0, 0]] * 3 + [[5, 9]] * 3 + [[0, 9]])
    for method in ("heuristic", "local", "optimal"):
        first_kept = local_suppression(codes, 2, importance=[1, 2], method=method)
        assert first_kept.per_column == {"c0": 0, "c1": 1}, method
        second_kept = local_suppression(codes, 2, importance=[2, 1], method=method)
        assert second_kept.per_column == {"c0": 1, "c1": 0}, method
        assert first_kept.mask[6].tolist() == [False, True]


def test_importance_sets_the_costs_and_the_default_follows_sdcmicro():
    codes = np.array([[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 1, 1]])
    # sdcMicro: fewer categories, more important; ties in column order
    assert default_importance(codes).tolist() == [3, 1, 2]
    res = local_suppression(codes, 1, importance=[2, 3, 1])
    assert res.costs == pytest.approx((1 + 1 / 3, 1.0, 1 + 2 / 3))
    assert res.importance == (2, 3, 1)
    assert local_suppression(codes, 1).costs == (1.0, 1.0, 1.0)


# -- the result --------------------------------------------------------------------------


def test_result_fields_and_frames():
    codes = np.array([[0, 0]] * 3 + [[5, 9]] * 3 + [[0, 9]])
    res = local_suppression(codes, 2, importance=[1, 2], names=["age", "zip"])
    assert isinstance(res, LocalSuppression)
    assert res.suppressed == 1 and res.records_touched == 1 and res.k_reached >= 2
    d = res.to_dict()
    assert d["per_column"] == {"age": 0, "zip": 1} and d["method"] == "heuristic"
    assert d["gap"] is None and d["cost"] == pytest.approx(1.0)
    frame = res.to_pandas()
    assert list(frame.columns) == ["age", "zip", "fk"] and frame["zip"].sum() == 1
    gap = suppression_gap(codes, 2, importance=[1, 2])
    assert gap.gap == 0 and gap.optimal_cost == pytest.approx(1.0)
    assert suppression_gap(codes[:3], 2).gap == 0.0  # nothing to suppress


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be an integer from 1 to 4"),
        ({"k": 5}, "k must be an integer from 1 to 4"),
        ({"k": 2.0}, "k must be an integer"),
        ({"k": 2, "importance": [1, 2]}, "importance must have one rank per column (3), got 2"),
        ({"k": 2, "importance": [1, 1, 2]}, "importance must be a permutation of 1..3"),
        ({"k": 2, "importance": [0, 1, 2]}, "importance must be a permutation of 1..3"),
        ({"k": 2, "importance": "abc"}, "importance must be a permutation of 1..3"),
        ({"k": 2, "method": "exact"}, "method must be one of heuristic, local, optimal"),
        ({"k": 2, "names": ["a"]}, "names must have one name per column (3), got 1"),
    ],
)
def test_bad_input_is_one_line(kwargs, message):
    codes = np.zeros((4, 3), dtype=int)
    with pytest.raises(ParameterError) as err:
        local_suppression(codes, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_codes_and_too_large_tables_are_one_line():
    for bad, message in [
        (np.zeros(4, dtype=int), "2-d array"),
        (np.zeros((0, 2), dtype=int), "at least one record"),
        (np.zeros((3, 2)), "integer codes"),
        (-np.ones((3, 2), dtype=int), "codes must be >= 0"),
    ]:
        with pytest.raises(ParameterError, match=message):
            local_suppression(bad, 1)
    with pytest.raises(ParameterError, match="method='optimal' takes tables"):
        local_suppression(np.zeros((600, 4), dtype=int), 2, method="optimal")
    with pytest.raises(ParameterError, match="at most 16 quasi-identifiers"):
        local_suppression(np.zeros((3, 17), dtype=int), 2)
    with pytest.raises(ParameterError, match="mask must be a boolean array"):
        wildcard_frequencies(np.zeros((3, 2), dtype=int), np.zeros((3, 3), dtype=bool))
