"""Distance-based record linkage (DBRL) of a masked numeric table to its original, and
sdcMicro's interval disclosure test.

**Record linkage** (Pagliuca & Seri 1999, "Some results of individual ranking method on the
system of enterprise accounts annual survey", Esprit SDC project deliverable MI-3/D2;
Domingo-Ferrer & Torra 2001, "A quantitative comparison of disclosure control methods for
microdata", in *Confidentiality, Disclosure and Data Access*, Elsevier: 111-133).  An
intruder holds the original records with identities and links each masked record to the
original record nearest to it.  Masked row ``i`` came from original row ``truth_rows[i]``
(default ``i``); it is *re-identified* when that original is its nearest.  The distance is

* ``metric="standardized"`` (the default, Domingo-Ferrer & Torra's DBRL): Euclidean after
  dividing every column of both tables by the original's standard deviation ``S_j``
  (denominator ``n - 1``).  The sources standardize "the variables" without saying with
  which table's moments; the original's are used for both tables here, so that a masked
  value is compared with an original value on one scale (standardizing each table by its
  own deviation would undo a masking that rescales a column);
* ``metric="mahalanobis"``: ``sqrt((x - y)^T C^{-1} (x - y))`` with ``C`` the original's
  covariance matrix (also denominator ``n - 1``), which discounts correlated columns.
  sdcMicro's ``dRiskRMD`` (Templ & Meindl 2008, "Robust statistics meets SDC: new
  disclosure risk measures for continuous microdata masking", PSD 2008, LNCS 5262:
  113-126) uses *robust* Mahalanobis distances, but only to widen its intervals around the
  original values, not to link records; this is the classical (non-robust) distance of a
  linkage attack.

Ties: when the ``m`` originals nearest to masked row ``i`` lie at the same distance and its
true original is one of them, the intruder who picks one of them at random is right with
probability ``1/m``: the record counts ``1/m`` (its :attr:`RecordLinkage.credit`), otherwise
0.  Distances within a relative ``1e-9`` (plus ``1e-12`` absolute, in standardized units)
of the nearest count as tied, so that rounding does not decide a tie between duplicated
originals.  The re-identification rate is the mean credit, with a Wilson interval
(:func:`privlab.metrics.intervals.rate`, which takes the fractional count) that treats the
masked rows as independent trials.  An intruder linking at random is right with probability
``1 / n_original`` (:attr:`RecordLinkage.chance`).

**Interval disclosure** (sdcMicro's ``dRisk``, ``R/dRisk.R``, after Mateo-Sanz, Sebe &
Domingo-Ferrer 2004's SDID, PSD 2004, LNCS 3050: 201-215): around each masked value
``x'_ij`` the interval ``[x'_ij - k S'_j, x'_ij + k S'_j]`` is built, ``S'_j`` the standard
deviation of the *masked* table's column ``j`` (sdcMicro's code, ``apply(xm, 2, sd)``); a
record is at risk when its original value lies inside the interval (ends included) in every
column, and the measure is the share of records at risk.  sdcMicro's documentation calls
``k`` "percentage of the standard deviation", but it multiplies the deviation by ``k``
itself: its default ``k = 0.05`` is 5 % of the deviation, and so is this function's
``interval_k=0.05``.  The original of masked row ``i`` is ``truth_rows[i]``.

**Computation.**  The nearest originals come from a k-d tree (scikit-learn's
:class:`~sklearn.neighbors.KDTree` on the transformed originals, queried with every masked
row), and the tied ones are counted by a radius query only for the rows whose true original
is at the nearest distance; memory grows with ``n``, never ``n x n``.  Timings:
``benchmarks/bench_record_linkage.py``.

**Refused.**  Tables with different columns; different numbers of rows without
``truth_rows``; missing or infinite values; fewer than two rows; a column constant in the
original (its standardized distance is undefined: drop it first) and, for the Mahalanobis
distance, a singular covariance matrix (collinear columns).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab.errors import ParameterError
from privlab.metrics.intervals import Estimate, rate
from privlab.metrics.numeric_utility import numeric_table

METRICS = ("standardized", "mahalanobis")
#: relative and absolute tolerance under which two distances count as tied
TIE_RTOL = 1e-9
TIE_ATOL = 1e-12


@dataclass(frozen=True, eq=False)
class RecordLinkage(ToFrames):
    """Distance-based record linkage of a masked table (:func:`record_linkage`).

    ``rate``: the re-identification rate (mean credit) with its Wilson interval;
    ``credit[i]``: 1/m when masked row ``i``'s true original is among its ``m`` tied
    nearest originals, else 0; ``nearest[i]``: one nearest original row (the tree's pick
    among tied ones); ``interval_at_risk[i]``: whether the original lies in sdcMicro's
    interval around masked row ``i`` in every column, ``interval_share`` their share.
    """

    rate: Estimate
    credit: np.ndarray = field(repr=False)
    nearest: np.ndarray = field(repr=False)
    interval_at_risk: np.ndarray = field(repr=False)
    interval_share: float
    interval_k: float
    metric: str
    n_original: int
    n_masked: int
    p: int

    @property
    def linked(self) -> np.ndarray:
        """Whether each masked row's true original is among its nearest (credit > 0)."""
        return self.credit > 0

    @property
    def chance(self) -> float:
        """The rate of an intruder who links every masked row to a random original."""
        return 1.0 / self.n_original

    @property
    def tied(self) -> int:
        """Masked rows whose true original is tied with another at the nearest distance."""
        return int(((self.credit > 0) & (self.credit < 1)).sum())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-record arrays: :meth:`to_pandas` has them)."""
        return {
            "metric": self.metric,
            "n_original": self.n_original,
            "n_masked": self.n_masked,
            "p": self.p,
            "rate": self.rate.to_dict(),
            "linked": int(self.linked.sum()),
            "tied": self.tied,
            "chance": self.chance,
            "interval_disclosure": {"k": self.interval_k, "share": self.interval_share},
        }

    def to_pandas(self):
        """One row per masked row: ``credit``, ``linked``, ``nearest``,
        ``interval_at_risk``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "credit": self.credit,
                "linked": self.linked,
                "nearest": self.nearest,
                "interval_at_risk": self.interval_at_risk,
            }
        )


