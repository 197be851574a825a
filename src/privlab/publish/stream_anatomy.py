"""Anatomy out of core (Xiao & Tao 2006; Mothali 2011, Ch. 3): the stream engine of
:func:`privlab.publish.anatomy.anatomize`.

The Anatomize algorithm's groups depend on the sensitive values' counts alone
(:func:`~privlab.publish.anatomy_core.group_schedule`): which group the record of rank ``r``
among the records of value ``v`` joins.  So:

1. **Counts, then the plan in memory.**  One pass counts the sensitive values;
   :func:`~privlab.publish.anatomy_core.plan_from_counts` (shared with the Spark engine)
   checks eligibility, draws the schedule, relabels the groups at random and computes the
   sensitive table (ST) without touching the rows.
2. **Random ranks by an external shuffle.**  When the release is saved, the records go
   through :class:`~privlab.data.stream.BucketShuffle` (bucket files of uniform labels, each
   permuted in memory: a uniformly random order); read back in that order, the ``i``-th
   record of value ``v`` takes rank ``i``, so the ranks of a value's records are a uniformly
   random permutation, as in memory; each record looks its group up in the schedule.
3. **A second shuffle for the QIT's order.**  The rank order would tie a record's place in
   the file to its rank (the low ranks of every value join the groups formed first), so the
   QIT rows go through a second, independent shuffle: neither row order nor group ids carry
   the sensitive value.

Memory: a batch, a bucket and the counts, whatever the file's size; disk: the published
columns twice in bucket files.  Returns a
:class:`~privlab.publish.stream_release.StreamedRelease` whose ``collect()`` is an
:class:`~privlab.publish.anatomy.AnatomyRelease` with its custody.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.schema import Schema
from privlab.data.stream import BucketShuffle, StreamInput
from privlab.errors import ParameterError, PrivlabError
from privlab.publish.anatomy_core import plan_from_counts
from privlab.publish.stream_release import StreamedRelease, rebuild, spawned
from privlab.release.base import refuse_reserved


def ranks_within_values(v: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Each record's rank among the records of its value: ``seen[v]`` (the records of ``v``
    before this block) plus its place among this block's records of ``v``; ``seen`` is
    advanced past the block."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    place = np.empty(v.size, dtype=np.int64)
    place[order] = np.arange(v.size) - np.searchsorted(sv, sv, side="left")
    rank = seen[v] + place
    seen += np.bincount(v, minlength=seen.size)
    return rank


def anatomize_stream(
    table: StreamInput,
    *,
    l: int,
    qi: Sequence[str],
    sensitive: str,
    keep: Sequence[str],
    rng: RngLike | SeedRecord = None,
    buckets: int | None = None,
) -> StreamedRelease:
    """:func:`~privlab.publish.anatomy.anatomize` over a Parquet file (its parameters
    checked there): see the module docstring.  ``buckets``: each shuffle's bucket files
    (default: one per ``batch_rows`` rows)."""
    schema = table.schema.with_roles(qi=qi, sensitive=sensitive, keep=keep)
    refuse_reserved(schema.published)
    cols = [*qi, *keep]
    n = table.n_rows
    if n == 0:
        raise PrivlabError("the table is empty (0 rows)")
    sens = schema[sensitive]
    counts = table.counts([sensitive])
    gen, record = publication_rng(rng)
    plan = plan_from_counts(counts, l, sens, gen)
    if plan.n_groups >= 2**31:
        raise ParameterError(f"{plan.n_groups} groups are too many for the stream engine")
    n_batches = math.ceil(n / table.batch_rows)
    n_buckets = max(1, n_batches) if buckets is None else int(buckets)
    # one stream per input batch (its bucket labels), then per bucket: the first shuffle's
    # permutation, the second's labels (per block read back), the second's permutation
    children = spawned(gen, n_batches + 3 * n_buckets)
    d = len(cols)

    def produce(scratch: Path) -> Iterator[np.ndarray]:
        gens = rebuild(children)
        ranks_gens, label_gens, order_gens = (
            gens[n_batches + j * n_buckets : n_batches + (j + 1) * n_buckets] for j in range(3)
        )
        with (
            BucketShuffle(scratch / "ranks", d + 1, n_buckets) as first,
            BucketShuffle(scratch / "order", d + 2, n_buckets) as second,
        ):
            for i, codes in enumerate(table.batches([*cols, sensitive])):
                first.add(codes, gens[i])
            seen = np.zeros(plan.used.size, dtype=np.int64)
            for j, rows in enumerate(first.drain(ranks_gens)):
                v = rows[:, d].astype(np.int64)
                group = plan.schedule[plan.starts[v] + ranks_within_values(v, seen)]
                second.add(np.column_stack([rows[:, :d], group, v]), label_gens[j])
            yield from second.drain(order_gens)

    return StreamedRelease(
        method="anatomy",
        schema=Schema((*schema.select(cols).attributes, sens)),
        table="qit",
        parameters={"l": l},
        metadata={"n_groups": plan.n_groups},
        n_rows=n,
        source=table,
        producer=produce,
        truth=Schema((sens,)),
        seed=record,
        header=(*cols, "group_id"),
        integers=("group_id",),
        extra={"st": plan.st},
    )
