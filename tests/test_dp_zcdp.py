"""zCDP accounting: composition (Bun & Steinke 2016), pure DP to zCDP, and the conversion to
(epsilon, delta) of Canonne, Kamath & Steinke (2020) against an independent computation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from privlab.dp import (
    DiscreteGaussian,
    Gaussian,
    Geometric,
    Laplace,
    ZCDPAccountant,
    delta_from_rho,
    epsilon_from_rho,
    rho_from_epsilon,
    rho_from_epsilon_delta,
)
from privlab.dp.zcdp import best_alpha, to_epsilon_delta
from privlab.errors import BudgetExceededError, ParameterError


def _log_bracket(alpha: float, rho: float, eps: float) -> float:
    """log of exp((a - 1)(a rho - eps)) / (a - 1) * (1 - 1/a)^a, written out afresh."""
    return (alpha - 1) * (alpha * rho - eps) - np.log(alpha - 1) + alpha * np.log(1 - 1 / alpha)


def _delta_independent(rho: float, eps: float) -> float:
    """CKS 2020 Corollary 13's infimum without privlab: the best alpha on a fine geometric
    grid of alpha - 1 over 1e-8 .. 1e9, refined by scipy's bounded Brent search between its
    grid neighbours."""
    am1 = np.geomspace(1e-8, 1e9, 40_001)
    vals = _log_bracket(1 + am1, rho, eps)
    i = int(np.argmin(vals))
    lo, hi = am1[max(i - 1, 0)], am1[min(i + 1, am1.size - 1)]
    res = optimize.minimize_scalar(
        lambda a: _log_bracket(1 + a, rho, eps), bounds=(lo, hi), method="bounded",
        options={"xatol": 1e-14 * hi},
    )  # fmt: skip
    return min(1.0, math.exp(min(res.fun, vals[i])))


CASES = [(0.5, 5.0), (0.025, 1.0), (1.0, 2.0), (1e-3, 0.2), (2.0, 20.0), (0.1, 1.5),
         (10.0, 40.0), (1e-6, 0.01)]  # fmt: skip


# --- the conversions --------------------------------------------------------------------------
@pytest.mark.parametrize(("rho", "eps"), CASES)
def test_delta_is_the_published_infimum(rho, eps):
    """delta_from_rho is CKS 2020 Corollary 13's inf over alpha, to 1e-9, and its alpha is
    the root of the bracket's derivative ((2 alpha - 1) rho - eps + log(1 - 1/alpha))."""
    d = delta_from_rho(rho, eps)
    assert d == pytest.approx(_delta_independent(rho, eps), rel=1e-9)
    a = best_alpha(rho, eps)
    assert abs((2 * a - 1) * rho - eps + math.log1p(-1 / a)) < 1e-9 * max(1.0, eps)
    for off in (0.999, 1.001):  # any other alpha gives a larger bracket
        assert _log_bracket(a * off, rho, eps) >= _log_bracket(a, rho, eps)


@pytest.mark.parametrize(("rho", "delta"), [(0.5, 1e-6), (0.025, 1e-6), (1.0, 1e-9),
                                           (1e-4, 1e-5), (3.0, 0.01)])  # fmt: skip
def test_epsilon_is_the_root_of_the_published_delta(rho, delta):
    """epsilon_from_rho solves delta(epsilon) = delta (the independent infimum, scipy's
    brentq), to 1e-9, and is below the simple bound rho + 2 sqrt(rho log(1/delta))."""
    eps = epsilon_from_rho(rho, delta)
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    root = optimize.brentq(
        lambda e: math.log(_delta_independent(rho, e)) - math.log(delta), 0.0, simple,
        xtol=1e-15, rtol=1e-14,
    )  # fmt: skip
    assert eps == pytest.approx(root, rel=1e-9)
    assert eps < simple
    assert epsilon_from_rho(rho, delta, "simple") == pytest.approx(simple, rel=1e-15)
    assert delta_from_rho(rho, eps) <= delta * (1 + 1e-12)
    assert delta_from_rho(rho, eps * (1 - 1e-9)) > delta


def test_known_values_at_rho_one_half_and_delta_one_in_a_million():
    """rho = 0.5, delta = 1e-6: the simple bound is 0.5 + 2 sqrt(0.5 ln 1e6) = 5.75652...;
    the tight epsilon, 5.22153..., is 9% smaller (pinned; the independent scipy root agrees
    to 1e-9, test_epsilon_is_the_root_of_the_published_delta)."""
    conv = to_epsilon_delta(0.5, 1e-6)
    simple = to_epsilon_delta(0.5, 1e-6, "simple")
    assert simple.epsilon == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)), rel=1e-15)
    assert simple.epsilon == pytest.approx(5.756521769756932, rel=1e-12)
    assert conv.epsilon == pytest.approx(5.22153444453017, rel=1e-9)
    assert conv.epsilon < 0.91 * simple.epsilon
    assert conv.method == "tight" and "Corollary 13" in conv.source
    assert simple.method == "simple" and "Proposition 1.3" in simple.source
    assert conv.to_dict() == {"rho": 0.5, "epsilon": conv.epsilon, "delta": 1e-6,
                              "method": "tight", "source": conv.source}  # fmt: skip
    # CKS's own numbers: rho = 0.025 (sigma^2 = 20 at sensitivity 1) at epsilon 1
    assert delta_from_rho(0.025, 1.0) == pytest.approx(_delta_independent(0.025, 1.0), rel=1e-9)


