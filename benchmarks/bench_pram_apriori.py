"""Benchmark: Apriori from group-randomized items on Mushroom x 30 (243,720 records, 23 items).

Side by side in one run: privlab's :class:`PramApriori` at p = 0 (plain Apriori) against
mlxtend's ``apriori`` (``low_memory=False`` and ``True``) on the same boolean items, then
privlab at p = 0.3 (estimated supports), and the group randomization itself.
Run by hand: ``.venv/bin/python benchmarks/bench_pram_apriori.py``.

Where the time goes: a candidate's randomized support is one AND of its prefix's bit vector
with its last item and a popcount over N/64 words (3,808 words here); its estimate is a
Möbius transform and a dot product over its 2^k subsets, whose supports are looked up in a
dict, in Python.  With ~2,900 candidates up to size 9, that Python work per candidate
dominates at this N (about 0.1 ms each); the counting would only dominate from a few million
records on.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from mlxtend.frequent_patterns import apriori

from _timing import best
from privlab.experiments.apriori_fig7 import mushroom_items, randomize_groups
from privlab.learn.pram_apriori import PramApriori


def main(repeats: int = 3) -> None:
    items, names, groups = mushroom_items()
    data = np.tile(items, (30, 1))
    frame = pd.DataFrame(data.astype(bool), columns=names)
    t_exact, exact = best(
        lambda: PramApriori(min_support=0.05).fit(data, groups=groups, p=0.0), repeats
    )
    t_mlx, ref = best(lambda: apriori(frame, min_support=0.05), repeats)
    t_mlx_low, _ = best(lambda: apriori(frame, min_support=0.05, low_memory=True), repeats)
    rng = np.random.default_rng(0)
    t_rand, rand = best(lambda: randomize_groups(data, groups, 0.3, rng), repeats)
    t_est, est = best(
        lambda: PramApriori(min_support=0.05).fit(rand, groups=groups, p=0.3), repeats
    )
    assert len(exact.itemsets_) == len(ref)
    n_cand = sum(c for _, c, _ in exact.itemsets_.levels)
    print(f"Mushroom x 30: {len(data):,} records, 23 items, {len(ref)} frequent itemsets, "
          f"{n_cand} candidates (best of {repeats})")  # fmt: skip
    print(f"  privlab Apriori, p = 0            {t_exact * 1e3:9.0f} ms")
    print(f"  mlxtend apriori                   {t_mlx * 1e3:9.0f} ms  "
          f"({t_mlx / t_exact:.2f}x privlab's time)")  # fmt: skip
    print(f"  mlxtend apriori, low_memory       {t_mlx_low * 1e3:9.0f} ms  "
          f"({t_mlx_low / t_exact:.2f}x)")  # fmt: skip
    print(f"  group randomization, p = 0.3      {t_rand * 1e3:9.0f} ms")
    print(f"  privlab Apriori, p = 0.3          {t_est * 1e3:9.0f} ms  "
          f"({len(est.itemsets_)} itemsets)")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
