"""Anatomy's algorithm (Xiao & Tao, VLDB 2006), below its engines.

The steps of *Anatomize* that every engine shares (:mod:`privlab.publish.anatomy` runs them
in memory, :mod:`privlab.publish.spark_anatomy` on a cluster; each imports this module,
never the reverse):

1. **Eligibility.**  No sensitive value may occur in more than ``N / l`` tuples, otherwise no
   l-diverse partition exists (Xiao & Tao, Lemma 1): :func:`check_eligibility` and, from the
   value counts, :func:`check_count_eligibility`.
2. **Group creation** and 3. **residue assignment** (see :mod:`privlab.publish.anatomy`):
   over the tuples (:func:`anatomize_groups`) or from the value counts alone
   (:func:`group_schedule`).

Large tables run step 2 in a compiled kernel (:mod:`privlab.publish._anatomy_kernel`, a
port of :mod:`heapq`): the same groups, from the same draws, as the Python heap loop.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.data.counts import group_counts, require_count_memory
from privlab.data.schema import Schema
from privlab.data.shuffle import permutation
from privlab.data.table import Table
from privlab.errors import EligibilityError, ParameterError
from privlab.release.base import PublishedTable


def check_eligibility(values: np.ndarray, l: int, domain: Sequence[Any] | None = None) -> None:
    """Raise :class:`EligibilityError` unless every value occurs in at most ``N / l`` tuples."""
    check_count_eligibility(np.bincount(values), l, domain)


def check_count_eligibility(
    counts: np.ndarray, l: int, domain: Sequence[Any] | None = None
) -> None:
    """:func:`check_eligibility` from the values' counts."""
    n = int(counts.sum())
    v = int(np.argmax(counts))
    if counts[v] * l > n:
        name = domain[v] if domain is not None else v
        raise EligibilityError(
            f"the table is not {l}-eligible: value {name!r} occurs in {counts[v]} of {n} "
            f"tuples, more than N/l = {n / l:.1f}"
        )


#: Tables of this many tuples and more form their groups (and their ST) in the compiled
#: kernels (:mod:`privlab.publish._anatomy_kernel`); below, the Python heap loop (0.30 s
#: of CPU for 2^17 tuples at l = 2, 0.15 s at l = 6) is faster than importing numba and
#: loading the cached kernel (0.55 s of CPU in a fresh process).  Both paths give the same
#: release for the same generator (tests/test_anatomy_kernel.py).
KERNEL_MIN = 1 << 18


@dataclass(frozen=True)
class Groups:
    """Anatomize's groups: ``group[i]`` is tuple ``i``'s group; group ``g`` holds the values
    ``members[g]`` (one tuple each) and the residues ``r`` with ``res_group[r] == g`` (of
    value ``res_value[r]``)."""

    group: np.ndarray
    members: np.ndarray
    res_group: np.ndarray
    res_value: np.ndarray


def anatomize_groups(s: np.ndarray, l: int, gen: np.random.Generator) -> Groups:
    """The groups of the tuples (in input order), by the Anatomize algorithm.

    Draws, in this order: a permutation of the tuples (each bucket's order), a permutation
    of the values (the heap's tie-break), then, when residues remain, the residue step's
    uniforms and choices.
    """
    n = s.size
    m = int(s.max()) + 1
    order = permutation(gen, n)  # numpy's below a million tuples, two passes from there
    tie = gen.permutation(m)
    if n >= KERNEL_MIN:
        from privlab.publish._anatomy_kernel import form_groups

        bucket, starts, remaining, heap, group, members = form_groups(
            np.ascontiguousarray(s, dtype=np.int64), m, l, order, tie
        )
    else:
        bucket, starts, remaining, heap, group, members = _form_groups(s, m, l, order, tie)
    if members.shape[0] == 0:
        raise EligibilityError("no group of l distinct values could be formed")
    res_group, res_value = _assign_residues(group, bucket, starts, remaining, heap, members, gen)
    return Groups(group, members, res_group, res_value)


