"""Anatomy as privlab made it before the numba kernel (commit 170a5cb), verbatim: the oracle
of tests/test_anatomy_kernel.py's identical-output tests and the "before" of
benchmarks/bench_anatomy.py.

``anatomize`` and ``_anatomize_groups`` are the old functions, but for the row orders: they
are drawn by :func:`privlab.data.shuffle.permutation` (numpy's below a million rows, as
before; from there the two-pass shuffle, as ``anatomize`` draws them since the change);
``OldAnatomyRelease`` runs the old ``AnatomyRelease._validate`` (so that the benchmark's
"before" pays what it paid).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import group_counts, require_count_memory
from privlab.data.frames import as_table
from privlab.data.schema import Schema
from privlab.data.shuffle import permutation
from privlab.data.table import Table
from privlab.errors import EligibilityError, ParameterError, ReleaseError
from privlab.publish.anatomy import AnatomyRelease, check_eligibility
from privlab.release.base import Custody, refuse_reserved


class OldAnatomyRelease(AnatomyRelease):
    """:class:`AnatomyRelease` with its validation as it was."""

    def _validate(self) -> None:
        n = self.qit.n_rows
        if self.group_id.shape != (n,):
            raise ReleaseError(f"group_id has {self.group_id.size} entries for {n} QIT rows")
        if not (self.st_group.shape == self.st_value.shape == self.st_count.shape):
            raise ReleaseError("the sensitive table's columns differ in length")
        if n == 0:
            raise ReleaseError("the release is empty (0 QIT rows)")
        if not self.qi:
            raise ReleaseError("the QIT has no quasi-identifier column")
        if self.group_id.min() < 0 or self.st_group.min() < 0:
            raise ReleaseError("group ids must be non-negative integers")
        if np.any(self.st_count <= 0):
            raise ReleaseError("the sensitive table has a count <= 0")
        if np.any(self.st_value >= self.n_values) or np.any(self.st_value < 0):
            raise ReleaseError("the sensitive table has a value outside its domain")
        n_groups = int(max(self.group_id.max(), self.st_group.max())) + 1
        sizes = np.bincount(self.group_id, minlength=n_groups)
        st_sizes = np.bincount(self.st_group, weights=self.st_count, minlength=n_groups)
        bad = np.flatnonzero(sizes != st_sizes)
        if bad.size:
            g = int(bad[0])
            raise ReleaseError(
                f"group {g} has {sizes[g]} QIT rows but its ST counts sum to {int(st_sizes[g])}"
            )
        pairs = self.st_group * self.n_values + self.st_value
        if np.unique(pairs).size != pairs.size:
            raise ReleaseError("the sensitive table lists a (group, value) pair twice")
        truth = self.truth
        if truth is not None:
            if truth.shape != (n,):
                raise ReleaseError(f"truth has {truth.size} entries for {n} QIT rows")
            t = group_counts(self.group_id, truth, self.n_values, n_groups=n_groups)
            if not np.array_equal(t, self.group_counts()):
                raise ReleaseError("the truth does not match the sensitive table's counts")


def anatomize(
    data: Any,
    *,
    l: int,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
    rng: RngLike | SeedRecord = None,
) -> AnatomyRelease:
    """Publish a table with Anatomy at diversity ``l`` (Xiao & Tao 2006).

    Parameters
    ----------
    data
        The microdata: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    l
        Group diversity (>= 2): every group holds ``l`` (or ``l + 1``) distinct values.
    qi, sensitive, keep
        The quasi-identifiers, the sensitive attribute and the columns published unchanged
        in the QIT; default: the table's roles.  Every other column is dropped.
    rng
        None (OS entropy), a seed (salted with 128 bits of OS entropy: see
        :func:`privlab._rng.publication_rng`), a custody's seed record (replays that
        release), or a generator of the caller's (used as given).

    Returns
    -------
    AnatomyRelease
        With ``custody`` set (seed, salt, input fingerprint, each QIT row's true value);
        :meth:`~privlab.release.base.Release.save` writes it only to ``custody=DIR``.

    Raises
    ------
    SchemaError
        Unknown column, a column given two roles.
    ParameterError
        No QI or sensitive attribute, ``l < 2`` or ``l`` above the number of distinct
        sensitive values.
    EligibilityError
        A value occurs in more than ``N / l`` tuples.
    """
    table = as_table(data)
    schema = table.schema
    qi = list(schema.qi if qi is None else qi)
    keep = list(schema.insensitive if keep is None else keep)
    sensitive = schema.sensitive if sensitive is None else sensitive
    if sensitive is None:
        raise ParameterError("no sensitive attribute given")
    if not qi:
        raise ParameterError("no quasi-identifier given")
    schema = schema.with_roles(qi=qi, sensitive=sensitive, keep=keep)
    refuse_reserved(schema.published)
    if isinstance(l, bool) or not isinstance(l, (int, np.integer)):
        raise ParameterError(f"l must be an integer, got {l!r}")
    l = int(l)
    if l < 2:
        raise ParameterError(f"l must be at least 2, got {l}")
    table.require_rows()
    s = table.column(sensitive).astype(np.int64)
    n_distinct = int(np.unique(s).size)
    if l > n_distinct:
        raise ParameterError(
            f"l = {l} is above the number of distinct values of {sensitive!r} ({n_distinct})"
        )
    check_eligibility(s, l, schema[sensitive].domain)
    require_count_memory(s.size // l, schema[sensitive].size)  # before any work
    gen, record = publication_rng(rng)
    group = _anatomize_groups(s, l, gen)

    # Publish: shuffle rows, relabel groups at random.
    n_groups = int(group.max()) + 1
    relabel = gen.permutation(n_groups)
    perm = permutation(gen, s.size)
    gid = relabel[group[perm]]
    truth = s[perm]
    counts = group_counts(gid, truth, schema[sensitive].size)
    st_group, st_value = np.nonzero(counts)
    cols = [*qi, *keep]
    qit = Table(table.codes[perm][:, schema.indices(cols)], schema.select(cols))
    sens = schema[sensitive]
    custody = Custody(
        seed=record,
        input_sha256=table.fingerprint(),
        truth=Table(truth.reshape(-1, 1), Schema((sens,))),
    )
    return OldAnatomyRelease(
        qit=qit,
        group_id=gid,
        st_group=st_group,
        st_value=st_value,
        st_count=counts[st_group, st_value],
        sensitive=sens,
        l=l,
        custody=custody,
    )


def _anatomize_groups(s: np.ndarray, l: int, gen: np.random.Generator) -> np.ndarray:
    """Group label of every tuple (in input order), by the Anatomize algorithm."""
    n = s.size
    m = int(s.max()) + 1
    # Buckets: each value's tuples in random order; popping from the end draws at random.
    order = permutation(gen, n)
    order = order[np.argsort(s[order], kind="stable")]
    counts = np.bincount(s, minlength=m)
    starts = np.concatenate(([0], np.cumsum(counts)))
    remaining = counts.copy()
    # Max-heap on remaining count, random tie-break.
    tie = gen.permutation(m)
    heap = [(-int(counts[v]), int(tie[v]), v) for v in range(m) if counts[v] > 0]
    heapq.heapify(heap)
    group = np.full(n, -1, dtype=np.int64)
    members: list[np.ndarray] = []
    g = 0
    while len(heap) >= l:
        picked = [heapq.heappop(heap) for _ in range(l)]
        rows = []
        for _, _, v in picked:
            remaining[v] -= 1
            rows.append(order[starts[v] + remaining[v]])
        group[rows] = g
        members.append(np.array([v for _, _, v in picked]))
        g += 1
        for negc, t, v in picked:
            if negc + 1 < 0:
                heapq.heappush(heap, (negc + 1, t, v))
    if g == 0:
        raise EligibilityError("no group of l distinct values could be formed")
    # Residue: each leftover tuple joins a random group lacking its value.  Residues are
    # matched to *distinct* groups when such a matching exists (a min-cost bipartite matching
    # with random costs, so the choice is random); otherwise the rest join any lacking group.
    # Only the residues' values are looked up (never a groups x values table: a 20,000-valued
    # sensitive column would make that gigabytes).
    res_rows = [order[starts[v] + k] for _, _, v in heap for k in range(remaining[v])]
    res_vals = [v for _, _, v in heap for _ in range(remaining[v])]
    if res_rows:
        held = np.asarray(members)  # (groups, l): each group's values
        lacking = np.stack([~(held == v).any(axis=1) for v in res_vals])  # (residues, groups)
        if not lacking.any(axis=1).all():  # impossible for an eligible table (Xiao & Tao)
            v = res_vals[int(np.argmin(lacking.any(axis=1)))]
            raise EligibilityError(f"no group lacks sensitive code {v} for a residual tuple")
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
    return group
