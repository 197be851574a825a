"""sdcMicro's individual and global risk (Benedetti-Franconi), against the negative binomial
series summed in exact rationals, brute force over tiny tables, simulation of the model and
its invariants."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.errors import ParameterError
from privlab.metrics.msu import minimal_sample_uniques
from privlab.metrics.sdc_risk import individual_risk, negative_binomial_risk


def series(f: int, p: Fraction) -> float:
    """``E[1/F | f] = sum_{h>=f} (1/h) C(h-1, f-1) p^f q^(h-f)`` in exact rationals, summed
    until the remaining tail is provably below 1e-20 (after the mode, each term is at most
    the last one times ``q (h/(h-f+1))``, a ratio below ``r < 1``: a geometric bound)."""
    q = 1 - p
    total = Fraction(0)
    h = f
    term = p**f  # C(f-1, f-1) p^f q^0; the 1/h factor is applied when adding
    while True:
        total += term / h
        nxt = term * q * h / (h - f + 1)  # C(h, f-1) q^(h+1-f) p^f
        ratio = q * Fraction(h + 1, h - f + 2)
        if h > 2 * f and ratio < 1 and nxt / (h + 1) / (1 - ratio) < Fraction(1, 10**20):
            return float(total)
        term, h = nxt, h + 1


P_VALUES = [Fraction(1, 2), Fraction(1, 3), Fraction(3, 4), Fraction(9, 10), Fraction(1, 20),
            Fraction(99, 100), Fraction(2, 7)]  # fmt: skip


@pytest.mark.parametrize("p", P_VALUES, ids=str)
def test_every_form_is_the_series(p):
    """f = 1 and 2 (closed forms, both methods) and f >= 3 (the exact integral) equal the
    series summed exactly; the approximation for f >= 3 is sdcMicro's p / (f - q)."""
    fs = np.arange(1, 9)
    big = np.array([float(f / p) for f in fs])  # F^ = f / p
    exact = negative_binomial_risk(fs, big, method="exact")
    approx = negative_binomial_risk(fs, big, method="approx")
    want = np.array([series(int(f), p) for f in fs])
    np.testing.assert_allclose(exact, want, rtol=1e-11, atol=0)
    np.testing.assert_array_equal(approx[:2], exact[:2])
    pf, qf = float(p), 1 - float(p)
    np.testing.assert_allclose(approx[2:], pf / (fs[2:] - qf), rtol=1e-14)


def test_the_closed_forms_by_hand():
    """Franconi & Polettini's f = 1 and f = 2 forms at p = 1/2: log 2 and 1 - log 2."""
    r = negative_binomial_risk(np.array([1, 2]), np.array([2.0, 4.0]))
    assert r[0] == pytest.approx(math.log(2), rel=1e-15)
    assert r[1] == pytest.approx(1 - math.log(2), rel=1e-14)


def test_sampling_weights_change_the_risk_as_the_model_says():
    """A key of one record with weight w has risk log(w) / (w - 1) (1 at w = 1, the sample
    is the population); two records of weights summing to 4 have 1 - log 2; no weights: 1/f."""
    codes = np.array([[0], [1], [2], [3], [3]])
    w = np.array([1.0, 2.0, 10.0, 1.5, 2.5])
    ir = individual_risk(codes, w)
    want = [1.0, math.log(2), math.log(10) / 9, 1 - math.log(2), 1 - math.log(2)]
    np.testing.assert_allclose(ir.risk, want, rtol=1e-14)
    assert ir.fk.tolist() == [1, 1, 1, 2, 2] and ir.Fk.tolist() == [1.0, 2.0, 10.0, 4.0, 4.0]
    # heavier weights, more people per key: lower risk
    heavier = individual_risk(codes, w * 3)
    assert (heavier.risk < ir.risk).all()
    plain = individual_risk(codes)
    assert plain.risk.tolist() == [1.0, 1.0, 1.0, 0.5, 0.5] and plain.method == "1/fk"
    assert plain.expected_reidentifications == 4  # one per key, as sdcMicro's survey=FALSE
    assert plain.keys == ir.keys == 4
    assert ir.expected_reidentifications == pytest.approx(sum(want))
    assert ir.global_risk == pytest.approx(sum(want) / 5)
    assert ir.share_above(0.5) == pytest.approx(2 / 5)  # 1 and log 2


