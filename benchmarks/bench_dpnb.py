"""Benchmark: the full ``dpnb-adult`` grid (target: at most 5 minutes on one core).

3 CV schemes (5, 10, 20 folds) x 20 repetitions x 6 epsilons x 500 noise draws per fold, five
estimators each (2.1 million noisy models per estimator).  BLAS is limited to one thread and
both wall-clock and process CPU time are printed (on a shared machine the CPU time is the
fairer measure of one core's work).  Also times the building blocks for one 5-fold fold.

Run by hand: ``.venv/bin/python benchmarks/bench_dpnb.py [--quick]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from privlab.dp.estimators import ESTIMATORS, get_estimator
from privlab.experiments import Context
from privlab.experiments.dpnb import adult_data, run_adult
from privlab.learn.dp_naive_bayes import (
    batch_correct,
    compress,
    count_query,
    log_parameters,
    nb_layout,
)


def _time(f, repeats: int = 5) -> float:
    """Mean CPU milliseconds of ``f()`` (CPU time: the machine may be shared)."""
    f()
    t0 = time.process_time()
    for _ in range(repeats):
        f()
    return (time.process_time() - t0) / repeats * 1000


def blocks() -> None:
    d = adult_data()
    lay = nb_layout(d.sizes, d.n_classes)
    tr, te = next(KFold(5, shuffle=True, random_state=0).split(d.codes))
    q = count_query(d.codes[tr], d.y[tr], d.sizes, d.n_classes)
    pats, pc = compress(d.codes[te], d.y[te], d.n_classes)
    g = np.random.default_rng(0)
    b = 8 / 0.05
    noisy = q + g.laplace(0, b, (500, q.size))
    print(f"one 5-fold fold, 500 draws, {pats.shape[0]} distinct test rows (CPU ms):")
    print(f"  noise            {_time(lambda: q + g.laplace(0, b, (500, q.size))):8.2f}")
    for name in ESTIMATORS:
        f = get_estimator(name)
        est = f(noisy, b, clip=True, layout=lay)
        lp, lw = log_parameters(est, lay, 1.0)
        t_est = _time(lambda f=f: f(noisy, b, clip=True, layout=lay))
        t_par = _time(lambda est=est: log_parameters(est, lay, 1.0))
        t_sc = _time(lambda lp=lp, lw=lw: batch_correct(lp, lw, pats, pc, lay.offsets))
        print(f"  {name:11s} estimate {t_est:7.2f}  parameters {t_par:6.2f}  scoring {t_sc:6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    with threadpool_limits(1):
        blocks()
        with tempfile.TemporaryDirectory() as tmp:
            ctx = Context("dpnb-adult", args.quick, 0, Path(tmp), progress=False)
            w0, c0 = time.perf_counter(), time.process_time()
            res = run_adult(ctx)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"dpnb-adult {'quick' if args.quick else 'full'} grid: {len(res.rows)} rows, "
          f"wall {wall:.1f} s, CPU {cpu:.1f} s (target: 300 s)")  # fmt: skip


if __name__ == "__main__":
    main()
