"""The Spark engine in local mode, against the in-memory path (the exact oracle).

Deterministic operations must give exactly the in-memory result; randomized ones are tested
for their distribution with fixed seeds and explicit tolerances.  The JVM starts once per
session (``local[2]``, 4 shuffle partitions, no UI).  Skipped only outside CI when Java or
pyspark is missing; with ``CI`` set a missing Java or pyspark fails the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privlab.data import load_adult
from privlab.data.schema import Attribute, Schema
from privlab.errors import MissingValuesError, PrivacyWarning, SchemaError

if not os.environ.get("CI"):
    if shutil.which("java") is None:
        pytest.skip("the Spark engine needs Java (CI installs it)", allow_module_level=True)
    pytest.importorskip("pyspark", reason="pip install 'privlab[spark]'")


#: The tests' JVMs compile with the client compiler only and collect with one thread: their
#: jobs are tiny, and C2's and the parallel collector's threads cost more CPU than they save
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import privlab
    s = (
        SparkSession.builder.master("local[2]")
        .appName("privlab-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")  # tiny jobs: no re-planning
        .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def adult():
    """An Adult subset (fixed rows) with its declared schema: the in-memory oracle's input."""
    t = load_adult()
    return t.take(np.arange(0, t.n_rows, 3))  # about 10,000 rows


@pytest.fixture(scope="session")
def adult_df(spark, adult):
    return spark.createDataFrame(adult.to_pandas()).repartition(4).cache()


def test_import_privlab_never_imports_pyspark():
    code = (
        "import sys, privlab, privlab.dp.histogram, privlab.publish, privlab.cli._app; "
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- (1) DP counts and histograms --------------------------------------------------------------
@pytest.mark.parametrize("columns", [["race", "sex", "salary"], ["occupation", "age"]])
def test_counts_equal_in_memory(spark, adult, adult_df, columns):
    from privlab.data.spark import spark_counts

    got = spark_counts(adult_df, adult.schema, columns)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, adult.counts(columns))


def test_counts_include_empty_cells_of_the_public_domain(spark):
    from privlab.data.spark import spark_counts

    schema = Schema((Attribute("x", ("a", "b", "c", "d"), declared=True),))
    df = spark.createDataFrame(pd.DataFrame({"x": ["b", "b", "d"]}))
    np.testing.assert_array_equal(spark_counts(df, schema, ["x"]), [0, 2, 0, 1])


@pytest.mark.parametrize(
    ("mechanism", "estimator"), [("geometric", "ml"), ("laplace", "consistent")]
)
def test_histogram_same_seed_same_release(spark, adult, adult_df, mechanism, estimator):
    """Noise once, on the driver, over the full domain: the Spark release IS the in-memory
    one for the same generator."""
    from privlab.dp.histogram import noisy_histogram

    cols = ["race", "sex", "salary"]
    kw = dict(epsilon=0.5, mechanism=mechanism, estimator=estimator)
    mem = noisy_histogram(adult, cols, rng=np.random.default_rng(7), **kw)
    spk = noisy_histogram(
        adult_df, cols, rng=np.random.default_rng(7), engine="spark", schema=adult.schema, **kw
    )
    np.testing.assert_array_equal(spk.counts, mem.counts)
    assert spk.domains == mem.domains and spk.scale == mem.scale
    exact = noisy_histogram(adult_df, cols, epsilon=float("inf"), engine="spark",
                            schema=adult.schema)  # fmt: skip
    np.testing.assert_array_equal(exact.counts, adult.counts(cols))


def test_histogram_noise_once_per_cell(spark):
    """Across partitions a cell's noise is one draw: var(noisy - exact) = 2 e^-eps / (1 -
    e^-eps)^2 for the geometric mechanism, not a multiple of it (one draw per partition)."""
    from privlab.dp.histogram import noisy_histogram

    k = 400
    schema = Schema((Attribute("x", tuple(range(k)), declared=True, numeric=True),))
    df = spark.createDataFrame(pd.DataFrame({"x": np.repeat(np.arange(k), 50)})).repartition(4)
    eps = 1.0
    h = noisy_histogram(df, ["x"], epsilon=eps, clip=False, rng=np.random.default_rng(3),
                        engine="spark", schema=schema)  # fmt: skip
    noise = h.counts - 50
    a = np.exp(-eps)
    var = 2 * a / (1 - a) ** 2
    # sample variance of 400 draws: relative sd about sqrt(2/400 + kurtosis term) < 0.2
    assert 0.7 * var < noise.var() < 1.4 * var


