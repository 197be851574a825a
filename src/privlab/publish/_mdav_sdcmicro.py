"""MDAV as sdcMicro computes it, to the bit (``mdav(..., compat="sdcmicro")``).

A literal transliteration of sdcMicro's C++ loop (sdcMicro 5.8.1, ``src/Mdav.cpp`` and
``src/Mdav.h``; the OECD's code adapted for R by A. Kowarik), which ``microaggregation(
method = "mdav")`` runs through the R function ``mdav()`` (``R/mdav.R``).  It is the
algorithm of :func:`privlab.publish.microaggregation_core.mdav` (Domingo-Ferrer & Torra
2005, MDAV-generic) with the same tie rules, but not the same arithmetic:

* **distances in single precision.**  ``Mdav.h`` declares ``typedef float TDist``: the
  distance of two rows is ``Dist = 0.0f; Dist += (float)((v1 - v2)^2 * w_j)`` over the
  columns ``j`` in order, each term computed in double, rounded to float, and the sum kept
  in float (``Dist()``; ``DistXX()`` for the distance to the average record, the same
  formula).  The exact mode computes ``sum_j (z1_j - z2_j)^2`` in double on z-scores.  On
  data with many duplicates and integer values (Adult's age, hours, capital gains...) the
  24-bit rounding makes distances equal that are not, and unequal that are (a sum of the
  same terms in another row's column order), so the tie rules pick other rows: on Adult's
  five numeric columns the groups part from about the 1,000th row on;
* **the weights.**  No z-scores: ``w_j = 1 / Var_j`` with ``Var_j = mean(x_j^2) -
  mean(x_j)^2`` (sums in double in row order, divided by ``n``: the population variance,
  by the textbook formula that cancels), and ``w_j = 1`` where that variance is 0
  (``weights`` passed by ``mdav()`` are reset to 1 first and so ignored);
* **the order of distances** comes from a hash sort (``es_NbHashListXX = 1 << 16``
  buckets over ``[min, min + 1.0000153 (max - min))`` in float, each bucket a list kept
  sorted by insertion, an equal distance filed before those already there, so that among
  equal distances the later row comes first), read until ``k`` rows are taken;
* **the published values** are each group's column sums in double in that order (the
  last group's in row order) divided by the group's size: the mean, up to the last bits.

The loop: while ``NbRowLeft - k >= k``: the average record ``c`` of the remaining rows
(double sums in row order, divided by their number); ``x_r``, the first row at the largest
float distance from ``c`` (strict ``>``); then ``ngroups`` = 2 if ``NbRowLeft - 2k >= k``
else 1 times: the distances from the current row, the first farthest row becoming the
next current row, the ``k`` first rows in hash order forming a group and leaving the list.
The rest (``0 .. 2k - 1`` rows; all of them when ``n < 2k``) is the last group.

Missing values (sdcMicro reads ``NA`` as -999 and gives a missing cell a distance of
``w_j (max_j - min_j)^2``) are not taken: privlab refuses non-finite values, and refuses
-999 here since sdcMicro would read it as missing.  Distances too large for float (sdcMicro
overflows its hash index past about 5e33) are refused too.

The cost is the naive loop's, ``~ 3 n^2 / (4k)`` distances and a pass over the 65,536
buckets per group: on Adult's 30,162 x 5 numeric values 4.2 s at k = 2, 0.8 s at k = 10,
0.16 s at k = 50, against sdcMicro's 8.3, 1.2 and 0.34 s on the same machine (the exact
mode's k-d tree: 0.37, 0.12 and 0.08 s).  On those data it writes sdcMicro's values to the
bit at k = 2, 3, 5, 10, 20 and 50, where the exact mode gives other values to 1,101 to
17,836 of the rows (``tests/test_mdav_sdcmicro.py`` checks 3,000 rows against sdcMicro).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from privlab.errors import ParameterError
from privlab.publish._micro_checks import _k, _matrix

#: ``es_NbHashBitXX`` and ``es_NbHashListXX`` of sdcMicro's ``Mdav.h``
HASH_BITS = 16
HASH_LISTS = 1 << HASH_BITS
#: sdcMicro's missing-value code (``mdav(missing = -999)``), refused as a value here
MISSING = -999.0
#: the largest weighted squared spread accepted: ``65536 * distance`` must stay finite in
#: float (sdcMicro's hash index, ``(int)(65536 * (Dist - MinD) / DeltaD)``)
MAX_SPREAD = 1e33
COMPAT = ("exact", "sdcmicro")


@njit(cache=True)
def sdcmicro_weights(x: np.ndarray, scale: bool) -> np.ndarray:
    """``Mdav.cpp``'s column weights: ``1 / (mean(x^2) - mean(x)^2)``, 1 where that is 0
    (or everywhere when ``scale`` is False)."""
    n, p = x.shape
    w = np.ones(p)
    if not scale:
        return w
    for c in range(p):
        avr = 0.0
        squared = 0.0
        for j in range(n):
            v = x[j, c]
            avr += v
            squared += v * v
        avr /= n
        squared /= n
        variance = squared - avr * avr
        if variance != 0.0:
            w[c] = 1.0 / variance
    return w


@njit(cache=True, inline="always")
def _dist_to_row(x: np.ndarray, i: int, r: int, w: np.ndarray) -> np.float32:
    """``Dist()`` of ``Mdav.h``: float sum of the float-rounded weighted squares."""
    d = np.float32(0.0)
    for j in range(x.shape[1]):
        diff = x[i, j] - x[r, j]
        d = np.float32(d + np.float32(diff * diff * w[j]))
    return d


@njit(cache=True, inline="always")
def _dist_to_centre(x: np.ndarray, i: int, centre: np.ndarray, w: np.ndarray) -> np.float32:
    """``DistXX()`` of ``Mdav.h``: the same sum against the average record."""
    d = np.float32(0.0)
    for j in range(x.shape[1]):
        diff = x[i, j] - centre[j]
        d = np.float32(d + np.float32(diff * diff * w[j]))
    return d


@njit(cache=True)
def mdav_sdcmicro_kernel(x: np.ndarray, k: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Mdav.cpp``'s loop on ``x`` (raw values) with column weights ``w``: ``(groups,
    values)``, the int64 group labels in the order formed and the ``(n, p)`` values sdcMicro
    writes (each group's mean, summed in its own order)."""
    n, p = x.shape
    nxt = np.empty(n, np.int64)  # pNextIndex / pPrevIndex: the rows not yet grouped
    prv = np.empty(n, np.int64)
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
    nxt[n - 1] = -1
    first = 0
    in_hash = np.empty(n, np.int64)  # pNextInHash
    heads = np.empty(HASH_LISTS, np.int64)  # HashList
    dist = np.zeros(n, np.float32)  # pDist
    centre = np.empty(p)  # pCenter
    members = np.empty(k, np.int64)
    groups = np.full(n, -1, np.int64)
    values = np.empty((n, p))
    spread = np.float64(HASH_LISTS + 1.0) / HASH_LISTS
    left = n
    label = 0
    while left - k >= k:
        ngroups = 1 if left - 2 * k < k else 2
        # the average record: double sums in row order over the live rows
        centre[:] = 0.0
        count = 0
        i = first
        while i >= 0:
            for j in range(p):
                centre[j] += x[i, j]
            count += 1
            i = nxt[i]
        for j in range(p):
            centre[j] /= count
        # the farthest row from it: strict > in row order
        current = first
        i = first
        while i >= 0:
            dist[i] = _dist_to_centre(x, i, centre, w)
            if dist[i] > dist[current]:
                current = i
            i = nxt[i]
        for _ in range(ngroups):
            farthest = first
            closest = first
            i = first
            while i >= 0:
                dist[i] = _dist_to_row(x, i, current, w)
                if dist[i] > dist[farthest]:
                    farthest = i
                elif dist[i] < dist[closest]:
                    closest = i
                i = nxt[i]
            current = farthest
            # hash sort from closest to farthest, all in float
            low = dist[closest]
            delta = np.float32(dist[farthest] - low)
            if delta == 0:
                delta = np.float32(delta + np.float32(1.0))
            delta = np.float32(np.float64(delta) * spread)
            heads[:] = -1
            i = first
            while i >= 0:
                d = dist[i]
                h = np.float32(np.float32(np.float32(HASH_LISTS) * np.float32(d - low)) / delta)
                b = int(h)
                if b < 0:  # never for finite distances (C's cast is undefined there)
                    b = 0
                elif b >= HASH_LISTS:
                    b = HASH_LISTS - 1
                index = heads[b]
                if index >= 0 and dist[index] < d:
                    while in_hash[index] >= 0 and dist[in_hash[index]] < d:
                        index = in_hash[index]
                    in_hash[i] = in_hash[index]
                    in_hash[index] = i
                else:
                    in_hash[i] = index
                    heads[b] = i
                i = nxt[i]
            # the k first rows in hash order
            m = 0
            b = 0
            while m < k:
                index = heads[b]
                while index >= 0 and m < k:
                    members[m] = index
                    m += 1
                    index = in_hash[index]
                b += 1
            centre[:] = 0.0
            for m in range(k):
                for j in range(p):
                    centre[j] += x[members[m], j]
            for j in range(p):
                centre[j] /= k
            for m in range(k):
                index = members[m]
                values[index, :] = centre
                groups[index] = label
                if first == index:
                    first = nxt[index]
                if prv[index] >= 0:
                    nxt[prv[index]] = nxt[index]
                if nxt[index] >= 0:
                    prv[nxt[index]] = prv[index]
            label += 1
        left -= k * ngroups
    if left:
        centre[:] = 0.0
        i = first
        while i >= 0:
            for j in range(p):
                centre[j] += x[i, j]
            i = nxt[i]
        for j in range(p):
            centre[j] /= left
        i = first
        while i >= 0:
            values[i, :] = centre
            groups[i] = label
            i = nxt[i]
    return groups, values


