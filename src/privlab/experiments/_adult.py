"""The Adult setting of Kifer 2009 Sec. 6 and Mothali 2011 Sec. 4.5, shared by the reproductions.

30,162 tuples (missing values dropped); QI workclass, relationship, sex, salary; sensitive
occupation (14 values); Anatomy with groups of 2, 3 and 4 (l = 2, 3, 4).
"""

from __future__ import annotations

import numpy as np

from privlab.data.datasets import load_adult
from privlab.publish.anatomy import AnatomyRelease, anatomize

QI = ("workclass", "relationship", "sex", "salary")
SENSITIVE = "occupation"
GROUP_SIZES = (2, 3, 4)


def adult_release(l: int, rng: np.random.Generator | int | None) -> AnatomyRelease:
    """Anatomize Adult with the seeds' setting at diversity ``l`` (truth kept)."""
    return anatomize(load_adult(), qi=QI, sensitive=SENSITIVE, l=l, rng=rng)
