"""Information loss of a masked numeric table against its original, as sdcMicro measures it
(``dUtility`` and ``summary.micro``), and the propensity-score utility pMSE.

The original ``X`` and the masked ``X'`` are ``n x p`` tables of finite numbers whose row
``i`` is the same record before and after masking.  ``S_j`` is the standard deviation of the
original's column ``j`` (denominator ``n - 1``, R's ``sd``), ``m_j`` its mean, ``C`` and
``R`` its covariance and correlation matrices (``m'``, ``C'``, ``R'`` the masked table's).

* **IL1s** (Yancey, Winkler & Creecy 2002, "Disclosure risk assessment in perturbative
  microdata protection", LNCS 2316: 135-152; Mateo-Sanz, Sebe & Domingo-Ferrer 2004,
  "Outlier protection in continuous microdata masking", PSD 2004, LNCS 3050: 201-215):
  ``IL1s = sum_i sum_j |x_ij - x'_ij| / (sqrt(2) S_j)``.  sdcMicro's ``dUtility(method =
  "IL1s")`` (``R/dUtility.R``, ``dUtilityWORK``) returns this *sum*, which grows with ``n``
  and ``p``; the papers' IL1 is the mean over the ``n p`` cells, sdcMicro's ``"IL1old"``:
  :attr:`NumericUtility.il1s_mean` ``= IL1s / (n p)``.  Both are given.
* **Eigenvalues** (sdcMicro's ``"eigen"``): with ``e_1 >= ... >= e_p`` the eigenvalues of
  the original's correlation matrix (R's ``eigen(var(scale(x)))``: each table scaled by its
  own means and deviations) and ``e'`` the masked table's,
  ``sum_j |e_j - e'_j| / e_j``.  An original with collinear columns has ``e_p = 0``: the
  measure is then infinite (sdcMicro's ``NA`` from a failed division is not reproduced).
* **Means, covariances, correlations** (sdcMicro's ``summary.micro``, ``R/microaggregation.R``:
  ``amean``, ``acov``, ``acor``; Templ 2008, "Statistical disclosure control for microdata
  using the R-package sdcMicro", Transactions on Data Privacy 1(2): 67-85):
  ``amean = sum_j |m_j - m'_j| / |m_j|``, ``acov = sum_{j,k} |C_jk - C'_jk| / |C_jk| / (2p)``
  and ``acor`` the same of ``R``.  sdcMicro calls them "average relative absolute
  deviations", but the scales are loose: ``amean`` is a sum over the columns, not a mean,
  and ``acov`` / ``acor`` divide the ``p^2`` entries of the full (symmetric) matrix, each
  off-diagonal pair counted twice, by ``2p`` (neither ``p^2`` nor ``p(p+1)/2``).  They are
  reproduced as sdcMicro computes them; the per-column relative deviations of the means
  (:attr:`NumericUtility.mean_relative`) are given besides.  sdcMicro's ``devvar`` is
  ``2 acov`` (it divides the same sum by ``p``) and is not repeated.  Relative changes make
  an entry near 0 (two nearly uncorrelated columns) weigh heavily.  A zero entry of the
  original divides by zero: here ``0/0`` (an entry preserved exactly) counts 0 and ``x/0``
  with ``x > 0`` counts infinity, where R would give ``NaN`` / ``Inf`` and a sum of ``NaN``.
* **pMSE** (Woo, Reiter, Oganian & Karr 2009, "Global measures of data utility for
  microdata masked for disclosure limitation", J. Privacy and Confidentiality 1(1): 111-124;
  Snoke, Raab, Nowok, Dibben & Slavkovic 2018, "General and specific utility measures for
  synthetic data", JRSS A 181(3): 663-688): the ``N = n + n'`` rows of both tables are
  stacked with a label 1 for the masked rows, a logistic regression with an intercept and
  the ``p`` main effects (with ``interactions=True`` also the ``p(p-1)/2`` products
  ``x_j x_k``, ``j < k``; no squares) is fitted by maximum likelihood (scikit-learn's
  ``LogisticRegression`` with ``C = inf``: no penalty), and ``pMSE = (1/N) sum_i (p^_i -
  c)^2`` with ``c = n' / N`` (here ``1/2``).  Its null expectation, for a logistic model
  with ``k`` parameters (intercept included), is ``(k - 1)(1 - c)^2 c / N`` (Snoke et al.
  2018, eq. (4), as issue 35 cites it; synthpop's ``utility.gen`` reports the same, its
  ``utilExp = k - 1`` on the scale ``pMSE N^4 / (n^2 n')``), and
  :attr:`NumericUtility.pmse_ratio` is the pMSE over it.  Where the source is loose: that
  expectation holds for a masked (synthetic) table drawn from a correct model *fitted to
  the original*, whose moments differ from the original's by the masked table's sampling
  error only.  Two *independent* samples from one distribution differ by both samples'
  errors: ``N pMSE / (c (1 - c))`` is then asymptotically ``chi^2_{k-1}`` (the fitted
  logit is linear in the ``k - 1`` estimated slopes, whose Wald statistic it is), an
  expectation ``1 / (1 - c)`` times Snoke's, twice it here, so a fresh independent draw
  has a ratio near 2 (synthpop halves its permutation nulls for the logit model for this
  reason).  A masked table *identical* to the original gives pMSE 0, below either null:
  each row appears once with either label, so the fitted model is the constant ``c``.  The
  features are the columns scaled by the stacked table's mean and deviation before the
  products are formed (the maximum-likelihood fit is invariant to it; the solver converges
  better).  A logistic fit on separable tables (a masked table far from the original) has
  no finite maximum: the fit stops at :data:`MAX_ITER` iterations,
  :attr:`NumericUtility.pmse_converged` is False and the pMSE is close to its maximum ``c
  (1 - c)``.

**Weights.**  ``weights`` are the records' frequency (or sampling) weights, one per row,
shared by the original and masked copy of a record.  Every quantity is computed as if record
``i`` occurred ``w_i`` times: weighted means, covariances ``sum w (x - m)(x - m)^T / (sum w
- 1)`` (so integer weights equal replicating the rows), ``S_j`` from them, IL1s ``= sum_i
w_i sum_j ...`` (the mean divides by ``p sum w``), and the pMSE's logistic fit and mean with
the weights as ``sample_weight``.  sdcMicro's ``dUtility`` takes no weights; unit weights
reproduce it.  The pMSE's null expectation assumes independent rows: with weights that are
not all equal it is not defined (nan).

**Refused.**  Tables of different shapes (sdcMicro truncates the masked one with a warning),
missing or infinite values, fewer than two rows, and a column constant in the original
(``S_j = 0``: IL1s and the correlations are undefined; drop the column first).  A column
constant in the *masked* table is accepted: its correlations are undefined, so ``acor`` and
the eigenvalue measure are nan (as R's ``cor`` gives ``NA``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab.errors import ParameterError

#: iterations allowed to scikit-learn's lbfgs for the pMSE's logistic fit
MAX_ITER = 1000


@dataclass(frozen=True, eq=False)
class NumericUtility(ToFrames):
    """sdcMicro's information-loss measures and the pMSE of a masked numeric table
    (:func:`numeric_utility`; definitions in :mod:`privlab.metrics.numeric_utility`).

    ``il1s`` is sdcMicro's sum, ``il1s_mean`` the papers' per-cell mean; ``eigen``,
    ``amean``, ``acov`` and ``acor`` are on sdcMicro's scales; ``mean_relative[j]`` is
    ``|m_j - m'_j| / |m_j|`` and ``il1s_columns[j]`` column ``j``'s share of ``il1s``.
    ``pmse_computed`` is False when the measures came from moments alone
    (:func:`utility_from_moments`): the pMSE fields are then nan.
    """

    il1s: float
    il1s_mean: float
    il1s_columns: np.ndarray = field(repr=False)
    eigen: float
    amean: float
    mean_relative: np.ndarray = field(repr=False)
    acov: float
    acor: float
    pmse: float
    pmse_null: float
    pmse_parameters: int
    pmse_converged: bool
    interactions: bool
    n: int
    p: int
    weighted: bool
    pmse_computed: bool = True

    @property
    def pmse_ratio(self) -> float:
        """pMSE over Snoke et al.'s null expectation (their pMSE ratio: about 1 for a table
        drawn from a correct model fitted to the original, about 2 for an independent
        sample; nan when the null is undefined)."""
        if not math.isfinite(self.pmse_null) or self.pmse_null <= 0:
            return float("nan")
        return self.pmse / self.pmse_null

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (nan and infinity become None)."""
        return {
            "n": self.n,
            "p": self.p,
            "weighted": self.weighted,
            "il1s": _json(self.il1s),
            "il1s_mean": _json(self.il1s_mean),
            "il1s_columns": [_json(v) for v in self.il1s_columns],
            "eigen": _json(self.eigen),
            "amean": _json(self.amean),
            "mean_relative": [_json(v) for v in self.mean_relative],
            "acov": _json(self.acov),
            "acor": _json(self.acor),
            "pmse": {
                "value": _json(self.pmse),
                "null": _json(self.pmse_null),
                "ratio": _json(self.pmse_ratio),
                "parameters": self.pmse_parameters,
                "interactions": self.interactions,
                "converged": self.pmse_converged,
                # an engine that measures from moments only (utility_from_moments)
                **({} if self.pmse_computed else {"computed": False}),
            },
        }

    def to_pandas(self):
        """One row per column: ``il1s`` (its share of the sum) and ``mean_relative``."""
        import pandas as pd

        return pd.DataFrame(
            {"il1s": self.il1s_columns, "mean_relative": self.mean_relative},
            index=pd.RangeIndex(self.p, name="column"),
        )


