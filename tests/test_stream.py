"""Out of core (issue 19, part 2): Parquet read in batches against public domains, the
streamed DP histogram, streamed PRAM with its external shuffle, atomic outputs.

Oracles: the in-memory path (``Table.from_pandas``, ``noisy_histogram``) on the same rows,
the custody's truth for PRAM's transitions, the multiset of rows for the shuffle."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privlab.data import Table
from privlab.data.stream import BucketShuffle, iter_codes, parquet_schema, stream_counts
from privlab.dp.histogram import noisy_histogram, noisy_histogram_parquet
from privlab.errors import ParameterError, PrivacyWarning, PrivlabError, SchemaError
from privlab.publish.streaming import pram_parquet
from privlab.release.base import Release

DOMAINS = {"a": [0, 1, 2], "b": ["x", "y", "z", "w"], "c": [10, 11, 12, 13, 14]}


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": g.integers(0, 3, n),
            "b": g.choice(["x", "y", "z"], n),  # "w" is declared but no row holds it
            "c": g.integers(10, 15, n),
            "d": g.normal(size=n),  # never read
        }
    )


@pytest.fixture
def parquet(tmp_path):
    def make(n: int = 1000, seed: int = 0, row_group: int = 300):
        df = _frame(n, seed)
        path = tmp_path / f"in-{n}-{seed}.parquet"
        df.to_parquet(path, row_group_size=row_group, index=False)
        return path, df

    return make


@pytest.mark.parametrize("batch_rows", [1, 7, 300, 1000, 5000])
def test_batches_encode_as_the_in_memory_table(parquet, batch_rows):
    """Batch size 1, batches straddling row groups, a last partial batch, one batch."""
    path, df = parquet(1000)
    schema = parquet_schema(path, DOMAINS, columns=["a", "b", "c"])
    batches = list(iter_codes(path, schema, batch_rows=batch_rows))
    assert [len(b) for b in batches[:-1]] == [batch_rows] * (len(batches) - 1)
    assert 1 <= len(batches[-1]) <= batch_rows and len(batches) == math.ceil(1000 / batch_rows)
    table = Table.from_pandas(df[["a", "b", "c"]], domains=DOMAINS)
    assert np.array_equal(np.concatenate(batches), table.codes)
    assert all(b.dtype == np.int32 and b.flags.c_contiguous for b in batches)


def test_each_way_of_encoding_gives_the_codes_of_attribute_encode(parquet, tmp_path):
    """A contiguous integer domain (value - lo), a gappy or float one (Arrow hash lookup),
    dictionary-encoded strings, and a domain of another type (``Attribute.encode``)."""
    path, df = parquet(400)
    df = df.assign(e=df["c"].astype(float), f=df["b"].astype("category"), g=df["a"])
    path = tmp_path / "kinds.parquet"
    df.to_parquet(path, row_group_size=90)
    domains = {"a": [0, 1, 2], "c": [14, 13, 12, 11, 10, 99], "e": [10, 11, 12, 13, 14],
               "f": ["z", "y", "x"], "g": ["0", "1", "2"]}  # fmt: skip
    schema = parquet_schema(path, domains, columns=list(domains))
    got = np.concatenate(list(iter_codes(path, schema, batch_rows=33)))
    for j, c in enumerate(domains):
        assert np.array_equal(got[:, j], schema[c].encode(df[c].to_numpy())), c


@pytest.mark.parametrize("batch_rows", [1, 64, 1000])
def test_streamed_histogram_is_the_in_memory_one(parquet, batch_rows):
    path, df = parquet(600)
    table = Table.from_pandas(df, domains=DOMAINS)
    for cols in (["a", "b"], ["c", "a", "b"], ["b"]):
        exact = noisy_histogram_parquet(path, cols, epsilon=math.inf, domains=DOMAINS,
                                        batch_rows=batch_rows)  # fmt: skip
        assert np.array_equal(exact.counts, table.counts(cols))
        assert exact.counts.sum() == 600 and exact.domains == tuple(tuple(DOMAINS[c]) for c in cols)
        for seed in (1, 2):
            s = noisy_histogram_parquet(path, cols, epsilon=0.7, domains=DOMAINS,
                                        batch_rows=batch_rows, estimator="eb",
                                        rng=np.random.default_rng(seed))  # fmt: skip
            m = noisy_histogram(table, cols, epsilon=0.7, estimator="eb",
                                rng=np.random.default_rng(seed))  # fmt: skip
            assert np.array_equal(s.counts, m.counts)
            assert s.to_pandas().equals(m.to_pandas())


def test_streamed_counts_take_the_compiled_pass_on_large_files(tmp_path, monkeypatch):
    """Above the kernel threshold the batches are counted in place by the compiled pass."""
    import privlab.data.stream as stream

    df = _frame(5000, 3)
    path = tmp_path / "big.parquet"
    df.to_parquet(path, row_group_size=1000)
    schema = parquet_schema(path, DOMAINS, columns=["a", "b", "c"])
    monkeypatch.setattr(stream, "_KERNEL_MIN", 1)
    got = stream_counts(path, schema, ["c", "b"], batch_rows=333)
    expected = Table.from_pandas(df[["a", "b", "c"]], domains=DOMAINS).counts(["c", "b"])
    assert np.array_equal(got, expected)


def test_values_outside_the_public_domain_are_refused(parquet):
    path, _ = parquet(500)
    narrow = {**DOMAINS, "b": ["x", "y"]}
    with pytest.raises(SchemaError, match=r"value 'z' is not in the domain of 'b'"):
        noisy_histogram_parquet(path, ["a", "b"], epsilon=1.0, domains=narrow)
    with pytest.raises(SchemaError, match=r"value 2 is not in the domain of 'a'"):
        list(iter_codes(path, parquet_schema(path, {"a": [0, 1]}, columns=["a"]), batch_rows=50))


def test_a_domain_read_from_the_data_is_refused_or_warned_as_in_memory(parquet):
    path, df = parquet(400)
    with pytest.raises(ParameterError, match="read from the data"):
        noisy_histogram_parquet(path, ["a", "b"], epsilon=1.0, domains={"a": [0, 1, 2]})
    with pytest.warns(PrivacyWarning, match="'b'"):
        s = noisy_histogram_parquet(path, ["a", "b"], epsilon=math.inf, domains={"a": [0, 1, 2]},
                                    domain_from_data=True, batch_rows=37)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        m = noisy_histogram(Table.from_pandas(df, domains={"a": [0, 1, 2]}), ["a", "b"],
                            epsilon=math.inf, domain_from_data=True)  # fmt: skip
    assert s.domains == m.domains == ((0, 1, 2), ("x", "y", "z"))
    assert np.array_equal(s.counts, m.counts)


def _shuffled(rows: np.ndarray, buckets: int, seed: int, tmp_path) -> np.ndarray:
    gens = np.random.default_rng(seed).spawn(1 + buckets)
    with BucketShuffle(tmp_path / f"sh-{seed}", rows.shape[1], buckets) as sh:
        for lo in range(0, len(rows), 3):
            sh.add(rows[lo : lo + 3], gens[0])
        out = list(sh.drain(gens[1:]))
    assert not (tmp_path / f"sh-{seed}").exists()  # bucket files removed
    return np.concatenate(out) if out else np.empty((0, rows.shape[1]), np.int32)


def test_the_external_shuffle_is_a_permutation_and_not_the_identity(tmp_path):
    rows = np.column_stack([np.arange(1000), np.arange(1000) % 7]).astype(np.int32)
    out = _shuffled(rows, 5, 0, tmp_path)
    assert out.shape == rows.shape
    assert np.array_equal(out[np.argsort(out[:, 0])], rows)  # same multiset (ids unique)
    assert not np.array_equal(out, rows)
    assert not np.array_equal(_shuffled(rows, 5, 1, tmp_path), out)  # another seed, another order


def test_the_external_shuffle_is_uniform_over_permutations(tmp_path):
    """4 rows through 3 buckets, 2400 shuffles: each of the 24 orders about 100 times."""
    rows = np.arange(4, dtype=np.int32).reshape(-1, 1)
    perms = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    seen = np.zeros(24, dtype=np.int64)
    for seed in range(2400):
        seen[perms[tuple(_shuffled(rows, 3, seed, tmp_path)[:, 0])]] += 1
    assert stats.chisquare(seen).pvalue > 1e-4


def test_pram_with_identity_matrices_releases_the_same_rows_shuffled(parquet, tmp_path):
    path, df = parquet(900)
    out = tmp_path / "rel"
    r = pram_parquet(path, out, columns=["a", "b"], keep=["c"], p=0.0, domains=DOMAINS,
                     batch_rows=100, rng=np.random.default_rng(0),
                     not_for_publication=True)  # fmt: skip
    assert r.n_rows == 900 and r.randomized_columns == ()  # p = 0: identity matrices
    got = pd.read_parquet(out / "randomized.parquet")
    assert list(got.columns) == ["a", "b", "c"]
    key = ["a", "b", "c"]
    assert (
        got.sort_values(key)
        .reset_index(drop=True)
        .equals(df[key].sort_values(key).reset_index(drop=True))
    )
    assert not got.equals(df[key])  # shuffled
    unshuffled = pram_parquet(path, tmp_path / "rel2", columns=["a"], keep=["b", "c"], p=0.0,
                              domains=DOMAINS, batch_rows=64, shuffle=False)  # fmt: skip
    assert unshuffled.n_rows == 900
    assert pd.read_parquet(tmp_path / "rel2" / "randomized.parquet").equals(df[key])


def test_pram_draws_each_record_from_its_matrix_row(parquet, tmp_path):
    """The custody's truth is row-aligned with the release: the transitions from each true
    value follow that value's matrix row (chi-square, fixed seed); the release and its
    custody load as any PRAM release."""
    path, df = parquet(20_000, seed=5, row_group=3000)
    out, cdir = tmp_path / "rel", tmp_path / "custody"
    r = pram_parquet(path, out, columns=["a", "b"], keep=["c"], p=0.3, domains=DOMAINS,
                     batch_rows=2500, custody=cdir, rng=np.random.default_rng(7),
                     not_for_publication=True)  # fmt: skip
    rel = Release.load(out, custody=cdir)
    assert rel.n_rows == 20_000 and rel.custody.truth.n_rows == 20_000
    truth, released = rel.custody.truth, rel.table
    for col in ("a", "b"):
        m = r.blocks[[b.columns for b in r.blocks].index((col,))].matrix
        t, x = truth.column(col), released.column(col)
        for v in range(m.shape[0]):
            n_v = int(np.sum(t == v))
            if n_v == 0:
                continue  # "w": declared, held by no record
            obs = np.bincount(x[t == v], minlength=m.shape[1])
            assert stats.chisquare(obs, m[v] * n_v).pvalue > 1e-4, (col, v)
    # the kept column is released unchanged, row by row beside the truth
    key = ["a", "b", "c"]
    orig = truth.to_pandas().assign(c=released.to_pandas()["c"])[key]
    assert (
        orig.sort_values(key)
        .reset_index(drop=True)
        .equals(df[key].sort_values(key).reset_index(drop=True))
    )


def test_simultaneous_pram_streams_too(parquet, tmp_path):
    path, df = parquet(500)
    r = pram_parquet(path, tmp_path / "rel", columns=["a", "c"], p=0.4, simultaneous=True,
                     domains=DOMAINS, batch_rows=128, custody=tmp_path / "cd",
                     rng=np.random.default_rng(2), not_for_publication=True)  # fmt: skip
    assert [b.columns for b in r.blocks] == [("a", "c")] and r.blocks[0].matrix.shape == (15, 15)
    rel = Release.load(tmp_path / "rel", custody=tmp_path / "cd")
    truth = rel.custody.truth.to_pandas()
    assert (
        truth.sort_values(["a", "c"])
        .reset_index(drop=True)
        .equals(df[["a", "c"]].sort_values(["a", "c"]).reset_index(drop=True))
    )
    changed = np.mean((rel.table.codes != rel.custody.truth.codes).any(axis=1))
    assert abs(changed - 0.4) < 5 * math.sqrt(0.4 * 0.6 / 500)  # m-category: stays w.p. 1 - p


def test_a_failed_stream_leaves_no_output_and_no_temporary(tmp_path):
    """A value outside the domain in the last batch: nothing is written, and the bucket
    files and temporary directories are gone."""
    df = _frame(1000)
    df.loc[997, "b"] = "q"
    path = tmp_path / "in.parquet"
    df.to_parquet(path, row_group_size=250)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SchemaError, match="'q'"):
        pram_parquet(path, tmp_path / "rel", columns=["a", "b"], p=0.2, domains=DOMAINS,
                     batch_rows=100, custody=tmp_path / "cd")  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    (tmp_path / "rel").mkdir()  # an existing output is refused before any work
    with pytest.raises(PrivlabError, match="exists"):
        pram_parquet(path, tmp_path / "rel", columns=["a"], p=0.2, domains=DOMAINS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "rel"])
    assert not any((tmp_path / "rel").iterdir())


def test_cli_engine_stream(run, parquet, tmp_path):
    path, df = parquet(800)
    dom = ["--domain", "a=0|1|2", "--domain", "b=x|y|z|w"]
    code, _, err = run("dp", "histogram", path, "--columns", "a,b", "--epsilon", "inf",
                         "--out", tmp_path / "h.csv", *dom, "--engine", "stream",
                         "--batch-rows", "99")  # fmt: skip
    assert code == 0, err
    h = pd.read_csv(tmp_path / "h.csv")
    expected = df.groupby(["a", "b"]).size()
    assert len(h) == 12 and h["count"].sum() == 800
    for _, row in h.iterrows():
        assert row["count"] == expected.get((row["a"], row["b"]), 0)
    code, _, err = run("pram", "randomize", path, "--columns", "a", "--keep", "b", "--p",
                         "0.3", "--out", tmp_path / "rel", *dom, "--engine", "stream")  # fmt: skip
    assert code == 0, err
    assert len(pd.read_parquet(tmp_path / "rel" / "randomized.parquet")) == 800
    # invariant PRAM streams too: the file's frequencies by one more pass
    code, _, err = run("pram", "randomize", path, "--columns", "a", "--p", "0.3", "--out",
                         tmp_path / "rel3", *dom, "--engine", "stream", "--invariant",
                         "--republish")  # fmt: skip
    assert code == 0, err
    from privlab.publish.randomization import invariant_matrix, m_category_matrix

    meta = json.loads((tmp_path / "rel3" / "release.json").read_text())
    freq = df["a"].value_counts().reindex([0, 1, 2], fill_value=0).to_numpy()
    want = invariant_matrix(m_category_matrix(3, 0.3), freq)
    assert np.allclose(meta["matrices"][0]["matrix"], want) and meta["parameters"]["invariant"]
    code, _, err = run("pram", "randomize", path, "--columns", "a", "--p", "0.3", "--out",
                         tmp_path / "rel4", "--engine", "stream", "--replay", tmp_path)  # fmt: skip
    assert code == 2 and "--replay" in err and not (tmp_path / "rel4").exists()
    # Anatomy streams too: the QIT and ST as Parquet, a custody beside them
    code, out, err = run("anatomize", path, "--qi", "a,c", "--sensitive", "b", "--l", "2",
                         *dom, "--engine", "stream", "--batch-rows", "97", "--seed", "3",
                       "--out", tmp_path / "an", "--custody", tmp_path / "an.cd",
                       "--republish")  # fmt: skip
    assert code == 0, err
    assert "groups (streamed)" in out + err and "not published (no role): d" in err
    rel = Release.load(tmp_path / "an", custody=tmp_path / "an.cd")
    assert rel.n_rows == 800 and rel.group_counts().max() == 1
    assert sorted(p.name for p in (tmp_path / "an").iterdir()) == [
        "qit.parquet", "release.json", "st.parquet"
    ]  # fmt: skip
    code, _, err = run("anatomize", path, "--qi", "a", "--sensitive", "b", "--l", "2",
                       "--engine", "stream", "--seed", "3", "--out", tmp_path / "an2")  # fmt: skip
    assert code == 2 and "--seed needs --custody" in err and not (tmp_path / "an2").exists()


def _hierarchies():
    from privlab.data.hierarchy import Hierarchy

    return {
        "a": Hierarchy("a", (("0", "0-1", "*"), ("1", "0-1", "*"), ("2", "2", "*"))),
        "c": Hierarchy(
            "c", tuple((str(v), "10-12" if v <= 12 else "13-14", "*") for v in range(10, 15))
        ),
    }


LABELS = {  # the same hierarchies as maps of values, for the pandas oracle
    "a": [{0: 0, 1: 1, 2: 2}, {0: "0-1", 1: "0-1", 2: "2"}, {0: "*", 1: "*", 2: "*"}],
    "c": [
        {v: v for v in range(10, 15)},
        {v: "10-12" if v <= 12 else "13-14" for v in range(10, 15)},
        {v: "*" for v in range(10, 15)},
    ],
}


@pytest.mark.parametrize(
    ("node", "k", "l"), [((1, 1), 100, 3), ((0, 1), 100, None), ((1, 0), 50, 2)]
)
def test_streamed_k_and_l_checks_and_recoding_match_a_pandas_oracle(tmp_path, node, k, l):
    from privlab.publish.streaming import check_node_parquet, recode_parquet

    df = _frame(600, seed=9)
    path = tmp_path / "in.parquet"
    df.to_parquet(path, row_group_size=128)
    gen = df.assign(a=df["a"].map(LABELS["a"][node[0]]), c=df["c"].map(LABELS["c"][node[1]]))
    groups = gen.groupby(["a", "c"])
    sizes, distinct = groups.size(), groups["b"].nunique()
    bad = (sizes < k) | ((distinct < l) if l is not None else False)
    check = check_node_parquet(path, qi=["a", "c"], node=node, sensitive="b", k=k, l=l,
                               hierarchies=_hierarchies(), domains=DOMAINS,
                               batch_rows=50)  # fmt: skip
    assert check.n_rows == 600 and check.k == sizes.min() and check.l == distinct.min()
    assert sorted(check.class_sizes) == sorted(sizes) and check.bad.sum() == bad.sum()
    assert check.n_suppressed == sizes[bad].sum() > 0
    four = check_node_parquet(path, qi=["a", "c"], node=node, sensitive="b", k=1, l=4,
                              hierarchies=_hierarchies(), domains=DOMAINS)  # fmt: skip
    assert four.bad.all()  # 3 sensitive values: no class is 4-diverse
    with pytest.raises(PrivlabError, match="suppressed"):  # EligibilityError, nothing written
        recode_parquet(path, tmp_path / "out.parquet", qi=["a", "c"], node=node, sensitive="b",
                       k=k, l=l, hierarchies=_hierarchies(), domains=DOMAINS)  # fmt: skip
    assert not (tmp_path / "out.parquet").exists()
    recode_parquet(path, tmp_path / "out.parquet", qi=["a", "c"], node=node, sensitive="b",
                   keep=["d"], k=k, l=l, suppression=0.5, hierarchies=_hierarchies(),
                   domains=DOMAINS, batch_rows=77, rng=np.random.default_rng(0))  # fmt: skip
    got = pd.read_parquet(tmp_path / "out.parquet")
    kept = gen[~bad.reindex(pd.MultiIndex.from_frame(gen[["a", "c"]])).to_numpy()]
    key = ["a", "c", "b", "d"]
    assert list(got.columns) == key and len(got) == 600 - check.n_suppressed
    norm = lambda f: f[key].astype(str).sort_values(key).reset_index(drop=True)  # noqa: E731
    assert norm(got).equals(norm(kept))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


def test_bad_inputs_fail_in_one_clear_error(parquet, tmp_path):
    path, _ = parquet(100)
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        noisy_histogram_parquet(path, ["a", "nope"], epsilon=1.0, domains=DOMAINS)
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        pram_parquet(path, tmp_path / "r", columns=["nope"], p=0.2)
    text = tmp_path / "t.parquet"
    text.write_text("a,b\n1,2\n")
    for call in (
        lambda: noisy_histogram_parquet(text, ["a"], epsilon=1.0, domains=DOMAINS),
        lambda: pram_parquet(text, tmp_path / "r", columns=["a"], p=0.2),
        lambda: noisy_histogram_parquet(tmp_path / "missing.parquet", ["a"], epsilon=1.0),
    ):
        with pytest.raises(PrivlabError, match=r"Parquet|not found"):
            call()
    with pytest.raises(ParameterError, match="batch_rows"):
        list(iter_codes(path, parquet_schema(path, DOMAINS, columns=["a"]), batch_rows=0))
    assert not (tmp_path / "r").exists()


def test_a_joint_domain_over_ten_million_cells_is_refused_before_counting(tmp_path):
    """The streamed histogram refuses a joint domain of more than 10,000,000 cells (11 x
    909,091 = 10,000,001: one cell too many) before it counts or noises anything."""
    path = tmp_path / "wide.parquet"
    pd.DataFrame({"a": [0, 1], "b": [0, 1]}).to_parquet(path, index=False)
    wide = {"a": list(range(11)), "b": list(range(909_091))}
    with pytest.raises(ParameterError, match=r"10000001 cells \(limit 10000000\)"):
        noisy_histogram_parquet(path, ["a", "b"], epsilon=1.0, domains=wide)


# -- engine="stream" in the library (issue 32, item 1) -----------------------------------------
def test_noisy_histogram_takes_the_stream_engine(parquet):
    """``noisy_histogram(path, engine="stream")`` is the streamed histogram: the in-memory
    release for the same rows and generator, its domains from ``schema``; a table in memory
    is refused for the stream engine, and an engine privlab lacks is named."""
    from privlab.data.schema import Attribute, Schema

    path, df = parquet(600)
    table = Table.from_pandas(df, domains=DOMAINS)
    schema = Schema(tuple(Attribute(c, tuple(v), declared=True) for c, v in DOMAINS.items()))
    s = noisy_histogram(path, ["b", "a"], epsilon=0.7, estimator="eb", engine="stream",
                        schema=schema, batch_rows=64, rng=np.random.default_rng(3))  # fmt: skip
    m = noisy_histogram(table, ["b", "a"], epsilon=0.7, estimator="eb",
                        rng=np.random.default_rng(3))  # fmt: skip
    assert s.to_pandas().equals(m.to_pandas()) and s.domains == m.domains
    assert s.input_sha256 is not None and s.input_sha256 != m.input_sha256  # the file's
    with pytest.raises(ParameterError, match=r"reads a Parquet file: give its path .*DataFrame"):
        noisy_histogram(df, ["a"], epsilon=1.0, engine="stream")
    with pytest.raises(ParameterError, match="engine must be one of memory, stream, spark, not"):
        noisy_histogram(table, ["a"], epsilon=1.0, engine="gpu")
    # without a schema the domains are read from the data: refused unless allowed
    with pytest.raises(ParameterError, match="domain"):
        noisy_histogram(path, ["a"], epsilon=1.0, engine="stream")


def test_pram_takes_the_stream_engine(parquet, tmp_path):
    """``pram(path, engine="stream")`` plans the release (the in-memory release's schema,
    parameters and matrices) and returns a StreamedRelease of the release family: its
    ``collect()`` is the in-memory PramRelease with the rows and truth that ``save()`` writes,
    row for row, on every run (the producer rebuilds its streams); reading reads only the
    named columns; a table in memory is refused for the stream engine."""
    from privlab.publish import pram
    from privlab.publish.randomization import PramRelease, randomize
    from privlab.publish.stream_release import StreamedRelease
    from privlab.release.base import EngineRelease

    _, df = parquet(700, seed=3, row_group=150)
    df.assign(junk=[f"v{i}" for i in range(700)]).to_parquet(tmp_path / "wide.parquet")
    from privlab.data.schema import Attribute, Schema

    schema = Schema(tuple(Attribute(c, tuple(v), declared=True) for c, v in DOMAINS.items()))
    kw = dict(columns=["b", "a"], keep=["c"], p=0.4, schema=schema, batch_rows=128)
    with pytest.warns(Warning):  # the caller's generator: an experiment
        s = pram(tmp_path / "wide.parquet", engine="stream", rng=np.random.default_rng(4), **kw)
    assert isinstance(s, StreamedRelease) and isinstance(s, EngineRelease)
    assert s.source.names == ("a", "b", "c")  # the file's order; "junk" never read
    m = pram(Table.from_pandas(df, domains=DOMAINS), columns=["b", "a"], keep=["c"], p=0.4,
             rng=np.random.default_rng(4))  # fmt: skip
    assert s.parameters == m.parameters() and s.metadata == m.metadata()
    assert s.schema == m.table.schema and "salt" not in repr(s)
    first, again = s.collect(), s.collect()
    assert isinstance(first, PramRelease) and first.n_rows == 700
    assert np.array_equal(first.table.codes, again.table.codes)
    assert np.array_equal(first.custody.truth.codes, again.custody.truth.codes)
    s.save(tmp_path / "rel", custody=tmp_path / "cd", not_for_publication=True)
    saved = Release.load(tmp_path / "rel", custody=tmp_path / "cd")
    assert np.array_equal(saved.table.codes, first.table.codes)
    assert np.array_equal(saved.custody.truth.codes, first.custody.truth.codes)
    assert s.to_pandas().equals(saved.to_pandas())
    # the truth is the input's rows (as a multiset, ordered like the release)
    key = ["a", "b"]
    truth = first.custody.truth.to_pandas()[key].sort_values(key).reset_index(drop=True)
    assert truth.equals(df[key].sort_values(key).reset_index(drop=True))
    with pytest.raises(ParameterError, match="reads a Parquet file: give its path, not a Table"):
        randomize(Table.from_pandas(df), {"a": np.eye(3)}, engine="stream")


def test_the_engine_check_is_the_one_sentence():
    from privlab.data.engine import ENGINES, check_engine

    assert ENGINES == ("memory", "stream", "spark")
    assert check_engine("spark") == "spark" and check_engine("stream", available=ENGINES)
    with pytest.raises(ParameterError, match=r"^engine 'stream' is not available for x: use "
                                             r"memory or spark$"):  # fmt: skip
        check_engine("stream", what="x")
    with pytest.raises(ParameterError, match=r"^engine 'stream' is not available: use memory$"):
        check_engine("stream", available=("memory",))
    with pytest.raises(ParameterError, match=r"^engine 'stream' is not available for x: use "
                                             r"memory or spark \(see y\)$"):  # fmt: skip
        check_engine("stream", what="x", hint="see y")


@pytest.mark.parametrize(
    ("kw", "suppressed"),
    [({"k": 60, "suppression": 0.1}, True), ({"k": 70, "l": 3, "suppression": 0.3}, False),
     ({"k": 30, "t": 0.3, "suppression": 0.2}, None)],
)  # fmt: skip
def test_generalize_takes_the_stream_engine(tmp_path, kw, suppressed):
    """``generalize(path, engine="stream")`` plans from one pass of tuple counts with the
    in-memory search: the same node, parameters, metadata (utility included) and input
    measures as in memory, the same published rows as a multiset (in a random order, not
    sorted), each beside its own true QIs in the custody; collect() and save() agree."""
    from privlab.publish import generalize
    from privlab.publish.stream_release import StreamedRelease

    df = _frame(900, seed=4)
    path = tmp_path / "in.parquet"
    df.to_parquet(path, row_group_size=200)
    t = Table.from_pandas(df[["a", "b", "c", "d"]], domains=DOMAINS)
    args = dict(qi=["a", "c"], sensitive="b", keep=["d"], hierarchies=_hierarchies(), **kw)
    m = generalize(t, **args)
    s = generalize(path, engine="stream", schema=t.schema, batch_rows=64, **args)
    assert isinstance(s, StreamedRelease) and s.n_rows == m.n_rows
    if suppressed is not None:
        assert (m.n_suppressed > 0) == suppressed
    assert s.parameters == m.parameters() and s.metadata == m.metadata()
    assert s.schema == m.table.schema
    # the input's measures: the utility summed over tuples, not rows (rounding aside)
    mine, theirs = dict(s.input_measures), dict(m.input_measures())
    got_u, want_u = mine.pop("utility"), theirs.pop("utility")
    assert mine == theirs and got_u.keys() == want_u.keys()
    for name, value in want_u.items():
        assert got_u[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    got = s.collect()
    cols = list(m.to_pandas().columns)
    norm = lambda f: f[cols].astype(str).sort_values(cols).reset_index(drop=True)  # noqa: E731
    assert norm(got.to_pandas()).equals(norm(m.to_pandas()))
    if m.n_rows > 50:
        assert not got.to_pandas().equals(m.to_pandas())  # shuffled, not sorted
    # each published row generalizes its own true QIs
    truth = got.custody.truth.to_pandas()
    for q, j in (("a", 0), ("c", 1)):
        level = got.node[j]
        want = truth[q].map(LABELS[q][level]).astype(str)
        assert (got.to_pandas()[q].astype(str) == want).all(), q
    s.save(tmp_path / "rel", custody=tmp_path / "cd")
    saved = Release.load(tmp_path / "rel", custody=tmp_path / "cd")
    assert saved.to_pandas().equals(got.to_pandas())
    assert np.array_equal(saved.custody.truth.codes, got.custody.truth.codes)
    # release.json as the in-memory release writes it: each domain cut to the values the
    # published rows hold (a value only suppressed records held is not published)
    m.save(tmp_path / "mem", format="parquet", draft=True)
    meta = {d: json.loads((tmp_path / d / "release.json").read_text()) for d in ("rel", "mem")}
    assert meta["rel"]["schema"] == meta["mem"]["schema"]
    assert meta["rel"]["tables"]["table"]["columns"] == meta["mem"]["tables"]["table"]["columns"]


def test_streamed_generalization_warns_refuses_and_the_cli_runs_it(run, parquet, tmp_path):
    """A kept column that determines a QI is warned about as in memory; Mondrian and bad
    inputs are refused in one sentence; ``generalize --engine stream`` writes table.parquet."""
    from privlab.publish import generalize

    path, df = parquet(600)
    df.assign(a2=df["a"] * 10).to_parquet(tmp_path / "dep.parquet")
    hier = _hierarchies()
    with pytest.warns(PrivacyWarning, match="'a2' determines quasi-identifier 'a'"):
        generalize(tmp_path / "dep.parquet", qi=["a", "c"], keep=["a2"], k=2, hierarchies=hier,
                   engine="stream")  # fmt: skip
    with pytest.raises(ParameterError, match="stream engine runs the optimal method only"):
        generalize(path, qi=["a"], k=2, method="mondrian", engine="stream")
    with pytest.raises(ParameterError, match="larger than the table"):
        generalize(path, qi=["a"], k=601, engine="stream", hierarchies=hier)
    with pytest.raises(ParameterError, match="give its path, not a DataFrame"):
        generalize(df, qi=["a"], k=2, engine="stream")
    dom = ["--domain", "a=0|1|2", "--domain", "b=x|y|z|w", "--domain", "c=10|11|12|13|14"]
    code, _, err = run("generalize", path, "--qi", "a,c", "--sensitive", "b", "--k", "20",
                       "--l", "2", "--suppression", "0.1", *dom, "--engine", "stream", "--out",
                       tmp_path / "gen", "--custody", tmp_path / "gen.cd")  # fmt: skip
    assert code == 0, err
    assert "streamed" in err and "not published (no role): d" in err
    out = pd.read_parquet(tmp_path / "gen" / "table.parquet")
    rel = Release.load(tmp_path / "gen", custody=tmp_path / "gen.cd")
    assert list(out.columns) == ["a", "b", "c"] and len(out) == rel.n_rows
    assert rel.custody.truth.n_rows == rel.n_rows


def test_anatomize_takes_the_stream_engine(tmp_path):
    """``anatomize(path, engine="stream")``: l-diverse groups sized as in memory (the same
    schedule from the same counts), the QIT holding the input's rows once each beside their
    true values, an ST that agrees with them; collect() and save() agree; the schema and
    parameters are the in-memory release's."""
    from privlab.data import load_adult
    from privlab.publish import anatomize
    from privlab.publish.anatomy import AnatomyRelease

    adult = load_adult()
    adult = adult.take(np.arange(0, adult.n_rows, 4))  # 7,541 rows
    path = tmp_path / "adult.parquet"
    adult.to_pandas().to_parquet(path, row_group_size=1000)
    args = dict(l=3, qi=["age", "sex", "race"], sensitive="occupation", keep=["salary"])
    s = anatomize(path, engine="stream", schema=adult.schema, batch_rows=700,
                  rng=np.random.default_rng(4), **args)  # fmt: skip
    mem = anatomize(adult, rng=np.random.default_rng(4), **args)
    got = s.collect()
    assert isinstance(got, AnatomyRelease) and got.parameters() == mem.parameters()
    counts = got.group_counts()  # collect() checked the custody's truth against the ST
    assert counts.max() == 1 and (counts.sum(axis=1) >= 3).all()
    np.testing.assert_array_equal(np.sort(got.group_sizes()), np.sort(mem.group_sizes()))
    cols = ["age", "sex", "race", "salary", "occupation"]
    rows = got.to_pandas("qit").drop(columns="group_id").assign(
        occupation=got.custody.truth.to_pandas()["occupation"]
    )[cols]  # fmt: skip
    norm = lambda f: f.astype(str).sort_values(cols).reset_index(drop=True)  # noqa: E731
    assert norm(rows).equals(norm(adult.to_pandas()[cols]))
    assert got.sensitive == mem.sensitive  # declared; age's domain is read from the file
    s.save(tmp_path / "rel", custody=tmp_path / "cd", not_for_publication=True)
    saved = Release.load(tmp_path / "rel", custody=tmp_path / "cd")
    for name in ("qit", "st"):
        assert saved.to_pandas(name).equals(got.to_pandas(name)), name
    assert np.array_equal(saved.truth, got.truth)
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == [
        "qit.parquet", "release.json", "st.parquet"
    ]  # fmt: skip
    mem.save(tmp_path / "mem", format="parquet", not_for_publication=True)
    meta = {d: json.loads((tmp_path / d / "release.json").read_text()) for d in ("rel", "mem")}
    assert meta["rel"]["schema"] == meta["mem"]["schema"]
    assert {k: v["columns"] for k, v in meta["rel"]["tables"].items()} == {
        k: v["columns"] for k, v in meta["mem"]["tables"].items()
    }


