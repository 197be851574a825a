"""privlab: privacy-preserving data publishing and mining.

Sanitize microdata (Anatomy, generalization, PRAM, alpha-beta, anonymized marginals,
differential privacy), attack any release as a learning adversary, learn from sanitized data
and reproduce the source papers' results.  The command line is ``privlab``; the library's
entry points live in its subpackages (``privlab.data``, ``privlab.publish``,
``privlab.attacks``, ``privlab.report``, ...).
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