def _json(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def numeric_table(data: Any, what: str) -> np.ndarray:
    """``data`` as an ``n x p`` float array (a 1-D array is one column), or one
    :class:`ParameterError` line: not numbers, not finite, empty."""
    try:
        x = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"the {what} table must hold numbers only") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ParameterError(f"the {what} table must be 2-dimensional, got {x.ndim} dimensions")
    if x.shape[1] == 0:
        raise ParameterError(f"the {what} table has no column")
    if x.shape[0] < 2:
        raise ParameterError(f"the {what} table needs at least 2 rows, got {x.shape[0]}")
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ParameterError(
            f"the {what} table holds {int(bad.sum())} missing or infinite value(s) "
            f"(first at row {i}, column {j})"
        )
    return x


def check_weights(weights: Any, n: int) -> np.ndarray | None:
    """Frequency weights: ``n`` finite numbers > 0 summing to more than 1, or None."""
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ParameterError("weights must be numbers") from None
    if w.size != n:
        raise ParameterError(f"{w.size} weights for {n} records")
    if not np.isfinite(w).all() or (w <= 0).any():
        raise ParameterError("weights must be finite numbers > 0")
    if w.sum() <= 1:
        raise ParameterError(
            f"weights sum to {w.sum():g}: frequency weights count records and must sum to "
            "more than 1"
        )
    return w


