"""Optimal full-domain generalization out of core (Mothali 2011, Ch. 2; Kohlmayer et al.
2012): the stream engine of :func:`privlab.publish.generalization.generalize`.

1. **One pass of counts.**  The quasi-identifiers and the sensitive attribute are read a
   batch at a time and counted as distinct ``(QI, sensitive)`` tuples with their number of
   records (a sparse merge per batch: memory grows with the distinct tuples, not the rows);
   the same pass counts the distinct (kept column, QI) pairs behind the warning that a kept
   column undoes a generalization.
2. **The exact lattice search in memory.**  :func:`~privlab.publish.generalization_core.
   plan_from_tuples` (shared with the Spark engine) takes the tuples with their counts as
   weights: the node, the classes and the suppressed classes are those of the in-memory path.
3. **Recoding when saved.**  Each batch's QIs go through the chosen level's lookup arrays,
   the records of failing classes are dropped, and the rows are released in a uniformly
   random order by the external shuffle (:class:`~privlab.data.stream.BucketShuffle`).  The
   in-memory release sorts its rows by their published codes instead; either way the input's
   order is not revealed, and the published rows are the same multiset.

Returns a :class:`~privlab.publish.stream_release.StreamedRelease` whose ``collect()`` is the
in-memory :class:`~privlab.publish.generalization_core.GeneralizedRelease` (rows shuffled).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import joint_index
from privlab.data.stream import BucketShuffle, StreamInput, merge_counts
from privlab.errors import ParameterError
from privlab.publish.generalization_core import (
    GeneralizationSettings,
    may_determine,
    plan_from_tuples,
    warn_dependent,
)
from privlab.publish.stream_release import StreamedRelease, rebuild, spawned

#: Joint indexes are int64: a joint domain of at least this many cells cannot be counted.
MAX_CELLS = 2.0**62


def _index(codes: np.ndarray, sizes: Sequence[int], what: str) -> np.ndarray:
    if float(np.prod(np.asarray(sizes, dtype=float))) >= MAX_CELLS:
        raise ParameterError(f"the {what} ({list(sizes)} values) are too many to index")
    return joint_index(codes.astype(np.int64), list(sizes))


def generalize_stream(
    table: StreamInput,
    settings: GeneralizationSettings,
    *,
    rng: RngLike | SeedRecord = None,
    buckets: int | None = None,
) -> StreamedRelease:
    """The optimal method of :func:`~privlab.publish.generalization.generalize` over a
    Parquet file (its parameters checked there): see the module docstring.  ``rng`` draws
    the released row order (its record is the custody's); ``buckets``: the shuffle's bucket
    files (default: one per ``batch_rows`` rows)."""
    qi, sensitive, keep = list(settings.qi), settings.sensitive, list(settings.keep)
    schema = settings.roles(table.schema)
    n = table.n_rows
    settings.check_size(n)
    d = len(qi)
    group = [*qi, *([sensitive] if sensitive else [])]
    kept_cols = [c for c in keep if c not in group]
    read = [*group, *kept_cols]
    sizes = [schema[c].size for c in group]
    pairs = [(c, q) for c in kept_cols for q in qi]
    keys = np.empty(0, dtype=np.int64)
    counts = np.empty(0, dtype=np.int64)
    seen: dict[Any, np.ndarray] = {}
    pos = {c: j for j, c in enumerate(read)}
    for codes in table.batches(read):
        keys, counts = merge_counts(keys, counts, _index(codes[:, : len(group)], sizes, "tuples"))
        for c in kept_cols:  # distinct values and (kept, QI) pairs: the dependent-column check
            seen[c] = np.union1d(seen.get(c, np.empty(0, np.int64)), codes[:, pos[c]])
        for c, q in pairs:
            pair = _index(codes[:, [pos[c], pos[q]]], [schema[c].size, schema[q].size], "pairs")
            seen[c, q] = np.union1d(seen.get((c, q), np.empty(0, np.int64)), pair)
    tuples = np.column_stack(np.unravel_index(keys, sizes)).astype(np.int64).reshape(-1, len(group))
    s = tuples[:, d] if sensitive else None
    compiled = settings.compile(schema, s, stacklevel=4)
    distinct_qi = {q: np.unique(tuples[:, j]).size for j, q in enumerate(qi)}
    for c, q in pairs:
        n_c, n_q = seen[c].size, distinct_qi[q]
        if may_determine(n_c, n_q) and seen[c, q].size == n_c:
            warn_dependent(c, q, stacklevel=3)
    plan = plan_from_tuples(schema, settings, tuples, counts, compiled)
    out_cols = list(plan.schema.names)  # the published columns, in the schema's order
    order = [read.index(c) for c in out_cols]
    width = len(out_cols)
    gen, record = publication_rng(rng)
    n_batches = math.ceil(n / table.batch_rows)
    n_buckets = max(1, n_batches) if buckets is None else int(buckets)
    children = spawned(gen, n_batches + n_buckets)

    def produce(scratch: Path) -> Iterator[np.ndarray]:
        gens = rebuild(children)
        with BucketShuffle(scratch, width + d, n_buckets) as shuffler:
            for i, codes in enumerate(table.batches(read)):
                truth = codes[:, :d].copy()
                recoded, ok = plan.recode(codes)
                rows = np.concatenate([recoded[:, order], truth], axis=1)[ok]
                shuffler.add(rows, gens[i])
            yield from shuffler.drain(gens[n_batches:])

    return StreamedRelease(
        method="generalization",
        schema=plan.schema,
        table="table",
        parameters=plan.parameters(),
        metadata=plan.metadata(),
        n_rows=n - plan.probe.n_suppressed,
        source=table,
        producer=produce,
        truth=schema.select(qi),
        seed=record,
        input_measures=plan.probe.input_measures(),
    )
