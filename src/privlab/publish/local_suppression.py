"""Local (cell) suppression to k-anonymity, as sdcMicro's ``localSuppression`` / ``kAnon``
does it (Templ, Kowarik & Meindl 2015, J. Stat. Softw. 67(4), Sec. 4.2; Templ 2017,
*Statistical Disclosure Control for Microdata*, Sec. 3.6): pure functions on the integer
codes ``(n, d)`` of the quasi-identifiers (a :class:`~privlab.data.table.Table`'s ``codes``);
the result is a boolean mask of the cells to suppress.

k-anonymity with suppressed cells
---------------------------------
A suppressed cell is a wildcard, ``*``: it matches every value of its column.  Two records
are *compatible* when, in every column, they hold the same code or at least one of them is
suppressed there.  A record's frequency ``fk`` is the number of records compatible with it,
itself included, and the table is k-anonymous when every ``fk >= k``
(:func:`wildcard_frequencies`).  This is exactly sdcMicro's ``freqCalc`` with its default
``alpha = 1`` ("each wildcard-match is counted"), which ``localSuppression`` checks its
result against (``R/freqCalc.r``): a key with missing values gets, besides its own count,
every other key that equals it on its observed columns where that key is observed too, and a
complete key gets every key with missing values that equals it on that key's observed
columns; an all-missing key gets ``n``.  privlab follows it because it is the definition the
algorithm and its users are measured by, and because sdcMicro's and ARX's outputs are read
that way.

Where the definition is loose: compatibility is not transitive, so records no longer fall
into equivalence classes, and ``fk`` counts records that *some* completion of the
suppressed cells would make equal -- ``(*, b)`` counts ``(a', *)`` although no single
completion of the two is the same as one with ``a`` in the first column and ``b`` in the
second.  An intruder who knows a target's true values ``v`` sees the records compatible with
``v``, which is never more and can be fewer than ``fk``.  sdcMicro's ``alpha = 0`` (a
suppressed cell is a category of its own: classes again) is the strict alternative; it is
not what this module computes.

The optimum is degenerate
-------------------------
Under this definition a record with *every* cell suppressed matches every record, so
``k - 1`` fully suppressed records make any table k-anonymous: the optimum never costs more
than ``(k - 1)`` times a whole record's cells, whatever ``n`` (8 cells at k = 2 on Adult's 8
quasi-identifiers, where sdcMicro's greedy suppresses thousands).  The other records keep
all their values, a unique one included: formally k-anonymous, yet an intruder who knows
a target's values still finds exactly one complete record that fits.  ``method="heuristic"``
optimizes the definition as stated and finds these "hubs"; ``method="local"`` is sdcMicro's
behaviour (each record at risk fixes itself) and is what to publish with when the
definition's letter is not enough.  The strict ``alpha = 0`` semantics would remove the
loophole; it is not implemented here.

The local greedy (``method="local"``)
-------------------------------------
sdcMicro's ``suppSubset`` (``R/localSuppression.R``): (1) keys of at least ``k`` records are
set aside, all but ``k`` of their records removed (they are never suppressed, since
suppression only adds matches); (2) in rounds, the records with ``fk < k``, highest risk
first, each get one more suppressed cell: ``cpp_calcSuppInds`` finds the records at the
smallest positive distance (columns that differ, neither side suppressed), and the cell
suppressed is in the least important column (``importance``) in which one of those nearest
records differs; (3) ``fk`` is recomputed after the round and rounds repeat until every
``fk >= k``.  Step (2) is loose: a record fixed earlier in the same round by a neighbour's
suppression still gets its cell, and one cell per record per round decides nothing about
how many cells a record needs.

privlab keeps the spirit (records at risk only, highest risk -- smallest ``fk`` -- first,
importance decides between columns) and replaces the loose step with a best response
computed exactly: for the record at hand it evaluates every set ``S`` of its columns at
once (a histogram of the columns in which each other record mismatches it, summed over
subsets) and suppresses the cheapest ``S`` that makes its own ``fk >= k`` given every other
record's current cells, ties broken by the most records still below ``k`` that it comes to
match (each gains a record), then by the largest ``fk``, then by importance.  Records already
at ``k`` when their turn comes are skipped, so one pass suffices: frequencies only grow.
A second pass gives cells back, most expensive first, whenever the record and every
record that would lose it as a match stay at ``k`` or more.  Each record at risk costs one
pass over the rows at risk and the distinct safe keys plus ``O(2^d d)``: hence
:data:`MAX_COLUMNS`.  Identical records at risk are handled one by one.

The heuristic (``method="heuristic"``)
--------------------------------------
The cheapest of: (a) hubs -- the ``k - 1`` most typical records (largest product of their
values' column frequencies) fully suppressed, then cells given back; (b) on small tables
(:data:`RATIO_GREEDY_LIMIT`), a set-cover greedy over moves "suppress ``S`` in record
``u``" by deficit removed per unit of cost (``sum max(0, k - fk)``), then cells given back,
then the pilot method on its first move (:data:`PILOT_LIMIT`: every record and column
subset tried as the first move, the greedy completing it) and a local search (clear one
record's cells, repair, keep if cheaper); (c) the local greedy above, abandoned once it
spends twice the cost already found.  Here one record of each key of ``k`` or more may be
suppressed too (a hub may be any record).  On 150 fixed random tables (10-40 records, 2-4
columns of 2-4 values, k = 2, 3, half with an importance vector) the worst excess over the
optimum measured is 4.5% (one table), on 300 others 5.3%.

The optimum (``method="optimal"``)
----------------------------------
An exact 0-1 program (``scipy.optimize.milp``, HiGHS) over *patterns*: ``z[i, P] = 1`` when
record ``i``'s suppressed columns are exactly ``P`` (one per record).  Records ``i`` (pattern
``P``) and ``j`` (pattern ``Q``) are compatible iff ``D_ij``, the columns where they differ,
lies in ``P | Q``, i.e. iff ``j``'s pattern contains ``D_ij - P``: ``sum over Q containing
D_ij - P of z[j, Q]``, linear in ``z``.  So for every record at risk ``i`` and pattern ``P``:
``sum_j sum_{Q >= D_ij - P} z[j, Q] >= (k - e_i) z[i, P]`` with ``e_i`` the records identical
to ``i`` (itself included) -- vacuous unless ``P`` is ``i``'s pattern, exactly ``fk_i >= k``
when it is.  Minimize ``sum cost(P) z[i, P]``: the optimum is the fewest weighted cells.
Every record's cells are variables (safe records too).  The matrix has up to ``n^2 4^d``
entries (:data:`MAX_OPTIMAL_TERMS`); a result not proved optimal within
:data:`OPTIMAL_TIME_LIMIT` seconds is refused.  (The first formulation tried, a variable
per pair ``y[i, j] <= x[i, c] + x[j, c]``, is also exact but its LP relaxation is weak:
20-30 s on 20 records x 3 columns, against 0.01-0.1 s for this one.)

Costs
-----
``importance`` is sdcMicro's vector: a permutation of ``1..d``, 1 = most important =
suppressed last.  A cell of a column of importance ``r`` costs ``1 + (d - r) / d`` (the least
important 1, the most important just under 2): fewer cells still matter first, and between
two choices of as many cells the less important columns are taken.  Without ``importance``
every cell costs 1 (the objective is the fewest cells) and sdcMicro's default ranking --
columns with more categories are less important -- only breaks ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab._params import check_int, is_integer
from privlab.data.counts import distinct_rows
from privlab.errors import ParameterError, PrivlabError

#: Quasi-identifiers at most for the heuristic (it sums over the 2^d column subsets per record).
MAX_COLUMNS = 16
#: ``method="optimal"``'s limit on ``n^2 4^d`` (its constraint matrix has up to that many
#: entries: one variable per record and column subset, one constraint per record at risk and
#: subset, summing over every other record's supersets).
MAX_OPTIMAL_TERMS = 50_000_000
#: The heuristic's set-cover greedy runs when records at risk x rows is at most this.
RATIO_GREEDY_LIMIT = 4_000_000
#: The pilot method runs when movable records x rows x 2^d is at most this.
PILOT_LIMIT = 2_000_000
#: Rounds at most of the local search that follows the set-cover greedy.
IMPROVE_ROUNDS = 10
#: Seconds the integer program may take before its result is refused as not proved optimal.
OPTIMAL_TIME_LIMIT = 600.0

METHODS = ("heuristic", "local", "optimal")


@dataclass(frozen=True, eq=False)
class LocalSuppression(ToFrames):
    """Cells suppressed to k-anonymity (:func:`local_suppression`).

    ``mask[i, c]``: cell ``(i, c)`` is suppressed (``*``).  ``fk``: each record's frequency
    after suppression (:func:`wildcard_frequencies`).  ``costs``: each column's cell cost
    (from ``importance``).  ``gap`` and ``optimal_cost`` are known only from
    :func:`suppression_gap`: ``gap = cost / optimal_cost - 1`` (0 when both are 0).
    """

    mask: np.ndarray = field(repr=False)
    fk: np.ndarray = field(repr=False)
    k: int
    method: str
    names: tuple[str, ...]
    importance: tuple[int, ...]
    costs: tuple[float, ...]
    gap: float | None = None
    optimal_cost: float | None = None

    @property
    def n(self) -> int:
        return int(self.mask.shape[0])

    @property
    def suppressed(self) -> int:
        """Cells suppressed in all."""
        return int(self.mask.sum())

    @property
    def per_column(self) -> dict[str, int]:
        """Cells suppressed in each column."""
        return {name: int(s) for name, s in zip(self.names, self.mask.sum(axis=0))}

    @property
    def records_touched(self) -> int:
        """Records with at least one suppressed cell."""
        return int(self.mask.any(axis=1).sum())

    @property
    def k_reached(self) -> int:
        """The smallest ``fk``: the table is k-anonymous for every k up to it."""
        return int(self.fk.min()) if self.fk.size else 0

    @property
    def cost(self) -> float:
        """The suppressed cells weighted by their columns' costs."""
        return float(self.mask.sum(axis=0) @ np.asarray(self.costs, dtype=float))

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "k": self.k,
            "method": self.method,
            "names": list(self.names),
            "importance": list(self.importance),
            "costs": list(self.costs),
            "suppressed": self.suppressed,
            "per_column": self.per_column,
            "records_touched": self.records_touched,
            "k_reached": self.k_reached,
            "cost": self.cost,
            "gap": self.gap,
            "optimal_cost": self.optimal_cost,
        }

    def to_pandas(self):
        """One row per record: a boolean column per quasi-identifier (suppressed) and
        ``fk``."""
        import pandas as pd

        frame = pd.DataFrame(self.mask, columns=list(self.names))
        frame["fk"] = self.fk
        return frame


