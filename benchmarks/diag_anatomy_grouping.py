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
from privlab.experiments._adult import adult_release
from privlab.metrics.calibration import evaluate
from privlab.publish.anatomy import AnatomyRelease


def random_pairs(release: AnatomyRelease, seed: int) -> AnatomyRelease:
    """The same tuples in uniformly random pairs of distinct sensitive values."""
    truth = release.truth
    rng = np.random.default_rng(seed)
    n = truth.size
    order = rng.permutation(n)
    for _ in range(1000):
        bad = np.flatnonzero(truth[order[0::2]] == truth[order[1::2]])
        if bad.size == 0:
            break
        for i in bad:  # swap the second member with a random pair's second member
            j = rng.integers(n // 2)
            order[2 * i + 1], order[2 * j + 1] = order[2 * j + 1], order[2 * i + 1]
    else:
        raise RuntimeError("could not pair the tuples")
    gid = np.empty(n, dtype=np.int64)
    gid[order[0::2]] = np.arange(n // 2)
    gid[order[1::2]] = np.arange(n // 2)
    keys, cnt = np.unique(np.column_stack([gid, truth]), axis=0, return_counts=True)
    return AnatomyRelease(
        qit=release.qit, group_id=gid, st_group=keys[:, 0], st_value=keys[:, 1],
        st_count=cnt, sensitive=release.sensitive, l=2, seed=seed, truth=truth,
    )  # fmt: skip


def main(iterations: int = 4000) -> None:
    rel = adult_release(2, 0)
    for name, r in (("xiao-tao (anatomize)", rel), ("random distinct pairs", random_pairs(rel, 5))):
        post = run_definetti(r, iterations=iterations, chains=2, rng=1).posterior
        ev = evaluate(post.probs, rel.truth)
        print(f"{name:24s} ACC {ev.acc:.4f}  ABS/tuple {ev.abs_per_tuple:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
