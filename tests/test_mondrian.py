"""Mondrian's partitioning, by the compiled kernels (large tables) and by the Python loop
(small ones), gives exactly what privlab's implementation before the kernels gave
(tests/mondrian_reference.py): the same classes with the same labels, and the same release
from ``generalize(method="mondrian")``."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mondrian_reference as ref
import privlab.publish.generalization as gz
from privlab.data.datasets import load_adult
from privlab.data.table import Table
from privlab.publish import mondrian
from privlab.publish.generalization import generalize
from privlab.publish.models import PrivacyModel
from privlab.publish.mondrian import mondrian_classes, mondrian_partition

MODELS = [
    dict(),
    dict(l=2),
    dict(l=3),
    dict(l=2.5, l_variant="entropy"),
    dict(l=2, l_variant="recursive", c=2.0),
    dict(t=0.3),
    dict(t=0.25, t_distance="ordered"),
    dict(delta=1.5),
    dict(l=2, t=0.4),
]


def _column(rng: np.random.Generator, n: int) -> np.ndarray:
    """A column of one of several shapes: uniform, skewed (many ties at the median),
    constant, two values, a wide range (sorted, not counted), shifted negative codes."""
    kind = int(rng.integers(0, 6))
    if kind == 0:
        return rng.integers(0, int(rng.integers(1, 20)), n)
    if kind == 1:
        return np.minimum(rng.geometric(0.5, n) - 1, 15)
    if kind == 2:
        return np.full(n, int(rng.integers(0, 5)))
    if kind == 3:
        return rng.choice([0, 7], n, p=[0.8, 0.2])
    if kind == 4:
        return rng.integers(0, 5000, n)
    return rng.integers(-40, 3, n)


def _width(rng: np.random.Generator, size: int) -> np.ndarray:
    """A width matrix with many ties: ``W[lo, hi]`` in quarters, 0 on the diagonal."""
    w = np.round(rng.random((size, size)) * 4) / 4
    np.fill_diagonal(w, 0.0)
    return w


@contextmanager
def _path(kernel: bool):
    """Run the compiled kernels (whatever the table's size) or the Python loop."""
    saved = mondrian._KERNEL_MIN
    mondrian._KERNEL_MIN = 0 if kernel else 1 << 62
    try:
        yield
    finally:
        mondrian._KERNEL_MIN = saved


def _check(x, model, s, m, width=None) -> None:
    old = ref.mondrian_partition(x, model, s, m, width)
    g = int(old.max()) + 1 if old.size else 0
    for kernel in (True, False):
        inputs = [a.copy() for a in [x, s, *(width or [])] if a is not None]
        with _path(kernel):
            new, bounds = mondrian_classes(x, model, s, m, width)
            np.testing.assert_array_equal(mondrian_partition(x, model, s, m, width), old)
        for a, b in zip(inputs, [a for a in [x, s, *(width or [])] if a is not None]):
            np.testing.assert_array_equal(a, b)  # the caller's arrays are left as they were
        np.testing.assert_array_equal(new, old)
        assert bounds.shape == (g, 2, x.shape[1])
        for c in range(g):  # each class's code range, from the rows themselves
            rows = x[old == c]
            np.testing.assert_array_equal(bounds[c, 0], rows.min(axis=0))
            np.testing.assert_array_equal(bounds[c, 1], rows.max(axis=0))


@pytest.mark.parametrize("seed", range(40))
def test_partition_is_identical_to_the_python_implementation(seed):
    """Random tables of 1 to 600 rows and 1 to 5 QIs of mixed shapes, every privacy model,
    with and without width matrices."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 7, 30, 200, 600]))
    d = int(rng.integers(1, 6))
    x = np.column_stack([_column(rng, n) for _ in range(d)])
    m = int(rng.integers(2, 7))
    s = np.minimum(rng.geometric(0.4, n) - 1, m - 1) if seed % 2 else rng.integers(0, m, n)
    widths = [None]
    if x.min() >= 0 and x.max() < 60:
        widths.append([_width(rng, int(x.max()) + 1) for _ in range(d)])
    for width in widths:
        for k in sorted({1, 2, 3, int(rng.integers(1, 12))}):
            if k > n:
                continue
            for kw in MODELS:
                model = PrivacyModel(k=k, **kw)
                if model.l is not None and np.unique(s).size < model.l:
                    continue
                _check(x, model, s if model.needs_sensitive else None, m, width)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=80
    ),
    k=st.integers(1, 6),
    model=st.sampled_from(MODELS),
    data=st.data(),
)
def test_partition_is_identical_under_hypothesis(rows, k, model, data):
    """Small tables with many identical rows and ties: the same labels as the old code."""
    x = np.array(rows, dtype=np.int64)
    n = x.shape[0]
    s = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    mdl = PrivacyModel(k=min(k, n), **model)
    if mdl.l is not None and np.unique(s).size < mdl.l:
        return
    _check(x, mdl, s if mdl.needs_sensitive else None, 3)


@pytest.mark.parametrize("kernel", [True, False])
def test_identical_rows_are_one_class_and_tiny_tables(kernel):
    with _path(kernel):
        _identical_rows_and_tiny_tables()


def _identical_rows_and_tiny_tables():
    x = np.tile([[3, 1, 4]], (50, 1))
    for k in (1, 2, 25, 50):
        assert (mondrian_partition(x, PrivacyModel(k=k)) == 0).all()
    # one row; no column; no row
    np.testing.assert_array_equal(mondrian_partition(np.array([[5, 6]]), PrivacyModel()), [0])
    np.testing.assert_array_equal(mondrian_partition(np.zeros((4, 0)), PrivacyModel()), [0] * 4)
    assert mondrian_partition(np.zeros((0, 3)), PrivacyModel()).shape == (0,)
    # k = 1 on distinct rows: every row is its own class
    x = np.arange(16).reshape(-1, 1)
    assert np.unique(mondrian_partition(x, PrivacyModel(k=1))).size == 16


def test_a_larger_table_takes_the_same_splits():
    """20,000 rows of Adult-like codes (medians from histograms, several retries of the
    sensitive models), k-anonymity and l-diversity."""
    rng = np.random.default_rng(7)
    n = 20_000
    x = np.column_stack([rng.integers(0, 74, n), rng.integers(0, 16, n), rng.integers(0, 2, n)])
    x[:, 0] = np.minimum(x[:, 0], rng.integers(10, 74, n))  # skewed
    s = np.minimum(rng.geometric(0.3, n) - 1, 9)
    for model in (PrivacyModel(k=5), PrivacyModel(k=3, l=3), PrivacyModel(k=4, t=0.2)):
        _check(x, model, s if model.needs_sensitive else None, 10)


def test_a_width_matrix_that_does_not_cover_the_codes_is_refused():
    x = np.array([[0], [5]])
    with _path(True), pytest.raises(ValueError, match="width"):
        mondrian_partition(x, PrivacyModel(), width=[np.zeros((3, 3))])


@pytest.fixture(scope="module")
def adult_small() -> Table:
    t = load_adult()
    rows = np.random.default_rng(3).choice(t.n_rows, 2500, replace=False)
    return t.take(np.sort(rows))


def _same_release(a, b) -> None:
    np.testing.assert_array_equal(a.table.codes, b.table.codes)
    assert a.table.schema == b.table.schema
    assert a.utility == b.utility
    assert a.search == b.search
    np.testing.assert_array_equal(a.custody.truth.codes, b.custody.truth.codes)


@pytest.mark.parametrize(
    "kw",
    [
        dict(k=5),
        dict(k=2),
        dict(k=4, l=3),
        dict(k=3, l=2.5, l_variant="entropy"),
        dict(k=5, t=0.3),
        dict(k=2, delta=2.0),
    ],
)
def test_generalize_gives_the_release_of_the_python_implementation(adult_small, kw, monkeypatch):
    """generalize(method="mondrian") on Adult (numeric and hierarchical QIs, width matrices)
    publishes the same table, utility and custody as the code before the kernel."""
    qi = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country"]
    monkeypatch.setattr(mondrian, "_KERNEL_MIN", 0)
    new = generalize(
        adult_small, qi=qi, sensitive="occupation", dataset="adult", method="mondrian", **kw
    )
    monkeypatch.setattr(gz, "_mondrian", ref._mondrian)
    old = generalize(
        adult_small, qi=qi, sensitive="occupation", dataset="adult", method="mondrian", **kw
    )
    _same_release(new, old)


def test_generalize_on_random_tables_matches(monkeypatch):
    monkeypatch.setattr(mondrian, "_KERNEL_MIN", 0)
    rng = np.random.default_rng(11)
    for _ in range(6):
        n = int(rng.integers(20, 300))
        df = pd.DataFrame(
            {
                "a": rng.integers(0, 30, n),
                "b": rng.choice(list("pqrstu"), n, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05]),
                "c": rng.integers(0, 3, n),
                "s": rng.choice(list("xyz"), n),
            }
        )
        t = Table.from_pandas(df)
        kw = dict(qi=["a", "b", "c"], sensitive="s", method="mondrian", k=int(rng.integers(1, 6)))
        if rng.random() < 0.5:
            kw["l"] = 2
        with pytest.warns():  # the hierarchies come from the data
            new = generalize(t, **kw)
        with monkeypatch.context() as mp, pytest.warns():
            mp.setattr(gz, "_mondrian", ref._mondrian)
            old = generalize(t, **kw)
        _same_release(new, old)
