"""Population uniques (Zayatz, Pitman, SNB, Dankar et al.'s rule; metrics.uniqueness): ARX's
own numbers (golden file, made by benchmarks/arx/arx_uniqueness.py), and checks that do not
come from ARX: the likelihood and moment equations at the solutions by direct sums,
Zayatz by enumeration, each branch of the rule, the limits and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from privlab.errors import ParameterError
from privlab.metrics.risk import zayatz_unique_probability as from_risk
from privlab.metrics.uniqueness import (
    START_VALUES,
    UniquenessEstimate,
    arx_digamma,
    arx_trigamma,
    dankar_choice,
    population_uniques,
    shlosser_classes,
    zayatz_unique_probability,
)

DATA = Path(__file__).parent / "data"
GOLDEN = pd.read_csv(DATA / "arx_population_uniqueness.csv", sep=";", comment="#")
QI_SETS = {
    "adult-3": ["age", "sex", "race"],
    "adult-4": ["age", "sex", "race", "marital-status"],
    "adult-all": ["sex", "age", "race", "marital-status", "education", "native-country",
                  "workclass", "occupation", "salary-class"],
}  # fmt: skip


def _hist(text: str) -> dict[int, int]:
    return dict(tuple(map(int, p.split(":"))) for p in text.split())  # type: ignore[misc]


def _golden(case: str, fraction: float) -> pd.Series:
    row = GOLDEN[(GOLDEN["case"] == case) & (GOLDEN["fraction"] == fraction)]
    assert len(row) == 1
    return row.iloc[0]


# -- 1. ARX itself -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "i", range(len(GOLDEN)), ids=lambda i: f"{GOLDEN.case[i]}@{GOLDEN.fraction[i]}"
)
def test_every_estimate_and_dankar_s_choice_are_arx_s(i):
    """Each model's number of population uniques as ARX's RiskModelPopulationUniqueness
    gives it (ARX prints an invalid estimate as 0: privlab's is None), to a relative 1e-6.
    The differences measured are below 1e-9: the solvers stop once both equations are
    within 1e-6 of 0 (ARXSolverConfiguration's accuracy), so the roots agree to about that
    much, and ARX's digamma carries ~1e-9 of its own error."""
    row = GOLDEN.iloc[i]
    got = population_uniques(histogram=_hist(row.histogram), sampling_fraction=row.fraction)
    assert got.sample_size == row.n and got.population_size == row.N
    for m in ("zayatz", "pitman", "snb"):
        est = getattr(got, m)
        if row[m] == 0:
            assert est.uniques in (None, 0.0), (m, est)
        else:
            assert est.uniques == pytest.approx(row[m], rel=1e-6), m
    assert got.uniques == pytest.approx(row.dankar, rel=1e-6)
    want = {"DANKAR": "none"}.get(row.dankar_model, row.dankar_model.lower())
    assert got.chosen == want


def test_privlab_groups_adult_into_arx_s_histograms():
    """The Adult histograms of the golden file are ARX's grouping; privlab's grouping of the
    same CSV gives the same class sizes."""
    adult = pd.read_csv(DATA / "arx" / "adult.csv.gz", sep=";", dtype=str)
    for case, qi in QI_SETS.items():
        sizes = adult.groupby(qi).size().to_numpy()
        s, c = np.unique(sizes, return_counts=True)
        mine = dict(zip(s.tolist(), c.tolist(), strict=True))
        assert mine == _hist(_golden(case, 0.01).histogram), case
        # and from the class sizes rather than a histogram, the same estimates
        got = population_uniques(sizes, sampling_fraction=0.05)
        assert got.uniques == pytest.approx(_golden(case, 0.05).dankar, rel=1e-6)


# -- 2. independent checks -----------------------------------------------------------------
def _pitman_loglik(theta: float, alpha: float, hist: dict[int, int]) -> float:
    """Pitman's sampling formula's log-likelihood (Hoshino 2001, Eq. 2, without the terms
    free of theta and alpha), term by term."""
    J = sum(hist.values())
    n = sum(k * c for k, c in hist.items())
    out = sum(math.log(theta + i * alpha) for i in range(1, J))
    out -= sum(math.log(theta + i) for i in range(1, n))
    for k, c in hist.items():
        out += c * sum(math.log(j - alpha) for j in range(1, k))
    return out


@pytest.mark.parametrize(
    "case,fraction", [("adult-3", 0.01), ("adult-4", 0.1), ("snb-a", 0.1), ("geometric", 0.5)]
)
def test_pitman_s_estimate_is_where_the_likelihood_is_flat(case, fraction):
    """At Pitman's (theta, alpha) both partial derivatives of the log-likelihood, by central
    differences of the log-likelihood written out term by term, are ~0; a step of 10% in
    either parameter is not (so the check can fail); and the estimate is
    Gamma(theta + 1) / Gamma(theta + alpha) N^alpha."""
    hist = _hist(_golden(case, fraction).histogram)
    got = population_uniques(histogram=hist, sampling_fraction=fraction, model="pitman")
    est = got.pitman
    assert est.converged and est.iterations > 0 and est.reason is None
    theta, alpha = dict(est.parameters)["theta"], dict(est.parameters)["alpha"]

    def grad(t, a):
        h = 1e-5
        dt = (_pitman_loglik(t * (1 + h), a, hist) - _pitman_loglik(t * (1 - h), a, hist)) / (
            2 * t * h
        )
        da = (_pitman_loglik(t, a + h, hist) - _pitman_loglik(t, a - h, hist)) / (2 * h)
        return dt, da

    dt, da = grad(theta, alpha)
    assert abs(dt) < 1e-4 and abs(da) < 1e-4
    off = grad(theta * 1.1, alpha)
    assert max(abs(off[0]), abs(off[1])) > 1e-3
    N = got.population_size
    want = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * N**alpha
    assert est.uniques == pytest.approx(want, rel=1e-10)
    assert est.fraction == pytest.approx(want / N)


def _snb_expected(alpha, beta, K, pi, size, terms=4000):
    """E[number of sample classes of ``size``] under SNB by direct summation: F - 1 ~
    NB(alpha, beta), f | F ~ Binomial(F, pi), over K classes."""
    F = np.arange(1, terms + 1)
    j = F - 1
    log_nb = (
        special.gammaln(j + alpha) - special.gammaln(alpha) - special.gammaln(j + 1)
        + alpha * np.log(beta) + j * np.log1p(-beta)
    )  # fmt: skip
    ok = F >= size
    log_bin = np.full(F.shape, -np.inf)
    Fs = F[ok]
    log_bin[ok] = (
        special.gammaln(Fs + 1) - special.gammaln(size + 1) - special.gammaln(Fs - size + 1)
        + size * np.log(pi) + (Fs - size) * np.log1p(-pi)
    )  # fmt: skip
    return K * float(np.exp(log_nb + log_bin).sum())


def _shlosser(hist, q, arx=False):
    """Shlosser's K (Haas et al. 1995) term by term; ``arx``: ARX's denominator, the sum of
    (1-q)^i (1+q)^i c_i - 1 over the distinct sizes."""
    s = lambda f: sum(f(i) * c for i, c in hist.items())  # noqa: E731
    if arx:
        den = sum((1 - q) ** i * c * (1 + q) ** i - 1 for i, c in hist.items())
    else:
        den = s(lambda i: (1 - q) ** i * ((1 + q) ** i - 1))
    ratio = s(lambda i: (1 - q) ** i) / s(lambda i: i * q * (1 - q) ** (i - 1))
    num = s(lambda i: i * q * q * (1 - q * q) ** (i - 1))
    return sum(hist.values()) + hist.get(1, 0) * num / den * ratio**2


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.5])
def test_snb_solves_its_moment_equations(fraction):
    """variant="paper" on all of Adult's quasi-identifiers: at SNB's (alpha, beta) the
    expected numbers of sample classes of sizes 1 and 2, summed directly over the model's
    distribution, are the sample's; K is Shlosser's estimate written out; the estimate is K
    beta^alpha."""
    hist = _hist(_golden("adult-all", fraction).histogram)
    got = population_uniques(
        histogram=hist, sampling_fraction=fraction, model="snb", variant="paper"
    )
    est = got.snb
    assert est.converged and est.uniques is not None
    p = dict(est.parameters)
    pi = got.sampling_fraction
    assert _snb_expected(p["alpha"], p["beta"], p["K"], pi, 1) == pytest.approx(hist[1], rel=1e-8)
    assert _snb_expected(p["alpha"], p["beta"], p["K"], pi, 2) == pytest.approx(hist[2], rel=1e-8)
    assert est.uniques == pytest.approx(p["K"] * p["beta"] ** p["alpha"], rel=1e-12)
    assert p["K"] == pytest.approx(_shlosser(hist, pi), rel=1e-12)


