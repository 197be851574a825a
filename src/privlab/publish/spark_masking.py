"""Masking of numeric columns on Spark: the Spark engine of
:func:`~privlab.publish.masking.add_noise` (``additive``, ``correlated``, ``kim``) and
:func:`~privlab.publish.masking.top_bottom_code` (given codes).  The methods are per row:
once the moments that scale the noise are known, every record is masked on its own.

* **Checks and fingerprint.**  One aggregation counts the masked columns' missing (null,
  NaN) and infinite values, the kept columns' missing ones and the non-positive weights
  (each refused in one line, as the memory engine refuses them), gathers each kept column's
  distinct values (checked on the driver against its domain, declared in ``schema`` or
  read from the data: they are the values the release publishes) and sums a 64-bit hash of
  every row (the input's order-free fingerprint, custody's and the registry's).  The kept
  columns travel as their values, never through a map of their domain shipped with the
  plan: a column of sampling weights has about as many values as records.
* **Moments** (noise only).  Every partition summarizes its rows
  (:class:`~privlab.publish.masking_core.Moments`: count, weights' total, mean, co-moment
  matrix, least and greatest values; Spark has no weighted covariance aggregate), and the
  driver merges the summaries in partition order by Chan et al.'s pairwise update, the
  merge Spark's own ``covar_samp`` uses: each column's sd is the memory engine's
  ``numpy.cov`` one to rounding.  :func:`~privlab.publish.masking_core.noise_plan` then
  fixes the noise exactly as the memory engine does.
* **Draws.**  As :mod:`privlab.publish.spark_pram`: the driver draws 256 bits from the
  release's generator; partition ``i`` draws from child ``i`` of that ``SeedSequence``,
  for each Arrow batch of its rows first the ``standard_normal((rows, m))`` of the noise
  (row by row) and then each row's 63-bit shuffle key.  The release is ordered by the key
  (a global sort), so the input's order, even within a partition, is not published.
  Replayed from its custody a release is the same given the same input partitioning.

:func:`add_noise_spark` and :func:`top_bottom_code_spark` return a
:class:`SparkMaskedRelease`: the rows stay in Spark (a DataFrame of the masked values, the
kept columns' values, the true values and the key, recomputed by each action) until
:meth:`~SparkMaskedRelease.save` writes the layout of :meth:`MaskedRelease.save
<privlab.release.base.Release.save>` with Parquet *datasets* (``masked.parquet/``, custody
``truth.parquet/`` in the release's row order), which
:func:`privlab.release.base.load_release` reads back as a
:class:`~privlab.publish.masking.MaskedRelease` with its custody, or
:meth:`~SparkMaskedRelease.collect` builds it on the driver.  As in memory, ``release.json``
lists every published value of a masked column (its domain) and ``custody.json`` every true
one: those come to the driver.  The information loss (custody's ``input_measures``) is
measured from per-partition moments of the drawn rows: every measure of the memory engine
but the pMSE, which fits a model to every row.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab._io import sha256_path
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.schema import Attribute, Role, Schema, py_scalar
from privlab.data.spark import SparkInput, missing_condition, spark_frame, spark_schema
from privlab.errors import CustodyError, MissingValuesError, ParameterError, SchemaError
from privlab.publish import masking_core as core
from privlab.publish.spark_pram import _partition_id, partition_entropy, partition_generator
from privlab.publish.spark_release import ORDER, TRUTH, _drop_markers
from privlab.release.base import Custody, EngineRelease, Release, cut_domains

#: The published table's name (``masked.parquet``), as the memory engine's.
TABLE = "masked"
#: Column of the drawn frame holding the sampling weights (the loss reads them).
WEIGHTS = "__weights"
#: Column of a partition's summary row: its index (the driver merges in that order).
PART = "__partition"

#: Masks one batch: ``(x, generator) -> masked``.
Mask = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True, eq=False, repr=False)
class SparkMaskedRelease(EngineRelease):
    """A masking release whose rows stay in Spark (see the module docstring).

    Attributes
    ----------
    technique
        ``"noise"`` or ``"topcoding"``.
    masked, kept, header
        The masked columns, the columns published unchanged, and the published columns in
        the input's order.
    schema
        Their attributes with their roles: the kept columns' domains (``save()`` cuts an
        undeclared one to the values published), the masked columns' empty (their domain is
        the published values, read when saved).
    parameters, metadata
        What the memory engine's ``release.json`` says.
    frame
        The drawn rows: a column per masked column (its published value), one per kept
        column (its value), ``__truth__<masked>``, the weights (``__weights``, weighted
        only) and the key ``__order``.
    used
        Per kept column, which values of its domain the input holds (all published).
    n_rows
        The input's rows (all published).
    sensitive, weights
        The sensitive column and the weights' column, or None.
    seed, input_sha256
        The custody's seed record and the input's order-free fingerprint.
    """

    engine: ClassVar[str] = "spark"
    engine_field: ClassVar[str | None] = "spark"
    method: ClassVar[str] = "masking"  # type: ignore[misc]
    technique: str
    masked: tuple[str, ...]
    kept: tuple[str, ...]
    header: tuple[str, ...]
    schema: Schema
    parameters: dict[str, Any]
    metadata: dict[str, Any]
    frame: Any = field(repr=False)
    n_rows: int
    used: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    sensitive: str | None = None
    weights: str | None = None
    seed: SeedRecord = field(default_factory=SeedRecord)
    input_sha256: str | None = None
    _done: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- views ---------------------------------------------------------------------------------
    def ordered(self) -> Any:
        """The drawn rows in published order."""
        return self.frame.orderBy(ORDER)

    def published_frame(self) -> Any:
        """The published table as a Spark DataFrame in published order (decoded values);
        never the truth."""
        return self.ordered().select(*self.header)

    @property
    def input_measures(self) -> dict[str, Any]:  # type: ignore[override]
        """The information loss against the input (``{"utility": ...}``; custody only): one
        aggregation of per-partition sums over the drawn rows, done once."""
        if "utility" not in self._done:
            self._done["utility"] = self._loss().utility()
        return {"utility": self._done["utility"]}

    def _loss(self) -> core.LossSums:
        import pandas as pd

        m, weighted = len(self.masked), self.weights is not None
        size = core.LossSums.state_size(m)
        names = [PART, *(f"s{i}" for i in range(size))]
        x_cols = [TRUTH + c for c in self.masked]
        y_cols = list(self.masked)

        def summarize(batches: Any) -> Any:
            acc = core.LossSums(m, weighted)
            for pdf in batches:
                w = pdf[WEIGHTS].to_numpy(dtype=np.float64) if weighted else None
                acc.add(pdf[x_cols].to_numpy(dtype=np.float64),
                        pdf[y_cols].to_numpy(dtype=np.float64), w)  # fmt: skip
            yield pd.DataFrame([[float(_partition_id()), *acc.state()]], columns=names)

        read = [*x_cols, *y_cols, *([WEIGHTS] if weighted else [])]
        rows = _partials(self.frame.select(*read), summarize, names)
        total = core.LossSums(m, weighted)
        for r in rows:
            total.merge(core.LossSums.from_state(r[1:], m, weighted))
        return total

    @property
    def truth(self) -> Schema:  # type: ignore[override]
        """The truth's attributes: the masked columns with their true values as domains
        (read when the custody is written; empty before)."""
        return self._done.get("truth") or Schema(
            tuple(Attribute(c, (), Role.OTHER, True) for c in self.masked)
        )

    # -- to memory -----------------------------------------------------------------------------
    def collect(self) -> Release:
        """The in-memory :class:`~privlab.publish.masking.MaskedRelease`, with its custody;
        every row comes to the driver."""
        sel = [*self.masked, *self.kept, *(TRUTH + c for c in self.masked)]
        pdf = self.ordered().select(*sel).toPandas()
        n, m, k = len(pdf), len(self.masked), len(self.kept)
        masked = pdf[list(self.masked)].to_numpy(dtype=np.float64).reshape(n, m)
        codes = np.empty((n, k), dtype=np.int64)
        for j, c in enumerate(self.kept):
            codes[:, j] = self.schema[c].encode(pdf[c].to_numpy())
        truth = pdf[[TRUTH + c for c in self.masked]].to_numpy(dtype=np.float64).reshape(n, m)
        custody = Custody(seed=self.seed, input_sha256=self.input_sha256,
                          input_measures=self.input_measures)  # fmt: skip
        return core.release_of_rows(self, masked, codes, truth, custody)

    # -- to disk (EngineRelease.save) ----------------------------------------------------------
    # The paths must be on a file system the driver and the executors share.
    def _input_sha256(self) -> str | None:
        return self.input_sha256

    def _input_fields(self) -> dict[str, Any]:
        if self.seed.replays is not None:
            raise CustodyError("a Spark release cannot be checked against the one it replays")
        return {"input_sha256": self.input_sha256}

    def _distinct(self, columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """The sorted distinct values of ``columns`` of the drawn rows (one aggregation)."""
        from pyspark.sql import functions as F

        if not columns:
            return {}
        row = self.frame.agg(*[F.collect_set(c).alias(c) for c in columns]).collect()[0]
        return {c: tuple(np.unique(np.asarray(row[c])).tolist()) for c in columns}

    def _write_tables(self, tmp: Path, custody_tmp: Path | None) -> tuple[dict[str, Any], Schema]:
        path = tmp / f"{TABLE}.parquet"
        self.published_frame().write.parquet(str(path))
        _drop_markers(path)
        sha = sha256_path(path)  # a dataset: its part files' digest
        files = {
            TABLE: {
                "file": path.name,
                "columns": list(self.header),
                "integers": [],
                "rows": self.n_rows,
                **({"sha256": sha} if sha else {}),
            }
        }
        found = self._distinct(self.masked)
        attrs = [
            dataclasses.replace(a, domain=found[a.name]) if a.name in self.masked else a
            for a in self.schema.attributes
        ]
        schema = cut_domains(Schema(tuple(attrs)), self.used,
                             lambda a: a.declared or a.name in self.masked)  # fmt: skip
        return files, schema

    def _write_truth(self, tmp: Path) -> dict[str, Any]:
        from pyspark.sql import functions as F

        path = tmp / "truth.parquet"
        self.ordered().select(*[F.col(TRUTH + c).alias(c) for c in self.masked]).write.parquet(
            str(path)
        )
        _drop_markers(path)
        found = self._distinct([TRUTH + c for c in self.masked])
        self._done["truth"] = Schema(
            tuple(Attribute(c, found[TRUTH + c], Role.OTHER, True) for c in self.masked)
        )
        return {
            "file": path.name,
            "sha256": sha256_path(path),
            "schema": self.truth.to_dict(),
            "rows": "in the order of the release's main table",
        }


def _partials(frame: Any, summarize: Any, names: list[str]) -> list[list[float]]:
    """One summary row per partition of ``frame`` (``summarize``: a ``mapInPandas``
    function yielding it), collected and sorted by partition: the driver then merges them in
    the same order on every run."""
    spec = ", ".join(f"`{c}` double" for c in names)
    rows = frame.mapInPandas(summarize, spec).collect()
    return sorted(([float(r[c]) for c in names] for r in rows), key=lambda r: r[0])


def _numeric(dtype: Any) -> bool:
    from pyspark.sql import types as T

    return isinstance(dtype, T.NumericType)


@dataclass(frozen=True)
class _Input:
    df: Any
    masked: list[str]
    kept: list[str]
    header: list[str]
    schema: Schema  # the kept columns'
    types: dict[str, Any]  # every column's Spark type


def _open(data: Any, columns: Sequence[str], keep: Sequence[str] | None, sensitive: str | None,
          weights: str | None, schema: Schema | None) -> _Input:  # fmt: skip
    if isinstance(data, SparkInput):
        df, given = data.df, data.schema
    else:
        df, given = spark_frame(data), None
    fields = {f.name: f.dataType for f in df.schema.fields}
    masked, kept = core.engine_columns(list(fields), lambda c: _numeric(fields[c]), columns,
                                       keep, sensitive, weights)  # fmt: skip
    header = [c for c in fields if c in masked or c in kept]  # the input's order
    kept = [c for c in header if c in kept]
    known = schema if schema is not None else given
    attrs = tuple(a for a in (known.attributes if known else ()) if a.name in kept)
    kept_schema = spark_schema(df, columns=kept, schema=Schema(attrs)) if kept else Schema(())
    return _Input(df, masked, kept, header, kept_schema, fields)


def _check(inp: _Input, weights: str | None) -> tuple[int, str, dict[str, np.ndarray]]:
    """Refuse missing, infinite, unknown (kept columns) and non-positive (weights) values;
    the rows, the input's fingerprint and the values of each kept column's domain that the
    input holds (one aggregation)."""
    from pyspark.sql import functions as F

    numbers = [*inp.masked, *([weights] if weights else [])]
    aggs = [F.count(F.lit(1)).alias("__n")]
    for c in numbers:
        col = F.col(c).cast("double")
        aggs.append(F.sum(F.when(col.isNull() | F.isnan(col), 1).otherwise(0)).alias(c + "__na"))
        inf = (col == float("inf")) | (col == float("-inf"))
        aggs.append(F.sum(F.when(inf, 1).otherwise(0)).alias(c + "__inf"))
    for c in inp.kept:
        miss = missing_condition(c, inp.types[c])
        aggs.append(F.sum(F.when(miss, 1).otherwise(0)).alias(c + "__missing"))
        aggs.append(F.collect_set(F.col(c)).alias(c + "__values"))
    if weights:
        aggs.append(F.sum(F.when(F.col(weights) <= 0, 1).otherwise(0)).alias("__bad_w"))
    hashed = [*(F.col(c).cast("double") for c in inp.masked), *(F.col(c) for c in inp.kept)]
    aggs.append(F.sum(F.xxhash64(*hashed).cast("decimal(38,0)")).alias("__hash"))
    row = inp.df.agg(*aggs).collect()[0]
    missing = {c: int(row[c + "__na"] or 0) for c in numbers}
    missing.update({c: int(row[c + "__missing"] or 0) for c in inp.kept if c not in missing})
    if any(missing.values()):
        listed = ", ".join(f"{c!r} ({k})" for c, k in missing.items() if k)
        raise MissingValuesError(
            f"missing values in column(s) {listed}; drop those rows first (CLI: --drop-missing)"
        )
    for c in numbers:
        if row[c + "__inf"]:
            raise ParameterError(
                f"column {c!r} holds {int(row[c + '__inf'])} infinite value(s): drop or impute "
                "them before masking"
            )
    if weights and row["__bad_w"]:
        raise ParameterError(
            f"the weights {weights!r} must be positive numbers: {int(row['__bad_w'])} "
            "record(s) are not"
        )
    used: dict[str, np.ndarray] = {}
    for c in inp.kept:
        attr = inp.schema[c]
        values = np.asarray([py_scalar(v) for v in row[c + "__values"]], dtype=object)
        codes = attr.encode(values, unknown=-1)
        if (codes < 0).any():
            first = values[int(np.flatnonzero(codes < 0)[0])]
            raise SchemaError(f"value {first!r} is not in the domain of {c!r}")
        used[c] = np.zeros(attr.size, dtype=bool)
        used[c][codes] = True
    n = int(row["__n"])
    if n == 0:
        raise ParameterError("the input has no rows")
    cols = [*inp.masked, *inp.kept]
    digest = hashlib.sha256(f"masking:{cols}:{n}:{row['__hash']}".encode())
    return n, "spark-xxhash64-sum:" + digest.hexdigest(), used


def column_moments_spark(df: Any, columns: Sequence[str], weights: str | None = None) -> Any:
    """The (weighted) moments of ``columns`` of a Spark DataFrame: a
    :class:`~privlab.publish.masking_core.Moments` per partition, merged on the driver in
    partition order (its ``cov()`` is ``numpy.cov``'s, or the memory engine's weighted
    covariance, to rounding)."""
    import pandas as pd
    from pyspark.sql import functions as F

    columns = list(columns)
    m = len(columns)
    names = [PART, *(f"s{i}" for i in range(core.Moments.state_size(m)))]

    def summarize(batches: Any) -> Any:
        acc = core.Moments(m)
        for pdf in batches:
            w = pdf[WEIGHTS].to_numpy(dtype=np.float64) if weights else None
            acc.add(pdf[columns].to_numpy(dtype=np.float64), w)
        yield pd.DataFrame([[float(_partition_id()), *acc.state()]], columns=names)

    read = [F.col(c).cast("double").alias(c) for c in columns]
    if weights:
        read.append(F.col(weights).cast("double").alias(WEIGHTS))
    total = core.Moments(m)
    for r in _partials(df.select(*read), summarize, names):
        total.merge(core.Moments.from_state(r[1:], m))
    return total


def _draw(inp: _Input, technique: str, params: dict[str, Any], mask: Mask,
          gen: np.random.Generator, record: SeedRecord, checked: tuple[int, str, Any],
          sensitive: str | None, weights: str | None) -> SparkMaskedRelease:  # fmt: skip
    """The drawn frame (per partition: the mask's draws, then the shuffle keys) and its
    release; ``checked``: what :func:`_check` returned."""
    import pandas as pd
    from pyspark.sql import functions as F

    entropy = partition_entropy(gen)
    masked, kept = list(inp.masked), list(inp.kept)
    m = len(masked)
    w_out = [WEIGHTS] if weights else []
    names_out = [*masked, *kept, *(TRUTH + c for c in masked), *w_out, ORDER]

    def run(batches: Any) -> Any:
        pgen = partition_generator(entropy, _partition_id())
        for pdf in batches:
            x = pdf[masked].to_numpy(dtype=np.float64).reshape(len(pdf), m)
            out = mask(x, pgen)
            key = pgen.integers(0, np.iinfo(np.int64).max, size=len(pdf), dtype=np.int64)
            cols: dict[str, Any] = {c: out[:, j] for j, c in enumerate(masked)}
            cols.update({c: pdf[c] for c in kept})
            cols.update({TRUTH + c: x[:, j] for j, c in enumerate(masked)})
            if weights:
                cols[WEIGHTS] = pdf[WEIGHTS].to_numpy(dtype=np.float64)
            cols[ORDER] = key
            yield pd.DataFrame(cols, columns=names_out)

    spec = ", ".join([
        *(f"`{c}` double" for c in masked),
        *(f"`{c}` {inp.types[c].simpleString()}" for c in kept),
        *(f"`{TRUTH + c}` double" for c in masked), *(f"`{c}` double" for c in w_out),
        f"`{ORDER}` long",
    ])  # fmt: skip
    read = [*(F.col(c).cast("double").alias(c) for c in masked), *(F.col(c) for c in kept)]
    if weights:
        read.append(F.col(weights).cast("double").alias(WEIGHTS))
    frame = inp.df.select(*read).mapInPandas(run, spec)
    attrs = []
    for c in inp.header:
        if c in masked:  # its domain: the published values, read when saved
            attrs.append(Attribute(c, (), Role.QI, True))
        else:
            role = Role.SENSITIVE if c == sensitive else Role.INSENSITIVE
            attrs.append(dataclasses.replace(inp.schema[c], role=role))
    if weights is not None:
        params = {**params, "weights": weights}
    n, fingerprint, used = checked
    return SparkMaskedRelease(
        technique=technique,
        masked=tuple(masked),
        kept=tuple(kept),
        header=tuple(inp.header),
        schema=Schema(tuple(attrs)),
        parameters={"technique": technique, **params},
        metadata={"masked": masked, "what": core.TECHNIQUES[technique]},
        frame=frame,
        n_rows=n,
        used=used,
        sensitive=sensitive,
        weights=weights,
        seed=record,
        input_sha256=fingerprint,
    )


def add_noise_spark(
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
) -> SparkMaskedRelease:
    """Noise added to ``columns`` of a Spark DataFrame (or a Parquet path Spark reads):
    ``add_noise(df, engine="spark", ...)`` (:func:`privlab.publish.masking.add_noise`; see
    the module docstring).  ``schema`` declares the kept columns' domains (the others are
    read from the data); ``keep`` None keeps no column."""
    if method not in core.NOISE_METHODS:
        raise ParameterError(
            f"method must be one of {', '.join(core.NOISE_METHODS)}, got {method!r}"
        )
    core._number("noise", noise, 0.0)
    inp = _open(data, columns, keep, sensitive, weights, schema)
    gen, record = publication_rng(rng)
    checked = _check(inp, weights)
    moments = column_moments_spark(inp.df, inp.masked, weights)
    plan = core.noise_plan_from(method, noise, moments, inp.masked, weights is not None)

    def mask(x: np.ndarray, g: np.random.Generator) -> np.ndarray:
        return plan.apply(x, g.standard_normal(x.shape))

    params = {"method": method, "noise": float(noise)}
    return _draw(inp, "noise", params, mask, gen, record, checked, sensitive, weights)


def top_bottom_code_spark(
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
) -> SparkMaskedRelease:
    """Top and bottom coding of ``columns`` of a Spark DataFrame at the given codes:
    ``top_bottom_code(df, engine="spark", ...)``; the values are exactly the memory
    engine's.  A code given as a quantile is refused (it needs the column sorted): give the
    codes.  Other arguments as :func:`add_noise_spark`."""
    if isinstance(columns, str):
        raise ParameterError(f"columns must be a list of names, not the string {columns!r}")
    hi, lo = core.given_codes(top, bottom, names=list(columns), top_quantile=top_quantile,
                              bottom_quantile=bottom_quantile, engine="spark")  # fmt: skip
    inp = _open(data, columns, keep, sensitive, weights, schema)
    gen, record = publication_rng(rng)
    checked = _check(inp, weights)

    def mask(x: np.ndarray, g: np.random.Generator) -> np.ndarray:
        return core.code_values(x, hi, lo)

    params = {
        side: [None if np.isnan(t) else float(t) for t in v]
        for side, v in (("top", hi), ("bottom", lo))
        if v is not None
    }
    return _draw(inp, "topcoding", params, mask, gen, record, checked, sensitive, weights)
