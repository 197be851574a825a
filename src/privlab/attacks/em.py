"""The Naive-Bayes EM attack on Anatomy (Mothali 2011, Ch. 4 and 5.2-5.3).

The attacker fits a Naive-Bayes model (``psi_i = P(S = s_i)``, ``w_ijk = P(R_j = r_jk | S = s_i)``)
to the release by MAP expectation-maximization, treating each tuple's sensitive value as a
latent variable constrained by its group (Tables 4.1 and 4.2):

* **Initialization**: ``psi ~ Dir(1 + alpha)`` and every ``w_ij. ~ Dir(1 + beta)`` (random
  restarts come from these draws).
* **Exact E-step** (Table 4.1, Case 1): ``gamma_ni`` is the probability that tuple ``n`` has
  ``s_i`` under the distribution over its group's permutations
  ``Pr(pi) \\propto prod_m psi_{pi_m} prod_j w_{pi_m j k}``, computed by enumerating them.
* **Approximate E-step** (Table 4.2, Case 2): ``gamma_ni \\propto psi_i prod_j w_ijk`` over
  all sensitive values, ignoring the group (it learns nothing, Table 4.4 shows).
* **M-step**: ``psi_i = (sum_n gamma_ni + alpha) / (N + |S| alpha)`` and
  ``w_ijk = (sum_n gamma_ni delta_njk + beta) / (sum_k sum_n gamma_ni delta_njk + |R_j| beta)``.
* **Assignment** (Ch. 4.3): in each group the most probable permutation
  ``argmin_pi sum -log gamma_{m pi_m}`` by the Hungarian algorithm
  (:func:`scipy.optimize.linear_sum_assignment`).
* **Probabilities** (Ch. 5.2): ``Pr(pi) = prod gamma / sum_pi prod gamma`` and each tuple's
  marginal; with ``calibrate=True`` the averaged form of Ch. 5.3,
  ``Pr(pi) = 1/g! sum_m gamma~_{m pi_m}`` (``gamma~`` normalized over the group's values).

Restarts: the run with the highest log posterior (what an attacker can see) is returned;
every restart's accuracy is recorded when the custodian's truth is given (Tables 4.3-4.4).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._memory import require_at_most
from privlab._params import check_int
from privlab._progress import track
from privlab._rng import RngLike, as_generator
from privlab.attacks._kernels import group_marginals, group_marginals_by_combo
from privlab.attacks._layout import (
    Layout,
    layout_of,
    partition_of,
    permutation_table,
    values_of,
)
from privlab.attacks.posterior import Posterior
from privlab.errors import ParameterError
from privlab.release.views import Grouped

_TINY = 1e-300
#: Caps on the counts a caller gives, with the reason each one is refused above its cap.
MAX_RESTARTS = 1_000
MAX_ITER = 1_000_000
_CAPS = {
    "restarts": (
        MAX_RESTARTS,
        "every restart is a whole EM fit and only the best is kept (the default is 10)",
    ),
    "max_iter": (MAX_ITER, "EM iterations per restart; it stops earlier when it converges"),
}
#: The attacker of the EM attack, in words.
THREAT_MODEL = (
    "the attacker knows the published release (its quasi-identifiers or generalized cells "
    "and each group's sensitive values) and fits a Naive-Bayes model to it by EM"
)


@dataclass(frozen=True, eq=False)
class EMFit:
    """One EM run: its parameters, responsibilities and most probable assignment."""

    psi: np.ndarray  # (m,)
    w: np.ndarray  # (D, m): w[attr_ptr[j] + k, i] = P(R_j = r_jk | S = s_i)
    gamma: np.ndarray  # (N, m)
    assignment: np.ndarray  # (N,) value code per tuple (Hungarian)
    log_posterior: float
    iterations: int
    converged: bool


@dataclass(frozen=True, eq=False)
class EMRun:
    """The best restart's posterior, plus every restart's summary."""

    posterior: Posterior
    best: EMFit
    restarts: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def e_step_exact(scores: np.ndarray, lay: Layout, perm_table, perm_ptr) -> tuple[np.ndarray, float]:
    """``gamma`` from per-tuple scores by enumerating each group's permutations; log-likelihood."""
    gamma = np.zeros_like(scores)
    ll = group_marginals(scores, lay.gtup_ptr, lay.gtup, lay.gval, perm_table, perm_ptr, 0, gamma)
    return gamma, float(ll)


