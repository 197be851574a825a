"""Frequent itemsets (Apriori) mined from group-randomized items (Ma 2006, Sec. 7.1).

Setting (Sec. 7.1.2.1).  Items are partitioned into groups, each held by one owner.  For every
record and group ``G`` the owner randomizes the presence pattern of ``G``'s items (``2^|G|``
patterns, first item slowest, absent = 0) through the symmetric M-category matrix ``P_G``
(``p_ii = 1 - p``, ``p_ij = p / (2^|G| - 1)``) and publishes the patterns with the matrices.

Support of a candidate ``C`` (Props. 7.2-7.4):

* ``C_r = G_r ∩ C`` and ``P_C = P_{C_1} (x) ... (x) P_{C_m}`` (Prop. 7.3, ``C_1`` slowest),
  where ``P_{C_r}`` is the marginal of ``P_{G_r}`` on ``C_r`` (Prop. 7.2's closed form
  ``p_ii = 1 - p + p(2^{|G|-|C|} - 1)/(2^|G| - 1)``, ``p_ij = p 2^{|G|-|C|}/(2^|G| - 1)``;
  privlab computes it with :func:`~privlab.estimate.pram.marginal_matrix`, which also serves
  any other joint matrix, and a test checks the closed form);
* the randomized pattern counts ``T~_C`` come from the randomized supports of ``C``'s subsets
  by inclusion-exclusion (Prop. 7.4: ``T~_s = sum_{C2 ⊆ C3 ⊆ C} (-1)^{|C3|-|C2|} sup~(C3)``
  with ``sup~(∅) = N``), computed as a Möbius transform over the ``2^|C|`` subsets;
* ``T^_C = (P_C^T)^-1 T~_C`` and the estimated support is its last entry (all items present).
  Only that entry is needed: it is ``w · T~_C`` with ``w = (x)_r (P_{C_r}^-1)[:, last]``, so
  no ``2^|C| x 2^|C|`` inverse is formed.

Search: Apriori (Agrawal & Srikant 1994) with Apriori-gen's join *and* subset-prune steps;
a candidate is frequent when its *estimated* support reaches ``min_support * N``.  The
randomized supports of every counted itemset are kept: the next level's inclusion-exclusion
needs them.  Supports are counted on bit-packed item columns (an AND and a popcount per
candidate) rather than Borgelt's trie, which gives the same counts.

**Where the thesis is wrong or silent**

* Its Apriori pseudo-code omits the subset-prune step that its text requires ("all subsets
  frequent"); privlab prunes.  With pruning, every subset of a candidate has been counted,
  which the inclusion-exclusion needs.
* Prop. 7.2's proof writes ``2^{|G|-1}`` for ``2^|G| - 1`` and part (2) ``P_C^-1 T_C`` for
  ``P_C^-1 T~_C``; privlab uses ``(P_C^T)^-1 T~_C`` (the same for the symmetric ``P_C``).
* ``P_{C_r}`` is singular when ``p = (2^{|G|} - 1) / 2^{|G|}`` (every pattern equally likely
  whatever the truth: ``p = 0.5`` for a one-item group); the thesis's Mushroom sweep to
  ``p = 0.5`` includes such a point.  privlab refuses it with a
  :class:`~privlab.errors.MatrixError` that names the group and ``p``.
* Estimated supports may be negative or exceed ``N`` (the moment estimate is unbiased, not
  bounded); they are reported as estimated, and only compared with the threshold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import combinations
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from privlab._frames import ToFrames
from privlab._params import check_int
from privlab._progress import track
from privlab.data.items import check_grouping
from privlab.data.matrices import validate_matrix
from privlab.errors import MatrixError, ParameterError
from privlab.estimate.pram import marginal_matrix, reduces_exactly, release_plan
from privlab.learn._sklearn import Interval
from privlab.metrics.itemsets import ItemsetScores, itemset_scores
from privlab.release.views import Randomized

__all__ = [
    "FrequentItemsets",
    "PramApriori",
    "apriori_gen",
    "candidate_matrix",
    "estimated_supports",
    "itemset_supports",
    "pattern_counts",
    "score_itemsets",
]

#: Condition number above which a candidate's matrix counts as singular.
MAX_CONDITION = 1e12
#: The largest group of items randomized together (its matrix has ``2^g`` rows).
MAX_GROUP = 11


def candidate_matrix(group_matrix: Any, group_size: int, keep: Sequence[int]) -> np.ndarray:
    """``P_{C_r}``: the transition matrix of the items at positions ``keep`` of a group whose
    ``2^g x 2^g`` pattern matrix is ``group_matrix`` (Prop. 7.2 for the M-category scheme)."""
    return marginal_matrix(group_matrix, [2] * int(group_size), list(keep))


def pattern_counts(subset_supports: np.ndarray) -> np.ndarray:
    """Prop. 7.4: the counts of the ``2^k`` presence patterns of ``k`` items from the supports
    of their subsets.

    ``subset_supports[b]`` is the number of records holding every item whose bit is set in
    ``b`` (item 0 is the most significant bit, so ``b`` is the pattern's index, first item
    slowest); ``subset_supports[0] = N``.  The result's entry ``b`` counts the records whose
    pattern is exactly ``b``: ``T_s = sum_{C3 ⊇ s} (-1)^{|C3| - |s|} sup(C3)``, the Möbius
    transform over supersets, done one item at a time.
    """
    v = np.array(subset_supports, dtype=float)
    k = v.size.bit_length() - 1 if v.size else -1
    if v.ndim != 1 or k < 0 or v.size != 1 << k:
        raise ParameterError(f"need 2^k subset supports, got {v.size}")
    t = v.reshape([2] * k) if k else v
    for axis in range(k):
        absent = [slice(None)] * k
        present = [slice(None)] * k
        absent[axis], present[axis] = 0, 1
        t[tuple(absent)] -= t[tuple(present)]
    return t.reshape(-1)


def apriori_gen(
    frequent: Sequence[tuple[int, ...]], *, prune: bool = True
) -> list[tuple[int, ...]]:
    """Apriori-gen: join two frequent ``(k-1)``-itemsets (sorted tuples) that share their first
    ``k-2`` items, then (``prune``) drop a candidate with an infrequent ``(k-1)``-subset.
    ``prune=False`` is the thesis's pseudo-code as printed (join only)."""
    level = sorted(set(frequent))
    known = set(level)
    out: list[tuple[int, ...]] = []
    for i, a in enumerate(level):
        for b in level[i + 1 :]:
            if a[:-1] != b[:-1]:
                break  # sorted: later b's differ in the prefix too
            c = (*a, b[-1])
            if not prune or all(c[:j] + c[j + 1 :] in known for j in range(len(c) - 2)):
                out.append(c)
    return out


