"""Benchmark the distance to closest record (:func:`privlab.metrics.synthetic.
distance_to_closest_record`) of ``rows`` synthetic rows against ``rows`` original rows (and,
with a control, ``rows`` holdout rows) of a mixed table: 3 numeric columns and 3 categorical
ones of 2, 5 and 8 values (18 features once one-hot).  Its floor is scikit-learn's
``NearestNeighbors(n_neighbors=2, metric="manhattan")`` fit and ``kneighbors`` alone on the
same features, already built (what the DCR's search does for the rows inside the original's
range); measured side by side in one run (interleaved, medians, wall and CPU seconds), at
30,000 and 100,000 rows by default.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_synthetic_dcr.py [runs] [rows...]``.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

from _timing import side_by_side
from privlab.metrics.synthetic import _Encoded, _features, distance_to_closest_record


def mixed(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({
        "age": np.round(rng.normal(45, 15, rows)),
        "income": rng.gamma(2.0, 20_000.0, rows),
        "hours": rng.uniform(0, 80, rows),
        "sex": rng.choice(["f", "m"], rows),
        "region": rng.choice(list("abcde"), rows),
        "job": rng.choice(list("ABCDEFGH"), rows, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
    })  # fmt: skip


def encoded(t: pd.DataFrame, ref: pd.DataFrame) -> np.ndarray:
    """The search's features (numeric over the original's range, categorical one-hot / 2)."""
    num = np.column_stack(
        [t[c] / (ref[c].max() - ref[c].min()) for c in ("age", "income", "hours")]
    )
    cats = [
        pd.Categorical(t[c], categories=sorted(ref[c].unique())).codes
        for c in ("sex", "region", "job")
    ]
    e = _Encoded(num, np.column_stack(cats).astype(np.int64), np.ones(len(t), bool))
    return _features(e, np.arange(len(t)), np.array([2, 5, 8]))


def bench(rows: int, runs: int) -> None:
    rng = np.random.default_rng(0)
    original, control, synthetic = mixed(rows, rng), mixed(rows, rng), mixed(rows, rng)
    x_orig, x_syn = encoded(original, original), encoded(synthetic, original)

    def floor() -> np.ndarray:
        nn = NearestNeighbors(n_neighbors=2, metric="manhattan", algorithm="kd_tree")
        return nn.fit(x_orig).kneighbors(x_syn)[0]

    cases = {
        "kneighbors": floor,
        "dcr": lambda: distance_to_closest_record(synthetic, original),
        "dcr+control": lambda: distance_to_closest_record(synthetic, original, control=control),
    }
    wall, cpu, out = side_by_side(cases, runs)
    print(f"{rows:,} synthetic x {rows:,} original rows, 6 columns; medians of {runs} runs")
    for name in cases:
        print(f"  {name:<12} {wall[name]:8.2f} s wall {cpu[name]:8.2f} s CPU   "
              f"{wall[name] / wall['kneighbors']:5.2f}x kneighbors alone")  # fmt: skip
    # the same nearest distances (the floor's L1 sum is p = 6 times the mean distance)
    np.testing.assert_allclose(out["dcr"].dcr * 6, out["kneighbors"][:, 0], atol=1e-9)
    r = out["dcr+control"]
    low, high = r.closer_to_training[1:]
    print(f"  exact matches {r.exact_match_share:.4f}; closer to training "
          f"{r.closer_to_training[0]:.4f} [{low:.4f}, {high:.4f}]")  # fmt: skip


def main(runs: int = 3, *sizes: int) -> None:
    for rows in sizes or (30_000, 100_000):
        bench(rows, runs)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
