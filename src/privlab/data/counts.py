"""Joint counts and distinct rows: the one mixed-radix layout every count vector uses.

A tuple of codes ``(c_1, ..., c_n)`` over domains of sizes ``(K_1, ..., K_n)`` has the joint
index ``((c_1 K_2 + c_2) K_3 + c_3) ...``: the **first column varies slowest**.  It is the
layout for which independent PRAM randomization is ``P_1 (x) ... (x) P_n`` (Ma 2006, Sec.
2.4.1), the cell order of a DP histogram, and the class key of the generalization lattice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from privlab._memory import require_memory
from privlab.errors import ParameterError, PrivlabError, SchemaError

#: Joint domains up to this many cells get a mixed-radix int64 key (beyond: lexicographic).
MAX_RADIX = 2.0**62


def _as_2d(codes: np.ndarray) -> np.ndarray:
    codes = np.asarray(codes)
    return codes.reshape(-1, 1) if codes.ndim == 1 else codes


def joint_index(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Mixed-radix index (int64) of each row of ``codes`` ``(n, d)``, first column slowest."""
    codes = _as_2d(codes)
    sizes = tuple(int(s) for s in sizes)
    if codes.shape[1] != len(sizes):
        raise SchemaError(f"{codes.shape[1]} code columns for {len(sizes)} domain sizes")
    if float(np.prod(np.asarray(sizes, dtype=float))) >= MAX_RADIX:
        raise ParameterError(f"the joint domain of sizes {list(sizes)} is too large to index")
    if codes.shape[0] == 0:
        return np.empty(0, dtype=np.int64)
    if len(sizes) == 1:
        return codes[:, 0].astype(np.int64)
    return np.ravel_multi_index(tuple(codes.T), sizes).astype(np.int64)


#: Cells counted (rows x columns) from which :func:`joint_counts` runs the compiled kernel:
#: below, numpy's two passes are faster than importing numba and loading the cached kernel
#: (about 0.6 s of CPU in a fresh process, against about 10 ns per row and column in numpy).
_KERNEL_MIN = 1 << 23


def joint_counts(
    codes: np.ndarray,
    sizes: Sequence[int],
    *,
    columns: Sequence[int] | None = None,
    trusted: bool = False,
) -> np.ndarray:
    """Counts (int64) of every cell of the joint domain, in :func:`joint_index` order.

    ``columns`` picks the columns of ``codes`` to count (default: all, one per size); a
    large table is counted by one compiled pass that reads them in place.  ``trusted``:
    the codes were checked against ``sizes`` already (a :class:`~privlab.data.table.Table`'s
    are, when it is made), so the pass checks each row's cell index only, not each code.
    """
    codes = _as_2d(codes)
    sizes = tuple(int(s) for s in sizes)
    cols = np.arange(codes.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64)
    if cols.shape != (len(sizes),):
        raise SchemaError(f"{cols.size} code columns for {len(sizes)} domain sizes")
    cells = int(np.prod(sizes, dtype=np.int64))
    if codes.shape[0] * len(sizes) < _KERNEL_MIN or not len(sizes):
        picked = codes if columns is None else codes[:, cols]
        return np.bincount(joint_index(picked, sizes), minlength=cells).astype(np.int64)
    if float(np.prod(np.asarray(sizes, dtype=float))) >= MAX_RADIX:
        raise ParameterError(f"the joint domain of sizes {list(sizes)} is too large to index")
    from privlab.data._count_kernel import count_cells

    if not codes.flags.c_contiguous or not np.issubdtype(codes.dtype, np.integer):
        codes = np.ascontiguousarray(codes, dtype=np.int64)
    strides = np.ones(len(sizes), dtype=np.int64)
    strides[:-1] = np.cumprod(np.asarray(sizes[:0:-1], dtype=np.int64))[::-1]
    counts = np.zeros(cells, dtype=np.int64)
    bad = count_cells(codes, cols, np.asarray(sizes, dtype=np.int64), strides, counts, trusted)
    if bad >= 0:
        j = next(j for j, c in enumerate(cols) if not 0 <= codes[bad, c] < sizes[j])
        raise ParameterError(
            f"code {codes[bad, cols[j]]} (row {bad}) is outside the domain of {sizes[j]} values"
        )
    return counts


