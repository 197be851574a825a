"""Diagnostic (run by hand): why privlab's deFinetti ACC at l = 2 is below Kifer's Table 7.

Attacks two releases of the same 30,162 Adult tuples with pairs of distinct occupations:
Xiao & Tao's grouping (one tuple from each of the two currently largest buckets, what
``anatomize`` does) and uniformly random distinct pairs.  Prints ACC and ABS per tuple on all
tuples.  ``.venv/bin/python benchmarks/diag_anatomy_grouping.py [iterations]``
"""

from __future__ import annotations

import sys

import numpy as np

from privlab.attacks.definetti import run_definetti
from privlab.experiments._adult import adult_release, random_pairs
from privlab.metrics.calibration import evaluate


def main(iterations: int = 4000) -> None:
    rel = adult_release(2, 0)
    for name, r in (
        ("xiao-tao (anatomize)", rel),
        ("random distinct pairs", random_pairs(rel, np.random.default_rng(5))),
    ):
        post = run_definetti(r, iterations=iterations, chains=2, rng=1).posterior
        ev = evaluate(post.probs, rel.truth)
        print(f"{name:24s} ACC {ev.acc:.4f}  ABS/tuple {ev.abs_per_tuple:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
