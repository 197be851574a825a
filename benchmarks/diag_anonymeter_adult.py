"""Diagnostic (run by hand; needs ``pip install --no-deps anonymeter==1.1.0``): Anonymeter's
inference risk of the l = 2 Anatomy release of Adult, its own nearest-neighbour attacker on a
random world of the release against privlab's deFinetti posterior as the attacker.

The release's 30,162 people are the targets (all attacked, so no sampling matters),
adult-test's 15,060 the control set.  Prints each attack's rates and risk with their 95%
intervals, and the outsiders' reconstruction rule applied to the members.  Anonymeter 1.1.0
aligns its "baseline" guesses with the targets by label (see ``anonymeter_risk``): for the
adapter it is a random draw from the published value counts; for the KNN, whose ``syn`` is the
random world itself, it is each person's own random-world value (the random-worlds attack).
``.venv/bin/python benchmarks/diag_anonymeter_adult.py [iterations] [seed]``
"""

from __future__ import annotations

import sys
import time

import numpy as np

from privlab.attacks.anonymeter import (
    PosteriorPredictor,
    anonymeter_knn_risk,
    anonymeter_risk,
    random_world,
    targets_frame,
)
from privlab.attacks.definetti import run_definetti
from privlab.data.datasets import load_adult
from privlab.experiments._adult import QI, SENSITIVE, adult_release


def show(name: str, res, seconds: float) -> None:
    def rate(r) -> str:
        return f"{r.value:.4f} ± {r.error:.4f}"

    lo, hi = res.risk.ci
    print(
        f"{name}: risk {res.risk.value:.4f} [{lo:.4f}, {hi:.4f}]  residual "
        f"{res.residual[0]:+.4f} ± {res.residual[1]:.4f}  attack {rate(res.attack_rate)}  "
        f"control {rate(res.control_rate)}  baseline {rate(res.baseline_rate)}  "
        f"({res.n_success}/{res.n_attacks[0]}, {res.n_control}/{res.n_attacks[2]}; {seconds:.0f} s)"
    )


def main(iterations: int = 4000, seed: int = 0) -> None:
    release = adult_release(2, np.random.default_rng(seed))  # reproducible (no salt)
    run = run_definetti(release, iterations=iterations, chains=2, rng=seed, workers=1)
    print(f"deFinetti: {iterations} x 2 chains, R-hat {run.rhat:.3f}, {run.seconds:.0f} s")
    ori = targets_frame(release)
    control = load_adult(split="test").to_pandas()[[*QI, SENSITIVE]]
    kw = dict(aux_cols=list(QI), secret=SENSITIVE, n_attacks=len(ori), rng=seed)
    t0 = time.perf_counter()
    knn = anonymeter_knn_risk(ori, random_world(release, seed), control, **kw)
    show("Anonymeter KNN on a random world", knn, time.perf_counter() - t0)
    t0 = time.perf_counter()
    ours = anonymeter_risk(run.posterior, ori, control, **kw)
    show("privlab deFinetti posterior (adapter)", ours, time.perf_counter() - t0)
    # the outsiders' rule applied to the members: how much of the gap is the groups
    rule = PosteriorPredictor(run.posterior, ori[list(QI)]).reconstruct(ori)
    print(f"reconstruction on the members (no groups): ACC {(rule == release.truth).mean():.4f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