def test_histogram_refuses_domain_read_from_data(spark):
    from privlab.dp.histogram import noisy_histogram
    from privlab.errors import ParameterError

    df = spark.createDataFrame(pd.DataFrame({"x": ["a", "b"]}))
    with pytest.raises(ParameterError, match="read from the data"):
        noisy_histogram(df, ["x"], epsilon=1.0, engine="spark")
    with pytest.warns(PrivacyWarning):
        h = noisy_histogram(df, ["x"], epsilon=float("inf"), engine="spark",
                            domain_from_data=True)  # fmt: skip
    assert h.domains == (("a", "b"),) and list(h.counts) == [1, 1]


def test_values_outside_the_domain_and_missing_values_are_errors(spark):
    from privlab.data.spark import spark_counts

    schema = Schema((Attribute("x", ("a", "b"), declared=True),))
    df = spark.createDataFrame(pd.DataFrame({"x": ["a", "zz"]}))
    with pytest.raises(SchemaError, match="'zz' is not in the domain of 'x'"):
        spark_counts(df, schema, ["x"])
    df = spark.createDataFrame(pd.DataFrame({"x": ["a", None]}))
    with pytest.raises(MissingValuesError, match="'x' \\(1\\)"):
        spark_counts(df, schema, ["x"])


def test_integral_floats_match_integer_domain(spark):
    from privlab.data.spark import spark_counts

    schema = Schema((Attribute("age", (17, 39, 40), numeric=True, declared=True),))
    df = spark.createDataFrame(pd.DataFrame({"age": [39.0, 40.0, 39.0]}))
    np.testing.assert_array_equal(spark_counts(df, schema, ["age"]), [0, 2, 1])


# -- (2) PRAM ----------------------------------------------------------------------------------
def _transitions(release, column):
    """Counts T[l, m] of (original l, released m) from a collected release and its custody."""
    k = release.table.schema[column].size
    t = np.zeros((k, k), dtype=np.int64)
    truth = release.custody.truth.column(column)
    np.add.at(t, (truth, release.table.column(column)), 1)
    return t


def _chi2_rows(t, matrix):
    """Pearson's statistic of every row of T against n_l P[l], summed (cells with expected
    count 0 must be empty), and its degrees of freedom."""
    stat, dof = 0.0, 0
    for l in range(t.shape[0]):
        n_l = t[l].sum()
        if n_l == 0:
            continue
        exp = n_l * np.asarray(matrix[l])
        pos = exp > 0
        if np.any(t[l][~pos]):
            return np.inf, 1
        stat += float((((t[l][pos] - exp[pos]) ** 2) / exp[pos]).sum())
        dof += int(pos.sum()) - 1
    return stat, dof


@pytest.fixture(scope="session")
def big_df(spark):
    """30,000 rows, sorted by x (so a missing shuffle shows), in 4 partitions."""
    rng = np.random.default_rng(11)
    x = np.sort(rng.choice(4, size=30_000, p=[0.4, 0.3, 0.2, 0.1]))
    y = rng.integers(0, 3, size=x.size)
    return spark.createDataFrame(pd.DataFrame({"x": x, "y": y})).cache()


BIG_SCHEMA = Schema(
    (
        Attribute("x", (0, 1, 2, 3), numeric=True, declared=True),
        Attribute("y", (0, 1, 2), numeric=True, declared=True),
    )
)


def test_pram_distribution_matches_the_matrix(spark, big_df):
    from privlab.publish.randomization import randomize

    p = np.array(
        [[0.7, 0.1, 0.1, 0.1], [0.05, 0.8, 0.1, 0.05], [0.2, 0.2, 0.5, 0.1], [0.0, 0.3, 0.3, 0.4]]
    )
    joint = np.full((12, 12), 0.2 / 11)
    np.fill_diagonal(joint, 0.8)
    rel = randomize(big_df, {"x": p}, engine="spark", schema=BIG_SCHEMA, keep=["y"],
                    rng=np.random.default_rng(5)).collect()  # fmt: skip
    t = _transitions(rel, "x")
    stat, dof = _chi2_rows(t, p)
    assert stats.chi2.sf(stat, dof) > 1e-3
    wrong = 0.7 * p + 0.3 * np.roll(p, 1, axis=1)  # 30% of the mass moved
    stat, dof = _chi2_rows(t, wrong)
    assert stats.chi2.sf(stat, dof) < 1e-9
    # kept columns unchanged, row for row
    orig = big_df.toPandas()
    assert sorted(zip(rel.custody.truth.column("x"), rel.table.column("y"))) == sorted(
        zip(orig["x"], orig["y"])
    )
    # simultaneous randomization through the joint index (first column slowest)
    rel = randomize(big_df, {("x", "y"): joint}, engine="spark", schema=BIG_SCHEMA,
                    rng=np.random.default_rng(6)).collect()  # fmt: skip
    truth = rel.custody.truth.codes.astype(np.int64)
    got = rel.table.codes.astype(np.int64)
    tj = np.zeros((12, 12), dtype=np.int64)
    np.add.at(tj, (truth[:, 0] * 3 + truth[:, 1], got[:, 0] * 3 + got[:, 1]), 1)
    stat, dof = _chi2_rows(tj, joint)
    assert stats.chi2.sf(stat, dof) > 1e-3


