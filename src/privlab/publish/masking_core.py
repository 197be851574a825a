"""Masking of numeric variables (issue 35, item 3): noise addition, rank swapping and
top/bottom coding as pure functions on float arrays (records x columns), each returning a
frozen result; the releases and the command line wrap them.

The definitions follow sdcMicro (Templ, Kowarik & Meindl 2015, J. Stat. Softw. 67(4);
``R/addNoise.r``, ``R/rankSwap.R`` with ``src/RankSwapping.h``, ``R/topBotCoding.R``), with
its parameter scales, except where noted:

* :func:`add_noise` -- ``method="additive"``: column ``j`` plus independent
  ``N(0, (noise/100 * s_j)^2)``, ``s_j`` the sample standard deviation (sdcMicro's
  ``additive``: ``noise`` scales the *standard deviation*, so the default 150 adds noise
  with 1.5 times the column's sd); ``"correlated"``: rows plus ``N(0, alpha S)``,
  ``alpha = noise/100``, ``S`` the sample covariance (Brand 2002, "Microdata protection
  through noise addition", LNCS 2316, pp. 97-116, its correlated noise; section and equation
  numbers are not cited, as they were not checked against the paper; sdcMicro's
  ``correlated``: here ``noise``
  scales the *covariance*, so 150 means ``alpha = 1.5``, a noise sd of ``sqrt(1.5) = 1.22``
  times the column's -- the two methods' ``noise`` are on different scales in sdcMicro, and
  are kept so); ``"kim"``: correlated noise then Kim's (1986) linear transformation back
  towards the original mean and covariance (see :func:`add_noise`).
* :func:`rank_swap` -- Moore (1996), "Controlled data-swapping techniques for masking public
  use microdata sets", US Census Bureau RR96/04, as sdcMicro's ``rankSwap`` (the OECD code in
  ``RankSwapping.h``) draws it, without its top/bottom coding step.
* :func:`top_bottom_code` -- sdcMicro's ``topBotCoding`` (strict ``>`` and ``<``), with
  thresholds that may also be quantiles of the data (a leak, warned) and the replacement by
  the mean of the coded values that sdcMicro's ``rankSwap`` uses for its top/bottom groups.

Every function refuses, in one line (:class:`~privlab.errors.ParameterError`), a non-finite
value (sdcMicro skips ``NA``; here missing values must be dealt with first) and a parameter
out of range.  The random ones draw only from ``rng``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab._rng import RngLike, as_generator
from privlab.errors import ParameterError, PrivacyWarning
from privlab.publish._swap import swap_partners

#: The noise methods of :func:`add_noise`.
NOISE_METHODS = ("additive", "correlated", "kim")
#: The replacement rules of :func:`top_bottom_code` (besides given numbers).
REPLACEMENTS = ("threshold", "mean")
#: Records from which :func:`rank_swap` draws its partners with the compiled kernel: below,
#: the Python loop is faster than importing numba and loading the cached kernel.
_KERNEL_MIN = 1 << 14


#: The masking techniques and what each does to a value, in words (``release.json``).
TECHNIQUES = {
    "microaggregation": "replaced by the mean of its group of at least k records",
    "noise": "plus random noise",
    "swapping": "exchanged with another record's value of close rank",
    "topcoding": "above the top code (below the bottom code) replaced by it",
}


# -- input checks ------------------------------------------------------------------------------


def _names(names: Sequence[str] | None, m: int) -> tuple[str, ...]:
    if names is None:
        return tuple(str(j) for j in range(m))
    out = tuple(str(v) for v in names)
    if len(out) != m:
        raise ParameterError(f"names must give one name per column ({m}), got {len(out)}")
    return out


def _matrix(
    x: Any, names: Sequence[str] | None, min_rows: int
) -> tuple[np.ndarray, bool, tuple[str, ...]]:
    """``x`` as a float ``(n, m)`` array (a copy), whether it was 1-d, and its column names;
    refused unless numeric, finite and with at least ``min_rows`` rows."""
    a = np.asarray(x)
    if a.dtype.kind not in "iuf":
        raise ParameterError(f"x must be a numeric array, got dtype {a.dtype}")
    if a.ndim not in (1, 2):
        raise ParameterError(f"x must be 1-d or 2-d (records x columns), got {a.ndim} dimensions")
    flat = a.ndim == 1
    a = np.array(a, dtype=np.float64, copy=True).reshape(a.shape[0], -1)
    n, m = a.shape
    cols = _names(names, m)
    if m == 0:
        raise ParameterError("x has no columns")
    if n < min_rows:
        raise ParameterError(f"x must have at least {min_rows} rows, got {n}")
    bad = ~np.isfinite(a)
    if bad.any():
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        raise ParameterError(
            f"x holds {int(bad.sum())} non-finite values (NaN or infinity), the first in column "
            f"{cols[j]!r}: drop or impute them before masking"
        )
    return a, flat, cols


def _number(name: str, value: Any, low: float, high: float = math.inf) -> float:
    """A finite real in ``[low, high]``, refused otherwise in one line."""
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.number))
    if not ok or not math.isfinite(float(value)) or not low <= value <= high:
        where = f"in [{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise ParameterError(f"{name} must be a finite number {where}, got {value!r}")
    return float(value)


def _weights(weights: Any, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights)
    if w.dtype.kind not in "iuf" or w.shape != (n,):
        raise ParameterError(f"weights must be {n} numbers (one per row), got shape {w.shape}")
    w = w.astype(np.float64)
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ParameterError("weights must be finite and > 0")
    if w.sum() <= 1:
        raise ParameterError(f"the weights must sum to more than 1, got {w.sum():g}")
    return w


def _moments(a: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float]:
    """The mean, the covariance (divisor ``N - 1``) and ``N`` (rows, or the weights' sum
    read as frequency weights: record ``i`` counted ``w_i`` times)."""
    if w is None:
        return a.mean(axis=0), np.atleast_2d(np.cov(a, rowvar=False)), float(a.shape[0])
    total = float(w.sum())
    mean = w @ a / total
    d = a - mean
    return mean, (d * w[:, None]).T @ d / (total - 1.0), total


def _out(a: np.ndarray, flat: bool) -> np.ndarray:
    a = a[:, 0] if flat else a
    a.setflags(write=False)
    return a


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Masked(ToFrames):
    masked: np.ndarray
    columns: tuple[str, ...]

    def to_pandas(self) -> Any:
        """The masked values as a DataFrame, one column per masked column."""
        import pandas as pd

        return pd.DataFrame(self.masked.reshape(self.masked.shape[0], -1), columns=self.columns)


@dataclass(frozen=True)
class NoiseResult(_Masked):
    """What :func:`add_noise` returns.

    Attributes
    ----------
    masked
        The masked array (read-only), of the input's shape.
    columns
        The columns' names (their indices unless ``names`` was given).
    method
        ``"additive"``, ``"correlated"`` or ``"kim"``.
    noise
        sdcMicro's ``noise`` (percent): the noise sd over the column's sd for ``additive``,
        the noise covariance over the data's (``alpha``) otherwise.
    c
        Kim's factor ``sqrt((N - 1) / (N (1 + alpha) - 1))`` (``kim`` only, else None).
    weighted
        Whether the moments that scale the noise were weighted.
    """

    method: str
    noise: float
    c: float | None = None
    weighted: bool = False

    @property
    def sd_factor(self) -> float | None:
        """The noise sd over each column's sd (``additive`` only)."""
        return self.noise / 100 if self.method == "additive" else None

    @property
    def alpha(self) -> float | None:
        """The noise covariance over the data's, ``alpha`` (``correlated`` and ``kim``)."""
        return None if self.method == "additive" else self.noise / 100

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "noise": self.noise,
            "sd_factor": self.sd_factor,
            "alpha": self.alpha,
            "c": self.c,
            "weighted": self.weighted,
            "columns": list(self.columns),
            "masked": self.masked.tolist(),
        }


