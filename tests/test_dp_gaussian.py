"""The discrete Gaussian (CKS 2020) in three layers: exact pmf and algebra, neighbours and
limits, invariants; its sampler's paths, and the DiscreteGaussian / Gaussian mechanisms."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from privlab.dp import (
    BudgetAccountant,
    DiscreteGaussian,
    Gaussian,
    ZCDPAccountant,
    delta_from_rho,
    epsilon_from_rho,
)
from privlab.dp.samplers import (
    _GAUSS_SCALAR_MAX,
    SIGMA2_MAX,
    _discrete_gaussian_one,
    _gaussian_plan,
    discrete_gaussian,
    discrete_gaussian_stream,
    exact_sigma2,
    round_up_sigma2,
)
from privlab.errors import BudgetExceededError, ParameterError

N = 100_000
KERNEL = _GAUSS_SCALAR_MAX + 1  # the smallest draw the compiled kernel serves


def _pmf(sigma2: float, r: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, P(y))`` of N_Z(0, sigma2) over ``|y| <= r``, normalized over a much wider range
    (60 sigma + 10 each side: the rest is below e^-1800), independently of privlab."""
    wide = math.ceil(60 * math.sqrt(sigma2)) + 10
    y = np.arange(-wide, wide + 1)
    w = np.exp(-(y.astype(float) ** 2) / (2 * sigma2))
    p = w / math.fsum(w)
    if r is None:
        return y, p
    keep = np.abs(y) <= r
    return y[keep], p[keep]


