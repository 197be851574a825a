"""Differential privacy: mechanisms, the budget accountant, post-processing estimators."""

from privlab.dp.accountant import BudgetAccountant
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
    Exponential,
    Geometric,
    Laplace,
    Mechanism,
    check_epsilon,
)

__all__ = [
    "ESTIMATORS",
    "AdditiveMechanism",
    "BudgetAccountant",
    "CountQuery",
    "Exponential",
    "Geometric",
    "HistogramLayout",
    "Laplace",
    "Mechanism",
    "NoisyHistogram",
    "check_epsilon",
    "consistent",
    "empirical_bayes",
    "get_estimator",
    "james_stein",
    "laplace_posterior_mean",
    "mle",
    "noisy_histogram",
]
