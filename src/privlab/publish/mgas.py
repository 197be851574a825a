"""MGAS, the modified agglomerative scheme (Ma 2006, Sec. 2.3): general and 1-D versions.

MGAS discretizes a numerical variable before PRAM under two constraints: every category holds
at least ``K`` records and spans at least ``g`` (its granularity, ``max - min`` of its members).
Clusters start as single values and the closest pair is merged repeatedly; a cluster that
meets both constraints is *finished* and stops merging (Ma's step (c)).

Choices the thesis leaves open (notes Sec. 2.3), made here:

* linkage: distance between cluster means (centroid linkage);
* 1-D efficiency: values are sorted and only *adjacent* clusters merge (a heap of adjacent
  pairs, ``O(N log N)``); a finished cluster separates its neighbours, so every category is
  an interval (the literal algorithm lets unfinished clusters merge across a finished one,
  which yields non-contiguous "intervals");
* leftovers: an unfinished cluster with no unfinished neighbour joins the adjacent finished
  cluster with the nearest mean (if no cluster ever finishes, everything is one category).

Post-processing (Ma Sec. 2.3): replace each value by its group label (summary models) or its
group mean (numeric models): :attr:`MGASResult.labels` / :meth:`MGASResult.means_of`.

:func:`mgas` is the general (multivariate) version, Ma's algorithm read literally: any two
unfinished clusters may merge (closest centroids, Euclidean), and a cluster's granularity is
its diameter (largest distance between two members; ``max - min`` in one dimension).  It
keeps a distance matrix of the distinct points, so it is quadratic in their number (at most
:data:`MGAS_MAX_POINTS`); use :func:`mgas_1d` for one long numerical column.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.errors import ParameterError


class _Groups:
    """What both MGAS results share: records' group labels, group means and counts."""

    labels: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    min_records: int
    granularity: float

    @property
    def n_groups(self) -> int:
        return int(self.counts.size)

    def means_of(self, labels: np.ndarray | None = None) -> np.ndarray:
        """Each record's group mean (Ma's post-processing (a))."""
        return self.means[self.labels if labels is None else np.asarray(labels)]

    def _summary(self) -> dict[str, Any]:
        return {
            "n_groups": self.n_groups,
            "min_records": self.min_records,
            "granularity": self.granularity,
        }


@dataclass(frozen=True)
class MGASResult(_Groups):
    """Groups found by MGAS, ordered by value.

    ``labels[i]`` is record ``i``'s group; ``lo``/``hi`` the smallest and largest member of
    each group; ``means`` and ``counts`` per group; ``edges`` interval boundaries (midpoints
    between neighbouring groups, the data's min and max at the ends) for histogram densities.
    """

    labels: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    min_records: int
    granularity: float

    @property
    def edges(self) -> np.ndarray:
        inner = (self.hi[:-1] + self.lo[1:]) / 2
        return np.concatenate([[self.lo[0]], inner, [self.hi[-1]]])

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._summary(),
            "groups": [
                {"lo": float(a), "hi": float(b), "mean": float(m), "count": int(c)}
                for a, b, m, c in zip(self.lo, self.hi, self.means, self.counts, strict=True)
            ],
        }