def _dg_chi2(draws: np.ndarray, sigma2: float) -> float:
    """Chi-square p-value of integer draws against N_Z(0, sigma2): every cell with at least
    20 expected draws, plus the two tails."""
    y, p = _pmf(sigma2)
    cells = p * draws.size >= 20
    lo, hi = y[cells].min(), y[cells].max()
    inner = (y >= lo) & (y <= hi)
    tail = float(p[y < lo].sum())
    inside = np.bincount(draws[(draws >= lo) & (draws <= hi)] - lo, minlength=hi - lo + 1)
    obs = np.array([np.sum(draws < lo), *inside, np.sum(draws > hi)])
    exp = np.array([tail, *p[inner], float(p[y > hi].sum())]) * draws.size
    if tail * draws.size < 1:  # tiny sigma: no tail cells
        obs, exp = obs[1:-1], exp[1:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


SIGMAS2 = [Fraction(1, 4), Fraction(7, 3), 1, 30, Fraction(10**6, 7)]


# --- layer 1: exact algebra, conversions, deterministic limits --------------------------------
PLANS = [Fraction(1, 4), Fraction(7, 3), 1, 2, 30, Fraction(10**6, 7), Fraction(3, 1000),
         Fraction(2**47 + 1, 3), 2**48]  # fmt: skip


@pytest.mark.parametrize("sigma2", PLANS)
def test_the_plan_is_the_gaussian_up_to_a_constant(sigma2):
    """The Laplace weight times the acceptance, ``exp(-|y| ls/lt - (p|y| - q0)^2 a/b)``, is
    ``exp(-y^2/(2 sigma^2))`` times one constant: checked in exact rationals for |y| <= 50
    and a few far values (CKS 2020 Algorithm 3 with privlab's choice of scale)."""
    s2 = Fraction(sigma2)
    plan = _gaussian_plan(s2)
    assert plan.b <= 2 * SIGMA2_MAX and plan.lt <= SIGMA2_MAX

    def exponent(y: int) -> Fraction:
        c = plan.p * abs(y) - plan.q0
        return Fraction(abs(y) * plan.ls, plan.lt) + Fraction(c * c * plan.a, plan.b)

    const = exponent(0)
    for y in [*range(-50, 51), 10**6, -(10**9), 3 * 10**12]:
        assert exponent(y) - Fraction(y * y) / (2 * s2) == const, y
    # the kernel's acceptance numerator fits 2^62 up to ymax
    c = plan.p * plan.ymax - plan.q0
    assert c * c * plan.a <= 1 << 62 and plan.q0**2 * plan.a <= 1 << 62


def test_sigma2_is_taken_exactly_or_rounded_up_and_bad_values_are_refused_in_one_line():
    assert exact_sigma2(Fraction(7, 3)) == Fraction(7, 3)
    assert exact_sigma2(5) == 5 and exact_sigma2(np.int64(5)) == 5
    assert exact_sigma2(0.25) == Fraction(1, 4) and exact_sigma2(10.5) == Fraction(21, 2)
    for x in (0.1, 2.3, 1e-9, 1e6 + 0.1, 2e14 + 0.5):
        f = exact_sigma2(x)
        assert f >= Fraction(x)  # never less noise
        assert f == round_up_sigma2(Fraction(x))
        n, d = f.numerator, f.denominator
        assert n <= SIGMA2_MAX and (n >= d or n * d <= SIGMA2_MAX)
        if x >= 1:
            assert f - Fraction(x) <= Fraction(x) * Fraction(1, 2**46)
    assert exact_sigma2(1e-30) == Fraction(1, 2**48)  # the smallest there is
    bad = [0, -1, 0.0, -2.5, math.nan, math.inf, -math.inf, True, "1", None, Fraction(-1, 3),
           Fraction(1, 2**49), Fraction(2**49, 3), 2**48 + 1, 1e15]  # fmt: skip
    for b in bad:
        with pytest.raises(ParameterError, match="sigma2") as err:
            discrete_gaussian(b, (3,), rng=0)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("size", [5, KERNEL], ids=["scalar", "kernel"])
def test_a_tiny_sigma_concentrates_at_zero(size):
    """sigma^2 = 1/100: P(Y != 0) = 2 e^-50 / Z < 4e-22; the smallest sigma^2, 2^-48, even
    less: every draw is 0, on both paths."""
    for s2 in (Fraction(1, 100), Fraction(1, 2**48), 1e-40):
        assert not discrete_gaussian(s2, (size,), rng=1).any()
        assert not discrete_gaussian(s2, (size,)).any()


def test_the_variance_is_below_sigma2_and_the_normalizer_is_exact():
    """CKS 2020 (Section 2.1): Var N_Z(0, sigma^2) < sigma^2; the moments against direct
    sums over a wide range."""
    from privlab.dp.mechanisms import discrete_gaussian_moments

    for s2 in (Fraction(1, 4), Fraction(7, 3), 1, 9, 15.9, 16, 100):
        y, p = _pmf(float(s2))
        var = float(np.sum(p * y.astype(float) ** 2))
        z, v = discrete_gaussian_moments(s2)
        assert v == pytest.approx(var, rel=1e-12)
        wide = math.ceil(60 * math.sqrt(float(s2))) + 10
        yy = np.arange(-wide, wide + 1, dtype=float)
        assert z == pytest.approx(math.fsum(np.exp(-yy * yy / (2 * float(s2)))), rel=1e-12)
        assert v <= float(s2)  # (equal in doubles from sigma^2 = 9 on)
    assert discrete_gaussian_moments(Fraction(1, 4))[1] == pytest.approx(0.2150127, rel=1e-6)
    assert discrete_gaussian_moments(1)[1] < 1.0  # strictly, below sigma = 1 in doubles


def test_the_renyi_divergence_of_neighbours_is_at_most_alpha_rho():
    """zCDP of the discrete Gaussian (CKS 2020 Theorem 4) on the exact pmfs: D_alpha(N_Z(x,
    s^2) || N_Z(x + Delta, s^2)) <= alpha Delta^2 / (2 s^2) for every alpha, with equality
    when (alpha - 1) Delta is an integer; and the (epsilon, delta) that the zCDP conversion
    states holds for the exact law (delta_exact = sum max(0, P - e^eps Q) <= delta)."""
    for s2, shift in ((4, 1), (Fraction(7, 3), 3), (Fraction(1, 4), 1), (30, 2)):
        y, p = _pmf(float(s2))
        q = np.interp(y - shift, y, p, left=0.0, right=0.0)  # the neighbour's law, shifted
        rho = shift**2 / (2 * float(s2))
        lp = -(y.astype(float) ** 2) / (2 * float(s2))  # log-pmfs up to one common constant
        lq = -((y - shift).astype(float) ** 2) / (2 * float(s2))
        lz = logsumexp(lp)
        for alpha in (1.5, 2.0, 3.0, 7.5):
            d = (logsumexp(alpha * lp + (1 - alpha) * lq) - lz) / (alpha - 1)
            assert d <= alpha * rho * (1 + 1e-9), (s2, shift, alpha)
            if ((alpha - 1) * shift) % 1 == 0:
                assert d == pytest.approx(alpha * rho, rel=1e-9)
        for delta in (1e-3, 1e-6):
            eps = epsilon_from_rho(rho, delta)
            exact = float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))
            assert exact <= delta
            assert exact <= delta_from_rho(rho, eps) * (1 + 1e-9)
        # not pure DP: the privacy loss grows without bound in the tails
        assert (lp - lq)[0] > 5