def test_pram_shuffles_globally(spark, big_df):
    """The input is sorted by x; the release's order must carry nothing of it."""
    from privlab.publish.randomization import pram

    rel = pram(big_df, columns=["x"], p=0.2, engine="spark", schema=BIG_SCHEMA,
               rng=np.random.default_rng(8)).collect()  # fmt: skip
    truth = rel.custody.truth.column("x")
    r = stats.spearmanr(truth, np.arange(truth.size)).statistic
    assert abs(r) < 0.03  # sd of r under independence: 1/sqrt(3e4) = 0.0058
    assert rel.n_rows == 30_000


def test_pram_identity_gives_identical_values(spark, adult):
    """p = 0 (the identity matrix): the Spark release holds exactly the input's values; in
    input order without the shuffle, it is the in-memory release."""
    from privlab.publish.randomization import pram, randomize

    df = spark.createDataFrame(adult.to_pandas())  # input order, in order across partitions
    eye = {"race": np.eye(5), "sex": np.eye(2)}
    spk = randomize(df, eye, keep=["salary"], engine="spark", schema=adult.schema,
                    shuffle=False).collect()  # fmt: skip
    mem = randomize(adult, eye, keep=["salary"], shuffle=False)
    np.testing.assert_array_equal(spk.table.codes, mem.table.codes)
    assert spk.table.schema == mem.table.schema
    assert spk.parameters() == mem.parameters() and spk.metadata() == mem.metadata()
    np.testing.assert_array_equal(spk.custody.truth.codes, mem.custody.truth.codes)
    shuffled = pram(df, columns=["race"], p=0.0, engine="spark", schema=adult.schema,
                    keep=["salary"]).collect()  # fmt: skip
    got = sorted(map(tuple, shuffled.table.codes.tolist()))
    assert got == sorted(map(tuple, adult.columns(["race", "salary"]).tolist()))


def test_pram_partitions_draw_from_independent_streams(spark):
    """Four partitions holding the same rows draw different values (one stream each)."""
    from privlab.publish.randomization import pram

    rows = [(i % 4,) for i in range(400)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows * 4, 4), "x long")
    rel = pram(df, columns=["x"], p=0.5, engine="spark", schema=BIG_SCHEMA.select(["x"]),
               shuffle=False, rng=np.random.default_rng(1)).collect()  # fmt: skip
    again = pram(df, columns=["x"], p=0.5, engine="spark", schema=BIG_SCHEMA.select(["x"]),
                 shuffle=False, rng=np.random.default_rng(1)).collect()  # fmt: skip
    np.testing.assert_array_equal(again.table.codes, rel.table.codes)  # same seed, same draws
    parts = rel.table.column("x").reshape(4, 400)
    np.testing.assert_array_equal(rel.custody.truth.column("x").reshape(4, 400)[0], [
        i % 4 for i in range(400)])  # fmt: skip
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(parts[i], parts[j])
    from privlab.publish.spark_pram import partition_generator

    a, b = partition_generator([1, 2], 0), partition_generator([1, 2], 1)
    ss = np.random.SeedSequence([1, 2]).spawn(2)
    assert a.random() == np.random.default_rng(ss[0]).random()
    assert b.random() == np.random.default_rng(ss[1]).random()


