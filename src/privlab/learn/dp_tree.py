"""Differentially private decision trees (Friedman & Schuster, KDD 2010).

:class:`DPDecisionTreeClassifier` follows the "Decision Tree Induction with Differential
Privacy" slide of Friedman & Schuster 2010 (DiffP-ID3, extended to continuous attributes as
in DiffP-C4.5):

at a node holding records ``T`` at depth ``k``

1. if no attribute is left or ``k == max_depth`` the node is a leaf (both facts depend on the
   path only, so no budget is needed to decide them);
2. otherwise ``N_T = NoisyCount(T)``; the node is a leaf when ``N_T < θ`` with
   ``θ = max(1, √2 · t · |C| / ε')``: below it the expected class count of a child,
   ``N_T / (t |C|)``, is smaller than the standard deviation ``√2/ε'`` of the noise that
   will be added to it (``t`` = the largest number of children of a candidate split, 2 for a
   continuous attribute; ``|C|`` = number of classes);
3. else the split is chosen with the exponential mechanism, quality function and
   sensitivity from the slide's table (``info_gain``: Δ = log2(n + 1) + 1/ln 2, ``gini``: 2,
   ``max``: 1), or with noisy counts (``noisy_counts``, the SuLQ approach [BDMN'05]);
4. a leaf is labelled ``argmax_c N_c`` of noisy class counts.

Continuous attributes get binary splits ``x <= s``.  The split point ``s`` is drawn by the
two-phase exponential mechanism of the slide "Numeric attributes - example": the attribute's
current interval ``[lo, hi]`` (public bounds, narrowed by the splits above) is cut into ranges
on which the score is constant, a range is chosen with probability ∝ ``|R_i| exp(ε q_i/2Δ)``
and ``s`` is uniform inside it.  privlab runs **one** exponential mechanism over the union of
all candidates (each nominal attribute is one outcome of base measure 1; each continuous
attribute's ranges share base measure 1 in proportion to their widths), so choosing the
attribute and its split point costs ε' once; restricted to one attribute this is exactly the
slide's two-phase mechanism.

Budget rule (exact).  With ``d = max_depth`` let ``ε' = ε / (2 (d + 1))`` (the paper's rule:
every level gets ``2ε'``, one ``ε'`` for the node count and one for the split choice).  An
internal node spends ``ε'`` on ``N_T`` and ``ε'`` on the split; sibling subtrees see disjoint
records, so they compose in parallel (the accountant charges their maximum); a leaf spends
*all the budget its path has left* on its class counts: ``2ε'`` at depth ``d``, ``ε - 2kε'``
for a leaf at depth ``k`` forced by "no attribute left", and ``ε - (2k+1)ε'`` for a leaf made
by the count threshold.  Every root-to-leaf path therefore spends exactly ``ε`` and the
accountant's total is ``ε`` (up to floating-point rounding of ``ε'`` sums).  Counts use the
geometric mechanism; ``noisy_counts`` splits its ``ε'`` equally over the candidate attributes
(one Laplace histogram of (value, class) counts each; ``N_j = Σ_c N_jc``; a continuous
attribute is histogrammed into ``n_bins`` equal-width bins of its current interval and every
bin edge is a candidate threshold).

Privacy notes: attribute domains (``categories``) and ``bounds`` must be public; when they are
not given they are read from the data and a :class:`~privlab.errors.PrivacyWarning` is
raised.  The ``info_gain`` sensitivity needs a public bound ``n_records`` on the number of
training records: without one (and a finite ε) that criterion is refused.

Where the source is wrong or silent (Friedman & Schuster 2010, the slides of seed 004):

* the slide's sensitivity of information gain, ``S(q_IG) = log(|T| + 1) + 1/ln 2``, is written
  with ``|T|``, the number of records *at the node*.  That number is private: calibrating
  noise to it makes the noise scale itself depend on one person's presence, which no
  ε-DP proof covers.  The bound is increasing in ``|T|``, so any public ``n >= |T|`` gives a
  valid sensitivity; privlab uses ``n_records`` for every node (logarithms to base 2, as in
  the quality function);
* the slide's ``q_IG`` prints ``-Σ_j Σ_{j ∈ C} τ_jc log(τ_jc/τ_j)``: the inner index is ``c``,
  and the leading minus turns the gain into a conditional entropy to be *minimized*, while the
  exponential mechanism maximizes its quality; privlab drops the minus (see :func:`quality`);
* the noisy-counts recipe ("``N_j = NoisyCount_ε(T_j)``, ``N_jc = NoisyCount_ε(T_jc)``" for
  every candidate attribute) does not say that the histograms of different attributes are
  computed over the *same* records and compose sequentially: choosing among ``k`` attributes
  costs ``k`` times the per-histogram budget.  privlab splits ``ε'`` equally over them (and
  derives ``N_j`` from the ``N_jc`` instead of spending budget on it);
* the slide "Numeric attributes - example" computes its weights ``exp(ε q)`` for "ε = 1":
  the exponential mechanism's ``exp(ε q / 2Δ)`` then has ε = 2 (the ``1/2`` is omitted).

scikit-learn: seeded (``random_state=0``) or not, the estimator passes every
``check_estimator`` check of scikit-learn >= 1.6 (the first release with ``validate_data``,
``__sklearn_tags__`` and ``expected_failed_checks``).  With a finite ε it sets the
``poor_score`` tag: ``check_classifiers_train`` demands > 83% training accuracy on 150-300 toy
records, which the noise of a DP tree rightly prevents (at ε = 1 and depth 5 every count
carries noise of scale 12); all the other assertions of that check run.  Unseeded, the DP noise
is fresh on every fit; the checks that compare two fits seed ``random_state``
themselves.  scikit-learn's checks seed an estimator through ``random_state``
(``set_random_state``); one seeded through the alias ``rng`` is refused that second seed (a
:class:`~privlab.errors.ParameterError`), so check it with ``random_state=0``.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from privlab._io import read_json
from privlab._rng import SeedRecord, as_generator, noise_rng
from privlab._validate import Fields
from privlab.data.schema import Attribute, py_scalar
from privlab.dp.accountant import BudgetAccountant
from privlab.dp.mechanisms import Exponential, Geometric, Laplace, check_epsilon
from privlab.dp.samplers import uniform_below
from privlab.errors import ParameterError, PrivacyWarning, PrivlabError
from privlab.learn._classes import public_classes
from privlab.learn._sklearn import (
    REFIT_CHECKS,
    Columns,
    FreshRandomnessTags,
    ModelFile,
    fresh_randomness_checks,
    is_tabular,
    learn_columns,
    random_source,
    validate_table,
)

CRITERIA = ("info_gain", "gini", "max", "noisy_counts")
_SQRT2 = math.sqrt(2.0)


# -- quality functions (Friedman & Schuster 2010, "Choosing an attribute") -----------------
def quality(tab: np.ndarray, criterion: str) -> np.ndarray:
    """Quality ``q(T, A)`` of splits given their count tables ``tab[..., j, c] = τ_{j,c}``.

    ``info_gain``: ``Σ_j Σ_c τ_jc log2(τ_jc / τ_j)`` (minus the conditional entropy times
    ``|T|``, to be maximized; the slide prints it with the opposite sign convention);
    ``gini``: ``-Σ_j τ_j (1 - Σ_c (τ_jc/τ_j)²)``; ``max``: ``Σ_j max_c τ_jc``.  Reduces the
    last two axes.
    """
    tab = np.asarray(tab, dtype=float)
    tj = tab.sum(axis=-1, keepdims=True)
    if criterion in ("info_gain", "noisy_counts"):
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(tab > 0, tab * np.log2(tab / np.where(tj > 0, tj, 1.0)), 0.0)
        return term.sum(axis=(-2, -1))
    if criterion == "gini":
        with np.errstate(divide="ignore", invalid="ignore"):
            sq = np.where(
                tj[..., 0] > 0, (tab**2).sum(-1) / np.where(tj[..., 0] > 0, tj[..., 0], 1), 0
            )
        return -(tj[..., 0] - sq).sum(axis=-1)
    if criterion == "max":
        return tab.max(axis=-1).sum(axis=-1)
    raise ParameterError(f"criterion must be one of {', '.join(CRITERIA)}; got {criterion!r}")


def stacked_quality(tabs: np.ndarray, offsets: np.ndarray, criterion: str) -> np.ndarray:
    """``[quality(tabs[a:b], criterion) for a, b in itertools.pairwise(offsets)]``, the
    quality of several count tables stacked row-wise, as the same floats: the per-row work
    is done once for all tables and only the final sums table by table, each as
    :func:`quality` makes it (a sum over one contiguous block, in numpy's order)."""
    tab = np.asarray(tabs, dtype=float)
    tj = tab.sum(axis=-1, keepdims=True)
    if criterion in ("info_gain", "noisy_counts"):
        with np.errstate(divide="ignore", invalid="ignore"):
            rows = np.where(tab > 0, tab * np.log2(tab / np.where(tj > 0, tj, 1.0)), 0.0)
        sign = 1.0
    elif criterion == "gini":
        with np.errstate(divide="ignore", invalid="ignore"):
            sq = np.where(
                tj[..., 0] > 0, (tab**2).sum(-1) / np.where(tj[..., 0] > 0, tj[..., 0], 1), 0
            )
        rows, sign = tj[..., 0] - sq, -1.0
    elif criterion == "max":
        rows, sign = tab.max(axis=-1), 1.0
    else:
        raise ParameterError(f"criterion must be one of {', '.join(CRITERIA)}; got {criterion!r}")
    out = np.array([rows[a:b].sum() for a, b in itertools.pairwise(offsets)], dtype=float)
    return -out if sign < 0 else out


def sensitivity(criterion: str, n: int) -> float:
    """The slide's sensitivity of the quality function (``n`` = training-set size)."""
    if criterion == "info_gain":
        return math.log2(n + 1) + 1.0 / math.log(2.0)
    if criterion == "gini":
        return 2.0
    if criterion == "max":
        return 1.0
    raise ParameterError(f"no exponential-mechanism sensitivity for criterion {criterion!r}")


def continuous_ranges(
    values: np.ndarray, classes: np.ndarray, n_classes: int, lo: float, hi: float, criterion: str
) -> tuple[np.ndarray, np.ndarray]:
    """Ranges of constant score of a binary split ``x <= s`` for ``s`` in ``[lo, hi]``.

    Returns ``(edges, scores)``: range ``i`` is ``[edges[i], edges[i+1])`` (the last one
    closed) and every ``s`` in it gives the score ``scores[i]``.  The first range sends all
    records right, the last all left.  Feed them to
    :meth:`privlab.dp.mechanisms.Exponential.range_probabilities` for the slide's table.
    """
    values = np.asarray(values, dtype=float)
    u, inv = np.unique(values, return_inverse=True)
    tab = np.bincount(inv * n_classes + classes, minlength=u.size * n_classes)
    edges, scores = _ranges_from_table(tab.reshape(u.size, n_classes), u, lo, hi, criterion)
    return edges, scores


#: Continuous split thresholds are points of a public grid: ``lo + (hi - lo) k / 2^20`` for
#: ``k = 0..2^20`` over the node's public range (Mironov 2012: a threshold computed in
#: floating point from data values, ``a + u (b - a)``, has a data-dependent set of possible
#: doubles; the grid's points depend only on public bounds and earlier released thresholds).
THRESHOLD_GRID = 1 << 20


def _grid_index(edges: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """For range edges ``lo = e_0 <= ... <= e_m = hi``, the index of the first grid point at
    or after each edge (the last: one past the grid), so that range ``i`` holds the grid
    points ``idx[i] .. idx[i+1] - 1``."""
    pos = np.ceil((np.asarray(edges, dtype=float) - lo) / (hi - lo) * THRESHOLD_GRID)
    idx = np.clip(pos, 0, THRESHOLD_GRID).astype(np.int64)
    idx[-1] = THRESHOLD_GRID + 1
    return np.maximum.accumulate(idx)


def _grid_point(k: int, lo: float, hi: float) -> float:
    """Grid point ``k`` of ``[lo, hi]`` (``k = THRESHOLD_GRID`` is ``hi``)."""
    return hi if k >= THRESHOLD_GRID else lo + (hi - lo) * (k / THRESHOLD_GRID)


def _ranges_from_table(
    tab: np.ndarray, uniq: np.ndarray, lo: float, hi: float, criterion: str
) -> tuple[np.ndarray, np.ndarray]:
    present = tab.sum(axis=1) > 0
    vals = uniq[present]
    cum = np.cumsum(tab[present], axis=0)
    left = np.vstack([np.zeros((1, tab.shape[1])), cum])
    right = cum[-1] - left if cum.size else left
    scores = quality(np.stack([left, right], axis=1), criterion)
    edges = np.concatenate([[lo], vals, [hi]])
    return edges, scores


# -- scikit-learn's expected failures ---------------------------------------------------------
#: The checks of scikit-learn's ``check_estimator`` that fit one estimator twice (or on two
#: encodings of the same data) and demand identical predictions.  Unseeded, the DP noise
#: comes from the OS CSPRNG and is fresh on every fit, as privacy requires (DEVELOPERS: "DP
#: noise from a secure source unless a seed is given"); these checks pass because they seed
#: ``random_state`` themselves (scikit-learn's ``set_random_state``).
_FRESH_NOISE = "DP noise is fresh on every fit without a seed (the OS CSPRNG)"
FRESH_NOISE_CHECKS = dict.fromkeys(REFIT_CHECKS, _FRESH_NOISE)


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The ``check_estimator`` checks ``estimator`` cannot pass for DP reasons, with reasons.

    For scikit-learn's expected-failed-checks mechanism::

        check_estimator(est, expected_failed_checks=expected_failed_checks(est))
        @parametrize_with_checks([...], expected_failed_checks=expected_failed_checks)

    Empty: seeded or not, every check passes (the checks comparing two fits,
    :data:`FRESH_NOISE_CHECKS`, seed ``random_state``).  (The training-accuracy part of
    ``check_classifiers_train`` is skipped through the ``poor_score`` tag at a finite ε, not
    through this list.)
    """
    return fresh_randomness_checks(estimator, _FRESH_NOISE)


# -- public metadata, shared with the forest --------------------------------------------------
def _finite_epsilon(epsilon: Any) -> bool:
    """Whether ``epsilon`` is a finite number (tags must not raise on a bad parameter)."""
    try:
        return not math.isinf(float(epsilon))
    except (TypeError, ValueError):
        return True


def check_max_depth(max_depth: Any) -> int:
    """``max_depth`` as an int, or a :class:`ParameterError` naming it."""
    if (
        isinstance(max_depth, bool)
        or not isinstance(max_depth, (int, float, np.integer, np.floating))
        or int(max_depth) != max_depth
        or max_depth < 0
    ):
        raise ParameterError(f"max_depth must be an integer >= 0, got {max_depth!r}")
    return int(max_depth)


def records_bound(n_records: Any, n: int, criterion: str, *, private: bool) -> int:
    """The public bound on the number of records used by the ``info_gain`` sensitivity.

    ``n_records`` is the caller's public bound (validated: an integer, at least the ``n``
    records actually given).  Without it, ``info_gain`` at a finite ε is refused: its
    sensitivity would be computed from the private count (see the module docstring).  The
    other criteria and ε = inf need no bound; ``n`` is returned (and not used for noise).
    """
    if n_records is None:
        if private and criterion == "info_gain":
            raise ParameterError(
                "criterion 'info_gain' needs n_records, a public upper bound on the number of "
                "training records: its sensitivity log2(n + 1) + 1/ln 2 must not be computed "
                "from the private record count (or use criterion 'max', 'gini' or "
                "'noisy_counts', which need no bound)"
            )
        return n
    if (
        isinstance(n_records, bool)
        or not isinstance(n_records, (int, float, np.integer, np.floating))
        or int(n_records) != n_records
        or n_records < 1
    ):
        raise ParameterError(f"n_records must be a positive integer, got {n_records!r}")
    if int(n_records) < n:
        raise ParameterError(
            f"n_records = {n_records} is below the number of training records ({n}): "
            "the info_gain sensitivity would be too small"
        )
    return int(n_records)


def encode_labels(
    classes: Sequence[Any] | str, y: np.ndarray, *, private: bool, stacklevel: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(classes_, codes)``: the public classes (or ``y``'s, with a :class:`PrivacyWarning`
    when ``private``) and the index of every label in them."""
    cls = public_classes(classes, y, warn=private, stacklevel=stacklevel)
    if cls.size == 0 or np.unique(cls).size != cls.size:
        raise ParameterError(f"classes must be distinct and non-empty, got {list(cls)!r}")
    order = np.argsort(cls, kind="stable")
    pos = np.searchsorted(cls[order], y)
    pos = np.minimum(pos, cls.size - 1)
    bad = cls[order][pos] != y
    if np.any(bad):
        raise ParameterError(
            f"class label {y[bad][0]!r} is not among the given classes {list(cls)!r}"
        )
    return cls, order[pos].astype(np.int64)


def categorical_indices(categorical_features: Sequence[int] | None, p: int) -> list[int]:
    """The nominal feature indices, validated against ``p`` features."""
    cat = [] if categorical_features is None else [int(j) for j in categorical_features]
    for j in cat:
        if not 0 <= j < p:
            raise ParameterError(f"categorical feature index {j} is outside 0..{p - 1}")
    if len(set(cat)) != len(cat):
        raise ParameterError(f"categorical_features lists a feature twice: {cat}")
    return cat


def domain_sizes(
    X: np.ndarray, cat: list[int], categories: Sequence[int] | None, *, stacklevel: int
) -> list[int]:
    """Public domain sizes of the nominal features; read from ``X`` with a warning if None."""
    if categories is None:
        if cat:
            warnings.warn(
                "categories not given: nominal domains are read from the training data, "
                "which leaks which values occur; pass public domain sizes",
                PrivacyWarning,
                stacklevel=stacklevel,
            )
        return [int(X[:, j].max()) + 1 if X.shape[0] else 1 for j in cat]
    sizes = [int(s) for s in categories]
    if len(sizes) != len(cat):
        raise ParameterError(
            f"categories has {len(sizes)} entries for {len(cat)} categorical features"
        )
    bad = [s for s in sizes if s < 1]
    if bad:
        raise ParameterError(f"a nominal domain size must be at least 1, got {bad[0]}")
    return sizes


def feature_bounds(
    X: np.ndarray,
    cont: list[int],
    bounds: tuple[Sequence[float], Sequence[float]] | None,
    *,
    stacklevel: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Public ``(lower, upper)`` arrays over all features; read from ``X`` with a warning if
    None (only the continuous features ``cont`` are validated)."""
    p = X.shape[1]
    if bounds is None:
        if cont:
            warnings.warn(
                "bounds not given: continuous ranges are read from the training data, "
                "which leaks their minima and maxima; pass public bounds",
                PrivacyWarning,
                stacklevel=stacklevel,
            )
        lo = X.min(axis=0) if X.shape[0] else np.zeros(p)
        hi = X.max(axis=0) if X.shape[0] else np.ones(p)
    else:
        try:
            lo = np.broadcast_to(np.asarray(bounds[0], dtype=float), (p,)).copy()
            hi = np.broadcast_to(np.asarray(bounds[1], dtype=float), (p,)).copy()
        except (TypeError, ValueError, IndexError):
            raise ParameterError(
                f"bounds must be (lower, upper) with one entry per feature ({p}), got {bounds!r}"
            ) from None
        bad = [j for j in cont if not (np.isfinite(lo[j]) and np.isfinite(hi[j]))]
        bad += [j for j in cont if lo[j] > hi[j]]
        if bad:
            raise ParameterError(
                f"bounds of feature {bad[0]} are invalid: ({lo[bad[0]]}, {hi[bad[0]]})"
            )
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


@functools.lru_cache(maxsize=256)
def _geometric(epsilon: float) -> Geometric:
    """The geometric mechanism of an epsilon, built once: a tree asks for it at every node
    and leaf with a handful of epsilons, and building one derives its exact scale as a
    ``Fraction`` (11% of a depth-5 fit when built each time).  Mechanisms are immutable."""
    return Geometric(epsilon)


_KERNEL: Any = None


def _kernel() -> Any:
    """The fit's numba kernels (:mod:`privlab.learn._dp_tree_kernel`), imported on first use
    so that importing this module does not load numba.  The exact samplers' kernels are
    loaded with them: :func:`privlab.dp.samplers.discrete_laplace` then makes the fit's many
    few-draw calls (a node's count, a leaf's class counts) compiled, with the same draws."""
    global _KERNEL
    if _KERNEL is None:
        import privlab.dp._sampler_kernel  # noqa: F401
        from privlab.learn import _dp_tree_kernel

        _KERNEL = _dp_tree_kernel
    return _KERNEL


# -- the tabular input (shared with the forest) -----------------------------------------------
@dataclass(frozen=True)
class Spec:
    """The features of a tabular input as the tree's array form sees them: the nominal
    feature indices with their domain sizes, and the public bounds of every feature."""

    nominal: list[int]
    sizes: list[int]
    lo: np.ndarray
    hi: np.ndarray


def fit_input(est: Any, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, Spec | None]:
    """The training input of the DP tree or forest ``est``: a table (:func:`tabular_input`,
    with its :class:`Spec`) or numbers (``spec`` None); classification targets checked,
    a former fit's ``columns_`` dropped."""
    est.__dict__.pop("columns_", None)
    if is_tabular(X, est.categories, est.bounds):
        X, y, spec = tabular_input(est, X, y)
    else:
        X, y = validate_data(est, X, y, dtype=np.float64)
        spec = None
    check_classification_targets(y)
    return X, y, spec


def tabular_input(est: Any, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, Spec]:
    """Validate a tabular ``X`` (strings and numbers, ``{column: values}`` categories and
    ``{column: (lo, hi)}`` bounds, as :class:`~privlab.learn.DPNaiveBayes` takes them), set
    ``est.columns_`` (a :class:`~privlab.learn._sklearn.Columns`) and return ``X`` as floats
    (codes of the nominal features), ``y`` and the :class:`Spec` of the features."""
    if est.categorical_features is not None:
        raise ParameterError(
            "categorical_features marks integer codes in an array; with a table give "
            "categories={column: values} (a column of strings is nominal anyway)"
        )
    for name in ("categories", "bounds"):
        value = getattr(est, name)
        if value is not None and not isinstance(value, Mapping):
            raise ParameterError(
                f"with a table of strings give {name} as {{column: ...}}, not {value!r}"
            )
    X, y = validate_table(est, X, y, reset=True)
    names = getattr(est, "feature_names_in_", None)
    columns, values = learn_columns(
        X, est.categories, est.bounds, names,
        numeric_note="its range read from the training data", stacklevel=4,
    )  # fmt: skip
    est.columns_ = columns
    # a nominal feature's "bounds" are its codes (only the numeric ones' are used)
    pairs = [(0.0, len(d) - 1.0) if b is None else b for b, d in zip(columns.bounds,
                                                                   columns.domains)]  # fmt: skip
    lo = np.array([float(a) for a, _ in pairs])
    hi = np.array([float(b) for _, b in pairs])
    Xf = np.column_stack([np.asarray(v, dtype=float) for v in values]) if values else X
    return Xf, y, Spec(columns.nominal, columns.sizes, lo, hi)


def predict_input(est: Any, X: Any) -> np.ndarray:
    """``X`` to predict on as floats: encoded as the training table when ``est`` was fitted
    on one (a value outside a nominal domain raises :class:`~privlab.errors.SchemaError`)."""
    columns = getattr(est, "columns_", None)
    if columns is None:
        return validate_data(est, X, reset=False, dtype=np.float64)
    X = validate_table(est, X, reset=False)
    return columns.encode(X, getattr(est, "feature_names_in_", None))


# -- the tree -------------------------------------------------------------------------------
@dataclass
class _Node:
    depth: int
    feature: int = -1  # -1: leaf
    threshold: float = math.nan  # continuous split: left child holds x <= threshold
    children: list[_Node] = field(default_factory=list)
    counts: np.ndarray | None = None  # noisy class counts (leaves)
    noisy_n: float | None = None  # N_T when it was drawn
    label: int = 0


@dataclass
class _Data:
    """The training records as the fit's kernels read them (:mod:`._dp_tree_kernel`).

    A node's records are a segment ``[start, end)`` of every row of ``orders``: row 0 in any
    order, row ``1 + k`` sorted by the ``k``-th continuous feature (``cont_pos``); a split
    partitions every row stably (:func:`._dp_tree_kernel.partition`), so the fit sorts
    each continuous feature once, at the root."""

    y: np.ndarray
    n_classes: int
    nominal: dict[int, np.ndarray]  # feature -> int codes
    n_values: dict[int, int]
    cont: dict[int, np.ndarray]  # feature -> clipped float values
    nom_pos: dict[int, int]  # nominal feature -> its row of ``codes``
    codes: np.ndarray  # (nominal features, records) int64 codes
    cont_pos: dict[int, int]  # continuous feature -> its k (row 1 + k of ``orders``)
    ranks: np.ndarray  # (continuous features, records): dense rank into its distinct values
    uniq: np.ndarray  # the distinct values of every continuous feature, one after another
    uniq_start: np.ndarray  # where feature k's distinct values start in ``uniq``
    orders: np.ndarray  # (1 + continuous features, records) record indices
    child: np.ndarray = field(init=False)  # scratch of :func:`partition`
    tmp: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.child = np.empty(self.y.size, dtype=np.int64)
        self.tmp = np.empty(self.y.size, dtype=np.int64)


@dataclass(kw_only=True, eq=False, repr=False)
class TreeParameters:
    """scikit-learn's parameters of the DP decision tree, which the DP random forest shares
    (it adds its own): declared once, as dataclass fields, so that the dataclass writes the
    ``__init__`` that stores them (``eq`` and ``repr`` are left to ``BaseEstimator``)."""

    epsilon: float = 1.0
    max_depth: int = 5
    criterion: str = "max"
    categorical_features: Sequence[int] | None = None
    categories: Sequence[int] | Mapping[Any, Sequence[Any]] | None = None
    bounds: tuple[Sequence[float], Sequence[float]] | Mapping[Any, Any] | None = None
    classes: Sequence[Any] | str = "auto"
    n_records: int | None = None
    n_bins: int = 8
    accountant: BudgetAccountant | None = None
    rng: int | np.random.Generator | None = None
    random_state: int | np.random.Generator | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class DPDecisionTreeClassifier(TreeParameters, FreshRandomnessTags, ClassifierMixin, BaseEstimator):
    """Differentially private decision tree (Friedman & Schuster 2010).

    Parameters
    ----------
    epsilon
        Total privacy budget (``inf`` = non-private ID3/C4.5-style tree, no noise).
    max_depth
        Depth limit ``d`` (the root has depth 0); fixes the per-level budget
        ``ε' = ε / (2 (d + 1))``.
    criterion
        ``"info_gain"``, ``"gini"``, ``"max"`` (exponential mechanism with the slide's
        quality functions) or ``"noisy_counts"`` (information gain from noisy counts, SuLQ).
    categorical_features
        Indices of nominal features (integer codes ``0 .. J-1``); the others are continuous.
    categories
        Public domain sizes ``J`` of the nominal features (same order); read from the data
        with a :class:`PrivacyWarning` when None.  Or, for a table (a DataFrame of strings
        and numbers), ``{column: values}``: the public domains, as
        :class:`~privlab.learn.DPNaiveBayes` takes them (a column of strings without one is
        nominal over the values it holds, with a :class:`PrivacyWarning`).
    bounds
        Public ``(lower, upper)`` arrays over *all* features (entries of nominal features are
        ignored); read from the data with a :class:`PrivacyWarning` when None.  Values
        outside are clipped.  Or, for a table, ``{column: (lo, hi)}``.
    classes
        The public class labels; ``"auto"`` reads them from ``y`` (with a
        :class:`PrivacyWarning` when ε is finite: which labels occur is data).
    n_records
        A public upper bound on the number of training records, used by the ``info_gain``
        sensitivity ``log2(n + 1) + 1/ln 2``.  Required for ``info_gain`` with a finite ε
        (a :class:`~privlab.errors.ParameterError` otherwise: the real count is private);
        ignored by the other criteria and at ε = inf (no noise, no sensitivity).
    n_bins
        Histogram bins of a continuous attribute for ``noisy_counts``.
    accountant
        Optional :class:`BudgetAccountant` charged ``epsilon`` before any noise is drawn.
    rng
        Seed or generator (``None``: noise from the OS CSPRNG).
    random_state
        scikit-learn's name for ``rng`` (the same meaning; give one of the two).

    Attributes
    ----------
    classes_, n_features_in_, tree_ (root :class:`_Node`), accountant_ (the fit's own ledger,
    spent == epsilon), epsilon_prime_ (ε'), n_nodes_, depth_, bounds_, nominal_features_.

    Calling ``predict`` (or ``predict_proba``, ``apply``, ``export_text``, ``to_dict``) before
    ``fit`` raises scikit-learn's :class:`~sklearn.exceptions.NotFittedError`.
    """

    # scikit-learn's parameters: TreeParameters' fields

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = _finite_epsilon(self.epsilon)
        return tags

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> DPDecisionTreeClassifier:
        """Build the tree; spends exactly ``epsilon``.

        ``X``: numbers (nominal features as integer codes, see ``categorical_features``), or
        a table of strings and numbers (a DataFrame) with ``categories={column: values}``
        and ``bounds={column: (lo, hi)}``, as :class:`~privlab.learn.DPNaiveBayes` takes it.
        """
        X, y, spec = fit_input(self, X, y)
        eps = check_epsilon(self.epsilon)
        self._check_params()
        self.classes_, yc = self._encode_classes(y, private=not math.isinf(eps))
        n_sens = self._records_bound(X.shape[0], private=not math.isinf(eps))
        return self._fit_codes(X, yc.astype(np.int64), eps, n_sens, spec)

    def _fit_part(self, X: np.ndarray, yc: np.ndarray) -> DPDecisionTreeClassifier:
        """Fit on one part of an ensemble's records (``X`` float64 validated, ``yc`` codes
        into the public ``classes``); unlike :meth:`fit` it accepts an empty part."""
        eps = check_epsilon(self.epsilon)
        self._check_params()
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.asarray(list(self.classes))
        n_sens = self._records_bound(X.shape[0], private=not math.isinf(eps))
        return self._fit_codes(X, np.asarray(yc, dtype=np.int64), eps, n_sens)

    def _check_params(self) -> None:
        if self.criterion not in CRITERIA:
            raise ParameterError(
                f"criterion must be one of {', '.join(CRITERIA)}; got {self.criterion!r}"
            )
        check_max_depth(self.max_depth)
        random_source(self)  # rng and random_state: one of them
        if isinstance(self.n_bins, bool) or int(self.n_bins) != self.n_bins or self.n_bins < 2:
            raise ParameterError(f"n_bins must be an integer >= 2, got {self.n_bins!r}")

    def _fit_codes(
        self, X: np.ndarray, yc: np.ndarray, eps: float, n_sens: int, spec: Spec | None = None
    ) -> DPDecisionTreeClassifier:
        data = self._prepare(X, yc, spec)
        if self.accountant is not None:
            self.accountant.spend(eps, f"DPDecisionTreeClassifier({self.criterion})")
        self.accountant_ = BudgetAccountant(eps)
        d = int(self.max_depth)
        self.epsilon_prime_ = eps / (2 * (d + 1))
        self._sens = (
            sensitivity(self.criterion, n_sens) if self.criterion != "noisy_counts" else 1.0
        )
        source = random_source(self)
        self._gen = None if source is None else as_generator(source)
        domains = {j: (self.bounds_[0][j], self.bounds_[1][j]) for j in data.cont}
        self._exp = (
            None
            if self.criterion == "noisy_counts"
            else Exponential(self.epsilon_prime_, self._sens)
        )
        self.tree_ = self._build(data, 0, X.shape[0], 0, frozenset(), domains, self.accountant_)
        del self._gen, self._exp
        self._flatten()
        return self

    def _encode_classes(self, y: np.ndarray, *, private: bool) -> tuple[np.ndarray, np.ndarray]:
        return encode_labels(self.classes, y, private=private, stacklevel=5)

    def _records_bound(self, n: int, *, private: bool) -> int:
        """The public record bound of the ``info_gain`` sensitivity (``n`` when unused)."""
        return records_bound(self.n_records, n, self.criterion, private=private)

    def _prepare(self, X: np.ndarray, y: np.ndarray, spec: Spec | None = None) -> _Data:
        p = X.shape[1]
        if spec is None:
            cat = categorical_indices(self.categorical_features, p)
            sizes = domain_sizes(X, cat, self.categories, stacklevel=5)
        else:
            cat, sizes = spec.nominal, spec.sizes
        nominal, n_values = {}, {}
        for j, size in zip(cat, sizes):
            col = X[:, j]
            if np.any(col != np.floor(col)) or np.any(col < 0) or np.any(col >= size):
                bad = col[(col != np.floor(col)) | (col < 0) | (col >= size)][0]
                raise ParameterError(
                    f"nominal feature {j} must hold integer codes 0..{size - 1}; got {bad!r}"
                )
            nominal[j] = col.astype(np.int64)
            n_values[j] = size
        cont_idx = [j for j in range(p) if j not in nominal]
        if spec is None:
            self.bounds_ = feature_bounds(X, cont_idx, self.bounds, stacklevel=5)
        else:
            self.bounds_ = (spec.lo, spec.hi)
        n = X.shape[0]
        cont: dict[int, np.ndarray] = {}
        orders = np.empty((1 + len(cont_idx), n), dtype=np.int64)
        orders[0] = np.arange(n)
        ranks = np.empty((len(cont_idx), n), dtype=np.int64)
        uniq, uniq_start = [], [0]
        for k, j in enumerate(cont_idx):
            x = np.clip(X[:, j], self.bounds_[0][j], self.bounds_[1][j])
            cont[j] = x
            order = np.argsort(x, kind="stable")  # the one sort of this feature in the fit
            xs = x[order]
            new = np.empty(n, dtype=bool)
            new[:1] = True
            np.not_equal(xs[1:], xs[:-1], out=new[1:])
            ranks[k, order] = np.cumsum(new) - 1
            orders[1 + k] = order
            uniq.append(xs[new])
            uniq_start.append(uniq_start[-1] + uniq[-1].size)
        self.nominal_features_ = dict(n_values)
        codes = np.array([nominal[j] for j in nominal], dtype=np.int64).reshape(len(nominal), n)
        return _Data(
            y, len(self.classes_), nominal, n_values, cont,
            nom_pos={j: i for i, j in enumerate(nominal)}, codes=codes,
            cont_pos={j: k for k, j in enumerate(cont_idx)}, ranks=ranks,
            uniq=np.concatenate(uniq) if uniq else np.empty(0),
            uniq_start=np.asarray(uniq_start, dtype=np.int64), orders=orders,
        )  # fmt: skip

    def _build(
        self,
        data: _Data,
        start: int,
        end: int,
        depth: int,
        used: frozenset[int],
        domains: dict[int, tuple[float, float]],
        acc: BudgetAccountant,
        parent_counts: np.ndarray | None = None,
    ) -> _Node:
        """The subtree of the records ``[start, end)`` of ``data.orders`` (see :class:`_Data`)."""
        node = _Node(depth)
        eps1 = self.epsilon_prime_
        n_rows = end - start
        if math.isinf(eps1):
            # Non-private limit = ID3 (Quinlan 1986): a node whose records share one class is
            # a leaf, and an empty node is a leaf labelled with its parent's majority class.
            # With finite ε these data-dependent tests are replaced by the noisy-count rule.
            counts = _kernel().class_counts(data.orders[0], start, end, data.y, data.n_classes)
            if n_rows == 0 or np.count_nonzero(counts) == 1:
                return self._leaf(node, data, start, end, acc, parent_counts=parent_counts)
            parent_counts = counts
        cand_nom = [j for j in data.nominal if j not in used and data.n_values[j] > 1]
        cand_cont = [j for j in data.cont if domains[j][1] > domains[j][0]]
        if depth >= self.max_depth or not (cand_nom or cand_cont):
            return self._leaf(node, data, start, end, acc, parent_counts=parent_counts)
        n_t = float(_geometric(eps1).randomize(n_rows, rng=self._gen, accountant=acc,
                                               label=f"N_T depth {depth}")[()])  # fmt: skip
        node.noisy_n = n_t
        t = max([data.n_values[j] for j in cand_nom] + ([2] if cand_cont else []))
        theta = 1.0 if math.isinf(eps1) else max(1.0, _SQRT2 * t * data.n_classes / eps1)
        if n_t < theta:
            return self._leaf(node, data, start, end, acc)
        if self.criterion == "noisy_counts":
            rows = data.orders[0, start:end]
            feature, threshold = self._choose_sulq(data, rows, cand_nom, cand_cont, domains, acc)
        else:
            feature, threshold = self._choose_exp(
                data, start, end, cand_nom, cand_cont, domains, acc
            )
        node.feature, node.threshold = feature, threshold
        if feature in data.nominal:
            J = data.n_values[feature]
            col = data.nominal[feature]
            sub = [domains] * J
            used = used | {feature}
        else:
            J = 2
            col = data.cont[feature]
            lo, hi = domains[feature]
            sub = [{**domains, feature: (lo, threshold)}, {**domains, feature: (threshold, hi)}]
        nominal = feature in data.nominal
        bounds_ = _kernel().partition(data.orders, start, end, col, 0.0 if nominal else threshold,
                                      nominal, J, data.child, data.tmp)  # fmt: skip
        with acc.parallel(f"children of depth-{depth} split on feature {feature}") as par:
            for v, dom in enumerate(sub):
                child = self._build(data, int(bounds_[v]), int(bounds_[v + 1]), depth + 1, used,
                                    dom, par.partition(), parent_counts)  # fmt: skip
                node.children.append(child)
        return node

    def _leaf(
        self,
        node: _Node,
        data: _Data,
        start: int,
        end: int,
        acc: BudgetAccountant,
        *,
        parent_counts: np.ndarray | None = None,
    ) -> _Node:
        if end > start:
            counts = _kernel().class_counts(data.orders[0], start, end, data.y, data.n_classes)
        else:
            counts = np.zeros(data.n_classes, dtype=np.int64)
        noisy = _geometric(acc.remaining).randomize(
            counts, rng=self._gen, accountant=acc, label=f"class counts depth {node.depth}"
        )
        node.counts = noisy.astype(float)
        node.label = int(np.argmax(noisy))
        if end == start and parent_counts is not None:  # only at ε = inf (ID3's rule)
            node.label = int(np.argmax(parent_counts))
        return node

    def _choose_exp(
        self,
        data: _Data,
        start: int,
        end: int,
        cand_nom: list[int],
        cand_cont: list[int],
        domains: dict[int, tuple[float, float]],
        acc: BudgetAccountant,
    ) -> tuple[int, float]:
        """One exponential mechanism over nominal attributes and continuous ranges.

        The candidates, their order and their scores are those of one table per attribute
        (:func:`quality` of a nominal attribute's (value, class) table; for a continuous
        one, of the left/right tables of every range of :func:`_ranges_from_table` that
        holds a point of the public grid, :func:`_grid_index`), counted by the kernels of
        :mod:`._dp_tree_kernel` in one pass over the node's records per attribute and
        scored by one :func:`quality` call for all continuous ranges: the same floats, so
        the same tree for the same generator.
        """
        kern = _kernel()
        C, crit = data.n_classes, self.criterion
        base = data.orders[0]
        scores = []
        if cand_nom:
            J = np.array([data.n_values[j] for j in cand_nom], dtype=np.int64)
            off = np.concatenate([[0], np.cumsum(J)])
            pos = np.array([data.nom_pos[j] for j in cand_nom], dtype=np.int64)
            tabs = kern.nominal_tables(base, start, end, data.y, C, data.codes, pos, off)
            scores = [stacked_quality(tabs, off, crit)]
        n_nom = len(cand_nom)
        if cand_cont:
            lo = np.array([domains[j][0] for j in cand_cont])
            hi = np.array([domains[j][1] for j in cand_cont])
            pos = np.array([data.cont_pos[j] for j in cand_cont], dtype=np.int64)
            which, ga, gb, left = kern.continuous_ranges(
                data.orders, start, end, data.y, C, data.ranks, data.uniq, data.uniq_start,
                pos, lo, hi, THRESHOLD_GRID,
            )  # fmt: skip
            totals = kern.class_counts(base, start, end, data.y, C).astype(float)
            scores.append(quality(np.stack([left, totals - left], axis=1), crit))
        q = np.concatenate(scores)
        mech = self._exp
        if not math.isinf(mech.epsilon) and cand_cont:
            # base measure folded into the score: exp(ε q'/2Δ) = base · exp(ε q/2Δ); a
            # range's base measure is its share of the grid's points (a nominal one's is 1)
            logbase = np.log((gb - ga) / (THRESHOLD_GRID + 1))
            q[n_nom:] = q[n_nom:] + (2.0 * mech.sensitivity / mech.epsilon) * logbase
        # errstate: at ε = inf, Exponential.probabilities evaluates inf * 0 while validating
        # (a harmless RuntimeWarning in privlab.dp, reported to its owner)
        with np.errstate(invalid="ignore"):
            i = mech.select(q, rng=self._gen, accountant=acc, label=f"split ({self.criterion})")
        if i < n_nom:
            return cand_nom[i], math.nan
        i -= n_nom
        j = cand_cont[int(which[i])]
        a, b = int(ga[i]), int(gb[i])
        k = a + int(uniform_below(self._gen)(np.array([b - a], dtype=np.int64))[0])
        lo_j, hi_j = domains[j]
        return j, _grid_point(k, lo_j, hi_j)

    def _choose_sulq(self, data, rows, cand_nom, cand_cont, domains, acc) -> tuple[int, float]:
        """SuLQ: argmax of information gain computed from noisy (value, class) histograms."""
        y, C = data.y[rows], data.n_classes
        k = len(cand_nom) + len(cand_cont)
        lap = Laplace(self.epsilon_prime_ / k, 1.0)
        best: tuple[float, int, float] = (-math.inf, -1, math.nan)
        for j in cand_nom:
            J = data.n_values[j]
            tab = np.bincount(data.nominal[j][rows] * C + y, minlength=J * C).reshape(J, C)
            noisy = np.maximum(lap.randomize(tab, rng=self._gen, accountant=acc,
                                             label=f"SuLQ counts feature {j}"), 0)  # fmt: skip
            v = float(quality(noisy, "info_gain"))
            if v > best[0]:
                best = (v, j, math.nan)
        B = int(self.n_bins)
        for j in cand_cont:
            lo, hi = domains[j]
            x = data.cont[j][rows]
            b = np.clip(np.floor((x - lo) / (hi - lo) * B).astype(np.int64), 0, B - 1)
            tab = np.bincount(b * C + y, minlength=B * C).reshape(B, C)
            noisy = np.maximum(lap.randomize(tab, rng=self._gen, accountant=acc,
                                             label=f"SuLQ counts feature {j}"), 0)  # fmt: skip
            cum = np.cumsum(noisy, axis=0)[:-1]
            v = quality(np.stack([cum, cum[-1] + noisy[-1] - cum], axis=1), "info_gain")
            i = int(np.argmax(v))
            if v[i] > best[0]:
                # bin edge i+1; values landing exactly on it belong to bin i+1 -> go right
                best = (float(v[i]), j, float(np.nextafter(lo + (hi - lo) * (i + 1) / B, -np.inf)))
        if best[1] < 0:  # every histogram was all zero after clipping: any choice is as good
            j = (cand_nom + cand_cont)[0]
            lo, hi = domains.get(j, (0.0, 0.0))
            return j, (math.nan if j in data.nominal else (lo + hi) / 2)
        return best[1], best[2]

    # -- flattened arrays for prediction ------------------------------------------------------
    def _flatten(self) -> None:
        nodes: list[_Node] = [self.tree_]
        feature, threshold, start, label, depth = [], [], [], [], []
        C = len(self.classes_)
        leaves, counts = [], []
        i = 0
        while i < len(nodes):
            nd = nodes[i]
            feature.append(nd.feature)
            threshold.append(nd.threshold)
            depth.append(nd.depth)
            start.append(len(nodes) if nd.children else -1)
            nodes.extend(nd.children)
            if nd.counts is not None:
                leaves.append(i)
                counts.append(nd.counts)
                label.append(nd.label)
            else:
                label.append(-1)
            i += 1
        self.node_label_ = np.asarray(label, dtype=np.int64)
        proba = np.full((len(nodes), C), np.nan)
        if leaves:
            c = np.maximum(np.asarray(counts, dtype=float).reshape(len(leaves), C), 0.0)
            total = c.sum(axis=1, keepdims=True)
            # no positive count (an empty node): all mass on the node's label, so that
            # predict == argmax predict_proba
            with np.errstate(divide="ignore", invalid="ignore"):
                p = np.where(total > 0, c / total, 0.0)
            empty = np.flatnonzero(total[:, 0] <= 0)
            p[empty, self.node_label_[np.asarray(leaves)[empty]]] = 1.0
            proba[leaves] = p
        self.node_feature_ = np.asarray(feature, dtype=np.int64)
        self.node_threshold_ = np.asarray(threshold, dtype=float)
        self.node_child_start_ = np.asarray(start, dtype=np.int64)
        self.node_proba_ = proba
        self.node_depth_ = np.asarray(depth, dtype=np.int64)
        self.n_nodes_ = len(nodes)
        self.depth_ = int(max(depth))
        self._nodes = nodes

    def _apply(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        node = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for _ in range(self.depth_):
            f = self.node_feature_[node]
            inner = np.flatnonzero(f >= 0)
            if inner.size == 0:
                break
            fi, ni = f[inner], node[inner]
            x = X[rows[inner], fi]
            nominal = np.isin(fi, list(self.nominal_features_))
            step = np.where(nominal, 0, (x > self.node_threshold_[ni]).astype(np.int64))
            if nominal.any():
                xn, fn = x[nominal], fi[nominal]
                size = np.array([self.nominal_features_[int(j)] for j in fn])
                bad = (xn != np.floor(xn)) | (xn < 0) | (xn >= size)
                if bad.any():
                    k = int(np.argmax(bad))
                    raise ParameterError(
                        f"nominal feature {int(fn[k])} holds {xn[k]!r}, not a code 0..{size[k] - 1}"
                    )
                step[nominal] = xn.astype(np.int64)
            node[inner] = self.node_child_start_[ni] + step
        return node

    def apply(self, X: Any) -> np.ndarray:
        """Index of the leaf (in breadth-first order) each row falls into."""
        check_is_fitted(self, "tree_")
        return self._apply(predict_input(self, X))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class frequencies of the leaf's noisy counts (clipped at 0; uniform if all <= 0)."""
        leaves = self.apply(X)
        return self.node_proba_[leaves]

    def predict(self, X: Any) -> np.ndarray:
        """The leaf label ``argmax_c N_c``."""
        leaves = self.apply(X)
        return self.classes_[self.node_label_[leaves]]

    # -- printing -----------------------------------------------------------------------------
    def export_text(
        self,
        feature_names: Sequence[str] | None = None,
        category_names: dict[int, Sequence[Any]] | None = None,
        class_names: Sequence[Any] | None = None,
        decimals: int = 3,
    ) -> str:
        """The tree as indented text (noisy counts shown rounded; they are DP outputs)."""
        check_is_fitted(self, "tree_")
        names = list(feature_names) if feature_names is not None else None
        if names is None and hasattr(self, "feature_names_in_"):
            names = [str(c) for c in self.feature_names_in_]
        if names is None:
            names = [f"x{j}" for j in range(self.n_features_in_)]
        cats = category_names or {}
        columns = getattr(self, "columns_", None)
        if not cats and columns is not None:  # fitted on a table: its domains' values
            cats = {j: list(columns.domains[j]) for j in columns.nominal}
        cls = list(class_names) if class_names is not None else [str(c) for c in self.classes_]
        lines: list[str] = []

        def walk(nd: _Node, indent: str) -> None:
            if nd.feature < 0:
                counts = ", ".join(f"{cls[c]}: {v:.0f}" for c, v in enumerate(nd.counts))
                lines.append(f"{indent}-> {cls[nd.label]}  (noisy counts {counts})")
                return
            name = names[nd.feature]
            for v, child in enumerate(nd.children):
                if nd.feature in self.nominal_features_:
                    dom = cats.get(nd.feature)
                    val = dom[v] if dom is not None and v < len(dom) else v
                    cond = f"{name} = {val}"
                else:
                    op = "<=" if v == 0 else ">"
                    cond = f"{name} {op} {nd.threshold:.{decimals}f}"
                if child.feature < 0:
                    counts = ", ".join(f"{cls[c]}: {x:.0f}" for c, x in enumerate(child.counts))
                    lines.append(f"{indent}{cond}: {cls[child.label]}  (noisy counts {counts})")
                else:
                    lines.append(f"{indent}{cond}:")
                    walk(child, indent + "|   ")

        walk(self.tree_, "")
        return "\n".join(lines)

    # -- persistence --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable description of the fitted tree (no training data inside)."""
        check_is_fitted(self, "tree_")

        def node(nd: _Node) -> dict[str, Any]:
            d: dict[str, Any] = {"depth": nd.depth}
            if nd.feature >= 0:
                d["feature"] = nd.feature
                if not math.isnan(nd.threshold):
                    d["threshold"] = nd.threshold
                d["children"] = [node(c) for c in nd.children]
            else:
                d["counts"] = [float(c) for c in nd.counts]
                d["label"] = nd.label
            if nd.noisy_n is not None:
                d["noisy_n"] = nd.noisy_n
            return d

        out = {
            "params": {
                "epsilon": float(self.epsilon),
                "max_depth": int(self.max_depth),
                "criterion": self.criterion,
                "n_bins": int(self.n_bins),
            },
            "classes": [py_scalar(c) for c in self.classes_],
            "n_features": int(self.n_features_in_),
            "nominal_features": {str(k): v for k, v in self.nominal_features_.items()},
            "bounds": [self.bounds_[0].tolist(), self.bounds_[1].tolist()],
            "epsilon_prime": self.epsilon_prime_,
            "ledger": self.accountant_.to_dict(),
            "tree": node(self.tree_),
        }
        columns = getattr(self, "columns_", None)
        if columns is not None:  # fitted on a table: its public columns, to predict on one
            out["columns"] = columns.to_dict(getattr(self, "feature_names_in_", None))
        return out

    @classmethod
    def from_dict(
        cls, d: dict[str, Any], *, source: str | Path = "model"
    ) -> DPDecisionTreeClassifier:
        """Rebuild a fitted classifier from :meth:`to_dict`'s output, checking every field
        and the tree's structure (an edited or truncated model is refused with the path of
        the bad field)."""
        f = Fields(d, source)
        f.obj()
        p = f.get("params")
        max_depth = p.get("max_depth").integer(lo=0)
        est = cls(
            epsilon=p.get("epsilon").number(lo=0.0, lo_open=True, allow_inf=True),
            max_depth=max_depth,
            criterion=p.get("criterion").string(CRITERIA),
            n_bins=p.get("n_bins").integer(lo=2),
        )
        classes = f.get("classes").scalars(min_length=1)
        n_classes = len(classes)
        est.classes_ = np.asarray(classes)
        n_features = f.get("n_features").integer(lo=1)
        est.n_features_in_ = n_features
        nominal: dict[int, int] = {}
        nom = f.get("nominal_features")
        for key in nom.obj():
            try:
                j = int(key)
            except ValueError:
                raise nom.fail(f"has the key {key!r}, not a feature index") from None
            if not 0 <= j < n_features:
                raise nom.fail(f"names feature {j}; the model has {n_features}")
            nominal[j] = nom.get(key).integer(lo=1)
        est.nominal_features_ = nominal
        lo, hi = (b.array(length=n_features) for b in f.get("bounds").items(length=2))
        # as at fit time (feature_bounds): a continuous feature's bounds satisfy lo <= hi
        bad = [j for j in range(n_features) if j not in nominal and lo[j] > hi[j]]
        if bad:
            raise f.get("bounds").fail(
                f"of feature {bad[0]} must satisfy lo <= hi, got ({lo[bad[0]]:g}, {hi[bad[0]]:g})"
            )
        est.bounds_ = (lo, hi)
        est.epsilon_prime_ = f.get("epsilon_prime").number(lo=0.0, lo_open=True, allow_inf=True)

        def node(x: Fields, depth: int) -> _Node:
            got = x.get("depth").integer(lo=0, hi=max_depth)
            if got != depth:
                raise x.get("depth").fail(f"must be {depth} (the node's depth in the tree)")
            noisy = x.opt("noisy_n")
            nd = _Node(depth, noisy_n=None if noisy is None else noisy.number())
            if x.has("feature"):
                nd.feature = x.get("feature").integer(lo=0, hi=n_features - 1)
                children = x.get("children")
                if nd.feature in nominal:
                    kids = children.items(length=nominal[nd.feature])
                else:
                    nd.threshold = x.get("threshold").number()
                    kids = children.items(length=2)
                nd.children = [node(c, depth + 1) for c in kids]
            else:
                nd.counts = x.get("counts").array(length=n_classes)
                nd.label = x.get("label").integer(lo=0, hi=n_classes - 1)
            return nd

        est.tree_ = node(f.get("tree"), 0)
        est._flatten()
        cols = f.opt("columns")
        if cols is not None:
            est.columns_, names = Columns.from_fields(cols, n_features)
            if names is not None:
                est.feature_names_in_ = names
            if {j: len(est.columns_.domains[j]) for j in est.columns_.nominal} != nominal:
                raise cols.fail("must list a domain for each nominal feature, of its size")
        return est


# -- tables in, tables out (for the CLI) ----------------------------------------------------
@dataclass
class DPTreeModel(ModelFile):
    """A DP tree trained on a table: the estimator plus how to encode and decode columns.

    ``read_from_data`` names the columns (features and the target) whose domain or bounds
    were read from the training table rather than declared by the user
    (:attr:`privlab.data.schema.Attribute.declared`): the model file says so, because for
    them the ε guarantee does not cover what the stored domain or bounds reveal.  None for a
    model file written before privlab recorded it.
    """

    tree: DPDecisionTreeClassifier
    features: list[str]
    target: str
    domains: dict[str, list[Any]]  # nominal feature -> its domain (codes index it)
    read_from_data: list[str] | None = None
    #: The seed record of the noise (set by :func:`fit_table`, which salts a seed) and the
    #: training table's fingerprint: the custodian's, written to ``custody`` only.
    seed: SeedRecord | None = field(default=None, repr=False)
    input_sha256: str | None = field(default=None, repr=False)

    def export_text(self) -> str:
        cats = {i: self.domains[f] for i, f in enumerate(self.features) if f in self.domains}
        return self.tree.export_text(feature_names=self.features, category_names=cats)

    def encode(self, df: Any) -> np.ndarray:
        """Encode a DataFrame's feature columns (unknown nominal values raise, naming them)."""
        missing = [f for f in self.features if f not in df.columns]
        if missing:
            raise PrivlabError(f"input lacks the model's column {missing[0]!r}")
        cols = []
        for f in self.features:
            if f in self.domains:
                attr = Attribute(f, tuple(self.domains[f]))
                cols.append(attr.encode(df[f].to_numpy()).astype(float))
            else:
                try:
                    cols.append(df[f].to_numpy(dtype=float))
                except (TypeError, ValueError):
                    raise PrivlabError(f"column {f!r} must be numeric for this model") from None
        return np.column_stack(cols) if cols else np.empty((len(df), 0))

    def predict(self, df: Any) -> np.ndarray:
        return self.tree.predict(self.encode(df))

    def accuracy(self, df: Any, pred: np.ndarray | None = None) -> float:
        """The share of ``df``'s rows whose class (its ``target`` column) the model predicts
        right, compared as text; ``pred``: the predictions, when already made.  A frame
        lacking a feature or the target is refused naming it."""
        missing = [f for f in [*self.features, self.target] if f not in df.columns]
        if missing:
            raise PrivlabError(f"lacks the column {missing[0]!r}")
        pred = self.predict(df) if pred is None else pred
        return float((df[self.target].astype(str).to_numpy() == pred.astype(str)).mean())

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "format": "privlab-dptree/1",
            "features": self.features,
            "target": self.target,
            "domains": self.domains,
        }
        if self.read_from_data is not None:
            d["read_from_data"] = list(self.read_from_data)
            if self.read_from_data:
                d["privacy_note"] = (
                    "the domains or bounds of " + ", ".join(self.read_from_data) + " were read "
                    "from the training data, not declared: they are not covered by epsilon"
                )
        d["model"] = self.tree.to_dict()
        return d

    def _model_file(self) -> dict[str, Any]:
        t = self.tree
        params = {"method": "dp-tree", "epsilon": float(t.epsilon), "max_depth": int(t.max_depth),
                  "criterion": t.criterion, "features": list(self.features),
                  "target": self.target}  # fmt: skip
        return {
            "doc": self.to_dict(), "method": "dp-tree", "parameters": params,
            "seed_record": self.seed, "noise_source": random_source(t),
            "input_sha256": self.input_sha256, "epsilon": float(t.epsilon),
        }  # fmt: skip

    @classmethod
    def load(cls, path: str | Path) -> DPTreeModel:
        """Read a model file written by :meth:`save` (checked field by field)."""
        d = read_json(path, what="model file")
        f = Fields(d, path)
        if not isinstance(d, dict) or d.get("format") != "privlab-dptree/1":
            raise PrivlabError(f"{path} is not a privlab DP tree model file")
        tree = DPDecisionTreeClassifier.from_dict(f.get("model").obj(), source=f"{path}: model")
        features = [str(x) for x in f.get("features").scalars(min_length=1)]
        if len(features) != tree.n_features_in_:
            raise f.get("features").fail(
                f"names {len(features)} features; the tree has {tree.n_features_in_}"
            )
        target = f.get("target").string()
        dom = f.get("domains")
        domains = {}
        for name in dom.obj():
            if name not in features:
                raise dom.fail(f"has a domain for {name!r}, which is not a feature")
            j = features.index(name)
            size = tree.nominal_features_.get(j)
            domains[name] = dom.get(name).scalars(min_length=1)
            if size != len(domains[name]):
                raise dom.get(name).fail(
                    f"has {len(domains[name])} values; the tree splits it into {size}"
                )
        missing = [features[j] for j in tree.nominal_features_ if features[j] not in domains]
        if missing:
            raise dom.fail(f"lacks the domain of the nominal feature {missing[0]!r}")
        read = f.opt("read_from_data")
        return cls(tree, features, target, domains,
                   None if read is None else [str(c) for c in read.scalars()])  # fmt: skip


def check_bounds(
    bounds: Mapping[str, tuple[float, float]] | None, table: Any
) -> dict[str, tuple[float, float]]:
    """Public bounds ``{numeric column: (lo, hi)}``: finite, ``lo < hi``, numeric columns."""
    out = {}
    for name, b in dict(bounds or {}).items():
        if name not in table.names:
            raise PrivlabError(f"bounds are given for {name!r}, which is not a column")
        if not table.schema[name].numeric:
            raise PrivlabError(f"bounds are given for {name!r}, which is not numeric")
        try:
            lo, hi = (float(x) for x in b)
        except (TypeError, ValueError):
            raise PrivlabError(f"the bounds of {name!r} must be two numbers, got {b!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise PrivlabError(f"the bounds of {name!r} must be finite with lo < hi, got {b!r}")
        out[name] = (lo, hi)
    return out


def fit_table(
    table: Any,
    target: str,
    *,
    epsilon: float,
    max_depth: int = 5,
    criterion: str = "max",
    features: Sequence[str] | None = None,
    n_records: int | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    rng: int | np.random.Generator | SeedRecord | None = None,
) -> DPTreeModel:
    """Train a DP tree on a table (a privlab ``Table``, a pandas or polars DataFrame or a
    pyarrow Table; numeric attributes are continuous).

    Nominal domains, continuous bounds (the least and largest domain values) and the classes
    come from the table's schema.  They are public only for attributes whose domain was
    declared (:attr:`~privlab.data.schema.Attribute.declared`); for the others (a CSV's
    schema is read from the data itself) a :class:`PrivacyWarning` names them and the
    model's ``read_from_data`` (stored in the model file) lists them.

    ``bounds`` gives public bounds ``(lo, hi)`` of numeric features (values outside are
    clipped); those are then not read from the data.

    ``n_records`` is a public upper bound on the number of rows, required by
    ``criterion="info_gain"`` at a finite ε: the table's row count is private, so it is never
    used in its place.

    ``rng``: ``None`` draws the noise from the OS CSPRNG; an int seed is salted with 128 bits
    of OS entropy (the model's custody keeps both: :meth:`DPTreeModel.save`), so the model
    file alone never lets anyone replay its noise; ``Custody.replay()``'s record replays a
    saved model; a ``Generator`` is an experiment (an
    :class:`~privlab.errors.ExperimentWarning`; ``save`` refuses it unless
    ``not_for_publication=True``).
    """
    from privlab.data.frames import as_table

    table = as_table(table)
    if target not in table.names:
        raise PrivlabError(f"unknown target column {target!r}; columns: {', '.join(table.names)}")
    feats = [f for f in (features or table.names) if f != target]
    for f in feats:
        if f not in table.names:
            raise PrivlabError(f"unknown feature column {f!r}")
    if not feats:
        raise PrivlabError("no feature columns left besides the target")
    table.require_rows()
    # refuse info_gain without a public bound before anything is read or warned about
    records_bound(n_records, table.n_rows, criterion,
                  private=not math.isinf(check_epsilon(epsilon)))  # fmt: skip
    bounds = check_bounds(bounds, table)
    cols, cat, sizes, domains, lo, hi = [], [], [], {}, [], []
    for i, f in enumerate(feats):
        a = table.schema[f]
        if a.numeric:
            dom = np.asarray(a.domain, dtype=float)
            cols.append(dom[table.column(f)])
            b = bounds.get(f, (float(dom.min()), float(dom.max())))
            lo.append(b[0])
            hi.append(b[1])
        else:
            cols.append(table.column(f).astype(float))
            cat.append(i)
            sizes.append(a.size)
            domains[f] = list(a.domain)
            lo.append(0.0)
            hi.append(0.0)
    read = [f for f in [*feats, target] if not table.schema[f].declared and f not in bounds]
    if read:
        warnings.warn(
            "the domains and bounds of " + ", ".join(read) + " are taken from the input "
            "table, not declared; they must be public for the epsilon guarantee to hold "
            "(declare them to keep them public)",
            PrivacyWarning,
            stacklevel=2,
        )
    X = np.column_stack(cols)
    y = table.decode(target)
    noise, record = noise_rng(rng)
    tree = DPDecisionTreeClassifier(
        epsilon=epsilon,
        max_depth=max_depth,
        criterion=criterion,
        categorical_features=cat,
        categories=sizes,
        bounds=(lo, hi),
        classes=[str(v) for v in table.schema[target].domain],
        n_records=n_records,
        rng=noise,
    )
    tree.fit(X, y.astype(str))
    return DPTreeModel(tree, feats, target, domains, read, seed=record,
                       input_sha256=table.fingerprint())  # fmt: skip
