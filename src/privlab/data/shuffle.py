"""Uniformly random row orders: :func:`permutation` and :func:`shuffled_rows`.

A release's rows are published in random order (row order never reveals a secret).  numpy's
``Generator.permutation`` is Fisher-Yates over the whole array: a random read and write a
row, each a cache miss once the rows outgrow the cache (1.1 s for 10 million rows, and as
long again to gather a table's rows by the permutation).  From ``_BUCKET_MIN`` rows the
shuffle is done in two passes that stay in the cache instead (Rao 1961; Sandelius 1962):

1. every row draws a bucket, uniformly and independently, and the rows are moved, in one
   sequential pass, to their bucket's part of the output (input order kept within it);
2. each bucket, small enough to fit in the cache, is shuffled by Fisher-Yates.

The result is exactly uniform: for any order ``pi`` of the rows and any bucket sizes
``c_1, .., c_B``, there is exactly one way for the labels to fall and the buckets to be
shuffled that gives ``pi``, of probability ``B^-n / prod(c_k!)``, whatever ``pi`` is.

Below ``_BUCKET_MIN`` rows numpy's ``permutation`` is used, so small tables draw as they
always did.  Both functions draw the same order for the same generator state:
``shuffled_rows(gen, a)`` is ``a[permutation(gen, len(a))]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: From this many rows the two-pass shuffle (a seed's order differs from numpy's above it).
_BUCKET_MIN = 1 << 20
#: Rows of a bucket, about (a power of two of buckets; the same for every row width, so that
#: :func:`permutation` and :func:`shuffled_rows` agree): 4,096 to 8,192 rows of 32 bytes fit
#: the 512 KiB per-core L2 cache this was tuned on.
_BUCKET_ROWS = 1 << 12
#: Words drawn for the in-bucket swaps beyond the expected need (two swaps a word).
_SLACK_WORDS = 1 << 10


def _buckets(n: int) -> int:
    """About ``_BUCKET_ROWS`` rows a bucket: a power of two of buckets, at most 2^15."""
    want = max(1, n // _BUCKET_ROWS)
    return int(min(1 << 15, 1 << (want - 1).bit_length()))


def _gather(a: np.ndarray, cols: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``a[order][:, cols]``, C-contiguous: whole rows taken as one item each (numpy's
    indexing of a 2-D array by rows was 7x slower at 10 million rows of 8 codes)."""
    sub = np.ascontiguousarray(a[:, cols])
    if sub.shape[1] == 0 or sub.dtype.hasobject:
        return np.ascontiguousarray(sub[order])
    rows = sub.view(np.dtype((np.void, sub.dtype.itemsize * sub.shape[1]))).ravel()
    return np.take(rows, order).view(sub.dtype).reshape(len(order), sub.shape[1])


def _two_pass(
    gen: np.random.Generator,
    a: np.ndarray,
    cols_a: np.ndarray,
    b: np.ndarray,
    cols_b: np.ndarray,
    buckets: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    from privlab.data._shuffle_kernel import scatter, shuffle_buckets

    n = a.shape[0]
    nb = _buckets(n) if buckets is None else int(buckets)
    labels = gen.integers(0, nb, size=n, dtype=np.uint16)
    starts = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=nb), out=starts[1:])
    out_a = np.empty((n, len(cols_a)), dtype=a.dtype)
    out_b = np.empty((n, len(cols_b)), dtype=b.dtype)
    scatter(labels, starts, a, cols_a, out_a, b, cols_b, out_b)
    del labels
    bucket, j = 0, -1
    swaps = n - int(np.count_nonzero(np.diff(starts)))  # one 32-bit half each, bar rejections
    words = gen.bit_generator.random_raw((swaps + 1) // 2 + _SLACK_WORDS)
    while True:  # the words run out only after rejections (rare): draw more, go on
        bucket, j, _ = shuffle_buckets(starts, bucket, j, words, out_a, out_b)
        if bucket == nb:
            return out_a, out_b
        words = gen.bit_generator.random_raw(_SLACK_WORDS)


def shuffled_rows(
    gen: np.random.Generator,
    a: np.ndarray,
    cols_a: Sequence[int] | None = None,
    b: np.ndarray | None = None,
    cols_b: Sequence[int] | None = None,
    *,
    buckets: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows of ``a`` (its columns ``cols_a``, default all) in a uniformly random order,
    and the rows of ``b`` (its columns ``cols_b``) in the same order.

    Equal to ``a[order][:, cols_a], b[order][:, cols_b]`` with ``order =
    permutation(gen, len(a))`` for the same generator state, and leaves ``gen`` in the
    same state; from ``_BUCKET_MIN`` rows it never builds ``order`` and never reads a row
    at random (``buckets`` forces the two-pass shuffle with that many buckets, at most
    2^16).  Returns fresh C-contiguous arrays (``None`` for an absent ``b``).
    """
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"need a 2-D array of rows, got {a.ndim} dimensions")
    ca = np.arange(a.shape[1]) if cols_a is None else np.asarray(cols_a, dtype=np.int64)
    if b is not None and len(b) != len(a):
        raise ValueError(f"the two arrays have {len(a)} and {len(b)} rows")
    second = b is not None
    if not second:  # a, with none of its columns, stands in for the absent second array
        b, cb = a, np.empty(0, dtype=np.int64)
    else:
        cb = np.arange(b.shape[1]) if cols_b is None else np.asarray(cols_b, dtype=np.int64)
    n = a.shape[0]
    if buckets is None and n < _BUCKET_MIN:
        order = gen.permutation(n)
        out_a, out_b = _gather(a, ca, order), _gather(b, cb, order)
    else:
        if buckets is not None and not 1 <= int(buckets) <= 1 << 16:
            raise ValueError(f"buckets must be 1 .. 65536, got {buckets}")
        a = np.ascontiguousarray(a)
        b = a if b is a else np.ascontiguousarray(b)
        out_a, out_b = _two_pass(gen, a, ca, b, cb, buckets)
    return out_a, (out_b if second else None)


def permutation(gen: np.random.Generator, n: int, *, buckets: int | None = None) -> np.ndarray:
    """A uniformly random permutation of ``0 .. n - 1`` (int64): numpy's
    ``gen.permutation(n)`` below ``_BUCKET_MIN``, the two-pass shuffle from there (or with
    ``buckets``); the order :func:`shuffled_rows` gives rows for the same generator state."""
    if buckets is None and n < _BUCKET_MIN:
        return gen.permutation(n)
    return shuffled_rows(gen, np.arange(n, dtype=np.int64)[:, None], buckets=buckets)[0][:, 0]
