"""Benchmark distance-based record linkage (:func:`privlab.attacks.record_linkage`) of
``rows`` masked rows against ``rows`` original rows of 5 correlated numeric columns, masked
by additive noise of 0.5 standard deviations (most rows not re-identified: one k-d tree query
per row and a radius query only for the linked ones) and, as the other extreme, unmasked
(every row linked: the radius query runs for all of them).

Its floor is scikit-learn's ``NearestNeighbors(n_neighbors=1, algorithm="kd_tree")`` fit and
``kneighbors`` alone on the same standardized columns (the nearest original of every masked
row, without the truth, the ties or the interval test); measured side by side in one run
(interleaved, medians, wall and CPU seconds), at 30,000 and 300,000 rows by default.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_record_linkage.py [runs] [rows...]``.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.neighbors import NearestNeighbors

from _timing import side_by_side
from privlab.attacks import record_linkage


def bench(rows: int, runs: int) -> None:
    rng = np.random.default_rng(0)
    mix = np.eye(5) + 0.4
    original = rng.normal(size=(rows, 5)) @ mix * np.array([1.0, 10.0, 100.0, 0.1, 5.0])
    sd = original.std(axis=0, ddof=1)
    noisy = original + rng.normal(size=original.shape) * sd * 0.5
    z_orig, z_noisy = original / sd, noisy / sd

    def floor() -> np.ndarray:
        nn = NearestNeighbors(n_neighbors=1, algorithm="kd_tree")
        return nn.fit(z_orig).kneighbors(z_noisy)[1][:, 0]

    cases = {
        "kneighbors": floor,
        "dbrl noise": lambda: record_linkage(original, noisy),
        "dbrl copy": lambda: record_linkage(original, original),
    }
    wall, cpu, out = side_by_side(cases, runs)
    print(f"{rows:,} masked x {rows:,} original rows, 5 columns; medians of {runs} runs")
    for name in cases:
        print(f"  {name:<12} {wall[name]:8.2f} s wall {cpu[name]:8.2f} s CPU   "
              f"{wall[name] / wall['kneighbors']:5.2f}x kneighbors alone")  # fmt: skip
    r = out["dbrl noise"]
    # the same nearest originals as the floor (continuous data: no ties)
    assert (r.nearest == out["kneighbors"]).all()
    copy = out["dbrl copy"].rate.value
    print(f"  noise: re-identified {r.rate.value:.4f} [{r.rate.low:.4f}, {r.rate.high:.4f}], "
          f"interval disclosure {r.interval_share:.4f}; copy: {copy}")  # fmt: skip


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 3
    sizes = [int(a) for a in argv[1:]] or [30_000, 300_000]
    for rows in sizes:
        bench(rows, runs)


if __name__ == "__main__":
    main(sys.argv[1:])
