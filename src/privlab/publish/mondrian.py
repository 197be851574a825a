"""Mondrian multidimensional local recoding (LeFevre, DeWitt & Ramakrishnan, ICDE 2006).

Strict top-down partitioning: a partition is split on the quasi-identifier of widest
normalized range (range of codes in the partition over the range in the table) at its median;
a split is *allowable* when both halves satisfy the privacy model; when the widest attribute
gives no allowable split the next widest is tried, and a partition with no allowable split
becomes an equivalence class.  Attributes are split along their domain order (ascending for
numeric attributes; for categorical ones the hierarchy's leaf order when a hierarchy is given,
so that halves stay close in the hierarchy, else the domain order).

A large table (``_KERNEL_MIN``) is partitioned by compiled kernels
(:mod:`privlab.publish._mondrian_kernel`), over a copy of the codes kept permuted so that
each partition is a contiguous run of rows; a small one by a Python loop over partitions.
Under k-anonymity alone one kernel call does the whole recursion; a model that reads the
sensitive values (l-diversity, t-closeness, delta-disclosure) is checked by
:meth:`PrivacyModel.class_ok` itself, on all the splits proposed in one round at once (the
tree does not depend on the order in which partitions are visited, and the classes are
numbered in the recursion's order: left half first).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privlab.publish.models import PrivacyModel

#: Tables of at least this many times k rows (as many possible classes) are partitioned by
#: the compiled kernels; below, the Python loop (about 50 us a partition) is faster than
#: importing numba and loading the cached kernels (about 0.7 s of CPU in a fresh process).
_KERNEL_MIN = 8192


def mondrian_partition(
    codes: np.ndarray,
    model: PrivacyModel,
    sensitive: np.ndarray | None = None,
    n_sensitive: int = 0,
    width: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """Partition label of every row (``0..G-1``).

    Parameters
    ----------
    codes
        ``(n, d)`` ordinal codes of the QIs (the order along which medians are taken).
    model
        Each final partition satisfies it (the whole table must satisfy it).
    sensitive, n_sensitive
        Sensitive codes, needed when the model uses them.
    width
        Per QI, a matrix ``width[j][lo, hi]``: the normalized width (0..1) of a partition whose
        ordinal codes span ``lo..hi`` (LeFevre et al.: the value range over the table's range
        for numeric QIs, the leaves under the lowest common ancestor for hierarchical ones).
        Default: the code range over the table's.  Ties go to the QI listed first.

    Returns
    -------
    numpy.ndarray
        ``int64`` labels; classes are numbered in the order the recursion closes them
        (a split's left half, the codes below the median, first).
    """
    return mondrian_classes(codes, model, sensitive, n_sensitive, width)[0]


def mondrian_classes(
    codes: np.ndarray,
    model: PrivacyModel,
    sensitive: np.ndarray | None = None,
    n_sensitive: int = 0,
    width: Sequence[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mondrian_partition`'s labels and each class's code range.

    Returns
    -------
    label : numpy.ndarray
        ``(n,)`` ``int64`` class of every row.
    bounds : numpy.ndarray
        ``(G, 2, d)`` ``int64``: ``bounds[g, 0, j]`` and ``bounds[g, 1, j]`` are the
        smallest and largest code of QI ``j`` in class ``g``.
    """
    codes = np.asarray(codes)
    n, d = codes.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 2, d), dtype=np.int64)
    if n // model.k < _KERNEL_MIN:
        label = _partition_python(codes, model, sensitive, n_sensitive, width)
        bounds = np.empty((int(label.max()) + 1, 2, d), dtype=np.int64)
        bounds[:, 0] = np.iinfo(np.int64).max
        bounds[:, 1] = np.iinfo(np.int64).min
        np.minimum.at(bounds[:, 0], label, codes)
        np.maximum.at(bounds[:, 1], label, codes)
        return label, bounds
    return _partition_kernel(codes, model, sensitive, n_sensitive, width)