@pytest.mark.parametrize("seed", range(4))
def test_individual_risk_matches_brute_force_on_tiny_tables(seed):
    """Every record of a random 12-row table: its key counted by hand, its weights summed,
    its risk the series of that (f, F^)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 2, size=(12, 2))
    w = rng.integers(1, 6, size=12).astype(float)  # integers: p is an exact rational
    for method in ("approx", "exact"):
        got = individual_risk(codes, w, method=method)
        for i in range(12):
            same = [j for j in range(12) if (codes[j] == codes[i]).all()]
            f, big = len(same), int(w[same].sum())
            assert got.fk[i] == f and got.Fk[i] == big
            p = Fraction(f, big)
            want = (float(p / (f - (1 - p))) if method == "approx" and f >= 3 and p < 1
                    else series(f, p))  # fmt: skip
            assert got.risk[i] == pytest.approx(want, rel=1e-11), (i, f, big, method)


def test_the_risk_is_the_mean_of_one_over_f_under_the_model():
    """Simulated from the model (F = f + NegBin(f, p), fixed generator, 400,000 draws): the
    mean of 1/F lies within 4 standard errors of the exact risk, and a risk 30% off does
    not."""
    gen = np.random.default_rng(7)
    for f, p in ((1, 0.2), (3, 0.35), (6, 0.6)):
        draws = f + gen.negative_binomial(f, p, size=400_000)
        inv = 1.0 / draws
        mean, se = inv.mean(), inv.std(ddof=1) / math.sqrt(inv.size)
        r = negative_binomial_risk(np.array([f]), np.array([f / p]), method="exact")[0]
        assert abs(mean - r) < 4 * se, (f, p, mean, r)
        assert abs(mean - 1.3 * r) > 4 * se and abs(mean - r / 1.3) > 4 * se


def test_weights_just_above_one_keep_their_digits():
    """p near 1 (weights 1 + 1e-9): the f = 2 form subtracts two numbers of order 1e9; the
    risk stays within 1e-9 of 1/f, as it must (F = f with probability about 1 - f q)."""
    f = np.array([1, 2, 3])
    big = f * (1 + 1e-9)
    for method in ("approx", "exact"):
        r = negative_binomial_risk(f, big, method=method)
        np.testing.assert_allclose(r, 1 / f, rtol=1e-8)


@settings(max_examples=200, deadline=None)
@given(
    f=st.integers(1, 40),
    ratio=st.floats(1.0, 1e5, allow_nan=False),
    more=st.floats(1.0001, 10.0, allow_nan=False),
    method=st.sampled_from(["approx", "exact"]),
)
def test_risk_bounds_and_monotonicity(f, ratio, more, method):
    """p/f <= r <= 1/f (F >= f always, and E[1/F] >= 1/E[F] = p/f by Jensen) for the exact
    risk; every method's risk falls as the weights grow and stays in (0, 1]."""
    big = np.array([f * ratio, f * ratio * more])
    r = negative_binomial_risk(np.array([f, f]), big, method=method)
    assert 0 < r[1] <= r[0] <= 1 / f + 1e-15
    if method == "exact":
        assert r[0] >= (1 / ratio) / f - 1e-15


