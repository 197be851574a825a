"""The learning attack on a PRAM release (Kifer 2009, Sec. 7; Ma 2006, Ch. 2, 3 and 5).

Threat model.  The attacker holds the published table and the published transition matrices
(Ma Sec. 2.1: ``P[l, m] = Pr(released m | true l)``), nothing else.  It targets one randomized
column ``S`` and uses the other published columns ``X_1..X_k`` (kept unchanged, or randomized
through their own published matrices).  Kifer (Sec. 7) points out that gamma-amplification
(Ma Sec. 3.1.2; Evfimievski et al. 2003) assumes an attacker who knows only the prior of
``S``: an attacker willing to *learn* the dependence of ``S`` on the other columns from the
randomized release itself can be far surer.  This module is that attacker.

Model.  Naive Bayes over the TRUE values, observed through the independent published
channels (a kept column's channel is the identity)::

    P(S = s, X_1 = x_1, ..., X_k = x_k) = pi(s) prod_j theta_j(x_j | s)
    P(S~ = a, X~_j = o_j | s, x)        = P_S[s, a] prod_j P_j[x_j, o_j]

Learning.  ``pi`` and ``theta_j`` are fitted by MAP expectation-maximization on the
randomized release (Dempster, Laird & Rubin 1977), i.e. the EM deconvolution of Ma Sec. 2.4.2
applied to the Naive-Bayes factorization of the joint distribution (the network of Ma Sec.
5.3-5.4 with ``S`` the parent of every ``X_j``).  With ``n_u`` the number of records showing
the distinct observed pattern ``u = (a, o_1..o_k)``, and ``M_j = theta_j P_j``
(``M_j[s, o] = sum_x theta_j(x|s) P_j[x, o]``):

* E-step (once per distinct pattern, not per record)::

      r_u(s) = pi(s) P_S[s, a_u] prod_j M_j[s, o_uj] / Z_u,      Z_u = sum_s (numerator)

* M-step, with pseudo-count ``prior`` = alpha (the mode under a symmetric Dirichlet
  ``Dir(1 + alpha)``, Mothali's convention in :mod:`privlab.attacks.em`)::

      pi(s)         <- (sum_u n_u r_u(s) + alpha) / (N + |S| alpha)
      c_j(s, x)     =  theta_j(x|s) sum_u n_u r_u(s) P_j[x, o_uj] / M_j[s, o_uj]
      theta_j(x|s)  <- (c_j(s, x) + alpha) / (sum_x c_j(s, x) + |X_j| alpha)

  Each iteration never decreases the log posterior
  ``sum_u n_u log Z_u + alpha (sum log pi + sum log theta)``; EM stops when its relative
  change over one iteration is at most ``tol``.  The iterations are accelerated by SQUAREM
  (:func:`_squarem`: an extrapolation along two EM steps, kept only where it does not lower
  the log posterior), which reaches the same fixed point in several times fewer steps.

Posterior.  Every published row gets Bayes' rule under the fitted parameters::

    P(S = s | a, o) = pi(s) P_S[s, a] prod_j sum_x theta_j(x|s) P_j[x, o_j] / Z

The joint model (``model="joint"``).  Naive Bayes assumes the QI columns independent given
``S``; when they are not (Adult's ``relationship`` and ``sex``), the maximum-likelihood fit
bends the latent ``S`` into a clustering of the QIs and the attack can lose to guessing the
published value (on Adult, occupation at retention 0.7: 0.60 against 0.70).  The joint model
treats all QI columns as ONE feature ``X = (X_1..X_k)``: ``P(s, x) = pi(s) theta(x | s)`` is
then the saturated law of ``(S, X)``, i.e. P(S | QI) is learned freely per QI combination by
the EM of Ma Sec. 2.4.2 on the ``(S, X)`` count table with the channel ``P_S (x) P_X``
(kept columns over their distinct observed combinations, randomized blocks by Kronecker
product).  Its log-likelihood is concave in the cell probabilities: EM reaches the global
maximum.  It needs data in every QI combination; Naive Bayes shares strength across them.

Simultaneous randomization (Ma Sec. 2.1, 7.1.2) is supported: a block of columns randomized
through one joint matrix is treated as ONE latent variable over its joint domain (first column
slowest) observed through that matrix.  If ``S`` lies in such a block, the block is the latent
target (``pi`` is over its joint domain; the posterior of ``S`` sums the others out), and the
block's other columns are observed with ``S`` when they are among ``qi``.  A block column left
out of ``qi`` is unobserved: the channel sums its released value out (exact whatever the
scheme).  The same holds for a jointly randomized block of QI columns.

The custodian's comparison (Ma Sec. 3.1.2): a matrix that is at most gamma-amplifying keeps
the posterior of an attacker who knows only the prior ``rho1 = pi(s)`` below
``rho2* = gamma rho1 / (1 - rho1 + gamma rho1)``.  The diagnostics report gamma of the target's
(joint) matrix, rho2* at the empirical prior of ``S`` (its EM estimate from the release,
:func:`privlab.estimate.pram.em_estimate`) beside the attack's maximum posterior, and the share
of records whose posterior on some value exceeds that value's rho2* (by more than
:data:`ABOVE`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from privlab._params import check_int
from privlab.attacks.posterior import Posterior
from privlab.data.counts import joint_index
from privlab.errors import ConvergenceWarning, ParameterError, ReleaseError
from privlab.estimate.pram import one_blas_thread, release_plan
from privlab.estimate.pram_em import em_certified
from privlab.metrics.pram import breach_rho2, gamma_amplification, revealing_values
from privlab.release.views import Randomized

__all__ = ["MODELS", "PramAttackRun", "pram_attack", "run_pram_attack"]

#: The attacker's models: Naive Bayes over the QI columns, or their joint (saturated) law.
MODELS = ("naive-bayes", "joint")

#: The threat model, in words, stored with every posterior.
THREAT_MODEL = (
    "the attacker knows the published table and transition matrices; it learns a Naive-Bayes "
    "model of the true values from the randomized release (EM deconvolution) and applies "
    "Bayes' rule to each record's randomized value and other published columns"
)


@dataclass(frozen=True, eq=False)
class _Variable:
    """One latent variable of the model: kept columns and/or randomized blocks.

    Its latent domain is ``kept_size x rsize`` (kept part slowest): ``kept_size`` values of
    columns released unchanged (observed exactly; their channel is the identity, never
    built, so a 20,000-value kept column costs nothing) times the ``rsize`` joint values of
    randomized blocks, observed through ``channel`` (``rsize x osize``,
    ``channel[l, o] = Pr(observed o | latent l)``; None when there is no randomized part).
    ``codes`` is each record's observed code ``kept * osize + o``.
    """

    columns: tuple[str, ...]
    codes: np.ndarray
    kept_size: int = 1
    rsize: int = 1
    osize: int = 1
    channel: np.ndarray | None = None
    matrix: np.ndarray | None = None  # the target's published (joint) matrix, for gamma

    @property
    def size(self) -> int:
        return self.kept_size * self.rsize

    @property
    def n_observed(self) -> int:
        return self.kept_size * self.osize


@dataclass(frozen=True, eq=False)
class PramAttackRun:
    """The posterior of the PRAM attack and the model behind it.

    Attributes
    ----------
    posterior
        One row per published record (``group_id`` = row index), one column per value of
        the sensitive column.
    pi
        ``(L,)``: the prior of the latent target (the sensitive column, or the joint domain
        of its simultaneously randomized block, ``target``, first column slowest).
    thetas
        One ``(L, L_j)`` array per feature: ``thetas[j][t, x] = P(feature j = x | target = t)``
        over the feature's latent (joint) domain.
    target, features
        The columns of the latent target and of each feature.
    kept_combos
        Joint model: the codes of the distinct combinations of the kept QI columns, in the
        order of the feature's kept part (None for Naive Bayes).
    iterations, converged, log_posterior, log_likelihood
        EM's run (0 iterations when the parameters were given).
    """

    posterior: Posterior
    pi: np.ndarray
    thetas: tuple[np.ndarray, ...]
    target: tuple[str, ...]
    features: tuple[tuple[str, ...], ...]
    kept_combos: np.ndarray | None
    iterations: int
    converged: bool
    log_posterior: float
    log_likelihood: float
    diagnostics: dict[str, Any] = field(default_factory=dict)


# -- the variables ----------------------------------------------------------------------------
def _summed_channel(matrix: np.ndarray, sizes: Sequence[int], keep: Sequence[int]) -> np.ndarray:
    """``matrix`` (latent joint x released joint) with the released values of the block
    positions not in ``keep`` summed out: ``(L, prod sizes[keep])``."""
    if len(keep) == len(sizes):
        return np.asarray(matrix, dtype=float)
    t = np.asarray(matrix, dtype=float).reshape(matrix.shape[0], *sizes)
    drop = tuple(1 + i for i in range(len(sizes)) if i not in keep)
    t = t.sum(axis=drop)
    return t.reshape(matrix.shape[0], -1)


def _variable(release: Randomized, block: Any, used: Sequence[str]) -> _Variable:
    """The latent variable of a randomized block, observed through the columns ``used``."""
    schema = release.table.schema
    sizes = [schema[c].size for c in block.columns]
    keep = [i for i, c in enumerate(block.columns) if c in used]
    obs_sizes = [sizes[i] for i in keep]
    codes = joint_index(release.table.columns([block.columns[i] for i in keep]), obs_sizes)
    return _Variable(
        columns=tuple(block.columns),
        codes=codes,
        rsize=int(np.prod(sizes)),
        osize=int(np.prod(obs_sizes)),
        channel=_summed_channel(block.matrix, sizes, keep),
        matrix=np.asarray(block.matrix, dtype=float),
    )


def _kept_variable(release: Randomized, columns: Sequence[str]) -> tuple[_Variable, np.ndarray]:
    """The kept columns as one variable over their distinct observed combinations (and
    those combinations' codes, ``(n_k, len(columns))``)."""
    schema = release.table.schema
    codes = [release.table.column(c).astype(np.int64) for c in columns]
    combos, inverse, _ = _patterns(codes, [schema[c].size for c in columns])
    return _Variable(tuple(columns), inverse, kept_size=combos.shape[0]), combos


#: The largest randomized joint domain (latent x observed cells) of the joint model's feature.
MAX_JOINT_CHANNEL = 1 << 24


def _joint_feature(release: Randomized, qi: Sequence[str], randomized: Sequence[Any]):
    """Every QI column as ONE latent variable: kept combinations x randomized joint values,
    the randomized blocks' channels combined by Kronecker product (first block slowest)."""
    kept = [c for c in qi if release.block_of(c) is None]
    if kept:
        kvar, combos = _kept_variable(release, kept)
    else:
        kvar, combos = _Variable((), np.zeros(release.table.n_rows, dtype=np.int64)), None
    parts = [_variable(release, b, qi) for b in randomized]
    if not parts:
        return kvar, combos
    rsize = int(np.prod([v.rsize for v in parts]))
    osize = int(np.prod([v.osize for v in parts]))
    if rsize * osize > MAX_JOINT_CHANNEL:
        raise ParameterError(
            f"the joint model's channel over the randomized QI columns would have "
            f"{rsize:,} x {osize:,} cells: use model='naive-bayes' or fewer randomized QIs"
        )
    channel = np.ones((1, 1))
    ocode = np.zeros(release.table.n_rows, dtype=np.int64)
    for v in parts:
        channel = np.kron(channel, v.channel)
        ocode = ocode * v.osize + v.codes
    columns = (*kvar.columns, *(c for v in parts for c in v.columns))
    var = _Variable(
        columns, kvar.codes * osize + ocode, kept_size=kvar.kept_size, rsize=rsize,
        osize=osize, channel=channel,
    )  # fmt: skip
    return var, combos


def _model(release: Randomized, sensitive: str, qi: Sequence[str] | None, model: str):
    """The target variable, the features, the checked QI list and the kept combinations
    (joint model)."""
    if getattr(release, "method", None) != "pram" or not hasattr(release, "block_of"):
        kind = getattr(release, "method", type(release).__name__)
        raise ReleaseError(f"the PRAM attack needs a PRAM release, got a {kind!r} release")
    if model not in MODELS:
        raise ParameterError(f"unknown model {model!r}; use one of {', '.join(MODELS)}")
    schema = release.table.schema
    block = release.block_of(sensitive)  # SchemaError names an unknown column
    if block is None:
        randomized = [c for b in release.blocks for c in b.columns]
        raise ParameterError(
            f"column {sensitive!r} is published unchanged (the release has no transition "
            f"matrix for it): the PRAM attack targets a randomized column ("
            f"{', '.join(map(repr, randomized)) or 'this release has none'})"
        )
    if qi is None:
        qi = [c for c in schema.names if c != sensitive]
    else:
        qi = list(qi)
        if qi:
            schema.require(qi, purpose="as quasi-identifiers")
        if sensitive in qi:
            raise ParameterError(
                f"the sensitive column {sensitive!r} cannot also be a quasi-identifier"
            )
    target = _variable(release, block, [sensitive, *qi])
    blocks: list[Any] = []
    kept: list[str] = []
    for c in qi:
        b = release.block_of(c)
        if b is None:
            kept.append(c)
        elif b is not block and all(b is not x for x in blocks):
            blocks.append(b)
    if model == "joint":
        if not kept and not blocks:
            return target, [], qi, None
        feature, combos = _joint_feature(release, qi, blocks)
        return target, [feature], qi, combos
    features: list[_Variable] = []
    done: list[Any] = [block]
    for c in qi:  # one feature per kept column or randomized block, in order of qi
        b = release.block_of(c)
        if b is None:
            codes = release.table.column(c).astype(np.int64)
            features.append(_Variable((c,), codes, kept_size=schema[c].size))
        elif all(b is not x for x in done):
            done.append(b)
            features.append(_variable(release, b, qi))
    return target, features, qi, None


# -- patterns ---------------------------------------------------------------------------------
def _patterns(codes: Sequence[np.ndarray], sizes: Sequence[int]):
    """Distinct rows of the observed codes: ``(pattern codes (U, V), inverse (N,), counts)``.

    One int64 key per record (mixed radix), compressed whenever the next factor could
    overflow, instead of ``np.unique(axis=0)``.
    """
    n = codes[0].size
    key = np.zeros(n, dtype=np.int64)
    bound = 1
    for c, k in zip(codes, sizes):
        if bound * k >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64).ravel()
            bound = int(key.max()) + 1 if n else 1
        key = key * k + c
        bound *= k
    _, first, inverse, counts = np.unique(
        key, return_index=True, return_inverse=True, return_counts=True
    )
    pat = np.column_stack([c[first] for c in codes])
    return pat, inverse.ravel(), counts.astype(float)


