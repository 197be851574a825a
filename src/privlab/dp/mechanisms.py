"""Differential-privacy mechanisms: Laplace, two-sided geometric, exponential (+ two-phase),
and the (discrete) Gaussian under zero-concentrated DP.

Each mechanism is a frozen dataclass that states its privacy cost (``epsilon``, or ``rho``
for the zCDP mechanisms :class:`DiscreteGaussian` and :class:`Gaussian`), bias and variance
analytically and draws noise with :meth:`randomize` / :meth:`select`.  ``rng=None``
draws from the operating system's CSPRNG (:mod:`privlab.dp.secure`); an ``int`` or a
``numpy.random.Generator`` makes the noise reproducible (for experiments only).

Noise is floating-point safe (Mironov 2012).  Both additive mechanisms draw integers from the
exact discrete-Laplace sampler of Canonne, Kamath & Steinke (2020)
(:mod:`privlab.dp.samplers`).  :class:`Geometric` adds them to integer queries.
:class:`Laplace` rounds a real query to a power-of-two grid ``g`` (about ``sensitivity /
2^20``) and adds ``g`` times a discrete-Laplace integer, so every output is an exact
multiple of ``g``: the outputs of neighbouring inputs share one support, and the rounding
(which can move a neighbour by one more grid step) is paid for in the noise scale, so
``epsilon`` is exact.  An epsilon too small for exact sampling (Laplace: below about 2^-28;
Geometric: a scale sensitivity/epsilon beyond 2^48) is refused rather than served with noise
that is not there.

``epsilon = inf`` is allowed and means "no noise" (the exact answer; the exponential
mechanism returns an arg-max, ties broken uniformly).  ``epsilon <= 0`` or NaN raises
:class:`~privlab.errors.ParameterError`.

References: Dwork, McSherry, Nissim & Smith (2006) for Laplace; Ghosh, Roughgarden &
Sundararajan (2009) for the geometric mechanism; McSherry & Talwar (2007) for the exponential
mechanism; Friedman & Schuster (KDD 2010) for the two-phase continuous version; Canonne,
Kamath & Steinke (2020) for the discrete Gaussian and Bun & Steinke (2016) for zCDP.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privlab._rng import RngLike, as_generator
from privlab.dp import secure
from privlab.dp.samplers import (
    MAX_DENOMINATOR,
    SIGMA2_MAX,
    discrete_gaussian,
    discrete_laplace,
    exact_sigma2,
    round_up_sigma2,
)
from privlab.errors import ParameterError

if TYPE_CHECKING:
    from privlab.dp.accountant import BudgetAccountant, ZCDPAccountant

    Accountant = BudgetAccountant | ZCDPAccountant


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


def _positive_int_sensitivity(s: Any, what: str) -> int:
    """The sensitivity of an integer query: a positive integer (``True`` is not one)."""
    if isinstance(s, bool) or int(s) != s or s < 1:
        raise ParameterError(f"{what} must be a positive integer, got {s!r}")
    return int(s)


@dataclass(frozen=True)
class Mechanism:
    """The base of privlab's mechanisms: it checks epsilon and the sensitivity once, states
    the privacy cost, writes :meth:`describe` and charges the ledger.

    As in diffprivlib's ``DPMechanism`` (``mechanisms/base.py``) and OpenDP's measurements, a
    mechanism carries its own privacy map: ``privacy_cost`` is the epsilon it spends on a
    query whose sensitivity is ``sensitivity`` (an epsilon-DP guarantee, pure DP), or, where
    ``notion`` is "zcdp" (the Gaussian mechanisms), the rho of a rho-zCDP guarantee.  The
    accountant reads it off the mechanism (:meth:`_charge`).  A subclass names itself
    (``name``), may narrow the sensitivity (:meth:`_check_sensitivity`), does its one-time
    set-up in :meth:`_setup` and adds its own parameters to :meth:`describe` through
    :meth:`_describe`.  ``epsilon = inf`` means "no noise".
    """

    epsilon: float
    sensitivity: float = 1.0

    #: the mechanism's name in :meth:`describe` (and its default ledger label)
    name: ClassVar[str] = "mechanism"
    #: what ``privacy_cost`` measures: "pure" (epsilon-DP) or "zcdp" (rho-zCDP)
    notion: ClassVar[str] = "pure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", self._check_sensitivity(self.sensitivity))
        self._setup()

    @staticmethod
    def _check_sensitivity(sensitivity: Any) -> Any:
        return check_sensitivity(sensitivity)

    def _setup(self) -> None:
        """One-time work after the checks (a subclass refuses an epsilon it cannot serve)."""

    @property
    def privacy_cost(self) -> float:
        """epsilon-DP for a query of sensitivity ``sensitivity`` (rho-zCDP where ``notion``
        is "zcdp")."""
        return self.epsilon

    def _describe(self) -> dict[str, object]:
        return {}

    def _privacy(self) -> dict[str, object]:
        """The privacy parameter in :meth:`describe`: ``epsilon`` (``rho`` for zCDP)."""
        return {"epsilon": self.epsilon}

    def describe(self) -> dict[str, object]:
        """The mechanism's name, privacy cost, sensitivity and own parameters."""
        return {
            "mechanism": self.name,
            **self._privacy(),
            "sensitivity": self.sensitivity,
            **self._describe(),
        }

    def _charge(self, accountant: Accountant | None, label: str) -> None:
        """Charge ``accountant`` (if one is given) this mechanism's cost under ``label``: the
        accountant reads the cost off the mechanism (epsilon, or rho for zCDP)."""
        if accountant is not None:
            accountant.charge(self, label)


