"""The generalization lattice and its optimal, vectorized search (full-domain recoding).

A *node* is a vector of levels, one per quasi-identifier; node ``u`` is below ``v`` when
``u <= v`` componentwise.  Evaluating a node maps every distinct (QI tuple, sensitive value)
of the input through per-level lookup arrays into an integer key (mixed radix over the level
sizes), then counts class sizes with ``np.bincount`` (small key spaces) or ``np.unique``.

Search (Flash / OLA / Incognito's predictive tagging, Kohlmayer et al. 2012, El Emam et al.
2009, LeFevre et al. 2005): when the privacy predicate is monotone, an evaluated node that
satisfies it tags every node above it as satisfying, and one that fails tags every node
below it as failing.  The next node evaluated is the highest untagged one while most
evaluations have failed (a failure high up tags a large cone) and the lowest untagged one
otherwise, so the number of evaluations stays close to the size of the boundary between
satisfying and failing nodes.  Every utility objective here is monotone
(never decreases with generalization) when nothing is suppressed, so the optimum lies among
the *minimal* satisfying nodes, which are the only ones whose cost is computed.  With a
suppression limit the objectives are no longer monotone (generalizing can reduce
suppression), so the cost of every satisfying node is computed; and when the model itself
is not monotone under suppression (see
:attr:`~privlab.publish.models.PrivacyModel.monotone_with_suppression`) every node is
evaluated.  Either way the result is the exact optimum over the lattice.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privlab.data.counts import distinct_rows, group_counts, joint_index
from privlab.data.hierarchy import CompiledHierarchy
from privlab.errors import ParameterError
from privlab.publish.models import PrivacyModel

OBJECTIVES = ("discernibility", "avg_class_size", "precision", "entropy", "kl", "height")
_BINCOUNT_MAX = 1 << 22


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
    """

    def __init__(
        self,
        qi_codes: np.ndarray,
        hierarchies: Sequence[CompiledHierarchy],
        sensitive: np.ndarray | None = None,
        n_sensitive: int = 0,
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
        first, inverse, weights = distinct_rows(stacked, radix)
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
        self._gen = [
            [h.maps[lv][self.rows[:, j]] for lv in range(h.height + 1)]
            for j, h in enumerate(self.hierarchies)
        ]
        self._entropy_terms = [self._entropy_term(j) for j in range(self.d)]
        self._log_leaves = [self._log_leaves_term(j) for j in range(self.d)]

    # -- helpers for the information-loss measures ------------------------------------------
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

    # -- lattice ----------------------------------------------------------------------------
    def nodes(self) -> np.ndarray:
        """Every node, ``(N, d)``, in lexicographic order."""
        ranges = [range(int(h) + 1) for h in self.heights]
        return np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(-1, self.d)

    def classes(self, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray, int]:
        """Class index of every distinct row, and class sizes, at ``node``."""
        node = [int(x) for x in node]
        sizes_at = [h.sizes()[lv] for h, lv in zip(self.hierarchies, node)]
        space = float(np.prod(np.asarray(sizes_at, dtype=float)))
        gen = np.column_stack([self._gen[j][lv] for j, lv in enumerate(node)])
        if space <= _BINCOUNT_MAX and space <= 8 * max(self.rows.shape[0], 1):
            key = joint_index(gen, sizes_at)
            sizes = np.bincount(key, weights=self.weights, minlength=int(space))
            used = np.flatnonzero(sizes)
            remap = np.empty(int(space), dtype=np.int64)
            remap[used] = np.arange(used.size)
            return remap[key], sizes[used].astype(np.int64), int(used.size)
        _, inv, _ = distinct_rows(gen, sizes_at)
        sizes = np.bincount(inv, weights=self.weights).astype(np.int64)
        return inv, sizes, int(sizes.size)

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

    def cost(
        self,
        node: Sequence[int],
        cls: np.ndarray,
        sizes: np.ndarray,
        ok: np.ndarray,
        objective: str,
        k: int,
    ) -> float:
        """Information loss of ``node`` (lower is better); suppressed rows count fully."""
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
            per = np.zeros(self.rows.shape[0])
            top = np.zeros(self.rows.shape[0])
            for j, lv in enumerate(node):
                per += self._entropy_terms[j][lv]
                top += self._entropy_terms[j][int(self.heights[j])]
            per = np.where(supp_rows, top, per)
            return float((per * self.weights).sum())
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
    """The optimal node and what the search did."""

    node: tuple[int, ...]
    cost: float
    objective: str
    evaluated: int
    n_nodes: int
    feasible_nodes: int | None
    costs: dict[tuple[int, ...], float]


def _tag(nodes: np.ndarray, heights: np.ndarray, predicate) -> np.ndarray:
    """Predictive tagging of a monotone ``predicate(i)``: 1 satisfied, -1 not, per node."""
    state = np.zeros(nodes.shape[0], dtype=np.int8)
    n_ok = n_bad = 0
    while True:
        open_ = np.flatnonzero(state == 0)
        if open_.size == 0:
            return state
        hs = heights[open_]
        # Mostly failing so far: evaluate the highest open node (a failure there tags a
        # large cone below it); mostly satisfying: the lowest (tags a cone above).
        i = int(open_[np.argmax(hs)] if n_bad >= n_ok else open_[np.argmin(hs)])
        sub = nodes[open_]
        if predicate(i):
            n_ok += 1
            state[open_[(sub >= nodes[i]).all(axis=1)]] = 1
        else:
            n_bad += 1
            state[open_[(sub <= nodes[i]).all(axis=1)]] = -1


def _prune_discernibility(lattice, model, nodes, heights, cand, costs) -> tuple[list[int], int]:
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
        c = lattice.cost(node, cls, sizes, ok, "discernibility", model.k)
        costs[node] = c
        keep.append(i)
        best = min(best, c)
        bound = float((sizes * np.maximum(sizes, model.k)).sum())
        up = (nodes >= nodes[i]).all(axis=1)
        lb[up] = np.maximum(lb[up], bound)
    return keep, n_eval


def optimal_node(
    lattice: Lattice,
    model: PrivacyModel,
    *,
    max_suppressed: int = 0,
    objective: str = "discernibility",
) -> SearchResult | None:
    """The node of least ``objective`` whose violating classes hold at most
    ``max_suppressed`` records, or None when no node qualifies."""
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    nodes = lattice.nodes()
    n_nodes = nodes.shape[0]
    heights = nodes.sum(axis=1)
    costs: dict[tuple[int, ...], float] = {}
    evaluated = 0
    monotone = max_suppressed == 0 or model.monotone_with_suppression

    def run(i: int) -> bool:
        nonlocal evaluated
        node = tuple(int(x) for x in nodes[i])
        cls, sizes, ok = lattice.evaluate(node, model)
        evaluated += 1
        supp = int(sizes[~ok].sum())
        feasible = supp <= max_suppressed
        if feasible:
            costs[node] = lattice.cost(node, cls, sizes, ok, objective, model.k)
        return feasible

    if monotone:
        state = _tag(nodes, heights, run)
        feasible = np.flatnonzero(state == 1)
        if feasible.size == 0:
            return None
        if max_suppressed == 0:
            # Monotone objectives: the optimum is a minimal feasible node.
            cand = []
            fset = {tuple(x) for x in nodes[feasible]}
            for i in feasible:
                v = nodes[i]
                below = False
                for j in range(lattice.d):
                    if v[j] > 0:
                        u = v.copy()
                        u[j] -= 1
                        if tuple(u) in fset:
                            below = True
                            break
                if not below:
                    cand.append(i)
        else:
            cand = list(feasible)
        n_feasible = int(feasible.size)
        if max_suppressed and objective == "discernibility":
            cand, n_eval = _prune_discernibility(lattice, model, nodes, heights, cand, costs)
            evaluated += n_eval
        for i in cand:
            node = tuple(int(x) for x in nodes[i])
            if node not in costs:
                cls, sizes, ok = lattice.evaluate(node, model)
                evaluated += 1
                costs[node] = lattice.cost(node, cls, sizes, ok, objective, model.k)
        pool = {tuple(int(x) for x in nodes[i]) for i in cand}
    else:
        # Prune with k-anonymity alone, which is monotone even with suppression: a node whose
        # classes under k hold more than the limit fails the full model too.
        k_model = PrivacyModel(k=model.k)

        def run_k(i: int) -> bool:
            nonlocal evaluated
            _, sizes, ok = lattice.evaluate(tuple(int(x) for x in nodes[i]), k_model)
            evaluated += 1
            return int(sizes[~ok].sum()) <= max_suppressed

        k_state = _tag(nodes, heights, run_k)
        for i in np.flatnonzero(k_state == 1):
            run(int(i))
        if not costs:
            return None
        n_feasible = len(costs)
        pool = set(costs)
    # Least cost; ties broken by lower height, then lexicographically.
    best = min(pool, key=lambda v: (costs[v], sum(v), v))
    return SearchResult(
        node=best,
        cost=costs[best],
        objective=objective,
        evaluated=evaluated,
        n_nodes=n_nodes,
        feasible_nodes=n_feasible,
        costs={v: costs[v] for v in pool},
    )