def _skewed(tmp_path):
    """conftest.skewed_anatomy_frame, as a Parquet file."""
    from conftest import skewed_anatomy_frame

    pdf = skewed_anatomy_frame()
    pdf.to_parquet(tmp_path / "skewed.parquet", row_group_size=1000)
    return pdf, tmp_path / "skewed.parquet"


def test_streamed_anatomy_ranks_and_order_are_random(tmp_path):
    """Which group a row of A joins is independent of its input position, and the QIT order
    is independent of the sensitive value, also within a group (where the rank order would
    put a group's rarer value first); ranks in the input order, and a QIT in rank order,
    are rejected by the same tests."""
    from conftest import input_order_ranks
    from privlab.data.schema import Attribute, Schema
    from privlab.publish import anatomize
    from privlab.publish.stream_anatomy import ranks_within_values

    pdf, path = _skewed(tmp_path)
    schema = Schema((Attribute("x", (0, 1), numeric=True, declared=True),
                     Attribute("s", ("A", "B", "C"), declared=True)))  # fmt: skip
    with pytest.warns(Warning):  # the caller's generator: an experiment
        rel = anatomize(path, l=2, qi=["x"], sensitive="s", keep=[], engine="stream",
                        schema=schema, batch_rows=500, rng=np.random.default_rng(9))  # fmt: skip
    rel = rel.collect()
    counts_g = rel.group_counts()
    mask = ((counts_g > 0) @ (1 << np.arange(3)))[rel.group_id]
    a = rel.truth == 0
    table = pd.crosstab(rel.qit.column("x")[a], mask[a]).to_numpy()
    assert table.shape[1] >= 2  # A's rows join groups of different compositions
    assert stats.chi2_contingency(table).pvalue > 1e-3
    r = stats.spearmanr(rel.truth, np.arange(rel.truth.size)).statistic
    assert abs(r) < 0.06  # sd 1/sqrt(6000) = 0.013
    # within a group, is the first of its rows in the file the one of the rarest value?
    first = pd.Series(rel.truth).groupby(rel.group_id).agg(lambda t: t.iloc[0] == t.max())
    assert abs(first.mean() - 0.5) < 0.05  # groups of 2 rows: a coin (sd 0.0065)
    # power: ranks in input order give a schedule position that follows x ...
    counts, sched, pvalue = input_order_ranks(pdf)
    assert pvalue < 1e-9
    # ... and a QIT in rank order (one shuffle only) puts the rarer value of a group first
    v = np.random.default_rng(1).permutation(np.repeat(np.arange(3), counts))
    ranks = ranks_within_values(v, np.zeros(3, dtype=np.int64))
    order = np.argsort(ranks, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)))
    group = sched[starts[v] + ranks]
    g, t = group[order], v[order]
    first = pd.Series(t).groupby(g).agg(lambda x: x.iloc[0] == x.max())
    assert abs(first.mean() - 0.5) > 0.1


