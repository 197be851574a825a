"""Population uniques estimated from a sample's class sizes, as ARX computes them: Zayatz
(1991), Pitman (Hoshino 2001), SNB (Chen & Keller-McNulty 1998) and Dankar et al.'s (2012)
decision rule between them.

A sample of ``n`` records from a population of ``N`` people falls into ``J`` equivalence
classes (records sharing their quasi-identifiers); ``c_i`` classes hold ``i`` records, so
``c_1`` records are *sample uniques*.  How many people are unique in the *population*?  Each
model answers with a number of population uniques ``U`` (ARX's ``getNumUniqueTuples``) and
its share ``U / N`` (``getFractionOfUniqueTuples``); the sampling fraction is ``pi = n / N``
with ``N = round(n / sampling_fraction)`` when a fraction is given (ARX's
``ARXPopulationModel.create(n, fraction)``).

* **Zayatz** (1991): ``U = (c_1 / pi) P(F=1 | f=1)``, where ``P(F=1 | f=1) = c_1 h(1) /
  sum_i c_i h(i)`` and ``h(i)`` is the hypergeometric probability that a sample of ``n`` of
  the ``N`` people holds exactly one of a class's ``i`` members (the sample's class sizes
  standing in for the population's).
* **Pitman** (Hoshino 2001): the population's class frequencies follow Pitman's
  two-parameter sampling formula; ``theta`` and ``alpha`` are its maximum-likelihood
  estimates from the sample, the roots of the score equations (Hoshino 2001, Sec. 3)

      sum_{i=1}^{J-1} 1 / (theta + i alpha) - sum_{i=1}^{n-1} 1 / (theta + i) = 0,
      sum_{i=1}^{J-1} i / (theta + i alpha) - sum_{k>=2} c_k sum_{j=1}^{k-1} 1 / (j - alpha) = 0,

  and ``U = Gamma(theta + 1) / Gamma(theta + alpha) N^alpha`` (valid in ``[0, N]``).
* **SNB** (Chen & Keller-McNulty 1998): the population class sizes are a shifted negative
  binomial, ``F - 1 ~ NB(alpha, beta)``, over ``K`` non-empty population classes, and each
  person is in the sample with probability ``pi``.  ``alpha`` and ``beta`` solve the moment
  equations ``E[c_1] = c_1`` and ``E[c_2] = c_2`` with, for ``q = (1 - pi)(1 - beta)``,

      E[c_1] = K pi (beta / (1 - q))^alpha (1 + alpha q / (1 - q)),
      E[c_2] = K alpha beta^alpha pi^2 (1 - beta) / 2 (1 - q)^-(alpha + 2) (2 - (1 - alpha) q)

  (the generating function ``E[s^F] = s (beta / (1 - (1 - beta) s))^alpha`` differentiated
  once and twice at ``s = 1 - pi``), and ``U = K beta^alpha``.  ``K`` is Shlosser's estimate
  of the number of non-empty classes (Haas, Naughton, Seshadri & Stokes 1995, the estimator
  ARX cites), with ``p = pi``:

      K = J + c_1 [sum_i i p^2 (1 - p^2)^(i-1) c_i / sum_i (1 - p)^i ((1 + p)^i - 1) c_i]
                  [sum_i (1 - p)^i c_i / sum_i i p (1 - p)^(i-1) c_i]^2.

* **Dankar et al.** (2012, "Estimating the re-identification risk of clinical data sets",
  BMC Med Inform Decis Mak 12:66, Sec. "Decision rule"): no sample uniques, 0; ``pi <= 0.1``,
  Pitman if its estimate is valid, else Zayatz; otherwise the smaller of Zayatz and SNB when
  SNB is valid, else Zayatz.

**ARX's code differs from the two SNB formulas above** (``ModelSNB``, at the commit named in
``tests/data/arx_population_uniqueness.csv``), and ``variant="arx"`` (the default) computes
them as ARX does: its second moment equation multiplies by ``(1 - q)^(alpha + 2)`` where the
derivation divides (its Newton-Raphson Jacobian is that of the dividing form, which this
module uses too, so ARX's iterates are reproduced), and its Shlosser denominator reads
``sum_i [(1 - p)^i (1 + p)^i c_i - 1]``, subtracting 1 once per distinct class size instead
of multiplying ``(1 + p)^i - 1`` by ``c_i``.  ``variant="paper"`` uses the formulas as
written above.  Zayatz, Pitman and Dankar's rule are the same in both.

**Solver.** Pitman's and SNB's equations are solved as ARX's ``NewtonRaphson2D`` (with
``ARXSolverConfiguration``'s defaults) does, so that the same root is found or the same
failure reported: Newton steps from ARX's start value (Pitman: the moment guess of
``ModelPitman``; SNB: ``(1, 1)``), then from the 16 start values ``{0, .33, .66, .99}^2``
in turn (the last one is only evaluated, as in ARX), at most 1001 steps per start, a start
abandoned when an iterate is NaN (or, for Pitman, ``theta < 0``), converged when both
equations are within ``1e-6`` of 0.  ARX's wall-clock limits (100 ms a start, 1 s in all)
are not imitated.  Pitman's equations are evaluated with digamma and trigamma functions and
the root is checked against the direct sums; if the check fails the direct sums are solved,
as ARX does.  An estimate that is NaN, 0 or outside ``[0, N]`` is *invalid* (None, with the
reason), as in ARX (``isValid``), except that ARX keeps an SNB estimate outside ``[0, N]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special

from privlab._frames import ToFrames
from privlab._params import is_integer
from privlab.errors import ParameterError

MODELS = ("dankar", "zayatz", "pitman", "snb")
VARIANTS = ("arx", "paper")
#: Dankar et al.'s threshold on the sampling fraction between Pitman and Zayatz / SNB
DANKAR_THRESHOLD = 0.1
#: ARXSolverConfiguration's defaults: accuracy, Newton steps per start value
ACCURACY = 1e-6
STEPS_PER_START = 1000
_NAMES = {"zayatz": "Zayatz", "pitman": "Pitman", "snb": "SNB", "none": "no sample uniques"}


def _arx_start_values() -> list[tuple[float, float]]:
    """ARXSolverConfiguration.getDefaultStartValues: ``{0, .33, .66, .99}^2`` accumulated in
    steps of 0.33 (so the last is 0.9900000000000001), first coordinate outer."""
    grid = []
    v = 0.0
    while v < 1.0:
        grid.append(v)
        v += 0.33
    return [(a, b) for a in grid for b in grid]


START_VALUES = tuple(_arx_start_values())


@dataclass(frozen=True)
class UniquenessEstimate:
    """One model's estimate of the population uniques.

    ``uniques`` is the number of population uniques and ``fraction`` its share of the
    population (None when the estimate is invalid: ``reason`` says why).  ``converged`` and
    ``iterations`` (Newton steps, all start values together) report the solver (Zayatz has
    none: True, 0); ``parameters`` the fitted model (Pitman's ``theta``, ``alpha``; SNB's
    ``alpha``, ``beta`` and ``K``), NaN when the solver failed.
    """

    model: str
    uniques: float | None
    fraction: float | None
    converged: bool
    iterations: int
    parameters: tuple[tuple[str, float], ...] = ()
    reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.uniques is not None

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "uniques": self.uniques,
            "fraction": self.fraction,
            "converged": self.converged,
            "iterations": self.iterations,
            "parameters": dict(self.parameters),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class PopulationUniqueness(ToFrames):
    """Population uniques of a sample (see the module docstring for the models).

    ``model`` is the model asked for and ``chosen`` the one whose estimate is ``uniques``
    (Dankar's rule picks ``"pitman"``, ``"zayatz"`` or ``"snb"``, or ``"none"`` when there
    are no sample uniques).  ``uniques`` is None when the model asked for gave no valid
    estimate (Dankar's rule always gives one).  ``zayatz``, ``pitman`` and ``snb`` hold each
    model's estimate (all three for Dankar's rule, only the one asked for otherwise).
    """

    model: str
    chosen: str
    uniques: float | None
    fraction: float | None
    sample_size: int
    population_size: int
    sampling_fraction: float
    classes: int
    sample_uniques: int
    variant: str
    zayatz: UniquenessEstimate | None
    pitman: UniquenessEstimate | None
    snb: UniquenessEstimate | None

    @property
    def label(self) -> str:
        """What produced ``uniques``, e.g. ``Dankar et al. 2012 (Pitman), sampling fraction
        0.01``."""
        name = _NAMES.get(self.chosen, self.chosen)
        head = f"Dankar et al. 2012 ({name})" if self.model == "dankar" else name
        return f"{head}, sampling fraction {self.sampling_fraction:g}"

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            k: getattr(self, k)
            for k in (
                "model", "chosen", "uniques", "fraction", "sample_size", "population_size",
                "sampling_fraction", "classes", "sample_uniques", "variant",
            )
        }  # fmt: skip
        for m in ("zayatz", "pitman", "snb"):
            est = getattr(self, m)
            d[m] = None if est is None else est.to_dict()
        return d

    def to_pandas(self):
        """One row per model computed (and one for the model asked for when it is Dankar's
        rule): its estimate, share of the population and solver report."""
        import pandas as pd

        rows = []
        for m in ("zayatz", "pitman", "snb"):
            est = getattr(self, m)
            if est is not None:
                rows.append(
                    {
                        "model": m,
                        "uniques": est.uniques,
                        "fraction": est.fraction,
                        "converged": est.converged,
                        "iterations": est.iterations,
                        "reason": est.reason,
                    }
                )
        if self.model == "dankar":
            rows.append(
                {
                    "model": f"dankar ({self.chosen})",
                    "uniques": self.uniques,
                    "fraction": self.fraction,
                    "converged": True,
                    "iterations": 0,
                    "reason": None,
                }
            )
        return pd.DataFrame(rows).set_index("model")


# -- input ---------------------------------------------------------------------------------
def _histogram(
    class_sizes: object, histogram: Mapping[int, int] | None
) -> tuple[np.ndarray, np.ndarray]:
    """(distinct class sizes ascending, number of classes of each), both int64."""
    if (class_sizes is None) == (histogram is None):
        raise ParameterError("give the class sizes or a histogram of them, one of the two")
    if histogram is not None:
        items = list(dict(histogram).items())
        if not items:
            raise ParameterError("the histogram of class sizes is empty")
        for size, count in items:
            if not (is_integer(size) and is_integer(count)) or size <= 0 or count <= 0:
                raise ParameterError(
                    f"a histogram maps class sizes >= 1 to numbers of classes >= 1, "
                    f"got {size!r}: {count!r}"
                )
        items.sort()
        sizes = np.array([s for s, _ in items], dtype=np.int64)
        counts = np.array([c for _, c in items], dtype=np.int64)
        return sizes, counts
    arr = np.asarray(class_sizes)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"class sizes must be a non-empty 1-d array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ParameterError(f"class sizes must be integers, got dtype {arr.dtype}")
    if (arr <= 0).any():
        bad = arr[arr <= 0][0]
        raise ParameterError(f"class sizes must be >= 1, got {bad}")
    sizes, counts = np.unique(arr.astype(np.int64), return_counts=True)
    return sizes, counts.astype(np.int64)


def arx_population_size(sample_size: int, sampling_fraction: float) -> int:
    """``N`` from ``n`` and a sampling fraction as ARX rounds it (``Math.round(n / f)``:
    halves round up, where Python's ``round`` rounds them to even)."""
    return math.floor(sample_size / sampling_fraction + 0.5)


def _population(n: int, sampling_fraction: object, population_size: object) -> int:
    if sampling_fraction is not None and population_size is not None:
        raise ParameterError("give a sampling fraction or a population size, not both")
    if population_size is not None:
        if not is_integer(population_size) or population_size < n:
            raise ParameterError(
                f"population size must be an integer >= the {n} records, got {population_size!r}"
            )
        return int(population_size)
    if sampling_fraction is None:
        raise ParameterError("give a sampling fraction or a population size")
    try:
        pi = float(sampling_fraction)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pi = math.nan
    if not 0 < pi <= 1:
        raise ParameterError(f"sampling fraction must be in (0, 1], got {sampling_fraction!r}")
    return arx_population_size(n, pi)


# -- Zayatz --------------------------------------------------------------------------------
def zayatz_unique_probability(class_sizes: np.ndarray, n: int, population: int) -> float:
    """Zayatz (1991) estimate of Pr(population unique | sample unique).

    ``P(F=1 | f=1) = c_1 P(f=1 | F=1) / sum_i c_i P(f=1 | F=i)``, where ``c_i`` is the
    number of sample classes of size ``i`` (standing in for the population's class-size
    distribution) and ``P(f=1 | F=i)`` the hypergeometric probability that a sample of ``n``
    of the ``population`` people holds exactly one of a class's ``i`` members (Zayatz,
    "Estimation of the percent of unique population elements on a microdata file using the
    sample", US Census Bureau SRD Report RR-91/08; ARX's ``ModelZayatz``).  0 when no class
    can yield a sample unique.
    """
    sizes, counts = np.unique(np.asarray(class_sizes, dtype=np.int64), return_counts=True)
    return _zayatz_probability(sizes, counts, n, population)


def _zayatz_probability(sizes: np.ndarray, counts: np.ndarray, n: int, population: int) -> float:
    from scipy.stats import hypergeom

    p1 = hypergeom(population, sizes, n).pmf(1)
    den = float((counts * p1).sum())
    if den <= 0:
        return 0.0
    unique = sizes == 1  # sizes are distinct: at most one entry
    return float((counts[unique] * p1[unique]).sum()) / den


def _zayatz(sizes: np.ndarray, counts: np.ndarray, n: int, N: int) -> UniquenessEstimate:
    c1 = float(counts[sizes == 1].sum())
    u = c1 * _zayatz_probability(sizes, counts, n, N) / (n / N)
    return _estimate("zayatz", u, N, True, 0, ())


# -- the solver ----------------------------------------------------------------------------
Vector = tuple[float, float]


def _newton(
    fun: Callable[[float, float], Vector],
    jac: Callable[[float, float], tuple[float, float, float, float]],
    start: Vector,
    constraint: Callable[[float, float], bool] | None = None,
) -> tuple[float, float, bool, int]:
    """Newton-Raphson from ``start`` and then ARX's start values, as ARX's NewtonRaphson2D
    runs it (see the module docstring).  Returns ``(x, y, converged, steps)``; x, y are NaN
    when no start converged."""
    steps = 0
    last = len(START_VALUES)
    with np.errstate(all="ignore"):
        for k, (x, y) in enumerate([start, *START_VALUES]):
            x, y = np.float64(x), np.float64(y)
            per_start = 0
            while True:
                f1, f2 = fun(x, y)
                if abs(f1) <= ACCURACY and abs(f2) <= ACCURACY:
                    return float(x), float(y), True, steps
                a, b, c, d = jac(x, y)  # [[a, b], [c, d]]: d(f1, f2) / d(x, y)
                det = a * d - b * c
                x, y = x - (d * f1 - b * f2) / det, y - (a * f2 - c * f1) / det
                steps += 1
                if k == last:  # ARX stops once the last start value has been taken
                    return math.nan, math.nan, False, steps
                if constraint is not None and not constraint(x, y):
                    break
                if np.isnan(x) or np.isnan(y) or per_start >= STEPS_PER_START:
                    break
                per_start += 1
    return math.nan, math.nan, False, steps  # pragma: no cover - the last start returns


def _estimate(
    model: str,
    u: float,
    N: int,
    converged: bool,
    steps: int,
    parameters: tuple[tuple[str, float], ...],
) -> UniquenessEstimate:
    reason = None
    if not converged:
        reason = "the solver did not converge from any start value"
    elif math.isnan(u):
        reason = "the estimate is not a number"
    elif u == 0:
        reason = "the estimate is 0"
    elif not 0 <= u <= N:
        reason = f"the estimate {u:g} is outside [0, {N}]"
    if reason is not None:
        return UniquenessEstimate(model, None, None, converged, steps, parameters, reason)
    return UniquenessEstimate(model, float(u), float(u) / N, converged, steps, parameters)


# -- Pitman --------------------------------------------------------------------------------
def arx_digamma(x: np.ndarray | float) -> np.ndarray:
    """Digamma as ARX's own ``risk.Gamma.digamma`` computes it: recurrence up to 12, then de
    Moivre's expansion; in ``(0, 1e-6]`` the Taylor series at 0, ``-gamma - 1/x + pi^2/6
    x``; ``-inf`` at 0; negative arguments by reflection, ``psi(1 - x) + pi / tan(-pi x)``
    (large but finite at the negative integers)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    neg = x < 0
    with np.errstate(all="ignore"):
        if neg.any():
            out[neg] = arx_digamma(1.0 - x[neg]) + np.pi / np.tan(-np.pi * x[neg])
        small = np.isfinite(x) & (x <= 1e-6) & ~neg
        out[small] = (_DIGAMMA_1 - 1.0 / x[small]) + _TRIGAMMA_1 * x[small]
        out[x == 0] = -np.inf
        big = np.isfinite(x) & (x > 1e-6)
        y = x[big]
        steps = np.where(y < 12, np.ceil(12 - y), 0)
        acc = np.zeros_like(y)
        for j in range(int(steps.max(initial=0))):
            acc -= np.where(j < steps, 1.0 / (y + j), 0.0)
        y = y + steps
        r = 1.0 / y
        r2 = r * r
        acc += np.log(y) - 0.5 * r
        acc -= r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))
        out[big] = acc
    return out


def arx_trigamma(x: np.ndarray | float) -> np.ndarray:
    """Trigamma as ARX's own ``risk.Gamma.trigamma`` computes it: the recurrence runs up to
    8 but the asymptotic expansion is added only from 12 on, so for ``1e-4 < x < 12`` the
    value is the recurrence's partial sum alone (``trigamma(11) = 0``); in ``(0, 1e-4]``
    ``1/x^2 + pi^2/6 - 2 zeta(3) x``; ``-inf`` at 0; negative arguments by reflection,
    ``-trigamma(1 - x) + (pi / sin(-pi x))^2``.  Only ARX's Newton steps for Pitman use it
    (the equations themselves use digamma)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    neg = x < 0
    with np.errstate(all="ignore"):
        if neg.any():
            r = np.pi / np.sin(-np.pi * x[neg])
            out[neg] = -arx_trigamma(1.0 - x[neg]) + r * r
        small = np.isfinite(x) & (x <= 1e-4) & ~neg
        out[small] = 1.0 / (x[small] * x[small]) + _TRIGAMMA_1 + _TETRAGAMMA_1 * x[small]
        out[x == 0] = -np.inf
        big = np.isfinite(x) & (x > 1e-4)
        y = x[big]
        steps = np.where(y < 8, np.ceil(8 - y), 0)
        acc = np.zeros_like(y)
        for j in range(int(steps.max(initial=0))):
            acc += np.where(j < steps, 1.0 / ((y + j) * (y + j)), 0.0)
        y = y + steps
        r = 1.0 / (y * y)
        series = 1 + r * (1 / 6 + r * (-1 / 30 + r * (1 / 42 + r * (-1 / 30 + r * 5 / 66))))
        acc += np.where(y >= 12, 0.5 * r + series / y, 0.0)
        out[big] = acc
    return out


_DIGAMMA_1 = -0.5772156649015329
_TRIGAMMA_1 = math.pi**2 / 6
_TETRAGAMMA_1 = -2.0 * 1.2020569031595942


def _arx_psi(x):
    """:func:`arx_digamma` of a scalar without the array overhead (arrays: the array one)."""
    if isinstance(x, np.ndarray):
        return arx_digamma(x)
    x = float(x)
    if not math.isfinite(x):
        return math.nan
    if x == 0:
        return -math.inf
    if x < 0:
        t = math.tan(-math.pi * x)
        return _arx_psi(1.0 - x) + (math.pi / t if t != 0 else math.copysign(math.inf, t))
    if x <= 1e-6:
        return (_DIGAMMA_1 - 1.0 / x) + _TRIGAMMA_1 * x
    acc = 0.0
    while x < 12:
        acc -= 1.0 / x
        x += 1
    r = 1.0 / x
    r2 = r * r
    acc += math.log(x) - 0.5 * r
    return acc - r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))


