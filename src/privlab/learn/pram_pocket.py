"""A linear classifier learned from PRAM-randomized data: the weighted Pocket algorithm
(Ma 2006, Ch. 6; Gallant 1990).

**Plain pocket with ratchet** (Gallant 1990).  A perceptron ``g(x) = w . [x, 1]`` trained on
randomly drawn samples (``w <- w + y x`` on a mistake, ``y`` in {+1, -1}, learning rate 1),
that keeps in its "pocket" the weights with the longest run of consecutive correct
classifications, replacing them only when the new weights also classify more samples
correctly (the ratchet, ``num_ok``).

**Weighted pocket from randomized data** (Sec. 6.2).  With ``V = (M_1..M_n, C)`` (first
slowest, class fastest) and ``P = P_1 (x) ... (x) P_n (x) P_C``, the joint ``T^`` is the
EM-MLE (Sec. 2.4.2: never negative, works for a singular ``P``; the notes prefer it to the
moment estimate), and each randomized record ``v~_i`` stands for every original cell ``v_l``
with the posterior weight ``pi_l(i) = T^_l P(l, v~_i) / sum_m T^_m P(m, v~_i)``.  The pocket
runs on these ``N L`` weighted samples: a drawn record's original cell is drawn from its
posterior (samples drawn in proportion to their weights, the notes' reading of the thesis's
"delta_l^i = delta_l(w) Pr(...)"), ``run_w`` grows by the sample's weight, and ``num_ok_w``
sums the weights of the correctly classified samples, ``sum_l W_l [correct(l)]`` with
``W_l = sum_i pi_l(i)`` (which equals ``T^_l`` at the EM fixed point; a test checks it).

Where the thesis is wrong or silent:

* it writes ``w^T v_l`` for the cost of a joint value; only the feature part ``s_l`` enters
  the hyperplane, the class decides the sign [!];
* it writes ``T^ = P^-1 T~``; privlab uses the EM-MLE (the moment form would be
  ``(P^T)^-1 T~``) [!];
* the number of iterations, the learning rate and whether the ratchet is used are not given:
  privlab draws ``max_iter`` samples (default 20,000), learning rate 1, ratchet on; EM stops
  at :data:`EM_TOL` (``fit_info_`` says whether it converged);
* a record's weight is folded into the sampling (the update itself is not scaled), so at
  ``p = 0`` (posterior one-hot) the weighted pocket is the plain pocket, draw for draw, with
  the same seed: the cell draws use their own generator (a test checks the identity).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from privlab._rng import as_generator
from privlab.errors import MatrixError, ParameterError
from privlab.estimate.pram import em_estimate, kron_apply

__all__ = ["PramPocketClassifier", "pocket", "posterior_weights"]

#: EM stops when no cell's proportion moves by more than this in one step (or after EM_MAX
#: steps).  Under heavy randomization the likelihood is flat and EM crawls: on Iris x 100 at
#: p = 0.6 (960 cells) this stop is 18,144 steps and 0.15 nats below the maximum, where
#: 1e-9 takes ten times longer; the posterior weights need no more.
EM_TOL = 1e-6
EM_MAX = 20_000


def pocket(
    features: np.ndarray,
    signs: np.ndarray,
    weights: np.ndarray,
    *,
    max_iter: int,
    draw: Any,
    ratchet: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Gallant's pocket algorithm with ratchet over weighted samples.

    ``features`` ``(L, d)`` are the samples (augmented with a 1 here), ``signs`` their
    classes in {+1, -1} and ``weights`` what each counts in ``num_ok``; ``draw()`` returns
    the index of the next sample and the weight its correct classification adds to the run.
    Returns the pocket weights and what the run did.
    """
    x = np.column_stack([features, np.ones(len(features))])
    w = np.zeros(x.shape[1])
    best, best_run = w.copy(), 0.0
    best_ok = float(weights[signs * (x @ w) > 0].sum())
    run = 0.0
    changes = 0
    slack = 1e-9 * float(np.sum(weights))  # float sums: equal counts must compare equal
    for _ in range(max_iter):
        i, gain = draw()
        if signs[i] * (x[i] @ w) > 0:
            run += gain
            if run > best_run:
                ok = float(weights[signs * (x @ w) > 0].sum()) if ratchet else best_ok + 1
                if ok > best_ok + slack or not ratchet:
                    best, best_run, best_ok = w.copy(), run, ok
                    changes += 1
        else:
            w = w + signs[i] * x[i]
            run = 0.0
    return best, {"pocket_changes": changes, "num_ok": best_ok, "longest_run": best_run}


