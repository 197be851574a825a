"""The generalization lattice and its exact optimal search (full-domain recoding).

A *node* is a vector of levels, one per quasi-identifier; node ``u`` is below ``v`` when
``u <= v`` componentwise.  Evaluating a node maps every distinct (QI tuple, sensitive value)
of the input through per-level lookup arrays into an integer key (mixed radix over the level
sizes), then counts class sizes with ``np.bincount`` (small key spaces) or ``np.unique``.

**Roll-up** (Kohlmayer et al. 2012, Sec. 4.3, "roll-up" of the equivalence classes of a
predecessor).  A class of a node ``u`` falls whole into one class of every ``v >= u``, so a
node is evaluated from the (class, sensitive value) table of an already evaluated node below
it (the smallest one kept) instead of from the input rows; the per-level maps of a hierarchy
are lifted to level-to-level maps once.

**Predictive tagging** (Flash / OLA / Incognito, Kohlmayer et al. 2012, El Emam et al. 2009,
LeFevre et al. 2005).  The feasibility predicate "records in violating classes <= the
suppression limit" is monotone for k-anonymity and distinct l-diversity, with or without
suppression, and for every model without suppression: a satisfying node tags every node
above it as satisfying, a failing one every node below it as failing.  When the model is not
monotone under suppression (entropy / recursive l-diversity, t-closeness, delta-disclosure),
its monotone *relaxation* (k-anonymity and, when l is set, distinct l-diversity, which
entropy and recursive l-diversity imply) is tagged instead and only the nodes it lets
through are checked against the full model.

**Bounds.**  Non-uniform entropy (Gionis & Tassa 2009; ARX's precomputed metric) of the
whole table generalized to ``v`` is a sum of per-QI terms ``G_j(v_j)`` that depend on the
level alone; it never decreases with generalization and is a lower bound of every
suppression accounting (:data:`ACCOUNTINGS`).  For the entropy and height objectives nodes
are visited in increasing order of that bound, each settled by Flash's bisection on a path up
the lattice, and the search stops once the bound exceeds the best loss found (without
suppression, or with ARX's monotonic accounting, the loss *is* the bound, so the first
feasible node is the optimum): the optimum is proved, not sampled.  The other objectives
tag the whole lattice (:func:`_tag`); without suppression they are monotone and only the
minimal feasible nodes are costed; with it, discernibility has the class-size bound of
:func:`_prune_discernibility` and the others are computed at every feasible node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from privlab.data.counts import distinct_rows, group_counts, joint_index
from privlab.data.hierarchy import CompiledHierarchy
from privlab.errors import ParameterError
from privlab.publish.models import PrivacyModel

OBJECTIVES = ("discernibility", "avg_class_size", "precision", "entropy", "kl", "height")
#: How the ``entropy`` objective charges suppressed records (see :meth:`Lattice.cost`).
ACCOUNTINGS = ("privlab", "arx", "arx-monotonic")
_BINCOUNT_MAX = 1 << 22
_MAX_KEY = float(1 << 62)
_NEVER = np.iinfo(np.int64).max
#: A rolled-up class table is kept when it has at most this share of its base's rows.
_KEEP_SHARE = 0.5
#: Rolled-up class tables kept for later roll-ups: at most this many cells in all.
_CACHE_CELLS = 3_000_000


def _distinct_rows_hashed(
    codes: np.ndarray, sizes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~privlab.data.counts.distinct_rows` by hashing (``pandas.factorize``, linear
    time) instead of sorting: distinct rows in order of first appearance."""
    if (
        codes.shape[0] == 0
        or codes.shape[1] == 0
        or float(np.prod(np.asarray(sizes, dtype=float))) >= _MAX_KEY
    ):
        return distinct_rows(codes, sizes)
    inverse = pd.factorize(joint_index(codes, sizes))[0].astype(np.int64)
    # Codes are numbered by first appearance: a row is a first occurrence when its code
    # exceeds every code before it.
    before = np.maximum.accumulate(np.concatenate([[-1], inverse[:-1]]))
    return np.flatnonzero(inverse > before), inverse, np.bincount(inverse)


@dataclass(frozen=True)
class _Classes:
    """The (class, sensitive value) table of an evaluated node: one row per pair."""

    node: tuple[int, ...]
    codes: tuple[np.ndarray, ...]  # d columns (r,): generalized codes at ``node``
    weights: np.ndarray  # (r,) records
    sens: np.ndarray | None  # (r,) sensitive codes


