"""The numba kernel of Anatomy's group creation (:mod:`privlab.publish.anatomy` holds the
logic).

Xiao & Tao's (2006) *Anatomize* step 2, compiled: bucket the tuples by sensitive value (a
counting sort of a random permutation), then repeatedly pop the ``l`` largest buckets off a
max-heap and draw one tuple from each.  The heap is a port of CPython's :mod:`heapq`
(``heapify``, ``heappop``, ``heappush``: the same sift-up/sift-down moves on the same
array), so the pop order *and* the heap's final layout, which orders the residues, are
those of the pure-Python loop (:func:`privlab.publish.anatomy._form_groups`), and a given
generator yields the same groups either way.  Compiled on first use and cached on disk
(``cache=True``); imported lazily, and used for large tables only
(``anatomy._KERNEL_MIN``), so that small ones do not pay numba's import time.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _siftdown(heap, startpos, pos):
    """``heapq._siftdown`` on a heap whose *larger* key pops first: move ``heap[pos]`` up
    towards ``startpos``."""
    newitem = heap[pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if newitem > parent:
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


@njit(cache=True, nogil=True, inline="always")
def _siftup(heap, endpos, pos):
    """``heapq._siftup`` on ``heap[:endpos]`` (larger key first): bubble the child that pops
    first up to a leaf, then sift ``heap[pos]``'s old item down from there."""
    startpos = pos
    newitem = heap[pos]
    childpos = 2 * pos + 1
    while childpos < endpos:
        rightpos = childpos + 1
        if rightpos < endpos and not heap[childpos] > heap[rightpos]:
            childpos = rightpos
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[pos] = newitem
    _siftdown(heap, startpos, pos)


@njit(cache=True, nogil=True)
def form_groups(s, m, l, order, tie):
    """Anatomize's group creation on sensitive codes ``s`` (``0 .. m - 1``).

    The heap holds one integer key per value, ``remaining << bits | (2**bits - 1 - tie)``:
    the larger key pops first exactly when heapq's item ``(-remaining, tie, value)`` is the
    smaller (ties are distinct), so every comparison, hence every move, is heapq's, and a
    draw from a bucket is a subtraction of ``1 << bits``.

    Parameters
    ----------
    s
        int64 sensitive code of every tuple.
    m
        Domain size (``s.max() + 1`` or more).
    l
        Tuples (distinct values) per group.
    order
        A random permutation of ``0 .. n - 1``: each bucket lists its tuples in this order,
        and a bucket gives up its last tuple first.
    tie
        A random permutation of ``0 .. m - 1``: among buckets of equal size the smaller
        ``tie`` pops first.

    Returns
    -------
    bucket, starts
        The tuples sorted by value, stably in ``order`` (``order[np.argsort(s[order],
        kind="stable")]``); value ``v``'s bucket is ``bucket[starts[v]:starts[v + 1]]``.
    remaining
        Tuples of each value left over (the residues are the first ``remaining[v]`` of its
        bucket).
    heap
        The values still on the heap, in heap order (the residues' order).
    group
        Each tuple's group (``-1`` for a residue).
    members
        ``(groups, l)``: each group's values, in pop order.
    """
    n = s.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    for i in range(n):
        counts[s[i]] += 1
    starts = np.zeros(m + 1, dtype=np.int64)
    for v in range(m):
        starts[v + 1] = starts[v] + counts[v]
    # Counting sort of ``order`` by value; the codes are gathered first, in a loop of their
    # own (a random read inside the bucketing loop cost 2.5 times as much).
    s_ord = np.empty(n, dtype=np.int64)
    for i in range(n):
        s_ord[i] = s[order[i]]
    fill = starts[:m].copy()
    bucket = np.empty(n, dtype=np.int64)
    for i in range(n):
        v = s_ord[i]
        bucket[fill[v]] = order[i]
        fill[v] += 1
    bits = 1
    while (1 << bits) < m:
        bits += 1
    low = (1 << bits) - 1
    one = 1 << bits
    value_of = np.empty(one, dtype=np.int64)  # low bits of a key -> value
    heap = np.empty(m, dtype=np.int64)
    size = 0
    for v in range(m):
        value_of[low - tie[v]] = v
        if counts[v] > 0:
            heap[size] = counts[v] * one + (low - tie[v])
            size += 1
    for i in range(size // 2 - 1, -1, -1):  # heapify
        _siftup(heap, size, i)
    # Each tuple's group, first by bucket position (each bucket is written from its end,
    # so the writes stream), scattered to input order after the loop: a random write per
    # draw inside the loop cost twice as much.
    ranked = np.full(n, -1, dtype=np.int64)
    members = np.empty((n // l, l), dtype=np.int64)
    picked = np.empty(l, dtype=np.int64)
    g = 0
    while size >= l:
        for j in range(l):  # heappop
            size -= 1
            last = heap[size]
            if size > 0:
                picked[j] = heap[0]
                heap[0] = last
                _siftup(heap, size, 0)
            else:
                picked[j] = last
        for j in range(l):
            key = picked[j] - one
            picked[j] = key
            v = value_of[key & low]
            ranked[starts[v] + (key >> bits)] = g
            members[g, j] = v
        g += 1
        for j in range(l):  # heappush the buckets not yet empty
            if picked[j] >= one:
                heap[size] = picked[j]
                size += 1
                _siftdown(heap, 0, size - 1)
    group = np.empty(n, dtype=np.int64)
    for k in range(n):
        group[bucket[k]] = ranked[k]
    remaining = np.zeros(m, dtype=np.int64)
    values = np.empty(size, dtype=np.int64)
    for i in range(size):
        v = value_of[heap[i] & low]
        values[i] = v
        remaining[v] = heap[i] >> bits
    return bucket, starts, remaining, values, group, members[:g]


@njit(cache=True, nogil=True)
def sensitive_table(rows, res_group, res_value, st_group, st_value, st_count):
    """The ST rows ``(group, value, count)``, sorted by group then value, of groups that
    hold the values ``rows[p]`` and ``res_value[r]`` for every residue with
    ``res_group[r] == p``.  Returns the number of rows written (the output arrays hold
    ``rows.size + res_value.size``)."""
    n_groups, l = rows.shape
    buf = np.empty(l + res_value.shape[0], dtype=np.int64)
    out = 0
    for p in range(n_groups):
        k = 0
        for j in range(l):
            buf[k] = rows[p, j]
            k += 1
        for r in range(res_group.shape[0]):
            if res_group[r] == p:
                buf[k] = res_value[r]
                k += 1
        if k <= 32:  # insertion sort: a library sort per small group costs more
            for a in range(1, k):
                x = buf[a]
                b = a - 1
                while b >= 0 and buf[b] > x:
                    buf[b + 1] = buf[b]
                    b -= 1
                buf[b + 1] = x
        else:
            buf[:k].sort()
        j = 0
        while j < k:
            v = buf[j]
            run = 1
            while j + run < k and buf[j + run] == v:
                run += 1
            st_group[out] = p
            st_value[out] = v
            st_count[out] = run
            out += 1
            j += run
    return out