# -- EM ---------------------------------------------------------------------------------------
def _feature_lik(theta: np.ndarray, var: _Variable, obs: np.ndarray) -> np.ndarray:
    """``(U, L)``: ``M_j[t, o_u] = sum_x theta(x | t) P_j[x, o_u]`` for every pattern ``u``."""
    if var.channel is None:
        m = theta
    else:  # (L, kept, rsize) @ (rsize, osize): the kept part's identity stays implicit
        m = (theta.reshape(theta.shape[0], var.kept_size, var.rsize) @ var.channel).reshape(
            theta.shape[0], -1
        )
    return m[:, obs].T


def _e_step(pi, thetas, a0, pat, feats):
    """Responsibilities ``r (U, L)`` and ``log Z_u`` (rescaled per feature: no underflow)."""
    s = pi[None, :] * a0
    logz = np.zeros(s.shape[0])
    for j, var in enumerate(feats):
        s = s * _feature_lik(thetas[j], var, pat[:, j + 1])
        mx = s.max(axis=1)
        mx = np.where(mx > 0, mx, 1.0)
        s /= mx[:, None]
        logz += np.log(mx)
    z = s.sum(axis=1)
    with np.errstate(divide="ignore"):
        logz += np.log(z)
    r = np.divide(s, z[:, None], out=np.zeros_like(s), where=z[:, None] > 0)
    return r, logz


