"""The numba kernels of Mondrian's partitioning (:mod:`privlab.publish.mondrian` holds the logic).

The rows of the table are kept in one array, ``x`` (``(n, d)`` ordinal codes), permuted in
place so that every partition is a contiguous run ``x[s:e]``, with ``ids[s:e]`` the
original row numbers (and ``sv[s:e]`` the sensitive codes).  A split partitions the run in
place, left half first: the left-to-right order of the final runs is the order in which
the recursive algorithm (a stack popping the left half first) closes its classes, so a
class's label is the rank of its run.  Nothing in a decision depends on the order of the
rows inside a run: the median is a value (the ``n // 2``-th smallest, what
``np.partition`` returns), found from the run's histogram of codes when the code range
is no wider than the run, by a sort of a copy of the column otherwise.

Compiled on first use and cached on disk (``cache=True``); imported lazily, and used for
large tables only (``mondrian._KERNEL_MIN``), so that small ones do not pay numba's
import time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: A run's median is found by counting its codes when their range is at most this many
#: times its length plus this constant, else by sorting a copy of its column.
_HIST_FACTOR = 1
_HIST_SLACK = 0


@njit(cache=True, nogil=True)
def _bounds(x, s, e, lo, hi):
    """Smallest and largest code of every column over rows ``s .. e - 1``."""
    d = x.shape[1]
    for j in range(d):
        lo[j] = x[s, j]
        hi[j] = x[s, j]
    for i in range(s + 1, e):
        for j in range(d):
            v = x[i, j]
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)


@njit(cache=True, nogil=True)
def _order(lo, hi, span, wflat, woff, wdim, use_width, w, order):
    """The columns by decreasing normalized width, ties to the column listed first
    (``np.argsort(-w, kind="stable")``)."""
    d = lo.shape[0]
    for j in range(d):
        if use_width:
            w[j] = wflat[woff[j] + lo[j] * wdim[j] + hi[j]]
        else:
            w[j] = (hi[j] - lo[j]) / span[j]
    for j in range(d):  # insertion sort, stable
        p = j
        while p > 0 and w[order[p - 1]] < w[j]:
            order[p] = order[p - 1]
            p -= 1
        order[p] = j


@njit(cache=True, nogil=True)
def _median_split(x, s, e, j, lo_j, hi_j, hist, col):
    """``(t, nl)``: the rows of ``x[s:e]`` whose code in column ``j`` is below ``t`` form the
    left half (``nl`` rows): ``t`` is the median (the ``(e - s) // 2``-th smallest code),
    or the median + 1 when no code is below the median.  ``hist`` and ``col`` are scratch
    space (a histogram of codes, a copy of the column to sort)."""
    size = e - s
    kth = size // 2
    r = hi_j - lo_j + 1
    if r <= _HIST_FACTOR * size + _HIST_SLACK and r <= hist.shape[0]:
        for v in range(r):
            hist[v] = 0
        for i in range(s, e):
            hist[x[i, j] - lo_j] += 1
        cum = 0
        v = 0
        while True:
            c = hist[v]
            if cum + c > kth:
                break
            cum += c
            v += 1
        if cum > 0:
            return lo_j + v, cum
        return lo_j + v + 1, hist[v]
    for i in range(size):
        col[i] = x[s + i, j]
    if size <= 32:
        for i in range(1, size):  # insertion sort
            v = col[i]
            p = i
            while p > 0 and col[p - 1] > v:
                col[p] = col[p - 1]
                p -= 1
            col[p] = v
    else:
        col[:size].sort()
    med = col[kth]
    nl = 0
    while col[nl] < med:
        nl += 1
    if nl > 0:
        return med, nl
    while nl < size and col[nl] == med:
        nl += 1
    return med + 1, nl


@njit(cache=True, nogil=True)
def _partition(x, ids, sv, s, e, j, t):
    """Move the rows of ``x[s:e]`` whose column ``j`` is below ``t`` to the front (with
    their ``ids`` and ``sv``, when ``sv`` is not empty)."""
    d = x.shape[1]
    has_s = sv.shape[0] > 0
    a = s
    b = e - 1
    while True:
        while a <= b and x[a, j] < t:
            a += 1
        while a <= b and x[b, j] >= t:
            b -= 1
        if a >= b:
            return
        for c in range(d):
            tmp = x[a, c]
            x[a, c] = x[b, c]
            x[b, c] = tmp
        ti = ids[a]
        ids[a] = ids[b]
        ids[b] = ti
        if has_s:
            ts = sv[a]
            sv[a] = sv[b]
            sv[b] = ts
        a += 1
        b -= 1


@njit(cache=True, nogil=True)
def partition_k(x, ids, k, span, wflat, woff, wdim, use_width, hist, label, bounds):
    """Mondrian under k-anonymity alone, to the end: a work stack of runs, the left half
    popped first.  Writes ``label[ids[i]]`` and, per class, its smallest and largest code
    of every column (``bounds[g, 0, j]``, ``bounds[g, 1, j]``); returns the number of
    classes."""
    n, d = x.shape
    lo = np.empty(d, dtype=x.dtype)
    hi = np.empty(d, dtype=x.dtype)
    w = np.empty(d, dtype=np.float64)
    order = np.empty(d, dtype=np.int64)
    col = np.empty(n, dtype=x.dtype)
    no_s = np.empty(0, dtype=np.int64)
    stack_s = np.empty(n // k + 2, dtype=np.int64)
    stack_e = np.empty(n // k + 2, dtype=np.int64)
    stack_s[0] = 0
    stack_e[0] = n
    sp = 1
    g = 0
    while sp > 0:
        sp -= 1
        s = stack_s[sp]
        e = stack_e[sp]
        size = e - s
        _bounds(x, s, e, lo, hi)
        done = False
        if size >= 2 * k:
            _order(lo, hi, span, wflat, woff, wdim, use_width, w, order)
            for r in range(d):
                j = order[r]
                if hi[j] == lo[j]:
                    break
                t, nl = _median_split(x, s, e, j, lo[j], hi[j], hist, col)
                if nl == size:
                    continue
                if nl >= k and size - nl >= k:
                    _partition(x, ids, no_s, s, e, j, t)
                    stack_s[sp] = s + nl
                    stack_e[sp] = e
                    stack_s[sp + 1] = s
                    stack_e[sp + 1] = s + nl
                    sp += 2
                    done = True
                    break
        if not done:
            for i in range(s, e):
                label[ids[i]] = g
            for j in range(d):
                bounds[g, 0, j] = lo[j]
                bounds[g, 1, j] = hi[j]
            g += 1
    return g


@njit(cache=True, nogil=True)
def propose(x, ids, sv, starts, ends, ranks, k, span, wflat, woff, wdim, use_width, hist,
            out_rank, out_nl, left_counts):  # fmt: skip
    """One round of Mondrian under a model that reads the sensitive values.

    For each run ``starts[p] .. ends[p] - 1`` try the columns from rank ``ranks[p]`` of its
    width order: the first whose median split leaves both halves at least ``k`` rows is
    applied in place, and ``out_rank[p]`` (its rank), ``out_nl[p]`` (the left half's
    size) and ``left_counts[p]`` (the left half's sensitive counts) are set; ``out_rank[p]``
    is -1 when the run has no such split (it is a class).  The caller checks the model on
    both halves and calls again from the next rank for a split it refuses.
    """
    d = x.shape[1]
    m = left_counts.shape[1]
    lo = np.empty(d, dtype=x.dtype)
    hi = np.empty(d, dtype=x.dtype)
    w = np.empty(d, dtype=np.float64)
    order = np.empty(d, dtype=np.int64)
    col = np.empty(x.shape[0], dtype=x.dtype)
    for p in range(starts.shape[0]):
        s = starts[p]
        e = ends[p]
        size = e - s
        out_rank[p] = -1
        if size < 2 * k:
            continue
        _bounds(x, s, e, lo, hi)
        _order(lo, hi, span, wflat, woff, wdim, use_width, w, order)
        for r in range(ranks[p], d):
            j = order[r]
            if hi[j] == lo[j]:
                break
            t, nl = _median_split(x, s, e, j, lo[j], hi[j], hist, col)
            if nl == size:
                continue
            if nl >= k and size - nl >= k:
                _partition(x, ids, sv, s, e, j, t)
                for c in range(m):
                    left_counts[p, c] = 0
                for i in range(s, s + nl):
                    left_counts[p, sv[i]] += 1
                out_rank[p] = r
                out_nl[p] = nl
                break


@njit(cache=True, nogil=True)
def label_runs(x, ids, starts, ends, label, bounds):
    """Class ``g`` is the run ``starts[g] .. ends[g] - 1`` (runs in position order): write
    ``label[ids[i]]`` and the class's smallest and largest code of every column."""
    d = x.shape[1]
    lo = np.empty(d, dtype=x.dtype)
    hi = np.empty(d, dtype=x.dtype)
    for g in range(starts.shape[0]):
        s = starts[g]
        e = ends[g]
        for i in range(s, e):
            label[ids[i]] = g
        _bounds(x, s, e, lo, hi)
        for j in range(d):
            bounds[g, 0, j] = lo[j]
            bounds[g, 1, j] = hi[j]