def _check_codes(codes: Any) -> np.ndarray:
    c = np.asarray(codes)
    if c.ndim != 2:
        raise ParameterError(f"codes must be a 2-d array (records x columns), got {c.shape}")
    if c.shape[0] == 0 or c.shape[1] == 0:
        raise ParameterError(f"codes must have at least one record and one column, got {c.shape}")
    if not np.issubdtype(c.dtype, np.integer) or c.dtype == np.bool_:
        raise ParameterError(f"codes must be integer codes, got dtype {c.dtype}")
    if c.min() < 0:
        raise ParameterError(f"codes must be >= 0, got {int(c.min())}")
    return np.ascontiguousarray(c, dtype=np.int64)


def _check_mask(mask: Any, shape: tuple[int, int]) -> np.ndarray:
    m = np.asarray(mask)
    if m.shape != shape or m.dtype != np.bool_:
        raise ParameterError(
            f"mask must be a boolean array of shape {shape}, got {m.dtype} {m.shape}"
        )
    return m


def default_importance(codes: np.ndarray) -> np.ndarray:
    """sdcMicro's default importance: columns ranked by their number of distinct values, the
    fewest first (1 = most important); ties in column order."""
    counts = [np.unique(codes[:, c]).size for c in range(codes.shape[1])]
    order = np.argsort(counts, kind="stable")
    imp = np.empty(codes.shape[1], dtype=np.int64)
    imp[order] = np.arange(1, codes.shape[1] + 1)
    return imp


