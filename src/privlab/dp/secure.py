"""Noise from the operating system's CSPRNG, used when a mechanism gets ``rng=None``.

numpy's generators are fast but not cryptographically secure: an attacker who sees enough
outputs of a seeded PCG64 stream could predict the rest.  Unseeded DP noise therefore comes
from ``os.urandom`` (53 random bits per uniform).  A seeded ``rng`` (int or Generator) uses
numpy instead, for reproducible experiments; never publish seeded noise.
"""

from __future__ import annotations

import os

import numpy as np

_SCALE = 1.0 / (1 << 53)


def uniform(size: int | tuple[int, ...] = ()) -> np.ndarray | float:
    """Uniform draws on the open interval (0, 1) from ``os.urandom``."""
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    n = int(np.prod(shape)) if shape else 1
    bits = np.frombuffer(os.urandom(8 * n), dtype=np.uint64) >> np.uint64(11)
    u = (bits.astype(np.float64) + 0.5) * _SCALE
    return u.reshape(shape) if shape else float(u[0])
