"""A linear classifier learned from PRAM-randomized data: the weighted Pocket (Ma 2006, Ch. 6).

Ma's setting (Sec. 6.1): the records ``(M_1, ..., M_n, C)`` -- discretized (MGAS) numeric
attributes replaced by their interval means, and a class -- are randomized column by column
with PRAM matrices ``P^1, ..., P^n, P^C`` (``P^C = I`` when the class is released
unchanged), and the miner learns a hyperplane ``g(x) = w^T x + w_0`` that should classify
the *original* records.

* **Objective (Sec. 4.2, Sec. 6.2).**  The expected perceptron cost given the randomized
  data, ``sum_i sum_l delta_l(w) w^T s_l Pr(V = v_l | V~ = v~_i)`` over the ``L`` cells
  ``v_l`` of ``V = (M_1, .., M_n, C)``, where ``s_l`` is the feature part of ``v_l`` (Ma
  writes ``w^T v_l``, which would put the class into the scalar product [!]).
* **Posterior (Sec. 4.2).**  ``pi_l(k) = Pr(V = v_l | V~ = v_k) = T^_l P(l, k) / sum_m
  T^_m P(m, k)`` with ``P = P^1 (x) ... (x) P^n (x) P^C`` and ``T^`` the **EM-MLE** of the
  joint counts (Sec. 2.4.2; :func:`privlab.estimate.pram_em.em_certified`).  Ma allows the
  moment estimate ``P^-1 T~`` (which should read ``(P^T)^-1 T~`` [!]); privlab uses EM
  only, because the moment estimate has negative cells and a negative "probability" is
  not a weight (notes Sec. 6.2 [D]); EM also works at a singular ``P`` (``p = 0.5``
  binary).  Sec. 4.2's displayed formula misplaces the ``sum_m`` [!]; the line above is the
  correct Bayes rule.
* **Weighted samples (Sec. 6.2).**  Every record ``i`` becomes ``L`` samples
  ``(v_l, pi_l(v~_i))``.  Records with the same randomized cell have the same posterior,
  so privlab keeps one *sample group* per (randomized cell ``k``, original cell ``l``) with
  ``N~_k`` members of weight ``pi_l(k)`` each, and drops the groups of weight 0.  The cell
  weights ``W_l = sum_k N~_k pi_l(k)`` equal ``T^_l`` at the EM fixed point (notes Sec. 4.2
  [D]; checked in the tests).  Columns released unchanged are not enumerated: records
  are stratified by their values (``P = I`` there, so the joint EM separates by stratum)
  and only the randomized columns' cells are spanned inside a stratum.
* **Pocket with ratchet (Gallant 1990; Ma Sec. 6.2).**  Starting at ``w = 0``, ``n_iter``
  samples are drawn (with replacement) with probability proportional to their weight
  ``pi`` (equivalently: a sample group with probability ``N~_k pi_l(k) / N``).  A mistake
  (``y w^T x <= 0``, ``x`` augmented with a 1) updates ``w <- w + y x`` and resets the run;
  a correct classification adds the sample's weight ``pi`` to ``run_w`` (Ma: "instead of
  1").  When ``run_w`` exceeds the pocket's run, ``num_ok_w = sum_l W_l [l classified
  correctly]`` is computed and the pocket is replaced only if it is larger too (the
  ratchet; ``ratchet=False`` replaces on the run alone, Gallant's plain pocket).  The loop
  stops early once the pocket classifies every weighted cell correctly.
* **Plain pocket (baseline, Sec. 6.3).**  ``weighted=False``: the same algorithm on the
  randomized rows as if they were original (``pi = 1`` for the observed cell).  At ``p =
  0`` the weighted pocket builds exactly these samples in the same order, so with the same
  ``rng`` both return the same weights (tested).

Choices the thesis leaves open (notes Sec. 6.2 [!]):

* the update is not scaled by ``pi``: the sampling in proportion to ``pi`` already makes
  the expected update the gradient of the weighted cost, and scaling twice would count the
  weight twice;
* the learning rate is 1; from ``w = 0`` the perceptron is invariant to it (every ``w`` is
  scaled by the same factor), so there is no parameter;
* ``w^T x = 0`` counts as a mistake for both classes (Gallant's strict rule).  Ma's
  ``delta`` counts it as correct, under which ``w = 0`` is a trivial minimizer of ``J``;
* ``n_iter`` (default 20,000) and the ratchet (on by default) are parameters;
* the EM-MLE ``T^`` is computed until it is proven converged: started at the clipped
  moment estimate (``N~ / N`` when a matrix is singular), solved by
  :func:`privlab.estimate.pram_em.em_certified` (an interior-point method, then
  SQUAREM-accelerated EM) until the duality gap, a bound on the log-likelihood still to
  gain, is at most :data:`EM_GAP_TOL` nats, within :data:`EM_MAX_STEPS` steps.  Plain EM
  stopped by its step size at 5,000 steps (privlab <= 0.1) left Lenses at ``p = 0.4`` up to
  230 records and 0.43 nats from the maximum without a word (issue 31, item 3): the MLE
  lies on the boundary (empty cells), where EM converges sublinearly.  A fit whose EM is
  not certified says so: a :class:`~privlab.errors.ConvergenceWarning`, and
  ``em_converged_`` / ``em_gap_`` / ``em_iterations_`` (the weights are then the exact
  Bayes posteriors under the last iterate);
* more than two classes: one pocket per class against the rest, predicting the class of
  the largest ``w_c^T x`` (Ma Sec. 6.2 only says multi-class problems "reduce to binary
  ones").  With two classes there is one pocket and ``classes_[1]`` is the positive side.

scikit-learn: :class:`PramPocketClassifier` passes every ``check_estimator`` check, seeded
(``random_state=0``; sklearn 1.9: 54 passed, ``check_array_api_input`` skipped) or not (then
tagged non-deterministic; the checks that compare two fits seed ``random_state``).  ``fit``
takes a PRAM release (with ``target``) or a numeric array ``X`` with labels ``y`` and the fit
parameter ``matrices``; ``predict`` takes numeric original records (:meth:`encode` maps a table
of original records of a release to those numbers).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from privlab._io import json_ready
from privlab._rng import as_generator
from privlab.data.schema import py_scalar
from privlab.data.table import Table
from privlab.errors import ConvergenceWarning, MatrixError, ParameterError, SchemaError
from privlab.estimate.pram import Identity, kron_matrix, release_plan
from privlab.estimate.pram_em import em_certified
from privlab.learn._sklearn import (
    RANDOM_STATE_CONSTRAINT,
    REFIT_CHECKS,
    FreshRandomnessTags,
    Interval,
    InvalidParameter,
    encode_nominal,
    fresh_randomness_checks,
    is_tabular,
    nominal_table,
    per_feature,
    random_source,
    validate_params,
    validate_table,
)
from privlab.learn._sklearn import _feature_label as feature_label
from privlab.learn.pram_bn import PramData

#: Largest number of cells of the randomized columns (the explicit ``P`` is this squared).
MAX_RANDOMIZED_CELLS = 4096
#: Largest number of (randomized cell, original cell) sample groups.
MAX_SAMPLE_GROUPS = 5_000_000
#: EM stops when the log-likelihood can gain at most this many nats (its duality gap).
EM_GAP_TOL = 1e-6
#: ... or after this many steps, unconverged (the posterior weights are then exact Bayes
#: posteriors under the last iterate; ``converged`` says so and the fit warns).
EM_MAX_STEPS = 200_000


#: Kept for callers of the old private name: the learners' one parameter error.
_InvalidParameter = InvalidParameter


# -- the weighted samples ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class WeightedSamples:
    """The sample groups the pocket draws from, and the distinct cells they belong to.

    ``codes[c]`` are cell ``c``'s codes over ``columns`` (features then target);
    ``cell_weight[c] = W_c``; group ``g`` is cell ``group_cell[g]`` drawn from
    ``group_count[g]`` records each of weight ``group_pi[g]`` (its selection weight is
    ``group_count * group_pi``).  ``joint`` is ``T^`` over the cells (EM; None for plain), with EM's
    steps, whether its duality gap met :data:`EM_GAP_TOL` within :data:`EM_MAX_STEPS`, the
    gap itself (nats the log-likelihood can still gain at most) and the log-likelihood
    ``sum_k N~_k log (P^T T^ / N)_k`` (0 and nan for the plain pocket, which runs no EM).
    """

    columns: tuple[str, ...]
    codes: np.ndarray
    cell_weight: np.ndarray
    group_cell: np.ndarray
    group_count: np.ndarray
    group_pi: np.ndarray
    joint: np.ndarray | None
    em_iterations: int
    em_converged: bool
    em_gap: float = float("nan")
    em_loglik: float = float("nan")

    @property
    def selection(self) -> np.ndarray:
        return self.group_count * self.group_pi


def _strata(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows (sorted) and each row's stratum index."""
    if codes.shape[1] == 0:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(codes.shape[0], dtype=np.int64)
    uniq, inv = np.unique(codes, axis=0, return_inverse=True)
    return uniq, inv.ravel()


