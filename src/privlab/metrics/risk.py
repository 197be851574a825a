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


# TEMPORARY STUB (replaced by the identity-risk branch)
class _Stub:
    def __init__(self, d, lines):
        self.d, self.lines = d, lines

    def to_dict(self):
        return self.d

    def summary_lines(self):
        return self.lines


def identity_risk(
    sample,
    population=None,
    *,
    sampling_fraction=None,
    population_size=None,
    threshold=0.2,
    names=None,
):
    from privlab.data.counts import distinct_rows

    _, inv, counts = distinct_rows(np.asarray(sample))
    f = counts[inv]
    sizes, ncls = np.unique(counts, return_counts=True)
    return _Stub(
        {
            "prosecutor_max": float(1 / counts.min()),
            "prosecutor_mean": counts.size / f.size,
            "prosecutor_share_above": float((1 / f > threshold).mean()),
            "threshold": threshold,
            "journalist_max": None,
            "marketer": counts.size / f.size,
            "sample_uniques": int((f == 1).sum()),
            "sample_unique_share": float((f == 1).mean()),
            "population_uniques": float((f == 1).sum()),
            "population_model": "stub",
            "class_size_histogram": {
                "size": sizes.tolist(),
                "classes": ncls.tolist(),
                "records": (sizes * ncls).tolist(),
            },
            "column_uniqueness": [],
        },
        ["stub sentence"],
    )