def test_ranks_within_values_count_on_across_blocks():
    """The i-th record of a value, over all blocks, has rank i."""
    from privlab.publish.stream_anatomy import ranks_within_values

    rng = np.random.default_rng(0)
    v = rng.integers(0, 5, 1000)
    seen = np.zeros(5, dtype=np.int64)
    ranks = np.concatenate([ranks_within_values(b, seen) for b in np.split(v, [3, 300, 301, 990])])
    want = np.empty(1000, dtype=np.int64)
    for x in range(5):
        want[v == x] = np.arange(np.sum(v == x))
    assert np.array_equal(ranks, want) and np.array_equal(seen, np.bincount(v, minlength=5))


@pytest.mark.parametrize("method", ["pram", "generalize", "anatomize"])
def test_a_streamed_release_replays_from_its_custody(parquet, tmp_path, method):
    """The custody's seed record redraws the same streamed release, byte for byte (the
    registry lets a replay through); the release.json and the Parquet files are equal."""
    from privlab.data.schema import Attribute, Schema
    from privlab.publish import anatomize, generalize, pram
    from privlab.release.base import Custody

    path, _ = parquet(500, row_group=120)
    schema = Schema(tuple(Attribute(c, tuple(v), declared=True) for c, v in DOMAINS.items()))
    calls = {
        "pram": lambda rng: pram(path, columns=["a"], keep=["b"], p=0.3, rng=rng,
                                 engine="stream", schema=schema, batch_rows=90),
        "generalize": lambda rng: generalize(path, qi=["a", "c"], sensitive="b", k=20, rng=rng,
                                             hierarchies=_hierarchies(), engine="stream",
                                             schema=schema, batch_rows=90),
        "anatomize": lambda rng: anatomize(path, qi=["a", "c"], sensitive="b", l=2, rng=rng,
                                           engine="stream", schema=schema, batch_rows=90),
    }  # fmt: skip
    calls[method](7).save(tmp_path / "one", custody=tmp_path / "one.cd")
    again = calls[method](Custody.load(tmp_path / "one.cd").replay())
    again.save(tmp_path / "two", custody=tmp_path / "two.cd")
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "two").iterdir())
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    with pytest.raises(PrivlabError, match="already has 1 release"):  # a fresh draw is refused
        calls[method](7).save(tmp_path / "three")
