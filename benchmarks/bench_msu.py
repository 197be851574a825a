"""Benchmark the minimal sample uniques (:func:`privlab.metrics.msu.minimal_sample_uniques`)
on a synthetic survey of ``rows`` records x 10 quasi-identifiers, beside its floor: the
key counts of every column subset searched (``distinct_rows`` of each, the counting any
level-wise search does), measured side by side in one run (interleaved, medians, wall and
CPU seconds), for MSUs up to 3 columns (SUDA's usual threshold) and up to all 10, and the
SUDA / DIS-SUDA scores on top of the search up to 3 columns.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_msu.py [runs] [rows]``.
"""

from __future__ import annotations

import sys
from itertools import combinations

import numpy as np

from _timing import side_by_side
from bench_sdc_risk import survey_codes
from privlab.data.counts import distinct_rows
from privlab.metrics.msu import minimal_sample_uniques, suda_scores


def main(runs: int = 3, rows: int = 1_000_000) -> None:
    codes = survey_codes(rows, np.random.default_rng(0))  # bench_sdc_risk.py's survey
    d = codes.shape[1]

    def floor(top: int) -> int:
        for k in range(1, top + 1):
            for cols in combinations(range(d), k):
                distinct_rows(codes[:, cols])
        return top

    cases = {
        "count<=3": lambda: floor(3),
        "msu<=3": lambda: minimal_sample_uniques(codes, max_size=3),
        "suda<=3": lambda: suda_scores(codes, max_size=3),  # one MSU search + the scores
        "count<=10": lambda: floor(d),
        "msu<=10": lambda: minimal_sample_uniques(codes),
    }
    wall, cpu, out = side_by_side(cases, runs)
    print(f"{rows:,} records x {d} quasi-identifiers; medians of {runs} runs")
    for name in cases:
        floor_name = "count<=3" if name.endswith("3") else "count<=10"
        print(f"  {name:<10} {wall[name]:8.2f} s wall {cpu[name]:8.2f} s CPU   "
              f"{wall[name] / wall[floor_name]:5.2f}x the subsets' key counts")  # fmt: skip
    for name in ("msu<=3", "msu<=10"):
        m = out[name]
        print(f"  {name}: {m.record.size:,} MSUs; records with an MSU of at most 1, 2, 3 "
              f"columns: {[m.records_with_msu(k) for k in (1, 2, 3)]}")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
