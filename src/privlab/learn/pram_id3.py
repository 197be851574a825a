"""ID3 decision trees learned from PRAM-randomized data (Ma 2006, Sec. 7.2).

ID3 (Quinlan 1986) needs, at every node, the class counts ``D_j`` of the records that follow
the node's path ``a_1 = k_1, ..., a_l = k_l`` and, for every candidate attribute ``a``, the
counts ``D_kj`` of its children.  From randomized records they are estimated (Sec. 7.2.2):
with ``T~`` the randomized counts over ``(a_1, ..., a_l, [a,] C)`` (first attribute slowest,
class fastest) and ``P = P_1 (x) ... (x) P_l [(x) P_a] (x) P_C``, the moment estimate is
``T^ = (P^T)^-1 T~`` and the node's counts are the slice of ``T^`` at the path's index.

**Never the full vector.**  Because ``(P^T)^-1 = Q_1 (x) ... (x) Q_C`` with ``Q_i =
(P_i^T)^-1``, the slice is a weighted count over the *records*:
``D^_kj = sum_r w_r Q_a[k, x~_ra] Q_C[j, x~_rC]`` with ``w_r = prod_i Q_i[k_i, x~_ri]``.  Each
child's weights are its parent's times one factor, so a node costs ``O(N)`` per candidate
whatever its depth, and nothing of size ``prod K`` is formed (:func:`node_index` gives the
thesis's mixed-radix index, used by the tests to check the slice against the full vector).

**Where the thesis is wrong or silent** (the choices are parameters, defaults documented):

* it writes ``T^ = P^-1 T~``; the unbiased estimate is ``(P^T)^-1 T~`` (they agree only for
  a symmetric ``P``, as M-category matrices are);
* its printed ``Index`` formulas are garbled; the mixed-radix form (Fig. 7.7's example: path
  ``a_1 = 3, a_2 = 1`` with ``K = (3, 2)`` and two classes uses ``T^(9), T^(10)``) is meant;
* negative estimates (the moment estimate is unbiased, not positive) are clipped at 0 before
  the entropies and the labels;
* a node is **empty** when its estimated total is below ``min_count`` (default 1: at ``p =
  0`` exactly ID3's "no record"); it becomes a leaf labelled with its parent's majority;
* a node is **pure** when its largest estimated class share is at least ``purity`` (default
  1: exactly ID3's rule at ``p = 0``; with randomized data a value below 1, e.g. 0.99,
  stops growing branches that estimation noise alone keeps impure);
* a leaf's label is the class with the largest (clipped) estimated count; ties go to the
  first class, and among attributes of equal gain the first is split on;
* the tree is tested on the original records (the thesis does not say);
* **a split must beat its own noise** (``split_sd``, default 1; privlab's rule, issue 31
  item 4).  Grown as the thesis grows it, the tree falls below the majority class from
  ``p = 0.3`` on Adult and ``p = 0.2`` on Breast Cancer (docs/results.md): deep down, the
  estimated gains are noise.  Theorem 2 gives the covariance of the estimated counts at every
  node, so privlab splits on an attribute only when its estimated gain exceeds ``split_sd``
  standard deviations of that gain; when no attribute does, the node is a leaf (``why =
  "gain within its sd"``) with its own majority label.  The sd is the **delta method**
  (first-order propagation of the covariance): see :func:`gain_sd`.  At ``p = 0`` the
  covariance is 0, every split is kept and the tree is exact ID3; ``split_sd=None`` is the
  thesis's tree at every ``p``.  The covariance is the randomization's given the data (Thm
  2), not the sampling variance: at small ``p`` the rule leaves ID3's own overfitting to
  ``min_count`` and ``max_depth``.  Measured (tests): the sd matches the spread of the gain
  over repeated randomizations of fixed data within 5%; an attribute independent of the
  class at ``p = 0.4`` (5,000 records) is never split on when binary (0 of 300; the
  thesis's tree: always) and 8.7% of the time with three values (0 of 300 at
  ``split_sd = 2``);

At ``p = 0`` (identity matrices) the tree is node for node privlab's exact ID3,
:class:`~privlab.learn.dp_tree.DPDecisionTreeClassifier` at ``epsilon = inf`` with
``criterion="info_gain"`` (a test checks it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from privlab.data.matrices import validate_matrix
from privlab.errors import ParameterError
from privlab.learn._sklearn import (
    Interval,
    _check_domain,
    _encode,
    _feature_label,
    encode_nominal,
    is_tabular,
    nominal_table,
    per_feature,
    validate_params,
    validate_table,
)

__all__ = ["PramID3Classifier", "entropy", "gain_sd", "node_index", "path_counts", "path_gain"]


def node_index(path: Sequence[int], cards: Sequence[int], m: int, j: int) -> int:
    """The thesis's 1-based index into ``T^`` of class ``j`` (1-based) at the path
    ``a_1 = k_1, ..., a_l = k_l`` (1-based values) with cardinalities ``K_1..K_l`` and ``m``
    classes: mixed radix, first attribute slowest, class fastest (Sec. 7.2.2, Fig. 7.7)."""
    if len(path) != len(cards):
        raise ParameterError(f"{len(path)} path values for {len(cards)} cardinalities")
    index = 0
    for k, size in zip(path, cards):
        if not 1 <= k <= size:
            raise ParameterError(f"path value {k} is outside 1..{size}")
        index = index * size + (k - 1)
    if not 1 <= j <= m:
        raise ParameterError(f"class {j} is outside 1..{m}")
    return index * m + j


def entropy(counts: np.ndarray) -> float:
    """``H = -sum_j (D_j / |D|) log2(D_j / |D|)`` of (clipped) counts; 0 for an empty node."""
    c = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    total = c.sum()
    if total <= 0:
        return 0.0
    p = c[c > 0] / total
    return float(-(p * np.log2(p)).sum())


def _split_entropy(tab: np.ndarray) -> float:
    """``sum_k (|D_k| / |D|) H(D_k)`` of a children x classes table (clipped)."""
    t = np.clip(tab, 0.0, None)
    total = t.sum()
    if total <= 0:
        return 0.0
    return float(sum(row.sum() / total * entropy(row) for row in t))


@dataclass
class _Node:
    counts: np.ndarray  # estimated class counts (clipped)
    label: int
    feature: int = -1  # -1: leaf
    children: list[_Node] = field(default_factory=list)
    gain: float | None = None
    why: str = ""  # why a leaf is a leaf
    gain_sd: float | None = None  # the delta-method sd of the gain (split_sd set)


def _inverse_t(matrix: Any, size: int, what: str) -> np.ndarray:
    """``Q = (P^T)^-1`` of a transition matrix (identity when None), checked by
    :func:`privlab.data.matrices.validate_matrix` (square, stochastic, invertible)."""
    if matrix is None:
        return np.eye(size)
    p = validate_matrix(matrix, size=size, invertible=True, name=f"the matrix of {what}")
    return np.linalg.inv(p.T)


def _path_weights(
    codes: Any, y: Any, path: dict[int, int], matrices: Sequence[Any], class_matrix: Any
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """:func:`path_counts`'s and :func:`path_gain`'s input as arrays, the ``Q = (P^T)^-1`` of
    every feature and of the class, and the record weights of the node at ``path`` (a product
    of ``Q`` entries)."""
    codes = np.asarray(codes, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    qs = [_inverse_t(m, np.asarray(m).shape[0], f"feature {f}") for f, m in enumerate(matrices)]
    qc = _inverse_t(class_matrix, np.asarray(class_matrix).shape[0], "the class")
    w = np.ones(codes.shape[0])
    for f, k in path.items():
        w = w * qs[f][k, codes[:, f]]
    return codes, y, qs, qc, w


def path_counts(
    codes: Any,
    y: Any,
    path: dict[int, int],
    *,
    matrices: Sequence[Any],
    class_matrix: Any,
    feature: int | None = None,
) -> np.ndarray:
    """The estimated class counts of the records on ``path`` (``{feature: code}``), or of the
    children of that node on ``feature`` (children x classes): the slice of
    ``T^ = (P^T)^-1 T~`` the thesis indexes with :func:`node_index`, computed record-wise."""
    codes, y, qs, qc, w = _path_weights(codes, y, path, matrices, class_matrix)
    return _estimate(qs, qc, codes, y, w, feature)


def path_gain(
    codes: Any,
    y: Any,
    path: dict[int, int],
    *,
    matrices: Sequence[Any],
    class_matrix: Any,
    feature: int,
) -> tuple[float, float]:
    """The estimated information gain (bits) of splitting the node at ``path`` on
    ``feature``, and its delta-method sd (:func:`gain_sd` of Theorem 2's covariance), as
    :class:`PramID3Classifier` computes them."""
    codes, y, qs, qc, w = _path_weights(codes, y, path, matrices, class_matrix)
    node = np.clip(_estimate(qs, qc, codes, y, w, None), 0.0, None)
    tab = _estimate(qs, qc, codes, y, w, feature)
    gain = entropy(node) - _split_entropy(tab)
    return gain, gain_sd(tab, _covariance(qs, qc, codes, y, w * w, tab, feature))


def _estimate(qs, qc, codes, y, w, feature: int | None) -> np.ndarray:
    """Estimated class counts of a node whose records weigh ``w`` (``feature`` None) or of
    its children on ``feature`` (children x classes): weighted randomized counts,
    de-randomized mode by mode."""
    m = qc.shape[0]
    if feature is None:
        return qc @ np.bincount(y, weights=w, minlength=m)
    q = qs[feature]
    k = q.shape[0]
    b = np.bincount(codes[:, feature] * m + y, weights=w, minlength=k * m).reshape(k, m)
    return q @ b @ qc.T


def _covariance(qs, qc, codes, y, w2, tab, feature: int) -> np.ndarray:
    """Theorem 2's covariance of a node's estimated children x classes counts ``tab``
    (``(K m, K m)``, child slowest), estimated from the randomized records.

    The estimate is a sum over records of ``a_r = v_r (q_a[:, x~_ra] (x) q_C[:, y~_r])``
    with ``v_r`` the record's path weight (a product of ``(P_i^T)^-1`` entries).  Records are
    randomized independently, so ``Cov = sum_r E[a_r a_r^T] - sum_r E[a_r] E[a_r]^T``; the
    first sum is estimated without bias by ``sum_r a_r a_r^T`` and the second is
    ``diag(D)``, the node's true counts (``E[a_r]`` is the record's true cell of the node),
    estimated by the clipped ``tab``: Ma 2006 Thm 2's ``B diag(P^T N) B^T - diag(N)``
    restricted to the node, with ``T~`` in place of ``P^T N``.  ``w2`` holds ``sum_r v_r^2``
    per distinct randomized cell.
    """
    q = qs[feature]
    k, m = q.shape[0], qc.shape[0]
    s2 = np.bincount(codes[:, feature] * m + y, weights=w2, minlength=k * m).reshape(k, m)
    cov = np.einsum("ab,ka,la,jb,ib->kjli", s2, q, q, qc, qc, optimize=True)
    cov = cov.reshape(k * m, k * m)
    cov[np.diag_indices_from(cov)] -= np.clip(tab, 0.0, None).ravel()
    return cov


def gain_sd(tab: np.ndarray, cov: np.ndarray, floor: float = 0.5) -> float:
    """Delta-method sd (bits) of the information gain of a children x classes table.

    With ``D`` the (clipped) table, ``n_k`` its row sums, ``c_j`` its column sums and ``n``
    its total, the gain ``G = H(c) - sum_k (n_k / n) H(D_k.)`` is ``(sum D log D - sum n_k
    log n_k - sum c_j log c_j + n log n) / (n ln 2)``, whose gradient is
    ``dG/dD_kj = (log2(D_kj n / (n_k c_j)) - G) / n``; the sd is ``sqrt(g^T Cov g)`` (the
    delta method; Ma 2006 Sec. 5.4.2 uses it for the CPTs).  Cells below ``floor`` records
    enter the logarithm at ``floor`` (the gradient of ``D log D`` is unbounded at 0).
    """
    d = np.clip(np.asarray(tab, dtype=float), 0.0, None)
    n = d.sum()
    if n <= 0:
        return 0.0
    rows, cols = d.sum(axis=1), d.sum(axis=0)
    g = _gain_of(d)
    dd = np.maximum(d, floor)
    ratio = dd * n / (np.maximum(rows, floor)[:, None] * np.maximum(cols, floor)[None, :])
    grad = ((np.log2(ratio) - g) / n).ravel()
    return float(np.sqrt(max(float(grad @ cov @ grad), 0.0)))


def _gain_of(tab: np.ndarray) -> float:
    """``H(class) - sum_k (n_k / n) H(D_k.)`` of a (clipped) children x classes table."""
    t = np.clip(tab, 0.0, None)
    return entropy(t.sum(axis=0)) - _split_entropy(t)


def _distinct_cells(codes, y, sizes, m):
    """The distinct (codes, class) rows with their counts as weights: one mixed-radix key per
    record (a 1-d sort, not a row-wise one) when the cells fit in int64."""
    dims = [*sizes, m]
    if float(np.prod(np.asarray(dims, dtype=float))) < 2.0**62:
        key = np.ravel_multi_index((*codes.T, y), dims)
        cells, counts = np.unique(key, return_counts=True)
        *cols, yy = np.unravel_index(cells, dims)
        return np.column_stack(cols).astype(np.int64), yy.astype(np.int64), counts.astype(float)
    rows, counts = np.unique(np.column_stack([codes, y]), axis=0, return_counts=True)
    return rows[:, :-1], rows[:, -1], counts.astype(float)


@dataclass(kw_only=True, eq=False, repr=False)
class PramID3Classifier(ClassifierMixin, BaseEstimator):
    """ID3 learned from PRAM-randomized categorical data (Ma 2006, Sec. 7.2).

    Parameters
    ----------
    min_count
        A node whose estimated number of records is below this is empty: a leaf with its
        parent's majority class.
    purity
        A node whose largest estimated class share reaches this is a leaf (1: ID3's rule).
    max_depth
        Depth limit (None: grow until the attributes run out, as ID3 does).
    split_sd
        Split on an attribute only when its estimated gain exceeds this many of its own
        standard deviations (Theorem 2's covariance through the delta method,
        :func:`gain_sd`); a node where none does is a leaf.  None: split on the largest
        estimated gain whatever its noise (the thesis's tree).  No effect at ``p = 0``.
    categories
        A table's public domains ``{column: values}`` (or one entry per feature), in the
        order each one's matrix indexes; a feature without one takes the sorted values it
        holds.  Giving it (or a DataFrame of strings, or ``matrices`` keyed by column)
        makes the fit tabular: ``predict`` then reads values through these domains.
    classes
        The class values in the order ``class_matrix`` indexes (default: ``y``'s sorted
        values, or with a class matrix the codes ``0..K-1``).

    Attributes
    ----------
    classes_, n_features_in_, tree_ (the root ``_Node``), values_ (each feature's values in
    code order), n_nodes_, depth_.

    ``fit(X, y, matrices=..., class_matrix=...)`` takes the *randomized* records with each
    feature's transition matrix ``P[i, j] = Pr(published j | true i)`` over its domain's
    order, or an array's codes ``0..K-1`` (None: released unchanged); ``fit_release`` reads
    them from a PRAM release.
    Without matrices, features take their distinct values as categories (read from the
    data).  ``predict`` takes *original* records; a value the tree never saw stops at the
    node that splits on it and gets that node's label.
    """

    _parameter_constraints: ClassVar[dict] = {
        "min_count": [Interval(Real, 0, None, closed="left")],
        "purity": [Interval(Real, 0, 1, closed="right")],
        "max_depth": [Interval(Integral, 0, None, closed="left"), None],
        "split_sd": [Interval(Real, 0, None, closed="left"), None],
        "categories": [None, dict, list, tuple],
        "classes": [None, "array-like"],
    }

    # scikit-learn's parameters: the dataclass writes the __init__ that stores them
    min_count: float = 1.0
    purity: float = 1.0
    max_depth: int | None = None
    split_sd: float | None = 1.0
    categories: Mapping[Any, Sequence[Any]] | Sequence[Sequence[Any]] | None = None
    classes: Sequence[Any] | None = None

    # -- fitting --------------------------------------------------------------------------
    def fit(
        self,
        X: Any,
        y: Any,
        *,
        matrices: Mapping[Any, Any] | Sequence[Any] | None = None,
        class_matrix: Any = None,
    ) -> PramID3Classifier:
        """Grow the tree from randomized records ``X`` and randomized classes ``y``.

        ``X`` is a table (a DataFrame of strings or numbers, with ``categories`` its
        ``{column: values}`` domains, and ``matrices`` ``{column: P}`` over those domains'
        order) or an array of numbers (``matrices`` one per feature, over the codes
        ``0..K-1`` the feature then holds).  ``classes`` orders the class values that
        ``class_matrix`` indexes (else ``y`` holds the codes ``0..K-1``)."""
        validate_params(self)
        tabular = (
            self.categories is not None
            or isinstance(matrices, Mapping)
            or is_tabular(X, None, None)
        )
        if tabular:
            X, y = validate_table(self, X, y, reset=True)
        else:
            X, y = validate_data(self, X, y, dtype="numeric")
        check_classification_targets(y)
        d = X.shape[1]
        names = getattr(self, "feature_names_in_", None)
        if isinstance(matrices, Mapping):
            mats = per_feature(matrices, "matrices", d, names)
        elif matrices is not None and len(matrices) != d:
            raise ParameterError(f"{len(matrices)} matrices for {d} features")
        else:
            mats = [None] * d if matrices is None else list(matrices)
        if tabular:
            values, codes = nominal_table(X, self.categories, names)
            for f, (dom, m) in enumerate(zip(values, mats)):
                k = None if m is None else np.asarray(m).shape[0]
                if k is not None and k != dom.size:
                    raise ParameterError(
                        f"the matrix of {_feature_label(f, names)} has {k} rows but its domain "
                        f"{dom.size} values: pass its categories= (the values the matrix "
                        "indexes, in its order)"
                    )
        else:
            values, codes = self._array_codes(X, mats)
        classes, y_codes = self._class_codes(y, class_matrix)
        self.classes_ = classes
        self.tabular_ = tabular
        qs = [_inverse_t(m, v.size, _feature_label(f, names)) for f, (v, m) in
              enumerate(zip(values, mats))]  # fmt: skip
        qc = _inverse_t(class_matrix, classes.size, "the class")
        self.values_ = values
        self._q, self._qc = qs, qc
        # the records enter only through their randomized cells: grow on the distinct
        # (codes, class) rows weighted by their counts (the same sums, far fewer rows)
        codes, y_codes, weights = _distinct_cells(codes, y_codes, [v.size for v in values],
                                                  qc.shape[0])  # fmt: skip
        self.tree_ = self._grow(codes, y_codes, weights, weights, frozenset(), 0, None)
        self.n_nodes_, self.depth_ = self._size(self.tree_)
        del self._q, self._qc
        return self

    @staticmethod
    def _array_codes(X: np.ndarray, mats: list[Any]) -> tuple[list[np.ndarray], np.ndarray]:
        """An array's features: each one's values and codes (its distinct values, or with
        a matrix the codes ``0..K-1`` the feature must hold)."""
        codes = np.empty(X.shape, dtype=np.int64)
        values = []
        for f, matrix in enumerate(mats):
            if matrix is None:
                vals, codes[:, f] = np.unique(X[:, f], return_inverse=True)
            else:
                k = np.asarray(matrix).shape[0]
                col = X[:, f]
                if not np.all(np.equal(np.mod(col, 1), 0)) or col.min() < 0 or col.max() >= k:
                    raise ParameterError(
                        f"feature {f} must hold codes 0..{k - 1} (its matrix has {k} values)"
                    )
                vals, codes[:, f] = np.arange(k), col.astype(np.int64)
            values.append(vals)
        return values, codes

    def _class_codes(self, y: np.ndarray, class_matrix: Any) -> tuple[np.ndarray, np.ndarray]:
        """The classes and ``y``'s codes: into ``classes`` when given, else with a class
        matrix the codes ``0..K-1`` ``y`` must hold, else ``y``'s distinct values."""
        if self.classes is not None:
            classes = _check_domain(self.classes, "the class")
            return classes, _encode(y, classes, "the class", unseen="raise")
        if class_matrix is not None:
            m = np.asarray(class_matrix).shape[0]
            if not np.issubdtype(np.asarray(y).dtype, np.integer) or y.min() < 0 or y.max() >= m:
                raise ParameterError(
                    f"with a class matrix, y must hold the class codes 0..{m - 1} (or give "
                    "classes=, the values it indexes)"
                )
            return np.arange(m), np.asarray(y, dtype=np.int64)
        classes, y_codes = np.unique(y, return_inverse=True)
        return classes, y_codes

    def fit_release(
        self, release: Any, target: str, attributes: Sequence[str] | None = None
    ) -> PramID3Classifier:
        """Grow the tree from a PRAM release (or :class:`~privlab.learn.pram_bn.PramData`):
        ``target`` is the class column, ``attributes`` the features (default: the others).
        Each column must be randomized on its own (or released unchanged)."""
        from privlab.learn.pram_bn import PramData

        data = PramData.from_release(release)
        names = list(data.names)
        listed = ", ".join(names)
        if target not in names:
            raise ParameterError(f"the release has no column {target!r} (columns: {listed})")
        attributes = [c for c in names if c != target] if attributes is None else list(attributes)
        for c in attributes:
            if c not in names:
                raise ParameterError(f"the release has no column {c!r} (columns: {listed})")
            if c == target:
                raise ParameterError(f"{target!r} is the class: it cannot be an attribute too")

        def matrix(c: str) -> np.ndarray:
            b = data.block_of(c)
            if b is None:
                return np.eye(data.table.schema[c].size)
            if len(b.columns) > 1:
                raise ParameterError(
                    f"column {c!r} was randomized jointly with {', '.join(b.columns)}: ID3 "
                    "needs each column randomized on its own"
                )
            return b.matrix

        X = data.table.columns(attributes)
        y = data.table.column(target)
        self.fit(X, y, matrices=[matrix(c) for c in attributes], class_matrix=matrix(target))
        self.feature_names_ = tuple(attributes)
        self.class_names_ = tuple(str(v) for v in data.table.schema[target].domain)
        self.value_names_ = [tuple(str(v) for v in data.table.schema[c].domain) for c in attributes]
        return self

    def _estimate(self, codes, y, w, feature: int | None) -> np.ndarray:
        return _estimate(self._q, self._qc, codes, y, w, feature)

    def _grow(self, codes, y, w, w2, used, depth, parent) -> _Node:
        """``w``: each distinct randomized cell's records times their path weight ``v``;
        ``w2``: its records times ``v^2`` (for the covariance)."""
        raw = self._estimate(codes, y, w, None)
        counts = np.clip(raw, 0.0, None)
        total = counts.sum()
        if total < self.min_count:
            label = int(np.argmax(parent)) if parent is not None else int(np.argmax(counts))
            return _Node(counts, label, why="empty")
        node = _Node(counts, int(np.argmax(counts)))
        if counts.max() / total >= self.purity:
            node.why = "pure"
            return node
        candidates = [
            f for f in range(codes.shape[1]) if f not in used and self.values_[f].size > 1
        ]
        if not candidates or (self.max_depth is not None and depth >= self.max_depth):
            node.why = "no attribute left" if not candidates else "depth limit"
            return node
        h = entropy(counts)
        tabs = [self._estimate(codes, y, w, f) for f in candidates]
        gains = np.array([h - _split_entropy(t) for t in tabs])
        sds = np.zeros(len(candidates))
        if self.split_sd is not None:
            sds = np.array([
                gain_sd(t, _covariance(self._q, self._qc, codes, y, w2, t, f))
                for f, t in zip(candidates, tabs)
            ])  # fmt: skip
            # within its own noise: not a split (sd 0, as at p = 0, never blocks one)
            noise = (sds > 0) & (gains <= self.split_sd * sds)
            if noise.all():
                node.why = "gain within its sd"
                best = int(np.argmax(gains))
                node.gain, node.gain_sd = float(gains[best]), float(sds[best])
                return node
            gains = np.where(noise, -np.inf, gains)
        best = int(np.argmax(gains))  # the first of equal gains
        f = candidates[best]
        node.feature, node.gain, node.gain_sd = f, float(gains[best]), float(sds[best])
        q = self._q[f]
        for k in range(q.shape[0]):
            child_w = w * q[k, codes[:, f]]
            child_w2 = w2 * q[k, codes[:, f]] ** 2
            node.children.append(
                self._grow(codes, y, child_w, child_w2, used | {f}, depth + 1, counts)
            )
        return node

    @staticmethod
    def _size(node: _Node) -> tuple[int, int]:
        if node.feature < 0:
            return 1, 0
        sizes = [PramID3Classifier._size(c) for c in node.children]
        return 1 + sum(s for s, _ in sizes), 1 + max(d for _, d in sizes)

    # -- prediction -----------------------------------------------------------------------
    def _codes(self, X: np.ndarray) -> np.ndarray:
        """Each value's code in its feature's values; -1 for one the tree never saw."""
        if self.tabular_:
            names = getattr(self, "feature_names_in_", None)
            return encode_nominal(X, self.values_, names, unseen="ignore")
        out = np.full(X.shape, -1, dtype=np.int64)
        for f, vals in enumerate(self.values_):
            col = X[:, f]
            pos = np.searchsorted(vals, col)
            ok = pos < vals.size
            ok[ok] = vals[pos[ok]] == col[ok]
            out[ok, f] = pos[ok]
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Class of each *original* record."""
        check_is_fitted(self)
        if self.tabular_:
            X = validate_table(self, X, reset=False)
        else:
            X = validate_data(self, X, dtype="numeric", reset=False)
        codes = self._codes(X)
        out = np.empty(codes.shape[0], dtype=np.int64)
        for i, row in enumerate(codes):
            node = self.tree_
            while node.feature >= 0 and row[node.feature] >= 0:
                node = node.children[row[node.feature]]
            out[i] = node.label
        return self.classes_[out]

    def export_text(self, feature_names: Sequence[str] | None = None) -> str:
        """The tree, one node per line, with its estimated class counts."""
        check_is_fitted(self)
        names = (
            feature_names
            or getattr(self, "feature_names_", None)
            or getattr(self, "feature_names_in_", None)
        )
        names = list(names) if names is not None else [f"x{f}" for f in range(self.n_features_in_)]
        classes = getattr(self, "class_names_", None) or [str(c) for c in self.classes_]
        lines: list[str] = []

        def walk(node: _Node, indent: str, head: str) -> None:
            counts = ", ".join(f"{c:.0f}" for c in node.counts)
            if node.feature < 0:
                lines.append(f"{indent}{head}-> {classes[node.label]} ({counts})")
                return
            lines.append(f"{indent}{head}split on {names[node.feature]} (gain {node.gain:.4f})")
            labels = getattr(self, "value_names_", None)
            for k, child in enumerate(node.children):
                value = labels[node.feature][k] if labels else self.values_[node.feature][k]
                walk(child, indent + "  ", f"{names[node.feature]} = {value}: ")

        walk(self.tree_, "", "")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The tree as nested dicts: ``feature``, ``children`` or ``label``, ``counts``."""
        check_is_fitted(self)

        def walk(node: _Node) -> dict[str, Any]:
            d: dict[str, Any] = {"counts": [float(c) for c in node.counts]}
            if node.feature < 0:
                d["label"] = int(node.label)
                d["why"] = node.why
                if node.why == "gain within its sd":
                    d["gain"], d["gain_sd"] = float(node.gain), float(node.gain_sd)
            else:
                d["feature"] = int(node.feature)
                d["gain"] = float(node.gain) if node.gain is not None else math.nan
                if node.gain_sd is not None:
                    d["gain_sd"] = float(node.gain_sd)
                d["children"] = [walk(c) for c in node.children]
            return d

        return walk(self.tree_)
