"""Tests that catch the bugs mutation testing found (issue 20; ``make mutation``).

Each class holds the tests of one privacy-critical module; ``tools/mutation.py`` runs a
class (with the module's own test file) against that module's mutants.  Expected values are
computed by hand or by an independent oracle (a formula written out, brute-force
enumeration); the few metamorphic checks (defaults against the same arguments given
explicitly, a batch against its rows) say so.  Randomized code is checked with fixed seeds
and explicit tolerances.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attack_helpers import brute_force_group_marginals, tiny_release
from privlab.data import Attribute, Role, Schema, Table
from privlab.errors import EligibilityError, ParameterError, PrivlabError, ReleaseError

N = 40_000


# --- dp/mechanisms.py -------------------------------------------------------------------------
class TestMechanisms:
    def test_laplace_default_scale_is_exact_and_noise_is_there(self):
        from privlab.dp import Laplace

        m = Laplace(1.0)  # the defaults: epsilon 1, sensitivity 1
        g = 2.0**-20
        t = 2**20 + 1  # ceil((1/g + 1) / 1): one grid step more for the rounding
        assert m.grid == g and m.sensitivity == 1.0
        assert m.scale == g * t == 1.0 + 2.0**-20
        a = math.exp(-1 / t)
        assert m.alpha == a
        assert m.variance == pytest.approx(2 * g**2 * a / (1 - a) ** 2, rel=1e-12)
        noise = m.randomize(np.zeros(N), rng=2)
        # the sample variance of N draws is within 5% of 2 b^2 = 2 (zero noise gives 0)
        assert np.var(noise) == pytest.approx(2.0, rel=0.05)
        assert stats.kstest(noise, stats.laplace(scale=m.scale).cdf).pvalue > 1e-4
        assert stats.kstest(noise, stats.laplace(scale=0.7).cdf).pvalue < 1e-8

    def test_geometric_default_is_exact_and_noise_is_there(self):
        from privlab.dp import Geometric

        m = Geometric(1.0)
        a = math.exp(-1.0)  # 1/1 is an integer: no rounding of the ratio
        assert m.sensitivity == 1 and m.alpha == a
        assert m.variance == pytest.approx(2 * a / (1 - a) ** 2, rel=1e-15)
        noise = m.randomize(np.zeros(N, dtype=np.int64), rng=3)
        assert np.var(noise) == pytest.approx(2 * a / (1 - a) ** 2, rel=0.05)
        # P(Z = 0) = (1 - a) / (1 + a)
        assert np.mean(noise == 0) == pytest.approx((1 - a) / (1 + a), abs=0.01)

    def test_geometric_at_infinite_epsilon(self):
        from privlab.dp import Geometric

        m = Geometric(math.inf, sensitivity=3)
        x = np.array([4, 0, -7])
        out = m.randomize(x, rng=0)
        assert np.array_equal(out, x) and out.dtype == np.int64
        assert m.alpha == 0.0 and m.variance == 0.0 and m.laplace_scale == 0.0
        assert m.privacy_cost == math.inf and m.bias == 0.0
        assert m.tail_bound(0.05) == 0
        assert np.array_equal(m.pmf(np.array([0, 1, -1, 5])), [1.0, 0.0, 0.0, 0.0])
        assert m.pmf(0) == 1.0
        d = m.describe()
        assert d == {
            "mechanism": "geometric",
            "epsilon": math.inf,
            "sensitivity": 3,
            "alpha": 0.0,
            "bias": 0.0,
            "variance": 0.0,
        }

    def test_laplace_at_infinite_epsilon(self):
        from privlab.dp import Laplace

        m = Laplace(math.inf)
        assert m.scale == 0.0 and m.alpha == 0.0 and m.variance == 0.0
        assert m.tail_bound(0.05) == 0.0 and m.privacy_cost == math.inf
        x = np.array([0.1, -3.5])
        out = m.randomize(x, rng=1)
        assert np.array_equal(out, x) and out is not x

    def test_privacy_costs_are_the_epsilons(self):
        from privlab.dp import Exponential, Geometric, Laplace

        assert Laplace(0.3).privacy_cost == 0.3
        assert Geometric(0.3).privacy_cost == 0.3
        assert Exponential(0.7).privacy_cost == 0.7
        assert Exponential(0.7, sensitivity=2.5).describe() == {
            "mechanism": "exponential",
            "epsilon": 0.7,
            "sensitivity": 2.5,
        }

    def test_smallest_served_epsilon_is_served(self):
        from privlab.dp import Geometric
        from privlab.dp.samplers import MAX_DENOMINATOR

        # scale 2^48 exactly: the sampler's largest t; one step further is refused
        eps = 1.0 / MAX_DENOMINATOR
        m = Geometric(eps)
        assert m.alpha == math.exp(-eps)
        with pytest.raises(ParameterError, match="too small to sample exactly"):
            Geometric(eps / 2)

    def test_integer_scales_need_no_rounding(self):
        from privlab.dp import Geometric

        # 3 / 0.5 = 6 and 2 / 0.25 = 8 are integers: alpha is exactly exp(-epsilon/sens)
        for eps, sens in ((0.5, 3), (0.25, 2), (2.0, 1)):
            assert Geometric(eps, sensitivity=sens).alpha == math.exp(-1 / (sens / eps))
        # 1/0.3 is not: the ratio is rounded up (more noise) by at most 2^-20
        a = Geometric(0.3).alpha
        assert math.exp(-0.3) < a <= math.exp(-0.3 * (1 - 2**-20))

    def test_laplace_value_range_boundary(self):
        from privlab.dp import Laplace

        m = Laplace(1.0)
        g = m.grid
        ok = m.randomize(np.array([g * (2.0**52 - 1)]), rng=0)
        assert ok.shape == (1,)
        with pytest.raises(ParameterError, match="too large for the Laplace grid"):
            m.randomize(np.array([g * 2.0**52]), rng=0)
        with pytest.raises(ParameterError, match="finite"):
            m.randomize(np.array([1.0, np.inf]), rng=0)

    def test_tail_bounds_at_their_definition(self):
        from privlab.dp import Laplace

        m = Laplace(0.5)
        a = m.alpha
        for beta in (0.5, 0.05, 1e-6):
            t = m.tail_bound(beta)
            k = round(t / m.grid)
            # P(|Z| > k) = 2 a^(k+1) / (1 + a) in grid steps: k is the smallest with <= beta
            tail = lambda s: 2 * a ** (s + 1) / (1 + a)  # noqa: E731
            assert tail(k) <= beta * (1 + 1e-9) and tail(k - 1) > beta
        # a beta that is exactly the tail at k steps: k steps, not k + 1
        for k in (0, 3, 10):
            assert m.tail_bound(tail(k)) == k * m.grid

    def test_exponential_checks_its_scores_and_ranges(self):
        from privlab.dp import Exponential

        e = Exponential(1.0)
        with pytest.raises(ParameterError, match="1-d array"):
            e.probabilities([[1.0, 2.0]])
        with pytest.raises(ParameterError, match="1-d array"):
            e.probabilities([])
        with pytest.raises(ParameterError, match="zero width"):
            e.range_probabilities([1.0, 1.0, 1.0], [0.0, 0.0])
        with pytest.raises(ParameterError, match="non-decreasing"):
            e.range_probabilities([0.0, 2.0, 1.0], [0.0, 0.0])
        with pytest.raises(ParameterError, match="len"):
            e.range_probabilities([0.0, 1.0], [0.0, 0.0])
        # a domain narrower than 1 is fine: equal scores give probabilities ∝ width
        assert np.allclose(e.range_probabilities([0.0, 0.1, 0.4], [2.0, 2.0]), [0.25, 0.75])
        with pytest.raises(ParameterError, match="n_outcomes"):
            e.utility_bound(0, 0.1)
        assert e.utility_bound(1, 0.5) == pytest.approx(2 * math.log(2))

    def test_exponential_ranges_at_infinite_epsilon(self):
        from privlab.dp import Exponential

        e = Exponential(math.inf)
        # the best non-empty ranges, in proportion to their widths; the empty range of
        # score 9 is never chosen
        p = e.range_probabilities([0.0, 1.0, 1.0, 3.0, 4.0], [5.0, 9.0, 5.0, 1.0])
        assert np.allclose(p, [1 / 3, 0.0, 2 / 3, 0.0])
        pts = [e.select_in_ranges([0.0, 1.0, 1.0, 3.0], [5.0, 9.0, 5.0], rng=k) for k in range(50)]
        assert all(0.0 <= x < 3.0 for x in pts)

    def test_seeded_draws_are_reproducible_and_none_uses_the_secure_source(self, monkeypatch):
        from privlab.dp import Exponential, mechanisms, secure

        e = Exponential(1.0)
        edges, scores = [0.0, 2.0, 3.0, 5.0], [1.0, 3.0, 2.0]
        a = [e.select_in_ranges(edges, scores, rng=k) for k in range(20)]
        assert a == [e.select_in_ranges(edges, scores, rng=k) for k in range(20)]
        q = np.arange(6.0)
        picks = [e.select(q, rng=k) for k in range(40)]
        assert picks == [e.select(q, rng=k) for k in range(40)]
        calls = []
        real = secure.uniform

        def spy():
            calls.append(1)
            return real()

        monkeypatch.setattr(mechanisms.secure, "uniform", spy)
        e.select(q, rng=3)
        e.select_in_ranges(edges, scores, rng=3)
        assert calls == []  # a seed never touches the OS source
        e.select(q)
        assert len(calls) == 1
        e.select_in_ranges(edges, scores)
        assert len(calls) == 3  # one uniform per phase

    def test_geometric_sensitivity_must_be_a_positive_integer(self):
        from privlab.dp import Geometric

        assert Geometric(1.0, sensitivity=1).sensitivity == 1  # the smallest accepted
        assert Geometric(1.0, sensitivity=2.0).sensitivity == 2
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ParameterError, match="positive integer"):
                Geometric(1.0, sensitivity=bad)

    def test_bernoulli_exp_finishes_in_python_integers_from_two_to_the_52(self, monkeypatch):
        """``K * den`` below 2^52 is drawn from the vectorised source; from exactly 2^52 on
        the draw finishes by CKS Algorithm 1 in Python integers (``secrets.randbelow``)."""
        import secrets

        from privlab.dp.samplers import bernoulli_exp

        asked = []

        def below(n):
            asked.append(int(n.max()))
            assert int(n.max()) < 1 << 52
            return np.asarray(n, dtype=np.int64) - 1  # always the largest value: a failure

        script, calls = [0, 5], []

        def randbelow(n):
            calls.append(n)
            return script[len(calls) - 1]

        monkeypatch.setattr(secrets, "randbelow", randbelow)
        one = np.ones(1, dtype=np.int64)
        # just below the limit: one vectorised draw, n - 1 < 1 fails at K = 1 (odd): True
        assert bernoulli_exp(one, np.array([(1 << 52) - 1]), below).tolist() == [True]
        assert asked == [(1 << 52) - 1] and calls == []
        # at the limit: 0 < 1 succeeds (K = 2), 5 < 1 fails at K = 2 (even): False
        assert bernoulli_exp(one, np.array([1 << 52]), below).tolist() == [False]
        assert asked == [(1 << 52) - 1] and calls == [1 << 52, 2 << 52]
        # 1 < 1 fails at K = 1 (odd): True; 0, 0 then 9: fails at K = 3 (odd): True
        for draws in ([1], [0, 0, 9]):
            script[:], calls[:] = draws, []
            assert bernoulli_exp(one, np.array([1 << 52]), below).tolist() == [True]
            assert calls == [k << 52 for k in range(1, len(draws) + 1)]

    @pytest.mark.parametrize(("s", "t", "draw"), [(1, 2, -1), (2, 5, -2)])
    def test_vectorised_and_scalar_draws_read_the_uniform_integers_alike(
        self, monkeypatch, s, t, draw
    ):
        """A source that always gives its largest value ``n - 1``: ``U = t - 1`` is accepted
        (Bernoulli(exp(-U/t)) fails at K = 1), ``V = 0`` (Bernoulli(exp(-1)) fails at
        K = 2), the sign bit 1 means negative: every draw is ``-((t - 1) // s)``, in the
        scalar path (up to 32 draws) and the vectorised one alike."""
        from privlab.dp import samplers

        # the stub feeds the Python scalar path: its compiled copy (taken once the kernel
        # module is loaded, word for word the same draws: tests/test_dp_tree_kernels.py)
        # reads the generator's words itself, so it is kept off here
        monkeypatch.setattr(samplers, "_KERNEL_MODULE", "privlab.dp.not_loaded")
        monkeypatch.setattr(samplers, "_scalar_below", lambda rng: lambda n: max(n - 1, 0))
        monkeypatch.setattr(
            samplers, "uniform_below", lambda rng: lambda n: np.asarray(n, np.int64) - 1
        )
        assert samplers.discrete_laplace(s, t, (3,), rng=0).tolist() == [draw] * 3
        big = samplers._SCALAR_MAX + 1
        assert samplers.discrete_laplace(s, t, (big,), rng=0).tolist() == [draw] * big

    def test_up_to_32_draws_are_scalar_and_from_two_to_the_18_the_kernel_draws(self, monkeypatch):
        """The documented switches of ``discrete_laplace``: the scalar algorithm up to
        ``_SCALAR_MAX = 32`` draws, the vectorised rounds from 33, the compiled kernel from
        ``_KERNEL_MIN = 2^18`` draws (each path fed a source that gives ``n - 1``)."""
        from privlab.dp import samplers

        paths = []

        def scalar(rng):
            paths.append("scalar")
            return lambda n: max(n - 1, 0)

        def vector(rng):
            paths.append("vector")
            return lambda n: np.asarray(n, np.int64) - 1

        def kernel(s, t, size, words):
            paths.append("kernel")
            return np.full(size, -((t - 1) // s), dtype=np.int64)

        monkeypatch.setattr(samplers, "_KERNEL_MODULE", "privlab.dp.not_loaded")  # as above
        monkeypatch.setattr(samplers, "_scalar_below", scalar)
        monkeypatch.setattr(samplers, "uniform_below", vector)
        monkeypatch.setattr(samplers, "discrete_laplace_stream", kernel)
        for size in (1, 32, 33, (1 << 18) - 1, 1 << 18):
            out = samplers.discrete_laplace(2, 5, (size,), rng=0)
            assert out.shape == (size,) and (out == -2).all()
        assert paths == ["scalar", "scalar", "vector", "vector", "kernel"]

    def test_beta_must_lie_strictly_between_0_and_1(self):
        from privlab.dp import Geometric, Laplace

        for mech in (Laplace(1.0), Geometric(1.0)):
            assert mech.tail_bound(0.5) > 0  # inside: accepted
            for beta in (0.0, 1.0):
                with pytest.raises(ParameterError, match=r"beta must be in \(0, 1\)"):
                    mech.tail_bound(beta)

    def test_geometric_accepts_integer_valued_floats_and_refuses_fractions(self):
        from privlab.dp import Geometric

        out = Geometric(math.inf).randomize(np.array([3.0, -4.0, 0.0]), rng=0)
        assert out.dtype == np.int64 and out.tolist() == [3, -4, 0]
        with pytest.raises(ParameterError, match="integer values"):
            Geometric(1.0).randomize(np.array([3.0, 3.5]), rng=0)


# --- dp/estimators.py -------------------------------------------------------------------------
class TestEstimators:
    def test_james_stein_at_p_3(self):
        from privlab.dp.estimators import james_stein

        x = np.array([1.0, 2.0, 2.0])  # ||x||^2 = 9
        b = 0.5
        assert np.allclose(james_stein(x, b), (1 - 1 * 2 * 0.25 / 9) * x, rtol=1e-15)
        # a norm below 1 shrinks too: ||x||^2 = 0.09, factor 1 - 2 * 0.05^2 / 0.09
        x = np.array([0.1, 0.2, 0.2])
        assert np.allclose(james_stein(x, 0.05), (1 - 2 * 0.0025 / 0.09) * x, rtol=1e-14)

    def test_zero_and_clipped_inputs_stay_finite(self):
        from privlab.dp.estimators import ESTIMATORS, HistogramLayout

        lay = HistogramLayout((4,))
        for name, f in ESTIMATORS.items():
            zero = f(np.zeros(4), 1.0, layout=lay)
            assert np.array_equal(zero, np.zeros(4)), name
            # clipping an all-negative noisy histogram makes it all zero
            neg = f(np.array([-1.0, -2.0, -3.0, -0.5]), 1.0, clip=True, layout=lay)
            assert np.array_equal(neg, np.zeros(4)), name

    def test_clip_keeps_positive_values_and_zeroes_negative_ones(self):
        from privlab.dp.estimators import mle

        assert np.array_equal(mle(np.array([-2.0, 0.5, 3.0]), 1.0, clip=True), [0.0, 0.5, 3.0])
        assert np.array_equal(mle(np.array([-2.0, 0.5]), 1.0), [-2.0, 0.5])

    def test_empirical_bayes_shift_by_hand(self):
        from privlab.dp.estimators import empirical_bayes

        x = np.array([[3.0, -1.0, 0.0], [0.0, 0.0, 0.0]])
        # |x| = 4, s = 2 * 3 * 0.25 / 4 = 0.375; the all-zero row stays (no shift)
        want = np.array([[3.0 - 0.375, -1.0 + 0.375, 0.0], [0.0, 0.0, 0.0]])
        assert np.allclose(empirical_bayes(x, 0.5), want, rtol=1e-15)
        # a small |x| (1, then 1/2) still shifts: s = 2 * 2 * 0.01 / |x|
        small = np.array([[0.75, -0.25], [0.25, 0.25]])
        want = np.array([[0.75 - 0.04, -0.25 + 0.04], [0.25 - 0.08, 0.25 - 0.08]])
        assert np.allclose(empirical_bayes(small, 0.1), want, rtol=1e-14)

    def test_scalar_input_and_bad_scales(self):
        from privlab.dp.estimators import james_stein, mle

        out = mle(np.float64(3.0), 1.0)
        assert out.shape == (1,) and out[0] == 3.0
        assert np.array_equal(james_stein(2.5, 1.0), [2.5])
        for bad in (-1e-9, math.nan, math.inf):
            with pytest.raises(ParameterError, match="noise scale"):
                mle(np.ones(3), bad)
        with pytest.raises(ParameterError, match="NaN or infinite"):
            mle(np.array([1.0, np.inf]), 1.0)

    def test_histogram_layout(self):
        from privlab.dp.estimators import HistogramLayout

        lay = HistogramLayout((2, 3, 1), 2)
        assert lay.block_size == 6 and lay.size == 12
        assert lay.offsets.tolist() == [0, 2, 5] and lay.offsets.dtype == np.int64
        assert HistogramLayout((1,)).size == 1  # a one-cell histogram is allowed
        assert HistogramLayout((1,), 1).n_blocks == 1
        for sizes in ((), (0, 2), (2, -1)):
            with pytest.raises(ParameterError, match="histogram sizes"):
                HistogramLayout(sizes)
        with pytest.raises(ParameterError, match="n_blocks"):
            HistogramLayout((2,), 0)

    def test_posterior_mean_batch_and_alpha(self):
        from privlab.dp.estimators import laplace_posterior_mean

        g = np.random.default_rng(4)
        x = g.uniform(0, 10, (3, 7))
        y, alpha = laplace_posterior_mean(x, 2.0, return_alpha=True)
        assert y.shape == (3, 7) and alpha.shape == (3,)
        rows = [laplace_posterior_mean(r, 2.0, return_alpha=True) for r in x]
        assert np.allclose(y, [r[0] for r in rows]) and np.allclose(alpha, [r[1] for r in rows])
        assert np.array_equal(laplace_posterior_mean(x, 2.0), y)
        # zero noise: the input, and an infinite rate per row
        y0, a0 = laplace_posterior_mean(x, 0.0, return_alpha=True)
        assert np.array_equal(y0, x) and a0.shape == (3,) and np.all(np.isinf(a0))

    def test_consistent_without_layout_is_identity_and_clip_projects(self):
        from privlab.dp.estimators import HistogramLayout, consistent

        x = np.array([3.0, -1.0, 2.0])
        assert np.allclose(consistent(x, 1.0), x, rtol=0, atol=1e-12)
        batch = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, 1.0]])  # rows are draws, not blocks
        assert np.allclose(consistent(batch, 1.0), batch, rtol=0, atol=1e-12)
        # one histogram, clip: the projection onto {y >= 0, sum y = 4}
        assert np.allclose(consistent(x, 1.0, clip=True), [2.5, 0.0, 1.5])
        # an all-negative block projects onto zeros (total 0)
        y = consistent(np.array([-1.0, -2.0, 5.0, 1.0]), 1.0, clip=True,
                       layout=HistogramLayout((2,), 2))  # fmt: skip
        assert np.array_equal(y[:2], [0.0, 0.0]) and np.allclose(y[2:], [5.0, 1.0])
        # a small positive total (1, then 1/2) is kept: the projection onto sum y = T
        y = consistent(np.array([1.5, -0.5, 0.75, -0.25]), 1.0, clip=True,
                       layout=HistogramLayout((2,), 2))  # fmt: skip
        assert np.allclose(y, [1.0, 0.0, 0.5, 0.0], rtol=0, atol=1e-15)
        # without clip a negative common total stays: T = (-2/2 - 4/2) / (1/2 + 1/2) = -3
        y = consistent(np.array([-1.0, -1.0, -3.0, -1.0]), 1.0, layout=HistogramLayout((2, 2)))
        assert np.allclose(y, [-1.5, -1.5, -2.5, -0.5], rtol=0, atol=1e-15)

    def test_registry_names(self):
        from privlab.dp import estimators as E

        assert E.get_estimator("ml") is E.mle and E.get_estimator(" MLE ") is E.mle
        for alias, key in E._ALIASES.items():
            assert E.canonical_name(alias) == key
            assert E.get_estimator(alias) is E.ESTIMATORS[key]
        with pytest.raises(ParameterError, match="unknown estimator"):
            E.canonical_name("median")


# --- metrics/privacy.py -------------------------------------------------------------------------
class TestPrivacy:
    def test_t_closeness_by_hand_on_two_value_attributes(self):
        from privlab.metrics.privacy import class_emd_ordered, emd_equal, t_closeness

        c = np.array([[2, 0], [0, 2]])  # table (1/2, 1/2); each group all one value
        assert t_closeness(c, distance="ordered") == 0.5
        assert t_closeness(c, distance="equal") == 0.5
        c = np.array([[3, 1], [1, 3], [2, 2]])  # table (1/2, 1/2)
        assert np.allclose(emd_equal(c), [0.25, 0.25, 0.0])
        assert t_closeness(c, distance="ordered") == 0.25
        # a value the reference lacks is skipped; one value left: distance 0 for each class
        assert np.array_equal(class_emd_ordered(np.array([[1, 0], [2, 0], [3, 0]])), [0, 0, 0])
        with pytest.raises(ParameterError, match="distance"):
            t_closeness(c, distance="manhattan")

    def test_ordered_distance_on_three_values_by_hand(self):
        from privlab.metrics.privacy import class_emd_equal, class_emd_ordered

        c = np.array([[2, 0, 0], [0, 1, 1]])  # table (1/2, 1/4, 1/4)
        # class 0: q - p = (1/2, -1/4, -1/4): cumsum (1/2, 1/4, 0) -> 3/4 / (m - 1 = 2)
        # class 1: q - p = (-1/2, 1/4, 1/4): cumsum (-1/2, -1/4, 0) -> 3/8
        assert np.allclose(class_emd_ordered(c), [0.375, 0.375])
        assert np.allclose(class_emd_equal(c), [0.5, 0.5])
        # an explicit reference, normalized when it does not sum to 1
        ref = np.array([0.5, 0.5, 1.0])  # sums to 2: normalized to (1/4, 1/4, 1/2)
        assert np.allclose(class_emd_equal(c, ref), class_emd_equal(c, ref / 2))
        assert np.allclose(class_emd_equal(c, ref / 2), [0.75, 0.25])
        # reference (1/4, 1/4, 1/2): class 0 cumsum (3/4, 1/2, 0) -> 5/8; class 1 (-1/4, 0, 0)
        assert np.allclose(class_emd_ordered(c, ref), [0.625, 0.125])
        # a reference with a tiny total is normalized too
        assert np.allclose(class_emd_equal(c, ref * 1e-13), [0.75, 0.25])
        with pytest.raises(PrivlabError, match="3 entries"):
            class_emd_equal(c, np.array([0.5, 0.5]))
        with pytest.raises(PrivlabError, match="3 entries"):
            class_emd_equal(c, np.zeros(3))

    def test_delta_disclosure_by_hand(self):
        from privlab.metrics.privacy import class_delta, delta_disclosure

        c = np.array([[1, 1], [3, 1]])  # table (2/3, 1/3)
        assert np.allclose(class_delta(c), [math.log(1.5), math.log(4 / 3)])
        assert delta_disclosure(c) == pytest.approx(math.log(1.5))
        assert delta_disclosure(np.array([[1, 0], [1, 2]])) == math.inf

    def test_empty_groups_are_not_counted(self):
        from privlab.metrics.privacy import (
            class_max_share,
            distinct_l_diversity,
            k_anonymity,
            max_disclosure,
        )

        c = np.array([[0, 0, 0], [2, 1, 0], [0, 0, 0], [1, 1, 1]])  # G = 4 != m = 3
        assert k_anonymity(c) == 3 and distinct_l_diversity(c) == 2
        assert max_disclosure(c) == pytest.approx(2 / 3)
        assert np.allclose(class_max_share(c), [0.0, 2 / 3, 0.0, 1 / 3])  # no NaN
        for bad in (np.zeros((2, 3)), np.zeros((0, 3)), np.array([1, 2])):
            with pytest.raises(PrivlabError, match="empty"):
                k_anonymity(bad)

    def test_recursive_parameter_boundaries(self):
        from privlab.metrics.privacy import class_recursive_c, recursive_cl_diversity

        c = np.array([[2, 1, 1]])
        assert recursive_cl_diversity(c, 1.0, 1)  # l = 1: 2 <= 1 * 4
        assert recursive_cl_diversity(c, 1e-9, 1) is False
        with pytest.raises(ParameterError, match="l must be at least 1"):
            recursive_cl_diversity(c, 1.0, 0)
        with pytest.raises(ParameterError, match="c must be positive"):
            recursive_cl_diversity(c, -1.0, 2)
        assert np.array_equal(class_recursive_c(np.array([[2, 1, 1], [3, 1, 0]]), 2), [1.0, 3.0])

    def test_report_measures_warnings_and_frame(self):
        from privlab.data.partition import Partition
        from privlab.metrics.privacy import privacy_report, unique_share

        # 20 rows: q has one unique row (a 5% share: not flagged, the flag is above 5%)
        q = ["u"] + ["a"] * 9 + ["b"] * 10
        lnk = Table.from_pandas(pd.DataFrame({"q": q}), qi=["q"])
        rep = privacy_report("test", lnk, kept=["q"])
        assert rep.flagged == () and rep.k == 1 and rep.uniques == pytest.approx(0.05)
        assert rep.n_rows == 20 and rep.n_classes == 3 and rep.partition is None
        assert rep.t_equal is None and rep.distinct_l is None
        assert len(rep.warnings()) == 1 and "1 of the 20 published rows" in rep.warnings()[0]
        m = rep.measures()
        assert m["k"] == 1 and "partition" not in m and "details" not in m and "flagged" not in m
        frame = rep.to_pandas()
        assert list(frame.columns) == ["measure", "value"] and len(frame) == len(m)
        # 2 unique rows of 20 (10%): flagged, and listed in the frame
        lnk2 = Table.from_pandas(pd.DataFrame({"q": ["u", "v"] + ["a"] * 18}), qi=["q"])
        rep2 = privacy_report("test", lnk2, kept=["q"])
        assert rep2.flagged == (("q", 0.1),) and len(rep2.warnings()) == 2
        assert rep2.to_pandas()["measure"].tolist()[-1] == "flagged: q"
        assert unique_share(np.array([[0], [1], [1]])) == pytest.approx(1 / 3)
        assert unique_share(np.zeros((0, 1), dtype=np.int64)) == 0.0
        # no unique row: no warning
        lnk3 = Table.from_pandas(pd.DataFrame({"q": ["a", "a", "b", "b"]}), qi=["q"])
        assert privacy_report("test", lnk3).warnings() == []
        # with a partition: the attribute measures by hand
        sens = Attribute("s", ("x", "y", "z"), Role.SENSITIVE)  # z absent: 2 groups, 3 values
        part = Partition(np.array([0, 0, 1, 1]), np.array([[2, 0, 0], [1, 1, 0]]), sens)
        rep3 = privacy_report("test", lnk3, part)
        assert rep3.partition == "groups" and rep3.n_groups == 2 and rep3.min_group == 2
        assert rep3.distinct_l == 1 and rep3.max_disclosure == 1.0
        assert rep3.t_equal == pytest.approx(0.25) and rep3.t_ordered == pytest.approx(0.25)
        assert rep3.delta == math.inf
        with pytest.raises(PrivlabError, match="empty"):
            privacy_report("test", lnk3.take(np.zeros(4, dtype=bool)))
        one = privacy_report("test", lnk3.take(np.array([True, False, False, False])))
        assert one.n_rows == 1 and one.k == 1 and one.uniques == 1.0

    def test_recursive_diversity_holds_at_its_bound(self):
        """Recursive (c, l)-diversity is ``r_(1) <= c * sum_{i >= l} r_(i)`` (Machanavajjhala
        et al. 2007, Def. 4.1): a class exactly at the bound (up to the 1e-12 slack) is
        diverse, one just below it is not."""
        from privlab.metrics.privacy import _EPS, class_recursive_ok

        counts = np.array([[3, 2]])  # r_(1) = 3, tail (l = 2) = 2
        c = (3 - _EPS) / 2
        assert c * 2 + _EPS == 3.0  # the bound is met with equality in floating point
        assert class_recursive_ok(counts, c, 2).tolist() == [True]
        assert class_recursive_ok(counts, c - 1e-9, 2).tolist() == [False]

    def test_recursive_c_of_weighted_counts(self):
        """The smallest c is ``r_(1) / tail`` for weighted (fractional) counts too: a tail of
        0.5 doubles it."""
        from privlab.metrics.privacy import recursive_c

        assert recursive_c(np.array([[1.0, 0.5]]), 2) == 2.0
        assert recursive_c(np.array([[1.0, 0.25], [3.0, 1.5]]), 2) == 4.0


# --- attacks/em.py ------------------------------------------------------------------------------
def _flat_codes(rel) -> tuple[np.ndarray, np.ndarray]:
    """Each tuple's flat QI codes (attribute j's value + the sizes of the attributes before)
    and the offsets, from the release's own QIT (not from the attack's layout)."""
    qi = rel.quasi_identifiers()
    sizes = np.asarray(qi.schema.sizes)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    return qi.codes + ptr[:-1], ptr


def _m_step_oracle(gamma: np.ndarray, flat: np.ndarray, ptr: np.ndarray, alpha, beta):
    """Mothali (2011) Table 4.1's M-step written out over tuples."""
    n, m = gamma.shape
    psi = (gamma.sum(axis=0) + alpha) / (n + m * alpha)
    w = np.zeros((ptr[-1], m))
    for j in range(ptr.size - 1):
        for k in range(ptr[j], ptr[j + 1]):
            num = gamma[flat[:, j] == k].sum(axis=0) + beta
            den = gamma.sum(axis=0) + (ptr[j + 1] - ptr[j]) * beta
            w[k] = num / den
    return psi, w


