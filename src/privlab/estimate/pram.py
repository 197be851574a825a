"""Frequency estimation from PRAM-randomized data (Ma 2006, Sec. 2.4).

Count vectors over several attributes use ONE layout everywhere: mixed radix with the first
attribute varying slowest, so that the joint transition matrix of independently randomized
attributes is ``P = P_1 (x) ... (x) P_n`` (Kronecker; notes Sec. 0 — the thesis's Sec. 2.4.1
text says "fastest" and its Sec. 5.3 swaps the factors, both inconsistent with its examples).

* Theorem 1: ``E[N~ | D] = P^T N`` and ``Cov(N~ | D) = diag(P^T N) - P^T diag(N) P``.
* Theorem 2: the moment estimator ``N^ = (P^T)^-1 N~`` is unbiased with
  ``Cov(N^ | D) = (P^-1)^T Cov(N~ | D) P^-1``.  The thesis sometimes writes ``P^-1 N~``; that
  is only right for symmetric ``P`` (notes Sec. 0), so privlab uses ``(P^T)^-1`` throughout.
* With ``B = (P^T)^-1`` and ``B P^T = I``, Theorem 2 simplifies to
  ``Cov(N^) = B diag(P^T N) B^T - diag(N)``, whose diagonal ``(B o B)(P^T N) - N`` is again a
  Kronecker product applied to a vector (``(A (x) C) o (A (x) C) = (A o A) (x) (C o C)``): the
  variances of 10^5 cells cost a few mode products, never a 10^5 x 10^5 matrix.
* EM (Sec. 2.4.2): ``theta_j <- theta_j sum_k P_jk N~_k / (N theta~_k)`` with
  ``theta~ = P^T theta`` (the thesis writes ``P theta``; notes Sec. 2.4.2), started at
  ``N~ / N``; it stays on the simplex and equals the moment estimate when that is interior.

Every product with a Kronecker matrix is done mode by mode on the count tensor, so the largest
matrix ever formed is one attribute's ``K_i x K_i`` (or one joint block's).  A column released
unchanged contributes an :class:`Identity` factor, which stays symbolic: nothing of size
``K^2`` is built for it (a 20,263-value ``fnlwgt`` would need 3.3 GB).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special
from threadpoolctl import ThreadpoolController

from privlab.data.counts import joint_counts
from privlab.data.matrices import validate_matrix
from privlab.errors import MatrixError, ParameterError
from privlab.release.views import Randomized

#: Largest number of cells for which :func:`moment_covariance` forms the full matrix.
MAX_FULL_COV = 4096
#: Largest number of cells for which :func:`em_estimate` iterates with the dense ``P``.
DENSE_EM_CELLS = 256
#: Multiply-adds per EM product up to which :func:`em_estimate` runs BLAS on one thread.
SMALL_PRODUCT = 1 << 22


@dataclass(frozen=True)
class Identity:
    """The ``size x size`` identity matrix of a column released unchanged, kept symbolic.

    It is its own transpose, inverse and elementwise square; :func:`kron_apply` skips it.
    """

    size: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.size, self.size)

    @property
    def T(self) -> Identity:
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.eye(self.size, dtype=dtype)


Factor = np.ndarray | Identity


# -- Kronecker algebra, mode by mode -------------------------------------------------------------
def kron_apply(factors: Sequence[Factor], x: np.ndarray) -> np.ndarray:
    """``(F_1 (x) ... (x) F_n) @ x`` for a vector (or ``(J, r)`` array) ``x``, mode by mode.

    ``x`` is laid out first-factor-slowest.  Cost ``J * sum_i K_i`` instead of ``J^2``;
    :class:`Identity` factors cost nothing.
    """
    factors = [f if isinstance(f, Identity) else np.asarray(f, dtype=float) for f in factors]
    sizes = [f.shape[1] for f in factors]
    x = np.asarray(x, dtype=float)
    extra = x.shape[1:]
    t = x.reshape(*sizes, *extra)
    for i, f in enumerate(factors):
        if not isinstance(f, Identity):
            t = np.moveaxis(np.tensordot(f, t, axes=([1], [i])), 0, i)
    return t.reshape(int(np.prod([f.shape[0] for f in factors])), *extra)


def kron_matrix(factors: Sequence[Factor]) -> np.ndarray:
    """The explicit Kronecker product (for tests and small cases only)."""
    out = np.ones((1, 1))
    for f in factors:
        out = np.kron(out, np.asarray(f, dtype=float))
    return out


def _validated(factors: Sequence[Factor], *, invertible: bool = False) -> list[Factor]:
    return [
        f
        if isinstance(f, Identity)
        else validate_matrix(f, invertible=invertible, name=f"transition matrix {i + 1}")
        for i, f in enumerate(factors)
    ]


def _inverse_transposes(factors: Sequence[Factor]) -> list[Factor]:
    return [
        f if isinstance(f, Identity) else np.linalg.inv(f.T)
        for f in _validated(factors, invertible=True)
    ]


def _squared(factors: Sequence[Factor]) -> list[Factor]:
    return [f if isinstance(f, Identity) else f * f for f in factors]


def observed_counts(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Joint counts of code tuples (rows of ``codes``), first column slowest, as floats."""
    return joint_counts(codes, sizes).astype(float)


