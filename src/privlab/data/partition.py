"""A partition of published rows into groups that each carry a multiset of sensitive values.

The one interface through which attacks and privacy metrics see any partition release:
Anatomy's QI-groups (Xiao & Tao 2006: each QIT row links to its group's values in the ST)
and a generalized table's equivalence classes (each class's rows are indistinguishable on the
published non-sensitive columns).  Under the random-worlds model a row of group ``g`` has
value ``v`` with probability ``counts[g, v] / |g|`` (Kifer 2009, Sec. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privlab.data.schema import Attribute
from privlab.errors import ReleaseError

KINDS = ("groups", "classes")


@dataclass(frozen=True, eq=False)
class Partition:
    """Rows grouped, with each group's sensitive-value counts.

    Attributes
    ----------
    group_of
        ``(n_rows,)`` group (``0..G-1``) of each published row.
    counts
        ``(G, m)`` number of rows of group ``g`` with sensitive code ``v``.
    sensitive
        The sensitive attribute (its domain labels the columns of ``counts``).
    kind
        ``"groups"`` (Anatomy) or ``"classes"`` (equivalence classes of a generalized table).
    """

    group_of: np.ndarray
    counts: np.ndarray
    sensitive: Attribute
    kind: str = "groups"

    def __post_init__(self) -> None:
        gid = np.ascontiguousarray(self.group_of, dtype=np.int64)
        counts = np.ascontiguousarray(self.counts, dtype=np.int64)
        if self.kind not in KINDS:
            raise ReleaseError(
                f"a partition's kind is one of {', '.join(KINDS)}, not {self.kind!r}"
            )
        if counts.ndim != 2 or counts.shape[1] != self.sensitive.size:
            raise ReleaseError(
                f"group counts have shape {counts.shape}, expected (G, {self.sensitive.size})"
            )
        if gid.ndim != 1 or gid.size == 0:
            raise ReleaseError("a partition needs at least one row")
        if gid.min() < 0 or gid.max() >= counts.shape[0]:
            raise ReleaseError("a row's group is outside 0..G-1")
        sizes = np.bincount(gid, minlength=counts.shape[0])
        if not np.array_equal(sizes, counts.sum(axis=1)):
            g = int(np.flatnonzero(sizes != counts.sum(axis=1))[0])
            raise ReleaseError(
                f"group {g} has {sizes[g]} rows but its sensitive counts sum to "
                f"{int(counts[g].sum())}"
            )
        for a in (gid, counts):
            a.setflags(write=False)
        object.__setattr__(self, "group_of", gid)
        object.__setattr__(self, "counts", counts)

    @property
    def n_rows(self) -> int:
        return int(self.group_of.size)

    @property
    def n_groups(self) -> int:
        return int(self.counts.shape[0])

    def sizes(self) -> np.ndarray:
        """Rows per group."""
        return self.counts.sum(axis=1)
