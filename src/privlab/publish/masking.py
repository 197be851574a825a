"""Masking of numeric variables, the everyday methods of a statistics office (issue 35):
microaggregation, noise, rank swapping and top/bottom coding, as releases.

Each method replaces the values of some numeric columns (``columns``) and publishes them with
the columns kept unchanged (``keep``); every other column is dropped.  The release is a
:class:`MaskedRelease`: its rows in random order (the input's order could say which record
is which), the custody holding each published row's original values of the masked columns
(what the record-linkage attack of the report is judged against) and the seed.

The methods themselves (pure functions on float arrays) are in
:mod:`privlab.publish.microaggregation_core` and :mod:`privlab.publish.masking_core`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.frames import as_table
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.shuffle import permutation
from privlab.data.stream import DEFAULT_BATCH_ROWS
from privlab.data.table import Table
from privlab.errors import ParameterError, SchemaError
from privlab.publish.masking_core import TECHNIQUES, masked_and_kept, masked_table
from privlab.release.base import Custody, EngineRelease, PublishedTable, Release, ReleaseError


@dataclass(frozen=True, eq=False, repr=False)
class MaskedRelease(Release):
    """A table whose numeric columns were masked.

    Attributes
    ----------
    table
        The published table: the masked columns (their new values) and the columns kept
        unchanged, rows in random order.
    masked
        The masked columns.
    technique
        One of :data:`TECHNIQUES`.
    params
        The technique's public parameters (k, the noise level, the swap window, the codes).
    custody
        The seed and each published row's original values of the masked columns.
    """

    table: Table
    masked: tuple[str, ...]
    technique: str
    params: dict[str, Any] = field(default_factory=dict)
    custody: Custody | None = field(default=None, compare=False)

    method: ClassVar[str] = "masking"

    def __post_init__(self) -> None:
        object.__setattr__(self, "masked", tuple(self.masked))
        if self.technique not in TECHNIQUES:
            raise ReleaseError(f"unknown masking technique {self.technique!r}")
        self.table.schema.indices(self.masked)  # SchemaError names an unknown column

    # -- the Release interface --------------------------------------------------------------
    def published(self) -> dict[str, PublishedTable]:
        return {"masked": PublishedTable(self.table)}

    def parameters(self) -> dict[str, Any]:
        return {"technique": self.technique, **self.params}

    def metadata(self) -> dict[str, Any]:
        return {"masked": list(self.masked), "what": TECHNIQUES[self.technique]}

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "technique": self.technique,
            "masked": list(self.masked),
            "kept": [c for c in self.table.names if c not in self.masked],
            **self.params,
        }

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        # a masked column's values are the published ones: nothing of the input's domain
        return attribute.declared and attribute.name not in self.masked

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> MaskedRelease:
        params = dict(meta["parameters"])
        technique = params.pop("technique", None)
        masked = meta.get("masked")
        if not isinstance(masked, list) or not masked:
            raise ReleaseError("release.json lists no masked column")
        return cls(tables["masked"].table, tuple(masked), technique, params=params)

    @property
    def weights_column(self) -> str | None:
        """The column of sampling weights published unchanged, or None."""
        return self.params.get("weights")

    def weights(self) -> np.ndarray | None:
        """Each published record's sampling weight, or None without a weights column."""
        name = self.weights_column
        return None if name is None else _floats(self.table, name)

    def linkable(self) -> Table:
        """The columns an adversary links on: the weights are a survey's design, not a
        person's trait (sdcMicro's key variables never hold them)."""
        main = self.table
        return main.select([c for c in main.schema.linkable if c != self.weights_column])

    @property
    def categorical(self) -> bool:
        """Whether the masked columns are categories (microaggregated by medoids), read by
        their codes rather than as numbers."""
        return self.params.get("algorithm") == "medoids"

    def codes(self) -> np.ndarray:
        """The published values of the masked columns as integer codes shared with
        :meth:`truth_codes` (a value has one code in both)."""
        return self._shared_codes()[0]

    def truth_codes(self) -> np.ndarray | None:
        """Each published row's original values of the masked columns in the codes of
        :meth:`codes`, or None without the custody."""
        return self._shared_codes()[1]

    def _shared_codes(self) -> tuple[np.ndarray, np.ndarray | None]:
        truth = None if self.custody is None else self.custody.truth
        pub = np.empty((self.n_rows, len(self.masked)), np.int64)
        true = None if truth is None else np.empty_like(pub)
        for j, c in enumerate(self.masked):
            words = [str(v) for v in self.table.schema[c].domain]
            if truth is not None:
                words += [str(v) for v in truth.schema[c].domain]
            index = {w: i for i, w in enumerate(dict.fromkeys(words))}
            mine = np.array([index[str(v)] for v in self.table.schema[c].domain], np.int64)
            pub[:, j] = mine[self.table.column(c)]
            if true is not None:
                theirs = np.array([index[str(v)] for v in truth.schema[c].domain], np.int64)
                true[:, j] = theirs[truth.column(c)]
        return pub, true

    # -- what the attacks read --------------------------------------------------------------
    def values(self, columns: Sequence[str] | None = None) -> np.ndarray:
        """The published values of the masked columns (or ``columns``), as floats."""
        names = list(self.masked if columns is None else columns)
        return np.stack([_floats(self.table, c) for c in names], axis=1)

    def truth_values(self) -> np.ndarray | None:
        """Each published row's original values of the masked columns (custody's), or
        None without the custody."""
        if self.custody is None or self.custody.truth is None:
            return None
        t = self.custody.truth
        return np.stack([_floats(t, c) for c in self.masked], axis=1)