def _check_importance(importance: Any, d: int) -> np.ndarray:
    if isinstance(importance, (str, bytes)):
        raise ParameterError(f"importance must be a permutation of 1..{d}, got {importance!r}")
    try:
        values = list(importance)
    except TypeError:
        raise ParameterError(
            f"importance must be a permutation of 1..{d}, got {importance!r}"
        ) from None
    if len(values) != d:
        raise ParameterError(f"importance must have one rank per column ({d}), got {len(values)}")
    if not all(is_integer(v) for v in values) or sorted(int(v) for v in values) != list(
        range(1, d + 1)
    ):
        raise ParameterError(f"importance must be a permutation of 1..{d}, got {values}")
    return np.asarray(values, dtype=np.int64)


def _integer_costs(importance: np.ndarray | None, d: int) -> np.ndarray:
    """Cell costs times ``d`` (integers, compared exactly): ``d + (d - r)``, or 1 each."""
    if importance is None:
        return np.ones(d, dtype=np.int64)
    return (2 * d - importance).astype(np.int64)


def _names(names: Sequence[str] | None, d: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"c{c}" for c in range(d))
    out = tuple(str(n) for n in names)
    if len(out) != d:
        raise ParameterError(f"names must have one name per column ({d}), got {len(out)}")
    return out


