"""Minimal sample uniques (MSUs): the smallest sets of a record's quasi-identifier values that
no other record of the sample shares (Elliot, Manning & Ford 2002, "A computational
algorithm for handling the special uniques problem", IJUFKS 10(5); SUDA2: Manning, Haglin &
Keane 2008, "A recursive search algorithm for statistical disclosure assessment", Data Min.
Knowl. Disc. 16).

A record's values on a set ``S`` of columns form a *sample unique* when no other record has
the same values on ``S``; it is *minimal* when no proper subset of ``S`` is already unique
for that record.  A record with an MSU of one or two values is re-identified by anyone who
knows those few facts about the person, whatever the other columns say: SUDA's *special
uniques*.  This module finds every MSU of every record up to ``max_size`` columns.

Uniqueness only grows with the columns (a record unique on ``S`` is unique on every superset),
so a unique set is minimal exactly when none of its subsets one column smaller is unique:
the search goes level by level over the column subsets, counting each subset's value
combinations once (:func:`privlab.data.counts.distinct_rows`) and keeping the previous
level's uniqueness as bits.  SUDA2 finds the same sets by a recursive search that skips most
subsets; this level-wise search does ``sum_{k <= max_size} C(d, k)`` counting passes (1,023 at
``d = 10``), each linear in the records: its time is measured in ``benchmarks/bench_msu.py``.
The SUDA and DIS-SUDA *scores* built on the MSUs are not computed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from privlab._frames import ToFrames
from privlab.errors import ParameterError

#: columns at most (the search visits every subset up to max_size of them)
MAX_COLUMNS = 20


@dataclass(frozen=True, eq=False)
class MinimalSampleUniques(ToFrames):
    """The MSUs of every record (:func:`minimal_sample_uniques`).

    ``counts[i, k - 1]`` is the number of MSUs of size ``k`` of record ``i``; MSU ``m`` is
    record ``record[m]`` on the columns ``subsets[subset[m]]`` (names, in the table's
    order), listed by size, then columns, then record (:meth:`pairs`)."""

    counts: np.ndarray = field(repr=False)
    record: np.ndarray = field(repr=False)
    subset: np.ndarray = field(repr=False)
    subsets: tuple[tuple[str, ...], ...] = field(repr=False)
    names: tuple[str, ...]
    max_size: int

    def pairs(self) -> list[tuple[int, tuple[str, ...]]]:
        """Every MSU as ``(record, columns)``."""
        return [(int(i), self.subsets[j]) for i, j in zip(self.record, self.subset)]

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])

    @property
    def smallest(self) -> np.ndarray:
        """Each record's smallest MSU size (0: none up to ``max_size``)."""
        has = self.counts > 0
        first = np.argmax(has, axis=1) + 1
        return np.where(has.any(axis=1), first, 0)

    def records_with_msu(self, size: int) -> int:
        """Records with an MSU of at most ``size`` columns."""
        return int((self.counts[:, :size].sum(axis=1) > 0).sum())

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "names": list(self.names),
            "max_size": self.max_size,
            "msus": int(self.record.size),
            "msus_by_size": [int(x) for x in self.counts.sum(axis=0)],
            "records_with_msu_by_size": [
                self.records_with_msu(k) for k in range(1, self.max_size + 1)
            ],
        }

    def to_pandas(self):
        import pandas as pd

        cols = {f"msu_{k}": self.counts[:, k - 1] for k in range(1, self.max_size + 1)}
        return pd.DataFrame({"smallest_msu": self.smallest, **cols})


def minimal_sample_uniques(
    codes: np.ndarray,
    names: tuple[str, ...] | list[str] | None = None,
    *,
    max_size: int | None = None,
) -> MinimalSampleUniques:
    """Every record's minimal sample uniques up to ``max_size`` columns (default: all).

    Parameters
    ----------
    codes
        Integer codes ``(n, d)`` of the quasi-identifiers, one row per record.
    names
        The columns' names (default ``c0, c1, ...``).
    max_size
        The largest MSU searched for (SUDA's threshold; ``1 <= max_size <= d``).
    """
    from privlab._params import check_codes, check_int
    from privlab.data.counts import distinct_rows

    c = check_codes(codes)
    n, d = c.shape
    if d == 0:
        raise ParameterError("no quasi-identifier given")
    if d > MAX_COLUMNS:
        raise ParameterError(
            f"{d} columns: at most {MAX_COLUMNS} (the search visits every subset of them)"
        )
    names = tuple(names) if names is not None else tuple(f"c{j}" for j in range(d))
    if len(names) != d:
        raise ParameterError(f"{len(names)} names for {d} columns")
    top = d if max_size is None else check_int("max_size", max_size, low=1)
    if top > d:
        raise ParameterError(f"max_size must be at most the {d} columns, got {top}")
    counts = np.zeros((n, top), dtype=np.int64)
    records: list[np.ndarray] = []
    subset_ids: list[np.ndarray] = []
    subsets: list[tuple[str, ...]] = []
    # the previous level's uniqueness per column subset, as bits (C(10, 5) masks of 1M
    # records: 31 MB, not 252)
    previous: dict[tuple[int, ...], np.ndarray] = {(): np.packbits(np.zeros(n, dtype=bool))}
    for k in range(1, top + 1):
        current: dict[tuple[int, ...], np.ndarray] = {}
        for cols in combinations(range(d), k):
            _, inverse, sizes = distinct_rows(c[:, cols])
            unique = sizes[inverse] == 1
            covered = np.zeros(n, dtype=bool)
            for drop in range(k):  # the subsets one column smaller
                below = previous[cols[:drop] + cols[drop + 1 :]]
                covered |= np.unpackbits(below, count=n).astype(bool)
            rows = np.flatnonzero(unique & ~covered)
            if rows.size:
                counts[rows, k - 1] += 1
                records.append(rows)
                subset_ids.append(np.full(rows.size, len(subsets), dtype=np.int32))
                subsets.append(tuple(names[j] for j in cols))
            if k < top:
                current[cols] = np.packbits(unique)
        previous = current
    record = np.concatenate(records) if records else np.zeros(0, dtype=np.int64)
    subset = np.concatenate(subset_ids) if subset_ids else np.zeros(0, dtype=np.int32)
    return MinimalSampleUniques(counts, record, subset, tuple(subsets), names, top)
