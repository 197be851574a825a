"""Benchmark the individual risk (:func:`privlab.metrics.sdc_risk.individual_risk`) on a
synthetic survey of ``rows`` records x 10 quasi-identifiers with sampling weights, beside its
floor, the key count alone (``distinct_rows``: every method needs each record's key and
``fk``), measured side by side in one run (interleaved, medians, wall and CPU seconds):

* ``keys``: ``distinct_rows`` of the codes (the floor);
* ``unweighted``: the risk ``1/fk`` (no weights);
* ``approx``: Benedetti-Franconi with weights, sdcMicro's default approximation;
* ``exact``: the same with the exact risk of keys of 3 or more records (a numerical
  integral per distinct ``(fk, Fk)`` pair).

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_sdc_risk.py [runs] [rows]``.
"""

from __future__ import annotations

import sys

import numpy as np

from _timing import medians, timed
from privlab.data.counts import distinct_rows
from privlab.metrics.sdc_risk import individual_risk

#: domain sizes of the 10 quasi-identifiers (a census-like mix: age, sex, region, ...)
SIZES = (90, 2, 12, 7, 5, 16, 4, 9, 3, 6)


def survey_codes(rows: int, gen: np.random.Generator) -> np.ndarray:
    """``rows`` records of the 10 quasi-identifiers: skewed columns, so that keys range from
    unique to thousands of records (also ``bench_msu.py``'s input)."""
    return np.column_stack([
        np.minimum(gen.geometric(0.6, rows) - 1, s - 1) for s in SIZES
    ]).astype(np.int32)  # fmt: skip


def main(runs: int = 3, rows: int = 1_000_000) -> None:
    gen = np.random.default_rng(0)
    codes = survey_codes(rows, gen)
    weights = gen.choice([50.0, 100.0, 250.0, 400.0], rows)
    cases = {
        "keys": lambda: distinct_rows(codes),
        "unweighted": lambda: individual_risk(codes),
        "approx": lambda: individual_risk(codes, weights),
        "exact": lambda: individual_risk(codes, weights, method="exact"),
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    out = {}
    for _ in range(runs):
        for name, f in cases.items():
            wall, cpu, out[name] = timed(f)
            times[name].append((wall, cpu))
    wall, cpu = medians(times)
    counts = out["keys"][2]
    print(f"{rows:,} records x {len(SIZES)} quasi-identifiers: {counts.size:,} keys, "
          f"{int((counts == 1).sum()):,} sample uniques; medians of {runs} runs")  # fmt: skip
    for name in cases:
        print(f"  {name:<11} {wall[name]:7.3f} s wall {cpu[name]:7.3f} s CPU   "
              f"{wall[name] / wall['keys']:5.2f}x the key count")  # fmt: skip
    for name in ("approx", "exact"):
        r = out[name]
        print(f"  {name}: expected re-identifications {r.expected_reidentifications:,.1f}, "
              f"global risk {100 * r.global_risk:.3f}%")  # fmt: skip
    gap = np.abs(out["approx"].risk - out["exact"].risk)
    print(
        f"  approx - exact: largest gap {gap.max():.2e}, global risk gap "
        f"{100 * abs(out['approx'].global_risk - out['exact'].global_risk):.2e} points"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
