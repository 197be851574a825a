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