@dataclass(frozen=True)
class AdditiveMechanism(Mechanism):
    """A mechanism that adds noise independent of the input: its bias and variance are
    numbers (per coordinate), and so is ``noise_scale``, the Laplace scale that the
    post-processing estimators of :mod:`privlab.dp.estimators` take."""

    @property
    def bias(self) -> float:
        """The noise is symmetric around 0, so the output is unbiased."""
        return 0.0

    @property
    def variance(self) -> float:  # pragma: no cover - every subclass states its own
        raise NotImplementedError

    @property
    def mse(self) -> float:
        """Per-coordinate mean squared error, ``bias^2 + variance``."""
        return self.bias**2 + self.variance

    @property
    def noise_scale(self) -> float:
        """The Laplace scale the estimators of :mod:`privlab.dp.estimators` assume."""
        return math.sqrt(self.variance / 2.0)

    def _noise_parameters(self) -> dict[str, object]:
        return {}

    def _describe(self) -> dict[str, object]:
        return {**self._noise_parameters(), "bias": self.bias, "variance": self.variance}


#: The Laplace grid is ``2^(floor(log2 sensitivity) - GRID_BITS)``.
GRID_BITS = 20


def _scale_ratio(scale: Fraction, mech: Any) -> tuple[int, int]:
    """Integers ``(s, t)`` with ``t / s >= scale`` (exactly ``scale`` when it is an integer,
    otherwise larger by a relative 2^-20 at most), within the exact sampler's range."""
    # s = 1 when ceil(scale) is within 2^-20 of it (or equal); else a 2^-20 resolution
    s = 1 if scale.denominator == 1 or scale >= (1 << GRID_BITS) else 1 << GRID_BITS
    t = math.ceil(scale * s)
    if t > MAX_DENOMINATOR:
        smallest = float(Fraction(mech.epsilon) * scale * s / MAX_DENOMINATOR)
        raise ParameterError(
            f"{type(mech).__name__}(epsilon={mech.epsilon:g}, sensitivity={mech.sensitivity:g})"
            f": epsilon is too small to sample exactly (this mechanism needs epsilon >= "
            f"{smallest:.3g}); a float sampler would silently add no noise there"
        )
    return s, t