def _floats(table: Table, column: str) -> np.ndarray:
    a = table.schema[column]
    if not a.numeric:
        raise SchemaError(f"column {column!r} is not numeric")
    return np.asarray(a.domain, dtype=np.float64)[table.column(column)]


def numeric_input(
    data: Any, columns: Sequence[str], keep: Sequence[str] | None, sensitive: str | None = None,
    weights: str | None = None, *, numeric: bool = True,
) -> tuple[Table, list[str], list[str], np.ndarray, np.ndarray | None]:  # fmt: skip
    """The input table, the masked and kept columns (``sensitive`` and ``weights`` among the
    kept), the masked columns' values (an ``(n, len(columns))`` float array; their codes
    with ``numeric=False``) and the sampling weights (or None), refusing in one line a
    column that is not numeric (unless ``numeric=False``), named twice, or both masked and
    kept, and weights that are not positive numbers."""
    table = as_table(data).require_rows()
    kept = table.schema.insensitive if keep is None else keep
    columns, kept = masked_and_kept(columns, kept, sensitive, weights)
    table.schema.indices(columns)
    for c in columns:
        if numeric and not table.schema[c].numeric:
            raise ParameterError(f"column {c!r} is not numeric: it cannot be masked as a number")
    table.schema.indices(kept)
    both = [c for c in kept if c in columns]
    if both:
        what = "the sampling weights" if both[0] == weights else "kept unchanged (--keep)"
        raise SchemaError(f"column {both[0]!r} is both masked and {what}")
    if weights is not None and weights == sensitive:
        raise ParameterError(f"column {weights!r} cannot be both the weights and sensitive")
    if numeric:
        x = np.stack([_floats(table, c) for c in columns], axis=1)
    else:
        x = table.select(columns).codes.astype(np.int64)
    return table, columns, kept, x, _weight_values(table, weights)


