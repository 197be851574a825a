"""Optimal full-domain generalization on Spark (Mothali 2011, Ch. 2; Kohlmayer et al. 2012).

1. **One aggregation.**  The quasi-identifiers and the sensitive attribute are encoded
   through broadcast maps and counted as distinct ``(QI, sensitive)`` tuples with their
   number of records; only those tuples reach the driver.
2. **The exact lattice search on the driver.**  :class:`~privlab.publish.lattice.Lattice`
   takes the tuples with their counts as weights and :func:`optimal_node` runs unchanged:
   the node, the classes and the suppressed classes are those of the in-memory path.
3. **Recoding with broadcast lookups.**  Each QI's code goes through the chosen level's
   lookup array (a literal shipped with the plan); the records of failing classes are
   suppressed by an anti-join with the (broadcast) list of those classes; the rows are
   sorted by their published codes, as in memory, so the published table is the in-memory
   one row for row.

Mondrian is not distributed: its cuts are exact medians of every partition, recursively.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab.data.spark import CODE, SparkInput, check_codes, encode
from privlab.publish.generalization_core import (
    UTILITY_MAX_ROWS,
    GeneralizationSettings,
    may_determine,
    plan_from_tuples,
    warn_dependent,
)
from privlab.publish.spark_release import TRUTH, SparkRelease, SparkTable

__all__ = ["UTILITY_MAX_ROWS", "generalize_spark"]


def generalize_spark(table: SparkInput, settings: GeneralizationSettings) -> SparkRelease:
    """The optimal method of :func:`~privlab.publish.generalization.generalize` on Spark
    (its parameters checked there); returns a :class:`SparkRelease` whose
    :meth:`~SparkRelease.collect` is the in-memory :class:`GeneralizedRelease`."""

    from pyspark.sql import functions as F

    qi, sensitive, keep = list(settings.qi), settings.sensitive, list(settings.keep)
    schema = settings.roles(table.schema)
    published = list(schema.published)
    coded = encode(table.df, schema, published)
    n, fingerprint = check_codes(coded, published)
    settings.check_size(n)
    d = len(qi)
    group = [c + CODE for c in [*qi, *([sensitive] if sensitive else [])]]
    rows = coded.groupBy(*group).count().collect()
    arr = np.array([[r[c] for c in group] for r in rows], dtype=np.int64).reshape(-1, len(group))
    weights = np.array([r["count"] for r in rows], dtype=np.int64)
    order = np.lexsort(arr.T[::-1])  # a fixed order, whatever the partitions
    arr, weights = arr[order], weights[order]
    s = arr[:, d] if sensitive else None
    compiled = settings.compile(schema, s, stacklevel=4)
    _warn_dependent_columns(coded, qi, keep)
    plan = plan_from_tuples(schema, settings, arr, weights, compiled)
    # -- recoding -----------------------------------------------------------------------------
    out = coded
    for q in qi:
        out = out.withColumn(TRUTH + q, F.col(q + CODE))
    for j, q in enumerate(qi):
        if plan.node[j] != 0:  # a QI at level 0 keeps its codes (as in memory)
            lookup = F.array(*[F.lit(int(v)) for v in compiled[j].maps[plan.node[j]]])
            out = out.withColumn(q + CODE, F.element_at(lookup, F.col(q + CODE) + 1))
    # suppress the records of failing classes: an anti-join on the generalized QI key
    if len(plan.failing):
        key = F.lit(0).cast("long")
        for q, size in zip(qi, plan.sizes):
            key = key * F.lit(int(size)) + F.col(q + CODE).cast("long")
        spark = table.df.sparkSession
        bad = spark.createDataFrame([(int(k),) for k in plan.failing], "`__class` long")
        out = out.withColumn("__class", key).join(F.broadcast(bad), "__class", "left_anti")
    header = plan.schema.names
    return SparkRelease(
        method="generalization",
        schema=plan.schema,
        tables={"table": SparkTable(out, header, order_by=tuple(c + CODE for c in header))},
        parameters=plan.parameters(),
        metadata=plan.metadata(),
        truth=schema.select(qi),
        input_sha256=fingerprint,
        input_measures=plan.probe.input_measures(),
    )


def _warn_dependent_columns(coded: Any, qi: Sequence[str], keep: Sequence[str]) -> None:
    """:func:`privlab.publish.generalization._warn_dependent_columns` by one aggregation of
    distinct counts: a kept column that determines a QI undoes its generalization."""

    if not keep:
        return
    from pyspark.sql import functions as F

    aggs = [F.countDistinct(F.col(c + CODE)).alias(c) for c in [*keep, *qi]]
    pairs = [(c, q) for c in keep for q in qi]
    aggs += [
        F.countDistinct(F.col(c + CODE), F.col(q + CODE)).alias(f"__pair{i}")
        for i, (c, q) in enumerate(pairs)
    ]
    row = coded.agg(*aggs).collect()[0]
    for i, (c, q) in enumerate(pairs):
        n_c, n_q = row[c], row[q]
        if may_determine(n_c, n_q) and row[f"__pair{i}"] == n_c:
            warn_dependent(c, q, stacklevel=4)
