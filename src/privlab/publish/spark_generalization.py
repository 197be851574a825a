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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privlab.data.counts import distinct_rows, joint_index
from privlab.data.hierarchy import Hierarchy
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.spark import CODE, SparkInput, check_codes, encode
from privlab.data.table import Table
from privlab.errors import ParameterError, PrivacyWarning, PrivlabError
from privlab.metrics.utility import cell_utility, published_utility
from privlab.publish.base import refuse_reserved
from privlab.publish.generalization_core import (
    GeneralizedRelease,
    check_l,
    compile_hierarchies,
    search_node,
)
from privlab.publish.lattice import Lattice
from privlab.publish.models import PrivacyModel
from privlab.publish.spark_release import TRUTH, SparkRelease, SparkTable

#: The utility measures expand the distinct tuples to one row per record on the driver
#: (their code takes records); above this many records they are left out (None).
UTILITY_MAX_ROWS = 20_000_000


def generalize_spark(
    table: SparkInput,
    *,
    qi: Sequence[str],
    sensitive: str | None,
    keep: Sequence[str],
    hierarchies: Mapping[str, Hierarchy] | str | Path | None,
    dataset: str | None,
    model: PrivacyModel,
    suppression: float,
    objective: str,
    accounting: str,
) -> SparkRelease:
    """The optimal method of :func:`~privlab.publish.generalization.generalize` on Spark
    (its parameters checked there); returns a :class:`SparkRelease` whose
    :meth:`~SparkRelease.collect` is the in-memory :class:`GeneralizedRelease`."""
    import warnings

    from pyspark.sql import functions as F

    schema = table.schema.with_roles(qi=qi, sensitive=sensitive, keep=keep)
    refuse_reserved(schema.published)
    published = list(schema.published)
    coded = encode(table.df, schema, published)
    n, fingerprint = check_codes(coded, published)
    if n == 0:
        raise PrivlabError("the table is empty (0 rows)")
    if model.k > n:
        raise ParameterError(f"k = {model.k} is larger than the table ({n} rows)")
    if model.needs_sensitive and sensitive is None:
        raise ParameterError("l-diversity, t-closeness and delta-disclosure need --sensitive")
    d = len(qi)
    group = [c + CODE for c in [*qi, *([sensitive] if sensitive else [])]]
    rows = coded.groupBy(*group).count().collect()
    arr = np.array([[r[c] for c in group] for r in rows], dtype=np.int64).reshape(-1, len(group))
    weights = np.array([r["count"] for r in rows], dtype=np.int64)
    order = np.lexsort(arr.T[::-1])  # a fixed order, whatever the partitions
    arr, weights = arr[order], weights[order]
    x = arr[:, :d]
    s = arr[:, d] if sensitive else None
    m = schema[sensitive].size if sensitive else 0
    check_l(model, s, sensitive)
    compiled = compile_hierarchies(schema, qi, hierarchies, dataset, stacklevel=4)
    _warn_dependent_columns(coded, qi, keep)
    use_s = s if model.needs_sensitive else None
    lattice = Lattice(x, compiled, use_s, m, weights=weights)
    res = search_node(lattice, model, n, suppression, objective, accounting)
    node = res.node
    cls, _sizes, ok = lattice.evaluate(node, model)
    kept = ok[cls][lattice.row_of]  # per distinct (QI, sensitive) tuple
    gen = [h.maps[lv][x[:, j]] for j, (h, lv) in enumerate(zip(compiled, node))]
    class_of = np.where(kept, cls[lattice.row_of], -1)
    utility = None
    if n <= UTILITY_MAX_ROWS:
        cover = [
            h.maps[lv][None, :] == np.arange(h.sizes()[lv])[:, None]
            for h, lv in zip(compiled, node)
        ]
        utility = cell_utility(
            np.repeat(x, weights, axis=0),
            [np.repeat(g, weights) for g in gen],
            cover,
            np.repeat(class_of, weights),
            k=model.k,
            levels=node,
            heights=[h.height for h in compiled],
            labels=np.repeat(s, weights) if s is not None else None,
        )
    else:
        warnings.warn(
            f"the utility measures are not computed above {UTILITY_MAX_ROWS:,} records",
            RuntimeWarning,
            stacklevel=3,
        )
    # -- recoding -----------------------------------------------------------------------------
    labels = [h.labels[lv] for h, lv in zip(compiled, node)]
    out = coded
    for q in qi:
        out = out.withColumn(TRUTH + q, F.col(q + CODE))
    pub_attrs = []
    for a in schema.attributes:
        if not a.role.published:
            continue
        if a.name in qi:
            j = qi.index(a.name)
            if node[j] == 0:  # a QI at level 0 keeps its attribute and codes (as in memory)
                pub_attrs.append(a)
                continue
            pub_attrs.append(Attribute(a.name, tuple(labels[j]), Role.QI, False))
            lookup = F.array(*[F.lit(int(v)) for v in compiled[j].maps[node[j]]])
            out = out.withColumn(a.name + CODE, F.element_at(lookup, F.col(a.name + CODE) + 1))
        else:
            pub_attrs.append(a)
    # suppress the records of failing classes: an anti-join on the generalized QI key
    sizes = [h.sizes()[lv] for h, lv in zip(compiled, node)]
    failing = np.unique(joint_index(np.column_stack(gen)[~kept], sizes)) if d else []
    n_suppressed = int(weights[~kept].sum())
    if len(failing):
        key = F.lit(0).cast("long")
        for q, size in zip(qi, sizes):
            key = key * F.lit(int(size)) + F.col(q + CODE).cast("long")
        spark = table.df.sparkSession
        bad = spark.createDataFrame([(int(k),) for k in failing], "`__class` long")
        out = out.withColumn("__class", key).join(F.broadcast(bad), "__class", "left_anti")
    header = tuple(a.name for a in pub_attrs)
    pub_schema = Schema(tuple(pub_attrs))
    probe = GeneralizedRelease(
        table=Table(np.empty((0, len(pub_attrs)), dtype=np.int64), pub_schema),
        qi=tuple(qi),
        sensitive=sensitive,
        algorithm="optimal",
        model=model,
        suppression=float(suppression),
        objective=objective,
        accounting=accounting,
        node=tuple(int(v) for v in node),
        n_input=n,
        n_suppressed=n_suppressed,
        utility=utility,
        search={
            "nodes": res.n_nodes,
            "evaluated": res.evaluated,
            "feasible": res.feasible_nodes,
            "cost": res.cost,
        },
    )
    # the published measures, from the published rows only: the kept distinct tuples, each
    # with its records, classed by their generalized quasi-identifiers
    pub_classes = distinct_rows(np.column_stack(gen)[kept], sizes)[1] if d else np.zeros(
        int(kept.sum()), dtype=np.int64
    )  # fmt: skip
    published = published_utility(
        pub_classes, s[kept] if s is not None else None, k=model.k, levels=node,
        weights=weights[kept],
    )  # fmt: skip
    return SparkRelease(
        method="generalization",
        schema=pub_schema,
        tables={"table": SparkTable(out, header, order_by=tuple(c + CODE for c in header))},
        parameters=probe.parameters(),
        metadata={**probe.metadata(), "utility": published},
        truth=schema.select(qi),
        input_sha256=fingerprint,
        input_measures=probe.input_measures(),
    )


def _warn_dependent_columns(coded: Any, qi: Sequence[str], keep: Sequence[str]) -> None:
    """:func:`privlab.publish.generalization._warn_dependent_columns` by one aggregation of
    distinct counts: a kept column that determines a QI undoes its generalization."""
    import warnings

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
        if n_q < 2 or n_c > n_q:
            continue
        if row[f"__pair{i}"] == n_c:
            warnings.warn(
                f"column {c!r} determines quasi-identifier {q!r} and is published "
                f"ungeneralized: declare it a quasi-identifier too, or drop it",
                PrivacyWarning,
                stacklevel=4,
            )
