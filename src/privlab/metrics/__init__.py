"""Measures of a release and of an attack on it: risk, privacy, utility, calibration.

* :mod:`privlab.metrics.risk`: re-identification risk of a published partition
  (prosecutor, journalist and marketer models; El Emam 2008, ARX).
* :mod:`privlab.metrics.uniqueness`: population uniques from a sample's class sizes
  (Zayatz, Pitman, SNB and Dankar et al.'s rule, as ARX computes them).
* :mod:`privlab.metrics.sdc_risk`: a sample's individual and global risk with sampling
  weights (Benedetti-Franconi, as sdcMicro and mu-Argus compute them).
* :mod:`privlab.metrics.msu`: every record's minimal sample uniques (SUDA's special uniques)
  and its SUDA and DIS-SUDA scores (sdcMicro's ``suda2``).
* :mod:`privlab.metrics.synthetic`: how close synthetic records lie to the real ones (DCR,
  exact matches, NNDR, closer-to-training share; SDMetrics' DCR metrics).
* :mod:`privlab.metrics.privacy`: the per-class privacy maths (k, l, t, disclosure).
* :mod:`privlab.metrics.utility`: information loss of a generalized release.
* :mod:`privlab.metrics.numeric_utility`: information loss of a masked numeric table
  (sdcMicro's IL1s, eigenvalue, mean, covariance and correlation measures) and the
  propensity-score pMSE (Woo et al. 2009; Snoke et al. 2018).
* :mod:`privlab.metrics.calibration`: how good an attacker's probabilities are.
* :mod:`privlab.metrics.intervals`: intervals around attack success and residual risk.
* :mod:`privlab.metrics.cost_of_privacy`: Brickell & Shmatikov (2008).
* :mod:`privlab.metrics.pram` and :mod:`privlab.metrics.itemsets`: PRAM's measures (Ma 2006).
"""