@dataclass(frozen=True)
class RankSwapResult(_Masked):
    """What :func:`rank_swap` returns.

    Attributes
    ----------
    masked
        The swapped array (read-only), of the input's shape: each column a permutation of
        the input's.
    columns
        The columns' names.
    p
        The largest rank distance of a swap, in percent of the rows (sdcMicro's ``P`` as its
        documentation states it; see :func:`rank_swap`).
    window
        ``floor(p n / 100)``: the largest rank distance in records.
    """

    p: float
    window: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "p": self.p,
            "window": self.window,
            "columns": list(self.columns),
            "masked": self.masked.tolist(),
        }


@dataclass(frozen=True)
class TopBottomResult(_Masked):
    """What :func:`top_bottom_code` returns.

    Attributes
    ----------
    masked
        The coded array (read-only), of the input's shape.
    columns
        The columns' names.
    top, bottom
        The thresholds per column (None when that side is not coded): values ``> top``
        (``< bottom``) were replaced.
    top_value, bottom_value
        The replacement per column (NaN where no value was coded with ``"mean"``).
    top_coded, bottom_coded
        How many values were replaced, per column.
    from_data
        ``(column, side)`` of every threshold read from the data (a quantile): each was
        warned about, as it discloses a value computed from the records.
    replacement
        ``"threshold"``, ``"mean"`` or ``"given"``.
    """

    top: np.ndarray | None
    bottom: np.ndarray | None
    top_value: np.ndarray | None
    bottom_value: np.ndarray | None
    top_coded: np.ndarray
    bottom_coded: np.ndarray
    from_data: tuple[tuple[str, str], ...]
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        def lst(v: np.ndarray | None) -> list[float | None] | None:
            return None if v is None else [None if math.isnan(t) else float(t) for t in v]

        return {
            "top": lst(self.top),
            "bottom": lst(self.bottom),
            "top_value": lst(self.top_value),
            "bottom_value": lst(self.bottom_value),
            "top_coded": self.top_coded.tolist(),
            "bottom_coded": self.bottom_coded.tolist(),
            "from_data": [list(t) for t in self.from_data],
            "replacement": self.replacement,
            "columns": list(self.columns),
            "masked": self.masked.tolist(),
        }


# -- noise addition ----------------------------------------------------------------------------