def wildcard_frequencies(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each record's ``fk`` when ``mask``'s cells are wildcards: the records compatible with
    it (same code or a suppressed cell on either side, in every column), itself included --
    sdcMicro's ``freqCalc`` with ``alpha = 1``.

    Computed by pattern: records with the same suppressed columns ``P`` are grouped, and for
    each pair of patterns ``(P, Q)`` the ``Q`` records are counted by their codes on the
    columns outside ``P | Q`` and looked up for the ``P`` records.
    """
    c = _check_codes(codes)
    n, d = c.shape
    m = _check_mask(mask, (n, d))
    pat = (m.astype(np.int64) << np.arange(d, dtype=np.int64)).sum(axis=1)
    shown = np.where(m, 0, c)
    first, inverse, counts = distinct_rows(np.column_stack([pat, shown]))
    rows, rpat = shown[first], pat[first]
    fk = np.zeros(first.size, dtype=np.int64)
    groups = [np.flatnonzero(rpat == p) for p in np.unique(rpat)]
    for left in groups:
        p = int(rpat[left[0]])
        for right in groups:
            q = int(rpat[right[0]])
            keep = [j for j in range(d) if not (p | q) >> j & 1]
            if not keep:
                fk[left] += counts[right].sum()
                continue
            both = np.concatenate([rows[left][:, keep], rows[right][:, keep]])
            _, inv, _ = distinct_rows(both)
            per_key = np.bincount(inv[left.size :], weights=counts[right], minlength=inv.max() + 1)
            fk[left] += per_key[inv[: left.size]].astype(np.int64)
    return fk[inverse]


def _subset_tables(int_costs: np.ndarray, importance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column subset's cost and its preference key (smaller = less important columns)."""
    d = int_costs.size
    s = np.arange(1 << d, dtype=np.int64)
    bits = (s[:, None] >> np.arange(d)) & 1
    pref_bit = np.int64(1) << (d - importance)  # the most important column: the highest bit
    return bits @ int_costs, bits @ pref_bit


def _prune(kernel, rows, w, pat, fk, n_safe, k, int_costs, importance) -> None:
    """Give cells back (kernel.prune), the most expensive column first, then the most
    important, then by record."""
    d = int_costs.size
    at = np.flatnonzero(pat[n_safe:]) + n_safe
    if at.size == 0:
        return
    bits = (pat[at, None] >> np.arange(d)) & 1
    cr, cc = np.nonzero(bits)
    cr = at[cr]
    by = np.lexsort((cr, importance[cc], -int_costs[cc]))
    kernel.prune(rows, w, pat, fk, n_safe, k, cr[by].astype(np.int64), cc[by].astype(np.int64))


def _pilot(kernel, rows, w, pat, fk, fk0, n_safe, k, int_costs, importance):
    """The pilot method on the first move: every record and column subset is tried as the
    first suppression, the set-cover greedy completes it and cells are given back; the
    cheapest result (or the one given, ``pat``, when none is cheaper) is kept."""
    subset_cost, subset_pref = _subset_tables(int_costs, importance)
    d = int_costs.size
    cost = int(subset_cost[pat].sum())
    for u in range(n_safe, rows.shape[0]):
        for s in range(1, 1 << d):
            if subset_cost[s] >= cost:
                continue
            p2, f2 = np.zeros_like(pat), fk0.copy()
            kernel.set_pattern(rows, w, p2, f2, n_safe, u, s)
            kernel.ratio_greedy(rows, w, p2, f2, n_safe, k, subset_cost, subset_pref)
            _prune(kernel, rows, w, p2, f2, n_safe, k, int_costs, importance)
            c2 = int(subset_cost[p2].sum())
            if c2 < cost:
                pat, fk, cost = p2, f2, c2
    return pat, fk


def _improve(kernel, rows, w, pat, fk, n_safe, k, int_costs, importance):
    """Local search: clear one suppressed record's cells, repair with the set-cover greedy,
    give cells back; keep the result when it costs less.  Until no record improves it (at
    most :data:`IMPROVE_ROUNDS` rounds)."""
    subset_cost, subset_pref = _subset_tables(int_costs, importance)
    cost = int(subset_cost[pat].sum())
    for _ in range(IMPROVE_ROUNDS):
        improved = False
        for u in np.flatnonzero(pat):
            if pat[u] == 0:
                continue
            p2, f2 = pat.copy(), fk.copy()
            kernel.set_pattern(rows, w, p2, f2, n_safe, u, 0)
            kernel.ratio_greedy(rows, w, p2, f2, n_safe, k, subset_cost, subset_pref)
            _prune(kernel, rows, w, p2, f2, n_safe, k, int_costs, importance)
            c2 = int(subset_cost[p2].sum())
            if c2 < cost:
                pat, fk, cost, improved = p2, f2, c2, True
        if not improved:
            break
    return pat, fk


def _heuristic(
    codes: np.ndarray, k: int, int_costs: np.ndarray, importance: np.ndarray, local: bool
) -> np.ndarray:
    from privlab.publish import _suppression_kernel as kernel

    n, d = codes.shape
    first, inverse, counts = distinct_rows(codes)
    own = counts[inverse]
    risk = np.flatnonzero(own < k)
    mask = np.zeros((n, d), dtype=bool)
    if risk.size == 0:
        return mask
    # rows: the safe keys (all their records but one), then one delegate record of each
    # safe key (it may be suppressed: a safe record can be the cheapest common match), then
    # the records at risk; the first two blocks keep fk >= k whatever happens
    safe = np.flatnonzero(counts >= k)
    n_safe = safe.size
    rows = np.ascontiguousarray(
        np.concatenate([codes[first[safe]], codes[first[safe]], codes[risk]])
    )
    w = np.concatenate([counts[safe] - 1, np.ones(n_safe + risk.size, dtype=np.int64)])
    n_rows = rows.shape[0]
    fk0 = np.concatenate([counts[safe], counts[safe], own[risk]]).astype(np.int64)
    subset_cost, subset_pref = _subset_tables(int_costs, importance)
    full = (1 << d) - 1
    solutions: list[tuple[int, int, np.ndarray]] = []  # (cost, preference, patterns)

    def finish(pat: np.ndarray, fk: np.ndarray, rank: int) -> int:
        _prune(kernel, rows, w, pat, fk, n_safe, k, int_costs, importance)
        cost = int(subset_cost[pat].sum())
        solutions.append((cost, rank, pat))
        return cost

    budget = np.iinfo(np.int64).max
    if not local:
        # hubs: the k - 1 most typical records at risk fully suppressed match everyone
        pat, fk = np.zeros(n_rows, dtype=np.int64), fk0.copy()
        typical = sum(np.log(np.bincount(codes[:, c])[rows[n_safe:, c]]) for c in range(d))
        hubs = n_safe + np.argsort(-typical, kind="stable")[: k - 1]  # delegates or at risk
        for u in hubs:
            diff = (rows != rows[u]) @ (np.int64(1) << np.arange(d))
            newly = (diff & ~pat != 0) & (np.arange(n_rows) >= n_safe)
            fk[newly] += 1
            pat[u] = full
            fk[u] = n
        budget = min(budget, 2 * finish(pat, fk, 2))
        if (n_rows - n_safe) * n_rows <= RATIO_GREEDY_LIMIT:
            pat, fk = np.zeros(n_rows, dtype=np.int64), fk0.copy()
            kernel.ratio_greedy(rows, w, pat, fk, n_safe, k, subset_cost, subset_pref)
            _prune(kernel, rows, w, pat, fk, n_safe, k, int_costs, importance)
            if (n_rows - n_safe) * n_rows << d <= PILOT_LIMIT:
                pat, fk = _pilot(kernel, rows, w, pat, fk, fk0, n_safe, k, int_costs, importance)
            pat, fk = _improve(kernel, rows, w, pat, fk, n_safe, k, int_costs, importance)
            budget = min(budget, 2 * finish(pat, fk, 1))
    pat, fk = np.zeros(n_rows, dtype=np.int64), fk0.copy()
    # highest risk (smallest fk) first, as sdcMicro orders by the individual risk
    order = (2 * n_safe + np.argsort(own[risk], kind="stable")).astype(np.int64)
    if kernel.greedy(rows, w, pat, fk, n_safe, k, order, subset_cost, subset_pref, budget) >= 0:
        finish(pat, fk, 0)
    best = min(solutions, key=lambda s: (s[0], s[1]))[2]
    cells = ((best[n_safe:, None] >> np.arange(d)) & 1).astype(bool)
    mask[first[safe]] = cells[:n_safe]  # a safe key's delegate: its first record
    mask[risk] = cells[n_safe:]
    return mask


def _optimal(codes: np.ndarray, k: int, int_costs: np.ndarray) -> np.ndarray:
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    n, d = codes.shape
    size = 1 << d
    if n * n * size * size > MAX_OPTIMAL_TERMS:
        raise ParameterError(
            f"method='optimal' takes tables with n^2 * 4^d <= {MAX_OPTIMAL_TERMS:,} (one "
            f"variable per record and column subset), got n={n}, d={d}; use method='heuristic'"
        )
    sub = np.arange(size, dtype=np.int64)
    bits = (sub[:, None] >> np.arange(d)) & 1
    dm = ((codes[:, None, :] != codes[None, :, :]) << np.arange(d)).sum(axis=2)
    equal = dm == 0
    need = k - equal.sum(axis=1)  # matches still needed beyond the identical records
    if (need <= 0).all():
        return np.zeros((n, d), dtype=bool)
    covers = (sub[None, :] & sub[:, None]) == sub[:, None]  # covers[T, Q]: Q contains T
    rows, cols, vals = [], [], []
    r = 0
    for i in np.flatnonzero(need > 0):
        js = np.flatnonzero(~equal[i])
        for p in range(size):
            # sum_j (z_jQ over the Q containing D_ij minus p) - need_i z_ip >= 0
            jj, qq = np.nonzero(covers[dm[i, js] & ~p])
            rows.append(np.full(jj.size + 1, r))
            cols.append(np.concatenate([js[jj] * size + qq, [i * size + p]]))
            vals.append(np.concatenate([np.ones(jj.size), [-float(need[i])]]))
            r += 1
    n_cover = r
    for i in range(n):  # one pattern per record
        rows.append(np.full(size, r))
        cols.append(i * size + sub)
        vals.append(np.ones(size))
        r += 1
    a = coo_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(r, n * size),
    ).tocsr()
    lower = np.concatenate([np.zeros(n_cover), np.ones(n)])
    upper = np.concatenate([np.full(n_cover, np.inf), np.ones(n)])
    res = milp(
        np.tile((bits @ int_costs).astype(float), n),
        constraints=LinearConstraint(a, lower, upper),
        integrality=np.ones(n * size),
        bounds=Bounds(0, 1),
        options={"time_limit": OPTIMAL_TIME_LIMIT},
    )
    if res.status != 0 or res.x is None:
        raise PrivlabError(f"the integer program was not solved to optimality: {res.message}")
    chosen = res.x.reshape(n, size).argmax(axis=1)
    return bits[chosen].astype(bool)


