"""Statistics around attack results: Wilson intervals, residual risk, baselines, thresholds,
the control attack (library and CLI)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, norm

from attack_helpers import brute_force_group_marginals, synthetic_release
from privlab.attacks import control as control_module
from privlab.attacks import random_worlds_attack
from privlab.attacks.control import control_attack
from privlab.data import Table
from privlab.errors import ParameterError, PrivlabError, SchemaError
from privlab.metrics.calibration import at_risk, evaluate, value_thresholds
from privlab.metrics.intervals import rate, residual_risk, wilson
from privlab.publish.anatomy import AnatomyRelease


# -- Wilson intervals ------------------------------------------------------------------------
def test_wilson_equals_scipy():
    pairs = [
        (k, n) for n in (1, 2, 3, 7, 10, 50, 333, 5000) for k in sorted({0, 1, n // 3, n - 1, n})
    ]
    for level in (0.8, 0.95, 0.99):
        for k, n in pairs:
            ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            low, high = wilson(k, n, level)
            assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12), (k, n, level)


def test_wilson_limits_and_arrays():
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0
    low, high = wilson(np.array([0, 3, 10]), np.array([10, 10, 10]))
    for i, k in enumerate((0, 3, 10)):
        assert (low[i], high[i]) == wilson(k, 10)
    # fractional successes (expected hits) lie between their integer neighbours
    assert wilson(3, 10)[0] < wilson(3.5, 10)[0] < wilson(4, 10)[0]
    for bad in ((11, 10), (-1, 10), (1, 2.5), (1, -1)):
        with pytest.raises(ParameterError):
            wilson(*bad)
    for level in (0, 1, 1.5, True):
        with pytest.raises(ParameterError, match="level"):
            wilson(1, 2, level)


def test_wilson_coverage_by_simulation():
    """p = 0.3, n = 50, 20,000 draws: the 95% interval covers within [0.93, 0.97]; one 30%
    narrower (the same centre) does not, and the 80% interval covers about 80%."""
    rng = np.random.default_rng(2024)
    p, n = 0.3, 50
    k = rng.binomial(n, p, size=20_000)
    low, high = wilson(k, np.full(k.size, n))
    assert 0.93 <= np.mean((low <= p) & (p <= high)) <= 0.97
    centre, half = (low + high) / 2, 0.7 * (high - low) / 2
    assert np.mean((centre - half <= p) & (p <= centre + half)) < 0.9
    low8, high8 = wilson(k, np.full(k.size, n), 0.8)
    assert 0.76 <= np.mean((low8 <= p) & (p <= high8)) <= 0.84


# -- residual risk (Anonymeter's interval) ----------------------------------------------------
def _anonymeter_rate(k: int, n: int, level: float) -> tuple[float, float]:
    """Anonymeter's success_rate (anonymeter/stats/confidence.py), written out."""
    z = norm.ppf(0.5 * (1 + level))
    return (k + z * z / 2) / (n + z * z), z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)


@pytest.mark.parametrize(("ka", "kc", "n"), [(700, 500, 1000), (60, 40, 80), (30, 50, 100)])
def test_residual_risk_matches_anonymeter(ka, kc, n):
    r = residual_risk(rate(ka, n), rate(kc, n))
    (ca, ea), (cc, ec) = _anonymeter_rate(ka, n, 0.95), _anonymeter_rate(kc, n, 0.95)
    centre = (ca - cc) / (1 - cc)
    err = math.sqrt((ea / (1 - cc)) ** 2 + (ec * (ca - 1) / (1 - cc) ** 2) ** 2)
    assert r.value == pytest.approx((ka / n - kc / n) / (1 - kc / n), abs=1e-12)
    assert (r.low, r.high) == pytest.approx((centre - err, min(centre + err, 1.0)), abs=1e-12)
    assert r.low <= r.value <= r.high
    if ka < kc:  # kept negative: the attack did worse than the control
        assert r.value < 0 and r.high < 0


def test_residual_risk_limits():
    same = residual_risk(rate(300, 1000), rate(300, 1000))
    assert same.value == 0 and same.low < 0 < same.high
    top = residual_risk(rate(1000, 1000), rate(10, 1000))
    assert top.value == 1 and top.high == 1.0
    undefined = residual_risk(rate(10, 10), rate(10, 10))
    assert math.isnan(undefined.value) and undefined.to_dict()["low"] is None
    with pytest.raises(ParameterError, match="levels"):
        residual_risk(rate(1, 2, 0.9), rate(1, 2, 0.95))


