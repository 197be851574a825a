"""Zero-concentrated differential privacy (zCDP): conversions to and from (epsilon, delta).

A mechanism is rho-zCDP (Bun & Steinke 2016, Definition 1.1) when, for neighbouring inputs,
the Renyi divergence of order ``alpha`` between its output laws is at most ``rho alpha`` for
every ``alpha > 1``.  privlab uses it for the (discrete) Gaussian mechanisms and composes it
in :class:`~privlab.dp.accountant.ZCDPAccountant`:

* composition: rho's add up (Bun & Steinke 2016, Lemma 2.3; Lemma 1.7 in their overview);
* pure DP: an epsilon-DP mechanism is ``epsilon^2 / 2``-zCDP (their Proposition 1.4,
  :func:`rho_from_epsilon`), so pure spends compose with zCDP ones.  (Loose: the exact
  conversion is ``epsilon tanh(epsilon / 2)``, smaller, e.g. 0.46 against 0.5 at epsilon 1;
  privlab keeps the published ``epsilon^2 / 2``, which over-charges and is therefore safe.)
* to (epsilon, delta)-DP, two conversions, named in every :class:`Conversion`:

  - ``"tight"``: Canonne, Kamath & Steinke (2020), Corollary 13 (from their Proposition 12,
    the conversion of Renyi DP of order ``alpha`` with ``tau = alpha rho``)::

        delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1)
                                * (1 - 1/alpha)^alpha

    The logarithm of the bracket is strictly convex in ``alpha`` (second derivative
    ``2 rho + 1/(alpha - 1) - 1/alpha > 0``) and its derivative is ``(2 alpha - 1) rho -
    epsilon + log(1 - 1/alpha)``, increasing from -inf to +inf: the infimum is at its one
    root, found by bisection to the last float (:func:`delta_from_rho`).  ``epsilon`` for a
    given ``delta`` is the root of the decreasing ``delta(epsilon)``, by bisection again
    (:func:`epsilon_from_rho`).
  - ``"simple"``: ``epsilon = rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016,
    Proposition 1.3).  Always at least the tight one (the tight bracket at ``alpha = (epsilon +
    rho) / (2 rho)`` is the simple bound's ``exp(-(epsilon - rho)^2 / (4 rho))`` times
    ``(1 - 1/alpha)^(alpha - 1) / alpha < 1``), e.g. rho = 0.5, delta = 1e-6: 5.757 simple
    against 5.222 tight.

Every function takes plain floats; ``rho = inf`` gives ``delta = 1`` (nothing is promised),
``rho = 0`` gives ``delta = 0`` at every ``epsilon >= 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privlab.errors import ParameterError

#: the conversions of :func:`epsilon_from_rho`, and where they are published
CONVERSIONS = {
    "tight": "Canonne, Kamath & Steinke 2020, Corollary 13",
    "simple": "Bun & Steinke 2016, Proposition 1.3",
}


def _check_rho(rho: float) -> float:
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise ParameterError(f"rho must be a number, got {rho!r}") from None
    if math.isnan(r) or r < 0 or isinstance(rho, bool):
        raise ParameterError(f"rho must be >= 0 (or inf), got {rho!r}")
    return r


def _check_delta(delta: float) -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise ParameterError(f"delta must be a number, got {delta!r}") from None
    if not 0.0 < d < 1.0:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return d


def _check_epsilon(epsilon: float) -> float:
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"epsilon must be a number, got {epsilon!r}") from None
    if math.isnan(e) or e < 0 or isinstance(epsilon, bool):
        raise ParameterError(f"epsilon must be >= 0, got {epsilon!r}")
    return e


def rho_from_epsilon(epsilon: float) -> float:
    """The zCDP of an epsilon-DP mechanism: ``epsilon^2 / 2`` (Bun & Steinke 2016, Prop. 1.4)."""
    e = _check_epsilon(epsilon)
    return e * e / 2.0


def _log_bracket(alpha: float, rho: float, epsilon: float) -> float:
    """``log`` of CKS 2020 Corollary 13's bracket at ``alpha``."""
    return (
        (alpha - 1.0) * (alpha * rho - epsilon)
        - math.log(alpha - 1.0)
        + alpha * math.log1p(-1.0 / alpha)
    )


