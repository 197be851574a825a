"""Differential privacy: mechanisms, the budget accountants (pure epsilon and zCDP),
post-processing estimators."""

from privlab.dp.accountant import BudgetAccountant, ZCDPAccountant
from privlab.dp.estimators import (
    ESTIMATORS,
    HistogramLayout,
    consistent,
    empirical_bayes,
    get_estimator,
    james_stein,
    laplace_posterior_mean,
    mle,
)
from privlab.dp.histogram import NoisyHistogram, noisy_histogram
from privlab.dp.mechanisms import (
    AdditiveMechanism,
    CountQuery,
    DiscreteGaussian,
    Exponential,
    Gaussian,
    Geometric,
    Laplace,
    Mechanism,
    check_epsilon,
    check_rho,
)
from privlab.dp.zcdp import (
    Conversion,
    delta_from_rho,
    epsilon_from_rho,
    rho_from_epsilon,
    rho_from_epsilon_delta,
)

__all__ = [
    "ESTIMATORS",
    "AdditiveMechanism",
    "BudgetAccountant",
    "Conversion",
    "CountQuery",
    "DiscreteGaussian",
    "Exponential",
    "Gaussian",
    "Geometric",
    "HistogramLayout",
    "Laplace",
    "Mechanism",
    "NoisyHistogram",
    "ZCDPAccountant",
    "check_epsilon",
    "check_rho",
    "consistent",
    "delta_from_rho",
    "empirical_bayes",
    "epsilon_from_rho",
    "get_estimator",
    "james_stein",
    "laplace_posterior_mean",
    "mle",
    "noisy_histogram",
    "rho_from_epsilon",
    "rho_from_epsilon_delta",
]