def test_pram_release_saves_and_loads(spark, adult, tmp_path):
    from privlab.errors import CustodyError
    from privlab.publish.randomization import pram
    from privlab.release.base import load_release

    df = spark.createDataFrame(
        adult.take(np.arange(2000)).select(["race", "sex", "salary"]).to_pandas()
    )
    rel = pram(df, columns=["race"], p=0.3, keep=["sex"], engine="spark", schema=adult.schema,
               rng=np.random.default_rng(2))  # fmt: skip
    with pytest.raises(CustodyError, match="experiment"):
        rel.save(tmp_path / "rel", custody=tmp_path / "cust")  # drawn from a generator
    rel.save(tmp_path / "rel", custody=tmp_path / "cust", not_for_publication=True)
    text = (tmp_path / "rel" / "release.json").read_text()
    assert "salt" not in text and "seed" not in text
    assert "salary" not in text  # a column without a role is not published
    back = load_release(tmp_path / "rel")
    mem = rel.collect()
    np.testing.assert_array_equal(back.table.codes, mem.table.codes)
    assert back.blocks[0].columns == ("race",)
    np.testing.assert_array_equal(back.blocks[0].matrix, mem.blocks[0].matrix)
    truth = pd.read_parquet(tmp_path / "cust" / "truth.parquet")
    np.testing.assert_array_equal(
        adult.schema["race"].encode(truth["race"].to_numpy()), mem.custody.truth.column("race")
    )
    # the custody loads with the release, its truth row-aligned with the published table
    kept = load_release(tmp_path / "rel", custody=tmp_path / "cust")
    np.testing.assert_array_equal(kept.table.codes, mem.table.codes)
    np.testing.assert_array_equal(kept.custody.truth.codes, mem.custody.truth.codes)
    assert kept.custody.seed == mem.custody.seed
    # a part file changed after the save is refused, for the release and for the custody
    from privlab.errors import CustodyError, ReleaseError

    changed = (("rel/randomized.parquet", ReleaseError), ("cust/truth.parquet", CustodyError))
    for where, error in changed:
        part = sorted((tmp_path / where).glob("*.parquet"))[0]
        saved = part.read_bytes()
        part.write_bytes(saved + b"\0")
        with pytest.raises(error):
            load_release(tmp_path / "rel", custody=tmp_path / "cust")
        part.write_bytes(saved)


# -- (3) generalization ------------------------------------------------------------------------
QI4 = ["age", "education", "marital-status", "race"]


@pytest.mark.parametrize(
    "kw",
    [
        {"k": 10, "suppression": 0.02},
        {"k": 5, "l": 2, "suppression": 0.05, "objective": "entropy"},
        {"k": 3, "t": 0.3, "objective": "precision", "keep": ["sex"]},
    ],
)
def test_generalization_equals_in_memory(spark, adult, adult_df, kw):
    """Same lattice node, same classes, same suppressed records: the published table is
    the in-memory one row for row."""
    from privlab.publish.generalization import generalize

    kw = dict(kw)
    keep = kw.pop("keep", [])
    args = dict(qi=QI4, sensitive="salary", keep=keep, dataset="adult", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        mem = generalize(adult, **args)
        srel = generalize(adult_df, engine="spark", schema=adult.schema, **args)
        spk = srel.collect()
    assert spk.node == mem.node
    assert (spk.n_input, spk.n_suppressed) == (mem.n_input, mem.n_suppressed)
    # release.json: measures of the published rows only, the same on both engines; the
    # input's measures in custody only
    published = mem.published_utility()
    assert srel.metadata["utility"] == pytest.approx(published, rel=1e-12)
    assert not {"n_input", "n_suppressed", "search"} & set(srel.metadata)
    assert srel.input_measures["n_suppressed"] == mem.n_suppressed
    assert spk.table.schema == mem.table.schema
    np.testing.assert_array_equal(spk.table.codes, mem.table.codes)
    assert spk.parameters() == mem.parameters()
    assert {k: v for k, v in spk.search.items() if k != "cost"} == {
        k: v for k, v in mem.search.items() if k != "cost"
    }
    assert spk.search["cost"] == pytest.approx(mem.search["cost"], rel=1e-12)
    for name, value in mem.utility.to_dict().items():
        assert spk.utility.to_dict()[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    # the custody's exact QIs: the same multiset for each published row
    key = lambda r: sorted(map(tuple, np.column_stack([r.table.codes, r.custody.truth.codes])))  # noqa: E731
    assert key(spk) == key(mem)
    assert spk.privacy().to_dict() == mem.privacy().to_dict()


def test_generalization_refuses_mondrian_on_spark(spark, adult_df, adult):
    from privlab.errors import ParameterError
    from privlab.publish.generalization import generalize

    with pytest.raises(ParameterError, match="Mondrian"):
        generalize(adult_df, qi=QI4, k=5, method="mondrian", engine="spark", schema=adult.schema)


# -- (4) Anatomy -------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def skewed(spark):
    """conftest.skewed_anatomy_frame, in Spark."""
    from conftest import skewed_anatomy_frame

    pdf = skewed_anatomy_frame()
    return pdf, spark.createDataFrame(pdf).repartition(4)


def _group_kind(release):
    """Per QIT row: the set of sensitive values of its group, as a bit mask."""
    counts = release.group_counts()
    mask = (counts > 0) @ (1 << np.arange(counts.shape[1]))
    return mask[release.group_id]


def test_anatomy_groups_are_l_diverse_and_sized_as_in_memory(spark, adult, adult_df):
    from privlab.publish.anatomy import anatomize

    args = dict(l=3, qi=["age", "sex", "race"], sensitive="occupation", keep=["salary"])
    spk = anatomize(adult_df, engine="spark", schema=adult.schema,
                    rng=np.random.default_rng(4), **args).collect()  # fmt: skip
    mem = anatomize(adult, rng=np.random.default_rng(4), **args)
    counts = spk.group_counts()  # the custody's truth was checked against the ST on collect
    assert counts.max() == 1  # l distinct values in each group
    assert (counts.sum(axis=1) >= 3).all()
    np.testing.assert_array_equal(np.sort(spk.group_sizes()), np.sort(mem.group_sizes()))
    assert spk.n_groups == mem.n_groups
    # the QIT holds the input's (QI, kept, sensitive) rows, each once
    rows = np.column_stack([spk.qit.codes, spk.truth])
    want = np.column_stack([adult.columns(["age", "sex", "race", "salary", "occupation"])])
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, want.tolist()))
    assert spk.qit.schema == mem.qit.schema and spk.sensitive == mem.sensitive
    assert spk.privacy().to_dict()["n_groups"] == mem.privacy().to_dict()["n_groups"]


