"""A row-level release of the stream engine: its rows are drawn from a Parquet file, batch by
batch, when it is saved.

The stream sanitizers (``engine="stream"`` of :func:`~privlab.publish.randomization.pram`,
:func:`~privlab.publish.randomization.randomize` and
:func:`~privlab.publish.generalization.generalize`) plan their release in memory (schema,
parameters, metadata: everything but the rows) and return a :class:`StreamedRelease` that
holds the plan and a *producer*: a function that, given a scratch directory, yields the
published rows in their published order, each row's codes followed by its truth codes (the
custody's), one block at a time.  The producer draws from generators rebuilt from the seed
sequences the plan fixed, so every run yields the same rows: :meth:`StreamedRelease.save`
writes them to Parquet, :meth:`StreamedRelease.collect` gathers them into the in-memory
release of the same class (tests, small outputs), and the two agree row for row.

Outputs of :meth:`~StreamedRelease.save`, written atomically (temporary directories renamed
into place; nothing is left behind on an error or a signal, scratch files included):

* ``OUT/<table>.parquet`` and ``OUT/release.json`` (the layout :meth:`Release.save
  <privlab.release.base.Release.save>` writes with ``format="parquet"``, readable by
  :meth:`Release.load <privlab.release.base.Release.load>`);
* with ``custody``: ``CDIR/custody.json`` (seed and salt, the SHA-256 of the input *file*
  under ``input_file_sha256``) and ``CDIR/truth.parquet`` (``row``, then the truth's
  columns, in the released row order).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab._io import sha256_file
from privlab._rng import SeedRecord
from privlab.data.schema import Schema
from privlab.data.stream import StreamInput
from privlab.data.table import CODE_DTYPE, Table
from privlab.errors import ParameterError
from privlab.release.base import (
    Custody,
    EngineRelease,
    PublishedTable,
    Release,
    cut_domains,
    mark_used,
    release_class,
    write_published,
)

TRUTH_PARQUET = "truth.parquet"

#: What a producer yields: blocks of rows, the published codes then the truth codes.
Producer = Callable[[Path], Iterator[np.ndarray]]


def _arrow_domain(domain: Sequence[Any]) -> Any:
    import pyarrow as pa

    return pa.array(list(domain))


class ParquetSink:
    """A Parquet file written block by block from codes, decoded through the domains (the
    stream engine's table sink): the columns of ``schema``, then the ``integers`` columns
    (written as they are, int64), in ``header`` order (default: that order)."""

    def __init__(
        self,
        path: Path,
        schema: Schema,
        row_index: bool = False,
        integers: Sequence[str] = (),
        header: Sequence[str] | None = None,
    ) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.domains = [_arrow_domain(a.domain) for a in schema.attributes]
        fields = [pa.field(a.name, d.type) for a, d in zip(schema.attributes, self.domains)]
        fields += [pa.field(c, pa.int64()) for c in integers]
        names = [*schema.names, *integers]
        self.order = [names.index(c) for c in (names if header is None else header)]
        fields = [fields[j] for j in self.order]
        if row_index:
            fields.insert(0, pa.field("row", pa.int64()))
        self.schema = pa.schema(fields)
        self.row_index, self.rows = row_index, 0
        self.writer = pq.ParquetWriter(path, self.schema)

    def write(self, codes: np.ndarray) -> None:
        import pyarrow as pa

        cols = [d.take(pa.array(codes[:, j])) for j, d in enumerate(self.domains)]
        cols += [pa.array(codes[:, j].astype(np.int64)) for j in range(len(cols), codes.shape[1])]
        cols = [cols[j] for j in self.order]
        if self.row_index:
            cols.insert(0, pa.array(np.arange(self.rows, self.rows + codes.shape[0])))
        self.writer.write_table(pa.Table.from_arrays(cols, schema=self.schema))
        self.rows += codes.shape[0]

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True, eq=False, repr=False)
class StreamedRelease(EngineRelease):
    """A release whose rows are drawn from a Parquet file when saved (see the module
    docstring): the stream engine's member of the release family.

    Attributes
    ----------
    method
        The release kind (``pram``, ``generalization``, ``anatomy``).
    schema
        The published columns' attributes with their roles (full domains: ``save()`` cuts
        each to the values the published rows hold unless it is declared or in
        ``full_domain``, as :meth:`Release.public_schema
        <privlab.release.base.Release.public_schema>` does).
    table
        The streamed table's name (``randomized``, ``table``, ``qit``).
    header
        Its columns in file order (default: the schema's); the producer yields the codes of
        its categorical columns in the schema's order, then its ``integers``.
    integers
        Its integer columns (Anatomy's ``group_id``), written as they are.
    extra
        Small published tables computed in memory (Anatomy's ST), after the streamed one.
    full_domain
        Columns whose whole domain is published (a randomized column's matrix rows).
    parameters, metadata
        What the in-memory release writes to ``release.json``.
    n_rows
        The rows the release publishes.
    source
        The input (its file's SHA-256 is the custody's and the registry's fingerprint).
    producer
        Yields the published rows (codes, then the truth's codes) in published order.
    truth
        The truth's attributes (custody only), or None.
    seed
        The custody's seed record.
    input_measures
        What the sanitizer measured on the input (custody only), or None.
    """

    engine: ClassVar[str] = "stream"
    method: str
    schema: Schema
    table: str
    parameters: dict[str, Any]
    metadata: dict[str, Any]
    n_rows: int
    source: StreamInput
    producer: Producer = field(repr=False)
    truth: Schema | None = None
    seed: SeedRecord = field(default_factory=SeedRecord)
    input_measures: dict[str, Any] | None = None
    header: tuple[str, ...] = ()
    integers: tuple[str, ...] = ()
    extra: Mapping[str, PublishedTable] = field(default_factory=dict)
    full_domain: frozenset[str] = frozenset()

    @property
    def categorical(self) -> tuple[str, ...]:
        """The streamed table's categorical columns, in the order the producer yields them."""
        return tuple(c for c in self.schema.names if c not in self.integers and c in self._header)

    @property
    def _header(self) -> tuple[str, ...]:
        return self.header or (*self.schema.names, *self.integers)

    def _rows(self, scratch: Path, emit: Callable[[np.ndarray], None]) -> None:
        """Run the producer, handing each block to ``emit``; the rows must be ``n_rows``."""
        rows = 0
        blocks = self.producer(scratch)
        try:
            for block in blocks:
                emit(block)
                rows += block.shape[0]
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # its scratch files go now, even when emit raised
            if scratch.exists():  # a producer's folders of scratch files, emptied
                shutil.rmtree(scratch)
        if rows != self.n_rows:  # the footer and the data disagree
            raise ParameterError(f"{self.source.path}: read {rows} rows, expected {self.n_rows}")

    # -- to memory ----------------------------------------------------------------------------
    def collect(self) -> Release:
        """The in-memory release (the same class as the in-memory sanitizer's, the same rows
        in the same order as :meth:`save` writes), with its custody."""
        cats = self.categorical
        width = len(cats) + len(self.integers)
        parts: list[np.ndarray] = []
        with tempfile.TemporaryDirectory(prefix="privlab-stream-") as tmp:
            self._rows(Path(tmp) / "scratch", parts.append)
        n_truth = 0 if self.truth is None else len(self.truth)
        rows = np.concatenate(parts) if parts else np.empty((0, width + n_truth), dtype=CODE_DTYPE)
        ints = {c: rows[:, len(cats) + j].astype(np.int64) for j, c in enumerate(self.integers)}
        table = PublishedTable(
            Table(np.ascontiguousarray(rows[:, : len(cats)]), self.schema.select(cats)),
            ints,
            self._header,
        )
        meta = {"parameters": dict(self.parameters), **self.metadata}
        tables = {self.table: table, **self.extra}
        release = release_class(self.method)._from_published(meta, tables)
        truth = None
        if self.truth is not None:
            truth = Table(np.ascontiguousarray(rows[:, width:]), self.truth)
        custody = Custody(seed=self.seed, truth=truth, input_measures=self.input_measures)
        return release.with_custody(custody, None)

    # -- to disk (EngineRelease.save: the rows are drawn as they are written) --------------
    def _input_sha256(self) -> str | None:
        return self.source.file_sha256()  # the registry knows a streamed input by its file

    def _write_tables(self, tmp: Path, custody_tmp: Path | None) -> tuple[dict[str, Any], Schema]:
        file = f"{self.table}.parquet"
        cats = self.categorical
        width = len(cats) + len(self.integers)
        sink = ParquetSink(tmp / file, self.schema.select(cats), integers=self.integers,
                           header=self._header)  # fmt: skip
        truth = (
            ParquetSink(custody_tmp / TRUTH_PARQUET, self.truth, row_index=True)
            if custody_tmp is not None and self.truth is not None
            else None
        )
        used = {c: np.zeros(self.schema[c].size, dtype=bool) for c in cats}

        def emit(rows: np.ndarray) -> None:
            sink.write(rows[:, :width])
            for j, c in enumerate(cats):
                used[c] |= np.bincount(rows[:, j], minlength=used[c].size) > 0
            if truth is not None:
                truth.write(rows[:, width:])

        try:
            self._rows(tmp / ".scratch", emit)
        finally:
            sink.close()
            if truth is not None:
                truth.close()
        files = {
            self.table: {
                "file": file,
                "columns": list(self._header),
                "integers": list(self.integers),
                "rows": self.n_rows,
                "sha256": sha256_file(tmp / file),
            }
        }
        for name, t in self.extra.items():
            files[name] = write_published(tmp, name, t)
            mark_used(used, t.table)
        return files, self.public_schema(used)

    def public_schema(self, used: Mapping[str, np.ndarray]) -> Schema:
        """The schema of ``release.json``: each domain cut to the values the published rows
        hold (``used``: a mask per column), unless declared or in ``full_domain`` (a value
        only suppressed records held is never published)."""
        return cut_domains(self.schema, used, lambda a: a.declared or a.name in self.full_domain)

    def _input_fields(self) -> dict[str, Any]:
        return {"input_sha256": None, "input_file_sha256": self.source.file_sha256()}

    def _write_truth(self, tmp: Path) -> dict[str, Any]:
        assert self.truth is not None  # written with the rows (_write_tables)
        return {
            "file": TRUTH_PARQUET,
            "schema": self.truth.to_dict(),
            "sha256": sha256_file(tmp / TRUTH_PARQUET),
        }


def spawned(gen: np.random.Generator, n: int) -> list[tuple[type, np.random.SeedSequence]]:
    """``n`` children of ``gen`` as ``Generator.spawn`` makes them, kept as (bit generator
    type, seed sequence) so that a producer rebuilds the same streams on every run."""
    bit = gen.bit_generator
    return [(type(bit), s) for s in bit.seed_seq.spawn(n)]


def rebuild(children: Sequence[tuple[type, np.random.SeedSequence]]) -> list[np.random.Generator]:
    """Fresh generators from :func:`spawned`'s children (the same draws every time)."""
    return [np.random.Generator(kind(seq)) for kind, seq in children]
