"""Differential-privacy mechanisms: Laplace, two-sided geometric, exponential (+ two-phase).

Each mechanism is a frozen dataclass that states its privacy cost (``epsilon``), bias and
variance analytically and draws noise with :meth:`randomize` / :meth:`select`.  ``rng=None``
draws from the operating system's CSPRNG (:mod:`privlab.dp.secure`); an ``int`` or a
``numpy.random.Generator`` makes the noise reproducible (for experiments only).

``epsilon = inf`` is allowed and means "no noise" (the exact answer; the exponential
mechanism returns an arg-max, ties broken uniformly).  ``epsilon <= 0`` or NaN raises
:class:`~privlab.errors.ParameterError`.

References: Dwork, McSherry, Nissim & Smith (2006) for Laplace; Ghosh, Roughgarden &
Sundararajan (2009) for the geometric mechanism; McSherry & Talwar (2007) for the exponential
mechanism; Friedman & Schuster (KDD 2010) for the two-phase continuous version.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privlab._rng import RngLike, as_generator
from privlab.dp import secure
from privlab.errors import ParameterError

if TYPE_CHECKING:
    from privlab.dp.accountant import BudgetAccountant


def check_epsilon(epsilon: float, *, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a positive number or ``inf``."""
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {epsilon!r}") from None
    if math.isnan(e) or e <= 0:
        raise ParameterError(f"{name} must be positive (or inf for no noise), got {epsilon!r}")
    return e


def check_sensitivity(sensitivity: float) -> float:
    s = float(sensitivity)
    if math.isnan(s) or s <= 0 or math.isinf(s):
        raise ParameterError(f"sensitivity must be a positive finite number, got {sensitivity!r}")
    return s


def _charge(accountant: BudgetAccountant | None, epsilon: float, label: str) -> None:
    if accountant is not None:
        accountant.spend(epsilon, label)


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism: ``f(D) + Lap(b)`` per coordinate with ``b = sensitivity/epsilon``.

    ``sensitivity`` is the L1 sensitivity of the whole query vector.  Unbiased, variance
    ``2 b^2`` per coordinate.
    """

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))

    @property
    def scale(self) -> float:
        """The Laplace scale ``b = sensitivity / epsilon`` (0 when epsilon is inf)."""
        return 0.0 if math.isinf(self.epsilon) else self.sensitivity / self.epsilon

    @property
    def privacy_cost(self) -> float:
        """epsilon-DP for a query of L1 sensitivity ``sensitivity`` (Dwork et al. 2006)."""
        return self.epsilon

    @property
    def bias(self) -> float:
        """The noise has mean 0, so the output is unbiased (before any post-processing)."""
        return 0.0

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance ``2 b^2``."""
        return 2.0 * self.scale**2

    def tail_bound(self, beta: float) -> float:
        """``t`` with ``P(|noise| > t) = beta`` for one coordinate: ``b ln(1/beta)``."""
        beta = _check_beta(beta)
        return self.scale * math.log(1.0 / beta)

    def describe(self) -> dict[str, object]:
        """Mechanism, privacy cost, noise scale, bias and variance (per coordinate)."""
        return {
            "mechanism": "laplace",
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "bias": self.bias,
            "variance": self.variance,
        }

    def randomize(
        self,
        value: float | np.ndarray,
        *,
        rng: RngLike = None,
        accountant: BudgetAccountant | None = None,
        label: str = "laplace",
    ) -> np.ndarray:
        """``value`` plus i.i.d. Laplace(0, b) noise (a float array of the same shape)."""
        x = np.asarray(value, dtype=float)
        _charge(accountant, self.epsilon, label)
        if self.scale == 0.0:
            return x.copy()
        return x + laplace_noise(self.scale, x.shape, rng)


