"""Minimal sample uniques against brute force over every column subset (random tables of up to
8 columns), by hand on a small example, and their invariants; the SUDA / DIS-SUDA scores built
on them against their definition applied to the brute-force MSUs, by hand, against the
examples of sdcMicro's own (commented-out) tests/testthat/test_suda2.R, and their
invariants."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privlab.errors import ParameterError
from privlab.metrics import msu as msu_module
from privlab.metrics.msu import minimal_sample_uniques, suda_scores


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
    with pytest.raises(ParameterError, match=r"column names must differ, got \['a'\]"):
        minimal_sample_uniques(codes, ["a", "a"])


# -- SUDA and DIS-SUDA scores --------------------------------------------------------------


def scores_by_definition(codes, max_size, f, original):
    """The scores written out afresh from the definitions (sdcMicro's Suda2.h) on the
    brute-force MSUs: weight prod_{i=k}^{M-1} (d - i) (original) or (2^(d-k) - 1) / C(d, k)
    (IHSN); U and P counted row by row; DIS with q = 1 + (8 - d) / 20."""
    n, d = codes.shape
    msus = brute_force(codes, max_size)

    def weight(k):
        if original:
            return math.prod(d - i for i in range(k, max_size))
        return (2 ** (d - k) - 1) / math.comb(d, k)

    score = np.zeros(n)
    raw = np.zeros((n, d))
    for i, cols in msus:
        score[i] += weight(len(cols))
        for j in cols:
            raw[i, j] += weight(len(cols))
    share = np.divide(raw, score[:, None], out=np.zeros((n, d)), where=score[:, None] > 0)
    freq = np.array([sum(tuple(codes[j]) == tuple(codes[i]) for j in range(n)) for i in range(n)])
    u, p = int((freq == 1).sum()), int((freq == 2).sum())
    q = 1 + (8 - d) / 20
    dis = np.zeros(n)
    if (score > 0).any():
        theta = u * f / (u * f + p * (1 - f))
        adj = sum(s**-q for s in score if s > 0)
        for i in range(n):
            if score[i] > 0:
                dis[i] = 1 / (1 + (u / theta - u) / (score[i] ** q * adj))
    return score, dis, share, u, p


@pytest.mark.parametrize(("seed", "n", "d", "values"),
                         [(0, 12, 3, 3), (1, 20, 4, 2), (2, 16, 5, 3), (3, 24, 6, 2)])  # fmt: skip
def test_suda_scores_match_the_definition_on_brute_force_msus(seed, n, d, values):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, values, size=(n, d))
    codes[1] = codes[0]  # at least one pair (P > 0), so DIS is not 1 everywhere
    for top in sorted({1, 2, d}):
        for original in (True, False):
            for f in (0.01, 0.3):
                got = suda_scores(codes, max_size=top, dis_fraction=f, original_scores=original)
                score, dis, share, u, p = scores_by_definition(codes, top, f, original)
                assert got.sample_uniques == u and got.pair_records == p
                np.testing.assert_allclose(got.score, score, rtol=1e-12)
                np.testing.assert_allclose(got.dis_score, dis, rtol=1e-10, atol=1e-15)
                np.testing.assert_allclose(got.contribution, share, rtol=1e-12)
                total = score.sum()
                want = 100 * (share * score[:, None]).sum(axis=0) / total if total else 0 * share[0]
                np.testing.assert_allclose(got.attribute_contributions, want, rtol=1e-12)


def test_suda_scores_of_a_worked_example_by_hand():
    """d = 3 key variables a, b, c; weights (d - k)!: w1 = 2, w2 = 1, w3 = 1.

    rec 0, 1 (0,0,0): a pair, no MSU, score 0.
    rec 2 (1,0,1): c = 1 is unique -> {c}; {a,b} = (1,0) is unique (rec 3 has b = 1) and
      neither a = 1 nor b = 0 is -> {a,b}.  Score 2 + 1 = 3; a: 1, b: 1, c: 2 -> shares
      1/3, 1/3, 2/3.
    rec 3 (1,1,0): {a,b} = (1,1) unique (rec 4 has a = 2), {a,c} = (1,0) unique (rec 2 has
      c = 1); {b,c} = (1,0) is shared with rec 4.  Score 1 + 1 = 2; shares a 1, b 1/2, c 1/2.
    rec 4 (2,1,0): a = 2 unique -> {a}; {b,c} shared with rec 3.  Score 2; share a 1.
    attribute contributions: a (1 + 2 + 2) / 7 = 71.43 %, b 2/7 = 28.57 %, c 3/7 = 42.86 %.

    DIS: U = 3 (rec 2, 3, 4), P = 2 (rec 0, 1), f = 0.01: dis = 0.03 / (0.03 + 1.98) =
    0.0149254; U / dis - U = P (1 - f) / f = 198.  q = 1 + (8 - 3) / 20 = 1.25;
    3^1.25 = 3.948222, 2^1.25 = 2.378414; sum_j s_j^-q = 1/3.948222 + 2/2.378414 = 1.094175.
    rec 2: 1 / (1 + 198 / (3.948222 * 1.094175)) = 1 / (1 + 45.83285) = 0.0213525;
    rec 3, 4: 1 / (1 + 198 / (2.378414 * 1.094175)) = 1 / (1 + 76.08365) = 0.0129729.
    IHSN weights (2^(3-k) - 1) / C(3, k): 1, 1/3, 0 -> scores 4/3, 2/3, 1."""
    codes = np.array([
        # a  b  c
        [0, 0, 0],
        [0, 0, 0],
        [1, 0, 1],
        [1, 1, 0],
        [2, 1, 0],
    ])  # fmt: skip
    got = suda_scores(codes, ["a", "b", "c"])
    assert got.weights == (2.0, 1.0, 1.0)
    assert got.score.tolist() == [0, 0, 3, 2, 2]
    np.testing.assert_allclose(
        got.contribution,
        [[0, 0, 0], [0, 0, 0], [1 / 3, 1 / 3, 2 / 3], [1, 0.5, 0.5], [1, 0, 0]],
    )
    np.testing.assert_allclose(got.attribute_contributions, [500 / 7, 200 / 7, 300 / 7])
    assert (got.sample_uniques, got.pair_records) == (3, 2)
    assert got.q == 1.25
    assert got.dis == pytest.approx(0.03 / 2.01, rel=1e-12)
    np.testing.assert_allclose(got.dis_score, [0, 0, 0.0213525, 0.0129729, 0.0129729], rtol=2e-5)
    ihsn = suda_scores(codes, ["a", "b", "c"], original_scores=False)
    np.testing.assert_allclose(ihsn.score, [0, 0, 4 / 3, 2 / 3, 1])
    assert suda_scores(codes, dis_fraction=1.0).dis_score.tolist() == [0, 0, 1, 1, 1]
    d = got.to_dict()
    assert d["records_scored"] == 3 and d["total_score"] == 7.0
    assert d["dis_table"]["== 0"] == 2 and d["dis_table"]["(0.0, 0.1]"] == 3
    assert sum(d["dis_table"].values()) == 5
    assert d["attribute_contributions"]["c"] == pytest.approx(300 / 7)
    df = got.to_pandas()
    assert list(df.columns) == ["a_contribution", "b_contribution", "c_contribution", "score",
                                "dis_score"]  # fmt: skip
    assert df["score"].tolist() == [0, 0, 3, 2, 2]


def _factorized(columns: dict[str, list]) -> tuple[np.ndarray, list[str]]:
    codes = np.column_stack([np.unique(v, return_inverse=True)[1] for v in columns.values()])
    return codes, list(columns)


def test_suda_scores_of_sdcmicros_test_examples():
    """The expected values of sdcMicro's tests/testthat/test_suda2.R (commented out there
    since 2019, the examples themselves are the package's): the contribution example and its
    column orders, the book example (Templ 2017) and the SDC guideline example."""
    a, b, c = [2, 1, 1], [0, 3, 0], [0, 6, 0]
    for order in (("a", "b", "c"), ("a", "c", "b"), ("c", "a", "b"), ("c", "b", "a")):
        codes, names = _factorized({k: {"a": a, "b": b, "c": c}[k] for k in order})
        got = suda_scores(codes, names)
        want = {"a": 50.0, "b": 37.5, "c": 37.5}
        assert got.attribute_contributions.tolist() == [want[k] for k in names]
    book = {
        "age": ["20s"] * 7 + ["60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+"] * 2 + ["50k-"] * 6,
        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool",
                                           "university"],
    }  # fmt: skip
    assert suda_scores(*_factorized(book)).score[4:].tolist() == [4, 2, 6, 8]
    guideline = {
        "Residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
        "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female", "Male",
                   "Female", "Female"],
        "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                      "Secondary complete", "Secondary complete", "Secondary complete",
                      "Primary complete", "Post-secondary", "Secondary incomplete",
                      "Secondary incomplete"],
        "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
                  "Non-LF", "Unemployed", "Non-LF", "Non-LF"],
    }  # fmt: skip
    assert suda_scores(*_factorized(guideline)).score.tolist() == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 14), st.integers(1, 5)),
              elements=st.integers(0, 2)), st.randoms(use_true_random=False))  # fmt: skip
def test_suda_invariants(codes, random):
    """No MSU, score 0 (and DIS 0); scores follow the records when rows are shuffled and
    stay when columns are (contributions move with their column); a table of every record
    twice scores 0 throughout."""
    n, d = codes.shape
    got = suda_scores(codes)
    has_msu = minimal_sample_uniques(codes).counts.sum(axis=1) > 0
    assert ((got.score > 0) == has_msu).all()
    assert ((got.dis_score > 0) == has_msu).all()
    assert (got.dis_score <= 1).all() and (got.contribution <= 1 + 1e-12).all()
    rows = list(range(n))
    random.shuffle(rows)
    shuffled = suda_scores(codes[rows])
    np.testing.assert_allclose(shuffled.score, got.score[rows])
    np.testing.assert_allclose(shuffled.dis_score, got.dis_score[rows], rtol=1e-12)
    cols = list(range(d))
    random.shuffle(cols)
    names = [f"c{j}" for j in cols]
    moved = suda_scores(codes[:, cols], names)
    np.testing.assert_allclose(moved.score, got.score)
    np.testing.assert_allclose(moved.dis_score, got.dis_score, rtol=1e-12)
    np.testing.assert_allclose(moved.contribution, got.contribution[:, cols])
    np.testing.assert_allclose(moved.attribute_contributions, got.attribute_contributions[cols])
    twice = suda_scores(np.concatenate([codes, codes]))
    assert not twice.score.any() and not twice.dis_score.any() and not twice.contribution.any()
    assert twice.sample_uniques == 0 and not twice.attribute_contributions.any()


def test_suda_scores_reuse_the_msus(monkeypatch):
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, size=(30, 4))
    found = minimal_sample_uniques(codes, ["w", "x", "y", "z"], max_size=2)
    want = suda_scores(codes, ["w", "x", "y", "z"], max_size=2)

    def no_second_search(*args, **kwargs):
        raise AssertionError("searched twice")

    monkeypatch.setattr(msu_module, "minimal_sample_uniques", no_second_search)
    got = suda_scores(codes, msus=found)
    assert got.names == ("w", "x", "y", "z") and got.max_size == 2
    np.testing.assert_array_equal(got.score, want.score)
    np.testing.assert_array_equal(got.dis_score, want.dis_score)
    # max_size below d: the weights stop at M = 2: prod_{i=k}^{1} (4 - i) -> w1 = 3, w2 = 1
    assert got.weights == (3.0, 1.0)


def test_suda_bad_input_is_refused():
    codes = np.array([[0, 1], [1, 0], [1, 1]])
    for f in (0, -0.1, 1.5, True, "0.1"):
        with pytest.raises(ParameterError, match=r"dis_fraction must be in \(0, 1\]"):
            suda_scores(codes, dis_fraction=f)
    with pytest.raises(ParameterError, match="original_scores must be True or False"):
        suda_scores(codes, original_scores="yes")
    found = minimal_sample_uniques(codes, ["a", "b"])
    with pytest.raises(ParameterError, match="msus are of 3 records x 2 columns, the codes 2 x 2"):
        suda_scores(codes[:2], msus=found)
    with pytest.raises(ParameterError, match="max_size 1 differs from the msus' 2"):
        suda_scores(codes, max_size=1, msus=found)
    with pytest.raises(ParameterError, match="names"):
        suda_scores(codes, ["b", "a"], msus=found)
    with pytest.raises(ParameterError, match="msus must be a MinimalSampleUniques"):
        suda_scores(codes, msus="found")
