"""Array layout shared by the attacks: QI combinations, group CSR offsets, permutation tables.

Every attack works on integer arrays only (DEVELOPERS.md: decode at the edges):

* ``combo_of[n]``: the index of tuple ``n``'s distinct QI combination.  The Naive-Bayes score
  of a tuple depends on its QI values only, so the scores are computed once per combination
  (Adult's four QIs have at most 168 combinations for 30,162 tuples).
* ``combo_codes[c, j]``: the *flat* code of attribute ``j`` of combination ``c``, i.e.
  ``attr_ptr[j] + value``, so that one ``(D, m)`` table holds every ``P(R_j = x | S = s)``.
* ``gtup_ptr`` / ``gtup`` / ``gval``: the groups in CSR form.  Group ``g``'s tuples are
  ``gtup[gtup_ptr[g]:gtup_ptr[g+1]]`` and the multiset of sensitive values the sensitive table
  lists for it is ``gval`` over the same span.
* ``perm_table`` / ``perm_ptr``: every permutation of ``range(k)`` for ``k = 1..exact_max``;
  the permutations of size ``k`` are rows ``perm_ptr[k]:perm_ptr[k+1]`` (first ``k`` columns).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from privlab.data.counts import distinct_rows
from privlab.data.partition import Partition
from privlab.errors import ParameterError, ReleaseError
from privlab.release.views import Grouped


@dataclass(frozen=True, eq=False)
class Layout:
    """Integer arrays describing an anatomized release for the numba kernels."""

    n_rows: int
    n_values: int
    combo_of: np.ndarray  # (N,) int64
    combo_codes: np.ndarray  # (C, A) int64, flat codes
    attr_ptr: np.ndarray  # (A+1,) int64
    onehot: np.ndarray  # (C, D) float64 indicator of the flat codes of each combination
    gtup_ptr: np.ndarray  # (G+1,) int64
    gtup: np.ndarray  # (N,) int64
    gval: np.ndarray  # (N,) int64
    group_id: np.ndarray  # (N,) int64

    @property
    def n_groups(self) -> int:
        return int(self.gtup_ptr.size - 1)

    @property
    def n_flat(self) -> int:
        return int(self.attr_ptr[-1])

    @property
    def max_group(self) -> int:
        return int(np.diff(self.gtup_ptr).max())


def layout_from_arrays(
    qi_codes: np.ndarray,
    qi_sizes: tuple[int, ...] | list[int],
    group_id: np.ndarray,
    counts: np.ndarray,
) -> Layout:
    """The layout from QI codes ``(N, A)``, domain sizes, group ids and ST counts ``(G, m)``."""
    qi_codes = np.asarray(qi_codes, dtype=np.int64)
    group_id = np.asarray(group_id, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if qi_codes.ndim != 2 or qi_codes.shape[0] != group_id.size:
        raise ReleaseError("the QI table and the group ids differ in length")
    if qi_codes.shape[1] == 0:
        raise ReleaseError("the release has no quasi-identifier to learn from")
    n, _ = qi_codes.shape
    g_count, m = counts.shape
    sizes = np.bincount(group_id, minlength=g_count)
    if sizes.size != g_count or not np.array_equal(sizes, counts.sum(axis=1)):
        raise ReleaseError("the group sizes of the QI table and the sensitive table differ")
    attr_ptr = np.concatenate([[0], np.cumsum(np.asarray(qi_sizes, dtype=np.int64))])
    # one integer key per row (mixed radix), not np.unique(axis=0): 4.5 s at 1.9M rows
    first, combo_of, _ = distinct_rows(qi_codes, qi_sizes)
    uniq = qi_codes[first]
    combo_of = np.ascontiguousarray(combo_of, dtype=np.int64)
    combo_codes = np.ascontiguousarray(uniq + attr_ptr[:-1][None, :], dtype=np.int64)
    onehot = np.zeros((uniq.shape[0], int(attr_ptr[-1])), dtype=np.float64)
    np.put_along_axis(onehot, combo_codes, 1.0, axis=1)
    gtup = np.argsort(group_id, kind="stable").astype(np.int64)
    gtup_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gval = np.repeat(np.tile(np.arange(m, dtype=np.int64), g_count), counts.reshape(-1))
    return Layout(
        n_rows=n,
        n_values=m,
        combo_of=combo_of,
        combo_codes=combo_codes,
        attr_ptr=attr_ptr,
        onehot=onehot,
        gtup_ptr=gtup_ptr,
        gtup=gtup,
        gval=gval.astype(np.int64),
        group_id=group_id,
    )


def partition_of(release: Grouped) -> Partition:
    """The partition of a release (refusing one that has none, naming its kind)."""
    part = release.partition() if hasattr(release, "partition") else None
    if part is None:
        method = getattr(release, "method", type(release).__name__)
        raise ReleaseError(
            f"a {method!r} release has no partition of its rows into groups that carry "
            "sensitive values: the attacks need one (an anatomy or generalization release "
            "with a sensitive attribute)"
        )
    return part


def layout_of(release: Grouped, part: Partition | None = None) -> Layout:
    """The layout of any release with a partition (:meth:`Release.partition`; ``part`` when
    the caller has it already): its published quasi-identifiers and its groups' sensitive
    counts."""
    part = partition_of(release) if part is None else part
    qi = release.quasi_identifiers()
    return layout_from_arrays(qi.codes, qi.schema.sizes, part.group_of, part.counts)


def values_of(release_or_partition) -> tuple[str, ...]:
    """The sensitive domain of a release's partition, as the posterior's column labels."""
    part = release_or_partition
    if not isinstance(part, Partition):
        part = partition_of(part)
    return tuple(str(v) for v in part.sensitive.domain)


def permutation_table(exact_max: int) -> tuple[np.ndarray, np.ndarray]:
    """All permutations of ``range(k)`` for ``k = 1..exact_max`` (see the module docstring)."""
    if exact_max < 1 or exact_max > 8:
        raise ParameterError(f"exact_max must be between 1 and 8, got {exact_max}")
    rows: list[tuple[int, ...]] = []
    ptr = np.zeros(exact_max + 2, dtype=np.int64)
    for k in range(1, exact_max + 1):
        ptr[k] = len(rows)
        rows.extend(itertools.permutations(range(k)))
    ptr[exact_max + 1] = len(rows)
    table = np.zeros((len(rows), exact_max), dtype=np.int64)
    for i, p in enumerate(rows):
        table[i, : len(p)] = p
    return table, ptr