def local_suppression(
    codes: np.ndarray,
    k: int,
    *,
    importance: Sequence[int] | None = None,
    method: str = "heuristic",
    names: Sequence[str] | None = None,
) -> LocalSuppression:
    """The cells to suppress so that every record is k-anonymous with suppressed cells as
    wildcards (sdcMicro's ``localSuppression``; the definitions are the module's).

    Parameters
    ----------
    codes
        Integer codes ``(n, d)`` of the quasi-identifiers, one row per record (a
        :class:`~privlab.data.table.Table`'s ``codes`` on its QI columns).
    k
        The k of k-anonymity, ``1 <= k <= n``.
    importance
        sdcMicro's importance vector: a permutation of ``1..d``, 1 = most important =
        suppressed last; it sets the cell costs (module docstring).  Default: every cell
        costs 1, ties broken by sdcMicro's default ranking (more categories, less important).
    method
        ``"heuristic"`` (the cheapest of hubs, a set-cover greedy on small tables and the
        local greedy; up to :data:`MAX_COLUMNS` columns), ``"local"`` (sdcMicro's greedy,
        each record at risk fixing itself: no deliberate hubs) or ``"optimal"`` (the fewest
        weighted cells, by an integer program; :data:`MAX_OPTIMAL_TERMS`).  The module
        docstring says why ``"heuristic"`` answers with fully suppressed records.
    names
        The columns' names (default ``c0, c1, ...``).
    """
    c = _check_codes(codes)
    n, d = c.shape
    k = check_int("k", k, low=1, high=n)
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    col_names = _names(names, d)
    given = None if importance is None else _check_importance(importance, d)
    if method != "optimal" and d > MAX_COLUMNS:
        raise ParameterError(
            f"the heuristic takes at most {MAX_COLUMNS} quasi-identifiers (it sums over the "
            f"2^d column subsets of each record at risk), got {d}"
        )
    rank = default_importance(c) if given is None else given
    int_costs = _integer_costs(given, d)
    scale = 1 if given is None else d
    if method != "optimal":
        mask = _heuristic(c, k, int_costs, rank, local=method == "local")
    else:
        mask = _optimal(c, k, int_costs)
    fk = wildcard_frequencies(c, mask)
    return LocalSuppression(
        mask=mask,
        fk=fk,
        k=k,
        method=method,
        names=col_names,
        importance=tuple(int(r) for r in rank),
        costs=tuple(float(x) / scale for x in int_costs),
    )


