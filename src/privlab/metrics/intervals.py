"""Confidence intervals around attack success rates and the residual risk over a control.

* **Wilson score interval** (Wilson 1927, "Probable inference, the law of succession, and
  statistical inference", JASA 22: 209-212): for ``k`` successes in ``n`` trials,
  ``p = k/n`` and ``z`` the two-sided normal quantile of the level,

  ``(p + z^2/(2n) -/+ z sqrt(p(1-p)/n + z^2/(4n^2))) / (1 + z^2/n)``.

  It stays inside [0, 1], is never empty and keeps close to its nominal coverage for small
  ``n`` and rates near 0 or 1, where the Wald interval ``p -/+ z sqrt(p(1-p)/n)`` fails.
  Anonymeter (Giomi et al. 2023, PoPETs 2023(2)) reports every attack rate with it.
* **Residual risk** (Anonymeter's ``residual_success``, ``anonymeter/stats/confidence.py``
  of github.com/statice/anonymeter): ``(attack - control) / (1 - control)``, the share of
  what the control attacker gets wrong that the attack gets right.  Its interval is
  Anonymeter's: each rate is represented by the centre ``c`` and half-width ``e`` of its
  Wilson interval, the residual is evaluated at the centres, and the half-widths are
  propagated to first order,
  ``e_r = sqrt((e_a / (1 - c_c))^2 + (e_c (c_a - 1) / (1 - c_c)^2)^2)``.

* **Difference of two independent proportions** (Newcombe 1998, "Interval estimation for
  the difference between independent proportions: comparison of eleven methods", Statistics
  in Medicine 17: 873-890, method 10, the hybrid score interval): with ``p1 = k1/n1``,
  ``p2 = k2/n2`` and their Wilson intervals ``(l1, u1)``, ``(l2, u2)``,

  ``p1 - p2 - sqrt((p1 - l1)^2 + (u2 - p2)^2)``, ``p1 - p2 + sqrt((u1 - p1)^2 + (p2 - l2)^2)``.

  It stays inside [-1, 1], and its coverage is close to nominal where the Wald interval's is
  not (small samples, rates near 0 or 1).

Caveats a reader of the numbers should know.  The intervals treat the evaluated rows as
independent trials, as Anonymeter does; the rows of one Anatomy group or generalized class
are not (their hits are correlated), so the intervals are somewhat too narrow when groups
are small and many.  The propagation assumes independent attack and control rates; when
both attack the same rows (privlab's control does) their errors are positively correlated
and the residual's interval is conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from privlab.errors import ParameterError


def _z(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ParameterError(f"the confidence level must lie in (0, 1), got {level!r}")
    # the standard library's normal quantile (Wichura's AS241, full double precision): scipy.stats
    # took 1.2 s to import, in every command that reports an interval
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson(successes: Any, n: Any, level: float = 0.95) -> tuple[Any, Any]:
    """The Wilson score interval of a binomial proportion (Wilson 1927).

    Parameters
    ----------
    successes
        Number of successes ``k`` (``0 <= k <= n``); may be fractional (an expected count,
        e.g. accuracy with ties broken at random) and may be an array.
    n
        Number of trials (an integer ``>= 0``, or an array of them).  ``n = 0`` gives the
        uninformative interval ``(0, 1)``.
    level
        Confidence level in (0, 1).

    Returns
    -------
    (low, high)
        Floats for scalar inputs, arrays for array inputs.  The result equals scipy's
        ``binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")``.
    """
    z = _z(level)
    k = np.asarray(successes, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(nn))):
        raise ParameterError("successes and n must be finite numbers")
    if np.any(nn < 0) or np.any(nn != np.round(nn)):
        raise ParameterError(f"n must be a whole number >= 0, got {n!r}")
    if np.any(k < 0) or np.any(k > nn):
        raise ParameterError(f"successes must lie in [0, n], got {successes!r} of {n!r}")
    empty = nn == 0
    m = np.where(empty, 1.0, nn)
    p = k / m
    denom = 1.0 + z * z / m
    centre = (p + z * z / (2.0 * m)) / denom
    half = z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / m + z * z / (4.0 * m * m)) / denom
    # exact ends at k = 0 and k = n (the formula gives them up to rounding)
    low = np.where(empty | (k == 0), 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(empty | (k == nn), 1.0, np.clip(centre + half, 0.0, 1.0))
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a confidence interval ``[low, high]`` at ``level``."""

    value: float
    low: float
    high: float
    level: float = 0.95
    n: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (nan becomes None)."""
        return {
            "value": _finite(self.value),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "level": self.level,
            "n": self.n,
        }


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def rate(successes: float, n: int, level: float = 0.95) -> Estimate:
    """The observed rate ``successes / n`` with its Wilson interval (nan when ``n = 0``)."""
    low, high = wilson(successes, n, level)
    value = float(successes) / n if n else float("nan")
    return Estimate(value=value, low=low, high=high, level=level, n=int(n))


def difference(
    successes1: float, n1: int, successes2: float, n2: int, level: float = 0.95
) -> Estimate:
    """``successes1 / n1 - successes2 / n2`` with Newcombe's hybrid score interval (Newcombe
    1998, method 10; see the module docstring), the two samples independent.

    Parameters
    ----------
    successes1, n1, successes2, n2
        Successes and trials of each sample (as for :func:`wilson`; fractional successes are
        taken); each ``n`` at least 1.
    level
        Confidence level in (0, 1).
    """
    if n1 < 1 or n2 < 1:
        raise ParameterError(f"each sample needs a trial, got n1 = {n1!r} and n2 = {n2!r}")
    l1, u1 = wilson(successes1, n1, level)
    l2, u2 = wilson(successes2, n2, level)
    p1, p2 = float(successes1) / n1, float(successes2) / n2
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Estimate(value=d, low=max(low, -1.0), high=min(high, 1.0), level=level, n=None)


def residual_risk(attack_rate: Estimate, control_rate: Estimate) -> Estimate:
    """``(attack - control) / (1 - control)`` with Anonymeter's interval.

    Parameters
    ----------
    attack_rate, control_rate
        Success rates with their Wilson intervals (:func:`rate`), at the same level.

    Returns
    -------
    Estimate
        ``value`` is the residual of the observed rates.  The interval follows Anonymeter's
        ``residual_success`` (``anonymeter/stats/confidence.py``): centred on the residual of
        the two Wilson centres ``c = (low + high) / 2``, with half-width
        ``sqrt((e_a / (1 - c_c))^2 + (e_c (c_a - 1) / (1 - c_c)^2)^2)`` where
        ``e = (high - low) / 2``.  The upper end is capped at 1 (the residual cannot exceed
        it).  Unlike Anonymeter, which clips to [0, 1], a negative value or lower end is
        kept: it says the attack did no better than the control.  A control that is always
        right (rate 1) leaves nothing to improve on: value and interval are nan.
    """
    if attack_rate.level != control_rate.level:
        raise ParameterError(
            f"the two rates have different confidence levels ({attack_rate.level} and "
            f"{control_rate.level})"
        )
    nan = float("nan")
    a, c = attack_rate.value, control_rate.value
    value = (a - c) / (1.0 - c) if c < 1.0 else nan
    ca, ea = (attack_rate.low + attack_rate.high) / 2, (attack_rate.high - attack_rate.low) / 2
    cc, ec = (control_rate.low + control_rate.high) / 2, (control_rate.high - control_rate.low) / 2
    if not cc < 1.0 or not math.isfinite(value):
        return Estimate(nan, nan, nan, attack_rate.level)
    centre = (ca - cc) / (1.0 - cc)
    err = math.hypot(ea / (1.0 - cc), ec * (ca - 1.0) / (1.0 - cc) ** 2)
    return Estimate(value, centre - err, min(centre + err, 1.0), attack_rate.level)