def posterior_weights(
    observed: np.ndarray, factors: Sequence[np.ndarray], theta: np.ndarray
) -> np.ndarray:
    """``W_l = sum_i pi_l(i) = T^_l [P (N~ / P^T T^)]_l`` over the joint cells (first
    variable slowest): every randomized record's posterior, summed."""
    pt = [np.asarray(f).T for f in factors]
    tt = kron_apply(pt, theta)
    r = np.divide(observed, tt, out=np.zeros_like(observed, dtype=float), where=tt > 0)
    return theta * kron_apply(list(factors), r)


def _cells(codes: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    return np.ravel_multi_index(tuple(codes.T), tuple(dims))


class PramPocketClassifier(ClassifierMixin, BaseEstimator):
    """The (weighted) Pocket algorithm, a linear classifier for randomized data.

    Parameters
    ----------
    weighted
        True: learn from the EM-estimated original distribution (the posterior weights,
        Ma Sec. 6.2); False: the plain pocket on the rows as given (the thesis's baseline).
    max_iter
        Samples drawn (perceptron steps).
    ratchet
        Replace the pocket only when the new weights also classify more correctly.
    random_state
        Seed or generator.

    Attributes
    ----------
    classes_ (two), coef_ (one weight per feature), intercept_, n_features_in_,
    theta_ (the EM estimate of the joint, weighted mode), fit_info_.

    ``fit(X, y, matrices=..., class_matrix=..., values=...)`` takes *randomized* codes with
    each feature's transition matrix ``P[i, j] = Pr(published j | true i)`` and the numeric
    value of each code (default: the code); without matrices X is used as numbers (Gallant's
    pocket).  ``classes_[1]`` is the positive side.  ``predict`` takes
    *original* records in the same form as ``fit``'s ``X``.
    """

    _parameter_constraints: dict = {  # noqa: RUF012 (scikit-learn's own convention)
        "weighted": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "ratchet": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        weighted: bool = True,
        max_iter: int = 20_000,
        ratchet: bool = True,
        random_state: Any = None,
    ) -> None:
        self.weighted = weighted
        self.max_iter = max_iter
        self.ratchet = ratchet
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # a hyperplane: two classes
        return tags

    def _features(self, X: np.ndarray) -> np.ndarray:
        if self.values_ is None:
            return np.asarray(X, dtype=float)
        cols = []
        for f, vals in enumerate(self.values_):
            col = X[:, f]
            if not np.all(np.equal(np.mod(col, 1), 0)) or col.min() < 0 or col.max() >= vals.size:
                raise ParameterError(f"feature {f} must hold codes 0..{vals.size - 1}")
            cols.append(vals[col.astype(np.int64)])
        return np.column_stack(cols)

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        matrices: Sequence[Any] | None = None,
        class_matrix: Any = None,
        values: Sequence[Any] | None = None,
    ) -> PramPocketClassifier:
        """Learn the hyperplane from (randomized) records."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype="numeric")
        check_classification_targets(y)
        classes, yc = np.unique(y, return_inverse=True)
        if classes.size != 2:
            raise ParameterError(
                "Only binary classification is supported. The pocket separates two classes; "
                f"y has {classes.size} class{'' if classes.size == 1 else 'es'}"
                + (": merge them first" if classes.size > 2 else "")
            )
        if class_matrix is not None:
            if not np.array_equal(classes, [0, 1]):
                raise ParameterError("with a class matrix, y must hold the class codes 0 and 1")
            if np.asarray(class_matrix).shape != (2, 2):
                raise MatrixError("the class matrix must be 2 x 2")
        self.classes_ = classes
        d = X.shape[1]
        if matrices is not None and len(matrices) != d:
            raise ParameterError(f"{len(matrices)} matrices for {d} features")
        if values is not None and len(values) != d:
            raise ParameterError(f"{len(values)} value lists for {d} features")
        coded = matrices is not None or values is not None
        if coded:
            sizes = [
                np.asarray(matrices[f]).shape[0] if matrices is not None else
                (len(values[f]) if values is not None else int(X[:, f].max()) + 1)
                for f in range(d)
            ]  # fmt: skip
            self.values_ = [
                np.arange(k, dtype=float) if values is None else np.asarray(values[f], float)
                for f, k in enumerate(sizes)
            ]
            for f, (v, k) in enumerate(zip(self.values_, sizes)):
                if v.size != k:
                    raise ParameterError(f"feature {f} has {v.size} values for {k} codes")
        else:
            self.values_ = None
        feats = self._features(X)
        signs = np.where(yc == 1, 1.0, -1.0)  # scikit-learn: positive means classes_[1]
        rng = as_generator(self.random_state)
        cell_rng = np.random.default_rng(rng.integers(2**63))  # the posterior draws' own
        info: dict[str, Any] = {}
        self.theta_ = None
        if self.weighted and coded:
            codes = X.astype(np.int64)
            mats = [np.eye(k) if matrices is None or matrices[f] is None else
                    np.asarray(matrices[f], dtype=float) for f, k in enumerate(sizes)]  # fmt: skip
            pc = np.eye(2) if class_matrix is None else np.asarray(class_matrix, dtype=float)
            for f, m in enumerate([*mats, pc]):
                if m.shape[0] != m.shape[1] or (m < 0).any() or not np.allclose(m.sum(1), 1):
                    raise MatrixError(f"matrix {f} is not a transition matrix (rows sum to 1)")
            dims = [*sizes, 2]
            obs = np.bincount(_cells(np.column_stack([codes, yc]), dims),
                              minlength=int(np.prod(dims))).astype(float)  # fmt: skip
            try:  # the moment start converges far faster; a singular matrix has none
                em = em_estimate(obs, [*mats, pc], init="moment", tol=EM_TOL, max_iter=EM_MAX)
            except MatrixError:
                em = em_estimate(obs, [*mats, pc], init="observed", tol=EM_TOL, max_iter=EM_MAX)
            theta = em.theta
            self.theta_ = theta
            W = posterior_weights(obs, [*mats, pc], theta)
            grid = np.stack(np.unravel_index(np.arange(theta.size), dims), axis=1)
            cell_feats = np.column_stack(
                [self.values_[f][grid[:, f]] for f in range(d)]
            ) if d else np.zeros((theta.size, 0))  # fmt: skip
            cell_signs = np.where(grid[:, -1] == 1, 1.0, -1.0)
            rec_cells = _cells(np.column_stack([codes, yc]), dims)
            all_mats = [*mats, pc]
            cache: dict[int, np.ndarray] = {}

            def posterior_cdf(k: int) -> np.ndarray:
                if k not in cache:
                    ks = np.unravel_index(k, dims)
                    col = np.ones(1)
                    for m, kk in zip(all_mats, ks):
                        col = np.kron(col, m[:, kk])  # P(l, k), first variable slowest
                    post = theta * col
                    total = post.sum()
                    post = post / total if total > 0 else np.full(post.size, 1 / post.size)
                    cdf = np.cumsum(post)
                    cdf[-1] = 1.0
                    if len(cache) < 4096:
                        cache[k] = cdf
                    return cdf
                return cache[k]

            n = len(rec_cells)

            def draw() -> tuple[int, float]:
                i = int(rng.integers(n))
                cdf = posterior_cdf(int(rec_cells[i]))
                return int(np.searchsorted(cdf, cell_rng.random(), side="right")), 1.0

            w, info = pocket(cell_feats, cell_signs, W, max_iter=self.max_iter, draw=draw,
                             ratchet=self.ratchet)  # fmt: skip
            info["em_iterations"] = em.iterations
            info["em_converged"] = em.converged
        else:
            # the rows as given; equal rows collapse to one sample weighing their count, so
            # that num_ok costs one pass over the distinct rows (the draws stay per record)
            rows, inverse, counts = np.unique(np.column_stack([feats, signs]), axis=0,
                                              return_inverse=True, return_counts=True)  # fmt: skip
            inverse = inverse.reshape(-1)
            n = len(signs)

            def draw() -> tuple[int, float]:
                return int(inverse[rng.integers(n)]), 1.0

            w, info = pocket(rows[:, :-1], rows[:, -1], counts.astype(float),
                             max_iter=self.max_iter, draw=draw, ratchet=self.ratchet)  # fmt: skip
        self.coef_, self.intercept_ = w[:-1], float(w[-1])
        self.fit_info_ = info
        self.n_iter_ = self.max_iter
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """``w . x + w0``: positive for the second class (``classes_[1]``)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype="numeric", reset=False)
        return self._features(X) @ self.coef_ + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        """The class of each *original* record."""
        d = self.decision_function(X)
        return self.classes_[(d > 0).astype(np.int64)]
