"""A differentially private random forest: DP trees on disjoint parts of the records.

Friedman & Schuster (2010) close with "variance in results - possible solution: forests (as
in [JPW'09])".  :class:`DPRandomForestClassifier` is that forest built from their tree
(:class:`~privlab.learn.dp_tree.DPDecisionTreeClassifier`):

1. every record is assigned to one of the ``T = n_estimators`` trees independently and
   uniformly at random (the parts are disjoint and cover the data);
2. every tree draws a random subset of ``max_features`` features (without replacement);
3. tree ``t`` is Friedman & Schuster's DP tree with the **full** budget ε, trained on part
   ``t`` restricted to its features (with the same public domains, bounds, classes and
   record bound as the forest);
4. prediction averages the trees' leaf class distributions (``voting="soft"``) or takes the
   majority of their labels (``voting="hard"``; ties go to the first class).

Budget split (exact): each tree spends ε on its own part; the forest spends ε in total.

*Proof (parallel composition, McSherry 2009, Thm. 4, here with a random partition).*  Let
``D' = D ∪ {x}`` (add/remove neighbours, as for every privlab mechanism).  The features of
the trees and the part ``A(r)`` of every record ``r`` of ``D`` are drawn independently of the
data and of each other; ``x``'s part ``a`` is drawn independently of them.  Fix ``A`` and
``a``.  The trees then receive the parts ``P_1..P_T`` of ``D`` and ``P'_1..P'_T`` of ``D'``,
which are equal except ``P'_a = P_a ∪ {x}``; the trees use independent noise, so the output
is a product measure whose only factor that changes is tree ``a``'s, an ε-DP mechanism.  For
any set ``S`` of forests, integrating tree ``a``'s ε-DP bound over the other trees' outputs
gives ``P[M(D') ∈ S | A, a] <= e^ε P[M(D) ∈ S | A]`` and the converse.  Averaging over ``A``
and ``a``, whose distributions do not depend on the data, keeps both inequalities, so the
forest is ε-DP.  The partition need not be secret: the bound holds for every fixed ``A``.
The random feature subsets are public randomness (independent of the data) and cost nothing.
The accountant records this as one parallel composition: ``accountant_.spent == epsilon``.

The record bound: a part never holds more records than the data, so the public bound
``n_records`` of the whole data is a valid bound for every tree's ``info_gain`` sensitivity.

Where the sources differ.  Jagannathan, Pillaipakkamnatt & Wright (2009), the [JPW'09] the
slides point to, build *random* trees (structure drawn without looking at the data) and give
each of the ``T`` trees the whole data with ``ε/T`` (sequential composition), so each
tree's leaf noise grows with ``T``; disjoint parts give every tree the full ε at the price of
``n/T`` records each.  Which is better depends on ``n ε``: disjoint parts win when the data
are large enough that a tree on ``n/T`` records still clears the noisy-count threshold
``√2 t |C| / ε'`` of Friedman & Schuster's tree (see the ``dpforest-adult`` experiment for
Adult).  diffprivlib's ``RandomForestClassifier`` (after Fletcher & Islam 2017) also trains
its random trees on disjoint subsets, but cuts a permutation of the ``n`` records into ``T``
equal chunks: that is parallel composition for replace-one neighbours, whereas for add/remove
neighbours (privlab's notion) one more record changes ``n`` and moves every chunk boundary,
so the argument above does not apply to it; independent assignments need no fixed ``n``.
The slides' hope that forests cure the variance of DP trees holds only when the parts stay
large: on Adult (30,162 training records) a forest of 10 trees is *less* accurate than one
tree at ε = 0.1 and 1, because a part of ~3,000 records rarely clears the threshold and
most trees stay noisy stumps (``dpforest-adult``); on a large synthetic problem with a
diagonal boundary the forest wins (``tests/test_dp_forest.py``).

scikit-learn: as for the tree, the forest passes every ``check_estimator`` check of
scikit-learn >= 1.6, seeded (``random_state=0``) or not (``poor_score`` at a finite ε; the
checks that compare two fits seed ``random_state`` themselves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from privlab._params import check_int
from privlab._rng import as_generator
from privlab.dp.accountant import BudgetAccountant
from privlab.dp.mechanisms import check_epsilon
from privlab.errors import ParameterError
from privlab.learn._sklearn import FreshRandomnessTags, random_source
from privlab.learn.dp_tree import (
    CRITERIA,
    DPDecisionTreeClassifier,
    TreeParameters,
    _finite_epsilon,
    categorical_indices,
    check_max_depth,
    domain_sizes,
    encode_labels,
    expected_failed_checks,
    feature_bounds,
    fit_input,
    predict_input,
    records_bound,
)

VOTING = ("soft", "hard")
__all__ = ["DPRandomForestClassifier", "expected_failed_checks", "n_features_per_tree"]


def n_features_per_tree(max_features: Any, p: int) -> int:
    """How many of ``p`` features each tree draws (scikit-learn's ``max_features`` rules)."""
    if max_features is None:
        return p
    if isinstance(max_features, str):
        if max_features == "sqrt":
            return max(1, int(math.sqrt(p)))
        if max_features == "log2":
            return max(1, int(math.log2(p))) if p > 1 else 1
        raise ParameterError(
            f"max_features must be 'sqrt', 'log2', an int, a float in (0, 1] or None; "
            f"got {max_features!r}"
        )
    if isinstance(max_features, bool):
        raise ParameterError(f"max_features must not be a bool, got {max_features!r}")
    if isinstance(max_features, (int, np.integer)):
        if not 1 <= max_features <= p:
            raise ParameterError(f"max_features = {max_features} is outside 1..{p}")
        return int(max_features)
    if isinstance(max_features, (float, np.floating)) and 0 < max_features <= 1:
        return max(1, int(max_features * p))
    raise ParameterError(
        f"max_features must be 'sqrt', 'log2', an int, a float in (0, 1] or None; "
        f"got {max_features!r}"
    )


@dataclass(kw_only=True, eq=False, repr=False)
class DPRandomForestClassifier(TreeParameters, FreshRandomnessTags, ClassifierMixin, BaseEstimator):
    """Differentially private random forest of Friedman & Schuster (2010) trees.

    Every tree gets the full ``epsilon`` on its own disjoint random part of the records
    (parallel composition; the module docstring proves the forest ε-DP).

    Parameters
    ----------
    epsilon
        Total privacy budget of the forest (``inf``: no noise), which is also every tree's.
    n_estimators
        Number of trees ``T`` (and of parts of the records).
    max_depth, criterion, n_bins
        Passed to every :class:`~privlab.learn.dp_tree.DPDecisionTreeClassifier`.
    max_features
        Features per tree, drawn without replacement: ``"sqrt"`` (``⌊√p⌋``), ``"log2"``,
        an int, a fraction in (0, 1] or None (all ``p``).
    voting
        ``"soft"``: average the trees' leaf class distributions; ``"hard"``: majority of the
        trees' labels (``predict_proba`` then gives the vote shares).
    categorical_features, categories, bounds, classes
        Public metadata over all features, as for the tree; ``categories`` and ``bounds``
        are read from the whole training data with a :class:`~privlab.errors.PrivacyWarning`
        when None (once for the forest, so that all trees share them).  A table of strings
        and numbers takes ``categories={column: values}`` and ``bounds={column: (lo, hi)}``.
    n_records
        Public upper bound on the number of training records; required by ``info_gain`` at
        a finite ε (every part is at most that large).
    accountant
        Optional :class:`~privlab.dp.accountant.BudgetAccountant` charged ``epsilon`` once.
    rng
        Seed or generator for the partition, the feature subsets and the trees' noise
        (``None``: OS entropy for the first two, the OS CSPRNG for the noise).
    random_state
        scikit-learn's name for ``rng`` (the same meaning; give one of the two).

    Attributes
    ----------
    classes_, n_features_in_, estimators_ (the fitted trees), features_ (the feature indices
    of every tree), accountant_ (the forest's ledger: one parallel composition, spent ==
    epsilon).  The size of each part is not kept: it is a private count.
    """

    # scikit-learn's parameters: the tree's (TreeParameters) and the forest's own
    n_estimators: int = 10
    max_features: int | float | str | None = None
    voting: str = "soft"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a DP forest on 150-300 toy records cannot reach sklearn's 83% at a finite ε
        tags.classifier_tags.poor_score = _finite_epsilon(self.epsilon)
        return tags

    def _check_params(self) -> int:
        if self.criterion not in CRITERIA:
            raise ParameterError(
                f"criterion must be one of {', '.join(CRITERIA)}; got {self.criterion!r}"
            )
        check_max_depth(self.max_depth)
        random_source(self)  # rng and random_state: one of them
        if self.voting not in VOTING:
            raise ParameterError(f"voting must be 'soft' or 'hard', got {self.voting!r}")
        return check_int("n_estimators", self.n_estimators, low=1)

    def fit(self, X: Any, y: Any) -> DPRandomForestClassifier:
        """Fit ``n_estimators`` DP trees on disjoint random parts; spends exactly ``epsilon``.

        ``X`` as for :meth:`DPDecisionTreeClassifier.fit`: numbers, or a table of strings and
        numbers with ``categories={column: values}`` and ``bounds={column: (lo, hi)}``."""
        X, y, spec = fit_input(self, X, y)
        eps = check_epsilon(self.epsilon)
        T = self._check_params()
        private = not math.isinf(eps)
        n, p = X.shape
        k = n_features_per_tree(self.max_features, p)
        classes, yc = encode_labels(self.classes, y, private=private, stacklevel=4)
        records_bound(self.n_records, n, self.criterion, private=private)
        if spec is None:
            cat = categorical_indices(self.categorical_features, p)
            sizes = dict(zip(cat, domain_sizes(X, cat, self.categories, stacklevel=3)))
            lo, hi = feature_bounds(X, [j for j in range(p) if j not in sizes], self.bounds,
                                    stacklevel=3)  # fmt: skip
        else:
            sizes, lo, hi = dict(zip(spec.nominal, spec.sizes)), spec.lo, spec.hi
        for j, size in sizes.items():
            col = X[:, j]
            bad = (col != np.floor(col)) | (col < 0) | (col >= size)
            if bad.any():
                raise ParameterError(
                    f"nominal feature {j} must hold integer codes 0..{size - 1}; "
                    f"got {col[bad][0]!r}"
                )
        source = random_source(self)
        gen = as_generator(source)
        part = gen.integers(T, size=n)
        features = [np.sort(gen.choice(p, size=k, replace=False)) for _ in range(T)]
        tree_rngs = [None] * T if source is None else gen.spawn(T)
        if self.accountant is not None:
            self.accountant.spend(eps, f"DPRandomForestClassifier({self.criterion}, {T} trees)")
        self.accountant_ = BudgetAccountant(eps)
        self.classes_ = classes
        trees = []
        order = np.argsort(part, kind="stable")
        starts = np.searchsorted(part[order], np.arange(T + 1))
        with self.accountant_.parallel(f"{T} trees on disjoint random parts") as par:
            for t in range(T):
                rows = order[starts[t] : starts[t + 1]]
                f = features[t]
                tree = DPDecisionTreeClassifier(
                    epsilon=eps,
                    max_depth=self.max_depth,
                    criterion=self.criterion,
                    categorical_features=[i for i, j in enumerate(f) if j in sizes],
                    categories=[sizes[j] for j in f if j in sizes],
                    bounds=(lo[f], hi[f]),
                    classes=list(classes),
                    n_records=self.n_records,
                    n_bins=self.n_bins,
                    accountant=par.partition(),
                    rng=tree_rngs[t],
                )
                trees.append(tree._fit_part(X[np.ix_(rows, f)], yc[rows]))
        self.estimators_ = trees
        self.features_ = features
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Mean of the trees' leaf class distributions (``soft``) or their vote shares."""
        check_is_fitted(self, "estimators_")
        X = predict_input(self, X)
        C = len(self.classes_)
        out = np.zeros((X.shape[0], C))
        for tree, f in zip(self.estimators_, self.features_):
            leaves = tree._apply(X[:, f])
            if self.voting == "soft":
                out += tree.node_proba_[leaves]
            else:
                out[np.arange(X.shape[0]), tree.node_label_[leaves]] += 1.0
        return out / len(self.estimators_)

    def predict(self, X: Any) -> np.ndarray:
        """The class of largest :meth:`predict_proba` (ties: the first class)."""
        proba = self.predict_proba(X)  # first: it raises NotFittedError before fit
        return self.classes_[np.argmax(proba, axis=1)]
