"""Transition matrices of randomized response over an attribute's domain (PRAM; Ma 2006).

``P[l, m] = Pr(X~ = m | X = l)``: rows are original values, columns released values; every
row sums to 1.  The sanitizer (:mod:`privlab.publish.randomization`), the analyst's
estimators (:mod:`privlab.estimate.pram`) and the privacy measures (:mod:`privlab.metrics.pram`)
all check a matrix here, once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privlab.errors import MatrixError

#: Rows must sum to 1 within this tolerance.
ATOL = 1e-9


def validate_matrix(
    matrix: Any, *, size: int | None = None, invertible: bool = False, name: str = "matrix"
) -> np.ndarray:
    """Check a transition matrix and return it as a float array.

    Raises :class:`MatrixError` when it is not a square 2-D array, has a negative or non-finite
    entry, a row not summing to 1 (within 1e-9), a size other than ``size`` (the attribute's
    domain), or, with ``invertible=True``, is singular (estimation needs ``P^-1``).
    """
    try:
        m = np.array(matrix, dtype=float)
    except (TypeError, ValueError):
        raise MatrixError(f"{name} is not a numeric matrix") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise MatrixError(f"{name} must be a non-empty square matrix, got shape {m.shape}")
    if size is not None and m.shape[0] != size:
        raise MatrixError(f"{name} is {m.shape[0]}x{m.shape[0]} but the domain has {size} values")
    if not np.all(np.isfinite(m)):
        raise MatrixError(f"{name} has a non-finite entry")
    if np.any(m < 0):
        i, j = np.argwhere(m < 0)[0]
        raise MatrixError(f"{name} is not stochastic: entry ({i}, {j}) = {m[i, j]} is negative")
    sums = m.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ATOL)
    if bad.size:
        raise MatrixError(
            f"{name} is not stochastic: row {int(bad[0])} sums to {sums[bad[0]]:.12g}, not 1"
        )
    if invertible:
        cond = np.linalg.cond(m)
        if not np.isfinite(cond) or cond > 1e12:
            raise MatrixError(
                f"{name} is singular (condition number {cond:.3g}); frequencies cannot be "
                "estimated through it (e.g. binary symmetric with p = 0.5)"
            )
    return m
