"""The numba kernels of local suppression's heuristic (:mod:`privlab.publish.local_suppression`
holds the logic and the definitions).

Rows are the table's distinct *safe* rows (a key of at least ``k`` records: never suppressed,
weight = their count) followed by the records *at risk* (weight 1, one row each).  A row's
suppressed cells are a bit mask ``pat`` over the columns.  Row ``u`` (pattern ``P``) is
compatible with row ``v`` when every column outside ``P | pat[v]`` holds the same code in
both: the column mask ``diff(u, v) & ~(P | pat[v])`` -- its *mismatch* -- is empty.  ``u``
with ``S`` suppressed on top becomes compatible with ``v`` exactly when the mismatch is a
subset of ``S``, so one pass over the rows (a histogram of the mismatches) and a subset-sum
transform give ``u``'s frequency for every ``S`` at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _mismatches(rows, pat, u, base, out):
    """``out[v]`` = the mismatch of row ``u`` (with pattern ``base``) and row ``v``."""
    n, d = rows.shape
    for v in range(n):
        m = 0
        for c in range(d):
            if rows[u, c] != rows[v, c]:
                m |= 1 << c
        out[v] = m & ~(base | pat[v])


@njit(cache=True, nogil=True)
def _zeta(h, d):
    """Subset sums in place: ``h[S] = sum of h[M] over M subset of S``."""
    size = 1 << d
    for c in range(d):
        bit = 1 << c
        for s in range(size):
            if s & bit:
                h[s] += h[s ^ bit]


@njit(cache=True, nogil=True)
def greedy(rows, w, pat, fk, n_safe, k, order, subset_cost, subset_pref, budget):
    """Suppress cells of the records at risk, highest risk first, until each has ``fk >= k``.

    ``order``: the rows at risk in processing order.  For each row ``u`` still below ``k``:
    every ``S`` outside ``u``'s pattern whose frequency reaches ``k`` is feasible; the
    cheapest one (``subset_cost``) is taken, ties broken by the most records *still below
    k* it makes ``u`` compatible with (they gain a record too), then by the largest
    frequency, then by ``subset_pref`` (the less important columns first).  ``pat`` and
    ``fk`` (the rows at risk's frequencies; the safe rows' are never read) are updated in
    place.  Gives up (returns -1) as soon as the cost spent exceeds ``budget``; else returns
    the cost spent.
    """
    n, d = rows.shape
    size = 1 << d
    mism = np.empty(n, np.int64)
    h = np.empty(size, np.int64)
    g = np.empty(size, np.int64)
    spent = 0
    for i in range(order.shape[0]):
        u = order[i]
        if fk[u] >= k:
            continue
        base = pat[u]
        _mismatches(rows, pat, u, base, mism)
        h[:] = 0
        g[:] = 0
        for v in range(n):
            h[mism[v]] += w[v]
            if v >= n_safe and v != u and fk[v] < k:
                g[mism[v]] += w[v]
        _zeta(h, d)
        _zeta(g, d)
        best = -1
        for s in range(size):
            if s & base or h[s] < k:
                continue
            if best < 0:
                best = s
                continue
            cs, cb = subset_cost[s], subset_cost[best]
            if cs < cb or (
                cs == cb
                and (
                    g[s] > g[best]
                    or (
                        g[s] == g[best]
                        and (
                            h[s] > h[best]
                            or (h[s] == h[best] and subset_pref[s] < subset_pref[best])
                        )
                    )
                )
            ):
                best = s
        for v in range(n_safe, n):
            if v != u:
                before = mism[v] == 0
                after = (mism[v] & ~best) == 0
                if after and not before:
                    fk[v] += w[u]
        pat[u] = base | best
        fk[u] = h[best]
        spent += subset_cost[best]
        if spent > budget:
            return -1
    return spent


@njit(cache=True, nogil=True)
def prune(rows, w, pat, fk, n_safe, k, cells_r, cells_c):
    """Give cells back: for each suppressed cell ``(cells_r[i], cells_c[i])`` in turn,
    restore it when its record and every record that would lose it as a match all keep
    ``fk >= k`` (a safe row keeps its own ``>= k`` copies).  Returns the cells restored."""
    n = rows.shape[0]
    mism = np.empty(n, np.int64)
    restored = 0
    for i in range(cells_r.shape[0]):
        u = cells_r[i]
        bit = 1 << cells_c[i]
        if not pat[u] & bit:
            continue
        base = pat[u] & ~bit
        _mismatches(rows, pat, u, base, mism)
        new_fk = 0
        for v in range(n):
            if mism[v] == 0:
                new_fk += w[v]
        if new_fk < k:
            continue
        ok = True
        for v in range(n_safe, n):
            if v != u and mism[v] == bit and fk[v] - w[u] < k:
                ok = False
                break
        if not ok:
            continue
        for v in range(n_safe, n):
            if v != u and mism[v] == bit:
                fk[v] -= w[u]
        pat[u] = base
        fk[u] = new_fk
        restored += 1
    return restored


@njit(cache=True, nogil=True)
def ratio_greedy(rows, w, pat, fk, n_safe, k, subset_cost, subset_pref):
    """Set-cover greedy over moves ``(u, S)`` (suppress ``S`` in the record at risk ``u``):
    each step takes the move with the largest drop of the total deficit
    ``sum max(0, k - fk)`` per unit of cost -- every record still below ``k`` that ``u``
    comes to match gains one, and ``u`` gains its new matches up to its own deficit -- ties
    to the cheaper move, then to the less important columns.  A fully suppressed record
    matches every record: such "hub" moves are found as any other.  Every step visits every
    record at risk (``O(n_risk * n * d)``): small tables only.  Returns the cost spent."""
    n, d = rows.shape
    size = 1 << d
    mism = np.empty(n, np.int64)
    h = np.empty(size, np.int64)
    g = np.empty(size, np.int64)
    spent = 0
    while True:
        deficit = 0
        for v in range(n_safe, n):
            if fk[v] < k:
                deficit += k - fk[v]
        if deficit == 0:
            return spent
        best_u, best_s, best_gain = -1, 0, 0
        for u in range(n_safe, n):
            base = pat[u]
            _mismatches(rows, pat, u, base, mism)
            h[:] = 0
            g[:] = 0
            for v in range(n):
                h[mism[v]] += w[v]
                if v >= n_safe and v != u and fk[v] < k:
                    g[mism[v]] += 1
            _zeta(h, d)
            _zeta(g, d)
            own = k - fk[u] if fk[u] < k else 0
            for s in range(1, size):
                if s & base:
                    continue
                gain = g[s] - g[0] + min(own, h[s] - h[0])
                if gain <= 0:
                    continue
                if best_u < 0:
                    better = True
                else:
                    lhs = gain * subset_cost[best_s]
                    rhs = best_gain * subset_cost[s]
                    better = lhs > rhs or (
                        lhs == rhs
                        and (
                            subset_cost[s] < subset_cost[best_s]
                            or (
                                subset_cost[s] == subset_cost[best_s]
                                and subset_pref[s] < subset_pref[best_s]
                            )
                        )
                    )
                if better:
                    best_u, best_s, best_gain = u, s, gain
        u = best_u
        base = pat[u]
        _mismatches(rows, pat, u, base, mism)
        new_fk = 0
        for v in range(n):
            if (mism[v] & ~best_s) == 0:
                new_fk += w[v]
                if v >= n_safe and v != u and mism[v] != 0:
                    fk[v] += w[u]
        pat[u] = base | best_s
        fk[u] = new_fk
        spent += subset_cost[best_s]


@njit(cache=True, nogil=True)
def set_pattern(rows, w, pat, fk, n_safe, u, new):
    """Give row ``u`` the pattern ``new``, updating the frequencies of the movable rows."""
    n, d = rows.shape
    old = pat[u]
    total = 0
    for v in range(n):
        m = 0
        for c in range(d):
            if rows[u, c] != rows[v, c]:
                m |= 1 << c
        pv = pat[v] if v != u else new
        after = (m & ~(new | pv)) == 0
        if after:
            total += w[v]
        if v >= n_safe and v != u:
            before = (m & ~(old | pat[v])) == 0
            if after and not before:
                fk[v] += w[u]
            elif before and not after:
                fk[v] -= w[u]
    pat[u] = new
    fk[u] = total
