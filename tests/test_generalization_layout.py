"""The published layout of a generalized release (privlab issue 19): one mixed-radix key
instead of a lexsort over every column, hashed distinct keys, the per-cell information-loss
terms.  Every fast path is checked against the plain numpy oracle it replaced."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privlab.data import Table
from privlab.data.counts import distinct_keys, distinct_rows
from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import ADULT_QI
from privlab.metrics.utility import _compact, cell_utility
from privlab.publish.generalization import _ranked_rows, _stable_order, generalize


def _lexsort_layout(cols: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The rows of ``rows`` in the order the published table used to take: ``np.lexsort``
    over the columns, first column slowest (stable)."""
    codes = np.column_stack([c[rows] for c in cols])
    return rows[np.lexsort(codes.T[::-1])]


@pytest.mark.parametrize(
    ("sizes", "n"),
    [
        ((3, 5, 2), 2_000),  # one small key, few distinct tuples: one uint16 radix pass
        ((70_000, 40), 200_000),  # more than 2^16 distinct tuples: two radix passes
        ((2**31 - 1, 2**31 - 1, 3, 2**20), 5_000),  # too wide for one int64 key: re-ranked
        ((1,), 10),  # a constant column
    ],
)
def test_ranked_rows_are_the_lexsort_order(sizes, n):
    rng = np.random.default_rng(7)
    # Draw from a few values per column so that rows repeat (ties keep the input order).
    cols = [
        rng.choice(rng.integers(0, s, size=min(s, 300)), size=n).astype(np.int64) for s in sizes
    ]
    keep = rng.random(n) < 0.9
    rows = np.flatnonzero(keep)
    rank, g, any_row = _ranked_rows(cols, sizes, rows)
    expected = _lexsort_layout(cols, rows)
    got = rows[_stable_order(rank, g)]
    np.testing.assert_array_equal(got, expected)
    # Equal ranks are equal tuples; ``any_row`` holds each rank's tuple.
    distinct = np.column_stack([c[any_row] for c in cols])
    table = np.column_stack([c[rows] for c in cols])
    np.testing.assert_array_equal(distinct[rank], table)
    assert np.all(np.diff(rank[_stable_order(rank, g)]) >= 0)
    assert g == np.unique(table, axis=0).shape[0]


def test_stable_order_of_wide_ranks():
    """Above 2^32 distinct ranks numpy's stable argsort runs; below, the radix passes equal it."""
    rng = np.random.default_rng(3)
    for g in (5, 2**16, 2**16 + 1, 2**20):
        rank = rng.integers(0, g, 50_000)
        np.testing.assert_array_equal(_stable_order(rank, g), np.argsort(rank, kind="stable"))


