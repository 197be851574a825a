"""PRAM on Spark (Ma 2006, Ch. 2): the draws of :func:`privlab.publish.randomization.randomize`
made partition by partition.

* **Independent streams.**  The driver draws 256 bits from the release's generator (the
  seed, salted, or the custody's record) into one :class:`numpy.random.SeedSequence`;
  partition ``i`` draws from its child ``SeedSequence(entropy, spawn_key=(i,))`` (what
  ``SeedSequence.spawn`` gives), so no two partitions share a stream and a release replays
  from its custody given the same input partitioning.
* **The same draws as in memory.**  Within a partition every batch of records goes through
  the in-memory code: jointly randomized blocks through their joint index
  (:func:`~privlab.publish.randomization.randomize_columns`), the other columns through
  :func:`~privlab.publish.randomization._draw` (inverse CDF of the record's matrix row).
* **Global shuffle.**  Each record also draws a 63-bit random key; the release is ordered by
  it (a range-partitioned sort across the cluster), so the input's order, even within a
  partition, cannot be read off the published rows.

The truth (the original codes of the randomized columns) travels in the same rows, for the
custody only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab._rng import SeedRecord
from privlab.data.spark import CODE, SparkInput, check_codes, encode
from privlab.publish.pram_core import (
    PramSettings,
    _draw,
    draw_joint,
    draw_plan,
    pram_metadata,
)
from privlab.publish.spark_release import ORDER, TRUTH, SparkRelease, SparkTable

#: Bits the driver draws from the release's generator to seed the partitions' streams.
ENTROPY_WORDS = 8


def partition_entropy(gen: np.random.Generator) -> list[int]:
    """32-bit words for the root ``SeedSequence`` of the partitions' streams."""
    return [int(w) for w in gen.integers(0, 1 << 32, size=ENTROPY_WORDS, dtype=np.uint64)]


def partition_generator(entropy: Sequence[int], partition: int) -> np.random.Generator:
    """The generator of one partition: child ``partition`` of ``SeedSequence(entropy)``."""
    return np.random.default_rng(np.random.SeedSequence(list(entropy), spawn_key=(partition,)))


def _partition_id() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else int(ctx.partitionId())


def randomize_spark(
    table: SparkInput, settings: PramSettings, gen: np.random.Generator, record: SeedRecord
) -> SparkRelease:
    """The Spark half of :func:`~privlab.publish.randomization.randomize` (its arguments
    checked there): encode, check, draw per partition, shuffle."""
    import pandas as pd

    schema, published, shuffle = table.schema, list(settings.published), settings.shuffle
    coded = encode(table.df, schema, published)
    _, fingerprint = check_codes(coded, published)
    cums, joint = draw_plan(settings.blocks, published, schema, skip_identity=True)
    truth_cols = settings.truth_columns
    truth_pos = [published.index(c) for c in truth_cols]
    entropy = partition_entropy(gen)
    codes_in = [c + CODE for c in published]
    names_out = [*codes_in, *(TRUTH + c for c in truth_cols), ORDER]

    def run(batches: Any) -> Any:
        pgen = partition_generator(entropy, _partition_id())
        for pdf in batches:
            src = np.ascontiguousarray(pdf[codes_in].to_numpy(dtype=np.int64))
            truth = src[:, truth_pos].copy()
            src = draw_joint(src, joint, pgen)
            out = _draw(src, list(range(len(published))), cums, pgen)
            key = (
                pgen.integers(0, np.iinfo(np.int64).max, size=len(pdf), dtype=np.int64)
                if shuffle
                else np.zeros(len(pdf), dtype=np.int64)
            )
            data = np.column_stack([out, truth, key]) if len(pdf) else np.empty((0, 0))
            yield pd.DataFrame(data.reshape(len(pdf), len(names_out)), columns=names_out)

    spec = ", ".join([*(f"`{c}` int" for c in names_out[:-1]), f"`{ORDER}` long"])
    frame = coded.select(*codes_in).mapInPandas(run, spec)
    if not shuffle:  # the input's order: partitions in order, rows in order within them
        from pyspark.sql import functions as F

        frame = frame.withColumn(ORDER, F.monotonically_increasing_id())

    return SparkRelease(
        method="pram",
        schema=settings.public_schema(schema),
        tables={"randomized": SparkTable(frame, tuple(published))},
        parameters=settings.parameters(),
        metadata=pram_metadata(settings.blocks),
        full_domain=settings.full_domain,
        truth=settings.truth_schema(schema),
        seed=record,
        input_sha256=fingerprint,
    )
