"""Benchmark a DP histogram over 10 million records (issue 19).

Side by side in one run, medians of interleaved runs, wall (CPU) seconds, as ratios:

* ``one compiled pass``: the floor, a minimal numba loop that adds up each row's cell index
  and counts it (no checks, the strides fixed);
* ``before (numpy)``: the counts as privlab took them before the kernel (a copy of the
  columns, ``np.ravel_multi_index``, ``np.bincount``);
* ``code-checked pass``: ``joint_counts`` of untrusted codes, each code checked against its
  domain in the loop (``Table.counts`` until 2026-11-29: 1.6x the floor at 921,600 cells);
* ``Table.counts``: the counts now (one compiled pass over the columns in place, one check
  of the cell index a row: a table's codes were checked when it was made);
* ``noisy_histogram``: the whole first release of a table (counts, geometric noise,
  clipping, and the SHA-256 fingerprint of the codes in a thread beside the count, about
  0.2 s at 10M x 8 codes); ``again``: a later release of the same table, whose fingerprint
  was kept.  Its exact
  discrete-Laplace sampler cost about 0.5 us per cell in vectorized numpy rounds (1.9x the
  floor with 921,600 cells); from 2^18 cells it now runs one compiled draw at a time on a
  bit stream (``dp._sampler_kernel``, about 0.1 us per cell at epsilon 1).

``samplers``: draws per second of the exact samplers alone, the discrete Laplace (CKS 2020
Algorithm 2) and the discrete Gaussian (Algorithm 3, a rejection step on top of it), at
comparable scales, seeded and from the OS CSPRNG (best of 3 runs after a warm-up).

Run by hand: ``.venv/bin/python benchmarks/bench_dp_histogram.py [n_records]`` or
``.venv/bin/python benchmarks/bench_dp_histogram.py samplers [n_draws]``.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from _timing import best, medians, timed
from privlab.data import Table
from privlab.data.counts import joint_counts
from privlab.data.schema import Attribute, Schema
from privlab.dp.histogram import noisy_histogram
from privlab.dp.samplers import discrete_gaussian, discrete_laplace


@njit(cache=True)
def _one_pass(codes, cols, strides, counts):
    for r in range(codes.shape[0]):
        key = 0
        for j in range(cols.shape[0]):
            key += codes[r, cols[j]] * strides[j]
        counts[key] += 1


def _floor(codes: np.ndarray, idx: list[int], sizes: list[int]) -> np.ndarray:
    strides = np.ones(len(sizes), dtype=np.int64)
    strides[:-1] = np.cumprod(np.asarray(sizes[:0:-1], dtype=np.int64))[::-1]
    counts = np.zeros(int(np.prod(sizes)), dtype=np.int64)
    _one_pass(codes, np.asarray(idx, dtype=np.int64), strides, counts)
    return counts


def _before(codes: np.ndarray, idx: list[int], sizes: list[int]) -> np.ndarray:
    key = np.ravel_multi_index(tuple(codes[:, idx].T), sizes).astype(np.int64)
    return np.bincount(key, minlength=int(np.prod(sizes))).astype(np.int64)


def bench(n: int, runs: int = 5) -> None:
    sizes = [2, 3, 4, 5, 6, 8, 10, 16]
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, k, n, dtype=np.int32) for k in sizes])
    names = [f"x{i}" for i in range(len(sizes))]
    schema = Schema(tuple(Attribute(c, tuple(range(k)), declared=True)
                          for c, k in zip(names, sizes)))  # fmt: skip
    table = Table(codes, schema)
    print(f"DP histogram of {n:,} records (8 columns, domains {sizes}), median of {runs} "
          "interleaved runs, wall (CPU) seconds:")  # fmt: skip
    for cols in (["x2", "x4", "x7"], ["x7", "x1"], names):
        idx = [names.index(c) for c in cols]
        sub = [sizes[i] for i in idx]
        # a new table object a run (its codes shared): the first release of a table hashes
        # its codes; a later one of the same table does not
        fresh = [Table(table.codes, schema) for _ in range(runs)]
        cases = {
            "one compiled pass": lambda idx=idx, sub=sub: _floor(table.codes, idx, sub),
            "before (numpy)": lambda idx=idx, sub=sub: _before(table.codes, idx, sub),
            "code-checked pass": lambda idx=idx, sub=sub: joint_counts(
                table.codes, sub, columns=idx
            ),
            "Table.counts": lambda cols=cols: table.counts(cols),
            "noisy_histogram": lambda cols=cols, fresh=fresh: noisy_histogram(
                fresh.pop(), cols, epsilon=1.0, rng=0
            ),
            "again": lambda cols=cols: noisy_histogram(table, cols, epsilon=1.0, rng=0),
        }
        table.fingerprint()
        ref = _before(table.codes, idx, sub)
        assert np.array_equal(table.counts(cols), ref)
        assert np.array_equal(_floor(table.codes, idx, sub), ref)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        for _ in range(runs):
            for name, f in cases.items():
                times[name].append(timed(f)[:2])
        wall, cpu = medians(times)
        fw, fc = wall["one compiled pass"], cpu["one compiled pass"]
        print(f"  {'+'.join(cols)} ({int(np.prod(sub)):,} cells): " + ", ".join(
            f"{k} {wall[k] * 1000:.0f} ms ({cpu[k] * 1000:.0f})" for k in cases))  # fmt: skip
        rest = [k for k in cases if k != "one compiled pass"]
        print("    / one compiled pass: " + ", ".join(
            f"{k} {wall[k] / fw:.2f}x ({cpu[k] / fc:.2f}x)" for k in rest))  # fmt: skip


def bench_samplers(n: int, repeats: int = 3) -> None:
    """Draws per second of ``discrete_laplace(1, t)`` (scale t) and ``discrete_gaussian(t^2)``
    (sigma = t), the compiled path (n draws at once)."""
    print(f"exact samplers, {n:,} draws a call, best of {repeats}, million draws per second:")
    for t in (1, 10, 1000):
        cases = {
            f"discrete_laplace scale {t}": lambda rng, t=t: discrete_laplace(1, t, (n,), rng),
            f"discrete_gaussian sigma {t}": lambda rng, t=t: discrete_gaussian(t * t, (n,), rng),
        }
        for name, f in cases.items():
            f(np.random.default_rng(0))  # compile / load the kernel
            seeded, _ = best(lambda f=f: f(np.random.default_rng(1)), repeats)
            osr, _ = best(lambda f=f: f(None), repeats)
            print(f"  {name:<30} seeded {n / seeded / 1e6:6.2f}   os-csprng {n / osr / 1e6:6.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "samplers":
        bench_samplers(int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 22)
    else:
        bench(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
