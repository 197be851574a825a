"""Benchmark ``anatomize`` (Xiao & Tao 2006) beside privlab's implementation before the
compiled group creation (tests/anatomy_reference.py: the Python heapq loop, the groups x
values count matrix, the old release validation), measured side by side in one run
(interleaved, medians, wall and CPU seconds), as ratios:

* the 30,162 Adult tuples for l = 2..6 (target: < 1 s at l = 4);
* Adult replicated to 1.9 million tuples (63 copies) for l = 2..6 (target: >= 5x faster
  than before on the whole ``anatomize`` call), and the group creation alone
  (``_anatomize_groups``: heap loop and residues).

Both paths are given the same generator seed and must publish the same release (checked).
The kernel is compiled (or loaded from numba's cache) before timing.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_anatomy.py [runs] [copies]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import privlab.publish.anatomy as an
import privlab.publish.anatomy_core as core
from privlab.data import Table, load_adult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import anatomy_reference as ref  # the oracle lives in tests/
from _timing import medians, timed

QI = ["workclass", "relationship", "sex", "salary"]
SENSITIVE = "occupation"


def _same(a: an.AnatomyRelease, b: an.AnatomyRelease) -> bool:
    return all(
        np.array_equal(getattr(a, k), getattr(b, k))
        for k in ("group_id", "st_group", "st_value", "st_count", "truth")
    ) and np.array_equal(a.qit.codes, b.qit.codes)


def side_by_side(
    label: str, cases: dict[str, Callable[[np.random.Generator], Any]], runs: int
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each case, run interleaved ``runs`` times, each run
    seeding every case alike; the cases' outputs must agree."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for r in range(runs):
        outs = []
        for name, f in cases.items():
            wall, cpu, out = timed(lambda f=f, r=r: f(np.random.default_rng(r)))
            times[name].append((wall, cpu))
            outs.append(out)
        same = _same if isinstance(outs[0], an.AnatomyRelease) else np.array_equal
        if not all(same(o, outs[0]) for o in outs[1:]):
            raise AssertionError(f"{label}: the cases disagree (run {r})")
    wall, cpu = medians(times)
    med = {k: (wall[k], cpu[k]) for k in times}
    (bw, bc), (nw, nc) = med["before"], med["now"]
    print(
        f"  {label}: before {bw:7.3f} s ({bc:7.3f} CPU)   now {nw:6.3f} s ({nc:6.3f} CPU)   "
        f"speed-up {bw / nw:5.2f}x wall ({bc / nc:5.2f}x CPU)"
    )
    return med


def bench_table(table: Table, ls: range, runs: int, groups_too: bool) -> None:
    s = table.column(SENSITIVE).astype(np.int64)
    for l in ls:

        def anatomize(f, gen, l=l):
            # each call hashes the input, as a first release of a table does (a table keeps
            # its fingerprint once taken: Table.fingerprint)
            table.__dict__.pop("_fingerprint", None)
            return f(table, qi=QI, sensitive=SENSITIVE, l=l, rng=gen)

        side_by_side(
            f"anatomize l = {l}",
            {
                "before": lambda g: anatomize(ref.anatomize, g),
                "now": lambda g: anatomize(an.anatomize, g),
            },
            runs,
        )
        if groups_too:
            side_by_side(
                f"  groups only l = {l}",
                {
                    "before": lambda g, l=l: ref._anatomize_groups(s, l, g),
                    "now": lambda g, l=l: an.anatomize_groups(s, l, g).group,
                },
                runs,
            )


def main(runs: int = 5, copies: int = 63) -> None:
    adult = load_adult()
    kw = dict(qi=QI, sensitive=SENSITIVE, l=2)
    saved, core.KERNEL_MIN = core.KERNEL_MIN, 0
    an.anatomize(adult.take(np.arange(1000)), **kw, rng=0)  # compile / load the kernels
    core.KERNEL_MIN = saved
    print(f"anatomize Adult ({adult.n_rows:,} tuples), median of {runs} interleaved runs:")
    bench_table(adult, range(2, 7), runs, groups_too=False)
    big = adult.take(np.tile(np.arange(adult.n_rows), copies))
    print(
        f"anatomize Adult x {copies} ({big.n_rows:,} tuples; QI {', '.join(QI)}; sensitive "
        f"{SENSITIVE}), median of {runs} interleaved runs:"
    )
    bench_table(big, range(2, 7), runs, groups_too=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
