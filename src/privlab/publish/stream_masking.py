"""Masking of numeric columns out of core: the stream engine of
:func:`~privlab.publish.masking.add_noise` (``additive``, ``correlated``, ``kim``) and
:func:`~privlab.publish.masking.top_bottom_code` (given codes), over a Parquet file read
``batch_rows`` rows at a time.  The methods are per row: once the moments that scale the
noise are known, every record is masked on its own.

* **Passes.**  Noise: a first pass merges each batch's mean and co-moment matrix
  (:class:`~privlab.publish.masking_core.Moments`, Chan et al.'s pairwise update: the
  covariance, hence each column's sd, is the in-memory engine's ``numpy.cov`` to rounding),
  from which :func:`~privlab.publish.masking_core.noise_plan` fixes the noise exactly as the
  memory engine does; the second pass masks the rows.  Top/bottom coding needs no first
  pass; a code given as a quantile is refused (a quantile needs the column sorted: give the
  code).  Both then hash the file (its SHA-256 is the custody's and the registry's
  fingerprint of the input); kept columns without a declared domain have it read by one
  more pass over those columns only (:func:`~privlab.data.stream.stream_input`).
* **Draws.**  The release's generator (the seed, salted, or the custody's record) spawns one
  child stream per input batch and one per bucket of the shuffle
  (:func:`~privlab.publish.stream_release.spawned`).  Batch ``i``'s stream draws, in this
  order, its ``standard_normal((rows, m))`` (row by row; noise only: the memory engine's
  draw restricted to the batch) and then its rows' bucket labels; bucket ``b``'s stream
  draws its permutation.  For a given generator the release is therefore not the memory
  engine's (that draws one stream over the whole table) but has its distribution, and it is
  the same on every run and for every save.
* **Shuffle.**  The rows are released in a uniformly random order by
  :class:`~privlab.data.stream.BucketShuffle` (``float64`` rows: the masked values, the
  kept columns' codes, the true values), so row order reveals nothing, with memory bounded
  by a batch and a bucket.

:meth:`StreamedMaskedRelease.save` writes the layout of :meth:`MaskedRelease.save
<privlab.release.base.Release.save>` with ``format="parquet"`` (``masked.parquet`` and
``release.json``; custody: ``custody.json`` and ``truth.parquet``, ``row`` then the true
values in released order), so :func:`privlab.release.base.load_release` reads it back as a
:class:`~privlab.publish.masking.MaskedRelease` with its custody and ``privlab report``
judges it.  Like the memory engine's, ``release.json`` lists each masked column's published
values (its domain) and ``custody.json`` each one's true values: the engine keeps their
sorted distinct values (8 bytes each) while it writes, so that much memory grows with the
rows.  The information loss (custody's ``input_measures``) is measured while the rows are
drawn, from moments (:func:`~privlab.metrics.numeric_utility.utility_from_moments`): every
measure of the memory engine but the pMSE, which fits a model to every row.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab._io import sha256_file
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.stream import (
    DEFAULT_BATCH_ROWS,
    BucketShuffle,
    StreamInput,
    iter_numbers,
    parquet_columns,
    parquet_numeric,
    parquet_rows,
    stream_input,
)
from privlab.errors import ParameterError
from privlab.publish import masking_core as core
from privlab.publish.stream_release import TRUTH_PARQUET, rebuild, spawned
from privlab.release.base import Custody, EngineRelease, Release, cut_domains

#: The published table's name (``masked.parquet``), as the memory engine's.
TABLE = "masked"

#: Masks one batch: ``(x, generator) -> masked``.
Mask = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True, eq=False, repr=False)
class StreamedMaskedRelease(EngineRelease):
    """A masking release of the stream engine: its rows are drawn from a Parquet file when it
    is saved (:meth:`save`) or collected (:meth:`collect`), the same rows every time.

    Attributes
    ----------
    technique
        ``"noise"`` or ``"topcoding"``.
    masked, kept
        The masked columns and the columns published unchanged (the sensitive one and the
        sampling weights among them).
    header
        The published columns in the file's order.
    schema
        Their attributes with their roles: the kept columns' domains as read or declared
        (``save()`` cuts an undeclared one to the values published), the masked columns'
        empty until the rows are drawn (they are the published values).
    parameters, metadata
        What the memory engine's ``release.json`` says (``technique`` and its parameters;
        the masked columns and what was done to them).
    n_rows
        The rows of the file (all published).
    source
        The kept columns of the file (a :class:`~privlab.data.stream.StreamInput`).
    mask
        Masks a batch of rows of the masked columns with the batch's generator.
    children
        The spawned streams: one per batch, then one per bucket.
    buckets
        The shuffle's bucket files.
    sensitive, weights
        The sensitive column and the sampling weights' column (published unchanged), or
        None.
    seed
        The custody's seed record.
    """

    engine: ClassVar[str] = "stream"
    method: ClassVar[str] = "masking"  # type: ignore[misc]
    technique: str
    masked: tuple[str, ...]
    kept: tuple[str, ...]
    header: tuple[str, ...]
    schema: Schema
    parameters: dict[str, Any]
    metadata: dict[str, Any]
    n_rows: int
    source: StreamInput
    mask: Mask = field(repr=False)
    children: list[Any] = field(repr=False)
    buckets: int
    sensitive: str | None = None
    weights: str | None = None
    seed: SeedRecord = field(default_factory=SeedRecord)
    _done: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- what the last draw of the rows measured (custody only) --------------------------------
    @property
    def input_measures(self) -> dict[str, Any] | None:  # type: ignore[override]
        """The information loss against the input (``{"utility": ...}``), measured while the
        rows were last drawn (None before)."""
        loss = self._done.get("utility")
        return None if loss is None else {"utility": loss}

    @property
    def truth(self) -> Schema:  # type: ignore[override]
        """The truth's attributes: the masked columns with their true values as domains
        (read while the rows are drawn; empty before)."""
        return self._done.get("truth") or Schema(
            tuple(Attribute(c, (), Role.OTHER, True) for c in self.masked)
        )

    # -- the rows ------------------------------------------------------------------------------
    @property
    def _numbers(self) -> list[str]:
        return [*self.masked, *([self.weights] if self.weights else [])]

    def _produce(self, scratch: Path, loss: core.LossSums) -> Iterator[np.ndarray]:
        """Yield the published rows in published order, ``float64`` blocks of the masked
        values, the kept columns' codes and the true values; ``loss`` gathers the
        information loss as the rows are masked."""
        m = len(self.masked)
        gens = rebuild(self.children)
        n_batches = len(gens) - self.buckets
        width = 2 * m + len(self.kept)
        path = self.source.path
        shuffler = BucketShuffle(scratch, width, self.buckets, dtype=np.float64)
        try:
            row = 0
            batches = iter_numbers(path, self._numbers, self.source.schema, self.kept,
                                   batch_rows=self.source.batch_rows)  # fmt: skip
            for i, (values, codes) in enumerate(batches):
                if i >= n_batches:
                    raise ParameterError(f"{path} holds more rows than its footer said")
                x = values[:, :m]
                core.check_rows(x, self.masked, row)
                w = values[:, m] if self.weights else None
                if w is not None:
                    core.check_weight_values(w, self.weights, row)  # type: ignore[arg-type]
                out = self.mask(x, gens[i])
                loss.add(x, out, w)
                shuffler.add(np.concatenate([out, codes, x], axis=1), gens[i])
                row += x.shape[0]
            if row != self.n_rows:
                raise ParameterError(f"{path}: read {row} rows, expected {self.n_rows}")
            yield from shuffler.drain(gens[n_batches:])
        finally:
            shuffler.close()

    def _run(self, scratch: Path, emit: Callable[[np.ndarray], None]) -> None:
        """Draw the rows, handing each block to ``emit``; record the information loss."""
        loss = core.LossSums(len(self.masked), self.weights is not None)
        blocks = self._produce(scratch, loss)
        try:
            for block in blocks:
                emit(block)
        finally:
            blocks.close()  # its scratch files go now, even when emit raised
            if scratch.exists():
                shutil.rmtree(scratch)
        self._done["utility"] = loss.utility()

    # -- to memory -----------------------------------------------------------------------------
    def collect(self) -> Release:
        """The in-memory :class:`~privlab.publish.masking.MaskedRelease` (the same rows in
        the same order as :meth:`save` writes), with its custody (truth and information
        loss; the seed record)."""
        parts: list[np.ndarray] = []
        with tempfile.TemporaryDirectory(prefix="privlab-stream-") as tmp:
            self._run(Path(tmp) / "scratch", parts.append)
        m, k = len(self.masked), len(self.kept)
        rows = np.concatenate(parts) if parts else np.empty((0, 2 * m + k))
        codes = rows[:, m : m + k].astype(np.int64)
        custody = Custody(seed=self.seed, input_measures=self.input_measures)
        return core.release_of_rows(self, rows[:, :m], codes, rows[:, m + k :], custody)

    # -- to disk (EngineRelease.save: the rows are drawn as they are written) ----------------
    def _input_sha256(self) -> str | None:
        if "input_sha256" not in self._done:  # the registry knows a streamed input by its file
            self._done["input_sha256"] = sha256_file(self.source.path)
        return self._done["input_sha256"]

    def _input_fields(self) -> dict[str, Any]:
        return {"input_sha256": None, "input_file_sha256": self._input_sha256()}

    def _write_tables(self, tmp: Path, custody_tmp: Path | None) -> tuple[dict[str, Any], Schema]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        m, k = len(self.masked), len(self.kept)
        file = f"{TABLE}.parquet"
        domains = {c: pa.array(list(self.schema[c].domain)) for c in self.kept}
        fields = [pa.field(c, domains[c].type if c in domains else pa.float64())
                  for c in self.header]  # fmt: skip
        arrow_schema = pa.schema(fields)
        writer = pq.ParquetWriter(tmp / file, arrow_schema)
        truth_schema = pa.schema([pa.field("row", pa.int64()),
                                  *(pa.field(c, pa.float64()) for c in self.masked)])  # fmt: skip
        truth_writer = (
            pq.ParquetWriter(custody_tmp / TRUTH_PARQUET, truth_schema)
            if custody_tmp is not None
            else None
        )
        published = [_Distinct() for _ in self.masked]
        true = [_Distinct() for _ in self.masked]
        used = {c: np.zeros(self.schema[c].size, dtype=bool) for c in self.kept}
        written = [0]

        def emit(block: np.ndarray) -> None:
            codes = block[:, m : m + k].astype(np.int64)
            cols: dict[str, Any] = {}
            for j, c in enumerate(self.masked):
                cols[c] = pa.array(block[:, j])
                published[j].add(block[:, j])
            for j, c in enumerate(self.kept):
                cols[c] = domains[c].take(pa.array(codes[:, j]))
                used[c] |= np.bincount(codes[:, j], minlength=used[c].size) > 0
            writer.write_table(pa.Table.from_arrays([cols[c] for c in self.header],
                                                    schema=arrow_schema))  # fmt: skip
            if truth_writer is not None:
                rows = np.arange(written[0], written[0] + block.shape[0], dtype=np.int64)
                truth = [pa.array(block[:, m + k + j]) for j in range(m)]
                truth_writer.write_table(pa.Table.from_arrays([pa.array(rows), *truth],
                                                              schema=truth_schema))  # fmt: skip
                for j in range(m):
                    true[j].add(block[:, m + k + j])
            written[0] += block.shape[0]

        try:
            self._run(tmp / ".scratch", emit)
        finally:
            writer.close()
            if truth_writer is not None:
                truth_writer.close()
        if custody_tmp is not None:
            self._done["truth"] = Schema(
                tuple(Attribute(c, t.values(), Role.OTHER, True) for c, t in zip(self.masked, true))
            )
        values = {c: d.values() for c, d in zip(self.masked, published)}
        attrs = [
            dataclasses.replace(a, domain=values[a.name]) if a.name in values else a
            for a in self.schema.attributes
        ]
        schema = cut_domains(Schema(tuple(attrs)), used,
                             lambda a: a.declared or a.name in values)  # fmt: skip
        files = {
            TABLE: {
                "file": file,
                "columns": list(self.header),
                "integers": [],
                "rows": self.n_rows,
                "sha256": sha256_file(tmp / file),
            }
        }
        return files, schema

    def _write_truth(self, tmp: Path) -> dict[str, Any]:
        # written with the rows (_write_tables)
        return {
            "file": TRUTH_PARQUET,
            "schema": self.truth.to_dict(),
            "sha256": sha256_file(tmp / TRUTH_PARQUET),
        }


class _Distinct:
    """The sorted distinct values of a column, gathered block by block."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []

    def add(self, v: np.ndarray) -> None:
        self.parts.append(np.unique(v))
        if len(self.parts) >= 16:
            self.parts = [np.unique(np.concatenate(self.parts))]

    def values(self) -> tuple[float, ...]:
        if not self.parts:
            return ()
        return tuple(np.unique(np.concatenate(self.parts)).tolist())


