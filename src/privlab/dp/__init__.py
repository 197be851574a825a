"""Differential privacy: mechanisms, the budget accountant, post-processing estimators."""

from privlab.dp.accountant import BudgetAccountant
from privlab.dp.mechanisms import Exponential, Geometric, Laplace, check_epsilon

__all__ = ["BudgetAccountant", "Exponential", "Geometric", "Laplace", "check_epsilon"]