def weighted_samples(
    data: Any, columns: Sequence[str], *, weighted: bool = True
) -> WeightedSamples:
    """Sample groups for the (weighted) pocket from a PRAM release (Ma Sec. 6.2).

    ``columns`` are the features and, last, the class.  ``weighted=False`` gives the plain
    pocket's groups: each observed cell once, weight 1 per record.
    """
    data = PramData.from_release(data)
    columns = list(columns)
    plan = release_plan(data, columns)  # the rest of a block that does not reduce: summed out
    factors, order, cols = plan.factors, plan.order, [*columns, *plan.extra]
    schema = data.table.schema
    rand_f, rand_c, id_c = [], [], []
    pos = 0
    for f in factors:
        width = 1
        if not isinstance(f, Identity):
            block = data.block_of(order[pos])
            width = len([c for c in block.columns if c in cols])  # type: ignore[union-attr]
            rand_f.append(np.asarray(f, dtype=float))
            rand_c.extend(order[pos : pos + width])
        else:
            id_c.append(order[pos])
        pos += width
    sizes_r = [schema[c].size for c in rand_c]
    n_r = int(np.prod(sizes_r, dtype=np.int64))
    if n_r > MAX_RANDOMIZED_CELLS:
        raise ParameterError(
            f"the randomized columns {', '.join(rand_c)} span {n_r} cells, more than "
            f"{MAX_RANDOMIZED_CELLS}: discretize them more coarsely"
        )
    strata, s_of = _strata(data.table.columns(id_c) if id_c else np.zeros((data.n_rows, 0)))
    n_s = strata.shape[0]
    k_of = (
        np.ravel_multi_index(tuple(data.table.columns(rand_c).T), sizes_r)
        if rand_c
        else np.zeros(data.n_rows, dtype=np.int64)
    )
    obs = np.bincount(s_of * n_r + k_of, minlength=n_s * n_r).astype(float)
    obs2 = obs.reshape(n_s, n_r)
    joint = None
    iterations, converged, gap, loglik = 0, True, float("nan"), float("nan")
    if weighted and rand_f and data.n_rows:
        p = kron_matrix(rand_f)
        # the class (and any column released unchanged) as strata, the randomized columns'
        # factors; the moment start, or N~ / N when P is singular
        res = em_certified(
            obs, [Identity(n_s), *rand_f], gap_tol=EM_GAP_TOL, max_steps=EM_MAX_STEPS,
            init="moment",
        )  # fmt: skip
        joint = res.counts.reshape(n_s, n_r)
        iterations, converged, gap, loglik = res.iterations, res.converged, res.gap, res.loglik
        cells, g_cell, g_count, g_pi = [], [], [], []
        for s in range(n_s):
            ks = np.flatnonzero(obs2[s])
            if ks.size == 0:
                continue
            num = joint[s][:, None] * p[:, ks]  # (n_r, |ks|): T^_l P(l, k)
            den = num.sum(axis=0)
            post = np.divide(num, den, out=np.zeros_like(num), where=den > 0).T  # (k, l)
            kk, ll = np.nonzero(post)
            g_cell.append(s * n_r + ll)
            g_count.append(obs2[s][ks[kk]])
            g_pi.append(post[kk, ll])
            cells.append(s * n_r + ll)
            if sum(a.size for a in g_cell) > MAX_SAMPLE_GROUPS:
                raise ParameterError(
                    f"more than {MAX_SAMPLE_GROUPS} weighted sample groups: discretize the "
                    "randomized columns more coarsely"
                )
        flat = np.concatenate(g_cell) if g_cell else np.zeros(0, dtype=np.int64)
        count = np.concatenate(g_count) if g_count else np.zeros(0)
        pi = np.concatenate(g_pi) if g_pi else np.zeros(0)
    else:
        flat = np.flatnonzero(obs)
        count = obs[flat]
        pi = np.ones(flat.size)
    uniq, group_cell = np.unique(flat, return_inverse=True)
    cell_weight = np.bincount(group_cell, weights=count * pi, minlength=uniq.size)
    s_idx, l_idx = np.divmod(uniq, n_r)
    codes = np.empty((uniq.size, len(cols)), dtype=np.int64)
    for j, c in enumerate(id_c):
        codes[:, cols.index(c)] = strata[s_idx, j]
    if rand_c:
        r_codes = np.unravel_index(l_idx, sizes_r)
        for j, c in enumerate(rand_c):
            codes[:, cols.index(c)] = r_codes[j]
    joint_cells = None if joint is None else joint.ravel()[uniq]
    if plan.extra:  # the cells over ``columns`` only: the extra columns summed out
        codes, back = np.unique(codes[:, : len(columns)], axis=0, return_inverse=True)
        back = back.ravel()
        group_cell = back[group_cell.ravel()]
        cell_weight = np.bincount(back, weights=cell_weight, minlength=codes.shape[0])
        if joint_cells is not None:
            joint_cells = np.bincount(back, weights=joint_cells, minlength=codes.shape[0])
    return WeightedSamples(
        columns=tuple(columns),
        codes=codes,
        cell_weight=cell_weight,
        group_cell=group_cell.ravel(),
        group_count=count,
        group_pi=pi,
        joint=joint_cells,
        em_iterations=iterations,
        em_converged=converged,
        em_gap=gap,
        em_loglik=loglik,
    )


