"""Explicit privacy-budget accountants: pure epsilon-DP (:class:`BudgetAccountant`) and
rho-zCDP (:class:`ZCDPAccountant`).

There is no global default: the accountant is created by the caller and passed to every
mechanism or learner that spends budget.  A mechanism charges it what it costs
(:meth:`BudgetAccountant.charge`, :meth:`ZCDPAccountant.charge`: the cost is read off the
mechanism, not stated by the caller).  A zCDP mechanism (the discrete Gaussian) is not
epsilon-DP for any finite epsilon and is refused by a pure budget; a zCDP budget takes both
kinds, converting an epsilon-DP spend to ``epsilon^2 / 2`` (:mod:`privlab.dp.zcdp`).

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
from typing import Any

from privlab.dp import zcdp
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

    def charge(self, mechanism: Any, label: str = "") -> None:
        """Spend what ``mechanism`` costs (its epsilon); a zCDP mechanism is refused, since
        no finite epsilon covers it."""
        if mechanism.notion != "pure":
            raise ParameterError(
                f"{mechanism.name} is rho-zCDP, not epsilon-DP for any finite epsilon: charge it "
                "to a ZCDPAccountant (privlab.dp.ZCDPAccountant), not a pure-epsilon budget"
            )
        self.spend(mechanism.epsilon, label)

    @contextlib.contextmanager
    def parallel(self, label: str = "parallel") -> Iterator[_Parallel]:
        """Parallel composition over disjoint partitions; charges the largest child spend."""
        par = _Parallel(self.remaining, BudgetAccountant)
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
    kind: type = BudgetAccountant
    children: list = field(default_factory=list)

    def partition(self) -> Any:
        """An accountant for one disjoint partition (of the parent's kind), with the parent's
        remaining budget."""
        child = self.kind(self.budget if self.budget > 0 else 1e-300)
        self.children.append(child)
        return child


@dataclass(frozen=True)
class ZSpend:
    """One entry of a zCDP ledger: ``rho``, and the ``epsilon`` it was converted from when
    the computation was epsilon-DP (None for a zCDP one)."""

    label: str
    rho: float
    epsilon: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "rho": self.rho, "epsilon": self.epsilon}


@dataclass
class ZCDPAccountant:
    """Tracks rho-zCDP spent against a total ``rho`` (``inf`` = unlimited).

    * zCDP spends add up (Bun & Steinke 2016, Lemma 2.3): :meth:`spend_rho`, which a zCDP
      mechanism calls through :meth:`charge`;
    * an epsilon-DP spend counts ``epsilon^2 / 2`` (Bun & Steinke 2016, Prop. 1.4):
      :meth:`spend` takes epsilon as :meth:`BudgetAccountant.spend` does, so every pure
      mechanism and learner of privlab can be charged here unchanged;
    * disjoint partitions cost the largest of their rho's (:meth:`parallel`, as for the pure
      budget: zCDP composes in parallel the same way);
    * the total is stated as (epsilon, delta)-DP by :meth:`to_epsilon_delta`, with the
      conversion named (CKS 2020 Corollary 13 by default, or Bun & Steinke's simpler bound).

    A budget given as (epsilon, delta) is :meth:`from_epsilon_delta`: the largest rho that
    converts (tightly) to it.  An overspend raises
    :class:`~privlab.errors.BudgetExceededError` before any noise is drawn.
    """

    rho: float
    ledger: list[ZSpend] = field(default_factory=list)

    def __post_init__(self) -> None:
        r = float(self.rho)
        if math.isnan(r) or r <= 0:
            raise ParameterError(f"the budget rho must be positive, got {self.rho!r}")
        self.rho = r

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float) -> ZCDPAccountant:
        """A budget of the largest rho that is (epsilon, delta)-DP by CKS 2020 Corollary 13."""
        rho = zcdp.rho_from_epsilon_delta(epsilon, delta)
        if rho <= 0:
            raise ParameterError(f"epsilon = {epsilon!r} leaves no zCDP budget")
        return cls(rho)

    @property
    def spent(self) -> float:
        """The total rho spent (sequential composition: the sum)."""
        return math.fsum(s.rho for s in self.ledger)

    @property
    def remaining(self) -> float:
        return max(self.rho - self.spent, 0.0) if not math.isinf(self.rho) else math.inf

    @property
    def pure_epsilon(self) -> float:
        """The sum of the epsilons when every spend was epsilon-DP (then the whole is
        (that sum)-DP, delta 0, which may beat the zCDP conversion); inf otherwise."""
        if any(s.epsilon is None for s in self.ledger):
            return math.inf
        return math.fsum(s.epsilon for s in self.ledger)  # type: ignore[misc]

    def can_spend_rho(self, rho: float) -> bool:
        if math.isinf(self.rho):
            return True
        return self.spent + rho <= self.rho * (1 + _TOL) + _TOL * 1e-3

    def spend_rho(self, rho: float, label: str = "", *, epsilon: float | None = None) -> None:
        """Record a rho-zCDP computation (sequential composition); refuse an overspend."""
        r = float(rho)
        if math.isnan(r) or r < 0:
            raise ParameterError(f"cannot spend rho = {rho!r}")
        what = label or "a computation"
        if math.isinf(r) and not math.isinf(self.rho):
            raise BudgetExceededError(f"{what} asks for rho = inf from a budget of {self.rho}")
        if not self.can_spend_rho(r):
            raise BudgetExceededError(
                f"{what} asks for rho = {r:g} but only {self.remaining:g} of {self.rho:g} remains"
            )
        self.ledger.append(ZSpend(label, r, epsilon))

    def spend(self, epsilon: float, label: str = "") -> None:
        """Record an epsilon-DP computation as ``epsilon^2 / 2``-zCDP (Bun & Steinke 2016,
        Prop. 1.4); the ledger keeps its epsilon."""
        e = float(epsilon)
        if math.isnan(e) or e < 0:
            raise ParameterError(f"cannot spend epsilon = {epsilon!r}")
        self.spend_rho(e * e / 2.0, label, epsilon=e)

    def charge(self, mechanism: Any, label: str = "") -> None:
        """Spend what ``mechanism`` costs: its rho when it is zCDP, ``epsilon^2 / 2`` when it
        is epsilon-DP, or the mechanism's own ``zcdp_rho`` where it states a tighter one (the
        exponential mechanism's ``epsilon^2 / 8``)."""
        if mechanism.notion == "pure":
            rho = getattr(mechanism, "zcdp_rho", None)  # tighter than epsilon^2 / 2
            if rho is None:
                self.spend(mechanism.epsilon, label)
            else:
                self.spend_rho(rho, label, epsilon=mechanism.epsilon)
        else:
            self.spend_rho(mechanism.privacy_cost, label)

    def to_epsilon_delta(self, delta: float, method: str = "tight") -> zcdp.Conversion:
        """The total spent as (epsilon, delta)-DP by ``method`` ("tight": CKS 2020 Corollary
        13; "simple": Bun & Steinke 2016 Prop. 1.3); the result names the conversion."""
        return zcdp.to_epsilon_delta(self.spent, delta, method)

    def delta_at(self, epsilon: float) -> float:
        """The delta of the total spent at ``epsilon`` (CKS 2020 Corollary 13)."""
        return zcdp.delta_from_rho(self.spent, epsilon)

    @contextlib.contextmanager
    def parallel(self, label: str = "parallel") -> Iterator[_Parallel]:
        """Parallel composition over disjoint partitions; charges the largest child rho."""
        par = _Parallel(self.remaining, ZCDPAccountant)
        try:
            yield par
        finally:
            cost = max((c.spent for c in par.children), default=0.0)
            if cost > 0:
                # all partitions epsilon-DP: the block is (max epsilon)-DP too
                pure = max(c.pure_epsilon for c in par.children)
                self.spend_rho(
                    cost,
                    f"{label} (max over {len(par.children)} disjoint partitions)",
                    epsilon=pure if math.isfinite(pure) else None,
                )

    def __copy__(self) -> ZCDPAccountant:
        return self  # a ledger has identity (see BudgetAccountant)

    def __deepcopy__(self, memo: dict) -> ZCDPAccountant:
        return self

    def to_dict(self) -> dict[str, object]:
        return {
            "rho": self.rho,
            "spent": self.spent,
            "ledger": [s.to_dict() for s in self.ledger],
        }