# -- the sanitizers ----------------------------------------------------------------------------
def _path(data: Any) -> tuple[Path, Schema | None]:
    """The Parquet file of ``data`` (a path or a StreamInput, whose schema then declares the
    kept columns' domains)."""
    if isinstance(data, StreamInput):
        return data.path, data.schema
    if not isinstance(data, str | os.PathLike):
        raise ParameterError(
            f"engine='stream' reads a Parquet file: give its path, not a {type(data).__name__} "
            "(a table in memory needs no streaming: use engine='memory')"
        )
    return Path(data), None


@dataclass(frozen=True)
class _Input:
    path: Path
    masked: list[str]
    kept: list[str]
    header: list[str]
    source: StreamInput
    n_rows: int


def _open(data: Any, columns: Sequence[str], keep: Sequence[str] | None, sensitive: str | None,
          weights: str | None, schema: Schema | None, batch_rows: int) -> _Input:  # fmt: skip
    path, given = _path(data)
    names = parquet_columns(path)
    numeric = parquet_numeric(path)
    masked, kept = core.engine_columns(names, numeric.__getitem__, columns, keep, sensitive,
                                       weights)  # fmt: skip
    n_rows = parquet_rows(path)
    if n_rows == 0:
        raise ParameterError(f"{path} has no rows")
    header = [c for c in names if c in masked or c in kept]  # the file's order
    kept = [c for c in header if c in kept]
    declared = schema if schema is not None else given
    if isinstance(data, StreamInput) and schema is None and all(c in data.schema for c in kept):
        source = StreamInput(path, data.schema.select(kept), n_rows, data.batch_rows)
    else:
        source = stream_input(path, declared, columns=kept, batch_rows=batch_rows)
    return _Input(path, masked, kept, header, source, n_rows)


