"""Benchmark the attacks on the 30,162 Adult tuples (issue 3 targets, one core).

* deFinetti: 50,000 Gibbs iterations (one chain) in <= 30 s for groups of 2 and <= 120 s for
  groups of 4 (Kifer needed 7.5 hours and 2 days per run).
* EM: one converged run (exact E-step) in < 2 s.

Run by hand: ``.venv/bin/python benchmarks/bench_attacks.py [iterations]``.  CPU time is
reported beside wall time because the development machine is shared.
"""

from __future__ import annotations

import sys
import time

from privlab.attacks.definetti import run_definetti
from privlab.attacks.em import run_em
from privlab.experiments._adult import adult_release


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(iterations: int = 50_000) -> None:
    for l in (2, 3, 4):
        rel = adult_release(l, 0)
        run_definetti(rel, iterations=10, chains=1, rng=0)  # compile / load the numba cache
        run, wall, cpu = _timed(
            lambda r=rel: run_definetti(r, iterations=iterations, chains=1, rng=1)
        )
        acc = (run.posterior.probs.argmax(axis=1) == rel.truth).mean()
        print(
            f"deFinetti l={l}: {iterations} iterations in {wall:6.1f} s wall / {cpu:6.1f} s CPU "
            f"({iterations / cpu:7.0f} it/s CPU); accuracy on all tuples {acc:.3f}"
        )
    for l in (2, 3, 4):
        rel = adult_release(l, 0)
        res, wall, cpu = _timed(lambda r=rel: run_em(r, restarts=1, truth=r.truth, rng=1))
        r0 = res.restarts[0]
        print(
            f"EM l={l}: converged={r0['converged']} after {r0['iterations']} iterations in "
            f"{wall:5.2f} s wall / {cpu:5.2f} s CPU; accuracy {r0['accuracy']:.3f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