def _check_counts(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    c = np.asarray(counts, dtype=float).ravel()
    j = int(np.prod([f.shape[0] for f in factors]))
    if c.size != j:
        raise MatrixError(f"{c.size} counts for a joint matrix of {j} cells")
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ParameterError("observed counts must be finite and non-negative")
    return c


# -- Theorem 1 and 2 ------------------------------------------------------------------------------
def expected_randomized_counts(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    """Theorem 1(a): ``E[N~ | D] = P^T N`` with ``P = P_1 (x) ... (x) P_n``."""
    return kron_apply(
        [f if isinstance(f, Identity) else np.asarray(f, dtype=float).T for f in factors],
        np.asarray(counts, float),
    )


def randomized_covariance(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    """Theorem 1(c): ``Cov(N~ | D) = sum_l N_l V_l = diag(P^T N) - P^T diag(N) P`` (full)."""
    n = np.asarray(counts, dtype=float).ravel()
    p = kron_matrix(factors)
    return np.diag(p.T @ n) - p.T @ (n[:, None] * p)


def moment_estimate(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    """Theorem 2: ``N^ = (P^T)^-1 N~``, applied mode by mode (``(P^T)^-1 = (x)_i (P_i^T)^-1``).

    Unbiased; may be negative (Ma Sec. 2.4.1's "known defect").  Raises
    :class:`~privlab.errors.MatrixError` for a singular or non-stochastic factor.
    """
    c = _check_counts(counts, factors)
    return kron_apply(_inverse_transposes(factors), c)


def moment_covariance(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    """Theorem 2: ``Cov(N^ | D) = (P^-1)^T [diag(P^T N) - P^T diag(N) P] P^-1`` (full matrix).

    ``counts`` are the TRUE counts ``N`` (or a plug-in estimate).  Only for up to
    :data:`MAX_FULL_COV` cells; use :func:`moment_variance` for the diagonal of large tables.
    """
    n = np.asarray(counts, dtype=float).ravel()
    if n.size > MAX_FULL_COV:
        raise ParameterError(
            f"the full covariance of {n.size} cells is too large; use moment_variance"
        )
    p = kron_matrix(_validated(factors, invertible=True))
    pinv = np.linalg.inv(p)
    return pinv.T @ randomized_covariance(n, factors) @ pinv


def moment_variance(counts: Any, factors: Sequence[Factor]) -> np.ndarray:
    """Diagonal of Theorem 2's covariance, mode by mode: ``(B o B)(P^T N) - N``, ``B=(P^T)^-1``.

    ``counts`` are the true counts ``N``; pass ``N^`` as a plug-in (then ``P^T N^ = N~`` and
    the variance is ``(B o B) N~ - N^``).  Plug-in values can be slightly negative for cells
    estimated below 0; they are clipped at 0.
    """
    n = np.asarray(counts, dtype=float).ravel()
    b = _inverse_transposes(factors)
    ptn = expected_randomized_counts(n, factors)
    return np.maximum(kron_apply(_squared(b), ptn) - n, 0.0)


def ratio_sd(
    counts: Any, cov: np.ndarray, numerator: Sequence[int], denominator: Sequence[int]
) -> float:
    """Delta-method sd of ``sum(N^[numerator]) / sum(N^[denominator])`` (Ma Sec. 5.4).

    With ``mu1, mu2`` the true sums, ``sigma1^2, sigma2^2`` their variances and ``c`` their
    covariance (all from Theorem 2's ``cov``), the Hinkley/Taylor variance is
    ``(sigma1^2 - 2 c mu1/mu2 + sigma2^2 mu1^2/mu2^2) / mu2^2``.  The thesis prints
    ``N_ijk^2`` in the denominator where ``N_ij^2 = mu2^2`` is meant (notes Sec. 5.4).
    """
    n = np.asarray(counts, dtype=float).ravel()
    a = np.zeros(n.size)
    b = np.zeros(n.size)
    a[list(numerator)] = 1.0
    b[list(denominator)] = 1.0
    mu1, mu2 = a @ n, b @ n
    if mu2 <= 0:
        raise ParameterError("the denominator's true count must be positive")
    v1, v2, c = a @ cov @ a, b @ cov @ b, a @ cov @ b
    r = mu1 / mu2
    return float(np.sqrt(max(v1 - 2 * c * r + v2 * r * r, 0.0)) / mu2)


def hinkley_density(
    w: Any, mu1: float, mu2: float, sigma1: float, sigma2: float, rho: float = 0.0
) -> np.ndarray:
    """Density of ``W = X1 / X2`` for jointly normal ``(X1, X2)`` (Hinkley 1969; Ma Sec. 5.4.2).

    The exact form::

        f(w) = b d / (sqrt(2 pi) s1 s2 a^3) [Phi(b / (sqrt(1-rho^2) a)) - Phi(-b / (...))]
               + sqrt(1-rho^2) / (pi s1 s2 a^2) exp(-c / (2 (1-rho^2)))

    with ``a(w) = sqrt(w^2/s1^2 - 2 rho w/(s1 s2) + 1/s2^2)``,
    ``b(w) = mu1 w/s1^2 - rho (mu1 + mu2 w)/(s1 s2) + mu2/s2^2``,
    ``c = mu1^2/s1^2 - 2 rho mu1 mu2/(s1 s2) + mu2^2/s2^2`` and
    ``d(w) = exp((b^2 - c a^2) / (2 (1-rho^2) a^2))``.  Ma prints only the first term's
    leading factor (the approximation for large ``mu2/s2``), writes ``m mu2`` for ``mu2`` in
    ``b`` and never defines ``c`` [!] (notes Sec. 5.4).
    """
    w = np.asarray(w, dtype=float)
    if sigma1 <= 0 or sigma2 <= 0 or not -1 < rho < 1:
        raise ParameterError("Hinkley's density needs sigma1, sigma2 > 0 and |rho| < 1")
    s1, s2 = float(sigma1), float(sigma2)
    r2 = 1.0 - rho * rho
    a = np.sqrt(w * w / s1**2 - 2 * rho * w / (s1 * s2) + 1 / s2**2)
    b = mu1 * w / s1**2 - rho * (mu1 + mu2 * w) / (s1 * s2) + mu2 / s2**2
    c = mu1**2 / s1**2 - 2 * rho * mu1 * mu2 / (s1 * s2) + mu2**2 / s2**2
    d = np.exp((b * b - c * a * a) / (2 * r2 * a * a))
    z = b / (np.sqrt(r2) * a)
    first = b * d / (np.sqrt(2 * np.pi) * s1 * s2 * a**3) * special.erf(z / np.sqrt(2))
    second = np.sqrt(r2) / (np.pi * s1 * s2 * a * a) * np.exp(-c / (2 * r2))
    return first + second


# -- EM maximum likelihood (Sec. 2.4.2) -----------------------------------------------------------
@dataclass(frozen=True)
class EMResult:
    """The EM maximum-likelihood estimate: proportions ``theta`` (on the simplex) and counts."""

    theta: np.ndarray
    counts: np.ndarray
    iterations: int
    converged: bool
    loglik: float


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded in this process, found once (a scan costs ~10 ms; a limit
    through the found controller ~10 us)."""
    return ThreadpoolController()


def one_blas_thread(small: bool = True) -> contextlib.AbstractContextManager[Any]:
    """BLAS limited to one thread while ``small`` products run: EM's products are a few
    thousand multiply-adds each, thousands of times, and a second BLAS thread only waits
    for its share (privlab issue 19: on a busy machine, 4.8x slower with two threads;
    ``benchmarks/bench_em_threads.py``)."""
    if not small:
        return contextlib.nullcontext()
    return _blas_controller().limit(limits=1, user_api="blas")


def em_estimate(
    counts: Any,
    factors: Sequence[Factor],
    *,
    tol: float = 1e-10,
    max_iter: int = 100_000,
    init: str | np.ndarray = "observed",
) -> EMResult:
    """EM-MLE of the cell proportions (Ma Sec. 2.4.2), every product mode by mode.

    ``theta_j <- theta_j * [P (N~ / (N theta~))]_j`` with ``theta~ = P^T theta``, started at
    ``N~ / N`` (``init="observed"``, the thesis's choice), at the moment estimate clipped to
    ``>= 1e-3 / J`` and renormalized (``init="moment"``: same unique maximum, as the
    log-likelihood is strictly concave, but far fewer iterations under heavy randomization),
    or at a given vector, until ``max |theta^t - theta^{t-1}| <= tol``.  The iterates stay
    non-negative and sum to 1; the log-likelihood ``sum_k N~_k log theta~_k`` never decreases.
    The factors need not be invertible (EM works for any stochastic ``P``).
    """
    factors = _validated(factors)
    c = _check_counts(counts, factors)
    n = c.sum()
    if n <= 0:
        raise ParameterError("no records: the observed counts sum to 0")
    if isinstance(init, str):
        if init == "observed":
            theta = c / n
        elif init == "moment":
            theta = kron_apply(_inverse_transposes(factors), c) / n
            theta = np.maximum(theta, 1e-3 / c.size)
            theta /= theta.sum()
        else:
            raise ParameterError(f"unknown EM start {init!r}; use 'observed' or 'moment'")
    else:
        theta = np.asarray(init, dtype=float).ravel()
        if theta.shape != c.shape or np.any(theta < 0) or theta.sum() <= 0:
            raise ParameterError("the EM start must be a non-negative vector of the cells' length")
        theta = theta / theta.sum()
    pt = [f.T for f in factors]
    if c.size <= DENSE_EM_CELLS:  # small joints: one dense matrix beats mode products
        dense = kron_matrix(factors)
        dense_t = np.ascontiguousarray(dense.T)

        def forward(v):
            return dense_t @ v

        def backward(v):
            return dense @ v
    else:

        def forward(v):
            return kron_apply(pt, v)

        def backward(v):
            return kron_apply(factors, v)

    converged = False
    it = 0
    work = c.size * (c.size if c.size <= DENSE_EM_CELLS else max(f.shape[0] for f in factors))
    with one_blas_thread(work <= SMALL_PRODUCT):
        for it in range(1, max_iter + 1):  # noqa: B007
            tt = forward(theta)
            r = np.divide(c, n * tt, out=np.zeros_like(c), where=tt > 0)
            new = theta * backward(r)
            new /= new.sum()
            delta = np.max(np.abs(new - theta))
            theta = new
            if delta <= tol:
                converged = True
                break
    tt = kron_apply(pt, theta)
    pos = c > 0
    ll = float(np.sum(c[pos] * np.log(np.maximum(tt[pos], 1e-300))))
    return EMResult(theta=theta, counts=theta * n, iterations=it, converged=converged, loglik=ll)


def em_covariance(theta: Any, factors: Sequence[Factor], n: float) -> np.ndarray:
    """Asymptotic covariance of the MLE's counts ``N theta^`` (Ma Sec. 2.4.2), full matrix.

    ``theta^ ~ N(theta, M^-1 / N)`` with per-record Fisher information
    ``M = P diag(1/theta~) P^T`` (``theta~ = P^T theta``) restricted to the simplex, which is
    ``(M^-1 - theta theta^T) / N`` for an interior ``theta``; on counts ``N (M^-1 - theta
    theta^T)``.  Unlike Theorem 2 (randomization only, data fixed), this also counts the
    multinomial sampling of the records.  Up to :data:`MAX_FULL_COV` cells.
    """
    th = np.asarray(theta, dtype=float).ravel()
    if th.size > MAX_FULL_COV:
        raise ParameterError(f"the full covariance of {th.size} cells is too large")
    p = kron_matrix(_validated(factors, invertible=True))
    tt = p.T @ th
    if np.any(tt <= 0):
        raise ParameterError("the randomized-cell probabilities must be positive")
    m = p @ (p.T / tt[:, None])
    minv = np.linalg.inv(m)
    return float(n) * (minv - np.outer(th, th))


# -- marginalization ------------------------------------------------------------------------------
def marginal_matrix(
    joint: Any, sizes: Sequence[int], keep: Sequence[int], *, prior: Any | None = None
) -> np.ndarray:
    """Transition matrix of the attributes ``keep`` (positions) of a joint matrix.

    ``Pr(X~_S = m | X_S = l) = sum_o w(o | l) sum_o~ P[(l, o), (m, o~)]``: randomized values of
    the dropped attributes are summed out and their original values ``o`` averaged with weights
    ``w(o | l)`` from ``prior`` (a joint distribution over the block, default uniform).

    This is the exact channel of ``keep``, whatever the prior, only when the block reduces
    exactly to ``keep`` (:func:`reduces_exactly`: every M-category joint scheme, of which Ma
    Prop. 7.1 / 7.2 are special cases; notes Sec. 5.3(d)).  Otherwise ``E[N~_S]`` depends on
    the true distribution of the dropped attributes within each kept value, which no prior
    known to the analyst gives: ``(P_S^T)^-1 N~_S`` with this matrix is then biased (by 22% on
    Adult's race + sex under invariant PRAM at p = 0.4, privlab issue 31), and the block must
    be estimated whole and summed out (:func:`release_plan`).  Ma Sec. 5.3(d) marginalizes a
    joint matrix without stating this condition [!].
    """
    sizes = [int(s) for s in sizes]
    keep = [int(k) for k in keep]
    j = int(np.prod(sizes))
    p = validate_matrix(joint, size=j, name="joint matrix")
    n = len(sizes)
    if not keep or len(set(keep)) != len(keep) or min(keep) < 0 or max(keep) >= n:
        raise ParameterError(f"bad attribute positions {keep} for {n} attributes")
    drop = [i for i in range(n) if i not in keep]
    t = p.reshape(*sizes, *sizes)
    t = t.sum(axis=tuple(n + i for i in drop))  # sum out dropped outputs
    # axes now: inputs 0..n-1, outputs of kept attributes (in original order)
    w = np.ones(sizes) if prior is None else np.asarray(prior, dtype=float).reshape(sizes)
    if np.any(w < 0):
        raise ParameterError("the prior has a negative entry")
    wl = w.sum(axis=tuple(drop), keepdims=True)
    wc = np.divide(w, wl, out=np.full_like(w, 0.0), where=wl > 0)
    # where a kept configuration has zero prior mass, fall back to uniform over the dropped
    if np.any(wl == 0):
        uni = 1.0 / int(np.prod([sizes[i] for i in drop])) if drop else 1.0
        wc = np.where(np.broadcast_to(wl == 0, w.shape), uni, wc)
    t = (t * wc.reshape(*sizes, *([1] * len(keep)))).sum(axis=tuple(drop))
    # inputs (kept, original order) x outputs (kept, original order) -> order of `keep`
    k_sorted = sorted(keep)
    perm_in = [k_sorted.index(k) for k in keep]
    t = np.transpose(t, [*perm_in, *(len(keep) + q for q in perm_in)])
    m = int(np.prod([sizes[k] for k in keep]))
    return t.reshape(m, m)


#: Largest difference of two channel probabilities that :func:`reduces_exactly` calls equal.
REDUCE_ATOL = 1e-9


def reduces_exactly(
    joint: Any, sizes: Sequence[int], keep: Sequence[int], *, atol: float = REDUCE_ATOL
) -> bool:
    """Whether a joint matrix reduces exactly to the attributes ``keep`` (positions).

    True when the randomized values of ``keep`` depend on the original values of ``keep``
    only: ``sum_o~ P[(l, o), (m, o~)]`` is the same for every original value ``o`` of the
    dropped attributes (``P`` is *lumpable* onto ``keep``), to within ``atol``.  Then, with
    ``R`` the matrix that sums out the dropped outputs and ``L`` the one that maps ``(l, o)``
    to ``l``, ``P R = L P_S`` for ``P_S`` = :func:`marginal_matrix` (any prior), so
    ``(P_S^T)^-1 R^T N~ = L^T (P^T)^-1 N~``: the marginal estimate *is* the whole block's
    estimate summed over the dropped attributes, with the same Theorem-2 covariance
    (``R^T Cov(N~) R = diag(P_S^T N_S) - P_S^T diag(N_S) P_S``).  Every M-category joint
    matrix reduces exactly to any subset (Ma Prop. 7.2); invariant PRAM's joint matrix
    (Gouweleeuw et al. 1998) in general does not.
    """
    sizes = [int(s) for s in sizes]
    keep = [int(k) for k in keep]
    n = len(sizes)
    j = int(np.prod(sizes))
    p = validate_matrix(joint, size=j, name="joint matrix")
    if not keep or len(set(keep)) != len(keep) or min(keep) < 0 or max(keep) >= n:
        raise ParameterError(f"bad attribute positions {keep} for {n} attributes")
    drop = tuple(i for i in range(n) if i not in keep)
    if not drop:
        return True
    t = p.reshape(*sizes, *sizes).sum(axis=tuple(n + i for i in drop))
    spread = t.max(axis=drop) - t.min(axis=drop)
    return bool(np.all(spread <= atol))


@dataclass(frozen=True)
class EstimationPlan:
    """How to estimate the joint counts of ``columns`` of a PRAM release without bias.

    ``factors`` are the Kronecker factors over ``order`` (first slowest; ``sizes`` their
    domain sizes, ``spans[i]`` the columns of ``factors[i]``): the requested columns, each
    block's in the block's order, plus the :attr:`extra` columns, the rest of every jointly
    randomized block that holds some requested columns but does not reduce exactly to them
    (:func:`reduces_exactly`).  A block that does reduce contributes its marginal matrix, a
    column released unchanged a symbolic :class:`Identity`.

    Estimate the counts over ``order`` (Theorem 2 or EM), then :meth:`reduce` sums the extra
    columns out and permutes to ``columns``.  The moment estimate summed out is unbiased
    (``E[A N^] = A N``); the EM estimate summed out is the MLE of the requested margin (the
    MLE of a function of the parameters).  :meth:`variance` propagates Theorem 2's
    covariance through the sum: with ``A`` the summing matrix and ``B = (P^T)^-1``,
    ``Cov(A N^) = (A B) diag(P^T N) (A B)^T - A diag(N) A^T``, whose diagonal
    ``((A B) o (A B)) (P^T N) - A N`` is again computed mode by mode (``A B`` is the
    Kronecker product of each factor's ``B`` with its rows summed over the factor's extra
    columns; ``A diag(N) A^T = diag(A N)`` as each cell is summed into one).
    """

    columns: tuple[str, ...]
    order: tuple[str, ...]
    sizes: tuple[int, ...]
    factors: tuple[Factor, ...]
    spans: tuple[tuple[str, ...], ...]

    @property
    def extra(self) -> tuple[str, ...]:
        """The columns estimated only to be summed out."""
        return tuple(c for c in self.order if c not in self.columns)

    @property
    def kept(self) -> tuple[str, ...]:
        """The requested columns in factor order (the layout before :meth:`reduce` permutes)."""
        return tuple(c for c in self.order if c in self.columns)

    def observed(self, release: Any) -> np.ndarray:
        """The observed (randomized) counts over ``order``."""
        return observed_counts(release.table.columns(list(self.order)), self.sizes)

    def _sum(self, values: Any) -> np.ndarray:
        v = np.asarray(values, dtype=float).reshape(self.sizes)
        drop = tuple(i for i, c in enumerate(self.order) if c not in self.columns)
        return v.sum(axis=drop) if drop else v

    def _permute(self, tensor: np.ndarray) -> np.ndarray:
        kept = self.kept
        return np.transpose(tensor, [kept.index(c) for c in self.columns]).ravel()

    def reduce(self, values: Any) -> np.ndarray:
        """Counts over ``order`` -> counts over ``columns`` (extra columns summed out, then
        permuted to the requested order; first column slowest)."""
        return self._permute(self._sum(values))

    def variance(self, counts: Any) -> np.ndarray:
        """Theorem 2's variance of the reduced estimate, at ``counts`` over ``order`` (the
        true counts, or the estimate as a plug-in: then ``P^T N^ = N~``); clipped at 0."""
        n = np.asarray(counts, dtype=float).ravel()
        ptn = expected_randomized_counts(n, self.factors)
        rows: list[Factor] = []
        for b, span in zip(_inverse_transposes(self.factors), self.spans):
            if isinstance(b, Identity):
                rows.append(b)
                continue
            drop = tuple(i for i, c in enumerate(span) if c not in self.columns)
            if drop:
                sz = [self.sizes[self.order.index(c)] for c in span]
                b = b.reshape(*sz, b.shape[1]).sum(axis=drop).reshape(-1, b.shape[1])
            rows.append(b * b)
        var = kron_apply(rows, ptn) - self._sum(n).ravel()
        return self._permute(np.maximum(var, 0.0).reshape(self._sum(n).shape))


def release_plan(release: Randomized, columns: Sequence[str]) -> EstimationPlan:
    """The :class:`EstimationPlan` of ``columns`` of a PRAM release.

    Independently randomized columns contribute their own matrix; a jointly randomized block
    contributes its joint matrix when all its columns are requested, its marginal when it
    reduces exactly to the requested ones (:func:`reduces_exactly`, e.g. every M-category
    block), and otherwise its joint matrix over all its columns, the others being summed
    out after estimation; a column released unchanged contributes a symbolic
    :class:`Identity`.  Blocks appear in order of first request, each block's columns in the
    block's order.

    ``release`` needs ``table`` (the published table) and ``block_of(column)`` (the block
    that randomized a column, or None when it was released unchanged).
    """
    schema = release.table.schema
    cols = schema.require(columns, purpose="to estimate")
    factors: list[Factor] = []
    order: list[str] = []
    spans: list[tuple[str, ...]] = []
    seen_blocks: list[int] = []
    for c in cols:
        b = release.block_of(c)
        if b is None:
            factors.append(Identity(schema[c].size))
            order.append(c)
            spans.append((c,))
            continue
        if id(b) in seen_blocks:
            continue
        seen_blocks.append(id(b))
        wanted = [x for x in b.columns if x in cols]
        sizes = [schema[x].size for x in b.columns]
        keep = [b.columns.index(x) for x in wanted]
        if len(wanted) == len(b.columns) or not reduces_exactly(b.matrix, sizes, keep):
            factors.append(b.matrix)
            span = tuple(b.columns)
        else:
            factors.append(marginal_matrix(b.matrix, sizes, keep))
            span = tuple(wanted)
        order.extend(span)
        spans.append(span)
    return EstimationPlan(
        columns=tuple(cols),
        order=tuple(order),
        sizes=tuple(schema[c].size for c in order),
        factors=tuple(factors),
        spans=tuple(spans),
    )


def release_factors(release: Randomized, columns: Sequence[str]) -> tuple[list[Factor], list[str]]:
    """Kronecker factors for exactly ``columns`` of a PRAM release, and the column order they
    imply (:func:`release_plan` without extra columns; the caller permutes to the requested
    order).

    Raises :class:`~privlab.errors.ParameterError` when some columns were randomized jointly
    with others through a matrix that does not reduce exactly to them: no matrix over those
    columns alone gives an unbiased estimate, so use :func:`release_plan` (estimate the
    whole block, then sum out) instead.
    """
    plan = release_plan(release, columns)
    if plan.extra:
        held = [c for span in plan.spans if set(span) & set(plan.extra) for c in span
                if c in plan.columns]  # fmt: skip
        raise ParameterError(
            f"{', '.join(map(repr, held))} {'was' if len(held) == 1 else 'were'} randomized "
            f"jointly with {', '.join(map(repr, plan.extra))} through a matrix that does not "
            f"reduce to {'it' if len(held) == 1 else 'them'}: estimate the whole block and sum "
            "the rest out (release_plan)"
        )
    return list(plan.factors), list(plan.order)
