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


@njit(cache=True, nogil=True)
def draw_block(src, lo, cols, kind, slot, ks, cum_off, cums, tab_off, table, buckets, u, out,
               at):  # fmt: skip
    """Randomize rows ``lo .. lo + len(u) - 1`` of ``src`` into rows ``at ..`` of ``out``.

    Output column ``j`` takes column ``cols[j]`` of ``src``; when ``kind[j]`` is not
    ``COPY`` the code ``v`` (domain size ``ks[j]``) is replaced by the number of entries of
    row ``v`` of its padded CDF (flat in ``cums`` from ``cum_off[j]``, ``ks[j]`` per row)
    that are ``<= u[i, slot[j]]``, the sequential scan's answer:

    * ``TABLE``: ``table[tab_off[j] + v * buckets + floor(u * buckets)]`` counts the entries
      ``<= b / buckets`` (all of them ``<= u``); the entries after it are compared with
      ``u`` until one exceeds it (the padding 2.0 ends the scan; no entry is compared unless a
      CDF boundary falls in the uniform's slice, ``ks / buckets`` of the records at most);
    * ``SEARCH``: a binary search of the whole row (``np.searchsorted(side="right")``).

    Returns -1, or the first input row holding a code outside its domain (the rows before
    it are done).  Shuffling is the caller's: writing each randomized row straight to its
    random output row here was 1.4x slower than a block in the cache scattered after.
    """
    for i in range(u.shape[0]):
        r = lo + i
        dst = at + i
        for j in range(cols.shape[0]):
            v = src[r, cols[j]]
            kj = kind[j]
            if kj == COPY:
                out[dst, j] = v
                continue
            k = ks[j]
            if v < 0 or v >= k:
                return r
            x = u[i, slot[j]]
            row = cum_off[j] + v * k
            if kj == TABLE:
                a = table[tab_off[j] + v * buckets + int(x * buckets)]
                while cums[row + a] <= x:
                    a += 1
            else:
                a = 0
                b = k
                while a < b:
                    mid = (a + b) >> 1
                    if cums[row + mid] <= x:
                        a = mid + 1
                    else:
                        b = mid
            out[dst, j] = a
    return -1
