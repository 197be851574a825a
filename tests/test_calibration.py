"""ABS / SSQ / ACC (seed 003 Sec. 6), Brier = CAL + REF (seed 000 Eqs. 5.1-5.3), at risk."""

from __future__ import annotations

import numpy as np
import pytest

from privlab.errors import ParameterError, PrivlabError
from privlab.metrics.calibration import (
    abs_error,
    accuracy,
    at_risk,
    brier_decomposition,
    calibration_events,
    evaluate,
    reliability_diagram,
    ssq_error,
)


def _random_posterior(rng, n=400, m=5):
    p = rng.dirichlet(np.ones(m) * 0.5, size=n)
    truth = np.array([rng.choice(m, p=row) for row in p])
    return p, truth


def test_abs_ssq_acc_against_the_definitions():
    rng = np.random.default_rng(0)
    p, truth = _random_posterior(rng)
    s = np.eye(p.shape[1])[truth]
    assert abs_error(p, truth) == pytest.approx(np.abs(s - p).sum())
    assert ssq_error(p, truth) == pytest.approx(((s - p) ** 2).sum())
    assert accuracy(p, truth) == pytest.approx((p.argmax(axis=1) == truth).mean())


def test_random_worlds_baseline_values_of_table_7():
    """Uniform over l values of which one is true: ABS 2(1-1/l), SSQ 1-1/l, ACC 1/l per tuple."""
    for l in (2, 3, 4):
        n, m = 1000, 14
        p = np.zeros((n, m))
        p[:, :l] = 1 / l
        truth = np.arange(n) % l
        assert abs_error(p, truth) == pytest.approx(n * 2 * (1 - 1 / l))
        assert ssq_error(p, truth) == pytest.approx(n * (1 - 1 / l))
        assert accuracy(p, truth) == pytest.approx(1 / l)  # ties: expected credit
    # Table 7 baselines: 1000/500/0.5, 1333.33/666.67/0.333, 1500/750/0.25


@pytest.mark.parametrize("seed", range(3))
def test_brier_equals_cal_plus_ref(seed):
    rng = np.random.default_rng(seed)
    p, truth = _random_posterior(rng)
    f, o = calibration_events(p, truth)
    exact = brier_decomposition(np.round(f, 2), o, bins=None)  # each distinct value a bin
    assert exact.bs == pytest.approx(exact.cal + exact.ref, abs=1e-12)
    assert exact.bs == pytest.approx(np.mean((np.round(f, 2) - o) ** 2))
    binned = brier_decomposition(f, o, bins=10)
    idx = np.minimum((f * 10).astype(int), 9)
    means = np.bincount(idx, weights=f) / np.maximum(np.bincount(idx), 1)
    assert binned.bs_binned == pytest.approx(np.mean((means[idx] - o) ** 2), abs=1e-12)
    assert binned.bs == pytest.approx(np.mean((f - o) ** 2))
    assert sum(binned.bin_count) == f.size


def test_calibrated_forecasts_have_small_cal_and_overconfident_ones_do_not():
    rng = np.random.default_rng(1)
    f = rng.random(20_000)
    o = (rng.random(f.size) < f).astype(float)  # calibrated by construction
    good = brier_decomposition(f, o)
    assert good.cal < 0.002
    sharp = np.clip(0.5 + 2 * (f - 0.5), 0, 1)  # pushed towards 0 and 1 (naive Bayes)
    assert brier_decomposition(sharp, o).cal > 0.01 > 5 * good.cal


def test_at_risk_share_and_precision():
    p = np.array([[0.9, 0.1], [0.85, 0.15], [0.5, 0.5], [0.2, 0.8]])
    truth = np.array([0, 1, 0, 1])
    share, prec = at_risk(p, truth)
    assert share == pytest.approx(0.75) and prec == pytest.approx(2 / 3)
    share, prec = at_risk(np.full((2, 2), 0.5), np.array([0, 1]))
    assert share == 0 and np.isnan(prec)


