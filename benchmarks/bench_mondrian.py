"""Benchmark Mondrian (LeFevre et al. 2006) at 1.9M rows: the compiled partitioning beside
privlab's Python implementation before it (tests/mondrian_reference.py).

The table: Adult's schema and the 8 usual quasi-identifiers, 1.9 million rows, each column
drawn independently from Adult's own marginal (seed 0), so that classes are small and ties
at the median frequent.  For each privacy model, median of interleaved runs, wall (CPU)
seconds, side by side in one run:

* the partitioning alone, ``mondrian_partition`` on the ordinal codes and width matrices
  ``generalize`` passes it (the two must give identical labels);
* ``generalize(method="mondrian")`` end to end, with ``_mondrian`` as it is and as it was
  (the two must publish identical tables).

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_mondrian.py [runs] [--l]``
(``--l`` adds distinct 2-diversity of ``salary``; the old code takes minutes there).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import privlab.publish.generalization as gz
from _timing import medians, timed
from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import ADULT_QI
from privlab.data.table import Table
from privlab.publish.mondrian import mondrian_partition

N = 1_900_000


def _table(n: int) -> Table:
    adult = load_adult()
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.choice(adult.codes[:, j], n) for j in range(adult.n_cols)])
    return Table(codes, adult.schema)


def _partition_args(table: Table, kw: dict) -> tuple:
    """The arguments ``generalize`` gives the partitioning (captured from one call)."""
    seen: list[tuple] = []
    real = gz.mondrian_classes

    class Captured(Exception):
        pass

    def capture(*args):
        seen.append(args)
        raise Captured

    gz.mondrian_classes = capture
    try:
        gz.generalize(table, qi=list(ADULT_QI), dataset="adult", method="mondrian", **kw)
    except Captured:
        pass
    finally:
        gz.mondrian_classes = real
    return seen[0]


def _report(label: str, times: dict[str, list[tuple[float, float]]]) -> None:
    wall, cpu = medians(times)
    print(
        f"  {label}: before {wall['before']:.2f} s ({cpu['before']:.2f}), now "
        f"{wall['now']:.2f} s ({cpu['now']:.2f}); speed-up {wall['before'] / wall['now']:.1f}x "
        f"wall ({cpu['before'] / cpu['now']:.1f}x CPU)"
    )


def bench(table: Table, kw: dict, runs: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import mondrian_reference as ref

    args = _partition_args(table, kw)
    x, model, s, m, widths = args
    mondrian_partition(x[:1000], model, None if s is None else s[:1000], m, widths)  # load
    part = {
        "before": lambda: ref.mondrian_partition(*args),
        "now": lambda: mondrian_partition(*args),
    }
    new_mondrian = gz._mondrian

    def release(impl):
        def run():
            gz._mondrian = impl
            try:
                return gz.generalize(
                    table, qi=list(ADULT_QI), dataset="adult", method="mondrian", **kw
                )
            finally:
                gz._mondrian = new_mondrian

        return run

    whole = {"before": release(ref._mondrian), "now": release(new_mondrian)}
    tp: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
    tw: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
    out: dict[str, Any] = {}
    for _ in range(runs):
        for name in ("before", "now"):
            w, c, labels = timed(part[name])
            tp[name].append((w, c))
            out["p" + name] = labels
            w, c, rel = timed(whole[name])
            tw[name].append((w, c))
            out["w" + name] = rel
    assert np.array_equal(out["pbefore"], out["pnow"]), "the partitions differ"
    a, b = out["wbefore"], out["wnow"]
    assert np.array_equal(a.table.codes, b.table.codes) and a.utility == b.utility
    print(
        f"{', '.join(f'{k}={v}' for k, v in kw.items())}: {int(out['pnow'].max()) + 1:,} "
        f"classes; median of {runs} interleaved runs, wall (CPU) seconds"
    )
    _report("partitioning", tp)
    _report("generalize(method='mondrian')", tw)


def main() -> None:
    warnings.simplefilter("ignore")
    runs = int(next((a for a in sys.argv[1:] if a.isdigit()), 3))
    t0 = time.perf_counter()
    table = _table(N)
    print(f"{N:,} rows, QIs {', '.join(ADULT_QI)} (built in {time.perf_counter() - t0:.1f} s)")
    bench(table, {"k": 5}, runs)
    bench(table, {"k": 50}, runs)
    if "--l" in sys.argv:
        bench(table, {"k": 5, "l": 2, "sensitive": "salary"}, runs)


if __name__ == "__main__":
    main()
