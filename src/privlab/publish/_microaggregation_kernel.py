"""The numba kernels of microaggregation (:mod:`privlab.publish.microaggregation_core` holds
the definitions, the checks and the references).

* :func:`mdav_groups`: MDAV over a k-d tree whose leaves drop the records already grouped,
  so that "the record farthest from x_r" and "the k records closest to a point" cost a
  walk of the tree's live boxes instead of a pass over every remaining record.  The queries
  are exact: a box is skipped only when a bound proves that none of its records can win,
  and the bounds are computed with the same floating-point operations, in the same order,
  as the distances themselves, so no rounding can make a skipped record the winner.  The
  record farthest from the *average* is the tree's worst case (the remaining records form
  a dense shell around it, whose boxes all reach past the answer): it is found instead in
  the remaining records sorted by distance from an earlier average (the anchor), scanned
  from the top until the triangle inequality, with a 1e-9 relative margin for rounding,
  rules out the rest; the anchor is moved (one sort) once the scans since the last sort
  have cost as much as a pass.  Ties are broken as sdcMicro's ``Mdav.cpp`` breaks them
  (see the core module).
* :func:`mdav_hamming_groups`: the same procedure on categorical codes, with the Hamming
  distance and a per-column mode as the "average record": plain passes (the distance takes
  ``p + 1`` values, so a k-d tree cannot prune).
* :func:`optimal_univariate_groups`: Hansen & Mukherjee's shortest path, as a dynamic
  programme over the sorted values, O(n k).
* :func:`medoid_rows`: each group's medoid under the Hamming distance.
* :func:`refine_round`: one round of the local search after MDAV (moves, swaps and cycles
  of records between neighbouring groups, groups dissolved, merged and cut), with exact
  SSE deltas; :func:`nearest_groups`, the groups each record tries; :func:`tree_order`, a
  k-d tree's order of the rows, which keeps near groups near in memory.

Compiled on first use and cached on disk (``cache=True``); imported lazily.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Records per leaf of the k-d tree (a leaf holds LEAF // 2 + 1 .. LEAF records).
LEAF = 16
_STACK = 256  # depth of the tree's explicit stack: 2 * log2(n / 8) + 2 < 256 for any n


@njit(cache=True, nogil=True, inline="always")
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True, nogil=True, inline="always")
def _dd_add(hi, lo, j, v):
    """``(hi[j], lo[j]) += v`` as a double-double (Knuth's TwoSum, then renormalized)."""
    s, e = _two_sum(hi[j], v)
    e += lo[j]
    t = s + e
    lo[j] = e - (t - s)
    hi[j] = t


@njit(cache=True, nogil=True)
def _select(perm, x, lo, hi, nth, dim):
    """Reorder ``perm[lo:hi]`` so that ``perm[nth]`` holds the record whose ``x[:, dim]``
    is the ``nth`` smallest, smaller ones before it and larger ones after (a three-way
    quickselect, median-of-three pivots)."""
    while hi - lo > 1:
        mid = (lo + hi - 1) // 2
        a = x[perm[lo], dim]
        b = x[perm[mid], dim]
        c = x[perm[hi - 1], dim]
        if a > b:
            a, b = b, a
        if b > c:
            b, c = c, b
        if a > b:
            a, b = b, a
        pivot = b
        lt, i, gt = lo, lo, hi
        while i < gt:
            v = x[perm[i], dim]
            if v < pivot:
                perm[lt], perm[i] = perm[i], perm[lt]
                lt += 1
                i += 1
            elif v > pivot:
                gt -= 1
                perm[gt], perm[i] = perm[i], perm[gt]
            else:
                i += 1
        if nth < lt:
            hi = lt
        elif nth >= gt:
            lo = gt
        else:
            return


@njit(cache=True, nogil=True)
def _refit(node, xt, alive, nlo, nhi, left, right, bmin, bmax, cnt):
    """Recompute ``node``'s live count and bounding box (from its records for a leaf, else
    from its children)."""
    p = xt.shape[1]
    c = 0
    for d in range(p):
        bmin[node, d] = np.inf
        bmax[node, d] = -np.inf
    if left[node] < 0:
        for i in range(nlo[node], nhi[node]):
            if alive[i]:
                c += 1
                for d in range(p):
                    v = xt[i, d]
                    if v < bmin[node, d]:
                        bmin[node, d] = v
                    if v > bmax[node, d]:
                        bmax[node, d] = v
    else:
        for child in (left[node], right[node]):
            if cnt[child] > 0:
                c += cnt[child]
                for d in range(p):
                    if bmin[child, d] < bmin[node, d]:
                        bmin[node, d] = bmin[child, d]
                    if bmax[child, d] > bmax[node, d]:
                        bmax[node, d] = bmax[child, d]
    cnt[node] = c


@njit(cache=True, nogil=True)
def _build(x):
    """A k-d tree over the rows of ``x``: median splits on the widest coordinate, leaves of
    at most :data:`LEAF` records.  Returns the records in tree order (``xt``, ``orig``:
    each position's row of ``x``), each position's leaf and the nodes' arrays."""
    n, p = x.shape
    perm = np.arange(n)
    cap = 2 * (n // (LEAF // 2) + 2)
    nlo = np.empty(cap, np.int64)
    nhi = np.empty(cap, np.int64)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    parent = np.full(cap, -1, np.int64)
    stack = np.empty(_STACK, np.int64)
    nlo[0], nhi[0] = 0, n
    nodes = 1
    top = 0
    stack[top] = 0
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        lo, hi = nlo[node], nhi[node]
        if hi - lo <= LEAF:
            continue
        best, dim = -1.0, 0
        for d in range(p):
            mn, mx = np.inf, -np.inf
            for i in range(lo, hi):
                v = x[perm[i], d]
                mn = min(mn, v)
                mx = max(mx, v)
            if mx - mn > best:
                best, dim = mx - mn, d
        mid = (lo + hi) // 2
        _select(perm, x, lo, hi, mid, dim)
        for child, a, b in ((nodes, lo, mid), (nodes + 1, mid, hi)):
            nlo[child], nhi[child] = a, b
            parent[child] = node
            stack[top] = child
            top += 1
        left[node], right[node] = nodes, nodes + 1
        nodes += 2
    xt = np.empty((n, p))
    for i in range(n):
        xt[i] = x[perm[i]]
    leaf_of = np.empty(n, np.int64)
    alive = np.ones(n, np.bool_)
    bmin = np.empty((nodes, p))
    bmax = np.empty((nodes, p))
    cnt = np.zeros(nodes, np.int64)
    for node in range(nodes - 1, -1, -1):  # children are numbered after their parent
        if left[node] < 0:
            for i in range(nlo[node], nhi[node]):
                leaf_of[i] = node
        _refit(node, xt, alive, nlo, nhi, left, right, bmin, bmax, cnt)
    return (xt, perm, leaf_of, alive, nlo[:nodes], nhi[:nodes], left[:nodes],
            right[:nodes], parent[:nodes], bmin, bmax, cnt)  # fmt: skip


@njit(cache=True, nogil=True, inline="always")
def _dist2(q, xt, i):
    s = 0.0
    for d in range(q.size):
        t = q[d] - xt[i, d]
        s += t * t
    return s


@njit(cache=True, nogil=True, inline="always")
def _far_bound(q, bmin, bmax, node):
    """An upper bound of the squared distance from ``q`` to any record in ``node``'s box:
    per coordinate the farther face, summed in the distance's own order (rounding is
    monotone, so no record's computed distance exceeds it)."""
    s = 0.0
    for d in range(q.size):
        a = q[d] - bmin[node, d]
        b = q[d] - bmax[node, d]
        a = a * a
        b = b * b
        s += a if a > b else b
    return s


@njit(cache=True, nogil=True, inline="always")
def _near_bound(q, bmin, bmax, node):
    """A lower bound of the squared distance from ``q`` to any record in ``node``'s box."""
    s = 0.0
    for d in range(q.size):
        if q[d] < bmin[node, d]:
            t = q[d] - bmin[node, d]
            s += t * t
        elif q[d] > bmax[node, d]:
            t = q[d] - bmax[node, d]
            s += t * t
    return s


@njit(cache=True, nogil=True)
def _farthest(q, xt, orig, alive, nlo, nhi, left, right, bmin, bmax, cnt, stack):
    """The tree position of the live record farthest from ``q`` (on a tie, the one of the
    smallest original row: sdcMicro's strict ``>`` over the rows in order)."""
    best_d, best_o, best = -1.0, np.iinfo(np.int64).max, -1
    top = 0
    stack[top] = 0
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        if cnt[node] == 0 or _far_bound(q, bmin, bmax, node) < best_d:
            continue
        a = left[node]
        if a < 0:
            for i in range(nlo[node], nhi[node]):
                if alive[i]:
                    d = _dist2(q, xt, i)
                    if d > best_d or (d == best_d and orig[i] < best_o):
                        best_d, best_o, best = d, orig[i], i
            continue
        b = right[node]
        if _far_bound(q, bmin, bmax, a) > _far_bound(q, bmin, bmax, b):
            a, b = b, a
        stack[top] = a  # the farther box is popped first
        stack[top + 1] = b
        top += 2
    return best


@njit(cache=True, nogil=True)
def _nearest(q, k, xt, orig, alive, nlo, nhi, left, right, bmin, bmax, cnt, stack, hd, ho, hp):
    """The tree positions of the ``k`` live records closest to ``q``, into ``hp[:k]``: by
    distance, and among equal distances the later original row first (the order of
    sdcMicro's hash sort, which files an equal distance before those already filed)."""
    h = 0
    top = 0
    stack[top] = 0
    top += 1
    while top > 0:
        top -= 1
        node = stack[top]
        if cnt[node] == 0 or (h == k and _near_bound(q, bmin, bmax, node) > hd[h - 1]):
            continue
        a = left[node]
        if a < 0:
            for i in range(nlo[node], nhi[node]):
                if not alive[i]:
                    continue
                d = _dist2(q, xt, i)
                o = orig[i]
                if h == k and (d > hd[h - 1] or (d == hd[h - 1] and o < ho[h - 1])):
                    continue
                j = h if h < k else k - 1  # insertion into the sorted list
                while j > 0 and (hd[j - 1] > d or (hd[j - 1] == d and ho[j - 1] < o)):
                    hd[j], ho[j], hp[j] = hd[j - 1], ho[j - 1], hp[j - 1]
                    j -= 1
                hd[j], ho[j], hp[j] = d, o, i
                if h < k:
                    h += 1
            continue
        b = right[node]
        if _near_bound(q, bmin, bmax, a) < _near_bound(q, bmin, bmax, b):
            a, b = b, a
        stack[top] = a  # the nearer box is popped first
        stack[top + 1] = b
        top += 2
    return h


@njit(cache=True, nogil=True)
def _anchor(c, xt, alive, ax, order, ad):
    """Sort the live positions by decreasing distance from ``c`` (kept as ``ax``) into
    ``order[:m]``, their distances (not squared) into ``ad[:m]``; returns ``m``."""
    m = 0
    for i in range(xt.shape[0]):
        if alive[i]:
            order[m] = i
            m += 1
    d = np.empty(m)
    for t in range(m):
        d[t] = -np.sqrt(_dist2(c, xt, order[t]))
    idx = np.argsort(d)
    tmp = order[:m].copy()
    for t in range(m):
        order[t] = tmp[idx[t]]
        ad[t] = -d[idx[t]]
    ax[:] = c
    return m


@njit(cache=True, nogil=True)
def _farthest_shell(c, xt, orig, alive, ax, order, ad, m, head):
    """The live position farthest from ``c`` (the first original row on a tie), scanning
    the live records by decreasing distance from the anchor ``ax``: a record ``t`` places
    ``|x - c| <= ad[t] + |c - ax|`` (the triangle inequality), so the scan stops once that
    bound, widened by 1e-9 against rounding, is below the best distance found.  Returns
    ``(position, entries scanned past the first live one)``; ``head[0]`` is kept at the
    first live entry."""
    delta = np.sqrt(_dist2(c, ax.reshape(1, -1), 0))
    best_d, best_o, best = -1.0, np.iinfo(np.int64).max, -1
    while head[0] < m and not alive[order[head[0]]]:  # the grouped records leave the top
        head[0] += 1
    t = head[0]
    while t < m:
        i = order[t]
        if alive[i]:
            if best >= 0 and (ad[t] + delta) * (1.0 + 1e-9) < np.sqrt(best_d):
                break
            d = _dist2(c, xt, i)
            if d > best_d or (d == best_d and orig[i] < best_o):
                best_d, best_o, best = d, orig[i], i
        t += 1
    return best, t - head[0]


@njit(cache=True, nogil=True)
def mdav_groups(x, w, k):
    """MDAV's groups of the rows of ``x`` (already scaled), the "average record" weighted
    by ``w`` (all ones: the plain mean).  Returns each row's group, numbered in the order
    the groups are formed."""
    n, p = x.shape
    (xt, orig, leaf_of, alive, nlo, nhi, left, right, parent, bmin, bmax, cnt) = _build(x)
    groups = np.full(n, -1, np.int64)
    shi = np.zeros(p + 1)  # sum of w * x per column, then the sum of w, as double-doubles
    slo = np.zeros(p + 1)
    for i in range(n):
        wi = w[orig[i]]
        for d in range(p):
            _dd_add(shi, slo, d, wi * xt[i, d])
        _dd_add(shi, slo, p, wi)
    stack = np.empty(_STACK, np.int64)
    hd = np.empty(k)
    ho = np.empty(k, np.int64)
    hp = np.empty(k, np.int64)
    centre = np.empty(p)
    qr = np.empty(p)
    qs = np.empty(p)
    ax = np.empty(p)
    order = np.empty(n, np.int64)
    ad = np.empty(n)
    anchored = 0  # entries of order[] (live or not) since the last anchor
    head = np.zeros(1, np.int64)
    work = n  # forces the first anchor
    m = n
    label = 0
    while m >= 2 * k:
        for d in range(p):
            centre[d] = (shi[d] + slo[d]) / (shi[p] + slo[p])
        if work >= m:  # the scans since the last anchor cost a pass: sort afresh
            anchored = _anchor(centre, xt, alive, ax, order, ad)
            work = 0
            head[0] = 0
        r, scanned = _farthest_shell(centre, xt, orig, alive, ax, order, ad, anchored, head)
        work += scanned
        qr[:] = xt[r]
        rounds = 2 if m >= 3 * k else 1
        if rounds == 2:  # x_s: the farthest from x_r, chosen before x_r's group leaves
            s = _farthest(qr, xt, orig, alive, nlo, nhi, left, right, bmin, bmax, cnt, stack)
            qs[:] = xt[s]
        for g in range(rounds):
            q = qr if g == 0 else qs
            _nearest(q, k, xt, orig, alive, nlo, nhi, left, right, bmin, bmax, cnt, stack,
                     hd, ho, hp)  # fmt: skip
            for j in range(k):
                i = hp[j]
                groups[orig[i]] = label
                alive[i] = False
                wi = w[orig[i]]
                for d in range(p):
                    _dd_add(shi, slo, d, -(wi * xt[i, d]))
                _dd_add(shi, slo, p, -wi)
                node = leaf_of[i]
                while node >= 0:
                    _refit(node, xt, alive, nlo, nhi, left, right, bmin, bmax, cnt)
                    node = parent[node]
            label += 1
            m -= k
    if m > 0:
        for i in range(n):
            if alive[i]:
                groups[orig[i]] = label
    return groups


@njit(cache=True, nogil=True)
def mdav_hamming_groups(codes, sizes, k):
    """MDAV on integer codes (column ``j`` in ``0 .. sizes[j] - 1``) with the Hamming
    distance; the "average record" is each column's mode among the remaining records (the
    smallest code on a tie).  Ties are broken as :func:`mdav_groups` breaks them."""
    n, p = codes.shape
    off = np.zeros(p + 1, np.int64)
    for j in range(p):
        off[j + 1] = off[j] + sizes[j]
    counts = np.zeros(off[p], np.int64)
    for i in range(n):
        for j in range(p):
            counts[off[j] + codes[i, j]] += 1
    live = np.arange(n)  # the remaining rows, ascending (removals keep the order)
    m = n
    groups = np.full(n, -1, np.int64)
    dist = np.empty(n, np.int64)
    centre = np.empty(p, np.int64)
    qr = np.empty(p, np.int64)
    qs = np.empty(p, np.int64)
    bucket = np.zeros(p + 2, np.int64)
    label = 0
    while m >= 2 * k:
        for j in range(p):
            best = 0
            for v in range(1, sizes[j]):
                if counts[off[j] + v] > counts[off[j] + best]:
                    best = v
            centre[j] = best
        r = _far_codes(centre, codes, live, m)
        qr[:] = codes[r]
        rounds = 2 if m >= 3 * k else 1
        if rounds == 2:
            qs[:] = codes[_far_codes(qr, codes, live, m)]
        for g in range(rounds):
            q = qr if g == 0 else qs
            # the k closest by distance, later rows first on a tie: count the distances,
            # find the cut distance, then keep the rows below it and the last of those at it
            bucket[:] = 0
            for t in range(m):
                i = live[t]
                d = 0
                for j in range(p):
                    if codes[i, j] != q[j]:
                        d += 1
                dist[t] = d
                bucket[d] += 1
            cut, below = 0, 0
            while below + bucket[cut] < k:
                below += bucket[cut]
                cut += 1
            take_at_cut = k - below
            for t in range(m - 1, -1, -1):
                d = dist[t]
                if d < cut or (d == cut and take_at_cut > 0):
                    if d == cut:
                        take_at_cut -= 1
                    i = live[t]
                    groups[i] = label
                    for j in range(p):
                        counts[off[j] + codes[i, j]] -= 1
            kept = 0
            for t in range(m):
                if groups[live[t]] < 0:
                    live[kept] = live[t]
                    kept += 1
            m = kept
            label += 1
    for t in range(m):
        groups[live[t]] = label
    return groups


@njit(cache=True, nogil=True)
def _far_codes(q, codes, live, m):
    """The remaining row farthest from ``q`` in Hamming distance (the first on a tie)."""
    best_d, best = -1, -1
    for t in range(m):
        i = live[t]
        d = 0
        for j in range(codes.shape[1]):
            if codes[i, j] != q[j]:
                d += 1
        if d > best_d:
            best_d, best = d, i
    return best


@njit(cache=True, nogil=True)
def optimal_univariate_groups(v, k):
    """Hansen & Mukherjee's optimal partition of the *sorted* values ``v`` into runs of
    ``k .. 2k - 1``: ``D[j]`` is the least SSE of ``v[:j]``, the last run's SSE grown one
    value at a time (Welford's update, stable where prefix sums of squares are not).
    Returns each sorted position's run, numbered from the smallest values."""
    n = v.size
    cost = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, np.int64)
    cost[0] = 0.0
    for j in range(k, n + 1):
        mean = 0.0
        m2 = 0.0
        for length in range(1, min(2 * k - 1, j) + 1):
            x = v[j - length]
            delta = x - mean
            mean += delta / length
            m2 += delta * (x - mean)
            if length >= k:
                c = cost[j - length] + m2
                if c < cost[j]:
                    cost[j] = c
                    back[j] = j - length
    runs = np.empty(n, np.int64)
    j = n
    count = 0
    while j > 0:
        i = back[j]
        runs[i:j] = count
        count += 1
        j = i
    return count - 1 - runs  # numbered from the start


@njit(cache=True, nogil=True)
def medoid_rows(codes, order, starts):
    """For each group (its rows ``order[starts[g]:starts[g + 1]]``, ascending), the row
    whose summed Hamming distance to the group's rows is least (the first on a tie)."""
    groups = starts.size - 1
    out = np.empty(groups, np.int64)
    p = codes.shape[1]
    for g in range(groups):
        a, b = starts[g], starts[g + 1]
        best, best_s = -1, np.iinfo(np.int64).max
        for u in range(a, b):
            s = 0
            for t in range(a, b):
                for j in range(p):
                    if codes[order[u], j] != codes[order[t], j]:
                        s += 1
            if s < best_s:
                best_s, best = s, order[u]
        out[g] = best
    return out


# --------------------------------------------------------------- local search after MDAV


@njit(cache=True, nogil=True, inline="always")
def _gap2(z, i, m, g):
    """``||z[i] - m[g]||^2``."""
    s = 0.0
    for d in range(z.shape[1]):
        t = z[i, d] - m[g, d]
        s += t * t
    return s


@njit(cache=True, nogil=True)
def _runs_dp(z, w, rows, k, cost, back, mean):
    """The least SSE of the rows ``rows`` (in this order) cut into runs of ``k .. 2k - 1``
    consecutive rows, each run's SSE in all the columns grown one row at a time (weighted
    Welford).  Fills ``back`` (the start of the last run ending at each position) and
    returns the cost."""
    m = rows.size
    p = z.shape[1]
    cost[0] = 0.0
    for j in range(1, m + 1):
        cost[j] = np.inf
    for j in range(k, m + 1):
        for d in range(p):
            mean[d] = 0.0
        tot = 0.0
        m2 = 0.0
        for length in range(1, min(2 * k - 1, j) + 1):
            i = rows[j - length]
            wi = w[i]
            tot += wi
            s = 0.0
            for d in range(p):
                delta = z[i, d] - mean[d]
                mean[d] += delta * (wi / tot)
                s += delta * (z[i, d] - mean[d])
            m2 += wi * s
            if length >= k and cost[j - length] + m2 < cost[j]:
                cost[j] = cost[j - length] + m2
                back[j] = j - length
    return cost[m]


@njit(cache=True, nogil=True)
def _sort_rows(rows, keys, m):
    """``rows[:m]`` and ``keys[:m]`` sorted by the keys in place, stably: an insertion sort
    (no allocation) up to 32 rows, a merge sort beyond."""
    if m > 32:
        order = np.argsort(keys[:m], kind="mergesort")
        rows[:m] = rows[:m][order]
        keys[:m] = keys[:m][order]
        return
    for t in range(1, m):
        r, key = rows[t], keys[t]
        u = t - 1
        while u >= 0 and keys[u] > key:
            rows[u + 1] = rows[u]
            keys[u + 1] = keys[u]
            u -= 1
        rows[u + 1] = r
        keys[u + 1] = key


@njit(cache=True, nogil=True)
def _principal_order(z, w, rows, mean, cov, vec, nxt_vec, proj):
    """``rows`` sorted in place (stably) along their weighted principal axis, found by
    power iteration on the weighted covariance from the direction of the row farthest
    from the mean (deterministic)."""
    m = rows.size
    p = z.shape[1]
    tot = 0.0
    for d in range(p):
        mean[d] = 0.0
    for t in range(m):
        i = rows[t]
        tot += w[i]
        for d in range(p):
            mean[d] += w[i] * z[i, d]
    for d in range(p):
        mean[d] /= tot
    for a in range(p):
        for b in range(p):
            cov[a, b] = 0.0
    far, far_d = 0, -1.0
    for t in range(m):
        i = rows[t]
        s = 0.0
        for a in range(p):
            ua = z[i, a] - mean[a]
            s += ua * ua
            for b in range(p):
                cov[a, b] += w[i] * ua * (z[i, b] - mean[b])
        if s > far_d:
            far, far_d = t, s
    norm = 0.0
    for d in range(p):
        vec[d] = z[rows[far], d] - mean[d]
        norm += vec[d] * vec[d]
    for d in range(p):
        vec[d] /= np.sqrt(norm) if norm > 0.0 else 1.0
    for _ in range(60):
        norm = 0.0
        for a in range(p):
            s = 0.0
            for b in range(p):
                s += cov[a, b] * vec[b]
            nxt_vec[a] = s
            norm += s * s
        if not norm > 0.0:
            break
        norm = np.sqrt(norm)
        moved = 0.0
        for d in range(p):
            u = nxt_vec[d] / norm
            moved += (u - vec[d]) * (u - vec[d])
            vec[d] = u
        if moved < 1e-12:
            break
    for t in range(m):
        i = rows[t]
        s = 0.0
        for d in range(p):
            s += (z[i, d] - mean[d]) * vec[d]
        proj[t] = s
    _sort_rows(rows, proj, m)


@njit(cache=True, nogil=True)
def _unlink(i, g, head, nxt, prv):
    if prv[i] >= 0:
        nxt[prv[i]] = nxt[i]
    else:
        head[g] = nxt[i]
    if nxt[i] >= 0:
        prv[nxt[i]] = prv[i]


@njit(cache=True, nogil=True)
def _link(i, g, head, nxt, prv):
    nxt[i] = head[g]
    prv[i] = -1
    if head[g] >= 0:
        prv[head[g]] = i
    head[g] = i


@njit(cache=True, nogil=True, inline="always")
def _leaving(z, w, i, a, seen, version, cnt, mass, sums, mean, save, rest, without):
    """Record ``i``'s leaving terms in its group ``a``, computed afresh if ``a`` changed."""
    if seen[i] == version[a]:
        return
    seen[i] = version[a]
    wi = w[i]
    r = mass[a] - wi
    rest[i] = r
    if cnt[a] == 1 or not r > 0.0:
        save[i] = -1.0
        return
    save[i] = mass[a] * wi / r * _gap2(z, i, mean, a)
    for d in range(z.shape[1]):
        without[i, d] = (sums[a, d] - wi * z[i, d]) / r


@njit(cache=True, nogil=True)
def _shift(z, w, i, a, b, lab, cnt, mass, sums, mean, head, nxt, prv):
    """Record ``i`` from group ``a`` to group ``b``: labels, lists, counts, sums, means."""
    p = z.shape[1]
    wi = w[i]
    _unlink(i, a, head, nxt, prv)
    _link(i, b, head, nxt, prv)
    lab[i] = b
    cnt[a] -= 1
    cnt[b] += 1
    mass[a] -= wi
    mass[b] += wi
    for d in range(p):
        sums[a, d] -= wi * z[i, d]
        sums[b, d] += wi * z[i, d]
    for d in range(p):
        mean[a, d] = sums[a, d] / mass[a] if cnt[a] > 0 else 0.0
        mean[b, d] = sums[b, d] / mass[b]


@njit(cache=True, nogil=True)
def _gather(g, head, nxt, rows, m):
    """Group ``g``'s records appended to ``rows[m:]``; returns the new count."""
    y = head[g]
    while y >= 0:
        rows[m] = y
        m += 1
        y = nxt[y]
    return m


@njit(cache=True, nogil=True, inline="always")
def _earlier(values, end, v):
    """Whether ``v`` occurs in ``values[:end]``."""
    for t in range(end):
        if values[t] == v:
            return True
    return False


@njit(cache=True, nogil=True)
def _best_cut(z, w, ident, rows, k, cost, back, vm, cov, vec, vec2, proj):
    """The rows (any order: taken by ``ident``, so the result depends on the set alone)
    sorted in place along their principal axis, and the least SSE of their cut into runs
    of ``k .. 2k - 1`` there (``back`` holds the cut)."""
    m = rows.size
    for t in range(m):
        proj[t] = ident[rows[t]]
    _sort_rows(rows, proj, m)
    _principal_order(z, w, rows, vm, cov, vec, vec2, proj)
    return rows, _runs_dp(z, w, rows, k, cost, back, vm)


@njit(cache=True, nogil=True)
def _recount(g, z, w, head, nxt, cnt, mass, sums, mean):
    """Group ``g``'s count, weight, sums and mean afresh from its records."""
    p = z.shape[1]
    cnt[g] = 0
    mass[g] = 0.0
    for d in range(p):
        sums[g, d] = 0.0
    y = head[g]
    while y >= 0:
        cnt[g] += 1
        mass[g] += w[y]
        for d in range(p):
            sums[g, d] += w[y] * z[y, d]
        y = nxt[y]
    for d in range(p):
        mean[g, d] = sums[g, d] / mass[g] if cnt[g] > 0 else 0.0


@njit(cache=True, nogil=True)
def _apply_cut(z, w, ordered, back, first, second, lab, head, nxt, prv, cnt, mass, sums, mean,
               free, nfree, groups, hot, touched):  # fmt: skip
    """The rows ``ordered`` regrouped into the runs of ``back``: the last run takes label
    ``first``, the one before ``second`` (if ``>= 0``), the others a free label or a new
    one.  Every group concerned is recounted.  Returns the free labels' count and the
    labels' count."""
    j = ordered.size
    run = 0
    while j > 0:
        s = back[j]
        if run == 0:
            g = first
        elif run == 1 and second >= 0:
            g = second
        elif nfree > 0:
            nfree -= 1
            g = free[nfree]
        else:
            g = groups
            groups += 1
        for t in range(s, j):
            i = ordered[t]
            if lab[i] != g:
                _unlink(i, lab[i], head, nxt, prv)
                _link(i, g, head, nxt, prv)
                lab[i] = g
        hot[g] = touched[g] = True
        run += 1
        j = s
    j = ordered.size
    while j > 0:  # the runs' labels include every label the rows had
        _recount(lab[ordered[j - 1]], z, w, head, nxt, cnt, mass, sums, mean)
        j = back[j]
    return nfree, groups


@njit(cache=True, nogil=True)
def refine_round(z, w, ident, lab, k, rcand, gcand, tol, active, fresh_r, fresh_g):
    """One round of the local search of :func:`privlab.publish.microaggregation_core.refine`
    on the rows of ``z`` (already scaled) with weights ``w`` (``ident``: each row's number
    in the caller's order, which settles the orders below), from the groups ``lab``
    (labels below ``active.size``, some maybe without records, every group of ``>= k``
    records; rewritten in place, a new group taking a free label or the next one).
    ``rcand[i]``: the groups (``-1``: none) a record may move to or swap into;
    ``gcand[g]``: the groups ``g`` may be merged and cut again with.  A change is made only
    when it lowers the weighted SSE by more than ``tol``.  ``active[g]``: whether group
    ``g`` changed in the previous round; ``fresh_r[i]``, ``fresh_g[g]``: whether
    ``rcand[i]``, ``gcand[g]`` changed since it.  A record, a group or a pair of groups is
    tried only when a group it concerns changed then or has changed in this round, or its
    candidates are fresh: otherwise it was tried on the same groups before, to no gain (a
    round with every group active tries everything).  Three steps:

    1. every record in turn, its best change among moving it to a candidate group (its own
       keeps ``> k`` records) and swapping it with a record of a candidate group; failing
       those, its best cycle: it to a candidate group, a record of that one to another
       candidate group, a record of that one to the record's group;
    2. every group in turn dissolved: each of its records to the candidate group it costs
       least to join (records by ``ident``, each join seen by the next), and any group
       grown to ``2k`` or more cut as in 3 where that pays (judged with the joins);
    3. every group of ``>= 2k`` cut, and every group with each of its candidates merged and
       cut, into runs of ``k .. 2k - 1`` along the principal axis of the rows concerned,
       the runs of least SSE (a dynamic programme).

    Every change's SSE delta is exact in closed form (joining a group of weight ``W`` and
    mean ``m`` costs ``W w / (W + w) ||x - m||^2``; leaving it saves ``W w / (W - w) ||x -
    m||^2``).  Returns the number of changes made and which groups changed (by label)."""
    n, p = z.shape
    cap = n + 1
    cnt = np.zeros(cap, np.int64)
    mass = np.zeros(cap)
    sums = np.zeros((cap, p))
    mean = np.zeros((cap, p))
    head = np.full(cap, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    groups = active.size
    for i in range(n - 1, -1, -1):  # lists in row order
        g = lab[i]
        _link(i, g, head, nxt, prv)
        cnt[g] += 1
        mass[g] += w[i]
        for d in range(p):
            sums[g, d] += w[i] * z[i, d]
    hot = np.zeros(cap, np.bool_)  # changed in the previous round or in this one
    hot[:groups] = active
    touched = np.zeros(cap, np.bool_)  # changed in this round
    free = np.empty(cap, np.int64)  # labels without records, reused first (lowest first)
    nfree = 0
    for g in range(groups - 1, -1, -1):
        if cnt[g] > 0:
            for d in range(p):
                mean[g, d] = sums[g, d] / mass[g]
        else:
            free[nfree] = g
            nfree += 1
    changes = 0

    # 1. moves, swaps and cycles, record by record.  Each record's "leaving" terms (what its
    # group saves when it leaves, the group's mean without it) are kept until its group
    # changes (a version per group, from one clock).
    version = np.zeros(cap, np.int64)
    clock = 0
    seen = np.full(n, -1, np.int64)
    save = np.zeros(n)  # W w / (W - w) ||x - m||^2; -1: a group of one (nothing saved)
    rest = np.zeros(n)  # W - w
    without = np.zeros((n, p))  # the mean of its group without it
    pool = np.empty(n, np.int64)  # the records of a record's candidate groups
    pool_g = np.empty(n, np.int64)
    tb = np.empty(n)
    ta = np.empty(n)
    for i in range(n):
        a = lab[i]
        if not (hot[a] or fresh_r[i]):
            near_hot = False
            for c in range(rcand.shape[1]):
                if rcand[i, c] >= 0 and hot[rcand[i, c]]:
                    near_hot = True
                    break
            if not near_hot:
                continue
        wi = w[i]
        _leaving(z, w, i, a, seen, version, cnt, mass, sums, mean, save, rest, without)
        lone_a = save[i] < 0.0
        save_a = max(save[i], 0.0)
        rest_a = rest[i]
        best = -tol
        kind = 0  # 1: move, 2: swap, 3: cycle
        to, partner, third, last = -1, -1, -1, -1
        for c in range(rcand.shape[1]):
            b = rcand[i, c]
            if b < 0 or b == a or cnt[b] == 0:
                continue
            if cnt[a] > k and not lone_a:
                delta = mass[b] * wi / (mass[b] + wi) * _gap2(z, i, mean, b) - save_a
                if delta < best:
                    best, kind, to = delta, 1, b
            y = head[b]
            while y >= 0:
                _leaving(z, w, y, b, seen, version, cnt, mass, sums, mean, save, rest, without)
                save_b = max(save[y], 0.0)
                if -save_a - save_b < best:  # else no swap with y can do better
                    delta = -save_b
                    if not lone_a:  # a: i out, y in
                        s = 0.0
                        for d in range(p):
                            u = z[y, d] - without[i, d]
                            s += u * u
                        delta += rest_a * w[y] / (rest_a + w[y]) * s - save_a
                    if save[y] >= 0.0 and delta < best:  # b: y out, i in
                        s = 0.0
                        for d in range(p):
                            u = z[i, d] - without[y, d]
                            s += u * u
                        delta += rest[y] * wi / (rest[y] + wi) * s
                    if delta < best:
                        best, kind, to, partner = delta, 2, b, y
                y = nxt[y]
        if kind == 0:  # no move nor swap: a cycle, i to b, y (of b) to c, l (of c) to a
            # each record r of a candidate group: tb[r], what r's group gains by trading r
            # for i; ta[r], what a gains by trading i for r; both its own terms first
            size = 0
            low_b, low_l = np.inf, np.inf
            for c1 in range(rcand.shape[1]):
                b = rcand[i, c1]
                if b < 0 or b == a or cnt[b] == 0:
                    continue
                r = head[b]
                while r >= 0:
                    pool[size] = r
                    pool_g[size] = b
                    tb[size] = 0.0  # a group of one: nothing changes
                    if save[r] >= 0.0:
                        s = 0.0
                        for d in range(p):
                            u = z[i, d] - without[r, d]
                            s += u * u
                        tb[size] = rest[r] * wi / (rest[r] + wi) * s - save[r]
                    ta[size] = 0.0
                    if not lone_a:
                        s = 0.0
                        for d in range(p):
                            u = z[r, d] - without[i, d]
                            s += u * u
                        ta[size] = rest_a * w[r] / (rest_a + w[r]) * s - save_a
                    low_b = min(low_b, tb[size])
                    low_l = min(low_l, ta[size] - max(save[r], 0.0))
                    size += 1
                    r = nxt[r]
            if low_b + low_l < best:  # else no cycle can do better
                for u in range(size):
                    y = pool[u]
                    if not tb[u] + low_l < best:
                        continue
                    for v in range(size):
                        ell = pool[v]
                        if pool_g[v] == pool_g[u] or not tb[u] + ta[v] - max(save[ell], 0.0) < best:
                            continue
                        t_c = 0.0  # c: l out, y in
                        if save[ell] >= 0.0:
                            s = 0.0
                            for d in range(p):
                                e = z[y, d] - without[ell, d]
                                s += e * e
                            t_c = rest[ell] * w[y] / (rest[ell] + w[y]) * s - save[ell]
                        if tb[u] + ta[v] + t_c < best:
                            best, kind = tb[u] + ta[v] + t_c, 3
                            to, partner, third, last = pool_g[u], y, pool_g[v], ell
        if kind > 0:
            _shift(z, w, i, a, to, lab, cnt, mass, sums, mean, head, nxt, prv)
            if kind == 2:
                _shift(z, w, partner, to, a, lab, cnt, mass, sums, mean, head, nxt, prv)
            elif kind == 3:
                _shift(z, w, partner, to, third, lab, cnt, mass, sums, mean, head, nxt, prv)
                _shift(z, w, last, third, a, lab, cnt, mass, sums, mean, head, nxt, prv)
                clock += 1
                version[third] = clock
                hot[third] = touched[third] = True
            clock += 2  # new versions, unique: a record's stamp cannot match another group
            version[a] = clock - 1
            version[to] = clock
            hot[a] = hot[to] = touched[a] = touched[to] = True
            changes += 1

    # 2. dissolve a group into its records' candidate groups, then cut any that grew to
    # 2k or more (the cut judged with the dissolving: together they may pay)
    rows = np.empty(n, np.int64)
    cost = np.empty(n + 1)
    back = np.zeros(n + 1, np.int64)
    vm = np.empty(p)
    vec = np.empty(p)
    vec2 = np.empty(p)
    cov = np.empty((p, p))
    proj = np.empty(n)
    kept_g = np.empty(n, np.int64)  # the groups joined, their state before
    kept_cnt = np.empty(n, np.int64)
    kept_mass = np.empty(n)
    kept_sums = np.empty((n, p))
    target = np.empty(n, np.int64)
    cut = np.zeros(n, np.bool_)
    members = np.empty(n, np.int64)
    top = groups
    for c in range(top):
        if cnt[c] == 0 or groups - nfree <= 1:
            continue
        m = _gather(c, head, nxt, members, 0)
        for t in range(m):  # the joins in an order of the set alone
            proj[t] = ident[members[t]]
        _sort_rows(members, proj, m)
        near_hot = hot[c]
        for t in range(m):
            y = members[t]
            near_hot |= fresh_r[y]
            for q in range(rcand.shape[1]):
                if rcand[y, q] >= 0 and hot[rcand[y, q]]:
                    near_hot = True
        if not near_hot:
            continue
        sse_c = 0.0
        for t in range(m):
            sse_c += w[members[t]] * _gap2(z, members[t], mean, c)
        delta = -sse_c
        made = 0  # tentative joins so far
        for t in range(m):
            i = members[t]
            wi = w[i]
            pick, pick_cost = -1, np.inf
            for q in range(rcand.shape[1]):
                b = rcand[i, q]
                if b < 0 or b == c or cnt[b] == 0:
                    continue
                u = mass[b] * wi / (mass[b] + wi) * _gap2(z, i, mean, b)
                if u < pick_cost:
                    pick, pick_cost = b, u
            if pick < 0:
                break
            delta += pick_cost
            target[t] = pick
            kept_g[t] = pick
            kept_cnt[t] = cnt[pick]
            kept_mass[t] = mass[pick]
            for d in range(p):
                kept_sums[t, d] = sums[pick, d]
            cnt[pick] += 1
            mass[pick] += wi
            for d in range(p):
                sums[pick, d] += wi * z[i, d]
                mean[pick, d] = sums[pick, d] / mass[pick]
            made += 1
        if made == m:
            for t in range(m):
                b = target[t]
                cut[t] = False
                if cnt[b] < 2 * k or _earlier(target, t, b):
                    continue
                mb = _gather(b, head, nxt, rows, 0)
                for u in range(m):
                    if target[u] == b:
                        rows[mb] = members[u]
                        mb += 1
                before = 0.0
                for u in range(mb):
                    before += w[rows[u]] * _gap2(z, rows[u], mean, b)
                _, after = _best_cut(z, w, ident, rows[:mb], k, cost, back, vm, cov, vec, vec2,
                                     proj)  # fmt: skip
                if after < before:
                    delta += after - before
                    cut[t] = True
        if made == m and delta < -tol:
            for u in range(m):  # the joins stay; the records leave c
                i = members[u]
                _unlink(i, c, head, nxt, prv)
                _link(i, target[u], head, nxt, prv)
                lab[i] = target[u]
                hot[target[u]] = touched[target[u]] = True
            cnt[c] = 0
            mass[c] = 0.0
            for d in range(p):
                sums[c, d] = 0.0
                mean[c, d] = 0.0
            free[nfree] = c
            nfree += 1
            hot[c] = touched[c] = True
            for t in range(m):
                if cut[t]:
                    b = target[t]
                    mb = _gather(b, head, nxt, rows, 0)
                    ordered, _ = _best_cut(z, w, ident, rows[:mb], k, cost, back, vm, cov,
                                           vec, vec2, proj)  # fmt: skip
                    nfree, groups = _apply_cut(z, w, ordered, back, b, -1, lab, head, nxt,
                                               prv, cnt, mass, sums, mean, free, nfree,
                                               groups, hot, touched)  # fmt: skip
            changes += 1
        else:  # undo the joins, latest first, restoring the saved state exactly
            for u in range(made - 1, -1, -1):
                b = kept_g[u]
                cnt[b] = kept_cnt[u]
                mass[b] = kept_mass[u]
                for d in range(p):
                    sums[b, d] = kept_sums[u, d]
                    mean[b, d] = sums[b, d] / mass[b]

    # 3. cut a large group, or merge two and cut them again
    top = groups
    for a in range(top):
        if cnt[a] == 0:
            continue
        for q in range(-1, gcand.shape[1] if a < gcand.shape[0] else 0):
            if cnt[a] == 0:
                break
            b = -1 if q < 0 else gcand[a, q]
            if q < 0 and cnt[a] < 2 * k:
                continue
            if q >= 0 and (b < 0 or b == a or cnt[b] == 0):
                continue
            fresh = q >= 0 and fresh_g[a]
            if not (hot[a] or (b >= 0 and hot[b]) or fresh):
                continue
            if b >= 0 and b < a and not fresh and b < gcand.shape[0]:
                if _earlier(gcand[b], gcand.shape[1], a):
                    continue  # the pair was tried from b
            m = _gather(a, head, nxt, rows, 0)
            before = 0.0
            for t in range(m):
                before += w[rows[t]] * _gap2(z, rows[t], mean, a)
            if b >= 0:
                m0 = m
                m = _gather(b, head, nxt, rows, m)
                for t in range(m0, m):
                    before += w[rows[t]] * _gap2(z, rows[t], mean, b)
            ordered, after = _best_cut(z, w, ident, rows[:m], k, cost, back, vm, cov, vec, vec2,
                                       proj)  # fmt: skip
            if not after - before < -tol:
                continue
            nfree, groups = _apply_cut(z, w, ordered, back, a, b, lab, head, nxt, prv, cnt,
                                       mass, sums, mean, free, nfree, groups, hot,
                                       touched)  # fmt: skip
            changes += 1
    return changes, touched[:groups]


@njit(cache=True, nogil=True)
def nearest_groups(z, rows, lab, means, pool, out):
    """For each row ``i`` of ``rows``, ``out[i]``: the ``out.shape[1]`` groups of
    ``pool[lab[i]]`` (its group's nearest groups) whose means are nearest to the row,
    nearest first (the earlier in ``pool`` on a tie)."""
    p = z.shape[1]
    c = out.shape[1]
    dist = np.empty(pool.shape[1])
    for t in range(rows.size):
        i = rows[t]
        row = pool[lab[i]]
        for q in range(row.size):
            s = 0.0
            for d in range(p):
                u = z[i, d] - means[row[q], d]
                s += u * u
            dist[q] = s
        for q in range(c):  # the c nearest in order, the earliest on a tie
            best = -1
            for r in range(row.size):
                if dist[r] >= 0.0 and (best < 0 or dist[r] < dist[best]):
                    best = r
            out[i, q] = row[best]
            dist[best] = -1.0  # taken


@njit(cache=True, nogil=True)
def tree_order(x):
    """The rows of ``x`` in the order of a k-d tree split down to single records: each
    node's records cut at the median of its widest coordinate, the lower half first (a
    deterministic ordering in which neighbours in the order are mostly near in space)."""
    n, p = x.shape
    perm = np.arange(n)
    stack = np.empty((_STACK, 2), np.int64)
    stack[0, 0], stack[0, 1] = 0, n
    top = 1
    while top > 0:
        top -= 1
        lo, hi = stack[top, 0], stack[top, 1]
        if hi - lo <= 1:
            continue
        best, dim = -1.0, 0
        for d in range(p):
            mn, mx = np.inf, -np.inf
            for i in range(lo, hi):
                v = x[perm[i], d]
                mn = min(mn, v)
                mx = max(mx, v)
            if mx - mn > best:
                best, dim = mx - mn, d
        mid = (lo + hi) // 2
        _select(perm, x, lo, hi, mid, dim)
        stack[top, 0], stack[top, 1] = mid, hi
        stack[top + 1, 0], stack[top + 1, 1] = lo, mid
        top += 2
    return perm
