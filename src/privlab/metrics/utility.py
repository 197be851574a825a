"""Information loss of a generalized release (what the lattice search optimizes).

Per record ``r`` and quasi-identifier ``j``, a release replaces the value ``v = x_rj`` by a
*cell*: the set of domain values its generalized label covers (a hierarchy node, an interval,
the whole domain for a suppressed record).  From the cells:

* **discernibility** (Bayardo & Agrawal 2005): ``sum_E |E|^2 + |S| * n``, suppressed records
  ``S`` each charged the table size;
* **average equivalence-class size** (LeFevre et al. 2006): ``C_avg = (n_published /
  n_classes) / k``;
* **generalization height / precision** (Sweeney 2002; global recoding only): the sum of the
  levels, and ``Prec = 1 - mean_j level_j / height_j``;
* **normalized certainty penalty** (Xu et al. 2006): mean over records and QIs of
  ``(|cell| - 1) / (|domain| - 1)``;
* **non-uniform entropy** (Gionis & Tassa 2009; ARX): ``sum_r sum_j -log2 P(v | cell)`` with
  frequencies from the input;
* **KL divergence** of the release's induced distribution from the input's QI distribution
  (Kifer & Gehrke 2006): each class's mass ``|E|/n`` spread uniformly over the
  product of its cells (suppressed records over the whole domain), in nats.  Exact when the
  cells of different classes are disjoint (full-domain recoding, Mondrian on ordered domains);
* **classification metric** (Iyengar 2002, as Kifer & Gehrke 2006 Sec. 2 describe it): with
  one attribute taken as the class label, a penalty of 1 for every suppressed record and for
  every published record whose label differs from the majority label of its equivalence
  class; ``CM = #suppressed + sum_E (|E| - max_c |E_c|)``, reported divided by ``n``.  It is
  the error of the classifier that predicts each class's majority label (ties do not change
  it).  Kifer & Gehrke's objection stands: it serves one chosen class attribute only.  When
  the class is the *sensitive* attribute (what a generalized release carries),
  ``1 - CM_published / n_published`` is the accuracy of the adversary who guesses each class's
  most common value, so a low CM there is also Brickell & Shmatikov's adversarial accuracy
  ``A_acc`` plus the baseline ``p(T, s_max)``: utility for that class is disclosure.

:func:`cell_utility` measures all of these against the input (its record counts, value
frequencies and suppressed records): the custodian's figures, kept in custody.  What a
release publishes is :func:`published_utility`: the measures its readers can compute from the
published rows and the public parameters alone (class sizes, discernibility and the
classification metric over the published records, the average class size, the height), so
that two inputs with the same published table publish the same figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from privlab.data.counts import distinct_keys, distinct_rows
from privlab.errors import PrivlabError


def discernibility(
    class_sizes: np.ndarray, n_suppressed: int = 0, n_total: int | None = None
) -> float:
    """``sum |E|^2 + n_suppressed * n_total`` (``n_total`` defaults to all records)."""
    s = np.asarray(class_sizes, dtype=np.int64)
    n = int(s.sum()) + int(n_suppressed) if n_total is None else int(n_total)
    return float((s.astype(float) ** 2).sum() + n_suppressed * n)


def avg_class_size(class_sizes: np.ndarray, k: int = 1) -> float:
    """``C_avg = (published records / classes) / k``."""
    s = np.asarray(class_sizes)
    if s.size == 0:
        raise PrivlabError("no equivalence class")
    return float(s.sum() / s.size / k)


def precision(levels: Sequence[int], heights: Sequence[int]) -> float:
    """Sweeney's precision of a full-domain recoding: ``1 - mean_j level_j / height_j``."""
    lv = np.asarray(levels, dtype=float)
    h = np.maximum(np.asarray(heights, dtype=float), 1)
    return float(1 - np.mean(lv / h))


