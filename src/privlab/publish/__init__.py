"""Sanitizers: each module turns a Table into a frozen Release with save/load.

=====================  ==========================================  =========================
module                 what                                        release (``method``)
=====================  ==========================================  =========================
``anatomy``            Anatomy (Xiao & Tao 2006)                   ``AnatomyRelease``
``generalization``     full-domain optimal / Mondrian recoding     ``GeneralizedRelease``
``pram``               PRAM randomization (Ma 2006)                ``PramRelease``
``pram_estimation``    moment and EM estimates from PRAM data      --
``mgas``               MGAS discretization                         --
=====================  ==========================================  =========================

Exports are loaded lazily so that ``import privlab.publish.anatomy`` does not pay for
numba-compiled modules it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AnatomyRelease": "anatomy",
    "anatomize": "anatomy",
    "GeneralizedRelease": "generalization",
    "generalize": "generalization",
    "PramRelease": "pram",
    "pram": "pram",
    "moment_estimate": "pram_estimation",
    "em_estimate": "pram_estimation",
    "mgas_1d": "mgas",
    "load_release": "release",
    "read_meta": "release",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