def _arx_psi1(x):
    """:func:`arx_trigamma` of a scalar without the array overhead (arrays: the array one)."""
    if isinstance(x, np.ndarray):
        return arx_trigamma(x)
    x = float(x)
    if not math.isfinite(x):
        return math.nan
    if x == 0:
        return -math.inf
    if x < 0:
        sn = math.sin(-math.pi * x)
        r = math.pi / sn if sn != 0 else math.inf
        return -_arx_psi1(1.0 - x) + r * r
    if x <= 1e-4:
        sq = x * x
        return (1.0 / sq if sq > 0 else math.inf) + _TRIGAMMA_1 + _TETRAGAMMA_1 * x
    acc = 0.0
    while x < 8:
        acc += 1.0 / (x * x)
        x += 1
    if x >= 12:
        r = 1.0 / (x * x)
        acc += (
            0.5 * r
            + (1 + r * (1 / 6 + r * (-1 / 30 + r * (1 / 42 + r * (-1 / 30 + r * 5 / 66))))) / x
        )
    return acc


def _scipy_trigamma(x):
    return special.polygamma(1, x)


def pitman_score(
    theta: float, alpha: float, sizes: np.ndarray, counts: np.ndarray
) -> tuple[float, float]:
    """Pitman's two score equations (d log L / d theta, d log L / d alpha; Hoshino 2001) at
    ``(theta, alpha)`` by their direct sums (``J - 1``, ``n - 1`` and ``k - 1`` terms)."""
    J = int(counts.sum())
    n = int((sizes * counts).sum())
    i = np.arange(1, J, dtype=np.float64)
    t_a = theta + i * alpha
    o1 = float((1.0 / t_a).sum())
    o3 = float((i / t_a).sum())
    o2 = float((1.0 / (theta + np.arange(1, n, dtype=np.float64))).sum())
    # sum_k c_k sum_{j<k} 1/(j - alpha): cumulative sums over j up to the largest size
    kmax = int(sizes.max())
    inner = np.concatenate([[0.0], np.cumsum(1.0 / (np.arange(1, kmax) - alpha))])
    o4 = float((counts * inner[sizes - 1]).sum())
    return o1 - o2, o3 - o4