def test_pure_dp_is_half_epsilon_squared_zcdp_and_the_limits():
    assert rho_from_epsilon(1.0) == 0.5 and rho_from_epsilon(0.2) == pytest.approx(0.02)
    assert rho_from_epsilon(0.0) == 0.0
    assert delta_from_rho(0.0, 0.5) == 0.0 and epsilon_from_rho(0.0, 1e-6) == 0.0
    assert delta_from_rho(math.inf, 3.0) == 1.0 and epsilon_from_rho(math.inf, 1e-6) == math.inf
    # epsilon = 0 still bounds delta (the total variation): 0.73 at rho = 1
    assert delta_from_rho(1.0, 0.0) == pytest.approx(_delta_independent(1.0, 0.0), rel=1e-9)
    assert 0.7 < delta_from_rho(1.0, 0.0) < 0.75
    assert delta_from_rho(1e-4, 0.0) < 0.5 and epsilon_from_rho(1e-4, 0.5) == 0.0


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.5, 1e-9), (8.0, 1e-5)])
def test_a_budget_from_epsilon_delta_converts_back_to_it(eps, delta):
    rho = rho_from_epsilon_delta(eps, delta)
    assert delta_from_rho(rho, eps) <= delta
    assert delta_from_rho(rho * (1 + 1e-9), eps) > delta
    assert epsilon_from_rho(rho, delta) == pytest.approx(eps, rel=1e-9)
    acc = ZCDPAccountant.from_epsilon_delta(eps, delta)
    assert acc.rho == rho
    acc.spend_rho(rho, "all of it")
    assert acc.to_epsilon_delta(delta).epsilon == pytest.approx(eps, rel=1e-9)


@given(rho=st.floats(1e-6, 50.0), delta=st.floats(1e-12, 0.5))
@settings(max_examples=60)
def test_the_tight_conversion_is_valid_and_beats_the_simple_one(rho, delta):
    eps = epsilon_from_rho(rho, delta)
    assert 0 <= eps <= epsilon_from_rho(rho, delta, "simple")
    assert delta_from_rho(rho, eps) <= delta * (1 + 1e-12)
    assert epsilon_from_rho(rho * 1.1, delta) >= eps  # more rho, more epsilon


def test_bad_conversion_inputs_are_refused_in_one_line():
    for call in (
        lambda: epsilon_from_rho(0.5, 0.0),
        lambda: epsilon_from_rho(0.5, 1.0),
        lambda: epsilon_from_rho(0.5, math.nan),
        lambda: epsilon_from_rho(-0.1, 1e-6),
        lambda: epsilon_from_rho(math.nan, 1e-6),
        lambda: epsilon_from_rho("x", 1e-6),
        lambda: epsilon_from_rho(0.5, 1e-6, "renyi"),
        lambda: delta_from_rho(0.5, -1.0),
        lambda: rho_from_epsilon(-1.0),
        lambda: rho_from_epsilon(True),
        lambda: rho_from_epsilon_delta(1.0, 2.0),
    ):
        with pytest.raises(ParameterError) as err:
            call()
        assert "\n" not in str(err.value)


# --- the accountant ------------------------------------------------------------------------------
def test_rho_composes_additively_and_pure_spends_count_half_epsilon_squared():
    """Bun & Steinke 2016: rho's add up (Lemma 2.3) and epsilon-DP is epsilon^2/2-zCDP
    (Prop. 1.4): two discrete Gaussians (rho 0.1, 0.05), a Gaussian (0.2), a Laplace (eps
    0.6) and a geometric (eps 0.2) cost 0.1 + 0.05 + 0.2 + 0.18 + 0.02 = 0.55, charged by the
    mechanisms themselves."""
    acc = ZCDPAccountant(1.0)
    DiscreteGaussian(0.1).randomize(np.array([3, 4]), rng=0, accountant=acc, label="a")
    DiscreteGaussian.from_sigma(sigma2=10).randomize(1, rng=0, accountant=acc, label="b")
    Gaussian(0.2, sensitivity=2.0).randomize(1.5, rng=0, accountant=acc, label="c")
    Laplace(0.6).randomize(2.0, rng=0, accountant=acc, label="d")
    Geometric(0.2).randomize(np.array([5]), rng=0, accountant=acc, label="e")
    assert [s.rho for s in acc.ledger] == pytest.approx([0.1, 0.05, 0.2, 0.18, 0.02])
    assert [s.epsilon for s in acc.ledger] == [None, None, None, 0.6, 0.2]
    assert acc.spent == pytest.approx(0.55) and acc.remaining == pytest.approx(0.45)
    assert acc.pure_epsilon == math.inf  # not all pure
    conv = acc.to_epsilon_delta(1e-6)
    assert conv.rho == acc.spent and conv.epsilon == pytest.approx(epsilon_from_rho(0.55, 1e-6))
    assert acc.delta_at(conv.epsilon) == pytest.approx(1e-6, rel=1e-6)
    d = acc.to_dict()
    assert d["rho"] == 1.0 and d["spent"] == acc.spent
    assert d["ledger"][3] == {"label": "d", "rho": 0.18, "epsilon": 0.6}