@dataclass(frozen=True)
class _DiscreteLaplaceNoise(AdditiveMechanism):
    """An additive mechanism whose noise is discrete Laplace, ``P(Z = z) ∝ a^|z|`` in steps
    of the output: drawn by the exact sampler with the scale ``t / s`` (in steps) that
    :func:`_scale_ratio` makes of a subclass's :meth:`_scale_steps`, once, at construction
    (an epsilon the sampler cannot serve is refused then)."""

    def _scale_steps(self) -> Fraction:  # pragma: no cover - every subclass states its own
        """The exact noise scale in output steps that ``t / s`` must reach."""
        raise NotImplementedError

    def _setup(self) -> None:
        if not math.isinf(self.epsilon):  # refuse an epsilon the sampler cannot serve, now
            object.__setattr__(self, "_st", _scale_ratio(self._scale_steps(), self))

    def _ratio(self) -> tuple[int, int]:
        """``(s, t)``: the discrete Laplace scale in steps is ``t / s`` (computed once,
        exactly)."""
        return self._st

    @property
    def alpha(self) -> float:
        """``a = exp(-s/t)``: the ratio of the noise pmf between neighbouring steps
        (``exp(-epsilon/sensitivity)`` up to 2^-20 for :class:`Geometric`; 0 for inf)."""
        if math.isinf(self.epsilon):
            return 0.0
        s, t = self._ratio()
        return math.exp(-s / t)

    def _tail_steps(self, beta: float) -> int:
        """The smallest number of steps ``k`` with ``P(|Z| > k) <= beta``, from
        ``P(|Z| > k) = 2 a^(k+1) / (1 + a)``."""
        beta = _check_beta(beta)
        a = self.alpha
        if a == 0.0:
            return 0
        k = math.log(beta * (1 + a) / 2.0) / math.log(a) - 1.0
        return max(math.ceil(k - 1e-12), 0)


@dataclass(frozen=True)
class Laplace(_DiscreteLaplaceNoise):
    """The Laplace mechanism, floating-point safe: ``f(D)`` on a grid plus discrete Laplace.

    ``sensitivity`` is the L1 sensitivity of the whole query vector.  Each coordinate is
    rounded to the grid ``g = 2^(floor(log2 sensitivity) - 20)`` and ``g Z`` is added, ``Z``
    discrete Laplace with ``P(Z = z) ∝ exp(-|z| s / t)`` and ``t / s >= (sensitivity/g + 1)
    / epsilon`` (equal when that is an integer, else larger by a relative 2^-20 at most):
    rounding moves a neighbour's grid value by at most ``sensitivity/g + 1`` steps, so the
    release is epsilon-DP exactly (the classic Laplace scale is ``sensitivity/epsilon``; this
    one is larger by the factor ``1 + g/sensitivity``, under one in a million).  Unbiased
    up to the rounding of the input (at most ``g/2``); variance ``2 g^2 a / (1 - a)^2`` per
    coordinate, ``a = exp(-s/t)``.  (Before privlab issue 31 the scale was ``g t``, ignoring
    ``s``: 2^20 times too much noise whenever the ratio was not an integer and below 2^20,
    e.g. epsilon = 2, 3 or 5 at sensitivity 1.)
    """

    epsilon: float
    sensitivity: float = 1.0

    name: ClassVar[str] = "laplace"

    def _scale_steps(self) -> Fraction:
        return (Fraction(self.sensitivity) / Fraction(self.grid) + 1) / Fraction(self.epsilon)

    @property
    def grid(self) -> float:
        """The output grid ``g``: every release is an exact multiple of it."""
        return math.ldexp(1.0, math.frexp(self.sensitivity)[1] - 1 - GRID_BITS)

    @property
    def scale(self) -> float:
        """The noise scale ``g t / s`` (about ``sensitivity / epsilon``; 0 when epsilon is
        inf)."""
        if math.isinf(self.epsilon):
            return 0.0
        s, t = self._ratio()
        return self.grid * t / s

    @property
    def noise_scale(self) -> float:
        """The noise scale :attr:`scale` (the estimators' Laplace scale)."""
        return self.scale

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance ``2 g^2 a / (1 - a)^2``."""
        a = self.alpha
        return 2.0 * self.grid**2 * a / (1.0 - a) ** 2

    def tail_bound(self, beta: float) -> float:
        """``t`` with ``P(|noise| > t) <= beta`` for one coordinate."""
        return self.grid * self._tail_steps(beta)

    def _noise_parameters(self) -> dict[str, object]:
        return {"scale": self.scale, "grid": self.grid}

    def randomize(
        self,
        value: float | np.ndarray,
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
        label: str = "laplace",
    ) -> np.ndarray:
        """``value`` on the grid plus discrete Laplace noise (a float array of its shape)."""
        x = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(x)):
            raise ParameterError("the Laplace mechanism needs finite values")
        if math.isinf(self.epsilon):
            self._charge(accountant, label)
            return x.copy()
        g = self.grid
        steps = np.rint(x / g)
        if steps.size and np.abs(steps).max() >= 2.0**52:
            raise ParameterError(
                f"a value of {np.abs(x).max():.3g} is too large for the Laplace grid "
                f"({g:.3g}): values must stay below {g * 2.0**52:.3g}"
            )
        self._charge(accountant, label)
        s, t = self._ratio()
        z = discrete_laplace(s, t, x.shape, rng)
        total = steps.astype(np.int64) + z
        if total.size and np.abs(total).max() >= (1 << 53):  # pragma: no cover - astronomical
            raise ParameterError("the noisy value left the exactly representable grid")
        return total.astype(np.float64) * g


@dataclass(frozen=True)
class Geometric(_DiscreteLaplaceNoise):
    """The two-sided geometric (discrete Laplace) mechanism for integer queries.

    Adds ``Z`` with ``P(Z = z) = (1 - a) / (1 + a) * a^|z|``, ``a = exp(-s/t)`` where
    ``t / s`` is ``sensitivity / epsilon`` (exactly when it is an integer, else rounded up by
    at most 2^-20, which only adds noise), drawn by the exact sampler of Canonne, Kamath &
    Steinke (2020).  Integer output cannot leak through floating-point representation
    (Mironov 2012), so this is privlab's default for counts.  Unbiased, variance
    ``2 a / (1 - a)^2``.
    """

    epsilon: float
    sensitivity: int = 1  # type: ignore[assignment]

    name: ClassVar[str] = "geometric"

    @staticmethod
    def _check_sensitivity(s: Any) -> int:
        return _positive_int_sensitivity(s, "geometric sensitivity")

    def _scale_steps(self) -> Fraction:
        return Fraction(self.sensitivity) / Fraction(self.epsilon)

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
        It is :attr:`noise_scale`.
        """
        return self.noise_scale

    def tail_bound(self, beta: float) -> int:
        """The smallest integer ``t`` with ``P(|Z| > t) <= beta``.

        Uses ``P(|Z| > t) = 2 a^(t+1) / (1 + a)``.
        """
        return self._tail_steps(beta)

    def _noise_parameters(self) -> dict[str, object]:
        return {"alpha": self.alpha}

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
        accountant: Accountant | None = None,
        label: str = "geometric",
    ) -> np.ndarray:
        """``value`` plus two-sided geometric noise (an int64 array)."""
        x = np.asarray(value)
        if x.size and not np.issubdtype(x.dtype, np.integer):
            if not np.all(np.equal(np.mod(x, 1), 0)):
                raise ParameterError("the geometric mechanism needs integer values")
        x = x.astype(np.int64)
        self._charge(accountant, label)
        if self.alpha == 0.0:
            return x.copy()
        s, t = self._ratio()
        return x + discrete_laplace(s, t, x.shape, rng)


