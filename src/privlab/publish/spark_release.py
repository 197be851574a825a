"""A row-level release computed by the Spark engine, its rows still in Spark.

The Spark sanitizers (:mod:`privlab.publish.spark_pram`, ``spark_generalization``,
``spark_anatomy``) return a :class:`SparkRelease`: one Spark DataFrame of codes per large
published table (PRAM's randomized table, a generalized table, Anatomy's QIT), small
published tables computed on the driver (Anatomy's ST), the public parameters and metadata
of the in-memory release, and the custody (seed record, input fingerprint, truth columns of
the same DataFrame, never written beside the release).

:meth:`SparkRelease.save` writes the layout of :meth:`privlab.release.base.Release.save`
with Parquet *datasets* (directories written by Spark, rows in published order across part
files) instead of single files, so :func:`privlab.release.base.load_release` reads it back
when it fits in memory; :meth:`SparkRelease.collect` builds the in-memory release on the
driver (tests, small outputs).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab._io import sha256_path
from privlab._rng import SeedRecord
from privlab.data.schema import Schema
from privlab.data.spark import CODE
from privlab.data.table import Table
from privlab.errors import CustodyError, ParameterError
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

#: Column of a release DataFrame that orders its rows (a random key when shuffled).
ORDER = "__order"
#: Prefix of the truth columns (custody only) in a release DataFrame.
TRUTH = "__truth__"


@dataclass(frozen=True, eq=False)
class SparkTable:
    """One published table held by Spark: ``frame`` has a code column ``<name>__code`` per
    categorical column of ``header``, the integer columns by their names, the truth columns
    ``__truth__<name>`` and the ordering column :data:`ORDER` (or ``order_by``)."""

    frame: Any
    header: tuple[str, ...]
    integers: tuple[str, ...] = ()
    order_by: tuple[str, ...] = (ORDER,)

    def ordered(self) -> Any:
        return self.frame.orderBy(*self.order_by)


@dataclass(frozen=True, eq=False, repr=False)
class SparkRelease(EngineRelease):
    """A release whose main table stays in Spark (see the module docstring): the Spark
    engine's member of the release family (:class:`~privlab.release.base.EngineRelease`).

    Attributes
    ----------
    method
        The release kind (``pram``, ``generalization``, ``anatomy``).
    schema
        The published columns' attributes with their roles (full domains).
    tables
        The published tables, main first: :class:`SparkTable` or, for tables computed on
        the driver, :class:`~privlab.release.base.PublishedTable`.
    parameters, metadata
        What the in-memory release writes to ``release.json``.
    full_domain
        Columns whose whole domain is published (declared ones are too); the others are cut
        to the values the published rows hold.
    truth
        The truth's attributes (custody only), in the main table's truth columns.
    seed, input_sha256
        The custody's seed record and the input's (order-free) fingerprint.
    input_measures
        What the sanitizer measured on the input (custody only; see
        :attr:`privlab.release.base.Custody.input_measures`), or None.
    """

    engine: ClassVar[str] = "spark"
    engine_field: ClassVar[str | None] = "spark"
    method: str
    schema: Schema
    tables: Mapping[str, SparkTable | PublishedTable]
    parameters: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    full_domain: frozenset[str] = frozenset()
    truth: Schema | None = None
    seed: SeedRecord = field(default_factory=SeedRecord)
    input_sha256: str | None = None
    input_measures: dict[str, Any] | None = None

    @property
    def main(self) -> SparkTable:
        t = next(iter(self.tables.values()))
        assert isinstance(t, SparkTable)
        return t

    def frame(self, name: str | None = None, *, decode: bool = True) -> Any:
        """A published table as a Spark DataFrame in published order (decoded values, or
        codes with ``decode=False``); never the truth."""
        t = self.tables[name or next(iter(self.tables))]
        if not isinstance(t, SparkTable):
            raise ParameterError(f"table {name!r} is computed on the driver: see collect()")
        return self._select(t.ordered(), t, decode)

    def _select(self, frame: Any, t: SparkTable, decode: bool) -> Any:
        from pyspark.sql import functions as F

        cols = []
        for c in t.header:
            if c in t.integers:
                cols.append(F.col(c))
            elif decode:
                cols.append(decode_column(F.col(c + CODE), self.schema[c].domain).alias(c))
            else:
                cols.append(F.col(c + CODE).alias(c))
        return frame.select(*cols)

    def public_schema(self) -> Schema:
        """The schema of ``release.json``: domains cut to the values published rows hold,
        unless declared or listed in ``full_domain`` (one aggregation)."""
        from pyspark.sql import functions as F

        used: dict[str, np.ndarray] = {}
        for t in self.tables.values():
            if isinstance(t, PublishedTable):
                mark_used(used, t.table)
                continue
            cut = [c for c in t.header if c not in t.integers and not self._whole(c)]
            if cut:
                row = t.frame.agg(*[F.collect_set(c + CODE).alias(c) for c in cut]).collect()[0]
                for c in cut:
                    mask = used.setdefault(c, np.zeros(self.schema[c].size, dtype=bool))
                    mask[[int(v) for v in row[c]]] = True
        return cut_domains(self.schema, used, lambda a: self._whole(a.name))

    def _whole(self, name: str) -> bool:
        return name in self.full_domain or self.schema[name].declared

    # -- to memory ----------------------------------------------------------------------------
    def collect(self) -> Release:
        """The in-memory release (the same class as the in-memory sanitizer's), with its
        custody; every row comes to the driver."""
        tables: dict[str, PublishedTable] = {}
        truth_codes = None
        for name, t in self.tables.items():
            if isinstance(t, PublishedTable):
                tables[name] = t
                continue
            truth_cols = [] if self.truth is None or t is not self.main else list(self.truth.names)
            cats = [c for c in t.header if c not in t.integers]
            sel = [*(c + CODE for c in cats), *t.integers, *(TRUTH + c for c in truth_cols)]
            pdf = t.ordered().select(*sel).toPandas()
            codes = pdf[[c + CODE for c in cats]].to_numpy(dtype=np.int64)
            tables[name] = PublishedTable(
                Table(codes.reshape(len(pdf), len(cats)), self.schema.select(cats)),
                {c: pdf[c].to_numpy(dtype=np.int64) for c in t.integers},
                t.header,
            )
            if truth_cols:
                truth_codes = pdf[[TRUTH + c for c in truth_cols]].to_numpy(dtype=np.int64)
        meta = {"parameters": dict(self.parameters), **self.metadata}
        release = release_class(self.method)._from_published(meta, tables)
        truth = None
        if self.truth is not None and truth_codes is not None:
            truth = Table(truth_codes.reshape(-1, len(self.truth)), self.truth)
        custody = Custody(
            seed=self.seed,
            input_sha256=self.input_sha256,
            truth=truth,
            input_measures=self.input_measures,
        )
        return release.with_custody(custody, None)

    # -- to disk (EngineRelease.save) -----------------------------------------------------
    # The paths must be on a file system the driver and the executors share.
    def _input_sha256(self) -> str | None:
        return self.input_sha256

    def _write_tables(self, tmp: Path, custody_tmp: Path | None) -> tuple[dict[str, Any], Schema]:
        files: dict[str, Any] = {}
        for name, t in self.tables.items():
            if isinstance(t, PublishedTable):  # computed on the driver
                files[name] = write_published(tmp, name, t)
                continue
            path = tmp / f"{name}.parquet"
            self._select(t.ordered(), t, decode=True).write.parquet(str(path))
            _drop_markers(path)
            sha = sha256_path(path)  # a dataset: its part files' digest
            files[name] = {
                "file": path.name,
                "columns": list(t.header),
                "integers": list(t.integers),
                **({"sha256": sha} if sha else {}),
            }
        return files, self.public_schema()

    def _input_fields(self) -> dict[str, Any]:
        if self.seed.replays is not None:
            raise CustodyError("a Spark release cannot be checked against the one it replays")
        return {"input_sha256": self.input_sha256}

    def _write_truth(self, tmp: Path) -> dict[str, Any]:
        from pyspark.sql import functions as F

        assert self.truth is not None
        cols = [
            decode_column(F.col(TRUTH + c), self.truth[c].domain).alias(c) for c in self.truth.names
        ]
        path = tmp / "truth.parquet"
        self.main.ordered().select(*cols).write.parquet(str(path))
        _drop_markers(path)
        return {
            "file": path.name,
            "sha256": sha256_path(path),
            "schema": self.truth.to_dict(),
            "rows": "in the order of the release's main table",
        }


def _drop_markers(path: Path) -> None:
    """Remove Spark's ``_SUCCESS`` and ``.crc`` side files (the directory is the dataset)."""
    for p in list(path.iterdir()):
        if p.name.startswith(("_", ".")):
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()


def decode_column(code: Any, domain: tuple[Any, ...]) -> Any:
    """The value of a code column through ``domain`` (a literal array shipped with the
    plan): numbers stay numbers when every value is one, else text."""
    from pyspark.sql import functions as F

    numeric = all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in domain
    )
    if numeric and any(isinstance(v, float | np.floating) for v in domain):
        lits = [F.lit(float(v)) for v in domain]
    elif numeric:
        lits = [F.lit(int(v)) for v in domain]
    else:
        lits = [F.lit(str(v)) for v in domain]
    if not lits:
        return F.lit(None)
    return F.element_at(F.array(*lits), code + 1)
