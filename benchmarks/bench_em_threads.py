"""Benchmark: PRAM's EM loops with BLAS capped to one thread (the default) vs uncapped.

:func:`privlab.estimate.pram.em_estimate` runs its iterations under one BLAS thread when each
product is small (``SMALL_PRODUCT`` multiply-adds); "uncapped" sets that limit to -1, so BLAS
keeps its own thread count.  The Naive-Bayes EM of :func:`privlab.attacks.pram.pram_attack`
(on Adult, ``workclass``, ``race`` and ``salary`` randomized) is capped the same way.  Per
case, the two run alternately ``repeats`` times; the medians and the ratio are printed side
by side, with whether the two results are equal.

Run by hand::

    .venv/bin/python benchmarks/bench_em_threads.py [--repeats 5] [--busy 1]

``--busy N`` starts N processes that spin on a CPU during the measurement (a busy machine:
a BLAS thread that waits for a core is what made EM slow).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import time

import numpy as np
from threadpoolctl import threadpool_info

import privlab.attacks.pram as attack
import privlab.estimate.pram as pram
from privlab.data.datasets import load_adult
from privlab.publish.randomization import m_category_matrix
from privlab.publish.randomization import pram as pram_release

#: Attribute sizes of the joint tables: dense P (<= 256 cells), then mode products.
CASES = ([16, 16], [6, 6, 6, 6], [8, 8, 8, 8], [6] * 6)


def _spin() -> None:  # pragma: no cover - a load generator
    while True:
        pass


def run(sizes: list[int], repeats: int, max_iter: int) -> None:
    rng = np.random.default_rng(0)
    factors = [m_category_matrix(k, 0.7) for k in sizes]
    cells = int(np.prod(sizes))
    obs = rng.multinomial(10 * cells, rng.dirichlet(np.ones(cells)))
    limit = pram.SMALL_PRODUCT
    times: dict[str, list[float]] = {"capped": [], "uncapped": []}
    out = {}
    for _ in range(repeats):
        for mode in ("capped", "uncapped"):
            pram.SMALL_PRODUCT = limit if mode == "capped" else -1
            t0 = time.perf_counter()
            out[mode] = pram.em_estimate(obs, factors, tol=1e-10, max_iter=max_iter)
            times[mode].append(time.perf_counter() - t0)
    pram.SMALL_PRODUCT = limit
    a, b = (float(np.median(times[m])) for m in ("capped", "uncapped"))
    same = np.array_equal(out["capped"].theta, out["uncapped"].theta)
    diff = float(np.max(np.abs(out["capped"].theta - out["uncapped"].theta)))
    print(
        f"  {'x'.join(map(str, sizes)):>12s} {cells:7d} {out['capped'].iterations:6d} "
        f"{a:9.3f} {b:9.3f} {b / a:8.2f}x  {'equal' if same else f'max diff {diff:.1e}'}"
    )


def run_attack(repeats: int) -> None:
    rel = pram_release(
        load_adult(),
        columns=["workclass", "race", "salary"],
        keep=["sex", "relationship", "marital-status"],
        p=0.6,
        rng=np.random.default_rng(0),
    )
    capped = attack.one_blas_thread
    times: dict[str, list[float]] = {"capped": [], "uncapped": []}
    out = {}
    for _ in range(repeats):
        for mode in ("capped", "uncapped"):
            attack.one_blas_thread = capped if mode == "capped" else contextlib.nullcontext
            t0 = time.perf_counter()
            out[mode] = attack.run_pram_attack(
                rel, sensitive="salary", model="naive-bayes", prior=1.0, iterations=2000
            )
            times[mode].append(time.perf_counter() - t0)
    attack.one_blas_thread = capped
    a, b = (float(np.median(times[m])) for m in ("capped", "uncapped"))
    pa, pb = (out[m].posterior.probs for m in ("capped", "uncapped"))
    same = np.array_equal(pa, pb)
    diff = float(np.max(np.abs(pa - pb)))
    print(
        f"  {'attack (NB)':>12s} {rel.n_rows:7d} {out['capped'].iterations:6d} "
        f"{a:9.3f} {b:9.3f} {b / a:8.2f}x  {'equal' if same else f'max diff {diff:.1e}'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--busy", type=int, default=0, help="CPU-spinning processes meanwhile")
    args = ap.parse_args()
    blas = [f"{i['internal_api']} {i['num_threads']} threads" for i in threadpool_info()]
    print(f"BLAS: {', '.join(blas)}; {args.busy} spinning process(es); medians of {args.repeats}")
    print(f"  {'sizes':>12s} {'cells':>7s} {'iters':>6s} {'capped':>9s} {'uncapped':>9s} ratio")
    spinners = [mp.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        for sizes in CASES:
            run(list(sizes), args.repeats, args.max_iter)
        run_attack(args.repeats)
    finally:
        for p in spinners:
            p.terminate()
            p.join()


if __name__ == "__main__":
    main()