def record_linkage(
    original: Any,
    masked: Any,
    *,
    truth_rows: Any = None,
    metric: str = "standardized",
    interval_k: float = 0.05,
    level: float = 0.95,
) -> RecordLinkage:
    """Link every masked record to its nearest original record; the share re-identified,
    and sdcMicro's interval disclosure share.

    Definitions, and where they follow or leave the sources: :mod:`privlab.attacks.record_linkage`.

    Parameters
    ----------
    original
        ``n x p`` array of finite numbers (a numeric DataFrame will do; a 1-D array is one
        column): the intruder's identified records.
    masked
        ``n' x p`` array: the masked records, in any order.
    truth_rows
        ``n'`` integers in ``[0, n)``: masked row ``i`` is the masked copy of original row
        ``truth_rows[i]``.  Default: row ``i`` of each (then ``n' = n``).
    metric
        ``"standardized"`` (Euclidean on columns over the original's standard deviations)
        or ``"mahalanobis"`` (the original's covariance).
    interval_k
        sdcMicro's ``dRisk`` ``k``: the interval's half-width as a multiple of the masked
        column's standard deviation (0.05: 5 %).  Must be >= 0.
    level
        Confidence level of the rate's Wilson interval.

    Returns
    -------
    RecordLinkage
    """
    if metric not in METRICS:
        raise ParameterError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    if (
        isinstance(interval_k, bool)
        or not isinstance(interval_k, (int, float))
        or not math.isfinite(interval_k)
        or interval_k < 0
    ):
        raise ParameterError(f"interval_k must be a finite number >= 0, got {interval_k!r}")
    x = numeric_table(original, "original")
    xm = numeric_table(masked, "masked")
    n, p = x.shape
    if xm.shape[1] != p:
        raise ParameterError(
            f"the original table has {p} column(s) but the masked one has {xm.shape[1]}"
        )
    truth = _truth(truth_rows, n, xm.shape[0])
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ParameterError(f"level must lie in (0, 1), got {level!r}")

    z, zm = _transform(x, xm, metric)
    from sklearn.neighbors import KDTree

    tree = KDTree(z)
    d_min, idx = tree.query(zm, k=1)
    d_min, nearest = d_min[:, 0], idx[:, 0]
    d_true = np.sqrt(((zm - z[truth]) ** 2).sum(axis=1))
    radius = d_min * (1.0 + TIE_RTOL) + TIE_ATOL
    credit = np.zeros(len(zm))
    candidates = np.flatnonzero(d_true <= radius)
    if candidates.size:
        tied = tree.query_radius(zm[candidates], radius[candidates], count_only=True)
        credit[candidates] = 1.0 / np.maximum(tied, 1)

    sd_m = xm.std(axis=0, ddof=1)
    half = interval_k * sd_m
    at_risk = (np.abs(x[truth] - xm) <= half).all(axis=1)
    return RecordLinkage(
        rate=rate(float(credit.sum()), len(zm), level),
        credit=credit,
        nearest=nearest.astype(np.int64),
        interval_at_risk=at_risk,
        interval_share=float(at_risk.mean()),
        interval_k=float(interval_k),
        metric=metric,
        n_original=n,
        n_masked=len(zm),
        p=p,
    )