def add_noise(
    x: Any,
    *,
    method: str = "additive",
    noise: float = 150.0,
    rng: RngLike = None,
    weights: Any = None,
    names: Sequence[str] | None = None,
) -> NoiseResult:
    """Mask numeric columns by adding Gaussian noise (sdcMicro's ``addNoise``).

    Parameters
    ----------
    x
        ``(n, m)`` (or ``(n,)``) finite numbers, ``n >= 2``, no constant column.
    method
        ``"additive"``: ``z_ij = x_ij + e_ij`` with independent ``e_ij ~ N(0, (k s_j)^2)``,
        ``k = noise / 100`` and ``s_j`` the sample sd of column ``j`` (sdcMicro's
        ``additive``, ``rnorm(N, 0, noise/100 * sd(x))``).  Means and covariances are kept in
        expectation, variances grow by ``(1 + k^2)`` and correlations shrink by as much.

        ``"correlated"``: ``z_i = x_i + e_i`` with ``e_i ~ N(0, alpha S)``, ``alpha =
        noise / 100`` and ``S`` the sample covariance (Brand 2002, correlated noise;
        sdcMicro's ``correlated``, ``mvrnorm(N, 0, noise/100 * cov(x))``).  Given ``x``, the
        sample covariance of ``z`` is ``(1 + alpha) S`` in expectation (the cross terms have
        mean zero and the noise's sample covariance is unbiased), so correlations are kept.
        ``S`` is factored by its eigen-decomposition, so collinear columns are allowed (the
        noise keeps their exact linear relations).  Unlike sdcMicro, one column is allowed.

        ``"kim"``: the correlated ``y = x + e`` then ``z_i = c y_i + (1 - c) xbar`` (Kim 1986,
        "A method for limiting disclosure in microdata based on random noise and
        transformation", ASA Proc. Survey Research Methods, pp. 370-374, as Brand 2002 and
        sdcMicro's ``restr`` give it), with ``c = sqrt((N - 1) / (N (1 + alpha) - 1))``.
        Derivation: with ``d_i = x_i - xbar``, ``z_i - xbar = c (d_i + e_i)``, so

        * ``E[zbar] = xbar``: the mean is kept in expectation, not exactly (``zbar - xbar =
          c ebar``, of sd ``c sqrt(alpha S_jj / N)``);
        * ``E[sum_i (z_i - xbar)(z_i - xbar)^T] = c^2 ((N - 1) S + N alpha S) = (N - 1) S``:
          the scatter about the *original* mean, over ``N - 1``, is ``S`` in expectation --
          what the choice of ``c`` solves for;
        * the sample covariance of ``z`` (about ``zbar``) is ``(1 - alpha / (N (1 + alpha) -
          1)) S`` in expectation: short of ``S`` by less than ``1 / N``.

        Where the source is loose: sdcMicro's ``restr`` (the transformation's name there)
        applies ``c x + (1 - c) xbar`` to the data *without adding noise first* (a
        deterministic shrinkage towards the mean, which neither masks nor keeps the
        covariance), and for ``N < 500`` switches to ``c = sqrt((N - 1 - alpha) / ((N + 1)
        (1 + alpha)))``, whose derivation we could not trace and which is undefined for
        ``alpha > N - 1``; here the noise is added and the formula above is used for every
        ``N``.  sdcMicro's ``correlated2`` (per column ``x sqrt(1 - delta^2) + delta e``,
        which its documentation attributes to Brand) keeps each column's mean and variance
        in expectation but shrinks covariances by ``1 - delta^2``; it is not Kim's method
        and is not offered.
    noise
        sdcMicro's ``noise``, in percent (default 150, sdcMicro's): ``k = noise / 100`` scales
        the sd for ``additive``, ``alpha = noise / 100`` the covariance for ``correlated``
        and ``kim``.  ``0`` returns ``x`` unchanged (``kim``: ``c = 1``).
    rng
        The only source of randomness: one ``standard_normal((n, m))`` draw, row by row.
        ``correlated`` and ``kim`` with the same generator add the same noise.
    weights
        Optional positive weights, one per row, read as frequency weights: the mean and
        covariance (``sd``) that scale the noise are those of the data with row ``i`` counted
        ``w_i`` times (divisor ``W - 1``, ``W`` their sum, which must exceed 1), and ``kim``
        uses ``W`` for ``N`` (the derivation above holds with ``w_i``-weighted sums).  Loose:
        sdcMicro's ``addNoise`` takes no weights; survey weights are not frequencies, and
        this is only the usual plug-in estimate of the population's moments.
    names
        The columns' names, for messages and the result.

    Returns
    -------
    NoiseResult
    """
    if method not in NOISE_METHODS:
        raise ParameterError(f"method must be one of {', '.join(NOISE_METHODS)}, got {method!r}")
    _number("noise", noise, 0.0)
    a, flat, cols = _matrix(x, names, 2)
    n, m = a.shape
    w = _weights(weights, n)
    const = np.flatnonzero(np.ptp(a, axis=0) == 0)
    if const.size:
        raise ParameterError(
            f"column {cols[int(const[0])]!r} is constant: noise scaled to its spread (0) would "
            "leave it unmasked; drop it"
        )
    mean, cov, total = _moments(a, w)
    z = as_generator(rng).standard_normal((n, m))
    plan = noise_plan(method, noise, mean, cov, total)
    masked = plan.apply(a, z)
    return NoiseResult(_out(masked, flat), cols, method, float(noise), plan.c, w is not None)