def _pitman_direct_jacobian(theta, alpha, sizes, counts):
    J = int(counts.sum())
    n = int((sizes * counts).sum())
    i = np.arange(1, J, dtype=np.float64)
    t_a2 = (theta + i * alpha) ** 2
    s2 = (1.0 / t_a2).sum()
    s_i = (i / t_a2).sum()
    s_ii = (i * i / t_a2).sum()
    d_n = (1.0 / (theta + np.arange(1, n, dtype=np.float64)) ** 2).sum()
    kmax = int(sizes.max())
    inner = np.concatenate([[0.0], np.cumsum(1.0 / (np.arange(1, kmax) - alpha) ** 2)])
    d_k = (counts * inner[sizes - 1]).sum()
    return d_n - s2, -s_i, -s_i, -s_ii - d_k


def _pitman(
    sizes: np.ndarray, counts: np.ndarray, n: int, N: int, variant: str
) -> UniquenessEstimate:
    J = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum()) or 1.0  # ARX: no class of 2 counts as one
    # ARX's start value (ModelPitman): a moment guess of theta, then alpha from it
    c = c1 * (c1 - 1) / c2
    with np.errstate(all="ignore"):
        den = np.float64(2 * c1 * J + c1 * c - n * c)
        t0 = (n * J * c - c1 * (n - 1) * (2 * J + c)) / den
        a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * J)
    big = sizes != 1
    ks, cs = sizes[big].astype(np.float64), counts[big].astype(np.float64)
    if variant == "arx":  # ARX's own digamma and trigamma steer its Newton steps
        psi, psi1 = _arx_psi, _arx_psi1
    else:
        psi, psi1 = special.digamma, _scipy_trigamma

    def fun(t, a):  # the score equations in digamma form
        z = t / a
        s1 = (psi(z + J) - psi(z + 1)) / a  # sum 1/(t + i a)
        o2 = psi(n + t) - psi(t + 1)
        o3 = ((J - 1) - z * a * s1) / a  # sum i/(t + i a) = (J - 1 - t s1) / a
        o4 = (cs * (psi(ks - a) - psi(1 - a))).sum()
        return s1 - o2, o3 - o4

    def jac(t, a):
        z = t / a
        s1 = (psi(z + J) - psi(z + 1)) / a
        s2 = (psi1(z + 1) - psi1(z + J)) / (a * a)  # sum 1/(t + i a)^2
        d_n = psi1(t + 1) - psi1(t + n)
        s_i = (s1 - t * s2) / a  # sum i/(t + i a)^2
        s_ii = ((J - 1) - 2 * t * s1 + t * t * s2) / (a * a)  # sum i^2/(t + i a)^2
        d_k = (cs * (psi1(1 - a) - psi1(ks - a))).sum()
        return d_n - s2, -s_i, -s_i, -s_ii - d_k

    def nonnegative(t, a):
        return t >= 0

    t, a, ok, steps = _newton(fun, jac, (t0, a0), nonnegative)
    direct = lambda t, a: pitman_score(t, a, sizes, counts)  # noqa: E731
    if ok:
        with np.errstate(all="ignore"):
            check = direct(t, a)
        if not all(abs(v) <= ACCURACY for v in check):  # ARX re-solves with the direct sums
            ok = False
    if not ok:
        jd = lambda t, a: _pitman_direct_jacobian(t, a, sizes, counts)  # noqa: E731
        t, a, ok, more = _newton(direct, jd, (t0, a0), nonnegative)
        steps += more
    u = _pitman_uniques(t, a, N) if ok else math.nan
    return _estimate("pitman", u, N, ok, steps, (("theta", t), ("alpha", a)))