def test_anatomy_ranks_are_random_within_each_value(spark, skewed):
    """Which group a row of A joins is independent of its input position (salted buckets of
    500 rows), and the QIT order is independent of the sensitive value; the same test on
    ranks that follow the input order rejects."""
    from privlab.data.spark import spark_input
    from privlab.publish.spark_anatomy import anatomize_spark

    pdf, df = skewed
    schema = Schema((Attribute("x", (0, 1), numeric=True, declared=True),
                     Attribute("s", ("A", "B", "C"), declared=True)))  # fmt: skip
    source = spark_input(df, schema)
    rel = anatomize_spark(source, l=2, qi=["x"], sensitive="s", keep=[],
                          rng=np.random.default_rng(9), salt_rows=500).collect()  # fmt: skip
    a = rel.truth == 0
    kind = _group_kind(rel)[a]
    table = pd.crosstab(rel.qit.column("x")[a], kind).to_numpy()
    assert table.shape[1] >= 2  # A's rows join groups of different compositions
    assert stats.chi2_contingency(table).pvalue > 1e-3
    r = stats.spearmanr(rel.truth, np.arange(rel.truth.size)).statistic
    assert abs(r) < 0.06  # sd 1/sqrt(6000) = 0.013
    # power: ranks in input order give a schedule position that follows x
    from conftest import input_order_ranks

    assert input_order_ranks(pdf)[2] < 1e-9


# -- (4b) masking: noise and top/bottom coding --------------------------------------------------
MASK_COLS = ["age", "education-num", "hours-per-week"]


@pytest.fixture(scope="session")
def masking_input(spark, adult):
    """4,000 Adult records (numeric columns to mask, kept ones, weights) in 4 partitions."""
    sub = adult.take(np.arange(4000)).select([*MASK_COLS, "sex", "salary", "fnlwgt"])
    return sub, spark.createDataFrame(sub.to_pandas()).repartition(4).cache()


def _masked_rows(rel, kept=("sex", "salary")):
    """(true values, published values, kept values) per record, sorted: a release's rows
    whatever their order."""
    t, p = rel.truth_values(), rel.values()
    k = np.column_stack([rel.table.decode(c) for c in kept]).astype(str)
    return sorted(zip(map(tuple, t.tolist()), map(tuple, p.tolist()), map(tuple, k)))


def _numbers(table, columns=MASK_COLS):
    return np.stack([np.asarray(table.schema[c].domain, float)[table.column(c)] for c in columns],
                    axis=1)  # fmt: skip