@dataclass(frozen=True, eq=False)
class NoisePlan:
    """The noise of :func:`add_noise` fixed from the data's moments, to apply to any rows
    (the whole table in memory, a batch of a stream, a Spark partition): ``apply(a, z)``
    masks the rows ``a`` with the standard normals ``z`` of the same shape.

    Custodian's: ``scale`` and ``factor`` are computed from the private moments.

    Attributes
    ----------
    method
        ``"additive"``, ``"correlated"`` or ``"kim"``.
    scale
        ``additive``: the noise sd of each column, ``noise / 100 * s_j`` (else None).
    factor
        ``correlated`` and ``kim``: ``F`` with ``F F^T = alpha S`` (else None).
    c, mean
        ``kim``: Kim's factor and the mean the rows are drawn back towards (else None).
    """

    method: str
    scale: np.ndarray | None = None
    factor: np.ndarray | None = None
    c: float | None = None
    mean: np.ndarray | None = None

    def apply(self, a: np.ndarray, z: np.ndarray) -> np.ndarray:
        if self.method == "additive":
            return a + z * self.scale
        y = a + z @ self.factor.T  # type: ignore[union-attr]
        if self.method == "correlated":
            return y
        return self.c * y + (1.0 - self.c) * self.mean  # type: ignore[operator]


def noise_plan(
    method: str, noise: float, mean: np.ndarray, cov: np.ndarray, total: float
) -> NoisePlan:
    """The :class:`NoisePlan` of :func:`add_noise` from the data's mean, covariance (divisor
    ``N - 1``) and ``N`` (rows, or the weights' sum), as :func:`add_noise` computes them."""
    if method not in NOISE_METHODS:
        raise ParameterError(f"method must be one of {', '.join(NOISE_METHODS)}, got {method!r}")
    k = _number("noise", noise, 0.0) / 100
    cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
    m = cov.shape[0]
    if method == "additive":
        return NoisePlan(method, scale=k * np.sqrt(np.diag(cov)))
    vals, vecs = np.linalg.eigh(cov)
    # eigenvalues within rounding of 0 (numpy's matrix_rank rule) are the zero directions of
    # a singular S: no noise along them, so exact linear relations between columns are kept
    vals[vals <= vals.max() * m * np.finfo(np.float64).eps] = 0.0
    factor = vecs * np.sqrt(k * vals)  # factor @ factor.T = alpha S
    if method == "correlated":
        return NoisePlan(method, factor=factor)
    c = math.sqrt((total - 1.0) / (total * (1.0 + k) - 1.0))
    return NoisePlan(method, factor=factor, c=c, mean=np.asarray(mean, dtype=np.float64))


# -- rank swapping -----------------------------------------------------------------------------


def rank_swap(
    x: Any,
    *,
    p: float = 5.0,
    rng: RngLike = None,
    names: Sequence[str] | None = None,
) -> RankSwapResult:
    """Rank swapping (Moore 1996, "Controlled data-swapping techniques for masking public use
    microdata sets", US Census Bureau RR96/04; sdcMicro's ``rankSwap``), column by column.

    Each column's values are sorted (ties by row order); visiting the ranks upwards, a rank
    not yet swapped exchanges its value with a rank drawn uniformly among those not yet
    swapped at most ``floor(p n / 100)`` ranks above it (:func:`swap_partners`); a rank
    with no candidate keeps its value.  Each value moves at most once, to a rank within the
    window, and each column's multiset of values is kept exactly; ``p = 0`` (or ``p n <
    100``) returns ``x`` unchanged.

    Parameters
    ----------
    x
        ``(n, m)`` (or ``(n,)``) finite numbers, ``n >= 2``.
    p
        The largest rank distance, in percent of ``n``: ranks ``i`` and ``j`` may be swapped
        if ``|i - j| <= p n / 100`` (sdcMicro's documented ``P``).  Where sdcMicro is loose:
        its C++ code uses ``P`` as a *fraction* (``j + N * P``, never divided by 100, while
        ``TopPercent`` is), so its ``P = 5`` lets any two ranks swap and our ``p = 5`` is its
        ``P = 0.05``; and it admits distances ``< N P`` (strictly), one short of the
        documented bound kept here.  Its alternatives to ``P`` (``R0``, ``K0``, from which
        it derives ``P``) are not offered.  Its default top and bottom coding (5% each,
        replaced by their mean and left out of the swaps, Moore's first step) is not done
        here, so that the multiset is kept: call :func:`top_bottom_code` first for it.
    rng
        The only source of randomness: ``n`` uniforms per column, column by column.
    names
        The columns' names, for messages and the result.

    Returns
    -------
    RankSwapResult
    """
    pct = _number("p", p, 0.0, 100.0)
    a, flat, cols = _matrix(x, names, 2)
    n, m = a.shape
    window = math.floor(pct * n / 100)
    gen = as_generator(rng)
    if n >= _KERNEL_MIN:
        from privlab.publish._rankswap_kernel import swap_partners_compiled as partners_of
    else:
        partners_of = swap_partners
    out = np.empty_like(a)
    for j in range(m):
        u = gen.random(n)
        order = np.argsort(a[:, j], kind="stable")
        ranked = a[order, j]
        out[order, j] = ranked[partners_of(u, window)]
    return RankSwapResult(_out(out, flat), cols, pct, window)


# -- top and bottom coding ---------------------------------------------------------------------


