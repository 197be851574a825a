"""The numba kernel of PRAM's draws (:mod:`privlab.publish.randomization` holds the logic).

One pass over a block of records does, record by record and column by column, what the
vectorized numpy code did in a dozen passes with temporaries: read the original code, map
the record's uniform through the cumulative row of that code, write the released code.
Compiled on first use and cached on disk (``cache=True``), so the compile cost is paid once
per machine and code dtype; imported lazily, and used for large draws only
(``randomization._KERNEL_MIN``), so that small tables do not pay numba's import time.
"""

from __future__ import annotations

from numba import njit

#: What an output column does: copy the code unchanged, draw through the lookup table
#: (small domains), or draw by a binary search of the cumulative row (large domains).
COPY, TABLE, SEARCH = 0, 1, 2
#: The flag of a look-up entry whose slice of [0, 1) holds a CDF boundary (answers are < 64).
AMBIGUOUS = 128


@njit(cache=True, nogil=True)
def draw_block(src, lo, cols, kind, slot, ks, cum_off, cums, tab_off, table, buckets, u, out,
               at, tcol, truth):  # fmt: skip
    """Randomize rows ``lo .. lo + len(u) - 1`` of ``src`` into rows ``at ..`` of ``out``.

    Output column ``j`` takes column ``cols[j]`` of ``src``; when ``kind[j]`` is not
    ``COPY`` the code ``v`` (domain size ``ks[j]``) is replaced by the number of entries of
    row ``v`` of its padded CDF (flat in ``cums`` from ``cum_off[j]``, ``ks[j]`` per row)
    that are ``<= u[i, slot[j]]``, the sequential scan's answer:

    * ``TABLE``: ``e = table[tab_off[j] + v * buckets + floor(u * buckets)]`` holds, in its
      low 7 bits, the number of entries ``<= b / buckets`` (all of them ``<= u``), and in
      its high bit whether a CDF boundary falls inside the slice; only then are the entries
      after it compared with ``u`` until one exceeds it (the padding 2.0 ends the scan;
      ``ks / buckets`` of the records at most).  Reading the next CDF entry on every draw,
      as this did before, took 1.6x the time of the look-up alone (issue 38);
    * ``SEARCH``: a binary search of the whole row (``np.searchsorted(side="right")``).

    Where ``tcol[j] >= 0`` the original codes are also copied to column ``tcol[j]`` of
    ``truth`` (the custody's truth, in the same pass).  ``out`` may be ``src`` itself (drawn
    in place, ``cols`` then ``0 .. d - 1`` and ``at == lo``): a column is read before it is
    written.

    The block is done column by column, each column's kind and constants fixed for its
    loop: 1.5x faster than record by record with a dispatch per cell (issue 38).  Returns
    -1, or a row holding a code outside its domain (the block is then left unfinished; the
    caller names the first such row).  Shuffling is the caller's.
    """
    m = u.shape[0]
    for j in range(cols.shape[0]):
        c = cols[j]
        kj = kind[j]
        tj = tcol[j]
        if tj >= 0:
            for i in range(m):
                truth[at + i, tj] = src[lo + i, c]
        if kj == COPY:
            for i in range(m):
                out[at + i, j] = src[lo + i, c]
            continue
        k = ks[j]
        s = slot[j]
        off = cum_off[j]
        if kj == TABLE:
            toff = tab_off[j]
            for i in range(m):
                v = src[lo + i, c]
                if v < 0 or v >= k:
                    return lo + i
                x = u[i, s]
                a = table[toff + v * buckets + int(x * buckets)]
                if a >= AMBIGUOUS:
                    a -= AMBIGUOUS
                    row = off + v * k
                    while cums[row + a] <= x:
                        a += 1
                out[at + i, j] = a
        else:
            for i in range(m):
                v = src[lo + i, c]
                if v < 0 or v >= k:
                    return lo + i
                x = u[i, s]
                row = off + v * k
                a = 0
                b = k
                while a < b:
                    mid = (a + b) >> 1
                    if cums[row + mid] <= x:
                        a = mid + 1
                    else:
                        b = mid
                out[at + i, j] = a
    return -1
