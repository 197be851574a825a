"""Mondrian as privlab did it before the numba kernel (commit 170a5cb), verbatim: the
partitioning (``mondrian_partition``) and ``generalize``'s Mondrian path (``_mondrian``,
``_local_labels``; the helpers it shares with the optimal path are imported).  The oracle
of tests/test_mondrian.py's identical-output tests and of benchmarks/bench_mondrian.py."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privlab.data.hierarchy import CompiledHierarchy
from privlab.data.schema import Attribute
from privlab.errors import EligibilityError
from privlab.metrics.utility import cell_utility
from privlab.publish.generalization import (
    GeneralizedRelease,
    _class_labels,
    _publish,
    _str,
    _width_matrix,
)
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


def _mondrian(table, qi, sensitive, compiled, x, s, m, model):
    n = table.n_rows
    whole = model.class_ok(
        np.array([n]),
        None if s is None else np.bincount(s, minlength=m)[None, :],
        None if s is None else np.bincount(s, minlength=m) / n,
    )
    if not whole.all():
        raise EligibilityError(f"the whole table does not satisfy {model.describe()}")
    # Order categorical values by their hierarchy (leaf order of the top-down tree).
    order = []
    for j, h in enumerate(compiled):
        a = table.schema[qi[j]]
        if a.numeric:
            rank = np.arange(a.size)
        else:
            keys = np.column_stack([h.maps[lv] for lv in range(h.height, -1, -1)])
            rank = np.empty(a.size, dtype=np.int64)
            rank[np.lexsort(keys.T[::-1])] = np.arange(a.size)
        order.append(rank)
    ordinal = np.column_stack([order[j][x[:, j]] for j in range(len(qi))])
    widths = [
        _width_matrix(table.schema[q], h, order[j]) for j, (q, h) in enumerate(zip(qi, compiled))
    ]
    part = mondrian_partition(ordinal, model, s, m, widths)
    gen, labels, cover = [], [], []
    for j, h in enumerate(compiled):
        a = table.schema[qi[j]]
        g, lab, cov = _local_labels(ordinal[:, j], part, a, h, order[j])
        gen.append(g)
        labels.append(lab)
        cover.append(cov)
    utility = cell_utility(x, gen, cover, part, k=model.k, labels=_class_labels(table, sensitive))
    published, custody = _publish(table, qi, gen, labels, np.ones(n, dtype=bool), numeric_kept=None)
    return GeneralizedRelease(
        table=published,
        qi=tuple(qi),
        sensitive=sensitive,
        algorithm="mondrian",
        model=model,
        n_input=n,
        n_suppressed=0,
        utility=utility,
        search={"partitions": int(part.max()) + 1},
        custody=custody,
    )


def _local_labels(
    ordcol: np.ndarray, part: np.ndarray, attr: Attribute, h: CompiledHierarchy, rank: np.ndarray
) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """Per record, the cell of its class in one QI: the label, and each cell's cover.

    Numeric QIs: the range ``lo-hi`` of the class's values; categorical: the lowest common
    ancestor in the hierarchy of the class's values (the LCA of its smallest and largest
    values in hierarchy order)."""
    g = int(part.max()) + 1
    m = attr.size
    lo = np.full(g, m, dtype=np.int64)
    hi = np.full(g, -1, dtype=np.int64)
    np.minimum.at(lo, part, ordcol)
    np.maximum.at(hi, part, ordcol)
    inv = np.argsort(rank)  # ordinal -> domain code
    if attr.numeric:
        key = lo * m + hi
    else:
        maps = np.stack([h.maps[lv][inv] for lv in range(h.height + 1)])
        lv_of = np.full(g, h.height, dtype=np.int64)
        for lv in range(h.height, -1, -1):
            lv_of[maps[lv, lo] == maps[lv, hi]] = lv
        key = lv_of * m + maps[lv_of, lo]
    ukey, cell_of_part = np.unique(key, return_inverse=True)
    labels, covers = [], []
    for kk in ukey:
        if attr.numeric:
            a, b = divmod(int(kk), m)
            la, lb = _str(attr.domain[inv[a]]), _str(attr.domain[inv[b]])
            labels.append(la if a == b else f"{la}-{lb}")
            covers.append((rank >= a) & (rank <= b))
        else:
            lv, ident = divmod(int(kk), m)
            labels.append(h.labels[lv][ident])
            covers.append(h.maps[lv] == ident)
    return cell_of_part.reshape(-1)[part], tuple(labels), np.array(covers)