def _squarem(params, e_step, m_step, iterations: int, tol: float):
    """EM from ``params`` (a list of arrays), accelerated by SQUAREM (Varadhan & Roland 2008,
    Scand. J. Statist. 35, scheme S3): two EM steps ``p1 = F(p0)``, ``p2 = F(p1)`` give
    ``r = p1 - p0`` and ``v = p2 - 2 p1 + p0``, and the point ``p0 - 2 a r + a^2 v`` with
    ``a = min(-1, -|r| / |v|)`` is taken when its log posterior is at least ``p2``'s (its
    step halved towards ``a = -1``, i.e. ``p2``, while it leaves the simplex).  Every
    coefficient sums to 1, so rows stay distributions; the objective never decreases.

    The stopping rule is EM's: the relative change of the log posterior over one EM step
    (``p0 -> p1`` or ``p1 -> p2``) at most ``tol``.  ``iterations`` caps the EM steps (the
    extrapolations are not counted).  On Adult's PRAM releases the same fixed point is
    reached in 5 to 20 times fewer EM steps than plain EM.

    Returns ``(params, r, logz, (lp, ll), steps, converged)`` at the final point.
    """
    r0, logz0, obj0 = e_step(params)
    k = 0

    def close(a: float, b: float) -> bool:
        return abs(b - a) <= tol * max(abs(b), 1.0)

    while k < iterations:
        p1 = m_step(params, r0)
        r1, logz1, obj1 = e_step(p1)
        k += 1
        if close(obj0[0], obj1[0]):
            return p1, r1, logz1, obj1, k, True
        if k >= iterations:
            return p1, r1, logz1, obj1, k, False
        p2 = m_step(p1, r1)
        r2, logz2, obj2 = e_step(p2)
        k += 1
        if close(obj1[0], obj2[0]):
            return p2, r2, logz2, obj2, k, True
        d1 = [b - a for a, b in zip(params, p1)]
        d2 = [c - 2.0 * b + a for a, b, c in zip(params, p1, p2)]
        nr = sum(float(np.sum(x * x)) for x in d1)
        nv = sum(float(np.sum(x * x)) for x in d2)
        best = (p2, r2, logz2, obj2)
        step = -np.sqrt(nr / nv) if nv > 0 else -1.0
        step = min(step, -1.0)
        while step < -1.0:
            cand = [a - 2.0 * step * x + step * step * y for a, x, y in zip(params, d1, d2)]
            if all(np.all(c >= 0) for c in cand):
                rc, logzc, objc = e_step(cand)
                if np.isfinite(objc[0]) and objc[0] >= obj2[0]:
                    best = (cand, rc, logzc, objc)
                break
            step = (step - 1.0) / 2.0 if step < -1.01 else -1.0
        params, r0, logz0, obj0 = best
    return params, r0, logz0, obj0, k, False