# --- layer 2: the exact pmf by chi-square, neighbours, moments (fixed seeds and the OS) --------
@pytest.mark.parametrize("rng", [3, None], ids=["seeded", "os-csprng"])
@pytest.mark.parametrize("sigma2", SIGMAS2, ids=str)
def test_discrete_gaussian_is_exact(rng, sigma2):
    """100,000 draws (the compiled kernel) fit the exact pmf; a sigma 30% too wide or too
    narrow is rejected."""
    draws = discrete_gaussian(sigma2, (N,), rng)
    assert draws.dtype == np.int64 and draws.shape == (N,)
    s2 = float(sigma2)
    assert _dg_chi2(draws, s2) > 1e-4
    assert _dg_chi2(draws, s2 * 1.3**2) < 1e-8
    assert _dg_chi2(draws, s2 / 1.3**2) < 1e-8


@pytest.mark.parametrize("rng", [5, None], ids=["seeded", "os-csprng"])
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(7, 3), 0.3])
def test_the_scalar_path_draws_the_same_distribution(rng, sigma2):
    """Up to 4096 draws run the Python reference one at a time."""
    gen = np.random.default_rng(rng) if rng is not None else None
    draws = np.concatenate([discrete_gaussian(sigma2, (20,), gen) for _ in range(2000)])
    s2 = float(exact_sigma2(sigma2))
    assert _dg_chi2(draws, s2) > 1e-4
    assert _dg_chi2(draws, s2 * 1.3**2) < 1e-6 and _dg_chi2(draws, s2 / 1.3**2) < 1e-6


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), 30])
def test_symmetric_mean_zero_and_variance_below_sigma2(sigma2):
    """Counts of +k and -k agree (binomial), the mean is 0 and the sample variance the exact
    variance (below sigma^2), each within 4 standard errors."""
    from privlab.dp.mechanisms import discrete_gaussian_moments

    n = 200_000
    x = discrete_gaussian(sigma2, (n,), rng=11)
    _, var = discrete_gaussian_moments(sigma2)
    assert var <= float(sigma2)
    assert abs(x.mean()) < 4 * math.sqrt(var / n)
    m4 = np.mean(x.astype(float) ** 4)
    assert abs(x.var() - var) < 4 * math.sqrt((m4 - var**2) / n)
    for k in range(1, 6):
        plus, minus = int(np.sum(x == k)), int(np.sum(x == -k))
        assert stats.binomtest(plus, plus + minus).pvalue > 1e-4


def test_neighbouring_outputs_stay_within_the_converted_epsilon_delta():
    """DiscreteGaussian(rho = 1/8) on a count of 10 and on its neighbour 11: for every tail
    and bin set S, P[M(D) in S] <= e^eps P[M(D') in S] + delta (eps from delta = 1e-3,
    CKS Corollary 13), up to 4 standard errors; and the bound is nearly attained."""
    mech = DiscreteGaussian(0.125)
    eps, delta = epsilon_from_rho(0.125, 1e-3), 1e-3
    n = 200_000
    a = mech.randomize(np.full(n, 10), rng=1)
    b = mech.randomize(np.full(n, 11), rng=2)
    worst = 0.0
    for s in range(0, 22):
        for lo, hi in ((-np.inf, s), (s, np.inf), (s, s + 1)):
            for u, v in ((a, b), (b, a)):
                pu = np.mean((u >= lo) & (u < hi))
                pv = np.mean((v >= lo) & (v < hi))
                se = math.sqrt(pu * (1 - pu) / n) + math.exp(eps) * math.sqrt(pv * (1 - pv) / n)
                assert pu <= math.exp(eps) * pv + delta + 4 * se, (lo, hi)
                if pv * n > 400:
                    worst = max(worst, math.log(pu / pv))
    assert worst > 0.5 * eps  # the check can see a privacy loss of the order of eps


