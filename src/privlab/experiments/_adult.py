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
