"""The PRAM attack's EM with SQUAREM (privlab's) beside plain EM, side by side in one run.

On Adult (30,162 records), ``workclass``, ``relationship``, ``sex`` and ``occupation``
randomized with PRAM at p = 0.3 (``salary`` kept), each randomized column attacked as
``privlab report`` attacks it (:func:`privlab.attacks.pram.run_pram_attack`, the joint
model, the pseudo-count chosen by two-fold cross-validation over 6 values, the EM cap of a
report), then the whole report (:func:`privlab.report.build`) once each way.  Both ways
stop by the same rule (the relative change of the log posterior over one EM step at most
1e-12); the table gives the EM steps of the final fit, the wall time and the largest
difference between the two posteriors.

Run by hand: ``.venv/bin/python benchmarks/bench_pram_attack.py [--report-only]`` (about 15
minutes, the plain side most of it).
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import privlab.attacks.pram as mod
from privlab.attacks.pram import run_pram_attack
from privlab.data import load_adult
from privlab.publish.randomization import pram
from privlab.report.build import PRAM_EM_ITERATIONS, build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pram_reference import plain_em  # plain EM, the tests' oracle

COLUMNS = ["workclass", "relationship", "sex", "occupation"]


def main(columns: bool = True) -> None:
    warnings.simplefilter("ignore")
    table = load_adult().select([*COLUMNS, "salary"])
    release = pram(table, columns=COLUMNS, keep=["salary"], p=0.3,
                   rng=np.random.default_rng(1))  # fmt: skip
    squarem = mod._squarem
    print(f"{'target':<14}{'way':<9}{'EM steps':>9}{'seconds':>9}  posterior max |diff|")
    for column in COLUMNS if columns else ():
        runs = {}
        for way, fn in (("squarem", squarem), ("plain", plain_em)):
            mod._squarem = fn
            t = time.perf_counter()
            runs[way] = run_pram_attack(release, sensitive=column, iterations=PRAM_EM_ITERATIONS)
            runs[way + "_s"] = time.perf_counter() - t
        mod._squarem = squarem
        diff = float(np.abs(runs["squarem"].posterior.probs - runs["plain"].posterior.probs).max())
        for way in ("squarem", "plain"):
            run = runs[way]
            print(f"{column:<14}{way:<9}{run.iterations:>9}{runs[way + '_s']:>9.1f}"
                  + (f"  {diff:.2e}" if way == "plain" else ""))  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        release.save(Path(tmp) / "r", custody=Path(tmp) / "c", draft=True,
                     not_for_publication=True)  # fmt: skip
        for way, fn in (("squarem", squarem), ("plain", plain_em)):
            mod._squarem = fn
            t = time.perf_counter()
            rep = build(Path(tmp) / "r", custody=Path(tmp) / "c", progress=False)
            print(f"report ({way}): {time.perf_counter() - t:.1f} s, verdict "
                  f"{rep.verdict['level']}")  # fmt: skip
        mod._squarem = squarem


if __name__ == "__main__":
    main(columns="--report-only" not in sys.argv)
