"""Sanitizers: each module turns a table into a release of the one family
(:class:`~privlab.release.base.Release`, in the release layer below).

=====================  ==========================================  =========================
module                 what                                        release (``method``)
=====================  ==========================================  =========================
``anatomy``            Anatomy (Xiao & Tao 2006)                   ``AnatomyRelease``
``generalization``     full-domain optimal / Mondrian recoding     ``GeneralizedRelease``
``randomization``      PRAM (Ma 2006)                              ``PramRelease``
``alpha_beta``         alpha-beta (Rastogi, Suciu & Hong 2007)     ``AlphaBetaRelease``
``marginals``          anonymized marginals (Kifer & Gehrke 2006)  --
``mgas``               MGAS discretization (Ma 2006)               --
``synthetic``          DP synthetic data: MST, AIM (McKenna et     ``SyntheticRelease``
                       al. 2021, 2022) over private-pgm            (``dp-synthetic``)
=====================  ==========================================  =========================

``from privlab.publish import anatomize, generalize, pram, alphabeta`` gives the sanitizers
(PRAM's module is named ``randomization`` and alpha-beta's ``alpha_beta`` so that ``pram``
and ``alphabeta`` are always the functions).  Exports are
loaded lazily so that ``import privlab.publish.anatomy`` does not pay for numba-compiled
modules it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Release": "privlab.release.base",
    "Custody": "privlab.release.base",
    "load_release": "privlab.release.base",
    "read_meta": "privlab.release.base",
    "AnatomyRelease": "anatomy",
    "anatomize": "anatomy",
    "GeneralizedRelease": "generalization",
    "generalize": "generalization",
    "PrivacyModel": "models",
    "PramRelease": "randomization",
    "pram": "randomization",
    "randomize": "randomization",
    "mgas_1d": "mgas",
    "AlphaBetaRelease": "alpha_beta",
    "alphabeta": "alpha_beta",
    "greedy_marginals": "marginals",
    "make_marginal": "marginals",
    "SyntheticRelease": "synthetic",
    "mst": "synthetic",
    "aim": "synthetic",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        where = _EXPORTS[name]
        module = where if "." in where else f"{__name__}.{where}"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
