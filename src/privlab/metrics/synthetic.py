"""How close synthetic records lie to the records they were made from: the distance to the
closest record (DCR), the share of exact copies, the nearest-neighbour distance ratio (NNDR)
and, with a holdout (control) set, the share of synthetic records closer to the training set
than to the holdout (SDMetrics' ``DCROverfittingProtection``).

**Distance** (SDMetrics' ``sdmetrics/single_table/privacy/dcr_utils.py``, ``calculate_dcr``,
read at commit ``54362a3``, 0.29.1.dev0; the distance of ``DCRBaselineProtection`` and
``DCROverfittingProtection``): between a synthetic row ``a`` and a real row ``b`` over the
``p`` compared columns,

``D(a, b) = (1/p) [ sum_numeric min(|a_j - b_j| / r_j, 1) + sum_categorical 1(a_j != b_j) ]``

with ``r_j = max - min`` of column ``j`` in the *original* (training) table.  It is Gower's
(1971) mixed-data distance with range scaling, capped at 1 per column so that a synthetic
value beyond the original's range weighs at most as much as a categorical mismatch; it lies
in [0, 1] and is 0 exactly when the rows agree on every column.  A numeric column constant in
the original (``r_j = 0``) counts as SDMetrics counts it: 1 when the values differ, else 0.
Min-max scaling followed by a Euclidean distance (the other usual choice) is not used: it
mixes badly with 0/1 categorical mismatches and has no cap.  The DCR of a synthetic row is
``min_b D(a, b)``; the NNDR is the DCR over the distance to the second-closest original row
(``0/0`` -- a copy of a duplicated original row -- is 1: the row is not closer to one
original record than to another; its copy shows in the exact-match share).
:func:`distance_to_nearest` gives any query row's distance to the nearest row of a reference
table, on the reference's ranges (the membership-inference attack's distance).

Where SDMetrics is loose or differs:

* ``DCROverfittingProtection`` scales the distances to the holdout by the *holdout's* ranges
  (``calculate_dcr`` takes them from its reference table), so the two distances it compares
  are on different scales; here both use the training table's ranges.
* A synthetic row counts as closer to training when its DCR to training is strictly smaller
  than to the holdout (SDMetrics' ``dcr_real < dcr_holdout``): ties count as closer to the
  holdout.  Ties are common with categorical columns; :attr:`DistanceToClosestRecord.ties`
  reports their share.  SDMetrics' score is ``min(2 (1 - share), 1)``, ideal 1 at share 0.5.
* Share 0.5 is what to expect from a generator that did not memorize only when the training
  and holdout sets have the same size: for a synthetic row independent of both, each of the
  ``n_t + n_h`` real rows is equally likely the closest, so the expected share is
  ``n_t / (n_t + n_h)`` (exact for continuous data, where distances do not tie); the test
  of :attr:`DistanceToClosestRecord.p_value` is against that share, the interval is
  Clopper-Pearson's (``scipy.stats.binomtest``), treating the synthetic rows as independent.
* SDMetrics treats missing values as values (two missing values agree); here a missing value
  in a numeric column is refused and a categorical one is a category of its own.

**Computation.**  Exactly, over every pair of rows: a compiled pass
(:mod:`privlab.metrics._nearest_kernel`, numba, parallel over the query rows) sums each
pair's capped numeric terms and categorical mismatches and keeps each query row's ``k``
smallest sums in a small sorted buffer; no ``n x m`` matrix is held.  (It replaced a k-d tree
on one-hot features, which was exact only inside the original's bounding box and needed a
second pass for the rows outside: on Adult, a DCR with a control took 247 s that way and
takes 3.6 s, on 2 busy cores.)
Timings: ``benchmarks/bench_synthetic_dcr.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab.errors import ParameterError


@dataclass(frozen=True, eq=False)
class DistanceToClosestRecord(ToFrames):
    """The distances of every synthetic row (:func:`distance_to_closest_record`).

    ``dcr[i]``: distance of synthetic row ``i`` to its closest original row; ``second[i]``:
    to the second closest; ``dcr_control[i]``: to the closest control (holdout) row, when a
    control was given.  Distances are means over the compared columns, in [0, 1]."""

    dcr: np.ndarray = field(repr=False)
    second: np.ndarray = field(repr=False)
    dcr_control: np.ndarray | None = field(repr=False)
    columns: tuple[str, ...]
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    ranges: tuple[float, ...]
    n_original: int
    n_control: int | None
    level: float = 0.95

    @property
    def n(self) -> int:
        return int(self.dcr.shape[0])

    @property
    def nndr(self) -> np.ndarray:
        """Nearest over second-nearest distance (``0/0`` is 1)."""
        both_zero = self.second == 0
        return np.where(both_zero, 1.0, self.dcr / np.where(both_zero, 1.0, self.second))

    @property
    def exact_match(self) -> np.ndarray:
        """Whether each synthetic row equals an original row on every compared column."""
        return self.dcr == 0

    @property
    def exact_match_share(self) -> float:
        return float(self.exact_match.mean())

    @property
    def closer(self) -> np.ndarray | None:
        """Whether each synthetic row is strictly closer to the original than to the control."""
        return None if self.dcr_control is None else self.dcr < self.dcr_control

    @property
    def ties(self) -> float | None:
        """The share of synthetic rows as close to the control as to the original."""
        return None if self.dcr_control is None else float((self.dcr == self.dcr_control).mean())

    @property
    def expected_share(self) -> float | None:
        """``n_original / (n_original + n_control)``: the closer-to-training share expected
        from synthetic rows independent of both sets (0.5 for sets of one size)."""
        if self.n_control is None:
            return None
        return self.n_original / (self.n_original + self.n_control)

    def _test(self) -> Any:
        from scipy.stats import binomtest

        closer = self.closer
        if closer is None:
            return None
        return binomtest(int(closer.sum()), self.n, self.expected_share)

    @property
    def closer_to_training(self) -> tuple[float, float, float] | None:
        """The share of synthetic rows strictly closer to the original (training) set than
        to the control, with its Clopper-Pearson interval at :attr:`level`:
        ``(share, low, high)``."""
        test = self._test()
        if test is None:
            return None
        ci = test.proportion_ci(confidence_level=self.level, method="exact")
        return float(test.statistic), float(ci.low), float(ci.high)

    @property
    def p_value(self) -> float | None:
        """Two-sided exact binomial test of the closer-to-training share against
        :attr:`expected_share`."""
        test = self._test()
        return None if test is None else float(test.pvalue)

    @property
    def overfitting_protection(self) -> float | None:
        """SDMetrics' ``DCROverfittingProtection`` score, ``min(2 (1 - share), 1)``."""
        share = self.closer_to_training
        return None if share is None else min(2.0 * (1.0 - share[0]), 1.0)

    def to_dict(self) -> dict[str, object]:
        def summary(x: np.ndarray) -> dict[str, float]:
            return {
                "mean": float(x.mean()),
                "min": float(x.min()),
                "p05": float(np.quantile(x, 0.05)),
                "median": float(np.median(x)),
            }

        out: dict[str, object] = {
            "n_synthetic": self.n,
            "n_original": self.n_original,
            "n_control": self.n_control,
            "columns": list(self.columns),
            "numeric": list(self.numeric),
            "categorical": list(self.categorical),
            "dcr": summary(self.dcr),
            "exact_match_share": self.exact_match_share,
            "nndr": summary(self.nndr),
        }
        share = self.closer_to_training
        if share is not None and self.dcr_control is not None:
            out["dcr_control"] = summary(self.dcr_control)
            out["closer_to_training"] = {
                "share": share[0],
                "low": share[1],
                "high": share[2],
                "level": self.level,
                "expected": self.expected_share,
                "p_value": self.p_value,
                "ties": self.ties,
                "overfitting_protection": self.overfitting_protection,
            }
        return out

    def to_pandas(self):
        """One row per synthetic row: ``dcr``, ``second``, ``nndr``, ``exact_match`` (and
        ``dcr_control``, ``closer_to_training`` with a control)."""
        cols: dict[str, Any] = {
            "dcr": self.dcr,
            "second": self.second,
            "nndr": self.nndr,
            "exact_match": self.exact_match,
        }
        if self.dcr_control is not None:
            cols["dcr_control"] = self.dcr_control
            cols["closer_to_training"] = self.closer
        return pd.DataFrame(cols)


