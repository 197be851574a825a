"""privlab's DP tree and forest beside a DP peer that learns: diffprivlib's LogisticRegression.

``privlab reproduce dptree-adult`` and ``dpforest-adult`` compare privlab's DP trees and
forests with diffprivlib's ``DecisionTreeClassifier`` and ``RandomForestClassifier``.  Those
are not learned from the data the way privlab's are: diffprivlib 0.6.6 draws every split
(feature and threshold) at random within the public bounds, without looking at the data
(Fletcher & Islam's random decision trees), and spends epsilon only on each leaf's label, so
on Adult they predict the majority class at every epsilon; "privlab beats diffprivlib" then
says nothing.  This script rows them too, on the same split, to show it, and compares with
a DP peer that does learn: diffprivlib's ``LogisticRegression`` (objective perturbation,
Chaudhuri, Monteleoni & Sarwate 2011, each row's L2 norm clipped to a public ``data_norm``).

Data: Adult train -> test (missing rows dropped), as ``dpforest-adult``: the 8 nominal
attributes coded over the domains documented in adult.names, the 6 numeric ones bounded by
``ADULT_PUBLIC_BOUNDS``.  Trees and forests get the codes (privlab: categorical features;
diffprivlib: ordinal codes with the public bounds); the logistic regression gets the nominal
attributes one-hot (one 1 per attribute) and the numeric ones scaled to [0, 1] by their
public bounds, so each row's L2 norm is at most sqrt(8 + 6) = ``data_norm`` (public, no
clipping happens).  Test accuracy (%), mean +- sd over ``--draws`` noise draws.

diffprivlib 0.6.6 (its latest release) does not run on scikit-learn >= 1.7 as released: its
trees import private aliases scikit-learn removed (restored by
``privlab.experiments.dptree.diffprivlib_models``), and its ``LogisticRegression`` passes
``multi_class='ovr'`` to scikit-learn's constructor, which scikit-learn 1.9 no longer takes; for the
binary task here the argument has no effect, and :func:`logistic_regression` drops it
(a subclass with diffprivlib's constructor less that argument).
Needs ``pip install diffprivlib==0.6.6 --no-deps`` (or ``'.[bench]'``).
Run by hand: ``python benchmarks/bench_dp_logreg.py [--draws 5]``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from privlab.experiments.dptree import (
    adult_documented_domains,
    adult_forest_data,
    diffprivlib_models,
)
from privlab.learn.dp_forest import DPRandomForestClassifier
from privlab.learn.dp_tree import DPDecisionTreeClassifier

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)


def logistic_regression():
    """diffprivlib's ``LogisticRegression`` made to construct on a scikit-learn (1.9) that
    no longer takes ``multi_class``, or None if diffprivlib is absent."""
    if diffprivlib_models() is None:
        return None
    import inspect

    import sklearn.linear_model as lm
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    if "multi_class" in inspect.signature(lm.LogisticRegression.__init__).parameters:
        return LogisticRegression

    class DPLogisticRegression(LogisticRegression):
        """diffprivlib 0.6.6's constructor without ``multi_class='ovr'`` (binary task)."""

        def __init__(self, *, epsilon=1.0, data_norm=None, tol=1e-4, C=1.0, fit_intercept=True,
                     max_iter=100, verbose=0, warm_start=False, n_jobs=None, random_state=None,
                     accountant=None):  # fmt: skip
            lm.LogisticRegression.__init__(
                self, tol=tol, C=C, fit_intercept=fit_intercept, random_state=random_state,
                solver="lbfgs", max_iter=max_iter, verbose=verbose, warm_start=warm_start,
                n_jobs=n_jobs,
            )  # fmt: skip
            self.epsilon = epsilon
            self.data_norm = data_norm
            self.classes_ = None
            self.accountant = BudgetAccountant.load_default(accountant)

    return DPLogisticRegression