def _partition_kernel(
    codes: np.ndarray,
    model: PrivacyModel,
    sensitive: np.ndarray | None,
    n_sensitive: int,
    width: Sequence[np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mondrian_classes` by the compiled kernels (``n > 0``)."""
    from privlab.publish import _mondrian_kernel as kern

    n, d = codes.shape
    lo_all, hi_all = codes.min(axis=0), codes.max(axis=0)
    x = np.array(codes, dtype=_code_dtype(lo_all, hi_all), order="C")
    span = np.maximum(hi_all.astype(np.int64) - lo_all, 1).astype(float)
    use_width = width is not None
    if use_width:
        mats = [np.asarray(width[j], dtype=float) for j in range(d)]
        for j, w in enumerate(mats):
            if w.ndim != 2 or lo_all[j] < 0 or hi_all[j] >= min(w.shape):
                raise ValueError(f"width[{j}] does not cover the codes of column {j}")
        wdim = np.array([w.shape[1] for w in mats], dtype=np.int64)
        woff = np.concatenate([[0], np.cumsum([w.size for w in mats])[:-1]]).astype(np.int64)
        wflat = np.concatenate([w.ravel() for w in mats]) if d else np.zeros(0)
    else:
        wdim = woff = np.zeros(d, dtype=np.int64)
        wflat = np.zeros(0)
    ranges = (hi_all.astype(np.int64) - lo_all + 1) if d else np.zeros(1, dtype=np.int64)
    hist = np.zeros(min(int(ranges.max()), kern._HIST_FACTOR * n + kern._HIST_SLACK), np.int64)
    ids = np.arange(n, dtype=np.int64)
    k = int(model.k)
    label = np.empty(n, dtype=np.int64)
    if not model.needs_sensitive:
        bounds = np.empty((max(n // k, 1), 2, d), dtype=x.dtype)
        g = kern.partition_k(x, ids, k, span, wflat, woff, wdim, use_width, hist, label, bounds)
        return label, bounds[:g].astype(np.int64)
    sens = np.array(sensitive, dtype=np.int64)  # a copy: the kernel permutes it
    total = np.bincount(sens, minlength=n_sensitive)
    overall = total / n
    m = total.size
    starts = np.zeros(1, dtype=np.int64)
    ends = np.full(1, n, dtype=np.int64)
    ranks = np.zeros(1, dtype=np.int64)
    counts = total[None, :]
    done_s, done_e = [], []
    while starts.size:
        p = starts.size
        out_rank = np.empty(p, dtype=np.int64)
        out_nl = np.zeros(p, dtype=np.int64)
        left = np.zeros((p, m), dtype=np.int64)
        kern.propose(x, ids, sens, starts, ends, ranks, k, span, wflat, woff, wdim, use_width,
                     hist, out_rank, out_nl, left)  # fmt: skip
        leaf = out_rank < 0
        done_s.append(starts[leaf])
        done_e.append(ends[leaf])
        tried = ~leaf
        s, e, nl, lc = starts[tried], ends[tried], out_nl[tried], left[tried]
        # both halves of every proposal as the rows of one check: class_ok is row by row,
        # so this equals one call per proposal on its two halves
        halves = np.empty((2 * s.size, m), dtype=np.int64)
        halves[0::2] = lc
        halves[1::2] = counts[tried] - lc
        sizes = np.empty(2 * s.size, dtype=np.int64)
        sizes[0::2] = nl
        sizes[1::2] = e - s - nl
        ok = model.class_ok(sizes, halves, overall).reshape(-1, 2).all(axis=1)
        no = ~ok
        starts = np.concatenate([s[ok], s[ok] + nl[ok], s[no]])
        ends = np.concatenate([s[ok] + nl[ok], e[ok], e[no]])
        ranks = np.concatenate([np.zeros(2 * int(ok.sum()), np.int64), out_rank[tried][no] + 1])
        counts = np.concatenate([lc[ok], halves[1::2][ok], counts[tried][no]])
    cs = np.concatenate(done_s)
    ce = np.concatenate(done_e)
    pos = np.argsort(cs)
    bounds = np.empty((cs.size, 2, d), dtype=x.dtype)
    kern.label_runs(x, ids, cs[pos], ce[pos], label, bounds)
    return label, bounds.astype(np.int64)


def _code_dtype(lo: np.ndarray, hi: np.ndarray) -> type:
    """The narrowest signed integer type holding every code (fewer bytes to move per row)."""
    if lo.size == 0:
        return np.int8
    a, b = int(lo.min()), int(hi.max())
    for t in (np.int8, np.int16, np.int32):
        info = np.iinfo(t)
        if a >= info.min and b <= info.max:
            return t
    return np.int64


def _partition_python(
    codes: np.ndarray,
    model: PrivacyModel,
    sensitive: np.ndarray | None = None,
    n_sensitive: int = 0,
    width: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """:func:`mondrian_partition` in Python, a partition at a time (about 50 us each); the
    parameters and the labels are :func:`mondrian_partition`'s."""
    codes = np.asarray(codes, dtype=np.int64)
    n, d = codes.shape
    sens = None if sensitive is None else np.asarray(sensitive, dtype=np.int64)
    overall = np.bincount(sens, minlength=n_sensitive) / n if sens is not None and n else None
    span = np.maximum(codes.max(axis=0) - codes.min(axis=0), 1).astype(float) if n else None

    def ok(parts: list[np.ndarray]) -> bool:
        sizes = np.array([p.size for p in parts])
        counts = None
        if sens is not None:
            counts = np.stack([np.bincount(sens[p], minlength=n_sensitive) for p in parts])
        return bool(model.class_ok(sizes, counts, overall).all())

    check = ok if model.needs_sensitive else None
    label = np.zeros(n, dtype=np.int64)
    stack = [np.arange(n)]
    g = 0
    while stack:
        part = stack.pop()
        sub = codes[part]
        lo, hi = sub.min(axis=0), sub.max(axis=0)
        if width is None:
            w = (hi - lo) / span
        else:
            w = np.array([width[j][lo[j], hi[j]] for j in range(d)])
        done = False
        if part.size >= 2 * model.k:
            for j in np.argsort(-w, kind="stable"):
                if hi[j] == lo[j]:
                    break
                col = sub[:, j]
                med = np.partition(col, part.size // 2)[part.size // 2]
                left = col < med
                if not left.any():
                    left = col <= med
                if left.all():
                    continue
                a, b = part[left], part[~left]
                if a.size >= model.k and b.size >= model.k and (check is None or check([a, b])):
                    stack.append(b)
                    stack.append(a)
                    done = True
                    break
        if not done:
            label[part] = g
            g += 1
    return label