def test_residual_risk_interval_covers_by_simulation():
    """Independent attack (p = 0.7) and control (p = 0.5) samples of 400: the residual 0.4 is
    covered about 95% of the time (>= 0.93 over 3,000 draws)."""
    rng = np.random.default_rng(7)
    ka, kc = rng.binomial(400, 0.7, 3000), rng.binomial(400, 0.5, 3000)
    hits = [residual_risk(rate(a, 400), rate(c, 400)) for a, c in zip(ka, kc)]
    assert np.mean([h.low <= 0.4 <= h.high for h in hits]) >= 0.93


# -- at risk with per-value thresholds (Kifer 2009 Def. 2) -----------------------------------
def test_one_threshold_is_the_top_probability_rule():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.full(5, 0.4), size=500)
    p[:30] = np.eye(5)[rng.integers(0, 5, size=30)]  # certain: at risk even at 1
    truth = np.array([rng.choice(5, p=r) for r in p])
    truth[:10] = (p[:10].argmax(axis=1) + 1) % 5  # certain and wrong
    for t in (0.3, 0.5, 0.8, 1.0):
        top = p.max(axis=1)
        risky = top >= t
        share, prec = at_risk(p, truth, t)
        assert share == pytest.approx(risky.mean())
        assert prec == pytest.approx((p[np.flatnonzero(risky), truth[risky]] >= top[risky]).mean())


def test_per_value_thresholds_follow_definition_2():
    p = np.array([[0.6, 0.4, 0.0], [0.9, 0.1, 0.0], [0.2, 0.3, 0.5], [0.35, 0.35, 0.3]])
    truth = np.array([1, 0, 2, 0])
    # value 1 ("b") is sensitive at 0.3: row 0 is at risk for "b" although "a" is its top
    b = value_thresholds({"b": 0.3}, 3, ["a", "b", "c"])
    np.testing.assert_array_equal(b, [0.8, 0.3, 0.8])
    share, prec = at_risk(p, truth, b)
    # at risk: row 0 (b 0.4), row 1 (a 0.9), row 2 (b 0.3), row 3 (b 0.35); disclosed values
    # b, a, b, b; right: rows 0 and 1
    assert share == 1.0 and prec == 0.5
    ev = evaluate(p, truth, threshold={"b": 0.3}, values=["a", "b", "c"])
    assert ev.threshold == {"a": 0.8, "b": 0.3, "c": 0.8}
    assert (ev.at_risk_count, ev.at_risk_share, ev.at_risk_precision) == (4, 1.0, 0.5)
    assert evaluate(p, truth, threshold={1: 0.3}).at_risk_precision == 0.5  # codes as keys
    assert evaluate(p, truth, threshold=0.5).threshold == 0.5


@pytest.mark.parametrize(
    ("threshold", "needle"),
    [(0, "(0, 1]"), (1.5, "(0, 1]"), (float("nan"), "(0, 1]"), (True, "(0, 1]"),
     ({"b": 0.0}, "'b'"), ({"z": 0.5}, "'z'"), ({7: 0.5}, "code 7"), ("0.5", "(0, 1]")],
)  # fmt: skip
def test_bad_thresholds(threshold, needle):
    p = np.full((2, 3), 1 / 3)
    with pytest.raises(ParameterError) as e:
        evaluate(p, np.array([0, 1]), threshold=threshold, values=["a", "b", "c"])
    assert needle in str(e.value)