def one_hot(X: np.ndarray, sizes: list[int], bounds: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Nominal codes one-hot, numeric columns scaled to [0, 1] by the public bounds."""
    cols = [(X[:, j : j + 1] == np.arange(s)[None, :]).astype(float) for j, s in enumerate(sizes)]
    lo, hi = bounds[0][len(sizes) :], bounds[1][len(sizes) :]
    cols.append(np.clip((X[:, len(sizes) :] - lo) / (hi - lo), 0.0, 1.0))
    return np.column_stack(cols)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning; sklearn's deprecations
    assert adult_documented_domains()
    Xtr, ytr, Xte, yte, sizes, bounds = adult_forest_data()
    meta = {"categorical_features": list(range(len(sizes))), "categories": sizes,
            "bounds": bounds, "classes": [0, 1]}  # fmt: skip
    LR = logistic_regression()
    peers = diffprivlib_models()
    htr, hte = one_hot(Xtr, sizes, bounds), one_hot(Xte, sizes, bounds)
    data_norm = math.sqrt(len(sizes) + (Xtr.shape[1] - len(sizes)))
    assert np.linalg.norm(htr, axis=1).max() <= data_norm + 1e-9

    def models(eps: float, seed: int) -> dict:
        out = {
            "privlab DP tree (max, depth 5)": (
                DPDecisionTreeClassifier(epsilon=eps, rng=seed, **meta), False),
            "privlab DP forest, 3 trees": (
                DPRandomForestClassifier(epsilon=eps, n_estimators=3, rng=seed + 1, **meta), False),
        }  # fmt: skip
        if peers is not None:
            kw = {"epsilon": eps, "bounds": bounds, "classes": [0, 1], "max_depth": 5}
            out["diffprivlib DecisionTreeClassifier (depth 5)"] = (
                peers[0](random_state=seed % 2**31, **kw), False)  # fmt: skip
            out["diffprivlib RandomForestClassifier (10 trees, depth 5)"] = (
                peers[1](n_estimators=10, random_state=seed % 2**31, **kw), False)  # fmt: skip
        if LR is not None:
            out["diffprivlib LogisticRegression (one-hot, data_norm sqrt(14))"] = (
                LR(epsilon=eps, data_norm=data_norm, random_state=seed % 2**31), True)  # fmt: skip
        return out

    acc: dict[tuple[str, float], list[float]] = {}
    t0 = time.perf_counter()
    for eps in EPSILONS:
        for d in range(args.draws):
            for name, (model, hot) in models(eps, 7919 * d + 17).items():
                model.fit(htr if hot else Xtr, ytr)
                pred = model.predict(hte if hot else Xte)
                acc.setdefault((name, eps), []).append(float(np.mean(pred == yte)))
    from sklearn.linear_model import LogisticRegression as Plain
    from sklearn.tree import DecisionTreeClassifier

    ref_tree = DecisionTreeClassifier(max_depth=5, random_state=0).fit(Xtr, ytr)
    ref_lr = Plain(max_iter=1000).fit(htr, ytr)
    majority = max(np.mean(yte), 1 - np.mean(yte))
    print(f"Adult train {len(ytr)} -> test {len(yte)} rows; {args.draws} noise draws per cell; "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
    if LR is None:
        print("diffprivlib is not installed (pip install diffprivlib==0.6.6 --no-deps): no peers")
    names = list(dict.fromkeys(name for name, _ in acc))
    print("| model | " + " | ".join(f"epsilon = {e:g}" for e in EPSILONS) + " |")
    print("|---|" + "---|" * len(EPSILONS))
    for name in names:
        cells = []
        for eps in EPSILONS:
            v = 100 * np.array(acc[(name, eps)])
            cells.append(f"{v.mean():.2f} +- {v.std(ddof=1):.2f}" if v.size > 1 else f"{v[0]:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"Majority class {100 * majority:.2f}; non-private scikit-learn tree of depth 5 "
          f"{100 * np.mean(ref_tree.predict(Xte) == yte):.2f}, logistic regression (same "
          f"one-hot) {100 * np.mean(ref_lr.predict(hte) == yte):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