# -- the pocket algorithm ------------------------------------------------------------------------
@dataclass(frozen=True)
class PocketResult:
    """Pocket weights (augmented: the last entry is the bias), its weighted accuracy on the
    training cells, the longest run and the number of iterations run."""

    weights: np.ndarray
    num_ok: float
    total: float
    run: float
    iterations: int


def pocket(
    x: np.ndarray,
    y: np.ndarray,
    cell_weight: np.ndarray,
    group_cell: np.ndarray,
    selection: np.ndarray,
    increment: np.ndarray,
    *,
    n_iter: int,
    ratchet: bool = True,
    rng: Any = None,
) -> PocketResult:
    """Gallant's (1990) pocket algorithm with ratchet on weighted sample groups (Ma Sec. 6.2).

    Parameters
    ----------
    x
        ``(cells, d + 1)`` augmented features (last column 1).
    y
        ``(cells,)`` labels in ``{-1, +1}``.
    cell_weight
        ``W_c``: ``num_ok_w`` sums them over correctly classified cells.
    group_cell, selection, increment
        Per sample group: its cell, its selection weight (draws are proportional to it) and
        what a correct classification adds to ``run_w`` (``pi``; 1 for the plain pocket).
    n_iter, ratchet, rng
        Draws, whether the ratchet check guards the pocket, seed or generator.
    """
    gen = as_generator(rng)
    d = x.shape[1]
    total = float(cell_weight.sum())
    w = np.zeros(d)
    best = w.copy()
    if total <= 0 or selection.sum() <= 0:
        return PocketResult(best, 0.0, total, 0.0, 0)
    prob = selection / selection.sum()
    draws = gen.choice(prob.size, size=int(n_iter), p=prob)
    cells = group_cell[draws].tolist()
    incs = increment[draws].tolist()
    xl = x.tolist()
    yl = y.tolist()
    wl = [0.0] * d
    run = best_run = 0.0
    best_ok = 0.0  # w = 0 classifies nothing correctly (strict rule)
    it = 0
    for it, (c, inc) in enumerate(zip(cells, incs), start=1):  # noqa: B007
        xc, yc = xl[c], yl[c]
        s = 0.0
        for a, b in zip(wl, xc):
            s += a * b
        if yc * s > 0:
            run += inc
            if run > best_run:
                wa = np.asarray(wl)
                ok = float(cell_weight[(y * (x @ wa)) > 0].sum()) if ratchet else 0.0
                if not ratchet or ok > best_ok:
                    best, best_run = wa, run
                    if ratchet:
                        best_ok = ok
                        if ok >= total:
                            break
        else:
            wl = [a + yc * b for a, b in zip(wl, xc)]
            run = 0.0
    if not ratchet:
        best_ok = float(cell_weight[(y * (x @ best)) > 0].sum())
    return PocketResult(np.asarray(best, dtype=float), best_ok, total, best_run, it)


