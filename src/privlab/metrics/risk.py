"""Re-identification risk of a published partition (prosecutor model; El Emam 2008, ARX).

Under the prosecutor model the adversary knows the target is in the release and links on
the quasi-identifiers: a record in an equivalence class of size ``f`` is re-identified with
probability ``1/f``.  Reported: the largest risk (``1/k``), the mean risk (number of classes
over number of records) and the share of records whose risk exceeds a threshold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from privlab.errors import ParameterError, PrivlabError

DEFAULT_THRESHOLD = 0.2


@dataclass(frozen=True)
class RiskSummary:
    """Prosecutor re-identification risk of a release."""

    max_risk: float
    mean_risk: float
    share_above: float
    threshold: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def prosecutor_risk(
    class_sizes: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD
) -> RiskSummary:
    """Max, mean and share of records above ``threshold`` of the prosecutor risk."""
    if not 0 <= threshold <= 1:
        raise ParameterError(f"threshold must be in [0, 1], got {threshold}")
    s = np.asarray(class_sizes, dtype=np.int64)
    if s.size == 0 or (s <= 0).any():
        raise PrivlabError("class sizes must be positive and non-empty")
    n = int(s.sum())
    return RiskSummary(
        max_risk=float(1.0 / s.min()),
        mean_risk=float(s.size / n),
        share_above=float(s[1.0 / s > threshold].sum() / n),
        threshold=float(threshold),
    )