def best_alpha(rho: float, epsilon: float) -> float:
    """The order ``alpha > 1`` at which CKS 2020 Corollary 13's bracket is smallest: the root
    of ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)``, bisected to adjacent floats."""
    r, e = _check_rho(rho), _check_epsilon(epsilon)
    if not 0 < r < math.inf:
        raise ParameterError(f"the best order needs 0 < rho < inf, got {rho!r}")

    def slope(a: float) -> float:
        return (2.0 * a - 1.0) * r - e + math.log1p(-1.0 / a)

    lo, hi = 1.0, (e + 1.0) / (2.0 * r) + 2.0  # slope(hi) >= 1 + 3 rho - log 2 > 0
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if slope(mid) < 0:
            lo = mid
        else:
            hi = mid


def delta_from_rho(rho: float, epsilon: float) -> float:
    """The ``delta`` at which rho-zCDP implies (epsilon, delta)-DP, by CKS 2020 Corollary 13
    (the infimum over ``alpha`` in the module docstring), at most 1."""
    r, e = _check_rho(rho), _check_epsilon(epsilon)
    if r == 0:
        return 0.0
    if math.isinf(r):
        return 1.0
    log_delta = _log_bracket(best_alpha(r, e), r, e)
    return 1.0 if log_delta >= 0 else math.exp(log_delta)


def _simple_epsilon(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def epsilon_from_rho(rho: float, delta: float, method: str = "tight") -> float:
    """The smallest ``epsilon`` with rho-zCDP implying (epsilon, delta)-DP by ``method``.

    Parameters
    ----------
    rho
        The zCDP parameter (``inf``: no finite epsilon, returns inf).
    delta
        In (0, 1).
    method
        ``"tight"`` (CKS 2020 Corollary 13, by bisection on ``epsilon``: ``delta(epsilon)``
        decreases) or ``"simple"`` (Bun & Steinke 2016 Prop. 1.3, closed form).
    """
    r, d = _check_rho(rho), _check_delta(delta)
    if method not in CONVERSIONS:
        raise ParameterError(f"unknown conversion {method!r}; choose tight or simple")
    if r == 0:
        return 0.0
    if math.isinf(r):
        return math.inf
    hi = _simple_epsilon(r, d)
    if method == "simple":
        return hi
    if delta_from_rho(r, 0.0) <= d:
        return 0.0
    lo = 0.0  # delta(lo) > d >= delta(hi): the simple bound is valid for the tight delta
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if delta_from_rho(r, mid) <= d:
            hi = mid
        else:
            lo = mid


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The largest ``rho`` whose zCDP implies (epsilon, delta)-DP by CKS 2020 Corollary 13
    (``delta_from_rho`` increases with ``rho``: bisection), e.g. to set a zCDP budget from an
    (epsilon, delta) target."""
    e, d = _check_epsilon(epsilon), _check_delta(delta)
    if e == 0:
        return 0.0
    lo, hi = 0.0, e + 1.0
    while delta_from_rho(hi, e) <= d:  # pragma: no cover - delta(e + 1, e) is near 1
        lo, hi = hi, 2.0 * hi
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return lo
        if delta_from_rho(mid, e) <= d:
            lo = mid
        else:
            hi = mid


@dataclass(frozen=True)
class Conversion:
    """A zCDP guarantee stated as (epsilon, delta)-DP, with the conversion that gave it."""

    rho: float
    epsilon: float
    delta: float
    method: str

    @property
    def source(self) -> str:
        """Where the conversion is published."""
        return CONVERSIONS[self.method]

    def to_dict(self) -> dict[str, object]:
        return {
            "rho": self.rho,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "source": self.source,
        }


def to_epsilon_delta(rho: float, delta: float, method: str = "tight") -> Conversion:
    """rho-zCDP as (epsilon, delta)-DP by ``method`` (:func:`epsilon_from_rho`)."""
    eps = epsilon_from_rho(rho, delta, method)
    return Conversion(_check_rho(rho), eps, _check_delta(delta), method)
