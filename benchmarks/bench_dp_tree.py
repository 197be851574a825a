"""Benchmark: fit DP trees on the 45,222 Adult rows at depth 5 and 10, beside scikit-learn's
(non-private) tree and diffprivlib's DP tree (target: privlab's fit no slower than either).

Run by hand: ``.venv/bin/python benchmarks/bench_dp_tree.py [runs]``.  diffprivlib's tree is
timed beside privlab's when the ``bench`` extra is installed (``pip install '.[bench]'``).

For every depth and epsilon the models are fitted in interleaved rounds (so that a busy
machine slows them alike; :func:`_timing.side_by_side`), each fit with a new seed, and the
median wall time of each is printed with its ratio to scikit-learn's tree and to diffprivlib's
tree measured in the same rounds.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from _timing import side_by_side
from privlab.experiments.dptree import adult_matrix, adult_models

DEPTHS = (5, 10)
EPSILONS = (0.1, 1.0, 10.0, float("inf"))
SKLEARN = "sklearn tree (non-DP)"
DIFFPRIVLIB = "diffprivlib-tree"


def _cases(
    X: np.ndarray, y: np.ndarray, eps: float, depth: int, meta: tuple
) -> dict[str, Callable[[], Any]]:
    """One fit per call of each model, with a new seed a call."""
    names = [n for n in adult_models(eps, 0, *meta) if n != "diffprivlib-forest"]
    if not np.isfinite(eps):
        names = [n for n in names if not n.startswith("diffprivlib")]  # no epsilon = inf there
    cases: dict[str, Callable[[], Any]] = {}
    for name in names:
        seeds = itertools.count()

        def fit(name: str = name, seeds: itertools.count = seeds) -> Any:
            model = adult_models(eps, next(seeds), *meta)[name]
            model.set_params(max_depth=depth)
            return model.fit(X, y)

        cases[name] = fit
    sk_seeds = itertools.count()
    cases[SKLEARN] = lambda: DecisionTreeClassifier(
        max_depth=depth, random_state=next(sk_seeds)
    ).fit(X, y)
    return cases


def main(runs: int = 7) -> None:
    X, y, cat, sizes, bounds = adult_matrix()
    meta = (cat, sizes, bounds)
    warnings.simplefilter("ignore")
    print(f"fit on Adult ({X.shape[0]} rows, {X.shape[1]} attributes): median wall ms of {runs} "
          "interleaved fits; ratio = privlab's fit / the peer's, same rounds")  # fmt: skip
    print(f"{'depth':>5} {'eps':>5}  {'model':<22}{'ms':>9}{'/ sklearn':>11}{'/ diffprivlib':>15}")
    for depth in DEPTHS:
        for eps in EPSILONS:
            cases = _cases(X, y, eps, depth, meta)
            for f in cases.values():  # warm-up: imports, compiled kernels
                f()
            wall, _, _ = side_by_side(cases, runs)
            sk, dpl = wall[SKLEARN], wall.get(DIFFPRIVLIB)
            for name, s in wall.items():
                r_sk = f"{s / sk:10.2f}x" if name != SKLEARN else " " * 11
                ok = dpl is not None and name not in (SKLEARN, DIFFPRIVLIB)
                r_dpl = f"{s / dpl:14.2f}x" if ok else ""
                print(f"{depth:>5} {eps:>5}  {name:<22}{s * 1000:9.1f}{r_sk}{r_dpl}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
