"""The input checks shared by the microaggregation core and its sdcMicro-arithmetic kernel
(:mod:`privlab.publish.microaggregation_core`, :mod:`privlab.publish._mdav_sdcmicro`),
apart so that neither imports the other."""

from __future__ import annotations

from typing import Any

import numpy as np

from privlab._params import check_int
from privlab.errors import ParameterError


def _matrix(x: Any, what: str = "x") -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must be numbers, got {np.asarray(x).dtype}") from None
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ParameterError(f"{what} must be a 2-d array (records x columns), got {a.shape}")
    if a.shape[1] == 0:
        raise ParameterError(f"{what} has no columns")
    bad = ~np.isfinite(a)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ParameterError(
            f"{what} holds a non-finite value ({a[i, j]} at row {i}, column {j}): "
            "microaggregation needs finite numbers"
        )
    return a


def _k(k: Any, n: int) -> int:
    k = check_int("k", k, low=1)
    if k > n:
        raise ParameterError(f"k = {k} exceeds the number of records ({n})")
    return k
