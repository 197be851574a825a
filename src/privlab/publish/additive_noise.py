"""Additive noise ``X~ = X + R`` (Agrawal & Srikant 2000) seen as PRAM over intervals
(Ma 2006, Sec. 3.1.2).

Reconstruction from additive noise discretizes ``X~`` into ``M1`` intervals and uses the
``M1 x M1`` transition matrix ``P[i, j] = Pr(X + R in J_j | X in J_i)`` of the noise, where
``M2 < M1`` of the intervals cover the support of ``X`` and the others only the noise's
overhang.  Intervals at the margin of ``X~`` are reachable from extreme ``X`` intervals only,
so the matrix has zeros in their columns and gamma-amplification is infinite (the [EGS03]
breach: uniform noise on ``[-50, 50]`` and a released age of 120 reveal an age >= 70).
Discretizing first (MGAS) and applying an ``M2 x M2`` PRAM keeps gamma finite.

:func:`additive_noise_matrix` builds the matrix on a common grid of width ``w``: ``X``'s
support ``[lo, hi]`` cut into ``M2`` equal intervals, and ``c`` more on each side to hold the
noise (``c = ceil(a / w)`` for uniform noise on ``[-a, a]``; ``ceil(reach sigma / w)`` for
Gaussian noise, whose support is unbounded), the outermost two open-ended so that every row
sums to 1.  ``X`` is taken uniform within its interval (the reconstruction's assumption), so

    P[i, j] = (1/w) int_{J_i} [F(b_j - x) - F(a_j - x)] dx,

with ``F`` the noise's cdf and ``J_j = [a_j, b_j)``.  For uniform noise the integral is exact
through ``G(t) = int_{-inf}^t F``: ``(t + a)^2 / (4a)`` on ``[-a, a]`` (``0`` below, ``t``
above); for Gaussian noise it is a 48-point Gauss-Legendre rule over ``x`` of
``Phi((b_j - x)/sigma) - Phi((a_j - x)/sigma)``, each difference taken from ``log Phi`` so
that entries down to ``1e-300`` keep their relative accuracy (gamma is a ratio of them).
For uniform noise with ``a = c w`` the rows of the support are the trapezoid ``1/(4c),
1/(2c), ..., 1/(2c), 1/(4c)`` over the offsets ``-c..c``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_ndtr

from privlab._frames import ToFrames
from privlab._params import check_int
from privlab.errors import ParameterError

NOISES = ("uniform", "gaussian")


@dataclass(frozen=True)
class IntervalMatrix(ToFrames):
    """The ``M1 x M1`` interval transition matrix of ``X + R``.

    Attributes
    ----------
    matrix
        ``P[i, j] = Pr(X + R in interval j | X uniform in interval i)``; rows sum to 1.
    edges
        The ``M1 + 1`` interval edges (the first ``-inf``, the last ``+inf``).
    support
        The indices of the ``M2`` intervals that cover ``X``'s support (the rows ``X`` can
        take).
    noise, scale
        ``"uniform"`` (``R`` uniform on ``[-scale, scale]``) or ``"gaussian"`` (sd ``scale``).
    """

    matrix: np.ndarray
    edges: np.ndarray
    support: np.ndarray
    noise: str
    scale: float

    @property
    def m1(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def m2(self) -> int:
        return int(self.support.size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "matrix": self.matrix.tolist(),
            "edges": [float(e) for e in self.edges],
            "support": self.support.tolist(),
            "noise": self.noise,
            "scale": self.scale,
            "m1": self.m1,
            "m2": self.m2,
        }

    def to_pandas(self) -> Any:
        """The matrix as a DataFrame, rows and columns labelled by their intervals
        (``[a, b)``), with a boolean column ``support`` for the rows ``X`` can take."""
        import pandas as pd

        labels = [f"[{a:g}, {b:g})" for a, b in zip(self.edges[:-1], self.edges[1:])]
        df = pd.DataFrame(self.matrix, index=labels, columns=labels)
        df.insert(0, "support", np.isin(np.arange(self.m1), self.support))
        return df


def _uniform_g(a: float, t: np.ndarray) -> np.ndarray:
    """``G(t) = int_{-inf}^t F(u) du`` for ``R`` uniform on ``[-a, a]``."""
    return np.where(t < -a, 0.0, np.where(t > a, t, (t + a) ** 2 / (4 * a)))


def _normal_mass(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Phi(u) - Phi(v)`` for ``u >= v``, accurate in both tails (log-cdf differences)."""
    u, v = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(v, dtype=float))
    upper = v > 0  # both in the upper tail: Phi(-v) - Phi(-u)
    hi = np.where(upper, -v, u)
    lo = np.where(upper, -u, v)
    with np.errstate(divide="ignore", invalid="ignore"):
        lh, ll = log_ndtr(hi), log_ndtr(lo)
        out = np.exp(lh) * -np.expm1(ll - lh)
    return np.where(np.isfinite(out), out, 0.0)


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)