def e_step_approximate(scores: np.ndarray) -> tuple[np.ndarray, float]:
    """``gamma_ni = psi_i prod_j w / sum_q (...)`` over all values (Mothali 2011, Table 4.2)."""
    z = scores.sum(axis=1, keepdims=True)
    return scores / np.maximum(z, _TINY), float(np.log(np.maximum(z, _TINY)).sum())


def nb_scores(psi: np.ndarray, w: np.ndarray, lay: Layout) -> np.ndarray:
    """``(C, m)``: ``psi_i prod_j w_{i j k}`` for every distinct QI combination."""
    s = np.tile(psi, (lay.combo_codes.shape[0], 1))
    for j in range(lay.combo_codes.shape[1]):
        s *= w[lay.combo_codes[:, j]]
    return s


def m_step(
    gamma_combo: np.ndarray, lay: Layout, alpha: float, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """The MAP M-step of Mothali 2011 Table 4.1 from responsibilities summed per QI combination."""
    n = gamma_combo.sum()
    m = gamma_combo.shape[1]
    psi = (gamma_combo.sum(axis=0) + alpha) / (n + m * alpha)
    cnt = lay.onehot.T @ gamma_combo + beta  # (D, m)
    w = np.empty_like(cnt)
    for j in range(lay.attr_ptr.size - 1):
        lo, hi = lay.attr_ptr[j], lay.attr_ptr[j + 1]
        w[lo:hi] = cnt[lo:hi] / cnt[lo:hi].sum(axis=0, keepdims=True)
    return psi, w


def most_probable_assignment(gamma: np.ndarray, lay: Layout) -> np.ndarray:
    """Per group, the permutation maximizing ``prod_m gamma_{m pi_m}`` (Hungarian algorithm).

    Returns the value code assigned to every tuple.
    """
    out = np.empty(lay.n_rows, dtype=np.int64)
    sizes = np.diff(lay.gtup_ptr)
    logg = -np.log(np.maximum(gamma, _TINY))
    for size in np.unique(sizes):
        groups = np.flatnonzero(sizes == size)
        starts = lay.gtup_ptr[groups]
        idx = starts[:, None] + np.arange(size)[None, :]  # (n_g, size) positions
        tup = lay.gtup[idx]
        vals = lay.gval[idx]
        costs = logg[tup[:, :, None], vals[:, None, :]]  # (n_g, size, size)
        if size == 1:
            out[tup[:, 0]] = vals[:, 0]
            continue
        if size == 2:  # closed form of the 2x2 assignment problem
            keep = costs[:, 0, 0] + costs[:, 1, 1] <= costs[:, 0, 1] + costs[:, 1, 0]
            out[tup[:, 0]] = np.where(keep, vals[:, 0], vals[:, 1])
            out[tup[:, 1]] = np.where(keep, vals[:, 1], vals[:, 0])
            continue
        from scipy.optimize import linear_sum_assignment  # (0.7 s to import: when needed)

        for k in range(groups.size):
            rows, cols = linear_sum_assignment(costs[k])
            out[tup[k, rows]] = vals[k, cols]
    return out


def fit_em(
    lay: Layout,
    *,
    approximate: bool = False,
    alpha: float = 1.0,
    beta: float = 1.0,
    max_iter: int = 1000,
    tol: float = 1e-9,
    exact_max: int = 7,
    init: str = "random-worlds",
    rng: RngLike = None,
) -> EMFit:
    """One EM run from a random start (Mothali 2011, Table 4.1 or 4.2).

    ``init="dirichlet"`` draws ``psi ~ Dir(1 + alpha)`` and ``w_ij. ~ Dir(1 + beta)`` (the
    thesis); ``init="random-worlds"`` starts from one M-step on the random-worlds
    responsibilities (each tuple's group shares) multiplied by independent Exp(1) noise, a
    data-driven start that lands in better optima of the multimodal likelihood.
    The exact E-step enumerates the permutations of groups of at most ``exact_max`` tuples
    (default 7, the limit of :func:`run_em`); a release with a larger group is refused.
    """
    check_int("max_iter", max_iter, low=1)
    if not approximate and lay.max_group > exact_max:
        # the exact E-step's kernels size their work arrays by exact_max: a larger group
        # would be written past them (heap corruption), not approximated
        raise ParameterError(
            f"the exact E-step enumerates permutations of groups of at most exact_max = "
            f"{exact_max} tuples, got a group of {lay.max_group}; use the approximate E-step"
        )
    gen = as_generator(rng)
    m = lay.n_values
    perm_table, perm_ptr = permutation_table(min(exact_max, max(lay.max_group, 1)))
    order = np.argsort(lay.combo_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(lay.combo_of[order]) != 0])
    if init == "dirichlet":
        psi = gen.dirichlet(np.full(m, 1.0 + alpha))
        w = np.empty((lay.n_flat, m))
        for j in range(lay.attr_ptr.size - 1):
            lo, hi = lay.attr_ptr[j], lay.attr_ptr[j + 1]
            w[lo:hi] = gen.dirichlet(np.full(hi - lo, 1.0 + beta), size=m).T
    elif init == "random-worlds":
        sizes = np.diff(lay.gtup_ptr)
        gamma0 = np.zeros((lay.n_rows, m))
        np.add.at(gamma0, (np.repeat(np.arange(lay.n_groups), sizes), lay.gval), 1.0)
        gamma0 = gamma0[lay.group_id] * gen.exponential(size=(lay.n_rows, m))
        gamma0 /= gamma0.sum(axis=1, keepdims=True)
        psi, w = m_step(np.add.reduceat(gamma0[order], starts, axis=0), lay, alpha, beta)
    else:
        raise ParameterError(f"init must be 'dirichlet' or 'random-worlds', got {init!r}")
    prev = -np.inf
    converged = False
    it = 0
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])  # group order
    multiplicity = np.bincount(lay.combo_of, minlength=lay.combo_codes.shape[0])[:, None]
    for it in range(1, max_iter + 1):  # noqa: B007 (it is reported)
        # the E-step summed per distinct QI combination (all the M-step needs): no (N, m)
        # array is formed until the end
        combo_scores = nb_scores(psi, w, lay)
        gamma_combo = np.zeros_like(combo_scores)
        if approximate:
            z = np.maximum(combo_scores.sum(axis=1, keepdims=True), _TINY)
            gamma_combo = combo_scores / z * multiplicity
            ll = float((np.log(z) * multiplicity).sum())
        else:
            ll = group_marginals_by_combo(
                combo_scores, combo_g, lay.gtup_ptr, lay.gval, perm_table, perm_ptr, gamma_combo
            )
        logp = (
            ll
            + alpha * np.log(np.maximum(psi, _TINY)).sum()
            + beta * np.log(np.maximum(w, _TINY)).sum()
        )
        if abs(logp - prev) <= tol * abs(logp):
            converged = True
            break
        prev = logp
        psi, w = m_step(gamma_combo, lay, alpha, beta)
    scores = nb_scores(psi, w, lay)[lay.combo_of]
    if approximate:
        gamma, _ = e_step_approximate(scores)
    else:
        gamma, _ = e_step_exact(scores, lay, perm_table, perm_ptr)
    return EMFit(
        psi=psi,
        w=w,
        gamma=gamma,
        assignment=most_probable_assignment(gamma, lay),
        log_posterior=float(logp),
        iterations=it,
        converged=converged,
    )