# --- the Gaussian mechanisms under zero-concentrated DP ---------------------------------------
def check_rho(rho: float, *, name: str = "rho") -> float:
    """Validate a zCDP parameter: a positive number or ``inf`` (no noise)."""
    if isinstance(rho, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number, got {rho!r}")
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {rho!r}") from None
    if math.isnan(r) or r <= 0:
        raise ParameterError(f"{name} must be positive (or inf for no noise), got {rho!r}")
    return r


def _float_up(x: Fraction) -> float:
    """The smallest float at or above ``x`` (a charged rho is never rounded down)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def discrete_gaussian_moments(sigma2: Fraction | float) -> tuple[float, float]:
    """``(Z, Var)`` of ``N_Z(0, sigma^2)``: its normalizing constant ``sum_y exp(-y^2 / (2
    sigma^2))`` and its variance, to double precision.

    Summed over ``|y| <= 40 sigma + 2`` (the rest is below ``e^-800``) up to ``sigma^2 = 16``;
    above, ``sqrt(2 pi) sigma`` and ``sigma^2``: by Poisson summation both differ from the
    continuous Gaussian's by relative terms of order ``exp(-2 pi^2 sigma^2) < 1e-137``.  The
    variance is always below ``sigma^2`` (CKS 2020, Section 2.1), e.g. 0.2149 at
    ``sigma^2 = 1/4``.
    """
    s2 = float(sigma2)
    if s2 >= 16.0:
        return math.sqrt(2.0 * math.pi * s2), s2
    r = math.ceil(40.0 * math.sqrt(s2)) + 2
    y = np.arange(-r, r + 1, dtype=float)
    w = np.exp(-(y * y) / (2.0 * s2))
    z = math.fsum(w)
    return z, min(math.fsum(w * y * y) / z, s2)  # (a sum's rounding must not pass sigma^2)


@dataclass(frozen=True, init=False)
class _GaussianNoise(AdditiveMechanism):
    """An additive mechanism with discrete Gaussian noise whose privacy is rho-zCDP.

    ``epsilon`` is inf and not a parameter: Gaussian noise is epsilon-DP for no finite
    epsilon (its privacy loss is unbounded); the guarantee is ``rho`` (:attr:`privacy_cost`),
    charged to a :class:`~privlab.dp.accountant.ZCDPAccountant` (a pure-epsilon budget
    refuses it) and stated as (epsilon, delta)-DP by :mod:`privlab.dp.zcdp`.  ``rho = inf``
    means "no noise".
    """

    epsilon: float = field(default=math.inf, repr=False, compare=False)
    sensitivity: float = 1.0
    rho: float = math.inf

    notion: ClassVar[str] = "zcdp"

    def __init__(self, rho: float, sensitivity: float = 1.0) -> None:
        object.__setattr__(self, "epsilon", math.inf)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "rho", check_rho(rho))
        self.__post_init__()

    @property
    def privacy_cost(self) -> float:
        """rho-zCDP for a query of L2 sensitivity ``sensitivity``."""
        return self.rho

    def _privacy(self) -> dict[str, object]:
        return {"rho": self.rho}

    def _too_small(self, err: ParameterError, sigma2_per_rho: Fraction) -> ParameterError:
        smallest = float(sigma2_per_rho / SIGMA2_MAX)
        return ParameterError(
            f"{type(self).__name__}(rho={self.rho:g}, sensitivity={self.sensitivity:g}): rho is "
            f"too small to sample exactly (this mechanism needs rho >= {smallest:.3g}): {err}"
        )


@dataclass(frozen=True, init=False)
class DiscreteGaussian(_GaussianNoise):
    """The discrete Gaussian mechanism for integer queries: ``q(D) + Y``, ``Y`` drawn per
    coordinate from ``N_Z(0, sigma^2)``, ``P(Y = y) ∝ exp(-y^2 / (2 sigma^2))`` (Canonne,
    Kamath & Steinke 2020), by the exact sampler :func:`~privlab.dp.samplers.discrete_gaussian`.

    The constructor :meth:`from_sigma` builds it from ``sigma`` (or an exact ``sigma2``), with
    ``rho = sensitivity^2 / (2 sigma^2)`` (rounded up to a float).  Unbiased; the variance
    (:attr:`variance`) is below ``sigma^2`` (CKS 2020, Section 2.1).  Integer output, so no
    floating-point leak (Mironov 2012).

    Parameters
    ----------
    rho
        The zCDP parameter; ``sigma^2 = sensitivity^2 / (2 rho)`` (CKS 2020 Theorem 4: for an
        integer query of L2 sensitivity ``Delta``, ``q(D) + N_Z(0, sigma^2)^d`` is
        ``Delta^2 / (2 sigma^2)``-zCDP), rounded *up* onto the sampler's exact range (a
        relative 2^-46 at most when ``sigma >= 1``), so the release is rho-zCDP.  ``inf``:
        no noise.
    sensitivity
        The L2 sensitivity of the whole integer query vector (any positive real: a
        histogram under "replace one record" has sqrt(2)).
    """

    sensitivity: float = 1.0
    sigma2: Fraction = field(default=Fraction(0))

    name: ClassVar[str] = "discrete_gaussian"

    def _setup(self) -> None:
        if self.sigma2 or math.isinf(self.rho):  # from_sigma set it, or no noise
            return
        per_rho = Fraction(self.sensitivity) ** 2 / 2
        try:
            s2 = round_up_sigma2(per_rho / Fraction(self.rho))
        except ParameterError as err:
            raise self._too_small(err, per_rho) from None
        object.__setattr__(self, "sigma2", s2)

    @classmethod
    def from_sigma(
        cls,
        sigma: float | Fraction | None = None,
        sensitivity: float = 1.0,
        *,
        sigma2: Fraction | int | float | None = None,
    ) -> DiscreteGaussian:
        """The mechanism of noise ``N_Z(0, sigma^2)`` and its cost ``rho = sensitivity^2 /
        (2 sigma^2)``.  Give ``sigma`` (squared exactly, rounded up onto the sampler's range
        when it does not fit) or ``sigma2`` (taken as
        :func:`~privlab.dp.samplers.exact_sigma2` takes it), not both."""
        if (sigma is None) == (sigma2 is None):
            raise ParameterError("give sigma or sigma2 (one of them)")
        if sigma is not None:
            if isinstance(sigma, bool) or not isinstance(sigma, (int, float, Fraction)):
                raise ParameterError(f"sigma must be a positive number, got {sigma!r}")
            if not (isinstance(sigma, Fraction) or math.isfinite(sigma)) or sigma <= 0:
                raise ParameterError(f"sigma must be positive and finite, got {sigma!r}")
            s2 = round_up_sigma2(Fraction(sigma) ** 2)
        else:
            s2 = exact_sigma2(sigma2)  # type: ignore[arg-type]
        sens = check_sensitivity(sensitivity)
        mech = cls.__new__(cls)
        object.__setattr__(mech, "epsilon", math.inf)
        object.__setattr__(mech, "sensitivity", sens)
        object.__setattr__(mech, "rho", _float_up(Fraction(sens) ** 2 / (2 * s2)))
        object.__setattr__(mech, "sigma2", s2)
        mech.__post_init__()
        return mech

    @property
    def sigma(self) -> float:
        """The scale ``sigma`` (not quite the standard deviation; 0 for no noise)."""
        return math.sqrt(self.sigma2)

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance, ``sum_y y^2 P(y)`` (below ``sigma^2``)."""
        if not self.sigma2:
            return 0.0
        return discrete_gaussian_moments(self.sigma2)[1]

    def _noise_parameters(self) -> dict[str, object]:
        return {"sigma2": float(self.sigma2), "sigma": self.sigma}

    def pmf(self, z: np.ndarray | int) -> np.ndarray:
        """``P(Y = z)`` of the noise."""
        z = np.asarray(z, dtype=float)
        if not self.sigma2:
            return (z == 0).astype(float)
        norm = discrete_gaussian_moments(self.sigma2)[0]
        return np.exp(-(z * z) / (2.0 * float(self.sigma2))) / norm

    def randomize(
        self,
        value: int | np.ndarray,
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
        label: str = "discrete gaussian",
    ) -> np.ndarray:
        """``value`` plus discrete Gaussian noise (an int64 array); charges ``rho``."""
        x = np.asarray(value)
        if x.size and not np.issubdtype(x.dtype, np.integer):
            if not np.all(np.isfinite(x)) or not np.all(np.equal(np.mod(x, 1), 0)):
                raise ParameterError("the discrete Gaussian mechanism needs integer values")
        x = x.astype(np.int64)
        self._charge(accountant, label)
        if not self.sigma2:
            return x.copy()
        return x + discrete_gaussian(self.sigma2, x.shape, rng)