@pytest.mark.parametrize("case", ["snb-a", "snb-c", "snb-d"])
def test_arx_s_snb_solves_arx_s_equations(case):
    """variant="arx" solves ARX's equations, whose second multiplies by (1 - q)^(alpha + 2)
    where the derivation divides, with ARX's Shlosser denominator: they hold at the
    solution, written out here; the derivation's second moment does not."""
    hist = _hist(_golden(case, 0.5).histogram)
    got = population_uniques(histogram=hist, sampling_fraction=0.5, model="snb")
    assert got.snb.converged
    a, b, K = (dict(got.snb.parameters)[k] for k in ("alpha", "beta", "K"))
    pi = got.sampling_fraction
    assert K == pytest.approx(_shlosser(hist, pi, arx=True), rel=1e-12)
    d = (1 - pi) * (1 - b)
    e1 = K * pi * (b / (1 - d)) ** a * (a * d / (1 - d) + 1)
    e2 = K * a * b**a * pi * pi * (1 - b) / 2 * (1 - d) ** (a + 2) * (2 - (1 - a) * d)
    assert e1 == pytest.approx(hist[1], abs=1e-6) and e2 == pytest.approx(hist[2], abs=1e-6)
    assert _snb_expected(a, b, K, pi, 1) == pytest.approx(hist[1], rel=1e-8)
    assert abs(_snb_expected(a, b, K, pi, 2) - hist[2]) > 1e-3


