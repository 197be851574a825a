"""Benchmark: population uniques (metrics.uniqueness) per model, beside ARX.

Run by hand (not in CI)::

    .venv/bin/python benchmarks/bench_uniqueness.py [--repeats 5] [--arx-build /tmp/arxbuild]

Cases: ARX's Adult on the three quasi-identifier sets of the golden file at sampling fractions
0.01-0.5, and the class-size histogram of 1,000,000 records drawn from a Zipf(1.1) population
of 2 million keys, at 0.01 and 0.5.  privlab: the best of ``--repeats`` calls per model (the
class sizes given as a histogram; grouping not timed).  ARX (with ``--arx-build``, the output
directory of ``benchmarks/arx/build_arx.sh``): ``ArxUniqueness.java``'s median of 7 fresh
computations of all four estimates, in one JVM.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "arx")]

from arx_uniqueness import QI_SETS, run_arx, zipf_sample_histogram  # noqa: E402

from _timing import best  # noqa: E402
from privlab.metrics.uniqueness import population_uniques  # noqa: E402

ROOT = HERE.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--arx-build", type=Path, default=None)
    args = ap.parse_args()
    adult = pd.read_csv(ROOT / "tests" / "data" / "arx" / "adult.csv.gz", sep=";", dtype=str)
    cases: list[tuple[str, float, dict[int, int]]] = []
    for name, qi in QI_SETS.items():
        sizes = adult.groupby(list(qi)).size().value_counts().sort_index()
        h = {int(k): int(v) for k, v in sizes.items()}
        cases += [(name, f, h) for f in (0.01, 0.05, 0.1, 0.2, 0.5)]
    big = zipf_sample_histogram(1_000_000)
    cases += [("zipf-1M", f, big) for f in (0.01, 0.5)]
    arx_ms: dict[tuple[str, str], str] = {}
    if args.arx_build is not None:
        lines, seen = [], set()
        for name, _, h in cases:
            if name not in seen:
                seen.add(name)
                fr = ",".join(str(f) for n, f, _ in cases if n == name)
                lines.append(f"hist;{name};{' '.join(f'{s}:{c}' for s, c in h.items())};{fr}")
        arx_ms = {(r[0], r[1]): r[10] for r in run_arx(args.arx_build, lines)}
    print("case;fraction;model;privlab ms;uniques;chosen;ARX ms (all four)")
    for name, f, h in cases:
        for model in ("zayatz", "pitman", "snb", "dankar"):
            call = partial(population_uniques, histogram=h, sampling_fraction=f, model=model)
            t, r = best(call, args.repeats)
            arx = arx_ms.get((name, str(f)), "") if model == "dankar" else ""
            print(f"{name};{f};{model};{t * 1e3:.2f};{r.uniques};{r.chosen};{arx}")


if __name__ == "__main__":
    main()
