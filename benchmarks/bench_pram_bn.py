"""Benchmark: learn Fig. 5.2's parameters (11 nodes, with sds) from 20,000 and 2,000,000
PRAM-randomized rows (Table 5.1's schemes), and one K2 search on 6 nodes (Ma 2006, Ch. 5).

Run by hand: ``.venv/bin/python benchmarks/bench_pram_bn.py``.  Times exclude drawing and
randomizing the data (the release exists); the median of ``repeats`` runs is printed.
"""

from __future__ import annotations

import time

import numpy as np

from privlab.experiments._bn_networks import FIG_5_2, FIG_5_3, table_5_1
from privlab.experiments.bn_table5_2 import network_table
from privlab.learn.pram_bn import learn_parameters
from privlab.learn.pram_k2 import k2_search
from privlab.publish.randomization import binary_symmetric_matrix, randomize


def _median(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(repeats: int = 5) -> None:
    m = table_5_1()
    keep = [c for c in FIG_5_2.nodes if c not in m]
    for n in (20_000, 2_000_000):
        table = network_table(FIG_5_2, FIG_5_2.sample(n, rng=1))
        rel = randomize(table, m, keep=keep, rng=2)
        t = _median(lambda rel=rel: learn_parameters(rel, FIG_5_2.parents), repeats)
        t_em = _median(lambda rel=rel: learn_parameters(rel, FIG_5_2.parents, estimator="em"), 1)
        print(f"Fig. 5.2 parameters + sds from {n:>9,} rows: moment {t * 1000:8.1f} ms, "
              f"EM {t_em * 1000:8.1f} ms")  # fmt: skip
    table = network_table(FIG_5_3, FIG_5_3.sample(10_000, rng=3))
    rel = randomize(table, dict.fromkeys(FIG_5_3.nodes, binary_symmetric_matrix(0.2)), keep=[],
                    rng=4)  # fmt: skip
    t = _median(lambda: k2_search(rel, max_parents=3), repeats)
    t_ex = _median(lambda: k2_search(rel, max_parents=3, search="exhaustive"), repeats)
    print(f"K2 search, 6 nodes, 10,000 rows, u = 3: greedy {t * 1000:.1f} ms, "
          f"exhaustive {t_ex * 1000:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