@pytest.mark.parametrize("n", [10, 40_000, 200_000])
def test_distinct_keys_equal_numpy_unique(n):
    rng = np.random.default_rng(n)
    key = rng.integers(-(2**40), 2**40, size=max(n // 20, 1))[rng.integers(0, max(n // 20, 1), n)]
    _, first, inverse, counts = np.unique(
        key, return_index=True, return_inverse=True, return_counts=True
    )
    got = distinct_keys(key)
    for a, b in zip(got, (first, inverse.reshape(-1), counts)):
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, b)


def test_distinct_rows_hashed_equals_the_row_sort():
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 4, size=(100_000, 6))
    _, first, inverse, counts = np.unique(
        codes, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    got = distinct_rows(codes)
    for a, b in zip(got, (first, inverse.reshape(-1), counts)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "labels",
    [
        np.array([4, 4, 0, 9, 0, 4]),  # dense: counted by bincount
        np.array([10**12, 3, 10**12, 7]),  # sparse: hashed
        np.array([-5, 2, -5, 2, 2]),  # negative
    ],
)
def test_compact_equals_numpy_unique(labels):
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    inv, cnt = _compact(labels)
    np.testing.assert_array_equal(inv, inverse.reshape(-1))
    np.testing.assert_array_equal(cnt, counts)


def _reference_loss(x, cell_of, cover, class_of):
    """The per-record sums :func:`cell_utility` computed before the per-cell terms (ncp,
    non-uniform entropy, log of the cell sizes), record by record."""
    n, d = x.shape
    supp = class_of < 0
    ncp = nue = 0.0
    log_cell = np.zeros(n)
    for j in range(d):
        cov = cover[j]
        m = cov.shape[1]
        freq = np.bincount(x[:, j], minlength=m).astype(float)
        leaves = cov.sum(axis=1).astype(float)
        cfreq = cov.astype(float) @ freq
        cell = cell_of[j]
        lv = np.where(supp, m, leaves[np.where(supp, 0, cell)])
        cf = np.where(supp, n, cfreq[np.where(supp, 0, cell)])
        ncp += float(((lv - 1) / max(m - 1, 1)).sum())
        nue += float(-np.log2(freq[x[:, j]] / cf).sum())
        log_cell += np.log(lv)
    return ncp / (n * d), nue, log_cell


@pytest.mark.parametrize("n", [30, 5_000])  # per-record logs / per-(cell, value) table
def test_cell_utility_per_cell_terms_equal_the_per_record_sums(n):
    rng = np.random.default_rng(n)
    m_per = (6, 40)
    x = np.column_stack([rng.integers(0, m, n) for m in m_per])
    cover, cell_of = [], []
    for j, m in enumerate(m_per):
        cells = rng.integers(0, 3, m)  # each value in one of 3 cells
        cells[:3] = [0, 1, 2]
        cover.append(cells[None, :] == np.arange(3)[:, None])
        cell_of.append(cells[x[:, j]])
    class_of = cell_of[0] * 3 + cell_of[1]
    class_of[rng.random(n) < 0.1] = -1
    rep = cell_utility(x, cell_of, cover, class_of)
    ncp, nue, _ = _reference_loss(x, cell_of, cover, class_of)
    assert rep.ncp == ncp
    assert rep.non_uniform_entropy == nue


def test_cell_utility_refuses_a_value_outside_its_cell():
    x = np.array([[0], [1]])
    cover = [np.array([[True, False], [False, True]])]
    with pytest.raises(Exception, match="outside its generalized cell"):
        cell_utility(x, [np.array([1, 1])], cover, np.array([0, 0]))


@pytest.fixture(scope="module")
def adult_big():
    t = load_adult()
    rows = np.random.default_rng(0).integers(0, t.n_rows, 80_000)
    return Table(t.codes[rows], t.schema)


@pytest.mark.parametrize(
    "kw",
    [
        dict(k=10, sensitive="salary"),
        dict(k=20, suppression=0.02, sensitive="salary", keep=["fnlwgt", "hours-per-week"]),
    ],
)
def test_published_table_is_the_lexsorted_generalization(adult_big, kw):
    """The published rows are the kept records' generalized rows in lexicographic order of the
    published codes, ties in input order (the old ``np.lexsort`` layout), and the custody's
    truth row i is the exact QIs of published row i."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = generalize(adult_big, qi=list(ADULT_QI), dataset="adult", **kw)
    codes = rel.table.codes
    # Rebuild the published columns of every input record from the chosen node.
    from privlab.data.default_hierarchies import resolve_hierarchies

    schema = adult_big.schema
    hier = resolve_hierarchies([schema[q] for q in ADULT_QI], None, dataset="adult")
    compiled = {q: hier[q].compile(schema[q]) for q in ADULT_QI}
    level = dict(zip(rel.qi, rel.node))
    cols = []
    for name in rel.table.schema.names:
        c = adult_big.column(name).astype(np.int64)
        cols.append(compiled[name].maps[level[name]][c] if name in level else c)
    # Kept records: those whose published row appears (suppressed classes are absent).
    pub = {tuple(r) for r in codes.tolist()}
    full = np.column_stack(cols)
    keep = np.array([tuple(r) in pub for r in full.tolist()])
    assert int((~keep).sum()) == rel.n_suppressed
    rows = _lexsort_layout(cols, np.flatnonzero(keep))
    np.testing.assert_array_equal(codes, full[rows])
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(rel.custody.truth.codes, adult_big.columns(list(ADULT_QI))[rows])


def test_dependent_column_warnings_equal_the_pair_count_oracle():
    """The bincount pair counts warn about exactly the (kept, QI) pairs that the distinct
    values of ``np.unique`` find re-labelled one to one."""
    from privlab.errors import PrivacyWarning
    from privlab.publish.generalization import _warn_dependent_columns

    t = load_adult()
    rng = np.random.default_rng(4)
    codes = t.codes[:5000].copy()
    # a relabelled copy of race as an extra kept column, and one that merges two of its values
    race = codes[:, t.schema.index("race")]
    extra = np.column_stack([(race + 2) % 5, np.minimum(race, 3), rng.integers(0, 5, 5000)])
    from privlab.data.schema import Attribute, Schema

    attrs = (*t.schema.attributes, *(Attribute(f"x{i}", tuple(range(5))) for i in range(3)))
    table = Table(np.column_stack([codes, extra]), Schema(attrs))
    qi = list(ADULT_QI)
    keep = [c for c in table.schema.names if c not in qi]
    expected = set()
    for c in keep:
        col = table.column(c).astype(np.int64)
        for q in qi:
            qc = table.column(q).astype(np.int64)
            n_c, n_q = np.unique(col).size, np.unique(qc).size
            if n_q >= 2 and n_c <= n_q and np.unique(col * (qc.max() + 1) + qc).size == n_c:
                expected.add((c, q))
    assert ("x0", "race") in expected and ("education-num", "education") in expected
    assert ("x1", "race") not in expected
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_dependent_columns(table, qi, keep)
    got = {
        tuple(str(w.message).split("'")[1::2][:2])
        for w in caught
        if issubclass(w.category, PrivacyWarning)
    }
    assert got == expected


def test_stable_order_is_a_stable_argsort_across_the_radix_limits():
    """``_stable_order(rank, g)`` equals ``np.argsort(rank, kind="stable")`` for ranks of
    up to 2^16 distinct values (one uint16 pass), just above it (two passes) and far above."""
    gen = np.random.default_rng(0)
    for g in (1, 300, 1 << 16, (1 << 16) + 1, 70_000, 140_000):
        rank = gen.permutation(np.concatenate([np.arange(g), gen.integers(0, g, 5_000)]))
        np.testing.assert_array_equal(_stable_order(rank, g), np.argsort(rank, kind="stable"))


def test_stable_order_of_ranks_above_2_to_the_32():
    """Ranks of more than 32 bits (``g`` above 2^32) are sorted whole: two 16-bit passes
    would drop their high bits."""
    rank = np.array([(1 << 32) + 5, 3, 1 << 33, 5, (1 << 32) + 5], dtype=np.int64)
    got = _stable_order(rank, (1 << 33) + 1)
    np.testing.assert_array_equal(got, np.argsort(rank, kind="stable"))
    assert got.tolist() == [1, 3, 0, 4, 2]


def test_dependent_columns_over_domains_too_large_to_bincount_are_hashed():
    """A kept column and a QI of 2^20 values each: their pairs span 2^40 cells, which a
    bincount would need 8 TiB for, so the pairs are counted by hashing; a kept one-to-one
    relabel of the QI is still reported, a column of fewer values that does not follow it
    is not."""
    from privlab.data.schema import Attribute, Role, Schema
    from privlab.errors import PrivacyWarning
    from privlab.publish.generalization import _warn_dependent_columns

    size = 1 << 20
    domain = tuple(range(size))
    attrs = (Attribute("q", domain, Role.QI), Attribute("c", domain), Attribute("d", domain))
    rng = np.random.default_rng(5)
    q = rng.integers(0, size, 200)
    table = Table(np.column_stack([q, (q + 7) % size, rng.integers(0, 50, 200)]), Schema(attrs))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_dependent_columns(table, ["q"], ["c", "d"])
    assert [str(w.message) for w in caught if issubclass(w.category, PrivacyWarning)] == [
        "column 'c' determines quasi-identifier 'q' and is published ungeneralized: declare "
        "it a quasi-identifier too, or drop it"
    ]


def test_ranked_rows_of_no_column_and_no_row():
    """With no published column there is no row either: nothing to rank (0 distinct rows)."""
    rank, g, any_row = _ranked_rows([], [], np.empty(0, dtype=np.int64))
    assert g == 0 and rank.size == 0 and any_row.size == 0
