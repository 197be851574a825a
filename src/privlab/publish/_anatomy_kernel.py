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
def _less(a, b, remaining, tie):
    """heapq's ``(-count, tie, value) < (-count', tie', value')``; ties are distinct."""
    ra = remaining[a]
    rb = remaining[b]
    return ra > rb or (ra == rb and tie[a] < tie[b])


@njit(cache=True, nogil=True, inline="always")
def _siftdown(heap, startpos, pos, remaining, tie):
    """``heapq._siftdown``: move ``heap[pos]`` up towards ``startpos``."""
    newitem = heap[pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if _less(newitem, parent, remaining, tie):
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


@njit(cache=True, nogil=True, inline="always")
def _siftup(heap, endpos, pos, remaining, tie):
    """``heapq._siftup`` on ``heap[:endpos]``: bubble the smaller child up to a leaf, then
    sift ``heap[pos]``'s old item down from there."""
    startpos = pos
    newitem = heap[pos]
    childpos = 2 * pos + 1
    while childpos < endpos:
        rightpos = childpos + 1
        if rightpos < endpos and not _less(heap[childpos], heap[rightpos], remaining, tie):
            childpos = rightpos
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[pos] = newitem
    _siftdown(heap, startpos, pos, remaining, tie)


@njit(cache=True, nogil=True)
def form_groups(s, m, l, order, tie):
    """Anatomize's group creation on sensitive codes ``s`` (``0 .. m - 1``).

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
    fill = starts[:m].copy()
    bucket = np.empty(n, dtype=np.int64)
    for i in range(n):
        x = order[i]
        v = s[x]
        bucket[fill[v]] = x
        fill[v] += 1
    remaining = counts.copy()
    heap = np.empty(m, dtype=np.int64)
    size = 0
    for v in range(m):
        if counts[v] > 0:
            heap[size] = v
            size += 1
    for i in range(size // 2 - 1, -1, -1):  # heapify
        _siftup(heap, size, i, remaining, tie)
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
                _siftup(heap, size, 0, remaining, tie)
            else:
                picked[j] = last
        for j in range(l):
            v = picked[j]
            remaining[v] -= 1
            ranked[starts[v] + remaining[v]] = g
            members[g, j] = v
        g += 1
        for j in range(l):  # heappush the buckets not yet empty
            v = picked[j]
            if remaining[v] > 0:
                heap[size] = v
                size += 1
                _siftdown(heap, 0, size - 1, remaining, tie)
    group = np.empty(n, dtype=np.int64)
    for k in range(n):
        group[bucket[k]] = ranked[k]
    return bucket, starts, remaining, heap[:size].copy(), group, members[:g]