#: The pseudo-counts ``prior="auto"`` chooses among.
PRIOR_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


def _choose_prior(fit, counts, pat, a0, feats) -> tuple[float, dict[str, float]]:
    """The pseudo-count of :data:`PRIOR_GRID` whose fit predicts held-out records best.

    Two-fold cross-validation on the *published* records (no truth needed: an attacker can
    do it): each pattern's records are split in two halves, EM fits one half and the other
    half's observed-data log-likelihood ``sum_u n_u log Z_u`` scores it, and the other way
    round.
    """
    first = counts // 2 + (np.arange(counts.size) % 2) * (counts % 2)
    halves = (first, counts - first)
    scores: dict[str, float] = {}
    for a in PRIOR_GRID:
        total = 0.0
        for train, test in (halves, halves[::-1]):
            pi, thetas, *_ = fit(train, a)
            _, logz = _e_step(pi, thetas, a0, pat, feats)
            held = test > 0
            total += float(np.sum(test[held] * logz[held]))
        scores[f"{a:g}"] = round(total, 3)
    best = max(PRIOR_GRID, key=lambda a: scores[f"{a:g}"])
    return best, scores


def _m_step(r, counts, thetas, pat, feats, onehots, alpha, alphas):
    w = r * counts[:, None]  # (U, L)
    cnt = w.sum(axis=0)
    pi = (cnt + alpha) / (cnt.sum() + cnt.size * alpha)
    new = []
    for j, var in enumerate(feats):
        if var.channel is None:  # a kept column: its value is observed, c_j counts it
            c = np.asarray(onehots[j] @ w).T
        else:
            b = _feature_lik(thetas[j], var, pat[:, j + 1])
            v = np.divide(w, b, out=np.zeros_like(w), where=b > 0)
            agg = np.asarray(onehots[j] @ v)  # (O, L): sum over the patterns showing o
            agg = agg.reshape(var.kept_size, var.osize, -1)
            back = np.einsum("ro,kol->lkr", var.channel, agg).reshape(agg.shape[2], -1)
            c = thetas[j] * back
        a = alphas[j]
        new.append((c + a) / (c.sum(axis=1, keepdims=True) + c.shape[1] * a))
    return pi, new


