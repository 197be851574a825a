import math

import numpy as np
import pytest

from privlab.dp import BudgetAccountant, Exponential, Laplace
from privlab.errors import BudgetExceededError, ParameterError


def test_sequential_composition_and_overspend_refused():
    acc = BudgetAccountant(1.0)
    Laplace(0.3).randomize(5.0, rng=0, accountant=acc, label="a")
    Laplace(0.2).randomize(5.0, rng=0, accountant=acc, label="b")
    assert acc.spent == pytest.approx(0.5) and acc.remaining == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError, match=r"0\.6.*0\.5"):
        Laplace(0.6).randomize(5.0, rng=0, accountant=acc, label="c")
    assert [s.label for s in acc.ledger] == ["a", "b"]  # nothing charged for the refusal
    Laplace(0.5).randomize(5.0, rng=0, accountant=acc)  # exactly the rest (float slack)
    assert acc.remaining == 0.0
    with pytest.raises(BudgetExceededError):
        Exponential(0.01).select([1.0, 2.0], rng=0, accountant=acc)


def test_float_sums_do_not_spuriously_overspend():
    acc = BudgetAccountant(0.3)
    acc.spend(0.1)
    acc.spend(0.2)  # 0.1 + 0.2 > 0.3 in floating point
    assert acc.remaining == 0.0


def test_infinite_and_invalid_spends():
    acc = BudgetAccountant(2.0)
    with pytest.raises(BudgetExceededError, match="inf"):
        Laplace(math.inf).randomize(1.0, accountant=acc)
    with pytest.raises(ParameterError):
        acc.spend(-0.1)
    with pytest.raises(ParameterError):
        BudgetAccountant(0)
    with pytest.raises(ParameterError):
        BudgetAccountant(float("nan"))
    unlimited = BudgetAccountant(math.inf)
    unlimited.spend(math.inf)
    assert unlimited.remaining == math.inf


def test_parallel_composition_charges_the_maximum():
    acc = BudgetAccountant(1.0)
    parts = [np.arange(3.0), np.arange(4.0), np.arange(5.0)]
    with acc.parallel("leaves") as par:
        for eps, part in zip([0.2, 0.5, 0.3], parts):
            Laplace(eps).randomize(part.sum(), rng=0, accountant=par.partition())
    assert acc.spent == pytest.approx(0.5)
    assert "max over 3 disjoint partitions" in acc.ledger[-1].label
    # each partition may use at most what the parent has left
    with pytest.raises(BudgetExceededError), acc.parallel() as par:
        par.partition().spend(0.6)
    assert acc.spent == pytest.approx(0.5)


def test_parallel_block_that_fails_is_still_charged():
    acc = BudgetAccountant(1.0)
    with pytest.raises(RuntimeError), acc.parallel() as par:
        par.partition().spend(0.4)
        raise RuntimeError("a later partition failed")
    assert acc.spent == pytest.approx(0.4)


def test_accountant_to_dict():
    acc = BudgetAccountant(1.0)
    acc.spend(0.25, "q")
    assert acc.to_dict() == {
        "epsilon": 1.0,
        "spent": 0.25,
        "ledger": [{"label": "q", "epsilon": 0.25}],
    }


def test_a_tiny_budget_is_not_overspent_by_a_thousandth():
    """The slack for floating-point sums is relative (1e-9) plus 1e-12 absolute: a budget of
    1e-6 overspent by 1e-9 (0.1% of it) is refused, while the rounding of a sum is not."""
    acc = BudgetAccountant(1e-6)
    assert not acc.can_spend(1e-6 + 1e-9)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-6 + 1e-9, "just over")
    assert acc.spent == 0.0  # the refused spend left nothing in the ledger
    for _ in range(10):  # 10 x 1e-7: a float sum within rounding of the budget
        acc.spend(1e-7)
    assert acc.spent == pytest.approx(1e-6, rel=1e-12)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-9)


def test_a_copy_of_the_accountant_is_the_same_ledger():
    """A ledger has identity: copying it (as scikit-learn's clone does with a learner's
    parameters) gives the same accountant, so a spend through the copy is charged to the
    one budget and an overspend through it is refused."""
    import copy

    acc = BudgetAccountant(1.0)
    for dup in (copy.copy(acc), copy.deepcopy(acc), copy.deepcopy({"a": acc})["a"]):
        assert dup is acc
    copy.copy(acc).spend(0.6, "first")
    assert acc.spent == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        copy.deepcopy(acc).spend(0.6, "second")


def test_a_parallel_block_that_spends_nothing_adds_no_ledger_entry():
    """Only a positive maximum is charged: a block with no partition, or whose partitions
    spent 0, leaves the ledger as it was."""
    acc = BudgetAccountant(1.0)
    with acc.parallel("no partitions"):
        pass
    with acc.parallel("nothing spent") as par:
        par.partition()
        par.partition().spend(0.0, "free")
    assert acc.ledger == [] and acc.to_dict()["ledger"] == []


def test_a_partition_of_an_exhausted_budget_can_spend_nothing():
    acc = BudgetAccountant(0.5)
    acc.spend(0.5)
    with acc.parallel() as par:
        child = par.partition()
        assert 0 < child.epsilon < 1e-200  # the smallest budget there is, not an error
        child.spend(0.0)
        with pytest.raises(BudgetExceededError):
            child.spend(1e-11)  # beyond the absolute slack of 1e-12
    assert acc.spent == 0.5 and len(acc.ledger) == 1


@pytest.mark.parametrize("budget", [0.5, 3.0])
def test_the_budget_plus_its_slack_is_spendable_and_not_one_float_more(budget):
    """The slack is inclusive: ``budget (1 + 1e-9) + 1e-12`` can be spent, the next double
    above it cannot."""
    limit = budget * (1 + 1e-9) + 1e-12
    assert BudgetAccountant(budget).can_spend(limit)
    assert not BudgetAccountant(budget).can_spend(math.nextafter(limit, math.inf))
    acc = BudgetAccountant(budget)
    acc.spend(limit, "all of it")
    assert acc.spent == limit and acc.remaining == 0.0