def test_zayatz_is_its_formula_enumerated():
    """Classes of sizes 1, 1, 1, 2, 2, 4 (n = 11) from N = 110: the hypergeometric
    probabilities by binomial coefficients, U = c_1 P(F=1 | f=1) / pi; the probability is
    importable from metrics.risk, as before."""
    sizes = np.array([1, 1, 1, 2, 2, 4])
    n, N = 11, 110

    def p1(i):
        return math.comb(i, 1) * math.comb(N - i, n - 1) / math.comb(N, n)

    prob = 3 * p1(1) / (3 * p1(1) + 2 * p1(2) + 1 * p1(4))
    assert zayatz_unique_probability(sizes, n, N) == pytest.approx(prob, rel=1e-12)
    assert from_risk is zayatz_unique_probability
    got = population_uniques(sizes, population_size=N, model="zayatz")
    assert got.uniques == pytest.approx(3 * prob / (n / N), rel=1e-12)
    assert got.zayatz.converged and got.zayatz.iterations == 0
    assert got.pitman is None and got.snb is None  # only the model asked for


def _est(model, u):
    return UniquenessEstimate(model, u, None if u is None else u / 1000, True, 0)


def test_dankar_s_rule_on_each_branch():
    """Up to 0.1 (inclusive) Pitman when valid, else Zayatz; above, the smaller of Zayatz
    and SNB when SNB is valid (SNB on a tie, as ARX's strict comparison), else Zayatz."""
    z, p, s = _est("zayatz", 50.0), _est("pitman", 70.0), _est("snb", 40.0)
    bad_p, bad_s = _est("pitman", None), _est("snb", None)
    assert dankar_choice(0.1, z, p, s) == "pitman"
    assert dankar_choice(0.01, z, bad_p, s) == "zayatz"
    assert dankar_choice(0.1000001, z, p, s) == "snb"
    assert dankar_choice(0.5, z, p, _est("snb", 60.0)) == "zayatz"
    assert dankar_choice(0.5, z, p, _est("snb", 50.0)) == "snb"
    assert dankar_choice(0.5, z, p, bad_s) == "zayatz"
    # the same branches on real histograms (ARX's choices in the golden file)
    cases = {
        ("adult-3", 0.1): "pitman",  # <= 0.1, Pitman valid
        ("tiny", 0.01): "zayatz",  # <= 0.1, Pitman invalid
        ("snb-a", 0.5): "snb",  # SNB valid and smaller
        ("snb-b", 1.0): "zayatz",  # SNB valid, Zayatz smaller by 3e-14
        ("adult-3", 0.2): "zayatz",  # SNB invalid
        ("no-uniques", 0.5): "none",
    }
    for (case, fraction), want in cases.items():
        row = _golden(case, fraction)
        got = population_uniques(histogram=_hist(row.histogram), sampling_fraction=fraction)
        assert got.chosen == want, (case, fraction)
        if want == "none":
            assert got.uniques == 0.0 and got.sample_uniques == 0
            assert got.label == "Dankar et al. 2012 (no sample uniques), sampling fraction 0.5"
        else:
            assert got.uniques == getattr(got, want).uniques
    tiny = population_uniques(histogram={1: 3, 2: 2, 4: 1}, sampling_fraction=0.01)
    assert tiny.pitman.uniques is None and tiny.pitman.reason  # the fallback, with a reason


