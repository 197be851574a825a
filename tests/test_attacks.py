"""The attacks: exact oracles on tiny tables, statistical checks, invariants, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import gammaln

from attack_helpers import brute_force_group_marginals, synthetic_release, tiny_release
from privlab.attacks import (
    Posterior,
    exact_posterior,
    gelman_rubin,
    random_worlds_attack,
    run_definetti,
    run_em,
)
from privlab.attacks._kernels import group_marginals, group_marginals_by_combo
from privlab.attacks._layout import layout_of, permutation_table
from privlab.attacks.em import (
    assignment_probabilities,
    e_step_exact,
    most_probable_assignment,
    nb_scores,
)
from privlab.attacks.exact import dirichlet_multinomial_loglik
from privlab.errors import ParameterError, PrivlabError, ReleaseError
from privlab.experiments.kifer_table6 import table6_release
from privlab.metrics.calibration import evaluate


# -- the closed-form oracle itself --------------------------------------------------------------
def test_dirichlet_multinomial_matches_numeric_integral():
    # one binary QI, one sensitive value: P(sequence) = int th^a (1-th)^b dth = B(a+1, b+1)
    rel = tiny_release(0, sizes=(1, 1, 1, 1, 1), n_attr=1, n_values=1)
    lay = layout_of(rel)
    assign = np.zeros(lay.n_rows, dtype=np.int64)
    codes = lay.combo_codes[lay.combo_of][:, 0]
    d = lay.attr_ptr[1]
    counts = np.bincount(codes, minlength=d)
    # uniform Dirichlet over d values: prod Gamma(1 + c) * Gamma(d) / Gamma(d + n)
    closed = gammaln(1 + counts).sum() + gammaln(d) - gammaln(d + counts.sum())
    assert dirichlet_multinomial_loglik(assign, lay) == pytest.approx(closed, abs=1e-10)
    if d == 2:
        val, _ = integrate.quad(lambda t: t ** counts[0] * (1 - t) ** counts[1], 0, 1)
        assert np.log(val) == pytest.approx(closed, abs=1e-8)


def test_kifer_table6_exact_posterior_is_0_16():
    """Seed 003 Sec. 5: tuple 12 (non-smoker, group 6) has cancer with probability ~0.16."""
    rel = table6_release()
    exact = exact_posterior(rel)
    cancer = rel.sensitive.domain.index("Cancer")
    assert exact.probs[11, cancer] == pytest.approx(0.16, abs=0.01)
    assert exact.probs[10, cancer] == pytest.approx(1 - exact.probs[11, cancer])
    np.testing.assert_allclose(random_worlds_attack(rel).probs[11, cancer], 0.5)
    run = run_definetti(rel, iterations=20_000, chains=2, rng=1)
    np.testing.assert_allclose(run.posterior.probs, exact.probs, atol=0.03)


@pytest.mark.parametrize("exact_max", [5, 2])  # 2: the group of 3 goes through Metropolis-Hastings
def test_definetti_matches_exact_enumeration(exact_max):
    rel = tiny_release(3, sizes=(2, 3, 2, 2, 2))
    exact = exact_posterior(rel)
    assert exact.diagnostics["assignments"] == 2**4 * 6
    run = run_definetti(rel, iterations=30_000, chains=2, exact_max=exact_max, inner=5, rng=7)
    err = np.abs(run.posterior.probs - exact.probs).max()
    assert err < 0.03, err
    # a model that ignores learning (random worlds) is far from the exact posterior here
    assert np.abs(random_worlds_attack(rel).probs - exact.probs).max() > 0.1
    if exact_max == 2:
        assert run.posterior.diagnostics["mh_groups"] == 1
        assert 0 < run.posterior.diagnostics["mh_acceptance"] <= 1


@pytest.mark.parametrize("sampler", ["collapsed", "alternate"])
def test_every_sampler_matches_exact_enumeration(sampler):
    for seed, sizes, n_values in ((3, (2, 3, 2, 2, 2), 4), (9, (4, 2, 5, 2), 6)):
        rel = tiny_release(seed, sizes=sizes, n_values=n_values)
        exact = exact_posterior(rel)
        run = run_definetti(rel, iterations=20_000, chains=2, rng=1, sampler=sampler)
        assert np.abs(run.posterior.probs - exact.probs).max() < 0.03


def test_definetti_exact_sampling_of_groups_of_4_and_5():
    rel = tiny_release(9, sizes=(4, 2, 5, 2), n_values=6)
    exact = exact_posterior(rel)
    run = run_definetti(rel, iterations=30_000, chains=2, rng=4)
    assert run.posterior.diagnostics["mh_groups"] == 0
    assert np.abs(run.posterior.probs - exact.probs).max() < 0.03


def test_definetti_prior_changes_the_posterior_and_is_exact_too():
    rel = tiny_release(5, sizes=(2, 2, 2, 2))
    exact = exact_posterior(rel, prior=0.3)
    assert np.abs(exact.probs - exact_posterior(rel).probs).max() > 0.01
    run = run_definetti(rel, iterations=30_000, chains=2, prior=0.3, rng=2)
    assert np.abs(run.posterior.probs - exact.probs).max() < 0.03


def test_definetti_is_reproducible_and_diagnoses_convergence():
    rel = tiny_release(1, sizes=(2, 2, 3))
    a = run_definetti(rel, iterations=400, chains=3, rng=11, keep_chains=True)
    b = run_definetti(rel, iterations=400, chains=3, rng=11)
    np.testing.assert_array_equal(a.posterior.probs, b.posterior.probs)
    assert a.chain_probs.shape == (3, rel.n_rows, rel.n_values)
    np.testing.assert_allclose(a.chain_probs.mean(axis=0), a.posterior.probs, atol=1e-6)
    assert a.loglik.shape == (3, 400) and np.all(np.isfinite(a.loglik))
    assert 0.9 < a.rhat < 1.2
    # posteriors put mass only on values of the tuple's own group
    rw = random_worlds_attack(rel).probs
    assert np.all(a.posterior.probs[rw == 0] == 0)


def test_gelman_rubin_detects_disagreeing_chains():
    rng = np.random.default_rng(0)
    same = rng.normal(size=(4, 500))
    assert gelman_rubin(same) == pytest.approx(1.0, abs=0.02)
    apart = same + np.arange(4)[:, None] * 3.0
    assert gelman_rubin(apart) > 2
    assert np.isnan(gelman_rubin(same[:1]))


def test_definetti_learns_on_synthetic_data():
    rel = synthetic_release(3000, l=2, seed=0, strength=0.5)
    res = run_definetti(rel, iterations=600, chains=2, rng=3, truth=rel.truth, keep_chains=True)
    post = res.posterior
    acc = (post.probs.argmax(axis=1) == rel.truth).mean()
    assert acc > 0.72, acc  # random worlds: 0.5
    # the spread of the metrics across chains: each chain's own ACC, ABS and at-risk share
    d = post.diagnostics
    for c in range(2):
        ev = evaluate(res.chain_probs[c].astype(float), rel.truth)
        assert d["acc_per_chain"][c] == pytest.approx(ev.acc, abs=1e-3)
        assert d["abs_per_chain"][c] == pytest.approx(ev.abs, rel=1e-4)
        assert d["at_risk_share_per_chain"][c] == pytest.approx(ev.at_risk_share, abs=1e-3)
    without = run_definetti(rel, iterations=20, chains=2, rng=3).posterior.diagnostics
    assert "acc_per_chain" not in without and len(without["at_risk_share_per_chain"]) == 2


def test_rhat_flags_chains_stuck_in_different_modes():
    # near-deterministic QIs: the Gibbs chains get trapped in different modes, R-hat says so
    rel = synthetic_release(3000, l=2, seed=0, strength=2.0)
    run = run_definetti(rel, iterations=600, chains=3, rng=3)
    assert run.rhat > 1.5, run.rhat


# -- EM -----------------------------------------------------------------------------------------
def _random_params(lay, rng):
    psi = rng.dirichlet(np.ones(lay.n_values))
    w = np.empty((lay.n_flat, lay.n_values))
    for j in range(lay.attr_ptr.size - 1):
        lo, hi = lay.attr_ptr[j], lay.attr_ptr[j + 1]
        w[lo:hi] = rng.dirichlet(np.ones(hi - lo), size=lay.n_values).T
    return psi, w


@pytest.mark.parametrize("seed", [0, 1])
def test_em_exact_e_step_equals_brute_force(seed):
    rel = tiny_release(seed, sizes=(2, 3, 4, 2, 5), n_values=6)
    lay = layout_of(rel)
    psi, w = _random_params(lay, np.random.default_rng(seed))
    scores = nb_scores(psi, w, lay)[lay.combo_of]
    table, ptr = permutation_table(5)
    gamma, ll = e_step_exact(scores, lay, table, ptr)
    want, want_ll = brute_force_group_marginals(scores, rel)
    np.testing.assert_allclose(gamma, want, atol=1e-12)
    assert ll == pytest.approx(want_ll, rel=1e-12)
    # the form the EM's iterations use: the same marginals summed per QI combination
    by_combo = np.zeros((lay.combo_codes.shape[0], lay.n_values))
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])
    ll_c = group_marginals_by_combo(
        nb_scores(psi, w, lay), combo_g, lay.gtup_ptr, lay.gval, table, ptr, by_combo
    )
    want_c = np.zeros_like(by_combo)
    np.add.at(want_c, lay.combo_of, want)
    np.testing.assert_allclose(by_combo, want_c, atol=1e-12)
    assert ll_c == pytest.approx(want_ll, rel=1e-12)
    # a group whose weights all vanish: each of its tuples is uniform over the group's
    # values, and the log-likelihood is -1e300 (impossible), in both forms
    g0 = np.flatnonzero(rel.group_id == 0)
    zero = scores.copy()
    zero[g0] = 0.0
    gamma0, ll0 = e_step_exact(zero, lay, table, ptr)
    vals0 = np.flatnonzero(rel.group_counts()[0])
    np.testing.assert_array_equal(gamma0[np.ix_(g0, vals0)], 1.0 / g0.size)
    np.testing.assert_allclose(gamma0.sum(axis=1), 1.0)
    assert ll0 < -1e299
    lone = tiny_release(seed, sizes=(3,), n_values=4)
    lay1 = layout_of(lone)
    by1 = np.zeros((lay1.combo_codes.shape[0], lay1.n_values))
    ll1 = group_marginals_by_combo(
        np.zeros_like(by1), np.ascontiguousarray(lay1.combo_of[lay1.gtup]), lay1.gtup_ptr,
        lay1.gval, table, ptr, by1,
    )  # fmt: skip
    want1 = np.zeros_like(by1)
    np.add.at(want1, lay1.combo_of, (lone.group_counts()[0] > 0) / 3.0)
    np.testing.assert_allclose(by1, want1, atol=1e-15)
    assert ll1 == -1e300


def test_calibrated_marginals_match_closed_form():
    rel = tiny_release(4, sizes=(3, 4, 2))
    lay = layout_of(rel)
    gamma = np.random.default_rng(0).random((rel.n_rows, rel.n_values))
    # the first tuple of group 0 scores 0 on every value: calibrated, its row is uniform
    zeroed = gamma.copy()
    zeroed[np.flatnonzero(rel.group_id == 0)[0]] = 0.0
    got = assignment_probabilities(zeroed, lay, calibrate=True)
    counts = rel.group_counts()
    for g in range(counts.shape[0]):
        tup = np.flatnonzero(rel.group_id == g)
        vals = np.flatnonzero(counts[g])
        k = tup.size
        pt = zeroed[np.ix_(tup, vals)]
        pt[pt.sum(axis=1) == 0] = 1.0
        pt /= pt.sum(axis=1, keepdims=True)
        # Pr(pi) = 1/g! sum_m pt[m, pi_m]  =>  marginal in closed form
        want = pt / k + ((1 - pt).sum(axis=0, keepdims=True) - (1 - pt)) / (k * (k - 1))
        np.testing.assert_allclose(got[np.ix_(tup, vals)], want, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    raw = assignment_probabilities(gamma, lay)
    np.testing.assert_allclose(raw, brute_force_group_marginals(gamma, rel)[0], atol=1e-12)


def test_hungarian_equals_brute_force():
    rel = tiny_release(6, sizes=(2, 3, 4, 5, 2, 3), n_values=6)
    lay = layout_of(rel)
    counts = rel.group_counts()
    for seed in range(5):
        gamma = np.random.default_rng(seed).random((rel.n_rows, rel.n_values)) + 1e-3
        got = most_probable_assignment(gamma, lay)
        for g in range(counts.shape[0]):
            tup = np.flatnonzero(rel.group_id == g)
            vals = np.flatnonzero(counts[g])
            best = max(
                itertools.permutations(vals),
                key=lambda p: np.log(gamma[tup, list(p)]).sum(),
            )
            np.testing.assert_array_equal(got[tup], best)


def test_em_learns_and_restarts_are_recorded():
    rel = synthetic_release(3000, l=3, seed=1)
    res = run_em(rel, restarts=3, truth=rel.truth, rng=0)
    assert len(res.restarts) == 3 and all(r["converged"] for r in res.restarts)
    accs = [r["accuracy"] for r in res.restarts]
    assert min(accs) > 0.6, accs  # random worlds: 1/3
    best = max(res.restarts, key=lambda r: r["log_posterior"])
    assert (res.best.assignment == rel.truth).mean() == pytest.approx(best["accuracy"])
    np.testing.assert_allclose(res.posterior.probs.sum(axis=1), 1.0)
    # probabilities="gamma": the exact E-step's responsibilities are already group-restricted
    g = run_em(rel, restarts=1, probabilities="gamma", rng=0)
    np.testing.assert_allclose(g.posterior.probs, g.best.gamma, atol=1e-12)
    # the approximate E-step ignores the groups and learns much less (seed 000, Table 4.4)
    approx = run_em(rel, restarts=2, approximate=True, init="dirichlet", max_iter=200,
                    truth=rel.truth, rng=0)  # fmt: skip
    assert max(r["accuracy"] for r in approx.restarts) < min(accs)


def test_em_monotone_log_posterior():
    """EM never decreases the MAP objective: more iterations give a higher log posterior."""
    rel = synthetic_release(1500, l=2, seed=2)
    lay = layout_of(rel)
    from privlab.attacks.em import fit_em

    lp = [fit_em(lay, max_iter=k, tol=0.0, rng=5).log_posterior for k in (2, 5, 20, 60)]
    assert all(b >= a - 1e-6 for a, b in itertools.pairwise(lp)), lp


# -- invariants and the Posterior file ----------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    seed=st.integers(0, 10_000),
    sharpness=st.sampled_from([1.0, 8.0, 40.0]),
)
def test_posteriors_sum_to_one_and_stay_in_the_group(sizes, seed, sharpness):
    rng = np.random.default_rng(seed)
    rel = tiny_release(seed, sizes=tuple(sizes), n_values=6)
    lay = layout_of(rel)
    table, ptr = permutation_table(5)
    scores = rng.random((rel.n_rows, rel.n_values)) ** sharpness
    outside = random_worlds_attack(rel).probs == 0
    for mode in (0, 1):
        out = np.zeros_like(scores)
        group_marginals(scores, lay.gtup_ptr, lay.gtup, lay.gval, table, ptr, mode, out)
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-9)
        assert np.all(out[outside] == 0)
    post = run_definetti(rel, iterations=20, chains=1, exact_max=3, inner=3, rng=seed).posterior
    np.testing.assert_allclose(post.probs.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(post.probs[outside] == 0)


def test_posterior_roundtrip_and_bad_files(tmp_path):
    rel = tiny_release(2)
    post = random_worlds_attack(rel)
    path = post.save(tmp_path / "posterior.csv")
    header = path.read_text().splitlines()[0]
    assert header == "row,group_id," + ",".join(rel.sensitive.domain)
    back = Posterior.load(path)
    np.testing.assert_allclose(back.probs, post.probs)
    np.testing.assert_array_equal(back.group_id, rel.group_id)
    with pytest.raises(PrivlabError, match="exists"):
        post.save(path)
    bad = post.frame()
    bad.iloc[3, 2] += 0.2
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(PrivlabError, match="row 3 sums to"):
        Posterior.load(tmp_path / "bad.csv")
    post.frame().drop(columns="group_id").to_csv(tmp_path / "hdr.csv", index=False)
    with pytest.raises(PrivlabError, match="expected row,group_id"):
        Posterior.load(tmp_path / "hdr.csv")


def test_bad_parameters_name_the_value():
    rel = tiny_release(0)
    with pytest.raises(ParameterError, match="burn-in"):
        run_definetti(rel, iterations=10, burn_in=10)
    with pytest.raises(ParameterError, match="iterations"):
        run_definetti(rel, iterations=0)
    with pytest.raises(ParameterError, match="prior"):
        run_definetti(rel, iterations=10, prior=0.0)
    with pytest.raises(ParameterError, match="restarts"):
        run_em(rel, restarts=0)
    with pytest.raises(ParameterError, match="init"):
        run_em(rel, restarts=1, init="nope")
    with pytest.raises(ReleaseError):
        random_worlds_attack(object())


def test_restrict_to_groups():
    from privlab.attacks.em import restrict_to_groups

    rel = tiny_release(8, sizes=(2, 3, 2))
    lay = layout_of(rel)
    gamma = np.random.default_rng(0).random((rel.n_rows, rel.n_values))
    got = restrict_to_groups(gamma, lay)
    rw = random_worlds_attack(rel).probs
    assert np.all(got[rw == 0] == 0)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    masked = np.where(rw > 0, gamma, 0)
    np.testing.assert_allclose(got, masked / masked.sum(axis=1, keepdims=True))


def test_a_chain_statistic_sees_each_chain_in_the_posteriors_rows():
    """``chain_statistic`` is given each chain's own posterior, one at a time, in the
    posterior's rows: the chains ``keep_chains`` returns (an Anatomy release, whose rows the
    sampler visits group by group, in another order), without keeping them."""
    from privlab.attacks._layout import layout_of
    from privlab.data.datasets import load_adult
    from privlab.publish.anatomy import anatomize

    rel = anatomize(load_adult().take(np.arange(200)), qi=["sex", "race"],
                    sensitive="occupation", l=2, rng=1)  # fmt: skip
    gtup = layout_of(rel).gtup  # the sampler's order of the rows: not theirs
    assert (gtup != np.arange(gtup.size)).sum() > 100
    kept = run_definetti(rel, iterations=300, chains=3, rng=5, keep_chains=True)
    seen = []

    def statistic(chain):
        seen.append(chain.copy())
        return 10.0 * len(seen)

    run = run_definetti(rel, iterations=300, chains=3, rng=5, chain_statistic=statistic)
    assert run.chain_probs is None and len(seen) == 3
    for mine, theirs in zip(seen, kept.chain_probs):
        np.testing.assert_allclose(mine, theirs, atol=1e-6)
    assert run.posterior.diagnostics["statistic_per_chain"] == [10.0, 20.0, 30.0]
    assert "statistic_per_chain" not in kept.posterior.diagnostics