def test_evaluate_sample_and_json(tmp_path):
    rng = np.random.default_rng(3)
    p, truth = _random_posterior(rng, n=300)
    ev = evaluate(p, truth, sample=100, rng=0)
    assert ev.n == 100 and ev == evaluate(p, truth, sample=100, rng=0)
    d = ev.to_dict()
    for k in ("abs", "ssq", "acc", "brier", "cal", "ref", "at_risk_share", "at_risk_precision"):
        assert k in d
    with pytest.raises(ParameterError, match="sample = 301"):
        evaluate(p, truth, sample=301)
    with pytest.raises(PrivlabError, match="truth has 2 entries"):
        evaluate(p, truth[:2])
    png = reliability_diagram({"x": calibration_events(p, truth)}, tmp_path / "r.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


# -- at risk beyond what is known -------------------------------------------------------------
def test_beyond_known_by_hand_and_at_its_limits():
    """``b + (1 - b) k``: with nothing known it is Kifer's threshold; a value known for
    certain puts nobody at risk; a 75% majority value needs 0.95 at b = 0.8."""
    from privlab.metrics.calibration import beyond_known, relative_gain

    b = np.array([0.8, 0.8])
    got = beyond_known(b, np.array([0.75, 0.25]), 2)
    np.testing.assert_allclose(got, [[0.95, 0.85], [0.95, 0.85]])
    np.testing.assert_array_equal(beyond_known(b, np.zeros(2), 3), np.full((3, 2), 0.8))
    k = np.array([[1.0, 0.0], [0.5, 0.5]])
    got = beyond_known(np.array([0.8, 0.6]), k, 2)
    assert got[0, 0] == np.inf and got[0, 1] == 0.6
    np.testing.assert_allclose(got[1], [0.9, 0.8])
    # the gain: 0.9 over a 0.75 prior removes 60% of the doubt; certainty known gains nothing
    p = np.array([[0.9, 0.1], [1.0, 0.0], [0.2, 0.8]])
    np.testing.assert_allclose(relative_gain(p, np.array([0.75, 0.25])), [0.6, 1.0, 11 / 15])
    assert relative_gain(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]]))[0] == 0.0
    with pytest.raises(PrivlabError, match="shape"):
        beyond_known(b, np.zeros(3), 2)
    with pytest.raises(PrivlabError, match=r"\[0, 1\]"):
        beyond_known(b, np.array([1.5, -0.5]), 2)


def test_evaluate_beyond_what_is_known_counts_what_the_release_teaches():
    """A skewed attribute (90% hold value 0): a posterior that repeats the prior names 90%
    of people with probability >= 0.8 outright and nobody beyond what is known; one that
    is sure of 30 people's true value puts exactly those at risk, by either rule."""
    truth = np.array([0] * 90 + [1] * 10)
    prior = np.array([0.9, 0.1])
    same = np.tile(prior, (100, 1))
    ev = evaluate(same, truth, known=prior)
    assert ev.at_risk_share == 0.0 and ev.absolute["at_risk_share"] == 1.0
    sure = same.copy()
    sure[:25] = [1.0, 0.0]
    sure[90:95] = [0.0, 1.0]
    ev = evaluate(sure, truth, known=prior)
    assert ev.at_risk_share == pytest.approx(0.30) and ev.at_risk_count == 30
    assert ev.at_risk_precision == 1.0 and ev.absolute["at_risk_count"] == 100
    # a control that already knows those 30 leaves nobody at risk; the plain evaluation has
    # no absolute part
    ev = evaluate(sure, truth, known=sure, control=sure)
    assert ev.at_risk_share == 0.0 and ev.control["at_risk_share"] == 0.0
    assert evaluate(sure, truth).absolute is None
    # a sample takes each sampled person's own thresholds
    k = np.where(np.arange(100)[:, None] < 50, sure, same)
    ev = evaluate(sure, truth, known=k, sample=60, rng=1)
    rows = np.sort(np.random.default_rng(1).choice(100, size=60, replace=False))
    # (rows below 50 already know their guess; above, those of 90-94 are newly named)
    assert ev.at_risk_count == int(((rows >= 90) & (rows < 95)).sum()) == 2