def _plan(inp: _Input, technique: str, params: dict[str, Any], mask: Mask,
          gen: np.random.Generator, record: SeedRecord, sensitive: str | None,
          weights: str | None, buckets: int | None) -> StreamedMaskedRelease:  # fmt: skip
    n_batches = math.ceil(inp.n_rows / inp.source.batch_rows)
    n_buckets = max(1, n_batches) if buckets is None else int(buckets)
    if n_buckets < 1:
        raise ParameterError(f"at least one bucket is needed, got {n_buckets}")
    attrs = []
    for c in inp.header:
        if c in inp.masked:  # its domain: the published values, read when they are drawn
            attrs.append(Attribute(c, (), Role.QI, True))
        else:
            role = Role.SENSITIVE if c == sensitive else Role.INSENSITIVE
            attrs.append(dataclasses.replace(inp.source.schema[c], role=role))
    if weights is not None:
        params = {**params, "weights": weights}
    return StreamedMaskedRelease(
        technique=technique,
        masked=tuple(inp.masked),
        kept=tuple(inp.kept),
        header=tuple(inp.header),
        schema=Schema(tuple(attrs)),
        parameters={"technique": technique, **params},
        metadata={"masked": list(inp.masked), "what": core.TECHNIQUES[technique]},
        n_rows=inp.n_rows,
        source=inp.source,
        mask=mask,
        children=spawned(gen, n_batches + n_buckets),
        buckets=n_buckets,
        sensitive=sensitive,
        weights=weights,
        seed=record,
    )