def test_an_estimate_that_does_not_converge_is_none_with_its_reason():
    """SNB on Adult's three quasi-identifiers: no start value converges (ARX: 0, invalid);
    the estimate is None, says why, and its parameters are NaN; the steps are counted."""
    row = _golden("adult-3", 0.5)
    got = population_uniques(histogram=_hist(row.histogram), sampling_fraction=0.5)
    assert not got.snb.converged and got.snb.uniques is None and got.snb.fraction is None
    assert got.snb.reason == "the solver did not converge from any start value"
    assert math.isnan(dict(got.snb.parameters)["alpha"]) and got.snb.iterations > 0
    snb_only = population_uniques(
        histogram=_hist(row.histogram), sampling_fraction=0.5, model="snb"
    )
    assert snb_only.uniques is None and snb_only.label == "SNB, sampling fraction 0.5"


def test_the_whole_population_gives_the_sample_uniques():
    """Sampling fraction 1: Zayatz's estimate is the sample uniques exactly and Dankar's
    (the smaller of Zayatz and SNB) within solver accuracy."""
    for h in ({1: 109, 2: 30, 3: 85}, {1: 3, 2: 2, 4: 1}, {1: 1000, 2: 500, 3: 250, 4: 125}):
        got = population_uniques(histogram=h, sampling_fraction=1.0)
        assert got.population_size == got.sample_size
        assert got.zayatz.uniques == h[1]
        assert got.uniques == pytest.approx(h[1], rel=1e-9)


histograms = st.dictionaries(st.integers(1, 40), st.integers(1, 60), min_size=1, max_size=6).filter(
    lambda h: sum(k * c for k, c in h.items()) >= 2
)


@settings(max_examples=40, deadline=None)
@given(histograms, st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.7, 1.0]))
def test_estimates_stay_within_zero_and_the_population(h, fraction):
    """Every valid estimate of every model lies in [0, N], its fraction is U / N, and
    Dankar's value is one of the models' (or 0 without sample uniques)."""
    got = population_uniques(histogram=h, sampling_fraction=fraction)
    N = got.population_size
    for est in (got.zayatz, got.pitman, got.snb):
        if est.uniques is not None:
            assert 0 <= est.uniques <= N
            assert est.fraction == pytest.approx(est.uniques / N)
        else:
            assert est.reason
    assert got.uniques is not None and 0 <= got.uniques <= N
    if h.get(1, 0) == 0:
        assert got.uniques == 0 and got.chosen == "none"
    else:
        assert got.uniques == getattr(got, got.chosen).uniques