def _as_pandas(data: Any, what: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        return (data.collect() if hasattr(data, "collect") else data).to_pandas()
    if module == "pyarrow" and hasattr(data, "column_names"):
        return data.to_pandas()
    raise ParameterError(
        f"the {what} table must be a pandas or polars DataFrame or a pyarrow Table, "
        f"not {type(data).__name__}"
    )


@dataclass(frozen=True)
class _Encoded:
    """A table's compared columns: numeric values over their range, categorical codes, and
    whether each row lies in the original's bounding box (where no numeric term reaches the
    cap; the exact search does not need it)."""

    num: np.ndarray
    cat: np.ndarray
    inside: np.ndarray


def distance_to_closest_record(
    synthetic: Any,
    original: Any,
    *,
    control: Any = None,
    columns: list[str] | tuple[str, ...] | None = None,
    numeric: list[str] | tuple[str, ...] | None = None,
    categorical: list[str] | tuple[str, ...] | None = None,
    level: float = 0.95,
    algorithm: str = "kd_tree",
) -> DistanceToClosestRecord:
    """Every synthetic row's distance to the closest original row (and control row).

    Definitions, and where they follow or leave SDMetrics: :mod:`privlab.metrics.synthetic`.

    Parameters
    ----------
    synthetic, original
        The synthetic table and the real (training) table it was made from: pandas or polars
        DataFrames or pyarrow Tables.  The original needs two rows (for the NNDR).
    control
        A real holdout table not used to make the synthetic one (SDMetrics'
        ``real_validation_data``): adds each synthetic row's distance to it and the
        closer-to-training share.
    columns
        The columns compared (default: those the tables share, in the original's order).
    numeric, categorical
        Which of them are numeric (range-scaled) and which categorical (0/1 mismatch).  By
        default a column of numbers (not booleans) in the original is numeric, any other
        categorical; naming one list makes the other the remaining columns.
    level
        Confidence level of the closer-to-training interval.
    algorithm
        Accepted for compatibility and no longer used (``"kd_tree"``, ``"ball_tree"``,
        ``"brute"`` or ``"auto"``; any other is refused): it named scikit-learn's
        ``NearestNeighbors`` search, now replaced by an exact compiled pass over every pair
        (the module's **Computation**), which gives the same distances.
    """
    syn = _as_pandas(synthetic, "synthetic")
    orig = _as_pandas(original, "original")
    ctrl = None if control is None else _as_pandas(control, "control")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ParameterError(f"level must lie in (0, 1), got {level!r}")
    if algorithm not in ("kd_tree", "ball_tree", "brute", "auto"):
        raise ParameterError(
            f"algorithm must be kd_tree, ball_tree, brute or auto, got {algorithm!r}"
        )
    tables = {"synthetic": syn, "original": orig} | ({} if ctrl is None else {"control": ctrl})
    cols = _compared_columns(tables, columns, "original")
    if len(orig) < 2:
        raise ParameterError("the original table needs at least 2 rows (NNDR's second neighbour)")
    num_cols, cat_cols = _split_columns(orig, cols, numeric, categorical)
    enc, n_cats, ranges = _encode(tables, num_cols, cat_cols, "original")
    p = len(cols)
    two = _nearest(enc["synthetic"], enc["original"], 2, n_cats, algorithm) / p
    dcr_control = None
    if "control" in enc:
        dcr_control = _nearest(enc["synthetic"], enc["control"], 1, n_cats, algorithm)[:, 0] / p
    return DistanceToClosestRecord(
        dcr=two[:, 0],
        second=two[:, 1],
        dcr_control=dcr_control,
        columns=cols,
        numeric=tuple(num_cols),
        categorical=tuple(cat_cols),
        ranges=tuple(ranges),
        n_original=len(orig),
        n_control=None if ctrl is None else len(ctrl),
        level=float(level),
    )


def distance_to_nearest(
    query: Any,
    reference: Any,
    *,
    columns: list[str] | tuple[str, ...] | None = None,
    numeric: list[str] | tuple[str, ...] | None = None,
    categorical: list[str] | tuple[str, ...] | None = None,
    algorithm: str = "kd_tree",
) -> np.ndarray:
    """Each query row's distance ``D`` to its nearest reference row, with the *reference's*
    ranges (the module's distance; :func:`distance_to_closest_record` is this with the
    synthetic rows as queries and the original as reference).

    Used by :func:`privlab.attacks.membership_inference.membership_inference`, where the
    reference is the synthetic table (the one table its attacker holds) and the queries are
    real people.

    Parameters
    ----------
    query, reference
        pandas or polars DataFrames or pyarrow Tables, each with at least one row.
    columns, numeric, categorical, algorithm
        As for :func:`distance_to_closest_record`; the numeric columns are by default the
        reference's columns of numbers.

    Returns
    -------
    numpy.ndarray
        ``len(query)`` distances in [0, 1], in the query's row order.
    """
    q = _as_pandas(query, "query")
    ref = _as_pandas(reference, "reference")
    if algorithm not in ("kd_tree", "ball_tree", "brute", "auto"):
        raise ParameterError(
            f"algorithm must be kd_tree, ball_tree, brute or auto, got {algorithm!r}"
        )
    tables = {"query": q, "reference": ref}
    cols = _compared_columns(tables, columns, "reference")
    num_cols, cat_cols = _split_columns(ref, cols, numeric, categorical)
    enc, n_cats, _ = _encode(tables, num_cols, cat_cols, "reference")
    return _nearest(enc["query"], enc["reference"], 1, n_cats, algorithm)[:, 0] / len(cols)


def _compared_columns(
    tables: dict[str, pd.DataFrame], columns: list[str] | tuple[str, ...] | None, base: str
) -> tuple[str, ...]:
    """The columns compared: ``columns``, checked against every table, or by default those
    every table has, in ``base``'s order; every table must have a row."""
    if columns is None:
        shared = set.intersection(*(set(t.columns) for t in tables.values()))
        cols = tuple(str(c) for c in tables[base].columns if c in shared)
        if not cols:
            raise ParameterError("the tables share no column to compare")
    else:
        cols = tuple(columns)
        if not cols:
            raise ParameterError("columns is empty: name at least one column to compare")
        if len(set(cols)) != len(cols):
            raise ParameterError(f"columns names a column twice: {list(cols)}")
        for what, t in tables.items():
            missing = [c for c in cols if c not in t.columns]
            if missing:
                raise ParameterError(f"the {what} table has no column {missing[0]!r}")
    for what, t in tables.items():
        if len(t) == 0:
            raise ParameterError(f"the {what} table is empty")
    return cols


def _encode(
    tables: dict[str, pd.DataFrame], num_cols: list[str], cat_cols: list[str], base: str
) -> tuple[dict[str, _Encoded], np.ndarray, list[float]]:
    """Every table's compared columns encoded on ``base``'s ranges (numeric values over the
    range, a numeric column constant in ``base`` compared as a category; categorical codes
    over the union of the tables), the number of categories of each coded column, and the
    ranges of the range-scaled columns."""
    ranges: list[float] = []
    scaled: dict[str, list[np.ndarray]] = {w: [] for w in tables}
    as_category: list[str] = []
    for c in num_cols:
        values = {}
        for what, t in tables.items():
            try:
                v = pd.to_numeric(t[c], errors="raise").to_numpy(dtype=np.float64)
            except (ValueError, TypeError):
                raise ParameterError(f"numeric column {c!r} of the {what} table holds "
                                     "non-numbers") from None  # fmt: skip
            if not np.isfinite(v).all():
                raise ParameterError(
                    f"numeric column {c!r} of the {what} table holds missing or infinite values"
                )
            values[what] = v
        lo, hi = float(values[base].min()), float(values[base].max())
        if hi == lo:
            as_category.append(c)
            continue
        ranges.append(hi - lo)
        for what in tables:
            scaled[what].append(values[what] / (hi - lo))
    kept_num = tuple(c for c in num_cols if c not in as_category)
    ref = tables[base]
    box = (
        np.array([float(ref[c].min()) for c in kept_num]) / np.array(ranges),
        np.array([float(ref[c].max()) for c in kept_num]) / np.array(ranges),
    )
    codes: dict[str, list[np.ndarray]] = {w: [] for w in tables}
    sizes: list[int] = []
    for c in (*cat_cols, *as_category):
        joined = pd.concat([t[c] for t in tables.values()], ignore_index=True)
        if c in as_category:
            joined = pd.to_numeric(joined).astype(np.float64)
        coded, uniques = pd.factorize(joined, use_na_sentinel=False)
        sizes.append(len(uniques))
        start = 0
        for what, t in tables.items():
            codes[what].append(coded[start : start + len(t)])
            start += len(t)

    def encode(what: str) -> _Encoded:
        n = len(tables[what])
        num = np.column_stack(scaled[what]) if scaled[what] else np.zeros((n, 0))
        cat = np.column_stack(codes[what]) if codes[what] else np.zeros((n, 0), dtype=np.int64)
        inside = ((num >= box[0]) & (num <= box[1])).all(axis=1)
        return _Encoded(num, cat.astype(np.int64), inside)

    return {what: encode(what) for what in tables}, np.asarray(sizes, dtype=np.int64), ranges


def _split_columns(
    orig: pd.DataFrame,
    cols: tuple[str, ...],
    numeric: list[str] | tuple[str, ...] | None,
    categorical: list[str] | tuple[str, ...] | None,
) -> tuple[list[str], list[str]]:
    for name, given in (("numeric", numeric), ("categorical", categorical)):
        if given is not None:
            stray = [c for c in given if c not in cols]
            if stray:
                raise ParameterError(f"{name} column {stray[0]!r} is not a column compared")
    if numeric is not None and categorical is not None:
        both = [c for c in numeric if c in categorical]
        if both:
            raise ParameterError(f"column {both[0]!r} is named both numeric and categorical")
        rest = [c for c in cols if c not in numeric and c not in categorical]
        if rest:
            raise ParameterError(f"column {rest[0]!r} is named neither numeric nor categorical")
        num = set(numeric)
    elif numeric is not None:
        num = set(numeric)
    elif categorical is not None:
        num = set(cols) - set(categorical)
    else:
        num = {
            c
            for c in cols
            if pd.api.types.is_numeric_dtype(orig[c]) and not pd.api.types.is_bool_dtype(orig[c])
        }
    return [c for c in cols if c in num], [c for c in cols if c not in num]


def _nearest(
    q: _Encoded, r: _Encoded, k: int, n_cats: np.ndarray | None = None, algorithm: str = ""
) -> np.ndarray:
    """The ``k`` smallest ``p D`` from every query row to the reference rows (ascending,
    ``inf`` past the reference's rows): exactly, every per-column term capped at 1, by the
    compiled pass of :mod:`privlab.metrics._nearest_kernel`.  ``n_cats`` and ``algorithm``
    are not used (they served a former k-d tree search)."""
    from privlab.metrics import _nearest_kernel as kernel

    return kernel.nearest_distances(
        np.ascontiguousarray(q.num, dtype=np.float64),
        np.ascontiguousarray(q.cat, dtype=np.int64),
        np.ascontiguousarray(r.num.T, dtype=np.float64),
        np.ascontiguousarray(r.cat.T, dtype=np.int64),
        int(k),
        int(kernel.TILE),
    )