def _stream_randbelow(words: np.ndarray):
    stream = int.from_bytes(np.asarray(words, dtype="<u8").tobytes(), "little")
    pos = 0

    def randbelow(m):
        nonlocal pos
        if m <= 1:
            return 0
        w = (m - 1).bit_length()
        while True:
            r = (stream >> pos) & ((1 << w) - 1)
            pos += w
            if r < m:
                return r

    return randbelow


@pytest.mark.parametrize(
    "sigma2",
    [Fraction(1, 4), Fraction(7, 3), 100, Fraction(10**9 + 7, 3), Fraction(1, 2**40)],
    ids=str,
)
def test_the_kernel_draws_what_the_python_reference_draws_from_the_same_bits(sigma2):
    """The compiled sampler is the scalar algorithm on a bit stream: fetched 3 words at a
    time (attempts straddle refills and are redrawn from their first bit), all at once, or
    with every acceptance (``_ymax=-1``) or every nonzero one (``_ymax=0``) decided in Python
    integers, the draws are the reference's.  At sigma^2 = 2^-40 every ``Y != 0`` overflows
    64 bits (``gamma`` near 2^39): the kernel's leading Bernoulli(exp(-1)) draws reject it
    from the bits the reference reads."""
    words = np.random.default_rng(17).bit_generator.random_raw(60_000)
    randbelow = _stream_randbelow(words)
    plan = _gaussian_plan(exact_sigma2(sigma2))
    expected = [_discrete_gaussian_one(plan, randbelow) for _ in range(300)]
    assert len(set(expected)) > 2 or sigma2 < Fraction(1, 2**30)

    def chunks():
        at = 0

        def fetch(n):
            nonlocal at
            out = words[at : at + 3]
            at += 3
            return out

        return fetch

    assert discrete_gaussian_stream(sigma2, 300, chunks()).tolist() == expected
    assert discrete_gaussian_stream(sigma2, 300, lambda n: words).tolist() == expected
    for ymax in (-1, 0):
        got = discrete_gaussian_stream(sigma2, 300, chunks(), _ymax=ymax)
        assert got.tolist() == expected


def test_the_kernel_hands_a_bernoulli_past_two_to_the_62_to_python():
    """The capped Bernoulli gives up (-2) before ``k * den`` passes 2^62 instead of
    overflowing; it runs out (-1) at the end of the stream."""
    from privlab.dp._sampler_kernel import _bernoulli_exp_capped

    words = np.random.default_rng(0).bit_generator.random_raw(4)
    assert _bernoulli_exp_capped(1 << 62, 1 << 62, words, 0) == (False, -2)
    assert _bernoulli_exp_capped(1, 7, words, 255)[1] == -1
    ok, pos = _bernoulli_exp_capped(0, 5, words, 0)  # exp(0) = 1: one uniform below 5
    assert ok and pos > 0 and pos % 3 == 0


@pytest.mark.parametrize("size", [5, 1000, KERNEL], ids=["scalar", "scalar-many", "kernel"])
def test_a_seed_replays_its_draws_on_every_path(size):
    a = discrete_gaussian(Fraction(7, 3), (size,), 12)
    np.testing.assert_array_equal(a, discrete_gaussian(Fraction(7, 3), (size,), 12))
    assert not np.array_equal(a, discrete_gaussian(Fraction(7, 3), (size,), 13))
    if size >= 1000:
        assert not np.array_equal(discrete_gaussian(3, (size,)), discrete_gaussian(3, (size,)))


