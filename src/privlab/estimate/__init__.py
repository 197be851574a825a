"""The analyst's side: estimates computed from a published release alone.

* :mod:`privlab.estimate.pram`: true frequencies from PRAM-randomized data (Ma 2006, Sec.
  2.4): the moment estimator and EM, with their variances, mode by mode over the Kronecker
  product of the transition matrices.

This layer imports only :mod:`privlab.data` (and the leaf modules): anything that holds a
release's tables and matrices can be estimated from, without importing the sanitizers.
"""
