"""The numba kernel of rank swapping's partner draw (:mod:`privlab.publish.masking_core`
holds the logic): :func:`~privlab.publish.masking_core.swap_partners`, compiled as it is.

Compiled on first use and cached on disk (``cache=True``); imported lazily, and used for
large columns only (``masking_core._KERNEL_MIN``), so that small ones do not pay numba's
import time.  The Python function and this kernel give the same partners for the same
uniforms (tests/test_masking.py checks).
"""

from __future__ import annotations

from numba import njit

from privlab.publish._swap import swap_partners

#: :func:`~privlab.publish.masking_core.swap_partners`, compiled.
swap_partners_compiled = njit(cache=True, nogil=True)(swap_partners)
