"""The counts behind a DP histogram: the compiled one-pass kernel of ``joint_counts`` gives
exactly numpy's counts (and a brute-force count), and the histogram released from them is
the same for a given seed."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import privlab.data.counts as counts_mod
from privlab.data import Table
from privlab.data.counts import joint_counts
from privlab.data.schema import Attribute, Schema
from privlab.dp.histogram import noisy_histogram
from privlab.dp.mechanisms import Laplace
from privlab.errors import ParameterError


def _brute_force(codes: np.ndarray, sizes: list[int]) -> np.ndarray:
    out = np.zeros(int(np.prod(sizes)), dtype=np.int64)
    for row, c in collections.Counter(map(tuple, codes.tolist())).items():
        out[np.ravel_multi_index(row, sizes)] = c
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_kernel_counts_exactly_what_numpy_and_a_loop_count(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    all_sizes = [int(k) for k in rng.integers(1, 9, 7)]
    n = int(rng.integers(1, 3000))
    dtype = [np.int32, np.int64, np.uint8][seed % 3]
    codes = np.column_stack([rng.integers(0, k, n) for k in all_sizes]).astype(dtype)
    cols = [int(c) for c in rng.choice(7, d, replace=False)]  # any subset, any order
    sizes = [all_sizes[c] for c in cols]
    expected = _brute_force(codes[:, cols], sizes)
    numpy_counts = joint_counts(codes, sizes, columns=cols)
    monkeypatch.setattr(counts_mod, "_KERNEL_MIN", 0)
    kernel = joint_counts(codes, sizes, columns=cols)
    picked = joint_counts(codes[:, cols], sizes)  # a copy of the columns
    strided = joint_counts(codes[::-1][:, cols][::-1], sizes)  # not contiguous
    trusted = joint_counts(codes, sizes, columns=cols, trusted=True)  # one check a row
    for got in (numpy_counts, kernel, picked, strided, trusted):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mechanism", ["geometric", "laplace"])
@pytest.mark.parametrize("estimator", ["ml", "james-stein"])
def test_the_histogram_is_the_same_through_the_kernel(mechanism, estimator, monkeypatch):
    sizes = [3, 4, 5, 2]
    rng = np.random.default_rng(11)
    codes = np.column_stack([rng.integers(0, k, 20_000) for k in sizes])
    schema = Schema(
        tuple(Attribute(f"x{i}", tuple(range(k)), declared=True) for i, k in enumerate(sizes))
    )
    table = Table(codes, schema)
    kw = dict(epsilon=0.5, mechanism=mechanism, estimator=estimator)
    before = noisy_histogram(table, ["x3", "x1", "x2"], rng=np.random.default_rng(7), **kw)
    monkeypatch.setattr(counts_mod, "_KERNEL_MIN", 0)
    after = noisy_histogram(table, ["x3", "x1", "x2"], rng=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(after.counts, before.counts)
    exact = _brute_force(codes[:, [3, 1, 2]], [2, 4, 5])
    np.testing.assert_array_equal(table.counts(["x3", "x1", "x2"]), exact)
    inf = noisy_histogram(table, ["x3", "x1", "x2"], epsilon=float("inf"), rng=7)
    np.testing.assert_array_equal(inf.counts, exact)  # no noise: the exact counts


@pytest.mark.parametrize("release", ["histogram", "pram", "anatomy"])
def test_a_large_table_fingerprinted_in_a_thread_gives_the_same_release(release, monkeypatch):
    """From ``FINGERPRINT_THREAD_MIN`` bytes of codes the input's SHA-256 runs in a thread
    beside the sanitizer's own pass (``Table.fingerprint_soon``): the same release for the
    same generator, and the table's fingerprint in its custody, as the path without the
    thread; a hash that fails raises in the caller, not in the thread."""
    import privlab.data.table as table_mod
    from privlab.publish import anatomize, pram

    rng = np.random.default_rng(3)
    base = Table(np.column_stack([rng.integers(0, 4, 5000), rng.integers(0, 3, 5000)]),
                  Schema((Attribute("a", tuple(range(4)), declared=True),
                          Attribute("b", tuple(range(3)), declared=True))),
                  ).with_roles(qi=["a"], sensitive="b")  # fmt: skip

    def make():
        gen = np.random.default_rng(2)
        table = Table(base.codes, base.schema)  # a new table: its fingerprint not yet taken
        if release == "histogram":
            r = noisy_histogram(table, ["a", "b"], epsilon=1.0, rng=gen)
            return r.counts, r.input_sha256
        if release == "pram":
            r = pram(table, columns=["a"], p=0.3, rng=gen)
            return r.table.codes, r.custody.input_sha256
        r = anatomize(table, l=2, rng=gen)
        return r.qit.codes, r.custody.input_sha256

    plain, plain_sha = make()
    monkeypatch.setattr(table_mod, "FINGERPRINT_THREAD_MIN", 0)
    threaded, threaded_sha = make()
    np.testing.assert_array_equal(threaded, plain)
    assert threaded_sha == plain_sha == base.fingerprint()

    def broken(self):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(Table, "fingerprint", broken)
    with pytest.raises(RuntimeError, match="the disk went away"):
        make()


def test_a_tables_fingerprint_is_taken_once(monkeypatch):
    """The codes are read-only, so the SHA-256 is taken once a table: a second release of it
    (an audit's grid) does not read them again, the threaded path included; a table with
    other codes or other domains has another fingerprint, and roles do not change it."""
    import hashlib

    import privlab.data.table as table_mod

    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    schema = Schema((Attribute("a", tuple(range(4)), declared=True),))
    codes = np.arange(4000).reshape(-1, 1) % 4
    table = Table(codes, schema)
    first = table.fingerprint()
    header = b'[{"declared": true, "domain": [0, 1, 2, 3], "name": "a", "numeric": false}]'
    assert first == real(header + codes.astype(np.int32).tobytes()).hexdigest()
    assert len(calls) == 1
    for _ in range(3):
        assert table.fingerprint() == first
        assert noisy_histogram(table, ["a"], epsilon=1.0, rng=0).input_sha256 == first
    monkeypatch.setattr(table_mod, "FINGERPRINT_THREAD_MIN", 0)
    assert table.fingerprint_soon()() == first
    assert len(calls) == 1
    fresh = Table(codes, schema)
    assert fresh.fingerprint_soon()() == first and len(calls) == 2
    other = Table(codes[::-1], schema)
    wider = Table(codes, Schema((Attribute("a", tuple(range(5)), declared=True),)))
    assert len({first, other.fingerprint(), wider.fingerprint()}) == 3
    assert table.with_roles(qi=["a"]).fingerprint() == first


def test_a_code_outside_its_domain_is_refused_by_the_kernel(monkeypatch):
    monkeypatch.setattr(counts_mod, "_KERNEL_MIN", 0)
    codes = np.array([[0, 1], [1, 3], [2, 0]])
    with pytest.raises(ParameterError, match=r"code 3 \(row 1\) is outside the domain of 3"):
        joint_counts(codes, [3, 3])
    with pytest.raises(ParameterError, match="code -1"):
        joint_counts(np.array([[0], [-1]]), [2])
    # trusted codes are checked a row at a time: a cell index outside the counts is refused
    # (never written past them), by the same message
    for bad, message in (([[0, 1], [2, 5]], r"code 5 \(row 1\)"), ([[0, 0], [-1, 0]], "code -1")):
        with pytest.raises(ParameterError, match=message):
            joint_counts(np.array(bad), [3, 3], trusted=True)


@pytest.mark.parametrize("estimator", ["eb", "js", "posterior"])
def test_the_estimator_post_processes_the_same_noisy_counts(estimator):
    """An estimator other than ML is applied to the very counts that ML publishes unclipped
    (the same noise from the same seed), at the mechanism's scale; ML clipped is their
    positive part."""
    from privlab.dp.estimators import get_estimator

    rng = np.random.default_rng(5)
    schema = Schema((Attribute("x", tuple(range(6)), declared=True),))
    table = Table(rng.integers(0, 6, (300, 1)), schema)
    kw = dict(epsilon=0.3, mechanism="laplace")
    raw = noisy_histogram(
        table, ["x"], estimator="ml", clip=False, rng=np.random.default_rng(9), **kw
    )
    ml = noisy_histogram(table, ["x"], estimator="ml", rng=np.random.default_rng(9), **kw)
    np.testing.assert_array_equal(ml.counts, np.maximum(raw.counts, 0))
    est = noisy_histogram(
        table, ["x"], estimator=estimator, clip=False, rng=np.random.default_rng(9), **kw
    )
    want = get_estimator(estimator)(raw.counts, raw.scale, clip=False)
    np.testing.assert_allclose(est.counts, want, rtol=1e-12, atol=1e-12)
    assert not np.allclose(est.counts, raw.counts)  # the estimator changed something


def test_a_joint_domain_of_exactly_ten_million_cells_is_allowed():
    """The limit is inclusive: 10 x 1,000,000 = 10,000,000 cells pass the check, one more
    column value (10 x 1,000,001) does not."""
    from types import SimpleNamespace

    from privlab.dp.histogram import MAX_CELLS, _check_cells

    assert MAX_CELLS == 10_000_000
    at_limit = {"a": SimpleNamespace(size=10), "b": SimpleNamespace(size=1_000_000)}
    _check_cells(at_limit, ["a", "b"])
    over = {"a": SimpleNamespace(size=10), "b": SimpleNamespace(size=1_000_001)}
    with pytest.raises(ParameterError, match=r"10000010 cells \(limit 10000000\)"):
        _check_cells(over, ["a", "b"])


def test_the_release_describes_itself_and_lists_its_cells_in_domain_order():
    """``to_dict`` (the parameters a saved release records) and ``to_pandas`` (its rows: the
    joint domain in the declared order, the last column varying fastest) in full."""
    schema = Schema(
        (Attribute("x", (0, 1, 2), declared=True), Attribute("y", ("b", "a"), declared=True))
    )
    table = Table(np.array([[0, 0], [2, 1], [2, 1], [1, 0]]), schema)
    h = noisy_histogram(table, ["x", "y"], epsilon=0.5, mechanism="laplace", rng=7)
    assert h.to_dict() == {
        "columns": ["x", "y"],
        "epsilon": 0.5,
        "mechanism": "laplace",
        "estimator": "ml",
        "scale": Laplace(0.5).scale,
        "sensitivity": 1,
        "cells": 6,
    }
    assert 2.0 <= h.scale <= 2.0 * (1 + 2**-19)  # 1 / epsilon, rounded up onto the grid
    df = h.to_pandas()
    assert list(df.columns) == ["x", "y", "count"]
    assert list(zip(df["x"], df["y"])) == [
        (0, "b"), (0, "a"), (1, "b"), (1, "a"), (2, "b"), (2, "a"),
    ]  # fmt: skip
    np.testing.assert_array_equal(df["count"].to_numpy(), h.counts)
    assert (h.counts >= 0).all()  # ML clipped by default
    g = noisy_histogram(table, ["y"], epsilon=1.0, estimator="js", rng=7)
    a = np.exp(-1.0)
    assert g.to_dict() == {
        "columns": ["y"],
        "epsilon": 1.0,
        "mechanism": "geometric",
        "estimator": "js",
        "scale": pytest.approx(np.sqrt(a) / (1 - a), rel=1e-12),
        "sensitivity": 1,
        "cells": 2,
    }


def test_a_parquet_marked_not_for_publication_keeps_its_pandas_metadata(tmp_path):
    """The mark is added to the file's metadata, not put in its place: the pandas metadata
    stays, and the file reads back as the release's frame."""
    import pandas as pd
    import pyarrow.parquet as pq

    schema = Schema((Attribute("y", ("b", "a"), declared=True),))
    table = Table(np.array([[0], [1], [1]]), schema)
    h = noisy_histogram(table, ["y"], epsilon=1.0, rng=np.random.default_rng(2))
    h.save(tmp_path / "h.parquet", not_for_publication=True)
    meta = pq.read_schema(tmp_path / "h.parquet").metadata
    assert b"privlab.not_for_publication" in meta and b"pandas" in meta
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "h.parquet"), h.to_pandas())