def published_utility(
    class_of: np.ndarray,
    labels: np.ndarray | None = None,
    *,
    k: int = 1,
    levels: Sequence[int] | None = None,
    weights: np.ndarray | None = None,
) -> dict[str, float | int | None]:
    """The information-loss measures of a generalized table computed from its published
    rows alone (and the public ``k`` and node levels).

    Parameters
    ----------
    class_of
        The equivalence class of each published row (any integers): rows alike on the
        published quasi-identifiers.
    labels
        The class label of each published row (the sensitive column), for the classification
        metric over the published records; None: not computed.
    k, levels
        The public ``k`` (for ``C_avg``) and the node's levels (the height; None for local
        recoding).
    weights
        How many records each row stands for (default one each).

    Returns
    -------
    dict
        ``n_published``, ``n_classes``, ``discernibility`` (``sum_E |E|^2``),
        ``avg_class_size`` (None without rows), ``height`` and ``classification_metric``
        (``sum_E (|E| - max_c |E_c|) / n_published``), each None when it cannot be computed.
    """
    cls = np.asarray(class_of, dtype=np.int64).reshape(-1)
    w = np.ones(cls.size, dtype=np.int64) if weights is None else np.asarray(weights, np.int64)
    if w.shape != cls.shape:
        raise PrivlabError(f"class_of has {cls.size} rows but weights has {w.size}")
    n = int(w.sum())
    g, _ = _compact(cls) if cls.size else (cls, cls)
    sizes = np.bincount(g, weights=w).astype(np.int64) if cls.size else np.zeros(0, np.int64)
    out: dict[str, float | int | None] = {
        "n_published": n,
        "n_classes": int(sizes.size),
        "discernibility": float((sizes.astype(float) ** 2).sum()),
        "avg_class_size": avg_class_size(sizes, k) if sizes.size else None,
        "height": None if levels is None else int(sum(int(v) for v in levels)),
        "classification_metric": None,
    }
    if labels is not None and n:
        y = np.asarray(labels, dtype=np.int64).reshape(-1)
        if y.size != cls.size:
            raise PrivlabError(f"class_of has {cls.size} rows but labels has {y.size}")
        pair, pinv = np.unique(g * (int(y.max()) + 1) + y, return_inverse=True)
        count = np.bincount(pinv.reshape(-1), weights=w)
        best = np.zeros(sizes.size)
        np.maximum.at(best, pair // (int(y.max()) + 1), count)
        out["classification_metric"] = float((sizes - best).sum() / n)
    return out


def classification_metric(
    class_of: np.ndarray, labels: np.ndarray, *, normalize: bool = False
) -> float:
    """Kifer & Gehrke's (Iyengar's) classification metric of a partition.

    ``CM = #suppressed + sum_E (|E| - max_c |{r in E : label_r = c}|)``: one for each
    suppressed record and for each published record whose class label is not the majority
    label of its equivalence class.

    Parameters
    ----------
    class_of
        Equivalence class of each record (any integers), ``-1`` for a suppressed record.
    labels
        Class label of each record (non-negative integer codes).
    normalize
        Divide by the number of records ``n`` (suppressed ones included).
    """
    cls = np.asarray(class_of, dtype=np.int64).reshape(-1)
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if cls.size != y.size:
        raise PrivlabError(f"class_of has {cls.size} records but labels has {y.size}")
    if cls.size == 0:
        raise PrivlabError("the table is empty (0 rows)")
    if np.any(y < 0):
        raise PrivlabError(f"class labels must be non-negative codes, got {int(y.min())}")
    supp = cls < 0
    cm = int(supp.sum())
    if not supp.all():
        g, _ = _compact(cls[~supp])
        m = int(y.max()) + 1
        counts = np.bincount(g * m + y[~supp], minlength=(int(g.max()) + 1) * m)
        counts = counts.reshape(-1, m)
        cm += int((counts.sum(axis=1) - counts.max(axis=1)).sum())
    return cm / cls.size if normalize else float(cm)


def _compact(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(labels, return_inverse=True, return_counts=True)`` without the values:
    each label's index among the distinct labels (ascending) and each distinct label's count.
    Counted by ``bincount`` when the labels are non-negative and at most a few times as many
    as the entries (class ids of a partition), by :func:`distinct_keys` otherwise."""
    labels = labels.reshape(-1)
    if labels.size and labels.min() >= 0 and int(labels.max()) < 4 * labels.size:
        counts = np.bincount(labels)
        present = counts > 0
        remap = np.cumsum(present) - 1
        return remap[labels], counts[present]
    _, inverse, counts = distinct_keys(labels)
    return inverse, counts


@dataclass(frozen=True)
class UtilityReport:
    """Information-loss measures of a release (lower is better, except precision)."""

    n_records: int
    n_published: int
    n_suppressed: int
    n_classes: int
    discernibility: float
    avg_class_size: float
    ncp: float
    non_uniform_entropy: float
    kl_divergence: float
    height: int | None = None
    precision: float | None = None
    #: ``CM / n`` for the class labels given to :func:`cell_utility` (None without them).
    classification_metric: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def cell_utility(
    qi_codes: np.ndarray,
    cell_of: Sequence[np.ndarray],
    cover: Sequence[np.ndarray],
    class_of: np.ndarray,
    *,
    k: int = 1,
    levels: Sequence[int] | None = None,
    heights: Sequence[int] | None = None,
    labels: np.ndarray | None = None,
) -> UtilityReport:
    """Every measure from the cells of a release.

    Parameters
    ----------
    qi_codes
        ``(n, d)`` original QI codes.
    cell_of, cover
        For QI ``j``: ``cell_of[j][r]`` is the cell of record ``r`` and ``cover[j]`` a
        boolean ``(n_cells, domain size)`` matrix of the values each cell covers.  Rows of
        suppressed records are ignored (their cell is the whole domain).
    class_of
        Equivalence class of each record (any integers), ``-1`` for suppressed records.
    labels
        Class label of each record (codes), for the :func:`classification_metric`; the
        generalization sanitizers pass the sensitive attribute.
    """
    x = np.asarray(qi_codes, dtype=np.int64)
    n, d = x.shape
    if n == 0:
        raise PrivlabError("the table is empty (0 rows)")
    cls = np.asarray(class_of, dtype=np.int64)
    supp = cls < 0
    n_supp = int(supp.sum())
    inv, sizes = _compact(cls[~supp])
    row_size = np.zeros(n)
    row_size[~supp] = sizes[inv]
    ncp = 0.0
    nue = 0.0
    log_cell = np.zeros(n)
    for j in range(d):
        cov = np.asarray(cover[j], dtype=bool)
        n_cells, m = cov.shape
        xj = x[:, j]
        freq = np.bincount(xj, minlength=m).astype(float)
        # Per cell, and for one more cell (index n_cells) standing for the suppressed
        # records, whose cell is the whole domain: leaves, input frequency, covered values.
        leaves = np.append(cov.sum(axis=1).astype(float), m)
        cfreq = np.append(cov.astype(float) @ freq, n)
        cell = np.asarray(cell_of[j], dtype=np.int64)
        cell = np.where(supp, n_cells, cell) if n_supp else cell
        flat = cell * m + xj  # (cell, value) of every record
        if not np.concatenate([cov.reshape(-1), np.ones(m, dtype=bool)])[flat].all():
            raise PrivlabError(f"a record's value is outside its generalized cell (QI {j})")
        ncp += float(((leaves - 1) / max(m - 1, 1))[cell].sum())
        if leaves.size * m <= n:  # -log2 P(value | cell) per (cell, value), then per record
            with np.errstate(divide="ignore", invalid="ignore"):  # values no record holds
                term = -np.log2(freq[None, :] / cfreq[:, None])
            nue += float(term.reshape(-1)[flat].sum())
        else:
            nue += float(-np.log2(freq[xj] / cfreq[cell]).sum())
        log_cell += np.log(leaves)[cell]
    mass = np.where(supp, n_supp, row_size) / n
    log_q = np.log(np.maximum(mass, 1e-300)) - log_cell
    # Input distribution over distinct QI tuples.
    _, qinv, qcount = distinct_rows(x)
    px = qcount / n
    lq = np.zeros(px.size)
    lq[qinv] = log_q
    kl = float((px * (np.log(px) - lq)).sum())
    height = prec = None
    if levels is not None and heights is not None:
        height = int(sum(levels))
        prec = precision(levels, heights)
    return UtilityReport(
        n_records=n,
        n_published=n - n_supp,
        n_suppressed=n_supp,
        n_classes=int(sizes.size),
        discernibility=discernibility(sizes, n_supp, n),
        avg_class_size=avg_class_size(sizes, k) if sizes.size else float("inf"),
        ncp=ncp / (n * d) if d else 0.0,
        non_uniform_entropy=nue,
        kl_divergence=kl,
        height=height,
        precision=prec,
        classification_metric=(
            None if labels is None else classification_metric(cls, labels, normalize=True)
        ),
    )