def _pack(items01: np.ndarray) -> np.ndarray:
    """Each column of a 0/1 ``(n, m)`` array as a row of 64-bit words."""
    x = np.ascontiguousarray(np.asarray(items01).T.astype(bool))
    packed = np.packbits(x, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _count(bits: np.ndarray, itemset: Sequence[int]) -> int:
    acc = bits[itemset[0]].copy()
    for i in itemset[1:]:
        np.bitwise_and(acc, bits[i], out=acc)
    return int(np.bitwise_count(acc).sum())


def itemset_supports(items01: Any, itemsets: Sequence[Sequence[int]]) -> np.ndarray:
    """The support counts of ``itemsets`` (item positions) in a 0/1 record array: the exact
    counts on original data, the randomized ones on randomized data."""
    x = _check_items(items01)
    bits = _pack(x)
    for s in itemsets:
        if not len(s) or min(s) < 0 or max(s) >= x.shape[1]:
            raise ParameterError(f"itemset {tuple(s)} names an item outside 0..{x.shape[1] - 1}")
    return np.asarray([_count(bits, list(s)) for s in itemsets], dtype=np.int64)


def estimated_supports(
    X: Any,
    itemsets: Sequence[Sequence[int]],
    *,
    groups: Sequence[Sequence[int]] | None = None,
    p: float | None = None,
    matrices: Sequence[Any] | None = None,
) -> np.ndarray:
    """The estimated support counts of ``itemsets`` (item positions) from randomized 0/1
    records ``X``, without the search: every subset of every itemset is counted, then Props.
    7.2-7.4 (``groups``, ``p`` and ``matrices`` as in :meth:`PramApriori.fit`)."""
    x = _check_items(X)
    m = x.shape[1]
    part, mats = _partition(m, groups, p, matrices)
    est = _SupportEstimator([f"item{i}" for i in range(m)], part, mats)
    sets = [tuple(sorted({int(i) for i in s})) for s in itemsets]
    for s in sets:
        if not s or s[0] < 0 or s[-1] >= m:
            raise ParameterError(f"itemset {s} names an item outside 0..{m - 1}")
    subsets = sorted({t for s in sets for r in range(1, len(s) + 1) for t in combinations(s, r)})
    counts = itemset_supports(x, subsets)
    supports: dict[tuple[int, ...], int] = {(): x.shape[0]}
    supports.update(zip(subsets, (int(c) for c in counts)))
    bits = _pack(x)  # a group that joins a candidate whole needs its other items' subsets

    def count(members: tuple[int, ...]) -> int:
        return _count(bits, members)

    return np.asarray([est.estimate(s, supports, count) for s in sets], dtype=float)


def _partition(m: int, groups, p, matrices) -> tuple[list[list[int]], list[np.ndarray]]:
    """Groups (a partition of ``0..m-1``; unlisted items alone) and their pattern matrices."""
    part = check_grouping(range(m), [list(g) for g in groups] if groups else [])
    part = [[int(i) for i in g] for g in part]
    if matrices is None:
        if p is None:
            raise ParameterError("give the randomization: p or one matrix per group")
        return part, [_m_category(1 << len(g), p) for g in part]
    if groups is None:
        raise ParameterError("matrices need the groups they belong to")
    if len(matrices) != len(part):
        raise ParameterError(f"{len(matrices)} matrices for {len(part)} groups")
    return part, [np.asarray(mat, dtype=float) for mat in matrices]


def score_itemsets(
    found: FrequentItemsets, original01: Any, truly_frequent: Collection[tuple[int, ...]]
) -> tuple[ItemsetScores, np.ndarray]:
    """Ma's Sec. 7.1.4 measures of ``found`` against the original 0/1 records (whose columns
    are ``found.items``) and the itemsets frequent in them (item positions); also the true
    support shares of the found itemsets."""
    n = found.n_records
    true = itemset_supports(original01, found.itemsets) / n
    scores = itemset_scores(
        dict(zip(found.itemsets, found.support / n)),
        dict(zip(found.itemsets, true)),
        truly_frequent,
    )
    return scores, true


def _check_items(items01: Any) -> np.ndarray:
    x = np.asarray(items01)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ParameterError(f"items must be a 2-d (records x items) array, got shape {x.shape}")
    if x.size and not np.isin(x, (0, 1)).all():
        bad = np.argwhere(~np.isin(x, (0, 1)))[0]
        raise ParameterError(
            f"items must be 0/1: record {int(bad[0])}, item {int(bad[1])} holds "
            f"{x[bad[0], bad[1]].item()!r}"
        )
    return x


@dataclass(frozen=True)
class FrequentItemsets(ToFrames):
    """The itemsets found frequent, with their estimated and randomized supports (counts).

    ``itemsets`` are tuples of item positions into ``items``; ``levels`` holds per size
    ``(k, candidates, frequent)``.
    """

    items: tuple[str, ...]
    n_records: int
    min_support: float
    itemsets: tuple[tuple[int, ...], ...]
    support: np.ndarray
    randomized_support: np.ndarray
    levels: tuple[tuple[int, int, int], ...]

    def __len__(self) -> int:
        return len(self.itemsets)

    def names(self, itemset: Sequence[int]) -> tuple[str, ...]:
        return tuple(self.items[i] for i in itemset)

    def shares(self) -> dict[frozenset[str], float]:
        """``{itemset (names): estimated support share}``."""
        n = self.n_records
        return {frozenset(self.names(s)): float(c) / n for s, c in zip(self.itemsets, self.support)}

    def to_pandas(self) -> pd.DataFrame:
        n = self.n_records
        return pd.DataFrame(
            {
                "itemset": [", ".join(self.names(s)) for s in self.itemsets],
                "size": [len(s) for s in self.itemsets],
                "support": np.asarray(self.support, dtype=float) / n,
                "randomized_support": np.asarray(self.randomized_support, dtype=float) / n,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": list(self.items),
            "n_records": self.n_records,
            "min_support": self.min_support,
            "levels": [{"size": k, "candidates": c, "frequent": f} for k, c, f in self.levels],
            "itemsets": [
                {
                    "items": list(self.names(s)),
                    "support": float(c) / self.n_records,
                    "randomized_support": float(r) / self.n_records,
                }
                for s, c, r in zip(self.itemsets, self.support, self.randomized_support)
            ],
        }


class _SupportEstimator:
    """Estimated supports from randomized subset supports, for one partition into groups
    (the per-candidate weight vectors are cached per group and kept items)."""

    def __init__(
        self, names: Sequence[str], part: Sequence[Sequence[int]], mats: Sequence[Any]
    ) -> None:
        n_items = len(names)
        self._names = list(names)
        self._group_of = np.full(n_items, -1, dtype=np.int64)
        self._slot = np.empty(n_items, dtype=np.int64)
        self._parts = [list(g) for g in part]
        self._mats = []
        for g, (items, mat) in enumerate(zip(self._parts, mats)):
            if len(items) > MAX_GROUP:
                raise ParameterError(
                    f"group {g + 1} has {len(items)} items: at most {MAX_GROUP} can be "
                    f"randomized together (its matrix has 2^{len(items)} rows)"
                )
            self._group_of[items] = g
            self._slot[items] = np.arange(len(items))
            self._mats.append(
                validate_matrix(mat, size=1 << len(items), name=f"matrix of group {g + 1}")
            )
        self._weights: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
        self._products: dict[tuple, np.ndarray] = {}

    def _reduces(self, group: int, keep: tuple[int, ...]) -> bool:
        """Whether the group's matrix reduces exactly to the items at ``keep`` (cached)."""
        key = (group, keep, "reduces")
        r = self._weights.get(key)
        if r is None:
            r = reduces_exactly(self._mats[group], [2] * len(self._parts[group]), list(keep))
            self._weights[key] = r
        return bool(r)

    def _weight(self, group: int, keep: tuple[int, ...]) -> np.ndarray:
        """The weights of the group's patterns for the items at ``keep`` (cached): over
        ``keep``'s ``2^|keep|`` patterns, ``(P_{C_r}^-1)[:, last]`` when the group's matrix
        reduces exactly to ``keep`` (Prop. 7.2); otherwise over the whole group's patterns,
        ``P_G^-1 1_keep`` with ``1_keep`` the indicator of the patterns holding every item of
        ``keep``: the whole group is estimated and the other items summed out."""
        key = (group, keep)
        w = self._weights.get(key)
        if w is None:
            size = len(self._parts[group])
            whole = not self._reduces(group, keep)
            pc = self._mats[group] if whole else candidate_matrix(self._mats[group], size, keep)
            cond = np.linalg.cond(pc)
            if not np.isfinite(cond) or cond > MAX_CONDITION:
                names = ", ".join(self._names[self._parts[group][i]] for i in keep)
                raise MatrixError(
                    f"the randomization matrix of item(s) {names} (group {group + 1}) is "
                    f"singular (condition number {cond:.3g}): every pattern is equally likely "
                    "whatever the truth (p = 0.5 for an item randomized alone, 0.75 for a "
                    "pair), so no support can be estimated; use a smaller p"
                )
            if whole:
                patterns = np.indices([2] * size).reshape(size, -1)
                e = np.all(patterns[list(keep)] == 1, axis=0).astype(float)
            else:
                e = np.zeros(len(pc))
                e[-1] = 1.0
            w = np.linalg.solve(pc, e)  # P^-1 e: the last column of P^-1, or a sum of columns
            self._weights[key] = w
        return w

    def estimate(
        self, c: tuple[int, ...], supports: dict[tuple[int, ...], int], count=None
    ) -> float:
        """The estimated support count of candidate ``c`` (Props. 7.3 and 7.4); a subset whose
        randomized support is not in ``supports`` is counted with ``count`` (and stored).

        A group whose matrix does not reduce exactly to ``c``'s items
        (:func:`~privlab.estimate.pram.reduces_exactly`) joins ``c`` whole: its pattern
        counts are estimated and its other items summed out (the marginal matrix would need
        the unknown joint of the group's items, privlab issue 31)."""
        held: dict[int, list[int]] = {}
        for i in c:
            held.setdefault(int(self._group_of[i]), []).append(i)
        members = set(c)
        for g, items in held.items():
            if not self._reduces(g, tuple(sorted(int(self._slot[i]) for i in items))):
                members.update(self._parts[g])
        order = sorted(members, key=lambda i: (self._group_of[i], self._slot[i]))
        k = len(order)
        subset = np.empty(1 << k, dtype=float)
        for b in range(1 << k):
            sub = tuple(sorted(order[t] for t in range(k) if b >> (k - 1 - t) & 1))
            if sub not in supports:
                if count is None:
                    raise KeyError(sub)
                supports[sub] = count(sub)
            subset[b] = supports[sub]
        t_tilde = pattern_counts(subset)
        segments = [
            (g, tuple(sorted(int(self._slot[i]) for i in items)))
            for g, items in sorted(held.items())
        ]
        key = tuple(segments)
        w = self._products.get(key)
        if w is None:  # the Kronecker product of the groups' weight vectors
            w = np.ones(1)
            for g, keep in segments:
                w = np.outer(w, self._weight(g, keep)).ravel()
            self._products[key] = w
        return float(w @ t_tilde)


@dataclass(kw_only=True, eq=False, repr=False)
class PramApriori(BaseEstimator):
    """Apriori over group-randomized items with estimated supports (Ma 2006, Sec. 7.1).

    Parameters
    ----------
    min_support
        ``sup_min`` in (0, 1]: an itemset is frequent when its estimated support share
        reaches it (the thesis's experiments use 0.05).
    max_len
        Largest itemset size searched (default: no limit).
    subset_prune
        Apriori-gen's subset-prune step (default).  ``False`` runs the thesis's pseudo-code
        as printed, join only: a candidate may then have an infrequent subset, whose
        randomized support is counted on demand for the inclusion-exclusion.  The found
        itemsets are then not always downward closed.
    progress
        Show a progress bar per level on a terminal.

    Attributes
    ----------
    itemsets_ : FrequentItemsets
        What was found, with estimated and randomized supports.
    randomized_supports_ : dict
        ``{itemset (sorted item positions): randomized support count}`` of every counted
        candidate (the "trie").
    n_records_ : int
    items_ : tuple of str
    groups_ : tuple of tuple of int
        The partition of the item positions into groups (from a release, positions from
        ``len(items_)`` on are items of a partly mined group that serve its estimates).
    """

    _parameter_constraints: ClassVar[dict] = {
        "min_support": [Interval(Real, 0, 1, closed="right")],
        "max_len": [Interval(Integral, 1, None, closed="left"), None],
        "subset_prune": ["boolean"],
        "progress": ["boolean"],
    }

    # scikit-learn's parameters: the dataclass writes the __init__ that stores them
    min_support: float = 0.05
    max_len: int | None = None
    subset_prune: bool = True
    progress: bool = False

    # -- front ends --------------------------------------------------------------------------
    def fit(
        self,
        X: Any,
        *,
        groups: Sequence[Sequence[int]] | None = None,
        p: float | None = None,
        matrices: Sequence[Any] | None = None,
        items: Sequence[str] | None = None,
    ) -> PramApriori:
        """Mine the randomized 0/1 records ``X`` (records x items).

        ``groups`` partitions the item positions (default: every item alone); each group's
        ``2^g x 2^g`` pattern matrix is given in ``matrices`` or is the M-category matrix with
        parameter ``p`` (``p = 0``: the records are not randomized, plain Apriori).
        """
        x = _check_items(X)
        m = x.shape[1]
        names = tuple(f"item{i}" for i in range(m)) if items is None else tuple(map(str, items))
        if len(names) != m:
            raise ParameterError(f"{len(names)} item names for {m} items")
        part, mats = _partition(m, groups, p, matrices)
        return self._fit(x, names, part, mats)

    def fit_release(self, release: Randomized, items: Sequence[str] | None = None) -> PramApriori:
        """Mine a PRAM release of items (``privlab pram items``; every column a 0/1 item);
        the groups are the release's jointly randomized blocks.  ``items`` restricts the
        search (default: every item column of the release)."""
        from privlab.learn.pram_bn import PramData

        data = PramData.from_release(release)
        schema = data.table.schema
        names = list(data.names) if items is None else list(items)
        if not names:
            raise ParameterError("no item to mine")
        for c in names:
            if c not in data.names:
                raise ParameterError(
                    f"the release has no item {c!r} (items: {', '.join(data.names[:8])}"
                    f"{', ...' if len(data.names) > 8 else ''})"
                )
            if tuple(str(v) for v in schema[c].domain) not in (("0", "1"), ("False", "True")):
                raise ParameterError(
                    f"column {c!r} is not an item: its domain is {list(schema[c].domain)[:5]}, "
                    "not (0, 1); make an item release with `privlab pram items`"
                )
        # a factor per block, block order; a block that does not reduce exactly to the items
        # asked for is mined whole (its other items are estimated, never reported)
        plan = release_plan(data, names)
        cols = [*names, *plan.extra]
        pos = {c: i for i, c in enumerate(cols)}
        part: list[list[int]] = []
        for span in plan.spans:
            part.append([pos[c] for c in span])
        mats = [np.asarray(f, dtype=float) for f in plan.factors]
        return self._fit(data.table.columns(cols), tuple(names), part, mats, plan.extra)

    # -- the search --------------------------------------------------------------------------
    def check_params(self) -> PramApriori:
        """Check the parameters (a :class:`ParameterError` names a bad one); ``fit`` does."""
        s = self.min_support
        if isinstance(s, bool) or not isinstance(s, Real) or not 0 < float(s) <= 1:
            raise ParameterError(f"the support threshold must lie in (0, 1], got {s!r}")
        k = self.max_len
        check_int("max_len", k, low=1, none="no limit")
        return self

    def _fit(self, x, names, part, mats, extra: Sequence[str] = ()) -> PramApriori:
        """Mine the items ``names``, the first columns of ``x``; the ``extra`` columns after
        them are other items of their groups that only serve the estimates."""
        self.check_params()
        n, m = x.shape[0], len(names)
        if n == 0:
            raise ParameterError("no records to mine")
        est_ = _SupportEstimator([*names, *extra], part, mats)
        bits = _pack(x)

        def count(members: tuple[int, ...]) -> int:
            return _count(bits, members)

        threshold = float(self.min_support)
        supports: dict[tuple[int, ...], int] = {(): n}
        found: list[tuple[int, ...]] = []
        est: list[float] = []
        levels: list[tuple[int, int, int]] = []
        candidates = [(i,) for i in range(m)]
        k = 1
        while candidates and (self.max_len is None or k <= self.max_len):
            frequent: list[tuple[int, ...]] = []
            prefix: tuple[int, ...] | None = None
            acc = None
            for c in track(candidates, description=f"Apriori: {k}-itemsets",
                           enabled=self.progress):  # fmt: skip
                if k == 1:
                    supports[c] = int(np.bitwise_count(bits[c[0]]).sum())
                else:
                    if c[:-1] != prefix:  # candidates come grouped by their prefix
                        prefix = c[:-1]
                        acc = bits[prefix[0]].copy()
                        for i in prefix[1:]:
                            np.bitwise_and(acc, bits[i], out=acc)
                    supports[c] = int(np.bitwise_count(acc & bits[c[-1]]).sum())
                s_hat = est_.estimate(c, supports, count)
                if s_hat / n >= threshold:
                    frequent.append(c)
                    found.append(c)
                    est.append(s_hat)
            levels.append((k, len(candidates), len(frequent)))
            candidates = apriori_gen(frequent, prune=bool(self.subset_prune))
            k += 1
        self.randomized_supports_ = {c: v for c, v in supports.items() if c and c[-1] < m}
        self.itemsets_ = FrequentItemsets(
            items=tuple(names),
            n_records=int(n),
            min_support=threshold,
            itemsets=tuple(found),
            support=np.asarray(est, dtype=float),
            randomized_support=np.asarray([supports[c] for c in found], dtype=np.int64),
            levels=tuple(levels),
        )
        self.n_records_ = int(n)
        self.items_ = tuple(names)
        self.groups_ = tuple(tuple(g) for g in part)
        return self


def _m_category(j: int, p: Any) -> np.ndarray:
    """Ma's symmetric M-category matrix over ``j`` patterns: keep ``1 - p``, else each other
    pattern ``p / (j - 1)`` (the same as :func:`privlab.publish.randomization.
    joint_m_category_matrix`, which this layer may not import)."""
    if isinstance(p, bool) or not isinstance(p, Real) or not 0 <= float(p) <= 1:
        raise ParameterError(f"p must be a number in [0, 1], got {p!r}")
    m = np.full((j, j), float(p) / (j - 1))
    np.fill_diagonal(m, 1.0 - float(p))
    return m