# -- intervals and baselines in evaluate -----------------------------------------------------
def test_evaluation_intervals_and_random_worlds_baseline():
    rel = synthetic_release(600, 2, seed=3)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(rel.n_values), size=rel.n_rows)
    ev = evaluate(probs, rel.truth, group_id=rel.group_id, threshold=0.6)
    n = rel.n_rows
    assert ev.acc_ci == wilson(ev.acc * n, n)
    assert ev.at_risk_share_ci == wilson(ev.at_risk_count, n)
    right = round(ev.at_risk_precision * ev.at_risk_count)
    assert ev.at_risk_precision_ci == wilson(right, ev.at_risk_count)
    # the baseline from group ids and the truth equals the random-worlds attack's posterior
    rw = evaluate(random_worlds_attack(rel).probs, rel.truth, threshold=0.6)
    for k in ("acc", "at_risk_share"):
        assert ev.random_worlds[k] == pytest.approx(getattr(rw, k), abs=1e-12)
        assert ev.random_worlds[f"{k}_ci"] == pytest.approx(getattr(rw, f"{k}_ci"), abs=1e-12)
    assert ev.random_worlds["acc"] == pytest.approx(0.5)  # l = 2: two distinct values a group
    # groups that repeat values: random worlds puts people at risk too
    small = _release(_groups(9, (2, 3, 4, 2, 5, 3), n_values=3))
    probs2 = rng.dirichlet(np.ones(small.n_values), size=small.n_rows)
    got = evaluate(probs2, small.truth, group_id=small.group_id, threshold=0.5).random_worlds
    want = evaluate(random_worlds_attack(small).probs, small.truth, threshold=0.5)
    assert got["at_risk_share"] > 0
    for k in ("acc", "at_risk_share", "at_risk_precision"):
        assert got[k] == pytest.approx(getattr(want, k), abs=1e-12)
    # with a sample, the baseline is scored on the same rows (its groups from all rows)
    s = evaluate(probs, rel.truth, group_id=rel.group_id, sample=200, rng=5)
    rows = np.sort(np.random.default_rng(5).choice(n, size=200, replace=False))
    assert s.random_worlds["acc"] == evaluate(random_worlds_attack(rel).probs[rows],
                                              rel.truth[rows]).acc  # fmt: skip
    d = ev.to_dict()
    json.dumps(d, allow_nan=False)  # JSON-ready: nan became None
    assert d["control"] is None and d["residual_risk"] is None


def test_evaluation_with_a_control():
    rel = synthetic_release(400, 2, seed=4)
    rw = random_worlds_attack(rel).probs
    ev = evaluate(rw, rel.truth, control=rw)
    assert ev.control["acc"] == ev.acc and ev.residual_risk["value"] == 0.0
    assert ev.residual_risk["low"] < 0 < ev.residual_risk["high"]
    onehot = np.eye(rel.n_values)[rel.truth]
    ev = evaluate(onehot, rel.truth, control=rw)
    assert ev.residual_risk["value"] == 1.0 and ev.residual_risk["high"] == 1.0
    with pytest.raises(PrivlabError, match="control posterior has shape"):
        evaluate(rw, rel.truth, control=rw[:-1])


# -- the control attack ----------------------------------------------------------------------
def _release(groups):
    """An Anatomy release of hand-made groups: each a list of (q0, q1, value) rows."""
    qi_rows, gid, st_rows, truth = [], [], [], []
    for g, rows in enumerate(groups):
        for q0, q1, v in rows:
            qi_rows.append((q0, q1))
            gid.append(g)
            st_rows.append((g, v))
            truth.append(v)
    return AnatomyRelease.from_rows(qi_rows, ["q0", "q1"], gid, st_rows, "s", truth=truth)


def _public(rows) -> Table:
    return Table.from_pandas(pd.DataFrame(rows, columns=["q0", "q1", "s", "extra"]))


def _naive_bayes_by_hand(rel, public: pd.DataFrame, alpha: float) -> np.ndarray:
    """``psi_s prod_j w_{j,q,s}`` from pandas counts (the oracle's scores)."""
    values = list(rel.sensitive.domain)
    qi = rel.quasi_identifiers().to_pandas()
    pub = public[public["s"].isin(values)]
    n_s = pub["s"].value_counts().reindex(values, fill_value=0).to_numpy(float)
    scores = np.tile((n_s + alpha) / (n_s.sum() + len(values) * alpha), (len(qi), 1))
    for col in ("q0", "q1"):
        dom = list(rel.schema[col].domain)
        known = pub[pub[col].isin(dom)]
        cnt = pd.crosstab(known[col], known["s"]).reindex(index=dom, columns=values, fill_value=0)
        w = (cnt.to_numpy(float) + alpha) / (cnt.to_numpy(float).sum(0) + len(dom) * alpha)
        scores *= w[[dom.index(x) for x in qi[col]]]
    return scores


def _groups(seed, sizes, n_values=4):
    rng = np.random.default_rng(seed)
    return [
        [(f"a{(v + rng.integers(0, 2)) % 3}", f"b{rng.integers(0, 2)}", f"s{v}")
         for v in rng.integers(0, n_values, size=k)]
        for k in sizes
    ]  # fmt: skip