def _log_posterior(logz, counts, pi, thetas, alpha, alphas) -> tuple[float, float]:
    ll = float(np.sum(counts * logz))
    if alpha == 0:
        return ll, ll
    lp = alpha * float(np.sum(np.log(pi)))
    lp += sum(a * float(np.sum(np.log(t))) for a, t in zip(alphas, thetas))
    return ll + lp, ll


def _check_params(params: Any, target: _Variable, feats: Sequence[_Variable]):
    try:
        pi, thetas = params
        pi = np.array(pi, dtype=float)
        thetas = [np.array(t, dtype=float) for t in thetas]
    except (TypeError, ValueError):
        raise ParameterError("params must be a pair (pi, thetas) of numeric arrays") from None
    shapes = [(target.size, f.size) for f in feats]
    if pi.shape != (target.size,):
        raise ParameterError(
            f"pi has shape {pi.shape}; the target {'+'.join(target.columns)} has "
            f"{target.size} values"
        )
    if len(thetas) != len(feats):
        raise ParameterError(
            f"{len(thetas)} theta arrays for {len(feats)} features "
            f"({', '.join('+'.join(f.columns) for f in feats) or 'none'})"
        )
    arrays = [("pi", pi[None, :])] + [
        (f"theta of {'+'.join(f.columns)}", t) for f, t in zip(feats, thetas)
    ]
    for (name, a), shape in zip(arrays, [(1, target.size), *shapes]):
        if a.shape != shape:
            raise ParameterError(f"{name} has shape {a.shape}, expected {shape}")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ParameterError(f"{name} has a negative or non-finite entry")
        bad = np.flatnonzero(np.abs(a.sum(axis=1) - 1.0) > 1e-9)
        if bad.size:
            raise ParameterError(f"{name}: row {int(bad[0])} does not sum to 1")
    return pi, thetas


