"""privlab: privacy-preserving data publishing and mining.

Sanitize microdata (Anatomy, generalization, PRAM, alpha-beta, anonymized marginals,
differential privacy), attack any release as a learning adversary, learn from sanitized data
and reproduce the source papers' results.  The command line is ``privlab``.

The main entry points are here, loaded on first use (``import privlab`` itself imports
nothing heavy)::

    import privlab

    adult = privlab.load_adult()
    release = privlab.anatomize(adult, qi=["age", "sex"], sensitive="occupation", l=4)
    report = privlab.build_report(release)

================  =====================================================================
from              names
================  =====================================================================
``data``          ``Table``, ``Schema``, ``Attribute``, ``Role``, ``load_adult``,
                  ``load_dataset``
``publish``       ``anatomize``, ``generalize``, ``pram``, ``alphabeta``,
                  ``greedy_marginals``, ``load_release``
``dp``            ``noisy_histogram``, ``BudgetAccountant``
``attacks``       ``definetti_attack``, ``em_attack``, ``pram_attack``, ``Posterior``
``report``        ``build_report`` (``privlab.report.build``), ``Report``, ``verdict``
``learn``         ``DPNaiveBayes``, ``DPDecisionTreeClassifier``,
                  ``DPRandomForestClassifier``, ``PramPocketClassifier``,
                  ``BayesianNetwork``
================  =====================================================================

Everything else lives in its subpackage (``privlab.metrics``, ``privlab.estimate``, ...).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# OpenMP's threads (numba's parallel kernels, scikit-learn's) sleep at a barrier instead of
# spinning, unless the user chose otherwise.  Spinning wins microseconds on an idle machine,
# but on a busy one a spinning thread holds a core that another needs: the report of a
# synthetic table took 225 s instead of 10 s while a second one ran beside it on 2 cores.
# OpenMP reads this when it is first loaded, which importing privlab first comes before.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.2.0"

#: name -> (subpackage, its name there)
_EXPORTS: dict[str, tuple[str, str]] = {
    "Table": ("data", "Table"),
    "Schema": ("data", "Schema"),
    "Attribute": ("data", "Attribute"),
    "Role": ("data", "Role"),
    "load_adult": ("data", "load_adult"),
    "load_dataset": ("data", "load_dataset"),
    "anatomize": ("publish", "anatomize"),
    "generalize": ("publish", "generalize"),
    "pram": ("publish", "pram"),
    "alphabeta": ("publish", "alphabeta"),
    "greedy_marginals": ("publish", "greedy_marginals"),
    "load_release": ("publish", "load_release"),
    "noisy_histogram": ("dp", "noisy_histogram"),
    "BudgetAccountant": ("dp", "BudgetAccountant"),
    "definetti_attack": ("attacks", "definetti_attack"),
    "em_attack": ("attacks", "em_attack"),
    "pram_attack": ("attacks", "pram_attack"),
    "Posterior": ("attacks", "Posterior"),
    "build_report": ("report", "build"),
    "Report": ("report", "Report"),
    "verdict": ("report", "verdict"),
    "DPNaiveBayes": ("learn", "DPNaiveBayes"),
    "DPDecisionTreeClassifier": ("learn", "DPDecisionTreeClassifier"),
    "DPRandomForestClassifier": ("learn", "DPRandomForestClassifier"),
    "PramPocketClassifier": ("learn", "PramPocketClassifier"),
    "BayesianNetwork": ("learn", "BayesianNetwork"),
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        package, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(f"{__name__}.{package}"), attr)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