def _form_groups(
    s: np.ndarray, m: int, l: int, order: np.ndarray, tie: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Anatomize's group creation (Xiao & Tao 2006, step 2) by a Python heap loop: the
    small-table path, and the reference of the kernel
    :func:`privlab.publish._anatomy_kernel.form_groups` (same arguments, same results)."""
    n = s.size
    # Buckets: each value's tuples in random order; popping from the end draws at random.
    bucket = order[np.argsort(s[order], kind="stable")]
    counts = np.bincount(s, minlength=m)
    starts = np.concatenate(([0], np.cumsum(counts)))
    remaining = counts.copy()
    # Max-heap on remaining count, random tie-break.
    heap = [(-int(counts[v]), int(tie[v]), v) for v in range(m) if counts[v] > 0]
    heapq.heapify(heap)
    group = np.full(n, -1, dtype=np.int64)
    members: list[list[int]] = []
    g = 0
    while len(heap) >= l:
        picked = [heapq.heappop(heap) for _ in range(l)]
        rows = []
        for _, _, v in picked:
            remaining[v] -= 1
            rows.append(bucket[starts[v] + remaining[v]])
        group[rows] = g
        members.append([v for _, _, v in picked])
        g += 1
        for negc, t, v in picked:
            if negc + 1 < 0:
                heapq.heappush(heap, (negc + 1, t, v))
    return (
        bucket,
        starts,
        remaining,
        np.array([v for _, _, v in heap], dtype=np.int64),
        group,
        np.array(members, dtype=np.int64).reshape(g, l),
    )


def _assign_residues(
    group: np.ndarray,
    bucket: np.ndarray,
    starts: np.ndarray,
    remaining: np.ndarray,
    heap: np.ndarray,
    members: np.ndarray,
    gen: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Anatomize's residue assignment (Xiao & Tao 2006, step 3), in place on ``group``;
    returns each residue's group and value.

    Each leftover tuple joins a random group lacking its value.  Residues are matched to
    *distinct* groups when such a matching exists (a min-cost bipartite matching with random
    costs, so the choice is random); otherwise the rest join any lacking group.  Only the
    residues' values are looked up (never a groups x values table: a 20,000-valued sensitive
    column would make that gigabytes).  Residues come in heap order, each value's from the
    start of its bucket.
    """
    res_rows = [bucket[starts[v] + k] for v in heap.tolist() for k in range(remaining[v])]
    res_vals = [v for v in heap.tolist() for _ in range(remaining[v])]
    if not res_rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    held = members  # (groups, l): each group's values
    lacking = np.stack([~(held == v).any(axis=1) for v in res_vals])  # (residues, groups)
    if not lacking.any(axis=1).all():  # impossible for an eligible table (Xiao & Tao)
        v = res_vals[int(np.argmin(lacking.any(axis=1)))]
        raise EligibilityError(f"no group lacks sensitive code {v} for a residual tuple")
    from scipy.optimize import linear_sum_assignment  # (1.2 s to import: only when needed)

    cost = np.where(lacking, gen.random(lacking.shape), 2.0 * len(res_rows) + 1.0)
    matched = dict(zip(*linear_sum_assignment(cost)))
    joined: dict[int, set[int]] = {}  # value -> groups a residue of it has joined
    for r, (row, v) in enumerate(zip(res_rows, res_vals)):
        target = matched.get(r, -1)
        if target < 0 or not lacking[r, target] or target in joined.get(v, ()):
            # no distinct matching: any group still lacking v
            free = lacking[r].copy()
            free[list(joined.get(v, ()))] = False
            target = int(gen.choice(np.flatnonzero(free)))
        group[row] = target
        joined.setdefault(v, set()).add(target)
    return group[res_rows], np.asarray(res_vals, dtype=np.int64)


def group_schedule(counts: np.ndarray, l: int, gen: np.random.Generator) -> np.ndarray:
    """The groups of the Anatomize algorithm from the value counts alone (Xiao & Tao 2006).

    Returns ``schedule`` of length ``counts.sum()``: the tuple of rank ``r`` among the
    tuples of value ``v`` joins group ``schedule[starts[v] + r]`` (``starts``: the
    cumulative counts).  It is :func:`anatomize_groups` on the tuples sorted by value with
    the identity as bucket order, so a caller that draws the ranks uniformly at random
    (the Spark engine, on the cluster) gets the in-memory algorithm's distribution; it
    draws the heap's tie-break permutation, then the residue step's uniforms and choices.
    """
    counts = np.asarray(counts, dtype=np.int64)
    m = counts.size
    n = int(counts.sum())
    s = np.repeat(np.arange(m, dtype=np.int64), counts)
    order = np.arange(n, dtype=np.int64)
    tie = gen.permutation(m)
    if n >= KERNEL_MIN:
        from privlab.publish._anatomy_kernel import form_groups

        bucket, starts, remaining, heap, group, members = form_groups(s, m, l, order, tie)
    else:
        bucket, starts, remaining, heap, group, members = _form_groups(s, m, l, order, tie)
    if members.shape[0] == 0:
        raise EligibilityError("no group of l distinct values could be formed")
    _assign_residues(group, bucket, starts, remaining, heap, members, gen)
    return group


@dataclass(frozen=True)
class CountPlan:
    """Anatomy planned from the sensitive values' counts alone (what the Spark and stream
    engines count in one pass): the record of rank ``r`` among the records of value ``v``
    (ranks drawn uniformly at random by the engine) joins group
    ``schedule[starts[v] + r]``; the groups are relabelled at random; the sensitive table
    follows without touching the rows.

    Attributes
    ----------
    used
        The counts of the codes ``0 .. max`` held (as in memory).
    starts
        The first rank of each value in ``schedule`` (cumulative counts).
    schedule
        The (relabelled) group of each rank.
    n_groups
        The number of groups.
    st
        The sensitive table: ``group_id``, the sensitive value, ``count``.
    """

    used: np.ndarray
    starts: np.ndarray
    schedule: np.ndarray
    n_groups: int
    st: Any


def plan_from_counts(
    counts: np.ndarray, l: int, sensitive: Any, gen: np.random.Generator
) -> CountPlan:
    """Check eligibility and plan the groups from the counts of the attribute ``sensitive``
    over its domain (:func:`group_schedule`, then a random relabelling, drawn from ``gen``
    in that order); raises as :func:`~privlab.publish.anatomy.anatomize` does."""

    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    n_distinct = int((counts > 0).sum())
    if l > n_distinct:
        raise ParameterError(
            f"l = {l} is above the number of distinct values of {sensitive.name!r} ({n_distinct})"
        )
    check_count_eligibility(counts, l, sensitive.domain)
    require_count_memory(n // l, sensitive.size)
    used = counts[: int(np.flatnonzero(counts).max()) + 1]  # as in memory: codes up to the max
    schedule = group_schedule(used, l, gen)
    n_groups = int(schedule.max()) + 1
    schedule = gen.permutation(n_groups)[schedule]  # group ids at random
    starts = np.concatenate(([0], np.cumsum(used)))
    st = group_counts(schedule, np.repeat(np.arange(used.size), used), sensitive.size)
    st_group, st_value = np.nonzero(st)
    table = PublishedTable(
        Table(st_value.reshape(-1, 1), Schema((sensitive,))),
        {"group_id": st_group, "count": st[st_group, st_value]},
        ("group_id", sensitive.name, "count"),
    )
    return CountPlan(used, starts, schedule, n_groups, table)
