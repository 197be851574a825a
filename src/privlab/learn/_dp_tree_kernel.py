"""The numba kernels of the DP decision tree's fit (:mod:`privlab.learn.dp_tree` holds the
logic and the reasons).

A node's records are a segment ``[start, end)`` of every row of ``orders``: row 0 lists them
in any order, row ``1 + k`` sorted by the ``k``-th continuous feature (the fit sorts each
continuous feature once; a split partitions every row of ``orders`` stably, so each child's
segment stays sorted).  The kernels count the node's (value, class) tables in one pass per
feature, with no per-node sort and no work proportional to a feature's number of distinct
values in the whole data.  They compute counts and the public grid of split points only:
the quality scores, the exponential mechanism and every noise draw stay in numpy and
:mod:`privlab.dp`, as before.

Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def partition(orders, start, end, col, threshold, nominal, n_children, child, tmp):
    """Split the node ``[start, end)`` into ``n_children`` consecutive segments, in every row
    of ``orders``, stably: a record goes to child ``col[r]`` (a nominal code) when
    ``nominal``, else to child 0 when ``col[r] <= threshold`` and 1 otherwise.  ``child``
    and ``tmp`` are scratch arrays of one entry a record.  Returns the ``n_children + 1``
    segment bounds."""
    base = orders[0]
    counts = np.zeros(n_children, dtype=np.int64)
    for i in range(start, end):
        r = base[i]
        if nominal:
            c = np.int64(col[r])
        else:
            c = 0 if col[r] <= threshold else 1
        child[r] = c
        counts[c] += 1
    bounds = np.empty(n_children + 1, dtype=np.int64)
    bounds[0] = start
    for c in range(n_children):
        bounds[c + 1] = bounds[c] + counts[c]
    pos = np.empty(n_children, dtype=np.int64)
    for k in range(orders.shape[0]):
        row = orders[k]
        for c in range(n_children):
            pos[c] = bounds[c]
        for i in range(start, end):
            r = row[i]
            c = child[r]
            tmp[pos[c]] = r
            pos[c] += 1
        for i in range(start, end):
            row[i] = tmp[i]
    return bounds


@njit(cache=True, nogil=True)
def class_counts(base, start, end, y, n_classes):
    """The class counts of the node's records (``base`` = ``orders[0]``)."""
    out = np.zeros(n_classes, dtype=np.int64)
    for i in range(start, end):
        out[y[base[i]]] += 1
    return out


@njit(cache=True, nogil=True)
def nominal_tables(base, start, end, y, n_classes, codes, feats, offsets):
    """The (value, class) count tables of the nominal features ``feats`` (rows of
    ``codes``), stacked: feature ``feats[i]``'s table is rows ``offsets[i] ..
    offsets[i + 1] - 1``."""
    out = np.zeros((offsets[-1], n_classes), dtype=np.int64)
    for f in range(feats.size):
        codes_f = codes[feats[f]]
        o = offsets[f]
        for i in range(start, end):
            r = base[i]
            out[o + codes_f[r], y[r]] += 1
    return out


@njit(cache=True, nogil=True)
def continuous_ranges(
    orders, start, end, y, n_classes, ranks, uniq, uniq_start, feats, lo, hi, grid
):
    """The candidate split ranges of the continuous features ``feats`` (``orders[1 + k]``
    sorted by feature ``k``, whose distinct values are ``uniq[uniq_start[k] + ranks[k, r]]``)
    on the public grid of ``grid + 1`` points of each feature's interval ``[lo[i], hi[i]]``.

    As :func:`privlab.learn.dp_tree._ranges_from_table` and ``_grid_index`` compute them for
    one feature: with the node's distinct values ``v_1 < ... < v_m`` the edges are ``lo,
    v_1, ..., v_m, hi`` and range ``i`` (records ``<= v_i`` left, the rest right) holds the
    grid points ``idx[i] .. idx[i + 1] - 1``, ``idx`` the running maximum of ``ceil((edge -
    lo) / (hi - lo) grid)`` clipped to ``[0, grid]`` (the last ``grid + 1``).  Ranges with no
    grid point are dropped.

    Returns ``(which, a, b, left)`` per kept range: the position in ``feats``, the grid
    points ``a .. b - 1`` and the class counts of the left side (float64).
    """
    n = end - start
    cap = feats.size * (n + 1)
    which = np.empty(cap, dtype=np.int64)
    ga = np.empty(cap, dtype=np.int64)
    gb = np.empty(cap, dtype=np.int64)
    left = np.empty((cap, n_classes), dtype=np.float64)
    cum = np.zeros(n_classes, dtype=np.float64)
    m = 0
    for f in range(feats.size):
        k = feats[f]
        row = orders[1 + k]
        rk = ranks[k]
        u0 = uniq_start[k]
        a, b = lo[f], hi[f]
        width = b - a
        for c in range(n_classes):
            cum[c] = 0.0
        prev = 0  # idx of the current range's first edge (lo: ceil(0) = 0)
        i = start
        while True:
            # the range that starts at the current edge ends at the next distinct value, or
            # at hi after the last one
            if i < end:
                r = row[i]
                v = uniq[u0 + rk[r]]
                pos = math.ceil((v - a) / width * grid)
                nxt = min(max(pos, 0.0), float(grid))
                nxt_i = max(np.int64(nxt), prev)
            else:
                nxt_i = grid + 1
            if nxt_i > prev:
                which[m] = f
                ga[m] = prev
                gb[m] = nxt_i
                for c in range(n_classes):
                    left[m, c] = cum[c]
                m += 1
            prev = nxt_i
            if i >= end:
                break
            # every record of this value goes left of the next range
            rv = rk[row[i]]
            while i < end and rk[row[i]] == rv:
                cum[y[row[i]]] += 1.0
                i += 1
    return which[:m], ga[:m], gb[:m], left[:m]