def assignment_probabilities(
    gamma: np.ndarray, lay: Layout, *, calibrate: bool = False
) -> np.ndarray:
    """Tuple marginals of the group-assignment probabilities (Mothali 2011 Ch. 5.2, 5.3)."""
    if lay.max_group > 8:
        raise ParameterError(
            f"groups of {lay.max_group} tuples are too large to enumerate (at most 8)"
        )
    perm_table, perm_ptr = permutation_table(max(lay.max_group, 1))
    out = np.zeros_like(gamma)
    group_marginals(
        np.ascontiguousarray(gamma), lay.gtup_ptr, lay.gtup, lay.gval, perm_table, perm_ptr,
        1 if calibrate else 0, out,
    )  # fmt: skip
    return out


def restrict_to_groups(gamma: np.ndarray, lay: Layout) -> np.ndarray:
    """``gamma`` with every value absent from the tuple's group set to 0, rows renormalized."""
    sizes = np.diff(lay.gtup_ptr)
    allowed = np.zeros((lay.n_groups, lay.n_values), dtype=bool)
    allowed[np.repeat(np.arange(lay.n_groups), sizes), lay.gval] = True
    p = np.where(allowed[lay.group_id], gamma, 0.0)
    z = p.sum(axis=1, keepdims=True)
    empty = z[:, 0] <= 0
    p[empty] = allowed[lay.group_id[empty]]
    return p / p.sum(axis=1, keepdims=True)