def test_arx_special_functions():
    """ARX's digamma is the digamma (to its ~1e-9) for positive arguments and by reflection
    for negative ones; its trigamma is exact from 12 on, but below 12 leaves out the
    asymptotic tail (trigamma(11) is 0, trigamma(1) the first seven terms of zeta(2))."""
    x = np.r_[np.linspace(0.01, 60, 500), -0.3, -2.5, -7.25]
    np.testing.assert_allclose(arx_digamma(x), special.digamma(x), rtol=1e-8, atol=1e-8)
    big = np.linspace(12, 200, 50)
    np.testing.assert_allclose(arx_trigamma(big), special.polygamma(1, big), rtol=1e-12)
    assert arx_trigamma(11.0) == 0.0
    assert arx_trigamma(1.0) == pytest.approx(sum(1 / k**2 for k in range(1, 8)), rel=1e-15)
    assert arx_trigamma(-0.5) == pytest.approx(np.pi**2 - arx_trigamma(1.5), rel=1e-12)
    assert len(START_VALUES) == 16 and START_VALUES[-1][0] == pytest.approx(0.99)


def test_results_as_dict_and_frame():
    row = _golden("snb-a", 0.5)
    got = population_uniques(histogram=_hist(row.histogram), sampling_fraction=0.5)
    d = got.to_dict()
    assert d["chosen"] == "snb" and d["population_size"] == row.N
    assert d["snb"]["parameters"].keys() == {"alpha", "beta", "K"}
    frame = got.to_pandas()
    assert list(frame.index) == ["zayatz", "pitman", "snb", "dankar (snb)"]
    assert frame.loc["dankar (snb)", "uniques"] == got.uniques
    assert got.label == "Dankar et al. 2012 (SNB), sampling fraction 0.5"
    # rounding of N as ARX's Math.round: halves up (Python's round would give 2)
    assert population_uniques([1], sampling_fraction=0.4).population_size == 3


# -- 3. bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"class_sizes": []}, "non-empty 1-d"),
        ({"class_sizes": [1, 0, 2]}, "class sizes must be >= 1, got 0"),
        ({"class_sizes": [1, -3]}, "class sizes must be >= 1, got -3"),
        ({"class_sizes": [1.5, 2]}, "must be integers"),
        ({"histogram": {}}, "histogram of class sizes is empty"),
        ({"histogram": {0: 3}}, "got 0: 3"),
        ({"histogram": {2: 0}}, "got 2: 0"),
        ({"class_sizes": [1], "histogram": {1: 1}}, "one of the two"),
        ({"class_sizes": [1, 2], "sampling_fraction": 0.0}, r"\(0, 1\], got 0.0"),
        ({"class_sizes": [1, 2], "sampling_fraction": 1.5}, r"\(0, 1\], got 1.5"),
        ({"class_sizes": [1, 2], "sampling_fraction": -0.1}, r"\(0, 1\], got -0.1"),
        (
            {"class_sizes": [1, 2], "population_size": 2},
            "population size must be an integer >= the 3",
        ),
        ({"class_sizes": [1, 2], "sampling_fraction": 0.5, "population_size": 9}, "not both"),
        ({"class_sizes": [1, 2]}, "give a sampling fraction or a population size"),
        ({"class_sizes": [1, 2], "sampling_fraction": 0.5, "model": "chao"}, "model must be"),
        ({"class_sizes": [1, 2], "sampling_fraction": 0.5, "variant": "x"}, "variant must be"),
    ],
)
def test_bad_input_is_one_clear_parameter_error(kwargs, message):
    with pytest.raises(ParameterError, match=message) as info:
        population_uniques(**kwargs)
    assert "\n" not in str(info.value)


def test_shlosser_variants_differ_only_in_the_denominator():
    sizes, counts = np.array([1, 2, 5]), np.array([10, 4, 2])
    assert shlosser_classes(sizes, counts, 1.0, "paper") == 16.0  # the sample is everything
    assert shlosser_classes(sizes, counts, 0.3, "arx") != shlosser_classes(
        sizes, counts, 0.3, "paper"
    )