def additive_noise_matrix(
    lo: float,
    hi: float,
    m2: int,
    *,
    noise: str = "uniform",
    scale: float,
    reach: float = 4.0,
) -> IntervalMatrix:
    """The interval transition matrix of ``X + R`` for ``X`` on ``[lo, hi]`` (Ma Sec. 3.1.2).

    Parameters
    ----------
    lo, hi, m2
        ``X``'s support and the number of equal intervals it is cut into (``M2``).
    noise, scale
        ``"uniform"``: ``R`` uniform on ``[-scale, scale]``; ``"gaussian"``: ``R ~ N(0,
        scale^2)``.
    reach
        Gaussian noise only: the grid extends ``reach * scale`` beyond the support on each
        side (rounded up to whole intervals); the rest of the tails falls into the two
        open-ended outer intervals.
    """
    lo, hi, scale = float(lo), float(hi), float(scale)
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ParameterError(f"the support [{lo}, {hi}] is empty or not finite")
    m2 = check_int("m2", m2, low=1)
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {NOISES}, not {noise!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ParameterError(f"the noise scale must be positive, got {scale}")
    if not reach > 0:
        raise ParameterError(f"reach must be positive, got {reach}")
    m2 = int(m2)
    w = (hi - lo) / m2
    extent = scale if noise == "uniform" else reach * scale
    c = int(np.ceil(extent / w - 1e-9))
    m1 = m2 + 2 * c
    edges = lo + w * (np.arange(m1 + 1) - c)
    edges = edges.astype(float)
    edges[0], edges[-1] = -np.inf, np.inf
    x0 = edges[:-1].copy()
    x0[0] = lo - c * w  # the row intervals are all finite: [x0, x0 + w)
    x0 = x0[:, None]
    if noise == "uniform":
        # H[i, e] = (1/w) int_{J_i} F(edge_e - x) dx for the inner edges 1..m1-1; the
        # distances edge_e - x0_i are whole multiples of w, computed as such (a noise whose
        # half-width is a multiple of w then leaves exact zeros, not rounding residue)
        k = np.arange(m1)
        d = (k[None, 1:] - k[:, None]).astype(float)  # edge e = 1..m1-1 minus row i
        ratio = scale / w
        a = round(ratio) * w if abs(ratio - round(ratio)) < 1e-9 else scale  # a = c w exactly
        u, v = d * w, (d - 1) * w  # the edge minus the row interval's two ends
        h = np.where(v >= a, 1.0, np.where(u <= -a, 0.0, (_uniform_g(a, u) - _uniform_g(a, v)) / w))
        h = np.hstack([np.zeros((m1, 1)), h, np.ones((m1, 1))])  # F(-inf) = 0, F(inf) = 1
        p = np.clip(np.diff(h, axis=1), 0.0, None)
    else:
        # Gauss-Legendre over x in the row interval of Phi((b - x)/s) - Phi((a - x)/s): the
        # integrand is smooth, and its tails are computed from log Phi (no cancellation)
        x = x0[:, :, None] + w * (_NODES + 1) / 2  # (m1, 1, nodes)
        a_, b_ = edges[:-1][None, :, None], edges[1:][None, :, None]
        mass = _normal_mass((b_ - x) / scale, (a_ - x) / scale)  # (m1, m1, nodes)
        p = mass @ (_WEIGHTS / 2)
    p = p / p.sum(axis=1, keepdims=True)
    return IntervalMatrix(
        matrix=p,
        edges=edges,
        support=np.arange(c, c + m2),
        noise=noise,
        scale=scale,
    )