def _pitman_uniques(t: float, a: float, N: int) -> float:
    """``Gamma(theta + 1) / Gamma(theta + alpha) N^alpha``, by log-gamma and by gamma (where
    the log-gamma is undefined or either overflows), the larger of the two in ``[0, N]``
    (ARX's ``ModelPitman.getResult``); NaN when alpha is 0 or neither is in range."""
    if math.isnan(t) or math.isnan(a) or a == 0:
        return math.nan
    with np.errstate(all="ignore"):
        by_log = (
            np.exp(special.gammaln(t + 1) - special.gammaln(t + a)) * np.power(float(N), a)
            if t + 1 > 0 and t + a > 0
            else math.nan
        )
        by_gamma = special.gamma(t + 1) / special.gamma(t + a) * np.power(float(N), a)
    ok = [float(v) for v in (by_log, by_gamma) if 0 <= v <= N]
    return max(ok) if ok else math.nan


# -- SNB -----------------------------------------------------------------------------------
def shlosser_classes(sizes: np.ndarray, counts: np.ndarray, pi: float, variant: str) -> float:
    """Shlosser's estimate ``K`` of the number of non-empty population classes (Haas et al.
    1995; module docstring), with ARX's denominator when ``variant="arx"``; ``J`` at
    ``pi = 1`` for ``variant="paper"`` (the formula's limit)."""
    if variant == "paper" and pi == 1:  # the limit (0/0 in the formula): every class seen
        return float(counts.sum())
    i = sizes.astype(np.float64)
    c = counts.astype(np.float64)
    q = 1.0 - pi
    c1 = float(counts[sizes == 1].sum())
    with np.errstate(all="ignore"):
        num1 = (i * pi * pi * np.power(1 - pi * pi, i - 1) * c).sum()
        if variant == "arx":  # in ARX's order: (1-p)^i c_i underflows to 0 and 0 * inf is NaN
            den1 = (np.power(q, i) * c * np.power(1 + pi, i) - 1.0).sum()
        else:  # (1-p)^i ((1+p)^i - 1) = (1-p^2)^i - (1-p)^i, without the overflow
            den1 = ((np.power(1 - pi * pi, i) - np.power(q, i)) * c).sum()
        num2 = (np.power(q, i) * c).sum()
        den2 = (i * pi * np.power(q, i - 1) * c).sum()
        return float(counts.sum() + c1 * (num1 / den1) * (num2 / den2) ** 2)


