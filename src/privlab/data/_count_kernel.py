"""The numba kernel of joint counts (:mod:`privlab.data.counts` holds the logic).

One pass over the rows adds each row's mixed-radix cell index up column by column and
counts it, reading the chosen columns in place: no copy of the columns, no int64 index
array.  Compiled on first use and cached on disk (``cache=True``); imported lazily, and
used for large tables only (``counts._KERNEL_MIN``), so that small ones do not pay
numba's import time.
"""

from __future__ import annotations

from numba import njit

#: Rows checked, then counted, at a time: their codes stay in the cache between the two.
_BLOCK = 4096


@njit(cache=True, nogil=True)
def count_cells(codes, cols, sizes, strides, counts):
    """``counts[sum_j codes[r, cols[j]] * strides[j]] += 1`` for every row ``r``.

    Returns -1, or the first row holding a code outside ``0 .. sizes[j] - 1`` (nothing is
    counted from the block of :data:`_BLOCK` rows that holds it on).  Each block's codes are
    checked first, column by column without a branch (a loop the compiler vectorizes), then
    counted with no check inside the loop: the check inside cost 1.6x an unchecked pass.
    """
    d = cols.shape[0]
    n = codes.shape[0]
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        bad = 0
        for j in range(d):
            c = cols[j]
            size = sizes[j]
            for r in range(lo, hi):
                v = codes[r, c]
                bad |= (v < 0) | (v >= size)
        if bad:
            for r in range(lo, hi):
                for j in range(d):
                    v = codes[r, cols[j]]
                    if v < 0 or v >= sizes[j]:
                        return r
        for r in range(lo, hi):
            key = 0
            for j in range(d):
                key += codes[r, cols[j]] * strides[j]
            counts[key] += 1
    return -1