def test_the_warning_about_a_domain_read_from_the_data_points_at_the_caller():
    """Accepted with ``domain_from_data``, the leak is warned about at the line that asked
    for the histogram (this file), not inside privlab."""
    from privlab.errors import PrivacyWarning

    table = Table(np.array([[0], [1]]), Schema((Attribute("x", (0, 2)),)))  # codes
    with pytest.warns(PrivacyWarning, match="'x' are the values the data holds") as rec:
        h = noisy_histogram(table, ["x"], epsilon=1.0, domain_from_data=True, rng=3)
    assert [w.filename for w in rec] == [__file__]
    assert h.to_dict()["cells"] == 2


def test_the_spark_engine_names_an_unknown_column_before_any_spark_job(monkeypatch):
    """An unknown column is refused from the frame's column names alone (before the schema
    is read or anything counted): the error lists the columns there are; known columns go
    on to the schema."""
    import privlab.data.spark as spark_mod
    from privlab.errors import SchemaError

    class _Frame:
        columns = ("a", "b")

    class _SchemaRead(Exception):
        pass

    frames = []

    def frame(data, spark=None):
        frames.append(data)
        return _Frame()

    def schema(df, **kwargs):
        raise _SchemaRead(kwargs["columns"])

    monkeypatch.setattr(spark_mod, "spark_frame", frame)
    monkeypatch.setattr(spark_mod, "spark_schema", schema)
    with pytest.raises(SchemaError, match=r"^unknown column 'zz'; columns are: a, b$"):
        noisy_histogram("input.parquet", ["a", "zz"], epsilon=1.0, engine="spark", rng=1)
    assert frames == ["input.parquet"]
    with pytest.raises(_SchemaRead) as e:
        noisy_histogram("input.parquet", ["b", "a"], epsilon=1.0, engine="spark", rng=1)
    assert e.value.args == (["b", "a"],)