def suppression_gap(
    codes: np.ndarray,
    k: int,
    *,
    importance: Sequence[int] | None = None,
    names: Sequence[str] | None = None,
) -> LocalSuppression:
    """The heuristic's result with its distance to the optimum: both methods are run (small
    tables only, :data:`MAX_OPTIMAL_TERMS`), and ``gap = cost / optimal_cost - 1`` (0 when
    no cell is needed) and ``optimal_cost`` are filled in."""
    heur = local_suppression(codes, k, importance=importance, method="heuristic", names=names)
    best = local_suppression(codes, k, importance=importance, method="optimal", names=names)
    opt = best.cost
    if opt == 0:
        gap = 0.0 if heur.cost == 0 else float("inf")
    else:
        gap = heur.cost / opt - 1.0
    return replace(heur, gap=gap, optimal_cost=opt)


# -- the release ------------------------------------------------------------------------------
#: The marker of a suppressed cell in a published table (as generalization's top level).
STAR = "*"


def published_frequencies(table: Any, columns: Sequence[str]) -> np.ndarray:
    """Each published row's ``fk`` over ``columns`` of a table whose ``*`` cells are
    wildcards (:func:`wildcard_frequencies`)."""
    t = table.select(list(columns))
    mask = np.zeros(t.codes.shape, dtype=bool)
    for j, a in enumerate(t.schema.attributes):
        labels = [str(v) for v in a.domain]
        if STAR in labels:
            mask[:, j] = t.codes[:, j] == labels.index(STAR)
    return wildcard_frequencies(t.codes, mask)
