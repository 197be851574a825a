"""Benchmark microaggregation (:mod:`privlab.publish.microaggregation_core`): MDAV on
``rows x 5`` standard normal columns (k = 3, 5) and the optimal univariate partition, wall
and CPU seconds, peak memory and the growth of the cost between sizes.  Memory is given
twice: tracemalloc's peak sees the arrays numpy allocates (the z-scores, the labels) but
not those the numba kernel allocates through its own runtime (the tree, the shell), so the
process's high-water resident set (``ru_maxrss``, after the run; it never goes down, and
the sizes grow) is printed beside it.

The floor beside MDAV: *one pass of squared distances to the centroid per group formed*
over the remaining records (``~ n^2 / (2k)`` distances), the least any MDAV that scans the
remaining records must do (the naive one does three such passes per two groups); measured
here as a compiled loop over a compacted array, up to ``--floor-max`` rows.  privlab's
kernel answers the queries from a k-d tree and a shell of the remaining records sorted by
distance from a recent centroid, so it can beat that floor.

Measured when it was written (one core of a shared 2-core machine, numba 0.68): MDAV
k = 3 took 0.28 / 1.55 / 8.4 / 40.6 s on 30k / 100k / 300k / 1M rows (cost ~ n^1.3 to
n^1.5 between sizes), k = 5 0.15 / 0.83 / 3.9 / 28.4 s; the floor 0.46 / 7.3 / 44.7 s (k =
3) and 0.40 / 2.6 / 25.8 s (k = 5) up to 300k, i.e. MDAV at 0.2x-0.6x of it; 167 MiB
traced and 413 MiB process high water at 1M; the optimal univariate partition of 1M values
0.17 s (k = 3), of which the stable sort is 0.13 s.  ``refine`` from MDAV's groups (k = 5)
took 2.1 / 8.3 s on 30k / 100k rows, the information loss from 3.64% to 3.09% and from
2.30% to 1.95%.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_microaggregation.py [max_rows]
[floor_max]`` (defaults 1,000,000 and 300,000).
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc

import numpy as np
from numba import njit

from privlab.publish.microaggregation_core import (
    information_loss,
    mdav,
    refine,
    univariate_optimal,
)

SIZES = (30_000, 100_000, 300_000, 1_000_000)
REFINE_MAX = 100_000  # refine's sizes: up to this many rows


@njit(cache=True)
def _floor(x, k):
    """One pass of squared distances to the centroid of the remaining records per group,
    the group's k records then dropped by compaction (no selection: only the pass)."""
    n, p = x.shape
    live = x.copy()
    m = n
    acc = 0.0
    total = np.zeros(p)  # the centroid from running sums: the pass below is the only one
    for i in range(n):
        for d in range(p):
            total[d] += live[i, d]
    c = np.empty(p)
    while m >= k:
        for d in range(p):
            c[d] = total[d] / m
        far, best = 0, -1.0
        for i in range(m):
            s = 0.0
            for d in range(p):
                t = live[i, d] - c[d]
                s += t * t
            if s > best:
                best, far = s, i
        acc += best
        for d in range(p):  # drop the farthest and k - 1 others (the last ones)
            total[d] -= live[far, d]
        live[far] = live[m - 1]
        for j in range(2, k + 1):
            for d in range(p):
                total[d] -= live[m - j, d]
        m -= k
    return acc


def measure(f):
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = f()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return wall, cpu, peak, out


def main(max_rows: int = 1_000_000, floor_max: int = 300_000) -> None:
    rng = np.random.default_rng(0)
    warm = rng.normal(size=(200, 5))
    mdav(warm, 3)
    refine(warm, mdav(warm, 3), 3)
    univariate_optimal(warm[:, 0], 3)
    _floor(warm, 3)
    print("MDAV, rows x 5 N(0, 1) columns (z-scores): wall, CPU, memory")
    for k in (3, 5):
        previous = None
        for n in (s for s in SIZES if s <= max_rows):
            x = np.random.default_rng(n).normal(size=(n, 5))
            wall, cpu, peak, g = measure(lambda x=x, k=k: mdav(x, k))
            sizes = np.bincount(g)
            assert sizes.min() >= k and sizes.max() <= 2 * k - 1
            growth = ""
            if previous is not None:
                exponent = np.log(wall / previous[1]) / np.log(n / previous[0])
                growth = f"  cost ~ n^{exponent:.2f} since {previous[0]:,}"
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            line = (f"  k={k} {n:>9,}: {wall:8.2f} s {cpu:8.2f} s CPU {peak / 2**20:7.1f} MiB "
                    f"traced {rss:7.1f} MiB max RSS")  # fmt: skip
            if n <= floor_max:
                fw, _, _, _ = measure(lambda x=x, k=k: _floor(x, k))
                line += f"   floor {fw:8.2f} s ({wall / fw:5.2f}x)"
            print(line + growth)
            previous = (n, wall)
    print("refine (local search) from MDAV's groups, k = 5: wall, CPU, IL x 100 before -> after")
    for n in (s for s in SIZES if s <= min(max_rows, REFINE_MAX)):
        x = np.random.default_rng(n).normal(size=(n, 5))
        g = mdav(x, 5)
        wall, cpu, _, r = measure(lambda x=x, g=g: refine(x, g, 5))
        before, sst = information_loss(x, g)
        after, _ = information_loss(x, r)
        print(f"  {n:>9,}: {wall:8.2f} s {cpu:8.2f} s CPU   IL {100 * before / sst:.3f} -> "
              f"{100 * after / sst:.3f}")  # fmt: skip
    n = max_rows
    v = np.random.default_rng(1).normal(size=n)
    for k in (3, 5):
        wall, cpu, peak, _ = measure(lambda v=v, k=k: univariate_optimal(v, k))
        sort_wall, _, _, _ = measure(lambda v=v: np.argsort(v, kind="stable"))
        print(f"optimal univariate k={k} {n:,}: {wall:.2f} s wall {cpu:.2f} s CPU, "
              f"{peak / 2**20:.1f} MiB peak; the stable sort alone {sort_wall:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