def _scores_oracle(psi, w, flat):
    return psi[None, :] * np.prod(w[flat], axis=1)


class TestEM:
    def test_fit_em_refuses_a_group_larger_than_exact_max(self):
        """The exact E-step enumerates the permutations of groups of at most exact_max
        tuples (default 7, as run_em): a group of 8 is refused (it used to be written past
        the kernels' 7 x 7 work arrays: heap corruption), and passes with exact_max=8."""
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        lay = layout_of(tiny_release(3, sizes=(8, 2, 3), n_attr=2, n_values=9))
        with pytest.raises(ParameterError, match="at most exact_max = 7 tuples, got a group of 8"):
            fit_em(lay, rng=1, max_iter=2)
        with pytest.raises(ParameterError, match="exact_max = 3 tuples, got a group of 8"):
            fit_em(lay, exact_max=3, rng=1, max_iter=2)
        fit = fit_em(lay, exact_max=8, rng=1, max_iter=2)
        assert np.isfinite(fit.log_posterior)
        np.testing.assert_allclose(fit.gamma.sum(axis=1), 1.0, rtol=1e-9)
        approx = fit_em(lay, approximate=True, rng=1, max_iter=2)  # no enumeration needed
        assert np.isfinite(approx.log_posterior)

    def test_fit_em_runs_and_counts_at_least_one_iteration(self):
        """At least one iteration (``max_iter`` < 1 is refused: there would be no fit to
        return); each allowed iteration is counted when the tolerance never stops it."""
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        lay = layout_of(tiny_release(3, sizes=(2, 2, 3), n_attr=2, n_values=5))
        for bad in (0, -1, True, 2.0):
            with pytest.raises(ParameterError, match="max_iter must be an integer >= 1"):
                fit_em(lay, rng=1, max_iter=bad)
        assert [fit_em(lay, rng=1, max_iter=k, tol=-1.0).iterations for k in (1, 2, 5)] == [
            1,
            2,
            5,
        ]

    def test_m_step_against_its_formula(self):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import m_step

        rel = tiny_release(11, sizes=(2, 3, 2), n_attr=2, n_values=4)
        lay = layout_of(rel)
        flat, ptr = _flat_codes(rel)
        g = np.random.default_rng(0).random((rel.n_rows, rel.n_values))
        g /= g.sum(axis=1, keepdims=True)
        gc = np.zeros((lay.combo_codes.shape[0], rel.n_values))
        np.add.at(gc, lay.combo_of, g)
        for alpha, beta in ((1.0, 1.0), (0.0, 0.5), (2.0, 0.0)):
            psi, w = m_step(gc, lay, alpha, beta)
            want_psi, want_w = _m_step_oracle(g, flat, ptr, alpha, beta)
            np.testing.assert_allclose(psi, want_psi, rtol=1e-12)
            np.testing.assert_allclose(w, want_w, rtol=1e-12)
            assert psi.sum() == pytest.approx(1.0, abs=1e-12)
            for j in range(ptr.size - 1):  # every attribute block of w sums to 1 per value
                np.testing.assert_allclose(w[ptr[j] : ptr[j + 1]].sum(axis=0), 1.0, rtol=1e-12)

    def test_tol_zero_stops_at_an_exact_fixed_point(self):
        """Convergence is |change| <= tol * |log posterior|: with tol = 0 an exact fixed point
        stops the run.  Singleton groups are one: the E-step is the truth whatever the
        parameters, so the second iteration repeats the first bit for bit."""
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        lay = layout_of(tiny_release(22, sizes=(1, 1, 1, 1, 1), n_values=5))
        fit = fit_em(lay, tol=0.0, rng=0)
        assert fit.converged and fit.iterations == 2

    def test_run_em_accepts_a_group_of_exactly_seven(self):
        from privlab.attacks import run_em

        rel = tiny_release(23, sizes=(7, 2), n_attr=1, n_values=7)
        run = run_em(rel, restarts=1, max_iter=1, rng=0)
        np.testing.assert_allclose(run.posterior.probs.sum(axis=1), 1.0)
        with pytest.raises(ParameterError, match="at most 7"):
            run_em(tiny_release(23, sizes=(8, 2), n_attr=1, n_values=8), restarts=1)

    def test_restrict_to_groups_keeps_the_group_values_and_fills_a_vanished_row_uniformly(self):
        from privlab.attacks._layout import layout_from_arrays
        from privlab.attacks.em import restrict_to_groups

        # group 0 holds values 0 and 1, group 1 values 1 and 2 (three sensitive values)
        codes = np.array([[0], [1], [0], [1]])
        lay = layout_from_arrays(
            codes, (2,), np.array([0, 0, 1, 1]), np.array([[1, 1, 0], [0, 1, 1]])
        )
        gamma = np.array(
            [
                [0.2, 0.2, 0.6],  # value 2 is not in its group: 0.2, 0.2 renormalized
                [0.0, 0.0, 1.0],  # nothing left on its group's values: uniform over them
                [0.5, 0.25, 0.25],
                [1.0, 0.0, 0.0],  # nothing left: uniform over values 1 and 2
            ]
        )
        p = restrict_to_groups(gamma, lay)
        np.testing.assert_allclose(
            p, [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.5, 0.5]]
        )

    def test_m_step_tiny_hand_example(self):
        from privlab.attacks._layout import layout_from_arrays
        from privlab.attacks.em import m_step

        # two QIs (2 and 3 values), two sensitive values; three combinations
        codes = np.array([[0, 0], [1, 2], [1, 2], [0, 1]])
        lay = layout_from_arrays(codes, (2, 3), np.array([0, 0, 1, 1]), np.array([[1, 1], [1, 1]]))
        gc = np.zeros((lay.combo_codes.shape[0], 2))
        resp = {(0, 0): [1.0, 0.0], (1, 2): [0.5, 1.5], (0, 1): [0.25, 0.75]}
        for c, row in enumerate(lay.combo_codes - lay.attr_ptr[:-1]):
            gc[c] = resp[tuple(row.tolist())]
        psi, w = m_step(gc, lay, 0.0, 1.0)
        # N = 4: psi = (1.75, 2.25) / 4
        np.testing.assert_allclose(psi, [1.75 / 4, 2.25 / 4])
        # R_0 (2 values): value 0 has (1 + 0.25, 0 + 0.75), value 1 (0.5, 1.5); +1, / (sum + 2)
        np.testing.assert_allclose(w[0:2, 0], [2.25 / 3.75, 1.5 / 3.75])
        np.testing.assert_allclose(w[0:2, 1], [1.75 / 4.25, 2.5 / 4.25])
        # R_1 (3 values): (1, 0.25, 0.5) and (0, 0.75, 1.5); +1, / (sum + 3)
        np.testing.assert_allclose(w[2:5, 0], np.array([2.0, 1.25, 1.5]) / 4.75)
        np.testing.assert_allclose(w[2:5, 1], np.array([1.0, 1.75, 2.5]) / 5.25)

    @pytest.mark.parametrize("approximate", [False, True])
    def test_one_em_step_and_log_posterior_against_direct_computation(self, approximate):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        rel = tiny_release(12, sizes=(2, 3, 1, 2), n_attr=2, n_values=4)
        lay = layout_of(rel)
        flat, ptr = _flat_codes(rel)
        alpha, beta = 0.5, 2.0
        fit = fit_em(lay, approximate=approximate, alpha=alpha, beta=beta, max_iter=1,
                     init="dirichlet", rng=np.random.default_rng(7))  # fmt: skip
        g = np.random.default_rng(7)  # the thesis's start: psi ~ Dir(1 + a), w_ij. ~ Dir(1 + b)
        m = rel.n_values
        psi0 = g.dirichlet(np.full(m, 1.0 + alpha))
        w0 = np.empty((ptr[-1], m))
        for j in range(ptr.size - 1):
            w0[ptr[j] : ptr[j + 1]] = g.dirichlet(np.full(ptr[j + 1] - ptr[j], 1.0 + beta), m).T
        s0 = _scores_oracle(psi0, w0, flat)
        if approximate:
            gamma0 = s0 / s0.sum(axis=1, keepdims=True)
            ll = np.log(s0.sum(axis=1)).sum()
        else:
            gamma0, ll = brute_force_group_marginals(s0, rel)
        logp = ll + alpha * np.log(psi0).sum() + beta * np.log(w0).sum()
        assert fit.log_posterior == pytest.approx(logp, rel=1e-12)
        assert fit.iterations == 1 and fit.converged is False
        psi1, w1 = _m_step_oracle(gamma0, flat, ptr, alpha, beta)
        np.testing.assert_allclose(fit.psi, psi1, rtol=1e-10)
        np.testing.assert_allclose(fit.w, w1, rtol=1e-10)
        s1 = _scores_oracle(psi1, w1, flat)
        if approximate:
            gamma1 = s1 / s1.sum(axis=1, keepdims=True)
        else:
            gamma1, _ = brute_force_group_marginals(s1, rel)
        np.testing.assert_allclose(fit.gamma, gamma1, rtol=1e-9, atol=1e-15)

    def test_random_worlds_start(self):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        rel = tiny_release(13, sizes=(2, 3, 2), n_attr=2, n_values=4)
        lay = layout_of(rel)
        flat, ptr = _flat_codes(rel)
        fit = fit_em(lay, max_iter=1, rng=np.random.default_rng(5))  # alpha = beta = 1
        g = np.random.default_rng(5)
        counts = rel.group_counts().astype(float)
        # each tuple's group shares times Exp(1) noise, normalized
        g0 = counts[rel.group_id] * g.exponential(size=(rel.n_rows, rel.n_values))
        g0 /= g0.sum(axis=1, keepdims=True)
        psi0, w0 = _m_step_oracle(g0, flat, ptr, 1.0, 1.0)
        s0 = _scores_oracle(psi0, w0, flat)
        gamma0, ll = brute_force_group_marginals(s0, rel)
        assert fit.log_posterior == pytest.approx(
            ll + np.log(psi0).sum() + np.log(w0).sum(), rel=1e-12
        )
        psi1, w1 = _m_step_oracle(gamma0, flat, ptr, 1.0, 1.0)
        np.testing.assert_allclose(fit.psi, psi1, rtol=1e-10)
        np.testing.assert_allclose(fit.w, w1, rtol=1e-10)
        with pytest.raises(ParameterError, match="init"):
            fit_em(lay, init="uniform", rng=0)

    def test_stops_at_the_first_small_relative_change(self):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        rel = tiny_release(14, sizes=(2, 3, 2, 2), n_attr=2, n_values=4)
        lay = layout_of(rel)
        # tol < 0 never converges: fit k runs exactly k iterations, reporting the k-th
        lp = [fit_em(lay, max_iter=k, tol=-1.0, rng=3).log_posterior for k in range(1, 30)]
        tol = 1e-4
        want = next(k for k in range(2, 30) if abs(lp[k - 1] - lp[k - 2]) <= tol * abs(lp[k - 1]))
        fit = fit_em(lay, tol=tol, rng=3)
        assert fit.converged and fit.iterations == want
        assert fit.log_posterior == lp[want - 1]
        # max_iter defaults to 1000
        run = fit_em(lay, tol=-1.0, rng=3)
        assert run.iterations == 1000 and not run.converged

    def test_fit_em_defaults_are_the_documented_ones(self):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import fit_em

        lay = layout_of(tiny_release(15, sizes=(2, 2, 3)))
        a = fit_em(lay, rng=4)
        b = fit_em(lay, alpha=1.0, beta=1.0, tol=1e-9, max_iter=1000, init="random-worlds",
                   approximate=False, exact_max=7, rng=4)  # fmt: skip
        assert a.log_posterior == b.log_posterior and a.iterations == b.iterations
        np.testing.assert_array_equal(a.psi, b.psi)

    def test_approximate_e_step_by_hand(self):
        from privlab.attacks.em import e_step_approximate

        s = np.array([[1.0, 3.0], [2.0, 2.0], [0.5, 0.0]])
        gamma, ll = e_step_approximate(s)
        np.testing.assert_allclose(gamma, [[0.25, 0.75], [0.5, 0.5], [1.0, 0.0]])
        assert ll == pytest.approx(math.log(4) + math.log(4) + math.log(0.5))

    def test_ties_and_singletons_in_the_assignment(self):
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import most_probable_assignment

        rel = tiny_release(16, sizes=(1, 2, 1, 3, 2), n_values=5)
        lay = layout_of(rel)
        counts = rel.group_counts()
        # equal gammas: every group's tuples get its values in code order (as the Hungarian
        # solver breaks ties), whatever the group size
        got = most_probable_assignment(np.ones((rel.n_rows, rel.n_values)), lay)
        for grp in range(counts.shape[0]):
            tup = np.flatnonzero(rel.group_id == grp)
            np.testing.assert_array_equal(got[tup], np.flatnonzero(counts[grp]))

    def test_run_em_parameter_checks_and_defaults(self, monkeypatch):
        from privlab.attacks import em

        rel = tiny_release(17, sizes=(2, 2, 3))
        for bad in (True, 1.5, 0):
            with pytest.raises(ParameterError, match="restarts"):
                em.run_em(rel, restarts=bad)
        with pytest.raises(ParameterError, match="max_iter"):
            em.run_em(rel, restarts=1, max_iter=0)
        with pytest.raises(ParameterError, match="alpha and beta"):
            em.run_em(rel, restarts=1, alpha=-0.1)
        with pytest.raises(ParameterError, match="alpha and beta"):
            em.run_em(rel, restarts=1, beta=-0.1)
        with pytest.raises(ParameterError, match="probabilities"):
            em.run_em(rel, restarts=1, probabilities="argmax")
        zero = em.run_em(rel, restarts=1, max_iter=1, alpha=0.0, beta=0.0, rng=0)
        assert zero.posterior.diagnostics["alpha"] == 0.0
        with monkeypatch.context() as mp:  # a clock that reads 10.0, then 11.23456
            ticks = iter([10.0, 11.23456])
            mp.setattr(em, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
            run = em.run_em(rel, restarts=2, rng=0)
        d = run.posterior.diagnostics
        assert run.seconds == pytest.approx(1.23456) and d["seconds"] == 1.235
        assert d["alpha"] == 1.0 and d["beta"] == 1.0 and d["restarts"] == 2
        assert d["approximate"] is False and d["calibrated"] is False
        assert d["init"] == "random-worlds" and d["probabilities"] == "assignment"
        assert run.posterior.method == "em"
        explicit = em.run_em(rel, restarts=2, tol=1e-9, max_iter=1000, rng=0)
        assert [r["iterations"] for r in run.restarts] == [
            r["iterations"] for r in explicit.restarts
        ]
        assert em.run_em(rel, restarts=1, approximate=True, rng=0).posterior.method == (
            "em-approximate"
        )

    def test_best_restart_is_the_first_highest(self):
        from privlab.attacks import run_em

        rel = tiny_release(18, sizes=(2, 3, 2, 2, 3), n_values=5)
        run = run_em(rel, restarts=6, rng=1, truth=rel.truth)
        lps = [r["log_posterior"] for r in run.restarts]
        first = int(np.argmax(lps))
        assert run.best.log_posterior == lps[first]
        assert (run.best.assignment == rel.truth).mean() == run.restarts[first]["accuracy"]
        # the posterior is the best restart's
        again = run_em(rel, restarts=6, rng=1, probabilities="gamma")
        assert again.best.log_posterior == lps[first]

    def test_group_size_limits(self):
        from privlab.attacks import run_em
        from privlab.attacks._layout import layout_of
        from privlab.attacks.em import assignment_probabilities

        big = tiny_release(19, sizes=(8, 2), n_attr=1, n_values=8)
        with pytest.raises(ParameterError, match="at most 7"):
            run_em(big, restarts=1)
        run = run_em(big, restarts=1, approximate=True, max_iter=5, rng=0)
        np.testing.assert_allclose(run.posterior.probs.sum(axis=1), 1.0)
        # the approximate E-step ignores the groups: its gamma is psi_i prod w over all values
        assert np.all(run.best.gamma > 0)
        lay = layout_of(big)
        p = assignment_probabilities(np.ones((big.n_rows, 8)), lay)  # groups of 8: enumerated
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        nine = layout_of(tiny_release(19, sizes=(9,), n_attr=1, n_values=9))
        with pytest.raises(ParameterError, match="at most 8"):
            assignment_probabilities(np.ones((9, 9)), nine)

    def test_em_attack_returns_the_posterior(self):
        from privlab.attacks.em import em_attack, run_em

        rel = tiny_release(20, sizes=(2, 2, 3))
        post = em_attack(rel, restarts=2, rng=0)
        np.testing.assert_array_equal(post.probs, run_em(rel, restarts=2, rng=0).posterior.probs)
        assert post.method == "em"

    def test_em_restarts_ten_times_by_default(self):
        """``run_em`` restarts 10 times unless told (its documented default): one summary
        row per restart, numbered from 0, and the diagnostics say so."""
        from privlab.attacks.em import run_em

        run = run_em(tiny_release(4, sizes=(2, 3, 2), n_attr=2, n_values=5), rng=2, max_iter=3)
        assert [r["restart"] for r in run.restarts] == list(range(10))
        assert run.posterior.diagnostics["restarts"] == 10

    def test_em_iterates_at_most_a_thousand_times_by_default(self):
        """``max_iter`` defaults to 1000: a tolerance that never stops it runs exactly
        1000 iterations."""
        from privlab.attacks.em import run_em

        rel = tiny_release(4, sizes=(2, 3, 2), n_attr=2, n_values=5)
        run = run_em(rel, restarts=1, rng=2, tol=-1.0)
        assert run.best.iterations == 1000 and not run.best.converged

    def test_em_with_fewer_qi_combinations_than_qi_columns(self):
        """Everyone shares one QI combination over three QI columns (one combination, fewer
        than the columns): the QIs tell nothing, every assignment of a group is equally
        likely, so each tuple's posterior is uniform over its group's values, 1/size, for
        the exact and the approximate E-step alike."""
        from privlab.attacks.em import run_em
        from privlab.publish.anatomy import AnatomyRelease

        sizes = (2, 3, 2)
        qi_rows, group_id, st_rows = [], [], []
        for g, size in enumerate(sizes):
            for v in range(size):
                qi_rows.append(["a", "b", "c"])
                group_id.append(g)
                st_rows.append((g, f"s{g + v}"))
        rel = AnatomyRelease.from_rows(qi_rows, ["q0", "q1", "q2"], group_id, st_rows, "s")
        for approximate in (False, True):
            run = run_em(rel, restarts=2, rng=1, approximate=approximate)
            probs = run.posterior.probs
            want = 1.0 / np.repeat(sizes, sizes)
            np.testing.assert_allclose(probs.max(axis=1), want, rtol=1e-9)
            np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
            assert ((probs > 0).sum(axis=1) == np.repeat(sizes, sizes)).all()


# --- publish/anatomy.py ----------------------------------------------------------------------
def _release(**over):
    from privlab.publish import AnatomyRelease

    schema = Schema((Attribute("q", ("a", "b", "c"), Role.QI),))
    kw = dict(
        qit=Table(np.array([[0], [1], [2], [0]]), schema),
        group_id=np.array([0, 0, 1, 1]),
        st_group=np.array([0, 0, 1, 1]),
        st_value=np.array([0, 1, 1, 2]),
        st_count=np.array([1, 1, 1, 1]),
        sensitive=Attribute("s", ("x", "y", "z"), Role.SENSITIVE),
        l=2,
    )
    kw.update(over)
    return AnatomyRelease(**kw)


class TestAnatomy:
    def test_views_by_hand(self):
        from privlab.release.base import Custody

        truth = Table(np.array([[1], [0], [2], [1]]), Schema((Attribute("s", ("x", "y", "z")),)))
        rel = _release(custody=Custody(truth=truth))
        assert rel.n_groups == 2 and rel.n_values == 3 and rel.qi == ("q",)
        assert rel.truth.tolist() == [1, 0, 2, 1]
        assert rel.group_counts().tolist() == [[1, 1, 0], [0, 1, 1]]
        assert rel.group_sizes().tolist() == [2, 2]
        part = rel.partition()
        assert part.kind == "groups" and part.counts.tolist() == [[1, 1, 0], [0, 1, 1]]
        assert part.group_of.tolist() == [0, 0, 1, 1]
        assert rel.parameters() == {"l": 2} and rel.metadata() == {"n_groups": 2}
        assert rel.summary() == {"rows": 4, "groups": 2, "l": 2, "qi": ["q"], "sensitive": "s"}
        qit = rel.qit_frame()
        assert qit["q"].tolist() == ["a", "b", "c", "a"] and qit["group_id"].tolist() == [
            0,
            0,
            1,
            1,
        ]
        st_ = rel.st_frame()
        assert st_.values.tolist() == [[0, "x", 1], [0, "y", 1], [1, "y", 1], [1, "z", 1]]
        assert set(rel.published()) == {"qit", "st"}
        assert _release().truth is None

    def test_a_non_sensitive_role_is_made_sensitive(self):
        rel = _release(sensitive=Attribute("s", ("x", "y", "z"), Role.QI))
        assert rel.sensitive.role is Role.SENSITIVE and rel.sensitive.domain == ("x", "y", "z")

    def test_round_trip_keeps_the_whole_schema(self, tmp_path):
        from privlab.publish import anatomize, load_release

        df = pd.DataFrame(
            {
                "age": [30, 41, 30, 52, 41, 30, 52, 41],
                "zip": ["02139", "02139", "10001", "10001", "94110", "94110", "02139", "10001"],
                "keep": ["p", "q", "p", "q", "p", "q", "p", "q"],
                "s": ["flu", "hiv", "flu", "cold", "hiv", "cold", "flu", "hiv"],
            }
        )
        table = Table.from_pandas(df, qi=["age", "zip"], sensitive="s")
        rel = anatomize(table, l=2, keep=["keep"], rng=3)
        rel.save(tmp_path / "r")
        back = load_release(tmp_path / "r")
        assert back.qit.schema == rel.qit.schema
        assert back.sensitive == rel.sensitive
        for a, b in zip(back.qit.schema.attributes, rel.qit.schema.attributes):
            assert (a.name, a.domain, a.role, a.numeric) == (b.name, b.domain, b.role, b.numeric)
        assert back.qit.schema["age"].numeric and not back.qit.schema["zip"].numeric
        assert back.l == 2 and back.qi == ("age", "zip")
        assert np.array_equal(back.qit.codes, rel.qit.codes)
        assert np.array_equal(back.group_counts(), rel.group_counts())

    def test_every_check_of_a_release(self):
        from privlab.release.base import Custody

        with pytest.raises(ReleaseError, match="group_id has 3 entries for 4"):
            _release(group_id=np.array([0, 0, 1]))
        with pytest.raises(ReleaseError, match="differ in length"):
            _release(st_count=np.array([1, 1, 2]))
        with pytest.raises(ReleaseError, match="no quasi-identifier"):
            _release(qit=Table(np.array([[0], [1], [2], [0]]),
                               Schema((Attribute("q", ("a", "b", "c"), Role.OTHER),))))  # fmt: skip
        with pytest.raises(ReleaseError, match="non-negative"):
            _release(group_id=np.array([0, 0, -1, 1]))
        with pytest.raises(ReleaseError, match="non-negative"):
            _release(st_group=np.array([0, 0, 1, -1]))
        with pytest.raises(ReleaseError, match="count <= 0"):
            _release(st_count=np.array([1, 1, 0, 2]))
        with pytest.raises(ReleaseError, match="outside its domain"):
            _release(st_value=np.array([0, 1, 1, 3]))
        with pytest.raises(ReleaseError, match="outside its domain"):
            _release(st_value=np.array([0, 1, 1, -1]))
        # a group the ST lists but no QIT row has
        with pytest.raises(ReleaseError, match="group 2 has 0 QIT rows but its ST counts sum to 1"):
            _release(st_group=np.array([0, 0, 1, 1, 2]), st_value=np.array([0, 1, 1, 2, 0]),
                     st_count=np.ones(5, dtype=np.int64))  # fmt: skip
        with pytest.raises(ReleaseError, match="twice"):
            _release(st_group=np.array([0, 0, 1, 1]), st_value=np.array([0, 0, 1, 2]))
        sattr = Attribute("s", ("x", "y", "z"))
        with pytest.raises(ReleaseError, match="truth has 3 entries"):
            _release(custody=Custody(truth=Table(np.array([[0], [1], [1]]), Schema((sattr,)))))
        with pytest.raises(ReleaseError, match="does not match"):
            _release(custody=Custody(truth=Table(np.array([[0], [1], [1], [1]]), Schema((sattr,)))))
        with pytest.raises(ReleaseError, match="empty"):
            _release(qit=Table(np.zeros((0, 1), dtype=np.int64),
                               Schema((Attribute("q", ("a", "b", "c"), Role.QI),))),
                     group_id=np.zeros(0, dtype=np.int64))  # fmt: skip

    def test_from_rows(self):
        from privlab.publish import AnatomyRelease

        rel = AnatomyRelease.from_rows(
            [("a", 1), ("b", 2), ("a", 2)], ["q", "r"], [7, 7, 9],
            [(7, "x"), (7, "y"), (9, "x")], "s", truth=["y", "x", "x"],
        )  # fmt: skip
        assert rel.group_id.tolist() == [0, 0, 1] and rel.l == 1
        assert rel.group_counts().tolist() == [[1, 1], [1, 0]]
        assert rel.truth.tolist() == [1, 0, 0]
        assert rel.qit.codes.tolist() == [[0, 0], [1, 1], [0, 1]]
        no_truth = AnatomyRelease.from_rows([("a",), ("b",)], ["q"], [0, 0], [(0, "x"), (0, "y")],
                                            "s")  # fmt: skip
        assert no_truth.truth is None and no_truth.custody is None

    def test_eligibility_boundary(self):
        from privlab.publish import anatomize
        from privlab.publish.anatomy import check_eligibility

        # a value in exactly N / l tuples is eligible
        check_eligibility(np.array([0, 0, 1, 2]), 2)
        check_eligibility(np.array([0, 0, 0, 1, 1, 1]), 2)
        with pytest.raises(EligibilityError, match="value 0 occurs in 3 of 5"):
            check_eligibility(np.array([0, 0, 0, 1, 2]), 2)
        with pytest.raises(EligibilityError, match="value 'b' occurs in 2 of 3 tuples"):
            check_eligibility(np.array([1, 0, 1]), 2, domain=("a", "b"))
        df = pd.DataFrame({"q": list(range(6)), "s": ["a", "a", "a", "b", "c", "b"]})
        rel = anatomize(Table.from_pandas(df, qi=["q"], sensitive="s"), l=2, rng=0)
        assert sorted(rel.group_sizes().tolist()) == [2, 2, 2]
        assert rel.group_counts().max() == 1

    def test_groups_of_exactly_l_and_the_residues(self):
        from privlab.publish import anatomize

        for seed in range(5):
            # four distinct values, l = 2: two groups of exactly 2, no residue
            df = pd.DataFrame({"q": [0, 1, 2, 3], "s": ["a", "b", "c", "d"]})
            rel = anatomize(Table.from_pandas(df, qi=["q"], sensitive="s"), l=2, rng=seed)
            assert rel.group_sizes().tolist() == [2, 2] and rel.n_groups == 2
            # five distinct values, l = 3: one group of 3 and two residues, which can only
            # join that group (no distinct matching exists): one group of 5
            df = pd.DataFrame({"q": [0, 1, 2, 3, 4], "s": ["a", "b", "c", "d", "e"]})
            rel = anatomize(Table.from_pandas(df, qi=["q"], sensitive="s"), l=3, rng=seed)
            assert rel.group_sizes().tolist() == [5] and rel.group_counts().max() == 1
            # seven tuples, l = 2, values a a b b c c d: three groups and one residue
            df = pd.DataFrame({"q": range(7), "s": list("aabbccd")})
            rel = anatomize(Table.from_pandas(df, qi=["q"], sensitive="s"), l=2, rng=seed)
            assert sorted(rel.group_sizes().tolist()) == [2, 2, 3]
            assert rel.group_counts().max() == 1
            assert np.array_equal(np.bincount(rel.truth, minlength=4), [2, 2, 2, 1])

    def test_more_residues_than_groups_keep_every_group_diverse(self):
        from privlab.publish import anatomize

        # l = 4, values a-d twice and e, f, g once: two groups of 4 and three residues, so
        # at least one residue finds no distinct lacking group and joins one already joined
        df = pd.DataFrame({"q": range(11), "s": list("aabbccddefg")})
        table = Table.from_pandas(df, qi=["q"], sensitive="s")
        for seed in range(8):
            rel = anatomize(table, l=4, rng=seed)
            assert rel.n_groups == 2 and rel.group_counts().max() == 1
            sizes = sorted(rel.group_sizes().tolist())
            assert sum(sizes) == 11 and sizes[0] >= 4 and sizes[1] <= 7

    def test_residues_lacking_the_same_groups_join_distinct_ones(self):
        from privlab.publish import anatomize

        # 15 distinct values, l = 4: three groups of 4 and three residues that every group
        # lacks, so a random choice among lacking groups would put two residues in one group
        # 7 times in 9; the matching sends them to three distinct groups
        df = pd.DataFrame({"q": range(15), "s": [f"v{i:02d}" for i in range(15)]})
        table = Table.from_pandas(df, qi=["q"], sensitive="s")
        for seed in range(12):
            rel = anatomize(table, l=4, rng=seed)
            assert rel.group_sizes().tolist() == [5, 5, 5], seed

    def test_l_boundaries(self):
        from privlab.publish import anatomize

        df = pd.DataFrame({"q": range(6), "s": list("abcabc")})
        table = Table.from_pandas(df, qi=["q"], sensitive="s")
        assert anatomize(table, l=2, rng=0).l == 2
        assert anatomize(table, l=3, rng=0).group_sizes().tolist() == [3, 3]
        with pytest.raises(ParameterError, match="an integer >= 2"):
            anatomize(table, l=1)
        with pytest.raises(ParameterError, match="must be an integer"):
            anatomize(table, l=2.0)
        with pytest.raises(ParameterError, match="must be an integer"):
            anatomize(table, l=True)
        with pytest.raises(ParameterError, match=r"l = 4 is above"):
            anatomize(table, l=4)
        with pytest.raises(ParameterError, match="no sensitive attribute"):
            anatomize(Table.from_pandas(df, qi=["q"]), l=2)
        with pytest.raises(ParameterError, match="no quasi-identifier"):
            anatomize(Table.from_pandas(df, sensitive="s"), l=2)

    def test_counts_of_every_group_by_brute_force(self):
        from privlab.publish import anatomize

        g = np.random.default_rng(0)
        s = g.permutation(np.repeat(np.arange(5), [4, 3, 3, 2, 1]))
        df = pd.DataFrame({"q": g.integers(0, 3, s.size), "s": [f"v{v}" for v in s]})
        rel = anatomize(Table.from_pandas(df, qi=["q"], sensitive="s"), l=3, rng=1)
        t = np.zeros((rel.n_groups, 5), dtype=int)
        for grp, v in zip(rel.group_id, rel.truth):
            t[grp, v] += 1
        assert np.array_equal(t, rel.group_counts()) and t.max() == 1
        sizes = sorted(rel.group_sizes().tolist())
        assert sum(sizes) == 13 and sizes[0] == 3 and sizes[-1] <= 4
