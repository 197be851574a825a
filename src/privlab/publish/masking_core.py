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
from collections.abc import Sequence
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
    k = _number("noise", noise, 0.0) / 100
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
    if method == "additive":
        masked = a + z * (k * np.sqrt(np.diag(cov)))
        return NoiseResult(_out(masked, flat), cols, method, float(noise), None, w is not None)
    vals, vecs = np.linalg.eigh(cov)
    # eigenvalues within rounding of 0 (numpy's matrix_rank rule) are the zero directions of
    # a singular S: no noise along them, so exact linear relations between columns are kept
    vals[vals <= vals.max() * m * np.finfo(np.float64).eps] = 0.0
    factor = vecs * np.sqrt(k * vals)  # factor @ factor.T = alpha S
    y = a + z @ factor.T
    if method == "correlated":
        return NoiseResult(_out(y, flat), cols, method, float(noise), None, w is not None)
    c = math.sqrt((total - 1.0) / (total * (1.0 + k) - 1.0))
    masked = c * y + (1.0 - c) * mean
    return NoiseResult(_out(masked, flat), cols, method, float(noise), c, w is not None)


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
