"""The random-worlds baseline (seed 003 Sec. 4; Anatomy's own privacy argument).

An attacker who reasons by random worlds gives each tuple the share of each sensitive value
in its group: ``P(t.S = v) = c_{g(t), v} / |g(t)|``.  Anatomy's 1/l guarantee is exactly the
statement that this posterior never exceeds ``1/l``.
"""

from __future__ import annotations

import numpy as np

from privlab.attacks._layout import layout_of
from privlab.attacks.posterior import Posterior


def random_worlds_attack(release) -> Posterior:
    """The random-worlds posterior of every QIT row of an anatomy release."""
    layout_of(release)  # validates that it is an anatomy release
    counts = release.group_counts().astype(np.float64)
    probs = counts / counts.sum(axis=1, keepdims=True)
    return Posterior(
        probs=probs[release.group_id],
        group_id=release.group_id,
        values=tuple(str(v) for v in release.sensitive.domain),
        method="random-worlds",
    )
