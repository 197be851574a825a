"""Numba kernels of the exact Laplace-prior posterior mean (Mothali 2011, Eqs. 7.4-7.9).

Imported lazily by :func:`privlab.dp.estimators.laplace_posterior_mean` so that the other
estimators (and the CLI) do not pay numba's import time.  Everything is in units of the noise
scale (``lambda = 1``).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, fastmath=True)
def _jk(t: float, r: float) -> tuple[float, float, float]:
    """``J_k(t) = int_0^1 w^k e^{-t w} dw`` for k = 0, 1, 2 (``t >= 0``, ``r = e^{-t}``)."""
    if t < 0.05:
        # power series sum_n (-t)^n / (n! (n + k + 1)); 9 terms: error < 0.05^9/9! ~ 5e-18
        j0 = 0.0
        j1 = 0.0
        j2 = 0.0
        term = 1.0
        for n in range(9):
            j0 += term / (n + 1)
            j1 += term / (n + 2)
            j2 += term / (n + 3)
            term *= -t / (n + 1)
        return j0, j1, j2
    # integration by parts: J_k = (k J_{k-1} - e^{-t}) / t
    j0 = (1.0 - r) / t
    j1 = (j0 - r) / t
    j2 = (2.0 * j1 - r) / t
    return j0, j1, j2


@numba.njit(cache=True, fastmath=True)
def _moments(x: float, a: float) -> tuple[float, float, float, float]:
    """Posterior of theta under ``x ~ Lap(theta, 1)`` and ``theta ~ Lap(0, 1/a)``, for x >= 0.

    Returns ``(log Z, E[theta], E|theta|, E[theta^2])`` where
    ``Z = int exp(-|x - theta| - a |theta|) dtheta`` (units of the noise scale, lambda = 1).
    The three pieces theta < 0, 0 <= theta <= x, theta > x are integrated in closed form
    (Mothali 2011 Eqs. 7.4-7.7), each divided by ``e^{-min(a, 1) x}`` so that nothing
    overflows and ``a = 1`` (0/0 in Eq. 7.8) is regular.
    """
    s = 1.0 + a
    d = 1.0 - a
    m = min(a, 1.0)
    t = abs(d) * x
    r = math.exp(-t)
    j0, j1, j2 = _jk(t, r)
    if d >= 0.0:  # alpha <= lambda: factor e^{-alpha x}
        ea, ec = r, 1.0
        b0 = x * j0
        b1 = x * x * (j0 - j1)
        b2 = x * x * x * (j0 - 2.0 * j1 + j2)
    else:  # alpha > lambda: factor e^{-lambda x}
        ea, ec = 1.0, r
        b0 = x * j0
        b1 = x * x * j1
        b2 = x * x * x * j2
    a0 = ea / s
    a1 = ea / (s * s)
    a2 = 2.0 * ea / (s * s * s)
    c0 = ec / s
    c1 = ec * (x / s + 1.0 / (s * s))
    c2 = ec * (x * x / s + 2.0 * x / (s * s) + 2.0 / (s * s * s))
    z = a0 + b0 + c0
    return -m * x + math.log(z), (b1 + c1 - a1) / z, (a1 + b1 + c1) / z, (a2 + b2 + c2) / z


@numba.njit(cache=True, fastmath=True)
def _loglik_derivs(x: np.ndarray, a: float) -> tuple[float, float, float]:
    """Eq. 7.9 in noise units and its first two derivatives in ``u = log alpha``.

    ``l(alpha) = sum_i log p(x_i | alpha)`` with ``p(x) = (alpha/4) Z``;
    ``dl/dalpha = p/alpha - sum E|theta_i|``, ``d2l/dalpha2 = -p/alpha^2 + sum Var|theta_i|``.
    """
    p = x.size
    f = p * math.log(a / 4.0)
    g = p / a
    h = -p / (a * a)
    for i in range(p):
        lz, _, e1, e2 = _moments(x[i], a)
        f += lz
        g -= e1
        h += e2 - e1 * e1
    return f, a * g, a * g + a * a * h


@numba.njit(cache=True)
def _loglik(x: np.ndarray, a: float) -> float:
    """Eq. 7.9 in noise units (for tests)."""
    return _loglik_derivs(x, a)[0]


@numba.njit(cache=True, fastmath=True)
def _fit_alpha(x: np.ndarray, lo: float, hi: float, start: float) -> float:
    """Maximize Eq. 7.9 over ``alpha`` in ``[lo, hi]`` (noise units; ``x >= 0``).

    Newton's method on ``u = log alpha`` with exact derivatives, started at the thesis's
    best of the thesis's approximation ``alpha = p / |x|`` (Eq. 7.11), ``start`` (the previous
    row's solution, as rows of one batch are usually draws from one distribution) and a
    coarse grid; a step that lowers the likelihood is halved, so the likelihood never
    decreases.
    """
    p = x.size
    tot = 0.0
    for i in range(p):
        tot += x[i]
    # Eq. 7.9 can have two modes (a diffuse prior and one concentrated at 0): start Newton
    # from the best of the thesis's alpha, the warm start and a coarse grid
    a = min(max(p / tot if tot > 0 else hi, lo), hi)
    f, gu, hu = _loglik_derivs(x, a)
    for k in range(5):
        c = start if k == 0 else 10.0 ** (2 * k - 6)  # 1e-4, 1e-2, 1, 1e2 noise units
        if c <= 0 or c < lo or c > hi:
            continue
        fc, gc, hc = _loglik_derivs(x, c)
        if fc > f:
            a, f, gu, hu = c, fc, gc, hc
    ulo, uhi = math.log(lo), math.log(hi)
    u = math.log(a)
    step = 0.0
    for _ in range(100):
        if step == 0.0:
            step = -gu / hu if hu < 0 else (1.0 if gu > 0 else -1.0)
            step = min(max(step, -3.0), 3.0)
        un = min(max(u + step, ulo), uhi)
        if un == u:
            break
        an = math.exp(un)
        fn, gn, hn = _loglik_derivs(x, an)
        if fn < f:
            step *= 0.5
            if abs(step) < 1e-9:
                break
            continue
        delta = abs(un - u)
        u, a, f, gu, hu = un, an, fn, gn, hn
        step = 0.0
        if delta < 1e-6 or (delta < 1e-3 and abs(gu) < 1e-6 * p):
            break
    return a


@numba.njit(cache=True, fastmath=True)
def posterior_rows(x: np.ndarray, out: np.ndarray, alphas: np.ndarray) -> None:
    lo, hi = 1e-9, 1e6
    ax = np.empty(x.shape[1])
    a = 0.0
    for row in range(x.shape[0]):
        for i in range(ax.size):
            ax[i] = abs(x[row, i])
        a = _fit_alpha(ax, lo, hi, a)
        alphas[row] = a
        for i in range(ax.size):
            mean = _moments(ax[i], a)[1]
            out[row, i] = mean if x[row, i] >= 0 else -mean