def test_a_seed_gives_the_same_discrete_gaussian_draws_release_after_release():
    """Pinned draws (recorded on 2026-11-27 when the sampler was written): a refactor that
    changes which bits a draw reads changes them."""
    g = np.random.default_rng(20261127)
    assert discrete_gaussian(Fraction(7, 3), (8,), rng=g).tolist() == PINNED_SCALAR
    big = discrete_gaussian(100, (KERNEL,), rng=np.random.default_rng(20261127))
    assert big[:8].tolist() == PINNED_KERNEL
    assert big.shape == (KERNEL,)


PINNED_SCALAR = [4, -2, 0, 0, -4, -1, -1, 0]
PINNED_KERNEL = [4, 9, -7, -1, 1, -6, -5, 12]


# --- the mechanisms ------------------------------------------------------------------------------
def test_discrete_gaussian_rho_is_sensitivity_squared_over_two_sigma2():
    """rho = Delta^2 / (2 sigma^2) (CKS 2020 Theorem 4), exactly where sigma^2 is a dyadic
    rational, otherwise with sigma^2 rounded up (never less noise) by a relative 2^-46."""
    assert DiscreteGaussian(0.5).sigma2 == 1
    assert DiscreteGaussian(0.125, sensitivity=2).sigma2 == 16
    assert DiscreteGaussian(2.0, sensitivity=1).sigma2 == Fraction(1, 4)
    for rho, sens in ((0.3, 2.0), (1 / 3, 1.0), (1e-4, math.sqrt(2)), (7.0, 3.5)):
        m = DiscreteGaussian(rho, sensitivity=sens)
        exact_rho = Fraction(sens) ** 2 / (2 * m.sigma2)
        assert exact_rho <= Fraction(rho) <= exact_rho * (1 + Fraction(1, 2**40))
        assert m.privacy_cost == rho and m.notion == "zcdp" and m.epsilon == math.inf
    m = DiscreteGaussian.from_sigma(3, sensitivity=2)
    assert m.sigma2 == 9 and m.sigma == 3.0
    assert m.rho >= 4 / 18 and m.rho == pytest.approx(4 / 18, rel=1e-15)
    m = DiscreteGaussian.from_sigma(sigma2=Fraction(7, 3))
    assert m.sigma2 == Fraction(7, 3) and Fraction(m.rho) >= Fraction(3, 14)
    assert m.rho == pytest.approx(3 / 14, rel=1e-15)
    assert DiscreteGaussian.from_sigma(0.5).sigma2 == Fraction(1, 4)


@given(rho=st.floats(1e-6, 100.0), sens=st.floats(0.01, 100.0))
@settings(max_examples=80)
def test_the_charged_rho_covers_the_noise_drawn(rho, sens):
    m = DiscreteGaussian(rho, sensitivity=sens)
    exact_rho = Fraction(sens) ** 2 / (2 * m.sigma2)
    assert exact_rho <= Fraction(m.rho)
    # sigma^2 rounded up by a relative 2^-46 (sigma >= 1) or 2^-23 / sigma (below)
    assert float(exact_rho) == pytest.approx(rho, rel=2**-22 / min(m.sigma, 1.0) + 1e-12)
    back = DiscreteGaussian.from_sigma(sigma2=m.sigma2, sensitivity=sens)
    assert back.sigma2 == m.sigma2 and Fraction(back.rho) >= exact_rho


def test_discrete_gaussian_adds_the_samplers_draw_and_describes_itself():
    mech = DiscreteGaussian(0.2, sensitivity=3)
    x = np.array([0, 5, -2, 1000])
    z = discrete_gaussian(mech.sigma2, x.shape, rng=8)
    assert np.any(z != 0)
    np.testing.assert_array_equal(mech.randomize(x, rng=8), x + z)
    d = mech.describe()
    assert list(d) == ["mechanism", "rho", "sensitivity", "sigma2", "sigma", "bias", "variance"]
    assert d["mechanism"] == "discrete_gaussian" and d["rho"] == 0.2
    assert d["variance"] == mech.variance == pytest.approx(float(mech.sigma2))
    assert mech.pmf(np.arange(-200, 201)).sum() == pytest.approx(1.0, rel=1e-12)
    free = DiscreteGaussian(math.inf)
    assert free.randomize(x).tolist() == x.tolist() and free.variance == 0.0