def _per_column(name: str, value: Any, m: int, low: float = -math.inf, high: float = math.inf):
    """A scalar or ``m`` numbers (not NaN) within ``[low, high]``, as ``m`` floats."""
    v = np.asarray(value)
    if v.dtype.kind not in "iuf" or v.ndim > 1 or (v.ndim == 1 and v.shape[0] != m):
        raise ParameterError(
            f"{name} must be a number or {m} numbers (one per column), got {value!r}"
        )
    v = np.broadcast_to(v.astype(np.float64), (m,)).copy()
    if np.isnan(v).any() or (v < low).any() or (v > high).any():
        raise ParameterError(f"{name} must be within [{low:g}, {high:g}], got {value!r}")
    return v


def top_bottom_code(
    x: Any,
    *,
    top: Any = None,
    bottom: Any = None,
    top_quantile: Any = None,
    bottom_quantile: Any = None,
    replacement: str | float | tuple[float, float] = "threshold",
    names: Sequence[str] | None = None,
) -> TopBottomResult:
    """Top and bottom coding (sdcMicro's ``topBotCoding``): values above the top threshold
    and below the bottom one are replaced.

    Parameters
    ----------
    x
        ``(n, m)`` (or ``(n,)``) finite numbers.
    top, bottom
        Declared thresholds, one number or one per column: values ``> top`` (``< bottom``)
        are coded, as in sdcMicro (strict inequalities: a value equal to the threshold is
        kept).  ``inf`` (``-inf``) codes nothing in that column.
    top_quantile, bottom_quantile
        Instead, thresholds read from the data: that quantile (in ``[0, 1]``) of each column
        (``numpy.quantile``'s linear rule, R's default type 7).  Each emits a
        :class:`~privlab.errors.PrivacyWarning` naming the column: the threshold is computed
        from the private records and publishing it (as the replacement, or as the edge of
        the coded range) discloses it; declare it instead.
    replacement
        ``"threshold"`` (default): coded values become the threshold.  ``"mean"``: the mean
        of the values coded on that side of the column (what sdcMicro's ``rankSwap`` does to
        its ``TopPercent`` / ``BottomPercent`` groups; sdcMicro's ``topBotCoding`` has no
        such rule) -- computed from the private values, so it is warned about too (with one
        coded value it *is* that value).  A number, or one per column: that value
        (sdcMicro's ``replacement``), allowed when one side is coded; a tuple
        ``(bottom_value, top_value)`` (each a number or one per column) when both are.
    names
        The columns' names, for the warnings and the result.

    Returns
    -------
    TopBottomResult
    """
    a, flat, cols = _matrix(x, names, 1)
    m = a.shape[1]
    for side, given, q in (("top", top, top_quantile), ("bottom", bottom, bottom_quantile)):
        if given is not None and q is not None:
            raise ParameterError(f"give {side} or {side}_quantile, not both")
    from_data: list[tuple[str, str]] = []
    limits: dict[str, np.ndarray | None] = {}
    for side, given, q in (("top", top, top_quantile), ("bottom", bottom, bottom_quantile)):
        if given is not None:
            # inf codes nothing on its side; the other infinity would code every value
            limits[side] = _per_column(side, given, m)
            if (limits[side] == (-math.inf if side == "top" else math.inf)).any():
                raise ParameterError(
                    f"{side} must not be {'-inf' if side == 'top' else 'inf'} (every value "
                    "would be coded)"
                )
        elif q is not None:
            qs = _per_column(f"{side}_quantile", q, m, 0.0, 1.0)
            limits[side] = np.array([np.quantile(a[:, j], qs[j]) for j in range(m)])
            for j in range(m):
                from_data.append((cols[j], side))
                warnings.warn(
                    f"column {cols[j]!r}: the {side} threshold is the {qs[j]:g} quantile of the "
                    "private data, so publishing it discloses a value computed from the "
                    f"records; declare the {side} threshold instead",
                    PrivacyWarning,
                    stacklevel=2,
                )
        else:
            limits[side] = None
    hi, lo = limits["top"], limits["bottom"]
    if hi is not None and lo is not None and (lo > hi).any():
        j = int(np.flatnonzero(lo > hi)[0])
        raise ParameterError(
            f"column {cols[j]!r}: the bottom threshold {lo[j]:g} exceeds the top {hi[j]:g}"
        )
    sides = [s for s in ("bottom", "top") if limits[s] is not None]
    if isinstance(replacement, str):
        if replacement not in REPLACEMENTS:
            raise ParameterError(
                f"replacement must be 'threshold', 'mean', a number or a (bottom, top) pair, "
                f"got {replacement!r}"
            )
        rule = replacement
        given_values: dict[str, np.ndarray] = {}
    else:
        rule = "given"
        values = replacement if isinstance(replacement, tuple) else (replacement,)
        if len(values) == 2:
            pair = {"bottom": values[0], "top": values[1]}
        elif len(values) == 1 and len(sides) == 1:
            pair = {sides[0]: values[0]}
        else:
            raise ParameterError(
                "a numeric replacement must be one number when one side is coded, or a "
                "(bottom_value, top_value) pair"
            )
        given_values = {s: _per_column(f"the {s} replacement", pair[s], m) for s in sides}
        for s in given_values:
            if not np.isfinite(given_values[s]).all():
                raise ParameterError(f"the {s} replacement must be finite")
    out = a.copy()
    coded = {"top": np.zeros(m, dtype=np.int64), "bottom": np.zeros(m, dtype=np.int64)}
    used: dict[str, np.ndarray | None] = {"top": None, "bottom": None}
    for s in sides:
        limit = limits[s]
        mask = a > limit if s == "top" else a < limit
        coded[s] = mask.sum(axis=0)
        if rule == "threshold":
            value = limit.copy()
        elif rule == "given":
            value = given_values[s]
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.where(mask, a, 0.0).sum(axis=0) / coded[s]
            value[coded[s] == 0] = np.nan
            for j in np.flatnonzero(coded[s]):
                warnings.warn(
                    f"column {cols[j]!r}: the {s} replacement is the mean of the "
                    f"{int(coded[s][j])} coded private values, which it discloses "
                    "(one coded value is published as it is); give the replacement instead",
                    PrivacyWarning,
                    stacklevel=2,
                )
        out = np.where(mask, value, out)
        used[s] = value
    return TopBottomResult(
        _out(out, flat),
        cols,
        hi,
        lo,
        used["top"],
        used["bottom"],
        coded["top"],
        coded["bottom"],
        tuple(from_data),
        rule,
    )