def weighted_moments(x: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (denominator ``sum w - 1``; ``n - 1`` without weights)."""
    if w is None:
        return x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False))
    total = w.sum()
    mean = w @ x / total
    d = x - mean
    return mean, (d * w[:, None]).T @ d / (total - 1.0)


def _relative(orig: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """``|orig - masked| / |orig|`` with ``0/0 = 0`` and ``x/0 = inf``."""
    diff = np.abs(orig - masked)
    den = np.abs(orig)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = diff / den
    out[(den == 0) & (diff == 0)] = 0.0
    return out


def _correlation(cov: np.ndarray) -> np.ndarray:
    sd = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.outer(sd, sd)
    r[~np.isfinite(r)] = np.nan
    return r


def numeric_utility(
    original: Any,
    masked: Any,
    *,
    weights: Any = None,
    interactions: bool = False,
) -> NumericUtility:
    """Information loss of a masked numeric table: sdcMicro's IL1s, eigenvalue, mean,
    covariance and correlation measures, and the propensity-score pMSE.

    Definitions, scales and where the sources are loose: :mod:`privlab.metrics.numeric_utility`.

    Parameters
    ----------
    original, masked
        ``n x p`` arrays (or anything ``numpy.asarray`` makes one of: a DataFrame of numeric
        columns) of finite numbers; row ``i`` of ``masked`` is the masked copy of row ``i``
        of ``original``.  A 1-D array is one column.
    weights
        The records' frequency weights (``n`` numbers > 0), or None for one each.
    interactions
        Whether the pMSE's logistic model has the pairwise products of the columns besides
        their main effects.

    Returns
    -------
    NumericUtility
    """
    if not isinstance(interactions, bool):
        raise ParameterError(f"interactions must be True or False, got {interactions!r}")
    x = numeric_table(original, "original")
    xm = numeric_table(masked, "masked")
    if x.shape != xm.shape:
        raise ParameterError(
            f"the original table is {x.shape[0]} x {x.shape[1]} but the masked one is "
            f"{xm.shape[0]} x {xm.shape[1]}: the rows must pair"
        )
    n, p = x.shape
    w = check_weights(weights, n)
    mean, cov = weighted_moments(x, w)
    mean_m, cov_m = weighted_moments(xm, w)
    _check_spread(cov)
    abs_diff = np.abs(x - xm)
    if w is not None:
        abs_diff = abs_diff * w[:, None]
    measures = _moment_measures(mean, cov, mean_m, cov_m, abs_diff.sum(axis=0),
                                float(n if w is None else w.sum()))  # fmt: skip
    pmse, k, converged = _pmse(x, xm, w, interactions)
    c = 0.5  # the masked table has the original's rows (and weights)
    if w is None or np.all(w == w[0]):
        pmse_null = (k - 1) * (1 - c) ** 2 * c / (2 * n)
    else:
        pmse_null = float("nan")
    return NumericUtility(
        **measures,
        pmse=pmse,
        pmse_null=float(pmse_null),
        pmse_parameters=k,
        pmse_converged=converged,
        interactions=interactions,
        n=n,
        p=p,
        weighted=w is not None,
    )


def utility_from_moments(
    mean: Any,
    cov: Any,
    mean_masked: Any,
    cov_masked: Any,
    abs_diff: Any,
    *,
    n: int,
    total: float | None = None,
) -> NumericUtility:
    """The measures of :func:`numeric_utility` that moments give, from the moments: what an
    engine that never holds the table (a stream of row batches, Spark partitions) measures.

    ``mean`` and ``cov`` are the original's (weighted) mean and covariance (divisor ``total
    - 1``), ``mean_masked`` and ``cov_masked`` the masked table's, ``abs_diff`` the column
    sums of ``w_i |x_ij - x'_ij|`` (``w_i = 1`` unweighted), ``n`` the rows and ``total``
    the weights' sum (None: unweighted, ``n``).  The pMSE needs a model fitted to every row:
    it is not computed (nan, :attr:`NumericUtility.pmse_computed` False).  Refused as
    :func:`numeric_utility` refuses: fewer than two rows, a constant original column.
    """
    mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    p = mean.size
    if n < 2:
        raise ParameterError(f"the original table needs at least 2 rows, got {n}")
    cov = np.asarray(cov, dtype=np.float64).reshape(p, p)
    cov_m = np.asarray(cov_masked, dtype=np.float64).reshape(p, p)
    mean_m = np.asarray(mean_masked, dtype=np.float64).reshape(p)
    _check_spread(cov)
    measures = _moment_measures(mean, cov, mean_m, cov_m,
                                np.asarray(abs_diff, dtype=np.float64).reshape(p),
                                float(n if total is None else total))  # fmt: skip
    return NumericUtility(
        **measures,
        pmse=float("nan"),
        pmse_null=float("nan"),
        pmse_parameters=p + 1,
        pmse_converged=False,
        interactions=False,
        n=int(n),
        p=p,
        weighted=total is not None,
        pmse_computed=False,
    )


def _check_spread(cov: np.ndarray) -> None:
    sd = np.sqrt(np.diag(cov))
    if (sd == 0).any():
        j = int(np.flatnonzero(sd == 0)[0])
        raise ParameterError(
            f"column {j} is constant in the original: its standardized distances and "
            "correlations are undefined (drop it)"
        )


def _moment_measures(
    mean: np.ndarray,
    cov: np.ndarray,
    mean_m: np.ndarray,
    cov_m: np.ndarray,
    abs_sum: np.ndarray,
    total: float,
) -> dict[str, Any]:
    """IL1s, the eigenvalue, mean, covariance and correlation measures from the moments and
    the column sums of the (weighted) absolute differences; ``total``: the rows, or the
    weights' sum."""
    p = mean.size
    sd = np.sqrt(np.diag(cov))
    il1s_columns = abs_sum / (math.sqrt(2.0) * sd)
    il1s = float(il1s_columns.sum())
    il1s_mean = il1s / (p * total)

    cor = _correlation(cov)
    cor_m = _correlation(cov_m)
    if np.isnan(cor_m).any():
        eigen = acor = float("nan")
    else:
        e = np.sort(np.linalg.eigvalsh(cor))[::-1]
        e_m = np.sort(np.linalg.eigvalsh(cor_m))[::-1]
        # collinear columns: a zero eigenvalue (rounding leaves ~1e-16)
        e = np.where(np.abs(e) < 1e-12 * p, 0.0, e)
        e_m = np.where(np.abs(e_m) < 1e-12 * p, 0.0, e_m)
        eigen = float(_relative(e, e_m).sum())
        acor = float(_relative(cor, cor_m).sum() / (2 * p))
    mean_relative = _relative(mean, mean_m)
    amean = float(mean_relative.sum())
    acov = float(_relative(cov, cov_m).sum() / (2 * p))
    return {
        "il1s": il1s,
        "il1s_mean": il1s_mean,
        "il1s_columns": il1s_columns,
        "eigen": eigen,
        "amean": amean,
        "mean_relative": mean_relative,
        "acov": acov,
        "acor": acor,
    }