@pytest.mark.parametrize("rng", [31, None], ids=["seeded", "os-csprng"])
def test_gaussian_noise_follows_the_stated_sigma_on_its_grid(rng):
    """Gaussian(rho) on a real query: outputs on the grid, noise N(0, sigma^2) by KS (the
    grid is 2^-22 sigma), a sigma 30% off rejected; sigma >= sensitivity / sqrt(2 rho)."""
    mech = Gaussian(0.05, sensitivity=2.5, dimension=20_000)
    sigma0 = 2.5 / math.sqrt(0.1)
    excess = max(142 * 2.0**-20, 2 * 142 / (2**24 * math.sqrt(0.1) - 142))  # r = 142 >= 141.4
    assert sigma0 <= mech.sigma <= sigma0 * (1 + excess)
    assert mech.grid >= 2.5 * 2.0**-21
    x = mech.randomize(np.full(20_000, 3.7), rng=rng)
    steps = x / mech.grid
    assert np.array_equal(steps, np.round(steps))
    noise = x - np.rint(3.7 / mech.grid) * mech.grid
    assert stats.kstest(noise, stats.norm(scale=mech.sigma).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.norm(scale=1.3 * mech.sigma).cdf).pvalue < 1e-8
    assert stats.kstest(noise, stats.norm(scale=mech.sigma / 1.3).cdf).pvalue < 1e-8


@pytest.mark.parametrize("dimension", [1, 4, 10])
def test_gaussian_pays_for_the_rounding_of_every_coordinate(dimension):
    """The rounded query moves by at most sensitivity/g + ceil(sqrt(dimension)) steps in L2:
    the noise in steps s^2 makes exactly that rho-zCDP, at most the rho charged."""
    mech = Gaussian(0.4, sensitivity=1.5, dimension=dimension)
    g, s2 = Fraction(mech.grid), mech.sigma2_steps
    steps = Fraction(1.5) / g + math.ceil(math.sqrt(dimension))
    assert steps**2 / (2 * s2) <= Fraction(0.4)
    assert float(steps**2 / (2 * s2)) == pytest.approx(0.4, rel=1e-12)
    x = np.linspace(-3, 3, dimension)
    s2i = exact_sigma2(s2)
    expected = (np.rint(x / mech.grid) + discrete_gaussian(s2i, x.shape, rng=4)) * mech.grid
    np.testing.assert_array_equal(mech.randomize(x, rng=4), expected)
    with pytest.raises(ParameterError, match=f"build it with dimension >= {dimension + 1}"):
        mech.randomize(np.zeros(dimension + 1))
    d = mech.describe()
    assert list(d) == ["mechanism", "rho", "sensitivity", "sigma", "grid", "dimension", "bias",
                       "variance"]  # fmt: skip
    assert d["variance"] == pytest.approx(mech.sigma**2, rel=1e-12)


@given(
    x=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8),
    rho=st.floats(1e-4, 50.0),
    sens=st.floats(0.001, 1000.0),
)
@settings(max_examples=50)
def test_gaussian_outputs_lie_on_the_grid(x, rho, sens):
    m = Gaussian(rho, sensitivity=sens, dimension=8)
    out = m.randomize(np.array(x), rng=0)
    steps = out / m.grid
    assert np.array_equal(steps, np.round(steps))
    assert m.sigma >= sens / math.sqrt(2 * rho)


def test_a_zcdp_mechanism_is_charged_its_rho_and_refused_by_a_pure_budget():
    mech = DiscreteGaussian(0.25)
    pure = BudgetAccountant(10.0)
    with pytest.raises(ParameterError, match="rho-zCDP, not epsilon-DP") as err:
        mech.randomize(np.array([1, 2]), accountant=pure, rng=0)
    assert "\n" not in str(err.value) and pure.ledger == []
    with pytest.raises(ParameterError, match="ZCDPAccountant"):
        Gaussian(0.25).randomize(1.0, accountant=pure, rng=0)
    acc = ZCDPAccountant(1.0)
    mech.randomize(np.array([1, 2]), accountant=acc, rng=0, label="counts")
    Gaussian(0.5).randomize(1.0, accountant=acc, rng=0)
    assert acc.spent == pytest.approx(0.75)
    assert [(s.label, s.rho, s.epsilon) for s in acc.ledger] == [
        ("counts", 0.25, None), ("gaussian", 0.5, None)]  # fmt: skip
    with pytest.raises(BudgetExceededError, match=r"0\.3.*0\.25"):
        DiscreteGaussian(0.3).randomize(np.array([1]), accountant=acc, rng=0)
    assert len(acc.ledger) == 2  # nothing charged for the refusal