@dataclass(frozen=True)
class Geometric:
    """The two-sided geometric (discrete Laplace) mechanism for integer queries.

    Adds ``Z`` with ``P(Z = z) = (1 - a) / (1 + a) * a^|z|``, ``a = exp(-epsilon/sensitivity)``.
    Integer output cannot leak through floating-point representation (Mironov 2012), so this
    is privlab's default for counts.  Unbiased, variance ``2 a / (1 - a)^2``.
    """

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        s = self.sensitivity
        if isinstance(s, bool) or int(s) != s or s < 1:
            raise ParameterError(f"geometric sensitivity must be a positive integer, got {s!r}")
        object.__setattr__(self, "sensitivity", int(s))

    @property
    def alpha(self) -> float:
        """``a = exp(-epsilon / sensitivity)`` (0 when epsilon is inf)."""
        return 0.0 if math.isinf(self.epsilon) else math.exp(-self.epsilon / self.sensitivity)

    @property
    def privacy_cost(self) -> float:
        """epsilon-DP for an integer query of L1 sensitivity ``sensitivity``."""
        return self.epsilon

    @property
    def bias(self) -> float:
        """The noise is symmetric around 0, so the output is unbiased."""
        return 0.0

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance ``2 a / (1 - a)^2``."""
        a = self.alpha
        return 2.0 * a / (1.0 - a) ** 2

    @property
    def laplace_scale(self) -> float:
        """The Laplace scale with the same variance, ``sqrt(a) / (1 - a)``.

        Used by the post-processing estimators of :mod:`privlab.dp.estimators`, which are
        derived for Laplace noise; it tends to ``sensitivity / epsilon`` as epsilon -> 0.
        """
        return math.sqrt(self.variance / 2.0)

    def tail_bound(self, beta: float) -> int:
        """The smallest integer ``t`` with ``P(|Z| > t) <= beta``.

        Uses ``P(|Z| > t) = 2 a^(t+1) / (1 + a)``.
        """
        beta = _check_beta(beta)
        a = self.alpha
        if a == 0.0:
            return 0
        t = math.log(beta * (1 + a) / 2.0) / math.log(a) - 1.0
        return max(math.ceil(t - 1e-12), 0)

    def describe(self) -> dict[str, object]:
        """Mechanism, privacy cost, noise parameter, bias and variance (per coordinate)."""
        return {
            "mechanism": "geometric",
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "alpha": self.alpha,
            "bias": self.bias,
            "variance": self.variance,
        }

    def pmf(self, z: np.ndarray | int) -> np.ndarray:
        """``P(Z = z)`` of the noise."""
        a = self.alpha
        z = np.abs(np.asarray(z))
        if a == 0.0:
            return (z == 0).astype(float)
        return (1 - a) / (1 + a) * a**z

    def randomize(
        self,
        value: int | np.ndarray,
        *,
        rng: RngLike = None,
        accountant: BudgetAccountant | None = None,
        label: str = "geometric",
    ) -> np.ndarray:
        """``value`` plus two-sided geometric noise (an int64 array)."""
        x = np.asarray(value)
        if x.size and not np.issubdtype(x.dtype, np.integer):
            if not np.all(np.equal(np.mod(x, 1), 0)):
                raise ParameterError("the geometric mechanism needs integer values")
        x = x.astype(np.int64)
        _charge(accountant, self.epsilon, label)
        if self.alpha == 0.0:
            return x.copy()
        return x + geometric_noise(self.alpha, x.shape, rng)


@dataclass(frozen=True)
class Exponential:
    """The exponential mechanism: outcome ``r`` with probability ∝ exp(ε q(r) / (2 Δq)).

    ``sensitivity`` is Δq, the largest change of any score when one record changes
    (Friedman & Schuster 2010, "Exponential Mechanism").  Costs ``epsilon``.
    """

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))

    @property
    def privacy_cost(self) -> float:
        """epsilon-DP when every score changes by at most ``sensitivity`` (McSherry-Talwar)."""
        return self.epsilon

    def log_weights(self, scores: np.ndarray) -> np.ndarray:
        q = _check_scores(scores)
        return self.epsilon * q / (2.0 * self.sensitivity)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        """Selection probabilities; with epsilon = inf, uniform over the arg-max."""
        q = _check_scores(scores)
        if math.isinf(self.epsilon):
            top = q == q.max()
            return top / top.sum()
        return _softmax(self.log_weights(q))

    def expected_score(self, scores: np.ndarray) -> float:
        """The exact expected score ``sum_r P(r) q(r)`` of the selected outcome."""
        q = _check_scores(scores)
        p = self.probabilities(q)
        return float(np.sum(p[p > 0] * q[p > 0]))

    def bias(self, scores: np.ndarray) -> float:
        """Expected loss of score against the best outcome, ``E[q(r)] - max_r q(r)`` (<= 0)."""
        q = _check_scores(scores)
        return self.expected_score(q) - float(q.max())

    def variance(self, scores: np.ndarray) -> float:
        """Variance of the selected outcome's score."""
        q = _check_scores(scores)
        p = self.probabilities(q)
        keep = p > 0
        m = float(np.sum(p[keep] * q[keep]))
        return float(np.sum(p[keep] * (q[keep] - m) ** 2))

    def utility_bound(self, n_outcomes: int, beta: float) -> float:
        """Score gap ``g`` with ``P(q(r) <= max q - g) <= beta`` (McSherry & Talwar 2007).

        ``g = 2 Δq (ln n_outcomes + ln(1/beta)) / epsilon`` (0 when epsilon is inf).
        """
        beta = _check_beta(beta)
        if int(n_outcomes) < 1:
            raise ParameterError(f"n_outcomes must be positive, got {n_outcomes!r}")
        if math.isinf(self.epsilon):
            return 0.0
        return 2.0 * self.sensitivity * (math.log(int(n_outcomes)) - math.log(beta)) / self.epsilon

    def describe(self) -> dict[str, object]:
        return {
            "mechanism": "exponential",
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
        }

    def select(
        self,
        scores: np.ndarray,
        *,
        rng: RngLike = None,
        accountant: BudgetAccountant | None = None,
        label: str = "exponential",
    ) -> int:
        """Sample the index of one outcome."""
        p = self.probabilities(scores)
        _charge(accountant, self.epsilon, label)
        return sample_index(p, rng)

    def choose(
        self,
        data: Any,
        outcomes: Sequence[Any],
        utility: Callable[[Any, Any], float],
        *,
        rng: RngLike = None,
        accountant: BudgetAccountant | None = None,
        label: str = "exponential",
    ) -> Any:
        """McSherry & Talwar's mechanism as Friedman & Schuster (2010) state it: pick an
        outcome of ``outcomes`` with probability ∝ exp(ε q(data, r) / (2Δq)), ``q = utility``.

        ``sensitivity`` must bound ``|q(D, r) - q(D', r)|`` over neighbouring ``D, D'`` for
        every ``r``: the caller's claim, which privlab cannot check.  Returns the outcome.
        """
        outcomes = list(outcomes)
        if not outcomes:
            raise ParameterError("the exponential mechanism needs at least one outcome")
        scores = np.array([float(utility(data, r)) for r in outcomes])
        return outcomes[self.select(scores, rng=rng, accountant=accountant, label=label)]

    def select_in_ranges(
        self,
        edges: np.ndarray,
        scores: np.ndarray,
        *,
        rng: RngLike = None,
        accountant: BudgetAccountant | None = None,
        label: str = "exponential ranges",
    ) -> float:
        """Two-phase exponential mechanism over a continuous domain (Friedman & Schuster 2010).

        The domain ``[edges[0], edges[-1]]`` is cut into ranges ``[edges[i], edges[i+1])`` on
        which the score is constant, ``scores[i]``.  Phase 1 picks a range with probability
        ∝ ``|R_i| exp(ε q_i / (2Δq))`` (:meth:`range_probabilities`); phase 2 draws a point
        uniformly inside it.  Costs ``epsilon`` once.
        """
        edges = np.asarray(edges, dtype=float)
        p = self.range_probabilities(edges, scores)
        _charge(accountant, self.epsilon, label)
        i = sample_index(p, rng)
        u = secure.uniform() if rng is None else as_generator(rng).random()
        return float(edges[i] + u * (edges[i + 1] - edges[i]))

    def range_probabilities(self, edges: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Phase-1 probabilities ``|R_i| exp(ε q_i/(2Δq)) / Σ_j |R_j| exp(ε q_j/(2Δq))``.

        Seed 004's worked example (att in [0, 12], Max criterion, Δq = 1) prints weights
        ``exp(q_i) |R_i|`` for "ε = 1.0", i.e. it omits the factor 1/2 of the mechanism; its
        probabilities (0.063, 0.085, 0.467, ...) are this function's with ε/(2Δq) = 1.
        """
        edges = np.asarray(edges, dtype=float)
        q = _check_scores(scores)
        if edges.ndim != 1 or edges.size != q.size + 1:
            raise ParameterError("need len(edges) == len(scores) + 1")
        widths = np.diff(edges)
        if np.any(widths < 0) or not np.all(np.isfinite(edges)):
            raise ParameterError("range edges must be finite and non-decreasing")
        if widths.sum() <= 0:
            raise ParameterError("the continuous domain has zero width")
        with np.errstate(divide="ignore"):
            logw = np.log(widths)
        if math.isinf(self.epsilon):
            top = (q == q[widths > 0].max()) & (widths > 0)
            w = np.where(top, widths, 0.0)
            return w / w.sum()
        return _softmax(logw + self.log_weights(q))


def _check_scores(scores: np.ndarray) -> np.ndarray:
    q = np.asarray(scores, dtype=float)
    if q.ndim != 1 or q.size == 0:
        raise ParameterError("the exponential mechanism needs a 1-d array of at least one score")
    if not np.all(np.isfinite(q)):
        bad = q[~np.isfinite(q)][0]
        raise ParameterError(f"a score of the exponential mechanism is {bad} (must be finite)")
    return q


def _check_beta(beta: float) -> float:
    b = float(beta)
    if not 0.0 < b < 1.0:
        raise ParameterError(f"beta must be in (0, 1), got {beta!r}")
    return b


def _softmax(logw: np.ndarray) -> np.ndarray:
    m = np.max(logw)
    w = np.exp(logw - m)
    return w / w.sum()


def laplace_noise(scale: float, shape: tuple[int, ...], rng: RngLike = None) -> np.ndarray:
    """Laplace(0, scale) noise; from the OS CSPRNG when ``rng`` is None."""
    if rng is not None:
        return as_generator(rng).laplace(0.0, scale, size=shape)
    u = secure.uniform(shape) - 0.5
    return -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))


def geometric_noise(alpha: float, shape: tuple[int, ...], rng: RngLike = None) -> np.ndarray:
    """Two-sided geometric noise: the difference of two i.i.d. Geometric(1 - alpha) draws."""
    p = 1.0 - alpha
    if rng is not None:
        g = as_generator(rng)
        return g.geometric(p, size=shape).astype(np.int64) - g.geometric(p, size=shape)
    # inverse CDF of the geometric distribution on {0, 1, ...}: floor(log U / log alpha)
    u1, u2 = secure.uniform(shape), secure.uniform(shape)
    la = math.log(alpha)
    return np.floor(np.log(u1) / la).astype(np.int64) - np.floor(np.log(u2) / la).astype(np.int64)


def sample_index(p: np.ndarray, rng: RngLike = None) -> int:
    """Draw one index with probabilities ``p`` (OS CSPRNG when ``rng`` is None)."""
    u = secure.uniform() if rng is None else as_generator(rng).random()
    c = np.cumsum(p)
    return int(min(np.searchsorted(c, u * c[-1], side="right"), len(p) - 1))
