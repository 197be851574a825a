"""Privacy and information-loss measures of PRAM (Ma 2006, Ch. 3 and Sec. 7.1.3).

Privacy (Sec. 3.1):

* :func:`gamma_amplification`: ``max_k max_{k1,k2} P[k1,k] / P[k2,k]`` (column ratio; Evfimievski
  et al. 2003).  ``strict=True`` makes a column holding both zero and non-zero entries give
  ``inf`` (the definition); the default ignores zeros (what the thesis does for grouped
  schemes, notes Sec. 3.1.2).  Applied to a joint matrix it is the *simultaneous* gamma of
  Sec. 7.1.3.  Note: Table 5.1 prints gamma = 9 for the binary scheme ``p1 = 0.1, p2 = 0.25``;
  the column-ratio definition gives ``max(0.9/0.25, 0.75/0.1) = 7.5``, and 9 = 0.9/0.1 is a row
  ratio (notes Sec. 3.1.2), so privlab reports 7.5.
* :func:`breach_rho2`: the rho2* with ``rho2*(1-rho1) / (rho1(1-rho2*)) = gamma``.
* :func:`conditional_entropy`: ``H(X | X~)`` in bits for a prior (Sec. 3.1.1).
* :func:`probabilistic_k_anonymity`: ``(K_p, Dist_K)`` (Sec. 3.1.3).
* :func:`near_deterministic`: the original values a matrix releases as one fixed value that
  points back to them (a deterministic or near-deterministic matrix: ``p = 1`` on a binary
  column, a permutation, ``p = 0``), which the sanitizer warns about at publish time.

Information loss (Sec. 3.2): :func:`kl_divergence`, :func:`l1_density_distance` (with the
histogram divided by the interval width, notes Sec. 3.2.1) and :func:`odds_ratio`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.data.matrices import validate_matrix
from privlab.errors import ParameterError


# -- gamma ----------------------------------------------------------------------------------------
def _rows(p: np.ndarray, rows: Sequence[int] | None) -> np.ndarray:
    if rows is None:
        return p
    r = np.asarray(rows, dtype=np.int64).reshape(-1)
    if r.size == 0 or r.min() < 0 or r.max() >= p.shape[0]:
        raise ParameterError(f"rows must be indices of the {p.shape[0]} original values")
    return p[r]


def gamma_amplification(
    matrix: Any, *, strict: bool = False, rows: Sequence[int] | None = None
) -> float:
    """Worst-case amplification of a transition matrix (row = original, column = released).

    Columns that no value reaches (all zeros) are skipped.  With ``strict=False`` only the
    non-zero entries of each column are compared.  ``rows`` restricts the original values
    compared to those that can occur (the support of an additive-noise interval matrix,
    :mod:`privlab.publish.additive_noise`); default all.
    """
    p = _rows(validate_matrix(matrix, name="matrix"), rows)
    g = 1.0
    for col in p.T:
        pos = col[col > 0]
        if pos.size == 0:
            continue
        if strict and pos.size < col.size:
            return float("inf")
        g = max(g, float(pos.max() / pos.min()))
    return g


def revealing_values(matrix: Any, *, rows: Sequence[int] | None = None) -> np.ndarray:
    """Released values that only one original value can produce (a column with exactly one
    positive entry): whoever sees one knows the original value with certainty.

    The thesis's gamma (:func:`gamma_amplification` with ``strict=False``) ignores zero
    entries, so it rates such a matrix safe: the swap ``[[0, 1], [1, 0]]`` (p = 1 on a
    binary column) has gamma 1 there, and rho2* = rho1, although it discloses every value.
    ``rows``: only these original values can occur (as in :func:`gamma_amplification`).
    """
    p = _rows(validate_matrix(matrix, name="matrix"), rows)
    return np.flatnonzero((p > 0).sum(axis=0) == 1)


#: A row share at or above which a matrix is near-deterministic (:func:`near_deterministic`).
#: 0.95: the released value then equals a fixed function of the original for at least 19
#: records in 20 and names it with probability 0.95 or more, so the deniability left is under
#: 5% -- the share of people at risk above which privlab's report fails a release
#: (``max_at_risk_share``).  Ma's experiments reach it only at the end of their sweeps (p =
#: 0.05 on an M-category column, and p = 0, the non-private reference).
NEAR_DETERMINISTIC = 0.95


def near_deterministic(matrix: Any, share: float = NEAR_DETERMINISTIC) -> list[tuple[int, int]]:
    """The pairs ``(i, j)`` where original value ``i`` is released as ``j`` with probability
    at least ``share`` *and*, every original value being equally likely, a released ``j``
    comes from ``i`` with probability at least ``share``: ``j`` all but names ``i``.

    The first condition alone would also flag a matrix that sends every value to one value
    (all information destroyed, nothing disclosed); the second alone a column of rare
    arrivals.  Together they catch a deterministic swap (``p = 1`` on a binary column: every
    pair, share 1), a permutation or the identity (``p = 0``), a value left alone in its group
    (grouped M-category, share 1) and a weak randomization (M-category with ``p <= 0.05``).
    """
    p = validate_matrix(matrix, name="matrix")
    if not 0.0 < share <= 1.0:
        raise ParameterError(f"share = {share:g} must lie in (0, 1]")
    col = p.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        back = np.where(col[None, :] > 0, p / np.where(col > 0, col, 1.0)[None, :], 0.0)
    tol = 1e-12
    hits = np.argwhere((p >= share - tol) & (back >= share - tol))
    return [(int(i), int(j)) for i, j in hits]


def gamma_binary_symmetric(p: float) -> float:
    """Closed form (Ma Sec. 3.1.2): ``(1-p)/p`` for ``0 <= p < 0.5``."""
    return (1 - p) / p


def gamma_ternary_symmetric(p1: float, p2: float) -> float:
    """Closed form: ``(1-p1-p2)/p2`` when ``1-p1-p2 >= p1 >= p2``."""
    return (1 - p1 - p2) / p2


def gamma_m_category(k: int, p: float) -> float:
    """Closed form: ``(1-p)(k-1)/p`` when ``1-p >= p/(k-1)``."""
    return (1 - p) * (k - 1) / p


def gamma_group_simultaneous(p: float, g: int) -> float:
    """Sec. 7.1.3: simultaneous gamma of a group of ``g`` items randomized jointly over the
    ``2^g`` presence patterns: ``(1-p)(2^g - 1)/p``."""
    return (1 - p) * (2**g - 1) / p


def gamma_group_independent(p: float, g: int) -> float:
    """Sec. 7.1.3: simultaneous gamma when each item of the group is randomized independently
    with its Prop.-7.1 marginal: ``([1-p+p(2^{g-1}-1)/(2^g-1)] / [p 2^g / (2(2^g-1))])^g``."""
    j = 2**g
    stay = 1 - p + p * (j / 2 - 1) / (j - 1)
    move = p * j / (2 * (j - 1))
    return (stay / move) ** g


def breach_rho2(gamma: float, rho1: float) -> float:
    """The posterior bound rho2* for prior rho1 (Ma Sec. 3.1.2): ``gamma rho1/(1-rho1+gamma rho1)``.

    An at most gamma-amplifying PRAM causes no upward rho1-to-rho2 (nor downward) breach for
    any ``rho2 > rho2*``.
    """
    if not 0 < rho1 < 1:
        raise ParameterError(f"rho1 = {rho1} is outside (0, 1)")
    if gamma < 1:
        raise ParameterError(f"gamma = {gamma} is below 1")
    if np.isinf(gamma):
        return 1.0
    return float(gamma * rho1 / (1 - rho1 + gamma * rho1))


def breach_impossible(gamma: float, rho1: float, rho2: float) -> bool:
    """True when ``rho2(1-rho1) / (rho1(1-rho2)) > gamma`` (no rho1-to-rho2 breach possible)."""
    if not (0 < rho1 < 1 and 0 < rho2 < 1):
        raise ParameterError(f"rho1 = {rho1}, rho2 = {rho2} must lie in (0, 1)")
    return bool(rho2 * (1 - rho1) / (rho1 * (1 - rho2)) > gamma)


# -- prior-dependent measures ---------------------------------------------------------------------
def _prior(prior: Any, k: int) -> np.ndarray:
    pi = np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=float).ravel()
    if pi.shape != (k,) or np.any(pi < 0) or pi.sum() <= 0:
        raise ParameterError(f"the prior must be {k} non-negative numbers with a positive sum")
    return pi / pi.sum()


def posterior(matrix: Any, prior: Any = None) -> np.ndarray:
    """``post[k', k] = Pr(X = k | X~ = k')`` by Bayes' rule (rows of unreached k' are 0)."""
    p = validate_matrix(matrix, name="matrix")
    pi = _prior(prior, p.shape[0])
    joint = pi[:, None] * p  # [k, k'] = pi_k P[k, k']
    col = joint.sum(axis=0)
    return np.divide(joint.T, col[:, None], out=np.zeros_like(joint.T), where=col[:, None] > 0)


def conditional_entropy(matrix: Any, prior: Any = None) -> float:
    """``H(X | X~)`` in bits (Ma Sec. 3.1.1); ``prior`` defaults to uniform.

    ``-sum_{k,k'} pi(k') P(k',k) log2[pi(k') P(k',k) / sum_k'' pi(k'') P(k'',k)]``.
    Uniform prior closed forms: binary h(p); K-category h(p) + p log2(K-1).
    """
    p = validate_matrix(matrix, name="matrix")
    pi = _prior(prior, p.shape[0])
    joint = pi[:, None] * p
    col = joint.sum(axis=0)
    mask = joint > 0
    ratio = np.divide(joint, col[None, :], out=np.ones_like(joint), where=mask)
    return float(-np.sum(joint[mask] * np.log2(ratio[mask]))) + 0.0  # no -0.0


@dataclass(frozen=True)
class KAnonymity:
    """Probabilistic K-anonymity (Ma Sec. 3.1.3).

    ``k_p`` is the smallest number of original values with positive posterior given any
    released value; ``dist_k`` the smallest KL (bits) from such a posterior to the uniform
    distribution over its support (the thesis's "min"); ``dist_k_max`` the largest (the
    conservative reading, notes Sec. 3.1.3).  For a posterior whose support is larger than
    K_p the uniform is taken over that support (the text's "uniform over K_p categories" is
    only defined when they coincide, as in every symmetric scheme).
    """

    k_p: int
    dist_k: float
    dist_k_max: float

    def to_dict(self) -> dict[str, Any]:
        return {"k_p": self.k_p, "dist_k": self.dist_k, "dist_k_max": self.dist_k_max}


def probabilistic_k_anonymity(matrix: Any, prior: Any = None) -> KAnonymity:
    """``(K_p, Dist_K)`` of a PRAM matrix for a prior (default uniform)."""
    post = posterior(matrix, prior)
    reached = post.sum(axis=1) > 0
    post = post[reached]
    support = (post > 1e-15).sum(axis=1)
    dists = []
    for row, s in zip(post, support, strict=True):
        q = row[row > 1e-15]
        dists.append(float(np.sum(q * np.log2(q * s))))
    return KAnonymity(int(support.min()), float(min(dists)), float(max(dists)))


# -- information loss -----------------------------------------------------------------------------
def kl_divergence(p_true: Any, p_est: Any) -> float:
    """``KL(p_true || p_est)`` in nats between two distributions (counts are normalized).

    Negative estimates (moment estimator) are clipped to 0 before normalizing; the result is
    ``inf`` when the estimate is 0 where the truth is positive.  Ma Sec. 3.2.1 does not state a
    direction; this one stays finite for EM estimates of PMFs with zero cells (Table 2.1).
    """
    p = np.asarray(p_true, dtype=float).ravel()
    q = np.clip(np.asarray(p_est, dtype=float).ravel(), 0, None)
    if p.shape != q.shape or p.sum() <= 0 or q.sum() <= 0:
        raise ParameterError("KL needs two non-empty distributions of the same length")
    p, q = p / p.sum(), q / q.sum()
    m = p > 0
    if np.any(q[m] == 0):
        return float("inf")
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def l1_density_distance(
    density: Callable[[np.ndarray], np.ndarray],
    edges: Sequence[float],
    counts: Any,
    *,
    points_per_interval: int = 200,
) -> float:
    """``int |f(x) - f^(x)| dx`` with ``f^(x) = N^_i / (N |Omega_i|)`` on interval ``i``.

    The thesis writes ``f^ = (1/N) sum N^_i I(x in Omega_i)``, which is not a density unless the
    intervals have unit width (notes Sec. 3.2.1); privlab divides by the width.  The integral is
    taken by the midpoint rule inside each interval; ``f`` is assumed zero outside ``edges``.
    """
    e = np.asarray(edges, dtype=float)
    c = np.clip(np.asarray(counts, dtype=float).ravel(), 0, None)
    if e.size != c.size + 1 or np.any(np.diff(e) <= 0):
        raise ParameterError("edges must be increasing with one more entry than counts")
    fhat = c / c.sum() / np.diff(e)
    total = 0.0
    u = (np.arange(points_per_interval) + 0.5) / points_per_interval
    for i in range(c.size):
        x = e[i] + u * (e[i + 1] - e[i])
        total += float(np.mean(np.abs(density(x) - fhat[i])) * (e[i + 1] - e[i]))
    return total


def odds_ratio(counts: Any) -> float:
    """Sample odds ratio ``n11 n22 / (n12 n21)`` of a 2x2 table (Ma Sec. 3.2.2).

    Works on estimated counts too (``r^``); ``inf``/``nan`` when the denominator is 0.
    """
    c = np.asarray(counts, dtype=float)
    if c.size != 4:
        raise ParameterError(f"an odds ratio needs a 2x2 table, got {c.size} cells")
    c = c.reshape(2, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(c[0, 0] * c[1, 1] / (c[0, 1] * c[1, 0]))