def _weight_values(table: Table, name: str | None) -> np.ndarray | None:
    if name is None:
        return None
    if not table.schema[name].numeric:
        raise ParameterError(f"the weights {name!r} are not numbers")
    w = _floats(table, name)
    bad = ~(np.isfinite(w) & (w > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ParameterError(
            f"the weights {name!r} must be positive numbers: record {i + 1} has {w[i]:g}"
        )
    return w


def masked_release(
    table: Table,
    columns: Sequence[str],
    kept: Sequence[str],
    masked: np.ndarray,
    technique: str,
    params: dict[str, Any],
    gen: np.random.Generator,
    record: SeedRecord,
    sensitive: str | None = None,
    weights: np.ndarray | None = None,
) -> MaskedRelease:
    """The release of ``masked`` (the new values of ``columns``, one row per input row) with
    the ``kept`` columns (``sensitive`` among them, with that role; the others insensitive),
    its rows in a random order drawn from ``gen``."""
    perm = permutation(gen, table.n_rows)  # numpy's below a million rows
    columns = list(columns)
    names = [c for c in table.names if c in columns or c in kept]  # the input's order
    out = masked_table(names, columns, masked[perm],
                       {c: (table.schema[c], table.column(c)[perm]) for c in names
                        if c not in columns}, sensitive)  # fmt: skip
    x = np.stack([_floats(table, c) for c in columns], axis=1)
    truth = Table.from_pandas(pd.DataFrame({c: x[perm, j] for j, c in enumerate(columns)}))
    custody = Custody(seed=record, input_sha256=table.fingerprint(), truth=truth,
                      input_measures={"utility": _loss(x, masked, weights)})  # fmt: skip
    return MaskedRelease(out, tuple(columns), technique, params=params, custody=custody)


def categorical_release(
    table: Table,
    columns: Sequence[str],
    kept: Sequence[str],
    published: np.ndarray,
    params: dict[str, Any],
    gen: np.random.Generator,
    record: SeedRecord,
    sensitive: str | None = None,
) -> MaskedRelease:
    """The release of categorical ``columns`` replaced by ``published`` (codes in the
    input's domains, one row per input row: every published value is one of the input's),
    with the ``kept`` columns, rows in a random order drawn from ``gen``.  The masked
    columns' published domains are the values used (a masked column is not declared
    public); the custody holds the true values and the share of cells changed."""
    n = table.n_rows
    perm = permutation(gen, n)  # numpy's below a million rows
    columns = list(columns)
    names = [c for c in table.names if c in columns or c in kept]
    codes = np.empty((n, len(names)), dtype=np.int32)
    attrs = []
    for i, c in enumerate(names):
        if c in columns:
            codes[:, i] = published[perm, columns.index(c)]
            attrs.append(dataclasses.replace(table.schema[c], role=Role.QI))
        else:
            codes[:, i] = table.column(c)[perm]
            role = Role.SENSITIVE if c == sensitive else Role.INSENSITIVE
            attrs.append(dataclasses.replace(table.schema[c], role=role))
    out = Table(codes, Schema(tuple(attrs)))
    original = table.select(columns)
    truth = Table(original.codes[perm], original.schema)
    changed = published != original.codes
    loss = {
        "changed_cells": float(changed.mean()),
        "changed_records": float(changed.any(axis=1).mean()),
        "changed_by_column": {c: float(changed[:, j].mean()) for j, c in enumerate(columns)},
    }
    custody = Custody(seed=record, input_sha256=table.fingerprint(), truth=truth,
                      input_measures={"utility": loss})  # fmt: skip
    return MaskedRelease(out, tuple(columns), "microaggregation", params=params, custody=custody)


def _release(
    data: Any,
    columns: Sequence[str],
    keep: Sequence[str] | None,
    sensitive: str | None,
    rng: RngLike | SeedRecord,
    technique: str,
    mask: Any,
    weights: str | None = None,
) -> MaskedRelease:
    """Mask ``columns`` of ``data`` with ``mask(x, gen, w) -> (masked, params)``, ``w`` the
    sampling weights of the column ``weights`` (published unchanged; None without)."""
    table, columns, kept, x, w = numeric_input(data, columns, keep, sensitive, weights)
    gen, record = publication_rng(rng)
    masked, params = mask(x, gen, w)
    if weights is not None:
        params = {**params, "weights": weights}
    return masked_release(table, columns, kept, masked, technique, params, gen, record,
                          sensitive=sensitive, weights=w)  # fmt: skip


def _engine(engine: str, schema: Schema | None, what: str) -> str:
    """``engine`` checked (:func:`privlab.data.engine.check_engine`); ``schema`` is for the
    stream and Spark engines only."""
    from privlab.data.engine import ENGINES, check_engine

    engine = check_engine(engine, available=ENGINES, what=what)
    if engine == "memory" and schema is not None:
        raise ParameterError("schema= applies to the Spark and stream engines")
    return engine


def _loss(x: np.ndarray, masked: np.ndarray, weights: np.ndarray | None = None) -> dict[str, Any]:
    """The information loss of ``masked`` against the input ``x`` (custodian's:
    :func:`privlab.metrics.numeric_utility.numeric_utility`, weighted by the sampling
    weights when given), or {} when it cannot be measured (a constant column)."""
    from privlab.errors import PrivlabError
    from privlab.metrics.numeric_utility import numeric_utility

    try:
        return numeric_utility(x, masked, weights=weights).to_dict()
    except PrivlabError:
        return {}


def microaggregate(
    data: Any,
    columns: Sequence[str],
    *,
    k: int,
    method: str = "mdav",
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    refine: bool = False,
    rng: RngLike | SeedRecord = None,
    compat: str = "exact",
) -> MaskedRelease:
    """Microaggregation: records grouped by at least ``k`` on ``columns`` and each value
    replaced by its group's mean (:mod:`privlab.publish.microaggregation_core`).

    ``method``: ``"mdav"`` (the columns together, standardized; Domingo-Ferrer & Torra 2005)
    or ``"univariate"`` (each column apart, at its optimum; Hansen & Mukherjee 2003), or
    ``"medoids"`` for categorical columns (MDAV with the Hamming distance, each group
    replaced by its medoid record: :func:`privlab.publish.microaggregation_core.
    medoid_microaggregation`; the columns are read as nominal codes).  The grouping draws
    nothing; ``rng`` orders the published rows.  ``weights``: a column of
    sampling weights, published unchanged; MDAV's average record and z-scores are then
    weighted and every group's value is its weighted mean, so each column's weighted total
    is kept (sdcMicro's ``microaggregation(weights =)``); groups still count records.
    ``refine``: MDAV's groups improved by local search
    (:func:`privlab.publish.microaggregation_core.refine`: moves, swaps, splits and merges
    that lower the within-group SSE; on the CASC Census file IL 5.69% -> 4.97% at k = 3).

    ``compat``: ``"exact"`` (default) or ``"sdcmicro"``, MDAV in sdcMicro's own arithmetic
    (single-precision distances, ``Mdav.cpp``; :mod:`privlab.publish._mdav_sdcmicro`): the
    groups, hence the values, of sdcMicro's ``microaggregation(method = "mdav")``, which
    differ from the exact ones where float rounding makes or breaks a tie.  Method
    ``"mdav"`` only, without weights; the release's parameters record it.
    """
    from privlab.publish import microaggregation_core as core

    if method not in ("mdav", "univariate", "medoids"):
        raise ParameterError(f"method must be mdav, univariate or medoids, not {method!r}")
    if refine and method != "mdav":
        raise ParameterError("refine applies to method mdav only")
    if compat not in ("exact", "sdcmicro"):
        raise ParameterError(f"compat must be exact or sdcmicro, not {compat!r}")
    if compat != "exact" and method != "mdav":
        raise ParameterError(f"compat={compat!r} applies to method mdav, not {method!r}")
    if method == "medoids":
        if weights is not None:
            raise ParameterError("medoid microaggregation takes no weights (a medoid is a record)")
        table, columns, kept, c, _ = numeric_input(data, columns, keep, sensitive, numeric=False)
        gen, record = publication_rng(rng)
        _, published = core.medoid_microaggregation(c, k)
        return categorical_release(table, columns, kept, published,
                                   {"k": int(k), "algorithm": "medoids"}, gen, record,
                                   sensitive=sensitive)  # fmt: skip

    def mask(x: np.ndarray, gen: np.random.Generator, w: np.ndarray | None):
        if method == "mdav":
            out = core.aggregate(
                x, core.mdav(x, k, weights=w, refine=refine, compat=compat), weights=w
            )
        else:
            out = np.column_stack(
                [core.aggregate(x[:, [j]], core.univariate_optimal(x[:, j], k),
                                weights=w)[:, 0]
                 for j in range(x.shape[1])]
            )  # fmt: skip
        params = {"k": int(k), "algorithm": method, **({"refined": True} if refine else {})}
        return out, params if compat == "exact" else {**params, "compat": compat}

    return _release(data, columns, keep, sensitive, rng, "microaggregation", mask, weights)


def add_noise(
    data: Any,
    columns: Sequence[str],
    *,
    noise: float = 150.0,
    method: str = "additive",
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    rng: RngLike | SeedRecord = None,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> MaskedRelease | EngineRelease:
    """Noise added to ``columns`` (:func:`privlab.publish.masking_core.add_noise`):
    ``"additive"`` (uncorrelated), ``"correlated"`` (Brand 2002) or ``"kim"`` (Kim 1986: the
    means and covariances kept), at ``noise`` on sdcMicro's ``addNoise`` scale.
    ``weights``: a column of sampling weights, published unchanged, from which the
    columns' deviations and covariance (the noise's scale) are estimated.

    ``engine``: ``"memory"`` (default), ``"stream"`` (``data`` a Parquet file read
    ``batch_rows`` rows at a time, its rows shuffled through ``buckets`` files:
    :func:`privlab.publish.stream_masking.add_noise_stream`) or ``"spark"`` (``data`` a
    Spark DataFrame or a Parquet path: :func:`privlab.publish.spark_masking.add_noise_spark`);
    ``schema`` declares the kept columns' domains for those two.  They return an
    :class:`~privlab.release.base.EngineRelease` whose ``save()`` writes this release's
    layout and whose ``collect()`` is a :class:`MaskedRelease`.  ``keep`` None keeps no
    column there (a file's columns have no role)."""
    from privlab.publish import masking_core as core

    if _engine(engine, schema, "add_noise") == "stream":
        from privlab.publish.stream_masking import add_noise_stream

        return add_noise_stream(data, columns, noise=noise, method=method, keep=keep,
                                sensitive=sensitive, weights=weights, rng=rng, schema=schema,
                                batch_rows=batch_rows, buckets=buckets)  # fmt: skip
    if engine == "spark":
        from privlab.publish.spark_masking import add_noise_spark

        return add_noise_spark(data, columns, noise=noise, method=method, keep=keep,
                               sensitive=sensitive, weights=weights, rng=rng,
                               schema=schema)  # fmt: skip

    def mask(x: np.ndarray, gen: np.random.Generator, w: np.ndarray | None):
        res = core.add_noise(x, method=method, noise=noise, rng=gen, weights=w,
                             names=list(columns))  # fmt: skip
        return res.masked, {"method": method, "noise": float(noise)}

    return _release(data, columns, keep, sensitive, rng, "noise", mask, weights)


def rank_swap(
    data: Any,
    columns: Sequence[str],
    *,
    p: float = 15.0,
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    rng: RngLike | SeedRecord = None,
) -> MaskedRelease:
    """Rank swapping (Moore 1996; :func:`privlab.publish.masking_core.rank_swap`): each
    value exchanged with one whose rank is within ``p`` percent of the records; every
    column keeps its values, only who holds them changes.  ``weights``: a column of
    sampling weights published unchanged (the swap itself has none: Moore's ranks count
    records); the information loss and the report's risk read them."""
    from privlab.publish import masking_core as core

    def mask(x: np.ndarray, gen: np.random.Generator, w: np.ndarray | None):
        res = core.rank_swap(x, p=p, rng=gen, names=list(columns))
        return res.masked, {"p": float(p)}

    return _release(data, columns, keep, sensitive, rng, "swapping", mask, weights)


def top_bottom_code(
    data: Any,
    columns: Sequence[str],
    *,
    top: float | None = None,
    bottom: float | None = None,
    top_quantile: float | None = None,
    bottom_quantile: float | None = None,
    keep: Sequence[str] | None = None,
    sensitive: str | None = None,
    weights: str | None = None,
    rng: RngLike | SeedRecord = None,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> MaskedRelease | EngineRelease:
    """Top and bottom coding (:func:`privlab.publish.masking_core.top_bottom_code`): values
    above ``top`` (below ``bottom``) replaced by it; a code given as a quantile is read from
    the data, which the published code then reveals (warned).  ``weights``: a column of
    sampling weights published unchanged (the codes do not use them).

    ``engine``, ``schema``, ``batch_rows``, ``buckets``: as for :func:`add_noise`
    (:func:`privlab.publish.stream_masking.top_bottom_code_stream`,
    :func:`privlab.publish.spark_masking.top_bottom_code_spark`); those engines code row by
    row at given codes, and refuse a code given as a quantile (it needs the column
    sorted)."""
    from privlab.publish import masking_core as core

    if _engine(engine, schema, "top_bottom_code") == "stream":
        from privlab.publish.stream_masking import top_bottom_code_stream

        return top_bottom_code_stream(
            data, columns, top=top, bottom=bottom, top_quantile=top_quantile,
            bottom_quantile=bottom_quantile, keep=keep, sensitive=sensitive, weights=weights,
            rng=rng, schema=schema, batch_rows=batch_rows, buckets=buckets,
        )  # fmt: skip
    if engine == "spark":
        from privlab.publish.spark_masking import top_bottom_code_spark

        return top_bottom_code_spark(
            data, columns, top=top, bottom=bottom, top_quantile=top_quantile,
            bottom_quantile=bottom_quantile, keep=keep, sensitive=sensitive, weights=weights,
            rng=rng, schema=schema,
        )  # fmt: skip

    def mask(x: np.ndarray, gen: np.random.Generator, w: np.ndarray | None):
        res = core.top_bottom_code(x, top=top, bottom=bottom, top_quantile=top_quantile,
                                   bottom_quantile=bottom_quantile,
                                   names=list(columns))  # fmt: skip
        d = res.to_dict()
        return res.masked, {k: d[k] for k in ("top", "bottom") if d[k] is not None}

    return _release(data, columns, keep, sensitive, rng, "topcoding", mask, weights)


__all__ = [
    "TECHNIQUES", "MaskedRelease", "add_noise", "categorical_release", "masked_release",
    "microaggregate",
    "numeric_input", "rank_swap", "top_bottom_code",
]  # fmt: skip
