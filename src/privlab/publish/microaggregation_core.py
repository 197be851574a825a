"""Microaggregation's core (issue 35): the groups, the aggregation and the information loss,
as pure functions below any release.

Microaggregation partitions the records into groups of at least ``k`` and publishes each
record's quasi-identifiers as its group's representative, so that every published
combination is shared by ``k`` records or more (k-anonymity through microaggregation,
Domingo-Ferrer & Torra 2005).  Its cost is the within-group sum of squares,

    SSE = sum_g sum_{i in g} ||x_i - xbar_g||^2,    SST = sum_i ||x_i - xbar||^2,

and the information loss ``IL = SSE / SST`` (Domingo-Ferrer & Mateo-Sanz 2002, "Practical
data-oriented microaggregation for statistical disclosure control", IEEE TKDE 14(1), Sec. 2,
where it is written ``L = SSE / SST``), on the data as grouped (z-scores by default).

* :func:`mdav`: Maximum Distance to Average Vector, the fixed-size heuristic (Domingo-Ferrer
  & Torra 2005, "Ordinal, continuous and heterogeneous k-anonymity through
  microaggregation", DMKD 11(2), Algorithm MDAV-generic), as sdcMicro's
  ``microaggregation(method = "mdav")`` runs it (``src/Mdav.cpp``);
* :func:`refine` (and ``mdav(..., refine=True)``): a partition improved by local search
  (records moved, swapped and cycled between neighbouring groups, groups dissolved, merged
  and cut), never raising the SSE; plain MDAV stays the default;
* :func:`univariate_optimal`: the exact optimum of one variable (Hansen & Mukherjee 2003,
  "A polynomial algorithm for optimal univariate microaggregation", IEEE TKDE 15(4));
* :func:`mdav_categorical` / :func:`medoids` / :func:`medoid_microaggregation`: MDAV on
  categorical codes with the Hamming distance, each group published as its medoid (Torra
  2004, "Microaggregation for categorical variables: a median based approach", PSD 2004,
  LNCS 3050);
* :func:`aggregate`: each record replaced by its group's (weighted) mean;
* :func:`microaggregate` / :class:`Microaggregation`: the groups with their SSE, SST, IL.

**MDAV as followed here** (Domingo-Ferrer & Torra 2005, MDAV-generic; sdcMicro's C++):

1. while at least ``3k`` records remain: compute the average record ``c`` of the remaining
   ones; ``x_r`` = the record farthest from ``c``; ``x_s`` = the record farthest from
   ``x_r``; form ``x_r``'s group (the ``k`` remaining records closest to ``x_r``, itself
   included) and remove it, then ``x_s``'s group from what is left, and remove it;
2. if ``2k .. 3k - 1`` remain: ``c``, ``x_r`` as above, ``x_r``'s group of ``k``; the
   rest (``k .. 2k - 1``) form the last group;
3. if fewer than ``2k`` remain (``k .. 2k - 1``, or the whole table when ``n < 2k``):
   one last group.

So every group has exactly ``k`` records except the last, of ``k .. 2k - 1``.  The paper
leaves three things loose, which sdcMicro settles and privlab follows:

* *which distance*: squared Euclidean on the variables divided by their standard
  deviations (sdcMicro weights each squared difference by ``1 / Var``: the same thing as
  z-scores; :func:`mdav` standardizes by default, ``standardize=False`` groups the values
  as given).  sdcMicro gives a constant column the weight 1 (it then adds nothing to any
  distance); privlab refuses it under ``standardize=True`` (a constant quasi-identifier is
  almost always a mistake in the column list), and accepts it with ``standardize=False``;
* *whether x_s's group may take records of x_r's*: no: ``x_s`` is chosen among all the
  remaining records, its group from those left once ``x_r``'s group is removed;
* *ties*: the farthest record is the first row among equals (sdcMicro's strict ``>`` over
  the rows in order); among records at equal distance from ``x_r`` (or ``x_s``) the later
  row joins the group first (sdcMicro's hash sort files an equal distance before those
  already filed).

Where privlab differs from sdcMicro: sdcMicro computes distances in single precision
(``typedef float TDist``; privlab uses double), so two distances that differ only past
float's 24 bits tie there and not here; sdcMicro's ``mdav(weights = )`` takes one weight
per *variable* and ignores it (``Mdav.cpp`` resets every weight to 1 before dividing by the
variance), and ``microaggregation(method = "mdav")`` passes no sampling weights at all; a
single variable is not run through MDAV by ``microaggregation()`` but sorted and cut into
runs of ``aggr`` (``mafast``).  privlab's ``weights`` are sampling weights: the average
record of step 1 becomes their weighted mean (an estimate of the population's centre), the
z-scores use the weighted mean and variance, and :func:`aggregate` publishes weighted
means; with ``weights=None`` the grouping is the paper's and sdcMicro's.

``mdav(..., compat="sdcmicro")`` runs sdcMicro's own arithmetic instead (single-precision
distances weighted by ``1 / Var``, its hash sort: :mod:`privlab.publish._mdav_sdcmicro`),
whose groups part from the exact ones on integer data with many duplicates (Adult).

The naive MDAV makes three passes over the remaining records for every two groups, ``~ 3
n^2 / (4k)`` distances in all.  Here (:mod:`privlab.publish._microaggregation_kernel`) the
record farthest from the average is found in a list of the remaining records sorted by
distance from a recent average (the triangle inequality stops the scan; the list is
sorted afresh once the scans since the last sort have cost a pass), and the farthest from
``x_r`` and the ``k`` closest in a k-d tree whose boxes shrink as records leave.  Every
query is exact (a record is passed over only when a bound proves it cannot win), so the
groups are the naive loop's, tie rules included (``tests/test_microaggregation.py``
checks them against a transliteration of sdcMicro's loop).  The average record comes
from running sums kept as double-doubles (TwoSum), not from a fresh pass: exact for data
whose sums are exact in double (integers), within a few units of 2^-106 relative
otherwise, against the drift of plain running sums over a million removals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab._params import check_int
from privlab.errors import ParameterError
from privlab.publish._micro_checks import _k, _matrix

METHODS = ("mdav", "univariate_optimal")


def _weights(weights: Any, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("weights must be numbers") from None
    if w.ndim != 1 or w.size != n:
        raise ParameterError(f"weights must be one number per record ({n}), got shape {w.shape}")
    bad = ~(np.isfinite(w) & (w > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ParameterError(f"weights must be finite and > 0, got {w[i]} for record {i}")
    return w


def _scaled(x: np.ndarray, standardize: bool, w: np.ndarray | None) -> np.ndarray:
    """z-scores per column (weighted mean and variance with weights), or ``x`` itself."""
    if not isinstance(standardize, (bool, np.bool_)):
        raise ParameterError(f"standardize must be True or False, got {standardize!r}")
    if not standardize:
        return x
    mean = np.average(x, axis=0, weights=w)
    z = x - mean
    sd = np.sqrt(np.average(z * z, axis=0, weights=w))
    flat = np.flatnonzero((x.max(0) == x.min(0)) | ~(sd > 0))
    if flat.size:
        raise ParameterError(
            f"column {int(flat[0])} is constant: it cannot be standardized (drop it, or "
            "pass standardize=False)"
        )
    return z / sd


def _labels(groups: Any, n: int) -> np.ndarray:
    g = np.asarray(groups)
    if g.ndim != 1 or g.size != n:
        raise ParameterError(f"groups must be one label per record ({n}), got shape {g.shape}")
    if g.size and not np.issubdtype(g.dtype, np.integer):
        raise ParameterError(f"groups must be integer labels, got {g.dtype}")
    if g.size and g.min() < 0:
        raise ParameterError(f"groups must be labels >= 0, got {int(g.min())}")
    return g.astype(np.int64, copy=False)


def mdav(
    x: Any,
    k: int,
    *,
    standardize: bool = True,
    weights: Any = None,
    refine: bool = False,
    compat: str = "exact",
) -> np.ndarray:
    """MDAV's groups (Domingo-Ferrer & Torra 2005, MDAV-generic, as sdcMicro runs it; see
    the module docstring for the steps, the tie rules and where sdcMicro differs).

    Parameters
    ----------
    x
        ``(n, p)`` finite numbers (a 1-d array is one column).
    k
        The least group size, ``1 <= k <= n``.
    standardize
        Group the z-scores of the columns (default, as sdcMicro does); ``False`` groups the
        values as given.  A constant column is refused when standardizing.
    weights
        Sampling weights (``n`` finite numbers > 0), or None.  They make the "average
        record" a weighted mean and the z-scores weighted; group sizes still count records.
    refine
        ``False`` (default): MDAV's groups, sdcMicro's.  ``True``: MDAV's groups improved
        by :func:`refine`'s local search (lower SSE, at the search's time).
    compat
        ``"exact"`` (default): distances in double on the z-scores.  ``"sdcmicro"``:
        sdcMicro's own arithmetic, to the bit (``Mdav.cpp``: single-precision distances
        weighted by ``1 / Var``, its hash sort; :mod:`privlab.publish._mdav_sdcmicro`),
        whose groups differ from the exact ones where float rounding makes or breaks a
        tie; no sampling weights, and a constant column is accepted there.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 group labels ``0 .. G - 1``: without ``refine``, in the order the
        groups were formed, every group of ``k`` records except the last, of ``k .. 2k -
        1``; with it, every group of ``k`` or more (rarely more than ``2k - 1``).
    """
    if compat != "exact":
        if refine:
            raise ParameterError(
                "refine changes MDAV's groups: it cannot give sdcMicro's (compat='sdcmicro')"
            )
        from privlab.publish._mdav_sdcmicro import sdcmicro_groups

        return sdcmicro_groups(x, k, standardize=standardize, weights=weights, compat=compat)
    a = _matrix(x)
    n = a.shape[0]
    k = _k(k, n)
    w = _weights(weights, n)
    z = np.ascontiguousarray(_scaled(a, standardize, w))
    if not isinstance(refine, (bool, np.bool_)):
        raise ParameterError(f"refine must be True or False, got {refine!r}")
    from privlab.publish._microaggregation_kernel import mdav_groups

    ww = np.ones(n) if w is None else w
    groups = mdav_groups(z, ww, k)
    return _refine(z, ww, groups, k, MAX_ROUNDS) if refine else groups


def univariate_optimal(x: Any, k: int) -> np.ndarray:
    """The groups of least SSE of one variable (Hansen & Mukherjee 2003).

    In one dimension some optimal partition groups only neighbours in the sorted order
    (Hansen & Mukherjee, Sec. 2) and no group of an optimal partition need hold ``2k``
    records or more (Domingo-Ferrer & Mateo-Sanz 2002: such a group splits into two of
    ``>= k`` without raising the SSE), so the optimum is a shortest path over the sorted
    values whose arcs are runs of ``k .. 2k - 1`` weighted by their SSE: a dynamic
    programme in O(n k) after an O(n log n) sort.  Hansen & Mukherjee build the graph of
    all arcs ``i -> j`` with ``j - i`` in ``k .. 2k - 1`` and run a shortest-path
    algorithm; the programme here is that search on the acyclic graph, taken in order.
    Each run's SSE is accumulated by Welford's update rather than from prefix sums of
    squares (which lose every digit when the values are large next to their gaps).  Among
    equally good partitions the one found first wins (the earliest start of the last run
    that attains the least cost, working back from the largest values).

    Parameters
    ----------
    x
        ``(n,)`` finite numbers (or ``(n, 1)``).
    k
        The least group size, ``1 <= k <= n``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 group labels numbered from the smallest values; equal values keep
        their row order (a stable sort) and may fall in neighbouring groups.
    """
    a = _matrix(x)
    if a.shape[1] != 1:
        raise ParameterError(f"univariate_optimal takes one column, got {a.shape[1]}")
    v = a[:, 0]
    k = _k(k, v.size)
    from privlab.publish._microaggregation_kernel import optimal_univariate_groups

    order = np.argsort(v, kind="stable")
    runs = optimal_univariate_groups(np.ascontiguousarray(v[order]), k)
    groups = np.empty(v.size, np.int64)
    groups[order] = runs
    return groups


#: How many of the nearest group means :func:`refine` tries for each record (and each
#: group): with this many groups or fewer besides a record's own, it tries them all.
NEIGHBOURS = 8
#: :func:`refine`'s default most rounds (the searches measured end in far fewer).
MAX_ROUNDS = 200


def _within(z: np.ndarray, w: np.ndarray, lab: np.ndarray, groups: int) -> tuple[float, ...]:
    """The weighted within-group SSE of the labels ``0 .. groups - 1`` (some maybe
    without records), the group means (zero where empty) and the group sizes."""
    size = np.bincount(lab, minlength=groups)
    mass = np.bincount(lab, weights=w, minlength=groups)
    means = np.zeros((groups, z.shape[1]))
    live = size > 0
    for d in range(z.shape[1]):
        means[live, d] = np.bincount(lab, weights=w * z[:, d], minlength=groups)[live] / mass[live]
    gap = z - means[lab]
    return float(np.einsum("i,ij,ij->", w, gap, gap)), means, size


class _Candidates:
    """The groups :func:`refine` tries: for each group (by label), the ``2 * NEIGHBOURS``
    nearest group means but its own (its *pool*; a k-d tree over the means), the first
    :data:`NEIGHBOURS` of them to merge with; for each record, the :data:`NEIGHBOURS`
    nearest to it in its group's pool.  With ``NEIGHBOURS + 1`` groups or fewer, every
    other group.  Recomputed for every group in a round that tries everything, and in the
    others only for the groups changed in the round before (a shortcut: the round that
    ends the search has them all afresh)."""

    def __init__(self, n: int) -> None:
        self.pool = np.empty((0, 0), np.int64)
        self.rcand = np.empty((n, 0), np.int64)

    def update(
        self,
        z: np.ndarray,
        lab: np.ndarray,
        means: np.ndarray,
        size: np.ndarray,
        active: np.ndarray,
        everything: bool,
    ) -> tuple[np.ndarray, ...]:
        """The candidates for a round, and which of them changed since the last."""
        from scipy.spatial import cKDTree

        from privlab.publish._microaggregation_kernel import nearest_groups

        groups = size.size
        live = np.flatnonzero(size > 0)
        width = min(2 * NEIGHBOURS, live.size - 1)
        near = min(NEIGHBOURS, width)
        old_pool, old_rcand = self.pool, self.rcand
        self.pool = np.full((groups, width), -1, np.int64)
        if everything or width != old_pool.shape[1] or width < 2 * NEIGHBOURS:
            redo = live
            self.rcand = np.full((lab.size, near), -1, np.int64)
        else:
            self.pool[: old_pool.shape[0]] = old_pool
            self.rcand = old_rcand.copy()
            stale = np.ones(groups, np.bool_)  # new labels have no pool yet
            stale[: old_pool.shape[0]] = active[: old_pool.shape[0]]
            redo = live[stale[live]]
        if width >= 1 and redo.size:
            _, idx = cKDTree(means[live]).query(means[redo], width + 1)
            idx = live[idx]
            own = idx == redo[:, None]
            idx = np.take_along_axis(idx, np.argsort(own, axis=1, kind="stable"), 1)
            self.pool[redo] = idx[:, :width]
            mark = np.zeros(groups, np.bool_)
            mark[redo] = True
            nearest_groups(z, np.flatnonzero(mark[lab]), lab, means, self.pool, self.rcand)
        gcand = np.ascontiguousarray(self.pool[:, :near])
        if self.rcand.shape != old_rcand.shape or old_pool.shape[1] != width:
            return self.rcand, gcand, np.ones(lab.size, np.bool_), np.ones(groups, np.bool_)
        fresh_r = (self.rcand != old_rcand).any(1)
        fresh_g = np.ones(groups, np.bool_)
        rows = min(groups, old_pool.shape[0])
        fresh_g[:rows] = (gcand[:rows] != old_pool[:rows, :near]).any(1)
        return self.rcand, gcand, fresh_r, fresh_g


def _refine(z: np.ndarray, w: np.ndarray, lab: np.ndarray, k: int, rounds: int) -> np.ndarray:
    """Rounds of :func:`privlab.publish._microaggregation_kernel.refine_round` until one
    with every candidate list afresh changes nothing.  The first round tries everything;
    each next one only what concerns a group changed in the round before or a candidate
    list that changed (anything else was tried on the same groups before, to no gain: the
    search is deterministic and its tolerance fixed, ``1e-12`` of the SST), with
    the lists of the changed groups recomputed, and after a round that changes nothing,
    all of them.  Every change lowers the SSE by more than the tolerance, so the rounds end
    even without ``rounds``."""
    from privlab.publish._microaggregation_kernel import refine_round, tree_order

    # groups numbered, and records ordered by group, in the order of a k-d tree over the
    # group means: near groups and their records lie near in memory (step 1 of a round
    # ran three times faster so than on MDAV's order)
    lab = np.unique(lab, return_inverse=True)[1].astype(np.int64)
    rank = np.empty(int(lab.max()) + 1, np.int64)
    rank[tree_order(_within(z, w, lab, rank.size)[1])] = np.arange(rank.size)
    lab = rank[lab]
    order = np.argsort(lab, kind="stable")
    z, w, lab = np.ascontiguousarray(z[order]), w[order], lab[order]
    active = np.ones(rank.size, np.bool_)  # the first round tries everything
    cand = _Candidates(lab.size)
    gap = z - np.average(z, axis=0, weights=w)
    tol = 1e-12 * float(np.einsum("i,ij,ij->", w, gap, gap))  # of SST: IL falls by > 1e-12
    full = True
    for _ in range(rounds):
        sse, means, size = _within(z, w, lab, active.size)
        if not sse > tol:
            break
        rcand, gcand, fresh_r, fresh_g = cand.update(z, lab, means, size, active, full)
        changes, active = refine_round(z, w, order, lab, k, rcand, gcand, tol, active,
                                       fresh_r, fresh_g)  # fmt: skip
        if changes == 0 and full:
            break
        full = changes == 0  # then every candidate list afresh, to be sure
    out = np.empty_like(lab)
    out[order] = lab
    _, first, out = np.unique(out, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[out].astype(np.int64)  # by each group's first row


def refine(
    x: Any,
    groups: Any,
    k: int,
    *,
    standardize: bool = True,
    weights: Any = None,
    max_rounds: int = MAX_ROUNDS,
) -> np.ndarray:
    """A partition into groups of at least ``k`` improved by local search until no change
    tried lowers its SSE.

    Fixed-size heuristics such as MDAV leave room that an improvement step takes back:
    the microaggregation literature follows them with local search that reassigns records
    between neighbouring groups and merges or splits groups.  This is such a step,
    deterministic and with exact costs; like every heuristic here it has no guarantee
    (``tests/test_microaggregation.py`` measures it against the optimum over every
    partition of tiny tables, and on the CASC Census file).

    The SSE is the one :func:`information_loss` measures, on the space :func:`mdav` groups
    in (z-scores by default, weighted ones with weights; a weighted SSE with weights).
    Each round (:func:`privlab.publish._microaggregation_kernel.refine_round`) takes

    1. every record in turn, and its best change among moving it to another group (when
       its own keeps more than ``k``) and swapping it with a record of another group;
       failing those, its best *cycle*: it to another group, a record of that one to a
       third, a record of the third to the record's group;
    2. every group in turn dissolved into others, each of its records to the group it
       costs least to join, and any group thus grown to ``2k`` or more cut as in 3 (the
       dissolving and the cuts judged together);
    3. every group of ``>= 2k`` records cut, and every group merged with a neighbour and
       cut again, into runs of ``k .. 2k - 1`` consecutive records along the principal
       axis of the records concerned: the runs of least SSE, by a dynamic programme (in
       any number of groups, so the count of groups can grow as well as shrink).

    A change is made only when it lowers the SSE by more than ``1e-12`` of the SST (the
    information loss by more than ``1e-12``), so the search ends.  Every delta is exact
    in closed form: joining a group of weight ``W`` and mean ``m`` costs ``W w / (W + w)
    ||x - m||^2``, leaving it saves ``W w / (W - w) ||x - m||^2``.  The "other groups" are
    the :data:`NEIGHBOURS` nearest group means to the record (to the group, for merging),
    all of them when there are at most ``NEIGHBOURS + 1`` groups.  After the first round,
    a round retries only what a change since touched, or a candidate list changed for
    (anything else would be tried on the same groups, to no gain), and the search stops
    once a round with every candidate list computed afresh changes nothing (or after
    ``max_rounds``).  Nothing is random, and the orders that matter are settled by row
    number, so the same input gives the same groups.  The SSE never rises, and every group
    keeps at least ``k`` records; a group exceeds ``2k - 1`` only where no cut tried lowers
    the SSE.

    Measured (``benchmarks/bench_microaggregation.py``, one core of a shared 2-core
    machine): from MDAV's groups of 30,000 and 100,000 rows of 5 normal columns at ``k =
    5``, 2.1 s and 8.3 s (MDAV itself 0.16 s and 0.8 s), the information loss from 3.64%
    to 3.09% and from 2.30% to 1.95%; on the CASC Census file (1,080 x 13) 0.1 to 0.2 s,
    from MDAV's 5.69 / 7.49 / 9.09 / 14.16% to 4.97 / 6.60 / 7.75 / 11.97% at ``k = 3, 4, 5,
    10``.

    Parameters
    ----------
    x
        ``(n, p)`` finite numbers (a 1-d array is one column).
    groups
        ``(n,)`` integer labels ``>= 0``, every group of at least ``k`` records (e.g.
        :func:`mdav`'s).
    k
        The least group size, ``1 <= k <= n``.
    standardize, weights
        As in :func:`mdav`.
    max_rounds
        The most rounds (``>= 1``).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 group labels ``0 .. G - 1``, numbered in the order of each group's
        first row (so the labels depend on the partition alone).
    """
    a = _matrix(x)
    n = a.shape[0]
    k = _k(k, n)
    g = _labels(groups, n)
    rounds = check_int("max_rounds", max_rounds, low=1)
    sizes = np.bincount(g)
    small = np.flatnonzero((sizes > 0) & (sizes < k))
    if small.size:
        raise ParameterError(
            f"group {int(small[0])} has {int(sizes[small[0]])} "
            f"record{'' if sizes[small[0]] == 1 else 's'}, fewer than k = {k}: refine starts "
            "from groups of at least k"
        )
    w = _weights(weights, n)
    z = np.ascontiguousarray(_scaled(a, standardize, w))
    return _refine(z, np.ones(n) if w is None else w, g, k, rounds)


_local_search = refine  # for microaggregate(), whose parameter ``refine`` hides it


def aggregate(x: Any, groups: Any, *, weights: Any = None) -> np.ndarray:
    """Each record replaced by its group's mean: the arithmetic mean, or with sampling
    weights the weighted mean ``sum w_i x_i / sum w_i`` over the group (R's
    ``stats::weighted.mean``, which sdcMicro's ``microaggregation(measure = "mean")``
    uses for the methods it weights).

    The unweighted means keep every column's mean: ``sum_g n_g xbar_g = sum_i x_i``; the
    weighted ones keep every column's weighted total ``sum_i w_i x_i``, hence its weighted
    mean.

    Parameters
    ----------
    x
        ``(n, p)`` finite numbers (a 1-d array is one column; the result is 1-d then).
    groups
        ``(n,)`` integer labels ``>= 0`` (any labels: only equality matters).
    weights
        Sampling weights (``n`` finite numbers > 0), or None.
    """
    one = np.ndim(x) == 1
    a = _matrix(x)
    n = a.shape[0]
    g = _labels(groups, n)
    w = _weights(weights, n)
    labels, inverse = np.unique(g, return_inverse=True)
    ww = np.ones(n) if w is None else w
    totals = np.zeros((labels.size, a.shape[1]))
    np.add.at(totals, inverse, a * ww[:, None])
    mass = np.bincount(inverse, weights=ww, minlength=labels.size)
    out = (totals / mass[:, None])[inverse]
    return out[:, 0] if one else out


def information_loss(
    x: Any, groups: Any, *, standardize: bool = True, weights: Any = None
) -> tuple[float, float]:
    """``(SSE, SST)`` of a grouping (Domingo-Ferrer & Mateo-Sanz 2002, Sec. 2; ``IL =
    SSE / SST``), on the z-scores (``standardize=True``) or the values as given.

    With sampling weights both are weighted sums, ``SSE = sum_i w_i ||x_i - xbar_w,g(i)||^2``
    and ``SST = sum_i w_i ||x_i - xbar_w||^2`` around the weighted means (estimates of the
    population's sums; the paper has no weights, and ``weights=None`` is its definition).
    """
    a = _matrix(x)
    n = a.shape[0]
    g = _labels(groups, n)
    w = _weights(weights, n)
    z = _scaled(a, standardize, w)
    ww = np.ones(n) if w is None else w
    within = z - aggregate(z, g, weights=w)
    total = z - np.average(z, axis=0, weights=w)
    sse = float(np.einsum("i,ij,ij->", ww, within, within))
    sst = float(np.einsum("i,ij,ij->", ww, total, total))
    return sse, sst


@dataclass(frozen=True, eq=False)
class Microaggregation(ToFrames):
    """A microaggregation's groups and its information loss (:func:`microaggregate`).

    Attributes
    ----------
    groups
        ``(n,)`` int64 group label of every record.
    k
        The least group size asked for.
    method
        ``"mdav"`` or ``"univariate_optimal"``.
    refined
        Whether the groups were improved by :func:`refine`'s local search.
    sse, sst
        Within-group and total sums of squares on the data as grouped (z-scores when
        ``standardized``; weighted sums when ``weighted``).
    """

    groups: np.ndarray = field(repr=False)
    k: int
    method: str
    sse: float
    sst: float
    standardized: bool = True
    weighted: bool = False
    refined: bool = False

    @property
    def n(self) -> int:
        return int(self.groups.size)

    @property
    def il(self) -> float:
        """``SSE / SST`` (Domingo-Ferrer & Mateo-Sanz 2002's ``L``), 0 when SST is 0."""
        return self.sse / self.sst if self.sst > 0 else 0.0

    @property
    def sizes(self) -> np.ndarray:
        """Each group's number of records, by label."""
        return np.bincount(self.groups)

    def to_dict(self) -> dict[str, Any]:
        sizes = self.sizes
        return {
            "n": self.n,
            "k": self.k,
            "method": self.method,
            "groups": int(sizes.size),
            "smallest_group": int(sizes.min()) if sizes.size else 0,
            "largest_group": int(sizes.max()) if sizes.size else 0,
            "sse": self.sse,
            "sst": self.sst,
            "il": self.il,
            "standardized": self.standardized,
            "weighted": self.weighted,
            "refined": self.refined,
        }

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame({"group": self.groups})


def microaggregate(
    x: Any,
    k: int,
    *,
    method: str = "mdav",
    standardize: bool = True,
    weights: Any = None,
    refine: bool = False,
) -> Microaggregation:
    """Group ``x`` by ``method`` and measure the information loss (:class:`Microaggregation`).

    ``method="univariate_optimal"`` takes one column and ignores the weights in the
    grouping (the optimum of the unweighted SSE; neither scaling nor weights enter Hansen &
    Mukherjee's problem), while SSE and SST are still weighted when weights are given.
    ``refine=True`` improves the groups by local search: ``mdav(..., refine=True)`` for
    MDAV; for the univariate optimum, :func:`refine` from it (which can lower only a
    weighted SSE: the unweighted one is already least).
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not isinstance(refine, (bool, np.bool_)):
        raise ParameterError(f"refine must be True or False, got {refine!r}")
    if method == "mdav":
        groups = mdav(x, k, standardize=standardize, weights=weights, refine=refine)
    else:
        groups = univariate_optimal(x, k)
        if refine:
            groups = _local_search(x, groups, k, standardize=standardize, weights=weights)
    sse, sst = information_loss(x, groups, standardize=standardize, weights=weights)
    return Microaggregation(groups, int(k), method, sse, sst, bool(standardize),
                            weights is not None, bool(refine))  # fmt: skip


def _codes(codes: Any) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(codes)
    if c.ndim == 1:
        c = c[:, None]
    if c.ndim != 2 or c.shape[1] == 0:
        raise ParameterError(f"codes must be a 2-d array (records x columns), got {c.shape}")
    if c.size and not np.issubdtype(c.dtype, np.integer):
        raise ParameterError(f"codes must be integer codes, got {c.dtype}")
    c = c.astype(np.int64)
    if c.size and c.min() < 0:
        raise ParameterError(f"codes must be >= 0, got {int(c.min())}")
    sizes = c.max(axis=0) + 1 if c.size else np.ones(c.shape[1], np.int64)
    return np.ascontiguousarray(c), sizes.astype(np.int64)


def mdav_categorical(codes: Any, k: int) -> np.ndarray:
    """MDAV's groups of categorical records (Domingo-Ferrer & Torra 2005, MDAV-generic on
    nominal attributes): the steps of :func:`mdav` with the Hamming distance (the number of
    columns in which two records differ) and, as the "average record", each column's mode
    among the remaining records (the smallest code on a tie; the paper's average of a
    nominal attribute is its mode, Torra 2004 takes the median of ordinal ones).  Ties are
    broken as in :func:`mdav`; with ``p`` columns a distance takes only ``p + 1`` values,
    so ties are the rule and the tie rules decide most groups.

    Plain passes over the remaining records (``~ 3 n^2 p / (4k)`` comparisons): fine for
    tens of thousands of records, slow for millions.

    Parameters
    ----------
    codes
        ``(n, p)`` integer codes ``>= 0`` (a 1-d array is one column).
    k
        The least group size, ``1 <= k <= n``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 group labels; every group has ``k`` records but the last, of ``k ..
        2k - 1``.
    """
    c, sizes = _codes(codes)
    k = _k(k, c.shape[0])
    from privlab.publish._microaggregation_kernel import mdav_hamming_groups

    return mdav_hamming_groups(c, sizes, k)


def medoids(codes: Any, groups: Any) -> np.ndarray:
    """Each record replaced by its group's medoid: the group's record whose summed Hamming
    distance to the group's records is least (the first row on a tie).

    Torra (2004) aggregates an ordinal column by its median and, for nominal ones, the
    per-column mode is the usual choice (MDAV-generic's average record); privlab publishes
    the medoid instead, a whole record of the group, so that every published combination
    occurs in the data (a per-column mode can combine values no record has).  Each
    published value is therefore one of its group's values.
    """
    c, _ = _codes(codes)
    n = c.shape[0]
    g = _labels(groups, n)
    labels, inverse = np.unique(g, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.zeros(labels.size + 1, np.int64)
    starts[1:] = np.cumsum(np.bincount(inverse, minlength=labels.size))
    from privlab.publish._microaggregation_kernel import medoid_rows

    rows = medoid_rows(c, order, starts)
    out = c[rows[inverse]]
    return out[:, 0] if np.ndim(codes) == 1 else out


def medoid_microaggregation(codes: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mdav_categorical`'s groups and the codes each group publishes (:func:`medoids`):
    ``(groups, published)``."""
    groups = mdav_categorical(codes, k)
    return groups, medoids(codes, groups)
