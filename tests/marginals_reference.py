"""An oracle for k-combinatorial anonymity (Kifer & Gehrke 2006, Defn 4.2) written from the
definition, independent of privlab's integer program: an exhaustive search over the
non-negative integer tables on the leaf domain whose marginals equal the published ones."""

from __future__ import annotations

import itertools
import math

import numpy as np


def consistent_maxima(marginals, names, sizes, sensitive, *, max_states=200_000):
    """For every combination ``t`` of the non-sensitive attributes, the largest ``T(t)`` over
    every consistent table ``T``, and the number of consistent tables.

    The tables are enumerated cell by cell (leaf cells in mixed-radix order); a partial
    table is a path, and two partial tables with the same residual marginal counts have the
    same completions, so they are merged, keeping the number of paths and, for each ``t``,
    the largest partial ``T(t)`` (dynamic programming over the exhaustive enumeration).  A
    marginal cell whose last leaf has been filled must have residual 0.  Returns ``None``
    when more than ``max_states`` partial states would be kept (not enumerable here).
    """
    names = list(names)
    sizes = [int(s) for s in sizes]
    cells = math.prod(sizes)
    grid = np.indices(sizes).reshape(len(sizes), -1)
    members: list[list[int]] = [[] for _ in range(cells)]
    targets: list[int] = []
    for mg in marginals:
        axes = [names.index(a) for a in mg.attributes]
        cell = np.ravel_multi_index(
            tuple(mg.maps[j][grid[a]] for j, a in enumerate(axes)), mg.counts.shape
        )
        for i in range(cells):
            members[i].append(len(targets) + int(cell[i]))
        targets.extend(int(c) for c in mg.counts.ravel())
    ns = [j for j, a in enumerate(names) if a != sensitive]
    ns_shape = [sizes[j] for j in ns]
    t_of = [int(x) for x in np.ravel_multi_index(tuple(grid[j] for j in ns), ns_shape)]
    n_t = math.prod(ns_shape)
    order, last = _cell_order(sizes, members, len(targets))
    states = {tuple(targets): (1, (0,) * n_t)}
    for step, i in enumerate(order):
        new: dict = {}
        closing = [j for j in members[i] if last[j] == step]
        mine, t = members[i], t_of[i]
        for res, (count, best) in states.items():
            cap = min(res[j] for j in mine)
            for v in range(cap + 1):
                if any(res[j] != v for j in closing):
                    continue
                r = list(res)
                for j in mine:
                    r[j] -= v
                key = tuple(r)
                b = (*best[:t], best[t] + v, *best[t + 1 :])
                old = new.get(key)
                if old is None:
                    new[key] = (count, b)
                else:
                    new[key] = (old[0] + count, tuple(map(max, old[1], b)))
        states = new
        if len(states) > max_states:
            return None
    done = states.get((0,) * len(targets))
    if done is None:
        return np.zeros(ns_shape, dtype=np.int64), 0
    return np.array(done[1], dtype=np.int64).reshape(ns_shape), done[0]


def _cell_order(sizes, members, n_constraints):
    """The order of the leaf cells (one of the axis orders of the mixed radix) that keeps the
    fewest marginal cells open along the way (fewer residual states to merge), and the step
    at which each marginal cell closes.  The order changes the work, never the result."""
    best = None
    for perm in itertools.permutations(range(len(sizes))):
        grid = np.indices([sizes[a] for a in perm]).reshape(len(sizes), -1)
        back = np.empty(len(sizes), dtype=int)
        back[list(perm)] = np.arange(len(sizes))
        order = np.ravel_multi_index(tuple(grid[back[a]] for a in range(len(sizes))), sizes)
        first = [len(order)] * n_constraints
        last = [-1] * n_constraints
        for step, i in enumerate(order):
            for j in members[i]:
                first[j] = min(first[j], step)
                last[j] = step
        cost = sum(b - a for a, b in zip(first, last))
        if best is None or cost < best[0]:
            best = (cost, [int(i) for i in order], last)
    return best[1], best[2]