def test_evaluate_takes_the_thresholds_beyond_what_is_known_given_once():
    """``beyond=``: the thresholds a caller built once (:func:`beyond_known`) give the same
    evaluation as ``known=`` alone, sampled or not, and are used as given (a different
    array gives other figures); a wrong shape, or no ``known``, is refused."""
    from privlab.metrics.calibration import beyond_known

    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, 200)
    probs = rng.dirichlet(np.ones(3) * 0.4, size=200)
    known = rng.dirichlet(np.ones(3), size=200)
    b = beyond_known(np.full(3, 0.8), known, 200)
    for kw in ({}, {"sample": 80, "rng": 2}):
        a = evaluate(probs, truth, known=known, **kw)
        c = evaluate(probs, truth, known=known, beyond=b, **kw)
        assert a.to_dict() == c.to_dict()
    low = evaluate(probs, truth, known=known, beyond=np.zeros((200, 3)))
    assert low.at_risk_share == 1.0  # every probability reaches a threshold of 0
    with pytest.raises(PrivlabError, match="shape"):
        evaluate(probs, truth, known=known, beyond=b[:10])
    with pytest.raises(PrivlabError, match="known="):
        evaluate(probs, truth, beyond=b)


@pytest.mark.parametrize("t", [0.5, 0.8, 0.95])
def test_the_gain_reaches_t_exactly_when_a_guess_passes_its_threshold(t):
    """Invariant: for one threshold ``t``, ``relative_gain >= t`` iff some value's
    probability reaches ``t + (1 - t) k`` (random posteriors and knowledge)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from privlab.metrics.calibration import beyond_known, relative_gain

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, 2**32 - 1), st.integers(2, 6))
    def check(seed, m):
        rng = np.random.default_rng(seed)
        p = rng.dirichlet(np.ones(m) * 0.3, size=50)
        k = rng.dirichlet(np.ones(m) * 0.3, size=50)
        k[:5] = np.eye(m)[rng.integers(0, m, 5)]  # some values known for certain
        flagged = (p >= beyond_known(np.full(m, t), k, 50)).any(axis=1)
        gain = relative_gain(p, k)
        near = np.isclose(gain, t, atol=1e-9)
        np.testing.assert_array_equal((gain >= t)[~near], flagged[~near])

    check()


def test_a_no_learning_baseline_fills_random_worlds_where_there_are_no_groups():
    """``baseline`` (a PRAM release's no-learning posterior): its figures are its own
    evaluation's, in ``random_worlds``; the control and the residual risk stay the control's;
    a baseline with groups, or of another shape, is refused."""
    rng = np.random.default_rng(3)
    p, truth = _random_posterior(rng, n=300, m=4)
    base = rng.dirichlet(np.ones(4), size=300)
    ev = evaluate(p, truth, baseline=base, threshold=0.6)
    alone = evaluate(base, truth, threshold=0.6)
    for k in ("acc", "at_risk_share", "at_risk_count", "at_risk_precision"):
        assert ev.random_worlds[k] == getattr(alone, k)
    assert ev.control is None and ev.residual_risk is None
    both = evaluate(p, truth, baseline=base, control=p)
    assert both.control["acc"] == both.acc and both.random_worlds["acc"] == alone.acc
    with pytest.raises(PrivlabError, match="not both"):
        evaluate(p, truth, baseline=base, group_id=np.zeros(300))
    with pytest.raises(PrivlabError, match="the baseline posterior has shape"):
        evaluate(p, truth, baseline=base[:, :3])