# -- what the stream and Spark engines share ---------------------------------------------------
# The per-row methods (noise, top/bottom coding with given codes) distribute: the moments
# that scale the noise are merged from batches or partitions, then every row is masked on
# its own.  The engines (publish/stream_masking.py, publish/spark_masking.py) import these;
# the memory engine (publish/masking.py) dispatches to them.


class Moments:
    """Running moments of rows of ``m`` numbers, merged batch by batch: the rows, the
    weights' total (the rows unweighted), the (weighted) mean, the co-moment matrix
    ``sum_i w_i (x_i - mean)(x_i - mean)^T`` and each column's least and greatest value.

    A batch's own mean and co-moment are computed about its mean, and two summaries merge
    by the pairwise update of Chan, Golub & LeVeque (1979, "Updating formulae and a pairwise
    algorithm for computing sample variances", STAN-CS-79-773): with ``d`` the difference of
    the means, ``M = M_a + M_b + d d^T W_a W_b / (W_a + W_b)``.  No sum of squares of raw
    values is formed, so the covariance is as exact as the two-pass one of :func:`_moments`
    (``numpy.cov``) whatever the columns' offsets; merged in a fixed order the result is the
    same on every run.
    """

    def __init__(self, m: int) -> None:
        self.m = int(m)
        self.n = 0
        self.total = 0.0
        self.mean = np.zeros(self.m)
        self.comoment = np.zeros((self.m, self.m))
        self.low = np.full(self.m, np.inf)
        self.high = np.full(self.m, -np.inf)

    def add(self, x: np.ndarray, w: np.ndarray | None = None) -> Moments:
        """Add the rows ``x`` (``(rows, m)`` floats) with their weights ``w`` (or None)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, self.m)
        if x.shape[0] == 0:
            return self
        if w is None:
            total = float(x.shape[0])
            mean = x.mean(axis=0)
            d = x - mean
            comoment = d.T @ d
        else:
            total = float(w.sum())
            mean = w @ x / total
            d = x - mean
            comoment = (d * w[:, None]).T @ d
        return self._merge(x.shape[0], total, mean, comoment, x.min(axis=0), x.max(axis=0))

    def merge(self, other: Moments) -> Moments:
        """Add another summary's rows (in place; returns self)."""
        if other.n == 0:
            return self
        return self._merge(other.n, other.total, other.mean, other.comoment, other.low,
                           other.high)  # fmt: skip

    def _merge(self, n: int, total: float, mean: np.ndarray, comoment: np.ndarray,
               low: np.ndarray, high: np.ndarray) -> Moments:  # fmt: skip
        if self.n == 0:
            self.total, self.mean, self.comoment = total, mean.copy(), comoment.copy()
        else:
            both = self.total + total
            d = mean - self.mean
            self.mean = self.mean + d * (total / both)
            self.comoment = self.comoment + comoment + np.outer(d, d) * (self.total * total / both)
            self.total = both
        self.n += int(n)
        self.low = np.minimum(self.low, low)
        self.high = np.maximum(self.high, high)
        return self

    def cov(self) -> np.ndarray:
        """The covariance, divisor ``total - 1`` (``numpy.cov``'s ``n - 1`` unweighted)."""
        return self.comoment / (self.total - 1.0)

    # a flat vector, to travel from a Spark partition to the driver
    def state(self) -> np.ndarray:
        return np.concatenate([[float(self.n), self.total], self.mean, self.comoment.ravel(),
                               self.low, self.high])  # fmt: skip

    @classmethod
    def state_size(cls, m: int) -> int:
        return 2 + 3 * m + m * m

    @classmethod
    def from_state(cls, v: Any, m: int) -> Moments:
        v = np.asarray(v, dtype=np.float64)
        out = cls(m)
        out.n, out.total = int(v[0]), float(v[1])
        out.mean = v[2 : 2 + m].copy()
        out.comoment = v[2 + m : 2 + m + m * m].reshape(m, m).copy()
        out.low = v[2 + m + m * m : 2 + 2 * m + m * m].copy()
        out.high = v[2 + 2 * m + m * m : 2 + 3 * m + m * m].copy()
        return out


