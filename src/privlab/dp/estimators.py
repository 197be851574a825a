"""Post-processing estimators for a noisy query vector with known Laplace scale ``b``.

Seed 000 (Ch. 6-8) treats a Laplace-noised histogram ``x = theta + Lap(b)^p`` as an estimation
problem: recover the mean ``theta`` of a multivariate Laplace from one draw.  Every estimator
here is *post-processing* (it reads only the noisy vector, ``b`` and public structure), so it
costs no privacy budget.  All of them work on the last axis, so a ``(draws, p)`` array is
estimated draw by draw in one vectorized call.

========================  ====================================================================
name                      estimator
========================  ====================================================================
``ml``                    maximum likelihood: the identity (Sec. 6.2)
``js``                    James-Stein, Eq. 6.4: ``(1 - (p-2) s2 / ||x||^2) x`` with the
                          per-component noise variance ``s2 = 2 b^2`` (the variance of Lap(b);
                          the thesis leaves sigma^2 unspecified for Laplace noise); ``p <= 2``
                          gives the identity (James & Stein need ``p >= 3``)
``eb``                    the thesis's empirical Bayes (Eq. 7.13): ``x - 2 p b^2 / |x|``, with
                          ``|x|`` the L1 norm ``sum_i |x_i|`` (Eq. 7.11: ``alpha = p/|x|``),
                          negative components moved up (the posterior mean is odd in x)
``posterior``             the exact posterior mean under the Laplace prior (Eq. 7.8), with
                          ``alpha`` the maximizer of the marginal likelihood Eq. 7.9
``consistent``            least-squares projection onto the public structure: the histograms
                          of one block (a class) count the same records, so they share one
                          total; with ``clip`` the estimate is also projected onto the
                          non-negative histograms with that total
========================  ====================================================================

Non-negativity (``clip=True``) follows Table 8.1: for ``ml``, ``eb`` and ``js`` the noisy answer
is clipped at 0 before estimation (step 3 of *LaplaceMechanism*) and the estimate after it
(step 7).  ``posterior`` and ``consistent`` assume the raw noise model, so they read the
unclipped vector and only their output is made non-negative.

A zero noise scale (``b = 0``, i.e. ``epsilon = inf``) returns the input unchanged (clipped if
asked): with no noise there is nothing to remove.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privlab.errors import ParameterError

__all__ = [
    "ESTIMATORS",
    "HistogramLayout",
    "consistent",
    "empirical_bayes",
    "get_estimator",
    "james_stein",
    "laplace_posterior_mean",
    "mle",
]


@dataclass(frozen=True)
class HistogramLayout:
    """The public structure of a concatenated histogram query vector.

    The vector is ``n_blocks`` blocks laid end to end; each block is the histograms of sizes
    ``hist_sizes`` laid end to end, and all histograms of one block count the *same* records
    (so they share one total).  Seed 000 Sec. 8.2: one block per class, one histogram per
    feature, ``p = n_classes * sum(hist_sizes)``.
    """

    hist_sizes: tuple[int, ...]
    n_blocks: int = 1

    def __post_init__(self) -> None:
        sizes = tuple(int(k) for k in self.hist_sizes)
        if not sizes or min(sizes) < 1:
            raise ParameterError(f"histogram sizes must be positive, got {self.hist_sizes!r}")
        if int(self.n_blocks) < 1:
            raise ParameterError(f"n_blocks must be positive, got {self.n_blocks!r}")
        object.__setattr__(self, "hist_sizes", sizes)
        object.__setattr__(self, "n_blocks", int(self.n_blocks))

    @property
    def block_size(self) -> int:
        return sum(self.hist_sizes)

    @property
    def size(self) -> int:
        """Length ``p`` of the whole query vector."""
        return self.n_blocks * self.block_size

    @property
    def offsets(self) -> np.ndarray:
        """Start of each histogram inside a block."""
        return np.concatenate([[0], np.cumsum(self.hist_sizes)[:-1]]).astype(np.int64)


# --- helpers ---------------------------------------------------------------------------------
def _prepare(x: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        x = x.reshape(1)
    b = float(scale)
    if math.isnan(b) or b < 0 or math.isinf(b):
        raise ParameterError(f"the noise scale b must be finite and >= 0, got {scale!r}")
    if not np.all(np.isfinite(x)):
        raise ParameterError("the noisy vector holds NaN or infinite values")
    return x, b


def _clip(y: np.ndarray, clip: bool) -> np.ndarray:
    return np.maximum(y, 0.0) if clip else y


# --- the thesis's estimators ----------------------------------------------------------------
def mle(x: np.ndarray, scale: float, *, clip: bool = False, layout=None) -> np.ndarray:
    """Maximum likelihood: the noisy vector itself (clipped at 0 with ``clip``)."""
    x, _ = _prepare(x, scale)
    return _clip(x.copy(), clip)


def james_stein(x: np.ndarray, scale: float, *, clip: bool = False, layout=None) -> np.ndarray:
    """James-Stein shrinkage toward 0 (Mothali 2011 Eq. 6.4), noise variance ``2 b^2``.

    ``theta = (1 - (p - 2) * 2 b^2 / ||x||^2) x`` on the last axis; ``p <= 2`` or ``x = 0``
    give ``x``.  With ``clip`` the input is clipped first and the estimate after (Table 8.1).
    """
    x, b = _prepare(x, scale)
    x = _clip(x, clip)
    p = x.shape[-1]
    if b == 0.0 or p <= 2:
        return x.copy()
    sq = np.sum(x * x, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(sq > 0, 1.0 - (p - 2) * 2.0 * b * b / sq, 1.0)
    return _clip(factor * x, clip)


def empirical_bayes(x: np.ndarray, scale: float, *, clip: bool = False, layout=None) -> np.ndarray:
    """The thesis's empirical-Bayes estimator (Mothali 2011 Eq. 7.13): ``x - 2 p b^2 / |x|``.

    ``|x| = sum_i |x_i|`` over the last axis (the maximum-likelihood ``alpha = p / |x|`` of
    Eq. 7.11 is the Laplace-prior rate estimated from ``x``); ``x = 0`` gives ``x``.  Derived
    for a diffuse prior (``alpha << 1/b``): every component moves toward 0 by the same amount
    ``s = 2 p b^2 / |x|``.

    Eqs. 7.5-7.12 integrate for ``x_i >= 0``; the posterior mean is odd in ``x_i``, so a
    negative component moves *up*: privlab computes ``x_i - sign(x_i) s``.  This is Eq. 7.13
    exactly on non-negative input (all noisy counts after Table 8.1's clipping), and it is
    the reading under which Fig. 7.1 holds (the literal ``x - s`` has a larger risk than ML
    on Sec. 7.2's data; see the ``estimators-risk`` experiment).  With ``clip`` the input is
    clipped first and the estimate after (Table 8.1).
    """
    x, b = _prepare(x, scale)
    x = _clip(x, clip)
    if b == 0.0:
        return x.copy()
    p = x.shape[-1]
    l1 = np.sum(np.abs(x), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(l1 > 0, 2.0 * p * b * b / l1, 0.0)
    return _clip(x - np.sign(x) * shift, clip)


# --- exact posterior mean under the Laplace prior -------------------------------------------
def laplace_posterior_mean(
    x: np.ndarray,
    scale: float,
    *,
    clip: bool = False,
    layout=None,
    return_alpha: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Exact posterior mean under a Laplace prior (Mothali 2011 Eq. 7.8), alpha by Eq. 7.9.

    Model (Sec. 7.1): ``x_i ~ Lap(theta_i, b)`` and ``theta_i ~ Lap(0, 1/alpha)`` i.i.d.  The
    rate ``alpha`` maximizes the marginal log-likelihood Eq. 7.9 of the observed vector
    (Newton on ``log alpha``, searched in ``[1e-9, 1e6] / b``), and each component gets
    ``E[theta_i | x_i]``.

    Eqs. 7.4-7.8 are written for ``x_i >= 0`` and ``alpha < lambda = 1/b``; privlab
    evaluates the same integrals for any sign (the posterior mean is odd in ``x_i``, so
    ``E[theta_i | x_i] = sign(x_i) E[theta_i | |x_i|]``) and any ``alpha`` (the marginal
    of Eq. 7.4 is symmetric in alpha and lambda), in a form that is stable at
    ``alpha = lambda`` where Eq. 7.8 is 0/0.  With ``return_alpha`` the fitted rates
    (in units of 1/x) are returned too.
    """
    x, b = _prepare(x, scale)
    if b == 0.0:
        y = _clip(x.copy(), clip)
        return (y, np.full(x.shape[:-1], np.inf)) if return_alpha else y
    from privlab.dp._posterior import posterior_rows

    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]) / b)
    out = np.empty_like(flat)
    alphas = np.empty(flat.shape[0])
    posterior_rows(flat, out, alphas)
    y = _clip(out.reshape(x.shape) * b, clip)
    if return_alpha:
        return y, (alphas / b).reshape(x.shape[:-1])
    return y


