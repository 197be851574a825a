"""Benchmark the Spark engine (local mode) against the in-memory engine (issue 19, part 3).

For a DP histogram and a PRAM release at 1 and 10 million records, side by side in one run
(interleaved, medians), wall seconds, end to end from the same Parquet file:

* ``memory``: ``read_table`` (pandas + encoding) then the operation (PRAM: and
  ``save(format="parquet")``);
* ``memory, op only``: the operation on a table already encoded in memory;
* ``spark``: the operation with ``engine="spark"`` on the Parquet path (PRAM: and
  ``SparkRelease.save``), the JVM already running.

Medians of 3 interleaved runs (2 above 2 million records).

The JVM start (``SparkSession`` creation) is timed once, separately.  The session is
``local[*]`` with 8 shuffle partitions; on a cluster the same code runs with
``spark-submit`` (docs/scale.md).

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_spark.py [n_records ...]``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from privlab.data.schema import Attribute, Schema
from privlab.data.table import read_table
from privlab.dp.histogram import noisy_histogram
from privlab.publish.randomization import pram

LETTERS = ("a", "b", "c", "d", "e")


def _data(n: int, path: Path) -> tuple[Schema, dict]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "x0": rng.integers(0, 4, n),
            "x1": rng.integers(0, 8, n),
            "x2": rng.integers(0, 16, n),
            "s": np.asarray(LETTERS, dtype=object)[rng.integers(0, 5, n)],
        }
    )
    df.to_parquet(path, index=False, row_group_size=1 << 20)
    domains = {"x0": list(range(4)), "x1": list(range(8)), "x2": list(range(16)), "s": LETTERS}
    schema = Schema(
        tuple(Attribute(c, tuple(v), numeric=c != "s", declared=True) for c, v in domains.items())
    )
    return schema, domains


def _cases(path, domains, table, schema, cols, tmp) -> dict:  # type: ignore[no-untyped-def]
    def out(tag: str) -> Path:
        p = tmp / tag
        shutil.rmtree(p, ignore_errors=True)
        return p

    def mem_pram(t):  # type: ignore[no-untyped-def]
        return pram(t, columns=["x2", "s"], keep=["x0"], p=0.3)

    def spark_pram():  # type: ignore[no-untyped-def]
        rel = pram(str(path), columns=["x2", "s"], keep=["x0"], p=0.3, engine="spark",
                   schema=schema)  # fmt: skip
        return rel.save(out("ps"), republish=True)

    return {
        ("histogram", "memory"): lambda: noisy_histogram(
            read_table(path, domains=domains), cols, epsilon=1.0
        ),
        ("histogram", "memory, op only"): lambda: noisy_histogram(table, cols, epsilon=1.0),
        ("histogram", "spark"): lambda: noisy_histogram(
            str(path), cols, epsilon=1.0, engine="spark", schema=schema
        ),
        ("pram", "memory"): lambda: mem_pram(read_table(path, domains=domains)).save(
            out("pm"), format="parquet", republish=True
        ),
        ("pram", "memory, op only"): lambda: mem_pram(table),
        ("pram", "spark"): spark_pram,
    }


def main(sizes: list[int]) -> None:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(10).count()
    jvm = time.perf_counter() - t0
    print(f"JVM start (SparkSession, local[*], first job): {jvm:.1f} s (not in the times below)")
    tmp = Path(tempfile.mkdtemp(prefix="privlab-bench-spark-"))
    # timed releases of one input, again and again: a registry of the run's own, not the
    # custodian's, and each release acknowledged (republish)
    os.environ["PRIVLAB_REGISTRY"] = str(tmp / "registry")
    try:
        for n in sizes:
            path = tmp / f"in-{n}.parquet"
            schema, domains = _data(n, path)
            table = read_table(path, domains=domains)
            cols = ["x0", "x1", "s"]
            exact = table.counts(cols)
            spark_exact = noisy_histogram(
                str(path), cols, epsilon=float("inf"), engine="spark", schema=schema
            )
            assert np.array_equal(spark_exact.counts, exact)

            cases = _cases(path, domains, table, schema, cols, tmp)
            runs = 3 if n <= 2_000_000 else 2
            times: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
            for _ in range(runs):  # interleaved
                for key, f in cases.items():
                    t = time.perf_counter()
                    f()
                    times[key].append(time.perf_counter() - t)
            print(f"\n{n:,} records, median of {runs} interleaved runs, wall seconds:")
            for op in ("histogram", "pram"):
                med = {e: float(np.median(times[(op, e)])) for (o, e) in cases if o == op}
                row = "  ".join(f"{e} {t:7.2f}" for e, t in med.items())
                print(f"  {op:9s}  {row}   spark / memory = {med['spark'] / med['memory']:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]] or [1_000_000, 10_000_000]
    main(args)