def test_masking_top_coding_equals_in_memory(spark, masking_input):
    """Given codes: every record's published values are the memory engine's, exactly; the
    parameters, metadata and schema (domains, roles) are its; the custody's truth is the
    input, row-aligned; a quantile code is refused in one line."""
    from privlab.errors import ParameterError
    from privlab.publish.masking import top_bottom_code

    sub, df = masking_input
    kw = dict(top=[60, 14, 50], bottom=[20, 5, 30], keep=["sex"], sensitive="salary")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the caller's generator: an experiment
        spk = top_bottom_code(df, MASK_COLS, engine="spark", schema=sub.schema,
                              rng=np.random.default_rng(3), **kw).collect()  # fmt: skip
        mem = top_bottom_code(sub, MASK_COLS, rng=np.random.default_rng(3), **kw)
    assert spk.parameters() == mem.parameters() and spk.metadata() == mem.metadata()
    assert spk.table.schema == mem.table.schema
    assert _masked_rows(spk) == _masked_rows(mem)
    np.testing.assert_array_equal(spk.values(), np.clip(spk.truth_values(), [20, 5, 30],
                                                        [60, 14, 50]))  # fmt: skip
    with pytest.raises(ParameterError, match="does not sort the columns"):
        top_bottom_code(df, ["age"], top_quantile=0.9, engine="spark")