def noise_plan_from(
    method: str, noise: float, moments: Moments, names: Sequence[str], weighted: bool
) -> NoisePlan:
    """The :class:`NoisePlan` of the rows ``moments`` summarizes, refused as :func:`add_noise`
    refuses its table: fewer than two rows, a constant column, weights summing to 1 or
    less."""
    if method not in NOISE_METHODS:
        raise ParameterError(f"method must be one of {', '.join(NOISE_METHODS)}, got {method!r}")
    _number("noise", noise, 0.0)
    if moments.n < 2:
        raise ParameterError(f"x must have at least 2 rows, got {moments.n}")
    if weighted and moments.total <= 1:
        raise ParameterError(f"the weights must sum to more than 1, got {moments.total:g}")
    const = np.flatnonzero(moments.high - moments.low == 0)
    if const.size:
        raise ParameterError(
            f"column {names[int(const[0])]!r} is constant: noise scaled to its spread (0) "
            "would leave it unmasked; drop it"
        )
    return noise_plan(method, noise, moments.mean, moments.cov(), moments.total)


def given_codes(
    top: Any, bottom: Any, *, names: Sequence[str], top_quantile: Any = None,
    bottom_quantile: Any = None, engine: str = "stream",
) -> tuple[np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """The declared codes of :func:`top_bottom_code` (``top``, ``bottom``: one number or one
    per column), checked as it checks them, for an engine that codes row by row; a code
    given as a quantile is refused in one line (a quantile needs the whole column sorted)."""
    for side, q in (("top", top_quantile), ("bottom", bottom_quantile)):
        if q is not None:
            raise ParameterError(
                f"the {engine} engine masks row by row and does not sort the columns, which a "
                f"quantile code needs: give the {side} code itself ({side}=, CLI --{side}), "
                f"not {side}_quantile (--{side}-quantile)"
            )
    res = top_bottom_code(np.zeros((1, len(names))), top=top, bottom=bottom, names=names)
    return res.top, res.bottom


def code_values(a: np.ndarray, top: np.ndarray | None, bottom: np.ndarray | None) -> np.ndarray:
    """``a`` top and bottom coded at the given codes (``threshold`` replacement): exactly the
    values :func:`top_bottom_code` gives."""
    out = a
    if bottom is not None:
        out = np.where(a < bottom, bottom, out)
    if top is not None:
        out = np.where(a > top, top, out)
    return out


def masked_and_kept(
    columns: Sequence[str], kept: Sequence[str], sensitive: str | None, weights: str | None
) -> tuple[list[str], list[str]]:
    """The masked columns, refused in one line when there are none or one is named twice,
    and the kept ones with ``sensitive`` and ``weights`` added (every engine's first check:
    :func:`privlab.publish.masking.numeric_input`, :func:`engine_columns`)."""
    columns = list(columns)
    if not columns:
        raise ParameterError("give the numeric columns to mask")
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise ParameterError(f"column {twice[0]!r} is named twice")
    kept = list(kept)
    for extra in (sensitive, weights):
        if extra is not None and extra not in kept:
            kept.append(extra)
    return columns, kept


def engine_columns(
    names: Sequence[str],
    numeric: Any,
    columns: Sequence[str],
    keep: Sequence[str] | None,
    sensitive: str | None = None,
    weights: str | None = None,
) -> tuple[list[str], list[str]]:
    """The masked and kept columns of an engine that reads a file or a Spark frame (its
    columns ``names``; ``numeric(name)``: whether that column holds numbers), refused as
    :func:`privlab.publish.masking.numeric_input` refuses them: no column, one named twice,
    unknown or not numeric, a column both masked and kept, weights that are not numbers or
    are the sensitive column.  ``keep`` None keeps nothing (a file's columns have no role)."""
    from privlab.errors import SchemaError

    if isinstance(columns, str):
        raise ParameterError(f"columns must be a list of names, not the string {columns!r}")
    columns, kept = masked_and_kept(columns, keep or (), sensitive, weights)
    for c in [*columns, *kept]:
        if c not in names:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(names)}")
    for c in columns:
        if not numeric(c):
            raise ParameterError(f"column {c!r} is not numeric: it cannot be masked as a number")
    both = [c for c in kept if c in columns]
    if both:
        what = "the sampling weights" if both[0] == weights else "kept unchanged (--keep)"
        raise SchemaError(f"column {both[0]!r} is both masked and {what}")
    if weights is not None and weights == sensitive:
        raise ParameterError(f"column {weights!r} cannot be both the weights and sensitive")
    if weights is not None and not numeric(weights):
        raise ParameterError(f"the weights {weights!r} are not numbers")
    return columns, kept


def check_rows(x: np.ndarray, names: Sequence[str], first_row: int = 0) -> None:
    """Refuse non-finite values in a batch of rows (as :func:`add_noise` refuses them),
    naming the column and the row (counted from 1 over the whole input)."""
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ParameterError(
            f"column {names[j]!r} holds a non-finite value (NaN or infinity) in record "
            f"{first_row + i + 1}: drop or impute them before masking"
        )


