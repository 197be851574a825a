"""The deFinetti attack to convergence on a census-size release (issue 38, item 1).

Adult's 30,162 tuples replicated 63 times (1,900,206 tuples), anatomized at ``l`` (default
4; QI workclass, relationship, sex, salary; sensitive occupation), then attacked as the
report attacks a release: until the chains converge (``iterations=None``: stages of 1,000,
2,000, 4,000, ... iterations, each judged on its second half), 4 chains on the machine's
cores, under a time budget of ``max_seconds`` (default 600 s: the issue's 10 minutes on 2
cores).  Prints the iterations it needed, the split R-hat of the log-likelihood and its
ESS, what stopped it, wall and CPU seconds, and the accuracy and share at risk against the
truth.

Run by hand, on an idle machine: ``.venv/bin/python benchmarks/bench_definetti_census.py
[l] [max_seconds]``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from privlab.attacks.definetti import run_definetti
from privlab.data import Table, load_adult
from privlab.publish import anatomize

QI = ["workclass", "relationship", "sex", "salary"]


def main(l: int = 4, max_seconds: float = 600.0) -> None:
    warnings.simplefilter("ignore")
    adult = load_adult()
    census = Table(np.tile(adult.codes, (63, 1)), adult.schema)
    release = anatomize(census, qi=QI, sensitive="occupation", l=l, rng=0)
    truth = release.truth  # the custody's, in the release's row order
    print(
        f"{census.n_rows:,} tuples, Anatomy at l = {l}; until converged, budget {max_seconds:g} s"
    )
    run_definetti(release, iterations=4, chains=1, rng=0)  # load the compiled kernels
    w0, c0 = time.perf_counter(), time.process_time()
    run = run_definetti(
        release, iterations=None, max_seconds=max_seconds, rng=1, progress=True, truth=truth
    )
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    d = run.posterior.diagnostics
    print(
        f"  {d['iterations']:,} iterations a chain, {d['chains']} chains on {d['workers']} "
        f"workers, stopped by {d['stopped_by']}: R-hat {d['rhat_loglik']:.4f}, ESS "
        f"{d['ess_loglik']}; {wall:.0f} s wall, {cpu:.0f} s CPU ({wall / 60:.1f} min)"
    )
    print(f"  {d['convergence']}")
    print(f"  accuracy per chain {d.get('acc_per_chain')}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4,
         float(sys.argv[2]) if len(sys.argv) > 2 else 600.0)  # fmt: skip
