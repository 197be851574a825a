"""Learners on sanitized data (scikit-learn estimator API).

* ``dp_naive_bayes.DPNaiveBayes``: DP Naive Bayes from noisy histograms with empirical-Bayes
  post-processing (Mothali 2011, Ch. 8).
* ``dp_tree.DPDecisionTreeClassifier``: DP ID3 with the exponential mechanism
  (Friedman & Schuster 2010).
* ``dp_forest.DPRandomForestClassifier``: a forest of those trees on disjoint random parts
  of the records (every tree gets the full ε by parallel composition).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DPNaiveBayes": "dp_naive_bayes",
    "DPDecisionTreeClassifier": "dp_tree",
    "DPRandomForestClassifier": "dp_forest",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