def check_weight_values(w: np.ndarray, name: str, first_row: int = 0) -> None:
    """Refuse sampling weights that are not positive numbers (one line, as the memory engine
    does), naming the record (counted from 1 over the whole input)."""
    bad = ~(np.isfinite(w) & (w > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ParameterError(
            f"the weights {name!r} must be positive numbers: record {first_row + i + 1} has "
            f"{w[i]:g}"
        )


class LossSums:
    """What the information loss of a masked table needs, merged batch by batch: the
    original's and the masked table's :class:`Moments` and the column sums of ``w_i |x_ij -
    x'_ij|``; :meth:`utility` measures it as the memory engine's custody does (without the
    pMSE, which fits a model to every row)."""

    def __init__(self, m: int, weighted: bool) -> None:
        self.m, self.weighted = int(m), bool(weighted)
        self.x, self.masked = Moments(m), Moments(m)
        self.abs_diff = np.zeros(self.m)

    def add(self, x: np.ndarray, masked: np.ndarray, w: np.ndarray | None = None) -> None:
        self.x.add(x, w)
        self.masked.add(masked, w)
        d = np.abs(x - masked)
        self.abs_diff += (d if w is None else d * w[:, None]).sum(axis=0)

    def merge(self, other: LossSums) -> LossSums:
        self.x.merge(other.x)
        self.masked.merge(other.masked)
        self.abs_diff = self.abs_diff + other.abs_diff
        return self

    def state(self) -> np.ndarray:
        return np.concatenate([self.x.state(), self.masked.state(), self.abs_diff])

    @classmethod
    def state_size(cls, m: int) -> int:
        return 2 * Moments.state_size(m) + m

    @classmethod
    def from_state(cls, v: Any, m: int, weighted: bool) -> LossSums:
        k = Moments.state_size(m)
        out = cls(m, weighted)
        out.x = Moments.from_state(v[:k], m)
        out.masked = Moments.from_state(v[k : 2 * k], m)
        out.abs_diff = np.asarray(v[2 * k :], dtype=np.float64).copy()
        return out

    def utility(self) -> dict[str, Any]:
        """:func:`privlab.metrics.numeric_utility.utility_from_moments` as a dict, or {}
        when it cannot be measured (fewer than two rows, a constant column), as the memory
        engine's custody records it."""
        from privlab.errors import PrivlabError
        from privlab.metrics.numeric_utility import utility_from_moments

        if self.x.n < 2 or self.x.total <= 1:
            return {}
        try:
            return utility_from_moments(
                self.x.mean, self.x.cov(), self.masked.mean, self.masked.cov(), self.abs_diff,
                n=self.x.n, total=self.x.total if self.weighted else None,
            ).to_dict()  # fmt: skip
        except PrivlabError:
            return {}


def masked_table(
    names: Sequence[str],
    columns: Sequence[str],
    masked: np.ndarray,
    kept: Mapping[str, tuple[Any, np.ndarray]],
    sensitive: str | None = None,
) -> Any:
    """The published table of a masking release, in any engine: the columns ``names`` (the
    input's order), each masked column (``columns``, their new values ``masked`` in
    published row order) encoded from its values as ``Table.from_pandas`` encodes them with
    the QI role (an intruder links on it), each kept column from ``kept[name] =
    (attribute, codes in published row order)`` with its declared domain as given and the
    sensitive role for ``sensitive``, the insensitive role otherwise."""
    import dataclasses

    import pandas as pd

    from privlab.data.schema import Role, Schema
    from privlab.data.table import Table

    columns = list(columns)
    n = masked.shape[0]
    new = Table.from_pandas(pd.DataFrame({c: masked[:, j] for j, c in enumerate(columns)}))
    codes = np.empty((n, len(names)), dtype=np.int32)
    attrs = []
    for i, c in enumerate(names):
        if c in columns:  # a masked column: linked on by an intruder, like any QI
            codes[:, i] = new.column(c)
            attrs.append(dataclasses.replace(new.schema[c], role=Role.QI))
        else:  # kept unchanged: its declared domain as given, its role as asked
            attr, kept_codes = kept[c]
            codes[:, i] = kept_codes
            role = Role.SENSITIVE if c == sensitive else Role.INSENSITIVE
            attrs.append(dataclasses.replace(attr, role=role))
    return Table(codes, Schema(tuple(attrs)))


def release_of_rows(
    plan: Any, masked: np.ndarray, codes: np.ndarray, truth: np.ndarray, custody: Any
) -> Any:
    """The in-memory :class:`~privlab.publish.masking.MaskedRelease` of an engine's rows, in
    published order: the masked values, the kept columns' codes and the true values (what
    ``collect()`` of the stream and Spark engines returns).  ``plan`` has the engine
    release's ``header``, ``masked``, ``kept``, ``schema``, ``sensitive``, ``parameters``
    and ``metadata``; ``custody`` (a :class:`~privlab.release.base.Custody`) gets the truth."""
    import dataclasses

    import pandas as pd

    from privlab.data.table import Table
    from privlab.release.base import PublishedTable, release_class

    kept = {c: (plan.schema[c], codes[:, j]) for j, c in enumerate(plan.kept)}
    table = masked_table(plan.header, plan.masked, masked, kept, plan.sensitive)
    meta = {"parameters": dict(plan.parameters), **plan.metadata}
    release = release_class("masking")._from_published(meta, {"masked": PublishedTable(table)})
    frame = pd.DataFrame({c: truth[:, j] for j, c in enumerate(plan.masked)})
    return release.with_custody(dataclasses.replace(custody, truth=Table.from_pandas(frame)), None)
