"""Attacks on releases: each returns a :class:`Posterior` of per-person disclosure.

* :func:`random_worlds_attack`: the baseline Anatomy's guarantee is stated in.
* :func:`definetti_attack` / :func:`run_definetti`: Kifer's deFinetti attack (Kifer 2009).
* :func:`em_attack` / :func:`run_em`: the Naive-Bayes EM attack (Mothali 2011 Ch. 4-5).
* :func:`exact_posterior`: the deFinetti model's posterior by enumeration (tiny tables).
"""

from privlab.attacks.definetti import DefinettiRun, definetti_attack, gelman_rubin, run_definetti
from privlab.attacks.em import EMRun, em_attack, run_em
from privlab.attacks.exact import exact_posterior
from privlab.attacks.posterior import Posterior
from privlab.attacks.random_worlds import random_worlds_attack

__all__ = [
    "DefinettiRun",
    "EMRun",
    "Posterior",
    "definetti_attack",
    "em_attack",
    "exact_posterior",
    "gelman_rubin",
    "random_worlds_attack",
    "run_definetti",
    "run_em",
]