def test_masking_noise_on_spark_has_the_memory_engines_scale(spark, masking_input):
    """The moments merged from the partitions are numpy.cov's (the weighted ones the memory
    engine's) to 1e-12; the noise e = published - true (custody) has sd noise/100 times the
    column's: the chi-square test of its variance accepts it and rejects 30% off; the
    truth is the input and the kept columns travel with their records."""
    from privlab.publish import masking_core as core
    from privlab.publish.masking import add_noise
    from privlab.publish.spark_masking import column_moments_spark

    sub, df = masking_input
    x = _numbers(sub)
    m = column_moments_spark(df, MASK_COLS)
    assert m.n == 4000
    np.testing.assert_allclose(np.sqrt(np.diag(m.cov())), x.std(axis=0, ddof=1), rtol=1e-12)
    scale = np.sqrt(np.outer(np.diag(m.cov()), np.diag(m.cov())))
    np.testing.assert_allclose(m.cov() / scale, np.cov(x, rowvar=False) / scale, atol=1e-12)
    w = _numbers(sub, ["fnlwgt"])[:, 0]
    mean, cov, _ = core._moments(x, w)
    mw = column_moments_spark(df, MASK_COLS, "fnlwgt")
    np.testing.assert_allclose(np.diag(mw.cov()), np.diag(cov), rtol=1e-12)
    np.testing.assert_allclose(mw.mean, mean, rtol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = add_noise(df, MASK_COLS, noise=50.0, keep=["sex"], sensitive="salary",
                        engine="spark", schema=sub.schema,
                        rng=np.random.default_rng(4)).collect()  # fmt: skip
    t, pub = rel.truth_values(), rel.values()
    e, sd, n = pub - t, x.std(axis=0, ddof=1) * 0.5, len(x)
    for j in range(3):
        for factor, accept in ((1.0, True), (1.3, False), (0.7, False)):
            stat = np.sum(e[:, j] ** 2) / (factor * sd[j]) ** 2
            pval = 2 * min(stats.chi2.cdf(stat, n), stats.chi2.sf(stat, n))
            assert (pval > 1e-3) if accept else (pval < 1e-12), (j, factor, pval)
    kept = np.column_stack([sub.decode(c) for c in ("sex", "salary")]).astype(str)
    got = sorted(zip(map(tuple, t.tolist()), map(tuple, np.column_stack(
        [rel.table.decode(c) for c in ("sex", "salary")]).astype(str))))  # fmt: skip
    assert got == sorted(zip(map(tuple, x.tolist()), map(tuple, kept)))
    # noise 0: each record published unchanged
    zero = add_noise(df, MASK_COLS, noise=0.0, engine="spark", rng=np.random.default_rng(1))
    z = zero.collect()
    np.testing.assert_array_equal(z.values(), z.truth_values())


def test_masking_release_saves_loads_and_the_cli_runs_it(spark, masking_input, tmp_path, run):
    """save() writes the memory engine's layout with Parquet datasets: load_release reads a
    MaskedRelease with its custody (truth in the release's order), equal to collect(); the
    information loss is the memory engine's (without the pMSE); the report judges it;
    `mask noise|topcode --engine spark` write it from a Parquet file."""
    from privlab.metrics.numeric_utility import numeric_utility
    from privlab.publish.masking import MaskedRelease, add_noise
    from privlab.release.base import load_release
    from privlab.report import build

    sub, df = masking_input
    rel = add_noise(df, MASK_COLS, noise=60.0, keep=["sex"], weights="fnlwgt", rng=5,
                    engine="spark", schema=sub.schema)  # fmt: skip
    rel.save(tmp_path / "rel", custody=tmp_path / "cd")
    back = load_release(tmp_path / "rel", custody=tmp_path / "cd")
    assert isinstance(back, MaskedRelease) and back.n_rows == 4000
    mem = rel.collect()
    np.testing.assert_array_equal(back.values(), mem.values())
    np.testing.assert_array_equal(back.truth_values(), mem.truth_values())
    assert back.parameters() == {"technique": "noise", "method": "additive", "noise": 60.0,
                                 "weights": "fnlwgt"}  # fmt: skip
    loss = back.custody.input_measures["utility"]
    want = numeric_utility(back.truth_values(), back.values(), weights=back.weights()).to_dict()
    for key in ("il1s", "il1s_mean", "eigen", "amean", "acov", "acor"):
        assert loss[key] == pytest.approx(want[key], rel=1e-9), key
    rep = build(tmp_path / "rel", custody=tmp_path / "cd")
    assert rep.identity["linkage"]["n_masked"] == 4000

    src = tmp_path / "in.parquet"
    sub.to_pandas().to_parquet(src)
    r = run("mask", "topcode", src, "--columns", "age,hours-per-week", "--top", "60",
            "--bottom", "20", "--keep", "sex", "--engine", "spark", "--out", tmp_path / "t",
            "--custody", tmp_path / "t.cd", "--seed", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "top/bottom coded of 4,000 records (age, hours-per-week, Spark)" in r.stdout
    t = load_release(tmp_path / "t", custody=tmp_path / "t.cd")
    np.testing.assert_array_equal(t.values(), np.clip(t.truth_values(), 20, 60))
    r = run("mask", "noise", src, "--columns", "age", "--engine", "spark", "--replay",
            tmp_path / "t.cd", "--out", tmp_path / "bad")  # fmt: skip
    assert r.returncode == 2 and "--replay" in r.stderr and not (tmp_path / "bad").exists()


# -- (5) the CLI -------------------------------------------------------------------------------
def test_cli_engine_spark(spark, adult, tmp_path, run):
    """`--engine spark` on a Parquet input: the histogram and the generalized table are the
    in-memory engine's; PRAM and Anatomy releases load back and hold what they promise."""
    import json

    from conftest import fails
    from privlab.release.base import load_release

    sub = adult.take(np.arange(3000)).select(
        ["age", "education", "marital-status", "race", "sex", "salary"]
    )
    src = tmp_path / "in.parquet"
    sub.to_pandas().to_parquet(src)
    doms = tmp_path / "domains.json"
    doms.write_text(json.dumps({a.name: list(a.domain) for a in sub.schema.attributes
                                if a.declared}))  # fmt: skip
    common = ["--domains", doms]
    hist = ["dp", "histogram", src, "--columns", "race,sex", "--epsilon", "inf", *common]
    assert run(*hist, "--engine", "spark", "--out", tmp_path / "h1.csv").returncode == 0
    assert run(*hist, "--out", tmp_path / "h2.csv").returncode == 0
    assert (tmp_path / "h1.csv").read_text() == (tmp_path / "h2.csv").read_text()

    gen = ["generalize", src, "--qi", "education,marital-status,race", "--sensitive", "salary",
           "--k", "5", "--suppression", "0.02", *common]  # fmt: skip
    r = run(*gen, "--engine", "spark", "--out", tmp_path / "g1")
    assert r.returncode == 0, r.stderr
    assert run(*gen, "--out", tmp_path / "g2").returncode == 0
    g1, g2 = load_release(tmp_path / "g1"), load_release(tmp_path / "g2")
    assert g1.node == g2.node and g1.n_suppressed == g2.n_suppressed
    assert g1.public_schema() == g2.public_schema()
    np.testing.assert_array_equal(g1.table.codes, g2.table.codes)

    r = run("pram", src, "--columns", "race", "--p", "0.2", "--keep", "sex", *common,
            "--engine", "spark", "--out", tmp_path / "p", "--custody", tmp_path / "pc",
            "--seed", "3")  # fmt: skip
    assert r.returncode == 0, r.stderr
    p = load_release(tmp_path / "p")
    assert p.n_rows == 3000 and p.table.names == ("race", "sex")
    from privlab.publish.randomization import m_category_matrix

    np.testing.assert_array_equal(p.blocks[0].matrix, m_category_matrix(5, 0.2))
    custody = json.loads((tmp_path / "pc" / "custody.json").read_text())
    assert custody["seed"]["seed"] == 3 and custody["seed"]["salt"]
    assert "salt" not in (tmp_path / "p" / "release.json").read_text()

    r = run("anatomize", src, "--qi", "age,sex", "--sensitive", "education", "--l", "2",
            *common, "--engine", "spark", "--out", tmp_path / "a")  # fmt: skip
    assert r.returncode == 0, r.stderr
    a = load_release(tmp_path / "a")
    assert a.group_counts().max() == 1 and (a.group_sizes() >= 2).all()
    assert a.n_rows == 3000

    fails(run("anatomize", tmp_path / "h2.csv", "--qi", "age", "--sensitive", "sex", "--l", "2",
              "--engine", "spark", "--out", tmp_path / "x"), "Parquet")  # fmt: skip


# -- (6) failures and the JVM's log (issue 30, part 7) ------------------------------------------
def _corrupt_parquet(path):
    """A file that begins and ends with Parquet's magic bytes but holds noise between."""
    path.write_bytes(b"PAR1" + np.random.default_rng(0).bytes(2000) + b"PAR1")


@pytest.fixture(scope="module")
def parquet_inputs(tmp_path_factory, adult):
    """A good Parquet file, a dataset of three parts whose second is corrupt, and a corrupt
    single file."""
    root = tmp_path_factory.mktemp("spark-inputs")
    sub = adult.take(np.arange(3000)).select(["race", "sex", "salary"]).to_pandas()
    sub.to_parquet(root / "good.parquet")
    (root / "ds").mkdir()
    for i in range(3):
        sub.iloc[i * 1000 : (i + 1) * 1000].to_parquet(root / "ds" / f"part-{i}.parquet")
    _corrupt_parquet(root / "ds" / "part-1.parquet")
    _corrupt_parquet(root / "corrupt.parquet")
    return root


def _privlab(*args):
    """``privlab ARGS`` in a process of its own: its JVM starts with it, so whatever that JVM
    writes reaches the captured stderr."""
    submit = f'--driver-java-options "{JVM_OPTIONS}" pyspark-shell'
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": submit}
    return subprocess.run(
        [sys.executable, "-m", "privlab.cli", *map(str, args)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def _histogram(src, out, *extra):
    return ("dp", "histogram", src, "--columns", "race,sex", "--epsilon", "inf",
            "--domain-from-data", "--engine", "spark", "--out", out, *extra)  # fmt: skip


def test_spark_command_prints_privlab_lines_only_and_debug_shows_the_jvm_log(
    parquet_inputs, tmp_path
):
    """A Spark command prints its result and notes and nothing of the JVM (8 lines of
    launcher warnings and log4j start-up before); ``--debug`` shows the JVM's log."""
    r = _privlab(*_histogram(parquet_inputs / "good.parquet", tmp_path / "h.csv"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("released 10 cells of (race, sex)"), r.stdout
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert err and all(ln.startswith("note:") for ln in err), r.stderr
    r = _privlab("--debug", *_histogram(parquet_inputs / "good.parquet", tmp_path / "h2.csv"))
    assert r.returncode == 0, r.stderr
    assert "log4j" in r.stderr and "WARN" in r.stderr, r.stderr
    assert (tmp_path / "h.csv").read_text() == (tmp_path / "h2.csv").read_text()


def test_a_corrupt_part_of_a_parquet_dataset_is_one_line(parquet_inputs, tmp_path):
    """A dataset with one corrupt part failed in a task: "unexpected Py4JJavaError" after a
    42-line Java trace; now one line naming the part, exit 2, nothing written."""
    r = _privlab(*_histogram(parquet_inputs / "ds", tmp_path / "h.csv"))
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(err) == 1, r.stderr
    assert err[0].startswith("error: cannot read ") and "part-1.parquet" in err[0], err[0]
    assert "FAILED_READ_FILE" in err[0] and "unexpected" not in err[0]
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_parquet_file_is_one_line(spark, parquet_inputs, tmp_path, run):
    from conftest import fails

    corrupt = parquet_inputs / "corrupt.parquet"
    fails(run(*_histogram(corrupt, tmp_path / "h.csv")), f"cannot read {corrupt}",
          "CANNOT_READ_FILE_FOOTER")  # fmt: skip
    r = run("anatomize", parquet_inputs / "ds", "--qi", "race", "--sensitive", "salary",
            "--l", "2", "--engine", "spark", "--out", tmp_path / "a")  # fmt: skip
    fails(r, "part-1.parquet")
    assert list(tmp_path.iterdir()) == []


def test_spark_failure_reads_only_spark_exceptions():
    from privlab.data.spark import spark_failure

    assert spark_failure(ValueError("reading file /x.parquet. boom")) is None
