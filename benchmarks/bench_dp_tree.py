"""Benchmark: fit depth-5 DP trees on the 45,222 Adult rows (target: < 1 s per fit).

Run by hand: ``.venv/bin/python benchmarks/bench_dp_tree.py``.  diffprivlib's models are
timed beside privlab's when the ``bench`` extra is installed (``pip install '.[bench]'``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from privlab.experiments.dptree import adult_matrix, adult_models


def _median_seconds(make, X, y, repeats: int) -> float:
    times = []
    for r in range(repeats):
        model = make(r)
        t0 = time.perf_counter()
        model.fit(X, y)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(repeats: int = 5) -> None:
    X, y, cat, sizes, bounds = adult_matrix()
    print(f"fit on Adult ({X.shape[0]} rows, {X.shape[1]} attributes), depth 5, "
          f"median of {repeats} fits")  # fmt: skip
    warnings.simplefilter("ignore")
    for eps in (0.1, 1.0, 10.0, float("inf")):
        for name in adult_models(eps, 0, cat, sizes, bounds):
            if not np.isfinite(eps) and name.startswith("diffprivlib"):
                continue  # diffprivlib has no epsilon = inf

            def make(r, name=name, eps=eps):
                return adult_models(eps, r, cat, sizes, bounds)[name]

            s = _median_seconds(make, X, y, repeats)
            print(f"  eps = {eps:>5}: {name:<20} {s * 1000:8.1f} ms")
    s = _median_seconds(lambda r: DecisionTreeClassifier(max_depth=5, random_state=r), X, y,
                        repeats)  # fmt: skip
    print(f"  non-private sklearn tree    {s * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