def test_bad_input_is_refused_in_one_line():
    codes = np.array([[0], [1]])
    for w, needle in (
        ([0.5, 2.0], "not finite numbers >= 1 (record 0: 0.5)"),
        ([np.nan, 2.0], "not finite numbers >= 1"),
        ([1.0], "1 weights for 2 records"),
    ):
        with pytest.raises(ParameterError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            individual_risk(codes, np.array(w))
    with pytest.raises(ParameterError, match="method must be one of approx, exact"):
        individual_risk(codes, np.array([1.0, 1.0]), method="nb")
    with pytest.raises(ParameterError, match="sum to less than their records"):
        negative_binomial_risk(np.array([3]), np.array([2.0]))


def test_results_as_frames():
    ir = individual_risk(np.array([[0, 1], [0, 1], [1, 0]]), np.array([2.0, 2.0, 3.0]),
                         names=["a", "b"])  # fmt: skip
    df = ir.to_pandas()
    assert list(df.columns) == ["risk", "fk", "Fk"] and len(df) == 3
    d = ir.to_dict()
    assert d["names"] == ["a", "b"] and d["weighted"] and d["n"] == 3
    assert d["expected_reidentifications"] == pytest.approx(float(ir.risk.sum()))
    assert "risk=" not in repr(ir)  # per-record arrays stay out of the repr


# -- privlab risk -----------------------------------------------------------------------------
def _weighted_csv(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(3)
    df = pd.DataFrame({
        "age": rng.integers(20, 24, 300), "sex": rng.choice(["F", "M"], 300),
        "w": rng.choice([1.0, 2.5, 10.0, 40.0], 300), "job": rng.choice(["a", "b", "c"], 300),
    })  # fmt: skip
    path = tmp_path / "survey.csv"
    df.to_csv(path, index=False)
    return path, df


def test_cli_risk_prints_and_writes_what_the_library_computes(tmp_path, run):
    import pandas as pd

    from privlab.data import Table

    path, df = _weighted_csv(tmp_path)
    code, out, err = run("risk", path, "--qi", "age,sex", "--weights", "w", "--method", "exact",
                         "--out", tmp_path / "r.csv")  # fmt: skip
    assert code == 0, err
    table = Table.from_pandas(df)
    want = individual_risk(table.columns(["age", "sex"]), df["w"].to_numpy(), method="exact")
    got = pd.read_csv(tmp_path / "r.csv")
    assert list(got.columns) == ["row", "risk", "fk", "Fk", "smallest_msu", "suda_score",
                                 "dis_score"]  # fmt: skip
    assert got["row"].tolist() == list(range(300))
    msus = minimal_sample_uniques(table.columns(["age", "sex"]), max_size=2)
    assert got["smallest_msu"].tolist() == msus.smallest.tolist()
    # DIS-SUDA at the sampling fraction the weights give (records over their sum)
    from privlab.metrics.msu import suda_scores

    fraction = min(1.0, 300 / df["w"].sum())
    suda = suda_scores(table.columns(["age", "sex"]), ["age", "sex"],
                       msus=minimal_sample_uniques(table.columns(["age", "sex"]), ["age", "sex"],
                                                   max_size=2),
                       dis_fraction=fraction)  # fmt: skip
    np.testing.assert_allclose(got["dis_score"], suda.dis_score, rtol=1e-12)
    np.testing.assert_allclose(got["suda_score"], suda.score, rtol=1e-12)
    # and the population uniques by each model at that fraction, as ARX computes them
    from privlab.data.counts import distinct_rows
    from privlab.metrics.uniqueness import population_uniques

    pop = population_uniques(distinct_rows(table.columns(["age", "sex"]))[2],
                             sampling_fraction=fraction)  # fmt: skip
    assert f"Dankar's rule ({pop.chosen})" in out and f"{pop.uniques:,.1f} (" in out
    assert f"{msus.records_with_msu(2):,} by at most 2 " in out
    np.testing.assert_allclose(got["risk"], want.risk, rtol=1e-12)
    assert f"{want.expected_reidentifications:,.1f} of 300 records" in out
    flat = " ".join(out.split())  # (the table's title wraps at its width)
    assert f"{100 * want.global_risk:.3f}%" in out and "sampling weights 'w'" in flat
    assert "never publish" in out
    # without weights the file is the population: one re-identification per key
    code, out, err = run("risk", path, "--qi", "age,sex")
    keys = len(df.groupby(["age", "sex"]))
    assert code == 0 and f"re-identifies about {keys:,}.0 of 300" in out


def test_cli_risk_bad_input_is_one_line_and_writes_nothing(tmp_path, run):
    from conftest import fails

    path, df = _weighted_csv(tmp_path)
    bad = tmp_path / "light.csv"
    df.assign(w=0.5).to_csv(bad, index=False)
    out = tmp_path / "r.csv"
    for args, needle in (
        (("--weights", "job"), "must hold numbers only"),
        (("--weights", "age"), "also a quasi-identifier"),
        (("--weights", "nope"), "nope"),
        (("--method", "nb"), "--method must be one of approx, exact"),
        (("--threshold", "2"), "--threshold must be between 0 and 1"),
        (("--msu-size", "-1"), "--msu-size must be 0 or more"),
        (("--sampling-fraction", "0"), "--sampling-fraction must be in (0, 1]"),
    ):
        fails(run("risk", path, "--qi", "age,sex", *args, "--out", out), needle)
    fails(run("risk", path, "--qi", "age,zzz"), "zzz")
    fails(run("risk", bad, "--qi", "age", "--weights", "w"), "not finite numbers >= 1")
    assert not out.exists()