def _check_numbers(iterations: Any, tol: Any, prior: Any) -> None:
    check_int("iterations", iterations, low=1)
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ParameterError(f"tol must be a finite number >= 0, got {tol!r}")
    if not (isinstance(prior, (int, float)) and np.isfinite(prior) and prior >= 0):
        raise ParameterError(f"the Dirichlet pseudo-count prior must be >= 0, got {prior!r}")


# -- the custodian's bound ----------------------------------------------------------------------
#: A posterior counts as above its value's rho2* when it exceeds it by more than this (EM's
#: stopping rule leaves parameters about 1e-6 from their fixed point).
ABOVE = 1e-4


def _gamma_bound(release: Randomized, sensitive: str, target: _Variable, probs: np.ndarray) -> dict:
    """gamma of the target's published matrix, rho2* at the empirical prior of ``S``, and how
    the attack's posterior compares (Ma Sec. 3.1.2)."""
    matrix = target.matrix
    gamma = gamma_amplification(matrix)
    if revealing_values(matrix).size:  # a released value only one original value produces
        gamma = float("inf")
    # the prior of S: its block estimated (whole unless it reduces exactly to S), the rest
    # summed out; a uniform-prior marginal would be biased (privlab issue 31)
    plan = release_plan(release, [sensitive])
    fit = em_certified(plan.observed(release), plan.factors)
    if not fit.converged:
        warnings.warn(
            f"the EM estimate of the prior of {sensitive!r} has NOT converged (the "
            f"log-likelihood can still gain up to {fit.gap:.3g} nats): rho1 and rho2* are "
            "approximate",
            ConvergenceWarning,
            stacklevel=2,
        )
    rho1 = plan.reduce(fit.theta)
    rho2 = np.array([breach_rho2(gamma, r) if 0 < r < 1 else float(r >= 1) for r in rho1])
    top = int(np.argmax(rho1))
    above = np.any(probs > rho2[None, :] + ABOVE, axis=1)
    return {
        "gamma": gamma,
        "rho1": float(rho1[top]),
        "rho2_star": float(rho2.max()),
        "max_posterior": float(probs.max()) if probs.size else 0.0,
        "above_rho2_star": float(above.mean()) if above.size else 0.0,
    }


