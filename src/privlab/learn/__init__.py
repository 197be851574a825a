"""Learners on sanitized data (scikit-learn estimator API).

* ``dp_naive_bayes.DPNaiveBayes``: DP Naive Bayes from noisy histograms with empirical-Bayes
  post-processing (Mothali 2011, Ch. 8).
* ``dp_tree.DPDecisionTreeClassifier``: DP ID3 with the exponential mechanism
  (Friedman & Schuster 2010).
* ``dp_forest.DPRandomForestClassifier``: a forest of those trees on disjoint random parts
  of the records (every tree gets the full ε by parallel composition).
* ``pram_bn``: Bayesian-network parameters from PRAM-randomized data (Ma 2006, Ch. 5), both
  protocols of Sec. 5.2.1; ``bayesnet.BayesianNetwork`` is the result.
* ``pram_k2``: K2 structure search on PRAM data with the K2 and BIC scores (Ma Sec. 5.5).
* ``pram_pocket.PramPocketClassifier``: the weighted Pocket (EM posterior weights, Gallant's
  pocket with ratchet) and the plain-pocket baseline from PRAM data (Ma 2006, Ch. 6).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DPNaiveBayes": "dp_naive_bayes",
    "DPDecisionTreeClassifier": "dp_tree",
    "DPRandomForestClassifier": "dp_forest",
    "BayesianNetwork": "bayesnet",
    "PramBayesNetEstimator": "pram_bn",
    "PramPocketClassifier": "pram_pocket",
    "learn_parameters": "pram_bn",
    "learn_parameters_no_miner": "pram_bn",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