# -- scikit-learn estimator ----------------------------------------------------------------------
#: The ``check_estimator`` checks that fit twice (or on two encodings of the same data) and
#: demand identical results: unseeded, every fit draws fresh samples, and they pass because
#: they seed ``random_state`` themselves.  ``check_classifier_data_not_an_array`` passes by
#: chance with sklearn 1.9's data (every draw finds the same separator) and is listed for
#: safety.
_FRESH_DRAW = "the pocket draws fresh samples on every fit without a seed"
FRESH_DRAW_CHECKS = dict.fromkeys(REFIT_CHECKS, _FRESH_DRAW)


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """``check_estimator``'s checks ``estimator`` cannot pass, with the reason: none, seeded or
    not (:data:`FRESH_DRAW_CHECKS` seed ``random_state``)::

        check_estimator(est, expected_failed_checks=expected_failed_checks(est))
    """
    return fresh_randomness_checks(estimator, _FRESH_DRAW)


def _feature_values(schema: Any, column: str, values: Mapping[str, Any] | None) -> np.ndarray:
    """Numeric value of each code of ``column``: ``values[column]``, else the domain values if
    they are all numbers, else the codes ``0..K-1``."""
    given = None if values is None else values.get(column)
    return _numbers(schema[column].domain, given, f"values[{column!r}]")


