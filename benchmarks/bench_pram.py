"""Benchmark PRAM (Ma 2006).

* randomize 10 million records of 8 attributes: the draws (``_draw``, compiled kernel) beside
  privlab's numpy implementation before the kernel (tests/pram_reference.py) and the floor of
  any implementation, the uniforms alone (drawn block by block into one buffer) plus a copy
  of the input, measured side by side in one run, as ratios; then ``randomize()`` end to end;
* estimate a 6-attribute joint table of 10^5 cells (moment estimate + Theorem-2 variances,
  mode by mode);
* the command ``privlab pram adult --columns race``, start to finish (wall time and peak
  memory of the process; before the Release model it built a 20,263 x 20,263 identity for
  ``fnlwgt`` and every other unchanged column).

Run by hand: ``.venv/bin/python benchmarks/bench_pram.py [n_records]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

import privlab.publish.pram_core as rz
from _timing import medians, timed
from privlab.data import Table
from privlab.data.schema import Attribute, Schema
from privlab.data.shuffle import permutation
from privlab.estimate.pram import (
    em_estimate,
    moment_estimate,
    moment_variance,
    observed_counts,
)
from privlab.publish.randomization import m_category_matrix, randomize


def bench_draws_vs_floor(n: int, runs: int = 5) -> None:
    """The draws of 10M x 8 beside the numpy implementation they replace and the floor."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import pram_reference as ref

    sizes = [2, 3, 4, 5, 6, 8, 10, 16]
    rng = np.random.default_rng(0)
    src = np.column_stack([rng.integers(0, k, n, dtype=np.int32) for k in sizes])
    cums = [rz._cumulative(m_category_matrix(k, 0.3)) for k in sizes]
    cols = list(range(len(sizes)))
    rz._draw_kernel(src[:10], cols, cums, np.random.default_rng(0))  # load the kernels
    permutation(np.random.default_rng(0), 10, buckets=2)  # and the shuffle's

    def floor_draws() -> None:
        gen, buf = np.random.default_rng(1), np.empty((rz._KERNEL_BLOCK, len(cols)))
        for lo in range(0, n, rz._KERNEL_BLOCK):
            gen.random(out=buf[: min(n, lo + rz._KERNEL_BLOCK) - lo])

    print(f"draws of {n:,} records x {len(sizes)} attributes (domains {sizes}), median of "
          f"{runs} interleaved runs, wall (CPU) seconds:")  # fmt: skip
    for shuffle in (False, True):
        perm = np.random.default_rng(2).permutation(n) if shuffle else None
        cases = {
            "uniforms": floor_draws,
            "copy": src.copy,
            "before (numpy)": partial(ref._draw, src, cols, cums, perm=perm),
            # shuffled: the rows shuffled (privlab.data.shuffle), then drawn in place
            "kernel": partial(rz.draw_release, src, src, cols, cums, [], shuffle=shuffle),
        }
        cases = {
            k: (lambda f=f: f(gen=np.random.default_rng(1))) if isinstance(f, partial) else f
            for k, f in cases.items()
        }
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        for _ in range(runs):
            for name, f in cases.items():
                times[name].append(timed(f)[:2])
        wall, cpu = medians(times)
        floor_w, floor_c = wall["uniforms"] + wall["copy"], cpu["uniforms"] + cpu["copy"]
        print(f"  shuffle={shuffle}: " + ", ".join(
            f"{k} {wall[k]:.3f} ({cpu[k]:.3f})" for k in cases))  # fmt: skip
        print(f"    floor (uniforms + copy) {floor_w:.3f} ({floor_c:.3f}); kernel / floor "
              f"{wall['kernel'] / floor_w:.2f}x wall ({cpu['kernel'] / floor_c:.2f}x CPU); "
              f"before / floor {wall['before (numpy)'] / floor_w:.2f}x "
              f"({cpu['before (numpy)'] / floor_c:.2f}x); speed-up "
              f"{wall['before (numpy)'] / wall['kernel']:.2f}x "
              f"({cpu['before (numpy)'] / cpu['kernel']:.2f}x)")  # fmt: skip


def bench_randomize(n: int, runs: int = 3) -> None:
    """randomize() end to end (the draws, the shuffle, the custody's truth, the input's
    fingerprint, the output table), shuffled and not, beside the floor of any implementation
    (the uniforms alone plus a copy of the input), and a permutation of the rows alone:
    numpy's (what the shuffle was before) and privlab's two-pass one
    (:func:`privlab.data.shuffle.permutation`)."""
    sizes = [2, 3, 4, 5, 6, 8, 10, 16]
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, k, n, dtype=np.int32) for k in sizes])
    schema = Schema(
        tuple(Attribute(f"x{i}", tuple(range(k)), declared=True) for i, k in enumerate(sizes))
    )
    t0 = time.perf_counter()
    table = Table(codes, schema)
    t_table = time.perf_counter() - t0
    mats = {f"x{i}": m_category_matrix(k, 0.3) for i, k in enumerate(sizes)}
    print(f"randomize() {n:,} records x {len(sizes)} attributes (domains {sizes}); "
          f"building the input table took {t_table:.2f} s")  # fmt: skip

    def floor() -> None:
        gen, buf = np.random.default_rng(1), np.empty((rz._KERNEL_BLOCK, len(sizes)))
        for lo in range(0, n, rz._KERNEL_BLOCK):
            gen.random(out=buf[: min(n, lo + rz._KERNEL_BLOCK) - lo])
        codes.copy()

    cases = {
        "floor (uniforms + copy)": floor,
        "numpy's permutation": lambda: np.random.default_rng(1).permutation(n),
        "privlab's permutation": lambda: permutation(np.random.default_rng(1), n),
        "unshuffled": lambda: randomize(table, mats, rng=np.random.default_rng(1), shuffle=False),
        "shuffled": lambda: randomize(table, mats, rng=np.random.default_rng(1), shuffle=True),
    }
    cases["unshuffled"]()  # the kernel loaded
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, f in cases.items():
            times[name].append(timed(f)[:2])
    wall, cpu = medians(times)
    base = wall["floor (uniforms + copy)"]
    print("  " + ", ".join(f"{k} {wall[k]:.2f} s ({cpu[k]:.2f} s CPU)" for k in cases))
    print(f"  over the floor: unshuffled {wall['unshuffled'] / base:.2f}x, shuffled "
          f"{wall['shuffled'] / base:.2f}x (wall)")  # fmt: skip


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


def bench_cli_one_column(runs: int = 5) -> None:
    """Wall time and peak resident memory of the whole ``privlab pram`` process."""
    exe = Path(sys.executable).with_name("privlab")
    for extra in ([], ["--keep", "fnlwgt"]):
        wall, peak = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(runs):
                # a registry of each run's own: a second release of Adult would be refused
                cmd = [str(exe), "--registry", f"{tmp}/registry{r}", "pram", "adult",
                       "--columns", "race", "--p", "0.2", *extra,
                       "--out", f"{tmp}/r{r}"]  # fmt: skip
                t0 = time.perf_counter()
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, usage = os.wait4(proc.pid, 0)
                wall.append(time.perf_counter() - t0)
                peak.append(usage.ru_maxrss / 1024)  # KiB -> MiB (Linux)
                if status != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed")
        print(f"privlab pram adult --columns race {' '.join(extra)}: median wall "
              f"{np.median(wall):.2f} s (min {min(wall):.2f}), peak memory "
              f"{np.median(peak):.0f} MiB over {runs} runs")  # fmt: skip


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    bench_draws_vs_floor(n)
    bench_cli_one_column()
    bench_randomize(n)
    bench_estimate()
