"""PRAM out of core (Ma 2006, Ch. 2): the draws of
:func:`privlab.publish.randomization.randomize` made batch by batch over a Parquet file.

* **The same draws as in memory, batch by batch.**  Every batch of ``batch_rows`` rows goes
  through the in-memory code: jointly randomized blocks through their joint index
  (:func:`~privlab.publish.pram_core.randomize_columns`), the other columns through the
  compiled kernel or numpy (inverse CDF of the record's matrix row; the two give the same
  draws, bit for bit).
* **Independent streams.**  The release's generator (the seed, salted, or the custody's
  record) spawns one child stream per input batch (its uniforms, then its rows' bucket
  labels) and one per bucket of the shuffle (its permutation), so a batch's draws do not
  depend on how much another batch consumed.  For a given generator the release is
  therefore not the in-memory ``pram``'s (that draws one stream over the whole table), but
  it has the same distribution: every record's value is drawn from its matrix row.
* **External shuffle.**  The rows are released in a uniformly random order by
  :class:`~privlab.data.stream.BucketShuffle` (bucket files, each permuted in memory), so
  row order reveals nothing, with memory bounded by a batch and a bucket.

The truth (the original codes of the randomized columns) travels in the same rows, for the
custody only.  Returns a :class:`~privlab.publish.stream_release.StreamedRelease`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privlab._rng import SeedRecord
from privlab.data.stream import BucketShuffle, StreamInput
from privlab.publish.pram_core import (
    _KERNEL_MIN,
    Block,
    PramSettings,
    _draw,
    draw_joint,
    draw_plan,
    pram_metadata,
    randomized_columns,
)
from privlab.publish.stream_release import StreamedRelease, rebuild, spawned


@dataclass(frozen=True, eq=False, repr=False)
class StreamedPramRelease(StreamedRelease):
    """A PRAM release of the stream engine: :class:`StreamedRelease` with its blocks
    (columns and matrix), which ``metadata`` lists as ``release.json`` does."""

    blocks: tuple[Block, ...] = ()

    @property
    def randomized_columns(self) -> tuple[str, ...]:
        """The columns some non-identity matrix randomizes, in block order."""
        return randomized_columns(self.blocks)


def randomize_stream(
    table: StreamInput,
    settings: PramSettings,
    gen: np.random.Generator,
    record: SeedRecord,
    *,
    buckets: int | None = None,
) -> StreamedPramRelease:
    """The stream half of :func:`~privlab.publish.randomization.randomize` (its arguments
    checked there): the plan, and the producer that draws the rows batch by batch.

    ``buckets``: the shuffle's bucket files (default: one per ``batch_rows`` rows, so a
    bucket holds about one batch)."""
    schema, published, shuffle = table.schema, list(settings.published), settings.shuffle
    n_rows, batch_rows = table.n_rows, table.batch_rows
    cums, joint = draw_plan(settings.blocks, published, schema)
    truth_idx = [published.index(c) for c in settings.truth_columns]
    width = len(published)
    # one path for every batch (the kernel's and numpy's draws are the same, bit for bit)
    kernel = n_rows * width >= _KERNEL_MIN
    n_batches = math.ceil(n_rows / batch_rows)
    n_buckets = max(1, n_batches) if buckets is None else int(buckets)
    children = spawned(gen, n_batches + (n_buckets if shuffle else 0))

    def produce(scratch: Path) -> Iterator[np.ndarray]:
        gens = rebuild(children)
        shuffler = BucketShuffle(scratch, width + len(truth_idx), n_buckets) if shuffle else None
        try:
            for i, codes in enumerate(table.batches(published)):
                src = draw_joint(codes, joint, gens[i])  # joint blocks first
                drawn = _draw(src, list(range(width)), cums, gens[i], kernel)
                rows = np.concatenate([drawn, codes[:, truth_idx]], axis=1)
                if shuffler is None:
                    yield rows
                else:
                    shuffler.add(rows, gens[i])
            if shuffler is not None:
                yield from shuffler.drain(gens[n_batches:])
        finally:
            if shuffler is not None:
                shuffler.close()

    return StreamedPramRelease(
        method="pram",
        schema=settings.public_schema(schema),
        table="randomized",
        parameters=settings.parameters(),
        metadata=pram_metadata(settings.blocks),
        n_rows=n_rows,
        source=table,
        producer=produce,
        truth=settings.truth_schema(schema),
        seed=record,
        full_domain=settings.full_domain,
        blocks=settings.blocks,
    )
