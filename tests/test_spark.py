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

import numpy as np
import pandas as pd
import pytest

from privlab.data import load_adult
from privlab.data.schema import Attribute, Schema
from privlab.errors import MissingValuesError, PrivacyWarning, SchemaError

if not os.environ.get("CI"):
    if shutil.which("java") is None:
        pytest.skip("the Spark engine needs Java (CI installs it)", allow_module_level=True)
    pytest.importorskip("pyspark", reason="pip install 'privlab[spark]'")


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("privlab-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
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
@pytest.mark.parametrize("columns", [["sex"], ["race", "sex", "salary"], ["occupation", "age"]])
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


@pytest.mark.parametrize("mechanism", ["geometric", "laplace"])
@pytest.mark.parametrize("estimator", ["ml", "consistent"])
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
