"""Benchmark local (cell) suppression (:func:`privlab.publish.local_suppression.local_suppression`)
to k-anonymity, suppressed cells as wildcards (sdcMicro's ``localSuppression``):

* Adult's 8 quasi-identifiers (age, workclass, education, marital-status, occupation, race,
  sex, native-country; 30,162 records) at k = 2, 3, 5, ``method="heuristic"`` (which answers
  with ``k - 1`` fully suppressed records: the module docstring says why) and
  ``method="local"`` (sdcMicro's behaviour, each record at risk fixing itself);
* a synthetic survey (``bench_sdc_risk.py``'s skewed columns, the first 8) of 100k, 300k
  and 1M records at k = 5: how the cost grows with the rows.

Each case runs in a fresh subprocess that reports its wall time and peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, input loading included; numba's cache warm:
one discarded warm-up case runs first), the cells suppressed, the records touched and the k
reached.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_local_suppression.py``.

Measured (one run, a 2-core machine shared with other jobs; wall s / peak RSS MiB / cells /
records touched):

=========  ==  =================================  =====================================
data       k   heuristic                          local
=========  ==  =================================  =====================================
Adult      2   0.51 s / 265 / 8 / 1               2.44 s / 265 / 5,900 / 5,427
Adult      3   1.00 s / 265 / 16 / 2              3.10 s / 264 / 8,405 / 7,493
Adult      5   0.96 s / 266 / 32 / 4              4.03 s / 263 / 11,240 / 9,657
100k       5   1.04 s / 253 / 32 / 4              4.10 s / 252 / 11,693 / 10,953
300k       5   1.32 s / 312 / 32 / 4              12.05 s / 314 / 19,075 / 18,267
1M         5   2.59 s / 526 / 32 / 4              21.05 s / 527 / 31,389 / 30,571
=========  ==  =================================  =====================================

The local greedy's cost grows with (records at risk) x (records at risk + distinct safe
keys): 21,426 / 36,727 / 63,172 records in keys below 5 on the survey, not with n itself.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ADULT_QIS = [
    "age", "workclass", "education", "marital-status",
    "occupation", "race", "sex", "native-country",
]  # fmt: skip


def _codes(data: str) -> np.ndarray:
    if data == "adult":
        from privlab.data.datasets import load_dataset

        table = load_dataset("adult")
        idx = [table.schema.names.index(q) for q in ADULT_QIS]
        return np.asarray(table.codes)[:, idx]
    from bench_sdc_risk import survey_codes

    return survey_codes(int(data), np.random.default_rng(0))[:, :8]


def one(data: str, k: int, method: str) -> None:
    """One case in this (fresh) process; prints JSON."""
    from privlab.publish.local_suppression import local_suppression

    codes = _codes(data)
    t0 = time.perf_counter()
    res = local_suppression(codes, k, method=method)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
    print(json.dumps({
        "data": data, "n": int(codes.shape[0]), "k": k, "method": method, "wall": wall,
        "peak_mib": peak, "cells": res.suppressed, "records": res.records_touched,
        "k_reached": res.k_reached,
    }))  # fmt: skip


def run(data: str, k: int, method: str) -> dict:
    cmd = [sys.executable, __file__, "one", data, str(k), method]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    run("adult", 2, "local")  # warm numba's cache
    cases = [("adult", k, m) for k in (2, 3, 5) for m in ("heuristic", "local")]
    cases += [(str(n), 5, m) for n in (100_000, 300_000, 1_000_000) for m in ("heuristic", "local")]
    print(f"{'data':>8} {'n':>9} {'k':>2} {'method':>9} {'wall s':>8} {'peak MiB':>9} "
          f"{'cells':>7} {'records':>7} {'k reached':>9}")  # fmt: skip
    for case in cases:
        r = run(*case)
        print(f"{r['data']:>8} {r['n']:>9,} {r['k']:>2} {r['method']:>9} {r['wall']:8.2f} "
              f"{r['peak_mib']:9.0f} {r['cells']:>7,} {r['records']:>7,} {r['k_reached']:>9}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        one(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