def mgas_1d(values: Any, *, min_records: int, granularity: float) -> MGASResult:
    """Discretize ``values`` into intervals of >= ``min_records`` values, width >= ``granularity``.

    Raises :class:`ParameterError` for an empty input, non-finite values, ``min_records < 1``
    or a negative granularity.
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ParameterError("MGAS needs at least one value")
    if not np.all(np.isfinite(x)):
        raise ParameterError("MGAS values must be finite")
    k = int(min_records)
    g = float(granularity)
    if k < 1:
        raise ParameterError(f"min_records = {min_records} must be at least 1")
    if not g >= 0:
        raise ParameterError(f"granularity = {granularity} must be >= 0")
    uniq, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
    m = uniq.size
    count = cnt.astype(np.int64).tolist()
    total = (uniq * cnt).tolist()
    lo = uniq.tolist()
    hi = uniq.tolist()
    left = list(range(-1, m - 1))
    right = [*range(1, m), -1]
    active = [True] * m
    finished = [False] * m
    version = [0] * m
    parent = list(range(m))  # union-find to map each distinct value to its final cluster

    def done(i: int) -> bool:
        return count[i] >= k and hi[i] - lo[i] >= g

    def finish(i: int) -> None:
        finished[i] = True
        active[i] = False
        for nb, side in ((left[i], right), (right[i], left)):
            if nb >= 0 and active[nb]:
                side[nb] = -1  # a finished cluster separates its neighbours

    heap: list[tuple[float, int, int, int, int]] = []

    def push(a: int, b: int) -> None:
        d = abs(total[b] / count[b] - total[a] / count[a])
        heapq.heappush(heap, (d, a, b, version[a], version[b]))

    for i in range(m):
        if done(i):
            finish(i)
    for i in range(m - 1):
        if active[i] and active[i + 1] and right[i] == i + 1:
            push(i, i + 1)
    while heap:
        _, a, b, va, vb = heapq.heappop(heap)
        if not (active[a] and active[b]) or version[a] != va or version[b] != vb:
            continue
        if right[a] != b:
            continue
        # merge b into a
        count[a] += count[b]
        total[a] += total[b]
        hi[a] = hi[b]
        active[b] = False
        parent[b] = a
        version[a] += 1
        right[a] = right[b]
        if right[a] >= 0:
            left[right[a]] = a
        if done(a):
            finish(a)
            continue
        if left[a] >= 0 and active[left[a]]:
            push(left[a], a)
        if right[a] >= 0 and active[right[a]]:
            push(a, right[a])

    # Leftovers: join the adjacent finished cluster with the nearest mean.
    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    roots = [i for i in range(m) if parent[i] == i]
    fin = [i for i in roots if finished[i]]
    if not fin:
        for i in roots[1:]:
            parent[i] = roots[0]
    else:
        fin_lo = np.array([lo[i] for i in fin])
        for i in roots:
            if finished[i]:
                continue
            mean = total[i] / count[i]
            pos = int(np.searchsorted(fin_lo, lo[i]))
            cands = [fin[j] for j in (pos - 1, pos) if 0 <= j < len(fin)]
            best = min(cands, key=lambda c: abs(total[c] / count[c] - mean))
            parent[i] = best
    root_of = np.array([find(i) for i in range(m)])
    _, group_of_value = np.unique(root_of, return_inverse=True)  # roots ordered by value index
    labels = group_of_value[inv]
    n_groups = int(group_of_value.max()) + 1
    counts = np.bincount(labels, minlength=n_groups)
    sums = np.bincount(labels, weights=x, minlength=n_groups)
    lo_arr = np.full(n_groups, np.inf)
    hi_arr = np.full(n_groups, -np.inf)
    np.minimum.at(lo_arr, labels, x)
    np.maximum.at(hi_arr, labels, x)
    order = np.argsort(lo_arr, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(n_groups)
    return MGASResult(
        labels=rank[labels].astype(np.int64),
        means=(sums / counts)[order],
        counts=counts[order],
        lo=lo_arr[order],
        hi=hi_arr[order],
        min_records=k,
        granularity=g,
    )


#: Distinct points the general :func:`mgas` accepts (its distance matrix is quadratic).
MGAS_MAX_POINTS = 6000


@dataclass(frozen=True)
class MGASClusters(_Groups):
    """Groups found by the general :func:`mgas`, ordered by their means (lexicographically).

    ``labels[i]`` is record ``i``'s group; ``means`` ``(groups, d)``; ``counts`` and
    ``diameters`` (largest distance between two members) per group.
    """

    labels: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    diameters: np.ndarray
    min_records: int
    granularity: float

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._summary(),
            "groups": [
                {"mean": [float(v) for v in m], "count": int(c), "diameter": float(dm)}
                for m, c, dm in zip(self.means, self.counts, self.diameters, strict=True)
            ],
        }


def mgas(points: Any, *, min_records: int, granularity: float) -> MGASClusters:
    """MGAS on ``points`` (``(n, d)``, or ``(n,)`` for one variable), Ma Sec. 2.3 steps (a)-(d).

    (a) every distinct point is a cluster; (b) merge the two unfinished clusters whose
    centroids are closest; (c) a cluster with at least ``min_records`` records and diameter
    at least ``granularity`` is finished and merges no more; (d) repeat until no two
    unfinished clusters are left.  A last unfinished cluster joins the finished cluster with
    the nearest centroid (all points form one group if none ever finished).  Ties in the
    closest pair go to the lowest cluster indices (distinct points in lexicographic order).
    As in the thesis, finished clusters drop out, so the last unfinished clusters of two
    distant regions can merge with each other (:func:`mgas_1d` merges neighbours only).

    Raises :class:`ParameterError` for an empty input, non-finite values, ``min_records < 1``,
    a negative granularity or more than :data:`MGAS_MAX_POINTS` distinct points.
    """
    X = np.asarray(points, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ParameterError(f"MGAS needs an (n, d) array of points, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ParameterError("MGAS values must be finite")
    k, g = int(min_records), float(granularity)
    if k < 1:
        raise ParameterError(f"min_records = {min_records} must be at least 1")
    if not g >= 0:
        raise ParameterError(f"granularity = {granularity} must be >= 0")
    uniq, inv, cnt = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    m = uniq.shape[0]
    if m > MGAS_MAX_POINTS:
        raise ParameterError(
            f"{m} distinct points: the general MGAS is quadratic and takes at most "
            f"{MGAS_MAX_POINTS}; use mgas_1d for a single variable"
        )
    sq = (uniq**2).sum(axis=1)
    pdist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * uniq @ uniq.T, 0.0))
    members: list[np.ndarray] = [np.array([i]) for i in range(m)]
    count = cnt.astype(np.int64)
    centroid = uniq.copy()
    diameter = np.zeros(m)
    active = np.ones(m, dtype=bool)  # unfinished clusters still merging
    finished = np.zeros(m, dtype=bool)  # a slot holds a cluster while active | finished
    for i in range(m):
        if count[i] >= k and diameter[i] >= g:
            finished[i], active[i] = True, False
    cdist = pdist.copy()  # centroid distances between clusters (slots)
    np.fill_diagonal(cdist, np.inf)
    cdist[~active, :] = np.inf
    cdist[:, ~active] = np.inf
    nn = np.argmin(cdist, axis=1)
    nnd = cdist[np.arange(m), nn]
    while active.sum() >= 2:
        a = int(np.argmin(np.where(active, nnd, np.inf)))
        b = int(nn[a])
        a, b = min(a, b), max(a, b)
        # merge b into a
        diameter[a] = max(
            diameter[a], diameter[b], float(pdist[np.ix_(members[a], members[b])].max())
        )
        centroid[a] = (count[a] * centroid[a] + count[b] * centroid[b]) / (count[a] + count[b])
        count[a] += count[b]
        members[a] = np.concatenate([members[a], members[b]])
        members[b] = np.empty(0, dtype=np.int64)
        active[b] = False
        cdist[b, :] = cdist[:, b] = np.inf
        if count[a] >= k and diameter[a] >= g:
            finished[a], active[a] = True, False
            cdist[a, :] = cdist[:, a] = np.inf
        else:
            d = np.sqrt(((centroid - centroid[a]) ** 2).sum(axis=1))
            d[~active] = np.inf
            d[a] = np.inf
            cdist[a, :] = cdist[:, a] = d
        stale = np.flatnonzero(active & ((nn == a) | (nn == b)))
        for i in stale:
            nn[i] = int(np.argmin(cdist[i]))
            nnd[i] = cdist[i, nn[i]]
        if active[a]:
            nn[a] = int(np.argmin(cdist[a]))
            nnd[a] = cdist[a, nn[a]]
            closer = active & (cdist[:, a] < nnd)
            nn[closer], nnd[closer] = a, cdist[closer, a]
    slot = np.empty(m, dtype=np.int64)  # distinct point -> final slot
    fin = np.flatnonzero(finished)
    for i in np.flatnonzero(active | finished):
        slot[members[i]] = i
    for i in np.flatnonzero(active):  # at most one leftover
        if fin.size:
            j = int(fin[np.argmin(((centroid[fin] - centroid[i]) ** 2).sum(axis=1))])
        else:
            j = int(np.flatnonzero(active)[0])
        slot[members[i]] = j
    _, group = np.unique(slot, return_inverse=True)
    labels = group[inv]
    n_groups = int(group.max()) + 1
    counts = np.bincount(labels, minlength=n_groups)
    means = (
        np.stack(
            [np.bincount(labels, weights=X[:, c], minlength=n_groups) for c in range(X.shape[1])],
            axis=1,
        )
        / counts[:, None]
    )
    diam = np.zeros(n_groups)
    for q in range(n_groups):
        pts = np.flatnonzero(group == q)
        diam[q] = float(pdist[np.ix_(pts, pts)].max())
    order = np.lexsort(means.T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(n_groups)
    return MGASClusters(
        labels=rank[labels].astype(np.int64),
        means=means[order],
        counts=counts[order],
        diameters=diam[order],
        min_records=k,
        granularity=g,
    )
