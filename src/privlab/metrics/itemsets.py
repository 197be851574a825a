"""How well frequent itemsets mined from randomized data match the truth (Ma 2006, Sec. 7.1.4).

The thesis's four measures, against the itemsets that are frequent in the original data:

* the number of frequent itemsets found;
* the average support error ``|sup^ - sup| / N`` over the itemsets found (``sup`` their true
  support, also for a false positive);
* ``%FP = #(found, not truly frequent) / #(truly frequent)``;
* ``%FN = #(truly frequent, not found) / #(truly frequent)``.

Both percentages are relative to the number of truly frequent itemsets, as the thesis defines
them, so %FP can exceed 100.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from privlab._frames import ToFrames
from privlab.errors import ParameterError

__all__ = ["ItemsetScores", "itemset_scores"]


@dataclass(frozen=True)
class ItemsetScores(ToFrames):
    """Ma's Sec. 7.1.4 measures of one mining run."""

    found: int
    truly_frequent: int
    false_positives: int
    false_negatives: int
    avg_support_error: float
    false_positive_pct: float
    false_negative_pct: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame([self.to_dict()])


def itemset_scores(
    estimated: Mapping[Hashable, float],
    true_support: Mapping[Hashable, float],
    truly_frequent: Collection[Hashable],
) -> ItemsetScores:
    """Score the itemsets found (``estimated``: itemset -> estimated support share) against the
    truth: ``true_support`` gives the true share of every itemset found, ``truly_frequent`` the
    itemsets frequent in the original data."""
    truth = set(truly_frequent)
    missing = [s for s in estimated if s not in true_support]
    if missing:
        raise ParameterError(f"no true support for the found itemset {missing[0]!r}")
    if not truth:
        raise ParameterError("no itemset is frequent in the original data: %FP and %FN are 0/0")
    found = set(estimated)
    fp = len(found - truth)
    fn = len(truth - found)
    err = (
        sum(abs(float(estimated[s]) - float(true_support[s])) for s in found) / len(found)
        if found
        else 0.0
    )
    return ItemsetScores(
        found=len(found),
        truly_frequent=len(truth),
        false_positives=fp,
        false_negatives=fn,
        avg_support_error=err,
        false_positive_pct=100.0 * fp / len(truth),
        false_negative_pct=100.0 * fn / len(truth),
    )
