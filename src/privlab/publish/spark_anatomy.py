"""Anatomy's bucketization on Spark (Xiao & Tao 2006; Mothali 2011, Ch. 3).

The Anatomize algorithm's groups depend on the sensitive values' counts alone
(:func:`privlab.publish.anatomy.group_schedule`): which group the tuple of rank ``r`` among
the tuples of value ``v`` joins.  So:

1. **Counts, then the schedule on the driver.**  One aggregation gives the value counts;
   the driver checks eligibility, draws the schedule and relabels the groups at random.  The
   sensitive table (ST) follows from the schedule without touching the rows.
2. **Random ranks within each value, salted for skew.**  Every record draws (from its
   partition's stream, spawned from one ``SeedSequence``) a salt in ``0..S-1`` and a random
   key; its rank is the offset of its ``(value, salt)`` bucket plus its position by key
   within the bucket (a window over ``(value, salt)``: no window partition holds more than
   about ``salt_rows`` records of a frequent value).  Random salts and random keys make the
   ranks of a value's records a uniformly random permutation, as in memory.
3. **Assignment and a global shuffle.**  Each record looks its group up in the broadcast
   schedule; the QIT is ordered by another random key, so neither row order nor group ids
   carry the sensitive value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.schema import Schema
from privlab.data.spark import CODE, SparkInput, check_codes, encode, spark_counts
from privlab.publish.spark_pram import _partition_id, partition_entropy, partition_generator
from privlab.publish.spark_release import ORDER, TRUTH, SparkRelease, SparkTable
from privlab.release.base import refuse_reserved

#: Records of one value per salt bucket, about (the window over (value, salt) sorts them).
SALT_ROWS = 1 << 20


def anatomize_spark(
    table: SparkInput,
    *,
    l: int,
    qi: Sequence[str],
    sensitive: str,
    keep: Sequence[str],
    rng: RngLike | SeedRecord = None,
    salt_rows: int = SALT_ROWS,
) -> SparkRelease:
    """:func:`~privlab.publish.anatomy.anatomize` on Spark (its parameters checked there);
    returns a :class:`SparkRelease` whose ``collect()`` is an
    :class:`~privlab.publish.anatomy.AnatomyRelease` with its custody."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from privlab.publish.anatomy_core import plan_from_counts

    schema = table.schema.with_roles(qi=qi, sensitive=sensitive, keep=keep)
    refuse_reserved(schema.published)
    cols = [*qi, *keep]
    coded = encode(table.df, schema, [*cols, sensitive])
    n, fingerprint = check_codes(coded, [*cols, sensitive])
    if n == 0:
        from privlab.errors import PrivlabError

        raise PrivlabError("the table is empty (0 rows)")
    sens = schema[sensitive]
    counts = spark_counts(table.df, schema, [sensitive])
    gen, record = publication_rng(rng)
    plan = plan_from_counts(counts, l, sens, gen)
    used, schedule, n_groups, starts = plan.used, plan.schedule, plan.n_groups, plan.starts
    # -- ranks: salt and key per record, a window over (value, salt) ------------------------
    n_salt = max(1, math.ceil(int(used.max()) / max(1, int(salt_rows))))
    entropy = partition_entropy(gen)
    s_code = sensitive + CODE
    codes_in = [c + CODE for c in cols]

    def draw(batches: Any) -> Any:
        pgen = partition_generator(entropy, _partition_id())
        for pdf in batches:
            k = len(pdf)
            out = pdf[[*codes_in, s_code]].astype(np.int64)
            out["__salt"] = pgen.integers(0, n_salt, size=k, dtype=np.int64)
            out["__key"] = pgen.random(k)
            out[ORDER] = pgen.integers(0, np.iinfo(np.int64).max, size=k, dtype=np.int64)
            yield out

    spec = ", ".join(
        [*(f"`{c}` int" for c in [*codes_in, s_code]), "`__salt` long", "`__key` double",
         f"`{ORDER}` long"]
    )  # fmt: skip
    drawn = coded.select(*codes_in, s_code).mapInPandas(draw, spec).cache()
    buckets = drawn.groupBy(s_code, "__salt").count().collect()
    sizes = np.zeros((used.size, n_salt), dtype=np.int64)
    for r in buckets:
        sizes[r[s_code], r["__salt"]] = r["count"]
    offsets = starts[:-1, None] + np.cumsum(sizes, axis=1) - sizes  # first rank of a bucket
    window = Window.partitionBy(s_code, "__salt").orderBy("__key")
    ranked = drawn.withColumn("__rn", F.row_number().over(window))
    spark = table.df.sparkSession
    lookup = spark.sparkContext.broadcast(
        (offsets.astype(np.int64), schedule.astype(np.int32 if n_groups < 2**31 else np.int64))
    )
    names_out = [*codes_in, "group_id", TRUTH + sensitive, ORDER]

    def assign(batches: Any) -> Any:
        off, sched = lookup.value
        for pdf in batches:
            v = pdf[s_code].to_numpy(dtype=np.int64)
            pos = off[v, pdf["__salt"].to_numpy(dtype=np.int64)] + pdf["__rn"].to_numpy() - 1
            out = pdf[codes_in].copy()
            out["group_id"] = sched[pos].astype(np.int64)
            out[TRUTH + sensitive] = v
            out[ORDER] = pdf[ORDER]
            yield out[names_out]

    spec = ", ".join(
        [*(f"`{c}` int" for c in codes_in), "`group_id` long", f"`{TRUTH + sensitive}` int",
         f"`{ORDER}` long"]
    )  # fmt: skip
    qit = ranked.mapInPandas(assign, spec)
    return SparkRelease(
        method="anatomy",
        schema=Schema((*schema.select(cols).attributes, sens)),
        tables={
            "qit": SparkTable(qit, (*cols, "group_id"), integers=("group_id",)),
            "st": plan.st,
        },
        parameters={"l": l},
        metadata={"n_groups": n_groups},
        truth=Schema((sens,)),
        seed=record,
        input_sha256=fingerprint,
    )