def distinct_rows(
    codes: np.ndarray, sizes: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of an integer array ``(n, d)``.

    Returns ``(first, inverse, counts)``: the row index of each distinct row's first
    occurrence (distinct rows in lexicographic order, first column slowest), the distinct
    row of every row, and each distinct row's multiplicity.  Uses the mixed-radix key when
    the joint domain (``sizes``, default the columns' maxima) has fewer than 2^62 cells.
    """
    codes = _as_2d(codes)
    n, d = codes.shape
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    if d == 0:
        return np.zeros(1, np.int64), np.zeros(n, np.int64), np.array([n], np.int64)
    if sizes is None:
        sizes = codes.max(axis=0).astype(np.int64) + 1
    if float(np.prod(np.asarray(sizes, dtype=float))) < MAX_RADIX:
        return distinct_keys(joint_index(codes, sizes))
    else:
        _, first, inverse, counts = np.unique(
            codes, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
    return first.astype(np.int64), inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


#: Keys from which :func:`distinct_keys` hashes instead of sorting.
_HASH_MIN = 1 << 15


def distinct_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(key, return_index=True, return_inverse=True, return_counts=True)``
    without its values: ``(first, inverse, counts)``, distinct keys in ascending order.

    A long ``key`` is hashed (``pandas.factorize``, linear time) and only its distinct
    values are sorted: the same arrays as the full sort, several times faster when the keys
    repeat (class keys of a large table).
    """
    key = np.asarray(key).reshape(-1)
    if key.size < _HASH_MIN:
        _, first, inverse, counts = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        return first.astype(np.int64), inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)
    codes, uniq = pd.factorize(key, sort=False)
    # Codes are numbered by first appearance: a row is a first occurrence when its code
    # exceeds every code before it.
    before = np.maximum.accumulate(np.concatenate([[-1], codes[:-1]]))
    first = np.flatnonzero(codes > before)
    by_value = np.argsort(uniq, kind="stable")
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[by_value] = np.arange(uniq.size)
    inverse = rank[codes]
    return first[by_value], inverse, np.bincount(inverse, minlength=uniq.size).astype(np.int64)


#: Cells of a count matrix that a per-class measure works on at once (:func:`row_blocks`):
#: the privacy measures make several float copies of what they are given (shares,
#: logarithms, sorted rows), so the privacy report and the lattice search's requirements go
#: through the matrix in blocks of rows instead of copying a matrix that a 20,000-valued
#: sensitive attribute makes gigabytes large.
BLOCK_CELLS = 1 << 18
#: The memory the per-class measures of one block hold at once, with room to spare (at
#: most about eight float64 copies of a block are alive together).
BLOCK_BYTES = 16 * 8 * BLOCK_CELLS
#: Dense int64 copies of a group-by-value count matrix alive at once: a weighted count's
#: float64 sums beside their int64 copy (the lattice search), or a release's counts beside
#: the matrix its privacy report builds.  With :data:`BLOCK_BYTES`, the estimate of
#: :func:`require_count_memory`; ``tests/test_limits.py`` checks it against the peak that
#: ``privlab anatomize`` measures (Anatomy of 20,263 values on 30,162 rows: 4.7 GiB
#: estimated; it peaked at 12.0 GiB when the report copied the whole matrix six times).
COUNT_COPIES = 2


def row_blocks(counts: np.ndarray):
    """``counts`` ``(G, m)`` as consecutive blocks of rows of at most :data:`BLOCK_CELLS`
    cells (at least one row each): views, no copies."""
    rows = max(1, BLOCK_CELLS // max(1, counts.shape[1]))
    for lo in range(0, counts.shape[0], rows):
        yield counts[lo : lo + rows]


def count_memory(n_groups: int, n_values: int) -> float:
    """Bytes that a groups x values count matrix and the measures computed on it need at
    most (:data:`COUNT_COPIES` int64 copies and one block's float temporaries)."""
    return COUNT_COPIES * 8.0 * n_groups * n_values + BLOCK_BYTES


def require_count_memory(n_groups: int, n_values: int) -> None:
    """Refuse (:class:`~privlab.errors.MemoryBudgetError`) a groups x values count matrix
    that would not fit in memory, naming the size it would need (:func:`count_memory`)."""
    require_memory(
        count_memory(n_groups, n_values),
        f"the count matrix of {n_groups:,} groups x {n_values:,} sensitive values",
        "it grows with groups times values: generalize or merge the sensitive values "
        "(fewer distinct values), or use fewer rows",
    )


def group_counts(
    groups: np.ndarray,
    values: np.ndarray,
    n_values: int | None = None,
    *,
    n_groups: int | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Count matrix ``C[g, v]``: tuples of group ``g`` with sensitive code ``v`` (each tuple
    counting its ``weight`` when given).

    Group labels may be any integers; they are compacted to ``0..G-1`` in ascending order,
    unless ``n_groups`` says they already are ``0..n_groups-1``.
    """
    groups = np.asarray(groups)
    values = np.asarray(values, dtype=np.int64)
    if groups.shape != values.shape or groups.ndim != 1:
        raise PrivlabError("groups and values must be 1-d arrays of the same length")
    if groups.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    if n_groups is None:
        _, g = np.unique(groups, return_inverse=True)
        g = g.reshape(-1)
        n_groups = int(g.max()) + 1
    else:
        g = groups.astype(np.int64)
    m = int(values.max()) + 1 if n_values is None else int(n_values)
    require_count_memory(n_groups, m)
    flat = np.bincount(g * m + values, weights=weights, minlength=n_groups * m)
    return flat.reshape(n_groups, m).astype(np.int64, copy=False)
