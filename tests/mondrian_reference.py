"""Mondrian's partitioning as privlab did it before the numba kernel (commit 170a5cb),
verbatim: the oracle of tests/test_mondrian.py's identical-output tests (and of
benchmarks/bench_mondrian.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privlab.publish.models import PrivacyModel


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
    """
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