def _public_rows(seed, n=80, n_values=4):
    rng = np.random.default_rng(seed)
    v = rng.integers(0, n_values, size=n)
    return [(f"a{(x + rng.integers(0, 2)) % 3}", f"b{rng.integers(0, 2)}", f"s{x}", "e") for x in v]


@pytest.mark.parametrize("seed", range(3))
def test_control_equals_brute_force_enumeration(seed):
    """Groups of 1 to 6 rows with repeated values: the posterior equals Bayes' rule over
    every within-group assignment of the hand-computed Naive-Bayes scores; forcing the dynamic
    programme (exact_max = 1) gives the same."""
    rel = _release(_groups(seed, (2, 3, 1, 4, 6, 2)))
    rows = _public_rows(seed + 10)
    scores = _naive_bayes_by_hand(rel, pd.DataFrame(rows, columns=["q0", "q1", "s", "e"]), 0.5)
    oracle, _ = brute_force_group_marginals(scores, rel)
    for exact_max in (7, 1):
        post = control_attack(rel, _public(rows), alpha=0.5, exact_max=exact_max, source="pub")
        np.testing.assert_allclose(post.probs, oracle, atol=1e-12)
        assert post.method == "control" and post.diagnostics["sinkhorn_rows"] == 0
        assert "only from the public file pub" in post.diagnostics["threat_model"]
        np.testing.assert_array_equal(post.group_id, rel.group_id)


def test_control_ignores_values_outside_the_release():
    rel = _release(_groups(5, (2, 2, 3)))
    rows = _public_rows(6)
    base = control_attack(rel, _public(rows))
    # a row whose sensitive value the release does not hold is dropped: nothing changes
    other = control_attack(rel, _public([*rows, ("a0", "b0", "s-unknown", "e")]))
    np.testing.assert_array_equal(other.probs, base.probs)
    assert other.diagnostics["public_rows_dropped"] == 1
    # an unknown QI value counts for the others (the oracle skips it the same way)
    more = [*rows, ("a-unknown", "b1", "s1", "e"), ("a9", "b0", "s2", "e")]
    post = control_attack(rel, _public(more))
    assert post.diagnostics["public_values_ignored"] == {"q0": 2, "q1": 0}
    scores = _naive_bayes_by_hand(rel, pd.DataFrame(more, columns=["q0", "q1", "s", "e"]), 1.0)
    np.testing.assert_allclose(post.probs, brute_force_group_marginals(scores, rel)[0], atol=1e-12)


def test_control_bad_input():
    rel = _release(_groups(1, (2, 2)))
    rows = _public_rows(2)
    frame = pd.DataFrame(rows, columns=["q0", "q1", "s", "extra"])
    with pytest.raises(SchemaError, match=r"no column 'q1'.*quasi-identifier"):
        control_attack(rel, Table.from_pandas(frame.drop(columns="q1")))
    with pytest.raises(SchemaError, match=r"no column 's'.*sensitive"):
        control_attack(rel, Table.from_pandas(frame.drop(columns="s")))
    with pytest.raises(SchemaError, match="no public row has a value of 's'"):
        control_attack(rel, Table.from_pandas(frame.assign(s="x")))
    with pytest.raises(SchemaError, match="none of the public table's values of 'q0'"):
        control_attack(rel, Table.from_pandas(frame.assign(q0="[0-9]")))
    for alpha in (0, -1, float("inf"), True):
        with pytest.raises(ParameterError, match="alpha"):
            control_attack(rel, _public(rows), alpha=alpha)
    for m in (0, 9):
        with pytest.raises(ParameterError, match="exact_max"):
            control_attack(rel, _public(rows), exact_max=m)


