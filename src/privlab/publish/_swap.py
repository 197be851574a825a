"""Rank swapping's partner draw (:func:`swap_partners`), apart from
:mod:`privlab.publish.masking_core` so that its numba kernel
(:mod:`privlab.publish._rankswap_kernel`) compiles it without importing the core back."""

from __future__ import annotations

import numpy as np


def swap_partners(u: np.ndarray, window: int) -> np.ndarray:
    """The partner of each rank ``0 .. n-1`` in one rank swap (Moore 1996, as sdcMicro's
    ``RankSwapping.h`` draws it): ranks are visited in increasing order; a rank not yet
    swapped takes as partner a rank drawn uniformly, by its uniform ``u[r]``, among those
    not yet swapped in ``(r, r + window]``, and both are marked swapped; a rank with none
    keeps its value.  Returns ``partner`` (an involution: ``partner[partner] = range(n)``).

    The candidates are counted and the drawn one found in a Fenwick tree of the free ranks
    (every rank below ``r`` is taken once ``r`` is visited, so the free ranks ``<= r +
    window`` are the candidates).  Plain Python, compiled by numba in
    :mod:`privlab.publish._rankswap_kernel` for large columns; both give the same answer.
    """
    n = u.shape[0]
    partner = np.arange(n)
    if window <= 0 or n < 2:
        return partner
    tree = np.zeros(n + 1, dtype=np.int64)  # 1-based Fenwick tree of the free flags
    for i in range(1, n + 1):
        tree[i] += 1
        up = i + (i & -i)
        if up <= n:
            tree[up] += tree[i]
    top = 1
    while top * 2 <= n:
        top *= 2
    free = np.ones(n, dtype=np.bool_)
    for r in range(n):
        if not free[r]:
            continue
        free[r] = False
        i = r + 1
        while i <= n:
            tree[i] -= 1
            i += i & -i
        i = min(n - 1, r + window) + 1  # free ranks <= r + window: all above r
        count = 0
        while i > 0:
            count += tree[i]
            i -= i & -i
        if count == 0:
            continue
        want = min(int(u[r] * count), count - 1) + 1  # the want-th free rank
        pos = 0
        step = top
        while step > 0:
            if pos + step <= n and tree[pos + step] < want:
                pos += step
                want -= tree[pos]
            step //= 2
        free[pos] = False
        i = pos + 1
        while i <= n:
            tree[i] -= 1
            i += i & -i
        partner[r] = pos
        partner[pos] = r
    return partner
