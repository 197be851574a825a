"""The Adult setting of Kifer 2009 Sec. 6 and Mothali 2011 Sec. 4.5, shared by the reproductions.

30,162 tuples (missing values dropped); QI workclass, relationship, sex, salary; sensitive
occupation (14 values); Anatomy with groups of 2, 3 and 4 (l = 2, 3, 4).
"""

from __future__ import annotations

import numpy as np

from privlab.attacks._layout import layout_of
from privlab.attacks.em import run_em
from privlab.data.datasets import load_adult
from privlab.publish.anatomy import AnatomyRelease, anatomize

QI = ("workclass", "relationship", "sex", "salary")
SENSITIVE = "occupation"
GROUP_SIZES = (2, 3, 4)


def adult_release(l: int, rng: np.random.Generator | int | None) -> AnatomyRelease:
    """Anatomize Adult with the seeds' setting at diversity ``l`` (truth kept)."""
    return anatomize(load_adult(), qi=QI, sensitive=SENSITIVE, l=l, rng=rng)


def random_pairs(release: AnatomyRelease, rng: np.random.Generator) -> AnatomyRelease:
    """The same tuples in uniformly random pairs of distinct sensitive values (l = 2).

    Kifer (2009 Sec. 6) says only that he "generated anatomized tables with 2 tuples per
    group"; privlab's :func:`~privlab.publish.anatomize` pairs tuples by Xiao & Tao's rule (one
    from each of the two largest buckets), which on Adult leaves the attacker less to learn
    (benchmarks/diag_anatomy_grouping.py).  Random distinct pairs: a random permutation cut
    into pairs, each pair holding one value twice repaired by exchanging its second member
    with that of a random pair.
    """
    truth = release.truth
    n = truth.size
    order = rng.permutation(n)
    for _ in range(1000):
        bad = np.flatnonzero(truth[order[0::2]] == truth[order[1::2]])
        if bad.size == 0:
            break
        for i in bad:
            j = rng.integers(n // 2)
            order[2 * i + 1], order[2 * j + 1] = order[2 * j + 1], order[2 * i + 1]
    else:
        raise RuntimeError("could not pair the tuples into distinct values")
    gid = np.empty(n, dtype=np.int64)
    gid[order[0::2]] = np.arange(n // 2)
    gid[order[1::2]] = np.arange(n // 2)
    keys, cnt = np.unique(np.column_stack([gid, truth]), axis=0, return_counts=True)
    return AnatomyRelease(
        qit=release.qit, group_id=gid, st_group=keys[:, 0], st_value=keys[:, 1],
        st_count=cnt, sensitive=release.sensitive, l=2, custody=release.custody,
    )  # fmt: skip


def adult_em_runs(l: int, rngs: list[np.random.Generator], *, restarts: int, exact_init: str):
    """The thesis's Ch. 5 setting: Adult anatomized at ``l`` (``rngs[0]``), the approximate
    EM from Dirichlet starts (``rngs[1]``, at most 300 iterations) and the exact EM from
    ``exact_init`` starts (``rngs[2]``).  Returns ``(release, layout, approx, exact)``."""
    release = adult_release(l, rngs[0])
    lay = layout_of(release)
    approx = run_em(
        release, restarts=restarts, approximate=True, init="dirichlet", max_iter=300,
        rng=rngs[1], layout=lay,
    )  # fmt: skip
    exact = run_em(release, restarts=restarts, init=exact_init, rng=rngs[2], layout=lay)
    return release, lay, approx, exact