def column_moments(
    path: str | Path,
    columns: Sequence[str],
    *,
    weights: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> core.Moments:
    """The noise's first pass: the (weighted) moments of ``columns`` of a Parquet file, one
    batch in memory at a time (:class:`~privlab.publish.masking_core.Moments`; its
    ``cov()`` is ``numpy.cov``'s, or the memory engine's weighted covariance, to rounding).
    A non-finite value or a weight that is not a positive number is refused in one line
    naming the record."""
    columns = list(columns)
    m = len(columns)
    acc = core.Moments(m)
    row = 0
    numbers = [*columns, *([weights] if weights else [])]
    for values, _ in iter_numbers(path, numbers, batch_rows=batch_rows):
        x = values[:, :m]
        core.check_rows(x, columns, row)
        w = values[:, m] if weights else None
        if w is not None:
            core.check_weight_values(w, weights, row)  # type: ignore[arg-type]
        acc.add(x, w)
        row += x.shape[0]
    return acc


def add_noise_stream(
    data: Any,
    columns: Sequence[str],
    *,
    noise: float = 150.0,
    method: str = "additive",
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    rng: RngLike | SeedRecord = None,
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> StreamedMaskedRelease:
    """Noise added to ``columns`` of a Parquet file, out of core: ``add_noise(path,
    engine="stream", ...)`` (:func:`privlab.publish.masking.add_noise`; see the module
    docstring for the passes and the draws).

    ``data``: the file's path (or a :class:`~privlab.data.stream.StreamInput`); ``schema``:
    declared domains of the kept columns (the others are read from the data); ``keep``
    None keeps no column (a file's columns have no role); ``batch_rows``, ``buckets``: rows
    read at a time, bucket files of the shuffle (default one per batch).  The noise's scale
    comes from the first pass, as the memory engine computes it from the whole table.
    """
    if method not in core.NOISE_METHODS:
        raise ParameterError(
            f"method must be one of {', '.join(core.NOISE_METHODS)}, got {method!r}"
        )
    core._number("noise", noise, 0.0)
    inp = _open(data, columns, keep, sensitive, weights, schema, batch_rows)
    gen, record = publication_rng(rng)
    moments = column_moments(inp.path, inp.masked, weights=weights,
                             batch_rows=inp.source.batch_rows)  # fmt: skip
    plan = core.noise_plan_from(method, noise, moments, inp.masked, weights is not None)

    def mask(x: np.ndarray, g: np.random.Generator) -> np.ndarray:
        return plan.apply(x, g.standard_normal(x.shape))

    params = {"method": method, "noise": float(noise)}
    return _plan(inp, "noise", params, mask, gen, record, sensitive, weights, buckets)


def top_bottom_code_stream(
    data: Any,
    columns: Sequence[str],
    *,
    top: Any = None,
    bottom: Any = None,
    top_quantile: Any = None,
    bottom_quantile: Any = None,
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    rng: RngLike | SeedRecord = None,
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> StreamedMaskedRelease:
    """Top and bottom coding of ``columns`` of a Parquet file at the given codes, out of core:
    ``top_bottom_code(path, engine="stream", ...)``; the values are exactly the memory
    engine's.  ``top_quantile`` / ``bottom_quantile`` are refused (a quantile needs the
    column sorted): give the codes.  Other arguments as :func:`add_noise_stream`."""
    if isinstance(columns, str):
        raise ParameterError(f"columns must be a list of names, not the string {columns!r}")
    hi, lo = core.given_codes(top, bottom, names=list(columns), top_quantile=top_quantile,
                              bottom_quantile=bottom_quantile)  # fmt: skip
    inp = _open(data, columns, keep, sensitive, weights, schema, batch_rows)
    gen, record = publication_rng(rng)

    def mask(x: np.ndarray, g: np.random.Generator) -> np.ndarray:
        return core.code_values(x, hi, lo)

    params = {side: _codes(v) for side, v in (("top", hi), ("bottom", lo)) if v is not None}
    return _plan(inp, "topcoding", params, mask, gen, record, sensitive, weights, buckets)


def _codes(v: np.ndarray) -> list[float | None]:
    """The codes as the memory engine's parameters list them."""
    return [None if math.isnan(t) else float(t) for t in v]