def run_em(
    release,
    *,
    restarts: int = 10,
    approximate: bool = False,
    alpha: float = 1.0,
    beta: float = 1.0,
    max_iter: int = 1000,
    tol: float = 1e-9,
    calibrate: bool = False,
    probabilities: str = "assignment",
    init: str = "random-worlds",
    truth: np.ndarray | None = None,
    rng: RngLike = None,
    progress: bool = False,
    layout: Layout | None = None,
) -> EMRun:
    """The Naive-Bayes EM attack with ``restarts`` random starts (Mothali 2011, Ch. 4).

    Parameters
    ----------
    release
        An anatomy release.
    restarts
        Number of Dirichlet-random starts; the one with the highest log posterior is kept.
    approximate
        Use the approximate E-step of Table 4.2 instead of the exact one of Table 4.1.
    alpha, beta
        Dirichlet prior exponents of ``psi`` and ``w`` (``Dir(1 + alpha)``): MAP smoothing.
    calibrate
        Report the calibrated probabilities of Ch. 5.3 instead of those of Ch. 5.2.
    probabilities
        ``"assignment"`` (default, Ch. 5.2): tuple marginals of ``Pr(pi) ~ prod gamma``;
        ``"gamma"``: the responsibilities themselves, restricted to the group's values (for the
        exact E-step they already are the model's marginals, and better calibrated).
    init
        ``"random-worlds"`` (default) or ``"dirichlet"`` (the thesis); see :func:`fit_em`.
    truth
        The custodian's true codes: each restart's assignment accuracy is recorded.
    """
    for name, v in (("restarts", restarts), ("max_iter", max_iter)):
        require_at_most(name, check_int(name, v, low=1), *_CAPS[name])
    if probabilities not in ("assignment", "gamma"):
        raise ParameterError(
            f"probabilities must be 'assignment' or 'gamma', got {probabilities!r}"
        )
    if not (alpha >= 0 and beta >= 0):
        raise ParameterError(f"alpha and beta must be >= 0, got {alpha!r} and {beta!r}")
    part = partition_of(release)
    lay = layout if layout is not None else layout_of(release, part)
    if not approximate and lay.max_group > 7:
        raise ParameterError(
            f"the exact E-step enumerates permutations: groups of {lay.max_group} tuples are too "
            "large (at most 7); use the approximate E-step"
        )
    t0 = time.perf_counter()
    best: EMFit | None = None
    summary = []
    for k, gen in enumerate(
        track(
            as_generator(rng).spawn(restarts),
            description="EM attack",
            total=restarts,
            enabled=progress,
        )
    ):
        fit = fit_em(
            lay, approximate=approximate, alpha=alpha, beta=beta, max_iter=max_iter, tol=tol,
            init=init, rng=gen,
        )  # fmt: skip
        row: dict[str, Any] = {
            "restart": k,
            "log_posterior": fit.log_posterior,
            "iterations": fit.iterations,
            "converged": fit.converged,
        }
        if truth is not None:
            row["accuracy"] = float((fit.assignment == np.asarray(truth)).mean())
        summary.append(row)
        if best is None or fit.log_posterior > best.log_posterior:
            best = fit
    assert best is not None
    seconds = time.perf_counter() - t0
    if probabilities == "gamma":
        probs = restrict_to_groups(best.gamma, lay)
    else:
        probs = assignment_probabilities(best.gamma, lay, calibrate=calibrate)
    diagnostics = {
        "restarts": int(restarts),
        "approximate": bool(approximate),
        "calibrated": bool(calibrate),
        "probabilities": probabilities,
        "init": init,
        "alpha": float(alpha),
        "beta": float(beta),
        "best_log_posterior": best.log_posterior,
        "best_iterations": best.iterations,
        "seconds": round(seconds, 3),
    }
    posterior = Posterior(
        probs=probs,
        group_id=lay.group_id,
        values=values_of(part),
        method="em-approximate" if approximate else "em",
        diagnostics=diagnostics,
        release_kind=getattr(release, "method", None),
        sensitive=part.sensitive.name,
        threat_model=THREAT_MODEL,
    )
    return EMRun(posterior=posterior, best=best, restarts=summary, seconds=seconds)


def em_attack(release: Grouped, **kwargs) -> Posterior:
    """The posterior of :func:`run_em` (same keyword arguments)."""
    return run_em(release, **kwargs).posterior
