"""The numba kernels of :mod:`privlab.data.shuffle` (a uniform row shuffle in two passes).

Imported lazily, for large tables only (``shuffle._BUCKET_MIN`` rows), so that small ones do
not pay numba's import time; compiled on first use and cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_LOW = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_32 = np.uint64(32)


@njit(cache=True, nogil=True)
def scatter(labels, starts, a, ca, out_a, b, cb, out_b):
    """Row ``i`` of ``a`` (columns ``ca``) and of ``b`` (columns ``cb``) to the next free
    row of bucket ``labels[i]`` of ``out_a`` and ``out_b`` (bucket ``k`` holds rows
    ``starts[k] .. starts[k + 1] - 1``): the input's order kept within each bucket."""
    pos = starts[:-1].copy()
    for i in range(labels.shape[0]):
        k = labels[i]
        d = pos[k]
        pos[k] = d + 1
        for j in range(ca.shape[0]):
            out_a[d, j] = a[i, ca[j]]
        for j in range(cb.shape[0]):
            out_b[d, j] = b[i, cb[j]]


@njit(cache=True, nogil=True, inline="always")
def _touch(out, lo, hi):
    """Read rows ``lo .. hi - 1`` in order, so that the hardware streams them into the cache
    before the swaps read them at random (without it each swap waited on memory)."""
    s = 0
    if out.shape[1]:
        for r in range(lo, hi):
            s += out[r, 0]
    return s


@njit(cache=True, nogil=True)
def shuffle_buckets(starts, bucket, j, words, out_a, out_b):
    """Fisher-Yates within each bucket of the rows of ``out_a`` and ``out_b`` (the same
    swaps in both), from bucket ``bucket`` at row ``j`` (-1: the bucket's last row).

    Each swap takes a uniform integer in ``0 .. m - 1`` by Lemire's multiply-and-reject on
    a 32-bit half of ``words`` (low half first; exact: the rare half that would bias it is
    rejected and the next one read).  Returns ``(bucket, j)`` where the words ran out (the
    caller passes new ones), or ``(len(starts) - 1, -1)`` when every bucket is shuffled.
    """
    nb = starts.shape[0] - 1
    seen = 0  # returned, so that the reads ahead are not compiled away
    at = 0
    end = 2 * words.shape[0]
    while bucket < nb:
        lo = starts[bucket]
        if j < 0:
            j = starts[bucket + 1] - 1
            seen += _touch(out_a, lo, j + 1) + _touch(out_b, lo, j + 1)
        while j > lo:
            m = np.uint64(j - lo + 1)
            while True:
                if at >= end:
                    return bucket, j, seen
                x = (words[at >> 1] >> (_32 * np.uint64(at & 1))) & _LOW
                at += 1
                prod = x * m
                if (prod & _LOW) >= m or (prod & _LOW) >= (_TWO32 - m) % m:
                    break
            k = lo + np.int64(prod >> _32)
            for c in range(out_a.shape[1]):
                t = out_a[j, c]
                out_a[j, c] = out_a[k, c]
                out_a[k, c] = t
            for c in range(out_b.shape[1]):
                t = out_b[j, c]
                out_b[j, c] = out_b[k, c]
                out_b[k, c] = t
            j -= 1
        bucket += 1
        j = -1
    return bucket, j, seen
