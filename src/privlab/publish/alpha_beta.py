"""The alpha-beta algorithm of Rastogi, Suciu & Hong (VLDB 2007), with its query estimator.

Setting (Rastogi et al. Sec. 2): the domain ``D = D_1 x ... x D_l`` is finite and public,
``m = |D|``; the private instance ``I`` is a *set* of ``n`` tuples of ``D``.  The
alpha-beta algorithm (Sec. 4.1, Algorithm 1 as the seed summarizes it) publishes a view
``V``:

1. every tuple of ``I`` enters ``V`` with probability ``alpha + beta``;
2. every tuple of ``D \\ I`` enters ``V`` with probability ``beta``;
3. ``V``, ``alpha``, ``beta`` and ``D`` are published.

A counting query ``Q`` (here: a conjunction of ``column IN {values}`` predicates) is
estimated by ``Q~(V) = (n_V - beta n_D) / alpha`` with ``n_V = Q(V)`` and ``n_D = Q(D)``
(Sec. 4.2).  ``Q~`` is unbiased: ``E n_V = (alpha + beta) Q(I) + beta (n_D - Q(I))``.  Its
variance is the sum of the independent Bernoulli variances::

    Var Q~ = [Q(I) (alpha+beta)(1-alpha-beta) + (n_D - Q(I)) beta (1-beta)] / alpha^2

Privacy (Sec. 2, Defn 2.3): against a *d-independent* adversary (every tuple ``t`` is in
``I`` independently with prior ``Pr[t] <= d``, or surely), the algorithm is
``(d, gamma)``-private when for every ``t`` and ``V``: ``Pr[t | V] <= gamma`` (no positive
leakage) and ``Pr[t | V] / Pr[t] >= d / gamma`` (no negative leakage).  Because tuples are
drawn independently and the prior is tuple-independent, the exact posterior depends only on
whether ``t`` is in ``V`` (:func:`posterior`)::

    Pr[t in I | t in V]     = p (alpha+beta) / (p (alpha+beta) + (1-p) beta)
    Pr[t in I | t not in V] = p (1-alpha-beta) / (p (1-alpha-beta) + (1-p) (1-beta))

Theorem 4.3 (sufficient conditions): ``beta / (alpha+beta) >= d (1-gamma) / (gamma (1-d))``
and ``alpha + beta <= 1 - d/gamma``.  :func:`choose_parameters` takes both with equality
(the least noise and the most retention they allow); then ``Pr[t | t in V] = gamma``
exactly at ``p = d``.  The first condition is also necessary; the second is only
sufficient: the exact condition is ``(1-alpha-beta)/(1-beta) >= d/gamma`` (the negative
leakage is worst as ``p -> 0``), which :func:`is_private` checks.

Theorem 4.4 (utility) states that the algorithm is ``(rho, epsilon)``-useful (Defn 2.5:
``Pr[|Q(I) - Q~(V)| >= rho sqrt(n)] <= epsilon`` for every ``Q`` and ``I``).  **The seed
(a blog summary) gives neither the theorem's constants nor its proof**, only the headline
``rho ~ sqrt(k / gamma)`` for ``d = k n / m``.  privlab therefore derives two valid bounds
from the exact variance, worst case over all queries (``Q = D``: ``Q(I) = n``,
``n_D = m``): Chebyshev, ``rho = sqrt(Var_max / (n epsilon))``, and Bernstein (a
Chernoff-type bound for sums of independent terms bounded by ``1/alpha``), which is
tighter for small ``epsilon`` (:func:`utility_guarantee`).

Where the paper is silent or privlab decides:

* ``I`` is a set: duplicate input rows are collapsed into one tuple (the paper's model has
  no multiplicities); the release says how many rows were collapsed only to the custodian.
* The view is published **sorted by the tuples' mixed-radix index** (first column slowest):
  the order is a function of the set ``V`` alone, so it cannot tell real rows from inserted
  ones.
* Inserted tuples are drawn without materializing ``D``: their number is
  ``Binomial(m - n, beta)``, and that many distinct ranks of ``D \\ I`` are drawn uniformly
  (by rejection when few, through their complement when many) and mapped to cells by index
  arithmetic over the sorted indices of ``I``.  This has exactly the distribution of step 2.
* The domain ``D`` is published whole (the algorithm needs it); a domain read from the data
  rather than declared discloses its values, so a :class:`PrivacyWarning` says so.
* The guarantee is stated as it is, not as it was asked for.  (i) When given ``alpha``,
  ``beta``, ``d`` and ``gamma`` that are not ``(d, gamma)``-private, the release records the
  smallest ``gamma`` it does give at ``d`` (:func:`given_gamma`; the request is kept as
  ``requested_gamma``).  (ii) The guarantee covers adversaries whose prior that a tuple is
  real is at most ``d``; when the input's share of real tuples ``n/m`` exceeds ``d``, anyone
  who estimates that share from the view (``(|V| - beta m) / (alpha m)``) holds a larger
  prior and the guarantee says nothing about them: a :class:`PrivacyWarning` says so at
  publish time, and ``release.json`` records under ``guarantee`` the share the *view*
  estimates, with its sd, and the posterior of a tuple in the view at that prior (all
  computed from the view and the public parameters, never from ``n``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab._memory import require_memory
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import MAX_RADIX, joint_index
from privlab.data.frames import as_table
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import ParameterError, PrivacyWarning, SchemaError
from privlab.metrics.privacy import PrivacyReport, privacy_report
from privlab.metrics.risk import DEFAULT_THRESHOLD
from privlab.release.base import Custody, PublishedTable, Release, refuse_reserved

__all__ = [
    "AlphaBetaRelease",
    "QueryEstimate",
    "UtilityGuarantee",
    "alphabeta",
    "check_parameters",
    "choose_parameters",
    "domain_count",
    "estimate",
    "estimator_variance",
    "given_gamma",
    "is_private",
    "posterior",
    "sample_view",
    "utility_guarantee",
]

#: Name of the custody column that says whether a published row is a real tuple.
REAL = "real"
#: Bytes per published row and column while drawing and saving (codes, CSV text).
_ROW_BYTES = 64


# -- parameters ----------------------------------------------------------------------------
def _number(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(v):
        raise ParameterError(f"{name} must be a number, got nan")
    return v


def check_parameters(alpha: float, beta: float) -> tuple[float, float]:
    """Validate ``alpha > 0``, ``beta >= 0`` and ``alpha + beta <= 1``; return them as floats.

    ``alpha = 0`` is refused: the view is then independent of ``I`` and the estimator
    divides by zero.
    """
    a, b = _number("alpha", alpha), _number("beta", beta)
    if not 0.0 < a <= 1.0:
        raise ParameterError(f"alpha = {a:g} must lie in (0, 1]")
    if not 0.0 <= b < 1.0:
        raise ParameterError(f"beta = {b:g} must lie in [0, 1)")
    if a + b > 1.0 + 1e-12:
        raise ParameterError(
            f"alpha + beta = {a + b:g} exceeds 1 (alpha = {a:g}, beta = {b:g}): a real tuple "
            "is kept with probability alpha + beta"
        )
    return a, min(b, 1.0 - a)


def _check_d_gamma(d: float, gamma: float) -> tuple[float, float]:
    d, gamma = _number("d", d), _number("gamma", gamma)
    if not 0.0 < d < 1.0:
        raise ParameterError(f"d = {d:g} must lie in (0, 1)")
    if not 0.0 < gamma < 1.0:
        raise ParameterError(f"gamma = {gamma:g} must lie in (0, 1)")
    if gamma <= d:
        raise ParameterError(
            f"gamma = {gamma:g} must exceed d = {d:g}: a posterior bound below the prior "
            "cannot hold (Rastogi et al. Thm 4.3 needs d < gamma)"
        )
    return d, gamma


def choose_parameters(d: float, gamma: float) -> tuple[float, float]:
    """``(alpha, beta)`` for ``(d, gamma)``-privacy by Rastogi et al. Theorem 4.3.

    Both conditions are taken with equality: ``alpha + beta = 1 - d/gamma`` (keep as many
    real tuples as allowed) and ``beta / (alpha + beta) = d (1-gamma) / (gamma (1-d))`` (add
    as few fake tuples as allowed).  Then the posterior of a tuple in the view at prior
    ``d`` is exactly ``gamma``.
    """
    d, gamma = _check_d_gamma(d, gamma)
    keep = 1.0 - d / gamma
    beta = keep * d * (1.0 - gamma) / (gamma * (1.0 - d))
    return keep - beta, beta


def posterior(prior: Any, alpha: float, beta: float, in_view: Any = True) -> np.ndarray:
    """Exact ``Pr[t in I | V]`` of a tuple-independent adversary with prior ``Pr[t] = prior``.

    Depends on ``V`` only through whether ``t`` is in it (``in_view``; broadcasts with
    ``prior``).  A prior of 0 or 1 stays as it is.
    """
    alpha, beta = check_parameters(alpha, beta)
    p = np.asarray(prior, dtype=float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ParameterError("a prior must lie in [0, 1]")
    keep = alpha + beta
    inv = np.asarray(in_view, dtype=bool)
    num = np.where(inv, p * keep, p * (1.0 - keep))
    den = num + np.where(inv, (1.0 - p) * beta, (1.0 - p) * (1.0 - beta))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), p)
    return out


def is_private(alpha: float, beta: float, d: float, gamma: float) -> bool:
    """Whether alpha-beta is ``(d, gamma)``-private (Defn 2.3) against every d-independent
    adversary, checked on the exact posteriors.

    Positive leakage is worst at prior ``d`` with ``t`` in the view; the ratio
    ``Pr[t|V]/Pr[t]`` is smallest for ``t`` not in the view as the prior tends to 0, where it
    is ``(1-alpha-beta)/(1-beta)``.
    """
    alpha, beta = check_parameters(alpha, beta)
    d, gamma = _check_d_gamma(d, gamma)
    tol = 1e-12
    pos = float(posterior(d, alpha, beta, True)) <= gamma + tol
    neg = (1.0 - alpha - beta) / (1.0 - beta) >= d / gamma - tol
    return bool(pos and neg)


def given_gamma(alpha: float, beta: float, d: float) -> float | None:
    """The smallest ``gamma`` for which alpha-beta is ``(d, gamma)``-private, or None when no
    ``gamma < 1`` is (e.g. ``beta = 0``: a tuple in the view is surely real).

    Both conditions of :func:`is_private` bound ``gamma`` from below: no positive leakage
    needs ``gamma >= Pr[t | t in V]`` at prior ``d``, no negative leakage needs
    ``gamma >= d (1 - beta) / (1 - alpha - beta)``.  With the parameters of
    :func:`choose_parameters` it is the ``gamma`` they were chosen for.
    """
    alpha, beta = check_parameters(alpha, beta)
    d = _number("d", d)
    if not 0.0 < d < 1.0:
        raise ParameterError(f"d = {d:g} must lie in (0, 1)")
    keep_out = 1.0 - alpha - beta
    if keep_out <= 0.0:
        return None
    g = max(float(posterior(d, alpha, beta, True)), d * (1.0 - beta) / keep_out)
    return g if g < 1.0 else None


# -- queries and the estimator ---------------------------------------------------------------
Query = Mapping[str, Any]


def _query_codes(schema: Schema, where: Query) -> dict[int, np.ndarray]:
    """``{column index: sorted codes}`` of a conjunctive query ``{column: value(s)}``."""
    out: dict[int, np.ndarray] = {}
    for col, vals in where.items():
        j = schema.index(col)
        if isinstance(vals, (str, bytes)) or not isinstance(vals, (Sequence, set, frozenset)):
            vals = [vals]
        if not len(vals):
            raise ParameterError(f"the query gives column {col!r} no value")
        out[j] = np.unique(schema.attributes[j].encode(list(vals), where="query"))
    return out


def domain_count(sizes: Sequence[int], where: Mapping[int, np.ndarray]) -> int:
    """``Q(D)``: the number of domain tuples a conjunctive query selects (exact integer)."""
    n = 1
    for j, s in enumerate(sizes):
        n *= int(where[j].size) if j in where else int(s)
    return n


def _matches(codes: np.ndarray, where: Mapping[int, np.ndarray]) -> np.ndarray:
    ok = np.ones(codes.shape[0], dtype=bool)
    for j, vals in where.items():
        ok &= np.isin(codes[:, j], vals)
    return ok


def estimator_variance(q_true: Any, n_d: Any, alpha: float, beta: float) -> np.ndarray:
    """Exact variance of ``Q~ = (n_V - beta n_D)/alpha`` for ``Q(I) = q_true``, ``Q(D) = n_d``.

    ``[Q(I) (alpha+beta)(1-alpha-beta) + (n_D - Q(I)) beta (1-beta)] / alpha^2``: the
    Bernoulli variances of the ``Q(I)`` real and the ``n_D - Q(I)`` other selected tuples.
    """
    alpha, beta = check_parameters(alpha, beta)
    q = np.asarray(q_true, dtype=float)
    nd = np.asarray(n_d, dtype=float)
    if np.any(q < 0) or np.any(q > nd):
        raise ParameterError("Q(I) must lie in [0, Q(D)]")
    keep = alpha + beta
    return (q * keep * (1.0 - keep) + (nd - q) * beta * (1.0 - beta)) / alpha**2


@dataclass(frozen=True)
class QueryEstimate(ToFrames):
    """The estimate of one counting query from an alpha-beta view.

    Attributes
    ----------
    where
        The query, ``{column: [values]}`` (a conjunction of ``IN`` predicates).
    n_view, n_domain
        ``Q(V)`` and ``Q(D)``.
    estimate
        ``(n_V - beta n_D) / alpha`` (unbiased; may be negative or exceed ``Q(D)``).
    sd
        The estimator's standard deviation with ``Q(I)`` replaced by the estimate clipped to
        ``[0, Q(D)]`` (the exact sd needs the true count; :func:`estimator_variance`).
    sd_max
        The largest sd over every possible ``Q(I)`` in ``[0, Q(D)]`` (a conservative sd).
    """

    where: dict[str, list[Any]]
    n_view: int
    n_domain: int
    alpha: float
    beta: float
    estimate: float
    sd: float
    sd_max: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_pandas(self) -> pd.DataFrame:
        d = self.to_dict()
        d["where"] = " AND ".join(f"{c} IN {v}" for c, v in self.where.items()) or "TRUE"
        return pd.DataFrame([d])


def estimate(n_view: int, n_domain: int, alpha: float, beta: float) -> float:
    """``Q~(V) = (n_V - beta n_D) / alpha`` (Rastogi et al. Sec. 4.2)."""
    alpha, beta = check_parameters(alpha, beta)
    return (float(n_view) - beta * float(n_domain)) / alpha


@dataclass(frozen=True)
class UtilityGuarantee(ToFrames):
    """A ``(rho, epsilon)`` usefulness guarantee (Rastogi et al. Defn 2.5, Thm 4.4).

    ``Pr[|Q(I) - Q~(V)| >= rho sqrt(n)] <= epsilon`` for every counting query, with
    ``var_max`` the largest variance over all queries (``Q = D``).
    """

    n: int
    m: int
    alpha: float
    beta: float
    epsilon: float
    var_max: float
    rho_chebyshev: float
    rho_bernstein: float

    @property
    def rho(self) -> float:
        """The better (smaller) of the two bounds."""
        return min(self.rho_chebyshev, self.rho_bernstein)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rho": self.rho}

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame([self.to_dict()])


def utility_guarantee(
    n: int, m: int, alpha: float, beta: float, epsilon: float
) -> UtilityGuarantee:
    """``rho`` for which alpha-beta is ``(rho, epsilon)``-useful on ``n`` tuples of ``m``.

    The seed does not give Theorem 4.4's constants; privlab derives two valid bounds from the
    exact worst-case variance ``Var_max = [n (a+b)(1-a-b) + (m-n) b (1-b)] / a^2``:

    * Chebyshev: ``Pr[|err| >= x] <= Var_max / x^2``, so ``rho = sqrt(Var_max / (n eps))``;
    * Bernstein: ``err`` is a sum of independent zero-mean terms bounded by ``1/alpha``, so
      ``Pr[|err| >= x] <= 2 exp(-x^2 / (2 (Var + x / (3 alpha))))``; solving at ``eps``
      gives ``x = L/(3a) + sqrt((L/(3a))^2 + 2 Var L)`` with ``L = ln(2/eps)``.

    Both bound every query, as Defn 2.5 asks (a query's variance is at most ``Var_max``).
    """
    alpha, beta = check_parameters(alpha, beta)
    n, m = int(n), int(m)
    if n < 1 or m < n:
        raise ParameterError(f"need 1 <= n <= m, got n = {n}, m = {m}")
    eps = _number("epsilon", epsilon)
    if not 0.0 < eps < 1.0:
        raise ParameterError(f"epsilon = {eps:g} must lie in (0, 1)")
    var = float(estimator_variance(n, m, alpha, beta))
    cheb = math.sqrt(var / (n * eps))
    big_l = math.log(2.0 / eps)
    b = big_l / (3.0 * alpha)
    x = b + math.sqrt(b * b + 2.0 * var * big_l)
    return UtilityGuarantee(n, m, alpha, beta, eps, var, cheb, x / math.sqrt(n))


# -- drawing the view --------------------------------------------------------------------------
def _distinct_uniform(total: int, k: int, gen: np.random.Generator) -> np.ndarray:
    """``k`` distinct integers drawn uniformly from ``[0, total)`` (sorted), in ``O(k)``.

    When ``k <= total/2``: iid draws until ``k`` distinct values have appeared, keeping the
    first ``k`` in order of appearance (sequential rejection; by symmetry a uniform
    ``k``-subset).  Otherwise the complement is drawn that way and removed from the range
    (``total - k < k``, so the output already costs ``O(total)``).
    """
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k > total // 2:
        drop = _distinct_uniform(total, total - k, gen)
        keep = np.ones(total, dtype=bool)
        keep[drop] = False
        return np.flatnonzero(keep).astype(np.int64)
    seen = np.empty(0, dtype=np.int64)
    while True:
        need = k - seen.size
        draws = gen.integers(0, total, size=int(need * 1.2) + 16, dtype=np.int64)
        allv = np.concatenate([seen, draws])
        uniq, first = np.unique(allv, return_index=True)
        ordered = uniq[np.argsort(first, kind="stable")]
        if ordered.size >= k:
            return np.sort(ordered[:k])
        seen = ordered


def _rank_to_cell(ranks: np.ndarray, real_sorted: np.ndarray) -> np.ndarray:
    """The cell of ``D \\ I`` of each rank (0-based, ascending order of cells).

    With ``s_0 < s_1 < ...`` the sorted indices of ``I``, the ``r``-th cell not in ``I`` is
    ``r + j`` where ``j = #{i : s_i - i <= r}`` (the real cells it skips).
    """
    shifted = real_sorted - np.arange(real_sorted.size, dtype=np.int64)
    return ranks + np.searchsorted(shifted, ranks, side="right")


def sample_view(
    real: np.ndarray, m: int, alpha: float, beta: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The alpha-beta view over cells ``0..m-1``: sorted cell indices and whether each is real.

    ``real`` holds the distinct cell indices of ``I``.  Each is kept with probability
    ``alpha + beta``; ``Binomial(m - n, beta)`` distinct cells of ``D \\ I`` are added
    uniformly (the distribution of independent ``beta``-coins over ``D \\ I``).
    """
    alpha, beta = check_parameters(alpha, beta)
    real = np.unique(np.asarray(real, dtype=np.int64))
    n, m = real.size, int(m)
    if n and (real[0] < 0 or real[-1] >= m):
        raise ParameterError(f"cell indices must lie in [0, {m})")
    kept = real[rng.random(n) < alpha + beta]
    k = int(rng.binomial(m - n, beta)) if m > n and beta > 0 else 0
    fake = _rank_to_cell(_distinct_uniform(m - n, k, rng), real) if k else real[:0]
    cells = np.concatenate([kept, fake])
    is_real = np.concatenate([np.ones(kept.size, bool), np.zeros(fake.size, bool)])
    order = np.argsort(cells, kind="stable")
    return cells[order], is_real[order]


# -- the release --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class AlphaBetaRelease(Release):
    """An alpha-beta view (Rastogi, Suciu & Hong 2007): a set of tuples of the public domain.

    Attributes
    ----------
    table
        The view ``V``, sorted by mixed-radix index (first column slowest): real tuples kept
        with ``alpha + beta``, inserted ones with ``beta``; nothing marks which is which.
    alpha, beta
        The algorithm's parameters (public).
    d, gamma
        The ``(d, gamma)``-privacy the parameters give (Defn 2.3), when ``d`` was given:
        ``gamma`` is the one asked for when the parameters give it, else the smallest they
        give (:func:`given_gamma`; None when none below 1), the request then being
        ``params["requested_gamma"]``.
    custody
        Seed, salt, input fingerprint and, per published row, whether it is real.
    """

    table: Table
    alpha: float
    beta: float
    d: float | None = None
    gamma: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    custody: Custody | None = field(default=None, compare=False)

    method: ClassVar[str] = "alphabeta"

    def __post_init__(self) -> None:
        check_parameters(self.alpha, self.beta)
        if self.d is not None and self.gamma is not None:
            _check_d_gamma(self.d, self.gamma)
        elif self.gamma is not None:
            raise ParameterError("gamma is given without d")

    @property
    def domain_size(self) -> int:
        """``m = |D|``, the product of the published domains' sizes."""
        return math.prod(self.table.schema.sizes)

    def published(self) -> dict[str, PublishedTable]:
        return {"view": PublishedTable(self.table)}

    def parameters(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alpha": self.alpha, "beta": self.beta}
        if self.d is not None:
            out.update(d=self.d, gamma=self.gamma)
        return {**out, "domain_size": self.domain_size, **self.params}

    def metadata(self) -> dict[str, Any]:
        return {"guarantee": self.guarantee()}

    def estimated_real_share(self) -> tuple[float, float]:
        """The share ``n/m`` of real tuples in the domain as the view estimates it,
        ``(|V| - beta m) / (alpha m)`` clipped to ``[0, 1]``, and its sd (from the view and
        the public parameters only: what any adversary computes)."""
        e = self.estimate()
        m = float(self.domain_size)
        return min(max(e.estimate / m, 0.0), 1.0), e.sd / m

    def guarantee(self) -> dict[str, Any]:
        """What the view guarantees, in ``release.json``'s words and numbers (see the module
        docstring): the ``(d, gamma)`` it gives and whom it covers, the share of real tuples
        the view estimates, and the posterior of a tuple in the view at that share."""
        share, sd = self.estimated_real_share()
        out: dict[str, Any] = {
            "definition": "(d, gamma)-privacy (Rastogi, Suciu & Hong 2007, Defn 2.3): "
            "against an adversary whose prior that any one tuple is real is at most d, "
            "a published tuple is real with probability at most gamma",
            "estimated_real_share": share,
            "estimated_real_share_sd": sd,
            "posterior_at_estimated_share": float(posterior(share, self.alpha, self.beta)),
        }
        if self.d is not None:
            # vacuous when the view itself shows (95%, one-sided 1.645 sd) that the share of
            # real tuples exceeds d: a prior of that share is outside the guarantee
            vacuous = share - 1.645 * sd > self.d
            out.update(d=self.d, gamma=self.gamma, vacuous=bool(vacuous))
            if self.gamma is None:
                out["statement"] = f"no (d, gamma)-privacy below gamma = 1 at d = {self.d:g}"
            elif vacuous:
                post = out["posterior_at_estimated_share"]
                out["statement"] = (
                    f"({self.d:g}, {self.gamma:.4g})-private, but vacuous: the view estimates "
                    f"the share of real tuples at {share:.3g} > d, and at that prior a "
                    f"published tuple is real with probability {post:.3g}"
                )
            else:
                out["statement"] = (
                    f"({self.d:g}, {self.gamma:.4g})-private against adversaries with priors "
                    f"at most d"
                )
        return out

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        return True  # D is published: the estimator needs Q(D)

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> AlphaBetaRelease:
        p = dict(meta["parameters"])
        alpha, beta = float(p.pop("alpha")), float(p.pop("beta"))
        d, gamma = p.pop("d", None), p.pop("gamma", None)
        p.pop("domain_size", None)
        return cls(tables["view"].table, alpha, beta, d=d, gamma=gamma, params=p)

    @property
    def is_real(self) -> np.ndarray:
        """Per published row, whether it is a real tuple (custodian only)."""
        if self.custody is None or self.custody.truth is None:
            raise ParameterError("only the custody knows which rows are real: load it too")
        return self.custody.truth.column(REAL).astype(bool)

    def membership_posterior(self, prior: Any, in_view: Any = True) -> np.ndarray:
        """Exact ``Pr[t in I | V]`` of a tuple-independent adversary with prior ``prior``
        (:func:`posterior` at this release's alpha and beta; what
        :func:`privlab.attacks.alphabeta.alphabeta_attack` reports per published tuple)."""
        return posterior(prior, self.alpha, self.beta, in_view)

    def estimate(self, where: Query | None = None) -> QueryEstimate:
        """Estimate the counting query ``where`` (``{column: value or values}``; None: all
        tuples) with its sd (Rastogi et al. Sec. 4.2)."""
        where = dict(where or {})
        schema = self.table.schema
        q = _query_codes(schema, where)
        n_v = int(_matches(self.table.codes, q).sum())
        n_d = domain_count(schema.sizes, q)
        est = estimate(n_v, n_d, self.alpha, self.beta)
        q_hat = min(max(est, 0.0), float(n_d))
        sd = float(np.sqrt(estimator_variance(q_hat, n_d, self.alpha, self.beta)))
        worst = max(
            float(estimator_variance(0.0, n_d, self.alpha, self.beta)),
            float(estimator_variance(float(n_d), n_d, self.alpha, self.beta)),
        )  # the variance is linear in Q(I): its maximum is at an end
        decoded = {
            schema.names[j]: [schema.attributes[j].domain[c] for c in codes]
            for j, codes in q.items()
        }
        return QueryEstimate(decoded, n_v, n_d, self.alpha, self.beta, est, sd, math.sqrt(worst))

    def privacy(self, *, threshold: float = DEFAULT_THRESHOLD) -> PrivacyReport:
        """The :class:`PrivacyReport` of the view, with ``details``: alpha, beta, and, when
        ``d`` is known, the exact posteriors at prior ``d`` (in / not in the view), whether
        ``(d, gamma)``-privacy holds and the largest ``gamma`` it holds for."""
        details: dict[str, Any] = {"alpha": self.alpha, "beta": self.beta}
        if self.d is not None:
            post_in = float(posterior(self.d, self.alpha, self.beta, True))
            post_out = float(posterior(self.d, self.alpha, self.beta, False))
            g = self.guarantee()
            details.update(
                d=self.d,
                gamma=self.gamma,
                posterior_in_view=post_in,
                posterior_not_in_view=post_out,
                private=self.gamma is not None
                and is_private(self.alpha, self.beta, self.d, self.gamma),
                estimated_real_share=g["estimated_real_share"],
                guarantee_vacuous=g["vacuous"],
            )
        return privacy_report(
            self.method,
            self.linkable(),
            None,
            kept=self.table.schema.insensitive,
            threshold=threshold,
            details=details,
        )


def alphabeta(
    data: Any,
    *,
    columns: Sequence[str] | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    d: float | None = None,
    gamma: float | None = None,
    rng: RngLike | SeedRecord = None,
) -> AlphaBetaRelease:
    """Publish an alpha-beta view of ``data`` over the product of ``columns``' domains.

    Parameters
    ----------
    data
        The microdata (Table or DataFrame).  Duplicate tuples over ``columns`` are collapsed
        (``I`` is a set in Rastogi et al.).
    columns
        The attributes of ``D`` (default: every column).  Their domains, declared ones
        preferably, are published whole.
    alpha, beta
        The parameters; or give ``d`` and ``gamma`` instead (:func:`choose_parameters`).
    d, gamma
        The adversary's prior bound and the posterior bound (Thm 4.3).  With ``alpha`` and
        ``beta`` too, they are recorded and a :class:`PrivacyWarning` says when the pair
        is not ``(d, gamma)``-private.
    rng
        None (OS entropy), a seed (salted with OS entropy), a custody's seed record, or a
        generator of the caller's (see :func:`privlab._rng.publication_rng`).
    """
    table = as_table(data).require_rows()
    columns = list(table.names if columns is None else columns)
    if not columns:
        raise ParameterError("give at least one column for the domain")
    columns = table.schema.require(columns, purpose="for the alpha-beta domain")
    refuse_reserved(columns)
    if alpha is None and beta is None:
        if d is None or gamma is None:
            raise ParameterError("give alpha and beta, or d and gamma")
        alpha, beta = choose_parameters(d, gamma)
    elif alpha is None or beta is None:
        raise ParameterError("give both alpha and beta (or d and gamma instead)")
    else:
        alpha, beta = check_parameters(alpha, beta)
        if (d is None) != (gamma is None):
            raise ParameterError("give both d and gamma, or neither")
    requested = None
    if d is not None:
        d, gamma = _check_d_gamma(d, gamma)
        if not is_private(alpha, beta, d, gamma):
            requested, gamma = gamma, given_gamma(alpha, beta, d)
            gives = "no gamma below 1" if gamma is None else f"gamma = {gamma:.4g}"
            warnings.warn(
                f"alpha = {alpha:g}, beta = {beta:g} are not ({d:g}, {requested:g})-private: "
                f"a tuple in the view has posterior "
                f"{float(posterior(d, alpha, beta)):.4g} at prior d; the release records "
                f"what they give at d = {d:g}: {gives}",
                PrivacyWarning,
                stacklevel=2,
            )
    sub = table.select(columns)
    sizes = list(sub.schema.sizes)
    m = math.prod(sizes)
    if float(m) >= MAX_RADIX:
        raise ParameterError(
            f"the domain of {', '.join(columns)} has {m:.3e} tuples, too many to index "
            f"(at most 2^62): drop columns or merge values"
        )
    read = [c for c in columns if not sub.schema[c].declared]
    if read:
        warnings.warn(
            f"the domain of {', '.join(map(repr, read))} was read from the data and is "
            "published whole as D: a value only a few records hold is disclosed by it; "
            "declare public domains (CLI: --domains FILE)",
            PrivacyWarning,
            stacklevel=2,
        )
    real = np.unique(joint_index(sub.codes, sizes))
    if d is not None and real.size / m > d:
        share = real.size / m
        warnings.warn(
            f"the input's distinct tuples are a share n/m = {share:.2g} of the domain, above "
            f"d = {d:g}: the (d, gamma) guarantee covers only adversaries whose prior that a "
            f"tuple is real is at most d, and anyone can estimate that share from the view "
            f"(at prior n/m a tuple in the view is real with probability "
            f"{float(posterior(share, alpha, beta)):.2g}), so it is vacuous here; choose d of "
            "at least n/m (Thm 4.3), or a larger domain",
            PrivacyWarning,
            stacklevel=2,
        )
    expected = alpha * real.size + beta * m
    require_memory(
        _ROW_BYTES * (len(columns) + 1) * expected,
        f"the alpha-beta view (about {expected:,.0f} rows: beta m = {beta * m:,.0f} inserted)",
        "lower beta, or drop columns to shrink the domain",
    )
    gen, record = publication_rng(rng)
    cells, is_real = sample_view(real, m, alpha, beta, gen)
    codes = np.column_stack(np.unravel_index(cells, sizes)) if cells.size else np.empty(
        (0, len(columns)), dtype=np.int64
    )  # fmt: skip
    attrs = []
    for c in columns:
        a = sub.schema[c]
        attrs.append(replace(a, role=a.role if a.role.published else Role.QI))
    truth_schema = Schema((Attribute(REAL, (0, 1), Role.OTHER, numeric=True, declared=True),))
    custody = Custody(
        seed=record,
        input_sha256=table.fingerprint(),
        truth=Table(is_real.astype(np.int64).reshape(-1, 1), truth_schema),
    )
    params: dict[str, Any] = {"columns": columns}
    if requested is not None:
        params["requested_gamma"] = requested
    return AlphaBetaRelease(
        Table(codes.reshape(-1, len(columns)), Schema(tuple(attrs))),
        alpha,
        beta,
        d=d,
        gamma=gamma,
        params=params,
        custody=custody,
    )


def parse_where(specs: Sequence[str]) -> dict[str, list[str]]:
    """``["age=30|31", "sex=F"]`` -> ``{"age": ["30", "31"], "sex": ["F"]}`` (CLI syntax)."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        for part in str(spec).split(","):
            if not part.strip():
                continue
            col, sep, vals = part.partition("=")
            if not sep or not col.strip() or not vals.strip():
                raise SchemaError(f"--where {part!r} must look like COLUMN=VALUE or COLUMN=v1|v2")
            if col.strip() in out:
                raise SchemaError(f"--where names column {col.strip()!r} twice")
            out[col.strip()] = [v.strip() for v in vals.split("|")]
    return out