@pytest.mark.parametrize("mech", [DiscreteGaussian, Gaussian])
def test_bad_parameters_are_refused_in_one_line(mech):
    for bad, match in ((0, "rho must be positive"), (-1.0, "rho must be positive"),
                       (math.nan, "rho must be positive"), ("x", "rho must be a number"),
                       (True, "rho must be a number")):  # fmt: skip
        with pytest.raises(ParameterError, match=match) as err:
            mech(bad)
        assert "\n" not in str(err.value)
    for sens in (0, -1.0, math.inf, math.nan):
        with pytest.raises(ParameterError, match="sensitivity must be a positive finite"):
            mech(0.5, sensitivity=sens)


def test_bad_inputs_of_the_mechanisms_are_refused():
    with pytest.raises(ParameterError, match="needs integer values"):
        DiscreteGaussian(0.5).randomize(np.array([1.5, 2.0]))
    with pytest.raises(ParameterError, match="needs integer values"):
        DiscreteGaussian(0.5).randomize(np.array([np.nan]))
    with pytest.raises(ParameterError, match="give sigma or sigma2"):
        DiscreteGaussian.from_sigma()
    with pytest.raises(ParameterError, match="give sigma or sigma2"):
        DiscreteGaussian.from_sigma(1.0, sigma2=1)
    for bad in (0, -2.0, math.inf, math.nan, "3", True):
        with pytest.raises(ParameterError, match="sigma must be"):
            DiscreteGaussian.from_sigma(bad)
    for dim in (0, -1, 1.5, True):
        with pytest.raises(ParameterError, match="dimension must be a positive integer"):
            Gaussian(0.5, dimension=dim)
    with pytest.raises(ParameterError, match="needs finite values"):
        Gaussian(0.5).randomize(np.inf)
    with pytest.raises(ParameterError, match="rounding 1000000000000000 coordinates"):
        Gaussian(0.5, sensitivity=1.0, dimension=10**15)


def test_a_rho_too_small_to_sample_names_the_smallest_that_is_not():
    import re

    with pytest.raises(ParameterError, match="too small to sample exactly") as err:
        DiscreteGaussian(1e-30, sensitivity=2)
    assert "\n" not in str(err.value)
    smallest = float(re.search(r"needs rho >= ([0-9.e+-]+)\)", str(err.value)).group(1))
    assert smallest == pytest.approx(4 / 2 / 2**48, rel=1e-2)
    DiscreteGaussian(smallest * 1.01, sensitivity=2)  # accepted
    with pytest.raises(ParameterError, match="too small to sample exactly"):
        DiscreteGaussian(smallest * 0.99, sensitivity=2)
    with pytest.raises(ParameterError, match=r"needs rho > 1.78e-15\)"):
        Gaussian(1e-15)
    assert Gaussian(2e-15).sigma >= 1 / math.sqrt(4e-15)


def test_the_scalar_uniforms_take_several_words_past_64_bits():
    """The Python reference may ask for a uniform below ``k b`` past 2^64 (never in practice):
    it joins words and rejects, so the draw stays exactly uniform."""
    from privlab.dp.samplers import _scalar_below

    randbelow = _scalar_below(9)
    n = 3 * 2**70 + 5
    u = np.array([randbelow(n) for _ in range(20_000)], dtype=object)
    assert all(0 <= v < n for v in u)
    assert abs(np.mean(u < n // 2) - 0.5) < 0.015
    assert abs(np.mean(u < n // 3) - 1 / 3) < 0.015
    assert max(u) > n - n // 100  # the top of the range is reached