def snb_moments(
    alpha: float, beta: float, k: float, pi: float, variant: str = "paper"
) -> tuple[float, float]:
    """``E[c_1]`` and ``E[c_2]`` under the SNB model (module docstring); ``variant="arx"``:
    the second as ARX's code has it (times ``(1 - q)^(alpha + 2)``)."""
    with np.errstate(all="ignore"):
        a, b = np.float64(alpha), np.float64(beta)
        q = (1 - pi) * (1 - b)
        m1 = k * pi * np.power(b / (1 - q), a) * (a * q / (1 - q) + 1)
        power = np.power(1 - q, a + 2)
        scale = power if variant == "arx" else 1 / power
        m2 = k * a * np.power(b, a) * pi * pi * (1 - b) / 2 * scale * (2 - (1 - a) * q)
    return float(m1), float(m2)


def _snb(sizes: np.ndarray, counts: np.ndarray, n: int, N: int, variant: str) -> UniquenessEstimate:
    pi = n / N
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum())
    k = shlosser_classes(sizes, counts, pi, variant)

    def fun(a, b):
        m1, m2 = snb_moments(a, b, k, pi, variant)
        return m1 - c1, m2 - c2

    def jac(a, b):
        # derivatives of the moment equations as the derivation writes them (module
        # docstring), for both variants: ARX's Jacobian for its own second equation is this
        # one, so its Newton iterates are reproduced.  With r = beta / (1 - q), g = 1 - q:
        # m1 = K pi r^a (1 + a q / g); m2 = K pi^2 / 2 a b^a (1 - b) g^-(a+2) (2 - (1-a) q)
        s = 1 - pi  # dq/db = -s, dg/db = s
        q = s * (1 - b)
        g = 1 - q
        r = b / g
        h1 = 1 + a * q / g
        ra = np.power(r, a)
        dr_db = (g - b * s) / (g * g)
        dh1_db = a * (-s * g - q * s) / (g * g)
        d11 = k * pi * ra * (np.log(r) * h1 + q / g)
        d12 = k * pi * (a * np.power(r, a - 1) * dr_db * h1 + ra * dh1_db)
        w = k * pi * pi / 2
        ba = np.power(b, a)
        ga = np.power(g, -(a + 2))
        h2 = 2 - (1 - a) * q
        core = a * ba * (1 - b) * ga  # m2 = w core h2
        dcore_da = core * (1 / a + np.log(b) - np.log(g))
        dcore_db = a * ga * (a * np.power(b, a - 1) * (1 - b) - ba) + a * ba * (1 - b) * (
            -(a + 2) * np.power(g, -(a + 3)) * s
        )
        d21 = w * (dcore_da * h2 + core * q)
        d22 = w * (dcore_db * h2 + core * (1 - a) * s)
        return d11, d12, d21, d22

    a, b, ok, steps = _newton(fun, jac, (1.0, 1.0))
    with np.errstate(all="ignore"):
        u = float(k * np.power(np.float64(b), a)) if ok else math.nan
    return _estimate("snb", u, N, ok, steps, (("alpha", a), ("beta", b), ("K", k)))


