"""Benchmark PRAM (seed 002): targets from issue 7.

* randomize 10 million records of 8 attributes in under 10 s;
* estimate a 6-attribute joint table of 10^5 cells (moment estimate + Theorem-2 variances,
  mode by mode) in under 1 s.

Run by hand: ``.venv/bin/python benchmarks/bench_pram.py [n_records]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from privlab.data import Table
from privlab.data.schema import Attribute, Schema
from privlab.publish.randomization import m_category_matrix, randomize
from privlab.estimate.pram import (
    em_estimate,
    moment_estimate,
    moment_variance,
    observed_counts,
)


def bench_randomize(n: int) -> None:
    sizes = [2, 3, 4, 5, 6, 8, 10, 16]
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, k, n, dtype=np.int32) for k in sizes])
    schema = Schema(tuple(Attribute(f"x{i}", tuple(range(k))) for i, k in enumerate(sizes)))
    t0 = time.perf_counter()
    table = Table(codes, schema)
    t_table = time.perf_counter() - t0
    mats = {f"x{i}": m_category_matrix(k, 0.3) for i, k in enumerate(sizes)}
    randomize(table.take(np.arange(100)), mats, rng=0)  # compile / load the kernel
    print(f"randomize {n:,} records x {len(sizes)} attributes (domains {sizes}); "
          f"building the input table took {t_table:.2f} s")  # fmt: skip
    for shuffle in (True, False):
        wall, cpu = [], []
        for r in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            randomize(table, mats, rng=r, shuffle=shuffle)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        print(f"  shuffle={shuffle}: median wall {np.median(wall):.2f} s, "
              f"CPU {np.median(cpu):.2f} s over 3 runs")  # fmt: skip


def bench_estimate() -> None:
    sizes = [4, 5, 5, 4, 5, 50]  # 100,000 cells
    j = int(np.prod(sizes))
    rng = np.random.default_rng(1)
    factors = [m_category_matrix(k, 0.2) for k in sizes]
    obs = rng.poisson(20, j).astype(float)
    times, cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        est = moment_estimate(obs, factors)
        moment_variance(est, factors)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    print(
        f"moment estimate + Theorem-2 variances of a {len(sizes)}-attribute table of {j:,} "
        f"cells: median wall {np.median(times) * 1000:.0f} ms, CPU "
        f"{np.median(cpu) * 1000:.0f} ms over 5 runs"
    )
    t0 = time.perf_counter()
    em = em_estimate(obs, factors, tol=1e-8, max_iter=200)
    t = time.perf_counter() - t0
    print(f"  EM on the same table: {em.iterations} iterations in {t:.2f} s "
          f"({t / em.iterations * 1000:.1f} ms per iteration)")  # fmt: skip
    codes = np.column_stack([rng.integers(0, k, 1_000_000) for k in sizes])
    t0 = time.perf_counter()
    observed_counts(codes, sizes)
    print(f"  counting 1,000,000 records into the table: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    bench_randomize(n)
    bench_estimate()