@settings(max_examples=25)
@given(
    seed=st.integers(0, 10_000),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    sinkhorn=st.booleans(),
)
def test_control_invariants(seed, sizes, sinkhorn):
    """Rows sum to 1, values a group does not hold get 0, and each group's probabilities of a
    value sum to the number of rows the group publishes with it (exact marginals, dynamic
    programme and Sinkhorn scaling alike)."""
    rel = _release(_groups(seed, sizes, n_values=5))
    old = control_module.DP_MAX_CELLS
    control_module.DP_MAX_CELLS = 0 if sinkhorn else old  # groups above 2 rows: Sinkhorn
    try:
        post = control_attack(rel, _public(_public_rows(seed, n_values=5)), exact_max=2)
    finally:
        control_module.DP_MAX_CELLS = old
    counts = rel.group_counts()
    np.testing.assert_allclose(post.probs.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(post.probs[counts[rel.group_id] == 0] == 0)
    mass = np.zeros(counts.shape)
    np.add.at(mass, rel.group_id, post.probs)
    np.testing.assert_allclose(mass, counts, atol=1e-8)
    expected = sum(k for k in sizes if k > 2) if sinkhorn else 0
    assert post.diagnostics["sinkhorn_rows"] == expected


def test_sinkhorn_is_exact_when_scores_factorize_and_close_for_large_groups(monkeypatch):
    # a public table where the QIs are independent of the value: random worlds, exactly
    grid = [(f"a{i}", f"b{j}", f"s{v}", "e") for i in range(3) for j in range(2) for v in range(4)]
    rel = _release(_groups(3, (9, 12)))
    monkeypatch.setattr(control_module, "DP_MAX_CELLS", 0)
    post = control_attack(rel, _public(grid * 3))
    assert post.diagnostics["sinkhorn_rows"] == 21
    np.testing.assert_allclose(post.probs, random_worlds_attack(rel).probs, atol=1e-9)
    # 40 rows, two values held 20 times each: Sinkhorn within 0.05 of the exact programme
    rel = _release([[(f"a{i % 3}", f"b{i % 2}", f"s{i % 2}") for i in range(40)]])
    rows = _public_rows(8, n=60)
    approx = control_attack(rel, _public(rows))
    monkeypatch.setattr(control_module, "DP_MAX_CELLS", 10**9)
    exact = control_attack(rel, _public(rows))
    assert exact.diagnostics["sinkhorn_rows"] == 0 and approx.diagnostics["sinkhorn_rows"] == 40
    assert 0 < np.abs(approx.probs - exact.probs).max() < 0.05


def _people(n: int, seed: int) -> pd.DataFrame:
    """``n`` people from one Naive-Bayes model with informative QIs (fixed by ``seed``)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 5, size=n)
    cols = {}
    for j, d in enumerate((4, 3)):
        p = rng.dirichlet(np.full(d, 0.3), size=5)  # P(q_j | s), peaked
        cols[f"q{j}"] = [f"v{rng.choice(d, p=p[v])}" for v in s]
    return pd.DataFrame({**cols, "s": [f"s{v}" for v in s]})


def test_control_learns_from_public_data():
    """Public people from the model the release's people come from: the control beats random
    worlds; public data in which the QIs say nothing about the value (every combination
    equally often) gives the random-worlds posterior exactly.  (A shuffled public column is
    no clean null: its sampling noise, applied alike to every row with the same QIs, moves
    ACC by +-0.16 from one shuffle to the next on this table.)"""
    from privlab.publish.anatomy import anatomize

    people = _people(4000, seed=11)
    private = Table.from_pandas(people.iloc[:2000], qi=["q0", "q1"], sensitive="s")
    rel = anatomize(private, l=2, rng=np.random.default_rng(0))
    public = people.iloc[2000:]
    rw = evaluate(random_worlds_attack(rel).probs, rel.truth).acc
    post = control_attack(rel, Table.from_pandas(public))
    assert evaluate(post.probs, rel.truth).acc > rw + 0.1
    grid = pd.MultiIndex.from_product([people[c].unique() for c in ("q0", "q1", "s")])
    null = control_attack(
        rel, Table.from_pandas(grid.to_frame(index=False, name=["q0", "q1", "s"]))
    )
    np.testing.assert_allclose(null.probs, random_worlds_attack(rel).probs, atol=1e-12)


# -- the CLI: attack control, evaluate --control / --threshold --------------------------------
from conftest import fails as _fails  # noqa: E402


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A 400-row anatomized CSV (l = 2), 400 public rows of the same model, the EM and
    control posteriors."""
    from conftest import run_cli

    tmp = tmp_path_factory.mktemp("statistics")
    people = _people(800, seed=21)
    people.iloc[:400].to_csv(tmp / "in.csv", index=False)
    people.iloc[400:].to_csv(tmp / "public.csv", index=False)
    r = run_cli("anatomize", tmp / "in.csv", "--qi", "q0,q1", "--sensitive", "s", "--l", "2",
                "--seed", "0", "--custody", tmp / "custody", "--out", tmp / "rel")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run_cli("attack", "em", tmp / "rel", "--restarts", "2", "--seed", "0",
                "--out", tmp / "em.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    return tmp


def test_cli_control_and_evaluate_end_to_end(run, small, tmp_path):
    ctl = tmp_path / "control.csv"
    r = run("attack", "control", small / "rel", "--public", small / "public.csv", "--out", ctl)
    assert r.returncode == 0, r.stderr
    assert "learned from 400 rows" in r.stdout and f"only from the public file {small}" in r.stdout
    df = pd.read_csv(ctl)
    assert list(df.columns[:2]) == ["row", "group_id"] and len(df) == 400
    np.testing.assert_allclose(df.iloc[:, 2:].sum(axis=1), 1.0, atol=1e-9)
    r = run("evaluate", small / "em.csv", "--custody", small / "custody", "--control", ctl,
            "--threshold", "0.7", "--threshold", "s1=0.4",
            "--json", tmp_path / "m.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    # the posteriors' own metadata say who attacked: EM on the release, the control on the
    # public file it was given
    assert m["threat_model"]["attack"].startswith("the attacker knows the published release")
    assert "by EM" in m["threat_model"]["attack"]
    assert "only from the public file" in m["threat_model"]["control"]
    assert "random worlds" in m["threat_model"]["random_worlds"]
    assert m["threshold"] == {"s0": 0.7, "s1": 0.4, "s2": 0.7, "s3": 0.7, "s4": 0.7}
    assert m["acc_ci"][0] <= m["acc"] <= m["acc_ci"][1]
    assert m["random_worlds"]["acc"] == pytest.approx(0.5)
    truth = pd.read_csv(small / "custody" / "truth.csv").sort_values("row")["s"]
    values = list(df.columns[2:])
    codes = np.array([values.index(v) for v in truth])
    assert m["control"]["acc"] == pytest.approx(evaluate(df.iloc[:, 2:].to_numpy(), codes).acc)
    a, c = m["acc"], m["control"]["acc"]
    rr = m["residual_risk"]
    assert (
        rr["value"] == pytest.approx((a - c) / (1 - c)) and rr["low"] <= rr["value"] <= rr["high"]
    )
    for text in ("threat model (attack)", "threat model (control)", "residual risk",
                 "s1 0.4; every other value 0.7", "random worlds"):  # fmt: skip
        assert text in r.stdout, text
    # every row its own group (as a PRAM attack's posterior): no random-worlds baseline, which
    # would be the truth itself
    own = pd.read_csv(small / "em.csv").assign(group_id=lambda d: d["row"])
    own.to_csv(tmp_path / "own.csv", index=False)
    r = run("evaluate", tmp_path / "own.csv", "--custody", small / "custody",
            "--json", tmp_path / "own.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    o = json.loads((tmp_path / "own.json").read_text())
    assert o["random_worlds"] is None and "random_worlds" not in o["threat_model"]
    assert o["acc"] == m["acc"]


def test_cli_statistics_bad_input(run, small, tmp_path):
    post, custody, js = small / "em.csv", small / "custody", tmp_path / "m.json"

    def ev(*extra):
        return run("evaluate", post, "--custody", custody, "--json", js, *extra)

    _fails(ev("--threshold", "0"), "(0, 1]")
    _fails(ev("--threshold", "1.5"), "(0, 1]")
    _fails(ev("--threshold", "nan"), "(0, 1]")
    _fails(ev("--threshold", "high"), "'high'", "VALUE=NUMBER")
    _fails(ev("--threshold", "flu=0.5"), "'flu' is not a sensitive value", "s0")
    _fails(ev("--threshold", "0.5", "--threshold", "0.6"), "one --threshold number")
    _fails(ev("--threshold", "s1=0.5", "--threshold", "s1=0.6"), "'s1' twice")
    # control posteriors that do not belong to this posterior
    ctl = pd.read_csv(post)
    ctl.iloc[:-2].to_csv(tmp_path / "short.csv", index=False)
    _fails(ev("--control", tmp_path / "short.csv"), "does not match", "398 rows")
    ctl.rename(columns={"s0": "x0"}).to_csv(tmp_path / "cols.csv", index=False)
    _fails(ev("--control", tmp_path / "cols.csv"), "does not match", "values")
    ctl.assign(group_id=ctl["group_id"].to_numpy()[::-1]).to_csv(tmp_path / "g.csv", index=False)
    _fails(ev("--control", tmp_path / "g.csv"), "does not match", "group")
    _fails(ev("--control", tmp_path / "nosuch.csv"), "nosuch.csv")
    assert not js.exists()  # nothing written
    # attack control
    pd.read_csv(small / "public.csv").drop(columns="q1").to_csv(tmp_path / "p.csv", index=False)
    out = tmp_path / "c.csv"
    _fails(run("attack", "control", small / "rel", "--public", tmp_path / "p.csv", "--out", out),
           "no column 'q1'")  # fmt: skip
    _fails(run("attack", "control", small / "rel", "--public", small / "public.csv",
               "--alpha", "0", "--out", out), "alpha")  # fmt: skip
    _fails(run("attack", "control", small / "rel", "--public", "nosuch-dataset", "--out", out),
           "nosuch-dataset")  # fmt: skip
    assert not out.exists()
    _fails(run("attack", "control", small / "rel", "--public", small / "public.csv",
               "--out", post), "exists")  # fmt: skip


def test_cli_adult_control_between_random_worlds_and_one(run, tmp_path):
    """Adult, l = 2: the EM attack beside random worlds and the control learned from
    adult-test; the residual risk's interval holds its point estimate."""
    rel, custody = tmp_path / "rel", tmp_path / "custody"
    r = run("anatomize", "adult", "--qi", "workclass,relationship,sex,salary",
            "--sensitive", "occupation", "--l", "2", "--seed", "1",
            "--custody", custody, "--out", rel)  # fmt: skip
    assert r.returncode == 0, r.stderr
    for args in (("control", rel, "--public", "adult-test"), ("em", rel, "--restarts", "1")):
        out = tmp_path / f"{args[0]}.csv"
        r = run("attack", *args, "--out", out, *(("--seed", "0") if args[0] == "em" else ()))
        assert r.returncode == 0, r.stderr
    r = run("evaluate", tmp_path / "em.csv", "--custody", custody, "--control",
            tmp_path / "control.csv", "--json", tmp_path / "m.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["random_worlds"]["acc"] < m["control"]["acc"] < 1
    assert m["random_worlds"]["acc"] == pytest.approx(0.5)
    rr = m["residual_risk"]
    assert rr["low"] <= rr["value"] <= rr["high"]
    assert rr["value"] == pytest.approx(
        (m["acc"] - m["control"]["acc"]) / (1 - m["control"]["acc"])
    )


def _sinkhorn_numpy(logscore, rows, group, counts, tol=1e-10, max_iter=10_000):
    """The control attack's Sinkhorn scaling as privlab wrote it in numpy before it was
    compiled (the oracle of the next test)."""
    used, group = np.unique(group, return_inverse=True)
    target = counts[used].astype(np.float64)
    ls = np.where(target[group] > 0, logscore[rows], -np.inf)
    p = np.exp(ls - ls.max(axis=1, keepdims=True))
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        p /= p.sum(axis=1, keepdims=True)
        col = np.stack([np.bincount(group, weights=p[:, v], minlength=target.shape[0])
                        for v in range(target.shape[1])], axis=1)  # fmt: skip
        if np.abs(col - target).max() <= tol:
            break
        p *= np.divide(target, col, out=np.zeros_like(target), where=col > 0)[group]
    return p, it


@pytest.mark.parametrize("m", [3, 9, 20, 150])
def test_the_compiled_sinkhorn_gives_numpys_bits(m):
    """The compiled sweeps do numpy's arithmetic in numpy's order (pairwise row sums,
    column sums in row order): the same probabilities bit for bit and the same number of
    sweeps, with 3 to 150 values (150: numpy's pairwise sum splits a row in halves), and
    with a sweep cap that stops before convergence."""
    from privlab.attacks.control import _sinkhorn_marginals

    rng = np.random.default_rng(m)
    n, groups = 400, 40
    group = rng.integers(0, groups, n)
    counts = np.zeros((groups + 5, m), dtype=np.int64)
    for g in range(groups):
        members = int((group == g).sum())
        if members:
            counts[g] = np.bincount(rng.integers(0, min(m, 6), members), minlength=m)
    logscore = rng.normal(0, 2, (n + 10, m))
    rows = rng.permutation(n + 10)[:n]
    for cap in (10_000, 3):
        got, it = _sinkhorn_marginals(logscore, rows, group, counts, max_iter=cap)
        want, want_it = _sinkhorn_numpy(logscore, rows, group, counts, max_iter=cap)
        assert it == want_it and (cap == 3 or it < cap)
        np.testing.assert_array_equal(got, want)