def _numbers(domain: Sequence[Any], given: Any, what: str) -> np.ndarray:
    """The number the hyperplane sees for each value of ``domain``: ``given`` (one finite
    number per value), else the values themselves when all are finite numbers, else the codes
    ``0..K-1``."""
    k = len(domain)
    if given is not None:
        v = np.asarray(given, dtype=float)
        if v.shape != (k,) or not np.all(np.isfinite(v)):
            raise ParameterError(
                f"{what} must be {k} finite numbers, one per domain value; got {v!r}"
            )
        return v
    try:
        v = np.asarray([float(d) for d in domain])
    except (TypeError, ValueError):
        return np.arange(k, dtype=float)
    return v if np.all(np.isfinite(v)) else np.arange(k, dtype=float)


@dataclass(kw_only=True, eq=False, repr=False)
class PramPocketClassifier(FreshRandomnessTags, ClassifierMixin, BaseEstimator):
    """Weighted (or plain) Pocket classifier learned from PRAM data (Ma 2006, Ch. 6).

    Parameters
    ----------
    weighted
        True: the weighted pocket on the EM posterior samples (Sec. 6.2); False: the plain
        pocket on the randomized rows (the thesis's baseline).
    n_iter
        Samples drawn by the pocket (Gallant's iterations).
    ratchet
        Replace the pocket only when its weighted number of correct cells grows too.
    target
        The class column when fitting on a release (ignored for arrays).
    features
        The feature columns of a release (default: every other column).
    values
        ``{column: [number per domain value]}``: the numbers the hyperplane sees for a
        release's or a table's columns (MGAS interval means, say); default the domain values
        when they are numbers, else the codes ``0..K-1``.
    categories
        A table (a DataFrame): ``{column: values}``, each column's public domain in the
        order its matrix indexes (default: the sorted values the column holds).  An array:
        per feature, the public sorted numbers its matrix indexes (default: the values in
        ``X``, which must then number as many as the matrix's rows).
    rng
        Seed or generator for the draws (None: fresh entropy).
    random_state
        scikit-learn's name for ``rng`` (the same meaning; give one of the two).

    Attributes
    ----------
    classes_, n_features_in_, coef_ (``(1, d)`` for two classes, ``(K, d)`` otherwise),
    intercept_, features_ (the release's feature columns, or None), values_ (per feature,
    the numbers of its codes), samples_ (:class:`WeightedSamples`), pockets_
    (:class:`PocketResult` per pocket), train_accuracy_ (weighted accuracy on the samples),
    em_converged_, em_iterations_, em_gap_ (the EM of ``T^``: whether its duality gap met
    :data:`EM_GAP_TOL`, its steps, the gap in nats; True, 0 and nan for the plain pocket,
    which runs no EM; a :class:`~privlab.errors.ConvergenceWarning` when not converged).
    """

    _parameter_constraints: ClassVar[dict] = {
        "weighted": ["boolean"],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "ratchet": ["boolean"],
        "target": [None, str],
        "features": [None, list, tuple],
        "values": [None, dict],
        "categories": [None, dict, list, tuple],
        "rng": RANDOM_STATE_CONSTRAINT,
        "random_state": RANDOM_STATE_CONSTRAINT,
    }  # fmt: skip

    # scikit-learn's parameters: the dataclass writes the __init__ that stores them
    weighted: bool = True
    n_iter: int = 20_000
    ratchet: bool = True
    target: str | None = None
    features: Sequence[str] | None = None
    values: Mapping[str, Sequence[float]] | None = None
    categories: Sequence[Sequence[float]] | None = None
    rng: int | np.random.Generator | None = None
    random_state: int | np.random.Generator | None = None

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, matrices: Mapping[Any, Any] | None = None):
        """Learn from a PRAM release (``X``; ``target`` names the class), from a table ``X``
        (a DataFrame of strings or numbers, domains in ``categories``) or from a numeric
        array ``X``, with labels ``y`` and ``matrices`` ``{feature: P}``,
        ``{(f, g): P_joint}`` or ``{"y": P_C}`` (a feature by its index, or a table's by
        its column name; matrices index the domains' order, ``P_C`` the sorted classes)."""
        validate_params(self)
        random_source(self)  # rng and random_state: one of them
        if isinstance(X, PramData) or (hasattr(X, "blocks") and hasattr(X, "table")):
            if y is not None or matrices is not None:
                raise ParameterError("a release carries its class and matrices: pass no y")
            return self._fit_release(PramData.from_release(X))
        return self._fit_arrays(X, y, matrices)

    def _fit_release(self, data: PramData) -> PramPocketClassifier:
        if self.target is None:
            raise ParameterError("fitting on a release needs target=COLUMN (the class)")
        schema = data.table.schema
        schema.require([self.target], purpose="as the class")
        feats = (
            [c for c in data.names if c != self.target]
            if self.features is None
            else schema.require(list(self.features), purpose="as features")
        )
        if self.target in feats:
            raise ParameterError(f"the class {self.target!r} cannot also be a feature")
        if not feats:
            raise ParameterError("no feature columns")
        if self.values is not None:
            unknown = [c for c in self.values if c not in feats]
            if unknown:
                raise SchemaError(f"values given for {unknown[0]!r}, which is not a feature")
        self.features_ = tuple(feats)
        self.tabular_ = False
        self.values_ = tuple(_feature_values(schema, c, self.values) for c in feats)
        self.domains_ = tuple(tuple(schema[c].domain) for c in feats)
        self.classes_ = np.asarray(schema[self.target].domain)
        self.n_features_in_ = len(feats)
        return self._fit_data(data, [*feats, self.target])

    def _fit_arrays(self, X: Any, y: Any, matrices: Mapping[Any, Any] | None):
        if y is None:
            raise ParameterError(
                "this estimator requires y to be passed, but the target y is None (fitting "
                "on an array needs the labels y)"
            )
        keys = [k for key in (matrices or {}) for k in (key if isinstance(key, tuple) else (key,))]
        tabular = (
            isinstance(self.categories, Mapping)
            or is_tabular(X, None, None)
            or any(isinstance(k, str) and k != "y" for k in keys)
        )
        if tabular:
            X, y = validate_table(self, X, y, reset=True)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, yc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ParameterError(
                f"the labels hold only one class ({classes[0]!r}); a classifier needs two"
            )
        d = X.shape[1]
        columns = getattr(self, "feature_names_in_", None)
        if tabular:
            domains, codes = nominal_table(X, self.categories, columns)
            given = per_feature(self.values, "values", d, columns)
            cats = [_numbers(dom, v, feature_label(j, columns))
                    for j, (dom, v) in enumerate(zip(domains, given))]  # fmt: skip
            self.domains_ = tuple(tuple(py_scalar(v) for v in dom) for dom in domains)
        else:
            cats, codes = self._array_codes(X)
        self.tabular_ = tabular
        names = [f"x{j}" for j in range(d)]
        mats: dict[Any, Any] = {}
        for key, m in (matrices or {}).items():
            keys = key if isinstance(key, tuple) else (key,)
            cols = []
            for k in keys:
                if isinstance(k, str) and k == "y":
                    cols.append("y")
                elif isinstance(k, Integral) and 0 <= int(k) < d:
                    cols.append(names[int(k)])
                elif tabular and isinstance(k, str) and columns is not None and k in columns:
                    cols.append(names[list(columns).index(k)])
                else:
                    what = "a column of X" if tabular else f"a feature index 0..{d - 1}"
                    raise ParameterError(f"matrix key {k!r} is neither {what} nor 'y'")
            mats[cols[0] if len(cols) == 1 else tuple(cols)] = m
        sizes = [c.size for c in cats] + [classes.size]
        shown = dict(zip(names, names if columns is None else [str(c) for c in columns]))
        for key, m in mats.items():
            cols = (key,) if isinstance(key, str) else key
            need = int(np.prod([sizes[[*names, "y"].index(c)] for c in cols]))
            if np.asarray(m).shape != (need, need):
                raise MatrixError(
                    f"the matrix of {'+'.join(shown.get(c, c) for c in cols)} is "
                    f"{np.asarray(m).shape} but the "
                    f"categories give {need} values (pass categories= to fix the domain)"
                )
        data = PramData.from_codes(
            np.column_stack([codes, yc]), mats, names=[*names, "y"], sizes=sizes
        )
        self.features_ = None
        self.values_ = tuple(cats)
        self.classes_ = classes
        return self._fit_data(data, [*names, "y"])

    def _array_codes(self, X: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """An array's features: each one's sorted numeric categories (``categories``, else
        the values it holds) and its codes into them."""
        d = X.shape[1]
        if self.categories is not None and len(self.categories) != d:
            raise ParameterError(f"categories has {len(self.categories)} entries for {d} features")
        cats, codes = [], np.empty(X.shape, dtype=np.int64)
        for j in range(d):
            if self.categories is None:
                cj = np.unique(X[:, j])
            else:
                cj = np.asarray(self.categories[j], dtype=float)
                if cj.ndim != 1 or np.any(np.diff(cj) <= 0):
                    raise ParameterError(f"categories[{j}] must be strictly increasing numbers")
            idx = np.clip(np.searchsorted(cj, X[:, j]), 0, cj.size - 1)
            bad = cj[idx] != X[:, j]
            if np.any(bad):
                raise ParameterError(
                    f"feature {j} holds {X[bad, j][0]!r}, which is not in categories[{j}]"
                )
            cats.append(cj)
            codes[:, j] = idx
        return cats, codes

    def _fit_data(self, data: PramData, columns: list[str]) -> PramPocketClassifier:
        samples = weighted_samples(data, columns, weighted=self.weighted)
        self.em_converged_ = bool(samples.em_converged)
        self.em_iterations_ = int(samples.em_iterations)
        self.em_gap_ = float(samples.em_gap)
        if not samples.em_converged:
            warnings.warn(
                f"the weighted pocket's EM has NOT converged after {samples.em_iterations} "
                f"steps: the log-likelihood can still gain up to {samples.em_gap:.3g} nats "
                f"(needed: {EM_GAP_TOL:g}), so the posterior weights come from an unconverged "
                "joint estimate",
                ConvergenceWarning,
                stacklevel=3,
            )
        d = len(columns) - 1
        x = np.empty((samples.codes.shape[0], d + 1))
        for j in range(d):
            x[:, j] = self.values_[j][samples.codes[:, j]]
        x[:, d] = 1.0
        cls = samples.codes[:, d]
        gen = as_generator(random_source(self))
        k = len(self.classes_)
        positives = [1] if k == 2 else list(range(k))
        pockets = []
        for c in positives:
            yy = np.where(cls == c, 1.0, -1.0)
            pockets.append(
                pocket(
                    x,
                    yy,
                    samples.cell_weight,
                    samples.group_cell,
                    samples.selection,
                    samples.group_pi,
                    n_iter=int(self.n_iter),
                    ratchet=bool(self.ratchet),
                    rng=gen,
                )
            )
        w = np.vstack([p.weights for p in pockets])
        self.coef_ = w[:, :d]
        self.intercept_ = w[:, d]
        self.samples_ = samples
        self.pockets_ = tuple(pockets)
        pred = self._predict_codes(x[:, :d])
        self.train_accuracy_ = (
            float(samples.cell_weight[pred == cls].sum() / samples.cell_weight.sum())
            if samples.cell_weight.sum() > 0
            else float("nan")
        )
        return self

    # -- predict ------------------------------------------------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """``w^T x + w_0`` per record (one column per pocket; 1-d for two classes)."""
        check_is_fitted(self, "coef_")
        s = self._x(X) @ self.coef_.T + self.intercept_
        return s[:, 0] if s.shape[1] == 1 else s

    def _x(self, X: Any) -> np.ndarray:
        """The numbers of records to classify: a table's values through their domains (a
        value outside one raises :class:`~privlab.errors.SchemaError`), an array's own."""
        if not getattr(self, "tabular_", False):
            return validate_data(self, X, dtype=np.float64, reset=False)
        X = validate_table(self, X, reset=False)
        names = getattr(self, "feature_names_in_", None)
        domains = [np.asarray(d, dtype=object) for d in self.domains_]
        codes = encode_nominal(X, domains, names, unseen="raise")
        return np.column_stack([v[codes[:, j]] for j, v in enumerate(self.values_)])

    def _predict_codes(self, X: np.ndarray) -> np.ndarray:
        s = X @ self.coef_.T + self.intercept_
        if s.shape[1] == 1:
            return (s[:, 0] > 0).astype(np.int64)
        return np.argmax(s, axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """The class of each (original, numeric) record: ``classes_[1]`` where ``w^T x > 0``
        for two classes, else the class of the largest score."""
        check_is_fitted(self, "coef_")
        return self.classes_[self._predict_codes(self._x(X))]

    def encode(self, records: Any) -> np.ndarray:
        """Numbers of a table of original records (columns ``features_``) for :meth:`predict`.

        ``records`` is a privlab ``Table`` or anything :func:`privlab.data.table.as_table`
        reads, with the release's domains; only for a model fitted on a release.
        """
        check_is_fitted(self, "coef_")
        if self.features_ is None:
            raise ParameterError("encode() is for models fitted on a release; pass numbers")
        from privlab.data.frames import as_table

        t = records if isinstance(records, Table) else as_table(records)
        t.schema.require(list(self.features_), purpose="to classify")
        out = np.empty((t.n_rows, len(self.features_)))
        for j, c in enumerate(self.features_):
            where = {str(v): i for i, v in enumerate(self.domains_[j])}
            lookup = []
            for v in t.schema[c].domain:
                if str(v) not in where:
                    raise SchemaError(f"column {c!r} holds {v!r}, which is not in the release")
                lookup.append(where[str(v)])
            out[:, j] = self.values_[j][np.asarray(lookup, dtype=np.int64)[t.columns([c])[:, 0]]]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The learned weights and how they were learned (JSON-ready)."""
        check_is_fitted(self, "coef_")
        names = list(self.features_) if self.features_ is not None else [
            f"x{j}" for j in range(self.n_features_in_)
        ]  # fmt: skip
        pockets = []
        k = len(self.classes_)
        for i, p in enumerate(self.pockets_):
            pos = self.classes_[1] if k == 2 else self.classes_[i]
            pockets.append(
                {
                    "positive_class": json_ready(pos),
                    "weights": {n: float(v) for n, v in zip(names, self.coef_[i])},
                    "bias": float(self.intercept_[i]),
                    "weighted_training_accuracy": p.num_ok / p.total if p.total else None,
                    "iterations": p.iterations,
                }
            )
        return {
            "model": "pram-pocket",
            "weighted": bool(self.weighted),
            "ratchet": bool(self.ratchet),
            "n_iter": int(self.n_iter),
            "target": self.target if self.features_ is not None else None,
            "features": names,
            "values": {n: [float(v) for v in vals] for n, vals in zip(names, self.values_)},
            "classes": [json_ready(c) for c in self.classes_],
            "pockets": pockets,
            "em_iterations": self.samples_.em_iterations,
            "em_converged": bool(self.samples_.em_converged),
            "em_gap": None if np.isnan(self.samples_.em_gap) else float(self.samples_.em_gap),
        }