# -- the attack -------------------------------------------------------------------------------
def run_pram_attack(
    release: Any,
    *,
    sensitive: str,
    qi: Sequence[str] | None = None,
    iterations: int = 5000,
    tol: float = 1e-12,
    prior: float | str = "auto",
    model: str = "joint",
    params: tuple[Any, Sequence[Any]] | None = None,
) -> PramAttackRun:
    """Attack one randomized column of a PRAM release (see the module docstring).

    Parameters
    ----------
    release
        A PRAM release (:class:`privlab.publish.randomization.PramRelease`) with its
        transition matrices.
    sensitive
        The target column; it must have a published transition matrix (a randomized column;
        an identity matrix, ``p = 0``, is accepted).  Raises
        :class:`~privlab.errors.ParameterError` for a column published unchanged and
        :class:`~privlab.errors.SchemaError` for an unknown one.
    qi
        The published columns the attacker uses (default: every published column but
        ``sensitive``); an empty list gives the prior-only attacker of gamma-amplification.
    iterations
        The most EM iterations.
    tol
        EM stops when the relative change of the log posterior is at most ``tol``.
    prior
        Dirichlet pseudo-count ``alpha >= 0`` of the M-step (the MAP estimate under
        ``Dir(1 + alpha)``; 0 is maximum likelihood): per cell of each Naive-Bayes feature,
        in total per value of ``S`` for the joint model's one feature (spread over its
        cells).  ``"auto"`` (default) chooses it from :data:`PRIOR_GRID` by two-fold
        cross-validation of the observed-data likelihood on the published records
        (:func:`_choose_prior`), which needs no truth.
    model
        ``"joint"`` (default): all QI columns as one feature, i.e. ``P(S | QI combination)``
        learned freely (see the module docstring); ``"naive-bayes"``: one feature per kept
        QI column or randomized block, independent given the target.  The default is the
        stronger attacker on Adult (accuracy 0.707 against 0.624 for Naive Bayes, whose
        independence assumption fails for relationship and sex; guessing the published
        value gives 0.698): a custodian should face the stronger one.
    params
        ``(pi, thetas)``: skip learning and apply Bayes' rule with these parameters, ``pi``
        over the target's (joint) domain and one ``thetas[j]`` of shape ``(L, L_j)`` per
        feature (the shapes of a learned run's ``thetas``).  Naive Bayes: features in the
        order their first column appears in ``qi``, one per QI column unless some were
        randomized jointly, each over its full (joint) domain.  Joint model: one feature
        over the distinct kept combinations (``kept_combos``, slowest) times the randomized
        QI blocks' joint domain.

    Returns
    -------
    PramAttackRun
        The posterior (each record its own group: ``group_id`` is the row index, as a PRAM
        release has no groups) and the fitted model.  A run that stops before converging
        says so in ``diagnostics["warning"]`` and with a
        :class:`~privlab.errors.ConvergenceWarning`.
    """
    _check_numbers(iterations, tol, 1.0 if prior == "auto" else prior)
    target, feats, qi, combos = _model(release, sensitive, qi, model)
    # the joint model's one feature spans every QI combination (3,016 on Adult with age):
    # alpha per cell would swamp its counts, so it spreads alpha over the cells (alpha in
    # total per value of S); Naive Bayes keeps alpha per cell of each small feature
    alpha = float("nan") if prior == "auto" else float(prior)
    cv: dict[str, float] | None = None
    codes = [target.codes, *(f.codes for f in feats)]
    sizes = [target.n_observed, *(f.n_observed for f in feats)]
    n = release.table.n_rows
    if n == 0:
        raise ParameterError("the release has no records to attack")
    pat, inverse, counts = _patterns(codes, sizes)
    a0 = target.channel[:, pat[:, 0]].T  # (U, L): P_S[t, a_u]
    learned = params is None
    converged = True
    it = 0
    if learned:
        onehots = [
            sparse.csr_matrix(
                (np.ones(pat.shape[0]), (pat[:, j + 1], np.arange(pat.shape[0]))),
                shape=(f.n_observed, pat.shape[0]),
            )
            for j, f in enumerate(feats)
        ]

        def fit(cnts: np.ndarray, a: float):
            """EM with pseudo-count ``a`` on pattern counts ``cnts``, accelerated by SQUAREM
            (:func:`_squarem`)."""
            al = [a / f.size if model == "joint" else a for f in feats]
            pi = np.full(target.size, 1.0 / target.size)
            thetas = [np.full((target.size, f.size), 1.0 / f.size) for f in feats]

            def e_step(params):
                r, logz = _e_step(params[0], params[1:], a0, pat, feats)
                return r, logz, _log_posterior(logz, cnts, params[0], params[1:], a, al)

            def m_step(params, r):
                new_pi, new_thetas = _m_step(r, cnts, params[1:], pat, feats, onehots, a, al)
                return [new_pi, *new_thetas]

            params, r, logz, (lp, ll), k, done = _squarem(
                [pi, *thetas], e_step, m_step, iterations, tol
            )
            return params[0], params[1:], r, logz, k, done, lp, ll

        with one_blas_thread():  # EM's products are (values x values): small
            if prior == "auto":
                alpha, cv = _choose_prior(fit, counts, pat, a0, feats)
            pi, thetas, r, logz, it, converged, lp, ll = fit(counts, alpha)
    else:
        pi, thetas = _check_params(params, target, feats)
        r, logz = _e_step(pi, thetas, a0, pat, feats)
        if np.any(~np.isfinite(logz)):
            u = int(np.flatnonzero(~np.isfinite(logz))[0])
            row = int(np.flatnonzero(inverse == u)[0])
            raise ParameterError(
                f"record {row} is impossible under the given parameters (probability 0)"
            )
        lp = ll = float(np.sum(counts * logz))
    # the posterior of S: sum the target block's other columns out
    tsizes = [release.table.schema[c].size for c in target.columns]
    pos = target.columns.index(sensitive)
    rs = r.reshape(-1, *tsizes).sum(axis=tuple(1 + i for i in range(len(tsizes)) if i != pos))
    rs = rs / rs.sum(axis=1, keepdims=True)
    probs = rs[inverse]
    diagnostics: dict[str, Any] = {
        "sensitive": sensitive,
        "qi": list(qi),
        "target": list(target.columns),
        "threat_model": THREAT_MODEL,
        "model": model,
        "parameters": "learned" if learned else "given",
        "records": int(n),
        "patterns": int(pat.shape[0]),
        "prior": alpha,
        "prior_chosen_by": "held-out likelihood" if cv is not None else "given",
        **({"prior_held_out_loglik": cv} if cv is not None else {}),
        "tol": float(tol),
        "iterations": int(it),
        "converged": bool(converged),
        "log_likelihood": ll,
    }
    if not converged:
        msg = (
            f"the PRAM attack's EM stopped after {it} iterations without converging (the "
            f"log-likelihood still changed by more than {tol:g} of itself): its posterior may "
            "understate what the attacker can learn; raise iterations"
        )
        diagnostics["warning"] = msg
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    diagnostics.update(_gamma_bound(release, sensitive, target, probs))
    posterior = Posterior(
        probs=probs,
        group_id=np.arange(n, dtype=np.int64),
        values=tuple(str(v) for v in release.table.schema[sensitive].domain),
        method="pram-em",
        diagnostics=diagnostics,
        release_kind="pram",
        sensitive=sensitive,
        threat_model=(
            "the attacker knows the published randomized table and its transition matrices "
            "and learns P(sensitive | quasi-identifiers) of the true values from it by EM "
            "deconvolution"
        ),
    )
    return PramAttackRun(
        posterior=posterior,
        pi=pi,
        thetas=tuple(thetas),
        target=target.columns,
        features=tuple(f.columns for f in feats),
        kept_combos=combos,
        iterations=int(it),
        converged=bool(converged),
        log_posterior=float(lp),
        log_likelihood=float(ll),
        diagnostics=diagnostics,
    )


def pram_attack(release: Randomized, **kwargs: Any) -> Posterior:
    """The posterior of :func:`run_pram_attack` (same keyword arguments): for every
    published record, ``P(S = s | its randomized S and its other published values)`` under
    the model learned by EM deconvolution (or given as ``params``).

    The attacker knows the published transition matrices (Ma 2006 Sec. 2.1) and learns the
    dependence of ``S`` on the other columns from the release, which the gamma-amplification
    bound (Ma Sec. 3.1.2) does not foresee (Kifer 2009 Sec. 7).  Jointly randomized blocks,
    ``S``'s included, are supported as one latent variable over their joint domain.  Each
    record is its own group: ``group_id`` is the row index.
    """
    return run_pram_attack(release, **kwargs).posterior
