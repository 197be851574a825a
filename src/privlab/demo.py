"""``privlab demo`` / ``make demo``: the main job on the bundled Adult data.

Anatomizes Adult with the setting of seed 003 Sec. 6 (QI workclass, relationship, sex,
salary; sensitive occupation) for l = 2, 3, 4 and reports each release's privacy measures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privlab.data.datasets import load_adult
from privlab.publish.anatomy import anatomize

DEMO_QI = ("workclass", "relationship", "sex", "salary")
DEMO_SENSITIVE = "occupation"


def run_demo(
    out: str | Path, *, seed: int = 0, ls: tuple[int, ...] = (2, 3, 4)
) -> list[dict[str, Any]]:
    """Anatomize Adult for each ``l``; save each release (with truth) under ``out``."""
    out = Path(out)
    table = load_adult()
    rows = []
    for i, l in enumerate(ls):
        release = anatomize(table, qi=DEMO_QI, sensitive=DEMO_SENSITIVE, l=l, rng=seed + i)
        release.save(out / f"anatomy-l{l}", keep_truth=True, force=True)
        p = release.privacy()
        rows.append(
            {
                "l": l,
                "tuples": release.n_rows,
                "groups": release.n_groups,
                "k": p.k,
                "distinct_l": p.distinct_l,
                "random_worlds_max": round(p.max_disclosure, 4),
            }
        )
    return rows
