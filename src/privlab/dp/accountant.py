"""An explicit privacy-budget accountant (pure epsilon-DP).

There is no global default: the accountant is created by the caller and passed to every
mechanism or learner that spends budget.

* Sequential composition: spending ``e1`` then ``e2`` costs ``e1 + e2``.
* Parallel composition: computations on *disjoint* partitions of the data cost the maximum
  of their epsilons (McSherry, PINQ 2009; Friedman & Schuster 2010 "budget composition")::

      with acc.parallel("leaf counts") as par:
          for part in partitions:
              child = par.partition()        # an accountant with acc's remaining budget
              mech.randomize(count(part), accountant=child)
      # acc is now charged max(child.spent)

An overspend raises :class:`~privlab.errors.BudgetExceededError` before any noise is drawn.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from privlab.errors import BudgetExceededError, ParameterError

#: Relative slack for floating-point sums of epsilons (e.g. 0.1 + 0.2 vs 0.3).
_TOL = 1e-9


@dataclass(frozen=True)
class Spend:
    """One ledger entry."""

    label: str
    epsilon: float

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "epsilon": self.epsilon}


@dataclass
class BudgetAccountant:
    """Tracks epsilon spent against a total budget (``inf`` = unlimited)."""

    epsilon: float
    ledger: list[Spend] = field(default_factory=list)

    def __post_init__(self) -> None:
        e = float(self.epsilon)
        if math.isnan(e) or e <= 0:
            raise ParameterError(f"the budget epsilon must be positive, got {self.epsilon!r}")
        self.epsilon = e

    @property
    def spent(self) -> float:
        return math.fsum(s.epsilon for s in self.ledger)

    @property
    def remaining(self) -> float:
        return max(self.epsilon - self.spent, 0.0) if not math.isinf(self.epsilon) else math.inf

    def can_spend(self, epsilon: float) -> bool:
        if math.isinf(self.epsilon):
            return True
        return self.spent + epsilon <= self.epsilon * (1 + _TOL) + _TOL * 1e-3

    def spend(self, epsilon: float, label: str = "") -> None:
        """Record ``epsilon`` spent (sequential composition); refuse an overspend."""
        e = float(epsilon)
        if math.isnan(e) or e < 0:
            raise ParameterError(f"cannot spend epsilon = {epsilon!r}")
        if math.isinf(e) and not math.isinf(self.epsilon):
            raise BudgetExceededError(
                f"{label or 'a computation'} asks for epsilon = inf from a budget of {self.epsilon}"
            )
        if not self.can_spend(e):
            raise BudgetExceededError(
                f"{label or 'a computation'} asks for epsilon = {e:g} but only "
                f"{self.remaining:g} of {self.epsilon:g} remains"
            )
        self.ledger.append(Spend(label, e))

    @contextlib.contextmanager
    def parallel(self, label: str = "parallel") -> Iterator[_Parallel]:
        """Parallel composition over disjoint partitions; charges the largest child spend."""
        par = _Parallel(self.remaining)
        try:
            yield par
        finally:
            # charged even when the block fails: partitions that ran may have released noise
            cost = max((c.spent for c in par.children), default=0.0)
            if cost > 0:
                self.spend(cost, f"{label} (max over {len(par.children)} disjoint partitions)")

    def __copy__(self) -> BudgetAccountant:
        # A ledger has identity: a copy would silently forget spends.  scikit-learn's clone()
        # deep-copies estimator parameters, so clones of a learner must share the accountant.
        return self

    def __deepcopy__(self, memo: dict) -> BudgetAccountant:
        return self

    def to_dict(self) -> dict[str, object]:
        return {
            "epsilon": self.epsilon,
            "spent": self.spent,
            "ledger": [s.to_dict() for s in self.ledger],
        }


@dataclass
class _Parallel:
    budget: float
    children: list[BudgetAccountant] = field(default_factory=list)

    def partition(self) -> BudgetAccountant:
        """An accountant for one disjoint partition, with the parent's remaining budget."""
        child = BudgetAccountant(self.budget if self.budget > 0 else 1e-300)
        self.children.append(child)
        return child