def test_an_all_pure_ledger_keeps_its_pure_epsilon():
    """Only pure spends: the sum of epsilons is still a pure guarantee, which can beat the
    zCDP conversion for a few large spends (and loses to it for many small ones)."""
    few = ZCDPAccountant(math.inf)
    few.spend(1.0, "a")
    few.spend(1.0, "b")
    assert few.pure_epsilon == 2.0 and few.spent == 1.0
    assert few.to_epsilon_delta(1e-6).epsilon > few.pure_epsilon
    many = ZCDPAccountant(math.inf)
    for _ in range(400):
        many.spend(0.05)
    assert many.pure_epsilon == pytest.approx(20.0)
    assert many.to_epsilon_delta(1e-6).epsilon < 0.5 * many.pure_epsilon


def test_an_overspend_is_refused_before_any_noise_and_leaves_the_ledger():
    acc = ZCDPAccountant(0.5)
    DiscreteGaussian(0.3).randomize(np.array([1]), rng=0, accountant=acc)
    with pytest.raises(BudgetExceededError, match=r"rho = 0\.3 but only 0\.2 of 0\.5"):
        DiscreteGaussian(0.3).randomize(np.array([1]), rng=0, accountant=acc, label="second")
    with pytest.raises(BudgetExceededError, match=r"rho = 0\.245"):
        Laplace(0.7).randomize(1.0, rng=0, accountant=acc)  # 0.7^2 / 2 = 0.245 > 0.2
    assert len(acc.ledger) == 1
    Laplace(0.6).randomize(1.0, rng=0, accountant=acc)  # 0.18 fits
    acc.spend_rho(0.02)  # exactly the rest (float slack)
    assert acc.remaining == 0.0
    with pytest.raises(BudgetExceededError, match="rho = inf"):
        acc.spend(math.inf)
    unlimited = ZCDPAccountant(math.inf)
    unlimited.spend_rho(math.inf)
    assert unlimited.remaining == math.inf


def test_parallel_composition_charges_the_largest_rho():
    acc = ZCDPAccountant(1.0)
    with acc.parallel("cells") as par:
        for rho in (0.2, 0.5, 0.3):
            DiscreteGaussian(rho).randomize(np.array([1, 2]), rng=0, accountant=par.partition())
    assert acc.spent == pytest.approx(0.5)
    assert "max over 3 disjoint partitions" in acc.ledger[-1].label
    assert acc.ledger[-1].epsilon is None
    with acc.parallel("pure cells") as par:  # all partitions pure: the block keeps its epsilon
        for eps in (0.3, 0.1):
            Laplace(eps).randomize(1.0, rng=0, accountant=par.partition())
    assert acc.ledger[-1].rho == pytest.approx(0.045) and acc.ledger[-1].epsilon == 0.3
    with pytest.raises(BudgetExceededError), acc.parallel() as par:
        par.partition().spend_rho(0.6)  # more than the parent has left
    assert acc.spent == pytest.approx(0.545)


def test_a_copy_of_the_zcdp_accountant_is_the_same_ledger():
    import copy

    acc = ZCDPAccountant(1.0)
    assert copy.copy(acc) is acc and copy.deepcopy({"a": acc})["a"] is acc


def test_bad_budgets_and_spends_are_refused():
    for bad in (0, -1.0, math.nan):
        with pytest.raises(ParameterError, match="budget rho must be positive"):
            ZCDPAccountant(bad)
    acc = ZCDPAccountant(1.0)
    for bad in (-0.1, math.nan):
        with pytest.raises(ParameterError, match="cannot spend rho"):
            acc.spend_rho(bad)
        with pytest.raises(ParameterError, match="cannot spend epsilon"):
            acc.spend(bad)
    with pytest.raises(ParameterError, match="leaves no zCDP budget"):
        ZCDPAccountant.from_epsilon_delta(0.0, 1e-6)
    assert acc.ledger == []