def sdcmicro_mdav(
    x: Any, k: int, *, standardize: bool = True, weights: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """sdcMicro's MDAV (``Mdav.cpp``, see the module docstring): ``(groups, values)``, the
    ``(n,)`` int64 labels in the order the groups were formed and the ``(n, p)`` values
    sdcMicro publishes (``microaggregation(method = "mdav")$mx`` for two columns or more;
    one column there goes to ``mafast`` instead, while ``mdav()`` runs this loop).

    ``standardize=False`` weights every column 1 (what sdcMicro does to a column of
    variance 0); sdcMicro has no such switch.  Sampling ``weights`` are refused: sdcMicro's
    MDAV takes none.  A constant column is accepted (weight 1, as in sdcMicro).
    """
    a = np.ascontiguousarray(_matrix(x))
    k = _k(k, a.shape[0])
    if not isinstance(standardize, (bool, np.bool_)):
        raise ParameterError(f"standardize must be True or False, got {standardize!r}")
    if weights is not None:
        raise ParameterError(
            'compat="sdcmicro" takes no sampling weights (sdcMicro\'s MDAV has none)'
        )
    missing = a == MISSING
    if missing.any():
        i, j = np.argwhere(missing)[0]
        raise ParameterError(
            f'compat="sdcmicro" cannot take the value -999 (row {i}, column {j}): sdcMicro '
            "reads it as a missing value"
        )
    w = sdcmicro_weights(a, bool(standardize))
    spread = float(np.sum((a.max(0) - a.min(0)) ** 2 * np.abs(w)))
    if not spread < MAX_SPREAD:
        raise ParameterError(
            f"the distances reach {spread:.3g}, past what sdcMicro's single-precision hash "
            f"sort can order ({MAX_SPREAD:g}): rescale the columns"
        )
    return mdav_sdcmicro_kernel(a, k, w)


def sdcmicro_groups(
    x: Any, k: int, *, standardize: bool = True, weights: Any = None, compat: str = "sdcmicro"
) -> np.ndarray:
    """The groups of :func:`sdcmicro_mdav` (``mdav(..., compat=...)`` dispatches here for
    any ``compat`` but ``"exact"``; only ``"sdcmicro"`` is known)."""
    if compat != "sdcmicro":
        raise ParameterError(f"compat must be one of {', '.join(COMPAT)}, got {compat!r}")
    return sdcmicro_mdav(x, k, standardize=standardize, weights=weights)[0]