#: The Gaussian's noise spans at most this many grid steps a sigma (``s^2 <= 2^48``, the exact
#: sampler's largest ``sigma^2``).
GAUSS_MAX_STEPS = 1 << 24


@dataclass(frozen=True, init=False)
class Gaussian(_GaussianNoise):
    """The Gaussian mechanism for real queries, floating-point safe: ``f(D)`` on a grid plus
    discrete Gaussian noise, as :class:`Laplace` is to the discrete Laplace.

    Each coordinate is rounded to a power-of-two grid ``g`` and ``g Y`` is added, ``Y ~
    N_Z(0, s^2)`` exact.  Rounding moves each coordinate of a neighbour by less than one more
    step, so the rounded query's L2 sensitivity is at most ``Delta_g = sensitivity / g + r``
    steps, ``r = ceil(sqrt(dimension))``, and ``s^2 = Delta_g^2 / (2 rho)`` (rounded up onto
    the sampler's range) makes the release rho-zCDP exactly (CKS 2020 Theorem 4, then
    post-processing).  ``g`` is the finest power of two with ``s <= 2^24`` (the sampler's
    range), but not finer than :class:`Laplace`'s ``2^(floor(log2 sensitivity) - 20)``, so
    the noise exceeds the continuous Gaussian's ``sigma_0 = sensitivity / sqrt(2 rho)`` by
    the factor ``1 + r g / sensitivity``, below ``1 + max(r 2^-20, 2 r / (2^24 sqrt(2 rho) -
    r))``: 1e-6 for one coordinate at rho = 0.5, 8.4e-5 for 100 coordinates at rho = 1e-4.
    Every output is an exact multiple of ``g``, and values up to ``g 2^52`` (at least
    ``sensitivity 2^32``) are served.  A rho below ``r^2 / 2^49`` (2e-15 for one
    coordinate) leaves no grid and is refused.

    Parameters
    ----------
    rho
        The zCDP parameter (``inf``: no noise).
    sensitivity
        The L2 sensitivity of the whole query vector.
    dimension
        The most coordinates a released vector has (the rounding is paid for that many);
        :meth:`randomize` refuses a longer one.
    """

    sensitivity: float = 1.0
    dimension: int = 1

    name: ClassVar[str] = "gaussian"

    def __init__(self, rho: float, sensitivity: float = 1.0, dimension: int = 1) -> None:
        if isinstance(dimension, bool) or int(dimension) != dimension or dimension < 1:
            raise ParameterError(f"dimension must be a positive integer, got {dimension!r}")
        object.__setattr__(self, "dimension", int(dimension))
        super().__init__(rho, sensitivity)

    def _setup(self) -> None:
        if math.isinf(self.rho):
            return
        r = _ceil_sqrt(self.dimension)
        top = GAUSS_MAX_STEPS * (1.0 - 2.0**-20)  # s <= top: s^2 < 2^48 despite float error
        room = top * math.sqrt(2.0 * self.rho) - r  # the most steps sensitivity / g may take
        what = (f"Gaussian(rho={self.rho:g}, sensitivity={self.sensitivity:g}, "
                f"dimension={self.dimension})")  # fmt: skip
        if not room > 0:
            smallest = r * r / (2.0 * top * top)
            raise ParameterError(
                f"{what}: rho is too small to sample exactly (this mechanism needs rho > "
                f"{smallest:.3g}): rounding {self.dimension} coordinates to a grid would take "
                "all the noise"
            )
        g = math.ldexp(1.0, math.frexp(self.sensitivity / room)[1])  # a power of 2 >= it
        if math.frexp(self.sensitivity / room)[0] == 0.5:  # already a power of two
            g /= 2.0
        g = max(g, math.ldexp(1.0, math.frexp(self.sensitivity)[1] - 1 - GRID_BITS))
        if not 0.0 < g < math.inf:
            raise ParameterError(f"{what}: the noise's grid is outside floating point")
        steps = Fraction(self.sensitivity) / Fraction(g) + r
        s2 = round_up_sigma2(steps**2 / (2 * Fraction(self.rho)))
        object.__setattr__(self, "_grid", g)
        object.__setattr__(self, "_s2", s2)

    @property
    def grid(self) -> float:
        """The output grid ``g``: every release is an exact multiple of it (0: no noise)."""
        return 0.0 if math.isinf(self.rho) else self._grid

    @property
    def sigma2_steps(self) -> Fraction:
        """The exact ``s^2`` of the noise in grid steps (0: no noise)."""
        return Fraction(0) if math.isinf(self.rho) else self._s2

    @property
    def sigma(self) -> float:
        """The noise scale ``g s`` (about ``sensitivity / sqrt(2 rho)``; 0 for no noise)."""
        return self.grid * math.sqrt(self.sigma2_steps)

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance, ``g^2 Var(N_Z(0, s^2))`` (``sigma^2`` to double
        precision as soon as ``s >= 4``)."""
        if math.isinf(self.rho):
            return 0.0
        return self.grid**2 * discrete_gaussian_moments(self._s2)[1]

    def _noise_parameters(self) -> dict[str, object]:
        return {"sigma": self.sigma, "grid": self.grid, "dimension": self.dimension}

    def randomize(
        self,
        value: float | np.ndarray,
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
        label: str = "gaussian",
    ) -> np.ndarray:
        """``value`` on the grid plus discrete Gaussian noise (a float array of its shape)."""
        x = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(x)):
            raise ParameterError("the Gaussian mechanism needs finite values")
        if x.size > self.dimension:
            raise ParameterError(
                f"a value of {x.size} coordinates for a Gaussian of dimension = "
                f"{self.dimension}: build it with dimension >= {x.size}"
            )
        if math.isinf(self.rho):
            self._charge(accountant, label)
            return x.copy()
        g = self._grid
        steps = np.rint(x / g)
        if steps.size and np.abs(steps).max() >= 2.0**52:
            raise ParameterError(
                f"a value of {np.abs(x).max():.3g} is too large for the Gaussian grid "
                f"({g:.3g}): values must stay below {g * 2.0**52:.3g}"
            )
        self._charge(accountant, label)
        total = steps.astype(np.int64) + discrete_gaussian(self._s2, x.shape, rng)
        if total.size and np.abs(total).max() >= (1 << 53):  # pragma: no cover - astronomical
            raise ParameterError("the noisy value left the exactly representable grid")
        return total.astype(np.float64) * g


def _ceil_sqrt(k: int) -> int:
    r = math.isqrt(k)
    return r if r * r == k else r + 1


#: the mechanisms that answer a count query
COUNT_MECHANISMS = ("geometric", "laplace")


@dataclass(frozen=True)
class CountQuery:
    """A vector of counts that carries its L1 sensitivity: the most its counts can change,
    in all, when one record is added or removed (1 for a histogram; the number of features
    for naive Bayes's class-and-feature counts, where one record adds one to a count of
    every feature).  :meth:`mechanism` picks the geometric or the Laplace mechanism for it,
    in one place for every count privlab releases.
    """

    sensitivity: int = 1

    def __post_init__(self) -> None:
        s = _positive_int_sensitivity(self.sensitivity, "a count query's sensitivity")
        object.__setattr__(self, "sensitivity", s)

    def mechanism(self, epsilon: float, kind: str = "geometric") -> Laplace | Geometric:
        """The ``kind`` mechanism ("geometric", privlab's default, or "laplace") at
        ``epsilon`` for this query; its ``noise_scale`` is the estimators' Laplace scale."""
        if kind == "laplace":
            return Laplace(epsilon, sensitivity=self.sensitivity)
        if kind == "geometric":
            return Geometric(epsilon, sensitivity=self.sensitivity)
        raise ParameterError(f"unknown mechanism {kind!r}; choose geometric or laplace")


@dataclass(frozen=True)
class Exponential(Mechanism):
    """The exponential mechanism: outcome ``r`` with probability ∝ exp(ε q(r) / (2 Δq)).

    ``sensitivity`` is Δq, the largest change of any score when one record changes
    (Friedman & Schuster 2010, "Exponential Mechanism").  Costs ``epsilon``.
    """

    epsilon: float
    sensitivity: float = 1.0

    name: ClassVar[str] = "exponential"

    @property
    def zcdp_rho(self) -> float:
        """Its cost in zCDP, ``epsilon^2 / 8``: the exponential mechanism is
        epsilon-bounded-range, and an epsilon-bounded-range mechanism is
        ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021, "Bounding, Concentrating, and Truncating:
        Unifying Privacy Loss Composition for Data Analytics", Lemma 3.2), a quarter of the
        ``epsilon^2 / 2`` of a generic epsilon-DP mechanism (Bun & Steinke 2016, Prop. 1.4).
        A :class:`~privlab.dp.accountant.ZCDPAccountant` charges this."""
        return self.epsilon * self.epsilon / 8.0

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

    def select(
        self,
        scores: np.ndarray,
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
        label: str = "exponential",
    ) -> int:
        """Sample the index of one outcome."""
        p = self.probabilities(scores)
        self._charge(accountant, label)
        return sample_index(p, rng)

    def choose(
        self,
        data: Any,
        outcomes: Sequence[Any],
        utility: Callable[[Any, Any], float],
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
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
        accountant: Accountant | None = None,
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
        self._charge(accountant, label)
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


def sample_index(p: np.ndarray, rng: RngLike = None) -> int:
    """Draw one index with probabilities ``p`` (OS CSPRNG when ``rng`` is None)."""
    u = secure.uniform() if rng is None else as_generator(rng).random()
    c = np.cumsum(p)
    return int(min(np.searchsorted(c, u * c[-1], side="right"), len(p) - 1))
