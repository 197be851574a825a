"""Benchmark: anatomize the 30,162 Adult tuples for l = 2..6 (target: < 1 s at l = 4).

Run by hand: ``.venv/bin/python benchmarks/bench_anatomy.py``.
"""

from __future__ import annotations

import time

import numpy as np

from privlab.data import load_adult
from privlab.publish import anatomize

QI = ["workclass", "relationship", "sex", "salary"]


def main(repeats: int = 5) -> None:
    table = load_adult()
    print(f"anatomize Adult ({table.n_rows} tuples), median of {repeats} runs")
    for l in range(2, 7):
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            anatomize(table, qi=QI, sensitive="occupation", l=l, rng=r)
            times.append(time.perf_counter() - t0)
        print(f"  l = {l}: {np.median(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