# --- consistency with public structure ------------------------------------------------------
def _simplex_projection(v: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto ``{y >= 0, sum y = total}``."""
    k = v.shape[-1]
    u = -np.sort(-v, axis=-1)
    css = np.cumsum(u, axis=-1) - total[..., None]
    ind = np.arange(1, k + 1)
    cond = u - css / ind > 0
    rho = k - 1 - np.argmax(cond[..., ::-1], axis=-1)  # last index where cond holds
    tau = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1.0)
    y = np.maximum(v - tau, 0.0)
    return np.where(total[..., None] > 0, y, 0.0)


def consistent(
    x: np.ndarray, scale: float, *, clip: bool = False, layout: HistogramLayout | None = None
) -> np.ndarray:
    """Project the noisy vector onto the public structure of ``layout``.

    Within one block every histogram counts the same records, so all share one total ``T``.
    The least-squares estimate under i.i.d. noise moves histogram ``j`` (sum ``S_j``, ``K_j``
    cells) by ``(T - S_j) / K_j`` per cell, with ``T`` the inverse-variance weighted mean
    ``sum_j (S_j / K_j) / sum_j (1 / K_j)`` (``Var S_j = 2 b^2 K_j``).  With ``clip`` the
    total is made non-negative and each histogram is projected onto the non-negative
    histograms with total ``T`` (sorting-based simplex projection), so the estimate is both
    consistent and non-negative.  Without a layout the vector is one histogram whose total
    is unknown: the projection is the identity (then only ``clip`` acts).
    """
    x, b = _prepare(x, scale)
    layout = layout or HistogramLayout((x.shape[-1],), 1)
    if layout.size != x.shape[-1]:
        raise ParameterError(
            f"the layout describes {layout.size} counts but the vector has {x.shape[-1]}"
        )
    if b == 0.0:
        return _clip(x.copy(), clip)
    lead = x.shape[:-1]
    blocks = x.reshape(*lead, layout.n_blocks, layout.block_size)
    out = np.empty_like(blocks)
    sizes = np.asarray(layout.hist_sizes, dtype=float)
    segs = [slice(o, o + k) for o, k in zip(layout.offsets, layout.hist_sizes)]
    sums = np.stack([blocks[..., s].sum(axis=-1) for s in segs], axis=-1)
    total = (sums / sizes).sum(axis=-1) / (1.0 / sizes).sum()
    if clip:
        total = np.maximum(total, 0.0)
    for j, s in enumerate(segs):
        h = blocks[..., s] + ((total - sums[..., j]) / sizes[j])[..., None]
        out[..., s] = _simplex_projection(h, total) if clip else h
    return out.reshape(x.shape)


# --- registry --------------------------------------------------------------------------------
Estimator = Callable[..., np.ndarray]

#: The estimators by name (``ml`` is the thesis's "MLE", ``eb`` its "EBE", ``js`` its "JSE").
ESTIMATORS: dict[str, Estimator] = {
    "ml": mle,
    "eb": empirical_bayes,
    "js": james_stein,
    "posterior": laplace_posterior_mean,
    "consistent": consistent,
}
_ALIASES = {
    "mle": "ml",
    "empirical_bayes": "eb",
    "empirical-bayes": "eb",
    "james_stein": "js",
    "james-stein": "js",
    "laplace_posterior_mean": "posterior",
    "consistency": "consistent",
}


def canonical_name(name: str) -> str:
    """The registry name of ``name`` (aliases accepted); unknown names raise."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in ESTIMATORS:
        raise ParameterError(f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}")
    return key


def get_estimator(name: str) -> Estimator:
    """The estimator function registered under ``name``."""
    return ESTIMATORS[canonical_name(name)]
