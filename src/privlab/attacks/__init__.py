"""Attacks on releases: each returns a :class:`Posterior` of per-person disclosure.

* :func:`random_worlds_attack`: the baseline Anatomy's guarantee is stated in.
* :func:`definetti_attack` / :func:`run_definetti`: Kifer's deFinetti attack (Kifer 2009).
* :func:`em_attack` / :func:`run_em`: the Naive-Bayes EM attack (Mothali 2011 Ch. 4-5).
* :func:`exact_posterior`: the deFinetti model's posterior by enumeration (tiny tables).
* :func:`flexible_attack`: threat model (b) on generalized releases, flexible Bayes with the
  target's exact QIs (Kifer 2009 Sec. 5.2).
* :func:`control_attack`: the control baseline, the same attacker trained on public data only.
* :func:`pram_attack` / :func:`run_pram_attack`: the learning attack on a PRAM release
  (Kifer 2009 Sec. 7; Ma 2006).
* :func:`marginals_attack`: the max-ent attack on anonymized marginals (Kifer & Gehrke
  2006; Kifer 2009 Sec. 7): each target's ``F^_2(S | QI)``.
* :func:`alphabeta_attack`: the exact posterior that a tuple of an alpha-beta view is real
  (Rastogi et al. 2007), against gamma.
* :func:`record_linkage`: distance-based record linkage of a masked numeric table to its
  original (Domingo-Ferrer & Torra 2001) and sdcMicro's interval disclosure (``dRisk``); it
  returns a :class:`RecordLinkage` (a rate and per-record links), not a posterior.
* :func:`anonymeter_risk` / :class:`PosteriorPredictor`: a posterior as the attacker of
  Anonymeter's inference evaluator (Giomi et al. 2023; optional: ``pip install --no-deps
  anonymeter==1.1.0``, imported only when run).
"""

from privlab.attacks.alphabeta import alphabeta_attack
from privlab.attacks.anonymeter import PosteriorPredictor, anonymeter_risk
from privlab.attacks.control import control_attack
from privlab.attacks.definetti import (
    DefinettiRun,
    DefinettiSettings,
    definetti_attack,
    gelman_rubin,
    run_definetti,
)
from privlab.attacks.em import EMRun, em_attack, run_em
from privlab.attacks.exact import exact_posterior
from privlab.attacks.flexible import flexible_attack
from privlab.attacks.marginals import marginals_attack
from privlab.attacks.posterior import Posterior
from privlab.attacks.pram import PramAttackRun, pram_attack, run_pram_attack
from privlab.attacks.random_worlds import random_worlds_attack
from privlab.attacks.record_linkage import RecordLinkage, record_linkage

__all__ = [
    "DefinettiRun",
    "DefinettiSettings",
    "EMRun",
    "Posterior",
    "PosteriorPredictor",
    "PramAttackRun",
    "RecordLinkage",
    "alphabeta_attack",
    "anonymeter_risk",
    "control_attack",
    "definetti_attack",
    "em_attack",
    "exact_posterior",
    "flexible_attack",
    "gelman_rubin",
    "marginals_attack",
    "pram_attack",
    "random_worlds_attack",
    "record_linkage",
    "run_definetti",
    "run_em",
    "run_pram_attack",
]