def _pmse(
    x: np.ndarray, xm: np.ndarray, w: np.ndarray | None, interactions: bool
) -> tuple[float, int, bool]:
    """pMSE of the logistic model telling ``xm``'s rows from ``x``'s; its number of
    parameters; whether the fit converged."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    stacked = np.vstack([x, xm])
    label = np.r_[np.zeros(len(x)), np.ones(len(xm))]
    sw = None if w is None else np.r_[w, w]
    centre = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale == 0] = 1.0
    z = (stacked - centre) / scale
    if interactions and z.shape[1] > 1:
        j, k = np.triu_indices(z.shape[1], 1)
        z = np.hstack([z, z[:, j] * z[:, k]])
    # C = inf: no penalty (scikit-learn 1.8 deprecates penalty=None for it)
    model = LogisticRegression(C=np.inf, solver="lbfgs", max_iter=MAX_ITER, tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(z, label, sample_weight=sw)
    converged = bool(np.all(model.n_iter_ < MAX_ITER))
    prob = model.predict_proba(z)[:, 1]
    if sw is None:
        c = len(xm) / len(stacked)
        value = float(np.mean((prob - c) ** 2))
    else:
        c = float(w.sum() / sw.sum())  # type: ignore[union-attr]
        value = float(np.average((prob - c) ** 2, weights=sw))
    return value, z.shape[1] + 1, converged