class Lattice:
    """Distinct input rows encoded once; evaluates nodes of the generalization lattice.

    Parameters
    ----------
    qi_codes
        ``(n, d)`` codes of the quasi-identifiers.
    hierarchies
        One compiled hierarchy per QI, in the same order.
    sensitive, n_sensitive
        Sensitive codes ``(n,)`` and domain size, or None when the model needs none.
    weights
        Records per row of ``qi_codes`` (default: one each): the rows may then be an
        aggregate, such as the distinct (QI, sensitive) counts the Spark engine collects.
    """

    def __init__(
        self,
        qi_codes: np.ndarray,
        hierarchies: Sequence[CompiledHierarchy],
        sensitive: np.ndarray | None = None,
        n_sensitive: int = 0,
        *,
        weights: np.ndarray | None = None,
    ) -> None:
        qi_codes = np.asarray(qi_codes, dtype=np.int64)
        self.n = int(qi_codes.shape[0])
        self.d = int(qi_codes.shape[1])
        self.hierarchies = tuple(hierarchies)
        self.heights = np.array([h.height for h in self.hierarchies], dtype=np.int64)
        cols = [qi_codes[:, j] for j in range(self.d)]
        radix = [h.sizes()[0] for h in self.hierarchies]
        if sensitive is not None:
            cols.append(np.asarray(sensitive, dtype=np.int64))
            radix.append(max(int(n_sensitive), 1))
        # Distinct rows with weights.
        stacked = np.column_stack(cols) if cols else np.zeros((self.n, 0), dtype=np.int64)
        first, inverse, counts = _distinct_rows_hashed(stacked, radix)
        if weights is not None:
            w = np.asarray(weights, dtype=np.int64)
            if w.shape != (self.n,) or (w.size and w.min() < 1):
                raise ParameterError("weights must give a positive count for every row")
            counts = np.bincount(inverse, weights=w, minlength=first.size).astype(np.int64)
            self.n = int(w.sum())
        weights = counts
        uniq = stacked[first]
        self.rows = uniq[:, : self.d]
        self.row_of = inverse
        self.weights = weights
        self.sens = uniq[:, self.d] if sensitive is not None else None
        self.n_sensitive = int(n_sensitive) if sensitive is not None else 0
        self.overall = (
            np.bincount(self.sens, weights=self.weights, minlength=self.n_sensitive) / self.n
            if self.sens is not None
            else None
        )
        # Per-level generalized codes of every distinct row, and per-row info-loss terms.
        self._entropy_level = [self._entropy_level_costs(j) for j in range(self.d)]
        self._level_sizes = [list(h.sizes()) for h in self.hierarchies]
        self._up = self._level_maps()
        self._rollable = [
            np.array([[m is not None for m in row] for row in per], dtype=bool) for per in self._up
        ]
        self._all_rollable = all(bool(r[np.triu_indices(r.shape[0])].all()) for r in self._rollable)
        root = _Classes(
            tuple([0] * self.d),
            tuple(np.ascontiguousarray(self.rows[:, j]) for j in range(self.d)),
            self.weights,
            self.sens,
        )
        self._kept: list[_Classes] = [root]
        self._kept_nodes = np.zeros((1, self.d), dtype=np.int64)
        self._kept_rows = np.array([self.weights.size], dtype=np.int64)
        self._cache_cells = 0
        self.evaluations = 0

    # -- helpers for the information-loss measures ------------------------------------------
    def _entropy_level_costs(self, j: int) -> np.ndarray:
        """``G_j(lv) = -sum_x f_x log2(f_x / f_g(x))`` per level of QI ``j``: the non-uniform
        entropy of the column generalized to ``lv`` (ARX's ``MetricMDNUEntropyPrecomputed``
        per-column sum, Gionis & Tassa 2009), over domain values, frequencies from the input."""
        h = self.hierarchies[j]
        freq = np.bincount(self.rows[:, j], weights=self.weights, minlength=h.sizes()[0])
        seen = freq > 0
        out = np.zeros(h.height + 1)
        for lv in range(h.height + 1):
            gfreq = np.bincount(h.maps[lv], weights=freq, minlength=h.sizes()[lv])
            f = freq[seen]
            out[lv] = float(-(f * np.log2(f / gfreq[h.maps[lv][seen]])).sum())
        return out

    @cached_property
    def _gen(self) -> list[list[np.ndarray]]:
        """Per QI and level, the generalized code of every distinct row."""
        return [
            [h.maps[lv][self.rows[:, j]] for lv in range(h.height + 1)]
            for j, h in enumerate(self.hierarchies)
        ]

    @cached_property
    def _entropy_terms(self) -> list[list[np.ndarray]]:
        return [self._entropy_term(j) for j in range(self.d)]

    @cached_property
    def _log_leaves(self) -> list[list[np.ndarray]]:
        return [self._log_leaves_term(j) for j in range(self.d)]

    def _entropy_term(self, j: int) -> list[np.ndarray]:
        """Per distinct row, ``-log2 P(value | generalized value)`` at every level (ARX's
        non-uniform entropy, Gionis & Tassa 2009), frequencies from the input table."""
        h = self.hierarchies[j]
        vals = self.rows[:, j]
        freq = np.bincount(vals, weights=self.weights, minlength=h.sizes()[0])
        out = []
        for lv in range(h.height + 1):
            gfreq = np.bincount(h.maps[lv], weights=freq, minlength=h.sizes()[lv])
            out.append(-np.log2(freq[vals] / gfreq[h.maps[lv][vals]]))
        return out

    def _log_leaves_term(self, j: int) -> list[np.ndarray]:
        """Per distinct row, log of the number of domain values under its label per level."""
        h = self.hierarchies[j]
        out = []
        for lv in range(h.height + 1):
            leaves = np.bincount(h.maps[lv], minlength=h.sizes()[lv])
            out.append(np.log(leaves[h.maps[lv][self.rows[:, j]]]))
        return out

    def _level_maps(self) -> list[list[list[np.ndarray | None]]]:
        """``up[j][a][b]``: the level-``b`` code of each level-``a`` label of QI ``j``
        (``b >= a``), or None when a level-``a`` label has two parents at level ``b`` (then
        nodes are rolled up from nothing above level ``a``)."""
        up: list[list[list[np.ndarray | None]]] = []
        for h in self.hierarchies:
            per: list[list[np.ndarray | None]] = []
            for a in range(h.height + 1):
                row: list[np.ndarray | None] = []
                for b in range(h.height + 1):
                    if b < a:
                        row.append(None)
                        continue
                    m = np.zeros(h.sizes()[a], dtype=np.int64)
                    m[h.maps[a]] = h.maps[b]
                    row.append(m if np.array_equal(m[h.maps[a]], h.maps[b]) else None)
                per.append(row)
            up.append(per)
        return up

    # -- lattice ----------------------------------------------------------------------------
    def nodes(self) -> np.ndarray:
        """Every node, ``(N, d)``, in lexicographic order."""
        if self.d == 0:
            return np.zeros((1, 0), dtype=np.int64)
        grids = np.meshgrid(*[np.arange(int(h) + 1) for h in self.heights], indexing="ij")
        return np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int64)

    @staticmethod
    def _group(gen: np.ndarray, sizes_at: Sequence[int]) -> tuple[np.ndarray, int]:
        """Dense class id of every row of ``gen`` ``(r, d)`` (ascending key order)."""
        r = gen.shape[0]
        space = float(np.prod(np.asarray(sizes_at, dtype=float)))
        if space <= _BINCOUNT_MAX and space <= 8 * max(r, 1):
            key = joint_index(gen, sizes_at)
            used = np.zeros(int(space), dtype=bool)
            used[key] = True
            ids = np.flatnonzero(used)
            remap = np.zeros(int(space), dtype=np.int64)
            remap[ids] = np.arange(ids.size)
            return remap[key], int(ids.size)
        first, inv, _ = distinct_rows(gen, sizes_at)
        return inv, int(first.size)

    def classes(self, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray, int]:
        """Class index of every distinct row, and class sizes, at ``node``."""
        node = [int(x) for x in node]
        sizes_at = [h.sizes()[lv] for h, lv in zip(self.hierarchies, node)]
        gen = np.column_stack([self._gen[j][lv] for j, lv in enumerate(node)])
        cls, g = self._group(gen, sizes_at)
        sizes = np.bincount(cls, weights=self.weights, minlength=g).astype(np.int64)
        return cls, sizes, g

    def class_counts(self, cls: np.ndarray, n_classes: int) -> np.ndarray | None:
        if self.sens is None:
            return None
        return group_counts(
            cls, self.sens, self.n_sensitive, n_groups=n_classes, weights=self.weights
        )

    def evaluate(
        self, node: Sequence[int], model: PrivacyModel
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(class of each distinct row, class sizes, class ok?)`` at ``node``."""
        cls, sizes, g = self.classes(node)
        counts = self.class_counts(cls, g) if model.needs_sensitive else None
        ok = model.class_ok(sizes, counts, self.overall)
        return cls, sizes, ok

    def _base(self, node: tuple[int, ...]) -> _Classes:
        """The smallest kept class table of a node below ``node`` it can be rolled up from."""
        below = (self._kept_nodes <= np.asarray(node)).all(axis=1)
        if not self._all_rollable:
            for j, b in enumerate(node):
                below &= self._rollable[j][self._kept_nodes[:, j], b]
        rows = np.where(below, self._kept_rows, _NEVER)
        return self._kept[int(np.argmin(rows))]  # the root (row 0) is always below

    def violations(self, node: Sequence[int], model: PrivacyModel) -> int:
        """Records in classes of ``node`` that violate ``model``, computed by roll-up from the
        class table of an evaluated node below (Kohlmayer et al. 2012, Sec. 4.3).

        The classes are mixed-radix keys of the generalized codes; with the sensitive value
        appended when the model needs it.  The node's own (class, sensitive value) table is
        kept for later roll-ups when it is at most half its base's size.
        """
        node = tuple(int(x) for x in node)
        self.evaluations += 1
        base = self._base(node)
        sizes_at = [self._level_sizes[j][lv] for j, lv in enumerate(node)]
        m = max(self.n_sensitive, 1) if base.sens is not None else 1
        space = float(np.prod(np.asarray(sizes_at, dtype=float)))
        if space * m >= _MAX_KEY:  # too many cells for an int64 key: rows, no roll-up
            _, sizes, ok = self.evaluate(node, model)
            return int(sizes[~ok].sum())
        key = None
        stride = 1
        for j in range(self.d - 1, -1, -1):
            if sizes_at[j] == 1:  # one label (the root): adds nothing to the key
                continue
            a, b = base.node[j], node[j]
            col = base.codes[j] if a == b else self._up[j][a][b][base.codes[j]]
            if key is None:
                key = col * stride if stride > 1 else col.astype(np.int64, copy=True)
            else:
                key += col * stride if stride > 1 else col
            stride *= sizes_at[j]
        if key is None:
            key = np.zeros(base.weights.size, dtype=np.int64)
        if base.sens is not None:
            key = key * m + base.sens
        cells = int(space) * m
        if cells <= _BINCOUNT_MAX and cells <= 8 * key.size:
            full = np.bincount(key, weights=base.weights, minlength=cells)
            cell = np.flatnonzero(full)
            w = full[cell].astype(np.int64)
        else:
            cell, inv = np.unique(key, return_inverse=True)
            w = np.bincount(inv.reshape(-1), weights=base.weights).astype(np.int64)
        # ``cell`` sorted: the (class, sensitive) pairs of a class are adjacent.
        if m > 1:
            cls_key = cell // m
            starts = np.flatnonzero(np.r_[True, cls_key[1:] != cls_key[:-1]])
            sizes = np.add.reduceat(w, starts) if w.size else w
        else:  # one sensitive value (or none): each cell is a class of its own
            cls_key, sizes = cell, w
            starts = np.arange(w.size)
        counts = None
        if model.needs_sensitive:
            g = starts.size
            cls = np.repeat(np.arange(g), np.diff(np.r_[starts, w.size]))
            counts = np.zeros((g, self.n_sensitive), dtype=np.int64)
            counts[cls, cell % m] = w
        ok = model.class_ok(sizes, counts, self.overall)
        if base.node != node and w.size <= _KEEP_SHARE * base.weights.size:
            codes = np.unravel_index(cls_key, sizes_at)
            sens = (cell % m) if base.sens is not None else None
            self._keep(_Classes(node, tuple(np.asarray(c) for c in codes), w, sens))
        return int(sizes[~ok].sum())

    def _keep(self, tab: _Classes) -> None:
        cells = tab.weights.size * self.d
        while self._cache_cells + cells > _CACHE_CELLS and len(self._kept) > 1:
            # Drop the largest kept table (never the root, entry 0).
            worst = 1 + int(np.argmax(self._kept_rows[1:]))
            self._cache_cells -= self._kept.pop(worst).weights.size * self.d
            self._kept_nodes = np.delete(self._kept_nodes, worst, axis=0)
            self._kept_rows = np.delete(self._kept_rows, worst)
        self._kept.append(tab)
        self._kept_nodes = np.vstack([self._kept_nodes, np.asarray(tab.node)[None, :]])
        self._kept_rows = np.append(self._kept_rows, tab.weights.size)
        self._cache_cells += cells

    def generalization_entropy(self, nodes: np.ndarray) -> np.ndarray:
        """Non-uniform entropy (bits) of the whole table generalized to each of ``nodes``
        ``(N, d)``, no record suppressed: ``sum_j G_j(v_j)``, ARX's precomputed metric
        (``MetricMDNUEntropyPrecomputed``, Kohlmayer et al. 2012; Gionis & Tassa 2009)."""
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1, self.d)
        out = np.zeros(nodes.shape[0])
        for j in range(self.d):
            out += self._entropy_level[j][nodes[:, j]]
        return out

    def cost(
        self,
        node: Sequence[int],
        cls: np.ndarray,
        sizes: np.ndarray,
        ok: np.ndarray,
        objective: str,
        k: int,
        accounting: str = "privlab",
    ) -> float:
        """Information loss of ``node`` (lower is better); suppressed rows count fully.

        Non-uniform entropy (``objective="entropy"``, Gionis & Tassa 2009, Sec. 3: a record
        whose value ``x`` of QI ``j`` is published as ``g`` costs ``-log2 P(x | g)``, with
        frequencies from the input table) charges suppressed records by ``accounting``:

        ``"privlab"``
            A suppressed record is charged as if every QI were generalized to its top level:
            ``-log2 P(x)`` per QI.  The loss is what a reader of the release loses per record.
        ``"arx-monotonic"``
            ARX's monotonic precomputed metric (``createPrecomputedEntropyMetric(t, true)``,
            class ``MetricMDNUEntropyPrecomputed``): the loss is that of the whole table
            generalized to the node, ``sum_j G_j(v_j)``; suppressed records cost what they
            would at the node, nothing more.  Monotone in generalization.
        ``"arx"``
            ARX's non-monotonic precomputed metric (``...(t, false)``, class
            ``MetricMDNUNMEntropyPrecomputed``): ``sum_j G_j(v_j)`` plus, per QI, the entropy
            of the suppressed records' *generalized* values among the suppressed records,
            ``-sum_g c_g log2(c_g / S)`` (``c_g`` suppressed records labelled ``g``, ``S``
            suppressed in all).

        The three agree when nothing is suppressed.  With suppression, privlab's reading
        charges a suppressed record ``-log2 P(x | g) - log2 P(g)`` with ``P(g)`` from the
        input table, ARX's non-monotonic one ``-log2 P(x | g) - log2 P(g | suppressed)``
        (within the suppressed records, a smaller charge when they share labels), ARX's
        monotonic one only ``-log2 P(x | g)``; so privlab >= arx >= arx-monotonic.
        ``accounting`` applies to the entropy objective only.
        """
        if accounting not in ACCOUNTINGS:
            raise ParameterError(
                f"accounting must be one of {', '.join(ACCOUNTINGS)}, not {accounting!r}"
            )
        n = self.n
        supp_rows = ~ok[cls]
        n_supp = int(self.weights[supp_rows].sum())
        if objective == "discernibility":
            return float((sizes[ok] ** 2).sum() + n_supp * n)
        if objective == "avg_class_size":
            g = int(ok.sum())
            return float((n - n_supp) / max(g, 1) / k) if g else float("inf")
        if objective == "height":
            return float(sum(node))
        if objective == "precision":
            h = np.maximum(self.heights, 1)
            keep = (n - n_supp) / n
            return float(keep * np.mean(np.asarray(node) / h) + (1 - keep))
        if objective == "entropy":
            base = float(self.generalization_entropy(np.asarray(node))[0])
            if n_supp == 0 or accounting == "arx-monotonic":
                return base
            w = self.weights[supp_rows]
            extra = 0.0
            for j, lv in enumerate(node):
                if accounting == "privlab":
                    top = self._entropy_terms[j][int(self.heights[j])]
                    extra += float(((top - self._entropy_terms[j][lv])[supp_rows] * w).sum())
                else:
                    c = np.bincount(self._gen[j][lv][supp_rows], weights=w)
                    c = c[c > 0]
                    extra -= float((c * np.log2(c / n_supp)).sum())
            return base + extra
        if objective == "kl":
            return self.kl(node, cls, sizes, ok)
        raise ParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")

    def kl(self, node: Sequence[int], cls: np.ndarray, sizes: np.ndarray, ok: np.ndarray) -> float:
        """KL divergence (nats) of the distribution the release induces on the QI domain
        (each class's mass spread uniformly over its generalized cell; suppressed rows over
        the whole domain) from the input's QI distribution (Kifer & Gehrke 2006).

        Over the quasi-identifiers only: Kifer & Gehrke's utility is KL over all attributes,
        the sensitive one included (:func:`privlab.publish.marginals.kl_divergence` of the
        max-ent estimate).  Without suppression the two differ by the sensitive term
        ``sum_q P(q) KL(P(S | q) || share of S in q's class)`` (chain rule; tested in
        ``tests/test_marginals.py``).  The generalization search keeps the QI-only form
        (its objective as documented); the paper's measure is the marginals module's."""
        n = self.n
        supp_rows = ~ok[cls]
        # Aggregate the input distribution over distinct QI tuples (drop the sensitive split).
        log_cell = np.zeros(self.rows.shape[0])
        log_dom = np.zeros(self.rows.shape[0])
        for j, lv in enumerate(node):
            log_cell += self._log_leaves[j][lv]
            log_dom += self._log_leaves[j][int(self.heights[j])]
        n_supp = self.weights[supp_rows].sum()
        mass = np.where(supp_rows, n_supp, sizes[cls]) / n
        log_q = np.log(np.maximum(mass, 1e-300)) - np.where(supp_rows, log_dom, log_cell)
        # P(x) for each distinct QI tuple (rows that differ only in the sensitive value merge).
        _, qinv, _ = distinct_rows(self.rows, [h.sizes()[0] for h in self.hierarchies])
        px = np.bincount(qinv, weights=self.weights) / n
        # log_q is constant over the rows of one QI tuple.
        lq = np.zeros(px.size)
        lq[qinv] = log_q
        return float((px * (np.log(px) - lq)).sum())


@dataclass(frozen=True)
class SearchResult:
    """The optimal node and what the search did.

    ``evaluated`` counts class-table evaluations (roll-ups and row evaluations);
    ``feasible_nodes`` is the number of feasible nodes when the search enumerated them all,
    else None (the bound proved the optimum first); ``costs`` holds the loss of every node
    whose loss was computed.
    """

    node: tuple[int, ...]
    cost: float
    objective: str
    evaluated: int
    n_nodes: int
    feasible_nodes: int | None
    costs: dict[tuple[int, ...], float]


def _cone_masks(nodes: np.ndarray, heights: np.ndarray) -> tuple[list, list]:
    """``ge[j][a]`` / ``le[j][a]``: the nodes whose level of QI ``j`` is >= / <= ``a``; the
    cone above (below) a node is the AND of one row per QI."""
    levels = [np.arange(int(h) + 1)[:, None] for h in heights]
    ge = [nodes[:, j][None, :] >= lv for j, lv in enumerate(levels)]
    le = [nodes[:, j][None, :] <= lv for j, lv in enumerate(levels)]
    return ge, le


def _tag(
    nodes: np.ndarray,
    heights: np.ndarray,
    predicate: Callable[[int], bool],
    masks: tuple[list, list] | None = None,
) -> np.ndarray:
    """Predictive tagging of a monotone ``predicate(i)``: 1 satisfied, -1 not, per node."""
    n, d = nodes.shape
    ge, le = masks if masks is not None else _cone_masks(nodes, nodes.max(axis=0))
    state = np.zeros(n, dtype=np.int8)
    low, high = np.int64(-1), np.int64(np.iinfo(np.int64).max)
    n_ok = n_bad = 0
    while True:
        open_ = state == 0
        if not open_.any():
            return state
        # Mostly failing so far: evaluate the highest open node (a failure there tags a
        # large cone below it); mostly satisfying: the lowest (tags a cone above).
        if n_bad >= n_ok:
            i = int(np.where(open_, heights, low).argmax())
        else:
            i = int(np.where(open_, heights, high).argmin())
        ok = predicate(i)
        side = ge if ok else le
        for j in range(d):
            open_ &= side[j][nodes[i, j]]
        state[open_] = 1 if ok else -1
        n_ok += ok
        n_bad += not ok


def _prune_discernibility(
    lattice, model, nodes, heights, cand, costs, max_suppressed
) -> tuple[list[int], int]:
    """Candidates that may still beat the best discernibility, evaluating in height order.

    Lower bound (valid under suppression): at any node ``v >= u`` a record of a class ``E``
    of ``u`` lies in a class of at least ``max(|E|, k)`` records or is suppressed (charged
    ``n >= |E|``), so ``DM(v) >= sum_E |E| max(|E|, k)``.  Once an evaluated node's bound
    reaches the best cost found, its whole cone above is skipped (as in OLA / Flash).
    """
    lb = np.zeros(nodes.shape[0])
    best = np.inf
    keep: list[int] = []
    n_eval = 0
    for i in sorted(cand, key=lambda i: heights[i]):
        if lb[i] >= best:
            continue
        node = tuple(int(x) for x in nodes[i])
        cls, sizes, ok = lattice.evaluate(node, model)
        n_eval += 1
        bound = float((sizes * np.maximum(sizes, model.k)).sum())
        up = (nodes >= nodes[i]).all(axis=1)
        lb[up] = np.maximum(lb[up], bound)
        if int(sizes[~ok].sum()) > max_suppressed:
            continue
        c = lattice.cost(node, cls, sizes, ok, "discernibility", model.k)
        costs[node] = c
        keep.append(i)
        best = min(best, c)
    return keep, n_eval


def relaxation(model: PrivacyModel) -> PrivacyModel:
    """The monotone part of ``model``: k-anonymity and, when l is set, distinct
    l-diversity with ``ceil(l)`` (entropy l-diversity implies it, ``exp(H) <= #values``, and
    so does recursive (c,l)-diversity, which needs ``r_l > 0``).  A node whose records in
    violating classes exceed the limit under the relaxation exceeds it under ``model``."""
    if model.l is None:
        return PrivacyModel(k=model.k)
    return PrivacyModel(k=model.k, l=int(np.ceil(float(model.l) - 1e-9)))


def optimal_node(
    lattice: Lattice,
    model: PrivacyModel,
    *,
    max_suppressed: int = 0,
    objective: str = "discernibility",
    accounting: str = "privlab",
) -> SearchResult | None:
    """The node of least ``objective`` whose violating classes hold at most
    ``max_suppressed`` records, or None when no node qualifies.

    ``accounting`` says how the entropy objective charges suppressed records
    (:meth:`Lattice.cost`).  The result is the exact optimum over the lattice; ties are
    broken by lower height, then lexicographically.
    """
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    if accounting not in ACCOUNTINGS:
        raise ParameterError(
            f"accounting must be one of {', '.join(ACCOUNTINGS)}, not {accounting!r}"
        )
    nodes = lattice.nodes()
    n_nodes = nodes.shape[0]
    heights = nodes.sum(axis=1)
    costs: dict[tuple[int, ...], float] = {}
    start = lattice.evaluations
    row_evals = 0
    exact = max_suppressed == 0 or model.monotone_with_suppression
    relax = model if exact else relaxation(model)
    state = np.zeros(n_nodes, dtype=np.int8)

    ge, le = masks = _cone_masks(nodes, lattice.heights)
    tops = [int(h) for h in lattice.heights]

    def feasible(i: int) -> bool:
        """Does node ``i`` satisfy the relaxation (tagging its cone)?"""
        if state[i] == 0:
            v = nodes[i]
            ok = lattice.violations(v, relax) <= max_suppressed
            cone = state == 0
            for j in range(lattice.d):  # skip the QIs that bound nothing (level 0 / top)
                if ok and v[j] > 0:
                    cone &= ge[j][v[j]]
                elif not ok and v[j] < tops[j]:
                    cone &= le[j][v[j]]
            state[cone] = 1 if ok else -1
        return bool(state[i] == 1)

    # Index strides of the lexicographic node order; per-QI cost of each generalization step.
    strides = [int(np.prod(lattice.heights[j + 1 :] + 1)) for j in range(lattice.d)]
    step_cost = [np.diff(g).tolist() for g in lattice._entropy_level]

    def resolve(i: int) -> bool:
        """Settle node ``i`` with few evaluations (Flash's binary search on a path, Kohlmayer
        et al. 2012, Sec. 4.2): climb a path from ``i`` to the top and find its lowest
        feasible node by bisection; the failure just below tags a cone holding ``i``."""
        if state[i] == 0:
            v = [int(x) for x in nodes[i]]
            path = [i]
            idx = i
            while True:
                inc = [(step_cost[j][v[j]], j) for j in range(len(v)) if v[j] < tops[j]]
                if not inc:
                    break
                j = min(inc)[1]
                v[j] += 1
                idx += strides[j]
                path.append(idx)
            lo, hi = 0, len(path)
            while lo < hi:
                mid = (lo + hi) // 2
                if feasible(path[mid]):
                    hi = mid
                else:
                    lo = mid + 1
        return bool(state[i] == 1)

    def full(i: int) -> float | None:
        """Loss of node ``i`` under ``model``, or None when it violates the limit."""
        nonlocal row_evals
        node = tuple(int(x) for x in nodes[i])
        cls, sizes, ok = lattice.evaluate(node, model)
        row_evals += 1
        if int(sizes[~ok].sum()) > max_suppressed:
            return None
        c = lattice.cost(node, cls, sizes, ok, objective, model.k, accounting)
        costs[node] = c
        return c

    n_feasible: int | None = None
    additive = objective in ("entropy", "height")
    if additive:
        # Best-first by an additive lower bound of the loss: stop once it exceeds the best.
        lb = lattice.generalization_entropy(nodes) if objective == "entropy" else heights * 1.0
        cost_is_bound = exact and (
            objective == "height" or max_suppressed == 0 or accounting == "arx-monotonic"
        )
        best = np.inf
        order = np.lexsort((heights, lb))  # (bound, height, lexicographic)
        pos = 0
        while pos < n_nodes:
            # Skip the nodes already tagged infeasible, a chunk at a time.
            chunk = np.flatnonzero(state[order[pos : pos + 1024]] != -1)
            if chunk.size == 0:
                pos += 1024
                continue
            i = int(order[pos + int(chunk[0])])
            pos += int(chunk[0]) + 1
            if lb[i] > best:
                break
            if not resolve(i):
                continue
            if cost_is_bound:  # the loss equals the bound: the first feasible node wins
                costs[tuple(int(x) for x in nodes[i])] = float(lb[i])
                break
            c = full(int(i))
            if c is not None:
                best = min(best, c)
    else:
        state = _tag(
            nodes,
            heights,
            lambda i: lattice.violations(nodes[i], relax) <= max_suppressed,
            masks,
        )
        feasible_idx = np.flatnonzero(state == 1)
        if exact and max_suppressed == 0:
            # Monotone objectives: the optimum is a minimal feasible node, one with no
            # feasible node a step below (node - e_j is index - strides[j]).
            feas = state == 1
            minimal = feas.copy()
            for j in range(lattice.d):
                up = np.flatnonzero(nodes[:, j] > 0)
                minimal[up] &= ~feas[up - strides[j]]
            cand = [int(i) for i in np.flatnonzero(minimal)]
        else:
            cand = [int(i) for i in feasible_idx]
        if max_suppressed and objective == "discernibility":
            cand, n_eval = _prune_discernibility(
                lattice, model, nodes, heights, cand, costs, max_suppressed
            )
            row_evals += n_eval
        for i in cand:
            if tuple(int(x) for x in nodes[i]) not in costs:
                full(i)
        if exact:
            n_feasible = int(feasible_idx.size)
    if not costs:
        return None
    # Least cost; ties broken by lower height, then lexicographically.
    best_node = min(costs, key=lambda v: (costs[v], sum(v), v))
    return SearchResult(
        node=best_node,
        cost=costs[best_node],
        objective=objective,
        evaluated=lattice.evaluations - start + row_evals,
        n_nodes=n_nodes,
        feasible_nodes=n_feasible,
        costs=costs,
    )
