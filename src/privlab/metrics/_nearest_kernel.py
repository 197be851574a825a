"""The numba kernel of the nearest-record distances (:mod:`privlab.metrics.synthetic` holds
the logic): for every query row, the ``k`` smallest capped distances to all reference rows,
exactly.

The distance between two rows is ``sum_j min(|x_j - y_j|, 1)`` over the numeric columns
(values already over the original's range) plus the number of categorical columns whose
codes differ: ``p D`` of :mod:`privlab.metrics.synthetic`.  Each pair's terms are added in
that order (numeric columns left to right, then categorical ones), whatever the tile, so a
distance is the same bits as a numpy loop over the columns gives (tests/
test_synthetic_privacy.py checks).  Each query row (``prange``: the rows are independent)
runs over the reference in tiles of :data:`TILE` rows: the tile's distances are summed
column by column (a loop over contiguous reference values that LLVM vectorizes; the
reference comes column-major), then those below the current ``k``-th smallest enter a
sorted buffer of ``k`` values (insertion; ``k`` is small).  A distance equal to the
``k``-th smallest is not inserted: the buffer's values would be the same.  No fastmath:
it could reorder the additions.

Compiled on first use and cached on disk (``cache=True``); imported lazily, so that
importing the metrics does not pay numba's import time.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: reference rows whose distances one query row holds at a time (16 KB of doubles, in L1)
TILE = 2048


@njit(cache=True, nogil=True, parallel=True)
def nearest_distances(q_num, q_cat, r_num_t, r_cat_t, k, tile):
    """``out[i]``: the ``k`` smallest distances from query row ``i`` to the reference rows,
    ascending, padded with ``inf`` when the reference has fewer than ``k`` rows.

    ``q_num`` (n, d) float64 and ``q_cat`` (n, c) int64: the query rows; ``r_num_t``
    (d, m) float64 and ``r_cat_t`` (c, m) int64: the reference, one column per row
    (C-contiguous, so each column's values are contiguous); ``tile``: the reference rows
    summed at a time (:data:`TILE`).
    """
    n = q_num.shape[0]
    d = q_num.shape[1]
    c = q_cat.shape[1]
    m = r_num_t.shape[1]
    out = np.full((n, k), np.inf)
    if k == 0 or m == 0 or tile < 1:
        return out
    for i in prange(n):
        best = np.full(k, np.inf)
        dist = np.empty(tile)
        for s in range(0, m, tile):
            e = min(s + tile, m)
            w = e - s
            for t in range(w):
                dist[t] = 0.0
            for j in range(d):
                x = q_num[i, j]
                col = r_num_t[j, s:e]
                for t in range(w):
                    a = abs(x - col[t])
                    dist[t] += a if a < 1.0 else 1.0  # min(a, 1); builtin min does not vectorize
            for j in range(c):
                x = q_cat[i, j]
                col = r_cat_t[j, s:e]
                for t in range(w):
                    dist[t] += 1.0 if col[t] != x else 0.0
            worst = best[k - 1]
            for t in range(w):
                v = dist[t]
                if v < worst:
                    p = k - 1
                    while p > 0 and best[p - 1] > v:
                        best[p] = best[p - 1]
                        p -= 1
                    best[p] = v
                    worst = best[k - 1]
        for p in range(k):
            out[i, p] = best[p]
    return out