# -- the entry point -----------------------------------------------------------------------
def population_uniques(
    class_sizes: np.ndarray | list[int] | None = None,
    *,
    histogram: Mapping[int, int] | None = None,
    sampling_fraction: float | None = None,
    population_size: int | None = None,
    model: str = "dankar",
    variant: str = "arx",
) -> PopulationUniqueness:
    """Population uniques of a sample from its class sizes (ARX's
    ``RiskModelPopulationUniqueness``; see the module docstring).

    Parameters
    ----------
    class_sizes
        The size of each equivalence class of the sample (integers >= 1), or ...
    histogram
        ... their histogram: class size -> number of classes of that size.
    sampling_fraction, population_size
        The sample's share of the population (``N = round(n / fraction)``, halves up, as
        ARX's ``ARXPopulationModel``), or the population size ``N`` itself: one of the two.
    model
        ``"dankar"`` (Dankar et al.'s 2012 decision rule), ``"zayatz"``, ``"pitman"`` or
        ``"snb"``.
    variant
        ``"arx"``: SNB as ARX computes it; ``"paper"``: as the derivation writes it (module
        docstring).  Zayatz and Pitman are the same in both.
    """
    if model not in MODELS:
        raise ParameterError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    sizes, counts = _histogram(class_sizes, histogram)
    n = int((sizes * counts).sum())
    N = _population(n, sampling_fraction, population_size)
    pi = n / N
    J = int(counts.sum())
    c1 = int(counts[sizes == 1].sum())
    wanted = ("zayatz", "pitman", "snb") if model == "dankar" else (model,)
    est: dict[str, UniquenessEstimate | None] = dict.fromkeys(("zayatz", "pitman", "snb"))
    if c1 == 0:  # ARX: every estimate is 0 without sample uniques (and valid)
        for m in wanted:
            est[m] = UniquenessEstimate(m, 0.0, 0.0, True, 0, (), "no sample uniques")
        chosen = "none" if model == "dankar" else model
        return PopulationUniqueness(
            model, chosen, 0.0, 0.0, n, N, pi, J, 0, variant, est["zayatz"], est["pitman"],
            est["snb"],
        )  # fmt: skip
    for m in wanted:
        if m == "zayatz":
            est[m] = _zayatz(sizes, counts, n, N)
        elif m == "pitman":
            est[m] = _pitman(sizes, counts, n, N, variant)
        else:
            est[m] = _snb(sizes, counts, n, N, variant)
    if model == "dankar":
        chosen = dankar_choice(pi, est["zayatz"], est["pitman"], est["snb"])  # type: ignore[arg-type]
    else:
        chosen = model
    pick = est[chosen]
    assert pick is not None
    return PopulationUniqueness(
        model, chosen, pick.uniques, pick.fraction, n, N, pi, J, c1, variant,
        est["zayatz"], est["pitman"], est["snb"],
    )  # fmt: skip


def dankar_choice(
    sampling_fraction: float,
    zayatz: UniquenessEstimate,
    pitman: UniquenessEstimate,
    snb: UniquenessEstimate,
) -> str:
    """Dankar et al.'s (2012) decision rule as ARX applies it: up to a sampling fraction of
    0.1, Pitman if its estimate is valid, else Zayatz; above, the smaller of Zayatz and SNB
    (SNB on a tie) if SNB's is valid, else Zayatz.  (Sample uniques are assumed.)"""
    if sampling_fraction <= DANKAR_THRESHOLD:
        return "pitman" if pitman.valid else "zayatz"
    if not snb.valid:
        return "zayatz"
    assert zayatz.uniques is not None and snb.uniques is not None
    return "zayatz" if zayatz.uniques < snb.uniques else "snb"
