"""The random-worlds baseline (Kifer 2009, Sec. 4; Anatomy's own privacy argument).

An attacker who reasons by random worlds gives each tuple the share of each sensitive value
in its group: ``P(t.S = v) = c_{g(t), v} / |g(t)|``.  Anatomy's 1/l guarantee is exactly the
statement that this posterior never exceeds ``1/l``.
"""

from __future__ import annotations

import numpy as np

from privlab.attacks._layout import partition_of, values_of
from privlab.attacks.posterior import Posterior
from privlab.release.views import Grouped


def random_worlds_attack(release: Grouped) -> Posterior:
    """The random-worlds posterior of every published row of a release with a partition
    (Anatomy's groups, a generalized table's classes)."""
    part = partition_of(release)
    counts = part.counts.astype(np.float64)
    probs = counts / counts.sum(axis=1, keepdims=True)
    return Posterior(
        probs=probs[part.group_of],
        group_id=part.group_of,
        values=values_of(part),
        method="random-worlds",
        release_kind=getattr(release, "method", None),
        sensitive=part.sensitive.name,
        threat_model=(
            "the attacker knows each group's sensitive values and nothing else: every "
            "assignment within a group is equally likely (random worlds)"
        ),
    )
