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