def _truth(truth_rows: Any, n: int, n_masked: int) -> np.ndarray:
    if truth_rows is None:
        if n_masked != n:
            raise ParameterError(
                f"the original table has {n} rows but the masked one has {n_masked}: say "
                "which original each masked row came from (truth_rows)"
            )
        return np.arange(n)
    t = np.asarray(truth_rows)
    if t.ndim != 1 or t.size != n_masked:
        raise ParameterError(f"truth_rows must hold one row number per masked row ({n_masked})")
    if t.dtype.kind not in "iu":
        if t.dtype.kind != "f" or not np.all(np.isfinite(t)) or np.any(t != np.round(t)):
            raise ParameterError("truth_rows must be whole row numbers")
    t = t.astype(np.int64)
    if t.size and (t.min() < 0 or t.max() >= n):
        raise ParameterError(f"truth_rows must lie in [0, {n}), the original's rows")
    return t


def _transform(x: np.ndarray, xm: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Both tables in coordinates where the distance is Euclidean."""
    sd = x.std(axis=0, ddof=1)
    if (sd == 0).any():
        j = int(np.flatnonzero(sd == 0)[0])
        raise ParameterError(
            f"column {j} is constant in the original: its standardized distance is "
            "undefined (drop it)"
        )
    if metric == "standardized":
        return x / sd, xm / sd
    # Mahalanobis: with C = L L^T, |L^{-1} (x - y)|^2 = (x - y)^T C^{-1} (x - y); the
    # columns are standardized first so that the condition check is scale-free
    xs, xms = x / sd, xm / sd
    cor = np.atleast_2d(np.cov(xs, rowvar=False))
    try:
        chol = np.linalg.cholesky(cor)
    except np.linalg.LinAlgError:
        chol = None
    if chol is None or np.linalg.cond(cor) > 1e12:
        raise ParameterError(
            "the original's covariance matrix is singular (collinear columns): the "
            "Mahalanobis distance is undefined (drop a column or use metric='standardized')"
        )
    from scipy.linalg import solve_triangular

    inv = solve_triangular(chol, np.eye(len(chol)), lower=True)  # L^{-1}
    return xs @ inv.T, xms @ inv.T


def hamming_linkage(original: Any, masked: Any, *, level: float = 0.95) -> RecordLinkage:
    """Record linkage of categorical records (a medoid microaggregation): each masked
    record linked to the original records at the least Hamming distance from it (the
    number of columns in which they differ), masked row ``i`` being the copy of original
    row ``i``.

    The credit of row ``i`` is ``1/m`` when its original is among the ``m`` originals at
    the least distance, else 0; the rate is their mean with a Wilson interval, as in
    :func:`record_linkage`.  Categories have no interval, so the interval-disclosure
    measure is the share of records published unchanged (an interval of width 0:
    ``interval_k = 0``).  The distances are taken between distinct combinations (of the
    originals and of the masked records), so the cost grows with their numbers, not with
    ``n^2``.

    Parameters
    ----------
    original, masked
        ``(n, p)`` integer codes in one coding (a value has the same code in both).
    level
        Confidence level of the rate's Wilson interval.
    """
    x = np.asarray(original)
    xm = np.asarray(masked)
    if x.ndim != 2 or x.shape != xm.shape or x.shape[0] < 1:
        raise ParameterError(
            f"original and masked codes must be two (n, p) arrays of one shape, got "
            f"{x.shape} and {xm.shape}"
        )
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ParameterError(f"level must lie in (0, 1), got {level!r}")
    uo, first, counts = np.unique(x, axis=0, return_index=True, return_counts=True)
    um, inv_m = np.unique(xm, axis=0, return_inverse=True)
    inv_m = inv_m.ravel()
    best = np.empty(um.shape[0], np.int64)
    tied = np.empty(um.shape[0], np.int64)
    pick = np.empty(um.shape[0], np.int64)
    for lo in range(0, um.shape[0], 256):  # bounded memory: 256 x |uo| x p at a time
        d = (um[lo : lo + 256, None, :] != uo[None, :, :]).sum(axis=2)
        best[lo : lo + 256] = d.min(axis=1)
        at = d == best[lo : lo + 256, None]
        tied[lo : lo + 256] = at @ counts
        pick[lo : lo + 256] = first[at.argmax(axis=1)]
    d_true = (x != xm).sum(axis=1)
    credit = np.where(d_true == best[inv_m], 1.0 / tied[inv_m], 0.0)
    same = (x == xm).all(axis=1)
    n = x.shape[0]
    return RecordLinkage(
        rate=rate(float(credit.sum()), n, level),
        credit=credit,
        nearest=pick[inv_m].astype(np.int64),
        interval_at_risk=same,
        interval_share=float(same.mean()),
        interval_k=0.0,
        metric="hamming",
        n_original=n,
        n_masked=n,
        p=x.shape[1],
    )
