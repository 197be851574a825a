"""A differentially private histogram (contingency table) of chosen columns.

Adding or removing one record changes one cell by 1, so the L1 sensitivity is 1 (neighbours
differ by one record, as in Mothali 2011 Sec. 6.1).  The noise is the two-sided geometric
mechanism by default (integer counts; no floating-point leak) or Laplace; the noisy
counts may then be post-processed by any estimator of :mod:`privlab.dp.estimators` at no
privacy cost.  The cells are the columns' declared domains (public); a domain read from
the data is refused unless ``domain_from_data`` accepts the leak explicitly.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab._io import sha256_file
from privlab._registry import save_output
from privlab._rng import RngLike, SeedRecord, noise_rng
from privlab.data.engine import ENGINES, check_engine
from privlab.data.frames import as_table
from privlab.data.schema import Attribute, Schema
from privlab.data.stream import (
    DEFAULT_BATCH_ROWS,
    parquet_schema,
    require_columns,
    stream_counts,
)
from privlab.dp.accountant import BudgetAccountant
from privlab.dp.estimators import canonical_name, get_estimator
from privlab.dp.mechanisms import CountQuery, check_epsilon
from privlab.errors import ParameterError, PrivacyWarning, SchemaError

#: Refuse joint histograms with more cells than this.
MAX_CELLS = 10_000_000


@dataclass(frozen=True)
class NoisyHistogram(ToFrames):
    """A released histogram: one row per cell of the columns' joint domain.

    ``seed`` (the seed record its noise was drawn with) and ``input_sha256`` (the input's
    fingerprint) are the custodian's: :meth:`save` writes them to ``custody`` only.
    """

    columns: tuple[str, ...]
    domains: tuple[tuple[Any, ...], ...]
    counts: np.ndarray
    epsilon: float
    mechanism: str
    estimator: str
    scale: float
    sensitivity: int = 1
    #: the columns whose domain was read from the data, not declared (``domain_from_data``):
    #: epsilon does not cover their cells (a rare value's cell reveals its record)
    read_from_data: tuple[str, ...] = ()
    seed: SeedRecord = field(default_factory=SeedRecord, repr=False, compare=False)
    input_sha256: str | None = field(default=None, repr=False, compare=False)

    def to_pandas(self) -> pd.DataFrame:
        cells = list(itertools.product(*self.domains))
        df = pd.DataFrame(cells, columns=list(self.columns))
        df["count"] = self.counts
        return df

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "epsilon": self.epsilon,
            "mechanism": self.mechanism,
            "estimator": self.estimator,
            "scale": self.scale,
            "sensitivity": self.sensitivity,
            "cells": len(self.counts),
            **({"read_from_data": list(self.read_from_data)} if self.read_from_data else {}),
        }

    def save(
        self,
        path: str | Path,
        *,
        custody: str | Path | None = None,
        force: bool = False,
        not_for_publication: bool = False,
        draft: bool = False,
    ) -> None:
        """Write the histogram as CSV (or Parquet by suffix), atomically, and with
        ``custody`` the custodian's directory (the seed and salt that replay the noise, the
        input's fingerprint; :func:`privlab._registry.save_output`).

        Noise drawn from the caller's own generator (an experiment) is refused unless
        ``not_for_publication=True``: the file then says it must never be published (a
        first ``#`` line in a CSV, file metadata in Parquet).  Otherwise the release's
        epsilon is added to its input's ledger in the custodian's registry, with a
        :class:`PrivacyWarning` when the input's total exceeds the configured one; a
        ``draft`` (an audit's candidate) is written with its custody but not added.
        """
        from privlab._csv import write_csv

        path = Path(path)
        df = self.to_pandas()

        def write(tmp: Path, mark: str | None) -> None:
            if path.suffix.lower() in (".parquet", ".pq"):
                import pyarrow as pa
                import pyarrow.parquet as pq

                t = pa.Table.from_pandas(df, preserve_index=False)
                if mark:
                    t = t.replace_schema_metadata(
                        {**(t.schema.metadata or {}), b"privlab.not_for_publication": mark}
                    )
                pq.write_table(t, tmp)
            else:
                with open(tmp, "w", encoding="utf-8", newline="") as fh:
                    if mark:
                        fh.write(f"# {mark}\n")
                    write_csv(df, fh, name=path.name)

        save_output(
            path, write, method="dp-histogram", parameters=self.to_dict(), record=self.seed,
            input_sha256=self.input_sha256, epsilon=self.epsilon, custody=custody, force=force,
            not_for_publication=not_for_publication, draft=draft,
        )  # fmt: skip


def noisy_histogram(
    data: Any,
    columns: Sequence[str],
    *,
    epsilon: float,
    estimator: str = "ml",
    mechanism: str = "geometric",
    clip: bool = True,
    rng: RngLike | SeedRecord = None,
    accountant: BudgetAccountant | None = None,
    domain_from_data: bool = False,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> NoisyHistogram:
    """Release the joint histogram of ``columns`` with epsilon-DP.

    Parameters
    ----------
    data
        The table: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    estimator
        Post-processing of the noisy counts (``ml`` keeps them; see
        :data:`privlab.dp.estimators.ESTIMATORS`).
    mechanism
        ``"geometric"`` (default; integer noise) or ``"laplace"``.
    clip
        Make the released counts non-negative (Table 8.1 steps 3 and 7).
    rng
        ``None``: noise from the OS CSPRNG (nothing replayable); an int seed: salted with 128
        bits of OS entropy as a release's is (:func:`privlab._rng.publication_rng`; the
        histogram's custody keeps both), so a guessed seed replays nothing; the record of
        ``Custody.replay()``: that histogram's noise again; a ``Generator``: an experiment
        (an :class:`~privlab.errors.ExperimentWarning`; :meth:`NoisyHistogram.save` refuses
        it unless ``not_for_publication=True``).
    engine
        ``"memory"`` (numpy), ``"stream"`` or ``"spark"``.  ``"stream"``: ``data`` is the path
        of a Parquet file, read ``batch_rows`` rows at a time (:func:`noisy_histogram_parquet`;
        memory holds one batch and the counts).  ``"spark"``: ``data`` is a Spark DataFrame
        or a Parquet path, counted by one aggregation of partial counts per partition
        (:func:`privlab.data.spark.spark_counts`).  Either way the noise is drawn once, over
        the full public domain (empty cells included), never per batch or partition, so the
        release is the in-memory one for the same counts and ``rng``.
    schema
        With ``engine="stream"`` or ``"spark"``: the public domains (a column whose domain it
        does not declare is read from the data, not declared).
    batch_rows
        Rows read at a time with ``engine="stream"``.
    domain_from_data
        Allow a column whose domain was read from the data (not declared): its cells are
        then only the values some record holds, so one person with a rare value adds a cell
        that reveals them at any epsilon.  Off by default (an error names the column); when
        on, a :class:`PrivacyWarning` says so.  A declared value no record holds is a cell
        like the others, released with noise.
    """
    engine = check_engine(engine, available=ENGINES, what="noisy_histogram")
    if engine == "stream":
        if not isinstance(data, (str, Path)):
            raise ParameterError(
                "engine='stream' reads a Parquet file: give its path (a table in memory needs "
                f"no stream; got {type(data).__name__})"
            )
        declared = {a.name: a.domain for a in schema.attributes if a.declared} if schema else {}
        return noisy_histogram_parquet(
            data, columns, epsilon=epsilon, domains=declared, batch_rows=batch_rows,
            estimator=estimator, mechanism=mechanism, clip=clip, rng=rng, accountant=accountant,
            domain_from_data=domain_from_data,
        )  # fmt: skip
    eps = check_epsilon(epsilon)
    name = canonical_name(estimator)
    if engine == "spark":
        from privlab.data.spark import spark_counts, spark_frame, spark_schema

        df = spark_frame(data)
        columns = list(columns)
        for c in columns:  # an unknown column is named before any Spark job
            if c not in df.columns:
                raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(df.columns)}")
        schema = Schema(tuple(a for a in (schema or Schema(())).attributes if a.name in columns))
        schema = spark_schema(df, columns=list(dict.fromkeys(columns)), schema=schema)
        columns = schema.require(columns, purpose="for the histogram")
        _check_domains(schema, columns, domain_from_data)
        _check_cells(schema, columns)
        exact = spark_counts(df, schema, columns)
        return _release(schema, columns, exact, eps, mechanism, name, clip, rng, accountant,
                        None)  # fmt: skip
    table = as_table(data)
    columns = table.schema.require(columns, purpose="for the histogram")
    _check_domains(table.schema, columns, domain_from_data)
    _check_cells(table.schema, columns)  # from the schema, before the cells are counted
    # the input's SHA-256 (a pass over every code, as long as the counts' at 10M rows) runs
    # beside the counts and the noise (Table.fingerprint_soon)
    fingerprint = table.fingerprint_soon()
    return _release(table.schema, columns, table.counts(columns), eps, mechanism, name, clip,
                    rng, accountant, fingerprint)  # fmt: skip


def noisy_histogram_parquet(
    path: str | Path,
    columns: Sequence[str],
    *,
    epsilon: float,
    domains: Mapping[str, Sequence[Any]] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    estimator: str = "ml",
    mechanism: str = "geometric",
    clip: bool = True,
    rng: RngLike | SeedRecord = None,
    accountant: BudgetAccountant | None = None,
    domain_from_data: bool = False,
) -> NoisyHistogram:
    """:func:`noisy_histogram` of a Parquet file read ``batch_rows`` rows at a time (out of
    core: memory holds one batch and the counts, whatever the file's size).

    The exact counts are accumulated batch by batch (:func:`privlab.data.stream.stream_counts`)
    and noised once, over the whole public domain, so the release is the one
    :func:`noisy_histogram` draws from the same ``rng`` for the same rows.  ``domains``
    declares the public domains (``{column: [values, in order]}``); a column without one
    has its domain read from the data by a first pass and is refused unless
    ``domain_from_data`` (as in memory).  Other parameters: see :func:`noisy_histogram`.
    """
    eps = check_epsilon(epsilon)
    name = canonical_name(estimator)
    columns = list(columns)
    require_columns(path, columns)
    declared = dict(domains or {})
    read = [c for c in columns if c not in declared]
    if read and not domain_from_data:  # refused before a pass over the data
        _check_domains(Schema(tuple(Attribute(c, ()) for c in read)), read, False)
    schema = parquet_schema(path, declared, columns=columns, batch_rows=batch_rows)
    columns = schema.require(columns, purpose="for the histogram")
    _check_domains(schema, columns, domain_from_data)
    _check_cells(schema, columns)
    exact = stream_counts(path, schema, columns, batch_rows=batch_rows)
    # the registry knows a streamed input by its file's SHA-256
    return _release(schema, columns, exact, eps, mechanism, name, clip, rng, accountant,
                    sha256_file(path))  # fmt: skip


def _check_domains(schema: Schema, columns: Sequence[str], domain_from_data: bool) -> None:
    """Refuse (or, with ``domain_from_data``, warn about) domains read from the data."""
    read = [c for c in columns if not schema[c].declared]
    if read and not domain_from_data:
        raise ParameterError(
            f"the domain of {', '.join(map(repr, read))} was read from the data: a cell that "
            "only one record fills would reveal that record whatever epsilon; declare the "
            "domain (CLI: --domain COLUMN=v1|v2|..., --domains FILE) or accept the leak "
            "explicitly (--domain-from-data)"
        )
    if read:
        warnings.warn(
            f"the cells of {', '.join(map(repr, read))} are the values the data holds: their "
            "presence is not protected by differential privacy",
            PrivacyWarning,
            stacklevel=3,
        )


def _check_cells(schema: Schema, columns: Sequence[str]) -> None:
    cells = int(np.prod([schema[c].size for c in columns], dtype=np.float64))
    if cells > MAX_CELLS:
        raise ParameterError(
            f"the joint domain of {', '.join(columns)} has {cells} cells (limit {MAX_CELLS})"
        )


def _release(
    schema: Schema,
    columns: Sequence[str],
    exact: np.ndarray,
    eps: float,
    mechanism: str,
    name: str,
    clip: bool,
    rng: RngLike | SeedRecord,
    accountant: BudgetAccountant | None,
    input_sha256: str | Callable[[], str] | None,
) -> NoisyHistogram:
    """Noise the exact counts once and post-process them (``name``: the estimator).
    ``input_sha256`` may be a callable (a running fingerprint's result), called last."""
    _check_cells(schema, columns)
    mech = CountQuery(sensitivity=1).mechanism(eps, mechanism)  # one record moves one count
    scale = mech.noise_scale
    noise, record = noise_rng(rng)
    noisy = mech.randomize(exact, rng=noise, accountant=accountant, label="histogram")
    if name == "ml":
        counts = np.maximum(noisy, 0) if clip else noisy
    else:
        counts = get_estimator(name)(noisy, scale, clip=clip)
    domains = tuple(tuple(schema[c].domain) for c in columns)
    if callable(input_sha256):
        input_sha256 = input_sha256()
    read = tuple(c for c in columns if not schema[c].declared)
    return NoisyHistogram(tuple(columns), domains, counts, eps, mechanism, name, scale,
                          read_from_data=read, seed=record, input_sha256=input_sha256)  # fmt: skip
